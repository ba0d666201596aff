#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hardening cases (issue 7): each finding of the outside review as a live test, from
inside a sandbox and from the host. Case ids H<N> are the review's finding numbers, T<N>
the red-team pass's, B1 and R1 two features of the same work; docs/test-cases.md says
what each one means.

TAP on stdout. Env (modes.sh): TS_CLI, TS_MODE (root, user, userns), TS_STAGE,
TOREN_SANDBOX_ROOT. Every sandbox created here is removed at the end.
"""
import ctypes
import fcntl
import json
import os
import pty
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

cli = os.environ["TS_CLI"]
mode = os.environ.get("TS_MODE", "root")
state_root = os.environ["TOREN_SANDBOX_ROOT"]
n = 0
failed = 0
created = []
tmp = tempfile.mkdtemp(prefix="ts-hard-")


def t(cond, desc):
    global n, failed
    n += 1
    desc = " ".join(str(desc).split()).replace("#", "%23")  # one TAP line
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}", flush=True)


def diag(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


def ts(*args, input=None, timeout=60, env=None):
    """Run the CLI; returns (status, stdout, stderr)."""
    try:
        p = subprocess.run([cli, *args], input=input, capture_output=True, timeout=timeout,
                           env=env)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "", "timed out"


def create(*args):
    st, out, err = ts("create", *args)
    if st != 0:
        diag(err)
        return None
    sid = out.strip().splitlines()[-1]
    created.append(sid)
    return sid


def inspect(sid):
    st, out, _ = ts("inspect", sid)
    return json.loads(out) if st == 0 else {}


def init_pid(sid):
    info = inspect(sid).get("init") or {}
    return int(info.get("pid") or 0)


def running(sid):
    """Running and answering, without starting it (ps refuses a stopped sandbox)."""
    st, _, _ = ts("ps", sid, timeout=30)
    return st == 0 and inspect(sid).get("state") == "running"


def under_pty(argv, timeout=30.0, after=None):
    """Run argv on a new pty; returns (status, output). after(fd) runs once it exited."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out = b""
    end = time.monotonic() + timeout
    status = None
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            out += chunk
        w, st = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            status = os.waitstatus_to_exitcode(st)
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    # what is still in the pty
    while True:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if after:
        after(fd)
    os.close(fd)
    return status, out.decode(errors="replace")


def proc_cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return ""


# --- H1: a terminal never reaches the sandbox ------------------------------------------
sb = create("--name", f"hard-{os.getpid()}")
t(sb is not None, f"create a sandbox for the cases ({sb})")
if sb is None:
    print(f"1..{n}")
    sys.exit(1)

st, out = under_pty([cli, "exec", sb, "--", "sh", "-c",
                     "readlink /proc/self/fd/1; readlink /proc/self/fd/2; echo visible-$((6*7))"])
t(st == 0 and "visible-42" in out, "H1 exec under a host terminal: output reaches the terminal (control)")
t("pipe:" in out and "/dev/pts" not in out,
  "H1 exec under a host terminal: the command's stdout/stderr are pipes, not the terminal")
if "pipe:" not in out:
    diag(out)

ws = os.path.join(state_root, sb, "workspace")


def type_secret(fd):
    # typed into the terminal after exec returned
    time.sleep(0.3)
    os.write(fd, b"s3cret-typed-later\n")
    time.sleep(2.5)


st, out = under_pty([cli, "exec", sb, "--", "sh", "-c",
                     "(setsid sh -c 'sleep 1; cat <&2 >/home/user/stolen 2>/dev/null; "
                     "cat <&1 >>/home/user/stolen 2>/dev/null; cat </dev/tty >>/home/user/stolen 2>/dev/null' &); echo started"],
                    after=type_secret)
st2, stolen, _ = ts("exec", sb, "--", "sh", "-c", "cat /home/user/stolen 2>/dev/null; true")
t(st == 0 and "started" in out, "H1 exec of a command leaving a setsid survivor returns (control)")
t("s3cret" not in stolen,
  "H1 a process that outlived exec cannot read what is typed into the terminal afterwards")
ts("exec", sb, "--", "sh", "-c", "pkill -x cat; rm -f /home/user/stolen; true")

st, out = under_pty([cli, "run", "--", "sh", "-c",
                     "readlink /proc/self/fd/0; readlink /proc/self/fd/1; echo run-$((6*7))"])
t(st == 0 and "run-42" in out and "pipe:" in out and "/dev/pts" not in out,
  "H1 run under a host terminal: stdin/stdout are pipes, output reaches the terminal")

st, out = under_pty([cli, "exec", "-d", sb, "--", "sh", "-c",
                     "ls -l /proc/self/fd/ > /home/user/dfds"])
time.sleep(0.5)
_, dfds, _ = ts("exec", sb, "--", "cat", "/home/user/dfds")
t("/dev/pts" not in dfds and "pipe:" in dfds, "H1 exec -d under a terminal: no terminal fd inside")

