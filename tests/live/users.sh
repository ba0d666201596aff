#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The two users of a durable sandbox: `exec --user root|user` and `cp --user root|user`.
# Where the id map holds a root (as root: every sandbox; as a user with subordinate ids:
# `create --user root`), init starts processes and file workers as either user, and
# every one of them runs with no capability at all (NS-12 for exec'd processes and for
# the file worker), while init keeps exactly CAP_SETUID, CAP_SETGID, CAP_SETPCAP and
# CAP_KILL of its user namespace. Where it holds one id (`unshare -r`), asking for the
# other user is a typed error that changes nothing. TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
cli=$TS_CLI
ts() { timeout -k 5 60 "$cli" "$@"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ts-users-XXXXXX") || exit 1
chmod 755 "$tmp"
id=
cleanup() {
	[ -n "$id" ] && ts rm -f --purge "$id" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The capability lines of a /proc/PID/status, joined: "Inh Prm Eff Bnd Amb".
caps() { awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/ { printf "%s%s", sep, $2; sep = " " }'; }
zero="0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000"
echo hello >"$tmp/in.txt"

# requests the CLI never sends: malformed or foreign uids are refused, never run as init
raw_checks() {
	local sock
	sock=$(ts inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["control_socket"])')
	tap_is "$(python3 "$here/ctl-raw.py" "$sock" spawn-uid-4bytes)" "ERROR 22" \
		"a SPAWN whose UID field is malformed: EINVAL, not a run as init's user"
	tap_is "$(python3 "$here/ctl-raw.py" "$sock" spawn-uid-5)" "ERROR 1" "a SPAWN as uid 5: EPERM"
	tap_is "$(python3 "$here/ctl-raw.py" "$sock" file-user-nouid)" "ERROR 22" "FILE USER without a uid: EINVAL"
	tap_is "$(python3 "$here/ctl-raw.py" "$sock" file-user-5)" "ERROR 1" "FILE USER as uid 5: EPERM"
}

case $TS_MODE in
userns)
	# one id inside: no root to switch to
	id=$(ts create | tail -n 1)
	[ -n "$id" ]; tap_result $? "create (single id)"
	out=$(ts exec --user root "$id" -- touch /tmp/as-root 2>"$tmp/err"); rc=$?
	tap_is "$rc" 125 "exec --user root without a root inside fails"
	grep -q "has no root" "$tmp/err"; tap_result $? "and says the sandbox has no root: $(head -c 200 "$tmp/err")"
	ts exec "$id" -- test -e /tmp/as-root; [ $? = 1 ]; tap_result $? "and started nothing"
	tap_is "$(ts exec --user user "$id" -- id -u)" 1000 "exec --user user runs as 1000"
	ts cp --user root "$tmp/in.txt" "$id:/tmp/x" 2>"$tmp/err"; rc=$?
	tap_is "$rc" 1 "cp --user root without a root inside fails"
	grep -q "has no root" "$tmp/err"; tap_result $? "and says the sandbox has no root"
	ts exec "$id" -- test -e /tmp/x; [ $? = 1 ]; tap_result $? "and wrote nothing"
	ts cp "$tmp/in.txt" "$id:in.txt"; tap_result $? "cp as the sandbox's user works"
	tap_is "$(ts exec "$id" -- cat /home/user/in.txt)" hello "and the file is in the workspace"
	raw_checks
	# stopped: refused from the id map its start would get, so nothing is started
	ts stop "$id" >/dev/null
	ts exec --user root "$id" -- true 2>"$tmp/err"
	tap_is "$?" 125 "exec --user root on a stopped one-id sandbox fails"
	ts cp --user root "$tmp/in.txt" "$id:/tmp/x" 2>/dev/null
	tap_is "$?" 1 "cp --user root on a stopped one-id sandbox fails"
	tap_is "$(ts inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" stopped \
		"... and neither started it: $(head -c 120 "$tmp/err")"
	tap_done
	exit
	;;
root) id=$(ts create | tail -n 1); default_uid=1000 ;;
user) id=$(ts create --user root | tail -n 1); default_uid=0 ;;
esac
[ -n "$id" ]; tap_result $? "create a sandbox with a root ($TS_MODE mode)"

