#!/usr/bin/env node
'use strict'
// Builds the addon from source: `cargo build` of the node crate, then the
// library copied to flakeid.node beside index.js, which index.js then loads
// before any prebuilt platform package. The fallback where no prebuilt
// addon fits (`npx flakeid-rs-build` in a project that installed
// flakeid-rs: the package carries the Rust sources in rust/, staged by
// scripts/stage-rust.js when it is packed), and the development build in a
// checkout (`npm run build`). Never run at install time.
//
//   FLAKEID_NODE_PROFILE   cargo profile (default release)
//   FLAKEID_NODE_FEATURES  cargo features instead of the default (etcd,
//                          redis, postgres, mysql); "" for none (no lease
//                          support, no protoc needed)
//   CARGO_TARGET_DIR       where cargo builds (default: rust/target in the
//                          installed package, the workspace's target/ in a
//                          checkout)

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
// The installed package's staged sources, else the checkout's crate.
const staged = path.join(root, 'rust', 'node', 'Cargo.toml')
const manifest = fs.existsSync(staged) ? staged : path.join(root, 'Cargo.toml')
const args = [
  'build',
  '--profile', process.env.FLAKEID_NODE_PROFILE || 'release',
  '--manifest-path', manifest,
  '--message-format', 'json-render-diagnostics',
]
const features = process.env.FLAKEID_NODE_FEATURES
if (features !== undefined) args.push('--no-default-features', '--features', features)

const cargo = process.env.CARGO || 'cargo'
const run = spawnSync(cargo, args, {
  cwd: path.dirname(manifest),
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 256 * 1024 * 1024,
  encoding: 'utf8',
})
if (run.error) {
  console.error(`flakeid-rs: cannot run ${cargo} (${run.error.message}); ` +
    'building the addon needs Rust (https://rustup.rs) and protoc (Debian: protobuf-compiler)')
  process.exit(1)
}
if (run.status !== 0) process.exit(run.status ?? 1)

// The library is the one artifact of the crate's cdylib target.
let library
for (const line of run.stdout.split('\n')) {
  if (!line.startsWith('{')) continue
  const message = JSON.parse(line)
  if (message.reason === 'compiler-artifact' && message.target.name === 'flakeid_node') {
    library = message.filenames.find((f) => /\.(so|dylib|dll)$/.test(f))
  }
}
if (!library) {
  console.error('flakeid-rs: cargo built no flakeid_node library')
  process.exit(1)
}
// Copied to a new file and renamed over the old one: a process that has
// the old one loaded keeps its mapping intact.
const target = path.join(root, 'flakeid.node')
fs.copyFileSync(library, `${target}.tmp`)
fs.renameSync(`${target}.tmp`, target)
console.error(`flakeid-rs: built ${path.relative(process.cwd(), target)} from ${library}`)
