#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Start-up cost of `toren-sandbox run -- /bin/true` against bubblewrap, unshare(1) and crun,
# measured round-robin in one run. See bench/README.md.
#
# usage: bench/run-bench.sh [-n ROUNDS] [-w WARMUP] [-u USER] [-q SECONDS] [-r REV]
#                           [-b REV] [--no-user] [--no-write]
#
#   -n ROUNDS   timed runs of each command (default 100, at least 30)
#   -w WARMUP   untimed rounds first (default 5)
#   -u USER     the unprivileged user measured after root (default cloudsdk)
#   -q SECONDS  first wait up to SECONDS for the 1-minute load average to drop below 0.5
#   -r REV      measure commit REV, exported and built afresh (default: build/ as it is)
#   -b REV      also measure commit REV (built the same way) in the same rounds: before/after
#   --no-user   as root, measure root only
#   --no-write  print the summary, leave bench/RESULTS.md alone
#
# As root it measures as root and then as USER (rootless), and writes the summary between
# the `bench:begin` / `bench:end` markers of bench/RESULTS.md (raw CSVs in bench/results/).
# As any other user it measures that user only.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
TOREN=${TOREN:-$REPO/build/toren-sandbox}
ROUNDS=100
WARMUP=5
BENCH_USER=cloudsdk
DO_USER=1
DO_WRITE=1
PHASE=outer
WORK=
QUIET_WAIT=0
REV=
BASE_REV=
BASE_TOREN=
BASE_LABEL=

while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-w) WARMUP=$2; shift 2 ;;
	-u) BENCH_USER=$2; shift 2 ;;
	-q) QUIET_WAIT=$2; shift 2 ;;
	-r) REV=$2; shift 2 ;;
	-b) BASE_REV=$2; shift 2 ;;
	--base-toren) BASE_TOREN=$2; shift 2 ;;
	--base-label) BASE_LABEL=$2; shift 2 ;;
	--no-user) DO_USER=0; shift ;;
	--no-write) DO_WRITE=0; shift ;;
	--toren) TOREN=$2; shift 2 ;;
	--phase) PHASE=$2; WORK=$3; shift 3 ;;
	-h|--help) sed -n '4,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-bench.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done
if [ "$ROUNDS" -lt 30 ]; then
	echo "run-bench.sh: -n must be at least 30" >&2
	exit 2
fi

# The bubblewrap command of the brief, unchanged: it works as root and rootless here.
BWRAP_ARGS="/usr/bin/bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr \
--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin \
--proc /proc --dev /dev --tmpfs /tmp /bin/true"
# -r maps our id to root in a new user namespace; the same form for root and a user.
UNSHARE_ARGS="/usr/bin/unshare -Urmpfn --fork /bin/true"

# A minimal OCI bundle: `crun spec --rootless`, args /bin/true, no terminal, our id mapped
# to root, the host /usr bound read-only with merged-usr symlinks (like the bwrap command),
# a /tmp tmpfs. The spec's own /proc, /dev, /sys mounts and masked paths stay.
make_bundle() {
	local b=$1 u g
	u=$(id -u)
	g=$(id -g)
	mkdir -p "$b/rootfs"/{usr,proc,dev,sys,tmp}
	for l in bin lib lib64 sbin; do ln -sfn "usr/$l" "$b/rootfs/$l"; done
	(cd "$b" && crun spec --rootless)
	# No cgroup mount: the rootless user has no cgroup to show; the same for root.
	jq --argjson u "$u" --argjson g "$g" '
		.process.args = ["/bin/true"] | .process.terminal = false
		| .linux.uidMappings = [{containerID: 0, hostID: $u, size: 1}]
		| .linux.gidMappings = [{containerID: 0, hostID: $g, size: 1}]
		| del(.linux.resources)
		| .mounts |= map(select(.destination != "/sys/fs/cgroup"))
		| .mounts += [
			{destination: "/usr", type: "bind", source: "/usr",
			 options: ["rbind", "ro", "nosuid", "nodev"]},
			{destination: "/tmp", type: "tmpfs", source: "tmpfs",
			 options: ["nosuid", "nodev", "mode=1777"]}]
	' "$b/config.json" >"$b/config.json.new"
	mv "$b/config.json.new" "$b/config.json"
}

