#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`run -t`: a real terminal inside (window size, job control, Ctrl-C), under a host pty.

TAP on stdout. Env: TS_CLI. The host side of the terminal is a pty this script owns.
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
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


def spawn(argv, rows=33, cols=101):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return pid, fd


def read_until(fd, needle, timeout=15.0):
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


def finish(pid, fd, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.read(fd, 65536)
        except OSError:
            pass
        w, status = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            os.close(fd)
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return None


# 1. a pty inside, from the sandbox's own devpts, with our window size
pid, fd = spawn([cli, "run", "-t", "--", "sh", "-c",
                 "tty; stty size; echo TERM-DONE"])
out = read_until(fd, b"TERM-DONE")
st = finish(pid, fd)
t(b"/dev/pts/0" in out, f"-t gives the command a pty of its own ({out[:80]!r})")
t(b"33 101" in out, "the window size reaches the pty")
t(st == 0, f"exit status through the pty ({st})")

# 2. without -t, no pty even on a terminal (and no controlling terminal)
pid, fd = spawn([cli, "run", "--", "sh", "-c", "tty; echo NO-TTY-DONE"])
out = read_until(fd, b"NO-TTY-DONE")
finish(pid, fd)
t(b"/dev/pts/0" not in out, "without -t the command gets no pty")

# 3. Ctrl-C typed on the terminal interrupts the command inside
pid, fd = spawn([cli, "run", "-t", "--", "sh", "-c",
                 "trap 'echo GOT-INT; exit 7' INT; echo READY; while :; do sleep 1; done"])
ok = b"READY" in read_until(fd, b"READY")
os.write(fd, b"\x03")
out = read_until(fd, b"GOT-INT")
st = finish(pid, fd)
t(ok and b"GOT-INT" in out, "Ctrl-C typed on the terminal reaches the command")
t(st == 7, f"the command's status after Ctrl-C ({st})")

# 4. window resize while running
pid, fd = spawn([cli, "run", "-t", "--", "sh", "-c",
                 "trap 'stty size; exit 0' WINCH; echo READY; while :; do sleep 0.2; done"])
ok = b"READY" in read_until(fd, b"READY")
time.sleep(0.3)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
os.kill(pid, signal.SIGWINCH)
out = read_until(fd, b"40 120")
finish(pid, fd)
t(ok and b"40 120" in out, "a window resize reaches the command")

# 5. input typed on the terminal reaches the command; EOF ends it
pid, fd = spawn([cli, "run", "-t", "--", "sh", "-c", "read x; echo \"GOT:$x\""])
time.sleep(1.0)
os.write(fd, b"hello\r")
out = read_until(fd, b"GOT:hello")
st = finish(pid, fd)
t(b"GOT:hello" in out, "typed input reaches the command")

# 6. job control works in an interactive shell inside
pid, fd = spawn([cli, "run", "-t", "--", "bash", "--norc", "-i"])
read_until(fd, b"$", 10)
os.write(fd, b"sleep 100\r")
time.sleep(0.8)
os.write(fd, b"\x1a")  # Ctrl-Z
time.sleep(0.5)
os.write(fd, b"jobs; echo JOBS-$((1+1))\r")
out = read_until(fd, b"JOBS-2")
os.write(fd, b"kill -9 %1; sleep 0.3; exit 0\r")
finish(pid, fd)
t(b"Stopped" in out or b"stopped" in out, "Ctrl-Z stops a job in an interactive shell")

# 7. exec -it into a durable sandbox: the debugging entry point
import subprocess
sid = subprocess.run([cli, "create", "--ttl", "0"], capture_output=True, text=True,
                     timeout=60).stdout.strip().splitlines()[-1:]
sid = sid[0] if sid else ""
t(len(sid) == 12, f"create for exec -t ({sid!r})")
if sid:
    pid, fd = spawn([cli, "exec", "-t", sid, "--", "sh", "-c",
                     "tty; stty size; trap 'stty size; exit 0' WINCH; echo READY; "
                     "while :; do sleep 0.2; done"], rows=21, cols=77)
    out = read_until(fd, b"READY")
    t(b"/dev/pts/" in out and b"21 77" in out, f"exec -t gives a pty with our size ({out[:60]!r})")
    time.sleep(0.3)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 90, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    out = read_until(fd, b"30 90")
    st = finish(pid, fd)
    t(b"30 90" in out and st == 0, f"a resize reaches the command under exec -t ({st})")
    pid, fd = spawn([cli, "exec", "-t", sid, "--", "sh", "-c",
                     "trap 'echo GOT-INT; exit 5' INT; echo READY; while :; do sleep 1; done"])
    ok = b"READY" in read_until(fd, b"READY")
    os.write(fd, b"\x03")
    out = read_until(fd, b"GOT-INT")
    st = finish(pid, fd)
    t(ok and b"GOT-INT" in out and st == 5, f"Ctrl-C under exec -t reaches the command ({st})")
    pid, fd = spawn([cli, "exec", "-t", sid, "--", "bash", "--norc", "-i"])
    read_until(fd, b"$", 10)
    os.write(fd, b"sleep 100\r")
    time.sleep(0.8)
    os.write(fd, b"\x1a")
    time.sleep(0.5)
    os.write(fd, b"jobs; echo JOBS-$((1+1))\r")
    out = read_until(fd, b"JOBS-2")
    os.write(fd, b"kill -9 %1; sleep 0.3; exit 0\r")
    finish(pid, fd)
    t(b"Stopped" in out or b"stopped" in out, "job control works in bash under exec -it")
    subprocess.run([cli, "rm", "-f", "--purge", sid], capture_output=True, timeout=60)

print(f"1..{n}")
sys.exit(1 if failed else 0)
