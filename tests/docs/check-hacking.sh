#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# HACKING.md gives the same build and test commands as README.md: every line of the
# README's first two `sh` blocks (install and build, then `.ci/run`) appears verbatim in
# HACKING.md. One TAP line per command.
#
# usage: check-hacking.sh SOURCE_DIR
set -u
cd "$1" || exit 1
n=0 failed=0
t() { # t STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

cmds=$(awk '/^```sh/ { f = 1; c++; next } /^```/ { f = 0; next } f && c <= 2 && NF' README.md)
[ "$(printf '%s\n' "$cmds" | grep -c .)" -ge 2 ]
t $? "README.md has its build and test commands in \`sh\` blocks (control: found $(printf '%s\n' "$cmds" | grep -c .))"
while IFS= read -r line; do
	[ -n "$line" ] || continue
	short=$line
	[ "${#line}" -le 60 ] || short="${line:0:60}..."
	grep -qxF -- "$line" HACKING.md
	t $? "HACKING.md gives README.md's command \`$short\`"
done <<<"$cmds"

echo "1..$n"
[ "$failed" = 0 ]