# --- H2: forged signals do not stop a durable sandbox ----------------------------------
forge = r"""
import ctypes, os, signal, fcntl
libc = ctypes.CDLL(None, use_errno=True)
class SI(ctypes.Structure):
    _fields_ = [("signo", ctypes.c_int), ("errno", ctypes.c_int), ("code", ctypes.c_int),
                ("pad", ctypes.c_int), ("pid", ctypes.c_int), ("uid", ctypes.c_int),
                ("rest", ctypes.c_byte * 104)]
for sig in (15, 2, 1):
    si = SI(); si.signo = sig; si.code = -1; si.pid = 0
    r = libc.syscall(129, 1, sig, ctypes.byref(si))   # rt_sigqueueinfo, si_pid forged 0
    si.code = 0                                        # SI_USER: the kernel refuses it
    r2 = libc.syscall(129, 1, sig, ctypes.byref(si))
    print("queue", sig, r, r2, ctypes.get_errno())
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETOWN, 1)
fcntl.fcntl(r, 10, signal.SIGTERM)                     # F_SETSIG
fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)
os.write(w, b"x")
print("sigio sent")
"""
st, out, err = ts("exec", sb, "--", "python3", "-c", forge)
t(st == 0 and "sigio sent" in out, "H2 forged signals sent from inside (control)")
time.sleep(0.5)
t(running(sb), "H2 rt_sigqueueinfo with si_pid 0 and SIGIO/F_SETSIG(SIGTERM) on init leave it running")
# T2 (red team): with the pending-signal budget it shares with init used up, a signal
# from inside loses its siginfo and reads as SI_USER from pid 0: init takes no signal
# as a request at all now, and stop goes through the socket
fill = r"""
import ctypes, signal, os
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n = 0
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
while libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) == 0:
    n += 1
print("queued", n, "errno", ctypes.get_errno())
print("tgkill", libc.syscall(234, 1, 1, signal.SIGTERM))
"""
st, out, err = ts("exec", sb, "--", "python3", "-c", fill)
time.sleep(0.5)
t(st == 0 and "queued" in out and running(sb),
  f"T2 SIGTERM to init from inside with the signal budget used up leaves it running ({out.strip()} {err.strip()[:80]})")
pid1 = init_pid(sb)
if pid1 > 0:
    os.kill(pid1, signal.SIGTERM)
    time.sleep(0.5)
    t(running(sb), "T2 a durable init takes no signal as a request, SIGTERM from outside neither")
    st, out, err = ts("stop", sb)
    t(st == 0 and inspect(sb).get("state") != "running", f"T2 stop still stops it ({err.strip()})")
else:
    t(False, "H2 init pid from inspect")

# --- H3: no process inside acts on init through its pid ------------------------------
probe = r"""
import ctypes, os, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *a):
    r = libc.syscall(nr, *[ctypes.c_long(x) for x in a])
    return 0 if r >= 0 else ctypes.get_errno()
buf = (ctypes.c_ulong * 2)(4, 4)
cpu = (ctypes.c_ulong * 2)(2, 2)
old = (ctypes.c_ulong * 2)()
res = {}
# prlimit64(pid, resource, new, old): 302; RLIMIT_NOFILE 7, RLIMIT_CPU 0
res["prlimit-nofile"] = call(302, 1, 7, ctypes.addressof(buf), 0)
res["prlimit-cpu"] = call(302, 1, 0, ctypes.addressof(cpu), 0)
res["prlimit-high-bits"] = call(302, 0x100000001, 7, ctypes.addressof(buf), 0)
res["prlimit-get-1"] = call(302, 1, 7, 0, ctypes.addressof(old))
res["prlimit-self-0"] = call(302, 0, 7, 0, ctypes.addressof(old))
res["prlimit-self-pid"] = call(302, os.getpid(), 7, 0, ctypes.addressof(old))
param = (ctypes.c_int * 1)(0)
res["sched_setscheduler"] = call(144, 1, 5, ctypes.addressof(param))   # SCHED_IDLE
res["sched_setparam"] = call(142, 1, ctypes.addressof(param))
mask = (ctypes.c_ulong * 1)(1)
res["sched_setaffinity"] = call(203, 1, 8, ctypes.addressof(mask))
res["sched_setaffinity-self"] = call(203, 0, 8, ctypes.addressof(mask))
res["setpriority-pid1"] = call(141, 0, 1, 19)
res["setpriority-user"] = call(141, 2, 0, 19)
res["setpgid-join-1"] = call(109, 0, 1)
res["setpriority-pgrp-own"] = call(141, 1, 0, 1)
res["setpriority-self"] = call(141, 0, 0, 1)
res["ioprio_set-pid1"] = call(251, 1, 1, (3 << 13))
res["ioprio_set-user"] = call(251, 3, 0, (3 << 13))
res["ioprio_set-self"] = call(251, 1, 0, (2 << 13) | 4)
res["process_madvise"] = call(440, 0, 0, 0, 0, 0)
print(" ".join("%s=%d" % kv for kv in res.items()))
"""
sb3 = create()
pid1 = init_pid(sb3)
limits_before = open(f"/proc/{pid1}/limits").read() if pid1 else ""
st, out, err = ts("exec", sb3, "--", "python3", "-c", probe)
res = dict(kv.split("=") for kv in out.split()) if st == 0 else {}
EPERM = "1"
for key in ("prlimit-nofile", "prlimit-cpu", "prlimit-high-bits", "prlimit-get-1", "sched_setscheduler",
            "sched_setparam", "sched_setaffinity", "setpriority-pid1", "setpriority-user",
            "setpgid-join-1", "ioprio_set-pid1", "ioprio_set-user", "process_madvise"):
    t(res.get(key) == EPERM, f"H3 {key} against init: EPERM (got {res.get(key)})")
