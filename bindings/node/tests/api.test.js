'use strict'
// The API on one thread: IDs, batches, async calls, layouts, string forms,
// persistence, leases on a real Redis, and each error class with its code.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const flakeid = require('..')
const { Generator, Layout, Lease, Persist, encode, parseId } = flakeid
const { startRedis, assertUnique, assertIncreasing } = require('./support')

/** A layout whose tick is a day: 16 IDs per tick, so tests exhaust it at will. */
const DAILY_16 = 'epoch=1700000000000 unit=86400000 fields=timestamp:30,node:10,sequence:4'
const DAY = 86_400_000

/** Asserts that `f` throws the error class `cls`, and returns the error. */
function throwsClass(f, cls, detail) {
  let caught
  try {
    f()
  } catch (e) {
    caught = e
  }
  assert.ok(caught instanceof cls, `expected ${cls.name}, got ${caught}`)
  assert.ok(caught instanceof flakeid.FlakeidError)
  assert.equal(caught.code, cls.code)
  assert.equal(caught.name, cls.name)
  assert.ok(caught.message.length > 0)
  if (detail !== undefined) assert.equal(caught.detail, detail)
  return caught
}

test('IDs are bigints, increasing, of the node asked for', () => {
  const gen = new Generator('twitter', { nodeFields: { datacenter: 1, worker: 7 } })
  assert.equal(gen.nodeId, (1n << 5n) | 7n)
  const before = Date.now()
  const ids = [gen.nextId(), gen.pollId(), BigInt(gen.nextIdString())]
  const reused = new BigUint64Array(700)
  for (const batch of [gen.nextIds(5000), gen.pollIds(300), gen.fillIds(reused)]) {
    assert.ok(batch instanceof BigUint64Array)
    ids.push(...batch)
  }
  assert.ok(typeof ids[0] === 'bigint')
  assertIncreasing(ids, 'one thread')
  assert.ok(ids.length > 5703, 'pollIds(300) gives at least one')
  assert.equal(ids.at(-1), reused[699])
  assert.equal(gen.fillIds(new BigUint64Array(0)).length, 0)
  throwsClass(() => gen.fillIds(new BigInt64Array(2)), flakeid.InvalidTypeError)
  throwsClass(() => gen.fillIds([0n, 0n]), flakeid.InvalidTypeError)
  assert.equal(gen.lastId, ids.at(-1))
  const decoded = gen.decode(ids[0])
  assert.deepEqual(decoded.fields, { datacenter: 1n, worker: 7n })
  assert.equal(decoded.nodeId, 39n)
  assert.equal(decoded.date.getTime(), decoded.unixMs)
  // The generator's clock is anchored to the wall clock: within a second.
  assert.ok(decoded.unixMs >= before - 1000 && decoded.unixMs <= Date.now() + 1000)
  assert.equal(gen.nextIds(0).length, 0)
})

test('the hot-path functions belong to their generator, wherever they are called', () => {
  const gen = new Generator('twitter', { nodeId: 13 })
  const { nextId, nextIds } = gen
  const other = new Generator('twitter', { nodeId: 14 })
  assert.equal(gen.decode(nextId.call(other)).nodeId, 13n)
  assert.equal(gen.decode(nextIds.call(undefined, 2)[1]).nodeId, 13n)
  throwsClass(() => nextIds(), flakeid.InvalidTypeError)
  assert.deepEqual(Object.keys(gen), [], 'methods are not enumerable')
  gen.close()
  throwsClass(() => nextId(), flakeid.ClosedError)
  throwsClass(() => gen.pollIds(1), flakeid.ClosedError)
  assert.ok(other.nextId() > 0n)
})

test('async calls resolve to IDs after those before them', async () => {
  const gen = new Generator('twitter', { nodeId: 1 })
  const first = gen.nextId()
  const one = await gen.nextIdAsync()
  const many = await gen.nextIdsAsync(10_000)
  assert.ok(many instanceof BigUint64Array)
  assertIncreasing([first, one, ...many], 'async')
})

