// SPDX-License-Identifier: Apache-2.0
// `toren-sandbox mcp` through the official SDK's client: initialize, the tool lists of
// tool-set versions 2 and 1 (names and schemas), every listed tool called once (the shape
// of its result), bash and write_file/read_file doing what they say, a tool error, an
// unknown tool (the SDK's thrown JSON-RPC error) and, over raw stdio, end of input.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { cli, sandbox, removeSandbox, connect, unimplemented, text, describe } from './lib.mjs'

const V1 = ['bash', 'read_file', 'write_file', 'edit_file']
const V2 = [...V1, 'find', 'grep', 'bash_output', 'bash_stop', 'bash_list', 'send_file']
// the argument names of the contract (agents are prompted with them)
const ARGS = {
  bash: ['command', 'timeout', 'background'],
  read_file: ['path', 'offset', 'limit'],
  write_file: ['path', 'content'],
  edit_file: ['path', 'old_string', 'new_string', 'replace_all', 'edits'],
  find: ['pattern', 'path'],
  grep: ['pattern', 'path', 'glob'],
  bash_output: ['id', 'since'],
  bash_stop: ['id'],
  bash_list: [],
  send_file: ['path', 'caption'],
}
// arguments a call of each tool can be made with (a tool error is a valid outcome here)
const CALLS = [
  ['write_file', { path: 'mcp-each.txt', content: 'hello each\n' }],
  ['read_file', { path: 'mcp-each.txt' }],
  ['edit_file', { path: 'mcp-each.txt', old_string: 'hello', new_string: 'bye' }],
  ['find', { pattern: '*.txt' }],
  ['grep', { pattern: 'each' }],
  ['bash', { command: 'echo each' }],
  ['bash_list', {}],
  ['bash_output', { id: 'no-such-process' }],
  ['bash_stop', { id: 'no-such-process' }],
  ['send_file', { path: 'mcp-each.txt', caption: 'a file' }],
]

let sb
const tmp = mkdtempSync('/tmp/ts-mcp-agent-')
before(async () => {
  sb = await sandbox()
})
after(async () => {
  await removeSandbox(sb)
  rmSync(tmp, { recursive: true, force: true })
})

// Tools that are still the placeholder of the toolkit (no schema yet, or saying so when
// called): their concrete behaviour is a skip, never a pass.
async function placeholder(c, name, r) {
  if (unimplemented(r)) return true
  const { tools } = await c.listTools()
  const tool = tools.find((x) => x.name === name)
  return !!tool && ARGS[name].length > 0 && Object.keys(tool.inputSchema.properties ?? {}).length === 0
}

// the result shape of every tools/call (MCP's CallToolResult as the server promises it)
function assertShape(name, r) {
  assert.ok(Array.isArray(r.content) && r.content.length === 1, `${name}: one content item (${JSON.stringify(r).slice(0, 300)})`)
  assert.equal(r.content[0].type, 'text', `${name}: a text item`)
  assert.equal(typeof r.content[0].text, 'string', `${name}: its text`)
  assert.equal(typeof r.isError, 'boolean', `${name}: isError`)
  assert.ok(r.structuredContent && typeof r.structuredContent === 'object' && !Array.isArray(r.structuredContent), `${name}: structuredContent is an object`)
  if (r.isError) {
    assert.equal(typeof r.structuredContent.error, 'string', `${name}: a tool error has a code (${JSON.stringify(r.structuredContent)})`)
    assert.ok(r.content[0].text.length > 0, `${name}: a tool error says what failed`)
  }
  const meta = r._meta?.['toren-sandbox/call']
  assert.ok(meta && typeof meta.replayed === 'boolean' && meta.attempt >= 1, `${name}: _meta names the call (${JSON.stringify(r._meta)})`)
}

test('initialize: serverInfo, capabilities, instructions', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  assert.equal(c.getServerVersion()?.name, 'toren-sandbox')
  assert.ok(c.getServerCapabilities()?.tools, `capabilities: ${JSON.stringify(c.getServerCapabilities())}`)
  assert.ok(!c.getServerCapabilities()?.resources, 'no resources capability (none is served)')
  assert.match(c.getInstructions() ?? '', /sandbox/)
  await c.ping()
})

test('tools/list: tool-set version 2 by default, with schemas', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const { tools } = await c.listTools()
  assert.deepEqual(tools.map((x) => x.name).sort(), [...V2].sort())
  for (const tool of tools) {
    assert.equal(typeof tool.description, 'string', `${tool.name}: a description`)
    assert.equal(tool.inputSchema?.type, 'object', `${tool.name}: its inputSchema is an object schema`)
  }
})

test('tools/list: the contract\'s argument names', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const { tools } = await c.listTools()
  for (const tool of tools) {
    const props = Object.keys(tool.inputSchema.properties ?? {})
    if (props.length === 0 && tool.description === '' && ARGS[tool.name].length) {
      t.diagnostic(`${tool.name}: placeholder schema`)
      continue
    }
    for (const a of ARGS[tool.name]) {
      if (tool.name === 'edit_file' && (a === 'edits' || a === 'replace_all') && !props.includes(a)) continue
      assert.ok(props.includes(a), `${tool.name} has the argument \`${a}\` (it has ${props.join(', ')})`)
    }
  }
  if (tools.every((x) => x.description === '')) t.skip('the toolkit is still the placeholder (no schemas yet)')
})

