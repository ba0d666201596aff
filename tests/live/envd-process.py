#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""envd's process.Process on `serve`, over raw HTTP/1.1 from this script.

Every RPC as E2B's SDKs send it, and the ways a request can be wrong: the envelopes and
the end-stream frame are compared byte for byte, the chunked framing is read by hand so
that a stream dropped without its terminating chunk is seen as such.

TAP on stdout. Env: TS_CLI (the toren-sandbox binary), TOREN_SANDBOX_ROOT.
"""
import base64
import json
import os
import re
import select
import socket
import struct
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
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def env(payload, flags=0):
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack(">BI", flags, len(payload)) + payload


def basic(user):
    return {"Authorization": "Basic " + base64.b64encode(user.encode() + b":").decode()}


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


END_OK = env("{}", 2)


class Conn:
    """One HTTP/1.1 connection, read by hand."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.buf = b""
        self.closed = False
        self.deadline = 0

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        r, _, _ = select.select([self.s], [], [], left)
        if not r:
            raise TimeoutError
        try:
            d = self.s.recv(65536)
        except ConnectionResetError:
            d = b""
        if not d:
            self.closed = True
            raise EOFError
        self.buf += d

    def read_line(self, deadline):
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_exact(self, k, deadline):
        while len(self.buf) < k:
            self._fill(deadline)
        d, self.buf = self.buf[:k], self.buf[k:]
        return d

    def send(self, method, path, body=b"", headers=None):
        h = {"Host": "127.0.0.1", "Content-Length": str(len(body))}
        h.update(headers or {})
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in h.items() if v is not None) + "\r\n"
        self.s.sendall(head.encode() + body)

    def response_head(self, timeout=30):
        deadline = time.monotonic() + timeout
        status = int(self.read_line(deadline).split()[1])
        headers = {}
        while True:
            line = self.read_line(deadline)
            if not line:
                break
            k, v = line.decode().split(":", 1)
            headers[k.strip().lower()] = v.strip()
        return status, headers

    def body(self, headers, timeout=30):
        deadline = time.monotonic() + timeout
        if "content-length" in headers:
            return self.read_exact(int(headers["content-length"]), deadline)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            for chunk in self.chunks(deadline):
                if chunk is None:
                    break
                out += chunk
            return out
        return b""

    def chunks(self, deadline=None):
        """The chunks of a chunked body; None after the terminating chunk. Without a
        deadline, self.deadline is read at every wait (a stream's reader moves it)."""
        def dl():
            return deadline if deadline is not None else self.deadline

        while True:
            size = int(self.read_line(dl()).split(b";")[0], 16)
            if size == 0:
                while self.read_line(dl()):
                    pass
                yield None
                return
            d = self.read_exact(size, dl())
            self.read_exact(2, dl())
            yield d


class Stream:
    """A server-streaming call: its envelopes as they come, raw and parsed."""

    def __init__(self, addr, sid, method, msg, headers=None, raw=None, rcvbuf=None):
        self.c = Conn(addr)
        if rcvbuf:
            self.c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
             "E2b-Sandbox-Id": sid}
        h.update(headers or {})
        body = raw if raw is not None else env(compact(msg))
        self.c.send("POST", f"/process.Process/{method}", body, h)
        self.status, self.headers = self.c.response_head()
        self.data = b""
        self.ended = False   # the terminating chunk came
        self.dropped = False  # the connection closed before it
        self.gen = None
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self.gen = self.c.chunks()
        elif "content-length" in self.headers:
            self.data = self.c.read_exact(int(self.headers["content-length"]),
                                          time.monotonic() + 30)
            self.ended = True

    def _more(self, deadline):
        if self.ended or self.dropped:
            return False
        self.c.deadline = deadline
        # the generator reads with no deadline of its own: bound the wait here
        while not self.c.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            r, _, _ = select.select([self.c.s], [], [], left)
            if not r:
                raise TimeoutError
            try:
                d = self.c.s.recv(65536)
            except ConnectionResetError:
                d = b""
            if not d:
                self.dropped = True
                return False
            self.c.buf += d
        try:
            chunk = next(self.gen)
        except (EOFError, StopIteration):
            self.dropped = True
            return False
        if chunk is None:
            self.ended = True
        else:
            self.data += chunk
        return True

    def next(self, timeout=20):
        """(raw, flags, json) of the next envelope, or None when the body ended."""
        deadline = time.monotonic() + timeout
        while True:
            if len(self.data) >= 5:
                flags, k = struct.unpack(">BI", self.data[:5])
                if len(self.data) >= 5 + k:
                    raw, self.data = self.data[:5 + k], self.data[5 + k:]
                    return raw, flags, json.loads(raw[5:])
            if not self._more(deadline):
                return None

    def rest(self, timeout=20):
        out = []
        while True:
            e = self.next(timeout)
            if e is None:
                return out
            out.append(e)
            if e[1] == 2:
                # after the end-stream frame only the terminating chunk may come
                self.next(timeout)
                return out

    def close(self):
        self.c.close()


