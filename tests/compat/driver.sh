#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs one workload outside and inside a sandbox as the current identity (started by
# run-compat.sh) and prints TAP: one line per compared unit, diagnostics for every
# difference, the plan last.
#
# Both sides get the same command in a directory of their own, the same environment
# (PATH HOME USER TERM LANG, HOME = that directory, which is also the working directory),
# /dev/null as standard input and no controlling terminal (outside: a new session by
# setsid; the sandbox has none by design). Outside, the command runs in the host's mount,
# network and pid namespaces as the host identity; inside, in a sandbox started by `run
# --workspace` on its directory.
set -u
compat=$TS_STAGE/compat
# shellcheck source=../live/lib.sh
. "$compat/lib.sh"
cli=$TS_CLI
workload=$TS_WORKLOAD
work=$TS_STAGE/work
out_ws=$work/outside
in_ws=$work/inside
py=/usr/bin/python3
sandbox_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

need() { # need FILE-OR-COMMAND WHAT: skip (or fail with TS_TESTS_MUST_WORK=1) without it
	case $1 in
	/*) [ -e "$1" ] && return 0 ;;
	*) PATH=$sandbox_path command -v "$1" >/dev/null && return 0 ;;
	esac
	tap_skip_all "$2 is not installed (.ci/run installs it)"
}
need "$py" python3
case $workload in
cpython) need /usr/lib/python3.11/test/test_os.py "libpython3.11-testsuite" ;;
git) need /usr/bin/git git; need /usr/lib/git-core/git-daemon "git (git daemon)" ;;
node) need /usr/bin/node "nodejs (/usr/bin/node)" ;;
meson) for c in meson ninja gcc pkg-config; do need "$c" "$c"; done ;;
esac

mkdir -p "$out_ws" "$in_ws" || exit 1
files=()
case $workload in
cpython) files=(cpython.sh cpython-ignore.txt) ;;
git) files=(git.sh) ;;
node) files=(node) ;;
meson) files=(meson.sh source.tar) ;;
esac
for f in "${files[@]}"; do
	cp -r "$compat/$f" "$out_ws/" && cp -r "$compat/$f" "$in_ws/" || exit 1
done
if [ "$TS_MODE" = root ]; then
	# host root is never mapped: the sandbox user is a host id of root's range, and it
	# must own its workspace (as the host user owns the outside one)
	sbuid=$("$cli" run -v -- true 2>&1 | sed -n 's/.*user is host uid \([0-9]*\).*/\1/p')
	[ -n "$sbuid" ] || { tap_not_ok "the sandbox user's host id is known (run -v)"; tap_done; exit 1; }
	chown -R "$sbuid:$sbuid" "$in_ws"
fi

# side outside|inside TIMEOUT CMD...: runs CMD on one side; stdout+stderr to
# $work/SIDE.log, the exit status to $work/SIDE.status. Returns the status.
side() {
	local where=$1 limit=$2 st
	shift 2
	if [ "$where" = outside ]; then
		(cd "$out_ws" && exec env -i PATH="$sandbox_path" HOME="$out_ws" USER="$(id -un)" \
			LANG=C.UTF-8 TERM=dumb setsid -w timeout -k 10 "$limit" "$@") \
			</dev/null >"$work/outside.log" 2>&1
	else
		"$cli" run --workspace "$in_ws" --timeout "$limit" -- "$@" \
			</dev/null >"$work/inside.log" 2>&1
	fi
	st=$?
	echo "$st" >"$work/$where.status"
	return $st
}

# both TIMEOUT CMD...: outside, then inside (one after the other: the same machine, so
# that timing-sensitive tests see the same load); each duration is printed
both() {
	local limit=$1 t0 ms w st
	shift
	for w in outside inside; do
		t0=$(date +%s%N)
		side "$w" "$limit" "$@"
		st=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		tap_diag "$w: $* -> status $st in $((ms / 1000)).$((ms % 1000 / 100))s"
	done
}

# compare.py prints `ok DESC`, `not ok DESC` and `# TEXT` lines; they become TAP here
relay() {
	local line
	while IFS= read -r line; do
		case $line in
		"not ok "*) tap_not_ok "${line#not ok }" ;;
		"ok "*) tap_ok "${line#ok }" ;;
		"# "*) printf '%s\n' "$line" ;;
		*) tap_diag "$line" ;;
		esac
	done
}

compare() { # compare ARGS...: compare.py's verdicts as TAP; its own failure is one too
	local st
	"$py" "$compat/compare.py" "$@" >"$work/compare.out" 2>"$work/compare.err"
	st=$?
	relay <"$work/compare.out"
	if [ $st != 0 ]; then
		tap_not_ok "compare.py $1 ran (status $st)"
		tap_diag_file "$work/compare.err" 30
	fi
}

check_ran() { # the sandbox itself started and no side timed out
	local w st
	for w in outside inside; do
		st=$(cat "$work/$w.status")
		case $st in
		124 | 137) tap_not_ok "$workload ran to the end $w (status $st: timed out)"; tap_diag_file "$work/$w.log" 40 ;;
		125) tap_not_ok "$workload ran $w (status 125: could not start)"; tap_diag_file "$work/$w.log" 40 ;;
		*) continue ;;
		esac
		return 1
	done
	return 0
}

case $workload in
cpython)
	both 900 bash ./cpython.sh full
	check_ran
	# A difference is counted only when it shows again: the differing test ids (not
	# intended ones) are run twice more on both sides, and a test whose results on the two
	# sides ever agree is reported as flaky, not as a difference.
	for i in 1 2; do
		"$py" "$compat/compare.py" cpython-rerun "$TS_MODE" "$compat/intended.txt" \
			"$out_ws" "$in_ws" "$work/rerun.txt" "$work/rerun-modules.txt" 2>"$work/compare.err" || break
		[ -s "$work/rerun.txt" ] || break
		cp "$work/rerun.txt" "$out_ws/rerun.txt"
		cp "$work/rerun.txt" "$in_ws/rerun.txt"
		[ "$TS_MODE" = root ] && chown "$sbuid:$sbuid" "$in_ws/rerun.txt"
		# shellcheck disable=SC2046
		both 600 bash ./cpython.sh "rerun$i" --matchfile rerun.txt $(cat "$work/rerun-modules.txt")
	done
	compare cpython "$TS_MODE" "$compat/intended.txt" "$out_ws" "$in_ws"
	;;
git)
	both 300 bash ./git.sh
	check_ran
	compare results git "$TS_MODE" "$compat/intended.txt" "$out_ws" "$in_ws" "$work"
	;;
node)
	both 300 /usr/bin/node node/main.js
	check_ran
	compare results node "$TS_MODE" "$compat/intended.txt" "$out_ws" "$in_ws" "$work"
	;;
meson)
	both 900 bash ./meson.sh
	check_ran
	compare results meson "$TS_MODE" "$compat/intended.txt" "$out_ws" "$in_ws" "$work"
	;;
esac
[ "$TAP_N" -gt 0 ] || tap_not_ok "$workload: something was compared"
tap_done