for key in ("prlimit-self-0", "prlimit-self-pid", "sched_setaffinity-self", "setpriority-self",
            "setpriority-pgrp-own", "ioprio_set-self"):
    t(res.get(key) == "0", f"H3 {key}: allowed (control; got {res.get(key)})")
st, out, err = ts("exec", sb3, "--", "sh", "-c", "kill -KILL -1; echo after")
time.sleep(0.3)
t(running(sb3), "H3 kill(-1, SIGKILL) from inside leaves init and the sandbox running")
limits_after = open(f"/proc/{pid1}/limits").read() if pid1 else "x"
t(limits_before == limits_after and pid1 > 0, "H3 init's resource limits unchanged")

# --- H4: init's fds stay flat over 2000 `exec -d true`, and it does not spin ----------
pol = os.path.join(tmp, "nofile.yaml")
with open(pol, "w") as f:
    f.write("limits:\n  nofile: 256\n")
os.chmod(tmp, 0o755)
os.chmod(pol, 0o644)
sb4 = create("--policy", pol)
pid4 = init_pid(sb4)
t(pid4 > 0, "H4 a sandbox with nofile 256")
env = dict(os.environ)
count = int(os.environ.get("TS_H4_COUNT", "2000"))
p = subprocess.run(["sh", "-c", f'seq 1 {count} | xargs -P 4 -I{{}} timeout 20 "$0" exec -d {sb4} -- true >/dev/null',
                    cli], capture_output=True, timeout=900, env=env)
t(p.returncode == 0, f"H4 {count} `exec -d true` all succeed")
time.sleep(1)
fdsize = int(proc_status(pid4, "FDSize") or 0) if pid4 else 0
t(0 < fdsize <= 256, f"H4 init's fd table stays small (FDSize {fdsize})")
if mode == "root":
    nfd = len(os.listdir(f"/proc/{pid4}/fd"))
    t(nfd < 40, f"H4 init holds {nfd} fds after {count} background processes")
c0 = proc_cpu_ticks(pid4)
time.sleep(2)
c1 = proc_cpu_ticks(pid4)
t(c1 - c0 < 20, f"H4 an idle init uses no CPU ({c1 - c0} ticks in 2 s)")
# at the fd limit: connections that cannot be accepted must not make init spin
sock = os.path.join(state_root, sb4, "run", "control.sock")
conns = []
for _ in range(300):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sock)
    except (BlockingIOError, OSError):
        pass
    conns.append(s)
time.sleep(0.5)
c0 = proc_cpu_ticks(pid4)
time.sleep(2)
c1 = proc_cpu_ticks(pid4)
t(c1 - c0 < 40, f"H4 out of fds with connections queued, init does not spin ({c1 - c0} ticks in 2 s)")
for s in conns:
    s.close()
time.sleep(0.5)
st, out, _ = ts("exec", sb4, "--", "echo", "still-serving", timeout=30)
t(st == 0 and "still-serving" in out, "H4 init serves again once the connections are gone")

# --- H6: a file worker holds no fd of another connection's half-received message ----
HELLO, FILE = 1, 13
T_VERSION, T_OP, T_PATH, T_DEPTH = 1, 17, 18, 30
FILE_WATCH = 8


def field(tag, value):
    return struct.pack("=HI", tag, len(value)) + value


def message(mtype, rid, fields):
    payload = b"".join(fields)
    return struct.pack("=IHHI", len(payload), mtype, 0, rid) + payload


def hello(s):
    s.sendall(message(HELLO, 1, [field(T_VERSION, struct.pack("=Q", 2))]))
    length = struct.unpack("=IHHI", s.recv(12, socket.MSG_WAITALL))[0]
    s.recv(length, socket.MSG_WAITALL)


sock = os.path.join(state_root, sb, "run", "control.sock")
ts("start", sb)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
a.connect(sock)
hello(a)
rfd, wfd = os.pipe()
# a header announcing 100 payload bytes, 4 of them sent, with the pipe's write end
hdr = struct.pack("=IHHI", 100, FILE, 0, 7) + b"\0\0\0\0"
a.sendmsg([hdr], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("=i", wfd))])
os.close(wfd)
time.sleep(0.3)
b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
b.connect(sock)
hello(b)
b.sendall(message(FILE, 2, [field(T_OP, struct.pack("=Q", FILE_WATCH)),
                            field(T_PATH, b"/home/user"), field(T_DEPTH, struct.pack("=Q", 1))]))