# Measure as the current user; writes $WORK/<user>.csv, .cmds and .cold.
measure() {
	local who s cmds
	who=$(id -un)
	s=$(mktemp -d /tmp/toren-bench-"$who".XXXXXX)
	export TOREN_SANDBOX_ROOT=$s/state
	make_bundle "$s/bundle"
	mkdir -p "$s/crun"
	cmds=$WORK/$who.cmds
	{
		printf 'toren-sandbox\t%s run -- /bin/true\n' "$TOREN"
		if [ -n "$BASE_TOREN" ]; then
			printf 'toren-sandbox at %s\t%s run -- /bin/true\n' "$BASE_LABEL" "$BASE_TOREN"
		fi
		printf 'bwrap\t%s\n' "$BWRAP_ARGS"
		printf 'unshare\t%s\n' "$UNSHARE_ARGS"
		# crun run removes the container when it exits; delete -f is the untimed backstop.
		printf 'crun\t/usr/bin/crun --root %s --cgroup-manager=disabled run --bundle %s %%i\t/usr/bin/crun --root %s delete -f %%i\n' \
			"$s/crun" "$s/bundle" "$s/crun"
		printf 'baseline /bin/true\t/bin/true\n'
	} >"$cmds"
	# The first run builds the image layers under the state root: timed alone, once.
	printf 'toren-sandbox cold\t%s run -- /bin/true\n' "$TOREN" >"$s/cold.cmds"
	"$WORK/bench-timer" -n 1 -w 0 -o "$WORK/$who.cold.csv" "$s/cold.cmds"
	echo "measuring as $who: $ROUNDS rounds (+$WARMUP warm-up) of $(grep -c . "$cmds") commands" >&2
	"$WORK/bench-timer" -n "$ROUNDS" -w "$WARMUP" -o "$WORK/$who.csv" "$cmds"
	# Everything under the state root should be gone again but the caches.
	for f in "$TOREN_SANDBOX_ROOT"/*; do
		case "${f##*/}" in cache | images | '*') ;; *) echo "${f##*/}" ;; esac
	done >"$WORK/$who.leftover"
	rm -rf "$s" 2>/dev/null || true
}

if [ "$PHASE" = measure ]; then
	measure
	exit 0
fi

# All measurements of one invocation, in the same mount namespace.
if [ "$PHASE" = all ]; then
	measure
	if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
		runuser -u "$BENCH_USER" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
			bash "$HERE/run-bench.sh" -n "$ROUNDS" -w "$WARMUP" --toren "$TOREN" \
			--base-toren "$BASE_TOREN" --base-label "$BASE_LABEL" --phase measure "$WORK"
	fi
	exit 0
fi

# --- outer ---
for t in bwrap crun unshare jq gcc python3; do
	command -v $t >/dev/null || { echo "run-bench.sh: \`$t\` not found" >&2; exit 1; }
done
[ -n "$REV" ] || [ -x "$TOREN" ] ||
	{ echo "run-bench.sh: no \`$TOREN\`: ninja -C build first" >&2; exit 1; }
