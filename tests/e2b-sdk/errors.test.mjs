// SPDX-License-Identifier: Apache-2.0
// The SDK's typed errors, from what serve answers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError, FileNotFoundError, NotFoundError, AuthenticationError } from 'e2b'
import { sandbox, rejection, describe } from './lib.mjs'

const T = { timeout: 120_000 }

test('connect to a killed sandbox: SandboxNotFoundError', T, async (t) => {
  const sbx = await sandbox(t)
  const id = sbx.sandboxId
  assert.equal(await sbx.kill(), true)
  const e = await rejection(Sandbox.connect(id))
  assert.ok(e instanceof SandboxNotFoundError, describe(e))
})

test('unknown sandbox id: getInfo, setTimeout, getMetrics, pause give SandboxNotFoundError; kill false', T, async () => {
  const id = 'no-such-sandbox-0000'
  for (const [what, p] of [
    ['getInfo', () => Sandbox.getInfo(id)],
    ['setTimeout', () => Sandbox.setTimeout(id, 10_000)],
    ['getMetrics', () => Sandbox.getMetrics(id)],
    ['pause', () => Sandbox.pause(id)],
    ['connect', () => Sandbox.connect(id)],
  ]) {
    const e = await rejection(p())
    assert.ok(e instanceof SandboxNotFoundError, `${what}: ${describe(e)}`)
  }
  assert.equal(await Sandbox.kill(id), false)
})

test('envd calls on a killed sandbox fail', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.kill()
  assert.equal(await sbx.isRunning(), false)
  const e = await rejection(sbx.commands.run('true'))
  assert.ok(e instanceof Error, describe(e))
  const f = await rejection(sbx.files.read('/etc/hostname'))
  assert.ok(f instanceof Error, describe(f))
})

test('missing files: FileNotFoundError from read, getInfo, list, rename', T, async (t) => {
  const sbx = await sandbox(t)
  for (const [what, p] of [
    ['read', () => sbx.files.read('/home/user/none.txt')],
    ['read bytes', () => sbx.files.read('/nope/none.bin', { format: 'bytes' })],
    ['getInfo', () => sbx.files.getInfo('none.txt')],
    ['list', () => sbx.files.list('/none-dir')],
    ['rename', () => sbx.files.rename('none.txt', 'other.txt')],
  ]) {
    const e = await rejection(p())
    assert.ok(e instanceof FileNotFoundError, `${what}: ${describe(e)}`)
  }
})

test('unknown pids: NotFoundError from connect and sendStdin, false from kill', T, async (t) => {
  const sbx = await sandbox(t)
  const pid = 999_999
  const c = await rejection(sbx.commands.connect(pid))
  assert.ok(c instanceof NotFoundError, describe(c))
  const s = await rejection(sbx.commands.sendStdin(pid, 'x'))
  assert.ok(s instanceof NotFoundError, describe(s))
  const p = await rejection(sbx.pty.resize(pid, { cols: 10, rows: 10 }))
  assert.ok(p instanceof NotFoundError, describe(p))
  assert.equal(await sbx.commands.kill(pid), false)
  assert.equal(await sbx.pty.kill(pid), false)
})

test('no API key: AuthenticationError before any request', T, async () => {
  const key = process.env.E2B_API_KEY
  delete process.env.E2B_API_KEY
  try {
    const e = await rejection(Sandbox.create())
    assert.ok(e instanceof AuthenticationError, describe(e))
    const l = await rejection(Sandbox.list().nextItems())
    assert.ok(l instanceof AuthenticationError, describe(l))
  } finally {
    process.env.E2B_API_KEY = key
  }
})
