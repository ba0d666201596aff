// SPDX-License-Identifier: Apache-2.0
// 50 sandboxes at once, each running 200 commands through the SDK: 0 errors, every output
// right. Its own file (and meson test) so that it can be timed apart from the rest.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const SANDBOXES = Number(process.env.TS_STRESS_SANDBOXES ?? 50)
const COMMANDS = Number(process.env.TS_STRESS_COMMANDS ?? 200)

test(`${SANDBOXES} concurrent sandboxes x ${COMMANDS} commands.run: 0 errors`, { timeout: 1_200_000 }, async (t) => {
  const errors = []
  const sbxs = []
  t.after(() => Promise.all(sbxs.map((s) => s.kill().catch(() => {}))))
  const t0 = Date.now()
  const created = await Promise.allSettled(Array.from({ length: SANDBOXES }, () => Sandbox.create({ timeoutMs: 900_000 })))
  for (const c of created) {
    if (c.status === 'fulfilled') sbxs.push(c.value)
    else errors.push(`create: ${c.reason?.constructor?.name}: ${c.reason?.message}`)
  }
  const t1 = Date.now()
  let ran = 0
  await Promise.all(sbxs.map(async (sbx, s) => {
    for (let i = 0; i < COMMANDS; i++) {
      try {
        const r = await sbx.commands.run(`echo ${s}-$((${i} * 3))`)
        if (r.exitCode !== 0 || r.stdout !== `${s}-${i * 3}\n` || r.stderr !== '') {
          errors.push(`sandbox ${s} command ${i}: ${JSON.stringify(r)}`)
        }
        ran++
      } catch (e) {
        errors.push(`sandbox ${s} command ${i}: ${e?.constructor?.name}: ${e?.message}`)
      }
    }
  }))
  const t2 = Date.now()
  t.diagnostic(`create ${SANDBOXES}: ${t1 - t0} ms; ${ran} commands in ${t2 - t1} ms (${Math.round(ran / ((t2 - t1) / 1000))}/s)`)
  // Every sandbox still lists and answers after the load.
  const listed = new Set()
  const p = Sandbox.list({ query: { state: ['running'] } })
  while (p.hasNext) for (const s of await p.nextItems()) listed.add(s.sandboxId)
  for (const sbx of sbxs) if (!listed.has(sbx.sandboxId)) errors.push(`${sbx.sandboxId} not listed after the load`)
  assert.deepEqual(errors.slice(0, 20), [], `${errors.length} errors`)
  assert.equal(sbxs.length, SANDBOXES)
  assert.equal(ran, SANDBOXES * COMMANDS)
})
