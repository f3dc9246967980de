'use strict'
// Stages rust/: the Rust sources `npx flakeid-rs-build` compiles where no
// prebuilt addon fits, carried in the package's tarball, and LICENSE, the
// repository's (npm packs no symbolic link). npm runs it before packing
// (prepack) and again with --clean after (postpack). It needs the
// repository around this folder and cargo.
//
//   rust/Cargo.toml   a workspace of the two crates below, with the
//                     repository's [workspace.package] and release profile
//   rust/Cargo.lock   the repository's lock file: the versions CI tested
//   rust/flakeid/     the library as `cargo package` makes it for crates.io
//                     (its manifest normalized: no workspace, no path-only
//                     dev-dependencies)
//   rust/core/        bindings/core (flakeid-bindings), pointed at rust/flakeid
//   rust/node/        this folder's crate (Cargo.toml, build.rs, src/)

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const repo = path.join(root, '..', '..')
const out = path.join(root, 'rust')

const license = path.join(root, 'LICENSE')
fs.rmSync(out, { recursive: true, force: true })
fs.rmSync(license, { force: true })
if (process.argv[2] === '--clean') process.exit(0)
fs.copyFileSync(path.join(repo, 'LICENSE'), license)

function fail(message) {
  console.error(`stage-rust: ${message}`)
  process.exit(1)
}

function run(command, args, options) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...options })
  if (result.error) fail(`cannot run ${command}: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed:\n${result.stderr}`)
  return result.stdout
}

/** The lines of `[name]` in a TOML file's text, up to the next table. */
function table(text, name) {
  const start = text.indexOf(`\n[${name}]\n`)
  if (start < 0) fail(`no [${name}] in the repository's Cargo.toml`)
  const rest = text.slice(start + 1)
  const end = rest.slice(1).search(/\n\[/)
  const lines = (end < 0 ? rest : rest.slice(0, end + 2)).trimEnd().split('\n')
  // Without the comments that belong to the next table.
  while (lines.length > 1 && (lines.at(-1).startsWith('#') || lines.at(-1) === '')) lines.pop()
  return lines.join('\n')
}

function copy(from, to) {
  fs.cpSync(path.join(repo, from), path.join(out, to), { recursive: true })
}

// The library, packaged as for crates.io, unpacked into rust/flakeid.
const manifest = fs.readFileSync(path.join(repo, 'Cargo.toml'), 'utf8')
const version = /\n\[workspace\.package\]\nversion = "([^"]+)"/.exec(manifest)?.[1]
if (!version) fail('no [workspace.package] version in the repository\'s Cargo.toml')
const packageDir = path.join(out, 'package')
run('cargo', ['package', '-p', 'flakeid', '--no-verify', '--allow-dirty', '--locked',
  '--target-dir', packageDir], { cwd: repo })
const crate = path.join(packageDir, 'package', `flakeid-${version}.crate`)
if (!fs.existsSync(crate)) fail(`cargo package wrote no ${crate}`)
fs.mkdirSync(path.join(out, 'flakeid'), { recursive: true })
run('tar', ['-xzf', crate, '-C', path.join(out, 'flakeid'), '--strip-components=1'])
fs.rmSync(packageDir, { recursive: true, force: true })
for (const file of ['.cargo_vcs_info.json', 'Cargo.toml.orig', 'Cargo.lock']) {
  fs.rmSync(path.join(out, 'flakeid', file), { force: true })
}

// The bindings' core and the addon's crate, as they are in the repository.
copy('bindings/core/Cargo.toml', 'core/Cargo.toml')
copy('bindings/core/src', 'core/src')
for (const item of ['Cargo.toml', 'build.rs', 'src']) copy(`bindings/node/${item}`, `node/${item}`)
const core = path.join(out, 'core', 'Cargo.toml')
const coreText = fs.readFileSync(core, 'utf8')
const coreFixed = coreText.replace('flakeid = { path = "../.." }', 'flakeid = { path = "../flakeid" }')
if (coreFixed === coreText) fail('bindings/core/Cargo.toml no longer has `flakeid = { path = "../.." }`')
fs.writeFileSync(core, coreFixed)

fs.writeFileSync(path.join(out, 'Cargo.toml'), `# Staged by scripts/stage-rust.js from the flakeid repository: what
# \`npx flakeid-rs-build\` compiles (rust/node, the addon).
[workspace]
members = ["flakeid", "core", "node"]
resolver = "3"

${table(manifest, 'workspace.package').trim()}

${table(manifest, 'profile.release').trim()}
`)
copy('Cargo.lock', 'Cargo.lock')

// The staged workspace resolved offline: the lock file keeps the versions
// of every package it needs and drops the rest.
run('cargo', ['metadata', '--format-version', '1', '--offline',
  '--manifest-path', path.join(out, 'Cargo.toml')], { cwd: out })
console.error(`stage-rust: staged ${path.relative(process.cwd(), out)} (flakeid ${version})`)