test('a used-up tick: waited out, or reported by policy with retryAfter', async () => {
  const waits = new Generator(DAILY_16, { nodeId: 2, onExhausted: 'borrow', maxAhead: 3 * DAY })
  const borrowed = waits.nextIds(40)
  assertIncreasing(borrowed, 'borrowed')
  assert.ok(waits.decode(borrowed[39]).timestamp > waits.decode(borrowed[0]).timestamp)

  const reports = new Generator(DAILY_16, { nodeId: 3, onExhausted: 'error' })
  const e = throwsClass(() => {
    for (let i = 0; i < 100; i++) reports.nextId()
  }, flakeid.SequenceExhaustedError)
  assert.ok(e.retryAfter > 0 && e.retryAfter <= DAY, `retryAfter ${e.retryAfter}`)
  // pollId reports it under any policy; the async call rejects.
  const polls = new Generator(DAILY_16, { nodeId: 4 })
  throwsClass(() => {
    for (let i = 0; i < 100; i++) polls.pollId()
  }, flakeid.SequenceExhaustedError)
  throwsClass(() => polls.pollIds(100), flakeid.SequenceExhaustedError)
})

test('layouts, decode, compose and the string forms', () => {
  const discord = new Layout('discord')
  const id = 175928847299117063n
  const d = discord.decode(id)
  assert.equal(d.toString(), '2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7')
  assert.equal(d.unixMs, 1462015105796)
  assert.equal(d.rfc3339, '2016-04-30T11:18:25.796Z')
  assert.deepEqual(JSON.parse(JSON.stringify(d)).id, '175928847299117063')
  assert.equal(discord.compose({ unixMs: d.unixMs, nodeFields: { worker: 1, process: 0 }, sequence: 7 }), id)
  assert.equal(discord.compose({ timestamp: d.timestamp, nodeId: d.nodeId, sequence: 7n }), id)
  assert.equal(discord.nodeIdFromFields({ worker: 0, process: 1 }), 1n)
  assert.equal(discord.maxNodeId, 1023n)
  assert.equal(discord.capacityPerTick, 4096n)
  assert.deepEqual(discord.fields.map((f) => f.kind), ['timestamp', 'node', 'node', 'sequence'])
  const again = new Layout(discord.spec)
  assert.ok(again.equals(discord) && !again.equals(new Layout('twitter')) && !again.equals('discord'))
  assert.equal(JSON.stringify({ layout: discord }), JSON.stringify({ layout: discord.spec }))

  assert.equal(encode(id, 'base62'), '0Czks0tP37X')
  assert.equal(encode(id), '175928847299117063')
  for (const format of ['decimal', 'hex', 'base32', 'base62']) {
    assert.equal(parseId(encode(id, format), format), id)
  }
  assert.equal(parseId('0Czks0tP37X'), id)
  assert.equal(encode(2n ** 64n - 1n, 'hex').length > 0, true)
})

