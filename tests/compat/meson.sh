#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Workload: a meson build of this project (the committed tree, source.tar, staged by
# run-compat.sh): meson setup, ninja, and the test suites that need no namespaces of
# their own (unit, policy, fuzz-replay: meson's own test runner, many processes, a
# seccomp filter loaded by test-seccomp-live). A plain build, without sanitizers.
# Prints `RESULT NAME VALUE` lines; driver.sh compares them with the other side's.
set -u
r() { echo "RESULT $*"; }
okfail() { if [ "$1" = 0 ]; then echo ok; else echo "FAIL (status $1)"; fi; }

rm -rf src build
mkdir src
tar -C src -xf source.tar
r extract "$(okfail $?)"

meson setup build src >setup.log 2>&1
st=$?
r setup "$(okfail $st)"
if [ $st != 0 ]; then
	tail -n 30 setup.log
	r end "setup failed"
	exit 1
fi
grep -E '^ +(init libc|seccomp|Build targets)' setup.log | sed 's/^ */setup: /'

# -k 0: after a failure, everything else that can be built is, so that what exists
# afterwards does not depend on the order of the parallel jobs
ninja -k 0 -C build >ninja.log 2>&1
st=$?
r build "$(okfail $st)$(grep '^FAILED: ' ninja.log | sort | sed 's/^FAILED: / /' | tr -d '\n')"
if [ $st != 0 ]; then
	# the tree does not build here: nothing more to compare (outside, the control, fails)
	grep -A12 '^FAILED: ' ninja.log | head -n 60
	r end "build failed"
	exit 1
fi
r programs "$(cd build && for f in toren-sandbox toren-sandbox-helper toren-sandbox-init; do
	[ -x "$f" ] && printf '%s ' "$f"
done)"
r init-static "$(if readelf -l build/toren-sandbox-init 2>&1 | grep -q INTERP; then echo dynamic; else echo static; fi)"
r run-help "$(build/toren-sandbox --help 2>&1 | head -n 1)"

# --no-rebuild: the build was checked above; the runner's own output goes to test.log
meson test -C build --no-rebuild --suite unit --suite policy --suite fuzz-replay \
	--print-errorlogs >test.log 2>&1
r test-runner "$(okfail $?)"
/usr/bin/python3 - build/meson-logs/testlog.json <<'EOF'
import json, sys
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError as e:
    print(f'RESULT testlog FAIL {e}')
    sys.exit(0)
for line in lines:
    t = json.loads(line)
    # "toren-sandbox:unit / util" -> unit/util: meson's verdict and the number of TAP
    # subtests; then NAME#N for each subtest that is not a plain ok (compare.py reads a
    # missing NAME#N as ok)
    suite, _, name = t['name'].partition(' / ')
    name = f"{suite.split(':')[-1]}/{name.strip()}"
    subs = [l.strip() for l in (t.get('stdout') or '').splitlines()
            if l.startswith(('ok', 'not ok'))]
    print(f"RESULT test.{name} {t['result']}, {len(subs)} subtests")
    for k, l in enumerate(subs, 1):
        if l.startswith('not ok') or '# SKIP' in l.upper() or '# TODO' in l.upper():
            print(f"RESULT test.{name}#{k} {l}")
EOF
[ -s test.log ] && grep -E '^ *[0-9]+/[0-9]+ ' test.log | grep -v ' OK ' | sed 's/^/test: /'
r end ok
