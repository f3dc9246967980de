'use strict'
// A `cluster` worker of cluster.test.js: builds its generator as a
// service's module would at load, issues IDs, and sends them to the
// primary. FLAKEID_TEST_NODE_ID set: a static node id instead of the lease
// (the test's control, which must collide).

const { Generator, Lease } = require('..')

const { FLAKEID_TEST_REDIS: url, FLAKEID_TEST_LAYOUT: layout, FLAKEID_TEST_NODE_ID: nodeId } = process.env
const gen = nodeId === undefined
  ? new Generator(layout, { lease: Lease.redis(url, { ttl: 5000, prefix: 'cluster-test' }) })
  : new Generator(layout, { nodeId: Number(nodeId) })

async function main() {
  const ids = []
  for (let round = 0; round < 200; round++) {
    ids.push(gen.nextId(), ...gen.nextIds(99), await gen.nextIdAsync())
  }
  const buffer = Buffer.from(BigUint64Array.from(ids).buffer)
  process.send({ nodeId: String(gen.nodeId), ids: buffer.toString('base64') }, () => {
    // Releases the lease before the worker exits.
    gen.closeAsync().then(() => process.disconnect())
  })
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
