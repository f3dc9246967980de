'use strict'
// flakeid-rs: time-ordered, unique 64-bit Snowflake IDs, made natively by
// the Rust library flakeid. The addon (flakeid.node, built from this
// folder's Rust crate by scripts/build.js at `npm install`) holds every
// class and function; this file defines the error classes it throws and
// hands them to it. The API and its documentation: index.d.ts, README.md.

const native = require('./flakeid.node')

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

/** One class per stable code, in the core crate's order. */
const CLASSES = {
  InvalidArgumentError: 'invalid_argument',
  InvalidTypeError: 'invalid_type',
  LayoutError: 'layout',
  NodeIdError: 'node_id',
  ConfigError: 'config',
  StateError: 'state',
  LeaseError: 'lease',
  SequenceExhaustedError: 'sequence_exhausted',
  ClockBehindError: 'clock_behind',
  ExpiredError: 'expired',
  ReservingError: 'reserving',
  StorageError: 'storage',
  FencedError: 'fenced',
  ForkedError: 'forked',
  ClosedError: 'closed',
  ParseIdError: 'parse_id',
  FieldError: 'field',
}

/** The numbers some errors carry, by code. */
const EXTRA = {
  sequence_exhausted: 'retryAfter',
  clock_behind: 'behind',
  expired: 'lastMs',
}

const errors = { FlakeidError }
const byCode = {}
for (const [name, code] of Object.entries(CLASSES)) {
  const extraName = EXTRA[code]
  const cls = {
    [name]: class extends FlakeidError {
      constructor(message, extra) {
        super(message, extra)
        if (extraName !== undefined) this[extraName] = extra?.[extraName] ?? 0
      }
    },
  }[name]
  cls.code = code
  errors[name] = cls
  byCode[code] = cls
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
}

module.exports = {
  Generator,
  Layout: native.Layout,
  Decoded: native.Decoded,
  Lease: native.Lease,
  Persist: native.Persist,
  encode: native.encode,
  parseId: native.parseId,
  ...errors,
}
