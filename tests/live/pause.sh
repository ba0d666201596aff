#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Pause and resume of a durable sandbox (the control messages PAUSE and RESUME that
# serve's E2B pause uses): every process of the sandbox, grandchildren included, is
# stopped (state T in the host's /proc) and does nothing while paused; init still
# answers and says it is paused; nothing new starts; a second pause is EALREADY; resume
# continues the same processes (same host and sandbox pids) and they go on working.
# TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
cli=$TS_CLI
ts() { timeout -k 5 60 "$cli" "$@"; }
raw() { timeout -k 5 30 python3 "$here/ctl-raw.py" "$sock" "$@"; }
id=
cleanup() { [ -n "$id" ] && ts rm -f --purge "$id" >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

field() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(eval("j" + sys.argv[1]))' "$1"; }
# Every descendant of a host pid, one per line.
descendants() {
	local p c
	for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$p"
		descendants "$p"
	done
}
# "PID STATE NSPID" of each descendant of init (with `children`: init's children only,
# the processes exec started, which live as long as the test).
states() {
	local p
	for p in $(if [ "${1:-}" = children ]; then cat /proc/"$init"/task/*/children; else descendants "$init"; fi); do
		awk -v p="$p" '/^State:/ { s = $2 } /^NSpid:/ { n = $NF } END { print p, s, n }' \
			/proc/"$p"/status 2>/dev/null
	done | sort -n
}
count() { cat "$ws/count" 2>/dev/null; }

id=$(ts create | tail -n 1)
[ -n "$id" ] || tap_skip_all "no sandbox could be created in $TS_MODE mode"
tap_ok "create ($TS_MODE mode)"
info=$(ts inspect "$id")
sock=$(field '["paths"]["control_socket"]' <<<"$info")
ws=$(field '["paths"]["workspace"]' <<<"$info")
init=$(field '["init"]["pid"]' <<<"$info")
# a counter in the workspace (readable from the host) and a grandchild `sleep` each round
ts exec -d "$id" -- sh -c 'i=0; while :; do i=$((i+1)); echo $i >/home/user/count.new;
	mv /home/user/count.new /home/user/count; sleep 0.05; done' >/dev/null
ts exec -d "$id" -- sleep 1000 >/dev/null
for _ in $(seq 100); do [ -n "$(count)" ] && [ "$(count)" -gt 3 ] && break; sleep 0.05; done
[ -n "$(count)" ] && [ "$(count)" -gt 3 ]; tap_result $? "the counter runs before the pause ($(count))"
tap_is "$(raw hello)" "HELLO paused=0" "init says it is not paused"
tap_is "$(raw resume)" "ERROR 114" "resume of a sandbox that is not paused: EALREADY"

before=$(states children)
[ "$(wc -l <<<"$before")" = 2 ]; tap_result $? "init has the two processes exec started"

tap_is "$(raw pause)" "OK 0" "pause"
sleep 0.3
during=$(states)
n_during=$(wc -l <<<"$during")
# a child of the counter's shell that was exiting when the stop came stays a zombie (Z)
# until its stopped parent reaps it: it runs nothing, as init's PAUSE counts it too
tap_is "$(awk '$2 != "T" && $2 != "Z"' <<<"$during")" "" "every process of the sandbox is stopped (state T, or an exited one Z), grandchildren too ($n_during)"
tap_is "$(states children | awk '{ print $1, $3 }')" "$(awk '{ print $1, $3 }' <<<"$before")" \
	"the same processes, the same host and sandbox pids"
c1=$(count); sleep 0.5; c2=$(count)
tap_is "$c2" "$c1" "the counter does not move while paused"
tap_is "$(raw hello)" "HELLO paused=1" "init still answers, and says it is paused"
tap_is "$(ts ls --json | python3 -c 'import json,sys; print([s["state"] for s in json.load(sys.stdin) if s["id"] == sys.argv[1]][0])' "$id")" \
	paused "ls --json says paused"
tap_is "$(raw pause)" "ERROR 114" "a second pause: EALREADY"
tap_is "$(raw spawn)" "ERROR 112" "SPAWN while paused: EHOSTDOWN, nothing starts"
ts exec "$id" -- true 2>/dev/null
tap_is "$?" 125 "exec while paused fails"
tap_is "$(states | wc -l)" "$n_during" "and added no process"

tap_is "$(raw resume)" "OK 0" "resume"
sleep 0.3
tap_is "$(states | awk '$2 == "T"')" "" "no process is stopped after resume"
tap_is "$(states children | awk '{ print $1, $3 }')" "$(awk '{ print $1, $3 }' <<<"$before")" \
	"the same processes, with the same pids, after resume"
ps_pids=$(ts ps "$id" | awk 'NR > 1 && $4 == "running" { print $2 }' | sort -n | tr '\n' ' ')
[ "$(wc -w <<<"$ps_pids")" -ge 2 ]; tap_result $? "ps lists the two processes as running ($ps_pids)"
for p in $ps_pids; do
	grep -qw "$p" <<<"$(awk '{ print $3 }' <<<"$before")" || {
		tap_not_ok "pid $p of ps was not there before the pause"
		continue 2
	}
done
tap_ok "every process ps lists after resume had its sandbox pid before the pause ($ps_pids)"
c3=$(count); sleep 0.5; c4=$(count)
[ -n "$c3" ] && [ -n "$c4" ] && [ "$c4" -gt "$c3" ]; tap_result $? "the counter moves again ($c3 -> $c4)"
tap_is "$(ts exec "$id" -- echo ok)" ok "exec works after resume"
# stop while paused ends the processes (SIGTERM reaches them: init continues them)
raw pause >/dev/null
ts stop "$id" >/dev/null; tap_result $? "stop of a paused sandbox"
tap_is "$(ts inspect "$id" | field '["state"]')" stopped "... and it is stopped"
tap_done