tap_is "$(ts exec "$id" -- id -u)" "$default_uid" "exec without --user runs as the sandbox's own user"
tap_is "$(ts exec --user root "$id" -- sh -c 'echo $(id -u) $(id -g) $(id -G) $HOME $USER')" \
	"0 0 0 /root root" "exec --user root: uid, gid, groups, HOME, USER"
tap_is "$(ts exec --user user "$id" -- sh -c 'echo $(id -u) $(id -g) $(id -G) $HOME $USER')" \
	"1000 1000 1000 /home/user user" "exec --user user: uid, gid, groups, HOME, USER"
for who in root user; do
	st=$(ts exec --user "$who" "$id" -- cat /proc/self/status)
	tap_is "$(echo "$st" | caps)" "$zero" "NS-12: a process exec'd as $who has no capability (CapBnd too)"
	tap_is "$(echo "$st" | awk '/^NoNewPrivs:/ { print $2 }')" 1 "a process exec'd as $who has no_new_privs"
	tap_is "$(echo "$st" | awk '/^Seccomp:/ { print $2 }')" 2 "a process exec'd as $who is under the seccomp filter"
	# and an exec inside gains nothing back (root's exec would take the bounding set)
	tap_is "$(ts exec --user "$who" "$id" -- sh -c 'exec sh -c "cat /proc/self/status"' | caps)" \
		"$zero" "a program $who executes inside gains no capability"
done

# a terminal belongs to the user it is for: the other user cannot open its slave
for who in root user; do
	want=$([ $who = root ] && echo 0 || echo 1000)
	out=$(timeout 30 script -qec "$cli exec -t --user $who $id -- sh -c 'stat -c %u \$(tty)'" /dev/null </dev/null 2>&1 | tr -cd '0-9')
	tap_is "$out" "$want" "exec -t --user $who: the pty's slave belongs to $who"
done

# a system's layout: root owns /tmp, /var, /var/tmp, /run and /root, so the sticky bit and
# the kernel's protected_symlinks work between the two users
tap_is "$(ts exec "$id" -- stat -c '%u:%a' /tmp /var /var/tmp /run /root | tr '\n' ' ')" \
	"0:1777 0:755 0:1777 0:755 0:700 " "/tmp, /var, /var/tmp, /run and /root belong to root"
ts exec --user user "$id" -- sh -c 'ln -s /root /tmp/ldir && ln -s /root/planted /tmp/lfile'
# The kernel's rule, a host-wide setting (doctor warns when it is off): as root, turn it
# on for these two copies and back.
prot=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null)
[ "$prot" = 0 ] && [ "$(id -u)" = 0 ] && echo 1 >/proc/sys/fs/protected_symlinks
ts cp --user root "$tmp/in.txt" "$id:/tmp/ldir/x" 2>"$tmp/err"
st=$?
ts cp --user root "$tmp/in.txt" "$id:/tmp/lfile" 2>>"$tmp/err"
st2=$?
on=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null)
[ "$prot" = 0 ] && [ "$(id -u)" = 0 ] && echo 0 >/proc/sys/fs/protected_symlinks
if [ "$on" = 1 ]; then
	tap_is "$st:$st2:$(ts exec --user root "$id" -- sh -c 'ls /root/x /root/planted 2>/dev/null')" "1:1:" \
		"cp --user root through symlinks the user planted in /tmp writes nothing in /root: $(head -c 120 "$tmp/err")"
else
	tap_skip "cp --user root through symlinks the user planted" "fs.protected_symlinks is off on this host"
fi

# what root can and cannot do
tap_is "$(ts exec --user root "$id" -- stat -c '%u %g %a' /root)" "0 0 700" "/root belongs to root, mode 700"
ts exec --user root "$id" -- sh -c 'echo r > /root/mine'; tap_result $? "root writes in /root"
ts exec --user user "$id" -- cat /root/mine >/dev/null 2>&1; [ $? != 0 ]; tap_result $? "user cannot read /root"
ts exec --user root "$id" -- sh -c 'mkdir -p /tmp/m && mount -t tmpfs none /tmp/m' 2>/dev/null
[ $? != 0 ]; tap_result $? "root inside cannot mount"
ts exec --user root "$id" -- unshare -U true 2>/dev/null; [ $? != 0 ]; tap_result $? "root inside cannot make a user namespace"
ts exec --user root "$id" -- cat /proc/1/environ >/dev/null 2>&1; [ $? != 0 ]
tap_result $? "root inside cannot read init's memory-backed files (/proc/1/environ)"
ts exec --user root "$id" -- kill -9 1 2>/dev/null
tap_is "$(ts exec "$id" -- echo alive)" alive "kill -9 1 by root inside does not stop init"

