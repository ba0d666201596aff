#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Durable sandboxes: `exec` round trip into a running sandbox against `crun exec` and
# nsenter, `create` + first command, the idle cost of 200 sandboxes, and a traced `exec`.
# See bench/README.md ("Durable sandboxes").
#
# usage: bench/run-durable.sh [-n ROUNDS] [-w WARMUP] [-N IDLE] [-k TRACES] [-u USER]
#                             [-q SECONDS] [-r REV] [--no-user] [--no-idle] [--no-write]
#
#   -n ROUNDS   timed rounds of the exec and the create sets (default 60, at least 30)
#   -w WARMUP   untimed rounds first (default 5)
#   -N IDLE     sandboxes started at once for the idle cost (default 200)
#   -k TRACES   strace'd exec round trips per user for the phase table (default 7)
#   -u USER     the unprivileged user measured after root (default cloudsdk)
#   -q SECONDS  first wait up to SECONDS for the 1-minute load average to drop below 0.5
#   -r REV      measure commit REV, exported and built afresh (default: build/ as it is)
#   --no-user   as root, measure root only
#   --no-idle   leave out the idle-cost part
#   --no-write  print the summary, leave bench/RESULTS.md alone
#
# Run as root: it measures as root and then as USER (rootless), and writes the summary
# between the `durable:begin` / `durable:end` markers of bench/RESULTS.md (raw CSVs in
# bench/results/durable-*). Everything it creates (sandboxes, crun containers, state roots)
# is removed again; the idle part checks that no init of its sandboxes is left.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
TOREN=${TOREN:-$REPO/build/toren-sandbox}
ROUNDS=60
WARMUP=5
IDLE=200
TRACES=7
LOADED_ROUNDS=20
BENCH_USER=cloudsdk
DO_USER=1
DO_IDLE=1
DO_WRITE=1
PHASE=outer
WORK=
QUIET_WAIT=0
REV=

while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-w) WARMUP=$2; shift 2 ;;
	-N) IDLE=$2; shift 2 ;;
	-k) TRACES=$2; shift 2 ;;
	-u) BENCH_USER=$2; shift 2 ;;
	-q) QUIET_WAIT=$2; shift 2 ;;
	-r) REV=$2; shift 2 ;;
	--no-user) DO_USER=0; shift ;;
	--no-idle) DO_IDLE=0; shift ;;
	--no-write) DO_WRITE=0; shift ;;
	--toren) TOREN=$2; shift 2 ;;
	--phase) PHASE=$2; WORK=$3; shift 3 ;;
	-h|--help) sed -n '4,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-durable.sh: unknown argument \`$1\`" >&2; exit 2 ;;
	esac
done
if [ "$ROUNDS" -lt 30 ]; then
	echo "run-durable.sh: -n must be at least 30" >&2
	exit 2
fi

# The bundle of run-bench.sh with `sleep infinity` as its process: a container that stays
# up to be exec'd into. Our id mapped to root, /usr read-only with merged-usr symlinks,
# a /tmp tmpfs, the spec's own /proc, /dev, /sys and masked paths, no cgroup mount.
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

