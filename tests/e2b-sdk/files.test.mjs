// SPDX-License-Identifier: Apache-2.0
// sandbox.files: read, write (one, many, bytes, gzip, empty), list, exists, getInfo,
// makeDir, remove, rename, watchDir, metadata (xattrs), and the signed /files URLs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FileNotFoundError, InvalidArgumentError, NotFoundError, AuthenticationError } from 'e2b'
import { sandbox, waitFor, rejection, describe, sleep } from './lib.mjs'

const T = { timeout: 120_000 }

test('write and read a string, absolute and relative paths', T, async (t) => {
  const sbx = await sandbox(t)
  const info = await sbx.files.write('/home/user/a.txt', 'hello wörld\n')
  assert.equal(info.path, '/home/user/a.txt')
  assert.equal(info.name, 'a.txt')
  assert.equal(info.type, 'file')
  assert.equal(await sbx.files.read('/home/user/a.txt'), 'hello wörld\n')
  const rel = await sbx.files.write('rel/dir/b.txt', 'relative')
  assert.equal(rel.path, '/home/user/rel/dir/b.txt')
  assert.equal(await sbx.files.read('rel/dir/b.txt'), 'relative')
  // The file really is in the sandbox, owned by the user, mode 0644 (umask 022).
  const r = await sbx.commands.run('cat /home/user/rel/dir/b.txt; echo; stat -c "%U:%G %a" /home/user/rel/dir/b.txt /home/user/rel/dir')
  assert.equal(r.stdout, 'relative\nuser:user 644\nuser:user 755\n')
})

test('write and read bytes (all 256 values) and a blob', T, async (t) => {
  const sbx = await sandbox(t)
  const data = new Uint8Array(256 * 64)
  for (let i = 0; i < data.length; i++) data[i] = i % 256
  await sbx.files.write('bin.dat', data.buffer)
  const back = await sbx.files.read('bin.dat', { format: 'bytes' })
  assert.ok(back instanceof Uint8Array)
  assert.equal(back.length, data.length)
  assert.deepEqual(Buffer.from(back), Buffer.from(data))
  const blob = await sbx.files.read('bin.dat', { format: 'blob' })
  assert.equal(blob.size, data.length)
  const sum = await sbx.commands.run('sha256sum < bin.dat | cut -d" " -f1')
  const { createHash } = await import('node:crypto')
  assert.equal(sum.stdout.trim(), createHash('sha256').update(data).digest('hex'))
})

test('write many files in one call', T, async (t) => {
  const sbx = await sandbox(t)
  const infos = await sbx.files.write([
    { path: 'many/one.txt', data: 'one' },
    { path: '/home/user/many/deep/two.txt', data: 'two' },
    { path: '/tmp/three.bin', data: new Uint8Array([0, 1, 2, 255]).buffer },
  ])
  assert.equal(infos.length, 3)
  assert.deepEqual(infos.map((i) => i.path).sort(),
    ['/home/user/many/deep/two.txt', '/home/user/many/one.txt', '/tmp/three.bin'])
  assert.equal(await sbx.files.read('many/one.txt'), 'one')
  assert.equal(await sbx.files.read('many/deep/two.txt'), 'two')
  assert.deepEqual([...(await sbx.files.read('/tmp/three.bin', { format: 'bytes' }))], [0, 1, 2, 255])
})

test('list with depth', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write([
    { path: 'tree/top.txt', data: 't' },
    { path: 'tree/a/mid.txt', data: 'mm' },
    { path: 'tree/a/b/leaf.txt', data: 'lll' },
  ])
  const names = (l) => l.map((e) => e.path).sort()
  const d1 = await sbx.files.list('tree')
  assert.deepEqual(names(d1), ['/home/user/tree/a', '/home/user/tree/top.txt'])
  const a = d1.find((e) => e.name === 'a')
  assert.equal(a.type, 'dir')
  const top = d1.find((e) => e.name === 'top.txt')
  assert.equal(top.type, 'file')
  assert.equal(top.size, 1)
  const d2 = await sbx.files.list('/home/user/tree', { depth: 2 })
  assert.deepEqual(names(d2), ['/home/user/tree/a', '/home/user/tree/a/b', '/home/user/tree/a/mid.txt', '/home/user/tree/top.txt'])
  const d3 = await sbx.files.list('tree', { depth: 3 })
  assert.deepEqual(names(d3), [...names(d2), '/home/user/tree/a/b/leaf.txt'].sort())
  const e = await rejection(sbx.files.list('no-such-dir'))
  assert.ok(e instanceof FileNotFoundError, describe(e))
})

