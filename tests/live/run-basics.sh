#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `toren-sandbox run`: the promises of the CLI, end to end, in the current mode
# (see modes.sh). TAP on stdout.
set -u
cli=$TS_CLI
n=0 failed=0
t() { # t STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
is() { # is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then t 0 "$3"; else t 1 "$3 (got '$1', want '$2')"; fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
tmp=$(mktemp -d /tmp/ts-basics-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
run() { timeout 60 "$cli" run "$@"; }

# exit status and signals
run -- sh -c 'exit 7'; is $? 7 "exit status passes through"
run -- true; is $? 0 "true exits 0 (control)"
run -- sh -c 'kill -KILL $$'; is $? 137 "killed by SIGKILL gives 137"
run -- /nonexistent/cmd 2>/dev/null; is $? 127 "missing command gives 127"
run -- /etc 2>/dev/null; is $? 126 "non-executable gives 126"

# PID 1 takes signals only from outside the sandbox
out=$(run -- sh -c 'kill -TERM 1; kill -INT 1; kill -HUP 1; kill -KILL 1; kill -STOP 1; sleep 0.3; echo alive; grep -E "^State" /proc/1/status')
case $out in "alive"*"State:"*S*) t 0 "signals sent to PID 1 from inside are ignored";; *) t 1 "init from inside: $out";; esac
is "$(run -- sh -c 'echo $PPID; cat /proc/1/comm')" "$(printf '1\ntoren-init')" "the command is a child of init (PID 1)"
out=$(run -- sh -c 'cat /proc/1/environ 2>&1 | head -c 100; ls /proc/1/fd 2>&1 | head -3')
case $out in *"Permission denied"*) t 0 "init's environment and fds are not readable from inside (non-dumpable)";; *) t 1 "init readable: $out";; esac

# id and environment inside
out=$(run -- sh -c 'echo "$(id -u):$(id -g):$HOME:$(pwd):$USER:$LANG"')
is "$out" "1000:1000:/home/user:/home/user:user:C.UTF-8" "runs as user 1000 in /home/user"
out=$(SECRET_TOKEN=s3cret FOO=bar run --env FOO --env BAR=baz -- sh -c 'env | sort | tr "\n" " "')
case $out in *FOO=bar*BAR* | *BAR=baz*FOO=bar*) t 0 "allow-listed --env NAME and NAME=VALUE enter";; *) t 1 "allow-list: $out";; esac
case $out in *s3cret*|*SECRET_TOKEN*) t 1 "host variable leaked: $out";; *) t 0 "a host variable not allow-listed stays out";; esac
names=$(SECRET_TOKEN=x run -- sh -c 'env | cut -d= -f1 | grep -v -e "^PWD$" -e "^SHLVL$" -e "^_$" | sort | tr "\n" " "')
is "$names" "HOME LANG PATH TERM USER " "only the fixed base environment is set"
run --env 'BAD-NAME=x' -- true 2>/dev/null; is $? 2 "--env with a bad name is a usage error"

# a directory as a standard stream would be a handle outside the sandbox's root
run -- true </ 2>"$tmp/err"; is $? 125 "a directory as standard input is refused"
grep -q 'directory' "$tmp/err"; t $? "the refusal says why"

# workspace
ws=$tmp/ws; mkdir -p "$ws"; echo hello >"$ws/in.txt"
if [ "$TS_MODE" = root ]; then
	# host root is never mapped: hand the workspace to the sandbox user's host id
	sbuid=$("$cli" run -v -- true 2>&1 | sed -n 's/.*user is host uid \([0-9]*\).*/\1/p')
	chown -R "$sbuid" "$ws"
	# a root-owned workspace (a CI checkout) is bound id-mapped: writable, no warning
	out=$("$cli" run --workspace "$tmp" -- sh -c 'echo r >/home/user/root-made; stat -c %u /home/user/root-made' 2>&1)
	is "$out $(stat -c %u "$tmp/root-made" 2>/dev/null)" "1000 0" \
		"root: a root-owned workspace is writable inside, its files stay root's on the host"
fi
out=$(run --workspace "$ws" -- sh -c 'cat in.txt; echo out >out.txt')
is "$out" hello "--workspace is bound at /home/user"
is "$(cat "$ws/out.txt" 2>/dev/null)" out "files written in the workspace stay on the host"
is "$(stat -c %u "$ws/out.txt" 2>/dev/null)" "$(stat -c %u "$ws")" "workspace files belong to the workspace owner on the host"