# init itself, seen from the host: exactly the four capabilities, nothing else
initpid=$(ts inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["init"]["pid"])')
if [ -n "$initpid" ] && [ -r "/proc/$initpid/status" ]; then
	st=$(cat "/proc/$initpid/status")
	tap_is "$(echo "$st" | caps)" \
		"00000000000001e0 00000000000001e0 00000000000001e0 00000000000001e0 00000000000001e0" \
		"init holds CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL, nothing else"
	tap_is "$(echo "$st" | awk '/^NoNewPrivs:/ { print $2 }')" 1 "init has no_new_privs"
	tap_is "$(echo "$st" | awk '/^Seccomp:/ { print $2 }')" 2 "init is under the seccomp filter"
else
	tap_not_ok "inspect gives init's pid, readable from the host (got '$initpid')"
fi

# background processes of either user: listed with their user, signalled by init
ts exec -d --user root "$id" -- sleep 300 >"$tmp/proc"; tap_result $? "exec -d --user root"
proc=$(tail -n 1 "$tmp/proc")
tap_is "$(ts ps --json "$id" | python3 -c "import json,sys; print([p['user'] for p in json.load(sys.stdin) if p['id'] == $proc][0])")" \
	root "ps --json shows the background process's user"
ts ps "$id" | grep -Eq "^$proc +[0-9]+ +root +running"; tap_result $? "ps shows it as root, running"
ts kill "$id" "$proc"; tap_result $? "kill of a root process (init signals it with CAP_KILL)"
state=
for _ in $(seq 1 50); do
	state=$(ts ps --json "$id" | python3 -c "import json,sys; print([p['state'] for p in json.load(sys.stdin) if p['id'] == $proc][0])")
	[ "$state" = exited ] && break
	sleep 0.1
done
tap_is "$state" exited "and it ended"

# cp: as user by default (the workspace's owner), as root when asked
ts cp "$tmp/in.txt" "$id:in.txt"; tap_result $? "cp into /home/user (as user, the default)"
tap_is "$(ts exec "$id" -- stat -c '%u %g' /home/user/in.txt)" "1000 1000" "the copy belongs to user"
ts cp "$tmp/in.txt" "$id:/root/x" 2>"$tmp/err"; rc=$?
tap_is "$rc" 1 "cp into /root as user is refused"
grep -q "Permission denied" "$tmp/err"; tap_result $? "with the kernel's reason: $(head -c 160 "$tmp/err")"
ts cp --user root "$tmp/in.txt" "$id:/root/"; tap_result $? "cp --user root into /root"
tap_is "$(ts exec --user root "$id" -- stat -c '%u %g' /root/in.txt)" "0 0" "the copy belongs to root"
tap_is "$(ts cp --user root "$id:in.txt" -)" hello "cp --user root out: a relative path starts in /root"
for who in user root; do
	st=$(ts cp --user "$who" "$id:/proc/self/status" -)
	tap_is "$(echo "$st" | caps)" "$zero" "NS-12: the file worker serving $who has no capability"
	tap_is "$(echo "$st" | awk '/^Uid:/ { print $2 }')" "$([ $who = root ] && echo 0 || echo 1000)" \
		"the file worker serving $who runs as $who"
done
ts cp --user nobody "$tmp/in.txt" "$id:x" 2>/dev/null; tap_is $? 2 "cp --user with another name is a usage error"
ts exec --user nobody "$id" -- true 2>/dev/null; tap_is $? 2 "exec --user with another name is a usage error"
ts exec -d -t "$id" -- true 2>/dev/null; tap_is $? 2 "exec -d with -t is a usage error (a background process has no terminal)"

raw_checks

