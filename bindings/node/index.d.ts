// Types of flakeid-rs: time-ordered, unique 64-bit Snowflake IDs, made
// natively by the Rust library flakeid.
//
// IDs, and every bit field of an ID (node ids, sequences, clock ids,
// timestamps in ticks), are `bigint`s; times are `number`s of Unix
// milliseconds; durations are `number`s of milliseconds. Arguments that
// take an integer take a `number` (an exact integer) or a `bigint`.

/** An integer argument: a non-negative `number` (an exact integer) or a `bigint`. */
export type Integer = number | bigint

/** A string form of an ID. */
export type IdFormat = 'decimal' | 'hex' | 'base32' | 'base62'

/**
 * The bit plan of an ID: a preset name (`twitter`, `discord`, `sonyflake`,
 * `js_safe`, `instagram`, `instagram:<epoch ms>`) or the library's spec
 * text (`epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,<name>:<bits>,...,sequence:<bits>`).
 *
 * @example
 * const layout = new Layout('discord')
 * layout.decode(175928847299117063n).toString()
 * // '2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7'
 * @throws {LayoutError} if the spec does not parse or breaks a rule.
 */
export class Layout {
  constructor(spec: string | Layout)
  /** The spec text, which reads back as an equal layout. */
  readonly spec: string
  /** The epoch, in Unix milliseconds. */
  readonly epochMs: number
  /** Milliseconds per tick. */
  readonly unitMs: number
  /** The largest node id (all node fields as one number). */
  readonly maxNodeId: bigint
  /** IDs per tick per node. */
  readonly capacityPerTick: bigint
  /** The last instant the layout can encode, in Unix milliseconds. */
  readonly lastMs: number
  /** The fields from the highest bit down. */
  readonly fields: LayoutField[]
  /**
   * Reads an ID back.
   * @throws {FieldError} if the ID sets bits above the layout's fields.
   */
  decode(id: Integer): Decoded
  /**
   * An ID from its parts: one of `timestamp` (ticks since the epoch) and
   * `unixMs`; `nodeId` or `nodeFields`, every node field (default node 0); `sequence` and
   * `clockId` (default 0).
   * @throws {FieldError} if a part does not fit its field.
   */
  compose(parts: {
    timestamp?: Integer
    unixMs?: Integer
    nodeId?: Integer
    nodeFields?: Record<string, Integer>
    sequence?: Integer
    clockId?: Integer
  }): bigint
  /**
   * The node id of named node fields, every one of the layout's.
   * @throws {FieldError} for a field the layout does not have, a value that does not fit, or a node field left out.
   */
  nodeIdFromFields(fields: Record<string, Integer>): bigint
  /** Whether `other` is a `Layout` with the same epoch, unit and fields. */
  equals(other: unknown): boolean
  /** The spec text. */
  toString(): string
  /** The spec text. */
  toJSON(): string
}

/** A field of a layout. */
export interface LayoutField {
  /** `timestamp`, `sequence`, `clock_id`, or a node field's name. */
  name: string
  kind: 'timestamp' | 'node' | 'sequence' | 'clock_id'
  bits: number
}

/** An ID read back through its layout (`Layout.decode`, `Generator.decode`). */
export class Decoded {
  private constructor()
  readonly id: bigint
  /** Ticks since the layout's epoch. */
  readonly timestamp: bigint
  /** The time, in Unix milliseconds. */
  readonly unixMs: number
  /** The time in RFC 3339, UTC (`2016-04-30T11:18:25.796Z`). */
  readonly rfc3339: string
  /** The time. */
  readonly date: Date
  /** All node fields as one number. */
  readonly nodeId: bigint
  /** Each node field by name, high to low. */
  readonly fields: Record<string, bigint>
  /** The sequence within the tick. */
  readonly sequence: bigint
  /** The clock id (0 without a clock-id field). */
  readonly clockId: bigint
  /** The time and every field: `2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7`. */
  toString(): string
  /** The ID and the fields as decimal strings, the time as `rfc3339` and `unixMs`. */
  toJSON(): {
    id: string
    rfc3339: string
    unixMs: number
    timestamp: string
    nodeId: string
    fields: Record<string, string>
    sequence: string
    clockId: string
  }
}