test('exists', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('ex.txt', 'x')
  assert.equal(await sbx.files.exists('ex.txt'), true)
  assert.equal(await sbx.files.exists('/home/user'), true)
  assert.equal(await sbx.files.exists('/home/user/not-there.txt'), false)
})

test('getInfo of a file, a directory and a symlink', T, async (t) => {
  const sbx = await sandbox(t)
  const before = Date.now()
  await sbx.files.write('info.txt', 'abcde')
  const f = await sbx.files.getInfo('info.txt')
  assert.equal(f.name, 'info.txt')
  assert.equal(f.path, '/home/user/info.txt')
  assert.equal(f.type, 'file')
  assert.equal(f.size, 5)
  assert.equal(f.mode, 0o644)
  assert.equal(f.permissions, '-rw-r--r--')
  assert.equal(f.owner, 'user')
  assert.equal(f.group, 'user')
  assert.ok(f.modifiedTime instanceof Date, `modifiedTime ${f.modifiedTime}`)
  assert.ok(Math.abs(f.modifiedTime.getTime() - before) < 60_000, `modifiedTime ${f.modifiedTime.toISOString()}`)
  const d = await sbx.files.getInfo('/home/user')
  assert.equal(d.type, 'dir')
  assert.equal(d.name, 'user')
  assert.ok(d.size > 0, `directory size ${d.size}`)
  assert.match(d.permissions, /^drwx/)
  await sbx.commands.run('ln -s /home/user/info.txt /home/user/link.txt')
  const l = await sbx.files.getInfo('link.txt')
  assert.equal(l.type, 'file')
  assert.equal(l.symlinkTarget, '/home/user/info.txt')
  const e = await rejection(sbx.files.getInfo('nope.txt'))
  assert.ok(e instanceof FileNotFoundError, describe(e))
})

test('makeDir: true when made (with parents), false when it exists', T, async (t) => {
  const sbx = await sandbox(t)
  assert.equal(await sbx.files.makeDir('mk/a/b'), true)
  const info = await sbx.files.getInfo('mk/a/b')
  assert.equal(info.type, 'dir')
  assert.equal(info.permissions, 'drwxr-xr-x')
  assert.equal(info.owner, 'user')
  assert.equal(await sbx.files.makeDir('mk/a/b'), false)
  await sbx.files.write('mk/file', 'f')
  const e = await rejection(sbx.files.makeDir('mk/file'))
  assert.ok(e instanceof InvalidArgumentError, describe(e))
})

test('remove a file and a full directory; a missing path is no error', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write([{ path: 'rm/x/1', data: '1' }, { path: 'rm/x/2', data: '2' }, { path: 'rm/f', data: 'f' }])
  await sbx.files.remove('rm/f')
  assert.equal(await sbx.files.exists('rm/f'), false)
  await sbx.files.remove('/home/user/rm')
  assert.equal(await sbx.files.exists('rm'), false)
  assert.equal((await sbx.commands.run('test -e /home/user/rm; echo $?')).stdout, '1\n')
  assert.equal(await sbx.files.remove('rm/never-was'), undefined)
})

test('rename moves a file and returns the new entry', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('old.txt', 'moving')
  const e = await sbx.files.rename('old.txt', 'new/place/new.txt')
  assert.equal(e.path, '/home/user/new/place/new.txt')
  assert.equal(e.name, 'new.txt')
  assert.equal(e.type, 'file')
  assert.equal(await sbx.files.exists('old.txt'), false)
  assert.equal(await sbx.files.read('new/place/new.txt'), 'moving')
  const err = await rejection(sbx.files.rename('old.txt', 'x.txt'))
  assert.ok(err instanceof NotFoundError, describe(err))
})

// A watch of dir whose events are collected; stopped when the test ends.
async function watch(t, sbx, dir, opts) {
  const ev = []
  const h = await sbx.files.watchDir(dir, (e) => ev.push(e), opts)
  t.after(() => h.stop())
  return { ev, h }
}
const has = (ev, name, type) => ev.some((e) => e.name === name && e.type === type)

