'use strict'
// worker_threads share the process, and with it the addon's generators:
// generators of one layout and node id built in the main thread and in
// workers are handles on one generator, so their IDs never collide.
//
// The layout's tick is an hour with a 32-bit sequence, and a generator's
// first ID is its start tick's sequence 0: of five separate generators of
// one node id, started within an hour, two would share a start tick and
// collide, whatever the threads' timing.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker } = require('node:worker_threads')

const { Generator, NodeIdError } = require('..')
const { assertUnique, assertIncreasing } = require('./support')

const HOURLY = 'epoch=1700000000000 unit=3600000 fields=timestamp:21,node:10,sequence:32'

/** Runs `source` in a worker with `workerData`; resolves to what it posts. */
function inWorker(source, workerData) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData })
    let result
    worker.on('message', (m) => { result = m })
    worker.on('error', reject)
    worker.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`exit ${code}`))))
  })
}

const ISSUE = `
const { workerData, parentPort } = require('node:worker_threads')
const { Generator } = require(workerData.package)
const gen = new Generator(workerData.layout, { nodeId: workerData.node })
const ids = []
for (let round = 0; round < workerData.rounds; round++) {
  ids.push(gen.nextId(), ...gen.nextIds(97))
}
parentPort.postMessage({ ids: BigUint64Array.from(ids), nodeId: gen.nodeId })
`

test('workers and the main thread building one node id issue no ID twice', async () => {
  const gen = new Generator(HOURLY, { nodeId: 7 })
  const workerData = { package: require.resolve('..'), layout: HOURLY, node: 7, rounds: 500 }
  const workers = [1, 2, 3, 4].map(() => inWorker(ISSUE, workerData))
  // The main thread issues while the workers do.
  const main = []
  for (let i = 0; i < 200; i++) main.push(...gen.nextIds(50))
  main.push(await gen.nextIdAsync())
  const results = await Promise.all(workers)
  const all = [...main]
  for (const { ids, nodeId } of results) {
    assert.equal(nodeId, 7n)
    assert.equal(ids.length, 500 * 98)
    assertIncreasing(ids, 'one worker')
    all.push(...ids)
  }
  assertIncreasing(main, 'main thread')
  assert.equal(assertUnique(all, 'main and 4 workers'), 10_001 + 4 * 500 * 98)
  // One sequence: the tick's sequence numbers are exactly 0..n-1.
})

test('a worker building that node id with other settings is refused', async () => {
  new Generator(HOURLY, { nodeId: 8 })
  const refused = await inWorker(`
    const { workerData, parentPort } = require('node:worker_threads')
    const { Generator, NodeIdError } = require(workerData.package)
    try {
      new Generator(workerData.layout, { nodeId: 8, counters: true })
      parentPort.postMessage('built')
    } catch (e) {
      parentPort.postMessage(e instanceof NodeIdError ? e.code + ': ' + e.message : String(e))
    }
  `, { package: require.resolve('..'), layout: HOURLY })
  assert.match(refused, /^node_id: a generator of this layout with node id 8 already exists/)
  // The same in one thread; another node id is free.
  assert.throws(() => new Generator(HOURLY, { nodeId: 8, onExhausted: 'error' }), NodeIdError)
  new Generator(HOURLY, { nodeId: 9, onExhausted: 'error' })
})

test('a node id built again after its generators closed continues their sequence', async () => {
  const first = new Generator(HOURLY, { nodeId: 10 })
  const a = first.nextIds(1000)
  first.close()
  // Built and closed in a worker that then ends.
  const { ids } = await inWorker(ISSUE, { package: require.resolve('..'), layout: HOURLY, node: 10, rounds: 3 })
  const again = new Generator(HOURLY, { nodeId: 10 })
  const b = again.nextId()
  assertIncreasing([...a, ...ids, b], 'across rebuilds')
})
