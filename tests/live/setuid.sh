#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The setuid-root install mode of the helper (toren-sandbox-helper(8), SECURITY.md):
# started setuid root by an unprivileged user, it runs sandboxes exactly like the rootless
# helper, as the caller, and refuses what only privilege could grant. Its --copy-tree:
# snapshots and restores of a sandbox with subordinate ids keep the owners, a symlink
# planted to /etc/shadow is copied as a link, maps of ids the user does not own (the
# host's root, others' subordinate ids) are refused before anything is copied. Its
# --scan-protected: a directory of 0700 of the sandbox's root is walked as that root, a
# directory of the host's root fails closed, and such a sandbox starts again.
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
# the sandboxes made below go (as the user) before their state: nothing outlives the test
cleanup() {
	[ -f "$stage/ids" ] && as_user "$stage/toren-sandbox" rm -f --purge $(cat "$stage/ids") >/dev/null 2>&1
	rm -rf "$stage"
}
trap cleanup EXIT
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

# --copy-tree through the setuid helper: snapshots of a sandbox with subordinate ids
ts() { as_user "$stage/toren-sandbox" "$@"; }
mk() { local id; id=$(ts create "$@" 2>>"$stage/err" | tail -n 1) && [ -n "$id" ] && echo "$id" >>"$stage/ids" && echo "$id"; }
read -r sub_uid sub_count < <(awk -F: -v u="$user" '$1 == u { print $2, $3; exit }' /etc/subuid)
read -r sub_gid _ < <(awk -F: -v u="$user" '$1 == u { print $2, $3; exit }' /etc/subgid)
: >"$stage/err"
if [ -z "${sub_uid:-}" ] || [ -z "${sub_gid:-}" ] || ! [ -x /usr/bin/newuidmap ]; then
	for c in "a --user root sandbox" "its files" "snapshot" "owners" "link" "restore root" "restore one id" \
		"host root map" "other ids" "owner unmapped" "host root file" "control copy" \
		"scan: user cannot read" "scan: finds" "scan: host root map" "scan: host root dir" \
		"start with 0700" "read-only"; do
		n=$((n + 1)); echo "ok $n - copy-tree: $c # SKIP $user has no subordinate ids or no newuidmap"
	done
