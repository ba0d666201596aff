// SPDX-License-Identifier: Apache-2.0
// sandbox.pty: create, sendInput, resize, kill, connect.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CommandExitError } from 'e2b'
import { sandbox, waitFor, alive, rejection, describe } from './lib.mjs'

const T = { timeout: 120_000 }
const enc = (s) => new TextEncoder().encode(s)

// A pty whose output is collected as text.
async function pty(sbx, opts = {}) {
  const out = { text: '' }
  const dec = new TextDecoder()
  const h = await sbx.pty.create({
    cols: 80,
    rows: 24,
    onData: (d) => { out.text += dec.decode(d, { stream: true }) },
    ...opts,
  })
  return { h, out }
}

// Types a line and waits for a marker the shell prints only when it ran the line (the
// arithmetic keeps the echoed input from matching).
async function type(sbx, pid, out, line, marker, re) {
  await sbx.pty.sendInput(pid, enc(`${line}; echo ${marker}-$((20+22))\n`))
  const want = `${marker}-42`
  await waitFor(`pty output ${want}`, () => out.text.includes(want))
  if (re) return out.text.match(re)
}

test('pty: create, sendInput, output, the terminal environment', T, async (t) => {
  const sbx = await sandbox(t)
  const { h, out } = await pty(sbx)
  assert.ok(h.pid > 0)
  await type(sbx, h.pid, out, 'echo "term=$TERM tty=$(tty)"', 'm1')
  assert.match(out.text, /term=xterm-256color tty=\/dev\/pts\/\d+/)
  const m = await type(sbx, h.pid, out, 'stty size', 'm2', /(\d+) (\d+)\r?\n[^\n]*m2-42/)
  assert.ok(m, out.text)
  assert.deepEqual([m[1], m[2]], ['24', '80'])
  await sbx.pty.kill(h.pid)
})

test('pty: resize is seen by stty size', T, async (t) => {
  const sbx = await sandbox(t)
  const { h, out } = await pty(sbx)
  await sbx.pty.resize(h.pid, { cols: 123, rows: 37 })
  const m = await type(sbx, h.pid, out, 'stty size', 'm1', /(\d+) (\d+)\r?\n[^\n]*m1-42/)
  assert.ok(m, out.text)
  assert.deepEqual([m[1], m[2]], ['37', '123'])
  await sbx.pty.kill(h.pid)
})

test('pty: kill ends it, kill -0 fails after, a second kill is false', T, async (t) => {
  const sbx = await sandbox(t)
  const { h } = await pty(sbx)
  assert.equal(await alive(sbx, h.pid), true)
  assert.equal(await sbx.pty.kill(h.pid), true)
  const e = await rejection(h.wait())
  assert.ok(e instanceof CommandExitError, describe(e))
  assert.equal(e.exitCode, -1)
  assert.equal(await alive(sbx, h.pid), false)
  assert.equal(await sbx.pty.kill(h.pid), false)
})

test('pty: disconnect, connect by pid, keep typing, exit code', T, async (t) => {
  const sbx = await sandbox(t)
  const { h, out } = await pty(sbx)
  await type(sbx, h.pid, out, 'export KEPT=kept-value', 'm1')
  await h.disconnect()
  const out2 = { text: '' }
  const dec = new TextDecoder()
  const h2 = await sbx.pty.connect(h.pid, { onData: (d) => { out2.text += dec.decode(d, { stream: true }) } })
  assert.equal(h2.pid, h.pid)
  await type(sbx, h.pid, out2, 'echo "got:$KEPT"', 'm2')
  assert.match(out2.text, /got:kept-value/)
  await sbx.pty.sendInput(h.pid, enc('exit 0\n'))
  const r = await h2.wait()
  assert.equal(r.exitCode, 0)
})

test('pty: user, cwd and envs of create', T, async (t) => {
  const sbx = await sandbox(t)
  const { h, out } = await pty(sbx, { user: 'root', cwd: '/tmp', envs: { PTY_ENV: 'pe' } })
  await type(sbx, h.pid, out, 'echo "who=$(id -u) cwd=$(pwd) env=$PTY_ENV"', 'm1')
  assert.match(out.text, /who=0 cwd=\/tmp env=pe/)
  await sbx.pty.kill(h.pid)
})
