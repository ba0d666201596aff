// SPDX-License-Identifier: Apache-2.0
// Sandbox lifecycle: create, connect, getInfo, list (filters, paging, order), setTimeout,
// isRunning, kill, pause/resume, getMetrics.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { sandbox, waitFor, alive, rejection, describe, uniq, sleep } from './lib.mjs'

const T = { timeout: 180_000 }

// Every page of a list, and the page sizes.
async function listAll(opts) {
  const p = Sandbox.list(opts)
  const pages = []
  while (p.hasNext) {
    pages.push(await p.nextItems())
    if (pages.length > 100) throw new Error('more than 100 pages')
  }
  return pages
}

test('create with metadata, envs and timeout; getInfo reports them', T, async (t) => {
  const tag = uniq('create')
  const before = Date.now()
  const sbx = await sandbox(t, { metadata: { suite: tag, who: 'lifecycle' }, envs: { CREATED: 'yes' }, timeoutMs: 120_000 })
  assert.match(sbx.sandboxId, /^[A-Za-z0-9_-]+$/)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.deepEqual(info.metadata, { suite: tag, who: 'lifecycle' })
  assert.equal(info.state, 'running')
  assert.match(info.envdVersion, /^\d+\.\d+\.\d+/)
  assert.ok(info.cpuCount > 0, `cpuCount ${info.cpuCount}`)
  assert.ok(info.memoryMB > 0, `memoryMB ${info.memoryMB}`)
  assert.ok(Math.abs(info.startedAt.getTime() - before) < 30_000, `startedAt ${info.startedAt.toISOString()}`)
  const ttl = info.endAt.getTime() - info.startedAt.getTime()
  assert.ok(Math.abs(ttl - 120_000) < 5_000, `endAt - startedAt = ${ttl} ms`)
  assert.equal((await sbx.commands.run('echo $CREATED')).stdout, 'yes\n')
  // The static form answers the same.
  const again = await Sandbox.getInfo(sbx.sandboxId)
  assert.deepEqual(again.metadata, info.metadata)
  assert.equal(again.endAt.getTime(), info.endAt.getTime())
})

test('connect to a running sandbox by id: same files, same processes', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('from-first.txt', 'first')
  const h = await sbx.commands.run('sleep 300', { background: true })
  const other = await Sandbox.connect(sbx.sandboxId)
  assert.equal(other.sandboxId, sbx.sandboxId)
  assert.equal(await other.files.read('from-first.txt'), 'first')
  assert.ok((await other.commands.list()).some((p) => p.pid === h.pid))
  assert.equal((await other.commands.run('cat from-first.txt')).stdout, 'first')
  assert.equal(await other.isRunning(), true)
  // A shorter timeout on connect never shortens the sandbox's life.
  const endAt = (await sbx.getInfo()).endAt.getTime()
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 })
  assert.equal((await sbx.getInfo()).endAt.getTime(), endAt)
})

test('list: metadata and state filters, paging with limit, order', T, async (t) => {
  const tag = uniq('list')
  const made = []
  for (let i = 0; i < 3; i++) {
    made.push(await sandbox(t, { metadata: { suite: tag, idx: String(i) } }))
    await sleep(20)
  }
  const ids = made.map((s) => s.sandboxId)
  const all = (await listAll({ query: { metadata: { suite: tag } } })).flat()
  assert.deepEqual(all.map((s) => s.sandboxId).sort(), [...ids].sort())
  for (const s of all) {
    assert.equal(s.state, 'running')
    assert.equal(s.metadata.suite, tag)
  }
  // Newest first by default, oldest first with order asc.
  assert.deepEqual(all.map((s) => s.sandboxId), [...ids].reverse())
  const asc = (await listAll({ query: { metadata: { suite: tag } }, order: 'asc' })).flat()
  assert.deepEqual(asc.map((s) => s.sandboxId), ids)
  // AND of metadata.
  const one = (await listAll({ query: { metadata: { suite: tag, idx: '1' } } })).flat()
  assert.deepEqual(one.map((s) => s.sandboxId), [ids[1]])
  // Values with characters that need encoding.
  const oddValue = `a b&c=d/é%20+${tag}`
  const odd = await sandbox(t, { metadata: { suite: tag, 'odd key': oddValue } })
  const oddList = (await listAll({ query: { metadata: { 'odd key': oddValue } } })).flat()
  assert.equal(oddList[0]?.metadata['odd key'], oddValue)
  assert.deepEqual(oddList.map((s) => s.sandboxId), [odd.sandboxId])
  // State filters.
  const running = (await listAll({ query: { metadata: { suite: tag }, state: ['running'] } })).flat()
  assert.equal(running.length, 4)
  const paused = (await listAll({ query: { metadata: { suite: tag }, state: ['paused'] } })).flat()
  assert.deepEqual(paused, [])
  // Paging: 2 + 2, no duplicates, the header ends on the last page.
  const pages = await listAll({ query: { metadata: { suite: tag } }, limit: 2 })
  assert.deepEqual(pages.map((p) => p.length), [2, 2])
  const paged = pages.flat().map((s) => s.sandboxId)
  assert.equal(new Set(paged).size, 4)
  assert.deepEqual([...paged].sort(), [...ids, odd.sandboxId].sort())
  // An unknown template lists nothing; base lists ours.
  assert.deepEqual((await listAll({ query: { metadata: { suite: tag }, template: 'no-such-template' } })).flat(), [])
  assert.equal((await listAll({ query: { metadata: { suite: tag }, template: 'base' } })).flat().length, 4)
})