test('watchDir: files.write shows as create and write of that name', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.makeDir('w')
  const { ev } = await watch(t, sbx, 'w')
  await sbx.files.write('w/x.txt', 'data')
  await waitFor(() => `create and write events of x.txt (got ${JSON.stringify(ev)})`, () => has(ev, 'x.txt', 'create') && has(ev, 'x.txt', 'write'))
  assert.ok(ev.every((e) => e.name === 'x.txt'), `events of other names: ${JSON.stringify(ev)}`)
})

test('watchDir: changes made by commands: create, write, rename, chmod, remove', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.makeDir('w')
  const { ev } = await watch(t, sbx, 'w')
  await sbx.commands.run('cd /home/user/w && echo hi > a.txt && mv a.txt b.txt && chmod 600 b.txt && rm b.txt')
  await waitFor(() => `create, write, rename, chmod and remove events (got ${JSON.stringify(ev)})`, () =>
    has(ev, 'a.txt', 'create') && has(ev, 'a.txt', 'write') && has(ev, 'a.txt', 'rename') &&
    has(ev, 'b.txt', 'create') && has(ev, 'b.txt', 'chmod') && has(ev, 'b.txt', 'remove'))
})

test('watchDir: not recursive by default; recursive with includeEntry sees subdirectories', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.makeDir('w/sub')
  const { ev, h } = await watch(t, sbx, 'w')
  await sbx.commands.run('echo n > /home/user/w/sub/not-recursive.txt; echo y > /home/user/w/top.txt')
  await waitFor('the event of top.txt', () => has(ev, 'top.txt', 'create'))
  assert.ok(!ev.some((e) => e.name.includes('not-recursive')), JSON.stringify(ev))
  await h.stop()
  const { ev: rev } = await watch(t, sbx, 'w', { recursive: true, includeEntry: true })
  await sbx.commands.run('echo deep > /home/user/w/sub/deep.txt')
  const c = await waitFor(() => `a recursive create event (got ${JSON.stringify(rev)})`, () => rev.find((e) => e.name === 'sub/deep.txt' && e.type === 'create'))
  assert.equal(c.entry?.path, '/home/user/w/sub/deep.txt')
  assert.equal(c.entry?.type, 'file')
})

test('watchDir of a file is InvalidArgumentError, of a missing path NotFoundError', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('wf.txt', 'f')
  const onFile = await rejection(sbx.files.watchDir('wf.txt', () => {}))
  assert.ok(onFile instanceof InvalidArgumentError, describe(onFile))
  const missing = await rejection(sbx.files.watchDir('no-such-dir', () => {}))
  assert.ok(missing instanceof NotFoundError, describe(missing))
})

test('uploadUrl and downloadUrl work with a plain fetch and are signed', T, async (t) => {
  const sbx = await sandbox(t)
  const up = await sbx.uploadUrl('signed/up.txt')
  const upUrl = new URL(up)
  assert.match(upUrl.searchParams.get('signature') ?? '', /^v1_[A-Za-z0-9+/]+$/, up)
  const form = new FormData()
  form.append('file', new Blob(['uploaded by fetch']), 'up.txt')
  const res = await fetch(up, { method: 'POST', body: form })
  assert.equal(res.status, 200, await res.clone().text())
  const body = await res.json()
  assert.equal(body[0].path, '/home/user/signed/up.txt')
  assert.equal(await sbx.files.read('signed/up.txt'), 'uploaded by fetch')

  const down = await sbx.downloadUrl('signed/up.txt')
  assert.match(new URL(down).searchParams.get('signature') ?? '', /^v1_/)
  const got = await fetch(down)
  assert.equal(got.status, 200)
  assert.equal(await got.text(), 'uploaded by fetch')

  // An expiring signature.
  const exp = await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: 60 })
  assert.ok(new URL(exp).searchParams.get('signature_expiration'))
  assert.equal(await (await fetch(exp)).text(), 'uploaded by fetch')
})

