#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve's envd files surface, live: filesystem.Filesystem RPCs (Stat, ListDir, MakeDir,
Move, Remove, WatchDir, the polling watchers), GET/POST /files (multipart, octet-stream,
gzip both ways, metadata, signatures) and /health, over raw HTTP on loopback against a
`toren-sandbox serve` this script starts, on sandboxes made with `toren-sandbox create`
(and one with an envd access token: through POST /v2/sandboxes when the control plane
serves it, else by giving a CLI sandbox a token in serve's own database).

TAP on stdout. Env: TS_CLI, TOREN_SANDBOX_ROOT (tests/live/modes.sh sets both).
"""
import atexit
import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from datetime import datetime

cli = os.environ.get("TS_CLI", "toren-sandbox")
state = os.environ.get("TOREN_SANDBOX_ROOT", "")
must_work = os.environ.get("TS_TESTS_MUST_WORK") == "1"
# a sandbox has a root only when created by root (modes.sh's `user` and `userns` modes
# give it one id): there the root cases check the refusal instead
mode = os.environ.get("TS_MODE", "root" if os.geteuid() == 0 else "user")
has_root = mode == "root"
n = 0
failed = 0
serve = None
created = []
small = None  # a tiny tmpfs for the full-disk case (root mode)


def cleanup():
    if serve and serve.poll() is None:
        serve.kill()
    for x in created:
        subprocess.run([cli, "rm", "-f", "--purge", x], capture_output=True)
    if small:
        subprocess.run(["umount", small], capture_output=True)
        os.rmdir(small)


atexit.register(cleanup)


def t(cond, desc):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def bail(why):
    if must_work:
        print(f"1..{n + 1}\nnot ok {n + 1} - cannot run: {why} (TS_TESTS_MUST_WORK=1)")
        sys.exit(1)
    if n == 0:
        print(f"1..0 # SKIP {why}")
    else:
        print(f"Bail out! {why}")
    sys.exit(0 if n == 0 else 1)


def run(*argv, check=True):
    p = subprocess.run([cli, *argv], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise RuntimeError(f"{argv}: {p.returncode} {p.stderr.strip()}")
    return p.stdout.strip()


def create():
    sb = run("create").split()[-1]
    created.append(sb)
    return sb


def sh(sb, script, user=None):
    argv = ["exec"] + (["--user", user] if user else []) + [sb, "--", "sh", "-c", script]
    return run(*argv)


# --- HTTP ---------------------------------------------------------------------------------


class Envd:
    def __init__(self, addr, sb, token=None):
        self.host, self.port = addr.rsplit(":", 1)
        self.sb, self.token = sb, token

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, int(self.port), timeout=timeout)

    def headers(self, user=None, extra=None, sandbox=True, token=True):
        h = {}
        if sandbox and self.sb:
            h["E2b-Sandbox-Id"] = self.sb
        if token and self.token:
            h["X-Access-Token"] = self.token
        if user:
            h["Authorization"] = "Basic " + base64.b64encode(f"{user}:".encode()).decode()
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None):
        c = self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data

    def rpc(self, method, msg, user=None, extra=None, token=True):
        h = self.headers(user, extra, token=token)
        h["Content-Type"] = "application/json"
        h["Connect-Protocol-Version"] = "1"
        st, hd, data = self.request("POST", f"/filesystem.Filesystem/{method}",
                                    json.dumps(msg).encode(), h)
        try:
            return st, json.loads(data)
        except ValueError:
            return st, {"raw": data.decode(errors="replace")}

    def files(self, method, query, body=None, headers=None, sandbox=True, token=True):
        qs = "&".join(f"{k}={quote(v)}" for k, v in query.items())
        h = self.headers(extra=headers, sandbox=sandbox, token=token)
        return self.request(method, "/files" + ("?" + qs if qs else ""), body, h)


def quote(s):
    from urllib.parse import quote as q

    return q(str(s), safe="")


def envelope(msg):
    data = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(data)) + data


class Stream:
    """A server-streaming call read envelope by envelope."""

    def __init__(self, envd, method, msg, user=None, extra=None, timeout=30):
        self.c = envd.conn(timeout=timeout)
        h = envd.headers(user, extra)
        h["Content-Type"] = "application/connect+json"
        h["Connect-Protocol-Version"] = "1"
        self.c.request("POST", f"/filesystem.Filesystem/{method}", envelope(msg), h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("Content-Type", "")

    def next(self):
        """(flags, message) or None at EOF."""
        head = self.r.read(5)
        if len(head) < 5:
            return None
        flags, size = struct.unpack(">BI", head)
        return flags, json.loads(self.r.read(size) or b"{}")

    def close(self):
        self.c.close()


def multipart(parts, boundary="tsbxBOUNDARY42"):
    out = b""
    for name, filename, data in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        out += f"--{boundary}\r\nContent-Disposition: {disp}\r\n".encode()
        out += b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def signature(path, op, user, token, exp=None):
    raw = f"{path}:{op}:{user}:{token}" + (f":{exp}" if exp is not None else "")
    digest = hashlib.sha256(raw.encode()).digest()
    return "v1_" + base64.b64encode(digest).decode().rstrip("=")


def rfc3339(s):
    try:
        datetime.strptime(re.sub(r"\.\d+", "", s), "%Y-%m-%dT%H:%M:%SZ")
        return True
    except (TypeError, ValueError):
        return False


# --- setup --------------------------------------------------------------------------------

try:
    sb = create()
    sb_stop = create()
except Exception as e:  # noqa: BLE001 (any failure to start means: cannot run here)
    bail(f"cannot create a sandbox: {e}")

serve = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line = serve.stdout.readline()
m = re.search(r"control plane on (\S+), envd on (\S+)", line)
if not m:
    bail(f"serve did not start: {line!r} {serve.stderr.read() if serve.poll() is not None else ''}")
control_addr, envd_addr = m.group(1), m.group(2)
E = Envd(envd_addr, sb)

# a sandbox with an envd access token: the control plane's, or a CLI one given a token
tok_sb, token = None, None
try:
    ch, cp = control_addr.rsplit(":", 1)
    c = http.client.HTTPConnection(ch, int(cp), timeout=60)
    c.request("POST", "/v2/sandboxes", json.dumps({"templateID": "base", "timeout": 600}),
              {"Content-Type": "application/json", "X-API-KEY": "e2b_" + "0" * 40})
    r = c.getresponse()
    body = r.read()
    if r.status == 201:
        j = json.loads(body)
        tok_sb, token = j["sandboxID"], j.get("envdAccessToken")
        created.append(tok_sb)
    c.close()
except (OSError, ValueError, KeyError):
    pass
if not token:
    tok_sb = create()
    token = "tsbx-test-token-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]
    db = sqlite3.connect(os.path.join(state, "serve.db"), timeout=10)
    db.execute("INSERT OR REPLACE INTO sandboxes (id, template_id, client_id, envd_token, "
               "traffic_token, create_body, auto_pause, paused, created_ms) "
               "VALUES (?, 'base', 'local', ?, '', '{}', 0, 0, ?)",
               (tok_sb, token, int(time.time() * 1000)))
    db.commit()
    db.close()
    time.sleep(1.5)  # serve re-reads its records every second
    diag("control plane without POST /v2/sandboxes: a CLI sandbox was given a token")
T = Envd(envd_addr, tok_sb, token)

# --- Stat ---------------------------------------------------------------------------------

st, j = E.rpc("Stat", {"path": "/home/user"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_DIRECTORY" and e.get("path") == "/home/user" and
  e.get("name") == "user" and e.get("permissions") == "drwxr-xr-x" and e.get("mode") == 0o755 and
  e.get("owner") == "user" and e.get("group") == "user" and isinstance(e.get("size"), str) and
  int(e["size"]) > 0 and rfc3339(e.get("modifiedTime")),
  f"Stat of the home: a directory entry as envd gives it ({j})")
st, j = E.rpc("Stat", {"path": "/nonexistent/x"})
t(st == 404 and j.get("code") == "not_found", f"Stat of a missing path: not_found ({st} {j})")
st, j = E.rpc("Stat", {"path": "~"})
t(st == 200 and j["entry"]["path"] == "/home/user", "Stat of `~`: the home")
st, j = E.rpc("Stat", {"path": "."}, user="root")
if has_root:
    t(st == 200 and j["entry"]["path"] == "/root" and j["entry"]["owner"] == "root",
      f"a relative path as root resolves in /root ({j})")
else:
    t(st == 403 and j.get("code") == "permission_denied",
      f"{mode} mode: a sandbox without a root refuses root: permission_denied ({j})")
st, j = E.rpc("Stat", {"path": 5})
t(st == 400 and j.get("code") == "invalid_argument", "a path that is not a string: invalid_argument")

# files and links made inside the sandbox
sh(sb, "mkdir -p /home/user/ld/a/b /home/user/ld/z && printf hello > /home/user/ld/f.txt && "
       "printf deep > /home/user/ld/a/b/deep && ln -s f.txt /home/user/ld/lf && "
       "ln -s /home/user/ld/a /home/user/ld/la && ln -s nowhere /home/user/ld/dangling && "
       "ln -s lf /home/user/ld/chain && ln -s /home/user/ld /home/user/ldlink && "
       "chmod 600 /home/user/ld/f.txt")
st, j = E.rpc("Stat", {"path": "/home/user/ld/f.txt"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_FILE" and e.get("size") == "5" and
  e.get("mode") == 0o600 and e.get("permissions") == "-rw-------" and "symlinkTarget" not in e,
  f"Stat of a file: type, size as a string, mode, permissions ({e})")
st, j = E.rpc("Stat", {"path": "/home/user/ld/lf"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_FILE" and e.get("symlinkTarget") == "/home/user/ld/f.txt"
  and e.get("path") == "/home/user/ld/lf" and e.get("name") == "lf" and e.get("size") == "5",
  f"a relative symlink to a file: the file's type, its resolved absolute target ({e})")
st, j = E.rpc("Stat", {"path": "/home/user/ld/la"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_DIRECTORY" and e.get("symlinkTarget") == "/home/user/ld/a",
  f"a symlink to a directory: a directory ({e})")
st, j = E.rpc("Stat", {"path": "/home/user/ld/chain"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_FILE" and e.get("symlinkTarget") == "/home/user/ld/f.txt",
  f"a chain of symlinks resolves to its end ({e})")
st, j = E.rpc("Stat", {"path": "/home/user/ld/dangling"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_SYMLINK" and
  e.get("symlinkTarget") == "/home/user/ld/nowhere",
  f"a dangling symlink stays a symlink, its target resolved ({e})")

# --- ListDir ------------------------------------------------------------------------------

st, j = E.rpc("ListDir", {"path": "/home/user/ld", "depth": 1})
names = [x["name"] for x in j.get("entries", [])]
t(st == 200 and names == ["a", "chain", "dangling", "f.txt", "la", "lf", "z"],
  f"ListDir depth 1: the direct entries in lexical order, the root excluded ({names})")
types = {x["name"]: x["type"] for x in j.get("entries", [])}
t(types.get("la") == "FILE_TYPE_DIRECTORY" and types.get("lf") == "FILE_TYPE_FILE" and
  all(x.get("type") for x in j.get("entries", [])),
  "ListDir: every entry has a type, symlinks as their targets")
st, j = E.rpc("ListDir", {"path": "/home/user/ld", "depth": 0})
t(st == 200 and [x["name"] for x in j.get("entries", [])] == names, "ListDir depth 0 is depth 1")
st, j = E.rpc("ListDir", {"path": "/home/user/ld", "depth": 3})
paths = [x["path"] for x in j.get("entries", [])]
t(st == 200 and paths == ["/home/user/ld/a", "/home/user/ld/a/b", "/home/user/ld/a/b/deep",
                          "/home/user/ld/chain", "/home/user/ld/dangling", "/home/user/ld/f.txt",
                          "/home/user/ld/la", "/home/user/ld/lf", "/home/user/ld/z"],
  f"ListDir depth 3: walk order, absolute paths, a symlinked directory not entered ({paths})")
st, j = E.rpc("ListDir", {"path": "/home/user/ld", "depth": 2})
t(st == 200 and "/home/user/ld/a/b" in [x["path"] for x in j["entries"]] and
  "/home/user/ld/a/b/deep" not in [x["path"] for x in j["entries"]], "ListDir depth 2 stops at 2")
st, j = E.rpc("ListDir", {"path": "/home/user/ldlink"})
t(st == 200 and [x["path"] for x in j.get("entries", [])][:1] == ["/home/user/ld/a"],
  f"ListDir of a symlinked root lists its target ({st})")
# a directory of links into a loop of links: every one costs 40 questions to the sandbox,
# which serve's thread (every client's) would wait for; a listing asks 2048 at most, and a
# link met after that stays a symlink (`zz`, the last, points to a file)
sh(sb, "mkdir /home/user/lb && cd /home/user/lb && ln -s loop loop && printf x > f && "
       "for i in $(seq -w 0 99); do ln -s loop a$i; done && ln -s f zz")
st, j = E.rpc("ListDir", {"path": "/home/user/lb"})
ents = {x["name"]: x for x in j.get("entries", [])}
t(st == 200 and len(ents) == 103 and ents.get("a00", {}).get("type") == "FILE_TYPE_SYMLINK"
  and ents.get("zz", {}).get("type") == "FILE_TYPE_SYMLINK" and ents.get("f", {}).get("type") == "FILE_TYPE_FILE",
  f"ListDir: link following stops at the listing's budget ({st}, {len(ents)} entries, "
  f"zz {ents.get('zz', {}).get('type')})")
st, j = E.rpc("Stat", {"path": "/home/user/lb/zz"})
t(st == 200 and j.get("entry", {}).get("type") == "FILE_TYPE_FILE",
  "while Stat of that link still resolves it")
st, j = E.rpc("ListDir", {"path": "/home/user/ld/f.txt"})
t(st == 400 and j.get("code") == "invalid_argument", f"ListDir of a file: invalid_argument ({j})")
st, j = E.rpc("ListDir", {"path": "/home/user/none"})
t(st == 404 and j.get("code") == "not_found", "ListDir of a missing path: not_found")

# --- MakeDir, Move, Remove ----------------------------------------------------------------

st, j = E.rpc("MakeDir", {"path": "/home/user/md/x/y"})
e = j.get("entry", {})
t(st == 200 and e.get("type") == "FILE_TYPE_DIRECTORY" and e.get("path") == "/home/user/md/x/y" and
  e.get("permissions") == "drwxr-xr-x" and e.get("owner") == "user",
  f"MakeDir: parents created, the new directory's entry ({e})")
st, j = E.rpc("MakeDir", {"path": "/home/user/md/x/y"})
t(st == 409 and j.get("code") == "already_exists", f"MakeDir of an existing directory: already_exists ({j})")
st, j = E.rpc("MakeDir", {"path": "/home/user/ld/f.txt"})
t(st == 400 and j.get("code") == "invalid_argument", f"MakeDir over a file: invalid_argument ({j})")
st, j = E.rpc("Move", {"source": "/home/user/ld/z", "destination": "/home/user/mv/new/parents/z2"})
e = j.get("entry", {})
t(st == 200 and e.get("path") == "/home/user/mv/new/parents/z2" and e.get("type") == "FILE_TYPE_DIRECTORY",
  f"Move creates the destination's parents, answers its entry ({j})")
st, j = E.rpc("Move", {"source": "/home/user/nothing", "destination": "/home/user/mv2/x"})
st2, _ = E.rpc("Stat", {"path": "/home/user/mv2"})
t(st == 404 and j.get("code") == "not_found" and st2 == 404,
  "Move of a missing source: not_found, and nothing created")
st, j = E.rpc("Remove", {"path": "/home/user/mv"})
st2, _ = E.rpc("Stat", {"path": "/home/user/mv"})
t(st == 200 and j == {} and st2 == 404, "Remove is recursive")
st, j = E.rpc("Remove", {"path": "/home/user/mv"})
t(st == 200 and j == {}, "Remove of a missing path: ok")

# --- /files download ----------------------------------------------------------------------

st, hd, data = E.files("GET", {"path": "/home/user/ld/f.txt"})
t(st == 200 and data == b"hello" and hd.get("content-length") == "5",
  f"download: the bytes, with Content-Length ({st} {hd.get('content-length')})")
sh(sb, ": > /home/user/empty")
st, hd, data = E.files("GET", {"path": "/home/user/empty"}, headers={"Accept-Encoding": "gzip"})
t(st == 200 and data == b"" and hd.get("content-length") == "0",
  "an empty file: Content-Length 0 (also when gzip is accepted)")
st, hd, data = E.files("GET", {"path": "ld/f.txt"}, headers={"Accept-Encoding": "gzip, deflate"})
t(st == 200 and hd.get("content-encoding") == "gzip" and gzip.decompress(data) == b"hello" and
  hd.get("content-length") == str(len(data)),
  "download with Accept-Encoding gzip: gzipped, its Content-Length, a relative path")
st, hd, data = E.files("GET", {"path": "ld/f.txt"}, headers={"Accept-Encoding": "identity;q=0"})
t(st == 406, f"download when no acceptable encoding: 406 ({st})")
st, hd, data = E.files("GET", {"path": "/home/user/nope.txt"})
t(st == 404 and json.loads(data) == {"code": 404, "message": "path '/home/user/nope.txt' does not exist"},
  f"download of a missing file: 404 with envd's message ({data!r})")
st, hd, data = E.files("GET", {"path": "/home/user/ld"})
t(st == 400 and json.loads(data).get("code") == 400, f"download of a directory: 400 ({data!r})")
st, hd, data = E.files("GET", {"path": "/home/user/ld/f.txt", "username": "nosuchuser"})
t(st == 401 and json.loads(data).get("code") == 401, f"download as an unknown user: 401 ({data!r})")
sh(sb, "printf world > /home/user/pub.txt")
st, hd, data = E.files("GET", {"path": "/home/user/pub.txt", "username": "root"})
if has_root:
    t(st == 200 and data == b"world", f"download as root ({st} {data[:200]!r})")
else:
    t(st == 401, f"{mode} mode: download as root, which this sandbox lacks: 401 ({st})")
# longer than one reply: streamed
sh(sb, "head -c 20000000 /dev/urandom > /home/user/big && sha256sum /home/user/big > /home/user/big.sum")
want = E.files("GET", {"path": "/home/user/big.sum"})[2].split()[0].decode()
st, hd, data = E.files("GET", {"path": "/home/user/big"})
t(st == 200 and len(data) == 20000000 and hashlib.sha256(data).hexdigest() == want,
  f"a 20 MB download arrives whole (streamed) ({st} {len(data)})")
st, hd, data = E.files("GET", {"path": "/home/user/big"}, headers={"Accept-Encoding": "gzip"})
t(st == 200 and hd.get("content-encoding") == "gzip" and
  hashlib.sha256(gzip.decompress(data)).hexdigest() == want, "... and gzipped on the fly")

# --- /files upload ------------------------------------------------------------------------

body, ct = multipart([("file", "/home/user/up/one.txt", b"first"), ("other", None, b"skipped"),
                      ("file", "rel/two.txt", b""), ("file", "/tmp/nested/deep/three", b"3" * 300000)])
st, hd, data = E.files("POST", {}, body, {"Content-Type": ct})
t(st == 200 and json.loads(data) == [
    {"path": "/home/user/up/one.txt", "name": "one.txt", "type": "file"},
    {"path": "/home/user/rel/two.txt", "name": "two.txt", "type": "file"},
    {"path": "/tmp/nested/deep/three", "name": "three", "type": "file"}],
  f"multipart, several files: each filename its whole path, other parts skipped ({data!r})")
got = [E.files("GET", {"path": p})[2] for p in ("/home/user/up/one.txt", "/home/user/rel/two.txt",
                                                  "/tmp/nested/deep/three")]
t(got == [b"first", b"", b"3" * 300000], "... with their contents, the empty one too")
st, j = E.rpc("Stat", {"path": "/home/user/up/one.txt"})
t(j.get("entry", {}).get("permissions") == "-rw-r--r--" and j["entry"].get("owner") == "user" and
  E.rpc("Stat", {"path": "/tmp/nested"})[1].get("entry", {}).get("owner") == "user",
  "an uploaded file is 0644 and the user's, its new parents too")
# the same, chunked in pieces that split the parts (as undici sends a FormData): a
# part's header may come before any of its data
body, ct = multipart([("file", "/home/user/chunked/a.txt", b"A" * 70000), ("file", "/home/user/chunked/b.txt", b"B")])


def pieces(b, cut=(0,)):
    heads = [m.end() for m in re.finditer(rb"\r\n\r\n", b)]
    last = 0
    for k in heads + [len(b)]:
        yield b[last:k]
        time.sleep(0.2)
        last = k


c = E.conn()
c.request("POST", "/files", body=pieces(body), headers={**E.headers(), "Content-Type": ct},
          encode_chunked=True)
r = c.getresponse()
data = r.read()
c.close()
t(r.status == 200 and [x["path"] for x in json.loads(data)] == ["/home/user/chunked/a.txt",
                                                                 "/home/user/chunked/b.txt"] and
  E.files("GET", {"path": "/home/user/chunked/a.txt"})[2] == b"A" * 70000,
  f"multipart chunked so that a part's header comes before its data ({r.status} {data[:200]!r})")
body, ct = multipart([("file", "ignored-name", b"by query")])
st, hd, data = E.files("POST", {"path": "/home/user/q.txt"}, body, {"Content-Type": ct})
t(st == 200 and json.loads(data) == [{"path": "/home/user/q.txt", "name": "q.txt", "type": "file"}] and
  E.files("GET", {"path": "/home/user/q.txt"})[2] == b"by query",
  "multipart with a path query: the part's filename does not count")
body, ct = multipart([("file", None, b"form field")])
st, hd, data = E.files("POST", {"path": "/home/user/field.txt"}, body, {"Content-Type": ct})
t(st == 200 and E.files("GET", {"path": "/home/user/field.txt"})[2] == b"form field",
  "a `file` part without a filename is a file")
st, hd, data = E.files("POST", {}, body, {"Content-Type": ct})
t(st == 400, f"... but without the path query it names nothing: 400 ({data!r})")
body, ct = multipart([("file", "/home/user/dup", b"1"), ("file", "/home/user/./dup", b"2")])
st, hd, data = E.files("POST", {}, body, {"Content-Type": ct})
t(st == 400, f"one request naming the same path twice: 400 ({data!r})")
body, ct = multipart([("file", "/home/user/ld", b"x")])
st, hd, data = E.files("POST", {}, body, {"Content-Type": ct})
t(st == 400, f"an upload onto a directory: 400 ({data!r})")
st, hd, data = E.files("POST", {"path": "/home/user/oct.bin"}, b"\x00\x01octet",
                       {"Content-Type": "application/octet-stream"})
t(st == 200 and json.loads(data) == [{"path": "/home/user/oct.bin", "name": "oct.bin", "type": "file"}]
  and E.files("GET", {"path": "/home/user/oct.bin"})[2] == b"\x00\x01octet", "octet-stream upload")
st, hd, data = E.files("POST", {"path": "/home/user/gz.txt"}, gzip.compress(b"unzipped " * 1000),
                       {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
t(st == 200 and E.files("GET", {"path": "/home/user/gz.txt"})[2] == b"unzipped " * 1000,
  "octet-stream with Content-Encoding gzip: stored unzipped")
st, hd, data = E.files("POST", {"path": "/home/user/gz2.txt"}, b"not gzip at all",
                       {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
t(st == 400 and E.rpc("Stat", {"path": "/home/user/gz2.txt"})[0] == 404,
  f"a malformed gzip body: 400, and no file ({st})")
st, hd, data = E.files("POST", {}, b"x", {"Content-Type": "application/octet-stream"})
t(st == 400, "octet-stream without a path: 400")
st, hd, data = E.files("POST", {"path": "/home/user/t.txt"}, b"x", {"Content-Type": "text/plain"})
t(st == 400, "any other content type: 400")
st, hd, data = E.files("POST", {"path": "/root/r.txt", "username": "root"}, b"r",
                       {"Content-Type": "application/octet-stream"})
if has_root:
    t(st == 200 and E.rpc("Stat", {"path": "/root/r.txt"}, user="root")[1]["entry"]["owner"] == "root",
      "username=root: the file is root's")
else:
    t(st == 401, f"{mode} mode: an upload as root, which this sandbox lacks: 401 ({st})")
st, hd, data = E.files("POST", {"path": "/home/user/u.txt", "username": "mallory"}, b"r",
                       {"Content-Type": "application/octet-stream"})
t(st == 401, "an upload as an unknown user: 401")
big = os.urandom(3 << 20)
st, hd, data = E.files("POST", {"path": "/home/user/upbig"}, big,
                       {"Content-Type": "application/octet-stream"})
st2, hd2, back = E.files("GET", {"path": "/home/user/upbig"})
t(st == 200 and back == big, "a 3 MB octet-stream upload arrives whole")
# a declared length over the bound is refused before any of it is read
c = E.conn()
c.putrequest("POST", "/files?path=%2Fhome%2Fuser%2Fhuge")
for k, v in E.headers({"Content-Type": "application/octet-stream"}).items():
    c.putheader(k, v)
c.putheader("Content-Type", "application/octet-stream")
c.putheader("Content-Length", str(9 << 30))
c.endheaders()
try:
    r = c.getresponse()
    st = r.status
except (OSError, http.client.HTTPException):
    st = -1
c.close()
t(st == 413, f"an upload declaring more than 8 GiB: 413 ({st})")
# a full disk: a sandbox whose home is a 1 MiB tmpfs (mounting it needs root)
if has_root:
    import tempfile

    small = tempfile.mkdtemp(prefix="ts-envd-small-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small]).returncode == 0:
        full = run("create", "--workspace", small).split()[-1]
        created.append(full)
        F = Envd(envd_addr, full)
        st, hd, data = F.files("POST", {"path": "/home/user/fill"}, b"z" * (3 << 20),
                               {"Content-Type": "application/octet-stream"})
        st2, _ = F.rpc("Stat", {"path": "/home/user/fill"})
        t(st == 507 and json.loads(data).get("code") == 507 and st2 == 404,
          f"an upload that fills the disk: 507, and no partial file ({st} {data[:200]!r})")
    else:
        t(True, "an upload that fills the disk: 507 # SKIP cannot mount a tmpfs")
else:
    t(True, f"an upload that fills the disk: 507 # SKIP {mode} mode cannot mount a small disk")

# metadata
st, hd, data = E.files("POST", {"path": "/home/user/meta.txt"}, b"m",
                       {"Content-Type": "application/octet-stream", "X-Metadata-Owner-Team": "Blue 7",
                        "X-Metadata-k2": "v2"})
st2, j = E.rpc("Stat", {"path": "/home/user/meta.txt"})
t(st == 200 and json.loads(data)[0].get("metadata") == {"owner-team": "Blue 7", "k2": "v2"} and
  j.get("entry", {}).get("metadata") == {"owner-team": "Blue 7", "k2": "v2"},
  f"X-Metadata-* headers: user.e2b.* xattrs, keys lowercased, in the reply and in Stat ({data!r} {j})")
st, j = E.rpc("ListDir", {"path": "/home/user"})
t([x.get("metadata") for x in j.get("entries", []) if x["name"] == "meta.txt"] ==
  [{"owner-team": "Blue 7", "k2": "v2"}], "ListDir carries the metadata")
st, hd, data = E.files("POST", {"path": "/home/user/meta.txt"}, b"m2",
                       {"Content-Type": "application/octet-stream"})
st2, j = E.rpc("Stat", {"path": "/home/user/meta.txt"})
t(st == 200 and "metadata" not in json.loads(data)[0] and "metadata" not in j.get("entry", {}),
  "an upload without metadata headers clears it (and the reply omits it)")
st, hd, data = E.files("POST", {"path": "/home/user/meta2.txt"}, b"m",
                       {"Content-Type": "application/octet-stream", "X-Metadata-Bad": "caf\u00e9".encode().decode("latin-1")})
t(st == 400 and E.rpc("Stat", {"path": "/home/user/meta2.txt"})[0] == 404,
  f"a metadata value that is not printable ASCII: 400, nothing written ({st})")
try:
    sh(sb, "python3 -c \"import os; os.setxattr('/home/user/ld/f.txt', 'user.e2b.inside', b'yes')\"")
    st, j = E.rpc("Stat", {"path": "/home/user/ld/f.txt"})
    t(j.get("entry", {}).get("metadata") == {"inside": "yes"}, "an xattr set inside the sandbox is metadata")
except RuntimeError as ex:
    t(True, f"an xattr set inside the sandbox is metadata # SKIP no python3 inside ({ex})")

# --- WatchDir -----------------------------------------------------------------------------

E.rpc("MakeDir", {"path": "/home/user/w"})
t0 = time.monotonic()
s = Stream(E, "WatchDir", {"path": "/home/user/w", "recursive": True, "includeEntry": True},
           extra={"Keepalive-Ping-Interval": "1", "Connect-Timeout-Ms": "6000"})
first = s.next()
t(s.status == 200 and s.ctype.startswith("application/connect+json") and first == (0, {"start": {}}) and
  time.monotonic() - t0 < 5, f"WatchDir: the start message first, at once ({s.status} {first})")
E.files("POST", {"path": "/home/user/w/new.txt"}, b"abc", {"Content-Type": "application/octet-stream"})
E.rpc("MakeDir", {"path": "/home/user/w/sub"})
E.files("POST", {"path": "/home/user/w/sub/in.txt"}, b"x", {"Content-Type": "application/octet-stream"})
E.rpc("Remove", {"path": "/home/user/w/new.txt"})
events, keepalives, end = [], 0, None
while True:
    try:
        msg = s.next()
    except (OSError, ValueError):
        break
    if msg is None:
        break
    if msg[0] & 2:
        end = msg[1]
        break
    if "keepalive" in msg[1]:
        keepalives += 1
    elif "filesystem" in msg[1]:
        events.append(msg[1]["filesystem"])
s.close()
elapsed = time.monotonic() - t0
seen = [(x["name"], x["type"]) for x in events]
diag(f"events: {seen}")
t(("new.txt", "EVENT_TYPE_CREATE") in seen and ("sub", "EVENT_TYPE_CREATE") in seen and
  ("new.txt", "EVENT_TYPE_REMOVE") in seen, "WatchDir: create and remove events, names relative")
t(seen.index(("new.txt", "EVENT_TYPE_CREATE")) + 1 == seen.index(("new.txt", "EVENT_TYPE_WRITE"))
  if ("new.txt", "EVENT_TYPE_WRITE") in seen and ("new.txt", "EVENT_TYPE_CREATE") in seen else False,
  "an uploaded file: CREATE then WRITE of its name, as envd's in-place write")
t(not [x for x in seen if ".toren-tmp-" in x[0] or re.search(r"(^|/)#\d+$", x[0])],
  "the atomic write's temporary files never show")

# streaming watches are bounded per sandbox (each holds a worker in it), and one that ends
# makes room for the next
many = []
for _ in range(16):
    w = Stream(E, "WatchDir", {"path": "/home/user/w"})
    many.append((w, w.next()))
over = Stream(E, "WatchDir", {"path": "/home/user/w"})
over_first = over.next()
t(all(m == (0, {"start": {}}) for _, m in many) and over_first and over_first[0] & 2
  and over_first[1].get("error", {}).get("code") == "resource_exhausted"
  and "at most 16" in over_first[1]["error"].get("message", ""),
  f"16 streaming watches in one sandbox, the 17th refused: resource_exhausted ({over_first})")
over.close()
many[0][0].close()
again = None
for _ in range(50):  # the closed one is noticed at once (its connection is watched)
    time.sleep(0.1)
    a = Stream(E, "WatchDir", {"path": "/home/user/w"})
    again = a.next()
    a.close()
    if again == (0, {"start": {}}):
        break
t(again == (0, {"start": {}}), f"one closed, a new one starts ({again})")
for w, _ in many[1:]:
    w.close()
t(("sub/in.txt", "EVENT_TYPE_CREATE") in seen, "WatchDir recursive: a new subdirectory is followed")
creates = [x for x in events if x["type"] == "EVENT_TYPE_CREATE" and x["name"] == "sub"]
removes = [x for x in events if x["type"] == "EVENT_TYPE_REMOVE"]
t(bool(creates) and creates[0].get("entry", {}).get("type") == "FILE_TYPE_DIRECTORY" and
  bool(removes) and all("entry" not in x for x in removes),
  "includeEntry: an entry with CREATE, none with REMOVE")
t(keepalives >= 2, f"keepalives on silence ({keepalives} in {elapsed:.1f} s at a 1 s interval)")
t(end is not None and end.get("error", {}).get("code") == "deadline_exceeded" and 5 < elapsed < 15,
  f"Connect-Timeout-Ms: the stream ends with deadline_exceeded ({end}, {elapsed:.1f} s)")
s = Stream(E, "WatchDir", {"path": "/home/user/ld/f.txt"})
msg = s.next()
s.close()
t(s.status == 200 and msg and msg[0] == 2 and msg[1].get("error", {}).get("code") == "invalid_argument",
  f"WatchDir of a file: a lone end-stream invalid_argument ({msg})")
s = Stream(E, "WatchDir", {"path": "/home/user/nothere"})
msg = s.next()
s.close()
t(msg and msg[0] == 2 and msg[1].get("error", {}).get("code") == "not_found", "WatchDir of a missing path: not_found")
# events written only without includeEntry
s = Stream(E, "WatchDir", {"path": "/home/user/w"}, extra={"Connect-Timeout-Ms": "3000"})
s.next()
E.files("POST", {"path": "/home/user/w/plain.txt"}, b"p", {"Content-Type": "application/octet-stream"})
evs = []
while True:
    msg = s.next()
    if msg is None or msg[0] & 2:
        break
    if "filesystem" in msg[1]:
        evs.append(msg[1]["filesystem"])
s.close()
t(evs and all("entry" not in x for x in evs), "without includeEntry no event carries an entry")

# --- polling watchers ---------------------------------------------------------------------

st, j = E.rpc("CreateWatcher", {"path": "/home/user/w", "recursive": False})
wid = j.get("watcherId", "")
t(st == 200 and re.fullmatch(r"[0-9a-f-]{36}", wid), f"CreateWatcher: a watcher id ({j})")
E.files("POST", {"path": "/home/user/w/polled.txt"}, b"1", {"Content-Type": "application/octet-stream"})
time.sleep(0.5)
st, j = E.rpc("GetWatcherEvents", {"watcherId": wid})
names = [(x["name"], x["type"]) for x in j.get("events", [])]
t(st == 200 and ("polled.txt", "EVENT_TYPE_CREATE") in names, f"GetWatcherEvents: what happened since ({names})")
st, j = E.rpc("GetWatcherEvents", {"watcherId": wid})
t(st == 200 and not j.get("events"), "... each event once")
st, j = T.rpc("GetWatcherEvents", {"watcherId": wid})
t(st == 404 and j.get("code") == "not_found", "a watcher is its sandbox's: another sandbox's is not_found")
sh(sb, "i=0; while [ $i -lt 1300 ]; do : > /home/user/w/f$i; i=$((i+1)); done")
time.sleep(1)
st, j = E.rpc("GetWatcherEvents", {"watcherId": wid})
t(st == 200 and len(j.get("events", [])) == 1024 and int(j.get("droppedEvents", "0")) > 0,
  f"a bounded buffer: 1024 events kept, the rest counted as dropped ({len(j.get('events', []))}, "
  f"{j.get('droppedEvents')})")
st, j = E.rpc("RemoveWatcher", {"watcherId": wid})
st2, j2 = E.rpc("GetWatcherEvents", {"watcherId": wid})
t(st == 200 and j == {} and st2 == 404, "RemoveWatcher, then the watcher is gone")
st, j = E.rpc("RemoveWatcher", {"watcherId": "nope"})
t(st == 404 and j.get("code") == "not_found", "RemoveWatcher of an unknown id: not_found")
ids = []
for _ in range(17):
    st, j = E.rpc("CreateWatcher", {"path": "/home/user/w"})
    if st != 200:
        break
    ids.append(j["watcherId"])
t(len(ids) == 16 and st == 429 and j.get("code") == "resource_exhausted",
  f"at most 16 watchers per sandbox ({len(ids)}, {st} {j.get('code')})")
for i in ids:
    E.rpc("RemoveWatcher", {"watcherId": i})
st, j = E.rpc("CreateWatcher", {"path": "/home/user/ld/f.txt"})
t(st == 400 and j.get("code") == "invalid_argument", "CreateWatcher on a file: invalid_argument")

# --- auth: X-Access-Token and signatures --------------------------------------------------

st, j = T.rpc("Stat", {"path": "/home/user"}, token=False)
t(st == 401, f"an RPC without the sandbox's access token: 401 ({st})")
st, j = T.rpc("Stat", {"path": "/home/user"})
t(st == 200, "... with it: 200")
T.files("POST", {"path": "/home/user/s.txt"}, b"signed", {"Content-Type": "application/octet-stream"})
st, hd, data = T.files("GET", {"path": "/home/user/s.txt"}, headers={"X-Access-Token": "wrong"}, token=False)
t(st == 401 and json.loads(data) == {"code": 401,
                                    "message": "access token present in header but does not match"},
  f"/files with a wrong header token: 401 ({data!r})")
st, hd, data = T.files("GET", {"path": "/home/user/s.txt"}, token=False)
t(st == 401 and json.loads(data) == {"code": 401, "message": "missing signature query parameter"},
  f"/files without token or signature: 401 ({data!r})")
sig = signature("/home/user/s.txt", "read", "", token)
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": sig}, token=False)
t(st == 200 and data == b"signed", "a v1 read signature downloads")
st, hd, data = T.files("GET", {"path": "s.txt", "signature": signature("s.txt", "read", "", token)}, token=False)
t(st == 200 and data == b"signed", "the signature covers the raw path query (relative)")
sig = signature("/home/user/s.txt", "read", "user", token)
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "username": "user", "signature": sig}, token=False)
t(st == 200 and data == b"signed", "a signature with the username")
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": sig}, token=False)
t(st == 401 and json.loads(data) == {"code": 401, "message": "invalid signature"},
  f"a signature for another user: invalid signature ({data!r})")
exp = int(time.time()) + 120
sig = signature("/home/user/s.txt", "read", "", token, exp)
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": sig, "signature_expiration": exp},
                       token=False)
t(st == 200, "a signature with an expiry to come")
exp = int(time.time()) - 10
sig = signature("/home/user/s.txt", "read", "", token, exp)
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": sig, "signature_expiration": exp},
                       token=False)
t(st == 401 and json.loads(data) == {"code": 401, "message": "signature is already expired"},
  f"an expired signature ({data!r})")
sig = signature("/home/user/s2.txt", "read", "", token)
st, hd, data = T.files("POST", {"path": "/home/user/s2.txt", "signature": sig}, b"w",
                       {"Content-Type": "application/octet-stream"}, token=False)
t(st == 401 and json.loads(data).get("message") == "invalid signature", "a read signature cannot write")
sig = signature("/home/user/s2.txt", "write", "", token)
st, hd, data = T.files("POST", {"path": "/home/user/s2.txt", "signature": sig}, b"w",
                       {"Content-Type": "application/octet-stream"}, token=False)
t(st == 200, "a write signature uploads")
sig = signature("/home/user/s.txt", "read", "", token)
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": sig}, sandbox=False, token=False)
t(st == 200 and data == b"signed", "without E2b-Sandbox-Id the signature finds the sandbox")
st, hd, data = T.files("GET", {"path": "/home/user/s.txt", "signature": "v1_" + "A" * 43}, sandbox=False,
                       token=False)
t(st == 401 and json.loads(data) == {"code": 401, "message": "invalid signature"},
  f"without E2b-Sandbox-Id a signature no sandbox made: invalid signature ({st} {data!r})")
st, hd, data = T.files("GET", {"path": "/home/user/s.txt"}, sandbox=False, token=False)
t(st == 401 and json.loads(data) == {"code": 401, "message": "missing signature query parameter"},
  f"without E2b-Sandbox-Id nor a signature: missing signature ({st} {data!r})")
# an upload refused is answered once its body is in: a reply before it has the server
# close the connection under a client still sending (undici then reports a reset)
body, ct = multipart([("file", "x.txt", b"refused" * 1000)])
c = socket.create_connection((T.host, int(T.port)), timeout=5)
c.sendall((f"POST /files?path=x.txt&signature=v1_{'A' * 43} HTTP/1.1\r\nHost: t\r\n"
           f"Content-Type: {ct}\r\nContent-Length: {len(body)}\r\n\r\n").encode())
c.settimeout(0.5)
try:
    early = c.recv(4096)
except socket.timeout:
    early = b""
c.settimeout(5)
try:
    c.sendall(body)
    late = c.recv(4096)
except OSError as ex:
    late = repr(ex).encode()
c.close()
t(early == b"" and late.startswith(b"HTTP/1.1 401") and b'"invalid signature"' in late,
  f"a refused upload is answered after its body, not before ({early[:60]!r} {late[:60]!r})")
st, hd, data = E.files("GET", {"path": "/home/user/ld/f.txt"}, token=False)
t(st == 200, "a sandbox without a token needs no signature")

# --- /health ------------------------------------------------------------------------------

st, hd, data = E.request("GET", "/health", None, {"E2b-Sandbox-Id": sb})
t(st == 204 and data == b"", "/health of a running sandbox: 204")
st, hd, data = E.request("GET", "/health", None, {"E2b-Sandbox-Id": "nosuchsandbox"})
t(st == 502 and json.loads(data).get("code") == 502, "/health of an unknown sandbox: 502 JSON")
run("stop", sb_stop)
time.sleep(1.5)  # serve refreshes its view every second
st, hd, data = E.request("GET", "/health", None, {"E2b-Sandbox-Id": sb_stop})
t(st == 502, f"/health of a stopped sandbox: 502 ({st})")

# --- the end ------------------------------------------------------------------------------

serve.terminate()
try:
    rc = serve.wait(timeout=20)
except subprocess.TimeoutExpired:
    serve.kill()
    rc = -1
err = serve.stderr.read()
t(rc == 0, f"serve ends cleanly on SIGTERM ({rc})")
if rc != 0:
    diag(err[-3000:])
print(f"1..{n}")
sys.exit(1 if failed else 0)
