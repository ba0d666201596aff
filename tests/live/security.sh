#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The security yardstick, live (docs: security-cases.md §B). Runs tests/probe inside
# `toren-sandbox run`, turns its `YARD` lines into TAP, and then re-checks the host:
# canaries, protected files, runtime binaries, mounts and processes, so a probe that
# wrongly reports PASS is caught on this side.
#
# env: TS_CLI      the CLI (required)
#      TS_PROBE    the static probe binary (required)
#      TS_HELPER, TS_RUNTIME_BINS  more binaries whose hash must not change
#      TS_TESTS_MUST_WORK=1        a sandbox that cannot start fails instead of skipping
#      TOREN_SANDBOX_ROOT, TMPDIR  honoured
# Every external command is bounded by `timeout`; everything is undone in the trap.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
[ -n "${TS_PROBE:-}" ] && [ -x "$TS_PROBE" ] || tap_skip_all "TS_PROBE is not set or not executable"
for tool in timeout python3 sha256sum pgrep find stat od; do
	command -v "$tool" >/dev/null || tap_skip_all "$tool is missing"
done
PY=$(command -v python3)

T() { timeout -k 5 "$@"; }
rand() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }
sha() { T 60 sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }
mounts() { wc -l </proc/self/mountinfo; }
maps() { tr -s ' \n' ' ,' <"/proc/self/$1" | sed 's/^ //; s/,$//'; }

mounts_before=$(mounts)
work=$(mktemp -d "${TMPDIR:-/tmp}/yard.XXXXXX") || exit 1
chmod 755 "$work"
ws=$work/ws canary=$work/canary
mark="yard-$(rand)"
host_root=0
if [ "$(id -u)" = 0 ] && grep -Eq '^ +0 +0 +4294967295$' /proc/self/uid_map; then
	host_root=1
fi

