#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Durable sandboxes: create, exec (attached, -i, -d, -t), ps, logs -f, kill, stop/start
# keeping the workspace and the upper layer, background servers reached over the
# sandbox's loopback, many sandboxes isolated from each other, and recovery after
# kill -9 of init or of the CLI. TAP; runs under modes.sh.
set -u
cli=$TS_CLI
n=0 failed=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
is() { if [ "$1" = "$2" ]; then t 0 "$3"; else t 1 "$3 (got '$1', want '$2')"; fi; }
tmp=$(mktemp -d /tmp/ts-life-XXXXXX)
cleanup() {
	# create runs in command substitutions (subshells): the ids are kept in a file
	[ -f "$tmp/ids" ] && xargs -r timeout 120 "$cli" stop <"$tmp/ids" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
ts() { timeout 60 "$cli" "$@"; }
create() { local id; id=$(ts create "$@" | tail -n 1) && echo "$id" >>"$tmp/ids" && echo "$id"; }

mounts_before=$(wc -l </proc/self/mountinfo)
id=$(create --name "life-$$")
[ -n "$id" ] && [ ${#id} = 12 ]; t $? "create prints the new id on the last line ($id)"
is "$(ts exec "$id" -- sh -c 'echo $(id -u):$PWD')" "1000:/home/user" "exec runs as user in /home/user"
is "$(ts exec "life-$$" -- echo by-name)" by-name "the name works wherever an id does"
is "$(ts exec "${id:0:6}" -- echo by-prefix)" by-prefix "an id prefix works"
ts exec "$id" -- sh -c 'exit 9'; is $? 9 "exec passes the exit status"
ts exec "$id" -- sh -c 'kill -TERM $$'; is $? 143 "a signalled command gives 128+N"
is "$(echo piped | ts exec -i "$id" -- cat)" piped "exec -i streams stdin"
is "$(echo ignored | ts exec "$id" -- cat)" "" "without -i stdin is /dev/null"
ts exec "$id" -- /nonexistent 2>/dev/null; is $? 127 "a missing command gives 127"
# init's start of a command (a child sharing init's memory until it executes,
# runtime/proctab.c start_child): each failure comes back with its errno, nothing of
# init's is open in the command, the request's PATH is searched and init's own
# environment stays as it was
ts exec "$id" -- /nonexistent 2>"$tmp/err"
grep -q 'No such file or directory' "$tmp/err"; t $? "a missing command says ENOENT ($(cat "$tmp/err"))"
ts exec "$id" -- /etc/passwd 2>"$tmp/err"; st=$?
[ $st = 126 ] && grep -q 'Permission denied' "$tmp/err"; t $? "a file that is not executable gives 126 and EACCES ($st: $(cat "$tmp/err"))"
ts exec --cwd /nonexistent-dir "$id" -- true 2>"$tmp/err"; st=$?
[ $st != 0 ] && grep -q "cwd '/nonexistent-dir'.*No such file" "$tmp/err"; t $? "a missing cwd is refused with ENOENT ($st: $(cat "$tmp/err"))"
ts exec --cwd /etc/passwd "$id" -- true 2>"$tmp/err"; st=$?
[ $st != 0 ] && grep -q 'Not a directory' "$tmp/err"; t $? "a cwd that is a file is refused with ENOTDIR ($st: $(cat "$tmp/err"))"
# (no pipeline inside: sh would hold its pipe's end while ls looks; `; true` keeps sh from
# executing ls in its place)
is "$(ts exec "$id" -- sh -c 'ls /proc/$$/fd; true' | tr '\n' ' ')" "0 1 2 " "a command holds fds 0-2 only, none of init's"
is "$(ts exec "$id" -- sh -c 'exec 7</dev/null; ls /proc/$$/fd; true' | tr '\n' ' ')" "0 1 2 7 " \
	"an fd opened in the command is seen (control for the check above)"
is "$(ts exec "$id" -- sh -c 'cat /proc/$$/status' | awk '/^(CapEff|CapBnd|NoNewPrivs)/ {printf "%s ", $2}')" \
	"0000000000000000 0000000000000000 1 " "a command has no capability, an empty bounding set and no_new_privs"
out=$(ts exec "$id" -- sh -c 'read -r a b c d e sid rest </proc/$$/stat; echo "$sid $$ $e"')
set -- $out
[ "$1" = "$2" ] && [ "$3" = "$2" ]; t $? "a command leads a session and a process group of its own (sid pid pgid: $out)"
ts exec "$id" -- sh -c 'mkdir -p /tmp/pbin && printf "#!/bin/sh\necho from-path\n" >/tmp/pbin/ts-mine && chmod +x /tmp/pbin/ts-mine'
is "$(ts exec -e PATH=/tmp/pbin:/usr/bin:/bin "$id" -- ts-mine)" from-path "the command's own PATH is searched"
ts exec "$id" -- ts-mine 2>/dev/null; is $? 127 "without it, the default PATH is (the name is not found)"
is "$(ts exec -e TS_ONCE=1 "$id" -- sh -c 'echo ${TS_ONCE-unset}'; ts exec "$id" -- sh -c 'echo ${TS_ONCE-unset}')" \
	"1
unset" "a request's variable reaches its command only, not the next"
ts exec -i "$id" -- true </ 2>/dev/null; is $? 125 "exec refuses a directory as standard input"
ts exec "$id" -- true 1</ 2>"$tmp/err"; st=$?
[ $st = 125 ] && grep -q 'directory' "$tmp/err"; t $? "exec refuses a directory as standard output ($st)"

# init is PID 1 and stays up between commands
is "$(ts exec "$id" -- sh -c 'cat /proc/1/comm')" toren-init "init is PID 1"
ts exec "$id" -- sh -c 'echo persisted > /home/user/f; echo up > /tmp/t'
is "$(ts exec "$id" -- cat /home/user/f /tmp/t | tr '\n' ' ')" "persisted up " "state persists between execs while running"

# background processes: -d, ps, logs (-f after the starting client is gone), kill
proc=$(ts exec -d "$id" -- sh -c 'for i in 1 2 3; do echo line$i; sleep 0.3; done; echo done >&2')
[ -n "$proc" ] && [ "$proc" -gt 0 ] 2>/dev/null; t $? "exec -d prints a process id ($proc)"
out=$(ts logs -f "$id" "$proc")
is "$(echo $out)" "line1 line2 line3 done" "logs -f follows a background process started by a client that has exited"
ts ps "$id" | grep -q "^$proc .*exited"; t $? "ps shows the finished background process"
ts ps --json "$id" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert any(p["state"]=="exited" for p in d)'; t $? "ps --json parses"
proc2=$(ts exec -d "$id" -- sh -c 'sleep 300 & sleep 300 & wait')
sleep 0.5
n_sleep=$(ts exec "$id" -- sh -c 'pgrep -c -x sleep')
is "$n_sleep" 2 "a background job runs ($proc2)"
ts kill "$id" "$proc2" TERM; is $? 0 "kill signals a background process"
sleep 0.5
is "$(ts exec "$id" -- sh -c 'pgrep -c -x sleep || true')" 0 "kill ends the whole process group"
ts kill "$id" "$proc2" 2>/dev/null; [ $? != 0 ]; t $? "kill of an exited process is an error"
ts kill "$id" 99999 2>/dev/null; [ $? != 0 ]; t $? "kill of an unknown process is an error"
ts kill "$id" "$proc" BOGUS 2>/dev/null; is $? 2 "a bad signal name is a usage error"

# a server in the background, reached from a second exec over the sandbox's loopback
ts exec -d "$id" -- python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null
out=""
for i in $(seq 1 50); do
	out=$(ts exec "$id" -- python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8765/f").read().decode().strip())' 2>/dev/null) && break
	sleep 0.2
done
is "$out" persisted "a background http.server is reached from another exec over loopback"
if command -v curl >/dev/null; then
	curl -s -m 2 http://127.0.0.1:8765/ >/dev/null; [ $? != 0 ]; t $? "the sandbox's server is not reachable from the host"
fi

# -t: a real terminal
out=$(timeout 30 script -qec "$cli exec -t $id -- sh -c 'tty; stty size'" /dev/null </dev/null 2>&1)
case $out in *"/dev/pts/"*) t 0 "exec -t gives a pty";; *) t 1 "exec -t: $out";; esac

# stop / start keep the workspace and the upper layer
ts stop "$id"; is $? 0 "stop"
ts exec "$id" -- true >/dev/null 2>&1 # the next exec rebuilds a stopped sandbox
is "$(ts exec "$id" -- cat /home/user/f)" persisted "files written before stop are there after start"
ts stop "$id" && ts start "$id"; is $? 0 "stop then start"
is "$(ts exec "$id" -- sh -c 'cat /tmp/t 2>/dev/null || echo fresh-tmp')" fresh-tmp "tmpfs /tmp is fresh after a restart"
ts exec "$id" -- sh -c 'mkdir -p ~/.local/lib && echo pkg > ~/.local/lib/installed'
ts restart "$id"; is $? 0 "restart"
is "$(ts exec "$id" -- cat /home/user/.local/lib/installed)" pkg "what was installed under /home/user survives restart"
if [ "$TS_MODE" != userns ]; then
	rid=$(create --user root)
	ts exec "$rid" -- sh -c 'echo root-upper > /root-file' 2>/dev/null
	ts exec "$rid" -- sh -c 'mkdir -p /opt/x 2>/dev/null; id -u' >/dev/null
	ts restart "$rid"
	is "$(ts exec "$rid" -- id -u)" 0 "a --user root sandbox runs its commands as root"
fi

# logs outlive a restart: ids go on after the highest one that has a log
lp=$(ts exec -d "$id" -- sh -c 'echo before-restart')
sleep 0.3
ts restart "$id" >/dev/null
is "$(ts logs "$id" "$lp" 2>/dev/null)" before-restart "a background process's log is still there after a restart"
np=$(ts exec -d "$id" -- true)
[ -n "$np" ] && [ -n "$lp" ] && [ "$np" -gt "$lp" ]; t $? "a process after the restart gets a higher id ($np > $lp)"

# logs -f of a process whose sandbox stops under it: status 1 and a message, not 0
lp=$(ts exec -d "$id" -- sleep 60)
ts logs -f "$id" "$lp" >/dev/null 2>"$tmp/logs-err" & lf=$!
sleep 0.5
ts stop "$id" >/dev/null
wait "$lf"; is "$?" 1 "logs -f ends with status 1 when the sandbox stops first"
grep -q "stopped while following" "$tmp/logs-err"; t $? "... and says so"
ts start "$id" >/dev/null

# concurrent starts of a stopped sandbox build one init (a lock serialises them); the
# listening control sockets are counted in /proc/net/unix, where a second init's would
# show even after its path was taken over
r=$(create --name "race-$$")
ts stop "$r" >/dev/null
rdir=$(ts inspect "$r" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["dir"])')
for i in 1 2 3; do ts start "$r" >/dev/null & ts exec "$r" -- true & done; wait
is "$(grep -c " $rdir/run/control.sock\$" /proc/net/unix)" 1 "three starts and three execs at once start one init"
is "$(ts exec "$r" -- echo one)" one "and it serves"
# an init the store does not know (its creator was killed after the helper reported) is
# ended by the next start, and by rm -f
python3 -c "import sqlite3; c = sqlite3.connect('$TOREN_SANDBOX_ROOT/state.db'); c.execute(\"update sandboxes set init_pid = 0, init_start = 0, state = 'stopped' where id = '$r'\"); c.commit()"
ts start "$r" >/dev/null
is "$(grep -c " $rdir/run/control.sock\$" /proc/net/unix)" 1 "start ends an unrecorded init before it starts one"
python3 -c "import sqlite3; c = sqlite3.connect('$TOREN_SANDBOX_ROOT/state.db'); c.execute(\"update sandboxes set init_pid = 0, init_start = 0, state = 'stopped' where id = '$r'\"); c.commit()"
ts rm -f "$r" >/dev/null 2>&1
is "$(grep -c " $rdir/run/control.sock\$" /proc/net/unix)" 0 "rm -f ends an unrecorded init"

# kill -9 of init: no orphan, the next exec works
dir=$(ts inspect "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["dir"])' 2>/dev/null)
initpid=$(ts inspect "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["init"]["pid"])' 2>/dev/null)
marker="ts-life-orphan-$$"
ts exec -d "$id" -- bash -c "exec -a $marker sleep 300" >/dev/null
sleep 0.3
if [ -n "$initpid" ] && kill -0 "$initpid" 2>/dev/null; then
	kill -9 "$initpid"; sleep 0.5
	pgrep -f "$marker" >/dev/null; [ $? = 1 ]; t $? "kill -9 of init leaves no process behind"
	is "$(ts exec "$id" -- cat /home/user/f)" persisted "the next exec after kill -9 of init rebuilds the sandbox"
else
	t 1 "inspect gives init's pid (got '$initpid')"
fi
# kill -9 of the CLI mid-command: the command is the sandbox's, the sandbox stays usable
ts exec "$id" -- bash -c "exec -a $marker-cli sleep 2" & cpid=$!
sleep 0.5; kill -9 $cpid; wait $cpid 2>/dev/null
is "$(ts exec "$id" -- echo alive)" alive "kill -9 of the CLI mid-command leaves the sandbox usable"
sleep 2
pgrep -f "$marker-cli" >/dev/null; [ $? = 1 ]; t $? "the command of a killed CLI finishes and is reaped"

# many sandboxes at once, isolated from each other
many=()
for i in $(seq 1 20); do many+=("$(create --ttl 0)"); done
ok=0
for i in $(seq 0 19); do
	ts exec "${many[$i]}" -- sh -c "echo $i > /home/user/mine; echo $i > /tmp/mine" && ok=$((ok + 1))
done
is "$ok" 20 "20 sandboxes alive at once"
ts exec -d "${many[0]}" -- python3 -m http.server 8766 --bind 127.0.0.1 >/dev/null
ts exec -d "${many[0]}" -- bash -c "exec -a $marker-iso sleep 300" >/dev/null
sleep 1
leak=0
for i in $(seq 1 19); do
	out=$(ts exec "${many[$i]}" -- sh -c 'cat /home/user/mine /tmp/mine | tr "\n" " "; pgrep -f "'"${marker}"'-i[s]o" >/dev/null && echo SEEN; python3 -c "import socket; s=socket.socket(); s.settimeout(1); print(\"CONNECTED\" if s.connect_ex((\"127.0.0.1\", 8766)) == 0 else \"\")"')
	[ "$(echo $out)" = "$i $i" ] || { leak=1; echo "# sandbox $i saw: $out"; }
done
is "$leak" 0 "a file, a process and a loopback port of one sandbox are invisible in 19 others"
for m in "${many[@]}"; do ts stop "$m" >/dev/null 2>&1; done

# cgroups of a durable sandbox (root: cgroup v1 here) go when it stops, and when an init
# killed with -9 is replaced
if [ "$TS_MODE" = root ]; then
	cid=$(create --pids 64 --memory 128M)
	is "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "ts-$cid" 2>/dev/null | wc -l)" 2 "a limited durable sandbox has its pids and memory cgroups"
	ts stop "$cid"
	is "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "ts-$cid" 2>/dev/null | wc -l)" 0 "stop removes the sandbox's cgroups"
	ts start "$cid"
	cinit=$(ts inspect "$cid" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["init"]["pid"])' 2>/dev/null)
	[ -n "$cinit" ] && kill -9 "$cinit"; sleep 0.5
	ts exec "$cid" -- true
	is "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "ts-$cid" 2>/dev/null | wc -l)" 2 "after kill -9 of init the next exec rebuilds with fresh cgroups"
	ts stop "$cid"
	is "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "ts-$cid" 2>/dev/null | wc -l)" 0 "and stop leaves none"
fi

# bad input: a typed error, nothing changed
ts exec nosuch-sandbox -- true 2>"$tmp/err"; st=$?
[ $st != 0 ] && grep -q 'no sandbox' "$tmp/err"; t $? "exec of an unknown id is a typed error"
ts stop nosuch-sandbox 2>/dev/null; [ $? != 0 ]; t $? "stop of an unknown id fails"
ts exec "$id" 2>/dev/null; is $? 2 "exec without a command is a usage error"
ts create --ttl forever 2>/dev/null; is $? 2 "create with a bad --ttl is a usage error"
ts create --name "life-$$" 2>"$tmp/err" >/dev/null; [ $? != 0 ] && grep -qi 'name' "$tmp/err"; t $? "a taken name is refused"
ts logs "$id" abc 2>/dev/null; is $? 2 "logs with a bad process id is a usage error"

ts stop "$id"; is $? 0 "stop at the end"
is "$(wc -l </proc/self/mountinfo)" "$mounts_before" "no mount of any sandbox appears or stays in the host's mount table"
pgrep -f "$marker" >/dev/null; [ $? = 1 ]; t $? "no process of ours is left on the host"
echo "1..$n"
[ $failed = 0 ]
