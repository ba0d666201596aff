#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The library prints nothing and leaves the terminal alone (HACKING.md, Errors): only a top
# level (the CLI) writes to stdout or stderr or changes a terminal's modes; src/lib and
# src/backend return what they have to say as data or tell it to the caller's hooks.
#  - their objects import no function that writes to stdout or stderr by itself, no
#    stdout or stderr stream, no terminal-mode call;
#  - their sources (comments and strings left out) name no stdout/stderr stream, no fd 1
#    or 2 to write to, and none of those calls (what a macro could hide from the objects).
set -u
src=$1
shift
n=0 fail=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi; }

# printf family to stdout (with _FORTIFY_SOURCE: __*_chk), the streams themselves, err(3)
# and error(3) (which print), and the calls that change a terminal's modes or its owner
forbidden='^(printf|__printf_chk|vprintf|__vprintf_chk|puts|putchar|putchar_unlocked|perror|psignal|psiginfo|stdout|stderr|_IO_2_1_stdout_|_IO_2_1_stderr_|err|errx|verr|verrx|warn|warnx|vwarn|vwarnx|error|error_at_line|tcsetattr|cfmakeraw|tcsetpgrp|tcflush|tcflow)$'
imports() { nm --undefined-only "$1" 2>/dev/null | awk 'NF >= 2 {print $NF}' | sed 's/@.*//'; }
libs=()
for a in "$@"; do
	case $a in *.a) libs+=("$a") ;; *) cli=$a ;; esac
done
for lib in "${libs[@]}"; do
	name=$(basename "$lib")
	bad=$(imports "$lib" | grep -E "$forbidden" | sort -u | tr '\n' ' ')
	t "$([ -z "$bad" ] && echo 0 || echo 1)" "$name imports nothing that prints or changes a terminal ($bad)"
done
imports "${libs[0]}" | grep -qx posix_spawn
t $? "the check sees the library's imports (control: launch.c's posix_spawn)"
{ nm -D --undefined-only "$cli" 2>/dev/null; nm --undefined-only "$cli" 2>/dev/null; } |
	awk '{print $NF}' | sed 's/@.*//' | grep -qx cfmakeraw
t $? "the check sees a terminal call where it belongs (control: the CLI's cfmakeraw)"

# Comments, string and character literals become blanks (newlines kept, so line numbers
# hold); then what is left is searched.
# shellcheck disable=SC2016
strip_c='s{(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\\n])*")|(\x27(?:\\.|[^\x27\\\n])*\x27)}{
	defined $1 ? "\n" x ($1 =~ tr/\n//) : defined $2 ? "" : defined $3 ? "\x22\x22" : "\x27\x27"
}gse'
strip() {
	perl -0777 -pe "$strip_c" "$1"
}
pattern='\b(stdout|stderr|STDOUT_FILENO|STDERR_FILENO|printf|vprintf|puts|putchar|perror|psignal|err|errx|warnx|error|tcsetattr|cfmakeraw|tcsetpgrp|tcflush|TCSETSW?F?|TCSANOW|TCSADRAIN|TCSAFLUSH)\b *\(|\b(stdout|stderr|STDOUT_FILENO|STDERR_FILENO|TCSETSW?F?|TCSANOW|TCSADRAIN|TCSAFLUSH)\b|\b(write|dprintf|fdopen) *\( *[12] *,'
search() {
	local f hits
	for f in $(find "$@" -name '*.[ch]' | sort); do
		hits=$(strip "$f" | grep -nE "$pattern" | sed "s|^|${f#"$src"/}:|")
		[ -n "$hits" ] && echo "$hits"
	done
}
for dir in src/lib src/backend; do
	hits=$(search "$src/$dir")
	[ -n "$hits" ] && echo "$hits" | sed 's/^/# /'
	t "$([ -z "$hits" ] && echo 0 || echo 1)" "no source in $dir prints or changes a terminal"
done
hits=$(search "$src/src/cli")
echo "$hits" | grep -q 'cmd-run.c:.*cfmakeraw' && echo "$hits" | grep -q 'stderr'
t $? "the source check sees code that prints and sets raw mode (control: src/cli)"
echo "1..$n"
exit $fail