# A directory of 0700 that root inside makes in the workspace, with a protected name in
# it: in user mode its host owner is a subordinate id the caller cannot read, so the
# start's protected-path scan runs again as root of the sandbox's mapping (the helper's
# --scan-protected). The sandbox starts (stop/start, and a restore of a snapshot of it),
# and the file in the root-only directory is read-only inside.
ro_check() { # SANDBOX WHAT
	local out st
	out=$(ts exec --user root "$1" -- sh -c 'echo w >> /home/user/rd/e/.env' 2>&1)
	st=$?
	tap_is "$([ $st != 0 ] && echo refused):$(ts exec --user root "$1" -- cat /home/user/rd/e/.env)" \
		"refused:secret" "$2: the protected .env in the root-only directory cannot be written ($st: $out)"
	echo "$out" | grep -q "Read-only file system"
	tap_result $? "$2: the write fails with EROFS (a read-only bind, not a mode)"
	tap_is "$(ts exec --user root "$1" -- sh -c 'echo w > /home/user/rd/e/f && cat /home/user/rd/e/f' 2>&1)" \
		w "$2: control: the other file in that directory is writable"
}
# (root inside has no capability: it writes where the user lets it, /home/user/rd)
ts exec --user user "$id" -- mkdir -m 0777 /home/user/rd &&
	ts exec --user root "$id" -- sh -c 'mkdir -m 0700 /home/user/rd/e && echo x > /home/user/rd/e/f && echo secret > /home/user/rd/e/.env'
tap_result $? "root makes /home/user/rd/e (0700) holding f and a protected .env"
if [ "$TS_MODE" = user ]; then
	own=$(ts inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["workspace"])')
	ls "$own/rd/e" >/dev/null 2>&1
	tap_is $? 2 "the host user cannot read the directory itself (control: a subordinate id's 0700)"
fi
ts stop "$id" >/dev/null
ts start "$id" >/dev/null 2>"$tmp/err"
tap_result $? "start after stop, the workspace holding the root-only directory: $(head -c 300 "$tmp/err")"
ro_check "$id" "after stop/start"
snap=$(ts snapshot "$id" 2>"$tmp/err")
tap_result $? "snapshot of it ($snap): $(head -c 200 "$tmp/err")"
as_root=$([ "$TS_MODE" = user ] && echo --user root)
rid=$(ts create $as_root --image "$snap" 2>"$tmp/err" | tail -n 1)
[ -n "$rid" ]; tap_result $? "a restore of the snapshot ${as_root:+with $as_root }starts ($rid): $(head -c 300 "$tmp/err")"
[ -n "$rid" ] && ro_check "$rid" "restored"
[ -n "$rid" ] && ts rm -f --purge "$rid" >/dev/null 2>&1
[ -n "$snap" ] && ts snapshot rm "$snap" >/dev/null 2>&1
if [ "$TS_MODE" = user ]; then
	# Not weakened: in a sandbox of one id (no --user root: the sandbox's user is the
	# caller, no subordinate ids to scan as) a directory the caller cannot read still
	# refuses the start, until its owner fixes the mode.
	sid=$(ts create 2>/dev/null | tail -n 1)
	ts exec "$sid" -- sh -c 'mkdir /home/user/z && echo s > /home/user/z/.env && chmod 0 /home/user/z' &&
		ts stop "$sid" >/dev/null
	ts start "$sid" >/dev/null 2>"$tmp/err"
	st=$?
	[ $st != 0 ] && grep -q "scan protected paths: open .z.: Permission denied" "$tmp/err"
	tap_result $? "one id: a directory of mode 0 of the caller's still refuses the start ($st: $(head -c 200 "$tmp/err"))"
	sws=$(ts inspect "$sid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["workspace"])')
	chmod 700 "$sws/z" && ts start "$sid" >/dev/null 2>"$tmp/err"
	tap_result $? "control: once its mode is fixed, it starts: $(head -c 200 "$tmp/err")"
	ts exec "$sid" -- sh -c 'echo w >> /home/user/z/.env' 2>&1 | grep -q "Read-only file system"
	tap_result $? "and the .env in it is read-only"
	[ -n "$sid" ] && ts rm -f --purge "$sid" >/dev/null 2>&1
fi

# after a restart the same holds (the helper is asked again)
ts restart "$id" >/dev/null; tap_result $? "restart"
tap_is "$(ts exec --user root "$id" -- id -u)/$(ts exec --user user "$id" -- id -u)" 0/1000 \
	"both users after a restart"
tap_done