WORK=$(mktemp -d /tmp/toren-bench.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -Wall -o "$WORK/bench-timer" "$HERE/timer.c"
if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
	chmod 1777 "$WORK"
fi
# Measure a snapshot of the build (or a fresh build of REV): a rebuild during the run must
# not change the binaries under test.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
if [ -n "$REV" ]; then
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short "$REV")\` (clean export of \`$REV\`, built for this run: debugoptimized)"
	build_rev "$REV" "$WORK"
	TOREN=$WORK/src/build/toren-sandbox
else
	DIRTY=$(git -C "$REPO" status --porcelain -- src runtime meson.build 2>/dev/null | wc -l)
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)\`$([ "$DIRTY" = 0 ] && echo ' (src/, runtime/ clean)' || echo " + $DIRTY uncommitted changes under src/ runtime/ meson.build")"
fi
BUILD_DIR=$(dirname "$TOREN")
BUILT=$(stat -c %y "$BUILD_DIR/toren-sandbox-helper" 2>/dev/null | cut -d. -f1)
TOREN=$(snapshot_build "$TOREN" "$WORK")
if [ -n "$BASE_REV" ]; then
	BASE_LABEL=$(git -C "$REPO" rev-parse --short "$BASE_REV")
	build_rev "$BASE_REV" "$WORK/base"
	BASE_TOREN=$WORK/base/src/build/toren-sandbox
	COMMIT_LINE="$COMMIT_LINE; \`toren-sandbox at $BASE_LABEL\`: clean export of \`$BASE_REV\`, built the same way, same state root"
fi
waited=0
while [ "$waited" -lt "$QUIET_WAIT" ] &&
	awk '{exit !($1 >= 0.5)}' /proc/loadavg; do
	sleep 5
	waited=$((waited + 5))
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# crun 1.8 refuses to start on a cgroup v1+v2 "hybrid" host whose v2 hierarchy has a
# controller (here: hugetlb), even with --cgroup-manager=disabled. As root we run the whole
# benchmark, every command alike, in a private mount namespace without /sys/fs/cgroup/unified.
NOUSER=()
[ "$DO_USER" = 1 ] || NOUSER=(--no-user)
CGROUP_NOTE="none"
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ] && [ "$(id -u)" = 0 ]; then
	CGROUP_NOTE="hybrid cgroups with v2 controllers \`$(cat /sys/fs/cgroup/unified/cgroup.controllers)\`: all commands ran in a private mount namespace with /sys/fs/cgroup/unified unmounted (crun 1.8 refuses hybrid hosts)"
	unshare -m --propagation private bash -c 'umount /sys/fs/cgroup/unified && exec "$@"' _ \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		bash "$HERE/run-bench.sh" -n "$ROUNDS" -w "$WARMUP" -u "$BENCH_USER" --toren "$TOREN" \
		--base-toren "$BASE_TOREN" --base-label "$BASE_LABEL" "${NOUSER[@]}" --phase all "$WORK"
else
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$HOME" \
		bash "$HERE/run-bench.sh" -n "$ROUNDS" -w "$WARMUP" -u "$BENCH_USER" --toren "$TOREN" \
		--base-toren "$BASE_TOREN" --base-label "$BASE_LABEL" "${NOUSER[@]}" --phase all "$WORK"
fi

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- summary ---
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SUMMARY=$WORK/summary.md
DONE=
{
	echo "<!-- bench:begin (generated by bench/run-bench.sh; do not edit by hand) -->"
	echo "### Start-up: measured $STAMP"
	echo
	echo "- $COMMIT_LINE"
	echo "- machine: $(nproc) CPUs \`$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\`, $(free -m | awk '/^Mem:/{print $2}') MiB RAM, kernel \`$(uname -r)\`, virtualisation \`$(systemd-detect-virt 2>/dev/null || echo unknown)\`$(grep -qw hypervisor /proc/cpuinfo && echo ' (hypervisor flag set)')"
	echo "- $(. /etc/os-release && echo "$PRETTY_NAME"); $(bwrap --version); crun $(crun --version | awk 'NR==1{print $3}'); $(unshare --version | sed 's/unshare from //')"
	echo "- $ROUNDS timed rounds after $WARMUP warm-up rounds; in each round every command runs once, round r starting with command r mod K for K commands (interleaved)"
	echo "- time: CLOCK_MONOTONIC around posix_spawn + waitpid in \`bench/timer.c\` (no shell); \`baseline /bin/true\` is the cost of the measurement itself"
	echo "- cgroups: $CGROUP_NOTE"
	echo "- binaries: \`$BUILD_DIR\` as built $BUILT, copied aside before the run"
	echo "- load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER (other work on the machine shares its $(nproc) CPUs)"
	echo
	for csv in "$WORK"/root.csv "$WORK"/*.csv; do
		case "$csv" in *.cold.csv) continue ;; esac
		[ -e "$csv" ] || continue
		who=$(basename "$csv" .csv)
		case " $DONE " in *" $who "*) continue ;; esac
		DONE="$DONE $who"
		if [ "$who" = root ]; then mode="root (uid 0)"; else mode="$who (uid $(id -u "$who"), rootless)"; fi
		python3 "$HERE/stats.py" --title "as $mode" "$csv"
		cold=$(awk -F, 'NR==2{printf "%.1f", $3/1e6}' "$WORK/$who.cold.csv")
		echo "First run with an empty state root (builds the image layers): ${cold} ms."
		if [ -s "$WORK/$who.leftover" ]; then
			echo "Left in the state root after the runs: $(tr '\n' ' ' <"$WORK/$who.leftover")"
		fi
		echo
		echo "Commands (as $who; \`%i\` is a unique id per run, the part after the second tab runs untimed):"
		echo
		echo '```'
		cat "$WORK/$who.cmds"
		echo '```'
		echo
	done
	echo "<!-- bench:end -->"
} >"$SUMMARY"
cat "$SUMMARY"

if [ "$DO_WRITE" = 1 ] && [ -w "$HERE" ]; then
	mkdir -p "$HERE/results"
	for csv in "$WORK"/*.csv; do
		cp "$csv" "$HERE/results/$(basename "$csv")"
	done
	python3 - "$HERE/RESULTS.md" "$SUMMARY" <<'EOF'
import re, sys, os
path, summ = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read() if os.path.exists(path) else "# Benchmark results\n\n<!-- bench:begin -->\n<!-- bench:end -->\n"
pat = re.compile(r"<!-- bench:begin.*?<!-- bench:end -->", re.S)
new = pat.sub(lambda m: summ, old, count=1) if pat.search(old) else old.rstrip("\n") + "\n\n" + summ + "\n"
open(path, "w").write(new)
EOF
	echo "run-bench.sh: wrote $HERE/RESULTS.md and $HERE/results/" >&2
fi
