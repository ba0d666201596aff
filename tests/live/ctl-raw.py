#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Send one hand-made request to a sandbox's control socket and print the reply's type
name and error code, for requests the CLI never sends (tests/live/users.sh).

The framing is src/common/ctl.h's: a 12-byte header {u32 payload length, u16 type,
u16 flags, u32 request id}, host byte order, then TLV fields {u16 tag, u32 length,
bytes}. The numbers below are that header's enums; a change there must change them.

usage: ctl-raw.py SOCKET CASE
  spawn-uid-4bytes   SPAWN (`true`, not attached) whose UID field is 4 bytes, not 8
  spawn-uid-5        SPAWN (`true`, not attached) as uid 5
  file-user-nouid    FILE USER without a UID
  file-user-5        FILE USER as uid 5
  pause, resume      PAUSE / RESUME (tests/live/pause.sh)
  hello              HELLO; prints `HELLO paused=N`
  spawn              SPAWN of `true`, not attached
"""
import socket
import struct
import sys

HELLO, OK, ERROR, SPAWN, SPAWNED = 1, 2, 3, 4, 5
FILE = 13
PAUSE, RESUME = 24, 25
T_VERSION, T_ARG, T_FLAGS, T_CODE, T_OP, T_UID, T_PAUSED = 1, 3, 6, 10, 17, 27, 39
SPAWN_UNATTACHED = 0  # no TS_SPAWN_* flag: streams to the backlog only
FILE_USER = 9
VERSION = 3
NAMES = {OK: "OK", ERROR: "ERROR", SPAWNED: "SPAWNED", HELLO: "HELLO"}


def field(tag, value):
    return struct.pack("=HI", tag, len(value)) + value


def u64(v):
    return struct.pack("=Q", v)


def message(mtype, rid, fields):
    payload = b"".join(fields)
    return struct.pack("=IHHI", len(payload), mtype, 0, rid) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    return buf


def reply(s, tag_wanted=T_CODE):
    length, mtype, _, _ = struct.unpack("=IHHI", recv_exact(s, 12))
    payload = recv_exact(s, length)
    code, pos = 0, 0
    while pos + 6 <= len(payload):
        tag, flen = struct.unpack_from("=HI", payload, pos)
        if tag == tag_wanted and flen == 8:
            code = struct.unpack_from("=Q", payload, pos + 6)[0]
        pos += 6 + flen
    return NAMES.get(mtype, str(mtype)), code


def main():
    path, case = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall(message(HELLO, 1, [field(T_VERSION, u64(VERSION))]))
    name, paused = reply(s, T_PAUSED)
    if case == "hello":
        print("%s paused=%d" % (name, paused))
        return
    spawn = [field(T_ARG, b"true"), field(T_FLAGS, u64(SPAWN_UNATTACHED))]
    if case == "spawn-uid-4bytes":
        req = message(SPAWN, 2, spawn + [field(T_UID, struct.pack("=I", 1000))])
    elif case == "spawn-uid-5":
        req = message(SPAWN, 2, spawn + [field(T_UID, u64(5))])
    elif case == "file-user-nouid":
        req = message(FILE, 2, [field(T_OP, u64(FILE_USER))])
    elif case == "file-user-5":
        req = message(FILE, 2, [field(T_OP, u64(FILE_USER)), field(T_UID, u64(5))])
    elif case == "pause":
        req = message(PAUSE, 2, [])
    elif case == "resume":
        req = message(RESUME, 2, [])
    elif case == "spawn":
        req = message(SPAWN, 2, spawn)
    else:
        raise SystemExit("unknown case " + case)
    s.sendall(req)
    print("%s %d" % reply(s))


main()