# Measure as the current user; writes $WORK/<user>.{exec,create}.{cmds,csv}, .cold.csv and
# $WORK/<user>.idle/.
measure() {
	local who s id tip cip cr ns_args
	who=$(id -un)
	s=$(mktemp -d /tmp/toren-durable-"$who".XXXXXX)
	export TOREN_SANDBOX_ROOT=$s/state
	cr="/usr/bin/crun --root $s/crun"
	make_bundle "$s/bundle"
	mkdir -p "$s/crun"
	ns_args="-U -m -p -n -u -i --preserve-credentials /bin/true"

	# The first create builds the image layers under the empty state root: timed alone.
	printf 'create cold\t%s create --ttl 0 --name cold\t%s stop cold && %s rm -f --purge cold\n' \
		"$TOREN" "$TOREN" "$TOREN" >"$s/cold.cmds"
	"$WORK/bench-timer" -n 1 -w 0 -o "$WORK/$who.cold.csv" "$s/cold.cmds"

	# --- 1. exec round trip into a running sandbox / container ---
	id=$("$TOREN" create --ttl 0 --name bench-exec | tail -1)
	tip=$("$TOREN" inspect "$id" | jq -r .init.pid)
	$cr --cgroup-manager=disabled run -d --bundle "$s/bundle" bench-ctr </dev/null >/dev/null
	cip=$($cr state bench-ctr | jq -r .pid)
	{
		printf 'toren exec\t%s exec %s -- /bin/true\n' "$TOREN" "$id"
		printf 'crun exec\t%s exec bench-ctr /bin/true\n' "$cr"
		printf 'nsenter crun init\t/usr/bin/nsenter -t %s %s\n' "$cip" "$ns_args"
		printf 'nsenter toren init\t/usr/bin/nsenter -t %s %s\n' "$tip" "$ns_args"
		printf 'toren exec -d\t%s exec -d %s -- /bin/true\n' "$TOREN" "$id"
		printf 'toren inspect\t%s inspect %s\n' "$TOREN" "$id"
		printf 'toren --version\t%s --version\n' "$TOREN"
		printf 'baseline /bin/true\t/bin/true\n'
	} >"$WORK/$who.exec.cmds"
	echo "measuring exec as $who: $ROUNDS rounds (+$WARMUP warm-up) of $(grep -c . "$WORK/$who.exec.cmds") commands" >&2
	"$WORK/bench-timer" -n "$ROUNDS" -w "$WARMUP" -o "$WORK/$who.exec.csv" "$WORK/$who.exec.cmds"
	python3 "$HERE/durable.py" procmem "$WORK/$who.crun.json" "$cip"
	"$TOREN" stop "$id" >/dev/null
	"$TOREN" rm -f --purge "$id" >/dev/null
	$cr delete -f bench-ctr

	# --- 2. create + first command ---
	# `%i` makes a unique name per run; names are accepted wherever an id is.
	{
		printf 'toren create + exec\t%s create --ttl 0 --name n%%i && %s exec n%%i -- /bin/true\t%s stop n%%i && %s rm -f --purge n%%i\n' \
			"$TOREN" "$TOREN" "$TOREN" "$TOREN"
		printf 'toren create\t%s create --ttl 0 --name n%%i\t%s stop n%%i && %s rm -f --purge n%%i\n' \
			"$TOREN" "$TOREN" "$TOREN"
		printf 'crun run -d + exec\t%s --cgroup-manager=disabled run -d --bundle %s n%%i && %s exec n%%i /bin/true\t%s delete -f n%%i\n' \
			"$cr" "$s/bundle" "$cr" "$cr"
		printf 'crun run -d\t%s --cgroup-manager=disabled run -d --bundle %s n%%i\t%s delete -f n%%i\n' \
			"$cr" "$s/bundle" "$cr"
		printf 'baseline /bin/true\t/bin/true\n'
	} >"$WORK/$who.create.cmds"
	echo "measuring create as $who: $ROUNDS rounds (+$WARMUP warm-up)" >&2
	"$WORK/bench-timer" -n "$ROUNDS" -w "$WARMUP" -o "$WORK/$who.create.csv" "$WORK/$who.create.cmds"

	# --- 3. idle cost ---
	if [ "$DO_IDLE" = 1 ]; then
		measure_idle "$WORK/$who.idle"
	fi

	# Everything under the state root should be gone again but the caches and the store.
	for f in "$TOREN_SANDBOX_ROOT"/*; do
		case "${f##*/}" in cache | images | state.db* | '*') ;; *) echo "${f##*/}" ;; esac
	done >"$WORK/$who.leftover"
	ls "$s/crun" >>"$WORK/$who.leftover" 2>/dev/null || true
	rm -rf "$s" 2>/dev/null || true
}