time.sleep(0.5)  # the worker serving b's watch is forked and running now
a.close()
r, _, _ = select.select([rfd], [], [], 3)
eof = bool(r) and os.read(rfd, 1) == b""
t(eof, "H6 the file worker of one connection does not hold fds another connection sent")
b.close()
os.close(rfd)

# --- H7: cp out applies our umask --------------------------------------------------
ts("exec", sb, "--", "sh", "-c",
   "mkdir -p /home/user/perm/d && chmod 0777 /home/user/perm/d && "
   "echo x > /home/user/perm/f && chmod 0666 /home/user/perm/f && "
   "echo y > /home/user/perm/x && chmod 0777 /home/user/perm/x")
# the sandbox cannot make a setuid file (the setid guard, T5): the host can
os.chmod(os.path.join(inspect(sb)["paths"]["workspace"], "perm", "x"), 0o4777)
dst = os.path.join(tmp, "cpout")
os.makedirs(dst)
old_umask = os.umask(0o022)
st, out, err = ts("cp", f"{sb}:/home/user/perm", dst)
os.umask(old_umask)
modes = {}
for name in ("", "d", "f", "x"):
    path = os.path.join(dst, "perm", name)
    modes[name or "."] = oct(os.stat(path).st_mode & 0o7777) if os.path.exists(path) else "-"
t(st == 0 and modes == {".": "0o755", "d": "0o755", "f": "0o644", "x": "0o755"},
  f"H7 cp out under umask 022: dirs 0755, files 0644, no setuid ({modes})")

# --- H8: an ignored SIGCHLD in the caller hangs nothing -----------------------------
def with_chld_ignored(argv, timeout=30):
    def pre():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        p = subprocess.run(argv, preexec_fn=pre, capture_output=True, timeout=timeout)
        return p.returncode
    except subprocess.TimeoutExpired:
        return "hung"


t(with_chld_ignored([cli, "run", "--", "sh", "-c", "sleep 0.2; exit 3"]) == 3,
  "H8 run with SIGCHLD ignored by its caller returns the command's status")
t(with_chld_ignored([cli, "exec", sb, "--", "sh", "-c", "exit 4"]) == 4,
  "H8 exec with SIGCHLD ignored by its caller returns the command's status")
ts("stop", sb)
t(with_chld_ignored([cli, "start", sb]) == 0 and running(sb),
  "H8 start (helper and init) with SIGCHLD ignored by its caller")

# --- H12: exec -it ends when its terminal goes away -----------------------------------
pid, fd = pty.fork()
if pid == 0:
    os.execv(cli, [cli, "exec", "-it", sb, "--", "bash", "--norc", "-i"])
buf = b""
end = time.monotonic() + 15
while time.monotonic() < end and b"$" not in buf and b"#" not in buf:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            buf += os.read(fd, 4096)
        except OSError:
            break
os.write(fd, b"echo ready-$((6*7))\n")
time.sleep(0.5)
os.close(fd)  # the terminal goes away (tmux kill-session, a closed ssh session)
gone = False
for _ in range(100):
    w, _st = os.waitpid(pid, os.WNOHANG)
    if w == pid:
        gone = True
        break
    time.sleep(0.1)
if not gone:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
t(gone, "H12 exec -it exits when its terminal is closed")
time.sleep(0.5)
_, out, _ = ts("exec", sb, "--", "sh", "-c", "pgrep -c -x bash || true")
t(out.strip() == "0", f"H12 the shell inside got the hang-up (bash processes left: {out.strip()})")

# --- H13: a cp killed mid-copy leaves no temporary file -----------------------------
ts("exec", sb, "--", "sh", "-c", "head -c 800000000 /dev/zero > /home/user/big")
dst13 = os.path.join(tmp, "cp13")
os.makedirs(dst13)
p = subprocess.Popen([cli, "cp", f"{sb}:/home/user/big", dst13])
time.sleep(0.3)
p.kill()
p.wait()
left = [x for x in os.listdir(dst13)]
t(not any(x.startswith(".toren-cp-") for x in left) and "big" not in left,
  f"H13 kill -9 of cp out mid-copy leaves no temporary and no partial file ({left})")
st, _, _ = ts("cp", f"{sb}:/home/user/perm/f", dst13)
t(st == 0 and os.path.exists(os.path.join(dst13, "f")), "H13 the next cp into that directory works")
ts("exec", sb, "--", "rm", "-f", "/home/user/big")

# --- H14: kill -9 of run leaves no workspace for ever ---------------------------------
def sandbox_dirs():
    return {x for x in os.listdir(state_root) if len(x) == 12 and all(c in "0123456789abcdef" for c in x)}