test('every error is its class, with its stable code and reason', () => {
  const E = flakeid
  throwsClass(() => new Generator('twitter'), E.NodeIdError, 'not_set')
  throwsClass(() => new Generator('twitter', { nodeId: 1024 }), E.NodeIdError, 'out_of_range')
  // Every node field is given: two hosts that both forgot one would share
  // a node id.
  const forgot = throwsClass(() => new Generator('twitter', { nodeFields: { datacenter: 1 } }),
    E.NodeIdError, 'field_not_set')
  assert.match(forgot.message, /^node field `worker` is not set/)
  assert.equal(new Generator('twitter', { nodeFields: { datacenter: 1, worker: 0 } }).nodeId, 1n << 5n)
  assert.match(throwsClass(() => new Layout('twitter').nodeIdFromFields({ datacenter: 1 }), E.FieldError).message,
    /^node field `worker` is not set/)
  throwsClass(() => new Generator('twitter', { nodeIdFromEnv: 'FLAKEID_NODE_TEST_UNSET' }),
    E.NodeIdError, 'env_not_set')
  throwsClass(() => new Generator('twitter', { nodeIdFromHostname: 'web' }), E.NodeIdError, 'no_ordinal')
  throwsClass(() => new Generator('tweeter', { nodeId: 1 }), E.LayoutError, 'unknown_preset')
  throwsClass(() => new Layout('epoch=0 fields=timestamp:41,worker:5'), E.LayoutError)
  // Node ids no other test of this file builds: a node id in use with
  // other settings is refused before its settings are checked.
  throwsClass(() => new Generator('twitter', { nodeId: 101, onExhausted: 'next_clock' }), E.ConfigError)
  throwsClass(() => new Generator('twitter', { nodeId: 1, onExhausted: 'later' }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: 1, onExhausted: 'borrow' }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: 1, nodeID: 1 }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: 1, singleNode: true }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: '1' }), E.InvalidTypeError)
  throwsClass(() => new Generator('twitter', { nodeId: 1.5 }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: -1n }), E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { nodeId: 2 ** 60 }), E.InvalidArgumentError)
  throwsClass(() => new Generator(7, { nodeId: 1 }), E.InvalidTypeError)
  throwsClass(() => new Generator('twitter', { nodeId: 1, maxWait: -1, onClockBehind: 'wait' }),
    E.InvalidArgumentError)
  throwsClass(() => new Generator('twitter', { lease: 'redis://x' }), E.InvalidTypeError)
  const gen = new Generator('twitter', { nodeId: 9 })
  throwsClass(() => gen.nextIds(-1), E.InvalidArgumentError)
  throwsClass(() => gen.nextIds(2 ** 24 + 1), E.InvalidArgumentError)
  throwsClass(() => gen.nextIds('3'), E.InvalidTypeError)
  throwsClass(() => gen.decode(2n ** 63n), E.FieldError)
  throwsClass(() => gen.decode(2n ** 64n), E.InvalidArgumentError)
  throwsClass(() => new Layout('twitter').compose({ unixMs: 0 }), E.FieldError)
  throwsClass(() => new Layout('twitter').compose({ timestamp: 1, nodeId: 1024 }), E.FieldError)
  throwsClass(() => parseId('order-17'), E.ParseIdError)
  throwsClass(() => parseId('12', 'base64'), E.InvalidArgumentError)
  throwsClass(() => encode(1n, 'base64'), E.InvalidArgumentError)
  throwsClass(() => Lease.redis(['redis://x']), E.InvalidTypeError)
  throwsClass(() => Lease.etcd('http://127.0.0.1:2379'), E.InvalidTypeError)
  throwsClass(() => Lease.etcd([]), E.InvalidArgumentError)
  throwsClass(() => Lease.etcd(['http://x'], { waitForReplicas: 1 }), E.InvalidArgumentError)
  throwsClass(() => Lease.redis('redis://x', { nodeIds: [1] }), E.InvalidTypeError)
  throwsClass(() => new Persist('x', { restartRule: 'never' }), E.InvalidArgumentError)
  throwsClass(() => new Persist(''), E.InvalidArgumentError)

  gen.close()
  gen.close()
  throwsClass(() => gen.nextId(), E.ClosedError)
  throwsClass(() => gen.nextIds(3), E.ClosedError)
  throwsClass(() => gen.nodeId, E.ClosedError)
  assert.equal(gen.health().state, 'closed')
  assert.equal(gen.health().ready, false)
})

test('async calls reject with the error class', async () => {
  const gen = new Generator(DAILY_16, { nodeId: 5, onExhausted: 'error' })
  gen.nextIds(16)
  await assert.rejects(gen.nextIdAsync(), flakeid.SequenceExhaustedError)
  await assert.rejects(gen.nextIdsAsync(1), flakeid.SequenceExhaustedError)
  await assert.rejects(gen.nextIdsAsync('1'), flakeid.InvalidTypeError)
  gen.close()
  await assert.rejects(gen.nextIdAsync(), flakeid.ClosedError)
  await assert.rejects(gen.nextIdsAsync(1), flakeid.ClosedError)
})

