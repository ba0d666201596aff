# SPDX-License-Identifier: Apache-2.0
# TAP helpers for the live tests. Source it, call tap_* as checks are decided, and end
# with tap_done (the plan line comes last, so a script need not count in advance).
#
#   tap_ok DESC                 tap_not_ok DESC              tap_skip DESC REASON
#   tap_result STATUS DESC      (0 = ok)
#   tap_is GOT WANT DESC        tap_diag TEXT                tap_diag_file FILE [LINES]
#   tap_yard FILE PREFIX [ID...]  probe lines `YARD <id> PASS|FAIL|SKIP <detail>` to TAP;
#                               each ID that has no line is a failure; verdicts land in
#                               the associative array YARD[<prefix><id>]
#   tap_skip_all REASON         `1..0 # SKIP`, or a failure with TS_TESTS_MUST_WORK=1
#   tap_done                    plan line and summary; returns non-zero on any failure
TAP_N=0
TAP_FAILED=0
TAP_SKIPPED=0
declare -A YARD=()

# One line, and no '#': TAP would read the rest as a directive.
_tap_desc() {
	local d=${1//$'\n'/ }
	d=${d//$'\r'/}
	printf '%s' "${d//#/%23}"
}

tap_ok() {
	TAP_N=$((TAP_N + 1))
	printf 'ok %d - %s\n' "$TAP_N" "$(_tap_desc "$*")"
}

tap_not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	printf 'not ok %d - %s\n' "$TAP_N" "$(_tap_desc "$*")"
}

tap_skip() {
	local desc=$1
	shift
	TAP_N=$((TAP_N + 1))
	TAP_SKIPPED=$((TAP_SKIPPED + 1))
	printf 'ok %d - %s # SKIP %s\n' "$TAP_N" "$(_tap_desc "$desc")" "$(_tap_desc "$*")"
}

tap_result() {
	local st=$1
	shift
	if [ "$st" = 0 ]; then tap_ok "$*"; else tap_not_ok "$*"; fi
}

tap_is() {
	if [ "$1" = "$2" ]; then
		tap_ok "$3"
	else
		tap_not_ok "$3 (got '$(_tap_desc "$1")', want '$(_tap_desc "$2")')"
	fi
}

tap_diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

tap_diag_file() {
	[ -s "$1" ] || return 0
	head -n "${2:-20}" "$1" | tr -d '\r' | sed 's/^/# /'
}

tap_yard() {
	local file=$1 prefix=$2 line id verdict detail
	shift 2
	local -A seen=()
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in "YARD "*) ;; *) continue ;; esac
		read -r _ id verdict detail <<<"$line"
		seen[$id]=1
		YARD[$prefix$id]=$verdict
		case $verdict in
		PASS) tap_ok "$prefix$id $detail" ;;
		SKIP) tap_skip "$prefix$id" "${detail#*skip: }" ;;
		*) tap_not_ok "$prefix$id $detail" ;;
		esac
	done <"$file"
	for id in "$@"; do
		if [ -z "${seen[$id]:-}" ]; then
			YARD[$prefix$id]=MISSING
			tap_not_ok "$prefix$id produced no result (the probe or the sandbox died before it)"
		fi
	done
}

tap_skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - $(_tap_desc "$1") (TS_TESTS_MUST_WORK=1)"
		exit 1
	fi
	echo "1..0 # SKIP $(_tap_desc "$1")"
	exit 0
}

# Remove every snapshot `$cli snapshot ls` lists (those of the test's own state root), for
# a test's EXIT trap.
rm_snapshots() {
	local s
	for s in $(timeout 30 "$cli" snapshot ls --json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' 2>/dev/null); do
		timeout 30 "$cli" snapshot rm "$s" >/dev/null 2>&1
	done
}

# Start `$cli serve ARGS...` in the background (stdout in $tmp/serve.out, stderr in
# $tmp/serve.err) and
# wait, at most 5 s, for its `control plane on` line. Sets srv_pid, control and envd (empty
# when serve did not come up) and adds the pid to the caller's pids array, which its EXIT
# trap kills.
start_serve() {
	: >"$tmp/serve.out"
	"$cli" serve "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
	srv_pid=$!
	pids+=("$srv_pid")
	for _ in $(seq 100); do
		grep -q 'control plane on' "$tmp/serve.out" && break
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.05
	done
	control=$(sed -n 's/.*control plane on \([^,]*\), envd on \(.*\)$/\1/p' "$tmp/serve.out")
	envd=$(sed -n 's/.*control plane on \([^,]*\), envd on \(.*\)$/\2/p' "$tmp/serve.out")
}

tap_done() {
	printf '1..%d\n' "$TAP_N"
	printf '# %d passed, %d failed, %d skipped\n' \
		$((TAP_N - TAP_FAILED - TAP_SKIPPED)) "$TAP_FAILED" "$TAP_SKIPPED"
	[ "$TAP_FAILED" = 0 ]
}