before = sandbox_dirs()
p = subprocess.Popen([cli, "run", "--", "sleep", "60"])
new = set()
for _ in range(100):
    new = sandbox_dirs() - before
    if new:
        break
    time.sleep(0.05)
time.sleep(0.5)
p.kill()
p.wait()
time.sleep(0.5)
t(len(new) == 1 and (new <= sandbox_dirs()), f"H14 kill -9 of run leaves its directory at first ({new})")
ts("run", "--", "true")
t(new and not (new & sandbox_dirs()), "H14 the next run removes the directory of a run whose process is gone")
ts("reap")
t(set(created) <= sandbox_dirs(), "H14 durable sandboxes' directories are never swept")

# --- H15: localhost resolves inside as it does outside ------------------------------
gai = "import socket; print(socket.getaddrinfo('localhost', 80, type=socket.SOCK_STREAM)[0][0].name)"
host_first = subprocess.run(["python3", "-c", gai], capture_output=True).stdout.decode().strip()
st, out, _ = ts("run", "--", "python3", "-c", gai)
t(out.strip() == host_first, f"H15 localhost's first address family inside is the host's ({host_first}, got {out.strip()})")

# --- H16: NUMA policy calls that only read or reset the caller's own ----------------
numa = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
mode = ctypes.c_int(-1)
r1 = libc.syscall(239, ctypes.byref(mode), None, ctypes.c_ulong(0), None, ctypes.c_ulong(0))
r2 = libc.syscall(238, 0, None, ctypes.c_ulong(0))
r3 = libc.syscall(238, 2, None, ctypes.c_ulong(0))   # MPOL_BIND: still refused
print(r1, r2, r3, ctypes.get_errno())
"""
st, out, _ = ts("run", "--", "python3", "-c", numa)
t(out.split()[:3] == ["0", "0", "-1"], f"H16 get_mempolicy and set_mempolicy(MPOL_DEFAULT) work, MPOL_BIND stays refused ({out.strip()})")

# --- H17: messages that say what is wrong -------------------------------------------
st, _, err = ts("run", "--memory", "999999999T", "--", "true")
t(st == 2 and "too large" in err, f"H17 --memory 999999999T: too large ({err.strip()})")
st, _, err = ts("run", "--timeout", "99999999999999999999", "--", "true")
t(st == 2 and "too large" in err, f"H17 --timeout 1e20: too large ({err.strip()})")
st, _, err = ts("run", "--cpus", "1000", "--", "true")
t(st == 0 and "limits nothing" in err, f"H17 --cpus 1000 on this host warns ({err.strip()})")
anchor = os.path.join(tmp, "anchor.yaml")
with open(anchor, "w") as f:
    f.write("env:\n  - &a FOO\n")
os.chmod(anchor, 0o644)
st, _, err = ts("run", "--policy", anchor, "--", "true")
t(st == 125 and "anchors are not supported" in err, f"H17 a policy with an anchor is refused ({err.strip()})")
st, _, err = ts("exec", sb, "--", "sh", "-c", "x", *(["y" * 1000] * 1100))
t(st == 125 and "1024 KiB" in err, f"H17 a command line over 1 MiB says the limit ({err.strip()[:120]})")

# --- per-sandbox kernel budgets -------------------------------------------------------
budget = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
print(open('/proc/sys/user/max_user_namespaces').read().strip(), n)
"""
with open("/proc/sys/user/max_inotify_instances") as f:
    ours = int(f.read())
st, out, _ = ts("run", "--", "python3", "-c", budget)
vals = out.split()
t(len(vals) == 2 and vals[0] == "0", f"B1 no namespace of any kind may be created inside ({out.strip()})")
t(len(vals) == 2 and 0 < int(vals[1]) <= ours // 2,
  f"B1 a sandbox gets at most half of its user's inotify instances ({vals[1] if len(vals) == 2 else '?'} of {ours})")
pol_b = os.path.join(tmp, "budget.yaml")
with open(pol_b, "w") as f:
    f.write("limits:\n  inotify_instances: 5\n")
os.chmod(pol_b, 0o644)
st, out, _ = ts("run", "--policy", pol_b, "--", "python3", "-c", budget)
# split between the sandbox's users: two where root starts it (root and user inside)
share = "3" if mode == "root" else "5"
t(out.split()[1:] == [share], f"B1 limits.inotify_instances is the sandbox's budget, per user {share} ({out.strip()})")

# --- H5: the host never follows a symlink the sandbox planted in its upper layer -----
if mode == "userns":
    skip("H5 ro_binds mount points in a --user root sandbox", "no subordinate ids under unshare -r")
