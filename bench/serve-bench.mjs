// SPDX-License-Identifier: Apache-2.0
// The JS driver of bench/run-serve.sh: the official E2B SDK (tests/e2b-sdk's pinned `e2b`,
// unmodified) against `toren-sandbox serve`, which run-serve.sh has started on loopback
// ports with a temporary TOREN_SANDBOX_ROOT. Timing lives in bench/ only; nothing here
// passes or fails on a number.
//
//   node serve-bench.mjs measure CONFIG.json    every part below, into OUT/serve.json
//   node serve-bench.mjs creates CONFIG.json K  K untimed create + run + kill (for strace)
//   node serve-bench.mjs report OUT             the Markdown block for RESULTS.md
//
// CONFIG: { sdkDir, out, servePid, cli, api, create, createWarmup, block1, runs, block,
//           files, sandboxes, commands }
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY come from the environment (as for the SDK
// tests). Writes OUT/serve.json (every sample, in ms) and OUT/*.csv; prints progress on
// stderr.
import { readFileSync, writeFileSync, existsSync, readdirSync, readlinkSync } from 'node:fs'
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import http from 'node:http'
import { randomBytes } from 'node:crypto'

const mode = process.argv[2]
const cfg = mode === 'report' ? null : JSON.parse(readFileSync(process.argv[3], 'utf8'))
const { Sandbox } = cfg ? await import(pathToFileURL(join(cfg.sdkDir, 'node_modules/e2b/dist/index.mjs')).href) : {}

const now = () => Number(process.hrtime.bigint()) / 1e6
const log = (...a) => console.error('serve-bench:', ...a)
const res = { samples: {}, errors: {}, rss: [], cpu: {}, cpus: (await import('node:os')).cpus().length }
const add = (label, ms) => (res.samples[label] ??= []).push(ms)
const err = (part, e) => {
  const m = e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)
  ;(res.errors[part] ??= []).push(m)
}

// --- serve's own process: /proc/PID/status and its CPU time ---
function procStatus(pid) {
  const out = {}
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = line.match(/^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem|VmSize|Threads):\s+(\d+)/)
    if (m) out[m[1]] = Number(m[2])
  }
  try {
    const fds = readdirSync(`/proc/${pid}/fd`)
    out.fds = fds.length
    out.tcp = 0
    const inodes = new Set(fds.map((fd) => { try { return readlinkSync(`/proc/${pid}/fd/${fd}`) } catch { return '' } })
      .filter((l) => l.startsWith('socket:[')).map((l) => l.slice(8, -1)))
    // TCP sockets among them (the SDK's keep-alive connections and the listeners)
    for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
      try {
        for (const line of readFileSync(f, 'utf8').split('\n').slice(1)) {
          const c = line.trim().split(/\s+/)
          if (c[9] && inodes.has(c[9])) out.tcp++
        }
      } catch {}
    }
  } catch {}
  return out
}
function cpuMs(pid) {
  // utime + stime (fields 14, 15) after the parenthesised comm
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
  const tck = 100 // USER_HZ on Linux
  return ((Number(f[11]) + Number(f[12])) * 1000) / tck
}
// on-CPU and runqueue-wait time of serve (ns in /proc/PID/schedstat), as ms
function sched(pid) {
  const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number)
  return { run: run / 1e6, wait: wait / 1e6, t: now() }
}
const schedDelta = (a, b) => ({ runMs: b.run - a.run, waitMs: b.wait - a.wait, wallMs: b.t - a.t })
const snapRss = (label) => res.rss.push({ label, ...procStatus(cfg.servePid) })

// --- where serve's one thread is, sampled: /proc/PID/syscall and the state in /proc/PID/stat
// every 2 ms from a separate python3 process (no ptrace: the thread runs at full speed).
// Blocked in a syscall: its number (x86_64's, named below); in user space or waiting for a
// CPU: R.
const SAMPLER = `
import json, signal, sys, time
pid, out = sys.argv[1], sys.argv[2]
names = {'232': 'epoll_wait', '281': 'epoll_pwait', '7': 'poll', '271': 'ppoll', '47': 'recvmsg',
         '45': 'recvfrom', '0': 'read', '75': 'fdatasync', '74': 'fsync', '61': 'wait4', '1': 'write',
         '44': 'sendto', '46': 'sendmsg', '435': 'clone3', '56': 'clone'}
counts = {}
def done(*_):
    json.dump(counts, open(out, 'w'))
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    try:
        st = open(f'/proc/{pid}/stat').read()
        state = st[st.rindex(')') + 2]
        sc = open(f'/proc/{pid}/syscall').read().split()[0]
    except OSError:
        done()
    k = 'running or runnable' if state == 'R' or sc == 'running' else names.get(sc, 'syscall ' + sc)
    counts[k] = counts.get(k, 0) + 1
    time.sleep(0.002)
`
function startSampler(file) {
  const c = spawn('python3', ['-c', SAMPLER, String(cfg.servePid), file], { stdio: 'ignore' })
  return () => new Promise((resolve) => { c.on('exit', resolve); c.kill('SIGTERM') })
}

