// SPDX-License-Identifier: Apache-2.0
'use strict';
const crypto = require('crypto');

exports.sha = (data) => crypto.createHash('sha256').update(data).digest('hex').slice(0, 16);

// deterministic bytes
exports.pattern = (n, seed = 1) => {
  const b = Buffer.alloc(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
};

exports.sleep = (ms) => new Promise((r) => setTimeout(r, ms));