measure_idle() {
	local d=$1 i t0 t1 id ok pids=() starts=() left=0 zombies=0 n_ok=0
	mkdir -p "$d"
	: >"$d/times.csv"
	: >"$d/ids"
	: >"$d/errors"
	echo "idle cost as $(id -un): starting $IDLE sandboxes" >&2
	python3 "$HERE/durable.py" meminfo "$d/m0a.json"
	sleep 5
	python3 "$HERE/durable.py" meminfo "$d/m0b.json"
	for ((i = 1; i <= IDLE; i++)); do
		t0=$(date +%s%N)
		ok=0
		id=$("$TOREN" create --ttl 0 2>>"$d/errors" | tail -1) || ok=$?
		t1=$(date +%s%N)
		echo "create,$i,$(((t1 - t0) / 1000))e-3,$ok" >>"$d/times.csv"
		[ "$ok" = 0 ] && [ -n "$id" ] && echo "$id" >>"$d/ids"
	done
	sleep 3
	python3 "$HERE/durable.py" meminfo "$d/m1.json"
	"$TOREN" ls --json >"$d/ls.json"
	mapfile -t pids < <(jq -r '.[] | select(.state == "running") | .init.pid' "$d/ls.json")
	mapfile -t starts < <(jq -r '.[] | select(.state == "running") | "\(.init.pid) \(.init.start_time)"' "$d/ls.json")
	python3 "$HERE/durable.py" procmem "$d/procs.json" "${pids[@]}"
	sleep 5
	python3 "$HERE/durable.py" meminfo "$d/m1b.json"
	# Does a busy host slow the next sandbox down? The create set again, shorter, with
	# all of them idle.
	grep -v '^crun' "$WORK/$(id -un).create.cmds" >"$d/loaded.cmds"
	echo "create with $IDLE idle sandboxes running: $LOADED_ROUNDS rounds" >&2
	"$WORK/bench-timer" -n "$LOADED_ROUNDS" -w 2 -o "$WORK/$(id -un).loaded.csv" "$d/loaded.cmds"
	echo "idle cost: stopping and removing $(wc -l <"$d/ids") sandboxes" >&2
	while read -r id; do
		t0=$(date +%s%N)
		ok=0
		"$TOREN" stop "$id" >/dev/null 2>>"$d/errors" || ok=$?
		t1=$(date +%s%N)
		echo "stop,$id,$(((t1 - t0) / 1000))e-3,$ok" >>"$d/times.csv"
		ok=0
		"$TOREN" rm -f --purge "$id" >/dev/null 2>>"$d/errors" || ok=$?
		t0=$(date +%s%N)
		echo "rm,$id,$(((t0 - t1) / 1000))e-3,$ok" >>"$d/times.csv"
	done <"$d/ids"
	sleep 3
	python3 "$HERE/durable.py" meminfo "$d/m2.json"
	# Is any init of ours left? (same pid and the same start time: not a reused pid)
	for ps in "${starts[@]}"; do
		local pid=${ps% *} start=${ps#* }
		if [ -r "/proc/$pid/stat" ] &&
			[ "$(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)" = "$start" ]; then
			# a zombie waits for the host's PID 1 (init's parent once the helper is gone)
			if [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]; then
				zombies=$((zombies + 1))
			else
				left=$((left + 1))
			fi
		fi
	done
	n_ok=$("$TOREN" ls --json | jq length)
	echo "$left of ${#starts[@]} inits still running ($zombies exited, not yet reaped by the host's PID 1); \`ls\` lists $n_ok sandboxes; $(grep -c . "$d/errors" || true) lines on stderr; left under the state root besides the caches and the store: $(find "$TOREN_SANDBOX_ROOT" -mindepth 1 -maxdepth 1 ! -name cache ! -name images ! -name 'state.db*' | wc -l)" >"$d/leftover.txt"
	python3 "$HERE/durable.py" idle-report "$d" "$IDLE" >"$d/report.md"
}

# What the traced CLI stops at in the phase runs (durable.py phases needs these).
CLI_MARKERS=execve,openat,connect,sendmsg,recvmsg,fdatasync,fsync,exit_group

# Traced exec round trips (as root: strace attaches to init; the CLI runs as WHO).
profile_user() {
	local who=$1 s id ip k spid u_args=()
	s=$(mktemp -d /tmp/toren-durable-prof-"$who".XXXXXX)
	chown "$who" "$s"
	[ "$who" = root ] || u_args=(-u "$who")
	as_who() {
		if [ "$who" = root ]; then "$@"; else runuser -u "$who" -- "$@"; fi
	}
	id=$(as_who env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TOREN_SANDBOX_ROOT="$s/state" \
		"$TOREN" create --ttl 0 | tail -1)
	ip=$(as_who env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TOREN_SANDBOX_ROOT="$s/state" \
		"$TOREN" inspect "$id" | jq -r .init.pid)
	# a few untraced round trips first (page cache, the store's WAL)
	for k in 1 2 3; do
		as_who env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TOREN_SANDBOX_ROOT="$s/state" \
			"$TOREN" exec "$id" -- /bin/true
	done
	mkdir -p "$WORK/$who.trace"
	# k = 0: every syscall of the CLI (for the counts); k >= 1: the CLI's marker syscalls
	# only, filtered in the kernel (--seccomp-bpf: the other syscalls do not stop it). init
	# and the command it forks are always traced in full (strace -p cannot use the filter).
	for ((k = 0; k <= TRACES; k++)); do
		local filt=()
		[ "$k" = 0 ] || filt=(--seccomp-bpf -e "trace=$CLI_MARKERS")
		strace -f -ttt -T -q -o "$WORK/$who.trace/init.$k.st" -p "$ip" &
		spid=$!
		for _ in $(seq 50); do
			[ "$(awk '/^TracerPid/{print $2}' "/proc/$ip/status")" != 0 ] && break
			sleep 0.02
		done
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TOREN_SANDBOX_ROOT="$s/state" \
			strace "${u_args[@]}" "${filt[@]}" -f -ttt -T -q -o "$WORK/$who.trace/cli.$k.st" \
			"$TOREN" exec "$id" -- /bin/true
		sleep 0.2
		kill -INT "$spid"
		wait "$spid" 2>/dev/null || true
	done
	as_who env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TOREN_SANDBOX_ROOT="$s/state" "$TOREN" stop "$id" >/dev/null
	as_who env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TOREN_SANDBOX_ROOT="$s/state" "$TOREN" rm -f --purge "$id" >/dev/null
	rm -rf "$s"
	{
		# shellcheck disable=SC2046
		python3 "$HERE/durable.py" phases $(for ((k = 1; k <= TRACES; k++)); do echo "$WORK/$who.trace/cli.$k.st"; done) \
			-- $(for ((k = 1; k <= TRACES; k++)); do echo "$WORK/$who.trace/init.$k.st"; done)
		echo "The same phases from one run with every syscall of the CLI traced:"
		echo
		python3 "$HERE/durable.py" phases --full "$WORK/$who.trace/cli.0.st" -- "$WORK/$who.trace/init.0.st"
		echo "The CLI's syscalls in that run, by time spent in them:"
		echo
		python3 "$HERE/durable.py" counts "$WORK/$who.trace/cli.0.st"
	} >"$WORK/$who.profile.md"
}

if [ "$PHASE" = measure ]; then
	measure
	exit 0
fi

# All measurements of one invocation, in the same mount namespace.
if [ "$PHASE" = all ]; then
	measure
	if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
		local_args=(-n "$ROUNDS" -w "$WARMUP" -N "$IDLE" --toren "$TOREN")
		[ "$DO_IDLE" = 1 ] || local_args+=(--no-idle)
		runuser -u "$BENCH_USER" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
			bash "$HERE/run-durable.sh" "${local_args[@]}" --phase measure "$WORK"
	fi
	if [ "$(id -u)" = 0 ] && command -v strace >/dev/null; then
		echo "tracing exec round trips" >&2
		profile_user root
		[ "$DO_USER" = 1 ] && profile_user "$BENCH_USER"
	fi
	exit 0
fi

# --- outer ---
for t in crun nsenter jq gcc python3; do
	command -v $t >/dev/null || { echo "run-durable.sh: \`$t\` not found" >&2; exit 1; }
done
[ -n "$REV" ] || [ -x "$TOREN" ] ||
	{ echo "run-durable.sh: no \`$TOREN\`: ninja -C build first" >&2; exit 1; }
WORK=$(mktemp -d /tmp/toren-durable.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -Wall -o "$WORK/bench-timer" "$HERE/timer.c"
if [ "$(id -u)" = 0 ] && [ "$DO_USER" = 1 ]; then
	chmod 1777 "$WORK"
fi
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
waited=0
while [ "$waited" -lt "$QUIET_WAIT" ] &&
	awk '{exit !($1 >= 0.5)}' /proc/loadavg; do
	sleep 5
	waited=$((waited + 5))
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OTHER_INITS=$(pgrep -xc toren-init || true)
T_START=$(date +%s)

ARGS=(-n "$ROUNDS" -w "$WARMUP" -N "$IDLE" -k "$TRACES" -u "$BENCH_USER" --toren "$TOREN")
[ "$DO_USER" = 1 ] || ARGS+=(--no-user)
[ "$DO_IDLE" = 1 ] || ARGS+=(--no-idle)
# crun 1.8 refuses hybrid cgroup hosts (see run-bench.sh): as root, everything runs in a
# private mount namespace with /sys/fs/cgroup/unified unmounted. Rootless crun refuses it
# as well, so the user's part runs in there too (runuser from the same namespace).
CGROUP_NOTE="none"
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ] && [ "$(id -u)" = 0 ]; then
	CGROUP_NOTE="hybrid cgroups with v2 controllers \`$(cat /sys/fs/cgroup/unified/cgroup.controllers)\`: all commands (toren-sandbox, crun, nsenter alike) ran in a private mount namespace with /sys/fs/cgroup/unified unmounted (crun 1.8 refuses hybrid hosts)"
	unshare -m --propagation private bash -c 'umount /sys/fs/cgroup/unified && exec "$@"' _ \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		bash "$HERE/run-durable.sh" "${ARGS[@]}" --phase all "$WORK"
else
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$HOME" \
		bash "$HERE/run-durable.sh" "${ARGS[@]}" --phase all "$WORK"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
T_TOTAL=$(($(date +%s) - T_START))

# --- summary ---
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SUMMARY=$WORK/summary.md
DONE=
{
	echo "<!-- durable:begin (generated by bench/run-durable.sh; do not edit by hand) -->"
	echo "### Durable sandboxes: measured $STAMP"
	echo
	echo "- $COMMIT_LINE"
	echo "- machine: $(nproc) CPUs \`$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\`, $(free -m | awk '/^Mem:/{print $2}') MiB RAM, kernel \`$(uname -r)\`; state roots on \`$(df --output=fstype /tmp | tail -1)\` (/tmp)"
	echo "- $(. /etc/os-release && echo "$PRETTY_NAME"); crun $(crun --version | awk 'NR==1{print $3}'); $(nsenter --version | sed 's/nsenter from //'); $(strace -V 2>/dev/null | head -1)"
	echo "- $ROUNDS timed rounds after $WARMUP warm-up rounds per set, interleaved (round r starts with command r mod K); bench/timer.c (CLOCK_MONOTONIC around posix_spawn + waitpid; \`a && b\` = both, from the first spawn to the last reap)"
	echo "- cgroups: $CGROUP_NOTE"
	echo "- binaries: \`$BUILD_DIR\` as built $BUILT, copied aside before the run"
	echo "- load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER; $OTHER_INITS \`toren-init\` processes of other sessions were running on the machine at the start; the whole run took ${T_TOTAL} s"
	echo
	for who in root $BENCH_USER; do
		[ -e "$WORK/$who.exec.csv" ] || continue
		case " $DONE " in *" $who "*) continue ;; esac
		DONE="$DONE $who"
		if [ "$who" = root ]; then mode="root (uid 0)"; else mode="$who (uid $(id -u "$who"), rootless)"; fi
		python3 "$HERE/stats.py" --ref "crun exec" --title "exec round trip, as $mode" "$WORK/$who.exec.csv"
		python3 "$HERE/stats.py" --ref "crun run -d + exec" --title "create + first command, as $mode" "$WORK/$who.create.csv"
		if [ -e "$WORK/$who.loaded.csv" ]; then
			python3 "$HERE/stats.py" --ref "baseline /bin/true" --title "create + first command with $IDLE idle sandboxes of the same user running ($LOADED_ROUNDS rounds), as $mode" "$WORK/$who.loaded.csv"
		fi
		cold=$(awk -F, 'NR==2{printf "%.1f", $3/1e6}' "$WORK/$who.cold.csv")
		echo "First \`create\` with an empty state root (builds the image layers): ${cold} ms."
		if [ -s "$WORK/$who.leftover" ]; then
			echo "Left in the state root after the runs: $(tr '\n' ' ' <"$WORK/$who.leftover")"
		fi
		echo
		if [ -e "$WORK/$who.idle/report.md" ]; then
			echo "#### idle cost: $IDLE sandboxes at once, as $mode"
			echo
			cat "$WORK/$who.idle/report.md"
		fi
		if [ -e "$WORK/$who.profile.md" ]; then
			echo "#### traced \`exec ID -- /bin/true\`, as $mode"
			echo
			cat "$WORK/$who.profile.md"
		fi
		echo "Commands (as $who; \`%i\` is a unique token per run, the part after the second tab runs untimed):"
		echo
		echo '```'
		cat "$WORK/$who.exec.cmds" "$WORK/$who.create.cmds"
		echo '```'
		echo
	done
	echo "<!-- durable:end -->"
} >"$SUMMARY"
cat "$SUMMARY"