/** The settings every lease store takes. Durations in milliseconds. */
export interface LeaseOptions {
  /** The key prefix (default `flakeid`). */
  prefix?: string
  /** The lease's time to live (default 10,000). */
  ttl?: number
  /** The fence's safety margin (default a fifth of the TTL). */
  safetyMargin?: number
  /** How long the first claim may take (default 5,000). */
  connectTimeout?: number
  /** The node ids to claim from, first and last (default the layout's). */
  nodeIds?: [Integer, Integer]
  /** Rotate to a fresh node id after a clock rollback of this much. */
  rotateAfterRollback?: number
  /** How far ahead of the clock a free node id's mark may be. */
  maxMarkAhead?: number
}

/** The settings of a lease on Redis. */
export interface RedisLeaseOptions extends LeaseOptions {
  /** Replicas that must acknowledge each claim and renewal. */
  waitForReplicas?: Integer
}

/** The settings of a lease on PostgreSQL or MySQL/MariaDB. */
export interface SqlLeaseOptions extends LeaseOptions {
  /** The table of the leases (default `flakeid_leases`). */
  table?: string
  /**
   * Whether the first claim creates the table if it is missing (default
   * true). With false, a missing table, one of another shape, or a user
   * without the rights on it throws `LeaseError`, detail `table`.
   */
  createTable?: boolean
}

/**
 * A node id leased from etcd, Redis, Redis behind Sentinel, PostgreSQL or
 * MySQL/MariaDB, with fencing: the generator issues only while its lease is proven valid, and
 * the next holder of a node id starts after the last ID of the one before.
 *
 * @example
 * const gen = new Generator('twitter', { lease: Lease.redis('redis://127.0.0.1:6379/') })
 * @throws {InvalidTypeError | InvalidArgumentError} for a bad argument.
 */
export class Lease {
  private constructor()
  /** Leases node ids from the etcd cluster at `endpoints` (`http://host:2379`). */
  static etcd(endpoints: string[], options?: LeaseOptions): Lease
  /** Leases node ids from the Redis server at `url` (`redis://[:password@]host:port/[db]`). */
  static redis(url: string, options?: RedisLeaseOptions): Lease
  /** Leases node ids from the Redis primary the sentinels name for `master`. */
  static redisSentinel(sentinels: string[], master: string, options?: RedisLeaseOptions): Lease
  /**
   * Leases node ids from the PostgreSQL server at `url`
   * (`postgres://user:password@host:port/db`, `?sslmode=require` for TLS,
   * several hosts with `target_session_attrs=read-write`; or the
   * `key=value` form).
   */
  static postgres(url: string, options?: SqlLeaseOptions): Lease
  /** Leases node ids from the MySQL 8 or MariaDB 10.11 server at `url` (`mysql://user:password@host:port/db`). */
  static mysql(url: string, options?: SqlLeaseOptions): Lease
  readonly store: 'etcd' | 'redis' | 'redis_sentinel' | 'postgres' | 'mysql'
}

/** The settings of restart safety. */
export interface PersistOptions {
  /** How far ahead the mark is saved, in milliseconds (default 1,000; at most an hour). */
  window?: number
  /** How a restarted generator picks its clock id. */
  restartRule?: 'high_water_mark' | 'next_clock_id'
  /**
   * The operator's word that this node issued nothing after this Unix
   * millisecond: replaces a state file that cannot be trusted (default:
   * refuse it with `StateError`).
   */
  replaceIssuedUntilMs?: Integer
}

