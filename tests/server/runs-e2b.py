#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A durable agent run on the `e2b` backend (issue 10: "if the sandbox died, the next tool
call ... reconnects by id (e2b)"), against `toren-sandbox serve` on loopback standing in for
E2B's cloud: `runs new` and `tool --run` with TOREN_SANDBOX=e2b; a paused sandbox is
resumed by the next call (same sandbox, files kept); a killed one is replaced by a new
sandbox, which the run records and its event log says; replays need no sandbox at all.

TAP on stdout. Env: TS_CLI (run by tests/live/modes.sh).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

cli = os.environ["TS_CLI"]
n = 0
failed = 0
tmp = tempfile.mkdtemp(prefix="ts-runs-e2b-")


def t(cond, desc):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


port, envd_port = free_port(), free_port()
log = open(os.path.join(tmp, "serve.log"), "w+")
serve = subprocess.Popen([cli, "serve", "--listen", f"127.0.0.1:{port}", "--envd-listen",
                          f"127.0.0.1:{envd_port}"], stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, TOREN_SANDBOX="local"))
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.05)
env = dict(os.environ, TOREN_SANDBOX="e2b", E2B_API_KEY="e2b_runs_test",
           E2B_API_URL=f"http://127.0.0.1:{port}", E2B_SANDBOX_URL=f"http://127.0.0.1:{envd_port}")
agent = os.path.join(tmp, "agent.yaml")
with open(agent, "w") as f:
    f.write("name: e2b-run\nsandbox:\n  approval: never\n")


def sh(*args, stdin=None):
    return subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=120,
                          input=stdin)


def tool(run, name, args, key=None):
    a = ["tool", "--agent", agent, "--run", run] + (["--call", key] if key else []) + \
        ["-", name, json.dumps(args)]
    p = sh(*a)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"stderr": p.stderr}


def api(method, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 headers={"X-API-Key": "e2b_runs_test"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def out(res):
    return re.sub(r"\n?\[exit code -?[0-9]+\]\s*$", "", res.get("text", ""))


def sandbox_of(run):
    p = sh("runs", "show", run)
    return json.loads(p.stdout)["sandbox"] if p.returncode == 0 else ""


sbs = set()
try:
    p = sh("runs", "new", "--agent", agent)
    run = p.stdout.strip()
    t(p.returncode == 0 and run.startswith("r"), f"runs new on the e2b backend ({run} {p.stderr[:200]})")
    sb = sandbox_of(run)
    sbs.add(sb)
    t(bool(sb), f"the run has a sandbox of serve's ({sb})")
    st, res = tool(run, "write_file", {"path": "kept.txt", "content": "kept\n"}, "w")
    t(st == 0 and not res.get("is_error"), f"write_file through the e2b backend ({res})")
    st, res = tool(run, "bash", {"command": "cat kept.txt"}, "b1")
    t(st == 0 and out(res).strip() == "kept", f"bash reads it ({res})")

    t(api("POST", f"/sandboxes/{sb}/pause") in (200, 204), "the sandbox is paused behind the run")
    st, res = tool(run, "bash", {"command": "cat kept.txt; echo after-pause"}, "b2")
    t(st == 0 and "after-pause" in out(res) and "kept" in out(res),
      f"the next call reconnects by id: the sandbox is resumed, its files kept ({res})")
    t(sandbox_of(run) == sb, "the run keeps its sandbox")

    t(api("DELETE", f"/sandboxes/{sb}") in (200, 204), "the sandbox is killed behind the run")
    st, res = tool(run, "bash", {"command": "echo rebuilt; test -e kept.txt && echo has-old"}, "b3")
    sb2 = sandbox_of(run)
    sbs.add(sb2)
    t(st == 0 and out(res).strip() == "rebuilt", f"the next call gets a new sandbox ({res})")
    t(sb2 and sb2 != sb, f"the run records it ({sb} -> {sb2})")
    ex = sh("runs", "export", run).stdout
    t('"rebuilt"' in ex, "the event log says the sandbox was replaced")
    st, res = tool(run, "bash", {"command": "cat kept.txt"}, "b1")
    t(st == 0 and res.get("call", {}).get("replayed") and out(res).strip() == "kept",
      "a completed call replays its recorded result without the sandbox's files")
    sh("runs", "finish", run)
finally:
    for s in sbs:
        if s:
            api("DELETE", f"/sandboxes/{s}")
    serve.terminate()
    try:
        serve.wait(timeout=30)
    except subprocess.TimeoutExpired:
        serve.kill()
    if failed:
        log.seek(0)
        for line in log.read().splitlines()[-30:]:
            print("# serve: " + line)
print(f"1..{n}")
sys.exit(1 if failed else 0)
