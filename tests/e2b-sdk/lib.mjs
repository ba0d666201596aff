// SPDX-License-Identifier: Apache-2.0
// What the SDK test files share. The SDK is used unmodified: it finds serve through
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY, which run.sh sets.
import { Sandbox } from 'e2b'

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
  if (!process.env[v]) throw new Error(`${v} is not set: run these tests through run.sh`)
}

// A sandbox that is killed when the test ends (pass or fail).
export async function sandbox(t, opts = {}) {
  const sbx = await Sandbox.create({ timeoutMs: 300_000, ...opts })
  t.after(() => sbx.kill().catch(() => {}))
  return sbx
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// Polls fn until it returns a truthy value; throws with what it saw last on timeout (what
// may be a function, called then, to say more).
export async function waitFor(what, fn, timeoutMs = 10_000, everyMs = 100) {
  const end = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      last = await fn()
      if (last) return last
    } catch (e) {
      last = e
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what} (last: ${last instanceof Error ? `${last.name}: ${last.message}` : JSON.stringify(last)})`)
    await sleep(everyMs)
  }
}

// Whether pid is alive in the sandbox, asked of the sandbox's own kill(1) (as the default
// user: "Operation not permitted" still means the process exists).
export async function alive(sbx, pid) {
  const r = await sbx.commands.run(`kill -0 ${pid} 2>&1; echo "rc=$?"`)
  if (r.stdout.endsWith('rc=0\n')) return true
  if (/not permitted/i.test(r.stdout)) return true
  if (/no such process/i.test(r.stdout)) return false
  throw new Error(`kill -0 ${pid} said ${JSON.stringify(r.stdout)}`)
}

// The error a promise rejects with (fails the test if it resolves).
export async function rejection(promise) {
  let v
  try {
    v = await promise
  } catch (e) {
    return e
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(v)}`)
}

export const uniq = (prefix) => `${prefix}-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`

// "Name: message" of an error, for assertion messages that say what actually came back.
export const describe = (e) => (e instanceof Error ? `${e.constructor.name}: ${e.message}` : `not an error: ${JSON.stringify(e)}`)
