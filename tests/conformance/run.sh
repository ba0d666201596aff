#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run the local conformance runner in one of the three ways the runtime must work (as
# tests/live/modes.sh does): root, user (an unprivileged user with /etc/subuid ranges) or
# userns (that user under `unshare -r`). The runner is staged next to the CLI, the helper
# and init, where the library looks for them, in a world-readable directory with a fresh
# state root.
#
# usage: run.sh MODE BUILD_DIR SOURCE_DIR RUNNER [SCENARIO-GLOB...]
# env:   TS_TEST_USER (default tsbx-test), TS_TESTS_MUST_WORK=1 turns skips into failures
set -u
mode=$1 build=$2 src=$3 runner=$4
shift 4
user=${TS_TEST_USER:-tsbx-test}

skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - $mode mode cannot run: $1 (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP $1"; exit 0
}

case $mode in root | user | userns) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || skip_all "the conformance runs need root (they also switch to user $user)"
if [ "$mode" != root ] && ! id "$user" >/dev/null 2>&1; then
	skip_all "test user $user missing: run tests/setup-user.sh (CI does)"
fi

as_mode() {
	case $mode in
	root) "$@" ;;
	user) runuser -u "$user" -- "$@" ;;
	userns) runuser -u "$user" -- unshare -r "$@" ;;
	esac
}

stage=$(mktemp -d /tmp/ts-conf-XXXXXX) || exit 1
chmod 755 "$stage"
envs=(TOREN_SANDBOX=local TS_MODE="$mode"
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy"
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp
	HOME=/tmp LANG=C.UTF-8)
# Nothing outlives the run: sandboxes a failed scenario left running are stopped (as the
# identity that made them) before their state goes.
cleanup() {
	local ids
	# a runner that bailed out (a step hung) leaves the serve it started (runner-e2b.c)
	[ -f "$stage/state/serve.pid" ] && kill "$(cat "$stage/state/serve.pid")" 2>/dev/null
	ids=$(as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" ls --json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin) if s.get("state") == "running"]' 2>/dev/null)
	[ -n "$ids" ] && as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" stop $ids >/dev/null 2>&1
	rm -rf "$stage" 2>/dev/null
}
trap cleanup EXIT
mkdir -p "$stage/bin" "$stage/state"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" \
	"$build/toren-sandbox-sudo" "$runner" \
	"$stage/bin/"
cp -r "$src/policy" "$stage/policy"
chmod -R a+rX "$stage"
case $mode in
root) chmod 700 "$stage/state" ;;
*) chown "$user:" "$stage/state"; chmod 700 "$stage/state" ;;
esac
as_mode env -i "${envs[@]}" "$stage/bin/$(basename "$runner")" "$@"
