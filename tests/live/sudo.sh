#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `sudo` in a durable sandbox (policy `sudo: true`, runtime/sudo.h): the sandbox's
# /usr/bin/sudo asks init to start the command as the sandbox's root. Its streams, exit
# status and signals pass through; the caller's environment does not; `-u user`, `-i`,
# `-s`, `--` work and `-E` is refused; a process of the sandbox's user can neither
# replace the socket nor get init to run anything outside what the target user may do
# (hand-made requests, tests/live/sudo-raw.py). Without the key, or where the sandbox
# has no root (`unshare -r`: one id), there is no sudo. TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
cli=$TS_CLI
ts() { timeout -k 5 60 "$cli" "$@"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ts-sudo-XXXXXX") || exit 1
chmod 755 "$tmp"
ids=()
cleanup() {
	for i in "${ids[@]}"; do ts rm -f --purge "$i" >/dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
printf 'version: 1\nsudo: true\n' >"$tmp/sudo.yaml"
chmod 644 "$tmp/sudo.yaml"

# without the key: no sudo that gives root
off=$(ts create 2>"$tmp/err" | tail -n 1)
[ -n "$off" ] || { tap_diag_file "$tmp/err"; tap_skip_all "cannot create a sandbox"; }
ids+=("$off")
out=$(ts exec "$off" -- sh -c 'sudo id -u 2>&1; echo "rc=$?"')
case $out in *rc=0*) tap_not_ok "without \`sudo: true\` sudo fails ($out)" ;;
*) tap_ok "without \`sudo: true\` sudo fails or is absent" ;; esac
ts exec "$off" -- test -e /run/toren/sudo.sock
tap_is $? 1 "without \`sudo: true\` init listens on no sudo socket"

on=$(ts create --policy "$tmp/sudo.yaml" 2>"$tmp/err" | tail -n 1)
[ -n "$on" ] || { tap_diag_file "$tmp/err"; tap_skip_all "cannot create a sandbox with sudo"; }
ids+=("$on")
if [ "$TS_MODE" = userns ]; then
	# one mapped id: no root to become
	grep -q 'sudo is off' "$tmp/err"
	tap_result $? "with one id, create says that sudo is off"
	out=$(ts exec "$on" -- sh -c 'sudo id -u 2>&1; echo "rc=$?"')
	case $out in *rc=0*) tap_not_ok "with one id sudo fails ($out)" ;;
	*) tap_ok "with one id sudo fails or is absent" ;; esac
	tap_done
	exit
fi

x() { ts exec "$on" -- "$@"; }
tap_is "$(x id -u)" 1000 "commands run as user"
tap_is "$(x sudo id -u)" 0 "sudo id -u is 0"
tap_is "$(x sudo id -g)" 0 "sudo id -g is 0"
tap_is "$(x sudo -u root whoami)" root "sudo -u root whoami"
tap_is "$(x sudo -u user id -u)" 1000 "sudo -u user id -u is 1000"
tap_is "$(x sudo -n -- id -un)" root "sudo -n -- CMD"
tap_is "$(x sh -c 'echo x | sudo cat')" x "stdin passes through (echo x | sudo cat)"
tap_is "$(x sh -c 'sudo sh -c "echo to-err >&2" 2>&1 >/dev/null')" to-err "stderr passes through"
x sudo sh -c 'exit 7'
tap_is $? 7 "the exit status passes through"
x sudo sh -c 'kill -TERM $$'
tap_is $? 143 "a command killed by a signal gives 128+N"
tap_is "$(x sh -c 'FOO=1 sudo sh -c "echo \${FOO:-unset}"')" unset \
	"a per-command variable does not reach the command"
tap_is "$(x sh -c 'LC_ALL=C.UTF-8 sudo sh -c "echo \$LC_ALL"')" C.UTF-8 "LC_* passes"
tap_is "$(x sh -c 'PATH=/tmp/evil /usr/bin/sudo sh -c "echo \$PATH"')" \
	/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "PATH is reset"
tap_is "$(x sh -c 'cd /tmp && sudo pwd')" /tmp "the command starts in the caller's cwd"
tap_is "$(x sudo -i pwd)" /root "sudo -i: a login shell in root's home"
tap_is "$(x sudo -s echo 'a b')" "a b" "sudo -s: a shell (arguments quoted)"
tap_is "$(x sudo sh -c 'echo $SUDO_USER:$SUDO_UID:$HOME')" user:1000:/root "SUDO_USER, SUDO_UID, HOME"
x sudo -E true 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q -- '-E is not supported' "$tmp/err"
tap_result $? "sudo -E is refused with a message ($st)"
x sudo -k true 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q 'not supported' "$tmp/err"
tap_result $? "an unknown option is refused with a message ($st)"
x sudo -u nobody true 2>/dev/null
tap_is $? 1 "an unknown user is refused"
x sudo /nonexistent 2>/dev/null
tap_is $? 127 "a missing command gives 127"
tap_is "$(x sudo sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " " | tr "\n" " "')" \
	"CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " \
	"root through sudo: no capability, empty bounding set, no_new_privs, seccomp"
