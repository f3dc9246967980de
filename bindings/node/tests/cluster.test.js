'use strict'
// Node's `cluster` workers are separate processes that load the module
// afresh: each builds its own generator. With a lease on a real Redis,
// each claims a distinct node id and no ID is issued twice; with one
// static node id in every worker (the control), IDs collide, which shows
// that the check would catch a lease handing out one node id twice.
//
// The layout's tick is an hour, and each worker's first ID is its start
// tick's sequence 0: four workers start in at most two ticks, so two that
// share a node id collide whatever their timing.
//
// A released node id can be claimed again at once, its mark carried over
// (the next holder starts after it, so no ID repeats): near the end of an
// hour a late worker could take the node id of one that had finished. So
// no worker releases its lease until every one has reported.

const test = require('node:test')
const assert = require('node:assert/strict')
const cluster = require('node:cluster')
const path = require('node:path')

const { Layout } = require('..')
const { startRedis, assertIncreasing } = require('./support')

const HOURLY = 'epoch=1700000000000 unit=3600000 fields=timestamp:21,node:10,sequence:32'
const WORKERS = 4

/** Forks `WORKERS` workers with `env`; resolves to what each sent. The
 * primary acknowledges only once every worker has sent its IDs, and a
 * worker releases its lease and exits only after that: all `WORKERS`
 * hold their node ids at once, so a node id one released cannot be
 * claimed again by a later one. (A worker's `exit` can also be emitted
 * before its last message is read: waiting for the acknowledgement
 * closes that race too.) */
function runWorkers(env) {
  cluster.setupPrimary({ exec: path.join(__dirname, 'cluster-worker.js'), silent: false })
  const workers = []
  let reported = 0
  const done = Array.from({ length: WORKERS }, () => new Promise((resolve, reject) => {
    const worker = cluster.fork(env)
    workers.push(worker)
    let sent
    worker.on('message', (m) => {
      sent = m
      reported += 1
      if (reported === WORKERS) for (const w of workers) w.send('received')
    })
    worker.on('error', reject)
    worker.on('exit', (code) => {
      if (code !== 0 || sent === undefined) reject(new Error(`worker exited ${code}, sent ${sent}`))
      else {
        const bytes = Buffer.from(sent.ids, 'base64')
        const ids = new BigUint64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))
        resolve({ nodeId: BigInt(sent.nodeId), held: new Set(sent.held.map(BigInt)), ids })
      }
    })
  }))
  // One worker failing must not leave the others waiting for an
  // acknowledgement that never comes.
  return Promise.all(done).catch((e) => {
    for (const w of workers) if (!w.isDead()) w.kill('SIGKILL')
    throw e
  })
}

/** The IDs issued more than once. */
function repeats(results) {
  const seen = new Set()
  const twice = []
  for (const { ids } of results) {
    for (const id of ids) {
      if (seen.has(id)) twice.push(id)
      seen.add(id)
    }
  }
  return twice
}

test('cluster workers leasing node ids: distinct node ids, no ID twice', async () => {
  const redis = await startRedis()
  try {
    const results = await runWorkers({ FLAKEID_TEST_REDIS: redis.url, FLAKEID_TEST_LAYOUT: HOURLY })
    const layout = new Layout(HOURLY)
    const nodes = results.map((r) => r.nodeId)
    assert.equal(new Set(nodes).size, WORKERS, `node ids ${nodes}`)
    for (const { nodeId, held, ids } of results) {
      assert.equal(ids.length, 200 * 100)
      for (const id of ids) assert.ok(held.has(layout.decode(id).nodeId), `${id} of node ${nodeId}`)
      if (held.size === 1) assertIncreasing(ids, `worker of node ${nodeId}`)
    }
    assert.deepEqual(repeats(results), [])
  } finally {
    redis.stop()
  }
})

test('control: cluster workers with one static node id repeat each other', async () => {
  const results = await runWorkers({ FLAKEID_TEST_NODE_ID: '5', FLAKEID_TEST_LAYOUT: HOURLY })
  assert.ok(repeats(results).length > 0, 'no ID repeated across workers of one node id')
})
