// SPDX-License-Identifier: Apache-2.0
// What the MCP test files share: the official SDK's client (unmodified) spawning
// `toren-sandbox mcp` (TS_CLI, set by run.sh) over stdio, and sandboxes made with the CLI
// that are removed when the test ends.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export const cli = process.env.TS_CLI
if (!cli) throw new Error('TS_CLI is not set: run these tests through run.sh')

const run = promisify(execFile)

// `toren-sandbox ARGS...`: its stdout, trimmed (throws with its stderr on failure).
export async function ts(...args) {
  try {
    const { stdout } = await run(cli, args, { timeout: 120_000 })
    return stdout.trim()
  } catch (e) {
    throw new Error(`toren-sandbox ${args.join(' ')}: ${e.stderr || e.message}`)
  }
}

// A durable sandbox; removeSandbox removes it with its workspace (a file's after hook).
export async function sandbox() {
  return (await ts('create', '--ttl', '10m')).split('\n').pop()
}
export const removeSandbox = (id) => (id ? ts('rm', '-f', '--purge', id).catch(() => {}) : undefined)

// A connected SDK client of `toren-sandbox mcp ARGS...`; closed after ctx. elicit: the
// handler of elicitation/create requests (its presence declares the capability); every
// request it got is kept in client.elicitations. client.stderr() is what the server said.
export async function connect(ctx, args, { elicit } = {}) {
  const transport = new StdioClientTransport({
    command: cli,
    args: ['mcp', ...args],
    env: { ...process.env },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr.on('data', (d) => {
    stderr += d
  })
  const client = new Client(
    { name: 'toren-sandbox-tests', version: '1.0.0' },
    { capabilities: elicit ? { elicitation: {} } : {} },
  )
  client.elicitations = []
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      client.elicitations.push(req.params)
      return elicit(req.params)
    })
  }
  client.stderr = () => stderr
  ctx.after(() => client.close().catch(() => {}))
  try {
    await client.connect(transport)
  } catch (e) {
    throw new Error(`connect to \`toren-sandbox mcp ${args.join(' ')}\`: ${e.message}; its stderr: ${stderr}`)
  }
  return client
}

// A tool of the placeholder toolkit (not implemented yet) says so with this code: its
// concrete behaviour is then a skip, never a pass.
export const unimplemented = (r) => r?.structuredContent?.error === 'unimplemented'

export const text = (r) => r.content?.[0]?.text ?? ''

// "Name: message" of an error, for assertion messages that say what actually came back.
export const describe = (e) => (e instanceof Error ? `${e.constructor.name}: ${e.message}` : `not an error: ${JSON.stringify(e)}`)