# stdin
out=$(printf 'line1\nline2\n' | run -- sh -c 'wc -l')
is "$(echo $out)" 2 "stdin is streamed in"

# kill -9 of the CLI: the helper dies with it and the sandbox with the helper (the
# parent-death signal survives the change to the sandbox's ids, which a sandbox
# started by root makes)
pmark="ts-pdeath-$$"
"$cli" run -- bash -c "exec -a $pmark sleep 60" & cpid=$!
for _ in $(seq 1 50); do pgrep -f "^$pmark" >/dev/null && break; sleep 0.1; done
pgrep -f "^$pmark" >/dev/null; t $? "the command runs (control)"
kill -9 "$cpid"; wait "$cpid" 2>/dev/null
for _ in $(seq 1 30); do pgrep -f "^$pmark" >/dev/null || break; sleep 0.1; done
pgrep -f "^$pmark" >/dev/null; [ $? = 1 ]; t $? "kill -9 of the CLI ends the sandbox: no process left"

# timeout kills the whole tree
marker="ts-basics-$$-$RANDOM"
start=$(date +%s)
run --timeout 1 -- bash -c "sleep 300 & exec -a $marker sleep 300" 2>"$tmp/err"; st=$?
is "$st" 124 "--timeout exits 124"
grep -q 'timed out' "$tmp/err"; t $? "--timeout says so on stderr"
[ $(( $(date +%s) - start )) -lt 20 ]; t $? "--timeout fires promptly"
sleep 0.2
pgrep -f "$marker" >/dev/null; [ $? = 1 ]; t $? "no process of the timed-out tree is left on the host"

# Ctrl-C (SIGINT to the CLI) reaches the command's process group
"$cli" run -- sh -c 'trap "exit 42" INT; sleep 30 & wait' & pid=$!
sleep 1; kill -INT $pid; wait $pid; is $? 42 "SIGINT to run reaches the command"
"$cli" run -- sh -c 'trap "exit 43" TERM; sleep 30 & wait' & pid=$!
sleep 1; kill -TERM $pid; wait $pid; is $? 43 "SIGTERM to run reaches the command"

# the read-only image
run -- sh -c 'touch /etc/x' 2>/dev/null; [ $? != 0 ]; t $? "the image is not writable by user"
run -- sh -c 'touch /tmp/x && touch /var/tmp/x'; is $? 0 "/tmp and /var/tmp are writable"
out=$(run -- sh -c 'cat /etc/shadow 2>&1; ls /etc/ssh 2>/dev/null | grep -c host_key')
case $out in *"No such file"*0) t 0 "no shadow and no ssh host keys in /etc";; *) t 1 "/etc filter: $out";; esac
is "$(run -- hostname)" sandbox "hostname is the sandbox's"

# --user root: only where a root exists inside
if [ "$TS_MODE" = userns ]; then
	run --user root -- id -u 2>"$tmp/err"; is $? 125 "--user root refused with a single id"
	grep -q 'subordinate ids' "$tmp/err"; t $? "the refusal names the fix"
else
	out=$(run --user root -- sh -c 'id -u; grep CapEff /proc/self/status')
	is "$(echo $out)" "0 CapEff: 0000000000000000" "--user root runs as uid 0 without any capability"
fi

# limits
forks='import os,sys,time
n = 0
for i in range(int(sys.argv[1])):
    try:
        p = os.fork()
    except OSError:
        break
    if p == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print(n)'
out=$(run --pids 20 -- python3 -c "$forks" 60)
[ "${out:-99}" -lt 40 ] 2>/dev/null; t $? "--pids 20 caps the number of processes (started $out of 60)"
run --memory 64M -- sh -c 'x=$(head -c 300000000 /dev/zero | tr "\0" a); echo ${#x}' >/dev/null 2>&1; [ $? != 0 ]; t $? "--memory 64M stops a 300 MB allocation"
run --memory 64M -- true; is $? 0 "--memory 64M still runs a small command (control)"
run --memory 1 -- true 2>/dev/null; is $? 2 "--memory below 4M is a usage error"