# signals: what sudo gets, the command's group gets (Ctrl-C reaches sudo, not it)
out=$(x sh -c 'sudo sleep 100 & p=$!; sleep 0.5; kill -INT $p; wait $p; echo $?')
tap_is "$out" 130 "SIGINT to sudo reaches the command (130)"
out=$(x sh -c 'sudo sh -c "sleep 100; echo alive" & p=$!; sleep 0.5; kill -KILL $p; sleep 0.5; ps -eo user=,args= | grep -c "^root .*sleep 10[0]"')
tap_is "$out" 0 "a sudo killed with SIGKILL takes its command along"
# bounded: at most 16 commands at once, the 17th is refused, all of them end
out=$(x sh -c 'for i in $(seq 16); do sudo sleep 3 & done; sleep 1; sudo true 2>&1; echo "rc=$?"; wait')
case $out in *"too many"*rc=1*) tap_ok "a 17th concurrent sudo is refused" ;;
*) tap_not_ok "a 17th concurrent sudo is refused ($out)" ;; esac

# the socket cannot be replaced, nor anything planted next to it
tap_is "$(x stat -c '%U %a' /run/toren /run/toren/sudo.sock | tr '\n' ' ')" "root 755 root 666 " \
	"the socket is root's in a directory of root's"
x rm -f /run/toren/sudo.sock 2>/dev/null
tap_is $? 1 "user cannot remove the socket"
x mv /run/toren /run/toren.old 2>/dev/null
tap_is $? 1 "user cannot move the socket's directory"
x ln -s /tmp/evil /run/toren/sudo.sock.new 2>/dev/null
tap_is $? 1 "user cannot plant a symlink next to the socket"
x python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("/run/toren/x.sock")' 2>/dev/null
tap_is $? 1 "user cannot bind a socket of its own there"
tap_is "$(x sudo id -u)" 0 "sudo still works after those attempts"

# hand-made requests (sudo-raw.py): refused, or bound by the target user's own rights
if x test -x /usr/bin/python3; then
	raw() { ts exec -i "$on" -- python3 - "$1" <"$here/sudo-raw.py" 2>&1; }
	out=$(raw relative-cwd)
	case $out in "ERROR 22 "*"not absolute"*) tap_ok "a relative cwd is refused" ;;
	*) tap_not_ok "a relative cwd is refused ($out)" ;; esac
	out=$(raw one-fd)
	case $out in "ERROR 22 "*) tap_ok "a request without three descriptors is refused" ;;
	*) tap_not_ok "a request without three descriptors is refused ($out)" ;; esac
	out=$(raw foreign-uid)
	case $out in "ERROR 1 "*) tap_ok "a request as uid 4242 is refused (EPERM)" ;;
	*) tap_not_ok "a request as uid 4242 is refused ($out)" ;; esac
	out=$(raw cwd-as-user)
	case $out in *"cannot change directory to /root"*"EXITED 1"*) tap_ok "the cwd is entered with the target's ids (user cannot start in /root)" ;;
	*) tap_not_ok "the cwd is entered with the target's ids ($out)" ;; esac
	out=$(raw env)
	case $out in *FOO=* | *LD_PRELOAD=*) tap_not_ok "only TERM, LANG, LC_* of the caller's env arrive ($out)" ;;
	*LANG=C.UTF-8*"EXITED 0"*) tap_ok "only TERM, LANG, LC_* of the caller's env arrive" ;;
	*) tap_not_ok "the env request ran ($out)" ;; esac
	out=$(raw nul-arg)
	case $out in "ERROR 22 "*) tap_ok "an argument with a NUL byte is refused" ;;
	*) tap_not_ok "an argument with a NUL byte is refused ($out)" ;; esac
else
	tap_skip "hand-made requests" "no python3 in the sandbox"
fi

# pause (serve's E2B pause) stops root's commands too, and resume continues them
info=$(ts inspect "$on")
sock=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["control_socket"])' <<<"$info")
init=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["init"]["pid"])' <<<"$info")
ts exec -d "$on" -- sudo sleep 1000 >/dev/null
root_sleep() {
	local p
	for p in $(pgrep -P "$init"); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = sleep ] && awk '/^State:/ { print $2 }' /proc/"$p"/status
	done
}
for _ in $(seq 50); do [ -n "$(root_sleep)" ] && break; sleep 0.1; done
tap_is "$(root_sleep)" S "the command sudo started is a child of init"
tap_is "$(timeout 30 python3 "$here/ctl-raw.py" "$sock" pause)" "OK 0" "pause"
sleep 0.3
tap_is "$(root_sleep)" T "paused: the command sudo started is stopped"
tap_is "$(timeout 30 python3 "$here/ctl-raw.py" "$sock" resume)" "OK 0" "resume"
sleep 0.3
tap_is "$(root_sleep)" S "resumed: it runs again"

# a stop and start brings sudo back (a fresh /run)
ts stop "$on" >/dev/null 2>&1
tap_is "$(x sudo id -u)" 0 "after stop and start, sudo works again"
tap_done
