#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `toren-sandbox cp` against a real durable sandbox: copies in and out (files, trees,
# standard input and output), and the host-side file API cases of security-cases.md
# (FA-01, FA-04, FA-12, PP-02, PP-03 through cp) with host canaries re-checked from
# outside. TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
cli=$TS_CLI
T() { timeout -k 5 "$@"; }
ts() { T 60 "$cli" "$@"; }
sha() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ts-files-XXXXXX") || exit 1
chmod 755 "$work"
ws=$work/ws canary=$work/canary out=$work/out
id=
cleanup() {
	[ -n "$id" ] && T 60 "$cli" rm -f "$id" >/dev/null 2>&1
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$ws/sub" "$canary" "$out"
echo "SECRET=1" >"$ws/.env"
echo "KEY" >"$ws/sub/id_rsa"
echo keep >"$canary/keep"
canary_hash=$(sha "$canary/keep")
env_hash=$(sha "$ws/.env")
if [ "$(id -u)" = 0 ]; then
	# root is never mapped: hand the workspace to the sandbox user's host id
	sbuid=$(T 60 "$cli" run -v -- /usr/bin/true 2>&1 | sed -n 's/.*user is host uid \([0-9]*\).*/\1/p')
	[ -n "$sbuid" ] && chown -hR "$sbuid:$sbuid" "$ws"
fi

id=$(ts create --workspace "$ws" 2>"$work/create.err" | tail -n 1)
if [ -z "$id" ] || ! ts exec "$id" -- true >/dev/null 2>&1; then
	tap_diag_file "$work/create.err"
	tap_skip_all "no durable sandbox could be created"
fi
tap_ok "create prints the id ($id)"

# --- copy in ---
printf 'hello\n' >"$work/in.txt"
ts cp "$work/in.txt" "$id:in.txt"
tap_is "$?:$(ts exec "$id" -- cat /home/user/in.txt)" "0:hello" "cp a host file in (relative to /home/user)"
ts cp "$work/in.txt" "$id:/home/user/sub"
tap_is "$(ts exec "$id" -- cat /home/user/sub/in.txt)" hello "cp into an existing directory keeps the name"
ts cp "$work/in.txt" "$id:/tmp/new/dir/f"
tap_is "$(ts exec "$id" -- cat /tmp/new/dir/f)" hello "cp in creates missing parent directories"
printf 'piped\n' | ts cp - "$id:piped.txt"
tap_is "$(ts exec "$id" -- cat /home/user/piped.txt)" piped "cp - reads standard input"
chmod 0750 "$work/in.txt"
ts cp "$work/in.txt" "$id:mode.txt"
tap_is "$(ts exec "$id" -- stat -c %a /home/user/mode.txt)" 750 "cp in keeps the permission bits"

mkdir -p "$work/tree/d/e"
echo 1 >"$work/tree/a"
echo 2 >"$work/tree/d/e/b"
echo x >"$work/tree/.env"
ln -s /etc/passwd "$work/tree/link"
ts cp "$work/tree" "$id:/tmp/" 2>"$work/err"
st=$?
tap_is "$st:$(ts exec "$id" -- sh -c 'cat /tmp/tree/a /tmp/tree/d/e/b' | tr '\n' ' ')" "1:1 2 " \
	"cp of a host tree: the files arrive, exit 1 for what was skipped"
ts exec "$id" -- sh -c 'test ! -e /tmp/tree/link && test ! -e /tmp/tree/.env'
tap_result $? "cp in skips a symlink and a protected name in a tree"
grep -q 'symlink' "$work/err" && grep -q '.env. is protected' "$work/err"
tap_result $? "each skip is a warning naming the file"

# --- protected paths and paths that lead out (PP-02, PP-03, FA-01, FA-04) ---
ts cp "$work/in.txt" "$id:.env" 2>"$work/err"
tap_is "$?" 1 "PP-02 cp onto .env fails"
grep -q '`.env` is protected' "$work/err"
tap_result $? "PP-02 the error says the path is protected ($(head -c 200 "$work/err"))"
tap_is "$(sha "$ws/.env")" "$env_hash" "PP-02 .env on the host is unchanged"
ts cp "$work/in.txt" "$id:sub/id_rsa" 2>/dev/null
tap_is "$?:$(sha "$ws/sub/id_rsa")" "1:$(echo KEY | sha256sum | cut -d' ' -f1)" "PP-02 cp onto a protected file in a subdirectory fails"
ts cp "$work/in.txt" "$id:new.pem" 2>/dev/null
tap_is "$?:$(ts exec "$id" -- sh -c 'test -e new.pem && echo there || echo absent')" "1:absent" \
	"PP-12 a protected name is not created"
ts cp "$work/in.txt" "$id:../../etc/passwd" 2>"$work/err"
tap_is "$?" 1 "FA-01 cp to ID:../../etc/passwd fails"
grep -q '`..` is not allowed' "$work/err"
tap_result $? "FA-01 the error names the refusal"
ts cp "$id:../../../etc/passwd" "$out/p" 2>/dev/null
tap_is "$?:$(test -e "$out/p" && echo there || echo absent)" "1:absent" "FA-01 cp from ID:../../../etc/passwd fails"
ts exec "$id" -- ln -s /etc/passwd /home/user/lp
before=$(ts exec "$id" -- sha256sum /etc/passwd)
ts cp "$work/in.txt" "$id:lp" 2>"$work/err"
tap_is "$?" 1 "FA-04 cp onto a symlink fails (writes never follow links)"
tap_is "$(ts exec "$id" -- sha256sum /etc/passwd)" "$before" "FA-04 the link's target is unchanged"
ts exec "$id" -- ln -s "$canary/keep" /home/user/lc
ts cp "$work/in.txt" "$id:lc" 2>/dev/null
tap_is "$?:$(sha "$canary/keep")" "1:$canary_hash" "FA-04 a symlink to a host path: refused, the host file unchanged"

# --- copy out (FA-12) ---
ts exec "$id" -- sh -c 'mkdir -p t/s && echo a >t/a && echo b >t/s/b && chmod 755 t/a;
	ln -s /etc/passwd t/abs && ln -s ../../x t/rel && ln -s / t/root && mkfifo t/fifo'
# the sandbox cannot make a setuid file (its setid guard): the host makes this one
wsdir=$(ts inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["workspace"])')
chmod 4755 "$wsdir/t/a"
ts cp "$id:in.txt" "$out/in.txt"
tap_is "$?:$(cat "$out/in.txt" 2>/dev/null)" "0:hello" "cp a sandbox file out"
tap_is "$(ts cp "$id:in.txt" -)" hello "cp ID:PATH - writes standard output"
ts cp "$id:t" "$out" 2>"$work/err"
tap_is "$?:$(cat "$out/t/a" "$out/t/s/b" 2>/dev/null | tr '\n' ' ')" "1:a b " \
	"FA-12 cp of a sandbox tree: files arrive, exit 1 for what was skipped"
n=$(find "$out/t" -type l | wc -l)
tap_is "$n:$(test -e "$out/t/fifo" && echo fifo)" "0:" "FA-12 no symlink and no FIFO is recreated on the host"
tap_is "$(stat -c %a "$out/t/a")" 755 "FA-12 no setuid bit arrives on the host"
test ! -e "$work/x" && test ! -e "$out/x"
tap_result $? "FA-12 nothing is created outside the destination"
# a host symlink where a file will be written, and one as the destination itself
rm -f "$out/t/a"
ln -s "$canary/keep" "$out/t/a"
ts cp "$id:t" "$out" 2>/dev/null
test -f "$out/t/a" && ! test -L "$out/t/a"
tap_result $? "FA-12 a host symlink in the destination tree is replaced by the file"
tap_is "$(sha "$canary/keep")" "$canary_hash" "FA-12 ... and never written through"
ln -s "$canary" "$out/dst"
ts cp "$id:in.txt" "$out/dst" 2>"$work/err"
tap_is "$?:$(ls "$canary" | tr '\n' ' ')" "1:keep " "FA-12 a destination that is a host symlink is refused"
echo mine >"$work/hostfile" && ln -s "$work/hostfile" "$out/flink"
ts cp "$id:in.txt" "$out/flink" 2>"$work/err"
tap_is "$?:$(cat "$work/hostfile")" "1:mine" "FA-12 a destination that is a symlink to a file is refused, never written through"
grep -q "never replaces or writes through" "$work/err"; tap_result $? "... and says so: $(head -c 120 "$work/err")"
ts cp "$id:in.txt" "$out/dst/" 2>/dev/null
tap_is "$?:$(cat "$canary/in.txt" 2>/dev/null)" "0:hello" "... and DST/ copies into the directory it points to (control)"
rm -f "$canary/in.txt"

# --- archives (FA-10): cp --extract ---
mkdir -p "$work/arc"
if python3 "$here/make-archives.py" "$work/arc" "$canary"; then
	for a in evil.tar evil.tar.gz; do
		d=/tmp/ex-${a//./-}
		ts cp --extract "$work/arc/$a" "$id:$d" 2>"$work/err"
		tap_is "$?:$(ts exec "$id" -- cat "$d/good/ok.txt")" "1:ok" \
			"FA-10 $a: the good entry arrives, exit 1 for what was skipped"
		tap_is "$(ts exec "$id" -- stat -c %a "$d/good/ok.txt")" 640 "FA-10 $a: permission bits kept"
		ts exec "$id" -- sh -c "test ! -e /tmp/x && test ! -e $d/../x && test ! -e /abs && test ! -e $d/abs && test ! -e /tmp/up && test ! -e $d/up"
		tap_result $? "FA-10 $a: no entry with .. or an absolute name is written anywhere"
		ts exec "$id" -- sh -c "test ! -L $d/x && test ! -e $d/hl && test ! -e $d/dev && test ! -e $d/fifo"
		tap_result $? "FA-10 $a: no symlink, hard link, device or FIFO is created"
		tap_is "$(ts exec "$id" -- cat "$d/x/passwd" 2>/dev/null)" through-link \
			"FA-10 $a: symlink-then-file: the file lands in a plain directory x/, inside"
		tap_is "$(ts exec "$id" -- stat -c %a "$d/suid" "$d/sdir" | tr '\n' ' ')" "755 777 " \
			"FA-10 $a: no setuid, setgid or sticky bit survives"
		grep -q 'an absolute name or one with' "$work/err" && grep -q 'a hard link' "$work/err" &&
			grep -q 'a symbolic link' "$work/err" && grep -q 'not a regular file or directory' "$work/err"
		tap_result $? "FA-10 $a: every skip is a warning naming the entry"
	done
	ts cp --extract "$work/arc/evil.zip" "$id:/tmp/ex-zip" 2>"$work/err"
	tap_is "$?:$(ts exec "$id" -- cat /tmp/ex-zip/zgood/ok.txt)" "1:ok" "FA-10 zip: the good entry arrives, exit 1"
	ts exec "$id" -- sh -c 'test ! -e /tmp/zx && test ! -e /zabs && test ! -e /tmp/ex-zip/zabs'
	tap_result $? "FA-10 zip: .. and absolute entries are not written"
	tap_is "$(ts exec "$id" -- stat -c %a /tmp/ex-zip/zsuid)" 755 "FA-10 zip: no setuid bit"
	# into directories that are mount points (the workspace, /tmp) and through a symlink
	ts cp --extract "$work/arc/plain.tar" "$id:" 2>"$work/err"
	tap_is "$?:$(ts exec "$id" -- cat /home/user/pkg/a.txt 2>/dev/null)" "0:a" \
		"cp --extract into the workspace itself (ID:, a mount point): $(head -c 120 "$work/err")"
	ts cp --extract "$work/arc/plain.tar" "$id:/tmp" 2>/dev/null
	tap_is "$?:$(ts exec "$id" -- cat /tmp/pkg/a.txt 2>/dev/null)" "0:a" "cp --extract into /tmp (a tmpfs)"
	ts exec "$id" -- sh -c 'mkdir -p /tmp/real && ln -s real /tmp/sl'
	ts cp --extract "$work/arc/plain.tar" "$id:/tmp/sl/ext" 2>"$work/err"
	tap_is "$?:$(ts exec "$id" -- cat /tmp/real/ext/pkg/a.txt 2>/dev/null)" "0:a" \
		"cp --extract below a symlink to a directory, nested entries too: $(head -c 120 "$work/err")"
	ts cp --extract "$work/arc/plain.tar" "$id:/tmp/sl" 2>/dev/null
	tap_is "$?:$(ts exec "$id" -- cat /tmp/real/hello.txt 2>/dev/null)" "0:hello" \
		"cp --extract into a symlink to a directory"
	echo hi | ts cp - "$id:" 2>"$work/err"
	tap_is "$?" 1 "cp - onto the workspace directory fails"
	grep -q "it is a directory" "$work/err"; tap_result $? "... saying it is a directory: $(head -c 120 "$work/err")"
	ts cp --extract - "$id:/tmp/ex-stdin" <"$work/arc/evil.tar.gz" 2>/dev/null
	tap_is "$(ts exec "$id" -- cat /tmp/ex-stdin/good/ok.txt)" ok "cp --extract - reads the archive from standard input"
	ts cp --extract "$work/arc/junk.tar" "$id:/tmp/ex-junk" 2>"$work/err"
	tap_is "$?" 1 "cp --extract of something that is not an archive fails"
	ts exec "$id" -- test -e /tmp/ex-junk; tap_is "$?" 1 "... and creates nothing ($(head -c 120 "$work/err"))"
	ts cp --extract /dev/null "$id:/tmp/ex-null" 2>"$work/err"
	tap_is "$?:$(grep -c 'is empty' "$work/err")" "1:1" "cp --extract of empty input: not an archive"
	ts cp --extract "$work/arc" "$id:/tmp/ex-dir" 2>"$work/err"
	tap_is "$?:$(grep -c 'is a directory' "$work/err")" "1:1" "cp --extract of a directory: not an archive"
	ts cp --extract "$work/arc/empty.tar" "$id:/tmp/ex-empty"
	tap_is "$?:$(ts exec "$id" -- sh -c 'test -d /tmp/ex-empty && echo dir')" "0:dir" \
		"cp --extract of an archive without entries makes the destination"
	ts cp --extract "$work/arc/evil.tar" "$out/x" 2>/dev/null
	tap_is "$?" 2 "cp --extract to a host path: usage error"
	tap_is "$(ls "$canary" | tr '\n' ' ')" "keep " "FA-10 the host canary directory gained nothing"
else
	tap_not_ok "FA-10 make the test archives (python3 tarfile/zipfile)"
fi

# --- copy out: an entry that cannot be read is left out, not the rest of the tree ---
ts exec "$id" -- sh -c 'mkdir -p part/a part/b part/z && echo 1 > part/a/1 && echo 2 > part/z/2 && echo s > part/secret && chmod 000 part/b part/secret'
mkdir -p "$out/part-dst"
ts cp "$id:part" "$out/part-dst/" 2>"$work/err"
tap_is "$?:$(cat "$out/part-dst/part/a/1" "$out/part-dst/part/z/2" 2>/dev/null | tr '\n' ' ')" "1:1 2 " \
	"cp out of a tree with an unreadable directory and file: the rest arrives, exit 1"
grep -q 'list `part/b`: Permission denied' "$work/err" && grep -q 'read `part/secret`: Permission denied' "$work/err"
tap_result $? "... and each left-out entry is a warning"
tap_is "$(stat -c %a "$out/part-dst/part")" 755 "... and the copied directory gets its own mode"
ts exec "$id" -- chmod -R u+rwx part

# --- usage and lookup ---
ts cp "$work/in.txt" "$out/x" 2>/dev/null
tap_is "$?" 2 "neither side ID:PATH: usage error"
ts cp "$id:a" "$id:b" 2>/dev/null
tap_is "$?" 2 "both sides ID:PATH: usage error"
ts cp "$work/in.txt" "nosuch-sandbox-$$:x" 2>"$work/err"
tap_is "$?" 1 "an unknown sandbox is an error"
ts cp "$id:nonexistent" "$out/n" 2>/dev/null
tap_is "$?:$(test -e "$out/n" && echo there)" "1:" "a missing sandbox file is an error and creates nothing"

# a stopped sandbox is started, as for exec
ts stop "$id" >/dev/null 2>&1
ts cp "$id:in.txt" "$out/after-stop"
tap_is "$?:$(cat "$out/after-stop" 2>/dev/null)" "0:hello" "cp starts a stopped sandbox around its workspace"

tap_is "$(sha "$canary/keep")" "$canary_hash" "the host canary is unchanged at the end"
tap_done