# cgroup limits where delegated (root here: cgroup v1), removed afterwards
if [ "$TS_MODE" = root ]; then
	"$cli" run -v --memory 96M --pids 77 --cpus 0.5 -- sleep 3 2>"$tmp/cg" & pid=$!
	sleep 1.5
	id=$(sed -n 's/.*sandbox \([0-9a-f]*\) in.*/\1/p' "$tmp/cg")
	mem=$(find /sys/fs/cgroup/memory -maxdepth 6 -type d -name "ts-$id" 2>/dev/null | head -1)
	pids=$(find /sys/fs/cgroup/pids -maxdepth 6 -type d -name "ts-$id" 2>/dev/null | head -1)
	cpu=$(find /sys/fs/cgroup/cpu/ -maxdepth 6 -type d -name "ts-$id" 2>/dev/null | head -1)
	is "$(cat "$mem/memory.limit_in_bytes" 2>/dev/null)" $((96 << 20)) "--memory lands in the sandbox's memory cgroup"
	is "$(cat "$pids/pids.max" 2>/dev/null)" 77 "--pids lands in the sandbox's pids cgroup"
	is "$(cat "$cpu/cpu.cfs_quota_us" 2>/dev/null)" 50000 "--cpus 0.5 lands as a 50% CFS quota"
	[ "$(wc -l <"$pids/cgroup.procs" 2>/dev/null)" -ge 2 ]; t $? "the sandbox's processes are in its cgroup"
	wait $pid; is $? 0 "the limited sandbox ran"
	left=$(find /sys/fs/cgroup -maxdepth 7 -type d -name "ts-$id" 2>/dev/null | wc -l)
	is "$left" 0 "no cgroup is left after run"
	out=$(run --pids 10 -- sh -c 'cat /proc/self/cgroup | head -3; ls /sys/fs/cgroup 2>/dev/null | wc -l')
	case $out in *"pids:/"*) t 0 "the sandbox sees its own cgroup as the root (cgroup namespace)";; *) t 1 "cgroupns: $out";; esac
else
	"$cli" run -v --pids 10 -- true 2>&1 | grep -q 'RLIMIT_NPROC'; t $? "without delegated cgroups --pids falls back to RLIMIT_NPROC and says so"
	"$cli" run --cpus 1 -- true 2>&1 | grep -q 'not enforced'; t $? "--cpus without a cpu cgroup warns that it is not enforced"
fi

