#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Durable sandboxes, housekeeping: ls (live state, --json, --label), inspect, rm (-f,
# --purge and whose workspace it may delete), reap (idle and absolute timeouts, activity
# and attached clients postponing it, owner death, --dry-run, --json, --loop), and bad
# input that must change nothing. TAP; runs under modes.sh.
set -u
cli=$TS_CLI
root=$TOREN_SANDBOX_ROOT
n=0 failed=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
is() { if [ "$1" = "$2" ]; then t 0 "$3"; else t 1 "$3 (got '$1', want '$2')"; fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
tmp=$(mktemp -d /tmp/ts-admin-XXXXXX)
ids=() bg=()
cleanup() {
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	for id in "${ids[@]}"; do timeout 30 "$cli" rm -f --purge "$id" >/dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT
ts() { timeout 60 "$cli" "$@"; }
create() { local id; id=$(ts create "$@" | tail -n 1) && [ ${#id} = 12 ] && ids+=("$id") && echo "$id"; }
# py EXPR: evaluate EXPR with d = the JSON on stdin; prints the result
py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
state_of() { ts inspect "$1" 2>/dev/null | py 'd["state"]'; }
# What ls --json says about every sandbox: the "nothing changed" witness.
snapshot() { ts ls --json | py '" ".join(sorted(s["id"] + ":" + s["state"] for s in d))'; }
ls_col() { ts ls | awk -v id="$1" -v c="$2" '$1 == id { print $c }'; }

a=$(create --name "adm-a-$$" --label team=red --label tier=1 --env SECRET_X=hunter2)
if [ -z "$a" ]; then
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"; echo "not ok 1 - create failed in $TS_MODE mode (TS_TESTS_MUST_WORK=1)"; exit 1
	fi
	echo "1..0 # SKIP create does not work here ($TS_MODE mode)"; exit 0
fi
b=$(create --label team=blue)

# ls
is "$(ls_col "$a" 3)" running "ls shows a created sandbox as running"
is "$(ls_col "$a" 2)" "adm-a-$$" "ls shows its name"
is "$(ls_col "$b" 2)" - "an unnamed sandbox shows - as its name"
ts ls | head -n 1 | grep -q '^ID  *NAME  *STATE  *CREATED  *IDLE  *TTL  *WORKSPACE  *LABELS$'
t $? "ls has the header ID NAME STATE CREATED IDLE TTL WORKSPACE LABELS"
out=$(ts ls --json | py "[(s['id'], s['state'], s['labels'].get('team')) for s in d if s['id'] in ('$a', '$b')]")
is "$out" "[('$a', 'running', 'red'), ('$b', 'running', 'blue')]" "ls --json parses, oldest first, with state and labels"
ids_red=$(ts ls --label team=red | awk 'NR > 1 { print $1 }' | tr '\n' ' ')
is "$ids_red" "$a " "ls --label team=red lists only that sandbox"
is "$(ts ls --label team=red --label tier=1 | awk 'NR > 1 { print $1 }')" "$a" "two --label filters must both match"
is "$(ts ls --label team=red --label tier=2 | awk 'NR > 1' | wc -l)" 0 "a filter that matches nothing lists nothing"
is "$(ts ls --json --label team=blue | py "[s['id'] for s in d]")" "['$b']" "--label applies to --json"

# inspect
ij=$tmp/a.json
ts inspect "$a" >"$ij"; is $? 0 "inspect exits 0"
is "$(py "d['id'], d['name'], d['state']" <"$ij")" "$a adm-a-$$ running" "inspect: id, name, state"
is "$(py "type(d['created_ms']).__name__, d['created'].endswith('Z'), d['created'][:2]" <"$ij")" "int True 20" "inspect: created as ms and ISO 8601 UTC"
is "$(py "d['ttl']['ms'], d['ttl']['absolute'], d['expires_at'] is not None" <"$ij")" "1800000 False True" "inspect: the default ttl (30 min, idle) and when it expires"
is "$(py "d['labels']" <"$ij")" "{'team': 'red', 'tier': '1'}" "inspect: labels"
is "$(py "d['spec']['env']" <"$ij")" "['SECRET_X']" "inspect: spec env shows names only"
grep -q hunter2 "$ij"; [ $? != 0 ]; t $? "inspect never prints an env value"
is "$(py "d['paths']['control_socket'] == d['paths']['dir'] + '/run/control.sock', d['paths']['own_workspace'], d['paths']['dir']" <"$ij")" "True True $root/$a" "inspect: paths"
pid=$(py "d['init']['pid']" <"$ij")
[ "$pid" -gt 0 ] 2>/dev/null && [ -d "/proc/$pid" ]; t $? "inspect: init pid $pid is a live process"
is "$(py "type(d['idle_ms']).__name__, d['attached'], d['owner']" <"$ij")" "int 0 None" "inspect: idle_ms and attached from init; no owner"
is "$(ts inspect "adm-a-$$" | py 'd["id"]'):$(ts inspect "${a:0:7}" | py 'd["id"]')" "$a:$a" "inspect by name and by id prefix"

# a dead init shows as stopped
c=$(create)
cpid=$(ts inspect "$c" | py 'd["init"]["pid"]')
kill -KILL "$cpid" 2>/dev/null
for i in $(seq 50); do [ -d "/proc/$cpid" ] || break; sleep 0.1; done
is "$(ls_col "$c" 3)" stopped "ls shows a sandbox whose init was killed as stopped"
is "$(state_of "$c")" stopped "so does inspect"

# bad input changes nothing
before=$(snapshot)
ts ls --label bad 2>"$tmp/err"; is $? 2 "ls --label without = is a usage error"
n_before=$(ts ls --json | py "len(d)")
ts create --label $'k=\xff' 2>"$tmp/err" >/dev/null; is $? 2 "create --label with a value that is not UTF-8 is a usage error"
grep -q "UTF-8" "$tmp/err"; t $? "... that says why: $(head -c 100 "$tmp/err")"
ts create --label "$(printf 'k%.0s' $(seq 1 130))=v" 2>"$tmp/err" >/dev/null
is $? 2 "create --label with a 130-byte key is a usage error"
grep -q "at most 127 bytes" "$tmp/err"; t $? "... that names the limit"
ts create --ttl 0.5 2>/dev/null >/dev/null; is $? 2 "create --ttl below 1s (not 0) is a usage error"
ts create --cpus 0.001 2>/dev/null >/dev/null; is $? 2 "create --cpus below 0.01 is a usage error"
is "$(ts ls --json | py "len(d)")" "$n_before" "and none of them created anything"
grep -q 'bad --label' "$tmp/err"; t $? "and says which"
ts ls --label =x 2>/dev/null; is $? 2 "ls --label with an empty key is a usage error"
ts ls extra 2>/dev/null; is $? 2 "ls with an argument is a usage error"
ts inspect 2>/dev/null; is $? 2 "inspect without an id is a usage error"
ts inspect ffffffffffff 2>"$tmp/err"; is $? 1 "inspect of an unknown id exits 1"
grep -q 'toren-sandbox inspect: no sandbox `ffffffffffff`' "$tmp/err"; t $? "with a typed error: $(head -n 1 "$tmp/err")"
ts inspect '../etc' 2>"$tmp/err"; is $? 1 "inspect of a bad reference exits 1"
grep -q 'bad sandbox reference' "$tmp/err"; t $? "and says it is a bad reference"
ts rm 2>/dev/null; is $? 2 "rm without an id is a usage error"
ts rm --bogus "$a" 2>/dev/null; is $? 2 "rm with an unknown option is a usage error"
ts rm -f ffffffffffff 2>"$tmp/err"; is $? 1 "rm of an unknown id exits 1"
grep -q 'no sandbox' "$tmp/err"; t $? "with a typed error"
ts rm -f "$c" ffffffffffff 2>/dev/null; is $? 1 "rm of a known and an unknown id exits 1"
ts inspect "$c" >/dev/null 2>&1; t $? "and removes neither"
ts reap --loop 0 2>/dev/null; is $? 2 "reap --loop 0 is a usage error"
ts reap extra 2>/dev/null; is $? 2 "reap with an argument is a usage error"
is "$(snapshot)" "$before" "no bad input above changed any sandbox"
# An ambiguous prefix: make sandboxes until two ids share a first digit (at most 17).
pfx=""
for i in $(seq 17); do
	pfx=$(ts ls --json | py '"".join(sorted(x for x in {s["id"][0] for s in d} if sum(s["id"][0] == x for s in d) > 1))[:1]')
	[ -n "$pfx" ] && break
	x=$(create --ttl 0) && ts stop "$x" >/dev/null
done
before=$(snapshot)
ts inspect "$pfx" 2>"$tmp/err"; is $? 1 "inspect of an ambiguous prefix \`$pfx\` exits 1"
grep -q "\`$pfx\` matches [0-9]* sandboxes: " "$tmp/err"; t $? "and lists the matches: $(head -n 1 "$tmp/err")"
ts rm -f "$pfx" 2>/dev/null; is $? 1 "rm -f of an ambiguous prefix exits 1"
is "$(snapshot)" "$before" "an ambiguous prefix changed no sandbox"

# rm
ts rm "$a" 2>"$tmp/err"; is $? 1 "rm refuses a running sandbox"
grep -q 'is running: stop it first.*rm -f' "$tmp/err"; t $? "and names the fix: $(head -n 1 "$tmp/err")"
is "$(state_of "$a")" running "the refused sandbox still runs"
ts exec "$a" -- sh -c 'echo kept > /home/user/w'
out=$(ts rm -f "$a" 2>"$tmp/err"); is $? 0 "rm -f stops and removes a running sandbox"
is "$out" "$a" "rm prints the removed id"
for i in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
[ ! -d "/proc/$pid" ]; t $? "its init is gone"
ts inspect "$a" >/dev/null 2>&1; is $? 1 "its record is gone"
[ ! -e "$root/$a/run" ] && [ ! -e "$root/$a/logs" ] && [ ! -e "$root/$a/work" ]; t $? "run, logs and work are removed"
is "$(cat "$root/$a/workspace/w" 2>/dev/null)" kept "without --purge the workspace stays"
grep -q 'kept its workspace' "$tmp/err"; t $? "and rm says so"
rm -rf "${root:?}/$a"

# a link in the workspace pointing out of it: removal must not follow it
mkdir -p "$tmp/outside"; echo safe >"$tmp/outside/file"
d=$(create)
ts exec "$d" -- sh -c "echo x > /home/user/f; ln -s '$tmp/outside' /home/user/out; mkdir -p /home/user/a/b"
ln -s "$tmp/outside" "$root/$d/logs/out" 2>/dev/null
ts rm -f --purge "$d" >/dev/null; is $? 0 "rm -f --purge"
[ ! -e "$root/$d" ]; t $? "--purge removes the sandbox's own workspace and directory"
is "$(cat "$tmp/outside/file" 2>/dev/null)" safe "removal never follows a symlink out of the sandbox"

given=$tmp/given
mkdir -p "$given"; echo mine >"$given/keep.txt"
e=$(create --workspace "$given")
if [ -n "$e" ]; then
	ts exec "$e" -- true
	ts rm -f --purge "$e" >/dev/null 2>"$tmp/err"; is $? 0 "rm -f --purge of a sandbox with a given workspace"
	is "$(cat "$given/keep.txt" 2>/dev/null)" mine "--purge never removes a workspace given with --workspace"
	grep -q "kept workspace \`$given\`" "$tmp/err"; t $? "and says so: $(head -n 1 "$tmp/err")"
	[ -f /etc/passwd ] && [ ! -e "$root/$e/upper" ]; t $? "its upper layer is removed, nothing outside"
else
	t 1 "create --workspace DIR"
fi

# reap: idle expiry, workspace intact, record kept
f=$(create --ttl 2s --name "adm-idle-$$")
ts exec "$f" -- sh -c 'echo data > /home/user/keep'
live=$(create) # default ttl: must never be touched
sleep 3
ts reap --dry-run >"$tmp/out"; is $? 0 "reap --dry-run"
grep -q "^would stop $f (idle .* > ttl 2s)" "$tmp/out"; t $? "--dry-run says what it would stop: $(head -n 1 "$tmp/out")"
is "$(state_of "$f")" running "--dry-run stops nothing"
ts reap >"$tmp/out"; is $? 0 "reap exits 0"
grep -q "^stopped $f (idle [0-9.]*[sm]* > ttl 2s)$" "$tmp/out"; t $? "reap stops an idle sandbox past its ttl: $(head -n 1 "$tmp/out")"
is "$(state_of "$f")" stopped "it is stopped"
is "$(cat "$root/$f/workspace/keep" 2>/dev/null)" data "its workspace is intact"
grep -q "$live" "$tmp/out"; [ $? != 0 ]; t $? "reap does not touch a sandbox within its ttl"
is "$(state_of "$live")" running "that sandbox still runs"
ts start "$f" >/dev/null 2>&1
is "$(ts exec "$f" -- cat /home/user/keep 2>/dev/null)" data "a reaped sandbox starts again with its files"
ts stop "$f" >/dev/null 2>&1

# activity postpones expiry; an attached client is activity
# (margins of 3 s: a loaded 2-core CI machine runs other live tests beside this one)
g=$(create --ttl 6s)
sleep 4
ts exec "$g" -- true
sleep 3
ts reap >"$tmp/out"
grep -q "$g" "$tmp/out"; [ $? != 0 ]; t $? "an exec before the ttl postpones expiry (age 7s, idle 3s, ttl 6s)"
is "$(state_of "$g")" running "so it still runs"
h=$(create --ttl 2s)
ts exec "$h" -- sleep 5 & bg+=($!)
sleep 3.5
ts reap >"$tmp/out"
grep -q "$h" "$tmp/out"; [ $? != 0 ]; t $? "a sandbox with an attached exec is not idle"
is "$(state_of "$h")" running "so it still runs"
wait

# a copy in progress is activity for as long as it lasts (its file worker counts as attached)
c=$(create --ttl 2s)
(sleep 3.5; echo slow) | ts cp - "$c:slow.txt" & cpid=$!
sleep 3
ts reap >"$tmp/out"
grep -q "$c" "$tmp/out"; [ $? != 0 ]; t $? "a sandbox with a copy in progress is not idle (copy 3.5s, ttl 2s)"
wait "$cpid"; is $? 0 "the long copy completes"
is "$(ts exec "$c" -- cat /home/user/slow.txt 2>/dev/null)" slow "and its file is there"

# --ttl-absolute: counted from creation, activity or not
k=$(create --ttl 2s --ttl-absolute)
for i in 1 2 3 4 5; do ts exec "$k" -- true; sleep 0.5; done
ts reap --json >"$tmp/out"; is $? 0 "reap --json"
is "$(py "[(a['id'], a['action'], a['reason'], a['ok']) for a in d if a['id'] == '$k']" <"$tmp/out")" "[('$k', 'stop', 'absolute', True)]" "--ttl-absolute stops a busy sandbox once older than its ttl (--json)"
is "$(state_of "$k")" stopped "it is stopped"

# owner death
sleep 300 & owner=$!; bg+=("$owner")
o=$(create --ttl 0 --owner "$owner")
ts reap >"$tmp/out"
grep -q "$o" "$tmp/out"; [ $? != 0 ]; t $? "a sandbox whose owner lives is not stopped"
is "$(ts inspect "$o" | py 'd["owner"]["pid"], d["owner"]["alive"]')" "$owner True" "inspect shows the owner alive"
kill "$owner"; wait "$owner" 2>/dev/null
ts reap >"$tmp/out"
grep -q "^stopped $o (owner pid $owner exited)$" "$tmp/out"; t $? "reap stops a sandbox whose owner died: $(head -n 1 "$tmp/out")"
is "$(state_of "$o")" stopped "it is stopped"

# --loop: sweeps until SIGTERM, exits 0
m=$(create --ttl 1s)
"$cli" reap --loop 1 >"$tmp/loop" 2>&1 & loop=$!; bg+=("$loop")
for i in $(seq 60); do grep -q "stopped $m" "$tmp/loop" && break; sleep 0.1; done
grep -q "^stopped $m (idle" "$tmp/loop"; t $? "reap --loop stops a sandbox that expires while it runs"
kill -TERM "$loop"; wait "$loop"; is $? 0 "reap --loop exits 0 on SIGTERM"
"$cli" reap --loop 60 >/dev/null 2>&1 & loop=$!; bg+=("$loop")
sleep 0.5; kill -INT "$loop"; wait "$loop"; is $? 0 "reap --loop exits 0 on SIGINT while waiting"

is "$(state_of "$live")" running "after every sweep, the sandbox within its ttl still runs"
ts ls --json | py "[s['id'] for s in d]" | grep -q "$f"; t $? "reap never removes a record"

echo "1..$n"
[ $failed = 0 ]
