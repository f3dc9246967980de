'use strict'
// A seeded loop of random arguments against every entry point: each call
// returns, or throws a FlakeidError of a code that entry point may throw,
// with a reason. Never another error, a crash or a hang (the test's
// timeout). FLAKEID_FUZZ_SEED and FLAKEID_FUZZ_CALLS change the run.

const test = require('node:test')
const assert = require('node:assert/strict')

const flakeid = require('..')
const { Generator, Layout, Lease, Persist, FlakeidError, encode, parseId } = flakeid

const SEED = Number(process.env.FLAKEID_FUZZ_SEED ?? 20261127)
const CALLS = Number(process.env.FLAKEID_FUZZ_CALLS ?? 5000)

/** mulberry32: a small seeded generator of floats in [0, 1). */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const rand = random(SEED)
const pick = (xs) => xs[Math.floor(rand() * xs.length)]
const chance = (p) => rand() < p

const NAMES = ['twitter', 'discord', 'sonyflake', 'js_safe', 'instagram', 'instagram:1314220021721',
  'nodeId', 'worker', 'sequence', 'timestamp', 'wait', 'borrow', 'error', 'next_clock', 'continue',
  'decimal', 'hex', 'base32', 'base62', 'high_water_mark', 'next_clock_id', '', ' ', '\u0000',
  '\ud800', 'é', '0Czks0tP37X', '175928847299117063', '7', '-1', '1e3']

function randomString() {
  if (chance(0.5)) return pick(NAMES)
  const alphabet = 'abcxyz019=:,-_ .\n\u00e9\ud83d\ude00'
  let s = ''
  for (let i = Math.floor(rand() * 24); i > 0; i--) s += pick([...alphabet])
  return s
}

function randomSpec() {
  const fields = ['timestamp:' + pick([0, 1, 20, 41, 64, 70])]
  for (let i = Math.floor(rand() * 3); i > 0; i--) fields.push(pick(['worker', 'dc', 'clock_id', 'x y']) + ':' + pick([0, 3, 10, 60]))
  if (chance(0.8)) fields.push('sequence:' + pick([0, 1, 12, 22, 64]))
  const epoch = pick([0, 1288834974657, Date.now() + 1e9, -5, 'x'])
  const unit = chance(0.3) ? ` unit=${pick([0, 1, 10, 3600000, 1e20])}` : ''
  return `epoch=${epoch}${unit} fields=${fields.join(',')}`
}

function randomValue(depth = 0) {
  switch (Math.floor(rand() * 14)) {
    case 0: return pick([0, 1, 7, 1023, 1024, 4096, 2 ** 24, 2 ** 24 + 1, 2 ** 53 - 1, 2 ** 53, 2 ** 64])
    case 1: return pick([-1, -0, 0.5, NaN, Infinity, -Infinity, 1e308, Number.MIN_VALUE])
    case 2: return pick([0n, 1n, 7n, -1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n, -(2n ** 64n)])
    case 3: return BigInt(Math.floor(rand() * 2 ** 52)) << BigInt(Math.floor(rand() * 16))
    case 4: return randomString()
    case 5: return randomSpec()
    case 6: return pick([true, false, null, undefined])
    case 7: return depth < 2 ? Array.from({ length: Math.floor(rand() * 3) }, () => randomValue(depth + 1)) : []
    case 8: return depth < 2 ? randomOptions(depth + 1) : {}
    case 9: return pick([() => 1, Symbol('x'), new Date(0), /x/, new Map(), new Uint8Array(2)])
    case 10: return new Layout(pick(['twitter', 'discord', 'sonyflake']))
    case 11: return Lease.redis('redis://127.0.0.1:1/')
    case 12: return new Persist('/nonexistent-flakeid-dir/state')
    default: return Math.floor(rand() * 2048)
  }
}

const OPTION_NAMES = ['nodeId', 'nodeFields', 'nodeIdFromEnv', 'nodeIdFromStatefulset',
  'nodeIdFromHostname', 'singleNode', 'onExhausted', 'maxAhead', 'onClockBehind', 'maxWait',
  'randomStart', 'seed', 'clockId', 'counters', 'persist', 'prefix', 'ttl', 'safetyMargin',
  'connectTimeout', 'nodeIds', 'rotateAfterRollback', 'maxMarkAhead', 'waitForReplicas', 'window',
  'restartRule', 'replaceIssuedUntilMs', 'timestamp', 'unixMs', 'sequence', 'worker', 'datacenter',
  'process', 'bogus']

function randomOptions(depth = 0) {
  const options = {}
  for (let i = Math.floor(rand() * 4); i > 0; i--) options[pick(OPTION_NAMES)] = randomValue(depth + 1)
  return options
}

/** The options of a generator: random, but never a lease to build (a
 * claim would wait for its connect timeout) and never persistence outside
 * a directory that does not exist. */
function generatorOptions() {
  const options = randomOptions()
  if (chance(0.6)) options[pick(['nodeId', 'singleNode', 'nodeFields'])] = pick([3, true, { worker: 1 }, 5n])
  delete options.lease
  return options
}

const ARGUMENT = ['invalid_argument', 'invalid_type']
const gen = new Generator('epoch=1700000000000 fields=timestamp:41,node:1,sequence:21', { nodeId: 1 })

