// SPDX-License-Identifier: Apache-2.0
// kill -9 of serve while a command streams: after serve restarts on the same ports and
// state, the sandbox is still running and reachable, and so is its background process.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { Sandbox } from 'e2b'
import { sandbox, waitFor, alive, describe } from './lib.mjs'

const pidfile = process.env.TS_SERVE_PIDFILE
const start = process.env.TS_SERVE_START

test('kill -9 of serve mid-stream: sandboxes survive, a restarted serve reaches them', { timeout: 180_000 }, async (t) => {
  assert.ok(pidfile && start, 'TS_SERVE_PIDFILE and TS_SERVE_START come from run.sh')
  const sbx = await sandbox(t, { metadata: { restart: 'yes' } })
  const idle = await sandbox(t)
  await sbx.files.write('kept.txt', 'kept across serve restarts')
  let ticks = ''
  const h = await sbx.commands.run('i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.1; done',
    { background: true, timeoutMs: 0, onStdout: (d) => { ticks += d } })
  await waitFor('the command to stream', () => ticks.includes('tick-3'))
  const ended = h.wait().then((r) => ({ resolved: r }), (e) => e)

  const serve = Number(readFileSync(pidfile, 'utf8'))
  assert.ok(serve > 1, `serve pid ${serve}`)
  process.kill(serve, 'SIGKILL')
  await waitFor('serve to die', () => { try { process.kill(serve, 0); return false } catch { return true } })
  const e = await ended
  assert.ok(e instanceof Error, `the stream must fail when serve dies, got ${JSON.stringify(e)}`)
  t.diagnostic(`stream ended with ${describe(e)}`)
  const seen = ticks.length

  const r = spawnSync(start, { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, `restart failed: ${r.stdout}${r.stderr}`)
  const again = Number(readFileSync(pidfile, 'utf8'))
  assert.notEqual(again, serve)

  const back = await Sandbox.connect(sbx.sandboxId)
  const info = await back.getInfo()
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { restart: 'yes' })
  assert.equal((await back.commands.run('echo alive-$((1+1))')).stdout, 'alive-2\n')
  assert.equal(await back.files.read('kept.txt'), 'kept across serve restarts')
  const list = await back.commands.list()
  assert.ok(list.some((p) => p.pid === h.pid), `pid ${h.pid} not in ${JSON.stringify(list.map((p) => p.pid))}`)
  assert.equal(await alive(back, h.pid), true)
  // Its output streams again to a new connection.
  let more = ''
  const h2 = await back.commands.connect(h.pid, { onStdout: (d) => { more += d }, timeoutMs: 0 })
  await waitFor('ticks after the restart', () => /tick-\d+\n/.test(more))
  assert.ok(ticks.length === seen, 'the old handle got output after serve died')
  assert.equal(await back.commands.kill(h.pid), true)
  const done = await h2.wait().then(() => 'resolved', (x) => x)
  assert.ok(done instanceof Error && done.exitCode === -1, describe(done))

  // The other sandbox too; the old SDK objects work again without reconnecting.
  assert.equal((await idle.commands.run('echo idle-ok')).stdout, 'idle-ok\n')
  assert.equal(await sbx.isRunning(), true)
  const ids = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
  assert.ok(ids.includes(sbx.sandboxId) && ids.includes(idle.sandboxId), JSON.stringify(ids))
})
