// SPDX-License-Identifier: Apache-2.0
// serve's warm pool through the SDK (meson starts serve with TS_SERVE_ARGS=--pool 2):
// Sandbox.create() is answered from the pool (GET /v1/pool counts the claim, and the pool
// refills), the sandbox has the create's metadata and timeout and runs commands, a file
// one claimed sandbox wrote is not in the next, a create with envs takes a member too
// (commands.run as user and root, background, pty see them; a process's own envs win; the
// next member has none), and Sandbox.list() shows no pool member.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { sandbox, waitFor, uniq } from './lib.mjs'

const T = { timeout: 180_000 }

async function pool() {
  const r = await fetch(`${process.env.E2B_API_URL}/v1/pool`, { headers: { 'X-API-KEY': process.env.E2B_API_KEY } })
  assert.equal(r.status, 200, 'GET /v1/pool')
  return r.json()
}
const ready = async () => (await pool()).templates.find((x) => x.template === 'base')?.ready ?? 0

test('the pool fills, a create takes a member, the pool refills', T, async (t) => {
  await waitFor('2 ready members', async () => (await ready()) === 2, 90_000)
  const before = (await pool()).claimed
  const tag = uniq('pool')
  const t0 = Date.now()
  const sbx = await sandbox(t, { metadata: { suite: tag }, timeoutMs: 120_000 })
  assert.equal((await pool()).claimed, before + 1, 'the create was answered from the pool')
  const info = await sbx.getInfo()
  assert.deepEqual(info.metadata, { suite: tag })
  assert.ok(info.startedAt.getTime() >= t0 - 1000, `startedAt ${info.startedAt.toISOString()} is the create's`)
  const span = info.endAt.getTime() - info.startedAt.getTime()
  assert.ok(Math.abs(span - 120_000) <= 1000, `endAt - startedAt = ${span} ms`)
  const r = await sbx.commands.run('echo hello; id -un')
  assert.equal(r.stdout, 'hello\nuser\n')
  await waitFor('the pool back at 2', async () => (await ready()) === 2, 90_000)
})

test('nothing of one claimed sandbox is in the next', T, async (t) => {
  await waitFor('2 ready members', async () => (await ready()) === 2, 90_000)
  const a = await Sandbox.create({ timeoutMs: 120_000 })
  await a.files.write('/home/user/leak.txt', 'mine')
  await a.commands.run('echo x > /tmp/leak')
  await a.kill()
  const before = (await pool()).claimed
  const b = await sandbox(t, { timeoutMs: 120_000 })
  assert.equal((await pool()).claimed, before + 1, 'the second create was answered from the pool')
  assert.notEqual(b.sandboxId, a.sandboxId)
  assert.equal(await b.files.exists('/home/user/leak.txt'), false)
  assert.equal(await b.files.exists('/tmp/leak'), false)
})

test('a create with envs takes a member; its processes see them, and the next member none', T, async (t) => {
  await waitFor('2 ready members', async () => (await ready()) === 2, 90_000)
  const before = (await pool()).claimed
  const tag = uniq('pool-envs')
  const sbx = await sandbox(t, { metadata: { suite: tag }, envs: { POOLED: 'yes', HOME: '/tmp' }, timeoutMs: 120_000 })
  assert.equal((await pool()).claimed, before + 1, 'a create with envs was answered from the pool')
  assert.equal((await sbx.commands.run('echo $POOLED $HOME')).stdout, 'yes /tmp\n', 'commands.run sees them, HOME over the user\'s')
  assert.equal((await sbx.commands.run('echo $POOLED $HOME', { user: 'root' })).stdout, 'yes /tmp\n', 'as root too')
  assert.equal((await sbx.commands.run('echo $POOLED', { envs: { POOLED: 'mine' } })).stdout, 'mine\n', 'a process\'s own envs win')
  const bg = await sbx.commands.run('echo bg=$POOLED', { background: true })
  assert.equal((await bg.wait()).stdout, 'bg=yes\n', 'a background process sees them')
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('echo pty=$POOLED > /tmp/pty-env; exit\n'))
  await pty.wait().catch(() => {})
  assert.equal(await sbx.files.read('/tmp/pty-env'), 'pty=yes\n', 'a pty sees them')
  const next = await sandbox(t, { timeoutMs: 120_000 })
  assert.equal((await pool()).claimed, before + 2, 'the next create was answered from the pool')
  assert.equal((await next.commands.run('echo ${POOLED-unset} $HOME')).stdout, 'unset /home/user\n', 'the next member has none of them')
})

test('list shows no member', T, async (t) => {
  await waitFor('2 ready members', async () => (await ready()) === 2, 90_000)
  const tag = uniq('pool-list')
  const sbx = await sandbox(t, { metadata: { suite: tag }, timeoutMs: 120_000 })
  const p = Sandbox.list()
  const ids = []
  while (p.hasNext) for (const s of await p.nextItems()) ids.push(s.sandboxId)
  assert.ok(ids.includes(sbx.sandboxId))
  // this serve's state root holds this sandbox (the earlier tests killed theirs) and the
  // pool's 2 members, which are not listed
  assert.deepEqual(ids, [sbx.sandboxId], `listed: ${ids.join(' ')}`)
})