canary_pid= listener_pid= lower= prop= shm_name= ipc_ids=()
cleanup() {
	local p
	[ -n "$canary_pid" ] && kill "$canary_pid" 2>/dev/null
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
	# whatever survived a sandbox carries our random marker; end exactly those pids
	for p in $(pgrep -f "$mark" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	if [ -n "$prop" ]; then
		T 10 umount "$prop" 2>/dev/null
		rmdir "$prop" 2>/dev/null
	fi
	[ -n "$lower" ] && rm -f "$lower"
	[ -n "$shm_name" ] && rm -f "/dev/shm/$shm_name"
	for p in "${ipc_ids[@]}"; do T 10 ipcrm $p 2>/dev/null; done
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- canaries -------------------------------------------------------------------
mkdir -p "$ws/sub" "$ws/cfg" "$canary/watched"
head -c 48 /dev/urandom | base64 >"$canary/secret"
head -c 48 /dev/urandom | base64 >"$canary/writable"
chmod 666 "$canary/writable"
echo decoy >"$canary/.env" # a protected name, reachable only by following a symlink
canary_sums=$(cd "$canary" && T 60 sha256sum secret writable .env)
canary_list=$(cd "$canary" && ls -lAR --time-style=+%s . | sha256sum)

sleep "86399.$RANDOM" </dev/null >/dev/null 2>&1 &
canary_pid=$!
echo "$canary_pid" >"$ws/yard-canary.pid"

secret() { printf 'yardcanary%s' "$(rand)"; }
ssh_sock=$work/ssh-agent.sock
abs="yard-canary-$(rand)"
cat >"$work/listen.py" <<'EOF'
# Host canary listeners: TCP 127.0.0.1:P and [::1]:P, abstract @NAME, and a pathname
# socket standing in for $SSH_AUTH_SOCK. Any accepted connection is logged.
import os, select, socket, sys, time
log, portfile, abstract, sockpath, secs = sys.argv[1:6]
deadline = time.time() + float(secs)
for _ in range(50):
    s4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s4.bind(("127.0.0.1", 0))
    port = s4.getsockname()[1]
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        s6.bind(("::1", port))
        break
    except OSError:
        s4.close(); s6.close()
names = {}
for s, name in ((s4, "tcp4"), (s6, "tcp6")):
    s.listen(16); names[s] = name
su = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
su.bind("\0" + abstract); su.listen(16); names[su] = "abstract"
sp = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sp.bind(sockpath); sp.listen(16); names[sp] = "ssh-agent"
with open(portfile + ".tmp", "w") as f:
    f.write(str(port))
os.rename(portfile + ".tmp", portfile)
while time.time() < deadline:
    r, _, _ = select.select(list(names), [], [], 1)
    for s in r:
        c, _ = s.accept()
        with open(log, "a") as f:
            f.write("%s connected\n" % names[s])
        c.close()
EOF
: >"$work/listen.log"
"$PY" "$work/listen.py" "$work/listen.log" "$work/port" "$abs" "$ssh_sock" 3600 \
	</dev/null >/dev/null 2>"$work/listen.err" &
listener_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port" 2>/dev/null)
[ -n "$port" ] || tap_skip_all "the canary listeners did not start: $(head -c 200 "$work/listen.err")"

shm_name="yard-canary-$(rand)"
echo canary >"/dev/shm/$shm_name"
ipc_key() { T 10 ipcs "$1" | awk -v id="$2" '$2 == id { print $1 }'; }
ipc_args=()
if command -v ipcmk >/dev/null && command -v ipcs >/dev/null; then
	id=$(T 10 ipcmk -M 4096 2>/dev/null | grep -o '[0-9]*$') &&
		ipc_ids+=("-m $id") && ipc_args+=(--shm-key "$(ipc_key -m "$id")")
	id=$(T 10 ipcmk -S 1 2>/dev/null | grep -o '[0-9]*$') &&
		ipc_ids+=("-s $id") && ipc_args+=(--sem-key "$(ipc_key -s "$id")")
	id=$(T 10 ipcmk -Q 2>/dev/null | grep -o '[0-9]*$') &&
		ipc_ids+=("-q $id") && ipc_args+=(--msg-key "$(ipc_key -q "$id")")
fi

# The runtime's own environment carries secrets and injection attempts (EV-01, RT-06).
printf 'touch %q\n' "$work/bash_env_sourced" >"$work/bash_env"
canary_env=(YARD_CANARY="$(secret)" AWS_SECRET_ACCESS_KEY="$(secret)" GITHUB_TOKEN="$(secret)"
	SSH_AUTH_SOCK="$ssh_sock" LD_PRELOAD=/nonexistent.so BASH_ENV="$work/bash_env"
	PROMPT_COMMAND="touch $work/prompt_command_ran")

# Protected files with known hashes (PP); symlinks planted at protected names (FS-09).
pp_names=(.env id_rsa key.pem sub/.npmrc .git-credentials)
declare -A pp_hash=()
pp_args=()
for n in "${pp_names[@]}"; do
	printf 'yard-secret %s %s\n' "$n" "$(rand)" >"$ws/$n"
	pp_hash[$n]=$(sha "$ws/$n")
	pp_args+=(--pp "$n=${pp_hash[$n]}")
done
ln -s "$canary/writable" "$ws/id_ed25519"
ln -s ../../../../../../../../proc/sys/kernel/core_pattern "$ws/cfg/.env"
ln -s .. "$ws/id_ed25519.pub"
ln -s "$work" "$ws/escape"
symlink_args=(--symlink id_ed25519 --symlink id_ed25519.pub --symlink cfg/.env --symlink escape)
cp "$TS_PROBE" "$ws/probe"
chmod 755 "$ws/probe"

extra_args=()
if [ "$host_root" = 1 ]; then
	# DV-03: a device node the runtime did not make (/dev/null's numbers: harmless)
	mknod "$ws/yard-devnode" c 1 3 && extra_args+=(--devnode yard-devnode)
	# FS-02: a file the sandbox sees through the host /usr
	lower=/usr/local/share/yard-lower.$(rand)
	if mkdir -p /usr/local/share && echo lower >"$lower"; then
		lower_hash=$(sha "$lower")
		extra_args+=(--lower-file "$lower=$lower_hash")
	else
		lower=
	fi
	# Root never gets mapped: hand the workspace to the sandbox user's host id.
	sbuid=$(T 60 "$TS_CLI" run -v -- /usr/bin/true 2>&1 | sed -n 's/.*user is host uid \([0-9]*\).*/\1/p')
	[ -n "$sbuid" ] && chown -hR "$sbuid:$sbuid" "$ws"
fi
chmod 777 "$ws" "$ws/sub" "$ws/cfg"
for n in "${pp_names[@]}"; do chmod 666 "$ws/$n"; done

bins=()
declare -A bin_hash=()
for b in "$TS_CLI" "${TS_HELPER:-}" "$(dirname "$TS_CLI")/toren-sandbox-helper" \
	"$(dirname "$TS_CLI")/toren-sandbox-init" ${TS_RUNTIME_BINS:-}; do
	[ -f "$b" ] && [ -z "${bin_hash[$b]:-}" ] || continue
	bins+=("$b")
	bin_hash[$b]=$(sha "$b")
done

real_home=$(getent passwd "$(id -un)" 2>/dev/null | cut -d: -f6)
host_hostname=$(hostname)
state_dir=${TOREN_SANDBOX_ROOT:-${real_home:-/nonexistent}/.toren/sandboxes}
probe_common=(--marker "$mark" --host-uid "$(id -u)" --parent-uid-map "$(maps uid_map)"
	--parent-gid-map "$(maps gid_map)" --host-hostname "$host_hostname"
	--host-user "$(id -un)" --canary-pid "$canary_pid" --canary-dir "$canary"
	--state-dir "$state_dir" --ssh-sock "$ssh_sock" --shm-name "$shm_name"
	--host-devpts-dev "$(stat -c %d /dev/pts)")
[ -n "$real_home" ] && [ "$real_home" != / ] && probe_common+=(--host-home "$real_home")

# sb OUT SECONDS CLI-ARGS...: one sandbox run with the canary environment. stdout and
# stderr are pipes (what RT-01 expects to find), collected into OUT and OUT.err.
sb() {
	local out=$1 secs=$2
	shift 2
	{ { T "$secs" env "${canary_env[@]}" "$TS_CLI" run "$@" </dev/null 2>&1 1>&3 3>&-
		echo $? >"$out.rc"; } | cat >"$out.err"; } 3>&1 | cat >"$out"
	return "$(cat "$out.rc")"
}
wait_file() { for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# ---- preflight --------------------------------------------------------------------
sb "$work/pre" 60 --workspace "$ws" -- /usr/bin/true
rc=$?
if [ "$rc" != 0 ]; then
	tap_skip_all "the sandbox cannot start (exit $rc): $(head -c 300 "$work/pre.err" | tr '\n' ' ')"
fi
tap_ok "a sandbox starts and \`true\` exits 0 (control)"

# ---- the probe, all cases ----------------------------------------------------------
# RT-08 leaves daemons behind (one keeping stdout open), so it gets a run of its own.
mapfile -t all_ids < <(T 10 "$TS_PROBE" --list | grep -vx RT-08)
sb "$work/main" 600 --workspace "$ws" --env YARD_PASSED=ok -- /home/user/probe \
	"${probe_common[@]}" --port "$port" --abstract "$abs" "${pp_args[@]}" "${symlink_args[@]}" \
	--env-allow YARD_PASSED=ok "${ipc_args[@]}" "${extra_args[@]}" "${all_ids[@]}"
rc=$?
case $rc in
0 | 1) tap_ok "the probe ran to completion in one sandbox (exit $rc)" ;;
*) tap_not_ok "the probe run ended with exit $rc"; tap_diag_file "$work/main.err" ;;
esac
tap_yard "$work/main" "" "${all_ids[@]}"

# ---- separate runs: cases that need the host's side of a conversation ----------------
# NS-02 second half: kill(-1) only once the pid namespace proved to be the sandbox's own.
if [ "${YARD[NS-01]:-}" = PASS ]; then
	sb "$work/killall" 60 --workspace "$ws" -- /home/user/probe "${probe_common[@]}" --kill-all
	tap_yard "$work/killall" "" NS-02-killall
	kill -0 "$canary_pid" 2>/dev/null
	tap_result $? "NS-02 host: the canary process survived kill(-1, SIGKILL) inside"
	kill -0 "$listener_pid" 2>/dev/null
	tap_result $? "NS-02 host: the canary listeners survived kill(-1, SIGKILL) inside"
else
	tap_skip "NS-02-killall" "NS-01 did not pass: kill(-1) is not run without an own pid namespace"
fi

# NW-08 reverse: the host tries an abstract socket bound inside.
rev="yard-rev-$(rand)"
rm -f "$ws/yard-nw08.ready" "$ws/yard-nw08.done"
sb "$work/nw08" 60 --workspace "$ws" -- /home/user/probe "${probe_common[@]}" \
	--abstract "$abs" --abstract-rev "$rev" NW-08 &
bg=$!
if wait_file "$ws/yard-nw08.ready" 30; then
	res=$(T 10 "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect("\0" + sys.argv[1]); print("connected")
except ConnectionRefusedError:
    print("refused")
except Exception as e:
    print("error " + type(e).__name__)' "$rev")
	touch "$ws/yard-nw08.done"
	tap_is "$res" refused "NW-08 host: connecting to an abstract socket bound inside is refused"
else
	touch "$ws/yard-nw08.done"
	tap_not_ok "NW-08 host: the probe never bound its abstract socket"
fi
wait "$bg"
tap_yard "$work/nw08" "reverse: " NW-08

# NS-09 host half: a host mount made after start must not propagate inside (root only).
if [ "$host_root" = 1 ]; then
	prop=/usr/local/share/yard-prop.$(rand)
	mkdir -p "$prop"
	rm -f "$ws/yard-prop.ready" "$ws/yard-prop.go"
	sb "$work/prop" 60 --workspace "$ws" -- /home/user/probe "${probe_common[@]}" --prop-check "$prop" &
	bg=$!
	if wait_file "$ws/yard-prop.ready" 30; then
		T 10 mount -t tmpfs yard-prop "$prop" && touch "$prop/yard-prop-marker"
	fi
	touch "$ws/yard-prop.go"
	wait "$bg"
	T 10 umount "$prop" 2>/dev/null
	rmdir "$prop" && prop=
	rm -f "$ws/yard-prop.go"
	tap_yard "$work/prop" "" NS-09-host
else
	tap_skip "NS-09-host" "mounting on the host needs root"
fi

# RT-08: daemons that setsid, setpgid or keep stdout open end with the sandbox.
start=$(date +%s)
sb "$work/rt08" 60 --workspace "$ws" -- /home/user/probe "${probe_common[@]}" RT-08
rc=$?
tap_yard "$work/rt08" "" RT-08
tap_is "$rc" 0 "RT-08 the run ends when the command exits, though escapees hold its stdout"
tap_result $(($(date +%s) - start > 30)) "RT-08 the run ends within 30 s"
left=
for _ in $(seq 50); do
	left=$(pgrep -f "$mark-" 2>/dev/null | tr '\n' ' ')
	[ -z "$left" ] && break
	sleep 0.1
done
tap_is "$left" "" "RT-08 host: no escapee (setsid, setpgid, nohup) outlives the sandbox"

# RT-06: argv reaches the command verbatim (a second `--`, globs, `$`, empty args).
sb "$work/argv" 60 --workspace "$ws" -- /home/user/probe --argv-check -c 'x;id' '$HOME' '*' ' a b ' '' -- - '\'
tap_yard "$work/argv" "" RT-06

# FS-08: a file size limit set on the CLI reaches the command as EFBIG.
T 120 bash -c 'ulimit -f 16384 && exec "$@"' _ env "${canary_env[@]}" "$TS_CLI" run --workspace "$ws" \
	-- /home/user/probe "${probe_common[@]}" FS-08 2>"$work/fsize.err" </dev/null | cat >"$work/fsize"
tap_yard "$work/fsize" "ulimit -f: " FS-08

# PP-12, next start: the .env created during the main run is protected now.
if [ -f "$ws/yard-pp12/.env" ] && [ ! -L "$ws/yard-pp12/.env" ]; then
	h=$(sha "$ws/yard-pp12/.env")
	sb "$work/pp12" 60 --workspace "$ws" -- /home/user/probe "${probe_common[@]}" \
		--pp "yard-pp12/.env=$h" PP-02
	tap_yard "$work/pp12" "PP-12 next start: " PP-02
	tap_is "$(sha "$ws/yard-pp12/.env")" "$h" "PP-12 host: the new protected file is unchanged"
else
	tap_not_ok "PP-12 next start: yard-pp12/.env was not created by the main run"
fi

# The terminal cases under a host pty, without and with -t. After the run the harness
# looks into the pty's input queue: TIOCSTI that got through would have left bytes there.
cat >"$work/ptyrun.py" <<'EOF'
import fcntl, os, pty, select, struct, sys, termios, time
out, secs, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
m, s = pty.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(s, fd)
    os.closerange(3, 1024)
    os.execvp(cmd[0], cmd)
data, status, quiet_since = bytearray(), None, None
deadline = time.time() + secs
while True:
    r, _, _ = select.select([m], [], [], 0.1)
    if r:
        try:
            data += os.read(m, 65536)
        except OSError:
            pass
    if status is None:
        w, st = os.waitpid(pid, os.WNOHANG)
        if w:
            status, quiet_since = st, time.time()
        elif time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            status, quiet_since = 124 << 8, time.time()
    elif r:
        quiet_since = time.time()
    elif time.time() - quiet_since > 0.5:
        break
a = termios.tcgetattr(s)
a[3] &= ~termios.ICANON
termios.tcsetattr(s, termios.TCSANOW, a)
inq = struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD, b"\0" * 4))[0]
open(out, "wb").write(bytes(data).replace(b"\r", b""))
open(out + ".inq", "w").write(str(inq))
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
EOF
tt_ids=(TT-01 TT-02 TT-03 TT-04 DV-04 RT-01)
for tflag in "" -t; do
	label="pty${tflag:+ $tflag}: "
	T 120 "$PY" "$work/ptyrun.py" "$work/tty$tflag" 90 env "${canary_env[@]}" "$TS_CLI" run \
		$tflag --workspace "$ws" -- /home/user/probe "${probe_common[@]}" "${tt_ids[@]}"
	rc=$?
	tap_yard "$work/tty$tflag" "$label" "${tt_ids[@]}"
	inq=$(cat "$work/tty$tflag.inq" 2>/dev/null)
	tap_is "${inq:-?}" 0 "${label}TT-01 host: nothing was injected into the host pty input queue (exit $rc)"