/**
 * Restart safety: a high-water mark saved in the file at `path` (with
 * `<path>.lock` and `<path>.tmp` beside it), so that a restarted generator
 * never reissues an ID, even with the clock set back.
 *
 * @example
 * const gen = new Generator('twitter', { nodeId: 7, persist: new Persist('/var/lib/orders/node.state') })
 */
export class Persist {
  constructor(path: string, options?: PersistOptions)
  readonly path: string
}

/** The options of `new Generator`: exactly one node id source, then settings. */
export interface GeneratorOptions {
  /** All node fields as one number. */
  nodeId?: Integer
  /**
   * Named node fields, every one of the layout's (one meant to be 0 is
   * given as 0): one left out throws `NodeIdError` (detail `field_not_set`).
   */
  nodeFields?: Record<string, Integer>
  /** The environment variable holding a decimal node id, read at build. */
  nodeIdFromEnv?: string
  /** The ordinal of the StatefulSet pod (the host name's `-<digits>` suffix). */
  nodeIdFromStatefulset?: boolean
  /** The StatefulSet ordinal in this host name. */
  nodeIdFromHostname?: string
  /** Node id 0, on purpose: the only generator of its layout. */
  singleNode?: boolean
  /** A node id leased from etcd, Redis, PostgreSQL or MySQL/MariaDB. */
  lease?: Lease
  /** A used-up tick: wait for the next (default), borrow ahead (with `maxAhead`), error, or move to the next clock id. */
  onExhausted?: 'wait' | 'borrow' | 'error' | 'next_clock'
  /** `borrow`: how far ahead of the clock IDs may run, in milliseconds. */
  maxAhead?: number
  /** A clock behind: continue from the last timestamp (default), wait (with `maxWait`), error, or move to the next clock id. */
  onClockBehind?: 'continue' | 'wait' | 'error' | 'next_clock'
  /** `wait`: the longest wait, in milliseconds. */
  maxWait?: number
  /** Start each tick's sequence below this random bound instead of at 0. */
  randomStart?: Integer
  /** The random start's seed (tests). */
  seed?: Integer
  /** The first clock id, for layouts with a clock-id field. */
  clockId?: Integer
  /** Keep the counters of `stats()`. */
  counters?: boolean
  /** Restart safety. */
  persist?: Persist
}

/** What a generator can do now, for a readiness probe. */
export interface Health {
  state: 'issuing' | 'fenced' | 'storage_failing' | 'expired' | 'forked' | 'closed'
  /** True only while issuing. */
  ready: boolean
  /** A sentence for logs and probes. */
  description: string
  /** `fenced`: milliseconds since the lease lapsed. */
  closedFor?: number
  /** `expired`: the layout's last instant, in Unix milliseconds. */
  lastMs?: number
  /** `storage_failing`: the storage error. */
  reason?: string
}

/** The counters of a generator built with `counters: true`. */
export interface Stats {
  issued: bigint
  waits: bigint
  borrowedTicks: bigint
  clockBehind: bigint
  clockIdBumps: bigint
  lostRaces: bigint
}

/**
 * A lock-free Snowflake ID generator.
 *
 * There is no default node id: give exactly one of `nodeId`, `nodeFields`,
 * `nodeIdFromEnv`, `nodeIdFromStatefulset`, `nodeIdFromHostname`,
 * `singleNode` or `lease` (for a layout with node fields), because two
 * processes that both forgot it would issue the same IDs.
 *
 * Generators of one layout and one static node id in one process (in any
 * thread or worker thread) are handles on one generator: their IDs are
 * unique and ordered together. Building one with other settings than the
 * first throws `NodeIdError`, as does building one whose IDs could
 * coincide with those of a generator of another layout in this process
 * (the message names both and the first ID they share). Leased generators
 * each claim their own node id.
 *
 * Synchronous calls wait on the JavaScript thread only for what is short:
 * the next tick (at most one tick of the layout), a clock behind under
 * `onClockBehind: 'wait'` (at most `maxWait`), a reservation being saved.
 * A fenced lease or failing storage throws `FencedError` or `StorageError`
 * at once. The `*Async` calls wait for everything on a worker thread.
 *
 * @example
 * const gen = new Generator('twitter', { nodeId: 7 })
 * const id = gen.nextId()          // 2126109822880346112n
 * gen.decode(id).nodeId            // 7n
 * const batch = gen.nextIds(4096)  // BigUint64Array
 * @throws {NodeIdError} without a node id, with node fields of which one is
 * left out (detail `field_not_set`), with a node id that does not fit, or
 * one in use in this process as above.
 * @throws {LayoutError | ConfigError | StateError | LeaseError | InvalidArgumentError | InvalidTypeError}
 */
