// SPDX-License-Identifier: Apache-2.0
// Workload: node's file system, child processes, worker threads and loopback networking.
// Runs the same outside and inside the sandbox (driver.sh) and prints `RESULT NAME VALUE`
// lines that do not depend on where it runs; an exception becomes `FAIL <code> <message>`
// as the value, so a failure on one side shows up as a difference, not as a crash.
'use strict';
const parts = ['./fs.js', './child.js', './worker.js', './net.js'];

function clean(v) {
  return String(v).replace(/\s+/g, ' ').trim();
}

async function main() {
  for (const p of parts) {
    const checks = require(p);
    for (const [name, fn] of Object.entries(checks)) {
      let value;
      try {
        value = await withTimeout(fn(), 30000, name);
      } catch (e) {
        value = `FAIL ${e && e.code ? e.code : ''} ${e && e.message ? e.message : e}`;
      }
      console.log(`RESULT ${p.slice(2, -3)}.${name} ${clean(value)}`);
    }
  }
  console.log('RESULT end ok');
}

function withTimeout(promise, ms, name) {
  let timer;
  return Promise.race([
    Promise.resolve(promise).finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} timed out after ${ms} ms`)), ms);
    }),
  ]);
}

main().then(() => process.exit(0), (e) => {
  console.log(`RESULT main FAIL ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