test('persistence: a rebuilt generator continues after the saved mark', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakeid-node-persist-'))
  try {
    const file = path.join(dir, 'node.state')
    const gen = new Generator('twitter', { nodeId: 11, persist: new Persist(file) })
    const before = gen.nextIds(1000)
    // Another node id on the same file: the state file is locked.
    throwsClass(() => new Generator('twitter', { nodeId: 12, persist: new Persist(file) }),
      flakeid.StateError, 'locked')
    await gen.closeAsync()
    const again = new Generator('twitter', { nodeId: 11, persist: new Persist(file) })
    assert.ok(again.nextId() > before.at(-1))
    again.close()
    fs.writeFileSync(file, 'not a state file')
    throwsClass(() => new Generator('twitter', { nodeId: 11, persist: new Persist(file) }),
      flakeid.StateError)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('leases on Redis: distinct node ids, fenced while the server is down, async waits', async () => {
  const redis = await startRedis()
  let gens = []
  try {
    // The default TTL (10 s), and async calls, which wait out a lease
    // fenced while this process could not run: nothing here depends on
    // when the lease keepers' threads get a CPU.
    const lease = Lease.redis(redis.url, { prefix: 'api-test' })
    assert.equal(lease.store, 'redis')
    gens = [0, 1].map(() => new Generator('twitter', { lease }))
    // Built on a worker thread: the claim does not block the event loop.
    const created = await Generator.create('twitter', { lease })
    assert.ok(created instanceof Generator)
    gens.push(created)
    await assert.rejects(Generator.create('twitter', { lease: 'redis://x' }), flakeid.InvalidTypeError)
    await assert.rejects(Generator.create('twitter'), flakeid.NodeIdError)
    const nodes = gens.map((g) => g.nodeId)
    assert.equal(new Set(nodes).size, 3, `node ids ${nodes}`)
    const ids = []
    for (const g of gens) ids.push(...(await g.nextIdsAsync(2000)))
    assertUnique(ids, 'leased generators')

    // Only two node ids to claim from, both held.
    const two = Lease.redis(redis.url, { prefix: 'api-test-2', nodeIds: [0, 1] })
    const held = [new Generator('twitter', { lease: two }), new Generator('twitter', { lease: two })]
    throwsClass(() => new Generator('twitter', { lease: two }), flakeid.LeaseError, 'all_held')
    for (const g of held) await g.closeAsync()
    // Released: claimable again.
    new Generator('twitter', { lease: two }).close()

    // The server goes away: the lease lapses by its deadline, and the
    // generator reports that instead of issuing.
    const gen = new Generator('twitter', { lease: Lease.redis(redis.url, { ttl: 1000, prefix: 'api-test-3' }) })
    gens.push(gen)
    const last = await gen.nextIdAsync()
    redis.stop()
    while (gen.health().state !== 'fenced') await new Promise((r) => setTimeout(r, 20))
    assert.ok(gen.health().closedFor >= 0)
    throwsClass(() => gen.nextId(), flakeid.FencedError)
    throwsClass(() => gen.pollIds(10), flakeid.FencedError)
    // The async call waits on a worker thread; the event loop runs on.
    let settled = false
    const pending = assert.rejects(gen.nextIdAsync().finally(() => { settled = true }),
      flakeid.ClosedError)
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(settled, false)
    // Closing the last handle ends the wait with ClosedError.
    await gen.closeAsync()
    await pending
    assert.ok(last > 0n)
  } finally {
    for (const g of gens) await g.closeAsync()
    redis.stop()
  }
})

test('a lease store that does not answer: LeaseError unreachable', () => {
  // Port 1 on loopback: nothing listens there.
  const lease = Lease.redis('redis://127.0.0.1:1/', { connectTimeout: 500 })
  throwsClass(() => new Generator('twitter', { lease }), flakeid.LeaseError, 'unreachable')
})
