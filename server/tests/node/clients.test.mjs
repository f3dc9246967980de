// flakeid-server from Node, as a JavaScript service would use it:
// @grpc/grpc-js with the shipped .proto (loaded with `longs: String`, so IDs
// above 2^53 - 1 keep every bit) and fetch for HTTP/JSON (IDs as strings).
//
// The test starts the server itself (FLAKEID_SERVER_BIN, else
// target/debug/flakeid-server) on ports the system picks and waits for its
// readiness line.
//
//     (cd server/tests/node && npm ci && node --test)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const bin = process.env.FLAKEID_SERVER_BIN ?? join(root, 'target/debug/flakeid-server');
const protoDir = join(root, 'server/proto');

// Twitter's layout: 41 ms, 5 datacenter, 5 worker, 12 sequence.
const EPOCH_MS = 1288834974657n;
const decode = (id) => ({
  unixMs: (id >> 22n) + EPOCH_MS,
  datacenter: Number((id >> 17n) & 0x1fn),
  worker: Number((id >> 12n) & 0x1fn),
  sequence: Number(id & 0xfffn),
});

let server;
let dir;
let http;
let client;

function startServer(config) {
  dir = mkdtempSync(join(tmpdir(), 'flakeid-node-'));
  const path = join(dir, 'server.toml');
  writeFileSync(path, config);
  const child = spawn(bin, ['--config', path, '--http-addr', '127.0.0.1:0', '--grpc-addr', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH, FLAKEID_LOG_LEVEL: 'warn' },
  });
  return new Promise((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error('flakeid-server not ready within 30 s')), 30_000);
    let out = '';
    child.stdout.on('data', (data) => {
      out += data;
      const line = out.split('\n').find((l) => l.startsWith('flakeid-server ready'));
      if (line) {
        clearTimeout(timer);
        const fields = Object.fromEntries(line.split(' ').filter((w) => w.includes('=')).map((w) => w.split('=')));
        resolveReady({ child, http: `http://${fields.http}`, grpc: fields.grpc });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`flakeid-server exited with ${code}`));
    });
  });
}

before(async () => {
  const started = await startServer('node_fields = { datacenter = 3, worker = 17 }\nmax_count = 1000\n');
  server = started.child;
  http = started.http;
  const definition = protoLoader.loadSync('flakeid/v1/flakeid.proto', {
    includeDirs: [protoDir],
    longs: String,
    defaults: true,
  });
  const { flakeid } = grpc.loadPackageDefinition(definition);
  client = new flakeid.v1.IdGenerator(started.grpc, grpc.credentials.createInsecure());
});

after(() => {
  client?.close();
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

const call = (method, request) =>
  new Promise((ok, fail) => client[method](request, { deadline: Date.now() + 5000 }, (e, reply) => (e ? fail(e) : ok(reply))));

const stream = (request) =>
  new Promise((ok, fail) => {
    const ids = [];
    const s = client.StreamIds(request, { deadline: Date.now() + 10000 });
    s.on('data', (chunk) => ids.push(...chunk.ids));
    s.on('end', () => ok(ids));
    s.on('error', fail);
  });

test('every API hands out unique, increasing IDs that keep every bit', async () => {
  const ids = [];
  ids.push(BigInt((await (await fetch(`${http}/v1/id`)).json()).id));
  const batch = await (await fetch(`${http}/v1/ids?count=1000`)).json();
  assert.ok(batch.ids.every((i) => typeof i === 'string'), 'IDs are strings in JSON');
  ids.push(...batch.ids.map(BigInt));
  ids.push(BigInt((await call('NextId', {})).id));
  ids.push(...(await call('NextIds', { count: 1000 })).ids.map(BigInt));
  ids.push(...(await stream({ count: 10000, chunkSize: 512 })).map(BigInt));
  assert.equal(ids.length, 1 + 1000 + 1 + 1000 + 10000);
  assert.equal(new Set(ids).size, ids.length, 'an ID was handed out twice');
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `not increasing at ${i}`);
  // Twitter-layout IDs of today are far above 2^53: Number would round them.
  assert.ok(ids[0] > BigInt(Number.MAX_SAFE_INTEGER));
  for (const id of ids) {
    const d = decode(id);
    assert.equal(d.datacenter, 3);
    assert.equal(d.worker, 17);
  }
  const last = ids[ids.length - 1];
  const viaHttp = await (await fetch(`${http}/v1/decode/${last}`)).json();
  const viaGrpc = await call('Decode', { id: last.toString() });
  assert.equal(viaHttp.id, last.toString());
  assert.equal(BigInt(viaHttp.unix_ms), decode(last).unixMs);
  assert.equal(viaGrpc.id, last.toString());
  assert.equal(BigInt(viaGrpc.unixMs), decode(last).unixMs);
  assert.equal(Number(viaGrpc.nodeFields.worker), 17);
});

test('bad requests get 400 and INVALID_ARGUMENT saying what is wrong', async () => {
  const r = await fetch(`${http}/v1/ids?count=1001`);
  assert.equal(r.status, 400);
  assert.match((await r.json()).error, /count 1001 is out of range: 1 to 1000/);
  await assert.rejects(call('NextId', { generator: 'nope' }), (e) => {
    assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
    assert.match(e.details, /unknown generator "nope"/);
    return true;
  });
  await assert.rejects(call('Decode', { id: 'ZZZ' }), (e) => e.code === grpc.status.INVALID_ARGUMENT);
});