test('setTimeout shortens the life: isRunning() turns false after it', T, async (t) => {
  const sbx = await sandbox(t, { timeoutMs: 120_000 })
  assert.equal(await sbx.isRunning(), true)
  const set = Date.now()
  await sbx.setTimeout(3_000)
  const info = await sbx.getInfo()
  assert.ok(Math.abs(info.endAt.getTime() - (set + 3_000)) < 2_000, `endAt ${info.endAt.toISOString()} vs now+3s`)
  assert.equal(await sbx.isRunning(), true)
  await waitFor('isRunning() to turn false', async () => (await sbx.isRunning()) === false, 20_000, 250)
  assert.ok(Date.now() - set >= 2_500, `stopped after ${Date.now() - set} ms, before its deadline`)
  const e = await rejection(sbx.commands.run('true', { requestTimeoutMs: 10_000 }))
  assert.ok(e instanceof Error, describe(e))
  await waitFor('the expired sandbox to leave the list',
    async () => !(await listAll({})).flat().some((s) => s.sandboxId === sbx.sandboxId), 20_000, 250)
})

test('setTimeout lengthens the life', T, async (t) => {
  const sbx = await sandbox(t, { timeoutMs: 60_000 })
  const set = Date.now()
  await sbx.setTimeout(600_000)
  const info = await sbx.getInfo()
  assert.ok(Math.abs(info.endAt.getTime() - (set + 600_000)) < 2_000, `endAt ${info.endAt.toISOString()}`)
})

test('kill: true, then false; the sandbox is gone', T, async (t) => {
  const sbx = await sandbox(t)
  const id = sbx.sandboxId
  assert.equal(await sbx.kill(), true)
  assert.equal(await Sandbox.kill(id), false)
  assert.equal(await sbx.isRunning(), false)
  assert.ok(!(await listAll({})).flat().some((s) => s.sandboxId === id))
  const e = await rejection(Sandbox.getInfo(id))
  assert.ok(e instanceof SandboxNotFoundError, describe(e))
})

test('pause and resume keep the processes (same pid), files and envs', T, async (t) => {
  const sbx = await sandbox(t, { envs: { KEEP_ME: 'kept' } })
  const h = await sbx.commands.run('sleep 600', { background: true })
  await h.disconnect()
  await sbx.files.write('before-pause.txt', 'still here')
  assert.equal(await sbx.pause(), true)
  const info = await sbx.getInfo()
  assert.equal(info.state, 'paused')
  assert.equal(await sbx.isRunning(), false)
  assert.equal(await sbx.pause(), false, 'a second pause answers false (409)')
  const paused = (await listAll({ query: { state: ['paused'] } })).flat()
  assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId))
  assert.ok(!(await listAll({ query: { state: ['running'] } })).flat().some((s) => s.sandboxId === sbx.sandboxId))
  // Without a state filter, paused sandboxes are listed too.
  assert.ok((await listAll({})).flat().some((s) => s.sandboxId === sbx.sandboxId))

  const resumed = await Sandbox.connect(sbx.sandboxId)
  assert.equal(resumed.sandboxId, sbx.sandboxId)
  assert.equal((await resumed.getInfo()).state, 'running')
  assert.equal(await resumed.isRunning(), true)
  const list = await resumed.commands.list()
  assert.ok(list.some((p) => p.pid === h.pid), `pid ${h.pid} not in ${JSON.stringify(list.map((p) => p.pid))}`)
  assert.equal(await alive(resumed, h.pid), true)
  assert.equal(await resumed.files.read('before-pause.txt'), 'still here')
  assert.equal((await resumed.commands.run('echo $KEEP_ME')).stdout, 'kept\n')
  // The first handle works again too (same access token).
  assert.equal((await sbx.commands.run('echo old-handle')).stdout, 'old-handle\n')
})

test('getMetrics returns samples with every field', T, async (t) => {
  const sbx = await sandbox(t)
  const created = Date.now()
  await sbx.commands.run('head -c 20000000 /dev/urandom | sha256sum >/dev/null')
  const m = await waitFor('a metrics sample', async () => {
    const s = await sbx.getMetrics()
    return s.length > 0 && s
  }, 40_000, 1_000)
  const s = m[m.length - 1]
  assert.ok(s.timestamp instanceof Date && !Number.isNaN(s.timestamp.getTime()))
  assert.ok(Math.abs(s.timestamp.getTime() - Date.now()) < 60_000, `timestamp ${s.timestamp.toISOString()}`)
  for (const k of ['cpuUsedPct', 'cpuCount', 'memUsed', 'memTotal', 'memCache', 'diskUsed', 'diskTotal']) {
    assert.equal(typeof s[k], 'number', `${k} is ${JSON.stringify(s[k])}`)
    assert.ok(s[k] >= 0, `${k} = ${s[k]}`)
  }
  assert.ok(s.cpuCount > 0)
  assert.ok(s.memUsed > 0, `memUsed ${s.memUsed}`)
  assert.ok(s.memTotal >= s.memUsed, `memTotal ${s.memTotal} < memUsed ${s.memUsed}`)
  // A window from before the sandbox existed holds no samples.
  const old = await sbx.getMetrics({ start: new Date(created - 3_600_000), end: new Date(created - 1_800_000) })
  assert.deepEqual(old, [])
  // The static form answers the same.
  assert.ok((await Sandbox.getMetrics(sbx.sandboxId)).length >= 1)
})