done

# --user root: the same promises hold for the sandbox's root (needs subordinate ids).
sb "$work/rootchk" 60 --workspace "$ws" --user root -- /usr/bin/true
rc=$?
if [ "$rc" = 0 ]; then
	root_ids=(SC-01 SC-02 SC-03 SC-04 SC-05 SC-06 SC-07 SC-08 SC-09 SC-10 SC-11 SC-12 SC-14 SC-15
		SC-16 SC-17 NS-03 NS-04 NS-05 NS-07 NS-08 NS-11 NS-12 NS-14 DV-02 NW-06 NW-07
		PP-02 PP-03 PP-04 PP-05 PP-06 PP-10)
	sb "$work/asroot" 300 --workspace "$ws" --user root -- /home/user/probe "${probe_common[@]}" \
		--expect-uid 0 "${pp_args[@]}" "${root_ids[@]}"
	tap_yard "$work/asroot" "root: " "${root_ids[@]}"
else
	tap_skip "root: --user root cases" "--user root does not start here (exit $rc): $(head -c 200 "$work/rootchk.err" | tr '\n' ' ')"
fi

# ---- end-to-end promises of `run` ----------------------------------------------------
sb "$work/e1" 60 --workspace "$ws" -- /usr/bin/sh -c 'exit 3'
tap_is $? 3 "exit status passes through (exit 3)"
sb "$work/e2" 60 --workspace "$ws" -- /usr/bin/sh -c 'kill -TERM $$'
tap_is $? 143 "death by SIGTERM gives 143"