export class Generator {
  constructor(layout: string | Layout, options?: GeneratorOptions)
  /**
   * A generator built on a worker thread: a lease's claim (a round trip,
   * at most `connectTimeout`) or a state file's opening off the event loop.
   * Rejects with what the constructor throws.
   * @example const gen = await Generator.create('twitter', { lease: Lease.redis('redis://redis:6379/') })
   */
  static create(layout: string | Layout, options?: GeneratorOptions): Promise<Generator>
  /**
   * The next ID.
   * @throws {FencedError | StorageError} while the lease is fenced or the reservation cannot be saved.
   * @throws {SequenceExhaustedError | ClockBehindError} where a policy says `error`.
   * @throws {ExpiredError | ClosedError | ForkedError}
   */
  nextId(): bigint
  /**
   * The next ID if one can be issued without waiting at all.
   * @throws {SequenceExhaustedError | ClockBehindError | ReservingError | StorageError | FencedError} for what would wait.
   */
  pollId(): bigint
  /** The next ID in decimal (for JSON), as `nextId` issues it. */
  nextIdString(): string
  /**
   * The next ID, waiting on a worker thread for anything (a fenced lease, failing storage).
   * Rejects only with what a policy says to report, `ExpiredError`, `ClosedError` or `ForkedError`.
   */
  nextIdAsync(): Promise<bigint>
  /**
   * `n` consecutive IDs, increasing, waiting as `nextId` (at most 2^24 per call).
   * @throws {InvalidArgumentError | InvalidTypeError} for a bad `n`; as `nextId`.
   */
  nextIds(n: Integer): BigUint64Array
  /**
   * Fills `array` with consecutive IDs, increasing, waiting as `nextId`;
   * returns it. Reusing one array saves the allocation `nextIds` makes.
   * @throws {InvalidTypeError} unless `array` is a `BigUint64Array`; as `nextId`.
   */
  fillIds(array: BigUint64Array): BigUint64Array
  /** Up to `n` IDs that can be issued without waiting: at least one for `n` > 0; throws as `pollId`. */
  pollIds(n: Integer): BigUint64Array
  /** `n` IDs, waiting as `nextIdAsync`. */
  nextIdsAsync(n: Integer): Promise<BigUint64Array>
  /** What the generator can do now. */
  health(): Health
  /** The node id in its IDs (the leased one, for a lease). */
  readonly nodeId: bigint
  /** The largest ID issued so far (or a point the generator moved past). */
  readonly lastId: bigint
  /** The layout of its IDs. */
  readonly layout: Layout
  /** Free node ids the lease's claims skipped for marks too far ahead of the clock. */
  readonly leaseSkippedNodeIds: bigint
  /** The counters, if built with `counters: true`, else null. */
  stats(): Stats | null
  /** Reads an ID of this generator's layout back. */
  decode(id: Integer): Decoded
  /**
   * Closes this handle: later calls throw `ClosedError`. Closing the last
   * handle of a generator with a lease or persistence releases the lease
   * or saves the last mark, blocking this thread for it; `closeAsync` does
   * that on a worker thread. Closing again does nothing.
   */
  close(): void
  /** `close`, with the release or save on a worker thread. */
  closeAsync(): Promise<void>
  /** @internal The benchmarks' floor: a native call that returns a bigint. */
  _floor(): bigint
}

