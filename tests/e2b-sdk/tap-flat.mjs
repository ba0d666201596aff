// SPDX-License-Identifier: Apache-2.0
// Runs `node --test` (argv after this script) and turns its nested TAP into the flat TAP
// meson's 'tap' protocol reads: one line per leaf test, numbered in order, skips kept as
// `# SKIP`, failure details as comments, and the plan last. A parent that failed while
// all its subtests passed (a hook, a file that did not load) becomes a failure of its own,
// and so does a run that exits non-zero without any failing test.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const [cmd, ...args] = process.argv.slice(2)
if (!cmd) {
  console.error('usage: node tap-flat.mjs NODE --test ... FILES')
  process.exit(2)
}

let n = 0
let failed = 0
const names = [] // "# Subtest:" names by level
const hadChild = [] // a test line was seen at this level since the last line one level up
const childFailed = []
let yaml = null // { indent, show } while inside a YAML diagnostic block

const out = (s) => process.stdout.write(s + '\n')
const short = (s) => s.replace(/^.*\/([^/]+\.test\.mjs)$/, '$1')

function testLine(level, notOk, desc) {
  let directive = ''
  const d = desc.match(/^(.*?)(?<!\\) # ((?:SKIP|TODO)\b.*)$/i)
  if (d) [desc, directive] = [d[1], d[2]]
  const isParent = !!hadChild[level + 1]
  const anyChildFailed = !!childFailed[level + 1]
  hadChild.length = level + 1
  childFailed.length = level + 1
  hadChild[level] = true
  if (notOk && !/^TODO/i.test(directive)) childFailed[level] = true
  const path = [...names.slice(0, level).filter(Boolean).map(short), short(desc)].join(' > ')
  names.length = level
  if (isParent && !(notOk && !anyChildFailed)) return false
  n++
  const label = isParent ? `${path} (outside its subtests)` : path
  if (notOk) failed++
  out(`${notOk ? 'not ok' : 'ok'} ${n} - ${label}${directive ? ' # ' + directive : ''}`)
  return notOk
}

const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
createInterface({ input: child.stderr }).on('line', (l) => out(`# stderr: ${l}`))
const rl = createInterface({ input: child.stdout })
rl.on('line', (line) => {
  const indent = line.match(/^ */)[0].length
  const body = line.slice(indent)
  if (yaml) {
    if (indent === yaml.indent && body === '...') yaml = null
    else if (yaml.show) out(`#   ${line.slice(yaml.indent)}`)
    return
  }
  if (body === '---') {
    yaml = { indent, show: yaml === null && lastFailed }
    lastFailed = false
    return
  }
  lastFailed = false
  const level = Math.floor(indent / 4)
  const sub = body.match(/^# Subtest: (.*)$/)
  if (sub) {
    names[level] = sub[1]
    names.length = level + 1
    return
  }
  const t = body.match(/^(not ok|ok)\b(?: \d+)?(?: - )?(.*)$/)
  if (t) {
    lastFailed = testLine(level, t[1] === 'not ok', t[2])
    return
  }
  if (/^TAP version|^\d+\.\.\d+/.test(body)) return
  if (/^Bail out!/.test(body)) return out(body)
  out(body.startsWith('#') ? `${' '.repeat(0)}${body}` : `# ${line}`)
})
let lastFailed = false
child.on('close', (code, signal) => {
  if ((code !== 0 || signal) && failed === 0) {
    n++
    failed++
    out(`not ok ${n} - node --test exited with ${signal ?? `status ${code}`} without a failing test`)
  }
  if (n === 0) {
    n++
    failed++
    out(`not ok ${n} - node --test ran no tests`)
  }
  out(`1..${n}`)
  process.exitCode = failed ? 1 : 0
})
