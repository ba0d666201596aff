#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run a live test script in one of the three ways the runtime must work:
#   root    as root (sandbox ids from an unprivileged host range)
#   user    as an unprivileged user with /etc/subuid ranges (newuidmap)
#   userns  as that user under `unshare -r` (one id: the single mapping)
# The binaries, policy files, probe and scripts are staged into a world-readable
# directory first, so the unprivileged user can run them wherever the build tree is.
#
# usage: modes.sh MODE BUILD_DIR SOURCE_DIR SCRIPT [PROBE]
# env:   TS_TEST_USER (default tsbx-test), TS_TESTS_MUST_WORK=1 turns skips into failures
set -u
mode=$1 build=$2 src=$3 script=$4 probe=${5:-}
user=${TS_TEST_USER:-tsbx-test}

skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - $mode mode cannot run: $1 (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP $1"; exit 0
}

[ "$(id -u)" = 0 ] || skip_all "live tests need root (they also switch to user $user)"
if [ "$mode" != root ] && ! id "$user" >/dev/null 2>&1; then
	skip_all "test user $user missing: run tests/setup-user.sh (CI does)"
fi

stage=$(mktemp -d /tmp/ts-live-XXXXXX) || exit 1
chmod 755 "$stage"
# At the end, every durable sandbox a script left running is stopped (as the identity
# that created it) before its state goes: nothing outlives the test.
stop_all() {
	local ids
	ids=$(as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" ls --json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin) if s.get("state") == "running"]' 2>/dev/null)
	[ -n "$ids" ] && as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" stop $ids >/dev/null 2>&1
	rm -rf "$stage" 2>/dev/null
}
as_mode() {
	case $mode in
	root) "$@" ;;
	user) runuser -u "$user" -- "$@" ;;
	userns) runuser -u "$user" -- unshare -r "$@" ;;
	esac
}
mkdir -p "$stage/bin" "$stage/tests" "$stage/state"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" "$stage/bin/"
[ -e "$build/toren-sandbox-sudo" ] && cp "$build/toren-sandbox-sudo" "$stage/bin/"
[ -e "$build/toren-sandbox-proxy" ] && cp "$build/toren-sandbox-proxy" "$stage/bin/"
cp -r "$src/policy" "$stage/policy"
cp -r "$src/rootfs" "$stage/rootfs" # image build's recipes
cp "$src/tests/live/"*.sh "$src/tests/live/"*.py "$stage/tests/"
cp "$script" "$stage/tests/" # a live script kept beside what it tests (tests/server)
[ -n "$probe" ] && cp "$probe" "$stage/probe"
chmod -R a+rX "$stage"
case $mode in
root) chmod 700 "$stage/state" ;;
*) chown "$user:" "$stage/state"; chmod 700 "$stage/state" ;;
esac

envs=(TS_CLI="$stage/bin/toren-sandbox" TS_HELPER="$stage/bin/toren-sandbox-helper"
	TS_PROBE="$stage/probe" TS_MODE="$mode" TS_STAGE="$stage"
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy"
	TOREN_SANDBOX_ROOTFS_DIR="$stage/rootfs"
	${TS_IMAGE_BUILD_USER:+TS_IMAGE_BUILD_USER=$TS_IMAGE_BUILD_USER}
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp
	HOME=/tmp LANG=C.UTF-8 TERM="${TERM:-dumb}")
case $script in *.py) interp=python3 ;; *) interp=bash ;; esac
target=$stage/tests/$(basename "$script")
case $mode in root | user | userns) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac
trap stop_all EXIT
as_mode env -i "${envs[@]}" $interp "$target"
exit $?