def unary(addr, sid, method, msg, headers=None, raw=None, ctype="application/json"):
    c = Conn(addr)
    h = {"Content-Type": ctype, "Connect-Protocol-Version": "1", "E2b-Sandbox-Id": sid}
    h.update(headers or {})
    c.send("POST", f"/process.Process/{method}", raw if raw is not None else compact(msg).encode(), h)
    status, headers = c.response_head()
    body = c.body(headers)
    c.close()
    return status, headers, body


def start_msg(cmd, args=None, **kw):
    proc = {"cmd": cmd}
    if args is not None:
        proc["args"] = args
    for k in ("envs", "cwd"):
        if k in kw:
            proc[k] = kw.pop(k)
    m = {"process": proc}
    m.update(kw)
    return m


def collect(st, timeout=20):
    """Everything a stream says: (start pid, stdout, stderr, pty, end event, last frame)."""
    out = {"pid": None, "stdout": b"", "stderr": b"", "pty": b"", "end": None, "frames": [],
           "endstream": None, "keepalives": 0}
    for raw, flags, j in st.rest(timeout):
        out["frames"].append(raw)
        if flags == 2:
            out["endstream"] = raw
            continue
        ev = j.get("event", {})
        if "start" in ev:
            out["pid"] = ev["start"]["pid"]
        elif "data" in ev:
            for k, v in ev["data"].items():
                out[k] += base64.b64decode(v)
        elif "end" in ev:
            out["end"] = raw
        elif "keepalive" in ev:
            out["keepalives"] += 1
    return out


def listing(addr, sid):
    status, _, body = unary(addr, sid, "List", {})
    if status != 200:
        return None
    return json.loads(body).get("processes", [])


def running_pids(addr, sid):
    return [p["pid"] for p in listing(addr, sid) or []]


def wait_gone(addr, sid, pid, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pid not in running_pids(addr, sid):
            return True
        time.sleep(0.2)
    return False


def end_event(code=0, sig=None):
    if sig:
        e = {"exitCode": -1, "status": f"signal: {sig}", "error": f"signal: {sig}"}
    elif code:
        e = {"exitCode": code, "exited": True, "status": f"exit status {code}",
             "error": f"exit status {code}"}
    else:
        e = {"exited": True, "status": "exit status 0"}
    return env(compact({"event": {"end": e}}))


def stream_error(code, msg):
    return env(compact({"error": {"code": code, "message": msg}}), 2)


def skip_all(why):
    if os.environ.get("TS_TESTS_MUST_WORK") == "1":
        print("1..1\nnot ok 1 - " + why + " (TS_TESTS_MUST_WORK=1)")
        sys.exit(1)
    print("1..0 # SKIP " + why)
    sys.exit(0)


def main():
    r = subprocess.run([cli, "create", "--ttl", "0"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not r.stdout.strip():
        skip_all(f"no sandbox: {r.stderr.strip()[:200]}")
    sid = r.stdout.strip().splitlines()[-1]
    sid2 = None
    serve = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen",
                              "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        line = serve.stdout.readline()
        m = re.search(r"envd on (\S+)", line)
        if not m:
            t(False, f"serve says where it listens ({line.strip()!r}, "
                     f"{serve.stderr.read(2000) if serve.poll() is not None else ''})")
            return
        addr = m.group(1).rstrip(",")
        run(addr, sid)
        quiet_disconnects(addr, sid, serve.pid)
        r = subprocess.run([cli, "create", "--ttl", "0"], capture_output=True, text=True,
                           timeout=120)
        sid2 = r.stdout.strip().splitlines()[-1] if r.returncode == 0 else None
        if sid2:
            killed_mid_stream(addr, sid2)
        else:
            t(False, f"a second sandbox for the kill case ({r.stderr.strip()[:200]})")
        # serve stopping with a stream open: the stream goes, nothing leaks
        last = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False))
        last.next()
    finally:
        serve.terminate()
        try:
            _, err = serve.communicate(timeout=20)
            t(serve.returncode == 0 and "Sanitizer" not in err and "runtime error" not in err,
              f"serve ends cleanly on SIGTERM, no sanitizer report (status {serve.returncode})")
            if serve.returncode != 0 or "Sanitizer" in err or "runtime error" in err:
                diag(err[-4000:])
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
            t(False, "serve ends on SIGTERM within 20 s")
        for s in (sid, sid2):
            if s:
                subprocess.run([cli, "rm", "-f", s], capture_output=True, timeout=120)


def quiet_disconnects(addr, sid, serve_pid):
    """Clients gone from streams that send nothing (a process that prints nothing, and a
    keepalive asked for once a day): serve lets go of their connections and handles at
    once, and the processes run on."""
    def fds():
        try:
            return len(os.listdir(f"/proc/{serve_pid}/fd"))
        except OSError:
            return None

    before = fds()
    pids = []
    for _ in range(20):
        st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False),
                    headers={"Keepalive-Ping-Interval": "86400"})
        raw, flags, j = st.next()
        pids.append(j["event"]["start"]["pid"])
        st.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (fds() or 0) > (before or 0) + 2:
        time.sleep(0.1)
    after = fds()
    t(before is not None and after is not None and after <= before + 2,
      f"20 clients gone from quiet streams: serve holds no connection or handle of theirs "
      f"(fds {before} before, {after} after)")
    running = running_pids(addr, sid) or []
    t(all(p in running for p in pids), "and their processes run on")
    for p in pids:
        unary(addr, sid, "SendSignal", {"process": {"pid": p}, "signal": "SIGNAL_SIGKILL"})


