// SPDX-License-Identifier: Apache-2.0
// Snapshots and fork: createSnapshot with a name, listSnapshots (by sandbox, by name, pages
// of `limit`), Sandbox.create(snapshotId) sees the files, fork with count 2 gives
// independent copies, deleteSnapshot true then false, SandboxNotFoundError for an unknown
// sandbox, count out of bounds refused.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { sandbox, rejection, uniq } from './lib.mjs'

const T = { timeout: 180_000 }

// a command that must succeed; its stderr in the failure
async function must(sbx, cmd, opts) {
  try {
    return await sbx.commands.run(cmd, opts)
  } catch (e) {
    throw new Error(`\`${cmd}\`: ${e.message}: ${(e.stderr ?? '').slice(0, 300)}`)
  }
}

async function listAll(opts) {
  const p = Sandbox.listSnapshots(opts)
  const pages = []
  while (p.hasNext) {
    pages.push(await p.nextItems())
    if (pages.length > 50) throw new Error('more than 50 pages')
  }
  return pages
}

test('createSnapshot with a name; listSnapshots by sandbox, by name, in pages', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('/home/user/snap.txt', 'in the snapshot')
  const name = uniq('snapname')
  const s1 = await sbx.createSnapshot({ name })
  t.after(() => Sandbox.deleteSnapshot(s1.snapshotId).catch(() => {}))
  assert.ok(s1.snapshotId, 'a snapshot id')
  assert.deepEqual(s1.names, [name])
  const s2 = await sbx.createSnapshot()
  t.after(() => Sandbox.deleteSnapshot(s2.snapshotId).catch(() => {}))
  const s3 = await sbx.createSnapshot()
  t.after(() => Sandbox.deleteSnapshot(s3.snapshotId).catch(() => {}))
  assert.deepEqual(s2.names, [])

  const mine = (await listAll({ sandboxId: sbx.sandboxId })).flat().map((s) => s.snapshotId)
  assert.deepEqual(mine, [s1.snapshotId, s2.snapshotId, s3.snapshotId])
  const own = (await sbx.listSnapshots().nextItems()).map((s) => s.snapshotId)
  assert.deepEqual(own, mine)
  const byName = (await listAll({ name })).flat()
  assert.deepEqual(byName, [{ snapshotId: s1.snapshotId, names: [name] }])
  const pages = await listAll({ sandboxId: sbx.sandboxId, limit: 2 })
  assert.deepEqual(pages.map((p) => p.length), [2, 1])
  assert.deepEqual(pages.flat().map((s) => s.snapshotId), mine)
  // another sandbox's snapshots are not listed under this one
  const other = await sandbox(t)
  assert.deepEqual((await listAll({ sandboxId: other.sandboxId })).flat(), [])
})

test('Sandbox.create(snapshotId) sees the files; the source goes on unchanged', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('/home/user/a.txt', 'alpha')
  await sbx.commands.run('mkdir -p /home/user/dir && echo beta > /home/user/dir/b')
  // files of the sandbox's root, in the workspace and (where the root file system is
  // writable: not the synthesized read-only one of the default template) the upper
  // layer: as an unprivileged serve's (mode user) they belong to subordinate ids, which
  // serve can neither read nor chown itself (the helper copies them, idcopy.h)
  await must(sbx, 'mkdir -m 777 /home/user/rd')
  const rootDirs = ['/home/user/rd']
  if ((await sbx.commands.run('mkdir /rd 2>/dev/null', { user: 'root' }).catch((e) => e)).exitCode === 0) rootDirs.push('/rd')
  else t.diagnostic('the root file system is read-only here: the upper layer holds no file of root')
  await must(sbx, rootDirs.map((d) => `mkdir ${d}/e && echo root > ${d}/e/f`).join(' && '), { user: 'root' })
  const owners = `stat -c "%u %g" ${rootDirs.map((d) => `${d}/e ${d}/e/f`).join(' ')}`
  const rootOwned = '0 0\n'.repeat(2 * rootDirs.length)
  assert.equal((await sbx.commands.run(owners)).stdout, rootOwned, 'the source\'s files are root\'s')
  const h = await sbx.commands.run('sleep 300', { background: true })
  const snap = await sbx.createSnapshot({ name: uniq('restore') })
  t.after(() => Sandbox.deleteSnapshot(snap.snapshotId).catch(() => {}))
  for (const ref of [snap.snapshotId, snap.names[0]]) {
    const r = await Sandbox.create(ref, { timeoutMs: 120_000 })
    t.after(() => r.kill().catch(() => {}))
    assert.equal(await r.files.read('/home/user/a.txt'), 'alpha', `restored by ${ref}`)
    assert.equal((await r.commands.run('cat /home/user/dir/b')).stdout, 'beta\n')
    assert.equal((await r.commands.run(owners)).stdout, rootOwned, 'root\'s files restored as root\'s')
    assert.equal((await r.commands.run(`cat ${rootDirs.map((d) => `${d}/e/f`).join(' ')}`)).stdout, 'root\n'.repeat(rootDirs.length))
  }
  assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid), 'the source still runs its process')
  await sbx.files.write('/home/user/a.txt', 'changed')
  assert.equal(await sbx.files.read('/home/user/a.txt'), 'changed')
})

test('fork with count 2 gives independent copies', T, async (t) => {
  const sbx = await sandbox(t)
  await sbx.files.write('/home/user/f.txt', 'original')
  const forks = await Sandbox.fork(sbx.sandboxId, { count: 2, timeoutMs: 120_000 })
  assert.equal(forks.length, 2)
  for (const f of forks) {
    assert.ok(f instanceof Sandbox, `a sandbox, not ${f}`)
    t.after(() => f.kill().catch(() => {}))
  }
  assert.notEqual(forks[0].sandboxId, forks[1].sandboxId)
  assert.equal(await forks[0].files.read('/home/user/f.txt'), 'original')
  await forks[0].files.write('/home/user/f.txt', 'fork 0')
  assert.equal(await forks[1].files.read('/home/user/f.txt'), 'original', 'a write in one fork is not in the other')
  assert.equal(await sbx.files.read('/home/user/f.txt'), 'original', 'nor in the source')
  // the fork's snapshot is internal: not listed
  assert.deepEqual((await listAll({ sandboxId: sbx.sandboxId })).flat(), [])
  const bad = await rejection(Sandbox.fork(sbx.sandboxId, { count: 17 }))
  assert.match(bad.message, /count/)
})

test('deleteSnapshot is true, then false; unknown sandboxes are SandboxNotFoundError', T, async (t) => {
  const sbx = await sandbox(t)
  const snap = await sbx.createSnapshot()
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
  assert.deepEqual((await listAll({ sandboxId: sbx.sandboxId })).flat(), [])
  const e1 = await rejection(Sandbox.createSnapshot('nosuchsandbox1'))
  assert.ok(e1 instanceof SandboxNotFoundError, `${e1.name}: ${e1.message}`)
  const e2 = await rejection(Sandbox.fork('nosuchsandbox1', { count: 1 }))
  assert.ok(e2 instanceof SandboxNotFoundError, `${e2.name}: ${e2.message}`)
})
