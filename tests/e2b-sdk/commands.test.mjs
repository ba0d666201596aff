// SPDX-License-Identifier: Apache-2.0
// sandbox.commands: run, background, connect, kill, list, stdin, envs, cwd, user, timeouts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CommandExitError, InvalidArgumentError, TimeoutError } from 'e2b'
import { sandbox, waitFor, alive, rejection, describe, sleep } from './lib.mjs'

const T = { timeout: 120_000 }

test('run returns stdout, stderr and exit code 0', T, async (t) => {
  const sbx = await sandbox(t)
  const r = await sbx.commands.run('echo out-$((6*7)); echo err-line >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'out-42\n')
  assert.equal(r.stderr, 'err-line\n')
})

test('run of a failing command throws CommandExitError with its exit code and output', T, async (t) => {
  const sbx = await sandbox(t)
  const e = await rejection(sbx.commands.run('echo partial; echo oops >&2; exit 3'))
  assert.ok(e instanceof CommandExitError, describe(e))
  assert.equal(e.exitCode, 3)
  assert.equal(e.stdout, 'partial\n')
  assert.equal(e.stderr, 'oops\n')
  assert.match(e.error ?? '', /exit status 3/)
})

test('background command: handle with pid, streamed output, wait', T, async (t) => {
  const sbx = await sandbox(t)
  const seen = []
  const h = await sbx.commands.run('echo first; sleep 0.5; echo second', {
    background: true,
    onStdout: (d) => seen.push(d),
  })
  assert.ok(Number.isInteger(h.pid) && h.pid > 0, `pid ${h.pid}`)
  const r = await h.wait()
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'first\nsecond\n')
  assert.equal(seen.join(''), 'first\nsecond\n')
})

test('connect by pid after disconnect gets the later output and the exit', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('sleep 1.5; echo after-reconnect; exit 4', { background: true })
  await h.disconnect()
  const got = []
  const h2 = await sbx.commands.connect(h.pid, { onStdout: (d) => got.push(d) })
  assert.equal(h2.pid, h.pid)
  const e = await rejection(h2.wait())
  assert.ok(e instanceof CommandExitError, describe(e))
  assert.equal(e.exitCode, 4)
  assert.equal(got.join(''), 'after-reconnect\n')
  assert.equal(e.stdout, 'after-reconnect\n')
})

test('kill ends the process: true, the process is gone, kill -0 fails, a second kill is false', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('sleep 600', { background: true })
  assert.equal(await alive(sbx, h.pid), true, 'kill -0 must succeed while the process runs')
  assert.equal(await sbx.commands.kill(h.pid), true)
  const e = await rejection(h.wait())
  assert.ok(e instanceof CommandExitError, describe(e))
  assert.equal(e.exitCode, -1)
  assert.match(e.error ?? '', /signal: killed/)
  assert.equal(await alive(sbx, h.pid), false, `kill -0 ${h.pid} still succeeds after kill`)
  assert.equal(await sbx.commands.kill(h.pid), false)
  const list = await sbx.commands.list()
  assert.ok(!list.some((p) => p.pid === h.pid), `pid ${h.pid} still listed`)
})

test('handle.kill() kills the process it started', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('sleep 600', { background: true })
  assert.equal(await h.kill(), true)
  const e = await rejection(h.wait())
  assert.ok(e instanceof CommandExitError, describe(e))
  assert.equal(await alive(sbx, h.pid), false)
})

test('list shows running processes with their config', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('sleep 300', { background: true, cwd: '/tmp', envs: { LISTED: 'yes' } })
  const list = await sbx.commands.list()
  const p = list.find((x) => x.pid === h.pid)
  assert.ok(p, `pid ${h.pid} not in ${JSON.stringify(list)}`)
  assert.equal(p.cmd, '/bin/bash')
  assert.deepEqual(p.args, ['-l', '-c', 'sleep 300'])
  assert.equal(p.cwd, '/tmp')
  assert.equal(p.envs.LISTED, 'yes')
  await sbx.commands.kill(h.pid)
  await waitFor('the killed pid to leave the list', async () => !(await sbx.commands.list()).some((x) => x.pid === h.pid))
})

test('sendStdin and closeStdin feed a process and end its input', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('cat; echo "<eof>"', { background: true, stdin: true })
  await sbx.commands.sendStdin(h.pid, 'hello\n')
  await sbx.commands.sendStdin(h.pid, new TextEncoder().encode('bytes-too\n'))
  await h.sendStdin('via-handle')
  await sbx.commands.closeStdin(h.pid)
  const r = await h.wait()
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello\nbytes-too\nvia-handle<eof>\n')
})