/** Entry points: a call, and the codes it may throw besides the argument errors. */
const CALLS_BY_NAME = {
  'new Generator': [() => new Generator(randomValue(), generatorOptions()),
    ['layout', 'node_id', 'config', 'state', 'lease']],
  'new Layout': [() => new Layout(randomValue()), ['layout']],
  'layout.decode': [() => pick([gen.layout, new Layout('discord')]).decode(randomValue()), ['field']],
  'layout.compose': [() => new Layout(pick(['twitter', 'sonyflake'])).compose(randomOptions()), ['field']],
  'layout.nodeIdFromFields': [() => new Layout('twitter').nodeIdFromFields(randomValue()), ['field']],
  'layout.equals': [() => new Layout('twitter').equals(randomValue()), []],
  encode: [() => encode(randomValue(), chance(0.5) ? randomValue() : undefined), []],
  parseId: [() => parseId(randomValue(), chance(0.5) ? randomValue() : undefined), ['parse_id']],
  'gen.nextIds': [() => gen.nextIds(randomValue()), ['sequence_exhausted']],
  'gen.pollIds': [() => gen.pollIds(randomValue()), ['sequence_exhausted']],
  'gen.fillIds': [() => gen.fillIds(chance(0.3) ? new BigUint64Array(Math.floor(rand() * 64)) : randomValue()),
    ['sequence_exhausted']],
  'gen.decode': [() => gen.decode(randomValue()), ['field']],
  'Lease.redis': [() => Lease.redis(randomValue(), randomValue()), []],
  'Lease.etcd': [() => Lease.etcd(randomValue(), randomValue()), []],
  'Lease.redisSentinel': [() => Lease.redisSentinel(randomValue(), randomValue(), randomValue()), []],
  'new Persist': [() => new Persist(randomValue(), randomValue()), []],
}

test(`${CALLS} random calls: typed errors only (seed ${SEED})`, { timeout: 300_000 }, () => {
  const names = Object.keys(CALLS_BY_NAME)
  const thrown = {}
  let returned = 0
  for (let i = 0; i < CALLS; i++) {
    const name = pick(names)
    const [call, codes] = CALLS_BY_NAME[name]
    let result
    try {
      result = call()
    } catch (e) {
      assert.ok(e instanceof FlakeidError, `call ${i} (${name}) threw ${e?.stack ?? e}`)
      assert.ok([...ARGUMENT, ...codes].includes(e.code), `call ${i} (${name}): code ${e.code}: ${e.message}`)
      assert.equal(typeof e.message, 'string')
      assert.ok(e.message.length > 10, `call ${i}: reason ${JSON.stringify(e.message)}`)
      thrown[e.code] = (thrown[e.code] ?? 0) + 1
      continue
    }
    returned++
    if (result instanceof Generator) result.close()
  }
  // The loop reached both outcomes and most kinds of refusal.
  assert.ok(returned > CALLS / 20, `returned ${returned}`)
  for (const code of ['invalid_argument', 'invalid_type', 'layout', 'node_id', 'field', 'parse_id']) {
    assert.ok(thrown[code] > 0, `no ${code} error in ${JSON.stringify(thrown)}`)
  }
})

// The SQL stores' factories, after the loop above (so its seeded sequence
// stays as it was): random URLs and options, among them the SQL options
// (`table`, `createTable`) and Redis's, which they refuse. Building no
// generator: a claim would wait for its connect timeout.
const SQL_OPTION_NAMES = ['table', 'createTable', 'prefix', 'ttl', 'safetyMargin', 'connectTimeout',
  'nodeIds', 'rotateAfterRollback', 'maxMarkAhead', 'waitForReplicas', 'bogus']
const SQL_CALLS = Math.ceil(CALLS / 5)

function sqlOptions() {
  if (chance(0.1)) return randomValue()
  const options = {}
  for (let i = Math.floor(rand() * 4); i > 0; i--) {
    const name = pick(SQL_OPTION_NAMES)
    options[name] = chance(0.5)
      ? randomValue(1)
      : { table: 'ids', createTable: false, prefix: 'p', ttl: 2000, nodeIds: [0, 9] }[name]
  }
  return options
}

test(`${SQL_CALLS} random calls to Lease.postgres and Lease.mysql: typed errors only (seed ${SEED})`, () => {
  const thrown = {}
  let returned = 0
  for (let i = 0; i < SQL_CALLS; i++) {
    const store = pick(['postgres', 'mysql'])
    const url = chance(0.5) ? `${store}://ids@127.0.0.1:1/app` : randomValue()
    let lease
    try {
      lease = Lease[store](url, sqlOptions())
    } catch (e) {
      assert.ok(e instanceof FlakeidError, `call ${i} (Lease.${store}) threw ${e?.stack ?? e}`)
      assert.ok(ARGUMENT.includes(e.code), `call ${i} (Lease.${store}): code ${e.code}: ${e.message}`)
      assert.ok(e.message.length > 10, `call ${i}: reason ${JSON.stringify(e.message)}`)
      thrown[e.code] = (thrown[e.code] ?? 0) + 1
      continue
    }
    assert.equal(lease.store, store)
    returned++
  }
  assert.ok(returned > SQL_CALLS / 20, `returned ${returned}`)
  for (const code of ARGUMENT) assert.ok(thrown[code] > 0, `no ${code} error in ${JSON.stringify(thrown)}`)
})
