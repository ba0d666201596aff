#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Issue 11's image targets (see bench/README.md, "Images"):
#   1. `run --image NAME -- /bin/true` of a pulled image against `run -- /bin/true` (the
#      host image): start-up <= 1.1x;
#   2. `image pull` of a ~100 MB (compressed) 4-layer image from a loopback docker-registry
#      into an empty store <= 1.3x `skopeo copy docker://... dir:...` of it in the same rounds;
#   3. a second pull of the same layers into the same store downloads nothing (the registry's
#      own access log counts the bytes it served) and how long it takes.
# Interleaved rounds (bench/timer.c), medians with bootstrap intervals (bench/stats.py).
#
# usage: bench/run-images.sh [-n ROUNDS] [-p PULLS] [-s MB] [-B BUILD] [-r REV] [-b REV]
#                            [-u USER] [--no-user] [--no-write]
#
#   -n ROUNDS   start-up rounds (default 150)
#   -p PULLS    pull rounds (default 6, + 1 warm-up; every round pulls into a new empty
#               store, and all stay until the end: about 1.3 GB per round and user)
#   -s MB       compressed size of the image (default 100)
#   -B BUILD    a build directory without sanitizers (default build-bench/, configured
#               debugoptimized if missing); its binaries are copied aside for the run
#   -r REV      measure commit REV instead, exported and built afresh (bench/lib.sh)
#   -b REV      also pull with commit REV (built the same way) in the same rounds
#   -u USER     the unprivileged user measured after root (default cloudsdk)
#   --no-user   as root, measure root only
#   --no-write  print the generated block, leave bench/RESULTS.md alone
#
# As root it measures as root, then as USER (rootless, through runuser, as run-bench.sh);
# as any other user that user only. Writes the block between the `images:begin` /
# `images:end` markers of RESULTS.md and the raw CSVs to bench/results/images-*. Needs
# docker-registry, skopeo, python3, gcc; perf (optional) for the CPU profile of one pull.
# Not a pass/fail test.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
ROUNDS=150
PULLS=6
MB=100
BUILD=$REPO/build-bench
REV=
BASE_REV=
BENCH_USER=cloudsdk
DO_USER=1
DO_WRITE=1
PHASE=outer
WORK=

while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-p) PULLS=$2; shift 2 ;;
	-s) MB=$2; shift 2 ;;
	-B) BUILD=$2; shift 2 ;;
	-r) REV=$2; shift 2 ;;
	-b) BASE_REV=$2; shift 2 ;;
	-u) BENCH_USER=$2; shift 2 ;;
	--no-user) DO_USER=0; shift ;;
	--no-write) DO_WRITE=0; shift ;;
	--phase) PHASE=$2; WORK=$3; shift 3 ;;
	-h|--help) sed -n '13,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-images.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done

