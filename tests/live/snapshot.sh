#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Snapshots (snapshot.h) through the CLI: files written, changed and deleted (a whiteout
# over the image), a directory of the image replaced by a file, a symlink, a FIFO, a
# user.* xattr and the workspace are copied; a sandbox restored from the snapshot sees
# the same tree (owners, modes, hashes, link targets, xattrs), the source is unchanged and
# its processes still run; a snapshot of a restored sandbox keeps the chain; a snapshot
# deleted while in use keeps its files until nothing uses them; a symlink planted in the
# sandbox pointing at a host file does not make the copier read or write it; a snapshot
# past its --max-size fails and leaves no directory and no record. Files the sandbox's
# root wrote in the upper and the workspace (subordinate ids in mode user, copied by the
# helper's --copy-tree) are restored as root's, and removed with the snapshot; the helper
# refuses a copy that would map the host's root. Restored into a sandbox of one id (no
# --user root), such a workspace arrives as the user's (the helper reads it, --owner),
# modes kept, setid bits dropped, links as links; the upper's files are read by mode
# through the lower layer. TAP; runs under modes.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

[ -n "${TS_CLI:-}" ] && [ -x "$TS_CLI" ] || tap_skip_all "TS_CLI is not set or not executable"
cli=$TS_CLI
root=$TOREN_SANDBOX_ROOT
tmp=$(mktemp -d /tmp/ts-snap-XXXXXX)
chmod 755 "$tmp"
cleanup() {
	[ -f "$tmp/ids" ] && xargs -r timeout 120 "$cli" rm -f --purge <"$tmp/ids" >/dev/null 2>&1
	rm_snapshots
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
ts() { timeout -k 5 120 "$cli" "$@"; }
create() { local id; id=$(ts create "$@" | tail -n 1) && echo "$id" >>"$tmp/ids" && echo "$id"; }
nsnaps() { ts snapshot ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# The tree as the sandbox sees it: type, owner, mode, size, sha256 / link target, xattrs.
listing='
import hashlib, os, stat, sys
def show(p):
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        print(p, "absent"); return
    m = st.st_mode
    kind = "l" if stat.S_ISLNK(m) else "d" if stat.S_ISDIR(m) else "f" if stat.S_ISREG(m) else "p" if stat.S_ISFIFO(m) else "?"
    extra = ""
    if kind == "l":
        extra = os.readlink(p)
    elif kind == "f":
        extra = hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]
    xa = ""
    if kind in "fd":
        try:
            xa = ",".join(sorted("%s=%s" % (k, os.getxattr(p, k).decode()) for k in os.listxattr(p) if k.startswith("user.")))
        except OSError:
            xa = "?"
    print(p, kind, st.st_uid, st.st_gid, oct(stat.S_IMODE(m)), st.st_size if kind == "f" else "-", extra, xa, int(st.st_mtime) if kind != "d" else "")
    if kind == "d" and not p.startswith("/proc"):
        for n in sorted(os.listdir(p)):
            show(os.path.join(p, n))
for p in sys.argv[1:]:
    show(p)
'
paths="/newfile /d /lnk /mnt /srv /fifo /planted /pdir /rd /home/user"
tree() { ts exec "${w[@]}" "$1" -- python3 -c "$listing" $paths; }

# the sandbox: as root where the mode allows it (a writable root), else as user
w=(--user user)
upper=yes
src=$(create --user root 2>"$tmp/err") || src=
if [ -z "$src" ]; then
	# one id (`unshare -r`): no root inside, so no writable root; the workspace it is
	tap_diag "no --user root here: $(head -c 200 "$tmp/err")"
	src=$(create) || tap_skip_all "cannot create a durable sandbox in mode ${TS_MODE:-?}"
	w=()
	upper=no
fi
ts exec "${w[@]}" "$src" -- true 2>/dev/null || w=()

echo host-secret >"$tmp/hostfile"
chmod 644 "$tmp/hostfile"
mkdir "$tmp/hostdir"
chmod 777 "$tmp/hostdir"
host_before=$(stat -c '%s %Y %i' "$tmp/hostfile"; ls -A "$tmp/hostdir")

ts exec "${w[@]}" "$src" -- sh -c "
	cd /home/user && mkdir -p sub && echo workspace > sub/w && ln -s sub/w wl
	if [ $upper = yes ]; then
		echo hello > /newfile && chmod 640 /newfile &&
		python3 -c 'import os; os.setxattr(\"/newfile\", \"user.k\", b\"v1\")' &&
		mkdir -p /d/e && echo deep > /d/e/f && echo gone > /d/rm-me && rm /d/rm-me &&
		ln -s /etc/passwd /lnk && rmdir /mnt && rmdir /srv && echo now-a-file > /srv &&
		mkfifo /fifo && ln -s $tmp/hostfile /planted && ln -s $tmp/hostdir /pdir &&
		mkdir -m 777 /rd /home/user/rd
	fi" 2>"$tmp/err"
tap_result $? "the source's files are written (upper: $upper)"
tap_diag_file "$tmp/err"
# files of the sandbox's root in the upper and the workspace: with subordinate ids (mode
# user) they belong to ids the caller can neither read nor chown
if [ $upper = yes ]; then
	ts exec --user root "$src" -- sh -c 'umask 022 && for d in /rd /home/user/rd; do
		mkdir $d/e && echo secret > $d/e/f || exit 1; done' 2>"$tmp/err"
	tap_result $? "the sandbox's root writes a directory and a file in the upper and the workspace"
	tap_diag_file "$tmp/err"
else
	tap_skip "the sandbox's root writes files in the upper and the workspace" "no root inside in this mode"
fi
ts exec -d "$src" -- sleep 600 >"$tmp/proc"
before=$(tree "$src")
# the comparisons below see something: the listing has what was written
want="/home/user/sub/w f"
[ $upper = yes ] && want="/newfile f .* 0o640 6 [0-9a-f]* user.k=v1 [0-9]"
echo "$before" | grep -q "^$want" && echo "$before" | grep -q "^/home/user/wl l .* sub/w"
tap_result $? "the listing shows the files written"
[ $upper = yes ] && tap_diag "$before"

snap=$(ts snapshot --name "test-snap-$$" "$src" 2>"$tmp/err")
tap_result $? "snapshot prints an id ($snap)"
tap_diag_file "$tmp/err"
[[ $snap == snap-* ]] && [ -d "$root/snapshots/$snap" ]
tap_result $? "the snapshot is a directory of the state root"
ts snapshot ls --json | python3 -c "import json,sys; d=json.load(sys.stdin); s=[x for x in d if x['id']=='$snap'][0]; assert s['names']==['test-snap-$$'] and s['source']=='$src', s" 2>"$tmp/err"
tap_result $? "snapshot ls --json has its name and source"
tap_is "$(tree "$src")" "$before" "the source is unchanged"
ts ps "$src" | grep -q "^$(cat "$tmp/proc") .*running"
tap_result $? "the source's background process still runs"
ts exec "$src" -- true
tap_result $? "the source is not left paused"
now=$(stat -c '%s %Y %i' "$tmp/hostfile"; ls -A "$tmp/hostdir")
tap_is "$now" "$host_before" "a symlink in the upper pointing at a host file or directory made the copier read or write neither"
if [ $upper = yes ]; then
	[ -L "$root/snapshots/$snap/upper/planted" ] && [ -L "$root/snapshots/$snap/upper/pdir" ]
	tap_result $? "the planted symlinks are copied as symlinks"
	[ -c "$root/snapshots/$snap/upper/mnt" ]
	tap_result $? "the whiteout over the image's /mnt is copied as a 0/0 device"
else
	tap_skip "the planted symlinks are copied as symlinks" "a sandbox without a root writes only its workspace here"
	tap_skip "the whiteout over the image's /mnt is copied" "a sandbox without a root writes only its workspace here"
fi

# restore by name, as E2B's Sandbox.create(snapshotID)
if [ $upper = yes ]; then r1=$(create --user root --image "test-snap-$$"); else r1=$(create --image "test-snap-$$"); fi
tap_result $? "create --image SNAPSHOT-NAME starts a restored sandbox ($r1)"
tap_is "$(tree "$r1")" "$before" "the restored sandbox has the same tree (owners, modes, hashes, links, xattrs, whiteouts)"
if [ $upper = yes ]; then
	got=$(ts exec --user root "$r1" -- sh -c 'stat -c "%u %g %a" /rd/e /rd/e/f /home/user/rd/e /home/user/rd/e/f; cat /rd/e/f /home/user/rd/e/f' | tr '\n' ' ')
	tap_is "$got" "0 0 755 0 0 644 0 0 755 0 0 644 secret secret " "the root's files of the upper and the workspace are restored as root's (owner 0 inside)"
else
	tap_skip "the root's files are restored as root's" "no root inside in this mode"
fi
if [ $upper = yes ]; then
	tap_is "$(ts exec "$r1" -- cat /d/e/f /srv | tr '\n' ' ')" "deep now-a-file " "restored contents read back"
else
	tap_skip "restored contents read back" "no upper layer changes in this mode"
fi
ts exec "${w[@]}" "$r1" -- sh -c 'echo changed > /home/user/sub/w'
tap_is "$(ts exec "$src" -- cat /home/user/sub/w)" workspace "a change in the restored sandbox does not reach the source"

# a snapshot of the restored sandbox keeps the chain
ts exec "${w[@]}" "$r1" -- sh -c "echo two > /home/user/two; if [ $upper = yes ]; then echo chain > /chain2 && rm /newfile; fi"
snap2=$(ts snapshot "$r1")
tap_result $? "a snapshot of a restored sandbox ($snap2)"
if [ $upper = yes ]; then r2=$(create --user root --image "$snap2"); else r2=$(create --image "$snap2"); fi
if [ $upper = yes ]; then
	got=$(ts exec "$r2" -- sh -c 'cat /d/e/f /chain2 /home/user/two; [ -e /newfile ] || echo no-newfile' | tr '\n' ' ')
	tap_is "$got" "deep chain two no-newfile " "restoring it gives the whole chain (the first layer, the second, its whiteout)"
else
	tap_is "$(ts exec "$r2" -- cat /home/user/sub/w /home/user/two | tr '\n' ' ')" "changed two " "restoring it gives the restored sandbox's workspace"
fi

# delete while in use: the record goes, the files stay while r1/snap2 use them
ts snapshot rm "test-snap-$$"
tap_result $? "snapshot rm by name"
ts snapshot rm "test-snap-$$" 2>/dev/null
[ $? != 0 ]
tap_result $? "a second rm is an error (no such snapshot)"
[ -d "$root/snapshots/$snap" ]
tap_result $? "a snapshot in use keeps its directory"
ts stop "$r1" >/dev/null && ts exec "$r1" -- true
tap_result $? "a sandbox restored from a deleted snapshot starts again"
ts rm -f --purge "$r1" "$r2" >/dev/null 2>&1
ts snapshot rm "$snap2"
tap_result $? "snapshot rm by id"
left=$(ls -A "$root/snapshots" | grep -vcx "\.lock")
tap_is "$left" 0 "once nothing uses them, the snapshots' directories are gone"

# a failed snapshot (past --max-size) leaves nothing
ts snapshot --max-size 1 "$src" >/dev/null 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q 'more than' "$tmp/err"
tap_result $? "a snapshot past --max-size fails with the reason ($(head -c 160 "$tmp/err"))"
tap_is "$(ls -A "$root/snapshots" | grep -vcx "\.lock") $(nsnaps)" "0 0" "the failed snapshot left no directory and no record"
ts exec "$src" -- true
tap_result $? "the source is resumed after the failed snapshot"
ts snapshot nosuchsandbox 2>/dev/null
[ $? = 1 ]
tap_result $? "a snapshot of an unknown sandbox is an error"

# a record whose spec does not parse might refer to any snapshot: a delete then sweeps
# nothing, and the committed snapshot's directory stays (a lost snapshot is worse than
# a leftover one)
bad=$(ts snapshot "$src") && other=$(ts snapshot "$src")
tap_result $? "two more snapshots ($bad, $other)"
python3 -c "import sqlite3,sys; c = sqlite3.connect('$root/state.db'); c.execute('update snapshots set spec = ? where id = ?', ('{not json', sys.argv[1])); c.commit()" "$bad"
ts snapshot rm "$other"
tap_result $? "snapshot rm of the other one"
[ -d "$root/snapshots/$bad" ]
tap_result $? "the snapshot whose record does not parse keeps its directory"
python3 -c "import sqlite3,sys; c = sqlite3.connect('$root/state.db'); c.execute('delete from snapshots where id = ?', (sys.argv[1],)); c.commit()" "$bad"
ts snapshot rm "$other" 2>/dev/null # (gone already) a sweep now that the records parse
ts snapshot rm "$bad" 2>/dev/null

# the helper's copier never maps the host's root (its maps pass the sandbox's check)
if [ "${TS_MODE:-}" = userns ] || [ -z "${TS_HELPER:-}" ]; then
	tap_skip "--copy-tree refuses a map of the host's root" "under unshare -r our 0 is not the host's root"
else
	mkdir "$tmp/cs" "$tmp/cd" && echo x >"$tmp/cs/f"
	"$TS_HELPER" --copy-tree --uid-map "0 0 1" --gid-map "0 0 1" 3<"$tmp/cs" 4<"$tmp/cd" >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st = 125 ] && grep -q "host's root" "$tmp/err" && [ -z "$(ls -A "$tmp/cd")" ]
	tap_result $? "--copy-tree refuses a map of the host's root, copying nothing (status $st: $(head -c 120 "$tmp/err"))"