// --- a raw Connect client: serve's HTTP layer without the SDK ---
// One keep-alive connection, the request the SDK sends for commands.run (spec §3.2) but
// with the command given directly, so it can be /bin/true as in the in-process row.
const envdUrl = new URL(process.env.E2B_SANDBOX_URL ?? 'http://127.0.0.1:49983')
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function rawStart(sbx, cmd, args) {
  const json = Buffer.from(JSON.stringify({ process: { cmd, args }, stdin: false }))
  const body = Buffer.alloc(5 + json.length)
  body.writeUInt32BE(json.length, 1)
  json.copy(body, 5)
  const headers = {
    'Content-Type': 'application/connect+json',
    'Connect-Protocol-Version': '1',
    'Content-Length': body.length,
    'E2b-Sandbox-Id': sbx.sandboxId,
    'E2b-Sandbox-Port': '49983',
  }
  if (sbx.envdAccessToken) headers['X-Access-Token'] = sbx.envdAccessToken
  return new Promise((resolve, reject) => {
    const req = http.request({ host: envdUrl.hostname, port: envdUrl.port, method: 'POST',
      path: '/process.Process/Start', headers, agent }, (r) => {
      const chunks = []
      r.on('data', (c) => chunks.push(c))
      r.on('end', () => {
        const b = Buffer.concat(chunks)
        let exit = null, ended = false
        for (let o = 0; o + 5 <= b.length;) {
          const flags = b[o], len = b.readUInt32BE(o + 1)
          const msg = JSON.parse(b.subarray(o + 5, o + 5 + len).toString() || '{}')
          if (flags & 2) { ended = true; if (msg.error) return reject(new Error(JSON.stringify(msg.error))) }
          else if (msg.event?.end) exit = msg.event.end.exitCode ?? 0
          o += 5 + len
        }
        if (r.statusCode !== 200 || !ended || exit !== 0) return reject(new Error(`status ${r.statusCode}, exit ${exit}, end-of-stream ${ended}`))
        resolve()
      })
      r.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

// The control plane without the SDK: create (the body the SDK sends) and kill, keep-alive.
const apiUrl = new URL(process.env.E2B_API_URL ?? 'http://127.0.0.1:3000')
const apiAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function rawControl(method, path, body) {
  const b = body ? Buffer.from(JSON.stringify(body)) : null
  const headers = { 'X-API-KEY': process.env.E2B_API_KEY }
  if (b) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': b.length })
  return new Promise((resolve, reject) => {
    const req = http.request({ host: apiUrl.hostname, port: apiUrl.port, method, path, headers, agent: apiAgent }, (r) => {
      const chunks = []
      r.on('data', (c) => chunks.push(c))
      r.on('end', () => {
        const t = Buffer.concat(chunks).toString()
        if (r.statusCode >= 300) return reject(new Error(`${method} ${path}: ${r.statusCode} ${t}`))
        resolve(t ? JSON.parse(t) : null)
      })
      r.on('error', reject)
    })
    req.on('error', reject)
    req.end(b ?? undefined)
  })
}

// --- toren-bench-api (bench/api-bench.c): ts_be_run in process, same sandbox ---
function apiBlock(id, n, csv) {
  const r = spawnSync(cfg.api, ['latency', '-n', String(n), '-w', '2', '-o', csv,
    '-s', '/bin/bash -l -c true:/bin/true', id], { stdio: ['ignore', 'ignore', 'pipe'] })
  if (r.status !== 0) throw new Error(`toren-bench-api: status ${r.status}: ${r.stderr}`)
  const lines = readFileSync(csv, 'utf8').trim().split('\n').slice(1)
  const rename = {
    'api commands.run static true': 'in process: ts_be_run /bin/bash -l -c true',
    'host posix_spawn static true': null, // -s needs a host half: /bin/true again, dropped
    'api commands.run /bin/true': 'in process: ts_be_run /bin/true',
    'host posix_spawn /bin/true': 'in process: host posix_spawn /bin/true',
    'api run, missing program': 'in process: ts_be_run, missing program',
    'ctl connect + HELLO': 'in process: ctl connect + HELLO',
    'ctl SPAWN on one connection /bin/true': 'in process: ctl SPAWN on one connection /bin/true',
  }
  for (const l of lines) {
    const m = l.match(/^"(.*)",(\d+),(\d+),(-?\d+)$/)
    if (!m) continue
    if (rename[m[1]] === null) continue
    if (m[4] !== '0') { err('in process', `${m[1]}: status ${m[4]}`); continue }
    add(rename[m[1]] ?? `in process: ${m[1]}`, Number(m[3]) / 1e6)
  }
}

// ts_sb_create + first run + ts_sb_kill in process, n rounds (bench/api-bench.c `create`)
function apiCreateBlock(n, csv) {
  const r = spawnSync(cfg.api, ['create', '-n', String(n), '-w', '1', '-o', csv], { stdio: ['ignore', 'ignore', 'pipe'] })
  if (r.status !== 0) throw new Error(`toren-bench-api create: status ${r.status}: ${r.stderr}`)
  for (const l of readFileSync(csv, 'utf8').trim().split('\n').slice(1)) {
    const m = l.match(/^"(.*)",(\d+),(\d+),(-?\d+)$/)
    if (!m) continue
    if (m[4] !== '0') { err('in process', `${m[1]}: status ${m[4]}`); continue }
    add(`in process: ${m[1].replace(/^api /, '')}${m[1].includes('run') ? ' (/bin/bash -l -c true)' : ''}`, Number(m[3]) / 1e6)
  }
}

function spawnMs(argv, env) {
  const t0 = now()
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env })
  const t1 = now()
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: status ${r.status}: ${r.stderr}`)
  return { ms: t1 - t0, out: r.stdout.toString().trim() }
}

const opts = { timeoutMs: 600_000 }

async function measure() {
  // --- 0: the first create (image layers built), and serve before any sandbox ---
  snapRss('serve idle, just started (no request yet)')
  {
    const t0 = now()
    const s = await Sandbox.create(opts)
    const t1 = now()
    await s.commands.run('true')
    const t2 = now()
    res.cold = { create: t1 - t0, firstRun: t2 - t1, id: s.sandboxId }
    await s.kill()
    log(`cold create ${(t1 - t0).toFixed(1)} ms (id ${s.sandboxId})`)
  }

  // --- 1: Sandbox.create() + first commands.run('true'), interleaved with the CLI's create ---
  log(`create + first run: ${cfg.create} rounds (+${cfg.createWarmup} warm-up)`)
  {
    // the CLI on the local backend: with E2B_API_KEY set, `auto` would pick the e2b backend
    const cliEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('E2B_')))
    cliEnv.TOREN_SANDBOX = 'local'
    for (let i = -cfg.createWarmup; i < cfg.create; i++) {
      const keep = i >= 0
      const sdkFirst = (i & 1) === 0
      const sdk = async () => {
        try {
          const t0 = now()
          const s = await Sandbox.create(opts)
          const t1 = now()
          const r = await s.commands.run('true')
          const t2 = now()
          if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`)
          if (keep) {
            add('SDK create + first commands.run', t2 - t0)
            add('SDK create alone', t1 - t0)
            add('SDK first commands.run', t2 - t1)
          }
          const t3 = now()
          await s.kill()
          if (keep) add('SDK kill', now() - t3)
        } catch (e) { if (keep) err('create', e) }
      }
      const cli = () => {
        try {
          const c = spawnMs([cfg.cli, 'create', '--ttl', '0'], cliEnv)
          const id = c.out.split('\n').pop()
          const x = spawnMs([cfg.cli, 'exec', id, '--', '/bin/true'], cliEnv)
          if (keep) {
            add('CLI create --ttl 0 (spawned)', c.ms)
            add('CLI create + exec /bin/true (spawned)', c.ms + x.ms)
          }
          spawnSync(cfg.cli, ['stop', id], { stdio: 'ignore' })
          spawnSync(cfg.cli, ['rm', '-f', '--purge', id], { stdio: 'ignore' })
        } catch (e) { if (keep) err('create (CLI)', e) }
        try {
          const v = spawnMs(['/bin/true'])
          if (keep) add('node spawnSync /bin/true (the CLI rows\' spawn cost)', v.ms)
        } catch {}
      }
      const raw = async () => {
        try {
          const t0 = now()
          const j = await rawControl('POST', '/v2/sandboxes', { templateID: 'base', timeout: 600 })
          const t1 = now()
          const s = { sandboxId: j.sandboxID, envdAccessToken: j.envdAccessToken }
          await rawStart(s, '/bin/bash', ['-l', '-c', 'true'])
          const t2 = now()
          await rawControl('DELETE', `/sandboxes/${j.sandboxID}`)
          const t3 = now()
          if (keep) {
            add('raw HTTP create + first Start (bash -l -c true)', t2 - t0)
            add('raw HTTP create alone', t1 - t0)
            add('raw HTTP first Start (bash -l -c true)', t2 - t1)
            add('raw HTTP kill', t3 - t2)
          }
        } catch (e) { if (keep) err('create (raw HTTP)', e) }
      }
      if (sdkFirst) { await sdk(); await raw(); cli() } else { cli(); await raw(); await sdk() }
      if (keep && ((i + 1) % cfg.block1 === 0 || i + 1 === cfg.create)) {
        try { apiCreateBlock((i % cfg.block1) + 1, join(cfg.out, `api-create-${i}.csv`)) } catch (e) { err('in process', e) }
      }
    }
  }

  // --- 2: commands.run('true') on one sandbox; raw Connect and in-process rows in blocks ---
  log(`commands.run round trip: ${cfg.runs} runs in blocks of ${cfg.block}`)
  {
    const s = await Sandbox.create(opts)
    for (let i = 0; i < 5; i++) { await s.commands.run('true'); await rawStart(s, '/bin/true', []) }
    snapRss('serve with 1 sandbox, after warm-up runs')
    const c0 = cpuMs(cfg.servePid)
    let sdkCpu = 0
    for (let done = 0, b = 0; done < cfg.runs; done += cfg.block, b++) {
      const n = Math.min(cfg.block, cfg.runs - done)
      for (let i = 0; i < n; i++) {
        const order = (i + b) % 3
        for (let k = 0; k < 3; k++) {
          const which = (order + k) % 3
          try {
            const t0 = now()
            if (which === 0) {
              const u0 = process.cpuUsage()
              const r = await s.commands.run('true')
              const u = process.cpuUsage(u0)
              sdkCpu += (u.user + u.system) / 1000
              if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`)
              add("SDK commands.run('true') (= bash -l -c true)", now() - t0)
            } else if (which === 1) {
              await rawStart(s, '/bin/true', [])
              add('raw Connect Start /bin/true (node http, keep-alive)', now() - t0)
            } else {
              await rawStart(s, '/bin/bash', ['-l', '-c', 'true'])
              add('raw Connect Start /bin/bash -l -c true', now() - t0)
            }
          } catch (e) { err('commands.run', e) }
        }
      }
      try { apiBlock(s.sandboxId, n, join(cfg.out, `api-block-${b}.csv`)) } catch (e) { err('in process', e) }
    }
    res.cpu.runs = { serveCpuMs: cpuMs(cfg.servePid) - c0, commands: 3 * cfg.runs, sdkCpuMs: sdkCpu, sdkRuns: cfg.runs }

    // --- 3: 1 MiB files.write + files.read: random bytes (what gzip cannot shrink) and zeros ---
    log(`files: ${cfg.files} rounds of 1 MiB write + read`)
    for (const [kind, data] of [['random', randomBytes(1 << 20)], ['zeros', Buffer.alloc(1 << 20)]]) {
      let errors = 0
      for (let i = -2; i < cfg.files && errors < 3; i++) {
        try {
          const t0 = now()
          await s.files.write('/home/user/bench-1m.bin', data)
          const t1 = now()
          const back = await s.files.read('/home/user/bench-1m.bin', { format: 'bytes' })
          const t2 = now()
          if (Buffer.compare(Buffer.from(back), data) !== 0) throw new Error(`read back ${back.length} bytes, not the ones written`)
          if (i >= 0) {
            add(`SDK files.write 1 MiB (${kind})`, t1 - t0)
            add(`SDK files.read 1 MiB (${kind})`, t2 - t1)
            add(`SDK files.write + files.read 1 MiB (${kind})`, t2 - t0)
          }
          if (kind === 'random' && i >= 0) {
            // the same download without gzip (undici, under the SDK, always offers it)
            const a = now()
            const r = await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/home/user/bench-1m.bin&username=user`, {
              headers: { 'E2b-Sandbox-Id': s.sandboxId, ...(s.envdAccessToken ? { 'X-Access-Token': s.envdAccessToken } : {}), 'Accept-Encoding': 'identity' },
            })
            const body = Buffer.from(await r.arrayBuffer())
            if (r.status !== 200 || Buffer.compare(body, data) !== 0) throw new Error(`identity download: ${r.status}, ${body.length} bytes`)
            add('fetch GET /files 1 MiB (random), Accept-Encoding: identity', now() - a)
          }
        } catch (e) {
          err('files', e)
          errors++
        }
      }
      if (errors >= 3) log(`files (${kind}): gave up after 3 errors`)
    }
    await s.kill()
  }

  // --- 4 and 5: 50 sandboxes at once, K commands each, serve's RSS along the way ---
  log(`throughput: ${cfg.sandboxes} sandboxes x ${cfg.commands} commands`)
  {
    snapRss('serve idle again, every earlier sandbox killed')
    const stopSampler0 = startSampler(join(cfg.out, 'where-create.json'))
    const sc0 = sched(cfg.servePid)
    const t0 = now()
    const created = await Promise.allSettled(Array.from({ length: cfg.sandboxes }, async () => {
      const a = now()
      const s = await Sandbox.create(opts)
      add(`create under load (${cfg.sandboxes} at once)`, now() - a)
      return s
    }))
    const t1 = now()
    res.schedCreate = schedDelta(sc0, sched(cfg.servePid))
    await stopSampler0()
    try { res.whereCreate = JSON.parse(readFileSync(join(cfg.out, 'where-create.json'), 'utf8')) } catch {}
    const sbxs = []
    for (const c of created) c.status === 'fulfilled' ? sbxs.push(c.value) : err('throughput create', c.reason)
    res.throughput = { sandboxes: sbxs.length, createWallMs: t1 - t0 }
    await new Promise((r) => setTimeout(r, 1000))
    snapRss(`serve with ${sbxs.length} sandboxes created through it, none running a command`)
    const stopSampler = startSampler(join(cfg.out, 'where-throughput.json'))
    const c0 = cpuMs(cfg.servePid), u0 = process.cpuUsage(), sc1 = sched(cfg.servePid)
    let ran = 0, failed = 0
    const t2 = now()
    await Promise.all(sbxs.map(async (s) => {
      for (let i = 0; i < cfg.commands; i++) {
        try {
          const a = now()
          const r = await s.commands.run('true')
          if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`)
          add(`commands.run under load (${sbxs.length} sandboxes at once)`, now() - a)
          ran++
        } catch (e) { failed++; err('throughput', e) }
      }
    }))
    const t3 = now()
    const u = process.cpuUsage(u0)
    res.schedThroughput = schedDelta(sc1, sched(cfg.servePid))
    await stopSampler()
    try { res.whereThroughput = JSON.parse(readFileSync(join(cfg.out, 'where-throughput.json'), 'utf8')) } catch {}
    Object.assign(res.throughput, { commands: ran, failed, wallMs: t3 - t2, serveCpuMs: cpuMs(cfg.servePid) - c0,
      clientCpuMs: (u.user + u.system) / 1000 })
    snapRss(`serve with ${sbxs.length} sandboxes, after ${ran} commands`)
    // the same load without serve: one toren-bench-api process per sandbox, all at once,
    // each running its K commands (the SDK's `/bin/bash -l -c true`) through ts_be_run
    const t5 = now()
    const codes = await Promise.all(sbxs.map((s) => new Promise((resolve) => {
      const c = spawn(cfg.api, ['runs', '-k', String(cfg.commands), '-c', '/bin/bash -l -c true', s.sandboxId], { stdio: 'ignore' })
      c.on('exit', (code) => resolve(code))
      c.on('error', () => resolve(-1))
    })))
    res.throughput.apiWallMs = now() - t5
    res.throughput.apiFailedProcs = codes.filter((c) => c !== 0).length
    const t4 = now()
    await Promise.allSettled(sbxs.map((s) => s.kill()))
    res.throughput.killWallMs = now() - t4
    await new Promise((r) => setTimeout(r, 1000))
    snapRss('serve idle at the end, every sandbox killed')
  }

  writeFileSync(join(cfg.out, 'serve.json'), JSON.stringify(res, null, 1))
  log('done')
}

// One untraced round first (a fresh node process pays for loading and compiling the SDK's
// code paths on its first calls), then OUT/ready, then wait for OUT/go: run-serve.sh
// attaches strace in between.
async function handshake() {
  const s = await Sandbox.create(opts)
  await s.commands.run('true')
  await s.kill()
  writeFileSync(join(cfg.out, 'ready'), '')
  while (!existsSync(join(cfg.out, 'go'))) await new Promise((r) => setTimeout(r, 20))
}

// K untimed creates + first run + kill, one after another (run-serve.sh traces serve meanwhile)
async function creates(k) {
  await handshake()
  for (let i = 0; i < k; i++) {
    const s = await Sandbox.create(opts)
    await s.commands.run('true')
    await s.kill()
  }
}

// --- the Markdown block, from OUT/serve.json (and OUT/strace-c.txt when traced) ---
function pct(xs, p) {
  const v = [...xs].sort((a, b) => a - b)
  if (v.length === 1) return v[0]
  const k = ((v.length - 1) * p) / 100, lo = Math.floor(k), hi = Math.min(lo + 1, v.length - 1)
  return v[lo] + (v[hi] - v[lo]) * (k - lo)
}
// 95% bootstrap interval of the ratio of medians (bench/stats.py's method, fixed seed)
function bootRatio(a, b, n = 2000) {
  let seed = 1
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  const pick = (xs) => Array.from(xs, () => xs[Math.floor(rnd() * xs.length)])
  const rs = []
  for (let i = 0; i < n; i++) rs.push(pct(pick(a), 50) / pct(pick(b), 50))
  return [pct(rs, 2.5), pct(rs, 97.5)]
}

function report(out) {
  const r = JSON.parse(readFileSync(join(out, 'serve.json'), 'utf8'))
  const S = r.samples
  const f = (x, d = 2) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(d))
  const p = (label, q) => (S[label]?.length ? pct(S[label], q) : NaN)
  const lines = []
  const P = (s = '') => lines.push(s)
  const SDK_RUN = "SDK commands.run('true') (= bash -l -c true)"
  const RAW_TRUE = 'raw Connect Start /bin/true (node http, keep-alive)'
  const RAW_BASH = 'raw Connect Start /bin/bash -l -c true'
  const API_TRUE = 'in process: ts_be_run /bin/true'
  const API_BASH = 'in process: ts_be_run /bin/bash -l -c true'
  const ratio = (a, b) => {
    if (!S[a]?.length || !S[b]?.length) return 'n/a'
    const [lo, hi] = bootRatio(S[a], S[b])
    return `**${f(p(a, 50) / p(b, 50))}×** (95% CI ${f(lo)}–${f(hi)})`
  }
  const T = r.throughput ?? {}
  const cpus = r.cpus ?? '?'
  const rssOf = (re) => r.rss.find((x) => re.test(x.label))
  const idle = rssOf(/just started/), full = rssOf(/none running a command/)
  const fileRT = 'SDK files.write + files.read 1 MiB (random)'

  P('#### Targets (issue 9)')
  P()
  P('| target | measured | verdict |')
  P('|---|---|---|')
  const cf = p('SDK create + first commands.run', 50)
  P(`| \`Sandbox.create()\` + first \`commands.run('true')\` p50 ≤ 10 ms | p50 ${f(cf, 1)} ms, p90 ${f(p('SDK create + first commands.run', 90), 1)}, p99 ${f(p('SDK create + first commands.run', 99), 1)} (${S['SDK create + first commands.run']?.length ?? 0} rounds) | ${cf <= 10 ? 'met' : `missed by ${f(cf - 10, 1)} ms (${f(cf / 10, 1)}× the target): no warm pool in serve yet`} |`)
  const rr = S[SDK_RUN]?.length && S[API_TRUE]?.length ? p(SDK_RUN, 50) / p(API_TRUE, 50) : NaN
  P(`| \`commands.run('true')\` p50 ≤ 1.5× in process (ts_be_run /bin/true, same sandbox, same run) | ${f(p(SDK_RUN, 50))} ms / ${f(p(API_TRUE, 50))} ms = ${ratio(SDK_RUN, API_TRUE)} | ${Number.isNaN(rr) ? 'n/a' : rr <= 1.5 ? 'met' : `missed: ${f(rr / 1.5)}× over the target (${f(p(SDK_RUN, 50) - 1.5 * p(API_TRUE, 50))} ms too slow)`} |`)
  P(`| (the same command both ways: the SDK runs \`/bin/bash -l -c true\`) | ${f(p(SDK_RUN, 50))} ms / ${f(p(API_BASH, 50))} ms = ${ratio(SDK_RUN, API_BASH)} | for reading the row above |`)
  P(`| (serve's HTTP layer alone: raw Connect, /bin/true) | ${f(p(RAW_TRUE, 50))} ms / ${f(p(API_TRUE, 50))} ms = ${ratio(RAW_TRUE, API_TRUE)} | for reading the row above |`)
  P(`| 1 MiB \`files.write\` + \`files.read\` (p50) | ${S[fileRT]?.length ? `${f(p(fileRT, 50))} ms (write ${f(p('SDK files.write 1 MiB (random)', 50))}, read ${f(p('SDK files.read 1 MiB (random)', 50))}; the same read without gzip ${f(p('fetch GET /files 1 MiB (random), Accept-Encoding: identity', 50))}); 1 MiB of zeros: ${f(p('SDK files.write + files.read 1 MiB (zeros)', 50))}` : `not measured: ${(r.errors.files ?? ['no sample'])[0]}`} | no target value |`)
  P(`| ${T.sandboxes ?? '?'} sandboxes × ${T.commands && T.sandboxes ? Math.round((T.commands + T.failed) / T.sandboxes) : '?'} commands at once | ${T.wallMs ? `**${f(T.commands / (T.wallMs / 1000), 0)} commands/s**, ${T.failed} errors, ${(r.errors['throughput create'] ?? []).length} failed creates${T.apiWallMs ? `; in process, the same load: ${f((T.commands + T.failed) / (T.apiWallMs / 1000), 0)}/s` : ''}` : 'n/a'} | no target value |`)
  P(`| serve's RSS, idle and with ${T.sandboxes ?? '?'} sandboxes | ${idle ? `${idle.VmRSS} kB` : 'n/a'} idle; ${full ? `${full.VmRSS} kB` : 'n/a'} with ${T.sandboxes ?? '?'} | no target value |`)
  P()

  P('#### Where create + first run goes: through serve against the same backend calls in process (p50, ms)')
  P()
  P('| part | SDK through serve | in process (bench/api-bench.c `create`) | serve + HTTP + SDK |')
  P('|---|---|---|---|')
  for (const [what, a, b] of [
    ['create (`POST /v2/sandboxes` / ts_sb_create)', 'SDK create alone', 'in process: create'],
    ["first `commands.run('true')` (`/bin/bash -l -c true`)", 'SDK first commands.run', 'in process: first run (/bin/bash -l -c true)'],
    ['create + first run', 'SDK create + first commands.run', 'in process: create + first run (/bin/bash -l -c true)'],
    ['create + first run without the SDK (node http, keep-alive)', 'raw HTTP create + first Start (bash -l -c true)', 'in process: create + first run (/bin/bash -l -c true)'],
    ['kill (`DELETE /sandboxes/ID` / ts_sb_kill)', 'SDK kill', 'in process: kill'],
  ]) P(`| ${what} | ${f(p(a, 50))} | ${f(p(b, 50))} | ${f(p(a, 50) - p(b, 50))} |`)
  P()
  P('#### Latency (ms; every row\'s runs interleaved with the others of its part)')
  P()
  P('| row | runs | p50 | p90 | p99 | min |')
  P('|---|---|---|---|---|---|')
  for (const [label, xs] of Object.entries(S)) {
    if (!xs.length) continue
    P(`| ${label} | ${xs.length} | ${f(pct(xs, 50))} | ${f(pct(xs, 90))} | ${f(pct(xs, 99))} | ${f(Math.min(...xs))} |`)
  }
  if (r.cold) P(`| the first create (image layers built), once | 1 | ${f(r.cold.create)} | | | |`)
  P()
  P('#### Throughput and serve\'s CPU')
  P()
  if (T.wallMs) {
    P(`- ${T.sandboxes} sandboxes created at once through the SDK in ${f(T.createWallMs / 1000)} s (${f(T.sandboxes / (T.createWallMs / 1000), 1)} creates/s)`)
    P(`- ${T.commands} \`commands.run('true')\` (${T.sandboxes} sandboxes at once, each running its ${Math.round((T.commands + T.failed) / T.sandboxes)} one after another) in ${f(T.wallMs / 1000)} s: **${f(T.commands / (T.wallMs / 1000), 0)}/s**, ${T.failed} errors; serve's own CPU ${f(T.serveCpuMs / T.commands, 3)} ms per command (utime + stime from /proc), the SDK's node process ${f(T.clientCpuMs / T.commands, 3)} ms per command (process.cpuUsage); ${f((T.serveCpuMs + T.clientCpuMs) / T.wallMs * 100, 0)}% of one CPU for the two together (${cpus} CPUs)`)
    if (T.apiWallMs) P(`- the same ${T.sandboxes} × ${Math.round((T.commands + T.failed) / T.sandboxes)} \`/bin/bash -l -c true\` without serve (one \`toren-bench-api runs\` process per sandbox, all at once, ts_be_run in process): ${f(T.apiWallMs / 1000)} s, **${f((T.sandboxes * Math.round((T.commands + T.failed) / T.sandboxes)) / (T.apiWallMs / 1000), 0)}/s**, ${T.apiFailedProcs} processes failed`)
    P(`- killing all ${T.sandboxes} at once: ${f(T.killWallMs / 1000)} s`)
  }
  if (r.cpu?.runs) P(`- the one-sandbox round trips (3 rows × runs): serve's CPU ${f(r.cpu.runs.serveCpuMs / r.cpu.runs.commands, 3)} ms per command (10 ms ticks: coarse); the SDK's node process ${f(r.cpu.runs.sdkCpuMs / r.cpu.runs.sdkRuns, 3)} ms of CPU per \`commands.run\` (process.cpuUsage around each call)`)
  P()
  const where = (title, w, sd) => {
    if (!w) return
    const tot = Object.values(w).reduce((a, b) => a + b, 0)
    P(`#### Where serve's one thread was: ${title} (${tot} samples of /proc/PID/syscall and its state, every ~2 ms, no tracing)`)
    P()
    if (sd) P(`/proc/PID/schedstat over the same ${f(sd.wallMs / 1000)} s: serve's thread **on a CPU ${f((100 * sd.runMs) / sd.wallMs, 0)}%** of the wall time, **runnable but waiting for a CPU ${f((100 * sd.waitMs) / sd.wallMs, 0)}%**, the rest (${f(100 - (100 * (sd.runMs + sd.waitMs)) / sd.wallMs, 0)}%) asleep: blocked or idle.`)
    P()
    P('| state | share |')
    P('|---|---|')
    for (const [k, v] of Object.entries(w).sort((a, b) => b[1] - a[1])) {
      const what = { epoll_wait: 'idle in `epoll_wait` (its loop)', poll: 'blocked in `poll`: inside a request, waiting on an init', recvmsg: 'blocked in `recvmsg` (a create waiting for its helper, or a control reply)', fdatasync: 'blocked in `fdatasync` (sqlite commits)', 'running or runnable': 'running, or runnable and waiting for a CPU' }[k] ?? `\`${k}\``
      P(`| ${what} | ${f((100 * v) / tot, 1)}% |`)
    }
    P()
  }
  where(`while ${T.sandboxes} sandboxes were created at once`, r.whereCreate, r.schedCreate)
  where(`while ${T.sandboxes} sandboxes ran their commands at once`, r.whereThroughput, r.schedThroughput)
  P('#### serve\'s memory (kB, /proc/PID/status)')
  P()
  P('| when | VmRSS | VmHWM | RssAnon | RssFile | fds | of them TCP | threads |')
  P('|---|---|---|---|---|---|---|---|')
  for (const x of r.rss) P(`| ${x.label} | ${x.VmRSS} | ${x.VmHWM} | ${x.RssAnon} | ${x.RssFile} | ${x.fds ?? ''} | ${x.tcp ?? ''} | ${x.Threads} |`)
  P()
  const errs = Object.entries(r.errors).filter(([, v]) => v.length)
  if (errs.length) {
    P('#### Errors')
    P()
    for (const [part, v] of errs) P(`- ${part}: ${v.length}, first: \`${v[0].replace(/`/g, "'").slice(0, 300)}\``)
    P()
  }
  const sc = join(out, 'strace-c.txt')
  if (existsSync(sc)) {
    const t = readFileSync(sc, 'utf8').split('\n')
    P('#### serve and what it starts over the traced create + first run + kill rounds (`strace -f -c -w -p SERVE`: wall time in each syscall, all processes summed; top 15)')
    P()
    P('```')
    for (const l of t.slice(0, 17)) P(l)
    const tot = t.find((l) => /total/.test(l))
    if (tot) P(tot)
    P('```')
    P()
  }
  const st = join(out, 'strace-t.txt')
  if (existsSync(st)) {
    const t = readFileSync(st, 'utf8').split('\n')
    const marks = [
      ['`POST /v2/sandboxes` read', /recvfrom\(\d+, "POST \/v2\/sandboxes/],
      ['serve spawns the helper (clone3, vfork)', /\bclone3?\(/],
      ['the helper execs', /execve\("[^"]*toren-sandbox-helper"/],
      ["the helper's namespace clone", /clone\(.*CLONE_NEWUSER/],
      ['init execs (execveat)', /execveat\(.*toren-init/],
      ['the helper exits', /exit_group\(/],
      ['`201 Created` written', /"HTTP\/1.1 201/],
      ['`POST /process.Process/Start` read', /recvfrom\(\d+, "POST \/process.Process\/Start/],
      ['`/bin/bash -l -c true` execs', /execve\("\/bin\/bash"/],
      ['the `end` event written', /sendto\(\d+, ".*\\"end\\"/],
      ['`DELETE /sandboxes/ID` read', /recvfrom\(\d+, "DELETE \/sandboxes/],
      ['`204 No Content` written', /"HTTP\/1.1 204/],
    ]
    const found = []
    let from = 0
    for (const [name, re] of marks) {
      let i = from
      while (i < t.length && !re.test(t[i])) i++
      if (i >= t.length) continue
      found.push([name, Number(t[i].match(/^\s*\d+\s+(\d+\.\d+)/)?.[1])])
      from = i + 1
    }
    if (found.length > 1) {
      P('#### One create + first run + kill under `strace -f -ttt` (serve and its children; ptrace stops inflate every interval, so read shares, not milliseconds)')
      P()
      P('| from the previous mark to | ms | since the request |')
      P('|---|---|---|')
      for (let i = 0; i < found.length; i++) {
        P(`| ${found[i][0]} | ${i ? f((found[i][1] - found[i - 1][1]) * 1000) : ''} | ${f((found[i][1] - found[0][1]) * 1000)} |`)
      }
      P()
    }
  }
  console.log(lines.join('\n'))
}

if (mode === 'measure') await measure()
else if (mode === 'creates') await creates(Number(process.argv[4] ?? 10))
else if (mode === 'report') report(process.argv[3])
else { console.error('usage: serve-bench.mjs measure|creates CONFIG [K] | report OUT'); process.exit(2) }
process.exit(0)