def run(addr, sid):
    # --- Start: output, exit code, the frames byte for byte
    st = Stream(addr, sid, "Start",
                start_msg("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"], stdin=False))
    t(st.status == 200 and st.headers.get("content-type") == "application/connect+json",
      f"Start: 200 application/connect+json ({st.status} {st.headers.get('content-type')})")
    o = collect(st)
    first = o["frames"][0] if o["frames"] else b""
    t(o["pid"] and first == env(compact({"event": {"start": {"pid": o["pid"]}}})),
      f"the first frame is the start event, byte for byte ({first!r})")
    t(o["stdout"] == b"out\n" and o["stderr"] == b"err\n",
      f"stdout and stderr as data events ({o['stdout']!r}, {o['stderr']!r})")
    t(o["end"] == end_event(3), f"end event of exit 3, byte for byte ({o['end']!r})")
    t(o["endstream"] == END_OK and o["frames"][-1] == END_OK and st.ended,
      "then the end-stream frame 02 00000002 {} and the terminating chunk")
    st.close()

    st = Stream(addr, sid, "Start", start_msg("/bin/true", stdin=False))
    o = collect(st)
    t(o["end"] == end_event(0), f"exit 0: exitCode left out, exited true ({o['end']!r})")
    st.close()

    # data frames: {"event":{"data":{"stdout":"<standard base64>"}}}
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "printf '\\377\\376\\375'"],
                                              stdin=False))
    o = collect(st)
    data = [f for f in o["frames"] if b'"data"' in f]
    t(data == [env(compact({"event": {"data": {"stdout": "//79"}}}))],
      f"bytes are standard base64 ({data!r})")
    st.close()

    # envs, cwd, ~, relative cwd
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "pwd; echo $FOO"],
                                              envs={"FOO": "bar baz"}, cwd="/tmp", stdin=False))
    o = collect(st)
    t(o["stdout"] == b"/tmp\nbar baz\n", f"cwd and envs reach the process ({o['stdout']!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "pwd"], cwd="~", stdin=False))
    o = collect(st)
    t(o["stdout"] == b"/home/user\n", f"cwd `~` of the default user ({o['stdout']!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "pwd"], cwd="..", stdin=False))
    o = collect(st)
    t(o["stdout"] == b"/home\n", f"a relative cwd is taken from the home ({o['stdout']!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "id -u; pwd"], cwd="~",
                                              stdin=False), headers=basic("root"))
    o = collect(st)
    if os.environ.get("TS_MODE", "root") == "root":
        t(o["stdout"] == b"0\n/root\n", f"Basic root: uid 0, `~` is /root ({o['stdout']!r})")
    else:
        # a sandbox made by an unprivileged user without --user root has no root
        e = o["endstream"] or b""
        t(e[:1] == b"\x02" and b'"code":"permission_denied"' in e and o["pid"] is None,
          f"Basic root where the sandbox has no root: permission_denied ({e!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/true"), headers=basic("nobody"))
    frames = st.rest()
    t([f[0] for f in frames] == [stream_error("unauthenticated", "invalid username: 'nobody'")],
      f"an unknown user: unauthenticated ({frames and frames[0][0]!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/true"),
                headers={"Authorization": "Bearer x"})
    frames = st.rest()
    t(len(frames) == 1 and b'"code":"unauthenticated"' in frames[0][0],
      f"a malformed Authorization: unauthenticated ({frames and frames[0][0]!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "id -u"], stdin=False),
                headers=basic("user"))
    o = collect(st)
    t(o["stdout"] == b"1000\n", f"Basic user: uid 1000 ({o['stdout']!r})")
    st.close()

    # --- bad cwd, unknown pid: 200 + a lone end-stream frame
    st = Stream(addr, sid, "Start", start_msg("/bin/true", cwd="/nonexistent-dir-42"))
    frames = st.rest()
    want = stream_error("invalid_argument", "cwd '/nonexistent-dir-42' does not exist")
    t(st.status == 200 and [f[0] for f in frames] == [want],
      f"missing cwd: invalid_argument, byte for byte ({frames and frames[0][0]!r})")
    st.close()

    st = Stream(addr, sid, "Connect", {"process": {"pid": 4000000}})
    frames = st.rest()
    want = stream_error("not_found", "process with pid 4000000 not found")
    t(st.status == 200 and [f[0] for f in frames] == [want],
      f"Connect to an unknown pid: not_found ({frames and frames[0][0]!r})")
    st.close()

    # --- background + Connect from a second connection; a disconnect keeps it running
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "read x; echo got:$x"],
                                              stdin=True, tag="reader"),
                headers={"Keepalive-Ping-Interval": "50"})
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    st.close()  # the SDK's disconnect()
    time.sleep(0.5)
    procs = listing(addr, sid) or []
    mine = [p for p in procs if p["pid"] == pid]
    t(len(mine) == 1, f"a client gone does not end its process (List has pid {pid})")
    want = {"config": {"cmd": "/bin/sh", "args": ["-c", "read x; echo got:$x"]}, "pid": pid,
            "tag": "reader"}
    t(mine and compact(mine[0]) == compact(want),
      f"List entry: config, pid, tag ({compact(mine[0]) if mine else None})")
    c2 = Stream(addr, sid, "Connect", {"process": {"pid": pid}})
    raw, flags, j = c2.next()
    t(raw == env(compact({"event": {"start": {"pid": pid}}})),
      f"Connect by pid on a new connection: the start event first ({raw!r})")
    status, headers, body = unary(addr, sid, "SendInput",
                                  {"process": {"pid": pid}, "input": {"stdin": "aGVsbG8K"}})
    t(status == 200 and body == b"{}" and headers.get("content-type") == "application/json",
      f"SendInput stdin: 200 {{}} ({status} {body!r})")
    o = collect(c2)
    t(o["stdout"] == b"got:hello\n" and o["end"] == end_event(0) and o["endstream"] == END_OK,
      f"the connected stream hears the output and the end ({o['stdout']!r})")
    c2.close()
    t(wait_gone(addr, sid, pid), "a finished process leaves List")

    # --- stdin: CloseStdin ends `cat`
    st = Stream(addr, sid, "Start", start_msg("/bin/cat", stdin=True))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    s1 = unary(addr, sid, "SendInput", {"process": {"pid": pid}, "input": {"stdin": "YWJj"}})
    s2 = unary(addr, sid, "CloseStdin", {"process": {"pid": pid}})
    o = collect(st)
    t(s1[0] == 200 and s2[0] == 200 and s2[2] == b"{}" and o["stdout"] == b"abc" and
      o["end"] == end_event(0), f"CloseStdin: cat sees EOF and ends ({o['stdout']!r}, {s2})")
    st.close()

    # stdin absent: a pipe (clients older than the field); false: /dev/null
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "cat; echo end"]))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    unary(addr, sid, "SendInput", {"process": {"pid": pid}, "input": {"stdin": "eHl6"}})
    unary(addr, sid, "CloseStdin", {"process": {"pid": pid}})
    o = collect(st)
    t(o["stdout"] == b"xyzend\n", f"stdin absent: a pipe ({o['stdout']!r})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "cat; echo end; sleep 30"],
                                              stdin=False))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    time.sleep(0.3)
    status, _, body = unary(addr, sid, "SendInput",
                            {"process": {"pid": pid}, "input": {"stdin": "eHl6"}})
    t(status == 500 and body == compact({"code": "internal", "message":
                                         "error writing to stdin: stdin not enabled or "
                                         "closed"}).encode(),
      f"stdin false: SendInput is internal ({status} {body!r})")
    status, _, body = unary(addr, sid, "Update",
                            {"process": {"pid": pid}, "pty": {"size": {"cols": 10, "rows": 5}}})
    t(status == 500 and b"tty not assigned to process" in body,
      f"Update on a pipe process: internal ({status} {body!r})")
    status, _, body = unary(addr, sid, "SendInput",
                            {"process": {"pid": pid}, "input": {"pty": "eHl6"}})
    t(status == 500 and body == compact({"code": "internal", "message":
                                         "error writing to tty: tty not assigned to "
                                         "process"}).encode(),
      f"pty input to a pipe process: internal ({status} {body!r})")
    # --- signals
    status, _, body = unary(addr, sid, "SendSignal",
                            {"process": {"pid": pid}, "signal": "SIGNAL_SIGINT"})
    t(status == 501 and b'"code":"unimplemented"' in body,
      f"a signal other than SIGKILL/SIGTERM: unimplemented ({status} {body!r})")
    status, _, body = unary(addr, sid, "SendSignal",
                            {"process": {"pid": pid}, "signal": "SIGNAL_SIGTERM"})
    o = collect(st)
    t(status == 200 and body == b"{}" and o["stdout"] == b"end\n" and
      o["end"] == end_event(sig="terminated") and o["endstream"] == END_OK,
      f"SIGTERM: end event `signal: terminated` ({o['end']!r})")
    st.close()

    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    status, _, body = unary(addr, sid, "SendSignal",
                            {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    o = collect(st)
    t(status == 200 and o["end"] == end_event(sig="killed") and o["endstream"] == END_OK,
      f"SIGKILL: exitCode -1, `signal: killed`, no exited ({o['end']!r})")
    st.close()

    for method, msg in (("SendSignal", {"signal": "SIGNAL_SIGKILL"}),
                        ("SendInput", {"input": {"stdin": "eA=="}}),
                        ("CloseStdin", {}),
                        ("Update", {"pty": {"size": {"cols": 80, "rows": 24}}})):
        msg = dict(msg, process={"pid": 4000000})
        status, headers, body = unary(addr, sid, method, msg)
        t(status == 404 and body == b'{"code":"not_found","message":"process with pid 4000000 '
                                    b'not found"}' and
          headers.get("content-type") == "application/json",
          f"{method} of an unknown pid: 404 not_found ({status} {body!r})")

    # --- pty: size at start, Update, input
    st = Stream(addr, sid, "Start",
                {"process": {"cmd": "/bin/sh",
                             "args": ["-c", "stty size; read x; stty size; echo done-$x"],
                             "envs": {"TERM": "xterm-256color"}},
                 "pty": {"size": {"cols": 100, "rows": 30}}})
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    seen = b""
    end = time.monotonic() + 15
    while b"30 100" not in seen and time.monotonic() < end:
        e = st.next(15)
        if e is None:
            break
        if "data" in e[2].get("event", {}):
            seen += base64.b64decode(e[2]["event"]["data"].get("pty", ""))
    t(b"30 100" in seen, f"pty: the size given at Start ({seen!r})")
    s1 = unary(addr, sid, "Update", {"process": {"pid": pid},
                                     "pty": {"size": {"cols": 120, "rows": 40}}})
    s2 = unary(addr, sid, "SendInput", {"process": {"pid": pid}, "input": {"stdin": "eA=="}})
    s3 = unary(addr, sid, "CloseStdin", {"process": {"pid": pid}})
    s4 = unary(addr, sid, "SendInput", {"process": {"pid": pid},
                                        "input": {"pty": base64.b64encode(b"ok\n").decode()}})
    o = collect(st)
    seen += o["pty"]
    t(s1[0] == 200 and s1[2] == b"{}", f"Update resizes: 200 {{}} ({s1[0]} {s1[2]!r})")
    t(s2[0] == 500 and b"error writing to stdin" in s2[2],
      f"stdin input to a pty process: internal ({s2[0]} {s2[2]!r})")
    t(s3[0] == 500 and b"error closing stdin" in s3[2],
      f"CloseStdin of a pty process: internal ({s3[0]} {s3[2]!r})")
    t(s4[0] == 200 and b"40 120" in seen and b"done-ok" in seen and o["end"] == end_event(0),
      f"pty input and the new size inside ({seen!r})")
    st.close()

    # --- deadline: deadline_exceeded, no end event, the process killed
    t0 = time.monotonic()
    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False),
                headers={"Connect-Timeout-Ms": "1500"})
    o = collect(st, 20)
    took = time.monotonic() - t0
    t(o["end"] is None and o["endstream"] == stream_error("deadline_exceeded",
                                                         "context deadline exceeded") and
      len(o["frames"]) == 2 and st.ended,
      f"Connect-Timeout-Ms: start, then deadline_exceeded and no end event ({o['frames']!r})")
    t(1.3 < took < 10, f"at the deadline ({took:.2f} s for 1.5 s)")
    t(o["pid"] and wait_gone(addr, sid, o["pid"], 5), "the process is killed at the deadline")
    st.close()

    # Connect's deadline ends only the stream
    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    st.close()
    c2 = Stream(addr, sid, "Connect", {"process": {"pid": pid}},
                headers={"Connect-Timeout-Ms": "800"})
    o = collect(c2)
    t(o["pid"] == pid and o["endstream"] == stream_error("deadline_exceeded",
                                                        "context deadline exceeded"),
      f"Connect with a timeout: deadline_exceeded ({o['frames']!r})")
    time.sleep(0.5)
    t(pid in running_pids(addr, sid), "and the process runs on")
    unary(addr, sid, "SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    c2.close()

    # --- keepalives after the interval of silence
    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["3.5"], stdin=False),
                headers={"Keepalive-Ping-Interval": "1"})
    o = collect(st)
    ka = [f for f in o["frames"] if f == env('{"event":{"keepalive":{}}}')]
    t(o["frames"] and o["frames"][0].find(b'"start"') > 0 and 2 <= len(ka) <= 4 and
      o["end"] == end_event(0),
      f"Keepalive-Ping-Interval 1: keepalive events while silent ({len(ka)} in 3.5 s)")
    st.close()

    # --- envelopes that are wrong
    good = env(compact(start_msg("/bin/true")))
    for desc, raw, code, msg in (
            ("compressed flag", b"\x01" + good[1:], "invalid_argument",
             "protocol error: sent compressed message without compression support"),
            ("short body", good[:-1], "invalid_argument",
             f"protocol error: promised {len(good) - 5} bytes in enveloped message, got "
             f"{len(good) - 6} bytes"),
            ("trailing bytes", good + b"\x00", "invalid_argument",
             "protocol error: 1 bytes after the request message"),
            ("declared over 4 MiB", struct.pack(">BI", 0, (4 << 20) + 1) + b"{}",
             "resource_exhausted", "message size 4194305 is larger than configured max 4194304"),
    ):
        st = Stream(addr, sid, "Start", None, raw=raw)
        frames = st.rest()
        t(st.status == 200 and [f[0] for f in frames] == [stream_error(code, msg)],
          f"{desc}: {code}, byte for byte ({frames and frames[0][0]!r})")
        st.close()
    st = Stream(addr, sid, "Start", None, raw=env("not json"))
    frames = st.rest()
    t(st.status == 200 and len(frames) == 1 and frames[0][1] == 2 and
      frames[0][2]["error"]["code"] == "invalid_argument",
      f"non-JSON payload: invalid_argument ({frames and frames[0][0]!r})")
    st.close()
    big = env(b'{"process":{"cmd":"/bin/true","args":["' + b"x" * (5 << 20) + b'"]}}')
    st = Stream(addr, sid, "Start", None, raw=big)
    t(st.status == 413, f"a body over the envelope bound: 413 before any parsing ({st.status})")
    st.close()

    # --- content types, methods, unimplemented
    st = Stream(addr, sid, "Start", None, raw=compact(start_msg("/bin/true")).encode(),
                headers={"Content-Type": "application/json"})
    t(st.status == 415 and "application/connect+json" in st.headers.get("accept-post", ""),
      f"Start as application/json: 415 with Accept-Post ({st.status})")
    st.close()
    st = Stream(addr, sid, "Start", start_msg("/bin/true", stdin=False),
                headers={"Content-Type": "application/connect+json; charset=utf-8"})
    o = collect(st)
    t(o["end"] == end_event(0), "application/connect+json; charset=utf-8 is accepted")
    st.close()
    status, headers, _ = unary(addr, sid, "List", {}, ctype="application/connect+json")
    t(status == 415 and headers.get("accept-post", "").startswith("application/json"),
      f"List as application/connect+json: 415 ({status})")
    status, _, body = unary(addr, sid, "List", {}, ctype="application/json; charset=utf-8")
    t(status == 200 and body.startswith(b"{"), f"List as application/json; charset=utf-8 ({status})")
    c = Conn(addr)
    c.send("GET", "/process.Process/List", b"", {"E2b-Sandbox-Id": sid})
    status, headers = c.response_head()
    c.close()
    t(status == 405 and headers.get("allow") == "POST", f"GET: 405 Allow: POST ({status})")
    status, _, body = unary(addr, sid, "List", None, raw=b"{not json")
    t(status == 400 and json.loads(body)["code"] == "invalid_argument",
      f"unary non-JSON: 400 invalid_argument ({body!r})")
    st = Stream(addr, sid, "StreamInput", None, raw=env('{"start":{"process":{"pid":1}}}'))
    frames = st.rest()
    t(st.status == 200 and [f[0] for f in frames] ==
      [stream_error("unimplemented", "process.Process.StreamInput is not implemented")],
      f"StreamInput: unimplemented ({frames and frames[0][0]!r})")
    st.close()

    # --- List shows running processes only, with the whole config
    st = Stream(addr, sid, "Start",
                start_msg("/bin/sleep", ["30"], envs={"A": "1"}, cwd="/tmp", tag="t1",
                          stdin=False))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    st.close()
    procs = listing(addr, sid) or []
    want = {"config": {"cmd": "/bin/sleep", "args": ["30"], "envs": {"A": "1"}, "cwd": "/tmp"},
            "pid": pid, "tag": "t1"}
    mine = [p for p in procs if p["pid"] == pid]
    t(mine and compact(mine[0]) == compact(want), f"List: {compact(mine[0]) if mine else None}")
    t(all(p["pid"] != o["pid"] for p in procs), "List leaves finished processes out")
    unary(addr, sid, "SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    t(wait_gone(addr, sid, pid), "SendSignal SIGKILL ends a process no stream watches")

    # --- the start event does not wait for output (the SDK gives up without it)
    t0 = time.monotonic()
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "sleep 3; echo late"],
                                              stdin=False))
    e = st.next(10)
    took = time.monotonic() - t0
    t(e and "start" in e[2].get("event", {}) and took < 2,
      f"the start event comes before any output ({took:.2f} s, the output after 3 s)")
    o = collect(st)
    t(o["stdout"] == b"late\n" and o["end"] == end_event(0), "and the rest follows")
    st.close()

    # --- 2 MiB of stdin in one SendInput
    st = Stream(addr, sid, "Start", start_msg("/usr/bin/wc", ["-c"], stdin=True))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    blob = base64.b64encode(os.urandom(2 << 20)).decode()
    s1 = unary(addr, sid, "SendInput", {"process": {"pid": pid}, "input": {"stdin": blob}})
    s2 = unary(addr, sid, "CloseStdin", {"process": {"pid": pid}})
    o = collect(st)
    t(s1[0] == 200 and s2[0] == 200 and o["stdout"].strip() == str(2 << 20).encode(),
      f"2 MiB of stdin in one SendInput ({s1[0]}, wc says {o['stdout'].strip()!r})")
    st.close()

    # --- Connect hears only what comes after it (envd forks the event channels)
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "echo before; sleep 2; echo after"],
                                              stdin=False))
    seen = b""
    pid = None
    while b"before" not in seen:
        e = st.next(10)
        if e is None:
            break
        ev = e[2].get("event", {})
        pid = ev.get("start", {}).get("pid", pid)
        seen += base64.b64decode(ev.get("data", {}).get("stdout", ""))
    st.close()
    c2 = Stream(addr, sid, "Connect", {"process": {"pid": pid}})
    o = collect(c2)
    t(o["pid"] == pid and o["stdout"] == b"after\n" and o["end"] == end_event(0),
      f"Connect after output was seen: only the later output ({o['stdout']!r})")
    c2.close()

    # --- a late Connect to a process that ended: start first, its end last
    st = Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", "echo bye; exit 2"], stdin=False))
    o = collect(st)
    st.close()
    c2 = Stream(addr, sid, "Connect", {"process": {"pid": o["pid"]}})
    o2 = collect(c2)
    t(o2["frames"] == [o["frames"][0], end_event(2), END_OK],
      f"Connect after the end: start and end only, no output again ({o2['frames']!r})")
    c2.close()
    status, _, body = unary(addr, sid, "SendSignal",
                            {"process": {"pid": o["pid"]}, "signal": "SIGNAL_SIGKILL"})
    t(status == 404 and body == compact({"code": "not_found", "message":
                                         f"process with pid {o['pid']} not found"}).encode(),
      f"SendSignal to a process that ended: not_found ({status} {body!r})")

    # --- a selector by tag
    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["30"], tag="by-tag", stdin=False))
    raw, flags, j = st.next()
    pid = j["event"]["start"]["pid"]
    st.close()
    c2 = Stream(addr, sid, "Connect", {"process": {"tag": "by-tag"}})
    e = c2.next()
    t(e and e[0] == env(compact({"event": {"start": {"pid": pid}}})),
      f"Connect by tag ({e and e[0]!r})")
    status, _, body = unary(addr, sid, "SendSignal",
                            {"process": {"tag": "by-tag"}, "signal": "SIGNAL_SIGKILL"})
    o = collect(c2)
    t(status == 200 and o["end"] == end_event(sig="killed"), f"SendSignal by tag ({o['end']!r})")
    c2.close()
    status, _, body = unary(addr, sid, "CloseStdin", {"process": {"tag": "no-such-tag"}})
    t(status == 404 and body == b'{"code":"not_found","message":"process with tag no-such-tag '
                                b'not found"}', f"an unknown tag: not_found ({body!r})")

    # --- a client that reads late: everything arrives, in order (backpressure)
    st = Stream(addr, sid, "Start", start_msg("/usr/bin/seq", ["1", "1000000"], stdin=False),
                rcvbuf=65536)
    time.sleep(2)
    o = collect(st, 60)
    want = "".join(f"{i}\n" for i in range(1, 1000001)).encode()
    t(o["stdout"] == want and o["end"] == end_event(0) and o["endstream"] == END_OK,
      f"a slow reader gets all {len(want)} bytes in order ({len(o['stdout'])})")
    st.close()

    # --- many streams at once, each its own process
    many = [Stream(addr, sid, "Start", start_msg("/bin/sh", ["-c", f"sleep 1; echo n{i}"],
                                                 stdin=False)) for i in range(40)]
    outs = [collect(m, 60) for m in many]
    t(all(o["stdout"] == f"n{i}\n".encode() and o["end"] == end_event(0)
          for i, o in enumerate(outs)),
      f"40 streams at once ({sum(o['end'] == end_event(0) for o in outs)} ended well)")
    for m in many:
        m.close()

    # unknown sandbox: E2B's proxy answer
    status, _, body = unary(addr, "nosuchsandbox", "List", {})
    t(status == 502 and json.loads(body).get("code") == 502, f"unknown sandbox: 502 ({body!r})")


def killed_mid_stream(addr, sid):
    """A sandbox stopped under a stream: dropped without end-stream or last chunk."""
    st = Stream(addr, sid, "Start", start_msg("/bin/sleep", ["60"], stdin=False))
    e = st.next()
    t(e and e[2].get("event", {}).get("start"), "a stream on a second sandbox")
    subprocess.run([cli, "stop", sid], capture_output=True, timeout=120)
    frames = []
    try:
        while True:
            e = st.next(30)
            if e is None:
                break
            frames.append(e[0])
    except TimeoutError:
        frames.append(b"<timeout>")
    t(st.dropped and not st.ended and all(f[0] != 2 for f in frames),
      f"a sandbox stopped mid-stream: the connection drops, no 0x02, no last chunk "
      f"({frames!r}, dropped {st.dropped}, ended {st.ended})")
    st.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as ex:  # a crash is a failure, never a silent pass
        import traceback
        diag(traceback.format_exc())
        t(False, f"the script ran to its end ({ex!r})")
    print(f"1..{n}")
    sys.exit(1 if failed else 0)