/**
 * `id` in a string form: `decimal` (the default), `hex`, Crockford
 * `base32` or `base62`.
 * @example encode(175928847299117063n, 'base62') // '0Czks0tP37X'
 */
export function encode(id: Integer, format?: IdFormat): string

/**
 * An ID from a string form: the one named, or (without `format`) the one
 * the string's shape says.
 * @example parseId('0Czks0tP37X') // 175928847299117063n
 * @throws {ParseIdError} saying what is wrong.
 */
export function parseId(text: string, format?: IdFormat): bigint

/** The stable codes of `FlakeidError.code`, the same as the Python package's. */
export type ErrorCode =
  | 'invalid_argument'
  | 'invalid_type'
  | 'layout'
  | 'node_id'
  | 'config'
  | 'state'
  | 'lease'
  | 'sequence_exhausted'
  | 'clock_behind'
  | 'expired'
  | 'reserving'
  | 'storage'
  | 'fenced'
  | 'forked'
  | 'closed'
  | 'parse_id'
  | 'field'

/**
 * The base of every error flakeid-rs throws. `code` is stable; `detail`
 * refines it for `lease` (`all_held`, `unreachable`, `bad_reply`,
 * `refused`, `marks_ahead`, `table`), `state` (`corrupt`, `locked`, ...), `layout`
 * (`unknown_preset`, `bad_spec`, `invalid_layout`) and `node_id`
 * (`not_set`, `env_not_set`, `not_a_number`, `out_of_range`, ...) errors.
 */
export class FlakeidError extends Error {
  readonly code: ErrorCode
  readonly detail?: string
}
/** An argument's value is out of range, or not one of the names allowed. */
export class InvalidArgumentError extends FlakeidError {}
/** An argument has the wrong type. */
export class InvalidTypeError extends FlakeidError {}
/** A layout spec does not parse, or describes a layout that breaks a rule. */
export class LayoutError extends FlakeidError {}
/** No node id was chosen, one does not fit the layout, or it is in use in this process with other settings. */
export class NodeIdError extends FlakeidError {}
/** A setting the layout cannot serve, or out of its range. */
export class ConfigError extends FlakeidError {}
/** Restart safety's saved state cannot be read, trusted or written. */
export class StateError extends FlakeidError {}
/** No node id could be leased (all held, store unreachable, refused...). */
export class LeaseError extends FlakeidError {}
/** The tick's sequence is used up and the call does not wait. */
export class SequenceExhaustedError extends FlakeidError {
  /** About how many milliseconds until the next tick. */
  readonly retryAfter: number
}
/** The clock reads behind the last timestamp and the policy reports it. */
export class ClockBehindError extends FlakeidError {
  /** How many milliseconds behind. */
  readonly behind: number
}
/** The clock is past the layout's last instant. */
export class ExpiredError extends FlakeidError {
  /** The layout's last instant, in Unix milliseconds. */
  readonly lastMs: number
}
/** A non-waiting call needs a reservation (or lease ceiling) being saved. */
export class ReservingError extends FlakeidError {}
/** Restart safety's reservation cannot be saved. */
export class StorageError extends FlakeidError {}
/** The node-id lease cannot be proven valid: nothing is issued until a fresh claim. */
export class FencedError extends FlakeidError {}
/** Built before this process was forked, with a node id that is not leased. */
export class ForkedError extends FlakeidError {}
/** The generator (this handle) was closed. */
export class ClosedError extends FlakeidError {}
/** A string is not an ID in the form asked for. */
export class ParseIdError extends FlakeidError {}
/** A value does not fit a layout field, or an ID is not of the layout. */
export class FieldError extends FlakeidError {}