else:
    outside = os.path.join(tmp, "outside")
    os.makedirs(outside)
    os.chmod(outside, 0o700)
    pol5 = os.path.join(tmp, "binds.yaml")
    with open(pol5, "w") as f:
        f.write("env: []\n")
    os.chmod(pol5, 0o644)
    sb5 = create("--user", "root", "--policy", pol5)
    st, out, err = ts("exec", "--user", "user", sb5, "--", "ln", "-s", outside, "/sdk")
    t(st == 0, f"H5 the sandbox's user plants /sdk -> a host directory ({err.strip()})")
    ts("stop", sb5)
    with open(pol5, "w") as f:
        f.write("ro_binds:\n  - src: /usr/bin\n    dst: /sdk/bin\n")
    st, out, err = ts("start", sb5)
    t(st != 0 and "symlink" in err, f"H5 the next start refuses to follow it ({err.strip()[:160]})")
    t(os.listdir(outside) == [], f"H5 nothing was created in the host directory ({os.listdir(outside)})")

# --- root-owned workspaces (a CI job as root): id-mapped, with the setid guard -------
rws = os.path.join(tmp, "rootws")
os.makedirs(rws)
with open(os.path.join(rws, ".env"), "w") as f:
    f.write("TOKEN=secret\n")
with open(os.path.join(rws, "old"), "w") as f:
    f.write("data\n")
os.chmod(os.path.join(rws, ".env"), 0o600)
os.chmod(rws, 0o700)
setid = r"""
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
def err(f):
    try:
        f(); return 0
    except OSError as e:
        return e.errno
res = {}
res["owner"] = os.stat("/home/user/old").st_uid
res["read-env"] = int(open("/home/user/.env").read().startswith("TOKEN"))
res["write-env"] = err(lambda: open("/home/user/.env", "w"))
open("/home/user/made", "w").write("x")
res["chmod-755"] = err(lambda: os.chmod("/home/user/made", 0o755))
res["chmod-4755"] = err(lambda: os.chmod("/home/user/made", 0o4755))
res["chmod-2755"] = err(lambda: os.chmod("/home/user/made", 0o2755))
res["fchmod-4755"] = err(lambda: os.fchmod(os.open("/home/user/made", os.O_RDONLY), 0o4755))
res["creat-4755"] = err(lambda: os.open("/home/user/s1", os.O_CREAT | os.O_WRONLY, 0o4755))
res["creat-644"] = err(lambda: os.open("/home/user/s2", os.O_CREAT | os.O_WRONLY, 0o644))
res["mknod-4755"] = err(lambda: os.mknod("/home/user/s3", stat.S_IFREG | 0o4755))
r = libc.syscall(437, -100, b"/home/user/s4", None, 0)   # openat2: ENOSYS (EFAULT if allowed)
res["openat2"] = ctypes.get_errno() if r < 0 else 0
print(" ".join("%s=%s" % kv for kv in res.items()))
"""
if mode == "root":
    st, out, err = ts("run", "--workspace", rws, "--", "python3", "-c", setid)
    res = dict(kv.split("=") for kv in out.split()) if st == 0 else {}
    if st != 0:
        diag(err)
    t(st == 0, "R1 run with a root-owned (0700) workspace holding a protected file starts")
    t(res.get("owner") == "1000", f"R1 its owner appears as the sandbox's user ({res.get('owner')})")
    t(res.get("read-env") == "1" and res.get("write-env") == "30",
      f"R1 the protected file reads, and is read-only (EROFS) ({res.get('write-env')})")
    st_made = os.stat(os.path.join(rws, "made")) if os.path.exists(os.path.join(rws, "made")) else None
    t(st_made is not None and st_made.st_uid == 0 and st_made.st_gid == 0,
      "R1 a file the sandbox creates belongs to the workspace's owner (root) on the host")
    t(res.get("chmod-755") == "0" and res.get("creat-644") == "0", "R1 ordinary modes work (control)")
    for key in ("chmod-4755", "chmod-2755", "fchmod-4755", "creat-4755", "mknod-4755"):
        t(res.get(key) == "1", f"R1 setid guard: {key} is EPERM (got {res.get(key)})")
    t(res.get("openat2") == "38", f"R1 setid guard: openat2 is ENOSYS (got {res.get('openat2')})")
    bad = [x for x in os.listdir(rws) if os.stat(os.path.join(rws, x)).st_mode & 0o6000]
    t(not bad, f"R1 no setuid or setgid file appeared on the host ({bad})")
    sbr = create("--workspace", rws)
    st, out, err = ts("exec", sbr, "--", "sh", "-c", "echo durable > /home/user/d2; stat -c %u /home/user/d2")
    t(st == 0 and out.strip() == "1000" and os.stat(os.path.join(rws, "d2")).st_uid == 0,
      f"R1 a durable sandbox around a root-owned workspace ({err.strip()})")
    # the red team's T5 finding: the guard stopped the file worker (openat2)
    with open(os.path.join(tmp, "cp-in"), "w") as f:
        f.write("copied in\n")
    st, _, err = ts("cp", os.path.join(tmp, "cp-in"), sbr + ":cp-in")
    st2, out, err2 = ts("cp", sbr + ":cp-in", "-")
    t(st == 0 and st2 == 0 and out == "copied in\n",
      f"T5 cp in and out of a guarded durable sandbox (the file worker resolves paths without openat2) ({err.strip()} {err2.strip()})")
