'use strict'
// What several test files share: a real redis-server, PostgreSQL and
// MariaDB on 127.0.0.1, each with a free port and a temporary directory,
// stopped by the caller.

const { spawn, spawnSync } = require('node:child_process')
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

/** Whether this process runs as root (PostgreSQL refuses to). */
const isRoot = process.getuid?.() === 0

/** `runuser -u <user> --` when the tests run as root, else nothing. */
function runAs(user) {
  return isRoot ? ['runuser', '-u', user, '--'] : []
}

/** A temporary directory the server's user owns (root's mkdtemp is 0700). */
function ownedScratch(user) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `flakeid-node-${user}-`))
  if (isRoot) {
    const run = spawnSync('chown', [`${user}:`, dir], { encoding: 'utf8' })
    if (run.status !== 0) throw new Error(`chown ${user} ${dir}: ${run.stderr}`)
  }
  return dir
}

/** Runs a program to its end; throws with its output unless it succeeded. */
function runToEnd(argv, options = {}) {
  const run = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', ...options })
  if (run.error) throw new Error(`cannot run ${argv[0]}: ${run.error.message}`)
  if (run.status !== 0) throw new Error(`${argv.join(' ')} exited ${run.status}:\n${run.stdout}${run.stderr}`)
}

/**
 * Spawns a server and waits until `ready()` resolves true (the event
 * itself), failing if it exits first or is not ready within 60 s. Resolves
 * to `stop()`: `signal` to the pid in `pidFile` (`runuser` in between
 * passes no signal on), then its end awaited (30 s, then SIGKILL), then
 * `dir` removed.
 */
async function serve({ name, argv, cwd, log, ready, pidFile, signal, dir }) {
  const out = fs.openSync(log, 'a')
  const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', out, out] })
  fs.closeSync(out)
  let exited = null
  const ended = new Promise((resolve) => {
    child.on('exit', (code, sig) => { exited = `exited (${code ?? sig})`; resolve() })
    child.on('error', (e) => { exited = `cannot start ${argv[0]} (${e.message})`; resolve() })
  })
  const stop = async () => {
    if (exited === null) {
      let pid
      try {
        pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0])
      } catch {}
      if (pid) {
        try { process.kill(pid, signal) } catch {}
      }
      const timer = new Promise((resolve) => setTimeout(resolve, 30_000).unref())
      await Promise.race([ended, timer])
      if (exited === null) {
        if (pid) {
          try { process.kill(pid, 'SIGKILL') } catch {}
        }
        child.kill('SIGKILL')
        await ended
      }
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + 60_000
  while (!(await ready())) {
    if (exited !== null || Date.now() > deadline) {
      const why = exited ?? 'not ready after 60 s'
      await stop().catch(() => {})
      let text = ''
      try { text = fs.readFileSync(log, 'utf8') } catch {}
      throw new Error(`${name}: ${why}\n${text}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return stop
}

/** Runs a program; resolves to whether it exited 0. */
function succeeds(argv) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: 'ignore' })
    child.on('exit', (code) => resolve(code === 0))
    child.on('error', () => resolve(false))
  })
}

/** The newest PostgreSQL's programs (Debian: /usr/lib/postgresql/<version>/bin). */
function postgresBin() {
  const root = '/usr/lib/postgresql'
  const versions = (fs.existsSync(root) ? fs.readdirSync(root) : [])
    .filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a))
  if (versions.length === 0) throw new Error(`no PostgreSQL under ${root}; install Debian's postgresql`)
  return path.join(root, versions[0], 'bin')
}

/**
 * A fresh PostgreSQL cluster (initdb, trust authentication) run as the
 * `postgres` user; resolves to `{ url, stop }` once it accepts connections
 * (`url`: its superuser `postgres`, database `postgres`).
 */
async function startPostgres() {
  const bin = postgresBin()
  const user = 'postgres'
  const dir = ownedScratch(user)
  const data = path.join(dir, 'data')
  const log = path.join(dir, 'server.log')
  const port = await freePort()
  try {
    runToEnd([...runAs(user), path.join(bin, 'initdb'), '-D', data, '--username', user,
      '--auth', 'trust', '--encoding', 'UTF8', '--no-locale', '--no-sync'], { cwd: dir })
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const stop = await serve({
    name: 'postgres',
    argv: [...runAs(user), path.join(bin, 'postgres'), '-D', data, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`,
      '-c', 'fsync=off', '-c', 'synchronous_commit=off'],
    cwd: dir,
    log,
    // pg_isready: 0 once the server accepts connections (a port open
    // while it starts up is not enough).
    ready: () => succeeds([path.join(bin, 'pg_isready'), '-q', '-h', '127.0.0.1', '-p', String(port)]),
    pidFile: path.join(data, 'postmaster.pid'),
    // Fast shutdown: sessions ended without waiting.
    signal: 'SIGINT',
    dir,
  })
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop }
}

/** `name` found on the PATH or in /usr/sbin, /usr/bin. */
function which(name) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin']
  for (const dir of dirs) {
    const file = path.join(dir, name)
    if (dir && fs.existsSync(file)) return file
  }
  throw new Error(`${name} not found; install Debian's mariadb-server`)
}

/**
 * A fresh MariaDB (mariadb-install-db) run as the `mysql` user; resolves
 * to `{ url, stop }` once a user `flakeid` (password `secret`) with every
 * right on the database `flakeid` exists, made through the Unix socket.
 */
async function startMariadb() {
  const [server, install, client] = ['mariadbd', 'mariadb-install-db', 'mariadb'].map(which)
  const user = 'mysql'
  const dir = ownedScratch(user)
  const data = path.join(dir, 'data')
  const log = path.join(dir, 'server.log')
  const socket = path.join(dir, 'mysqld.sock')
  const port = await freePort()
  const userArgs = isRoot ? [`--user=${user}`] : []
  // mariadb-install-db makes root, and a non-root installer's own user,
  // accounts that log in through the socket as that system user.
  const admin = isRoot ? 'root' : os.userInfo().username
  try {
    // Its temporary tables in its own directory: a bootstrapping server
    // removes every temporary table in its tmpdir, another install's in
    // /tmp too.
    runToEnd([install, '--no-defaults', `--datadir=${data}`, `--tmpdir=${dir}`, '--skip-test-db',
      '--skip-name-resolve', ...userArgs], { cwd: dir, env: { ...process.env, TMPDIR: dir } })
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const stop = await serve({
    name: 'mariadbd',
    argv: [server, '--no-defaults', `--datadir=${data}`, `--socket=${socket}`, `--port=${port}`,
      '--bind-address=127.0.0.1', `--pid-file=${path.join(dir, 'mysqld.pid')}`, `--tmpdir=${dir}`,
      `--log-error=${log}`, '--skip-log-bin', '--skip-name-resolve',
      '--innodb-flush-log-at-trx-commit=0', ...userArgs],
    cwd: dir,
    log,
    ready: () => succeeds([client, '--no-defaults', `--socket=${socket}`, '-u', admin, '-e',
      "CREATE DATABASE IF NOT EXISTS flakeid; CREATE USER IF NOT EXISTS 'flakeid'@'%' " +
      "IDENTIFIED BY 'secret'; GRANT ALL ON flakeid.* TO 'flakeid'@'%';"]),
    pidFile: path.join(dir, 'mysqld.pid'),
    signal: 'SIGTERM',
    dir,
  })
  return { url: `mysql://flakeid:secret@127.0.0.1:${port}/flakeid`, port, stop }
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

module.exports = { startRedis, startPostgres, startMariadb, freePort, assertUnique, assertIncreasing }
