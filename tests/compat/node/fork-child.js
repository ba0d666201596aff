// SPDX-License-Identifier: Apache-2.0
'use strict';
process.on('message', (m) => {
  if (m.quit) process.exit(5);
  process.send({ answer: m.n * 2 });
});
