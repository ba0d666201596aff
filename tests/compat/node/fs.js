// SPDX-License-Identifier: Apache-2.0
// fs: read, write, append, truncate, rename, links, modes, times, directories, streams,
// copies, exclusive creation, errors and fs.watch; in the working directory (the
// workspace) and in os.tmpdir().
'use strict';
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { pipeline } = require('stream/promises');
const { sha, pattern, sleep } = require('./util.js');

const work = path.join(process.cwd(), 'node-work');
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });

async function readWrite(dir) {
  const f = path.join(dir, 'data.bin');
  const data = pattern(1 << 20, 7);
  await fsp.writeFile(f, data);
  const back = await fsp.readFile(f);
  await fsp.appendFile(f, 'tail');
  const size1 = (await fsp.stat(f)).size;
  await fsp.truncate(f, 1000);
  const size2 = (await fsp.stat(f)).size;
  const fh = await fsp.open(f, 'r+');
  await fh.write(Buffer.from('XYZ'), 0, 3, 10);
  const { bytesRead, buffer } = await fh.read(Buffer.alloc(20), 0, 20, 0);
  await fh.sync();
  await fh.close();
  return `${sha(back)} ${size1} ${size2} ${bytesRead} ${sha(buffer)}`;
}

exports['write-read-workspace'] = () => readWrite(work);
exports['write-read-tmpdir'] = async () => {
  const d = await fsp.mkdtemp(path.join(os.tmpdir(), 'compat-node-'));
  try {
    return await readWrite(d);
  } finally {
    await fsp.rm(d, { recursive: true, force: true });
  }
};

exports['rename-links'] = async () => {
  const d = path.join(work, 'ren');
  await fsp.mkdir(path.join(d, 'sub'), { recursive: true });
  await fsp.writeFile(path.join(d, 'a.txt'), 'A');
  await fsp.rename(path.join(d, 'a.txt'), path.join(d, 'sub', 'b.txt'));
  await fsp.writeFile(path.join(d, 'c.txt'), 'C');
  await fsp.rename(path.join(d, 'c.txt'), path.join(d, 'sub', 'b.txt')); // replaces
  await fsp.symlink('sub/b.txt', path.join(d, 'sym'));
  await fsp.link(path.join(d, 'sub', 'b.txt'), path.join(d, 'hard'));
  const st = await fsp.stat(path.join(d, 'hard'));
  const lst = await fsp.lstat(path.join(d, 'sym'));
  return [await fsp.readFile(path.join(d, 'sym'), 'utf8'), await fsp.readlink(path.join(d, 'sym')),
    st.nlink, lst.isSymbolicLink()].join(' ');
};

exports['modes-times'] = async () => {
  const f = path.join(work, 'mode.txt');
  await fsp.writeFile(f, 'm');
  const res = [];
  for (const m of [0o600, 0o755, 0o444]) {
    await fsp.chmod(f, m);
    res.push(((await fsp.stat(f)).mode & 0o7777).toString(8));
  }
  await fsp.chmod(f, 0o644);
  await fsp.utimes(f, 1000000000, 1234567890);
  const st = await fsp.stat(f);
  res.push(st.mtimeMs / 1000, st.atimeMs / 1000);
  return res.join(' ');
};

exports['dirs'] = async () => {
  const d = path.join(work, 'tree');
  for (const p of ['x/y/z', 'x/w', 'v']) await fsp.mkdir(path.join(d, p), { recursive: true });
  await fsp.writeFile(path.join(d, 'x/y/z/f1'), '1');
  await fsp.writeFile(path.join(d, 'x/f2'), '22');
  const ents = (await fsp.readdir(path.join(d, 'x'), { withFileTypes: true }))
    .map((e) => `${e.name}:${e.isDirectory() ? 'd' : 'f'}`).sort();
  await fsp.cp(d, path.join(work, 'tree-copy'), { recursive: true });
  const copied = await fsp.readFile(path.join(work, 'tree-copy/x/y/z/f1'), 'utf8');
  await fsp.rm(d, { recursive: true });
  let gone;
  try { await fsp.access(d); gone = 'exists'; } catch (e) { gone = e.code; }
  let nonempty;
  try { await fsp.rmdir(path.join(work, 'tree-copy')); nonempty = 'removed'; } catch (e) { nonempty = e.code; }
  return `${ents.join(',')} ${copied} ${gone} ${nonempty}`;
};

exports['errors'] = async () => {
  const f = path.join(work, 'excl.txt');
  await fsp.writeFile(f, 'e');
  const codes = [];
  for (const op of [
    () => fsp.open(f, 'wx'),
    () => fsp.readFile(path.join(work, 'missing')),
    () => fsp.mkdir(work),
    () => fsp.readdir(f),
    () => fsp.unlink(path.join(work, 'tree-copy')),
  ]) {
    try { const r = await op(); if (r && r.close) await r.close(); codes.push('none'); } catch (e) { codes.push(e.code); }
  }
  return codes.join(' ');
};

exports['streams-zlib'] = async () => {
  const src = path.join(work, 'stream-src.bin');
  fs.writeFileSync(src, pattern(3 << 20, 11));
  await pipeline(fs.createReadStream(src), zlib.createGzip(), fs.createWriteStream(src + '.gz'));
  await pipeline(fs.createReadStream(src + '.gz'), zlib.createGunzip(), fs.createWriteStream(src + '.out'));
  return `${sha(fs.readFileSync(src))} ${sha(fs.readFileSync(src + '.out'))}`;
};

exports['owner'] = async () => {
  // the working directory and what is made in it belong to whoever runs
  const f = path.join(work, 'owned.txt');
  await fsp.writeFile(f, 'o');
  const [d, st] = [await fsp.stat(process.cwd()), await fsp.stat(f)];
  return [d.uid === process.getuid(), d.gid === process.getgid(),
    st.uid === process.getuid(), st.gid === process.getgid()].join(' ');
};

exports['watch'] = async () => {
  const d = path.join(work, 'watched');
  await fsp.mkdir(d, { recursive: true });
  const seen = new Set();
  const w = fs.watch(d, (type, name) => seen.add(`${type}:${name}`));
  try {
    await sleep(100);
    await fsp.writeFile(path.join(d, 'a.txt'), 'one');
    await sleep(100);
    await fsp.appendFile(path.join(d, 'a.txt'), 'two');
    await sleep(100);
    await fsp.rename(path.join(d, 'a.txt'), path.join(d, 'b.txt'));
    await sleep(100);
    await fsp.unlink(path.join(d, 'b.txt'));
    for (let i = 0; i < 50 && seen.size < 3; i++) await sleep(50);
    await sleep(100);
  } finally {
    w.close();
  }
  return [...seen].sort().join(' ');
};
