#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Critical-path phases of `toren-sandbox run -- /bin/true` from `perf trace` output.

usage: phases.py [--summary] TRACE...

Each TRACE is the output of `perf trace -e <MARKERS> -- [env|setpriv ...] toren-sandbox run
-- /bin/true` (see bench/profile.sh for the marker set). perf trace reads the syscall
tracepoints, so unlike strace it does not stop the tracee at each call: the run takes
little longer than an untraced one. Phases are the intervals between successive markers on
the critical path (CLI -> helper -> sandbox child -> init -> CMD -> back). The table gives,
per phase, the median over the traces and its share of the median total.
"""
import re
import statistics
import sys

# "  12.535 ( 0.019 ms): comm/pid rest"  (comm may contain '/', so take the last one)
LINE = re.compile(r"^\s*([\d.]+) \(\s*(?:([\d.]+) ms)?\s*\): (.*?)/(\d+) (.*)$")


def parse(path):
    ev = []
    for raw in open(path, errors="replace"):
        m = LINE.match(raw)
        if not m:
            continue
        ts = float(m.group(1))
        dur = float(m.group(2)) if m.group(2) else None
        comm, pid, rest = m.group(3), int(m.group(4)), m.group(5).strip()
        cont = rest.startswith("... [continued]:")
        if cont:
            rest = rest[len("... [continued]:"):].strip()
        ev.append({"ts": ts, "dur": dur, "comm": comm, "pid": pid, "call": rest,
                   "name": re.match(r"([\w:]+)", rest).group(1), "cont": cont})
    return ev


class Missing(Exception):
    pass


def phases(ev):
    cli = ev[0]["pid"]
    clone_ns = [e for e in ev if e["name"] == "clone" and "NEWUSER" in e["call"]]
    if not clone_ns:
        raise Missing("clone with CLONE_NEWUSER")
    helper = clone_ns[0]["pid"]
    child = next((e["pid"] for e in ev if e["name"] == "mount" and "PRIVATE" in e["call"]), None)
    # perf prints the comm a task had at the event: "true" only after its exec.
    cmd = next((e["pid"] for e in ev if e["comm"] == "true"
                and e["pid"] not in (cli, helper, child)), None)
    if child is None or cmd is None:
        raise Missing("sandbox child or CMD")

    def find(pid, name, after, pred=lambda e: True, end=False, cont=False):
        names = (name,) if isinstance(name, str) else name
        for k, e in enumerate(ev):
            if e["pid"] == pid and e["name"] in names and e["cont"] == cont and pred(e):
                if end and e["dur"] is None and not cont:
                    # the call was interrupted by other events: its end is on the
                    # "[continued]" line that follows
                    c = next((x for x in ev[k + 1:] if x["pid"] == pid and x["cont"]
                              and x["name"] == e["name"] and x["dur"] is not None), None)
                    if c is None:
                        continue
                    t = c["ts"] + c["dur"]
                else:
                    t = e["ts"] + (e["dur"] or 0) if end else e["ts"]
                if t >= after:
                    return t
        raise Missing(f"{'/'.join(names)} of pid {pid} after {after:.3f}")

    # t0: the CLI's own execve (after an env/setpriv wrapper), else perf's start.
    execs = [e["ts"] for e in ev if e["pid"] == cli and e["name"] == "execve" and not e["cont"]]
    t = execs[-1] if execs else 0.0
    marks = [("start", t)]

    def mark(label, when):
        marks.append((label, when))
        return when

    t = mark("CLI: exec, dynamic loading, paths",
             find(cli, "getrandom", t, lambda e: "len: 8" in e["call"]))
    t = mark("CLI: read + parse policy YAML, host check, id-map plan (passwd, subuid)",
             find(cli, "getrandom", t, lambda e: "len: 6" in e["call"]))
    t = mark("CLI: per-sandbox dirs (mkdir, chown), image-layer checks, read seccomp profile",
             find(cli, "uname", t))
    t = mark("CLI: seccomp cache hit (SHA-256 of profile, libseccomp API probe, stat), "
             "open BPF, socketpair", find(cli, ("clone", "clone3", "vfork"), t))
    t = mark("CLI: fork/spawn the helper", find(helper, "execve", t))
    # init is copied into a sealed memfd only when an id mapped into the sandbox owns
    # its binary; otherwise the helper opens the file and goes on to the clone
    try:
        t = mark("helper: exec (and dynamic loading, if linked so), parse args, pdeathsig",
                 find(helper, "memfd_create", t))
        t = mark("helper: copy toren-sandbox-init into a sealed memfd, socketpair",
                 find(helper, "clone", t, lambda e: "NEWUSER" in e["call"]))
    except Missing:
        t = mark("helper: exec (and dynamic loading, if linked so), parse args, pdeathsig, "
                 "open init, socketpair",
                 find(helper, "clone", t, lambda e: "NEWUSER" in e["call"]))
    t = mark("helper: clone(NEWUSER|NEWNS|NEWPID|NEWNET|NEWUTS|NEWIPC)",
             find(helper, "clone", t - 1e-6, lambda e: "NEWUSER" in e["call"], end=True))
    try:
        t = mark("helper: id-map safety check (read own uid_map/gid_map)",
                 find(helper, "write", t))
    except Missing:
        pass
    t = mark("helper: write id maps (or run newuidmap/newgidmap), cgroups if limits asked, send go",
             find(helper, "write", t, lambda e: "count: 1)" in e["call"]))
    t = mark("child: wake, open host sources, set ids, cgroup ns",
             find(child, "mount", t))
    n_fs = sum(1 for e in ev if e["pid"] == child and e["name"] == "fsopen")
    t = mark(f"child: build the mount tree ({n_fs} new file systems + binds)",
             find(child, "pivot_root", t))
    t = mark("child: pivot_root, detach the old root", find(child, "sethostname", t))
    t = mark("child: sethostname, `lo` up (rtnetlink), rlimits, chdir", find(child, "setsid", t))
    t = mark("child: setsid, close fds, drop caps, final ids, no_new_privs",
             find(child, "seccomp", t))
    t = mark("child: seccomp filter load (TSYNC)", find(child, "seccomp", t - 1e-6, end=True))
    t = mark("child: execveat toren-sandbox-init (its file, or the memfd copy)",
             find(child, "execveat", t, end=True))
    t = mark("init: start (static binary, musl or glibc), signalfd",
             find(child, ("clone", "vfork"), t))
    t = mark("init: fork CMD", find(cmd, "execve", t))
    t = mark("CMD: exec /bin/true (ld.so), run it", find(cmd, "exit_group", t))
    t = mark("init: reap, kill(-1), exit_group", find(child, "exit_group", t))
    t = mark("teardown: init exits, last process of the namespaces, helper woken",
             find(helper, "poll", t, end=True, cont=True))
    t = mark("helper: waitpid, cgroup clean-up if any", find(helper, "exit_group", t))
    t = mark("helper: exit, CLI woken", find(cli, "poll", t, end=True, cont=True))
    t = mark("CLI: waitpid, rm -rf the sandbox dir", find(cli, "exit_group", t))
    t = mark("CLI: exit_group", find(cli, "sched:sched_process_exit", t))
    return [(marks[i][0], marks[i][1] - marks[i - 1][1]) for i in range(1, len(marks))]


def main():
    args = sys.argv[1:]
    runs = []
    for path in args:
        try:
            runs.append(phases(parse(path)))
        except (Missing, StopIteration) as e:
            print(f"phases.py: {path}: {e}; skipped", file=sys.stderr)
    if not runs:
        sys.exit("phases.py: no usable trace")
    # Labels may differ when the id-map check is missing in some runs: use the first run's.
    labels = [l for l, _ in runs[0]]
    runs = [r for r in runs if [l for l, _ in r] == labels]
    med = {l: statistics.median([dict(r)[l] for r in runs]) for l in labels}
    tot = statistics.median([sum(d for _, d in r) for r in runs])
    print("| phase (critical path, in order) | median ms | share |")
    print("|---|---:|---:|")
    for l in labels:
        print(f"| {l} | {med[l]:.2f} | {100 * med[l] / tot:.0f}% |")
    print(f"| **total under perf trace** (median of {len(runs)} runs) | **{tot:.2f}** | |")
    print()


if __name__ == "__main__":
    main()