fi
# A restore into a sandbox of one id (create --image SNAP without --user root). In mode
# user the snapshot's files of the sandbox's root belong to subordinate ids the new
# sandbox cannot represent and the caller cannot read: the helper reads them and each
# copy becomes the user's (1000 inside), modes kept, setid bits dropped, links copied as
# links. As root every sandbox has the whole range: the owners stay.
if [ $upper = yes ]; then
	s3=$(create --user root)
	# a setuid file in the tree: the sandbox's setid guard refuses to make one, the host
	# side may (the workspace is a host directory)
	ts exec --user user "$s3" -- sh -c 'mkdir -m 777 /home/user/rd /urd && echo mine > /home/user/mine' 2>"$tmp/err" &&
	cp /bin/true "$root/$s3/workspace/suid" && chown --reference="$root/$s3/workspace" "$root/$s3/workspace/suid" &&
	chmod 4755 "$root/$s3/workspace/suid" &&
	ts exec --user root "$s3" -- sh -c 'umask 077 && mkdir /home/user/rd/e && echo private > /home/user/rd/e/p &&
		echo open > /home/user/rd/o && chmod 644 /home/user/rd/o && ln -s /etc/shadow /home/user/rd/sh &&
		echo private > /urd/p && echo open > /urd/o && chmod 644 /urd/o' 2>>"$tmp/err"
	tap_result $? "a sandbox with a root: the user and its root write the workspace and the upper (0600 and 0700 of root)"
	tap_diag_file "$tmp/err"
	snap3=$(ts snapshot "$s3" 2>"$tmp/err")
	tap_result $? "snapshot of it ($snap3)"
	tap_diag_file "$tmp/err"
	if [ "${TS_MODE:-}" = user ]; then
		st=$(stat -c %u "$root/snapshots/$snap3/workspace/rd/e")
		[ "$st" != "$(id -u)" ]
		tap_result $? "control: the snapshot's root files belong to a subordinate id (host uid $st), not to the caller"
		cat "$root/snapshots/$snap3/workspace/rd/e/p" >/dev/null 2>&1
		[ $? != 0 ]
		tap_result $? "control: the caller cannot read them in-process"
		own=1000 reader=user
	else
		tap_skip "control: the snapshot's root files belong to a subordinate id" "mode ${TS_MODE:-?}: no subordinate ids"
		tap_skip "control: the caller cannot read them in-process" "mode ${TS_MODE:-?}: no subordinate ids"
		own=0 reader=root
	fi
	n_before=$(ls -A "$root" | wc -l)
	r3=$(create --image "$snap3" 2>"$tmp/err")
	[ -n "$r3" ]
	tap_result $? "create --image SNAP without --user root starts ($r3)"
	tap_diag_file "$tmp/err"
	got=$(ts exec --user $reader "$r3" -- sh -c 'cd /home/user && stat -c "%n %u %g %a" mine suid rd rd/e rd/e/p rd/o &&
		cat mine rd/e/p rd/o && readlink rd/sh && [ -L rd/sh ] && echo link' 2>&1 | tr '\n' ' ')
	tap_is "$got" "mine 1000 1000 644 suid 1000 1000 755 rd 1000 1000 777 rd/e $own $own 700 rd/e/p $own $own 600 rd/o $own $own 644 mine private open /etc/shadow link " \
		"the workspace arrives in a sandbox of one id: owners $own, modes kept, no setuid bit, the link a link"
	[ -L "$root/$r3/workspace/rd/sh" ] && [ "$(readlink "$root/$r3/workspace/rd/sh")" = /etc/shadow ]
	tap_result $? "the planted link to /etc/shadow is a link on the host too"
	if [ "${TS_MODE:-}" = user ]; then
		bad=$(find "$root/$r3/workspace" ! -user "$(id -u)" -printf '%p ' 2>&1)
		tap_is "$bad" "" "on the host every restored file is the caller's"
	else
		tap_skip "on the host every restored file is the caller's" "mode ${TS_MODE:-?}: owners are kept"
	fi
	if [ "${TS_MODE:-}" = user ]; then
		ts exec --user user "$r3" -- sh -c 'echo changed > /home/user/rd/e/p && rm /home/user/rd/o'
		tap_result $? "the sandbox's user may change and delete what it restored"
	else
		tap_skip "the sandbox's user may change and delete what it restored" "mode ${TS_MODE:-?}: root's files stay root's"
	fi
	# the upper is a read-only lower layer here, never copied: root's files keep their
	# subordinate owner, which the sandbox of one id shows as nobody, readable by mode
	case ${TS_MODE:-} in user) lown=65534 ;; *) lown=0 ;; esac
	got=$(ts exec --user user "$r3" -- sh -c 'stat -c "%u %a" /urd/p /urd/o && cat /urd/o; cat /urd/p 2>/dev/null || echo denied' | tr '\n' ' ')
	tap_is "$got" "$lown 600 $lown 644 open denied " "the snapshot's layer of root's files is read as owner $lown, by mode (0644 read, 0600 denied)"
	ts rm -f --purge "$r3" "$s3" >/dev/null 2>"$tmp/err"
	tap_result $? "the restored sandbox and its source are removed"
	tap_diag_file "$tmp/err"
	[ ! -e "$root/$r3" ] && [ ! -e "$root/$s3" ] && [ "$(ls -A "$root" | wc -l)" -le "$n_before" ]
	tap_result $? "nothing of them is left in the state root"
	ts snapshot rm "$snap3" && [ ! -e "$root/snapshots/$snap3" ]
	tap_result $? "the snapshot is removed with its files of subordinate ids"
else
	for c in "the user and its root write the workspace" "snapshot of it" "control: subordinate owner" \
		"control: not readable in-process" "create --image SNAP without --user root" "the workspace arrives" \
		"the link is a link on the host" "every restored file is the caller's" "the user may change it" \
		"the layer is read by mode" "removed" "nothing left" "the snapshot is removed"; do
		tap_skip "restore into one id: $c" "no root inside in this mode"
	done
fi
tap_done