n=$RANDOM$RANDOM
sleep "100.$n" </dev/null >/dev/null 2>&1 &
ctl=$!
pgrep -f "sleep 100.$n" >/dev/null
tap_result $? "pgrep finds a process by its argv marker (control)"
kill "$ctl" 2>/dev/null
wait "$ctl" 2>/dev/null
n=$RANDOM$RANDOM
start=$(date +%s)
sb "$work/to" 60 --workspace "$ws" --timeout 1 -- /usr/bin/sh -c "sleep 100.$n & sleep 100.$n"
tap_is $? 124 "--timeout 1 exits 124"
tap_result $(($(date +%s) - start > 30)) "--timeout 1 fires within 30 s"
left=1
for _ in $(seq 30); do pgrep -f "sleep 100.$n" >/dev/null || { left=0; break; }; sleep 0.1; done
tap_result $left "--timeout leaves no \`sleep 100.$n\` on the host"

sb "$work/zombies" 120 --workspace "$ws" -- /usr/bin/sh -c '
i=0
while [ $i -lt 200 ]; do ( /usr/bin/sh -c "exit 0" & ); i=$((i + 1)); done
sleep 1
z=0
for f in /proc/[0-9]*/status; do grep -q "^State:.Z" "$f" 2>/dev/null && z=$((z + 1)); done
echo "orphans=$i zombies=$z"'
tap_is "$(cat "$work/zombies")" "orphans=200 zombies=0" "200 double-forked orphans leave no zombie after 1 s"

