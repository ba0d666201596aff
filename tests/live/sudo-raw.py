#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Inside a sandbox: send one hand-made request to init's sudo socket (runtime/sudo.h),
one the sandbox's sudo never sends, and print the reply as `ERROR <code> <msg>` or
`EXITED <exit status>` (the command's output goes to our own stdout/stderr).

The framing is src/common/ctl.h's (host byte order): a 12-byte header {u32 payload
length, u16 type, u16 flags, u32 request id}, then TLV fields {u16 tag, u32 length,
bytes}. The numbers below are that header's enums; a change there must change them.

usage: sudo-raw.py CASE
  relative-cwd   `pwd` with the working directory `../../..`
  one-fd         `true` with one descriptor instead of three
  foreign-uid    `true` as uid 4242
  cwd-as-user    `true` as uid 1000 in /root (root's, 0700): the directory is entered
                 with the target's ids, so it is refused and nothing runs
  env            `env` with FOO, LD_PRELOAD and LANG sent: only LANG may arrive
  nul-arg        an argument holding a NUL byte
"""
import array
import socket
import struct
import sys

ERROR, SPAWN, SPAWNED, EXITED = 3, 4, 5, 7
T_ARG, T_ENV, T_CWD, T_STATUS, T_CODE, T_MSG, T_UID = 3, 4, 5, 8, 10, 11, 27


def field(tag, value):
    return struct.pack("=HI", tag, len(value)) + value


def message(mtype, fields):
    payload = b"".join(fields)
    return struct.pack("=IHHI", len(payload), mtype, 0, 1) + payload


def fields_of(payload):
    out, pos = {}, 0
    while pos + 6 <= len(payload):
        tag, n = struct.unpack_from("=HI", payload, pos)
        out.setdefault(tag, payload[pos + 6:pos + 6 + n])
        pos += 6 + n
    return out


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def main():
    case = sys.argv[1]
    args, cwd, uid, env, nfds = [b"true"], b"/", 0, [], 3
    if case == "relative-cwd":
        args, cwd = [b"pwd"], b"../../.."
    elif case == "one-fd":
        nfds = 1
    elif case == "foreign-uid":
        uid = 4242
    elif case == "cwd-as-user":
        cwd, uid = b"/root", 1000
    elif case == "env":
        args = [b"env"]
        env = [b"FOO=1", b"LD_PRELOAD=/tmp/x.so", b"LANG=C.UTF-8"]
    elif case == "nul-arg":
        args = [b"echo", b"a\0b"]
    fields = [field(T_ARG, a) for a in args] + [field(T_ENV, e) for e in env]
    fields += [field(T_CWD, cwd), field(T_UID, struct.pack("=Q", uid))]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/toren/sudo.sock")
    fds = array.array("i", [0, 1, 2][:nfds])
    s.sendmsg([message(SPAWN, fields)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    while True:
        try:
            hdr = recv_exact(s, 12)
        except EOFError:
            print("EOF")
            return
        n, mtype, _, _ = struct.unpack("=IHHI", hdr)
        f = fields_of(recv_exact(s, n))
        if mtype == ERROR:
            print("ERROR %d %s" % (struct.unpack("=Q", f[T_CODE])[0], f.get(T_MSG, b"").decode()))
            return
        if mtype == EXITED:
            print("EXITED %d" % (struct.unpack("=Q", f[T_STATUS])[0] >> 8), flush=True)
            return


main()
