// SPDX-License-Identifier: Apache-2.0
// `toren-sandbox mcp --run new` begins a durable run (its id on stderr) whose sandbox the
// runner makes; every call is in the run's log; a client that resumes it
// (--run R) by repeating its calls in order gets the recorded results (_meta replayed),
// a call with other arguments at a recorded position is a divergence (an isError result),
// and a new call after them executes. Without --run, a session's own run is finished when
// it ends: nothing can resume it.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { ts, connect, removeSandbox, text } from './lib.mjs'

const runs = []
after(async () => {
  for (const r of runs) {
    const sb = await ts('runs', 'show', r).then((s) => JSON.parse(s).sandbox, () => '')
    await ts('runs', 'finish', r).catch(() => {})
    await removeSandbox(sb)
  }
})

const meta = (r) => r._meta?.['toren-sandbox/call'] ?? {}

test('a new run, then resumed: recorded calls replay, a changed one diverges', async (t) => {
  const calls = [
    ['write_file', { path: 'run.txt', content: 'in a run\n' }],
    ['bash', { command: 'echo in-a-run' }],
  ]
  const ls = await ts('runs', 'ls').then(() => '', (e) => e.message)
  if (ls) return t.skip(`the event log does not work yet: ${ls.slice(0, 200)}`)
  const c1 = await connect(t, ['--run', 'new', '--approve-cmd', 'true'])
  const first = []
  for (const [name, args] of calls) first.push(await c1.callTool({ name, arguments: args }))
  const run = (c1.stderr().match(/run (r[0-9a-f]+)/) ?? [])[1]
  assert.ok(run, `the run's id is on stderr: ${c1.stderr()}`)
  runs.push(run)
  first.forEach((r, i) => {
    assert.equal(meta(r).index, i, `call ${i}: its index in the run (${JSON.stringify(r._meta)})`)
    assert.equal(meta(r).replayed, false)
    assert.equal(meta(r).run, run)
  })
  await c1.close()

  const shown = JSON.parse(await ts('runs', 'show', run))
  assert.ok(shown.sandbox, `the run has its sandbox: ${JSON.stringify(shown).slice(0, 300)}`)
  assert.equal(shown.calls, 2, 'both calls are in the log')
  assert.deepEqual((shown.call_records ?? []).map((c) => c.tool), ['write_file', 'bash'])

  // the approver would deny now: a replay never asks it
  const c2 = await connect(t, ['--run', run, '--approve-cmd', 'false'])
  for (let i = 0; i < calls.length; i++) {
    const r = await c2.callTool({ name: calls[i][0], arguments: calls[i][1] })
    assert.equal(meta(r).replayed, true, `call ${i} replays (${JSON.stringify(r._meta)})`)
    assert.equal(text(r), text(first[i]), `call ${i}: the recorded text`)
    assert.deepEqual(r.structuredContent, first[i].structuredContent)
  }
  const next = await c2.callTool({ name: 'write_file', arguments: { path: 'run2.txt', content: 'after\n' } })
  assert.equal(meta(next).replayed, false, 'a call past the recorded ones executes')
  assert.equal(meta(next).index, 2)
  await c2.close()

  const c3 = await connect(t, ['--run', run])
  const d = await c3.callTool({ name: 'write_file', arguments: { path: 'run.txt', content: 'something else\n' } })
  assert.equal(d.isError, true, JSON.stringify(d))
  assert.equal(d.structuredContent?.error, 'divergence', JSON.stringify(d.structuredContent))
  assert.match(text(d), /diverges/)
})

test('a session without --run has a run of its own, finished when it ends', async (t) => {
  const ls = await ts('runs', 'ls').then(() => '', (e) => e.message)
  if (ls) return t.skip(`the event log does not work yet: ${ls.slice(0, 200)}`)
  const c = await connect(t, ['--approve-cmd', 'true'])
  await c.callTool({ name: 'bash', arguments: { command: 'true' } })
  const run = (c.stderr().match(/run (r[0-9a-f]+)/) ?? [])[1]
  assert.ok(run, `the run's id is on stderr: ${c.stderr()}`)
  runs.push(run)
  await c.close()
  let shown = {}
  for (let i = 0; i < 100 && !shown.finished_ms; i++) {
    shown = JSON.parse(await ts('runs', 'show', run))
    if (!shown.finished_ms) await new Promise((r) => setTimeout(r, 100))
  }
  assert.ok(shown.finished_ms > 0, `the run is finished after the session: ${JSON.stringify(shown).slice(0, 300)}`)
})