# --- measure: as the current user, everything in $WORK/env ---------------------------------
# Writes $WORK/<user>.{start,pull,again}.csv and .cmds, <user>.json (the pulls' --json and
# what the registry served), <user>.cpu (CPU seconds of single runs).
measure() {
	# shellcheck disable=SC1091
	. "$WORK/env"
	local who s ref bb
	who=$(id -un)
	s=$(mktemp -d "$WORK/$who.XXXXXX")
	# a home of our own: skopeo looks for signatures and policy under it
	export HOME=$s/home
	mkdir -p "$HOME"
	ref=$REG/bench/big:1
	bb=$REG/bench/bb:1
	served() { python3 "$HERE/images.py" served "$WORK/registry.log" "$1"; }
	logsize() { stat -c %s "$WORK/registry.log"; }

	# 1. start-up. The state root holds both images, pulled from the registry.
	export TOREN_SANDBOX_ROOT=$s/state
	local off first again
	off=$(logsize)
	first=$("$TOREN" image pull --json "$ref" big 2>"$s/pull.err")
	local first_served
	first_served=$(served "$off")
	off=$(logsize)
	again=$("$TOREN" image pull --json "$ref" big 2>>"$s/pull.err")
	local again_served
	again_served=$(served "$off")
	"$TOREN" image pull --quiet "$bb" bb >/dev/null 2>>"$s/pull.err"
	"$TOREN" run --image big -- /bin/sh -c 'test -x /usr/bin/true && ls /usr/lib/x86_64-linux-gnu/libc.so.6' >/dev/null
	printf '{"first": %s, "first_served": %s, "again": %s, "again_served": %s, "warnings": %s}\n' \
		"$first" "$first_served" "$again" "$again_served" \
		"$(grep -c warning "$s/pull.err" || true)" >"$WORK/$who.json"
	{
		printf 'host image\t%s run -- /bin/true\n' "$TOREN"
		printf 'pulled image (4 layers)\t%s run --image big -- /bin/true\n' "$TOREN"
		printf 'busybox image (1 layer)\t%s run --image bb -- /bin/true\n' "$TOREN"
		printf 'baseline /bin/true\t/bin/true\n'
	} >"$WORK/$who.start.cmds"
	echo "measuring start-up as $who: $ROUNDS rounds" >&2
	"$WORK/bench-timer" -n "$ROUNDS" -w 5 -o "$WORK/$who.start.csv" "$WORK/$who.start.cmds"

	# 2. pull into a new empty store each time, against skopeo into a new directory. Both
	# through env(1) (the same extra exec); sync untimed after each, so no run starts with
	# another one's dirty pages still being written back. Nothing is deleted before the
	# end of the whole run: on an ext4 without a journal (this VM's) every inode allocation
	# skips inodes freed in the last 60-360 s (find_inode_bit -> recently_deleted): with
	# an `rm -rf` of the last store between rounds, that scan was 44% of a pull's perf
	# samples (a trial with a 20 MB image), a cost of the benchmark (skopeo makes a
	# handful of files), not of a pull.
	{
		printf 'toren-sandbox image pull\t/usr/bin/env TOREN_SANDBOX_ROOT=%s/p-%%i %s image pull --quiet %s big\t/bin/sync\n' \
			"$s" "$TOREN" "$ref"
		# the same binary with libarchive's zlib for the layers instead of ISA-L
		printf 'toren-sandbox image pull, zlib (TOREN_SANDBOX_INFLATE=libarchive)\t/usr/bin/env TOREN_SANDBOX_INFLATE=libarchive TOREN_SANDBOX_ROOT=%s/z-%%i %s image pull --quiet %s big\t/bin/sync\n' \
			"$s" "$TOREN" "$ref"
		if [ -n "$BASE_TOREN" ]; then
			printf 'toren-sandbox image pull at %s\t/usr/bin/env TOREN_SANDBOX_ROOT=%s/b-%%i %s image pull --quiet %s big\t/bin/sync\n' \
				"$BASE_LABEL" "$s" "$BASE_TOREN" "$ref"
		fi
		printf 'skopeo copy\t/usr/bin/env TOREN_SANDBOX_ROOT=%s/k-%%i /usr/bin/skopeo copy --quiet --src-tls-verify=false docker://%s dir:%s/k-%%i\t/bin/sync\n' \
			"$s" "$ref" "$s"
		# where the time goes: the same unpacking without the network, a download
		# floor (curl, the blobs one after another, to files) and a decompression floor
		# (zlib, what libarchive uses for gzip, into nothing)
		printf 'toren-sandbox image import (the OCI layout, no network)\t/usr/bin/env TOREN_SANDBOX_ROOT=%s/i-%%i %s image import oci:%s/layout:big big\t/bin/sync\n' \
			"$s" "$TOREN" "$WORK"
		printf 'floor: curl of the layer blobs\t/usr/bin/curl -s -f'
		for b in $BLOBS; do printf ' -o %s/d-%%i-%s http://%s/v2/bench/big/blobs/sha256:%s' "$s" "${b##*/}" "$REG" "${b##*/}"; done
		printf '\t/bin/sync\n'
		printf 'floor: zlib inflate of the layers\t/usr/bin/python3 %s/images.py inflate %s\n' "$HERE" "$BLOBS"
	} >"$WORK/$who.pull.cmds"
	echo "measuring pulls as $who: $PULLS rounds" >&2
	sync
	"$WORK/bench-timer" -n "$PULLS" -w 1 -o "$WORK/$who.pull.csv" "$WORK/$who.pull.cmds"

	# 3. the second pull: into the state root of part 1, which has every layer
	{
		printf 'second pull, same store\t%s image pull --quiet %s big\n' "$TOREN" "$ref"
		printf 'image inspect\t%s image inspect big\n' "$TOREN"
	} >"$WORK/$who.again.cmds"
	"$WORK/bench-timer" -n 20 -w 2 -o "$WORK/$who.again.csv" "$WORK/$who.again.cmds"

	# CPU seconds of one pull each (load-independent, unlike the wall time), 3 runs
	: >"$WORK/$who.cpu"
	local i
	for i in 1 2 3; do
		sync
		/usr/bin/time -f "toren %e %U %S" -a -o "$WORK/$who.cpu" env TOREN_SANDBOX_ROOT="$s/c-$i" \
			"$TOREN" image pull --quiet "$ref" big >/dev/null 2>&1
		sync
		/usr/bin/time -f "skopeo %e %U %S" -a -o "$WORK/$who.cpu" skopeo copy --quiet \
			--src-tls-verify=false "docker://$ref" "dir:$s/k-c$i" >/dev/null 2>&1
	done
	# a pull that failed leaves its half store in tmp/ (the next pull of a store sweeps it)
	find "$s" -mindepth 4 -maxdepth 4 -path '*/images/oci/tmp/*' -printf '%P\n' >"$WORK/$who.leftover"
}

