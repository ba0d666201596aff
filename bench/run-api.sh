#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Issue 8's speed targets: the backend interface in process (commands.run of /bin/true
# into a running sandbox against a plain posix_spawn on the host), the CLI's exec against
# crun exec (and against an older commit's exec), idle init memory with finished
# processes in its table, and stdout throughput (background + attach, attached exec).
# See bench/README.md ("The backend interface").
#
# usage: bench/run-api.sh [-n ROUNDS] [-w WARMUP] [-t STREAM_ROUNDS] [-r REV] [-b REV]
#                         [-B BUILD] [-q SECONDS] [-k TRACES] [--no-write] [--keep]
#
#   -n ROUNDS   interleaved rounds of the latency set (default 200)
#   -w WARMUP   untimed rounds first (default 10)
#   -t ROUNDS   rounds of the throughput sets (default 15)
#   -r REV      measure commit REV, exported and built afresh (default: BUILD as it is)
#   -b REV      add REV's `exec` (its own sandbox and state root) to the latency set
#   -B BUILD    the build directory without -r (default build/); its bench target is built
#   -q SECONDS  first wait up to SECONDS for the 1-minute load average to drop below 0.5
#   -k TRACES   commands.run calls under strace for the syscall counts (default 50)
#   --no-write  print the generated block, leave bench/RESULTS.md alone
#   --keep      keep the work directory (CSVs, traces) and say where
#
# As root only (the mode is recorded): crun needs the private mount namespace of
# run-durable.sh on this hybrid-cgroup host, and strace attaches to init. Writes the block
# between the `api:begin` / `api:end` markers of RESULTS.md, raw CSVs to bench/results/api-*.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=$REPO/build
ROUNDS=200
WARMUP=10
SROUNDS=15
TRACES=50
QUIET_WAIT=0
REV=
OLD_REV=
DO_WRITE=1
KEEP=0
PHASE=outer
WORK=

while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-w) WARMUP=$2; shift 2 ;;
	-t) SROUNDS=$2; shift 2 ;;
	-r) REV=$2; shift 2 ;;
	-b) OLD_REV=$2; shift 2 ;;
	-B) BUILD=$2; shift 2 ;;
	-q) QUIET_WAIT=$2; shift 2 ;;
	-k) TRACES=$2; shift 2 ;;
	--no-write) DO_WRITE=0; shift ;;
	--keep) KEEP=1; shift ;;
	--phase) PHASE=$2; WORK=$3; shift 3 ;;
	-h|--help) sed -n '10,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-api.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done