hash_count() {
	"$PY" -c 'import hashlib, sys
h, n = hashlib.sha256(), 0
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b:
        break
    h.update(b); n += len(b)
print(n, h.hexdigest())'
}
want=$(T 120 "$TS_PROBE" --emit 104857600 | hash_count)
got=$( (T 300 env "${canary_env[@]}" "$TS_CLI" run --workspace "$ws" -- /home/user/probe --emit 104857600 \
	2>"$work/emit.err" </dev/null; echo $? >"$work/emit.rc") | hash_count)
tap_is "$(cat "$work/emit.rc")" 0 "100 MB of stdout: the run exits 0"
tap_is "$got" "$want" "100 MB of stdout arrive intact (byte count and sha256)"

# Write everywhere it can; then nothing new may exist outside the workspace.
token=$(rand)
touch "$work/stamp"
sleep 1
sb "$work/we" 300 --workspace "$ws" -- /home/user/probe --write-everywhere "$token"
tap_yard "$work/we" "write-everywhere: " WE
tap_diag "directories the sandbox could write: $(grep '^WE /' "$work/we" | cut -c4- | tr '\n' ' ')"
outside=$(T 600 find / \( -path /proc -o -path /sys -o -path "$ws" \) -prune -o \
	-name ".yard-we-$token" -print 2>/dev/null)
