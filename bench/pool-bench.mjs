// SPDX-License-Identifier: Apache-2.0
// The JS driver of bench/run-pool.sh: the official E2B SDK (tests/e2b-sdk's pinned `e2b`,
// unmodified) against the `toren-sandbox serve`s that run-pool.sh started side by side,
// one with `--pool 0` and one with `--pool N` (and with -C, a third: another build's
// `--pool N`), rounds interleaved (the order alternates every round), so all see the same
// load. Timing lives in bench/ only.
//
//   node pool-bench.mjs CONFIG.json    measure, print the Markdown block on stdout
//
// CONFIG: { sdkDir, rounds, warmup, pauseMs, serves: [{ name, api, envd }, ...] }
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import http from 'node:http'

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const { Sandbox } = await import(pathToFileURL(join(cfg.sdkDir, 'node_modules/e2b/dist/index.mjs')).href)
const KEY = 'e2b_0000000000000000000000000000000000000000'
const now = () => Number(process.hrtime.bigint()) / 1e6
const log = (...a) => console.error('pool-bench:', ...a)
const samples = {}
const add = (serve, label, ms) => ((samples[serve] ??= {})[label] ??= []).push(ms)
const errors = []
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const agent = new http.Agent({ keepAlive: true })

function req(base, method, path, body) {
  const u = new URL(path, base)
  return new Promise((resolve, reject) => {
    const data = body ? JSON.stringify(body) : null
    const r = http.request(u, {
      method, agent,
      headers: { 'X-API-KEY': KEY, ...(data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}) },
    }, (res) => {
      let b = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (b += c))
      res.on('end', () => resolve({ status: res.statusCode, body: b ? JSON.parse(b) : null }))
    })
    r.on('error', reject)
    if (data) r.write(data)
    r.end()
  })
}

const claimed = async (s) => (await req(`http://${s.api}`, 'GET', '/v1/pool')).body.claimed

// A create with envs (E2B's envVars) and a first command that reads one.
async function envsRound(s, keep) {
  const c0 = await claimed(s)
  const opts = { apiUrl: `http://${s.api}`, sandboxUrl: `http://${s.envd}`, apiKey: KEY, timeoutMs: 600_000, envs: { BENCH_A: 'a', BENCH_B: 'b' } }
  const t0 = now()
  const sb = await Sandbox.create(opts)
  const r = await sb.commands.run('echo $BENCH_A')
  const t1 = now()
  if (r.stdout !== 'a\n') throw new Error(`envs: stdout ${JSON.stringify(r.stdout)}`)
  const hit = (await claimed(s)) > c0
  if (keep) {
    add(s.name, 'SDK create with envs + first commands.run', t1 - t0)
    add(s.name, hit ? 'envs from the pool' : 'envs started', 1)
  }
  await sb.kill()
}

async function sdkRound(s, keep) {
  const c0 = await claimed(s)
  const opts = { apiUrl: `http://${s.api}`, sandboxUrl: `http://${s.envd}`, apiKey: KEY, timeoutMs: 600_000 }
  const t0 = now()
  const sb = await Sandbox.create(opts)
  const t1 = now()
  const r = await sb.commands.run('true')
  const t2 = now()
  if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`)
  const t3 = now()
  await sb.commands.run('true')
  const t4 = now()
  const hit = (await claimed(s)) > c0
  if (keep) {
    add(s.name, 'SDK create + first commands.run', t2 - t0)
    add(s.name, 'SDK create alone', t1 - t0)
    add(s.name, 'SDK first commands.run', t2 - t1)
    add(s.name, 'SDK second commands.run (same sandbox)', t4 - t3)
    add(s.name, hit ? 'from the pool' : 'started', 1)
  }
  await sb.kill()
}

// The control plane without the SDK: the create body the SDK sends, node http, keep-alive.
async function rawRound(s, keep) {
  const base = `http://${s.api}`
  const t0 = now()
  const c = await req(base, 'POST', '/sandboxes', { templateID: 'base', timeout: 600, allow_internet_access: true, secure: true, metadata: {}, envVars: {} })
  const t1 = now()
  if (c.status !== 201) throw new Error(`create: ${c.status} ${JSON.stringify(c.body)}`)
  if (keep) add(s.name, 'raw HTTP create alone', t1 - t0)
  await req(base, 'DELETE', `/sandboxes/${c.body.sandboxID}`)
}

for (let i = -cfg.warmup; i < cfg.rounds; i++) {
  const order = i & 1 ? [...cfg.serves].reverse() : cfg.serves
  for (const s of order) {
    try { await sdkRound(s, i >= 0) } catch (e) { errors.push(`${s.name} SDK: ${e.message}`) }
    await sleep(cfg.pauseMs)
  }
  for (const s of order) {
    try { await envsRound(s, i >= 0) } catch (e) { errors.push(`${s.name} envs: ${e.message}`) }
    await sleep(cfg.pauseMs)
  }
  for (const s of order) {
    try { await rawRound(s, i >= 0) } catch (e) { errors.push(`${s.name} raw: ${e.message}`) }
    await sleep(cfg.pauseMs)
  }
  if ((i + 1) % 10 === 0) log(`${i + 1}/${cfg.rounds} rounds`)
}

const q = (v, p) => { const a = [...v].sort((x, y) => x - y); return a[Math.min(a.length - 1, Math.floor(p * a.length))] }
const med = (v) => { const a = [...v].sort((x, y) => x - y); const m = a.length >> 1; return a.length & 1 ? a[m] : (a[m - 1] + a[m]) / 2 }
// the ratio's spread: the median of per-round ratios and its 10th-90th percentiles; each
// serve against the first (--pool 0), and with three the third against the second
const names = cfg.serves.map((s) => s.name)
const pairs = names.slice(1).map((n) => [n, names[0]])
if (names.length === 3) pairs.push([names[2], names[1]])
const rows = ['SDK create + first commands.run', 'SDK create with envs + first commands.run', 'SDK create alone', 'SDK first commands.run', 'SDK second commands.run (same sandbox)', 'raw HTTP create alone']
console.log(`| part (ms) | ${names.map((n) => `${n}: p50 | p90`).join(' | ')} | ${pairs.map(([y, x]) => `${y} / ${x} per round: median (p10-p90)`).join(' | ')} |`)
console.log(`|---|${names.map(() => '---:|---:').join('|')}|${pairs.map(() => '---:').join('|')}|`)
for (const l of rows) {
  const cols = names.map((n) => samples[n]?.[l] ?? [])
  if (cols.some((c) => !c.length)) continue
  const ratio = ([y, x]) => {
    const a = samples[x][l], b = samples[y][l]
    const r = a.slice(0, b.length).map((v, k) => b[k] / v)
    return `${med(r).toFixed(2)} (${q(r, 0.1).toFixed(2)}-${q(r, 0.9).toFixed(2)})`
  }
  console.log(`| ${l} | ${cols.map((c) => `${med(c).toFixed(1)} | ${q(c, 0.9).toFixed(1)}`).join(' | ')} | ${pairs.map(ratio).join(' | ')} |`)
}
for (const s of cfg.serves) {
  const cnt = (k) => samples[s.name]?.[k]?.length ?? 0
  const hit = cnt('from the pool'), miss = cnt('started'), ehit = cnt('envs from the pool'), emiss = cnt('envs started')
  console.log(`\n- ${s.name}: ${hit} of ${hit + miss} SDK creates and ${ehit} of ${ehit + emiss} SDK creates with envs answered from the pool`)
}
if (errors.length) console.log(`- errors (${errors.length}): ${errors.slice(0, 5).join('; ')}`)
