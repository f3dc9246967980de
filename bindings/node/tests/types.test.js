'use strict'
// index.d.ts against a typical use (tests/types/sample.ts): it type-checks
// under `tsc --strict`, and its misuses do not.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('the TypeScript types accept a typical use and refuse misuse', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const project = path.join(__dirname, 'types', 'tsconfig.json')
  const run = spawnSync(process.execPath, [tsc, '--project', project], { encoding: 'utf8' })
  assert.equal(run.status, 0, `tsc: ${run.stdout}${run.stderr}`)
})

test('every class member and function index.d.ts declares exists', () => {
  const flakeid = require('..')
  const dts = require('node:fs').readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const samples = {
    Generator: new flakeid.Generator('twitter', { nodeId: 1 }),
    Layout: new flakeid.Layout('twitter'),
    Decoded: new flakeid.Layout('discord').decode(175928847299117063n),
    Lease: flakeid.Lease.redis('redis://127.0.0.1:1/'),
    Persist: new flakeid.Persist('state'),
  }
  let checked = 0
  for (const [, name, body] of dts.matchAll(/^export class (\w+)[^{]*\{\n([\s\S]*?)^\}/gm)) {
    assert.ok(name in flakeid, `index.d.ts declares ${name}, which index.js does not export`)
    for (const [, isStatic, member] of body.matchAll(/^ {2}(static |readonly )?(\w+)[(:?]/gm)) {
      if (member === 'constructor') continue
      const owner = isStatic === 'static ' ? flakeid[name] : samples[name] ?? new flakeid[name]('x')
      assert.ok(member in owner, `${name}.${member} is declared but missing`)
      checked++
    }
  }
  for (const [, name] of dts.matchAll(/^export function (\w+)/gm)) {
    assert.equal(typeof flakeid[name], 'function', `${name} is declared but missing`)
  }
  assert.ok(checked > 40, `only ${checked} members checked`)
})

test('ES modules import every name by name', async () => {
  const esm = await import(require.resolve('..'))
  const dts = require('node:fs').readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const names = [...dts.matchAll(/^export (?:class|function) (\w+)/gm)].map((m) => m[1])
  assert.ok(names.length > 20)
  for (const name of names) assert.ok(name in esm, `import { ${name} } from 'flakeid-rs' fails`)
})
