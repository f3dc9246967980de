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
