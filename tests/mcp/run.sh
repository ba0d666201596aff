#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The official MCP TypeScript SDK's client (tests/mcp/package.json, unmodified) against
# `toren-sandbox mcp`, in one of the three modes of tests/live/modes.sh:
#   root    as root
#   user    as the unprivileged test user (newuidmap)
#   userns  as that user under `unshare -r`
# Stages the binaries, the policy, the SDK and the test files into a world-readable
# directory with a fresh TOREN_SANDBOX_ROOT, runs `node --test` on the given test files
# (each spawns `toren-sandbox mcp` through the SDK's StdioClientTransport and removes the
# sandboxes it created) and prints flat TAP (../e2b-sdk/tap-flat.mjs); then removes every
# sandbox left and the state.
#
# usage: run.sh MODE BUILD_DIR SOURCE_DIR TEST.mjs...
# env:   TS_TEST_USER (default tsbx-test), TS_NODE (default: node),
#        TS_TESTS_MUST_WORK=1 turns skips into failures
set -u
mode=$1 build=$2 src=$3
shift 3
user=${TS_TEST_USER:-tsbx-test}
dir=$src/tests/mcp

skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - mcp $mode cannot run: $1 (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP $1"; exit 0
}
fail_all() { echo "1..1"; echo "not ok 1 - mcp $mode: $1"; exit 1; }

case $mode in root | user | userns) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac
[ "$#" -gt 0 ] || { echo "no test files" >&2; exit 2; }
[ "$(id -u)" = 0 ] || skip_all "live tests need root (they also switch to user $user)"
if [ "$mode" != root ] && ! id "$user" >/dev/null 2>&1; then
	skip_all "test user $user missing: run tests/setup-user.sh (CI does)"
fi
[ -d "$dir/node_modules/@modelcontextprotocol/sdk" ] ||
	skip_all "no $dir/node_modules: run \`npm ci\` in tests/mcp"
# the SDK's engines: node >= 18 (Debian 12's nodejs)
nodebin=$(command -v "${TS_NODE:-node}") ||
	skip_all "no node: install nodejs (18 or later)"
"$nodebin" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
	skip_all "node $("$nodebin" --version) is older than the SDK's 18"
"$build/toren-sandbox" mcp --help >/dev/null 2>&1 || fail_all "\`toren-sandbox mcp\` is missing from $build"

stage=$(mktemp -d /tmp/ts-mcp-XXXXXX) || exit 1
chmod 755 "$stage"
as_mode() {
	case $mode in
	root) "$@" ;;
	user) runuser -u "$user" -- "$@" ;;
	userns) runuser -u "$user" -- unshare -r "$@" ;;
	esac
}
mkdir -p "$stage/bin" "$stage/state" "$stage/tests"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" "$stage/bin/"
[ -e "$build/toren-sandbox-sudo" ] && cp "$build/toren-sandbox-sudo" "$stage/bin/"
cp -r "$src/policy" "$stage/policy"
cp "$nodebin" "$stage/bin/node"
tar -C "$dir" -cf - node_modules package.json $(cd "$dir" && ls *.mjs) |
	tar -C "$stage/tests" -xf - || fail_all "cannot stage $dir"
cp "$src/tests/e2b-sdk/tap-flat.mjs" "$stage/tests/"
chmod -R a+rX "$stage"
case $mode in
root) chmod 700 "$stage/state" ;;
*) chown "$user:" "$stage/state"; chmod 700 "$stage/state" ;;
esac

envs=(TS_CLI="$stage/bin/toren-sandbox" TS_STAGE="$stage" TS_MODE="$mode"
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy"
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp
	HOME=/tmp LANG=C.UTF-8)

# What a failed test left: its sandboxes (stopped and removed as the identity that made
# them), then the state.
cleanup() {
	local ids
	ids=$(as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" ls --json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' 2>/dev/null)
	if [ -n "$ids" ]; then
		echo "# removing sandboxes left behind: $(echo $ids)"
		as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" rm -f --purge $ids >/dev/null 2>&1
	fi
	rm -rf "$stage" 2>/dev/null
}
trap cleanup EXIT

files=()
for f in "$@"; do files+=("$stage/tests/$(basename "$f")"); done
cd "$stage/tests" || exit 1
# node 18 needs --test-reporter=tap as much as node 20 (its default is TAP only on a pipe)
as_mode env -i "${envs[@]}" "$stage/bin/node" tap-flat.mjs "$stage/bin/node" --test \
	--test-reporter=tap "${files[@]}"