if [ "$DO_WRITE" = 1 ] && [ -w "$HERE" ]; then
	mkdir -p "$HERE/results"
	for f in "$WORK"/*.exec.csv "$WORK"/*.create.csv "$WORK"/*.loaded.csv "$WORK"/*.cold.csv; do
		[ -e "$f" ] && cp "$f" "$HERE/results/durable-$(basename "$f")"
	done
	for d in "$WORK"/*.idle; do
		[ -d "$d" ] || continue
		who=$(basename "$d" .idle)
		cp "$d/times.csv" "$HERE/results/durable-$who.idle-times.csv"
		cp "$d/procs.json" "$HERE/results/durable-$who.idle-procs.json"
	done
	python3 - "$HERE/RESULTS.md" "$SUMMARY" <<'EOF'
import re, sys, os
path, summ = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pat = re.compile(r"<!-- durable:begin.*?<!-- durable:end -->", re.S)
if pat.search(old):
    new = pat.sub(lambda m: summ, old, count=1)
else:
    new = old.rstrip("\n") + "\n\n## Durable sandboxes: runs (generated)\n\n" + summ + "\n"
open(path, "w").write(new)
EOF
	echo "run-durable.sh: wrote $HERE/RESULTS.md and $HERE/results/durable-*" >&2
fi