# --image: any directory holding a root file system
if [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static || ldd /bin/busybox 2>&1 | grep -q 'not a dynamic'; then
	img=$tmp/img; mkdir -p "$img/bin"; cp /bin/busybox "$img/bin/"; ln -s busybox "$img/bin/sh"
	out=$(run --image "$img" -- /bin/busybox sh -c 'id -u; /bin/busybox ls /usr 2>/dev/null | /bin/busybox wc -l; /bin/busybox cat /etc/passwd | /bin/busybox grep -c user')
	is "$(echo $out)" "1000 0 1" "--image runs in the given root with the identity files and without the host /usr"
	[ ! -e "$img/etc" ]; t $? "the image directory itself is left unchanged"
else
	skip "--image" "no static busybox (apt-get install busybox-static)"
fi
run --image /nonexistent -- true 2>/dev/null; is $? 125 "a missing --image fails before starting"

# bad policy files are errors naming the file and line
printf 'version: 1\nlimits:\n  pids: 10\n  memroy: 5M\n' >"$tmp/bad.yaml"
run --policy "$tmp/bad.yaml" -- true 2>"$tmp/err"; is $? 125 "a bad policy file fails"
grep -q 'bad.yaml`:4:.*memroy' "$tmp/err"; t $? "the error names file, line and key ($(head -c 200 "$tmp/err"))"
printf 'version: 1\nro_binds:\n  - src: /nonexistent-%s\n    dst: /mnt/x\n' "$$" >"$tmp/nosrc.yaml"
run --policy "$tmp/nosrc.yaml" -- true 2>"$tmp/err"; is $? 125 "a policy binding a missing source fails"
grep -q 'nosrc.yaml`:3: ro_binds source' "$tmp/err"; t $? "... naming the file and line of the entry ($(head -c 160 "$tmp/err"))"
python3 -c "print('version: 1\nenv:'); [print('  - V%d=1' % i) for i in range(1100)]" >"$tmp/manyenv.yaml"
run --policy "$tmp/manyenv.yaml" -- true 2>"$tmp/err"; is $? 125 "a policy with more than 1024 env entries fails"
grep -q 'manyenv.yaml`:1027: more than 1024 entries' "$tmp/err"; t $? "... at the entry past the limit ($(head -c 160 "$tmp/err"))"
printf 'limits:\n  pids: 5\n' >"$tmp/good.yaml"
out=$(run --policy "$tmp/good.yaml" -- python3 -c "$forks" 8)
[ "${out:-99}" -lt 8 ] 2>/dev/null; t $? "a policy file's limits apply (started $out of 8 with pids: 5)"

# --dry-run prints a command line that runs by hand
"$cli" run --dry-run -- sh -c 'echo dry-ok; exit 5' >"$tmp/dry" 2>/dev/null; is $? 0 "--dry-run exits 0"
grep -q 'toren-sandbox-helper' "$tmp/dry"; t $? "--dry-run prints the helper command line"
out=$(timeout 30 bash "$tmp/dry"); st=$?
is "$out:$st" "dry-ok:5" "the printed line runs the command in a sandbox by hand"
out=$(timeout 30 sh "$tmp/dry"); st=$?
is "$out:$st" "dry-ok:5" "... also in a POSIX sh (dash)"

# the helper never maps the id that is root in its parent namespace (NS-14): refused
# before anything is created, for a single id and inside a range
helper=$(dirname "$cli")/toren-sandbox-helper
if [ "$TS_MODE" != userns ]; then
	for map in "1000 0 1" "0 0 65536"; do
		"$helper" --tmpfs / --uid-map "$map" --gid-map "1000 $(id -g) 1" -- /bin/true 2>"$tmp/err"
		st=$?
		grep -q "would map the host's root" "$tmp/err"
		is "$st:$?" "125:0" "helper refuses uid map '$map' (host root outside): $(head -c 120 "$tmp/err")"
	done
else
	# here our uid 0 is the caller's own host uid: mapping it is allowed (control; the
	# static init binary runs on an empty root)
	"$helper" --tmpfs / --uid-map "1000 0 1" --gid-map "1000 0 1" -- \
		"$(dirname "$cli")/toren-sandbox-init" --version >/dev/null 2>"$tmp/err"
	is "$?" 0 "helper maps our namespace's 0 when it is not the host's root (control)"
fi

# nothing left behind
before=$(ls "$TOREN_SANDBOX_ROOT" | grep -Ev '^(images|cache)$' | wc -l)
run -- sh -c 'echo x > /home/user/f; sleep 0.1'
after=$(ls "$TOREN_SANDBOX_ROOT" | grep -Ev '^(images|cache)$' | wc -l)
is "$after" "$before" "the fresh sandbox directory is removed after run"
kept=$(run --keep -v -- true 2>&1 | sed -n 's/.*sandbox \([0-9a-f]*\) in.*/\1/p')
[ -n "$kept" ] && [ -d "$TOREN_SANDBOX_ROOT/$kept/workspace" ]; t $? "--keep keeps the sandbox directory"
rm -rf "${TOREN_SANDBOX_ROOT:?}/$kept"
m1=$(wc -l </proc/self/mountinfo)
run -- true
m2=$(wc -l </proc/self/mountinfo)
is "$m2" "$m1" "no mount is left in the caller's namespace"

# doctor
"$cli" doctor >"$tmp/doc" 2>&1; is $? 0 "doctor passes on this host"
grep -q '^ok   sandbox start' "$tmp/doc"; t $? "doctor starts a real sandbox"
grep -q '^ok   user namespaces' "$tmp/doc"; t $? "doctor checks user namespaces"
grep -Eq "^(ok|info) +name proxy: " "$tmp/doc"; t $? "doctor says whether the name proxy is installed"
grep -q '^ok   libcurl: libcurl.so.4 loads' "$tmp/doc"; t $? "doctor loads libcurl"
grep -q '^ok   libmicrohttpd: libmicrohttpd.so.12 loads' "$tmp/doc"; t $? "doctor loads libmicrohttpd"

# usage errors
"$cli" run 2>/dev/null; is $? 2 "run without a command is a usage error"
"$cli" run --bogus -- true 2>/dev/null; is $? 2 "an unknown option is a usage error"
"$cli" run --timeout -5 -- true 2>/dev/null; is $? 2 "a negative timeout is a usage error"
"$cli" nosuch 2>/dev/null; is $? 2 "an unknown command is a usage error"
run --workspace /nonexistent/dir -- true 2>"$tmp/err"; is $? 125 "a missing workspace fails before starting"
grep -q 'nonexistent' "$tmp/err"; t $? "the error names the workspace"

echo "1..$n"
[ $failed = 0 ]