else:
    # we cannot chown here: a small directory of the system's (root's, mode 0755)
    other = next((d for d in ("/usr/local/include", "/usr/local/games", "/usr/local/etc")
                  if os.path.isdir(d) and os.stat(d).st_uid != os.getuid()
                  and len(os.listdir(d)) < 50), None)
    if other is None:
        skip("R1 not root: a workspace of another owner gets the warning", "no small directory of another owner here")
    else:
        st, out, err = ts("run", "--workspace", other, "--", "true")
        t("owned by uid" in err, f"R1 not root: a workspace of another owner ({other}) only gets the warning ({err.strip()[:120]})")

# --- the red team's findings (T<N> = its PoC number; docs/test-cases.md) -------------
# T5: the setid guard in every sandbox, not only around an id-mapped workspace
st, out, err = ts("run", "--", "python3", "-c", """
import os
def e(f):
    try:
        f(); return 0
    except OSError as x:
        return x.errno
open('/home/user/x', 'w').close()
print(e(lambda: os.chmod('/home/user/x', 0o4755)), e(lambda: os.close(os.open('/home/user/y', os.O_CREAT|os.O_WRONLY, 0o2755))), e(lambda: os.chmod('/home/user/x', 0o755)))
""")
t(st == 0 and out.split() == ["1", "1", "0"],
  f"T5 every sandbox: chmod 4755 and creating with 02755 are EPERM, chmod 755 works ({out.strip()} {err.strip()[:100]})")

# T10 is a unit test (tests/unit/test-util.c: bidi controls)

# T3: a state root of someone else's, or one others may write, is refused
if mode == "root":
    other_root = os.path.join(tmp, "other-state")
    os.makedirs(other_root)
    try:
        import pwd
        os.chown(other_root, pwd.getpwnam(os.environ.get("TS_TEST_USER", "tsbx-test")).pw_uid, -1)
        env = dict(os.environ, TOREN_SANDBOX_ROOT=other_root)
        st, out, err = ts("run", "--", "true", env=env)
        t(st == 125 and "belongs to uid" in err, f"T3 another user's state root is refused ({err.strip()[:160]})")
    except KeyError:
        skip("T3 another user's state root is refused", "no test user")
open_root = os.path.join(tmp, "open-state")
os.makedirs(open_root)
os.chmod(open_root, 0o777)
st, out, err = ts("run", "--", "true", env=dict(os.environ, TOREN_SANDBOX_ROOT=open_root))
t(st == 125 and "writable by others" in err, f"T3 a state root others may write is refused ({err.strip()[:120]})")

# T8: a workspace and the state root stay apart
st, out, err = ts("run", "--workspace", os.path.dirname(state_root), "--", "true")
t(st == 125 and "holds the state root" in err, f"T8 a workspace holding the state root is refused ({err.strip()[:120]})")
os.makedirs(os.path.join(state_root, "cache"), exist_ok=True)
st, out, err = ts("run", "--workspace", os.path.join(state_root, "cache"), "--", "true")
t(st == 125 and "inside the state root" in err, f"T8 a workspace inside the state root is refused ({err.strip()[:120]})")
own = create()
if own:
    st, out, err = ts("run", "--workspace", os.path.join(state_root, own, "workspace"), "--", "true")
    t(st == 0, f"T8 a durable sandbox's own workspace may be named again ({err.strip()[:120]})")

