#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Compatibility suite: run a real program's own tests (a "workload") outside a sandbox
# and inside one, as the same host identity, and compare the results per test. Any
# difference fails unless tests/compat/intended.txt names it, with the reason.
#
# The modes are those of tests/live/modes.sh:
#   root    as root (the sandbox user is an unprivileged host id of root's range)
#   user    as the unprivileged user $TS_TEST_USER (one id: the caller's own)
#   userns  as that user under `unshare -r`
# Binaries, policy and the workload files are staged into a world-readable directory
# first, so that the unprivileged user can run them wherever the build tree is.
#
# usage: run-compat.sh MODE BUILD_DIR SOURCE_DIR WORKLOAD    (WORKLOAD: cpython git node meson)
# env:   TS_TEST_USER (default tsbx-test), TS_TESTS_MUST_WORK=1 turns skips into failures,
#        TS_COMPAT_KEEP=1 keeps the staging directory (results of both sides) for a look,
#        TS_COMPAT_SOURCE_TAR=FILE: the tree the meson workload builds (default: HEAD)
set -u
mode=$1 build=$2 src=$3 workload=$4
user=${TS_TEST_USER:-tsbx-test}
here=$(cd "$(dirname "$0")" && pwd)

skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - compat $workload in $mode mode cannot run: $1 (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP $1"; exit 0
}
case $mode in root | user | userns) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac
case $workload in cpython | git | node | meson) ;; *) echo "bad workload $workload" >&2; exit 2 ;; esac

[ "$(id -u)" = 0 ] || skip_all "compat tests need root (they also switch to user $user)"
if [ "$mode" != root ] && ! id "$user" >/dev/null 2>&1; then
	skip_all "test user $user missing: run tests/setup-user.sh (CI does)"
fi

stage=$(mktemp -d /tmp/ts-compat-XXXXXX) || exit 1
chmod 755 "$stage"
as_mode() {
	case $mode in
	root) "$@" ;;
	user) runuser -u "$user" -- "$@" ;;
	userns) runuser -u "$user" -- unshare -r "$@" ;;
	esac
}
cleanup() {
	# Whatever the workload left (a daemon outside, a read-only object file) goes with
	# the staging directory; as root, nothing below it can refuse.
	if [ "${TS_COMPAT_KEEP:-0}" = 1 ]; then
		echo "# kept $stage" >&2
	else
		rm -rf "$stage" 2>/dev/null || { chmod -R u+rwX "$stage" 2>/dev/null; rm -rf "$stage"; }
	fi
}
trap cleanup EXIT

mkdir -p "$stage/bin" "$stage/compat" "$stage/state" "$stage/work"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" "$stage/bin/"
cp -r "$src/policy" "$stage/policy"
cp -r "$here/." "$stage/compat/"
rm -f "$stage/compat/meson.build"
cp "$src/tests/live/lib.sh" "$stage/compat/lib.sh"
if [ "$workload" = meson ]; then
	# The committed tree (what CI builds): other people's uncommitted edits in a working
	# copy must not make the build fail on one side only. Without git, a plain copy.
	if [ -n "${TS_COMPAT_SOURCE_TAR:-}" ]; then
		cp "$TS_COMPAT_SOURCE_TAR" "$stage/compat/source.tar" || exit 1
	elif git -c safe.directory='*' -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		git -c safe.directory='*' -C "$src" archive --format=tar -o "$stage/compat/source.tar" HEAD ||
			{ echo "1..1"; echo "not ok 1 - git archive of $src failed"; exit 1; }
	else
		tar -C "$src" --exclude='./build*' --exclude=./.git -cf "$stage/compat/source.tar" . ||
			{ echo "1..1"; echo "not ok 1 - tar of $src failed"; exit 1; }
	fi
fi
chmod -R a+rX "$stage"
case $mode in
root) chmod 700 "$stage/state" ;;
*) chown "$user:" "$stage/state" "$stage/work"; chmod 700 "$stage/state" ;;
esac

envs=(TS_CLI="$stage/bin/toren-sandbox" TS_MODE="$mode" TS_STAGE="$stage" TS_WORKLOAD="$workload"
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy"
	TS_TESTS_MUST_WORK="${TS_TESTS_MUST_WORK:-0}"
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp
	HOME=/tmp LANG=C.UTF-8 TERM=dumb)
as_mode env -i "${envs[@]}" bash "$stage/compat/driver.sh"
st=$?
# The driver's sandboxes are all `run` (nothing durable), and they are gone when it
# returns; a process one of the outside runs left behind would keep files open: end
# what still runs from the work directories (by pid, found through their cwd).
for p in /proc/[0-9]*; do
	case $(readlink "$p/cwd" 2>/dev/null) in "$stage"/*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
done
exit $st