if [ "$PHASE" = measure ]; then
	measure
	exit 0
fi

# --- outer ---------------------------------------------------------------------------------
for t in docker-registry skopeo python3 gcc; do
	command -v $t >/dev/null || { echo "run-images.sh: \`$t\` not found" >&2; exit 1; }
done
# every pull round's stores stay until the end (see measure): about 1.3 GB per round and
# user at 100 MB, and the profile's store
NEED_MB=$((((PULLS + 1) * 13 + 16) * MB * (1 + DO_USER) + 2000))
FREE_MB=$(df -Pm /var/tmp | awk 'NR == 2 { print $4 }')
if [ "$FREE_MB" -lt "$NEED_MB" ]; then
	echo "run-images.sh: needs about $NEED_MB MB free in /var/tmp, has $FREE_MB: use fewer -p rounds" >&2
	exit 1
fi
# When the last run deleted its stores (cleanup): this run's inode allocations would
# pay for those freed inodes (recently_deleted, see measure) if it began sooner.
DELETED_AT=/var/tmp/toren-bench-images.deleted-at
WORK=$(mktemp -d /var/tmp/toren-bench-images.XXXXXX)
chmod 755 "$WORK"
REG_PID=
cleanup() {
	if [ -n "$REG_PID" ]; then
		kill "$REG_PID" 2>/dev/null || true
		wait "$REG_PID" 2>/dev/null || true # its status is SIGTERM's: not a failure
	fi
	rm -rf "$WORK"
	date +%s >"$DELETED_AT" 2>/dev/null || true
}
trap cleanup EXIT
T_START=$(date +%s)
gcc -O2 -Wall -o "$WORK/bench-timer" "$HERE/timer.c"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
if [ -n "$REV" ]; then
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short "$REV")\` (clean export of \`$REV\`, built for this run: debugoptimized)"
	build_rev "$REV" "$WORK"
	TOREN=$WORK/src/build/toren-sandbox
else
	if [ ! -e "$BUILD/build.ninja" ]; then
		echo "run-images.sh: configuring $BUILD (debugoptimized, no sanitizers)" >&2
		meson setup "$BUILD" "$REPO" --buildtype=debugoptimized -Dtests=false -Dman=disabled >/dev/null
	fi
	SAN=$(meson introspect "$BUILD" --buildoptions |
		python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
	if [ "$SAN" != none ]; then
		echo "run-images.sh: $BUILD is built with sanitizers ($SAN): use -B with one without" >&2
		exit 1
	fi
	ninja -C "$BUILD" >/dev/null
	DIRTY=$(git -C "$REPO" status --porcelain -- src runtime meson.build 2>/dev/null | wc -l)
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short HEAD)\`$([ "$DIRTY" = 0 ] && echo ' (src/, runtime/ clean)' || echo " + $DIRTY uncommitted changes under src/ runtime/ meson.build"), \`$BUILD\` (debugoptimized, no sanitizers), copied aside"
	mkdir -p "$WORK/snap"
	TOREN=$(snapshot_build "$BUILD/toren-sandbox" "$WORK/snap")
fi
BASE_TOREN=
BASE_LABEL=
if [ -n "$BASE_REV" ]; then
	BASE_LABEL=$(git -C "$REPO" rev-parse --short "$BASE_REV")
	build_rev "$BASE_REV" "$WORK/base"
	BASE_TOREN=$WORK/base/src/build/toren-sandbox
	COMMIT_LINE="$COMMIT_LINE; \`at $BASE_LABEL\`: clean export of \`$BASE_REV\`, built the same way"
fi

# ext4 skips inodes freed in the last 60-360 s when it allocates (recently_deleted): right
# after the last run's `rm -rf` of ~10 GB of stores that scan was 40% of an import's perf
# samples and doubled the pull rounds. Wait until the last run's stores are 360 s gone.
if [ -r "$DELETED_AT" ]; then
	LEFT=$(($(cat "$DELETED_AT") + 360 - $(date +%s)))
	if [ "$LEFT" -gt 0 ]; then
		echo "run-images.sh: the last run deleted its stores $((360 - LEFT)) s ago: waiting $LEFT s (ext4's recently_deleted)" >&2
		sleep "$LEFT"
	fi
fi

# The image: built from this host's /usr (untimed), pushed to a loopback docker-registry.
echo "building the image (~$MB MB compressed) ..." >&2
IMAGE_JSON=$(python3 "$HERE/images.py" build "$WORK/layout" "$MB")
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$WORK/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $WORK/registry
http:
  addr: 127.0.0.1:$PORT
log:
  level: error
EOF
# the access log (one line per request, bytes and user agent) goes to stdout
docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.05
done
REG=127.0.0.1:$PORT
skopeo copy --quiet --dest-tls-verify=false "oci:$WORK/layout:big" "docker://$REG/bench/big:1"
skopeo copy --quiet --dest-tls-verify=false "oci:$WORK/layout:bb" "docker://$REG/bench/bb:1"
BLOBS=$(python3 "$HERE/images.py" blobs "$WORK/layout" big)
chmod -R a+rX "$WORK/layout"
chmod 644 "$WORK/registry.log"
cat >"$WORK/env" <<EOF
REG=$REG
TOREN=$TOREN
BASE_TOREN=$BASE_TOREN
BASE_LABEL=$BASE_LABEL
ROUNDS=$ROUNDS
PULLS=$PULLS
BLOBS="$BLOBS"
EOF
if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
	chmod 1777 "$WORK"
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$HOME" bash "$HERE/run-images.sh" --phase measure "$WORK"
if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
	runuser -u "$BENCH_USER" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
		bash "$HERE/run-images.sh" --phase measure "$WORK"
fi
# One pull under perf (root only, optional): where its CPU time goes.
PROFILE=
if [ "$(id -u)" = 0 ] && command -v perf >/dev/null; then
	sync
	if perf record -q -e cpu-clock -F 1000 -o "$WORK/perf.data" env TOREN_SANDBOX_ROOT="$WORK/perf-store" \
		"$TOREN" image pull --quiet "$REG/bench/big:1" big >/dev/null 2>&1; then
		PROFILE=$(perf report -i "$WORK/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null |
			awk '/^ +[0-9.]+%/ && n < 12 { sub(/^ +/, ""); print "    " $0; n++ }')
	fi
	rm -rf "$WORK/perf-store"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
T_TOTAL=$(($(date +%s) - T_START))

# --- summary -------------------------------------------------------------------------------
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SUMMARY=$WORK/summary.md
{
	echo "<!-- images:begin (generated by bench/run-images.sh; do not edit by hand) -->"
	echo "### Images: measured $STAMP"
	echo
	echo "- $COMMIT_LINE"
	echo "- machine: $(nproc) CPUs \`$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\`, $(free -m | awk '/^Mem:/{print $2}') MiB RAM, kernel \`$(uname -r)\`; stores and skopeo's directories on \`$(df --output=fstype "$WORK" | tail -1 | tr -d ' ')\` (\`$(df --output=source "$WORK" | tail -1 | tr -d ' ')\`)"
	# shellcheck disable=SC1091
	echo "- $(. /etc/os-release && echo "$PRETTY_NAME"); $(docker-registry --version | sed 's/^docker-registry //'); $(skopeo --version)"
	echo "- load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER; the run took ${T_TOTAL} s"
	python3 - "$IMAGE_JSON" <<'EOF'
import json, sys
j = json.loads(sys.argv[1])
ls = ", ".join(f"{l['layer']} {l['compressed'] / 1e6:.1f} MB ({l['uncompressed'] / 1e6:.0f} MB, {l['files']} files)" for l in j["layers"])
print(f"- the image (`bench/images.py`, from this host's /usr, gzip -6): {len(j['layers'])} layers, "
      f"{j['compressed'] / 1e6:.1f} MB compressed, {j['uncompressed'] / 1e6:.0f} MB as tar, {j['files']} files: {ls}")
EOF
	echo
	for who in root $(ls "$WORK" | sed -n 's/\.start\.csv$//p' | grep -vx root); do
		[ -e "$WORK/$who.start.csv" ] || continue
		if [ "$who" = root ]; then mode="root (uid 0)"; else mode="$who (uid $(id -u "$who"), rootless)"; fi
		python3 - "$WORK" "$who" "$mode" "$BASE_LABEL" <<'EOF'
import csv, json, statistics, sys
work, who, mode, base = sys.argv[1:5]


def med(path, label):
    v = [int(r["ns"]) / 1e6 for r in csv.DictReader(open(path)) if r["label"] == label and r["status"] == "0"]
    return statistics.median(v) if v else float("nan")


s = f"{work}/{who}.start.csv"
p = f"{work}/{who}.pull.csv"
a = f"{work}/{who}.again.csv"
j = json.load(open(f"{work}/{who}.json"))
host, img, bb = med(s, "host image"), med(s, "pulled image (4 layers)"), med(s, "busybox image (1 layer)")
tp, sk = med(p, "toren-sandbox image pull"), med(p, "skopeo copy")
print(f"**As {mode}:**\n")
print(f"- start-up, `run --image` of the pulled image / the host image (target ≤ 1.1×): "
      f"{img:.1f} / {host:.1f} ms = **{img / host:.2f}×** (the busybox image: {bb / host:.2f}×)")
line = (f"- pull into an empty store / `skopeo copy` to a directory (target ≤ 1.3×): "
        f"{tp / 1000:.2f} / {sk / 1000:.2f} s = **{tp / sk:.2f}×**")
if base:
    bp = med(p, f"toren-sandbox image pull at {base}")
    line += f"; at {base}: {bp / 1000:.2f} s = {bp / sk:.2f}×"
print(line)
imp = med(p, "toren-sandbox image import (the OCI layout, no network)")
cu, inf = med(p, "floor: curl of the layer blobs"), med(p, "floor: zlib inflate of the layers")
print(f"- where a pull's time goes, in the same rounds: `image import` of the same layers from the OCI "
      f"layout (no network) {imp / 1000:.2f} s = {imp / sk:.2f}× skopeo; floors: curl of the blobs "
      f"{cu / 1000:.2f} s, zlib's inflate of the layers alone (into nothing) {inf / 1000:.2f} s = {inf / sk:.2f}× skopeo")
fs, ag = j["first_served"].get("toren-sandbox", {}), j["again_served"].get("toren-sandbox", {})
print(f"- second pull of the same layers (target: no download): `--json` says downloaded "
      f"{j['again']['downloaded']} bytes, cached {j['again']['cached']} of {j['again']['layers']} layers "
      f"(the first: downloaded {j['first']['downloaded']}, cached {j['first']['cached']}); the registry's "
      f"access log: {ag.get('blob_gets', 0)} blob GETs, {ag.get('bytes', 0)} bytes in {ag.get('requests', 0)} "
      f"requests (the first pull: {fs.get('blob_gets', 0)} blob GETs, {fs.get('bytes', 0)} bytes); "
      f"it took {med(a, 'second pull, same store'):.1f} ms (`image inspect`: {med(a, 'image inspect'):.1f} ms)")
cpu = {}
for line in open(f"{work}/{who}.cpu"):
    w, e, u, sy = line.split()
    cpu.setdefault(w, []).append((float(e), float(u), float(sy)))
parts = []
for w, v in cpu.items():
    parts.append(f"{w} {statistics.median(x[0] for x in v):.2f} s wall, "
                 f"{statistics.median(x[1] for x in v):.2f} s user + {statistics.median(x[2] for x in v):.2f} s sys")
print(f"- one pull alone, median of {len(next(iter(cpu.values()), []))} (`/usr/bin/time`): " + "; ".join(parts))
if j.get("warnings"):
    print(f"- the pulls warned {j['warnings']} times (see the unpacker's rules in oci-layer.h)")
print()
EOF
		python3 "$HERE/stats.py" --ref "host image" --title "start-up as $who, $ROUNDS rounds" "$WORK/$who.start.csv"
		echo
		python3 "$HERE/stats.py" --ref "skopeo copy" --title "pull as $who, $PULLS rounds, each into an empty store" "$WORK/$who.pull.csv"
		echo
		python3 "$HERE/stats.py" --ref "second pull, same store" --title "second pull as $who, 20 rounds" "$WORK/$who.again.csv"
		echo
		if [ -s "$WORK/$who.leftover" ]; then
			echo "Left in the stores' tmp/ after the pull rounds: $(tr '\n' ' ' <"$WORK/$who.leftover")"
			echo
		fi
		echo "Commands (as $who; \`%i\` is a unique id per run, the part after the second tab runs untimed):"
		echo
		echo '```'
		cat "$WORK/$who.start.cmds" "$WORK/$who.pull.cmds" "$WORK/$who.again.cmds"
		echo '```'
		echo
	done
	if [ -n "$PROFILE" ]; then
		echo "One pull as root under \`perf record -e cpu-clock\` (self time, top symbols):"
		echo
		echo '```'
		echo "$PROFILE"
		echo '```'
		echo
	fi
	echo "<!-- images:end -->"
} >"$SUMMARY"
cat "$SUMMARY"
if [ "$DO_WRITE" = 1 ] && [ -w "$HERE" ]; then
	mkdir -p "$HERE/results"
	for f in "$WORK"/*.csv "$WORK"/*.json; do
		[ -e "$f" ] && cp "$f" "$HERE/results/images-$(basename "$f")"
	done
	python3 - "$HERE/RESULTS.md" "$SUMMARY" <<'EOF'
import re, sys, os
path, summ = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pat = re.compile(r"<!-- images:begin.*?<!-- images:end -->", re.S)
if pat.search(old):
    new = pat.sub(lambda m: summ, old, count=1)
else:
    new = old.rstrip("\n") + "\n\n## Images: runs (generated)\n\n" + summ + "\n"
open(path, "w").write(new)
EOF
	echo "run-images.sh: wrote $HERE/RESULTS.md and $HERE/results/images-*" >&2
fi
