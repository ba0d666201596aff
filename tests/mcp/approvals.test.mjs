// SPDX-License-Identifier: Apache-2.0
// Approvals over MCP (the default agent gates bash: `approval: always`): a client with the
// elicitation capability is asked (one call approved, one declined), a client without it
// falls back to --approve-cmd, and without either the call is denied naming
// `approval: never` and --approve-cmd.
import { test, before, after } from 'node:test'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import assert from 'node:assert/strict'
import { sandbox, removeSandbox, connect, text } from './lib.mjs'

let sb
const tmp = mkdtempSync('/tmp/ts-mcp-approve-')
before(async () => {
  sb = await sandbox()
})
after(async () => {
  await removeSandbox(sb)
  rmSync(tmp, { recursive: true, force: true })
})

const denied = (r) => r.isError === true && r.structuredContent?.error === 'denied'
// bash ran (or would have: its placeholder answers a tool error that is not a denial)
const ran = (r) => !denied(r) && r.structuredContent?.error !== 'approval_required'

test('elicitation: the client approves one call and declines another', async (t) => {
  const c = await connect(t, ['--sandbox', sb], {
    elicit: (p) => (p.message.includes('echo approved-by-user') ? { action: 'accept', content: { approve: true } } : { action: 'decline' }),
  })
  const yes = await c.callTool({ name: 'bash', arguments: { command: 'echo approved-by-user' } })
  assert.ok(ran(yes), `the approved call ran: ${JSON.stringify(yes)}`)
  if (!yes.isError) assert.match(text(yes), /approved-by-user/)
  const no = await c.callTool({ name: 'bash', arguments: { command: 'echo declined-by-user' } })
  assert.ok(denied(no), `the declined call is a denial: ${JSON.stringify(no)}`)
  assert.match(text(no), /denied/)
  assert.match(text(no), /declined/)
  assert.equal(c.elicitations.length, 2, 'one elicitation per gated call')
  const [first] = c.elicitations
  assert.match(first.message, /`bash`/, 'the message names the tool')
  assert.match(first.message, /echo approved-by-user/, 'and the command')
  assert.equal(first.requestedSchema?.type, 'object')
  assert.equal(first.requestedSchema?.properties?.approve?.type, 'boolean')
  assert.deepEqual(first.requestedSchema?.required, ['approve'])
})

test('elicitation: accept with approve false denies, with the user\'s reason', async (t) => {
  const c = await connect(t, ['--sandbox', sb], {
    elicit: () => ({ action: 'accept', content: { approve: false, reason: 'not on a friday' } }),
  })
  const r = await c.callTool({ name: 'bash', arguments: { command: 'echo nope' } })
  assert.ok(denied(r), JSON.stringify(r))
  assert.match(text(r), /not on a friday/)
})

test('elicitation: calls that are not gated do not ask', async (t) => {
  const c = await connect(t, ['--sandbox', sb], { elicit: () => ({ action: 'decline' }) })
  const r = await c.callTool({ name: 'read_file', arguments: { path: 'whatever.txt' } })
  assert.ok(!denied(r), JSON.stringify(r))
  assert.equal(c.elicitations.length, 0)
})

test('elicitation is asked before --approve-cmd', async (t) => {
  const c = await connect(t, ['--sandbox', sb, '--approve-cmd', 'exit 1'], {
    elicit: () => ({ action: 'accept', content: { approve: true } }),
  })
  const r = await c.callTool({ name: 'bash', arguments: { command: 'echo asked-the-client' } })
  assert.ok(ran(r), JSON.stringify(r))
  assert.equal(c.elicitations.length, 1)
})

test('no elicitation: --approve-cmd decides (true approves, false denies)', async (t) => {
  const yes = await connect(t, ['--sandbox', sb, '--approve-cmd', 'true'])
  const r1 = await yes.callTool({ name: 'bash', arguments: { command: 'echo by-hook' } })
  assert.ok(ran(r1), JSON.stringify(r1))
  if (!r1.isError) assert.match(text(r1), /by-hook/)
  const no = await connect(t, ['--sandbox', sb, '--approve-cmd', 'echo the hook says no; exit 1'])
  const r2 = await no.callTool({ name: 'bash', arguments: { command: 'echo by-hook' } })
  assert.ok(denied(r2), JSON.stringify(r2))
  assert.match(text(r2), /the hook says no/)
})

test('no elicitation, no --approve-cmd: denied, naming `approval: never` and --approve-cmd', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const r = await c.callTool({ name: 'bash', arguments: { command: 'echo never-runs' } })
  assert.equal(r.isError, true, JSON.stringify(r))
  assert.ok(!ran(r) || denied(r), JSON.stringify(r))
  assert.match(text(r), /`approval: never`/)
  assert.match(text(r), /--approve-cmd/)
  assert.doesNotMatch(text(r), /never-runs\n/, 'the command did not run')
})

test('elicitation for writes: an agent with `approval: {bash: never, write: always}`', async (t) => {
  const agent = join(tmp, 'writes.yaml')
  writeFileSync(agent, 'name: writes\nsandbox:\n  approval:\n    bash: never\n    write: always\n')
  const c = await connect(t, ['--agent', agent, '--sandbox', sb], { elicit: () => ({ action: 'decline' }) })
  const { tools } = await c.listTools()
  if (!Object.keys(tools.find((x) => x.name === 'write_file')?.inputSchema?.properties ?? {}).length) {
    return t.skip('write_file is still the placeholder (not marked as a write)')
  }
  const w = await c.callTool({ name: 'write_file', arguments: { path: 'gated-write.txt', content: 'x' } })
  assert.ok(denied(w), JSON.stringify(w))
  assert.equal(c.elicitations.length, 1, 'the write asked')
  assert.match(c.elicitations[0].message, /`write_file`/)
  assert.match(c.elicitations[0].message, /gated-write\.txt/, 'the message names the path written')
  const b = await c.callTool({ name: 'bash', arguments: { command: 'echo free' } })
  assert.ok(ran(b), JSON.stringify(b))
  assert.equal(c.elicitations.length, 1, 'bash did not ask')
})
