'use strict'
// flakeid-rs: time-ordered, unique 64-bit Snowflake IDs, made natively by
// the Rust library flakeid. The addon holds every class and function; this
// file finds it (loadAddon below), defines the error classes it throws and
// hands them to it. The API and its documentation: index.d.ts, README.md.

const fs = require('node:fs')
const path = require('node:path')

/**
 * The platforms with a prebuilt addon: each is the npm package
 * `flakeid-rs-<platform>` (npm/<platform>/ in the repository), an optional
 * dependency of this package that npm installs only where its os, cpu and
 * libc match. The release workflow builds them all.
 */
const PLATFORMS = ['linux-x64-gnu', 'linux-arm64-gnu', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc']

/** This process's platform in the packages' naming (`linux-x64-gnu`, ...). */
function currentPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') {
    // glibc's version is in the report's header; musl (Alpine) has none.
    const header = process.report?.getReport?.().header
    return `linux-${arch}-${header?.glibcVersionRuntime ? 'gnu' : 'musl'}`
  }
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

const BUILD_HINT = 'To build the addon from source (Rust from https://rustup.rs and protoc, ' +
  'for the etcd client), run `npx flakeid-rs-build` in your project: it compiles the Rust ' +
  'sources this package carries and writes flakeid.node beside its index.js, which is then ' +
  'loaded first.'

/**
 * The addon: a source build (flakeid.node beside this file, written by
 * `npx flakeid-rs-build`, or by `npm run build` in a checkout) if there is
 * one, since it was made on purpose; else the platform package.
 */
function loadAddon() {
  const local = path.join(__dirname, 'flakeid.node')
  if (fs.existsSync(local)) return require(local)
  const platform = currentPlatform()
  const name = `flakeid-rs-${platform}`
  if (!PLATFORMS.includes(platform)) {
    throw new Error(`flakeid-rs has no prebuilt addon for this platform (${platform}); ` +
      `the prebuilt ones are ${PLATFORMS.map((p) => `flakeid-rs-${p}`).join(', ')}. ${BUILD_HINT}`)
  }
  try {
    return require(name)
  } catch (error) {
    if (error.code !== 'MODULE_NOT_FOUND' || !String(error.message).includes(name)) {
      error.message = `flakeid-rs: ${name} is installed but its addon did not load: ${error.message}`
      throw error
    }
    throw new Error(`flakeid-rs: the package ${name}, its prebuilt addon for this platform, is ` +
      'not installed. npm installs it as an optional dependency of flakeid-rs; it is missing ' +
      'when npm ran with --omit=optional or --no-optional, or when a package-lock.json made on ' +
      'another platform left it out (npm/cli#4828): run `npm install` again here, or add ' +
      `${name} to your dependencies. ${BUILD_HINT}`)
  }
}

const native = loadAddon()

/** The base of every error flakeid-rs throws; `code` is stable. */
class FlakeidError extends Error {
  constructor(message, extra) {
    super(message)
    this.name = new.target.name
    this.code = new.target.code
    this.detail = extra?.detail
  }
}
FlakeidError.code = 'error'

/** A subclass of FlakeidError for `code`, with the number `extra` names. */
function define(name, code, extra) {
  const cls = {
    [name]: class extends FlakeidError {
      constructor(message, fields) {
        super(message, fields)
        if (extra !== undefined) this[extra] = fields?.[extra] ?? 0
      }
    },
  }[name]
  cls.code = code
  return cls
}

// One class per stable code, in the core crate's order.
const InvalidArgumentError = define('InvalidArgumentError', 'invalid_argument')
const InvalidTypeError = define('InvalidTypeError', 'invalid_type')
const LayoutError = define('LayoutError', 'layout')
const NodeIdError = define('NodeIdError', 'node_id')
const ConfigError = define('ConfigError', 'config')
const StateError = define('StateError', 'state')
const LeaseError = define('LeaseError', 'lease')
const SequenceExhaustedError = define('SequenceExhaustedError', 'sequence_exhausted', 'retryAfter')
const ClockBehindError = define('ClockBehindError', 'clock_behind', 'behind')
const ExpiredError = define('ExpiredError', 'expired', 'lastMs')
const ReservingError = define('ReservingError', 'reserving')
const StorageError = define('StorageError', 'storage')
const FencedError = define('FencedError', 'fenced')
const ForkedError = define('ForkedError', 'forked')
const ClosedError = define('ClosedError', 'closed')
const ParseIdError = define('ParseIdError', 'parse_id')
const FieldError = define('FieldError', 'field')

const byCode = {}
for (const cls of [InvalidArgumentError, InvalidTypeError, LayoutError, NodeIdError, ConfigError,
  StateError, LeaseError, SequenceExhaustedError, ClockBehindError, ExpiredError, ReservingError,
  StorageError, FencedError, ForkedError, ClosedError, ParseIdError, FieldError]) {
  byCode[cls.code] = cls
}

native._init(byCode)

/**
 * The addon's generator, with its hot-path methods (nextId, nextIds, ...)
 * bound to each object: a call of them skips the class machinery.
 */
class Generator extends native.Generator {
  constructor(layout, options) {
    super(layout, options)
    native._bind(this)
  }

  /** A generator built on a worker thread (a lease's claim off the event loop). */
  static async create(layout, options) {
    const generator = await native._open(layout, options)
    Object.setPrototypeOf(generator, this.prototype)
    native._bind(generator)
    return generator
  }
}

const { Layout, Decoded, Lease, Persist, encode, parseId } = native

module.exports = {
  Generator,
  Layout,
  Decoded,
  Lease,
  Persist,
  encode,
  parseId,
  FlakeidError,
  InvalidArgumentError,
  InvalidTypeError,
  LayoutError,
  NodeIdError,
  ConfigError,
  StateError,
  LeaseError,
  SequenceExhaustedError,
  ClockBehindError,
  ExpiredError,
  ReservingError,
  StorageError,
  FencedError,
  ForkedError,
  ClosedError,
  ParseIdError,
  FieldError,
}
