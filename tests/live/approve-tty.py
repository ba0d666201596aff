#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The terminal approver of `toren-sandbox tool` (issue 10, Approvals): a gated bash call
asks on the controlling terminal; `y` runs it, anything else denies it (a tool error), and
the command is shown with its control characters escaped so that an agent cannot drive
the terminal with escape sequences. The decision is in the run's event log.

TAP on stdout. Env: TS_CLI. The terminal is a pty this script owns.
"""
import json
import os
import pty
import select
import subprocess
import sys
import time

cli = os.environ["TS_CLI"]
n = 0
failed = 0


def t(cond, desc):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1


def read_until(fd, needle, timeout=30.0):
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end and needle not in buf:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


def tool_on_tty(argv, answer):
    """Run argv on a new pty (its controlling terminal); answer the prompt. Returns
    (prompt bytes, stdout+stderr after the answer, exit status)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    prompt = read_until(fd, b"allow? [y/N] ")
    os.write(fd, answer)
    rest = b""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            rest += chunk
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
    try:
        rest += os.read(fd, 65536)
    except OSError:
        pass
    os.close(fd)
    if not done:
        _, status = os.waitpid(pid, 0)
    return prompt, rest, os.waitstatus_to_exitcode(status)


def result_of(out):
    text = out.decode(errors="replace")
    i = text.find('{"is_error"')
    return json.loads(text[i:].splitlines()[0]) if i >= 0 else None


sb = subprocess.run([cli, "create"], capture_output=True, text=True, timeout=120).stdout.split()
sb = sb[-1] if sb else ""
t(bool(sb), "a sandbox to ask about")
run = subprocess.run([cli, "runs", "new", "--sandbox", sb], capture_output=True, text=True,
                     timeout=120).stdout.strip()
t(run.startswith("r"), f"a run on it ({run})")
try:
    prompt, out, st = tool_on_tty([cli, "tool", "--run", run, "-", "bash",
                                   json.dumps({"command": "echo approved-here"})], b"y\n")
    t(b"bash" in prompt and b"echo approved-here" in prompt,
      f"the terminal shows the tool and its command ({prompt[-200:]!r})")
    res = result_of(out)
    t(st == 0 and res and not res["is_error"] and "approved-here" in res["text"],
      f"`y`: the command runs ({st}, {out[-300:]!r})")

    prompt, out, st = tool_on_tty([cli, "tool", "--run", run, "-", "bash",
                                   json.dumps({"command": "echo must-not-run"})], b"n\n")
    res = result_of(out)
    t(st == 1 and res and res["is_error"] and res["data"]["error"] == "denied",
      f"`n`: a denial, as a tool error ({st}, {out[-300:]!r})")
    t(res and "must-not-run" not in res["text"].split("denied")[0], "the denied command did not run")

    evil = "echo hi \x1b[2J\x1b]0;owned\x07 \r done"
    prompt, out, st = tool_on_tty([cli, "tool", "--run", run, "-", "bash",
                                   json.dumps({"command": evil})], b"\n")
    t(b"\x1b[2J" not in prompt and b"\x1b]0;" not in prompt and b"\x07" not in prompt
      and b"\\x1b[2J" in prompt,
      f"escape sequences and control characters are shown escaped ({prompt[-200:]!r})")
    res = result_of(out)
    t(st == 1 and res and res["data"]["error"] == "denied", "an empty answer denies")

    ex = subprocess.run([cli, "runs", "export", run], capture_output=True, text=True, timeout=60)
    ev = [json.loads(l) for l in ex.stdout.splitlines()]
    ap = [e["data"] for e in ev if e.get("type") == "event" and e.get("event") == "approval"]
    t([a["allowed"] for a in ap] == [True, False, False] and all(a["approver"] == "terminal" for a in ap),
      f"the three decisions are in the event log ({ap})")
finally:
    subprocess.run([cli, "runs", "finish", run], capture_output=True, timeout=60)
    subprocess.run([cli, "rm", "-f", sb], capture_output=True, timeout=60)
print(f"1..{n}")
sys.exit(1 if failed else 0)