else
	srcsb=$(mk --user root)
	t $? "a --user root sandbox (subordinate ids) starts through the setuid helper ($srcsb)"
	ts exec --user user "$srcsb" -- sh -c 'mkdir -m 777 /rd /home/user/rd && echo mine > /home/user/mine' 2>>"$stage/err" &&
	# (a directory of 0700 would stop the workspace's protected-path scan on a start)
	ts exec --user root "$srcsb" -- sh -c 'umask 022 && for d in /rd /home/user/rd; do mkdir $d/e && echo secret > $d/e/f && chmod 600 $d/e/f &&
		ln -s /etc/shadow $d/shadow || exit 1; done' 2>>"$stage/err"
	t $? "its root writes 0600 files and plants symlinks to /etc/shadow in the upper and the workspace"
	snap=$(ts snapshot "$srcsb" 2>>"$stage/err")
	t $? "a snapshot of it through the setuid helper's --copy-tree ($snap)"
	sd=$stage/state/snapshots/$snap
	got=$(stat -c '%u:%g %a' "$sd/upper/rd/e/f" "$sd/workspace/rd/e/f" "$sd/workspace/mine" 2>&1 | tr '\n' ' ')
	[ "$got" = "$sub_uid:$sub_gid 600 $sub_uid:$sub_gid 600 $uid:$gid 644 " ]
	t $? "the copy keeps the owners: the sandbox's root's files are subordinate id $sub_uid's, the user's its own ($got)"
	[ -L "$sd/upper/rd/shadow" ] && [ "$(readlink "$sd/upper/rd/shadow")" = /etc/shadow ] &&
		[ -L "$sd/workspace/rd/shadow" ] && ! grep -rqs "^root:" "$sd"
	t $? "a symlink to /etc/shadow planted in the upper and the workspace arrives as a symlink, never a copy of its target"
	r1=$(mk --user root --image "$snap")
	got=$(ts exec --user root "$r1" -- sh -c 'stat -c "%u %g %a" /rd/e/f /home/user/rd/e/f /home/user/mine && cat /rd/e/f /home/user/rd/e/f && readlink /rd/shadow' 2>&1 | tr '\n' ' ')
	[ "$got" = "0 0 600 0 0 600 1000 1000 644 secret secret /etc/shadow " ]
	t $? "restored with --user root: the same owners inside ($got)"
	r2=$(mk --image "$snap")
	got=$(ts exec "$r2" -- sh -c 'stat -c "%u %g %a" /home/user/rd/e/f /home/user/mine && cat /home/user/rd/e/f && readlink /home/user/rd/shadow' 2>&1 | tr '\n' ' ')
	[ "$got" = "1000 1000 600 1000 1000 644 secret /etc/shadow " ]
	t $? "restored into one id (no --user root): the workspace arrives as the user's ($got)"
	[ -s "$stage/err" ] && sed 's/^/# /' "$stage/err" | head -20

	# direct calls: maps of ids the user does not own are refused before any copy
	mkdir -m 755 "$stage/cs" "$stage/cs/d" && echo x >"$stage/cs/d/f" && chown -R "$user:" "$stage/cs"
	mkdir -m 755 "$stage/cd" && chown "$user:" "$stage/cd"
	cp_as_user() { as_user "$stage/toren-sandbox-helper" --copy-tree "$@" 3<"$stage/cs" 4<"$stage/cd" >"$stage/out" 2>"$stage/err"; }
	own=(--uid-map "0 $sub_uid 1000" --uid-map "1000 $uid 1" --gid-map "0 $sub_gid 1000" --gid-map "1000 $gid 1" --newidmap)
	cp_as_user --uid-map "0 0 1" --gid-map "0 $gid 1"
	st=$?
	[ $st = 125 ] && grep -q "host's root\|only your own uid" "$stage/err" && [ -z "$(ls -A "$stage/cd")" ]
	t $? "--copy-tree with a map of the host's root is refused, nothing copied (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	cp_as_user --uid-map "0 $((sub_uid + sub_count)) 65536" --gid-map "0 $((sub_gid + sub_count)) 65536" --newidmap
	st=$?
	[ $st = 125 ] && [ -z "$(ls -A "$stage/cd")" ]
	t $? "--copy-tree with subordinate ids that are not the user's is refused, nothing copied (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	cp_as_user "${own[@]}" --owner 5000:5000
	st=$?
	[ $st = 125 ] && grep -q "not mapped" "$stage/err" && [ -z "$(ls -A "$stage/cd")" ]
	t $? "--copy-tree --owner with an id the maps do not map is refused (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	# a file of the host's root in the tree: the namespace's root cannot read it
	mkdir -m 755 "$stage/cs/r" && echo host-secret >"$stage/cs/r/p" && chmod 600 "$stage/cs/r/p" &&
		chown "$user:" "$stage/cs/r"
	cp_as_user "${own[@]}"
	st=$?
	[ $st = 13 ] && grep -q "Permission denied" "$stage/err" && ! grep -rqs host-secret "$stage/cd"
	t $? "--copy-tree with the user's own maps cannot read a file of the host's root (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	rm -rf "$stage/cs/r" "$stage/cd"/* && cp_as_user "${own[@]}"
	st=$?
	[ $st = 0 ] && [ "$(cat "$stage/cd/d/f")" = x ] && [ "$(stat -c %u:%g "$stage/cd/d/f")" = "$uid:$gid" ]
	t $? "control: --copy-tree with the user's own maps copies, keeping the user's owner (status $st: $(cat "$stage/out" "$stage/err" | head -c 120))"

	# --scan-protected through the setuid helper: a directory of 0700 of the sandbox's root
	# (a subordinate id), which the user cannot read, is walked as root of the user's maps
	mkdir -m 755 "$stage/ws" && chown "$user:" "$stage/ws" && mkdir -m 700 "$stage/ws/e" &&
		echo s >"$stage/ws/e/.env" && echo x >"$stage/ws/e/f" && chown -R "$sub_uid:$sub_gid" "$stage/ws/e"
	as_user ls "$stage/ws/e" >/dev/null 2>&1
	t $([ $? != 0 ] && echo 0 || echo 1) "control: the user cannot read the sandbox root's directory of 0700 itself"
	scan_as_user() { : >"$stage/paths"; as_user "$stage/toren-sandbox-helper" --scan-protected --max-entries 100 \
		--pattern .env "$@" 3<"$stage/ws" 4>"$stage/paths" >"$stage/out" 2>"$stage/err"; }
	scan_as_user "${own[@]}"
	st=$?
	[ $st = 0 ] && [ "$(tr '\0' '|' <"$stage/paths")" = "e/.env|" ] && [ "$(cat "$stage/out")" = "paths 1" ]
	t $? "--scan-protected with the user's own maps finds the .env in it (status $st: $(tr '\0' '|' <"$stage/paths") $(cat "$stage/out" "$stage/err" | head -c 160))"
	scan_as_user --uid-map "0 0 1" --gid-map "0 $gid 1"
	st=$?
	[ $st = 125 ] && grep -q "host's root\|only your own uid" "$stage/err" && [ ! -s "$stage/paths" ]
	t $? "--scan-protected with a map of the host's root is refused, nothing scanned (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	mkdir -m 700 "$stage/ws/r" && echo h >"$stage/ws/r/.env"
	scan_as_user "${own[@]}"
	st=$?
	[ $st = 13 ] && grep -q "open .r.: Permission denied" "$stage/err" && [ ! -s "$stage/paths" ]
	t $? "--scan-protected fails closed on a directory of the host's root (status $st: $(head -c 160 "$stage/err" | tr "\n" " "))"
	rm -rf "$stage/ws/r"

	# end to end: the sandbox's root makes one, and the sandbox starts again with the
	# protected file in it read-only (the start's scan goes through the setuid helper)
	ts exec --user root "$srcsb" -- sh -c 'mkdir -m 700 /home/user/rd/p && echo s > /home/user/rd/p/.env' 2>>"$stage/err" &&
		ts stop "$srcsb" >/dev/null 2>>"$stage/err" && ts start "$srcsb" >/dev/null 2>"$stage/err"
	t $? "a --user root sandbox whose root made a directory of 0700 starts again ($(head -c 200 "$stage/err"))"
	got=$(ts exec --user root "$srcsb" -- sh -c 'echo w >> /home/user/rd/p/.env; cat /home/user/rd/p/.env' 2>&1 | tr '\n' ' ')
	case $got in *"Read-only file system"*" s ") t 0 "and the .env in it is read-only inside ($got)";;
		*) t 1 "the .env in the root-only directory is read-only inside (got '$got')";; esac
fi
echo "1..$n"
[ $failed = 0 ]
