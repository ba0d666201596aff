#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""/v1 REST of `toren-sandbox serve`, live, over raw HTTP on loopback: every route of
/v1/openapi.json probed (and nothing else answering), sandboxes created, listed, read and
deleted, commands with a JSON result and as an ndjson stream (proved to stream: the
command waits for a file the test writes after the first event), stdin, kill, files up
and down, and the errors: a wrong token 401, a missing scope 403 (a files:write token
cannot run), malformed JSON 400, an unknown id 404, an oversized body 413, and serve
refusing a non-loopback address without tokens.

TAP on stdout. Env (modes.sh): TS_CLI, TS_MODE, TOREN_SANDBOX_ROOT; TS_TESTS_MUST_WORK=1
makes a serve or sandbox that cannot start a failure instead of a skip.
"""
import base64
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
import time

cli = os.environ["TS_CLI"]
mode = os.environ.get("TS_MODE", "root")
must_work = os.environ.get("TS_TESTS_MUST_WORK") == "1"
n = 0
failed = 0
tmp = tempfile.mkdtemp(prefix="ts-v1-")
procs = []


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
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
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


def secret_line(name, secret, scopes, e2b_key=None):
    line = f"{name} sha256:{hashlib.sha256(secret.encode()).hexdigest()} {scopes}"
    if e2b_key:
        line += f" e2b-key-sha256:{hashlib.sha256(e2b_key.encode()).hexdigest()}"
    return line + "\n"


FULL = "e2b_" + "1" * 64
READER = "e2b_" + "2" * 64
FILES = "e2b_" + "3" * 64  # files:read,files:write: may touch files, never run
E2B_KEY = "e2b_" + "0" * 40  # the SDKs' dummy key, mapped to the full token
tokens_file = os.path.join(tmp, "tokens")
with open(tokens_file, "w") as f:
    f.write("# /v1 test tokens\n")
    f.write(secret_line("full", FULL, "sandboxes:read,sandboxes:run,files:read,files:write",
                        E2B_KEY))
    f.write(secret_line("reader", READER, "sandboxes:read"))
    f.write(secret_line("files", FILES, "files:read,files:write"))
os.chmod(tokens_file, 0o600)


envds = []  # where each serve started by start_serve has envd


def start_serve(listen, tokens=True, wait=True, env=None):
    envd = f"127.0.0.1:{free_port()}"
    args = [cli, "serve", "--listen", listen, "--envd-listen", envd]
    envds.append(envd)
    if tokens:
        args += ["--tokens-file", tokens_file]
    log = open(os.path.join(tmp, f"serve-{len(procs)}.log"), "w+")
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **(env or {})))
    procs.append(p)
    p.log = log
    if not wait:
        return p
    host, port = listen.rsplit(":", 1)
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    for _ in range(200):
        if p.poll() is not None:
            return p
        try:
            socket.create_connection((host, int(port)), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    return p


def log_of(p):
    p.log.flush()
    p.log.seek(0)
    return p.log.read()


# a token made by the CLI: its secret printed once, only its hash in the file
p = subprocess.run([cli, "serve", "--add-token", "cli-made", "--scopes", "sandboxes:read",
                    "--tokens-file", tokens_file], capture_output=True, text=True, timeout=30)
CLI_TOKEN = p.stdout.strip()
with open(tokens_file) as f:
    stored = f.read()
t(p.returncode == 0 and CLI_TOKEN.startswith("e2b_") and len(CLI_TOKEN) == 68 and
  CLI_TOKEN not in stored and hashlib.sha256(CLI_TOKEN.encode()).hexdigest() in stored and
  CLI_TOKEN not in p.stderr,
  f"serve --add-token prints a secret once and stores its hash ({p.returncode} {p.stderr.strip()})")
p = subprocess.run([cli, "serve", "--add-token", "cli-made", "--scopes", "sandboxes:read",
                    "--tokens-file", tokens_file], capture_output=True, text=True, timeout=30)
t(p.returncode != 0 and "exists" in p.stderr, "a name taken is refused")
p = subprocess.run([cli, "serve", "--add-token", "x", "--scopes", "sandboxes:all",
                    "--tokens-file", tokens_file], capture_output=True, text=True, timeout=30)
t(p.returncode != 0 and "scope" in p.stderr and open(tokens_file).read() == stored,
  "an unknown scope is refused and the file is unchanged")

port = free_port()
serve = start_serve(f"127.0.0.1:{port}")
if serve.poll() is not None:
    diag(log_of(serve))
    bail("serve did not start")


def req(method, path, body=None, token=FULL, headers=None, raw=None, timeout=120):
    """One request on its own connection: (status, headers, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, out


def jreq(*a, **kw):
    st, h, b = req(*a, **kw)
    try:
        return st, h, json.loads(b) if b else None
    except ValueError:
        return st, h, {"_raw": b[:200]}


def is_error(j, code):
    return (isinstance(j, dict) and isinstance(j.get("error"), dict) and
            j["error"].get("code") == code and isinstance(j["error"].get("message"), str))


# --- the document and the routes it names --------------------------------------------
st, h, doc = jreq("GET", "/v1/openapi.json", token=None)
t(st == 200 and h.get("content-type", "").startswith("application/json") and
  str(doc.get("openapi", "")).startswith("3.1"), "GET /v1/openapi.json without a token: 3.1")
ops = []
for path, item in (doc or {}).get("paths", {}).items():
    for m in ("get", "put", "post", "delete", "patch"):
        if m in item:
            ops.append((m.upper(), path, item[m]))
t(len(ops) >= 11, f"the document names {len(ops)} operations")
for m, path, op in ops:
    concrete = path.replace("{id}", "nosuchsandbox").replace("{pid}", "1")
    if not op.get("security", True):
        continue
    st, h, j = jreq(m, concrete + ("?path=/x" if path.endswith("/files") else ""),
                    body={} if m in ("POST",) else None, token="e2b_wrong",
                    raw=b"x" if m == "PUT" else None)
    t(st == 401 and is_error(j, "unauthenticated") and h.get("www-authenticate") == "Bearer",
      f"{m} {path} is a route and a wrong token is 401 unauthenticated ({st})")
# what the document does not name answers 404/405 in /v1's shape, never another route
st, _, j = jreq("PATCH", "/v1/sandboxes/x")
t(st == 405 and is_error(j, "method_not_allowed"), f"PATCH on a documented path: 405 ({st})")
st, _, j = jreq("GET", "/v1/nothing-here")
t(st == 404 and is_error(j, "not_found"), f"an undocumented /v1 path: 404 not_found ({st})")
st, _, j = jreq("POST", "/v1/openapi.json", body={})
t(st == 405 and is_error(j, "method_not_allowed"), f"POST /v1/openapi.json: 405 ({st})")

# --- auth -------------------------------------------------------------------------------
st, h, j = jreq("GET", "/v1/sandboxes", token=None)
t(st == 401 and is_error(j, "unauthenticated"), f"no token: 401 ({st})")
st, _, j = jreq("GET", "/v1/sandboxes", token=FULL + "x")
t(st == 401 and is_error(j, "unauthenticated") and FULL not in json.dumps(j),
  "a wrong token: 401, the secret not echoed")
st, _, j = jreq("GET", "/v1/sandboxes", token=None, headers={"X-API-KEY": E2B_KEY})
t(st == 200 and isinstance(j.get("sandboxes"), list), f"the mapped E2B key as X-API-KEY: 200 ({st})")
st, _, j = jreq("GET", "/v1/sandboxes", token=None, headers={"Authorization": "Basic dXNlcjo="})
t(st == 401, f"a Basic header is no token: 401 ({st})")
st, _, j = jreq("POST", "/v1/sandboxes", body={}, token=READER)
t(st == 403 and is_error(j, "permission_denied") and "sandboxes:run" in j["error"]["message"],
  f"sandboxes:read cannot create: 403 naming the scope ({st})")
st, _, j = jreq("POST", "/v1/sandboxes", body={}, token=FILES)
t(st == 403 and is_error(j, "permission_denied"), f"files:* cannot create: 403 ({st})")
st, _, j = jreq("GET", "/v1/sandboxes", token=FILES)
t(st == 403 and is_error(j, "permission_denied"), f"files:* cannot list: 403 ({st})")
st, _, _ = jreq("GET", "/v1/sandboxes", token=CLI_TOKEN)
st2, _, _ = jreq("POST", "/v1/sandboxes", body={}, token=CLI_TOKEN)
t(st == 200 and st2 == 403, f"the CLI-made token lists (200) and cannot create (403): {st}, {st2}")

# --- E2B's control plane takes the same tokens as X-API-KEY ------------------------------
def ctl(method, path, key, body=None):
    return jreq(method, path, body=body, token=None, headers={"X-API-KEY": key} if key else {})


st, _, j = ctl("GET", "/sandboxes", "e2b_" + "9" * 40)
t(st == 401 and isinstance(j, dict) and j.get("code") == 401, f"control plane: an unknown key is 401 ({st} {j})")
st, _, _ = ctl("GET", "/sandboxes", E2B_KEY)
st2, _, _ = ctl("GET", "/sandboxes", READER)
t(st == 200 and st2 == 200, f"control plane: the mapped E2B key and a sandboxes:read token list ({st}, {st2})")
st, _, j = ctl("POST", "/sandboxes", READER, body={"templateID": "base"})
st2, _, j2 = ctl("POST", "/sandboxes", FILES, body={"templateID": "base"})
t(st == 403 and st2 == 403 and j.get("code") == 403,
  f"control plane: creating (and so running code) needs sandboxes:run ({st}, {st2})")
st, _, j = ctl("GET", "/sandboxes", FILES)
t(st == 403, f"control plane: files:* cannot list ({st})")

# --- malformed and oversized bodies -----------------------------------------------------
st, _, j = jreq("POST", "/v1/sandboxes", raw=b'{"image": ', headers={"Content-Type": "application/json"})
t(st == 400 and is_error(j, "invalid_argument"), f"malformed JSON: 400 invalid_argument ({st})")
st, _, j = jreq("POST", "/v1/sandboxes", body=[1, 2])
t(st == 400 and is_error(j, "invalid_argument"), f"a JSON array body: 400 ({st})")
st, _, j = jreq("POST", "/v1/sandboxes", body={"timeout_ms": "soon"})
t(st == 400 and is_error(j, "invalid_argument") and "timeout_ms" in j["error"]["message"],
  f"a bad field: 400 naming it ({st})")
for img in ("/etc", "/", "../../etc"):
    st, _, j = jreq("POST", "/v1/sandboxes", body={"image": img})
    t(st == 400 and is_error(j, "invalid_argument"),
      f"image {img!r}: 400, never a host path from the network ({st} {j})")
before = jreq("GET", "/v1/sandboxes")[2]
st, _, _ = req("POST", "/v1/sandboxes", raw=b'{"metadata":{"k":"' + b"x" * (2 << 20) + b'"}}',
               headers={"Content-Type": "application/json"})
t(st == 413, f"a 2 MiB JSON body: 413 ({st})")
after = jreq("GET", "/v1/sandboxes")[2]
t(before == after, "and no sandbox was made by the bad requests")

# --- sandboxes --------------------------------------------------------------------------
st, _, sb = jreq("POST", "/v1/sandboxes",
                 body={"metadata": {"suite": "v1", "mode": mode}, "envs": {"SB_VAR": "sbval"},
                       "timeout_ms": 600000})
if st != 201:
    diag(f"{st} {sb}")
    diag(log_of(serve)[-2000:])
    bail(f"cannot create a sandbox through /v1 ({st})")
sid = sb.get("id", "")
t(st == 201 and sid and sb.get("state") == "running" and sb.get("metadata", {}).get("suite") == "v1",
  "POST /v1/sandboxes: 201, running, metadata echoed")
st, _, j = jreq("GET", f"/v1/sandboxes/{sid}")
t(st == 200 and j.get("id") == sid and j.get("timeout_ms") == 600000,
  f"GET /v1/sandboxes/ID: 200 with its timeout ({st})")
st, _, j = jreq("GET", f"/v1/sandboxes/{sid}", token=READER)
t(st == 200, "sandboxes:read reads it")
st, _, j = jreq("GET", "/v1/sandboxes/nosuchsandbox0")
t(st == 404 and is_error(j, "not_found"), f"an unknown id: 404 not_found ({st})")
st, _, j = jreq("GET", "/v1/sandboxes?metadata=suite=v1&state=running")
t(st == 200 and any(s["id"] == sid for s in j.get("sandboxes", [])),
  "GET /v1/sandboxes?metadata=suite=v1&state=running lists it")
st, _, j = jreq("GET", "/v1/sandboxes?metadata=suite=nope")
t(st == 200 and not any(s["id"] == sid for s in j.get("sandboxes", [])),
  "a metadata filter that does not match leaves it out")
st, _, j = jreq("GET", "/v1/sandboxes?state=sleeping")
t(st == 400 and is_error(j, "invalid_argument"), f"a bad state filter: 400 ({st})")

# --- commands: JSON result --------------------------------------------------------------
C = f"/v1/sandboxes/{sid}/commands"
st, _, j = jreq("POST", C, body={"argv": ["echo", "hi", "there"]})
t(st == 200 and j.get("exit_code") == 0 and j.get("stdout") == "hi there\n" and
  j.get("stdout_encoding") == "utf-8" and j.get("timed_out") is False and j.get("signal") is None,
  f"argv: exit 0, stdout as text ({st} {j})")
st, _, j = jreq("POST", C, body={"cmd": "echo out; echo err >&2; exit 3"})
t(st == 200 and j.get("exit_code") == 3 and j.get("stdout") == "out\n" and j.get("stderr") == "err\n",
  f"cmd: exit 3, stdout and stderr apart ({j})")
st, _, j = jreq("POST", C, body={"cmd": "echo $FOO $SB_VAR; pwd", "envs": {"FOO": "bar"}, "cwd": "/tmp"})
t(st == 200 and j.get("stdout") == "bar sbval\n/tmp\n", f"envs, the sandbox's envs and cwd ({j})")
st, _, j = jreq("POST", C, body={"argv": ["cat"], "stdin": "fed through stdin\n"})
t(st == 200 and j.get("stdout") == "fed through stdin\n" and j.get("exit_code") == 0,
  f"stdin as a string, then closed ({j})")
st, _, j = jreq("POST", C, body={"argv": ["cat"],
                                 "stdin_base64": base64.b64encode(b"\x00\x01\xff").decode(),
                                 "encoding": "base64"})
t(st == 200 and j.get("stdout_encoding") == "base64" and
  base64.b64decode(j.get("stdout", "")) == b"\x00\x01\xff", f"binary in and out as base64 ({j})")
st, _, j = jreq("POST", C, body={"cmd": "printf 'a\\377b'"})
t(st == 200 and j.get("stdout_encoding") == "base64" and base64.b64decode(j["stdout"]) == b"a\xffb",
  "output that is not UTF-8 comes as base64")
st, _, j = jreq("POST", C, body={"cmd": "head -c 5000 /dev/zero | tr '\\0' x", "max_output_bytes": 100})
t(st == 200 and j.get("stdout") == "x" * 100 and j.get("stdout_truncated") is True and
  j.get("stderr_truncated") is False, "output past max_output_bytes is cut and says so")
st, _, j = jreq("POST", C, body={"argv": ["sleep", "30"], "timeout_ms": 500})
t(st == 200 and j.get("timed_out") is True, f"timeout_ms kills and says timed_out ({j})")
st, _, j = jreq("POST", C, body={"argv": ["echo"], "cmd": "echo"})
t(st == 400 and is_error(j, "invalid_argument"), "cmd and argv together: 400")
st, _, j = jreq("POST", C, body={"argv": ["true"], "cwd": "/no/such/dir"})
t(st in (400, 404) and "error" in j, f"a missing cwd: a typed error, nothing run ({st} {j})")
st, _, j = jreq("POST", C, raw=b"{nope", headers={"Content-Type": "application/json"})
t(st == 400 and is_error(j, "invalid_argument"), "malformed JSON to commands: 400")
st, _, j = jreq("POST", C, body={"argv": ["touch", "/tmp/ran-by-files-token"]}, token=FILES)
t(st == 403 and is_error(j, "permission_denied") and "sandboxes:run" in j["error"]["message"],
  f"a files:write token cannot run commands: 403 ({st})")
st, _, j = jreq("POST", C, body={"argv": ["touch", "/tmp/ran-by-reader"]}, token=READER)
t(st == 403, "nor can sandboxes:read")
st, _, j = jreq("POST", C, body={"cmd": "for f in /tmp/ran-by-files-token /tmp/ran-by-reader; "
                                        "do test -e $f && echo $f; done; true"})
t(st == 200 and j.get("stdout") == "", f"and neither ran anything ({j.get('stdout')!r})")
st, _, j = jreq("POST", "/v1/sandboxes/nosuchsandbox0/commands", body={"argv": ["true"]})
t(st == 404 and is_error(j, "not_found"), "commands in an unknown sandbox: 404")
st, _, _ = req("POST", C, raw=b'{"cmd":"' + b"x" * (2 << 20) + b'"}',
               headers={"Content-Type": "application/json"})
t(st == 413, f"a 2 MiB command body: 413 ({st})")


# --- commands: the ndjson stream --------------------------------------------------------
class Stream:
    def __init__(self, body, accept=True, to_port=None):
        self.c = http.client.HTTPConnection("127.0.0.1", to_port or port, timeout=60)
        h = {"Authorization": f"Bearer {FULL}", "Content-Type": "application/json"}
        if accept:
            h["Accept"] = "application/x-ndjson"
        self.c.request("POST", C, body=json.dumps(body).encode(), headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("Content-Type", "")

    def event(self):
        line = self.r.readline()
        return json.loads(line) if line else None

    def until(self, pred):
        evs = []
        while True:
            ev = self.event()
            if ev is None:
                return evs, None
            evs.append(ev)
            if pred(ev):
                return evs, ev

    def close(self):
        self.c.close()


def text_of(evs, kind):
    out = b""
    for ev in evs:
        if ev.get("type") == kind:
            out += (base64.b64decode(ev["data"]) if ev.get("encoding") == "base64"
                    else ev["data"].encode())
    return out


s = Stream({"cmd": "echo ready; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo done; exit 4"})
t(s.status == 200 and s.ctype.startswith("application/x-ndjson"), f"ndjson: 200 application/x-ndjson ({s.status})")
first = s.event()
t(first and first.get("type") == "start" and isinstance(first.get("pid"), int) and first["pid"] > 0,
  f"the first event is start with a pid ({first})")
evs, ev = s.until(lambda e: e.get("type") in ("stdout", "end"))
t(ev and ev.get("type") == "stdout" and ev.get("data") == "ready\n" and ev.get("encoding") == "utf-8",
  "stdout arrives while the command still runs (it waits for /tmp/go)")
st, _, _ = req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/go", raw=b"")
evs, ev = s.until(lambda e: e.get("type") == "end")
t(st == 200 and ev and text_of(evs, "stdout") == b"done\n" and ev.get("exit_code") == 4 and
  ev.get("timed_out") is False, f"after the test wrote /tmp/go: done, end with exit 4 ({ev})")
t(s.event() is None, "the stream ends after the end event")
s.close()

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# A serve of its own, whose memory says what it holds: a sanitizer build's allocator
# would count its quarantine of freed blocks too (tens of MB here), so that is off.
bp_port = free_port()
bp = start_serve(f"127.0.0.1:{bp_port}", env={"ASAN_OPTIONS": "quarantine_size_mb=0:halt_on_error=1"})
rss_before = rss_kb(bp.pid)
s = Stream({"cmd": "head -c 20000000 /dev/urandom | base64 -w 0; echo", "stream": True}, accept=False,
           to_port=bp_port)
t(s.status == 200 and s.ctype.startswith("application/x-ndjson"), '"stream": true also streams')
time.sleep(2)  # a client that does not read: serve must stop reading, not buffer it all
grown = rss_kb(bp.pid) - rss_before
t(grown < 12 * 1024, f"serve holds back: its memory grew {grown} kB for a 26 MB stream not read")
evs, ev = s.until(lambda e: e.get("type") in ("end", "error"))
out = text_of(evs, "stdout")
t(ev and ev.get("type") == "end" and ev.get("exit_code") == 0 and len(out) == 26666668 + 1,
  f"20 MB through a slow reader: every byte, in order of events ({len(out)})")
s.close()
bp.send_signal(signal.SIGTERM)
bp.wait(30)

s = Stream({"cmd": "printf '\\303'; sleep 0.2; printf '\\251\\n'"})
evs, ev = s.until(lambda e: e.get("type") == "end")
t(text_of(evs, "stdout") == "é\n".encode() and
  all(e.get("encoding") == "utf-8" for e in evs if e.get("type") == "stdout"),
  "a character split across writes stays text")
s.close()

# --- processes: list, stdin, kill ---------------------------------------------------------
s = Stream({"argv": ["cat"], "stdin": True, "tag": "v1-cat"})
first = s.event()
pid = (first or {}).get("pid")
st, _, j = jreq("GET", f"/v1/sandboxes/{sid}/processes", token=READER)
mine = [p for p in (j or {}).get("processes", []) if p.get("pid") == pid]
t(st == 200 and mine and mine[0].get("running") is True and mine[0].get("argv") == ["cat"] and
  "envs" not in mine[0], f"GET .../processes lists the running cat, without envs ({st})")
P = f"/v1/sandboxes/{sid}/processes/{pid}"
st, _, j = jreq("POST", P + "/stdin", body={"data": "x"}, token=FILES)
t(st == 403, "files:* cannot write stdin: 403")
st, _, _ = req("POST", P + "/stdin", body={"data": "line one\n"})
st2, _, _ = req("POST", P + "/stdin", body={"data_base64": base64.b64encode(b"two\n").decode(), "close": True})
evs, ev = s.until(lambda e: e.get("type") == "end")
t(st == 204 and st2 == 204 and text_of(evs, "stdout") == b"line one\ntwo\n" and ev and
  ev.get("exit_code") == 0, f"POST .../stdin twice, then closed: cat echoed and ended ({st}, {st2})")
s.close()

s = Stream({"argv": ["sleep", "60"]})
pid = (s.event() or {}).get("pid")
P = f"/v1/sandboxes/{sid}/processes/{pid}"
st, _, j = jreq("POST", P + "/kill", body={"signal": "SIGTERM"}, token=READER)
t(st == 403, "sandboxes:read cannot kill: 403")
st, _, j = jreq("POST", P + "/kill", body={"signal": "SIGNOPE"})
t(st == 400 and is_error(j, "invalid_argument"), "an unknown signal: 400")
st, _, _ = req("POST", P + "/kill", body={"signal": "SIGTERM"})
evs, ev = s.until(lambda e: e.get("type") == "end")
t(st == 204 and ev and ev.get("signal") == 15, f"POST .../kill SIGTERM: the stream ends with signal 15 ({ev})")
s.close()
st, _, j = jreq("POST", f"/v1/sandboxes/{sid}/processes/999999/kill", body={})
t(st == 404 and is_error(j, "not_found"), f"killing an unknown pid: 404 ({st} {j})")
st, _, j = jreq("POST", f"/v1/sandboxes/{sid}/processes/abc/kill", body={})
t(st == 400, f"a pid that is not a number: 400 ({st})")

# --- files --------------------------------------------------------------------------------
F = f"/v1/sandboxes/{sid}/files"
blob = bytes(range(256)) * 4096 + b"end"  # 1 MiB + 3, every byte value
st, _, j = jreq("PUT", F + "?path=/tmp/v1/deep/blob.bin", raw=blob, token=FILES,
                headers={"Content-Type": "application/octet-stream"})
t(st == 200 and j.get("size") == len(blob), f"PUT .../files with files:write, parents made ({st} {j})")
st, h, body = req("GET", F + "?path=/tmp/v1/deep/blob.bin", token=FILES)
t(st == 200 and body == blob and h.get("content-type") == "application/octet-stream",
  "GET .../files gives back every byte")
st, _, j = jreq("POST", C, body={"cmd": "sha256sum /tmp/v1/deep/blob.bin"})
t(j.get("stdout", "").split(" ")[0] == hashlib.sha256(blob).hexdigest(), "the sandbox sees that file")
big = os.urandom(48 << 20)
st, _, j = jreq("PUT", F + "?path=/home/user/big.bin", raw=big,
                headers={"Content-Type": "application/octet-stream"})
st2, _, j2 = jreq("POST", C, body={"cmd": "sha256sum /home/user/big.bin; rm /home/user/big.bin"})
t(st == 200 and j.get("size") == len(big) and
  j2.get("stdout", "").split(" ")[0] == hashlib.sha256(big).hexdigest(),
  f"a 48 MiB upload arrives whole ({st} {j})")
st, _, j = jreq("PUT", F + "?path=/tmp/v1", raw=b"x")
t(st == 400 and is_error(j, "invalid_argument"), f"an upload onto a directory: 400 ({st} {j})")
st, _, j = jreq("PUT", F + "?path=/tmp/v1/m&mode=999", raw=b"x")
t(st == 400 and is_error(j, "invalid_argument"), f"a bad mode: 400 ({st})")
st, _, j = jreq("PUT", F + "?path=/tmp/v1/m&mode=700", raw=b"#!/bin/sh\necho ran\n")
st2, _, j2 = jreq("POST", C, body={"cmd": "stat -c %a /tmp/v1/m; /tmp/v1/m"})
t(st == 200 and j2.get("stdout") == "700\nran\n", f"mode=700 is the file's mode ({j2.get('stdout')!r})")
st, _, j = jreq("PUT", F + "?path=/tmp/v1/x", raw=b"x", token=READER)
t(st == 403 and is_error(j, "permission_denied"), "sandboxes:read cannot write files: 403")
st, _, j = jreq("GET", F + "?path=/tmp/v1/deep/blob.bin", token=READER)
t(st == 403 and is_error(j, "permission_denied"), "nor read them: 403")
st, _, j = jreq("GET", F + "?path=/tmp/v1/missing")
t(st == 404 and is_error(j, "not_found"), f"a missing file: 404 ({st})")
st, _, j = jreq("GET", F)
t(st == 400 and is_error(j, "invalid_argument"), "no path: 400")
st, _, j = jreq("GET", F + "?path=/tmp/v1")
t(st == 400 and is_error(j, "invalid_argument"), "a directory: 400")
st, _, j = jreq("PUT", "/v1/sandboxes/nosuchsandbox0/files?path=/tmp/x", raw=b"x")
t(st == 404 and is_error(j, "not_found"), "a file in an unknown sandbox: 404")
st, _, _ = req("PUT", F + "?path=/tmp/v1/big", raw=b"\0" * ((64 << 20) + 1),
               headers={"Content-Type": "application/octet-stream"})
t(st == 413, f"a file past 64 MiB: 413 ({st})")
st, _, j = jreq("POST", C, body={"cmd": "test -e /tmp/v1/big && echo there || echo absent"})
t(j.get("stdout") == "absent\n", "and nothing of it was written")

# --- the envd token goes only to who may run code; envd of a sandbox without one ---------
def envd_start(sandbox, token=None, cmd="/bin/true"):
    """Process/Start on serve's envd: (status, body)"""
    msg = json.dumps({"process": {"cmd": cmd, "args": []}, "stdin": False}).encode()
    h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
         "E2b-Sandbox-Id": sandbox, "E2b-Sandbox-Port": "49983"}
    if token:
        h["X-Access-Token"] = token
    host, port = envds[0].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        c.request("POST", "/process.Process/Start", body=b"\0" + len(msg).to_bytes(4, "big") + msg,
                  headers=h)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


st, _, e2 = ctl("POST", "/sandboxes", E2B_KEY, body={"templateID": "base", "timeout": 300})
if t(st == 201 and e2.get("envdAccessToken"), f"an E2B sandbox with an envd token ({st})"):
    eid = e2["sandboxID"]
    st, _, j = ctl("GET", f"/sandboxes/{eid}", READER)
    st2, _, j2 = ctl("GET", f"/sandboxes/{eid}", E2B_KEY)
    t(st == 200 and "envdAccessToken" not in j and st2 == 200
      and j2.get("envdAccessToken") == e2["envdAccessToken"],
      f"GET /sandboxes/ID gives the envd token to sandboxes:run only, not to sandboxes:read ({st}, {st2})")
    st, body = envd_start(eid)
    st2, _ = envd_start(eid, token=e2["envdAccessToken"])
    t(st == 401 and st2 == 200, f"its envd wants that token ({st} without, {st2} with)")
    req("DELETE", f"/v1/sandboxes/{eid}")


def envd_health(sandbox):
    ehost, eport = envds[0].rsplit(":", 1)
    c = http.client.HTTPConnection(ehost, int(eport), timeout=60)
    try:
        c.request("GET", "/health", headers={"E2b-Sandbox-Id": sandbox})
        return c.getresponse().status
    finally:
        c.close()


# a prefix deletes a sandbox whole: no cached entry or record of it is left behind
st, _, e3 = ctl("POST", "/sandboxes", E2B_KEY, body={"templateID": "base", "timeout": 300})
if t(st == 201, f"another E2B sandbox ({st})"):
    h0 = envd_health(e3["sandboxID"])
    st, _, _ = req("DELETE", f"/v1/sandboxes/{e3['sandboxID'][:6]}")
    h1 = envd_health(e3["sandboxID"])  # before anything else has looked it up again
    st2, _, _ = ctl("GET", f"/sandboxes/{e3['sandboxID']}", E2B_KEY)
    t(h0 == 204 and st == 204 and st2 == 404 and h1 == 502,
      f"DELETE /v1/sandboxes/PREFIX of an E2B sandbox: gone from both APIs "
      f"(health {h0}, delete {st}, get {st2}, health {h1})")
st, body = envd_start(sid)
t(st == 401 and b"not created through the E2B API" in body,
  f"with tokens configured, envd refuses a sandbox made through /v1 (it has no envd token) ({st} {body[:120]!r})")
st, _, j = ctl("GET", "/nothere%ff", E2B_KEY)
t(st == 404 and isinstance(j, dict) and j.get("code") == 404,
  f"a path that is not UTF-8: a JSON 404, not a 500 ({st} {j})")

# --- delete -------------------------------------------------------------------------------
st, _, _ = req("DELETE", f"/v1/sandboxes/{sid}", token=READER)
t(st == 403, "sandboxes:read cannot delete: 403")
st, _, _ = req("DELETE", f"/v1/sandboxes/{sid}")
t(st == 204, f"DELETE /v1/sandboxes/ID: 204 ({st})")
st, _, j = jreq("GET", f"/v1/sandboxes/{sid}")
t(st == 404 and is_error(j, "not_found"), "then it is 404")
st, _, j = jreq("DELETE", f"/v1/sandboxes/{sid}")
t(st == 404 and is_error(j, "not_found"), "and deleting it again is 404")

# --- no tokens: loopback only -------------------------------------------------------------
serve.send_signal(signal.SIGTERM)
serve.wait(30)
p = start_serve(f"0.0.0.0:{free_port()}", tokens=False, wait=False)
try:
    p.wait(20)
except subprocess.TimeoutExpired:
    pass
t(p.poll() is not None and p.returncode != 0 and "loopback" in log_of(p),
  f"serve without tokens refuses 0.0.0.0 (exit {p.returncode}): {log_of(p).strip()[-200:]}")
p2port = free_port()
p2 = start_serve(f"127.0.0.1:{p2port}", tokens=False)
port = p2port
st, _, j = jreq("GET", "/v1/sandboxes", token=None)
t(p2.poll() is None and st == 200, f"without tokens on loopback: any caller, even without a token ({st})")
p3port = free_port()
p3 = start_serve(f"0.0.0.0:{p3port}", tokens=True)
port = p3port
st, _, _ = jreq("GET", "/v1/sandboxes", token=READER)
st2, _, _ = jreq("GET", "/v1/sandboxes", token=None)
t(p3.poll() is None and st == 200 and st2 == 401,
  f"with tokens serve listens on 0.0.0.0 and checks them ({st}, {st2})")
finish()
