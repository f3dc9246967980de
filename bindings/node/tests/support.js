'use strict'
// What several test files share: a real redis-server on 127.0.0.1 with a
// free port and a temporary directory, stopped by the caller.

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

/** A port nothing listens on now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** Whether a Redis server answers PING on `port`. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let reply = ''
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (data) => {
      reply += data
      if (reply.includes('\r\n')) {
        socket.destroy()
        resolve(reply.startsWith('+PONG'))
      }
    })
    socket.on('error', () => resolve(false))
  })
}

/**
 * Starts redis-server; resolves to `{ url, stop }` once it answers PING
 * (waiting at most 20 s for it to start, then failing).
 */
async function startRedis() {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakeid-node-redis-'))
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--save', '', '--appendonly', 'no', '--protected-mode', 'no',
  ], { stdio: 'ignore' })
  let exited = null
  child.on('exit', (code, signal) => { exited = `exited (${code ?? signal})` })
  child.on('error', (e) => {
    exited = `cannot start redis-server (${e.message}); install Debian's redis-server`
  })
  const stop = () => {
    if (exited === null) child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + 20_000
  while (!(await ping(port))) {
    if (exited !== null || Date.now() > deadline) {
      stop()
      throw new Error(`redis-server on port ${port}: ${exited ?? 'not ready after 20 s'}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return { url: `redis://127.0.0.1:${port}/`, stop }
}

/** Throws unless `ids` (any iterable of bigints) holds no value twice. */
function assertUnique(ids, what) {
  const seen = new Set()
  for (const id of ids) {
    if (seen.has(id)) throw new Error(`${what}: ${id} issued twice`)
    seen.add(id)
  }
  return seen.size
}

/** Throws unless `ids` strictly increase. */
function assertIncreasing(ids, what) {
  let last = -1n
  for (const id of ids) {
    if (id <= last) throw new Error(`${what}: ${id} after ${last}`)
    last = id
  }
}

module.exports = { startRedis, assertUnique, assertIncreasing }