test('without stdin:true the process reads EOF at once', T, async (t) => {
  const sbx = await sandbox(t)
  const r = await sbx.commands.run('cat; echo "<eof>"', { timeoutMs: 10_000 })
  assert.equal(r.stdout, '<eof>\n')
})

test('per-command envs apply to that command only', T, async (t) => {
  const sbx = await sandbox(t)
  const a = await sbx.commands.run('echo "$FOO/$BAR"', { envs: { FOO: 'foo 1', BAR: 'b=2' } })
  assert.equal(a.stdout, 'foo 1/b=2\n')
  const b = await sbx.commands.run('echo "[${FOO-unset}][${BAR-unset}]"')
  assert.equal(b.stdout, '[unset][unset]\n')
})

test('sandbox-wide envs from create reach every command; per-command envs override them', T, async (t) => {
  const sbx = await sandbox(t, { envs: { SBX_WIDE: 'w1', SBX_OTHER: 'o1' } })
  assert.equal((await sbx.commands.run('echo "$SBX_WIDE $SBX_OTHER"')).stdout, 'w1 o1\n')
  assert.equal((await sbx.commands.run('echo "$SBX_WIDE"', { envs: { SBX_WIDE: 'over' } })).stdout, 'over\n')
  assert.equal((await sbx.commands.run('echo "$SBX_WIDE"', { user: 'root' })).stdout, 'w1\n')
  assert.equal((await sbx.commands.run('echo "$SBX_WIDE"')).stdout, 'w1\n')
})

test('cwd: given, default /home/user, relative to home, missing gives InvalidArgumentError', T, async (t) => {
  const sbx = await sandbox(t)
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
  assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user\n')
  await sbx.commands.run('mkdir -p /home/user/sub/dir')
  assert.equal((await sbx.commands.run('pwd', { cwd: 'sub/dir' })).stdout, '/home/user/sub/dir\n')
  const e = await rejection(sbx.commands.run('pwd', { cwd: '/no/such/dir' }))
  assert.ok(e instanceof InvalidArgumentError, describe(e))
  assert.match(e.message, /does not exist/)
})

test('user: root is uid 0, user is the unprivileged default with home /home/user', T, async (t) => {
  const sbx = await sandbox(t)
  const root = await sbx.commands.run('echo "$(id -u) $(id -un) $HOME"', { user: 'root' })
  assert.equal(root.stdout, '0 root /root\n')
  const user = await sbx.commands.run('echo "$(id -u) $(id -un) $HOME"', { user: 'user' })
  const [uid, name, home] = user.stdout.trim().split(' ')
  assert.notEqual(uid, '0')
  assert.equal(name, 'user')
  assert.equal(home, '/home/user')
  const dflt = await sbx.commands.run('id -u')
  assert.equal(dflt.stdout.trim(), uid, 'the default user is `user`')
  // Files a command creates belong to the user it ran as.
  await sbx.commands.run('touch /tmp/by-root', { user: 'root' })
  await sbx.commands.run('touch /tmp/by-user')
  const owners = await sbx.commands.run('stat -c %U /tmp/by-root /tmp/by-user')
  assert.equal(owners.stdout, 'root\nuser\n')
})

test('timeoutMs: the command ends with TimeoutError and its process is gone', T, async (t) => {
  const sbx = await sandbox(t)
  const start = Date.now()
  const e = await rejection(sbx.commands.run('sleep 30; echo never', { timeoutMs: 1500 }))
  assert.ok(e instanceof TimeoutError, describe(e))
  assert.ok(Date.now() - start < 15_000, `took ${Date.now() - start} ms`)

  const h = await sbx.commands.run('sleep 31; echo never', { background: true, timeoutMs: 1500 })
  const e2 = await rejection(h.wait())
  assert.ok(e2 instanceof TimeoutError, describe(e2))
  await waitFor(`pid ${h.pid} to be killed at its deadline`, async () => !(await alive(sbx, h.pid)), 10_000)
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid))
})

test('a disconnected background process keeps running', T, async (t) => {
  const sbx = await sandbox(t)
  const h = await sbx.commands.run('sleep 1; echo done > /tmp/bg-done', { background: true })
  await h.disconnect()
  await sleep(300)
  assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid))
  await waitFor('the disconnected process to finish its work',
    async () => (await sbx.commands.run('cat /tmp/bg-done 2>/dev/null || true')).stdout === 'done\n')
})

test('large output arrives whole', T, async (t) => {
  const sbx = await sandbox(t)
  const r = await sbx.commands.run('head -c 3000000 /dev/zero | tr "\\0" a; echo')
  assert.equal(r.stdout.length, 3_000_001)
  assert.ok(/^a+\n$/.test(r.stdout))
})
