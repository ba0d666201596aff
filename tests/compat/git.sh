#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Workload: a git round trip through `git daemon` on loopback, all in this one command:
# a bare repository served on 127.0.0.1 (receive-pack and upload-archive enabled), an
# empty clone, commits (text, binary, executable, symlink, a non-ASCII name, a rename, a
# deletion), pushes of a branch, a second branch and an annotated tag, a second full
# clone, a shallow clone, a fetch, `git archive --remote`, fsck and gc of the served
# repository. Prints `RESULT NAME VALUE` lines that do not depend on where it runs
# (fixed names and dates make the object ids reproducible); driver.sh compares them.
set -u
r() { echo "RESULT $*"; }
okfail() { if [ "$1" = 0 ]; then echo ok; else echo "FAIL (status $1)"; fi; }

export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME="Compat Test" GIT_AUTHOR_EMAIL=compat@example.invalid
export GIT_COMMITTER_NAME="Compat Test" GIT_COMMITTER_EMAIL=compat@example.invalid
export GIT_AUTHOR_DATE="2024-01-02T03:04:05Z" GIT_COMMITTER_DATE="2024-01-02T03:04:05Z"
git config --global init.defaultBranch main
git config --global advice.detachedHead false
git config --global core.quotePath false

base=$PWD/git-work
rm -rf "$base"
mkdir -p "$base/srv"
cd "$base" || exit 1
git init -q --bare srv/proj.git
r init-bare "$(okfail $?)"

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
git daemon --reuseaddr --export-all --enable=receive-pack --enable=upload-archive \
	--base-path="$base/srv" --listen=127.0.0.1 --port="$port" --informative-errors \
	2>"$base/daemon.log" &
dpid=$!
trap 'kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null' EXIT
url=git://127.0.0.1:$port/proj.git
ready=FAIL
for _ in $(seq 1 100); do
	if git ls-remote "$url" >/dev/null 2>&1; then ready=ok; break; fi
	sleep 0.1
done
r daemon-listens "$ready"

git clone -q "$url" c1 2>"$base/clone1.err"
r clone-empty "$(okfail $?)"
cd c1 || exit 1
printf 'hello from the compat suite\n' >README
/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + i // 251) % 256 for i in range(200000)))' >blob.bin
mkdir -p dir/sub
printf 'nested\n' >dir/sub/file.txt
printf '#!/bin/sh\necho script ran\n' >script.sh
chmod 755 script.sh
ln -s README link
printf 'unicode\n' >"ünïcödé.txt"
git add -A && git commit -q -m "first commit"
r commit-1 "$(git rev-parse HEAD)"
git push -q origin main 2>"$base/push1.err"
r push-main "$(okfail $?)"

printf 'second line\n' >>README
git rm -q dir/sub/file.txt
mkdir -p tools && git mv script.sh tools/script.sh
git commit -q -am "second commit: modify, delete, rename"
git tag -a v1 -m "version 1"
r commit-2 "$(git rev-parse HEAD) $(git rev-parse v1)"
git push -q origin main --tags 2>"$base/push2.err"
r push-main-tags "$(okfail $?)"

git checkout -q -b feature
printf 'feature work\n' >feature.txt
git add feature.txt && git commit -q -m "feature commit"
git push -q -u origin feature 2>"$base/push3.err"
r push-feature "$(okfail $?)"
git checkout -q main
cd "$base" || exit 1

r ls-remote "$(git ls-remote "$url" 2>&1 | sort | tr '\t\n' ': ')"
git clone -q "$url" c2 2>"$base/clone2.err"
r clone-full "$(okfail $?)"
r c2-head "$(git -C c2 rev-parse HEAD 2>&1)"
r c2-branches "$(git -C c2 branch -r --format='%(refname:short) %(objectname)' 2>&1 | sort | tr '\n' ' ')"
r c2-tags "$(git -C c2 tag -l 2>&1 | tr '\n' ' ')"
r c2-tree "$(git -C c2 ls-tree -r HEAD 2>&1 | sha256sum | cut -c1-16)"
diff -r --exclude=.git c1 c2 >"$base/diff.out" 2>&1
r worktree-same "$(okfail $?)"
r c2-exec-bit "$(test -x c2/tools/script.sh && c2/tools/script.sh 2>&1)"
r c2-symlink "$(readlink c2/link)"
r c2-blob "$(sha256sum <c2/blob.bin | cut -c1-16)"
r c2-unicode "$(cat "c2/ünïcödé.txt" 2>&1)"

git clone -q --depth 1 --branch feature "$url" c3 2>"$base/clone3.err"
r clone-shallow "$(okfail $?) $(git -C c3 rev-list --count HEAD 2>&1) $(git -C c3 rev-parse --is-shallow-repository 2>&1)"

git -C c2 fetch -q origin feature 2>"$base/fetch.err"
r fetch "$(okfail $?) $(git -C c2 rev-parse FETCH_HEAD 2>&1)"

r archive-remote "$(git archive --remote="$url" --format=tar v1 2>"$base/archive.err" | tar -tf - 2>&1 | sort | tr '\n' ' ')"

git -C srv/proj.git fsck --strict --no-progress >"$base/fsck.out" 2>&1
r fsck "$(okfail $?)"
git -C srv/proj.git gc -q >"$base/gc.out" 2>&1
r gc "$(okfail $?) $(git -C srv/proj.git count-objects -v | grep -E '^(count|in-pack|packs):' | tr '\n' ' ')"

kill "$dpid" 2>/dev/null
wait "$dpid" 2>/dev/null
trap - EXIT
for f in "$base"/*.err "$base/daemon.log"; do
	[ -s "$f" ] && sed "s|^|${f##*/}: |" "$f"
done
r end ok