# T1: budgets the kernel counts per user namespace and charges to us: the sandbox gets a
# share (pending signals, message queue bytes, inotify split between its users)
budget = r"""
import ctypes, os, resource, signal
libc = ctypes.CDLL(None, use_errno=True)
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n = 0
while libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) == 0 and n < 1000000:
    n += 1
print(resource.getrlimit(resource.RLIMIT_SIGPENDING)[0], resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0], n, flush=True)
open("/home/user/filled", "w").close()
import time; time.sleep(20)
"""
ours = __import__("resource").getrlimit(__import__("resource").RLIMIT_SIGPENDING)[0]
sbb = create()
if sbb:
    p = subprocess.Popen([cli, "exec", sbb, "--", "python3", "-c", budget], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stdout.readline().decode().split()
    # while the sandbox holds every signal it may queue, we can still queue ours
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN + 1])
    class _sv(ctypes.Union):
        _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
    libc = ctypes.CDLL(None, use_errno=True)
    host_ok = libc.sigqueue(os.getpid(), signal.SIGRTMIN + 1, _sv(0)) == 0
    signal.sigtimedwait([signal.SIGRTMIN + 1], 0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGRTMIN + 1])
    p.kill()
    p.wait()
    ts("stop", sbb)
    ok_share = len(line) == 3 and int(line[0]) <= max(1, ours // 2) and int(line[2]) <= int(line[0])
    t(ok_share and host_ok,
      f"T1 the sandbox queues at most its share of pending signals (inside {line}, ours {ours}) and we can still queue ours ({host_ok})")
st, out, err = ts("run", "--", "sh", "-c", "cat /proc/sys/user/max_inotify_instances")
with open("/proc/sys/user/max_inotify_instances") as f:
    our_inst = int(f.read())
users = 2 if mode == "root" else 1  # root's sandboxes have root and user inside
t(st == 0 and out.strip().isdigit() and int(out) <= max(1, our_inst // 2 // users),
  f"T1 inotify instances per user inside ({out.strip()}) are half of ours ({our_inst}) split between its {users} users")

# T7: init's own /proc files are read-only, also for the sandbox's root
st, out, err = ts("run", "--user", "root", "--", "sh", "-c",
                  "echo 1000 > /proc/1/oom_score_adj; echo $?; echo 19 > /proc/1/autogroup; echo $?; echo 500 > /proc/self/oom_score_adj; echo $?")
if st != 0 and "subordinate" in err:
    skip("T7 /proc/1/oom_score_adj and autogroup are read-only for root inside", "no root inside here")
else:
    t(out.split() == ["2", "2", "0"],
      f"T7 /proc/1/oom_score_adj and autogroup are read-only for root inside, its own stay writable ({out.split()} {err.strip()[:100]})")

if mode == "root":
    # T4, T9: in an id-mapped workspace, setid or capable programs and hard-linked files
    # are read-only (the kernel keeps setid bits on a store through a shared mapping)
    aw = os.path.join(tmp, "aliases")
    os.makedirs(aw)
    outside = os.path.join(tmp, "mirror-object")
    with open(outside, "w") as f:
        f.write("original\n")
    os.link(outside, os.path.join(aw, "object"))
    subprocess.run(["cp", "/bin/true", os.path.join(aw, "suid")], check=True)
    os.chmod(os.path.join(aw, "suid"), 0o4755)
    before = open(os.path.join(aw, "suid"), "rb").read()
    st, out, err = ts("run", "--workspace", aw, "--", "python3", "-c", """
import mmap, os
def e(f):
    try:
        f(); return 0
    except OSError as x:
        return x.errno
print(e(lambda: os.open('/home/user/suid', os.O_RDWR)), e(lambda: os.open('/home/user/object', os.O_WRONLY)))
open('/home/user/other', 'w').write('x')
""")
    t(st == 0 and out.split() == ["30", "30"],
      f"T4/T9 a setuid program and a hard-linked file in an id-mapped workspace open read-only (EROFS) ({out.strip()} {err.strip()[:120]})")
    t(open(outside).read() == "original\n" and open(os.path.join(aw, "suid"), "rb").read() == before
      and os.stat(os.path.join(aw, "suid")).st_mode & 0o4000,
      "T4/T9 the file outside the workspace and the setuid program are unchanged")
    t(os.path.exists(os.path.join(aw, "other")), "T4/T9 the rest of the workspace stays writable (control)")
    # T6: a workspace path another user controls is not bound with its owner's identity
    try:
        import pwd
        tu = pwd.getpwnam(os.environ.get("TS_TEST_USER", "tsbx-test"))
        victim = os.path.join(tmp, "victim")
        os.makedirs(victim)
        os.chmod(victim, 0o700)
        with open(os.path.join(victim, "secret"), "w") as f:
            f.write("root only\n")
        alice = os.path.join(tmp, "alice")
        os.makedirs(alice)
        os.chown(alice, tu.pw_uid, tu.pw_gid)
        os.chmod(tmp, 0o755)
        os.symlink(victim, os.path.join(alice, "proj"))
        os.lchown(os.path.join(alice, "proj"), tu.pw_uid, tu.pw_gid)
        st, out, err = ts("run", "--workspace", os.path.join(alice, "proj"), "--", "sh", "-c", "echo planted > planted")
        t(st == 125 and "belongs to uid" in err and sorted(os.listdir(victim)) == ["secret"],
          f"T6 a workspace reached through another user's directory is refused for an id-mapped bind ({err.strip()[:160]})")
        mine = os.path.join(tmp, "mine")
        os.symlink(rws, mine)
        st, out, err = ts("run", "--workspace", mine, "--", "sh", "-c", "echo via-link > via-link")
        t(st == 0 and os.path.exists(os.path.join(rws, "via-link")),
          f"T6 a path through root's own symlink still works (control) ({err.strip()[:120]})")
        # the other user's own directory: bound id-mapped as that user
        ap = os.path.join(alice, "real")
        os.makedirs(ap)
        os.chown(ap, tu.pw_uid, tu.pw_gid)
        st, out, err = ts("run", "--workspace", ap, "--", "sh", "-c", "echo mine > made")
        t(st == 0 and os.stat(os.path.join(ap, "made")).st_uid == tu.pw_uid,
          f"T6 another user's own directory is bound with that user's identity, not root's ({err.strip()[:120]})")
    except KeyError:
        skip("T6 a workspace path another user controls", "no test user")

for sid in created:
    ts("rm", "-f", "--purge", sid)
subprocess.run(["rm", "-rf", tmp])
print(f"1..{n}")
print(f"# {n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