# The bundle of run-durable.sh: `sleep infinity`, our id mapped to root, /usr read-only
# with merged-usr symlinks, a /tmp tmpfs, the spec's /proc, /dev, /sys, no cgroup mount.
make_bundle() {
	local b=$1 u g
	u=$(id -u)
	g=$(id -g)
	mkdir -p "$b/rootfs"/{usr,proc,dev,sys,tmp}
	for l in bin lib lib64 sbin; do ln -sfn "usr/$l" "$b/rootfs/$l"; done
	(cd "$b" && crun spec --rootless)
	jq --argjson u "$u" --argjson g "$g" '
		.process.args = ["/bin/sleep", "infinity"] | .process.terminal = false
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

# /proc/PID/status + smaps_rollup of init as JSON, labelled (durable.py procmem).
snap() {
	local label=$1 pid=$2
	python3 "$HERE/durable.py" procmem "$WORK/mem.tmp.json" "$pid"
	jq -c --arg l "$label" '.[0] + {label: $l}' "$WORK/mem.tmp.json" >>"$WORK/idle.jsonl"
}

# Everything measured, in one mount namespace (as root).
measure() {
	local s=$WORK/run id tip cip cr old_id="" ns_args
	TOREN=$WORK/bin/toren-sandbox
	API=$WORK/bin/toren-bench-api
	export TOREN_SANDBOX_ROOT=$s/state
	mkdir -p "$s/ws" "$s/crun"
	cp "$WORK/static-true" "$WORK/spawn-lab" "$s/ws/"
	chmod 777 "$s/ws" # the sandbox's user writes the lab's CSV there
	cr="/usr/bin/crun --root $s/crun"
	make_bundle "$s/bundle" >/dev/null
	ns_args="-U -m -p -n -u -i --preserve-credentials"

	id=$("$TOREN" create --ttl 0 --name bench-api --workspace "$s/ws" | tail -1)
	tip=$("$TOREN" inspect "$id" | jq -r .init.pid)
	$cr --cgroup-manager=disabled run -d --bundle "$s/bundle" bench-ctr </dev/null >/dev/null
	cip=$($cr state bench-ctr | jq -r .pid)
	if [ -n "$OLD_REV" ]; then
		old_id=$(TOREN_SANDBOX_ROOT=$s/old-state "$WORK/old/bin/toren-sandbox" create --ttl 0 \
			--name bench-old | tail -1)
	fi
	sleep 1
	echo "$id $tip $cip $old_id" >"$WORK/ids"

	# --- 1 and 2: latency, every row in the same interleaved rounds ---
	{
		printf 'nsenter into init + /bin/true\t/usr/bin/nsenter -t %s %s /bin/true\n' "$tip" "$ns_args"
		printf 'CLI exec /bin/true\t%s exec %s -- /bin/true\n' "$TOREN" "$id"
		if [ -n "$old_id" ]; then
			printf 'CLI exec /bin/true at %s\tTOREN_SANDBOX_ROOT=%s %s exec %s -- /bin/true\n' \
				"$OLD_SHORT" "$s/old-state" "$WORK/old/bin/toren-sandbox" "$old_id"
		fi
		printf 'CLI --version\t%s --version\n' "$TOREN"
		printf 'crun exec /bin/true\t%s exec bench-ctr /bin/true\n' "$cr"
		printf 'nsenter into crun + /bin/true\t/usr/bin/nsenter -t %s %s /bin/true\n' "$cip" "$ns_args"
	} >"$WORK/latency.cmds"
	echo "latency: $ROUNDS rounds (+$WARMUP warm-up)" >&2
	"$API" latency -n "$ROUNDS" -w "$WARMUP" -x "$WORK/latency.cmds" \
		-s "/home/user/static-true:$s/ws/static-true" -o "$WORK/latency.csv" "$id"
	snap "the latency sandbox after the latency set" "$tip"

	# --- the spawn lab: init's way of starting a command against posix_spawn, on the host
	# (with and without the sandbox's seccomp filter) and inside the sandbox, in blocks ---
	local bpf
	bpf=$(find "$TOREN_SANDBOX_ROOT/cache/seccomp" -name '*.bpf' | head -1)
	echo "label,round,ns,status" >"$WORK/lab.csv"
	echo "spawn lab: 4 blocks of 50 rounds, 3 places" >&2
	for _ in 1 2 3 4; do
		"$WORK/spawn-lab" -n 50 -l " (host)" -o "$WORK/lab.csv"
		"$WORK/spawn-lab" -n 50 -f "$bpf" -l " (host, the sandbox's seccomp filter)" -o "$WORK/lab.csv"
		"$TOREN" exec "$id" -- /home/user/spawn-lab -n 50 -l " (inside the sandbox)" \
			-o /home/user/lab-in.csv
	done
	cat "$s/ws/lab-in.csv" >>"$WORK/lab.csv"

	# --- 4: throughput ---
	echo "throughput: $SROUNDS rounds in process" >&2
	"$API" stream -n "$SROUNDS" -w 2 -m 1,64 -o "$WORK/stream.csv" "$id"
	# The CLI's attached exec into a pipe, the way a user runs it; each line checks the count.
	# shellcheck disable=SC2016 # the $(...) is for the sh -c of each line, not for us
	t() { printf '%s\t/bin/sh\x1f-c\x1ftest "$(%s | wc -c)" = %s\n' "$1" "$2" "$3"; }
	for mib in 1 64; do
		b=$((mib << 20))
		t "host: head -c ${mib}M | wc -c" "head -c $b /dev/zero" $b
		t "CLI exec head -c ${mib}M | wc -c" "$TOREN exec $id -- head -c $b /dev/zero" $b
		t "nsenter + head -c ${mib}M | wc -c" "/usr/bin/nsenter -t $tip $ns_args head -c $b /dev/zero" $b
		t "crun exec head -c ${mib}M | wc -c" "$cr exec bench-ctr head -c $b /dev/zero" $b
	done >"$WORK/cli-stream.cmds"
	# A background process's log read back by `logs` (the path after a detach, host side).
	local proc
	proc=$("$TOREN" exec -d "$id" -- head -c $((64 << 20)) /dev/zero)
	sleep 2
	t "CLI logs of a 64M background log | wc -c" "$TOREN logs $id $proc" $((64 << 20)) >>"$WORK/cli-stream.cmds"
	echo "throughput: $SROUNDS rounds of the CLI" >&2
	"$WORK/bench-timer" -n "$SROUNDS" -w 2 -o "$WORK/cli-stream.csv" "$WORK/cli-stream.cmds"
	snap "the latency sandbox after the throughput sets too" "$tip"

	# --- where the time of commands.run goes: init's syscalls per command ---
	if command -v strace >/dev/null; then
		echo "tracing init over $TRACES runs" >&2
		strace -q -f -c -S calls -o "$WORK/strace-c.txt" -p "$tip" &
		local spid=$!
		for _ in $(seq 50); do
			[ "$(awk '/^TracerPid/{print $2}' "/proc/$tip/status")" != 0 ] && break
			sleep 0.02
		done
		"$API" runs -k "$TRACES" "$id"
		sleep 0.3
		kill -INT "$spid"
		wait "$spid" 2>/dev/null || true
		# one traced run with timestamps: init and its child
		strace -q -f -ttt -T -o "$WORK/strace-t.txt" -p "$tip" &
		spid=$!
		for _ in $(seq 50); do
			[ "$(awk '/^TracerPid/{print $2}' "/proc/$tip/status")" != 0 ] && break
			sleep 0.02
		done
		"$API" runs -k 5 "$id"
		sleep 0.3
		kill -INT "$spid"
		wait "$spid" 2>/dev/null || true
	fi

	# --- 3: idle init memory, a fresh sandbox ---
	local iid ipid
	iid=$("$TOREN" create --ttl 0 --name bench-idle | tail -1)
	ipid=$("$TOREN" inspect "$iid" | jq -r .init.pid)
	sleep 5
	snap "settled, no process run yet" "$ipid"
	"$API" runs -k 5 "$iid"
	sleep 2
	snap "after 5 finished /bin/true" "$ipid"
	"$API" runs -k 5 -b $((1 << 20)) "$iid"
	sleep 2
	snap "after 5 more that wrote 1 MiB each" "$ipid"
	"$API" runs -k 300 "$iid"
	sleep 2
	snap "after 300 more /bin/true (the table keeps 256 finished)" "$ipid"
	# a record goes once 256 newer ones have ended and it is 30 s old, at the next spawn
	sleep 31
	"$API" runs -k 1 "$iid"
	sleep 2
	snap "31 s later, after one more /bin/true (records past 256 released)" "$ipid"
	if [ -n "$old_id" ]; then
		snap "$OLD_SHORT: settled, then the latency set" \
			"$(TOREN_SANDBOX_ROOT=$s/old-state "$WORK/old/bin/toren-sandbox" inspect "$old_id" | jq -r .init.pid)"
	fi

	"$TOREN" stop "$iid" >/dev/null
	"$TOREN" rm -f --purge "$iid" >/dev/null
	"$TOREN" stop "$id" >/dev/null
	"$TOREN" rm -f --purge "$id" >/dev/null 2>&1 # says it keeps the given workspace
	if [ -n "$old_id" ]; then
		TOREN_SANDBOX_ROOT=$s/old-state "$WORK/old/bin/toren-sandbox" stop "$old_id" >/dev/null
		TOREN_SANDBOX_ROOT=$s/old-state "$WORK/old/bin/toren-sandbox" rm -f --purge "$old_id" >/dev/null
	fi
	$cr delete -f bench-ctr
	rm -rf "$s" 2>/dev/null || true
}

if [ "$PHASE" = measure ]; then
	# shellcheck disable=SC1091
	. "$WORK/env"
	measure
	exit 0
fi

# --- outer ---
[ "$(id -u)" = 0 ] || { echo "run-api.sh: run as root" >&2; exit 1; }
for t in crun nsenter jq gcc python3; do
	command -v $t >/dev/null || { echo "run-api.sh: \`$t\` not found" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/toren-api.XXXXXX)
chmod 755 "$WORK"
if [ "$KEEP" = 1 ]; then
	echo "run-api.sh: keeping $WORK" >&2
else
	trap 'rm -rf "$WORK"' EXIT
fi
gcc -O2 -Wall -o "$WORK/bench-timer" "$HERE/timer.c"
# The static programs are built as init is (musl when there), so the lab's process is as
# small as init and the static command costs what a minimal static binary costs.
CC_STATIC=gcc
KINC=()
if command -v musl-gcc >/dev/null; then
	CC_STATIC=musl-gcc
	mkdir -p "$WORK/kinc"
	bash "$REPO/runtime/musl-kernel-headers.sh" "$WORK/kinc" "$(gcc -print-multiarch)" >/dev/null
	KINC=(-idirafter "$WORK/kinc")
fi
echo 'int main(void) { return 0; }' >"$WORK/static-true.c"
$CC_STATIC -static -O2 -o "$WORK/static-true" "$WORK/static-true.c"
$CC_STATIC -static -O2 -Wall "${KINC[@]}" -o "$WORK/spawn-lab" "$HERE/spawn-lab.c"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
if [ -n "$REV" ]; then
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short "$REV")\` (clean export of \`$REV\`, built for this run: debugoptimized)"
	build_rev "$REV" "$WORK"
	BUILD=$WORK/src/build
else
	DIRTY=$(git -C "$REPO" status --porcelain -- src runtime meson.build bench/api-bench.c 2>/dev/null | wc -l)
	COMMIT_LINE="commit \`$(git -C "$REPO" rev-parse --short HEAD)\`$([ "$DIRTY" = 0 ] && echo ' (src/, runtime/ clean)' || echo " + $DIRTY uncommitted changes"), build \`$BUILD\` ($(meson introspect --buildoptions "$BUILD" 2>/dev/null | jq -r '.[] | select(.name=="buildtype") | .value'))"
fi
ninja -C "$BUILD" bench/toren-bench-api >"$WORK/bench-build.log" 2>&1 ||
	{ echo "run-api.sh: building bench/toren-bench-api failed:" >&2; tail "$WORK/bench-build.log" >&2; exit 1; }
BUILT=$(stat -c %y "$BUILD/toren-sandbox-init" | cut -d. -f1)
snapshot_build "$BUILD/toren-sandbox" "$WORK" >/dev/null
# next to the helper and init: the library finds them next to the running executable
cp "$BUILD/bench/toren-bench-api" "$WORK/bin/"
OLD_SHORT=
if [ -n "$OLD_REV" ]; then
	OLD_SHORT=$(git -C "$REPO" rev-parse --short "$OLD_REV")
	build_rev "$OLD_REV" "$WORK/old"
	snapshot_build "$WORK/old/src/build/toren-sandbox" "$WORK/old" >/dev/null
fi
printf 'OLD_REV=%q\nOLD_SHORT=%q\nROUNDS=%q\nWARMUP=%q\nSROUNDS=%q\nTRACES=%q\n' \
	"$OLD_REV" "$OLD_SHORT" "$ROUNDS" "$WARMUP" "$SROUNDS" "$TRACES" >"$WORK/env"

waited=0
while [ "$waited" -lt "$QUIET_WAIT" ] && awk '{exit !($1 >= 0.5)}' /proc/loadavg; do
	sleep 5
	waited=$((waited + 5))
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OTHER_INITS=$(pgrep -xc toren-init || true)
T_START=$(date +%s)

CGROUP_NOTE="none"
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
	CGROUP_NOTE="hybrid cgroups with v2 controllers \`$(cat /sys/fs/cgroup/unified/cgroup.controllers)\`: everything ran in a private mount namespace with /sys/fs/cgroup/unified unmounted (crun 1.8 refuses hybrid hosts)"
	unshare -m --propagation private bash -c 'umount /sys/fs/cgroup/unified && exec "$@"' _ \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		bash "$HERE/run-api.sh" --phase measure "$WORK"
else
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash "$HERE/run-api.sh" --phase measure "$WORK"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
T_TOTAL=$(($(date +%s) - T_START))

STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SUMMARY=$WORK/summary.md
{
	echo "<!-- api:begin (generated by bench/run-api.sh; do not edit by hand) -->"
	echo "### Backend interface: measured $STAMP"
	echo
	echo "- $COMMIT_LINE; binaries as built $BUILT, copied aside before the run"
	[ -n "$OLD_REV" ] && echo "- for comparison: \`$OLD_SHORT\` (clean export of \`$OLD_REV\`, debugoptimized), its own sandbox and state root"
	echo "- mode: as root (uid 0): the bench, the CLI, nsenter and crun run as root; the sandboxes are root's (\`create\` by root: an id map with a root, commands run as \`user\`, uid 1000 inside, by default)"
	echo "- machine: $(nproc) CPUs \`$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\`, $(free -m | awk '/^Mem:/{print $2}') MiB RAM, kernel \`$(uname -r)\`; state root on \`$(df --output=fstype /tmp | tail -1)\` (/tmp)"
	echo "- $(. /etc/os-release && echo "$PRETTY_NAME"); crun $(crun --version | awk 'NR==1{print $3}'); $(nsenter --version | sed 's/nsenter from //')"
	echo "- cgroups: $CGROUP_NOTE"
	echo "- load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER; $OTHER_INITS \`toren-init\` processes of others running at the start; the whole run took ${T_TOTAL} s"
	echo "- latency: $ROUNDS interleaved rounds after $WARMUP warm-up rounds, every row in one process (\`bench/api-bench.c\`: CLOCK_MONOTONIC around the call, or around posix_spawn + waitpid for the commands); throughput: $SROUNDS rounds after 2"
	echo
	python3 "$HERE/api.py" report "$WORK"
	echo "<!-- api:end -->"
} >"$SUMMARY"
cat "$SUMMARY"

if [ "$DO_WRITE" = 1 ]; then
	mkdir -p "$HERE/results"
	for f in latency stream cli-stream lab; do
		cp "$WORK/$f.csv" "$HERE/results/api-$f.csv"
	done
	cp "$WORK/idle.jsonl" "$HERE/results/api-idle.jsonl"
	[ -e "$WORK/strace-c.txt" ] && cp "$WORK/strace-c.txt" "$HERE/results/api-strace-c.txt"
	[ -e "$WORK/strace-t.txt" ] && cp "$WORK/strace-t.txt" "$HERE/results/api-strace-t.txt"
	python3 - "$HERE/RESULTS.md" "$SUMMARY" <<'EOF'
import re, sys
path, summ = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read()
pat = re.compile(r"<!-- api:begin.*?<!-- api:end -->", re.S)
if pat.search(old):
    new = pat.sub(lambda m: summ, old, count=1)
else:
    new = old.rstrip("\n") + "\n\n## Backend interface: runs (generated)\n\n" + summ + "\n"
open(path, "w").write(new)
EOF
	echo "run-api.sh: wrote $HERE/RESULTS.md and $HERE/results/api-*" >&2
fi
