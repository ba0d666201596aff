// SPDX-License-Identifier: Apache-2.0
// worker_threads: workers computing in parallel, a SharedArrayBuffer updated with
// Atomics from several workers plus wait/notify, a transferred ArrayBuffer through a
// MessageChannel, a worker's exit code and an error thrown in a worker.
'use strict';
const { Worker, MessageChannel } = require('worker_threads');

function run(code, workerData, opts = {}) {
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData, ...opts });
    const msgs = [];
    w.on('message', (m) => msgs.push(m));
    w.on('error', (e) => resolve({ msgs, error: e.message }));
    w.on('exit', (code) => resolve({ msgs, code }));
  });
}

exports['parallel-sums'] = async () => {
  const code = `const { parentPort, workerData } = require('worker_threads');
    let s = 0n; for (let i = workerData.from; i < workerData.to; i++) s += BigInt(i) * BigInt(i);
    parentPort.postMessage(s.toString());`;
  const rs = await Promise.all([0, 1, 2, 3].map((k) => run(code, { from: k * 250000, to: (k + 1) * 250000 })));
  return rs.map((r) => r.msgs[0]).reduce((a, b) => a + BigInt(b), 0n).toString() + ` ${rs.map((r) => r.code).join(',')}`;
};

exports['shared-atomics'] = async () => {
  const sab = new SharedArrayBuffer(16);
  const arr = new Int32Array(sab);
  const code = `const { workerData } = require('worker_threads');
    const a = new Int32Array(workerData);
    for (let i = 0; i < 100000; i++) Atomics.add(a, 0, 1);
    if (Atomics.add(a, 1, 1) === 3) { Atomics.store(a, 2, 1); Atomics.notify(a, 2); }`;
  const waiter = run(`const { workerData, parentPort } = require('worker_threads');
    const a = new Int32Array(workerData);
    const r = Atomics.wait(a, 2, 0, 20000);
    parentPort.postMessage(r + ' ' + Atomics.load(a, 0));`, sab);
  await Promise.all([0, 1, 2, 3].map(() => run(code, sab)));
  const w = await waiter;
  return `${arr[0]} ${arr[1]} ${w.msgs[0].split(' ')[1]}`;
};

exports['transfer'] = () => new Promise((resolve) => {
  const { port1, port2 } = new MessageChannel();
  const buf = new ArrayBuffer(1 << 20);
  new Uint8Array(buf).fill(9);
  port2.on('message', (m) => {
    resolve(`${m.byteLength} ${new Uint8Array(m)[12345]} sender ${buf.byteLength}`);
    port1.close();
    port2.close();
  });
  port1.postMessage(buf, [buf]);
});

exports['exit-code'] = async () => (await run('process.exit(7)')).code;

exports['error'] = async () => (await run("throw new Error('boom in worker')")).error;