test('a wrong or missing URL signature gets envd\'s 401 bodies; a read signature does not write', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('signed/up.txt', 'uploaded by fetch')
  const down = await sbx.downloadUrl('signed/up.txt')
  const form = new FormData()
  form.append('file', new Blob(['overwritten']), 'up.txt')
  const bad = new URL(down)
  bad.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  const r1 = await fetch(bad)
  const b1 = await r1.text()
  assert.equal(r1.status, 401, b1)
  assert.deepEqual(JSON.parse(b1), { code: 401, message: 'invalid signature' })
  const none = new URL(down)
  none.searchParams.delete('signature')
  const r2 = await fetch(none)
  const b2 = await r2.text()
  assert.equal(r2.status, 401, b2)
  assert.deepEqual(JSON.parse(b2), { code: 401, message: 'missing signature query parameter' })
  // A signature for reading does not allow writing.
  const r3 = await fetch(down, { method: 'POST', body: form })
  assert.equal(r3.status, 401, await r3.text())
  assert.equal(await sbx.files.read('signed/up.txt'), 'uploaded by fetch')
})

test('gzip: read with gzip and write with gzip', T, async (t) => {
  const sbx = await sandbox(t)
  const text = 'compressible line\n'.repeat(20_000)
  await sbx.files.write('gz.txt', text)
  assert.equal(await sbx.files.read('gz.txt', { gzip: true }), text)
  await sbx.files.write('gz-up.txt', text, { gzip: true })
  assert.equal((await sbx.commands.run('wc -c < gz-up.txt')).stdout.trim(), String(text.length))
  assert.equal(await sbx.files.read('gz-up.txt'), text)
})

test('an empty file reads as empty text and empty bytes', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('empty.txt', '')
  assert.equal(await sbx.files.read('empty.txt'), '')
  const b = await sbx.files.read('empty.txt', { format: 'bytes' })
  assert.equal(b.length, 0)
  assert.equal((await sbx.files.getInfo('empty.txt')).size, 0)
  await sbx.commands.run(': > /home/user/empty2.txt')
  assert.equal(await sbx.files.read('empty2.txt'), '')
})

test('read of a missing file is FileNotFoundError; of a directory InvalidArgumentError', T, async (t) => {
  const sbx = await sandbox(t)
  const e = await rejection(sbx.files.read('missing.txt'))
  assert.ok(e instanceof FileNotFoundError, describe(e))
  const d = await rejection(sbx.files.read('/home/user'))
  assert.ok(d instanceof InvalidArgumentError, describe(d))
})

test('files as root: owned by root, relative paths under /root', T, async (t) => {
  const sbx = await sandbox(t)
  const info = await sbx.files.write('/root/r.txt', 'root file', { user: 'root' })
  assert.equal(info.path, '/root/r.txt')
  assert.equal((await sbx.files.getInfo('/root/r.txt', { user: 'root' })).owner, 'root')
  assert.equal(await sbx.files.read('r.txt', { user: 'root' }), 'root file')
  const rel = await sbx.files.write('rel-root.txt', 'x', { user: 'root' })
  assert.equal(rel.path, '/root/rel-root.txt')
})

test('metadata: X-Metadata on write, xattrs set inside the sandbox', T, async (t) => {
  const sbx = await sandbox(t)
  const w = await sbx.files.write('meta.txt', 'm', { metadata: { owner: 'alice', Kind: 'report' } })
  assert.deepEqual(w.metadata, { owner: 'alice', kind: 'report' })
  const info = await sbx.files.getInfo('meta.txt')
  assert.deepEqual(info.metadata, { owner: 'alice', kind: 'report' })
  const listed = (await sbx.files.list('/home/user')).find((e) => e.name === 'meta.txt')
  assert.deepEqual(listed.metadata, { owner: 'alice', kind: 'report' })
  // A write without metadata clears it.
  await sbx.files.write('meta.txt', 'm2')
  assert.ok(!(await sbx.files.getInfo('meta.txt')).metadata?.owner)
  // An xattr set from inside is visible to the file API.
  const py = "import os; os.setxattr('/home/user/inside.txt', 'user.e2b.tag', b'from-inside')"
  await sbx.commands.run(`touch /home/user/inside.txt && python3 -c "${py}"`)
  assert.equal((await sbx.files.getInfo('inside.txt')).metadata?.tag, 'from-inside')
})
