// A typical use of flakeid-rs, type-checked by types.test.js
// (`tsc --noEmit --strict`); the lines after `@ts-expect-error` must not
// type-check.
import {
  Decoded,
  FencedError,
  FlakeidError,
  Generator,
  Layout,
  Lease,
  Persist,
  SequenceExhaustedError,
  encode,
  parseId,
  type ErrorCode,
  type Health,
} from '../..'

async function main(): Promise<void> {
  const gen = new Generator('twitter', { nodeFields: { datacenter: 1, worker: 7n } })
  const id: bigint = gen.nextId()
  const batch: BigUint64Array = gen.nextIds(4096)
  const later: bigint = await gen.nextIdAsync()
  const many: BigUint64Array = await gen.nextIdsAsync(10)
  const text: string = gen.nextIdString()
  const decoded: Decoded = gen.decode(id)
  const worker: bigint | undefined = decoded.fields.worker
  const when: Date = decoded.date
  const health: Health = gen.health()
  const ready: boolean = health.ready
  const json: string = JSON.stringify({ id: encode(id), decoded })
  const back: bigint = parseId(encode(id, 'base62'))
  const layout = new Layout('epoch=1700000000000 fields=timestamp:41,shard:10,sequence:12')
  const composed: bigint = layout.compose({ unixMs: Date.now(), nodeId: 3, sequence: 0 })
  const created: Generator = await Generator.create('twitter', { nodeId: 9 })
  created.close()
  const leased = new Generator(layout, {
    lease: Lease.redis('redis://127.0.0.1:6379/', { ttl: 10_000, nodeIds: [0, 99] }),
    persist: new Persist('/var/lib/orders/node.state', { window: 1000 }),
    onExhausted: 'borrow',
    maxAhead: 50,
  })
  const onSql: Lease = Lease.postgres('postgres://ids@db/app', { table: 'order_leases', createTable: false })
  const store: string = Lease.mysql('mysql://ids@db/app', { ttl: 10_000 }).store
  void [onSql, store]
  try {
    leased.nextId()
  } catch (e) {
    if (e instanceof FencedError || e instanceof SequenceExhaustedError) {
      const code: ErrorCode = e.code
      void code
    } else if (e instanceof FlakeidError) {
      const detail: string | undefined = e.detail
      void detail
    }
  }
  if (e0 instanceof SequenceExhaustedError) {
    const retry: number = e0.retryAfter
    void retry
  }
  await leased.closeAsync()
  gen.close()
  void [batch, later, many, text, worker, when, ready, json, back, composed]

  // @ts-expect-error: a count is a number or a bigint
  gen.nextIds('10')
  // @ts-expect-error: misspelt option
  new Generator('twitter', { nodeID: 7 })
  // @ts-expect-error: unknown policy
  new Generator('twitter', { nodeId: 7, onExhausted: 'later' })
  // @ts-expect-error: IDs are bigints, not numbers
  const n: number = gen.nextId()
  // @ts-expect-error: Decoded has no public constructor
  new Decoded()
  // @ts-expect-error: a SQL lease takes no waitForReplicas
  Lease.postgres('postgres://ids@db/app', { waitForReplicas: 1 })
  void n
}

declare const e0: unknown
void main