tap_is "$outside" "" "write-everywhere: no file appeared on the host outside the workspace"
while IFS= read -r f; do [ -n "$f" ] && rm -f "$f"; done <<<"$outside"
newer=$(T 300 find /usr /etc -xdev -newer "$work/stamp" 2>/dev/null | grep -v "^/usr/local/share/yard-" | head -20)
tap_is "$newer" "" "write-everywhere: nothing under the host /usr or /etc changed"

# A run without --workspace leaves no sandbox directory behind.
fresh_root=${TOREN_SANDBOX_ROOT:-$work/state}
mkdir -p -m 700 "$fresh_root"
# oneshot/ holds the runs' claims: the directory stays, a claim must not
leftovers() {
	{ find "$fresh_root" -mindepth 1 -maxdepth 1 -type d ! -name images ! -name cache \
		! -name oneshot; find "$fresh_root/oneshot" -mindepth 1; } 2>/dev/null | sort
}
before=$(leftovers)
TOREN_SANDBOX_ROOT=$fresh_root sb "$work/fresh" 60 -- /usr/bin/sh -c 'echo x >/home/user/f'
tap_is $? 0 "a run without --workspace exits 0 (control)"
tap_is "$(leftovers)" "$before" "a run without --workspace leaves no sandbox directory in \$TOREN_SANDBOX_ROOT"

# ---- host checks ---------------------------------------------------------------------
tap_is "$(cd "$canary" && T 60 sha256sum secret writable .env)" "$canary_sums" \
	"host: the canary files are unchanged (also the target of the planted symlink)"
