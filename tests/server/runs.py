#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent runner of `toren-sandbox serve`, live over raw HTTP on loopback: POST /v1/runs
(an agent configuration as JSON and as YAML, the keys refused over HTTP), tool calls of a
run (bash approved and denied through the HTTP approval queue by a concurrent POST
/v1/approvals/ID, a tool error, write_file and read_file), call_id replays (a replayed bash
asks no approval and gives the recorded output) and divergence (409), GET .../events (JSON,
JSON Lines, since), a tool call without a run, the scopes (a reader reads and cannot run,
the agent's own token cannot approve), serve answering other requests while a call waits
for approval and while `sleep 3` runs, the per-run queue's bound (429), a client that leaves
mid-call (the call still completes into the log), a finished run (409), a run resumed by a
second serve from its recorded configuration, and SIGTERM with an approval pending (serve
exits promptly, the waiting client gets 503).

TAP on stdout. Env (modes.sh): TS_CLI, TS_MODE, TOREN_SANDBOX_ROOT; TS_TESTS_MUST_WORK=1
makes a serve or sandbox that cannot start a failure instead of a skip.
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

cli = os.environ["TS_CLI"]
mode = os.environ.get("TS_MODE", "root")
must_work = os.environ.get("TS_TESTS_MUST_WORK") == "1"
n = 0
failed = 0
tmp = tempfile.mkdtemp(prefix="ts-runs-")
procs = []
sandboxes = set()
runs = set()


def t(cond, desc):
    global n, failed
    n += 1
    desc = " ".join(str(desc).split()).replace("#", "%23")
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def diag(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


def finish(code=None):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for r in runs:
        subprocess.run([cli, "runs", "finish", r], capture_output=True, timeout=60)
    for sb in sandboxes:
        subprocess.run([cli, "rm", "-f", sb], capture_output=True, timeout=120)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{n}", flush=True)
    sys.exit(code if code is not None else (1 if failed else 0))


def bail(why):
    if must_work:
        t(False, f"{why} (TS_TESTS_MUST_WORK=1)")
        finish(1)
    if n == 0:
        print(f"1..0 # SKIP {why}", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(0)
    t(False, why)
    finish(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def secret_line(name, secret, scopes):
    return f"{name} sha256:{hashlib.sha256(secret.encode()).hexdigest()} {scopes}\n"


FULL = "e2b_" + "1" * 64    # everything but approvals: what an agent holds
READER = "e2b_" + "2" * 64  # sandboxes:read
HUMAN = "e2b_" + "3" * 64   # approvals only: the human who decides
tokens_file = os.path.join(tmp, "tokens")
with open(tokens_file, "w") as f:
    f.write(secret_line("agent", FULL, "sandboxes:read,sandboxes:run,files:read,files:write"))
    f.write(secret_line("reader", READER, "sandboxes:read"))
    f.write(secret_line("human", HUMAN, "approvals"))
os.chmod(tokens_file, 0o600)

port = envd_port = 0


def start_serve():
    global port, envd_port
    port, envd_port = free_port(), free_port()
    args = [cli, "serve", "--listen", f"127.0.0.1:{port}", "--envd-listen",
            f"127.0.0.1:{envd_port}", "--tokens-file", tokens_file]
    log = open(os.path.join(tmp, f"serve-{len(procs)}.log"), "w+")
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    p.log = log
    for _ in range(200):
        if p.poll() is not None:
            return p
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    return p


def log_of(p):
    p.log.flush()
    p.log.seek(0)
    return p.log.read()


def req(method, path, body=None, token=FULL, headers=None, raw=None, timeout=120, to_port=None):
    c = http.client.HTTPConnection("127.0.0.1", to_port or port, timeout=timeout)
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, out
    finally:
        c.close()


def jreq(*a, **kw):
    st, h, b = req(*a, **kw)
    try:
        return st, h, json.loads(b) if b else None
    except ValueError:
        return st, h, {"_raw": b[:200]}


def is_error(j, code):
    return (isinstance(j, dict) and isinstance(j.get("error"), dict) and
            j["error"].get("code") == code and isinstance(j["error"].get("message"), str))


class Call(threading.Thread):
    """A tool call in the background: it may wait for an approval."""

    def __init__(self, path, body, token=FULL):
        super().__init__(daemon=True)
        self.path, self.body, self.token = path, body, token
        self.status = self.j = self.error = None
        self.start()

    def run(self):
        try:
            self.status, _, self.j = jreq("POST", self.path, body=self.body, token=self.token,
                                          timeout=300)
        except Exception as e:  # the connection dropped (serve stopped)
            self.error = e

    def result(self, timeout=120):
        self.join(timeout)
        return self.status, self.j


def pending(pred=lambda a: True, timeout=60):
    """The first pending approval matching pred, waited for."""
    end = time.time() + timeout
    while time.time() < end:
        st, _, j = jreq("GET", "/v1/approvals", token=HUMAN)
        if st == 200:
            for a in j.get("approvals", []):
                if pred(a):
                    return a
        time.sleep(0.05)
    return None


def decide(aid, approve, reason=None, token=HUMAN):
    body = {"approve": approve}
    if reason is not None:
        body["reason"] = reason
    return jreq("POST", f"/v1/approvals/{aid}", body=body, token=token)


serve = start_serve()
if serve.poll() is not None:
    diag(log_of(serve))
    bail("serve did not start")

# --- POST /v1/runs: what it refuses ------------------------------------------------------
st, _, j = jreq("POST", "/v1/runs", body={}, token=None)
t(st == 401 and is_error(j, "unauthenticated"), f"POST /v1/runs without a token: 401 ({st})")
st, _, j = jreq("POST", "/v1/runs", body={}, token=READER)
t(st == 403 and is_error(j, "permission_denied") and "sandboxes:run" in j["error"]["message"],
  f"sandboxes:read cannot begin a run: 403 naming the scope ({st})")
st, _, j = jreq("POST", "/v1/runs", body={"agnet": {}})
t(st == 400 and is_error(j, "invalid_argument") and "agnet" in j["error"]["message"],
  f"an unknown member: 400 naming it ({st} {j})")
st, _, j = jreq("POST", "/v1/runs", body={"agent": "builder"})
t(st == 400 and is_error(j, "invalid_argument"), f"`agent` not an object: 400 ({st})")
st, _, j = jreq("POST", "/v1/runs", body={"agent": {}, "agent_yaml": "name: x\n"})
t(st == 400 and is_error(j, "invalid_argument"), f"both `agent` and `agent_yaml`: 400 ({st})")
st, _, j = jreq("POST", "/v1/runs", body={"agent": {"sandbox": {"imgae": "host"}}})
t(st == 400 and is_error(j, "invalid_argument") and "imgae" in j["error"]["message"] and
  "/tmp" not in j["error"]["message"],
  f"an unknown key of the configuration: 400 naming it, not a temporary file ({st} {j})")
st, _, j = jreq("POST", "/v1/runs", body={"agent_yaml": "sandbox:\n  approval: sometimes\n"})
t(st == 400 and is_error(j, "invalid_argument") and "agent_yaml" in j["error"]["message"],
  f"a bad value in agent_yaml: 400 naming agent_yaml ({st} {j})")
for key, val in (("env", ["HOME"]), ("policy", "/etc/passwd"),
                 ("channel", {"outbox": "/tmp"}), ("channel", {"webhook": "http://127.0.0.1:9/"})):
    st, _, j = jreq("POST", "/v1/runs", body={"agent": {"sandbox": {key: val}}})
    t(st == 400 and is_error(j, "invalid_argument") and f"sandbox.{key}" in j["error"]["message"],
      f"`sandbox.{key}` reaches serve's host: refused over HTTP ({st} {j})")
st, _, j = jreq("POST", "/v1/runs", body={"agent": {"sandbox": False}})
t(st == 400 and is_error(j, "invalid_argument"), f"`sandbox: false`: 400 ({st})")
st, _, j = jreq("POST", "/v1/runs", body={"agent": {"sandbox": True}, "sandbox": "nosuchsandbox0"})
t(st == 404 and is_error(j, "not_found"), f"a sandbox that does not exist: 404 ({st} {j})")

# --- a run that asks before bash ------------------------------------------------------------
st, _, run = jreq("POST", "/v1/runs",
                  body={"agent": {"name": "srv-test", "sandbox": {"approval": "always"}}},
                  timeout=300)
if st != 201:
    diag(f"{st} {run}")
    diag(log_of(serve)[-3000:])
    bail(f"cannot begin a run through POST /v1/runs ({st})")
R, SB = run.get("run", ""), run.get("sandbox", "")
runs.add(R)
sandboxes.add(SB)
names = {x.get("name") for x in run.get("tools", [])}
t(R.startswith("r") and SB and {"bash", "read_file", "write_file", "edit_file"} <= names and
  all("inputSchema" in x for x in run["tools"]),
  f"POST /v1/runs: 201 with the run, its sandbox and the tool schemas ({R} {SB} {sorted(names)})")
T = f"/v1/runs/{R}/tools"

# bash waits for a human; serve answers others meanwhile
c = Call(f"{T}/bash", {"arguments": {"command": "echo approved-$((6*7))"}})
a = pending(lambda a: a.get("run") == R and a.get("tool") == "bash")
t(a and a.get("summary") == "echo approved-$((6*7))" and
  a.get("args") == {"command": "echo approved-$((6*7))"} and a.get("call") == 0 and
  a["id"].startswith("ap_") and isinstance(a.get("created_ms"), int),
  f"the bash call waits in GET /v1/approvals: run, call, tool, summary, args ({a})")
t0 = time.time()
st_h, _, _ = req("GET", "/health", token=None, headers={"E2b-Sandbox-Id": SB}, to_port=envd_port)
st_a, _, _ = jreq("GET", "/v1/approvals", token=HUMAN)
st_s, _, _ = jreq("GET", f"/v1/sandboxes/{SB}", token=READER)
t(st_h == 204 and st_a == 200 and st_s == 200 and time.time() - t0 < 5 and c.is_alive(),
  f"while it waits serve answers envd /health, GET /v1/approvals and GET /v1/sandboxes/ID "
  f"({st_h} {st_a} {st_s}, {time.time() - t0:.2f} s)")
st, _, j = jreq("GET", "/v1/approvals", token=FULL)
st2, _, j2 = decide(a["id"] if a else "x", True, token=FULL)
t(st == 403 and st2 == 403 and c.is_alive(),
  f"the agent's own token (sandboxes:run) can neither list nor decide approvals ({st}, {st2})")
st, _, j = decide(a["id"] if a else "x", "yes")
t(st == 400 and is_error(j, "invalid_argument"), f"`approve` not a boolean: 400 ({st})")
st, _, j = decide(a["id"] if a else "x", True, reason="looks fine")
st_c, res = c.result()
t(st == 200 and j.get("approve") is True and st_c == 200 and res.get("is_error") is False and
  "approved-42" in res.get("text", "") and res.get("call") == {"index": 0, "replayed": False,
                                                               "attempt": 1},
  f"approved by POST /v1/approvals/ID: the call runs and answers ({st} {st_c} {res})")
st, _, j = decide(a["id"] if a else "x", False)
t(st == 409 and is_error(j, "already_decided"), f"deciding it again: 409 already_decided ({st})")
st, _, j = decide("ap_0000000000000000", True)
t(st == 404 and is_error(j, "not_found"), f"an unknown approval: 404 ({st})")

c = Call(f"{T}/bash", {"arguments": {"command": "touch /home/user/denied-ran"}})
a = pending(lambda a: a.get("run") == R and "denied-ran" in a.get("summary", ""))
st, _, _ = decide(a["id"] if a else "x", False, reason="not today")
st_c, res = c.result()
t(st == 200 and st_c == 200 and res.get("is_error") is True and "denied" in res.get("text", "") and
  "not today" in res.get("text", ""),
  f"denied: a tool error saying so, with the reason ({st_c} {res.get('text')!r})")

# files, a tool error
st, _, res = jreq("POST", f"{T}/write_file", body={"arguments": {"path": "notes/hello.txt",
                                                                  "content": "hi there\n"}})
t(st == 200 and res.get("is_error") is False, f"write_file needs no approval by default ({st} {res})")
st, _, res = jreq("POST", f"{T}/read_file", body={"arguments": {"path": "notes/hello.txt"}},
                  token=READER)
t(st == 200 and res.get("is_error") is False and "hi there" in res.get("text", ""),
  f"read_file with a sandboxes:read token gives it back ({st} {res.get('text')!r})")
st, _, res = jreq("POST", f"{T}/read_file", body={"arguments": {"path": "no/such/file"}})
t(st == 200 and res.get("is_error") is True and isinstance(res.get("data"), dict) and
  res["data"].get("error"), f"a missing file: 200 with a tool error ({res})")
st, _, res = jreq("POST", f"{T}/read_file", body={"arguments": {"path": "x", "bogus": 1}})
t(st == 200 and res.get("is_error") is True and "bogus" in res.get("text", ""),
  f"an argument the tool does not have: a tool error naming it ({res.get('text')!r})")
st, _, j = jreq("POST", f"{T}/write_file", body={"arguments": {"path": "r.txt", "content": "x"}},
                token=READER)
st2, _, j2 = jreq("POST", f"{T}/bash", body={"arguments": {"command": "true"}}, token=READER)
t(st == 403 and st2 == 403 and is_error(j, "permission_denied"),
  f"sandboxes:read can neither write a file nor run bash ({st}, {st2})")
st, _, j = jreq("POST", f"{T}/read_file", body={"path": "notes/hello.txt"})
t(st == 400 and is_error(j, "invalid_argument") and "arguments" in j["error"]["message"],
  f"arguments outside `arguments`: 400 saying where they go ({st} {j})")
st, _, j = jreq("POST", f"{T}/read_file", body={"arguments": ["x"]})
t(st == 400 and is_error(j, "invalid_argument"), f"`arguments` not an object: 400 ({st})")
st, _, j = jreq("POST", f"{T}/Bash!", body={})
t(st == 400 and is_error(j, "invalid_argument"), f"a malformed tool name: 400 ({st})")
st, _, res = jreq("POST", f"{T}/no_such_tool", body={})
t(st == 200 and res.get("is_error") is True and res.get("call", {}).get("index", 0) is None,
  f"an unknown tool: a tool error, recorded nowhere (index null) ({st} {res})")

# call_id: replay without executing (no approval asked), divergence
c = Call(f"{T}/bash", {"arguments": {"command": "date +%s%N"}, "call_id": "clock-1"})
a = pending(lambda a: a.get("run") == R and a.get("summary") == "date +%s%N")
decide(a["id"] if a else "x", True)
st1, first = c.result()
st2, _, again = jreq("POST", f"{T}/bash", body={"arguments": {"command": "date +%s%N"},
                                                "call_id": "clock-1"}, timeout=20)
t(st1 == 200 and st2 == 200 and again.get("call", {}).get("replayed") is True and
  again.get("text") == first.get("text") and
  again["call"].get("index") == first.get("call", {}).get("index"),
  f"the same call_id again: replayed, the recorded output, asked nobody ({first.get('call')} "
  f"{again.get('call')})")
st, _, j = jreq("POST", f"{T}/bash", body={"arguments": {"command": "date"}, "call_id": "clock-1"})
t(st == 409 and is_error(j, "diverged") and "clock-1" in j["error"]["message"] + json.dumps(j),
  f"the same call_id with other arguments: 409 diverged ({st} {j})")
st, _, j = jreq("POST", f"{T}/bash", body={"arguments": {}, "call_id": "bad\nid"})
t(st == 400 and is_error(j, "invalid_argument"), f"a call_id with a control character: 400 ({st})")

# --- events -------------------------------------------------------------------------------------
st, h, ev = jreq("GET", f"/v1/runs/{R}/events", token=READER)
calls = [e for e in ev if e.get("type") == "call"] if isinstance(ev, list) else []
approvals = [e for e in ev if e.get("type") == "event" and e.get("event") == "approval"] \
    if isinstance(ev, list) else []
t(st == 200 and h.get("content-type", "").startswith("application/json") and len(calls) == 7 and
  calls[0].get("index") == 0 and calls[0].get("tool") == "bash" and
  calls[0].get("args") == {"command": "echo approved-$((6*7))"} and calls[0].get("completed") and
  "approved-42" in json.dumps(calls[0].get("result")) and len(approvals) >= 3,
  f"GET /v1/runs/R/events: the calls with args and results, the approval decisions "
  f"({st}, {len(calls)} calls, {len(approvals)} approvals)")
t([e.get("allowed") for e in [a.get("data", {}) for a in approvals[:2]]] == [True, False],
  f"the log says who allowed and who denied ({[a.get('data') for a in approvals[:2]]})")
st, h, body = req("GET", f"/v1/runs/{R}/events?format=jsonl&since=2", token=READER)
lines = [json.loads(x) for x in body.decode().splitlines() if x.strip()] if st == 200 else []
t(st == 200 and h.get("content-type", "").startswith("application/x-ndjson") and lines and
  all(x.get("index", 99) >= 2 for x in lines if x.get("type") == "call") and
  all((x.get("call") or 99) >= 2 for x in lines if x.get("type") == "event") and
  lines[0].get("type") == "call" and lines[0].get("index") == 2,
  f"?format=jsonl&since=2: JSON Lines from call 2 ({st}, {len(lines)} lines)")
st, h, ev = jreq("GET", f"/v1/runs/{R}/events?limit=1", token=READER)
t(st == 200 and [e.get("index") for e in ev if e.get("type") == "call"] == [0] and
  h.get("x-next-since") == "1", f"?limit=1: one call, X-Next-Since 1 ({h.get('x-next-since')})")
st, _, j = jreq("GET", f"/v1/runs/{R}/events?since=x")
t(st == 400 and is_error(j, "invalid_argument"), f"a bad since: 400 ({st})")
st, _, j = jreq("GET", "/v1/runs/r000000000000000/events")
st2, _, j2 = jreq("POST", "/v1/runs/r000000000000000/tools/bash", body={})
t(st == 404 and st2 == 404 and is_error(j, "not_found") and is_error(j2, "not_found"),
  f"an unknown run: 404 for its events and its tools ({st}, {st2})")
st, _, j = jreq("GET", f"/v1/runs/{R}/events", token="e2b_wrong")
t(st == 401, f"events with a wrong token: 401 ({st})")

# --- a tool call without a run --------------------------------------------------------------------
S = f"/v1/sandboxes/{SB}/tools"
st, _, res = jreq("POST", f"{S}/read_file", body={"arguments": {"path": "notes/hello.txt"}},
                  token=READER)
t(st == 200 and "hi there" in res.get("text", "") and res.get("call") is None,
  f"POST /v1/sandboxes/ID/tools/read_file: the sandbox's file, no run ({st} {res.get('call')})")
st, _, j = jreq("POST", f"{S}/read_file", body={"arguments": {"path": "x"}, "call_id": "k"})
t(st == 400 and is_error(j, "invalid_argument"), f"a call_id without a run: 400 ({st})")
st, _, j = jreq("POST", "/v1/sandboxes/nosuchsandbox0/tools/read_file", body={})
t(st == 404 and is_error(j, "not_found"), f"an unknown sandbox: 404 ({st})")
c = Call(f"{S}/bash", {"arguments": {"command": "echo without-a-run"}})
a = pending(lambda a: a.get("summary") == "echo without-a-run")
t(a and a.get("run") is None and a.get("call") is None,
  f"bash without a run waits for approval too, with no run ({a})")
decide(a["id"] if a else "x", True)
st, res = c.result()
t(st == 200 and "without-a-run" in res.get("text", ""), f"and runs once approved ({st} {res})")

# --- a run that never asks: serve stays responsive while bash runs ------------------------------
st, _, run2 = jreq("POST", "/v1/runs", body={"agent_yaml": "name: free\nsandbox:\n  approval: never\n",
                                              "sandbox": SB})
R2 = (run2 or {}).get("run", "")
runs.add(R2)
t(st == 201 and R2 and run2.get("sandbox") == SB,
  f"agent_yaml, in an existing sandbox: 201 ({st} {run2})")
c = Call(f"/v1/runs/{R2}/tools/bash", {"arguments": {"command": "sleep 3; echo slept"}})
time.sleep(0.5)
t0 = time.time()
ok_all = True
for _ in range(5):
    st_a, _, _ = jreq("GET", "/v1/approvals", token=HUMAN)
    st_h, _, _ = req("GET", "/health", token=None, headers={"E2b-Sandbox-Id": SB}, to_port=envd_port)
    ok_all = ok_all and st_a == 200 and st_h == 204
took = time.time() - t0
alive = c.is_alive()
st, res = c.result()
t(ok_all and took < 2 and alive and st == 200 and "slept" in res.get("text", ""),
  f"while `sleep 3` runs, 10 other requests are answered in {took:.2f} s; then it ends ({st})")

# --- the bound of a run's queue -------------------------------------------------------------------
blockers = [Call(f"{T}/bash", {"arguments": {"command": f"echo q{i}"}}) for i in range(64)]
pending(lambda a: a.get("run") == R and a.get("summary") == "echo q0")
time.sleep(1)
st, _, j = jreq("POST", f"{T}/read_file", body={"arguments": {"path": "notes/hello.txt"}})
t(st == 429 and is_error(j, "resource_exhausted"), f"a 65th call queued on one run: 429 ({st} {j})")
st2, _, res2 = jreq("POST", f"/v1/runs/{R2}/tools/read_file",
                    body={"arguments": {"path": "notes/hello.txt"}})
t(st2 == 200 and "hi there" in res2.get("text", ""),
  f"meanwhile another run's calls go on ({st2})")
end = time.time() + 120
while any(b.is_alive() for b in blockers) and time.time() < end:
    a = pending(lambda a: a.get("run") == R, timeout=5)
    if a:
        decide(a["id"], False, reason="drain")
t(all(b.status == 200 and b.j.get("is_error") is True for b in blockers),
  "the 64 queued calls are answered in turn, each when decided")

# --- a client that leaves mid-call ------------------------------------------------------------------
s = socket.create_connection(("127.0.0.1", port))
payload = json.dumps({"arguments": {"command": "echo left-behind"}, "call_id": "gone-1"}).encode()
s.sendall(f"POST {T}/bash HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {FULL}\r\n"
          f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
a = pending(lambda a: a.get("summary") == "echo left-behind")
s.close()
st, _, _ = decide(a["id"] if a else "x", True)
time.sleep(1)
st2, _, again = jreq("POST", f"{T}/bash", body={"arguments": {"command": "echo left-behind"},
                                                "call_id": "gone-1"}, timeout=20)
st3, _, _ = jreq("GET", "/v1/approvals", token=HUMAN)
t(st == 200 and st2 == 200 and again.get("call", {}).get("replayed") is True and
  "left-behind" in again.get("text", "") and st3 == 200 and serve.poll() is None,
  f"a client that left mid-call: the call completed into the log (replayed now), serve goes on "
  f"({again.get('call')})")

# --- a finished run ------------------------------------------------------------------------------
p = subprocess.run([cli, "runs", "finish", R2], capture_output=True, text=True, timeout=60)
st, _, j = jreq("POST", f"/v1/runs/{R2}/tools/read_file", body={"arguments": {"path": "x"}})
t(p.returncode == 0 and st == 409 and is_error(j, "run_finished"),
  f"a finished run: 409 run_finished ({st} {j})")

# --- SIGTERM with an approval pending --------------------------------------------------------------
c = Call(f"{T}/bash", {"arguments": {"command": "echo never-approved"}, "call_id": "term-1"})
a = pending(lambda a: a.get("summary") == "echo never-approved")
t0 = time.time()
serve.send_signal(signal.SIGTERM)
try:
    serve.wait(20)
except subprocess.TimeoutExpired:
    pass
took = time.time() - t0
c.join(20)
t(a is not None and serve.poll() == 0 and took < 10,
  f"SIGTERM with an approval pending: serve exits 0 within {took:.2f} s ({serve.poll()})")
t(not c.is_alive() and (c.status == 503 or c.error is not None),
  f"and the waiting client is answered 503 or let go ({c.status} {c.j} {c.error})")
if serve.poll() is None:
    serve.kill()
    serve.wait()

# --- a second serve resumes the run from its record --------------------------------------------------
serve = start_serve()
st, _, res = jreq("POST", f"{T}/read_file", body={"arguments": {"path": "notes/hello.txt"}})
t(st == 200 and "hi there" in res.get("text", ""),
  f"a second serve resumes the run: read_file works ({st} {res.get('text')!r})")
c = Call(f"{T}/bash", {"arguments": {"command": "echo never-approved"}, "call_id": "term-1"})
a = pending(lambda a: a.get("summary") == "echo never-approved")
t(a is not None and a.get("run") == R,
  "its recorded configuration still gates bash: the call cut by SIGTERM asks again")
decide(a["id"] if a else "x", True)
st, res = c.result()
t(st == 200 and "never-approved" in res.get("text", "") and
  res.get("call", {}).get("attempt", 0) >= 2,
  f"and, approved, executes again: its second attempt ({res.get('call')})")
# SIGTERM while a call runs: it gets its bound (5 s), then is abandoned; serve does not hang
c = Call(f"{T}/bash", {"arguments": {"command": "sleep 30; echo late"}, "call_id": "long-1"})
a = pending(lambda a: a.get("summary") == "sleep 30; echo late")
decide(a["id"] if a else "x", True)
time.sleep(1)
t0 = time.time()
serve.send_signal(signal.SIGTERM)
try:
    serve.wait(30)
except subprocess.TimeoutExpired:
    pass
took = time.time() - t0
c.join(20)
t(a is not None and serve.poll() == 0 and 4 < took < 15,
  f"SIGTERM while bash runs: serve waits its bound, abandons it and exits 0 in {took:.2f} s "
  f"(exit {serve.poll()})")
t(not c.is_alive() and (c.status == 503 or c.error is not None),
  f"and that client is answered 503 or let go ({c.status} {c.error})")
if serve.poll() != 0:
    diag(log_of(serve)[-3000:])
finish()
