#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Syscall counts per process of one `strace -f -o TRACE` of `toren-sandbox run`.

usage: counts.py TRACE [LABEL...]
"""
import collections
import re
import sys

LINE = re.compile(r"^(\d+)\s+(?:[\d:.]+\s+)?(\w+)\(")
MOUNT_API = {"fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "mount_setattr",
             "mount", "umount2", "pivot_root"}


def main():
    # A segment is what one pid does between execs; named after the program it runs.
    per = collections.defaultdict(collections.Counter)
    name = {}
    order = []
    cur = {}
    execs = forks = 0
    for raw in open(sys.argv[1]):
        m = LINE.match(raw)
        if not m:
            continue
        pid, call = int(m.group(1)), m.group(2)
        if pid not in cur:
            cur[pid] = (pid, 0)
            order.append(cur[pid])
            name[cur[pid]] = "CLI `toren-sandbox` (before exec: the caller)" if not order[:-1] \
                else "forked, not yet exec'd"
        if call in ("execve", "execveat"):
            execs += 1
            seg = (pid, cur[pid][1] + 1)
            cur[pid] = seg
            order.append(seg)
            tgt = re.search(r'execve\("([^"]+)"', raw)
            name[seg] = ("`" + tgt.group(1).rsplit("/", 1)[-1] + "`") if tgt \
                else "`toren-sandbox-init` (execveat of the memfd)"
        if call in ("clone", "clone3", "fork", "vfork"):
            forks += 1
        per[cur[pid]][call] += 1
    print("| process segment (pid: program, in order of appearance) | syscalls | mount API "
          "| openat | close | prctl | mmap/mprotect/munmap |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot = collections.Counter()
    for seg in order:
        c = per[seg]
        if not c:
            continue
        label = name[seg]
        if c["fsopen"]:
            label = "sandbox child (helper code, before execveat)"
        mnt = sum(c[k] for k in MOUNT_API)
        mm = c["mmap"] + c["mprotect"] + c["munmap"]
        tot.update(c)
        print(f"| {seg[0]}: {label} | {sum(c.values())} | {mnt} | {c['openat']} | {c['close']} "
              f"| {c['prctl']} | {mm} |")
    mnt = sum(tot[k] for k in MOUNT_API)
    print(f"| **all** | **{sum(tot.values())}** | **{mnt}** | {tot['openat']} | {tot['close']} "
          f"| {tot['prctl']} | {tot['mmap'] + tot['mprotect'] + tot['munmap']} |")
    print()
    print(f"execve/execveat calls: {execs}; clone/fork calls: {forks}; mount API calls: "
          + ", ".join(f"{k} {tot[k]}" for k in sorted(MOUNT_API) if tot[k]) + ".")
    print()


if __name__ == "__main__":
    main()
