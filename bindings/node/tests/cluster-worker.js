'use strict'
// A `cluster` worker of cluster.test.js: builds its generator as a
// service's module would at load, issues IDs, and sends them to the
// primary. FLAKEID_TEST_NODE_ID set: a static node id instead of the lease
// (the test's control, which must collide).

const { Generator, Lease } = require('..')

const { FLAKEID_TEST_REDIS: url, FLAKEID_TEST_LAYOUT: layout, FLAKEID_TEST_NODE_ID: nodeId } = process.env
// A long connect timeout: the claim must not fail because this process
// waited for a CPU.
const gen = nodeId === undefined
  ? new Generator(layout, { lease: Lease.redis(url, { prefix: 'cluster-test', connectTimeout: 120_000 }) })
  : new Generator(layout, { nodeId: Number(nodeId) })

async function main() {
  const ids = []
  // The node ids held: a lease fenced while this process could not run
  // may claim another node id; the async calls wait that out.
  const held = new Set([gen.nodeId])
  for (let round = 0; round < 200; round++) {
    ids.push(...(await gen.nextIdsAsync(99)), await gen.nextIdAsync())
    held.add(gen.nodeId)
  }
  const buffer = Buffer.from(BigUint64Array.from(ids).buffer)
  const message = { nodeId: String(gen.nodeId), held: [...held].map(String), ids: buffer.toString('base64') }
  // Exits once the primary has the IDs (see runWorkers), releasing the
  // lease first.
  process.once('message', () => {
    gen.closeAsync().then(() => process.disconnect())
  })
  process.send(message)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
