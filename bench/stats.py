#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise bench-timer CSV files as a Markdown table.

usage: stats.py [--ref LABEL] [--title TITLE] RESULT.csv

Per command: runs, failures, p10 / median / p90 / mean / min in milliseconds, the ratio of
its median to the reference's median (bubblewrap by default) with a 95% bootstrap interval,
and the median of the per-round ratios (the runs are interleaved, so run i of each command
saw the same machine state).
"""
import csv
import random
import statistics
import sys


def pct(xs, p):
    """Percentile with linear interpolation (numpy's default)."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def boot_ratio(a, b, n=2000, seed=1):
    rnd = random.Random(seed)
    rs = []
    for _ in range(n):
        ma = statistics.median(rnd.choices(a, k=len(a)))
        mb = statistics.median(rnd.choices(b, k=len(b)))
        rs.append(ma / mb)
    return pct(rs, 2.5), pct(rs, 97.5)


def main():
    args = sys.argv[1:]
    ref = "bwrap"
    title = None
    while args and args[0].startswith("--"):
        if args[0] == "--ref":
            ref = args[1]
            args = args[2:]
        elif args[0] == "--title":
            title = args[1]
            args = args[2:]
        else:
            sys.exit("unknown option " + args[0])
    if len(args) != 1:
        sys.exit(__doc__)
    runs = {}
    order = []
    with open(args[0]) as f:
        for row in csv.DictReader(f):
            lab = row["label"]
            if lab not in runs:
                runs[lab] = {}
                order.append(lab)
            runs[lab][int(row["round"])] = (int(row["ns"]) / 1e6, int(row["status"]))
    ok = {lab: {r: ms for r, (ms, st) in v.items() if st == 0} for lab, v in runs.items()}
    if title:
        print(f"#### {title}\n")
    print("| command | runs | failed | p10 ms | median ms | p90 ms | mean ms | min ms "
          f"| median / {ref} | 95% CI | per-round ratio (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    refv = list(ok.get(ref, {}).values())
    for lab in order:
        v = list(ok[lab].values())
        failed = len(runs[lab]) - len(v)
        if not v:
            print(f"| {lab} | {len(runs[lab])} | {failed} | – | – | – | – | – | – | – | – |")
            continue
        med = statistics.median(v)
        if refv and lab != ref:
            ratio = f"{med / statistics.median(refv):.2f}×"
            lo, hi = boot_ratio(v, refv)
            ci = f"{lo:.2f}–{hi:.2f}"
            paired = [ok[lab][r] / ok[ref][r] for r in ok[lab] if r in ok[ref]]
            pr = f"{statistics.median(paired):.2f}×" if paired else "–"
        elif lab == ref:
            ratio, ci, pr = "1.00×", "", ""
        else:
            ratio, ci, pr = "–", "", ""
        print(f"| {lab} | {len(runs[lab])} | {failed} | {pct(v, 10):.2f} | {med:.2f} "
              f"| {pct(v, 90):.2f} | {statistics.fmean(v):.2f} | {min(v):.2f} "
              f"| {ratio} | {ci} | {pr} |")
    print()


if __name__ == "__main__":
    main()
