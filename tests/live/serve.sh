#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `toren-sandbox serve` as a process: the line it prints when it listens (port 0 picks
# free ports), JSON errors for unknown paths, the refusal to listen beyond loopback
# without tokens, the unix socket (0600, removed at exit), socket activation
# (systemd-socket-activate), and that stopping serve leaves sandboxes running. What it
# serves is tested by tests/server/*.py and tests/e2b-sdk. TAP; runs under modes.sh.
set -u
cli=$TS_CLI
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/ts-serve-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -f "$tmp/ids" ] && xargs -r timeout 60 "$cli" rm -f <"$tmp/ids" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

"$cli" serve --help | grep -q -- '--envd-listen'
tap_result $? "serve --help names its options"

start_serve --listen 127.0.0.1:0 --envd-listen 127.0.0.1:0
[ -n "$control" ] && [ "${control##*:}" != 0 ] && [ -n "$envd" ] && [ "${envd##*:}" != 0 ]
tap_result $? "port 0: serve prints the ports it chose ($control, $envd)"
got=$(curl -s -m 5 -w ' %{http_code}' "http://$control/no/such/path")
case $got in *'"code":404'*' 404') tap_ok "an unknown path is 404 with a JSON body" ;;
*) tap_not_ok "an unknown path is 404 with a JSON body (got $got)" ;; esac
got=$(curl -s -m 5 -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}' \
	"http://$control/a" "http://$control/b" "http://$envd/c")
tap_is "$got" 404404404 "keep-alive: several requests, both listeners answer"

id=$(timeout 60 "$cli" create --name "serve-$$" | tail -n 1)
[ -n "$id" ] && echo "$id" >>"$tmp/ids"
kill -TERM "$srv_pid"
wait "$srv_pid"
tap_is $? 0 "SIGTERM: serve exits 0"
tap_is "$(timeout 30 "$cli" exec "$id" -- echo alive)" alive "a sandbox outlives serve"

"$cli" serve --listen 0.0.0.0:0 --envd-listen 127.0.0.1:0 >/dev/null 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q 'without access tokens' "$tmp/err"
tap_result $? "no tokens: a non-loopback --listen is refused ($st: $(head -c 200 "$tmp/err"))"
"$cli" serve --listen 127.0.0.1:0 --envd-listen '[::]:0' >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q 'without access tokens' "$tmp/err"
tap_result $? "no tokens: a non-loopback --envd-listen is refused too"
"$cli" serve --listen nonsense --envd-listen 127.0.0.1:0 >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q 'HOST:PORT' "$tmp/err"
tap_result $? "a malformed address is an error naming the forms ($(head -c 120 "$tmp/err"))"

sock=$tmp/api.sock
start_serve --listen 127.0.0.1:0 --envd-listen 127.0.0.1:0 --socket "$sock"
tap_is "$(stat -c %a "$sock" 2>/dev/null)" 600 "the unix socket is mode 0600"
got=$(curl -s -m 5 --unix-socket "$sock" -w ' %{http_code}' http://x/nope)
case $got in *' 404') tap_ok "the unix socket serves the control plane" ;;
*) tap_not_ok "the unix socket serves the control plane (got $got)" ;; esac
kill -TERM "$srv_pid"
wait "$srv_pid"
[ ! -e "$sock" ]
tap_result $? "the unix socket is removed at exit"

if command -v systemd-socket-activate >/dev/null; then
	p1=$((20000 + RANDOM % 20000))
	p2=$((p1 + 1))
	systemd-socket-activate -l "127.0.0.1:$p1" -l "127.0.0.1:$p2" --fdname=control:envd \
		-E TOREN_SANDBOX_ROOT -E TOREN_SANDBOX_POLICY_DIR -E HOME -E PATH \
		"$cli" serve >"$tmp/out" 2>"$tmp/err" &
	pids+=($!)
	# it listens (and says so) before serve runs: wait for that, up to 10 s
	for _ in $(seq 200); do
		grep -q "Listening on 127.0.0.1:$p2" "$tmp/err" 2>/dev/null && break
		sleep 0.05
	done
	got=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p1/x")
	grep -q "control plane on 127.0.0.1:$p1, envd on 127.0.0.1:$p2" "$tmp/out"
	st=$?
	tap_result $st "socket activation: serve takes the passed sockets by name ($got)"
	[ $st = 0 ] || tap_diag_file "$tmp/err"
else
	tap_skip "socket activation" "systemd-socket-activate is not installed"
fi
tap_done
