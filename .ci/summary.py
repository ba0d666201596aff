#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Count TAP subtests over meson testlog.json files; print `N passed, N failed, N skipped`.

A test that printed no TAP line counts as one, by its meson result. Exit 1 on failures.
"""
import json
import re
import sys

passed = failed = skipped = 0
lines = [l for path in sys.argv[1:] for l in open(path, encoding="utf-8", errors="replace")]
for line in lines:
    t = json.loads(line)
    out = t.get("stdout") or ""
    subs = [l for l in out.splitlines() if re.match(r"^(not )?ok\b", l)]
    plan_skip = re.search(r"^1\.\.0\b.*#\s*SKIP", out, re.M)
    if subs:
        for l in subs:
            if l.startswith("not ok"):
                failed += 1
            elif re.search(r"#\s*SKIP", l, re.I):
                skipped += 1
            else:
                passed += 1
        if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and not out.count("not ok"):
            failed += 1  # crashed or timed out after its last TAP line
    elif plan_skip or t.get("result") == "SKIP":
        skipped += 1
    elif t.get("result") == "OK":
        passed += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
