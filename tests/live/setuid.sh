#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The setuid-root install mode of the helper (toren-sandbox-helper(8), SECURITY.md):
# started setuid root by an unprivileged user, it runs sandboxes exactly like the rootless
# helper, as the caller, and refuses what only privilege could grant.
# usage: setuid.sh BUILD_DIR SOURCE_DIR   (as root; switches to the test user)
set -u
build=$1 src=$2 user=${TS_TEST_USER:-tsbx-test}
n=0 failed=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
if [ "$(id -u)" != 0 ] || ! id "$user" >/dev/null 2>&1; then
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then echo "1..1"; echo "not ok 1 - setuid test needs root and $user"; exit 1; fi
	echo "1..0 # SKIP needs root and the test user $user"; exit 0
fi
stage=$(mktemp -d /tmp/ts-setuid-XXXXXX); chmod 755 "$stage"
trap 'rm -rf "$stage"' EXIT
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" "$stage/"
cp -r "$src/policy" "$stage/policy"
chown root:root "$stage/toren-sandbox-helper"; chmod 4755 "$stage/toren-sandbox-helper"
mkdir "$stage/state"; chown "$user:" "$stage/state"
as_user() { timeout 60 runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/tmp \
	TOREN_SANDBOX_ROOT="$stage/state" TOREN_SANDBOX_POLICY_DIR="$stage/policy" "$@"; }
uid=$(id -u "$user") gid=$(id -g "$user")

[ -u "$stage/toren-sandbox-helper" ]; t $? "the staged helper is setuid root (control)"
out=$(as_user "$stage/toren-sandbox" run -- sh -c 'printf "%s " $(id -u); grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status | tr -s "\t " " " | tr "\n" " "')
case $out in "1000 CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 ") t 0 "a sandbox runs through the setuid helper, unprivileged inside";;
	*) t 1 "setuid sandbox: got '$out'";; esac
out=$(as_user "$stage/toren-sandbox" run -- sh -c 'echo x > /home/user/f; stat -c %u /home/user/f')
[ "$out" = 1000 ]; t $? "workspace files are the caller's own (inside uid 1000)"

# the command line cannot ask for what privilege would grant
base=(--overlay-src /usr --ro-overlay / --uid-map "1000 $uid 1" --gid-map "1000 $gid 1")
as_user "$stage/toren-sandbox-helper" --overlay-src /usr --ro-overlay / --uid-map "0 0 1" --gid-map "1000 $gid 1" -- /bin/true 2>"$stage/err"
[ $? = 125 ] && grep -q 'only your own uid' "$stage/err"; t $? "mapping host root is refused ($(head -c 120 "$stage/err"))"
as_user "$stage/toren-sandbox-helper" --overlay-src /usr --ro-overlay / --uid-map "1000 $((uid + 1)) 1" --gid-map "1000 $gid 1" -- /bin/true 2>"$stage/err"
[ $? = 125 ] && grep -q 'only your own uid' "$stage/err"; t $? "mapping another user's uid is refused"
as_user "$stage/toren-sandbox-helper" --overlay-src /usr --ro-overlay / --uid-map "1000 $uid 1" --gid-map "1000 0 1" -- /bin/true 2>"$stage/err"
[ $? = 125 ] && grep -q 'only your own gid' "$stage/err"; t $? "mapping the root group is refused"
as_user "$stage/toren-sandbox-helper" "${base[@]}" --cgroup x --cgroup-pids 5 -- /bin/true 2>"$stage/err"
[ $? = 125 ] && grep -q 'cgroup is not allowed' "$stage/err"; t $? "creating cgroups is refused"
as_user "$stage/toren-sandbox-helper" "${base[@]}" -- /bin/true; t $? "a direct single-id sandbox runs through the setuid helper (control)"
# host paths are opened as the caller: root's home stays out of reach
mkdir -m 700 "$stage/private"; echo secret >"$stage/private/f"; chmod 644 "$stage/private/f"
as_user "$stage/toren-sandbox-helper" "${base[@]}" --ro-bind "$stage/private/f" /share -- /bin/true 2>"$stage/err"
[ $? = 125 ] && grep -q 'open bind source.*Permission denied' "$stage/err"; t $? "a bind of a path the caller cannot read is refused ($(head -c 120 "$stage/err"))"
# CAP_SYS_ADMIN is only permitted, not effective, while the helper opens the program and
# the host paths: a FIFO as the program holds the helper in that open for us to look
mkfifo -m 666 "$stage/fifo"
as_user "$stage/toren-sandbox-helper" "${base[@]}" -- "$stage/fifo" 2>/dev/null &
hpid=$!
eff="" prm=""
for i in $(seq 1 50); do
	pid=$(pgrep -n -f "toren-sandbox-helper .*$stage/fifo" || true)
	# read only once it blocks in openat(2) (257) of the FIFO: before that it may still
	# be at its start, with every capability of a fresh setuid-root exec
	if [ -n "$pid" ] && read -r nr _ <"/proc/$pid/syscall" 2>/dev/null && [ "$nr" = 257 ]; then
		eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")
		prm=$(awk '/^CapPrm:/ { print $2 }' "/proc/$pid/status")
		break
	fi
	sleep 0.1
done
echo >"$stage/fifo" & # let the open return (the helper then refuses the FIFO)
wait $hpid 2>/dev/null
[ "$prm" = 0000000000200000 ] && [ "$eff" = 0000000000000000 ]
t $? "setuid mode: CAP_SYS_ADMIN permitted but not effective while the program is opened (CapPrm $prm, CapEff $eff)"
echo "1..$n"
[ $failed = 0 ]