tap_is "$(cd "$canary" && ls -lAR --time-style=+%s . | sha256sum)" "$canary_list" \
	"host: nothing was added to or removed from the canary directory"
alive=1
kill -0 "$canary_pid" 2>/dev/null && grep -q sleep "/proc/$canary_pid/cmdline" 2>/dev/null && alive=0
tap_result $alive "host: the canary process is alive"
kill -0 "$listener_pid" 2>/dev/null
tap_result $? "host: the canary listeners are alive"
tap_is "$(cat "$work/listen.log")" "" "host: no connection reached the loopback, abstract or ssh-agent canaries"
for n in "${pp_names[@]}"; do
	st=1
	[ -f "$ws/$n" ] && [ ! -L "$ws/$n" ] && [ "$(sha "$ws/$n")" = "${pp_hash[$n]}" ] && st=0
	tap_result $st "host: protected file $n is unchanged"
done
if [ -n "$lower" ]; then
	tap_is "$(sha "$lower")" "$lower_hash" "host: FS-02 the lower-layer file is unchanged"
fi
for b in "${bins[@]}"; do
	tap_is "$(sha "$b")" "${bin_hash[$b]}" "host: runtime binary $(basename "$b") is unchanged"
done

# FS-05 audit: setuid/setgid bits are allowed on the sandbox user's own files, never for
# host root; file capabilities must carry a non-root rootid (v3), never be v2 (host-wide).
# Host root as this shell sees it: 0 in the initial namespace; under `unshare -r` it is
# not mapped here and shows as the overflow id.
host0() {
	local id
	id=$(awk '$2 <= 0 && 0 < $2 + $3 { print $1 - $2 }' "/proc/self/$1_map")
	[ -n "$id" ] && echo "$id" || cat "/proc/sys/kernel/overflow$1" 2>/dev/null || echo 65534
}
suid=$(T 60 find "$ws" -xdev -perm /6000 -printf '%U:%G:%m %p\n' 2>/dev/null)
tap_diag "setuid/setgid files in the workspace: ${suid:-none}"
bad=$(printf '%s\n' "$suid" | awk -F'[: ]' -v u="$(host0 uid)" -v g="$(host0 gid)" \
	'$1 == u || $2 == g' | grep -v '^$')
tap_is "$bad" "" "host: no setuid/setgid file in the workspace belongs to host root"
caps=$(T 60 "$PY" - "$ws" <<'EOF'
import os, struct, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        try:
            v = os.getxattr(p, "security.capability", follow_symlinks=False)
        except OSError:
            continue
        magic = struct.unpack("<I", v[:4])[0]
        if magic >> 24 != 3 or len(v) < 24:
            print("%s: revision %d file capability" % (p, magic >> 24))
        elif struct.unpack("<I", v[20:24])[0] == 0:
            print("%s: rootid 0" % p)
EOF
)
tap_is "$caps" "" "host: no file capability in the workspace is valid for host root"
devs=$(T 60 find "$ws" -xdev \( -type c -o -type b \) ! -path "$ws/yard-devnode" -printf '%p %Hr:%Lr\n' 2>/dev/null | grep -v ' 0:0$')
tap_is "$devs" "" "host: no device node was created in the workspace"

tap_is "$(mounts)" "$mounts_before" "host: the mount count is unchanged"
left=
for _ in $(seq 50); do
	left=$(pgrep -f "$mark" 2>/dev/null | tr '\n' ' ')
	[ -z "$left" ] && break
	sleep 0.1
done
tap_is "$left" "" "host: no sandbox process (probe or RT-08 escapee) is left"
tap_result $([ ! -e "$work/bash_env_sourced" ] && [ ! -e "$work/prompt_command_ran" ]; echo $?) \
	"host: BASH_ENV and PROMPT_COMMAND given to the runtime never ran"
tap_is "$(hostname)" "$host_hostname" "host: the hostname is unchanged"
tap_is "$(grep -c ' yard: ' /proc/keys 2>/dev/null)" 0 "host: no key named yard in the host keyring"
tap_is "$(cat "/dev/shm/$shm_name" 2>/dev/null)" canary "host: the /dev/shm canary is intact"

tap_done
