#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/run-durable.sh: memory snapshots, the idle-cost report and the phases
of traced `exec` round trips.

usage:
  durable.py meminfo OUT.json                      snapshot /proc/meminfo (kB)
  durable.py procmem OUT.json PID...               per process: status, smaps_rollup, exe size
  durable.py idle-report DIR N                     Markdown from DIR/{m0a,m0b,m1,m1b,m2}.json,
                                                   DIR/procs.json, DIR/crun.json, DIR/times.csv,
                                                   DIR/leftover.txt
  durable.py phases [--full] CLI.st... -- INIT.st...  Markdown: critical path of `exec` from
                                                   `strace -f -ttt -T` of the CLI and of init
  durable.py counts CLI.st                         Markdown: the CLI's syscalls by time
"""
import json
import os
import re
import statistics
import sys

KB = 1024.0


def read_kv(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                v = v.strip().split()
                if v and re.fullmatch(r"-?\d+", v[0]):
                    out[k.strip()] = int(v[0])
    except OSError:
        pass
    return out


def cmd_meminfo(out):
    m = read_kv("/proc/meminfo")
    with open(out, "w") as f:
        json.dump(m, f)


def cmd_procmem(out, pids):
    res = []
    for p in pids:
        st = read_kv(f"/proc/{p}/status")
        sm = read_kv(f"/proc/{p}/smaps_rollup")
        try:
            exe = os.stat(f"/proc/{p}/exe").st_size
            memfd = os.readlink(f"/proc/{p}/exe").startswith("/memfd:")
        except OSError:
            exe, memfd = None, None
        try:
            with open(f"/proc/{p}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = None
        try:
            nchildren = 0
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    nchildren += len(f.read().split())
        except OSError:
            nchildren = None
        res.append({"pid": int(p), "comm": comm, "status": st, "smaps": sm, "exe_bytes": exe, "exe_memfd": memfd,
                    "children": nchildren})
    with open(out, "w") as f:
        json.dump(res, f)


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt_kb(kb):
    return f"{kb:,.0f}" if abs(kb) >= 100 else f"{kb:.1f}"


def cmd_idle_report(d, n):
    n = int(n)
    m = {k: load(os.path.join(d, k + ".json")) for k in ("m0a", "m0b", "m1", "m1b", "m2")}
    procs = load(os.path.join(d, "procs.json"))
    alive = [p for p in procs if p["status"]]
    times = {}
    with open(os.path.join(d, "times.csv")) as f:
        for line in f:
            what, _, ms, ok = line.strip().split(",")
            times.setdefault(what, []).append((float(ms), ok == "0"))
    print(f"{len(alive)} of {n} sandboxes running at the measurement "
          f"(created: {sum(ok for _, ok in times.get('create', []))} of {n}).\n")

    # user space: one sandbox = its init (an idle sandbox runs nothing else)
    def col(get):
        v = [get(p) for p in alive]
        return v
    rows = [
        ("VmRSS (status)", lambda p: p["status"].get("VmRSS", 0)),
        ("  RssAnon", lambda p: p["status"].get("RssAnon", 0)),
        ("  RssFile", lambda p: p["status"].get("RssFile", 0)),
        ("  RssShmem (init's memfd copy, mapped part)", lambda p: p["status"].get("RssShmem", 0)),
        ("Pss (smaps_rollup)", lambda p: p["smaps"].get("Pss", 0)),
        ("Private_Clean + Private_Dirty", lambda p: p["smaps"].get("Private_Clean", 0)
         + p["smaps"].get("Private_Dirty", 0)),
        ("VmPTE (page tables)", lambda p: p["status"].get("VmPTE", 0)),
        ("init memfd copy, whole (Shmem; not in RSS beyond the mapped part)",
         lambda p: (p["exe_bytes"] or 0) / KB if p.get("exe_memfd") else 0),
    ]
    if alive:
        n_memfd = sum(1 for p in alive if p.get("exe_memfd"))
        print("User space, per idle sandbox (its init; "
              f"children of init: {sorted(set(p['children'] for p in alive))}; "
              f"init runs from a sealed memfd copy in {n_memfd} of {len(alive)}, "
              "otherwise from the shared binary file), kB:\n")
        print(f"| per sandbox | median | min | max | sum over {len(alive)} |")
        print("|---|---:|---:|---:|---:|")
        for lab, get in rows:
            v = col(get)
            print(f"| {lab} | {fmt_kb(statistics.median(v))} | {fmt_kb(min(v))} "
                  f"| {fmt_kb(max(v))} | {fmt_kb(sum(v))} |")
        print()
    try:
        cr = load(os.path.join(d, "crun.json"))
        if cr and cr[0]["status"]:
            c = cr[0]
            print(f"For comparison, the crun container's only process (`{c['comm']}` as its "
                  f"PID 1; crun keeps no monitor process): VmRSS {c['status'].get('VmRSS')} kB, "
                  f"Pss {c['smaps'].get('Pss')} kB, private "
                  f"{c['smaps'].get('Private_Clean', 0) + c['smaps'].get('Private_Dirty', 0)} kB.\n")
    except (OSError, ValueError, IndexError):
        pass

    keys = ["MemAvailable", "MemFree", "Shmem", "Slab", "SReclaimable", "SUnreclaim",
            "KernelStack", "PageTables", "Percpu"]
    print("Kernel side, from `/proc/meminfo` (kB; the machine is shared, other jobs move "
          "these numbers too: the two *noise* columns are the change over 5 s with nothing "
          "of ours happening, before the sandboxes and while all of them were idle):\n")
    print(f"| field | before | with {len(alive)} idle | change | per sandbox | noise before "
          "| noise idle | after clean-up − before |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    na = max(len(alive), 1)
    for k in keys:
        if k not in m["m0b"]:
            continue
        b, a = m["m0b"][k], m["m1"][k]
        print(f"| {k} | {b:,} | {a:,} | {a - b:+,} | {(a - b) / na:+,.1f} "
              f"| {m['m0b'][k] - m['m0a'][k]:+,} | {m['m1b'][k] - m['m1'][k]:+,} "
              f"| {m['m2'][k] - m['m0b'][k]:+,} |")
    print()
    used = (m["m0b"]["MemAvailable"] - m["m1"]["MemAvailable"]) / na
    print(f"MemAvailable fell by {used:,.0f} kB ({used / KB:.2f} MiB) per sandbox: user space, "
          "the init memfd (Shmem), page tables, kernel stack, slab (mounts, namespaces, "
          "sockets, inodes), per-cpu data and the files written under the state root "
          "(page cache) together.\n")

    def tstats(lab, key):
        v = [ms for ms, ok in times.get(key, []) if ok]
        bad = sum(1 for _, ok in times.get(key, []) if not ok)
        if not v:
            return
        print(f"| {lab} | {len(v)} | {bad} | {statistics.median(v):.1f} | "
              f"{sorted(v)[int(0.9 * (len(v) - 1))]:.1f} | {max(v):.1f} | {sum(v) / 1000:.1f} |")
    print("Wall time of the set-up and clean-up calls (ms; `date +%s%N` around each call from "
          "bash, so ~1 ms of fork overhead included):\n")
    print("| call | n | failed | median | p90 | max | total s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tstats(f"`create --ttl 0` (0 → {n} running)", "create")
    tstats("`stop ID`", "stop")
    tstats("`rm -f --purge ID`", "rm")
    print()
    left = open(os.path.join(d, "leftover.txt")).read().strip()
    print(f"After clean-up: {left}\n")


# --- strace phases ---

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")


def parse(path):
    ev = []
    with open(path) as f:
        for line in f:
            mm = LINE.match(line.rstrip("\n"))
            if not mm:
                continue
            pid, t, rest = int(mm.group(1)), float(mm.group(2)), mm.group(3)
            dur = 0.0
            md = re.search(r"<(\d+\.\d+)>$", rest)
            if md:
                dur = float(md.group(1))
            name = re.match(r"([a-z_0-9]+)\(", rest)
            ev.append({"pid": pid, "t": t, "rest": rest, "dur": dur,
                       "name": name.group(1) if name else None})
    return ev


def first(ev, pred, start=0.0):
    for e in ev:
        if e["t"] >= start and pred(e):
            return e["t"]
    return None


def last(ev, pred):
    t = None
    for e in ev:
        if pred(e):
            t = e["t"]
    return t


def one_trace(cli_path, init_path):
    cli = parse(cli_path)
    ini = parse(init_path) if init_path else []
    root = cli[0]["pid"]
    c = [e for e in cli if e["pid"] == root]
    t0 = c[0]["t"]  # execve of the CLI
    t_store = first(c, lambda e: e["name"] == "openat" and "state.db" in e["rest"])
    t_conn = first(c, lambda e: e["name"] == "connect" and "control.sock" in e["rest"])
    t_spawn = first(c, lambda e: e["name"] == "sendmsg" and "/bin/true" in e["rest"])
    t_exitg = first(c, lambda e: e["name"] == "exit_group")
    t_end = last(cli, lambda e: e["pid"] == root and "+++ exited" in e["rest"]) or t_exitg
    # the CLI's last receive: init's EXITED message
    t_exited = last(c, lambda e: e["name"] == "recvmsg" and "EAGAIN" not in e["rest"]
                    and e["t"] < t_exitg)
    # the first message after the spawn request: init's answer with the process id
    t_started = first(c, lambda e: e["name"] == "recvmsg" and "EAGAIN" not in e["rest"],
                      t_spawn + 1e-9)
    fsync_pre = sum(e["dur"] for e in c if e["name"] in ("fdatasync", "fsync")
                    and e["t"] < t_conn)
    fsync_post = sum(e["dur"] for e in c if e["name"] in ("fdatasync", "fsync")
                     and e["t"] > t_exited)
    n_fsync = sum(1 for e in c if e["name"] in ("fdatasync", "fsync"))
    ph = {}
    ph["cli_start"] = t_store - t0
    ph["store_and_checks"] = t_conn - t_store
    ph["fsync_pre"] = fsync_pre
    ph["hello"] = t_spawn - t_conn
    ph["spawn_answer"] = t_started - t_spawn
    ph["cmd_until_exited"] = t_exited - t_started
    ph["post"] = t_exitg - t_exited
    ph["fsync_post"] = fsync_post
    ph["exit"] = t_end - t_exitg
    ph["total"] = t_end - t0
    ph["n_fsync"] = n_fsync
    ph["n_sys_cli"] = len(c)
    # init's side, on the same clock
    if ini:
        ipid = ini[0]["pid"]
        main = [e for e in ini if e["pid"] == ipid]
        kids = [e for e in ini if e["pid"] != ipid]
        t_clone = first(main, lambda e: e["name"] in ("clone", "clone3", "fork", "vfork"),
                        t_spawn)
        if kids and t_clone:
            kpid = kids[0]["pid"]
            k = [e for e in kids if e["pid"] == kpid]
            t_kexec = first(k, lambda e: e["name"] == "execve")
            t_kend = last(k, lambda e: "+++ exited" in e["rest"])
            t_send = first(main, lambda e: e["name"] == "sendmsg", t_kend)
            ph["init_fork"] = t_clone - t_spawn
            ph["child_pre_exec"] = t_kexec - t_clone
            ph["child_exec_run"] = t_kend - t_kexec
            ph["init_reap_report"] = t_send - t_kend
            ph["n_sys_child_pre_exec"] = sum(1 for e in k if e["t"] < t_kexec)
            ph["n_rt_sigaction"] = sum(1 for e in k if e["name"] == "rt_sigaction")
    return ph


def cmd_phases(args):
    full = args[0] == "--full"
    if full:
        args = args[1:]
    sep = args.index("--")
    clis, inits = args[:sep], args[sep + 1:]
    runs = []
    for i, cp in enumerate(clis):
        try:
            runs.append(one_trace(cp, inits[i] if i < len(inits) else None))
        except (TypeError, IndexError, KeyError):
            continue
    if not runs:
        print("(no usable trace)\n")
        return

    def med(k):
        v = [r[k] for r in runs if k in r]
        return statistics.median(v) * 1000 if v else float("nan")

    rows = [
        ("CLI start-up", "exec of the CLI, dynamic loading (libsqlite3, libm, libc), "
         "option parsing, paths", "cli_start"),
        ("store + checks", "open `state.db` (WAL, `-wal`/`-shm` created afresh), look the "
         "id up, start check (`/proc/PID/stat` of init), activity touch (a write "
         "transaction)", "store_and_checks"),
        ("  of which fsync", "`fdatasync` calls before the connect (directory and WAL)",
         "fsync_pre"),
        ("connect + HELLO", "connect the control socket, HELLO, receive init's answer",
         "hello"),
        ("spawn request", "send argv + our stdio fds (SCM_RIGHTS); init forks, answers with "
         "the process id", "spawn_answer"),
        ("  init: request → fork", "init receives the request and forks (init's trace)",
         "init_fork"),
        ("command runs", "from init's answer to the EXITED message", "cmd_until_exited"),
        ("  child: fork → exec", "signal dispositions reset, fds, ids; then execve",
         "child_pre_exec"),
        ("  child: exec → exit", "`/bin/true`: exec, ld.so, libc, exit", "child_exec_run"),
        ("  init: exit → EXITED sent", "SIGCHLD via signalfd, waitpid, kill of the group, "
         "send", "init_reap_report"),
        ("after EXITED", "activity touch again, store close (WAL checkpoint, fsyncs, unlink "
         "of `-wal`/`-shm`)", "post"),
        ("  of which fsync", "`fdatasync` calls after EXITED", "fsync_post"),
        ("exit", "exit_group until the tracer sees the exit", "exit"),
        ("**total (traced)**", "", "total"),
    ]
    if full:
        print("One run, every syscall of the CLI, init and the command traced, ms:\n")
    else:
        print(f"Medians of {len(runs)} traced runs, ms. The CLI stops only at marker "
              "syscalls (strace --seccomp-bpf); init and its child are traced in full, so "
              "the `child` rows are inflated most (every syscall a ptrace stop). Read shares "
              "and order; the untraced table above has the real totals:\n")
    print("| phase | what | traced ms |")
    print("|---|---|---:|")
    for lab, what, k in rows:
        print(f"| {lab} | {what} | {med(k):.2f} |")
    print()
    r0 = runs[0]
    if not full:
        print(f"Spawned child before its exec: {r0.get('n_sys_child_pre_exec', '?')} syscalls "
              f"({r0.get('n_rt_sigaction', '?')} `rt_sigaction`).\n")
        return
    print(f"Syscalls of the CLI process: {r0['n_sys_cli']} ({r0['n_fsync']} of them "
          "`fdatasync`); of the spawned child before its exec: "
          f"{r0.get('n_sys_child_pre_exec', '?')} ({r0.get('n_rt_sigaction', '?')} "
          "`rt_sigaction`).\n")


def cmd_counts(path):
    ev = parse(path)
    root = ev[0]["pid"]
    agg = {}
    for e in ev:
        if e["pid"] != root or not e["name"]:
            continue
        n, t = agg.get(e["name"], (0, 0.0))
        agg[e["name"]] = (n + 1, t + e["dur"])
    tot = sum(t for _, t in agg.values())
    print("| syscall | calls | time in the call, ms (strace -T) |")
    print("|---|---:|---:|")
    for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"| `{name}` | {n} | {t * 1000:.2f} |")
    print(f"| all | {sum(n for n, _ in agg.values())} | {tot * 1000:.2f} |")
    print()


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == "meminfo":
        cmd_meminfo(a[1])
    elif a[0] == "procmem":
        cmd_procmem(a[1], a[2:])
    elif a[0] == "idle-report":
        cmd_idle_report(a[1], a[2])
    elif a[0] == "phases":
        cmd_phases(a[1:])
    elif a[0] == "counts":
        cmd_counts(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