test('tools/list: an agent pinned to `tools: 1` lists the four tools of version 1', async (t) => {
  const agent = join(tmp, 'v1.yaml')
  writeFileSync(agent, 'name: v1\nsandbox:\n  tools: 1\n  approval: never\n')
  let c
  try {
    c = await connect(t, ['--agent', agent, '--sandbox', sb])
  } catch (e) {
    if (/not yet/.test(e.message)) return t.skip(`the agent configuration is not parsed yet: ${e.message.slice(0, 200)}`)
    throw e
  }
  const { tools } = await c.listTools()
  assert.deepEqual(tools.map((x) => x.name).sort(), [...V1].sort())
  // a tool of version 2 is unknown to it: the protocol's error, not a tool error
  await assert.rejects(c.callTool({ name: 'grep', arguments: { pattern: 'x' } }), (e) => e.code === -32602 || assert.fail(describe(e)))
})

test('tools/call: every listed tool, once, answers a well-formed result', async (t) => {
  const c = await connect(t, ['--sandbox', sb, '--approve-cmd', 'true'])
  const { tools } = await c.listTools()
  const called = []
  for (const [name, args] of CALLS) {
    if (!tools.some((x) => x.name === name)) continue
    const r = await c.callTool({ name, arguments: args })
    assertShape(name, r)
    called.push(name)
    t.diagnostic(`${name}: ${r.isError ? 'tool error' : 'ok'}: ${text(r).slice(0, 100).replace(/\n/g, ' ')}`)
  }
  assert.deepEqual(called.sort(), tools.map((x) => x.name).sort(), 'every listed tool was called')
})

test('bash: runs the command in the sandbox', async (t) => {
  const c = await connect(t, ['--sandbox', sb, '--approve-cmd', 'true'])
  const r = await c.callTool({ name: 'bash', arguments: { command: 'echo mcp-$((6*7)); hostname >/dev/null' } })
  if (await placeholder(c, 'bash', r)) return t.skip('bash is still the placeholder')
  assert.equal(r.isError, false, text(r))
  assert.match(text(r), /mcp-42/)
  const f = await c.callTool({ name: 'bash', arguments: { command: 'exit 3' } })
  assertShape('bash exit 3', f)
  assert.match(JSON.stringify(f.structuredContent) + text(f), /3/, 'the exit status is reported')
})

test('write_file then read_file: the content comes back', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const w = await c.callTool({ name: 'write_file', arguments: { path: 'mcp-rw.txt', content: 'first line\nsecond line from mcp\n' } })
  if (await placeholder(c, 'write_file', w)) return t.skip('write_file is still the placeholder')
  assert.equal(w.isError, false, text(w))
  const r = await c.callTool({ name: 'read_file', arguments: { path: 'mcp-rw.txt' } })
  if (await placeholder(c, 'read_file', r)) return t.skip('read_file is still the placeholder')
  assert.equal(r.isError, false, text(r))
  assert.match(text(r), /first line/)
  assert.match(text(r), /second line from mcp/)
})

test('a tool error: isError with a code and a message (read_file of a missing file)', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const r = await c.callTool({ name: 'read_file', arguments: { path: 'no/such/file.txt' } })
  assertShape('read_file', r)
  assert.equal(r.isError, true)
  if (await placeholder(c, 'read_file', r)) return t.skip('read_file is still the placeholder')
  assert.notEqual(r.structuredContent.error, 'unimplemented')
  assert.match(text(r), /no\/such\/file\.txt|not found|no such/i)
})

test('an argument the tool does not have: a tool error naming it', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  const r = await c.callTool({ name: 'write_file', arguments: { path: 'x.txt', content: 'x', colour: 'blue' } })
  assertShape('write_file', r)
  if (await placeholder(c, 'write_file', r)) return t.skip('write_file is still the placeholder')
  assert.equal(r.isError, true)
  assert.match(text(r), /colour/)
})

test('an unknown tool: the SDK throws the JSON-RPC error -32602 naming the tools', async (t) => {
  const c = await connect(t, ['--sandbox', sb])
  await assert.rejects(c.callTool({ name: 'no_such_tool', arguments: {} }), (e) => {
    assert.equal(e.code, -32602, describe(e))
    assert.match(e.message, /unknown tool `no_such_tool`/)
    assert.match(e.message, /read_file/)
    return true
  })
})

// Raw stdio (no SDK): answers in order, a line that is not JSON gets -32700 and the
// server goes on, and at the end of its input it exits 0, its stdout only protocol.
test('raw stdio: a parse error, then end of input: exit 0', async () => {
  const p = spawn(cli, ['mcp', '--sandbox', sb], { stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  p.stdout.on('data', (d) => (out += d))
  p.stderr.on('data', (d) => (err += d))
  const msgs = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ]
  p.stdin.write(msgs.map((m) => JSON.stringify(m) + '\n').join(''))
  p.stdin.write('this is not json\n')
  p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) + '\n')
  p.stdin.end()
  const code = await new Promise((resolve) => p.on('close', resolve))
  assert.equal(code, 0, `exit status (stderr: ${err})`)
  const lines = out.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.length, 3, out)
  assert.equal(lines[0].id, 1)
  assert.equal(lines[0].result.protocolVersion, '2025-06-18', 'the client\'s version, supported, is answered')
  assert.equal(lines[1].error?.code, -32700)
  assert.equal(lines[1].id, null)
  assert.equal(lines[2].id, 2)
  assert.ok(Array.isArray(lines[2].result.tools))
})
