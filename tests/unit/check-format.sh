#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every C file is formatted as .clang-format says (STYLE.md). One TAP line per file.
set -u
src=$1
if ! command -v clang-format >/dev/null; then
	if [ "${TS_TESTS_MUST_WORK:-0}" = 1 ]; then echo "1..1"; echo "not ok 1 - clang-format missing"; exit 1; fi
	echo "1..0 # SKIP clang-format not installed"; exit 0
fi
cd "$src" || exit 1
n=0 fail=0
while IFS= read -r f; do
	n=$((n + 1))
	if clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "ok $n - $f"
	else
		echo "not ok $n - $f needs clang-format"; fail=1
	fi
done < <(find src runtime tests -name node_modules -prune -o \( -name '*.c' -o -name '*.h' \) -print | grep -v '/corpus/' | sort)
echo "1..$n"
exit $fail
