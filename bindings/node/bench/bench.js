'use strict'
// flakeid-rs against the IDs Node services make today, side by side in one
// run: @sapphire/snowflake, the uuidv7 package, crypto.randomUUID(), and a
// floor (a call of the same addon that returns a bigint and does nothing
// else). Single IDs, and batches of 4,096: flakeid's nextIds (a new
// BigUint64Array each time) and fillIds (into one reused array);
// @sapphire/snowflake has no batch call, so its batch is a loop of 4,096
// single calls into an array.
//
//   cd bindings/node && npm install && npm run build && node bench/bench.js [--rounds 9] [--seconds 0.2]
//
// Each round times every subject once, in turn, for about --seconds; the
// table gives each subject's median and fastest round over --rounds rounds
// (after one warm-up round), in nanoseconds per ID. flakeid's layout has a
// 22-bit sequence (41 ms + 1 node bit + 22), so the 4,096-per-millisecond
// cap of a 12-bit sequence is not what is measured; @sapphire/snowflake's
// 12-bit increment wraps within a millisecond without waiting (so its IDs
// repeat past 4,096 per millisecond: it is measured as it is used).

const crypto = require('node:crypto')
const os = require('node:os')
const { Snowflake } = require('@sapphire/snowflake')
const { uuidv7 } = require('uuidv7')
const { Generator } = require('..')

const argument = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const ROUNDS = argument('rounds', 9)
const SECONDS = argument('seconds', 0.2)
const BATCH = 4096

const gen = new Generator('epoch=1700000000000 fields=timestamp:41,node:1,sequence:22', { nodeId: 1 })
const sapphire = new Snowflake(1700000000000n)

// Each subject: a name, and a function that makes `n` IDs (rounded up to
// whole batches) and returns how many it made.
const singles = [
  ['flakeid-rs `nextId()`', (n) => { for (let i = 0; i < n; i++) gen.nextId(); return n }],
  ['floor: `_floor()`, a native call returning a bigint', (n) => { for (let i = 0; i < n; i++) gen._floor(); return n }],
  ['flakeid-rs `nextIdString()`', (n) => { for (let i = 0; i < n; i++) gen.nextIdString(); return n }],
  ['@sapphire/snowflake `generate()`', (n) => { for (let i = 0; i < n; i++) sapphire.generate(); return n }],
  ['uuidv7 `uuidv7()`', (n) => { for (let i = 0; i < n; i++) uuidv7(); return n }],
  ['`crypto.randomUUID()`', (n) => { for (let i = 0; i < n; i++) crypto.randomUUID(); return n }],
]
const batches = [
  [`flakeid-rs \`nextIds(${BATCH})\``, (n) => {
    let made = 0
    while (made < n) made += gen.nextIds(BATCH).length
    return made
  }],
  [`flakeid-rs \`fillIds(array)\`, a reused BigUint64Array of ${BATCH}`, (n) => {
    const out = new BigUint64Array(BATCH)
    let made = 0
    while (made < n) made += gen.fillIds(out).length
    return made
  }],
  [`@sapphire/snowflake, ${BATCH} \`generate()\` into a BigUint64Array`, (n) => {
    let made = 0
    while (made < n) {
      const out = new BigUint64Array(BATCH)
      for (let i = 0; i < BATCH; i++) out[i] = sapphire.generate()
      made += BATCH
    }
    return made
  }],
]
const subjects = [...singles, ...batches]

/** Nanoseconds per ID of one timed run of about `SECONDS`. */
function time(make, calls) {
  const start = process.hrtime.bigint()
  const made = make(calls)
  return Number(process.hrtime.bigint() - start) / made
}

// Calibrate: calls per round for each subject.
const calls = subjects.map(([, make]) => {
  let n = 1000
  while (time(make, n) * n < SECONDS * 1e9 / 4) n *= 2
  return Math.ceil((n * SECONDS * 1e9) / (time(make, n) * n) / BATCH) * BATCH
})

const load = os.loadavg()[0]
const results = subjects.map(() => [])
for (let round = 0; round <= ROUNDS; round++) {
  subjects.forEach(([, make], i) => {
    const ns = time(make, calls[i])
    if (round > 0) results[i].push(ns)
  })
}

const stats = results.map((r) => {
  const sorted = [...r].sort((a, b) => a - b)
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted.at(-1) }
})
const byName = Object.fromEntries(subjects.map(([name], i) => [name, stats[i]]))
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))

console.log(`# flakeid-rs (Node) against its peers\n`)
console.log(`${new Date().toISOString()}; ${os.cpus()[0].model}, ${os.cpus().length} cores; ` +
  `Node ${process.version}; load average ${load.toFixed(2)} before; ${ROUNDS} rounds of ~${SECONDS} s ` +
  `per subject; \`node bench/bench.js --rounds ${ROUNDS} --seconds ${SECONDS}\`\n`)
console.log('| subject | ns per ID, median | fastest round | slowest round | IDs per second (median) |')
console.log('|---|---:|---:|---:|---:|')
subjects.forEach(([name], i) => {
  const s = stats[i]
  console.log(`| ${name} | ${fmt(s.median)} | ${fmt(s.min)} | ${fmt(s.max)} | ${(1e9 / s.median / 1e6).toFixed(2)} M |`)
})

const single = byName[singles[0][0]].median
const floor = byName[singles[1][0]].median
const peer = byName[singles[3][0]].median
const batch = byName[batches[0][0]].median
const filled = byName[batches[1][0]].median
const verdict = (ok) => (ok ? 'met' : 'missed')
console.log('\n| target | measured (medians) | |')
console.log('|---|---:|---|')
console.log(`| a single ID within 1.5× the floor | ${(single / floor).toFixed(2)}× the floor | ${verdict(single / floor <= 1.5)} |`)
console.log(`| at least 5× @sapphire/snowflake | ${(peer / single).toFixed(2)}× faster | ${verdict(peer / single >= 5)} |`)
console.log(`| a batch of ${BATCH} at least 20× faster per ID than single calls: \`nextIds\` | ${(single / batch).toFixed(1)}× | ${verdict(single / batch >= 20)} |`)
console.log(`| the same, \`fillIds\` into a reused array | ${(single / filled).toFixed(1)}× | ${verdict(single / filled >= 20)} |`)
gen.close()
