'use strict'
// Leases on PostgreSQL and MySQL (MariaDB), on real servers this file
// starts on loopback (support.js) and stops at its end: distinct node ids,
// unique IDs under them, a table of one's own, and each failure as its
// typed error. One top-level test per store and property (CI counts them).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')

const flakeid = require('..')
const { Generator, Lease } = flakeid
const { startPostgres, startMariadb, freePort, assertUnique, assertIncreasing } = require('./support')

const servers = {}

before(async () => {
  servers.postgres = await startPostgres()
  servers.mysql = await startMariadb()
})

after(async () => {
  await Promise.all(Object.values(servers).map((s) => s.stop()))
})

let prefixes = 0
/** A key prefix of its own for each test, so tests share no node ids. */
function prefix() {
  return `flakeid-node-test/${process.pid}/${++prefixes}`
}

/** Asserts that `f` throws `cls` (with `detail`, if given); returns the error. */
function throwsClass(f, cls, detail) {
  let caught
  try {
    f()
  } catch (e) {
    caught = e
  }
  assert.ok(caught instanceof cls, `expected ${cls.name}, got ${caught?.stack ?? caught}`)
  assert.equal(caught.code, cls.code)
  if (detail !== undefined) assert.equal(caught.detail, detail, caught.message)
  return caught
}

/** Two generators on node ids 0 and 1, unique IDs under each, a third
 * claim refused, and a released node id claimed again after its mark. */
function distinctNodeIdsAndUniqueIds(store) {
  const lease = Lease[store](servers[store].url, { prefix: prefix(), nodeIds: [0, 1] })
  assert.equal(lease.store, store)
  const a = new Generator('twitter', { lease })
  const b = new Generator('twitter', { lease })
  try {
    assert.deepEqual(new Set([a.nodeId, b.nodeId]), new Set([0n, 1n]))
    assert.ok(a.health().ready && b.health().ready)
    const idsA = [...a.nextIds(20_000), ...Array.from({ length: 1000 }, () => a.nextId())]
    const idsB = [...b.nextIds(20_000), ...Array.from({ length: 1000 }, () => b.nextId())]
    assertIncreasing(idsA, 'generator a')
    assertIncreasing(idsB, 'generator b')
    for (const id of idsA) assert.equal(a.decode(id).nodeId, a.nodeId)
    for (const id of idsB) assert.equal(b.decode(id).nodeId, b.nodeId)
    assert.equal(assertUnique([...idsA, ...idsB], 'both generators'), idsA.length + idsB.length)

    throwsClass(() => new Generator('twitter', { lease }), flakeid.LeaseError, 'all_held')

    const freed = a.nodeId
    a.close()
    const c = new Generator('twitter', { lease })
    assert.equal(c.nodeId, freed)
    assert.ok(c.nextId() > idsA.at(-1))
    c.close()
  } finally {
    a.close()
    b.close()
  }
}

test('PostgreSQL leases: distinct node ids, unique IDs, a released node id claimed again', () => {
  distinctNodeIdsAndUniqueIds('postgres')
})

test('MySQL (MariaDB) leases: distinct node ids, unique IDs, a released node id claimed again', () => {
  distinctNodeIdsAndUniqueIds('mysql')
})

/** A table of its own, made by the first claim; a lease that may not
 * create it then finds it, with the first generator's mark. */
async function aTableOfItsOwn(store) {
  // Quoted as one identifier, whatever it holds.
  const table = `flakeid_node "test"; DROP TABLE x ${await freePort()}`
  const options = { table, prefix: prefix(), nodeIds: [5, 5] }
  const first = await Generator.create('twitter', { lease: Lease[store](servers[store].url, options) })
  assert.equal(first.nodeId, 5n)
  const last = first.nextId()
  await first.closeAsync()
  const lease = Lease[store](servers[store].url, { ...options, createTable: false })
  const again = await Generator.create('twitter', { lease })
  try {
    assert.equal(again.nodeId, 5n)
    const ids = again.nextIds(1000)
    assert.ok(ids[0] > last)
    for (const id of ids) assert.equal(again.decode(id).nodeId, 5n)
  } finally {
    await again.closeAsync()
  }
}

test('PostgreSQL: a table of its own is created, then found', async () => {
  await aTableOfItsOwn('postgres')
})

test('MySQL (MariaDB): a table of its own is created, then found', async () => {
  await aTableOfItsOwn('mysql')
})

/** A missing table a lease may not create: LeaseError, detail `table`. */
async function aMissingTable(store) {
  const lease = Lease[store](servers[store].url, {
    table: 'flakeid_node_no_such_table', createTable: false, prefix: prefix(),
  })
  const e = throwsClass(() => new Generator('twitter', { lease }), flakeid.LeaseError, 'table')
  assert.match(e.message, /flakeid_node_no_such_table/)
  await assert.rejects(Generator.create('twitter', { lease }),
    (e) => e instanceof flakeid.LeaseError && e.detail === 'table')
}

test('PostgreSQL: a missing table not to be created is a LeaseError (table)', async () => {
  await aMissingTable('postgres')
})

test('MySQL (MariaDB): a missing table not to be created is a LeaseError (table)', async () => {
  await aMissingTable('mysql')
})

test('an unreachable PostgreSQL or MySQL is a LeaseError (unreachable)', async () => {
  const port = await freePort() // nothing listens there
  for (const url of [`postgres://postgres@127.0.0.1:${port}/postgres`,
    `mysql://flakeid:secret@127.0.0.1:${port}/flakeid`]) {
    const lease = url.startsWith('postgres')
      ? Lease.postgres(url, { connectTimeout: 500 })
      : Lease.mysql(url, { connectTimeout: 500 })
    throwsClass(() => new Generator('twitter', { lease }), flakeid.LeaseError, 'unreachable')
  }
})

test('bad SQL lease settings are typed errors, before any store is contacted', () => {
  // Nothing listens on port 1: each refusal comes before a connection.
  const urls = { postgres: 'postgres://postgres@127.0.0.1:1/postgres', mysql: 'mysql://flakeid@127.0.0.1:1/flakeid' }
  for (const store of ['postgres', 'mysql']) {
    // An identifier of 1 to 63 bytes, no NUL.
    for (const table of ['', 'a'.repeat(64), 'ids\0']) {
      const lease = Lease[store](urls[store], { table })
      throwsClass(() => new Generator('twitter', { lease }), flakeid.ConfigError)
    }
    throwsClass(() => Lease[store](urls[store], { table: 5 }), flakeid.InvalidTypeError)
    throwsClass(() => Lease[store](urls[store], { createTable: 'yes' }), flakeid.InvalidTypeError)
    throwsClass(() => Lease[store]([urls[store]]), flakeid.InvalidTypeError)
    // Redis's own option is not a SQL store's, nor a SQL store's Redis's.
    throwsClass(() => Lease[store](urls[store], { waitForReplicas: 1 }), flakeid.InvalidArgumentError)
  }
  throwsClass(() => Lease.redis('redis://127.0.0.1:1/', { table: 'ids' }), flakeid.InvalidArgumentError)
  throwsClass(() => Lease.etcd(['http://127.0.0.1:1'], { createTable: true }), flakeid.InvalidArgumentError)
})
