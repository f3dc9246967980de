'use strict'
// Generators of two layouts are never shared, and their IDs can coincide
// when the bits line up. A build whose IDs could coincide with those of a
// generator of another layout in this process is refused, in any thread;
// one whose IDs cannot is built. (Its own file: the process's generators
// are the test's state.)

const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker } = require('node:worker_threads')

const { Generator, Layout, NodeIdError } = require('..')
const { assertIncreasing } = require('./support')

const TWITTER_EPOCH = 1288834974657
// twitter: timestamp:41, datacenter:5, worker:5, sequence:12. WIDE keeps
// the timestamp's bits and epoch, and puts 8 node bits above a 14-bit
// sequence: twitter's node 4 sets bit 14 of its IDs, and so does WIDE's
// node 1, whose sequence takes twitter's sequence bits and more.
const WIDE = `epoch=${TWITTER_EPOCH} fields=timestamp:41,node:8,sequence:14`

/** The error `f` throws. */
function thrown(f) {
  try {
    f()
  } catch (e) {
    return e
  }
  assert.fail('did not throw')
}

test('a generator whose IDs could coincide with one of another layout is refused', async () => {
  const twitter = new Generator('twitter', { nodeId: 4 })
  const first = twitter.nextIds(100)
  // Every twitter ID of node 4 is one WIDE's node 1 can issue.
  const wide = new Layout(WIDE)
  for (const id of first) assert.equal(wide.decode(id).nodeId, 1n)

  const refused = thrown(() => new Generator(WIDE, { nodeId: 1 }))
  assert.ok(refused instanceof NodeIdError, `${refused}`)
  assert.equal(refused.code, 'node_id')
  const twitterSpec = new Layout('twitter').spec
  assert.ok(refused.message.includes(`layout \`${twitterSpec}\` with node id 4`), refused.message)
  assert.ok(refused.message.includes(`layout \`${wide.spec}\` with node id 1`), refused.message)
  const [, shared] = refused.message.match(/both can issue ID (\d+)/) ?? assert.fail(refused.message)
  assert.equal(new Layout('twitter').decode(BigInt(shared)).nodeId, 4n)
  assert.equal(wide.decode(BigInt(shared)).nodeId, 1n)

  // In a worker thread too: the generators are the process's.
  const inWorker = await new Promise((resolve, reject) => {
    const worker = new Worker(`
      const { workerData, parentPort } = require('node:worker_threads')
      const { Generator, NodeIdError } = require(workerData.package)
      try {
        new Generator(workerData.layout, { nodeId: 1 })
        parentPort.postMessage('built')
      } catch (e) {
        parentPort.postMessage(e instanceof NodeIdError ? 'NodeIdError: ' + e.message : String(e))
      }
    `, { eval: true, workerData: { package: require.resolve('..'), layout: WIDE } })
    let result
    worker.on('message', (m) => { result = m })
    worker.on('error', reject)
    worker.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`exit ${code}`))))
  })
  assert.match(inWorker, /^NodeIdError: .* both can issue ID \d+/)

  // WIDE's node 2 sets bit 15, which no twitter ID of node 4 sets.
  const apart = new Generator(WIDE, { nodeId: 2 })
  for (const id of apart.nextIds(100)) assert.equal(new Layout('twitter').decode(id).nodeId & 4n, 0n)
  // The refusal left nothing behind: still refused, and twitter's node 4
  // is still one generator, its handles sharing one sequence.
  assert.ok(thrown(() => new Generator(WIDE, { nodeId: 1 })) instanceof NodeIdError)
  const again = new Generator('twitter', { nodeId: 4 })
  assertIncreasing([...first, ...again.nextIds(100), ...twitter.nextIds(100)], 'twitter node 4')
})
