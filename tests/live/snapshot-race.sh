#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Snapshots alongside other snapshot operations (snapshot.h): a snapshot being copied holds
# its temporary directory and the claim on its name, so a second snapshot given the same
# name at the same time fails with a typed error (one wins) and neither it nor a
# `snapshot rm` meanwhile removes the half snapshot; a snapshot killed while copying
# leaves its temporary directory, which the next `snapshot rm` or snapshot removes, and
# its sandbox running (the pause was its connection's: PAUSE_HOLD), while a resume by
# another client during a copy is refused (EBUSY, serve's 409), also of a sandbox its
# user paused before, which stays paused after the copy (HOLD). A user's name starting with `snap-` (the generated ids' prefix) is refused. A sparse file
# stays sparse in the snapshot and in a sandbox restored from it; a restore is bounded by
# the snapshot's size, and one meeting a file the caller cannot read retries through
# the helper where there are subordinate ids. serve answers 409 to a kill, pause, resume and /v1 delete of a
# sandbox while a snapshot of it is being copied, and lets them through after.
# TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
command -v curl >/dev/null || tap_skip_all "curl is not installed"
cli=$TS_CLI
root=$TOREN_SANDBOX_ROOT
tmp=$(mktemp -d /tmp/ts-snaprace-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ -f "$tmp/ids" ] && xargs -r timeout 120 "$cli" rm -f --purge <"$tmp/ids" >/dev/null 2>&1
	rm_snapshots
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
ts() { timeout -k 5 120 "$cli" "$@"; }
create() { local id; id=$(ts create "$@" | tail -n 1) && echo "$id" >>"$tmp/ids" && echo "$id"; }
nsnaps() { ts snapshot ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# a snapshot is being copied: its temporary directory has its first part (made after the
# pause)
copying() {
	for _ in $(seq 1200); do
		compgen -G "$root/snapshots/.tmp-snap-*/upper" >/dev/null && return 0
		sleep 0.025
	done
	return 1
}
# what the snapshots' directory holds besides snapshots and its lock
leftovers() { ls -A "$root/snapshots" 2>/dev/null | grep '^\.' | grep -vx '\.lock' | tr '\n' ' '; }

src=$(create 2>"$tmp/err") || tap_skip_all "cannot create a durable sandbox in mode ${TS_MODE:-?}: $(head -c 200 "$tmp/err")"
# enough files that the cases below happen while a copy runs (seconds)
nfiles=40000
ts exec "$src" -- python3 -c "
import os
os.makedirs('/home/user/many')
for i in range($nfiles):
    with open('/home/user/many/f%d' % i, 'w') as f:
        f.write('x')" 2>"$tmp/err"
tap_result $? "the source's workspace gets $nfiles files"
tap_diag_file "$tmp/err"

# a name of the generated ids' shape (or prefix) is refused, typed
ts snapshot --name "snap-$$" "$src" >/dev/null 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q 'generated ids' "$tmp/err"
tap_result $? "a snapshot name starting with snap- is refused (status $st: $(head -c 160 "$tmp/err"))"
ts snapshot --name "snap-0123456789ab" "$src" >/dev/null 2>&1
[ $? = 1 ] && [ "$(nsnaps)" = 0 ] && [ -z "$(leftovers)" ]
tap_result $? "one shaped like an id too; nothing is recorded or left"

old=$(ts snapshot --name "old-$$" "$src" 2>"$tmp/err")
tap_result $? "control: a snapshot with an ordinary name ($old)"
tap_diag_file "$tmp/err"

# two snapshots of one name at once, and a `snapshot rm` (which sweeps) meanwhile
"$cli" snapshot --name "same-$$" "$src" >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
copying
tap_result $? "control: the first snapshot is copying (its temporary directory is there)"
ts snapshot --name "same-$$" "$src" >"$tmp/b.out" 2>"$tmp/b.err"
sb=$?
ts snapshot rm "$old" 2>"$tmp/err"
tap_result $? "snapshot rm of another snapshot while the copy runs"
tap_diag_file "$tmp/err"
wait $a
sa=$?
[ $sa = 0 ] && [ $sb = 1 ] && grep -q 'being given to another snapshot' "$tmp/b.err"
tap_result $? "two snapshots of one name at once: the first wins, the second fails with EBUSY (statuses $sa $sb: $(head -c 160 "$tmp/b.err"))"
tap_diag_file "$tmp/a.err"
got=$(ts snapshot ls --json | python3 -c "import json,sys; print(' '.join(s['id'] for s in json.load(sys.stdin) if 'same-$$' in s['names']))")
tap_is "$got" "$(cat "$tmp/a.out")" "the name is the winner's"
n=$(ls "$root/snapshots/$(cat "$tmp/a.out")/workspace/many" 2>/dev/null | wc -l)
tap_is "$n" "$nfiles" "the winner's snapshot is whole (neither the second snapshot nor the rm removed any of it)"
tap_is "$(leftovers)" "" "no temporary directory or name claim is left"
ts snapshot --name "same-$$" "$src" >"$tmp/c.out" 2>"$tmp/err"
tap_result $? "control: the name can be given again once the first is done (it moves)"
tap_diag_file "$tmp/err"

# a snapshot killed while copying: its leftovers stay until the next rm or snapshot
kill_one() {
	"$cli" snapshot --name "killed-$$" "$src" >/dev/null 2>&1 &
	local k=$!
	copying && kill -9 $k
	wait $k 2>/dev/null
	left=$(leftovers)
	[[ $left == *.tmp-snap-* && $left == *".name-killed-$$"* ]]
}
kill_one
tap_result $? "control: a snapshot killed while copying leaves its temporary directory and name claim ($left)"
ts snapshot rm "$(cat "$tmp/c.out")" 2>"$tmp/err"
tap_result $? "snapshot rm after it"
tap_diag_file "$tmp/err"
tap_is "$(leftovers)" "" "the rm swept the killed snapshot's leftovers"
kill_one
tap_result $? "control: a second killed snapshot leaves them again ($left)"
# the pause was the killed snapshot's connection's: its init resumed the sandbox
running=1
for _ in $(seq 40); do
	ts exec "$src" -- true 2>/dev/null && running=0 && break
	sleep 0.1
done
tap_result $running "the sandbox of a snapshot killed while copying runs again (its pause went with the connection)"
# where the copy goes through the helper (a sandbox with a root on subordinate ids): it
# and its copier die with a killed snapshot instead of writing on into a directory
# nobody holds locked
hp= subtmp=
if sub=$(create --user root 2>"$tmp/sub.err") &&
	ts exec --user user "$sub" -- python3 -c "
import os
os.makedirs('/home/user/many')
for i in range(20000):
    open('/home/user/many/f%d' % i, 'w').close()" 2>"$tmp/sub.err"; then
	before=$(compgen -G "$root/snapshots/.tmp-snap-*" | tr '\n' ' ')
	"$cli" snapshot "$sub" >/dev/null 2>&1 &
	k=$!
	# its own temporary directory (an earlier killed one's may be there), its workspace's
	# copy begun, and the helper that copies it
	for _ in $(seq 2000); do
		for d in "$root"/snapshots/.tmp-snap-*; do
			[[ " $before " == *" $d "* ]] || [ ! -d "$d/workspace/many" ] || subtmp=$d
		done
		hp=$(pgrep -P $k | tr '\n' ' ')
		[ -n "$hp" ] && [ -n "${subtmp:-}" ] && break
		hp=
		kill -0 $k 2>/dev/null || break
		sleep 0.005
	done
	kill -9 $k 2>/dev/null
	wait $k 2>/dev/null
fi
if [ -z "$hp" ]; then
	tap_skip "no helper copies a sandbox's workspace in mode ${TS_MODE:-?} (a root on subordinate ids only: $(head -c 120 "$tmp/sub.err"))"
else
	gone=1
	for _ in $(seq 100); do
		# shellcheck disable=SC2086 # a list of pids
		kill -0 $hp 2>/dev/null || { gone=0; break; }
		sleep 0.05
	done
	copied=$(find "$subtmp/workspace/many" -type f 2>/dev/null | wc -l)
	tap_result $gone "control: the helper copying for a killed snapshot dies with it (pids $hp)"
	[ "$copied" -lt 20000 ]
	tap_result $? "control: and stops copying: $copied of the 20000 files are in its directory"
fi
s2=$(ts snapshot --name "killed-$$" "$src" 2>"$tmp/err")
tap_result $? "the next snapshot, of the name the killed one claimed ($s2)"
tap_diag_file "$tmp/err"
tap_is "$(leftovers)" "" "the snapshot swept the killed snapshot's leftovers"

# a sparse file stays sparse (the copy's data segments only), in the snapshot and restored
sp=$(create 2>"$tmp/err")
tap_result $? "a second sandbox ($sp)"
ts exec "$sp" -- sh -c 'truncate -s 1G /home/user/sparse && printf x | dd of=/home/user/sparse bs=1 seek=536870912 conv=notrunc 2>/dev/null' 2>"$tmp/err"
tap_result $? "a 1 GiB sparse file with one byte in it"
tap_diag_file "$tmp/err"
s3=$(ts snapshot "$sp" 2>"$tmp/err")
tap_result $? "snapshot of it ($s3)"
tap_diag_file "$tmp/err"
f="$root/snapshots/$s3/workspace/sparse"
got=$(stat -c '%s' "$f")
kb=$(du -k "$f" | cut -f1)
[ "$got" = 1073741824 ] && [ "$kb" -lt 1024 ]
tap_result $? "the snapshot's copy is sparse (size $got, $kb KiB on disk)"
r3=$(create --image "$s3" 2>"$tmp/err")
tap_result $? "a sandbox restored from it ($r3)"
tap_diag_file "$tmp/err"
kb=$(du -k "$root/$r3/workspace/sparse" | cut -f1)
got=$(ts exec "$r3" -- sh -c 'stat -c %s /home/user/sparse; dd if=/home/user/sparse bs=1 skip=536870912 count=1 2>/dev/null' | tr '\n' ' ')
[ "$got" = "1073741824 x" ] && [ "$kb" -lt 1024 ]
tap_result $? "the restored file is the same and sparse ($got, $kb KiB on disk)"
# a restore copies no more than the snapshot counted: a workspace grown under the state
# root since (by a sparse file here: its size counts) is refused
size=$(ts snapshot ls --json | python3 -c "import json,sys; print([s['size'] for s in json.load(sys.stdin) if s['id']=='$s3'][0])")
truncate -s $((size + 1)) "$root/snapshots/$s3/workspace/grown" 2>"$tmp/err"
tap_result $? "control: the snapshot's workspace is grown past its size ($size bytes) from the host"
tap_diag_file "$tmp/err"
ts create --image "$s3" >"$tmp/r4" 2>"$tmp/err"
st=$?
tail -n 1 "$tmp/r4" >>"$tmp/ids"
[ $st = 1 ] && grep -q 'more than' "$tmp/err"
tap_result $? "a restore past the snapshot's size is refused (status $st: $(head -c 200 "$tmp/err"))"
rm -f "$root/snapshots/$s3/workspace/grown"

# a restore into a sandbox of one id that meets a file the caller cannot read (mode 0
# here; files of a subordinate id likewise): with subordinate ids the helper copies it
ts exec "$sp" -- sh -c 'rm /home/user/sparse && mkdir /home/user/locked && echo hidden > /home/user/locked/f' 2>"$tmp/err"
s4=$(ts snapshot "$sp" 2>>"$tmp/err")
tap_result $? "a snapshot with a directory ($s4)"
tap_diag_file "$tmp/err"
chmod 000 "$root/snapshots/$s4/workspace/locked/f"
ts create --image "$s4" >"$tmp/r5" 2>"$tmp/err"
st=$?
r5=$(tail -n 1 "$tmp/r5")
echo "$r5" >>"$tmp/ids"
# (as root, and as root of `unshare -r` over its own files, the copy reads it in-process)
f="$root/$r5/workspace/locked/f"
[ $st = 0 ] && [ "$(stat -c %a "$f")" = 0 ] && [ "$(stat -c %u "$f")" = "$(stat -c %u "$root/$r5/workspace")" ] &&
	chmod 600 "$f" && [ "$(cat "$f")" = hidden ]
tap_result $? "a restore of a file the caller cannot read copies it (mode ${TS_MODE:-?}; user: through the helper), mode and contents kept (status $st: $(head -c 160 "$tmp/err"))"
chmod 600 "$root/snapshots/$s4/workspace/locked/f"

# serve: 409 to kill, pause, resume, /v1 delete while a snapshot of the sandbox is copied
start_serve --listen 127.0.0.1:0 --envd-listen 127.0.0.1:0
srv=$srv_pid
[ -n "$control" ]
tap_result $? "serve listens ($control)"
tap_diag_file "$tmp/serve.err"
api() { curl -s -m 30 -H 'X-API-Key: k' -H 'Authorization: Bearer k' -H 'Content-Type: application/json' -w ' %{http_code}' "$@"; }
got=$(api -X POST -d '{"name":"snap-e2b-'$$'"}' "http://$control/sandboxes/$src/snapshots")
[[ $got == *' 400' && $got == *'generated ids'* ]]
tap_result $? "serve: a snapshot name starting with snap- is a 400 ($got)"
# a snapshot of src by the CLI (its id in $tmp/NAME.out) during which serve is asked to
# resume src: r is serve's answer; then whether the snapshot completed
resume_during_snapshot() { # NAME WHAT
	"$cli" snapshot "$src" >"$tmp/$1.out" 2>"$tmp/$1.err" &
	local c=$!
	copying
	tap_result $? "control: a snapshot by the CLI$2 is copying"
	r=$(api -X POST -d '{}' "http://$control/sandboxes/$src/resume")
	wait $c
	st=$?
}
snapshot_completed() { # NAME WHAT
	tap_is "$st $(compgen -G "$root/snapshots/$(cat "$tmp/$1.out")/workspace/many" | wc -l)" "0 1" "the snapshot$2 completes"
	tap_diag_file "$tmp/$1.err"
}
# a snapshot by the CLI: its pause is its own, serve's resume may not thaw the copy
resume_during_snapshot cli ""
[[ $r == *'paused by a snapshot'*' 409' ]]
tap_result $? "serve: a resume while another client's snapshot holds the pause is a 409 (init's EBUSY) ($r)"
snapshot_completed cli " by the CLI"
ts exec "$src" -- true
tap_result $? "the source runs after it (resumed by the snapshot)"
# a sandbox its user paused: the snapshot holds that pause (ctl.h, HOLD), so a resume
# meanwhile is refused, and the sandbox is still paused after the copy
p=$(api -X POST -d '{}' "http://$control/sandboxes/$src/pause")
[[ $p == *' 204' ]]
tap_result $? "serve: the source is paused by its user ($p)"
resume_during_snapshot cli2 " of the paused sandbox"
[[ $r == *'held by a snapshot'*' 409' ]]
tap_result $? "serve: resuming a paused sandbox while a snapshot holds its pause is a 409 ($r)"
snapshot_completed cli2 " of the paused sandbox"
i=$(api "http://$control/sandboxes/$src")
[[ $i == *'"state":"paused"'*' 200' ]]
tap_result $? "the sandbox is still paused after the snapshot (the pause was its user's) ($(head -c 200 <<<"$i"))"
r=$(api -X POST -d '{}' "http://$control/sandboxes/$src/resume")
[[ $r == *' 20'[01]* ]] && ts exec "$src" -- true
tap_result $? "its user's resume after the copy works ($r)"
api -X POST -d '{}' "http://$control/sandboxes/$src/snapshots" >"$tmp/snap.out" 2>&1 &
c=$!
copying
tap_result $? "control: serve's snapshot is copying"
k=$(api -X DELETE "http://$control/sandboxes/$src")
p=$(api -X POST -d '{}' "http://$control/sandboxes/$src/pause")
r=$(api -X POST -d '{}' "http://$control/sandboxes/$src/resume")
v=$(api -X DELETE "http://$control/v1/sandboxes/$src")
wait $c
echo "$k" | python3 -c 'import json,sys; t=sys.stdin.read().strip(); b,s=t.rsplit(" ",1); j=json.loads(b); assert s=="409" and j["code"]==409 and "snapshotted" in j["message"], t' 2>"$tmp/err"
tap_result $? "serve: kill during the snapshot is a 409 with E2B's error body ($k)"
tap_diag_file "$tmp/err"
[[ $p == *'snapshotted'*' 409' ]]
tap_result $? "serve: pause during the snapshot is a 409 ($p)"
[[ $r == *'snapshotted'*' 409' ]]
tap_result $? "serve: resume during the snapshot is a 409 (it would thaw the copy) ($r)"
echo "$v" | python3 -c 'import json,sys; t=sys.stdin.read().strip(); b,s=t.rsplit(" ",1); j=json.loads(b); assert s=="409" and j["error"]["code"]=="snapshot_running", t' 2>"$tmp/err"
tap_result $? "serve: /v1 delete during the snapshot is a 409 snapshot_running ($v)"
tap_diag_file "$tmp/err"
got=$(cat "$tmp/snap.out")
[[ $got == *'"snapshotID"'*' 201' ]]
tap_result $? "serve's snapshot completes ($(head -c 120 "$tmp/snap.out"))"
ts exec "$src" -- true
tap_result $? "the source is running after it"
got=$(api -m 120 -X DELETE "http://$control/sandboxes/$src")
[ "$got" = " 204" ] && ! ts exec "$src" -- true 2>/dev/null
tap_result $? "control: kill after the snapshot is a 204 and kills it ($got)"
kill -0 "$srv" 2>/dev/null
tap_result $? "serve still runs"
tap_diag_file "$tmp/serve.err"
tap_done
