'use strict'
// index.js's loader where no addon fits: a copy of index.js in a folder with
// no flakeid.node beside it and no platform package to find, required by a
// child process, must refuse with a message that names the platform, lists
// the prebuilt packages and says how to build from source.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

/** What requiring a lone copy of index.js prints, with `prelude` run first. */
function requireAlone(prelude) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakeid-rs-loader-'))
  try {
    fs.copyFileSync(path.join(__dirname, '..', 'index.js'), path.join(dir, 'index.js'))
    const script = `${prelude}; require(${JSON.stringify(path.join(dir, 'index.js'))})`
    // cwd and NODE_PATH: nowhere a platform package could be found from.
    return spawnSync(process.execPath, ['-e', script],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' } })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

test('the loader names an unsupported platform and lists the prebuilt ones', () => {
  const run = requireAlone("Object.defineProperty(process, 'arch', { value: 'mips' })")
  assert.notEqual(run.status, 0, 'requiring flakeid-rs on a faked mips succeeded')
  const platform = process.platform === 'win32' ? 'win32-mips-msvc'
    : process.platform === 'linux' ? 'linux-mips-' : `${process.platform}-mips`
  assert.match(run.stderr, /has no prebuilt addon for this platform/)
  assert.ok(run.stderr.includes(`(${platform}`), `no ${platform} in: ${run.stderr}`)
  for (const name of ['linux-x64-gnu', 'linux-arm64-gnu', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc']) {
    assert.ok(run.stderr.includes(`flakeid-rs-${name}`), `flakeid-rs-${name} not listed: ${run.stderr}`)
  }
  assert.match(run.stderr, /npx flakeid-rs-build/)
})

test('the loader says which platform package is missing and why it may be', () => {
  const run = requireAlone('')
  assert.notEqual(run.status, 0, 'requiring a lone index.js succeeded')
  assert.match(run.stderr, /the package flakeid-rs-[a-z0-9]+-[a-z0-9]+(-[a-z]+)?, its prebuilt addon for this platform, is not installed/)
  assert.match(run.stderr, /npm\/cli#4828/)
  assert.match(run.stderr, /npx flakeid-rs-build/)
})
