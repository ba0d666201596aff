// SPDX-License-Identifier: Apache-2.0
// child_process: spawn with pipes in all three directions, exec through a shell,
// execFile with an environment, spawnSync with a large input, fork with IPC, signals to a
// child and to a detached process group, a pipe between two children.
'use strict';
const cp = require('child_process');
const path = require('path');
const { sha, pattern } = require('./util.js');

function collect(child) {
  return new Promise((resolve, reject) => {
    const out = [], err = [];
    child.stdout && child.stdout.on('data', (d) => out.push(d));
    child.stderr && child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({
      out: Buffer.concat(out).toString(), err: Buffer.concat(err).toString(), code, signal,
    }));
  });
}

exports['spawn-pipes'] = async () => {
  const c = cp.spawn('sh', ['-c', 'read x; echo "got:$x"; echo "to stderr" >&2; exit 3']);
  c.stdin.end('line from node\n');
  const r = await collect(c);
  return `${r.out.trim()} | ${r.err.trim()} | ${r.code} ${r.signal}`;
};

exports['exec-shell'] = () => new Promise((resolve, reject) => {
  cp.exec('echo $((6 * 7)); printf "%s" "$0" | wc -c', (e, out) => (e ? reject(e) : resolve(out.trim().split('\n').join(' '))));
});

exports['execFile-env'] = () => new Promise((resolve, reject) => {
  cp.execFile('/usr/bin/env', [], { env: { COMPAT_X: 'y z', PATH: process.env.PATH } },
    (e, out) => (e ? reject(e) : resolve(out.split('\n').filter((l) => l.startsWith('COMPAT_')).join(' '))));
});

exports['spawnSync-large'] = () => {
  const input = pattern(4 << 20, 3);
  const r = cp.spawnSync('cat', [], { input, maxBuffer: 64 << 20 });
  return `${r.status} ${sha(r.stdout)} ${sha(input)}`;
};

exports['fork-ipc'] = () => new Promise((resolve, reject) => {
  const c = cp.fork(path.join(__dirname, 'fork-child.js'), [], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  const got = [];
  c.on('message', (m) => {
    got.push(m.answer);
    if (got.length === 3) c.send({ quit: true });
  });
  c.on('error', reject);
  c.on('exit', (code) => resolve(`${got.join(',')} exit ${code}`));
  for (const n of [1, 20, 300]) c.send({ n });
});

exports['kill-child'] = async () => {
  const c = cp.spawn('sleep', ['30']);
  setTimeout(() => c.kill('SIGTERM'), 100);
  const r = await collect(c);
  return `${r.code} ${r.signal}`;
};

exports['kill-process-group'] = async () => {
  const c = cp.spawn('sh', ['-c', 'sleep 30 & sleep 30 & echo started; wait'], { detached: true });
  const started = new Promise((res) => c.stdout.once('data', res));
  const done = collect(c);
  await started;
  process.kill(-c.pid, 'SIGKILL');
  const r = await done;
  return `${r.out.trim()} ${r.code} ${r.signal}`;
};

exports['pipe-between-children'] = async () => {
  const a = cp.spawn('seq', ['1', '20000']);
  const b = cp.spawn('sh', ['-c', 'wc -l; md5sum']);
  a.stdout.pipe(b.stdin);
  const r = await collect(b);
  return r.out.trim().split('\n')[0];
};
