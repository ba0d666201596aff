#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Critical-path phases of `toren-sandbox run -- /bin/true` from marker straces.

usage: phases.py TRACE...

Each TRACE is `strace -f --seccomp-bpf -ttt -T -e trace=<MARKERS>` of one run (see
bench/profile.sh for the marker set): only the marker syscalls stop the tracee, so the
time between markers is close to untraced. Phases are the intervals between successive
markers on the critical path (CLI -> helper -> sandbox child -> init -> CMD -> back);
the table gives the median over the traces and the share of the median total.
"""
import re
import statistics
import sys

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")


def parse(path):
    ev = []
    for raw in open(path):
        m = LINE.match(raw)
        if not m:
            continue
        pid, ts, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        dur = 0.0
        d = re.search(r"<(\d+\.\d+)>\s*$", rest)
        if d:
            dur = float(d.group(1))
        ev.append((pid, ts, rest, dur))
    return ev


def phases(ev):
    """Return [(label, seconds)] for one trace, or raise if a marker is missing."""
    cli = ev[0][0]
    helper = next(p for p, _, r, _ in ev if r.startswith('execve("') and "toren-sandbox-helper" in r)
    child = next(p for p, _, r, _ in ev if r.startswith("mount(NULL, \"/\""))
    cmd = next(p for p, _, r, _ in ev if r.startswith('execve("/bin/true"'))

    def first(pid, pred, after):
        for p, ts, r, dur in ev:
            if p == pid and ts >= after and pred(r):
                return ts, dur
        raise LookupError

    def at(pid, prefix, after, contains=None):
        return first(pid, lambda r: r.startswith(prefix) and (contains is None or contains in r),
                     after)

    marks = []

    def mark(label, ts):
        marks.append((label, ts))

    t = ev[0][1]
    mark("start", t)
    t, _ = at(cli, "getrandom(", t)
    mark("CLI: exec, dynamic loading (5 libs), paths, open policy", t)
    t, _ = at(cli, "getrandom(", t + 1e-9, ", 6, ")
    mark("CLI: parse policy YAML, host check, id-map plan (passwd, subuid)", t)
    t, _ = at(cli, "uname(", t)
    mark("CLI: sandbox dirs (mkdir x4, chown), image-layer checks, read seccomp profile", t)
    t, _ = at(cli, 'statfs("/sys/fs/cgroup"', t)
    mark("CLI: seccomp cache hit (SHA-256 of the 40 KB profile, libseccomp API probe)", t)
    t, _ = at(cli, "socketpair(", t)
    mark("CLI: cgroup delegation check, open BPF", t)
    t, _ = at(helper, 'execve("', t)
    mark("CLI: fork the helper", t)
    t, _ = at(helper, "memfd_create(", t)
    mark("helper: exec, dynamic loading (libcap, libnl-3), parse args", t)
    t, _ = at(helper, "socketpair(", t)
    mark("helper: copy init into a sealed memfd", t)
    ts, dur = at(helper, "clone(", t, "CLONE_NEWUSER")
    mark("helper: socketpair", ts)
    t = ts + dur
    mark("helper: clone(NEWUSER|NEWNS|NEWPID|NEWNET|NEWUTS|NEWIPC)", t)
    try:
        t2, _ = at(helper, "write(", t)
        mark("helper: id-map safety check (read own maps)", t2)
        t = t2
    except LookupError:
        pass  # newuidmap mode: no write of our own
    t, _ = at(helper, "write(", t, '"g", 1')
    mark("helper: write uid/gid maps (or newuidmap), cgroup setup", t)
    t, _ = at(child, "mount(NULL, \"/\"", t)
    mark("child: wake up, open host sources, set ids, cgroup ns", t)
    # The mount tree, split by the fsopen() calls (see bench/README.md for the rule).
    fs = [(ts, re.search(r'fsopen\("([^"]+)"', r).group(1))
          for p, ts, r, _ in ev if p == child and r.startswith("fsopen(")]
    pivot, _ = at(child, "pivot_root(", t)
    types = [k for _, k in fs]
    i_proc = types.index("proc")
    i_devpts = types.index("devpts")
    i_mq = types.index("mqueue")
    i_sys = types.index("sysfs") if "sysfs" in types else None
    n_tmpfs_tail = 5
    i_tail = len(types) - n_tmpfs_tail
    mark("child: make / private, open staging dir", fs[0][0])
    mark("mount: overlay root (2 lowers + upper) and /usr bind", fs[i_proc][0])
    mark("mount: proc, masks (/dev/null binds, tmpfs), read-only binds", fs[i_devpts - 1][0])
    mark("mount: /dev tmpfs, 6 device binds, symlinks, devpts, /dev/shm", fs[i_mq][0])
    if i_sys is not None:
        mark("mount: mqueue, read-only /dev", fs[i_sys][0])
        mark("mount: sysfs and its masks (tmpfs)", fs[i_tail][0])
    else:
        mark("mount: mqueue, read-only /dev, sysfs refused", fs[i_tail][0])
    mark("mount: 5 tmpfs, workspace bind, read-only /", pivot)
    t, _ = at(child, "sethostname(", pivot)
    mark("child: pivot_root, detach old root", t)
    t, _ = at(child, "socket(", t)
    mark("child: sethostname", t)
    t, _ = at(child, "setsid(", t)
    mark("child: `lo` up (if_nametoindex, rtnetlink), rlimits, chdir", t)
    ts, dur = at(child, "seccomp(", t)
    mark("child: setsid, close fds, drop caps, final ids, no_new_privs", ts)
    mark("child: seccomp filter load", ts + dur)
    t, _ = at(child, "execveat(", ts)
    mark("child: return from seccomp(), call execveat", t)
    t, _ = at(child, "clone(", t)
    mark("init: execveat from memfd, start (static), signalfd", t)
    t, _ = at(cmd, 'execve("/bin/true"', t)
    mark("init: fork CMD", t)
    t, _ = at(cmd, "exit_group(", t)
    mark("CMD: exec /bin/true and run it", t)
    t, _ = at(child, "exit_group(", t)
    mark("init: reap, kill(-1)", t)
    t = next(ts for p, ts, r, _ in ev if p == child and r.startswith("+++ exited"))
    mark("init exit: last process of the namespaces (pid/mnt/net/ipc/uts/user teardown)", t)
    t, _ = at(helper, "exit_group(", t)
    mark("helper: wake, rmdir cgroup", t)
    t = next(ts for p, ts, r, _ in ev if p == helper and r.startswith("+++ exited"))
    mark("helper: exit", t)
    t, _ = at(cli, "unlinkat(", t)
    mark("CLI: wake (signalfd, waitpid)", t)
    t, _ = at(cli, "exit_group(", t)
    mark("CLI: rm -rf the sandbox dir (upper, work/work, workspace)", t)
    t = next(ts for p, ts, r, _ in ev if p == cli and r.startswith("+++ exited"))
    mark("CLI: exit", t)
    return [(marks[i][0], marks[i][1] - marks[i - 1][1]) for i in range(1, len(marks))]


def main():
    runs = []
    for path in sys.argv[1:]:
        try:
            runs.append(phases(parse(path)))
        except (LookupError, ValueError, StopIteration) as e:
            print(f"phases.py: {path}: missing marker ({e!r}), skipped", file=sys.stderr)
    if not runs:
        sys.exit("phases.py: no usable trace")
    labels = [l for l, _ in runs[0]]
    med = {l: statistics.median([dict(r)[l] for r in runs]) * 1000 for l in labels}
    totals = [sum(d for _, d in r) * 1000 for r in runs]
    tot = statistics.median(totals)
    print(f"| phase (critical path, in order) | median ms | share |")
    print("|---|---:|---:|")
    for l in labels:
        print(f"| {l} | {med[l]:.2f} | {100 * med[l] / tot:.0f}% |")
    print(f"| **total under marker tracing** ({len(runs)} runs) | **{tot:.2f}** | |")
    print()


if __name__ == "__main__":
    main()
