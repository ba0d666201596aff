#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The report of bench/run-api.sh (Markdown on stdout).

usage: api.py report WORKDIR

Reads WORKDIR/{latency,stream,cli-stream,lab}.csv, idle.jsonl, strace-c.txt and env
(ROUNDS, TRACES, OLD_SHORT) as run-api.sh leaves them.
"""
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import boot_ratio, pct  # noqa: E402

HOST = "host posix_spawn /bin/true"
API = "api commands.run /bin/true"
CRUN = "crun exec /bin/true"
CLI = "CLI exec /bin/true"


def load(path, extra=False):
    runs, order = {}, []
    with open(path) as f:
        for row in csv.DictReader(f):
            lab = row["label"]
            if lab not in runs:
                runs[lab] = {}
                order.append(lab)
            v = int(row["ns"]) / 1e6
            runs[lab][int(row["round"])] = (v, int(row["status"]), int(row.get("bytes") or 0))
    return runs, order


def md(label):
    """A label in a Markdown table cell."""
    return label.replace("|", "\\|")


def ok(runs, lab):
    return {r: ms for r, (ms, st, _) in runs.get(lab, {}).items() if st == 0}


def ratio(runs, a, b):
    va, vb = list(ok(runs, a).values()), list(ok(runs, b).values())
    if not va or not vb:
        return None
    lo, hi = boot_ratio(va, vb)
    return statistics.median(va) / statistics.median(vb), lo, hi, pct(va, 90) / pct(vb, 90)


def med(runs, lab):
    v = list(ok(runs, lab).values())
    return statistics.median(v) if v else float("nan")


def table(runs, order, ref, unit_ms=True):
    refv = list(ok(runs, ref).values())
    print(f"| row | runs | failed | p10 ms | p50 ms | p90 ms | min ms | p50 / {ref} | 95% CI | p90 / p90 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for lab in order:
        v = list(ok(runs, lab).values())
        failed = len(runs[lab]) - len(v)
        if not v:
            print(f"| {lab} | {len(runs[lab])} | {failed} | – | – | – | – | – | – | – |")
            continue
        if lab == ref or not refv:
            rr, ci, r90 = ("1.00×" if lab == ref else "–"), "", ""
        else:
            m, lo, hi, q = ratio(runs, lab, ref)
            rr, ci, r90 = f"{m:.2f}×", f"{lo:.2f}–{hi:.2f}", f"{q:.2f}×"
        print(f"| {md(lab)} | {len(runs[lab])} | {failed} | {pct(v, 10):.3f} | {statistics.median(v):.3f} "
              f"| {pct(v, 90):.3f} | {min(v):.3f} | {rr} | {ci} | {r90} |")
    print()


def read_env(work):
    env = {}
    with open(os.path.join(work, "env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v.strip("'")
    return env


def report(work):
    env = read_env(work)
    old = env.get("OLD_SHORT", "")
    lat, lorder = load(os.path.join(work, "latency.csv"))

    print("#### Targets (issue 8)\n")
    print("| target | measured | ratio (95% CI) | met? |")
    print("|---|---|---|---|")
    r = ratio(lat, API, HOST)
    if r:
        print(f"| commands.run(`/bin/true`) p50 ≤ 1.5× host posix_spawn + wait | {med(lat, API):.3f} vs "
              f"{med(lat, HOST):.3f} ms (p90 ratio {r[3]:.2f}×) | **{r[0]:.2f}×** ({r[1]:.2f}–{r[2]:.2f}) "
              f"| {'yes' if r[0] <= 1.5 else '**no**'} |")
    r = ratio(lat, CLI, CRUN)
    if r:
        print(f"| CLI `exec` ≤ 0.55× `crun exec` | {med(lat, CLI):.2f} vs {med(lat, CRUN):.2f} ms "
              f"| **{r[0]:.2f}×** ({r[1]:.2f}–{r[2]:.2f}) | {'yes' if r[0] <= 0.55 else '**no**'} |")
    oldlab = f"CLI exec /bin/true at {old}"
    if old and oldlab in lat:
        r = ratio(lat, CLI, oldlab)
        r2 = ratio(lat, oldlab, CRUN)
        print(f"| CLI `exec` no slower than before (`{old}`) | {med(lat, CLI):.2f} vs {med(lat, oldlab):.2f} ms "
              f"(`{old}`: {r2[0]:.2f}× crun exec) | **{r[0]:.2f}×** ({r[1]:.2f}–{r[2]:.2f}) "
              f"| {'yes' if r[2] <= 1.0 or r[0] <= 1.0 else '**no**'} |")
    idle = [json.loads(line) for line in open(os.path.join(work, "idle.jsonl"))]
    settled = [d for d in idle if d["label"].startswith("settled")]
    if settled:
        kb = settled[0]["status"].get("VmRSS", 0)
        print(f"| idle init ≤ 300 kB VmRSS | {kb} kB settled; "
              + "; ".join(f"{d['status'].get('VmRSS', 0)} kB {d['label']}" for d in idle
                          if not d["label"].startswith("settled") and not d["label"].startswith(old or "\0"))
              + f" | | {'yes' if kb <= 300 else '**no**'} (settled) |")
    print()

    print("#### Latency: every row in the same interleaved rounds\n")
    table(lat, lorder, HOST)

    print("Differences of medians (ms) — where the time of commands.run goes:\n")
    rows = [
        ("commands.run − host posix_spawn (the whole overhead)", API, HOST),
        ("commands.run − SPAWN on one connection (connect, HELLO, init's accept, start check)", API,
         "ctl SPAWN on one connection /bin/true"),
        ("SPAWN on one connection − host posix_spawn (init's side + the command inside)",
         "ctl SPAWN on one connection /bin/true", HOST),
        ("commands.run − host, static true (the overhead with a command that costs ~nothing)",
         "api commands.run static true", "host posix_spawn static true"),
        ("CLI exec − commands.run (the CLI's own exec, store, connect)", CLI, API),
        ("CLI exec − CLI --version (everything after the CLI's exec)", CLI, "CLI --version"),
        ("nsenter into init − host posix_spawn (nsenter's exec + setns + fork)",
         "nsenter into init + /bin/true", HOST),
    ]
    print("| difference | ms |")
    print("|---|---:|")
    for name, a, b in rows:
        if a in lat and b in lat:
            print(f"| {name} | {med(lat, a) - med(lat, b):+.3f} |")
    for lab in ("ctl connect + HELLO", "api run, missing program"):
        if lab in lat:
            print(f"| {lab} (alone) | {med(lat, lab):.3f} |")
    print()

    lab, laborder = load(os.path.join(work, "lab.csv"))
    print("#### Spawn lab: init's way of starting a command vs posix_spawn (static musl process)\n")
    table(lab, laborder, "posix_spawn (host)")

    st, sorder = load(os.path.join(work, "stream.csv"))
    print("#### Throughput in process (MB/s = 10^6 bytes/s; every byte counted, offsets contiguous)\n")
    print("| row | runs | failed | p50 ms | p50 MB/s | p10 MB/s | p90 MB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in sorder:
        good = [(ms, b) for ms, s, b in st[name].values() if s == 0 and ms > 0]
        rates = [b / (ms / 1e3) / 1e6 for ms, b in good]
        if not good:
            print(f"| {name} | {len(st[name])} | {len(st[name])} | – | – | – | – |")
            continue
        print(f"| {name} | {len(st[name])} | {len(st[name]) - len(good)} "
              f"| {statistics.median([m for m, _ in good]):.1f} | {statistics.median(rates):.0f} "
              f"| {pct(rates, 10):.0f} | {pct(rates, 90):.0f} |")
    print()
    print("`background + attach`: time from the first byte to END (sh's exec of head before it is "
          "not counted); `api run`: the whole ts_be_run call, start and exit included.\n")

    cs, corder = load(os.path.join(work, "cli-stream.csv"))
    print("#### Throughput through the CLI (`… | wc -c` in `sh -c`, the count checked)\n")
    print("| row | runs | failed | p50 ms | p50 MB/s | p50 / crun exec |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in corder:
        v = list(ok(cs, name).values())
        size = (64 if "64M" in name else 1) << 20
        ref = [k for k in corder if k.startswith("crun exec") and (("64M" in k) == ("64M" in name))]
        rr = f"{statistics.median(v) / med(cs, ref[0]):.2f}×" if v and ref else "–"
        if not v:
            print(f"| {md(name)} | {len(cs[name])} | {len(cs[name])} | – | – | – |")
            continue
        m = statistics.median(v)
        print(f"| {md(name)} | {len(cs[name])} | {len(cs[name]) - len(v)} | {m:.1f} "
              f"| {size / (m / 1e3) / 1e6:.0f} | {rr} |")
    print()

    print("#### Idle init memory (kB, /proc/PID/status and smaps_rollup)\n")
    print("| init | VmRSS | RssAnon | RssFile | Pss | Private |")
    print("|---|---:|---:|---:|---:|---:|")
    for d in idle:
        s, m = d["status"], d["smaps"]
        priv = m.get("Private_Clean", 0) + m.get("Private_Dirty", 0)
        print(f"| {d['label']} | {s.get('VmRSS', '–')} | {s.get('RssAnon', '–')} | {s.get('RssFile', '–')} "
              f"| {m.get('Pss', '–')} | {priv} |")
    print()

    sc = os.path.join(work, "strace-c.txt")
    if os.path.exists(sc):
        n = int(env.get("TRACES", "1"))
        calls = []
        for line in open(sc):
            p = line.split()
            if len(p) >= 5 and p[0][0].isdigit() and p[-1] != "total":
                errors = int(p[4]) if len(p) == 6 else 0
                calls.append((p[-1], int(p[3]), errors))
        total = sum(c for _, c, _ in calls)
        print(f"#### init and its child per commands.run (`strace -f -c -p INIT` over {n} runs)\n")
        print(f"{total / n:.0f} syscalls per command in init and the command's process (the command's own "
              "included: /bin/true's exec and ld.so):\n")
        print("| syscall | per command | of them failing |")
        print("|---|---:|---:|")
        for name, c, e in sorted(calls, key=lambda x: -x[1])[:16]:
            print(f"| `{name}` | {c / n:.1f} | {e / n:.1f} |")
        print()

    print("Rows: `bench/api-bench.c` (in process) and the commands of run-api.sh, exactly:\n")
    print("```")
    print(open(os.path.join(work, "latency.cmds")).read().rstrip())
    print(open(os.path.join(work, "cli-stream.cmds")).read().replace("\x1f", " ").rstrip())
    print("```")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "report":
        sys.exit(__doc__)
    report(sys.argv[2])
