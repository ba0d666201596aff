#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every option a --help prints is documented in its man page (STYLE.md, Docs): for each
# command, every `--option` token of its --help output must appear in the scdoc source of
# the page that documents it. One TAP line per option.
#
# usage: check-man-options.sh CLI HELPER MANDIR
set -u
cli=$1 helper=$2 mandir=$3
n=0 failed=0
t() { # t STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

# check LABEL PAGE COMMAND...: run COMMAND (its --help), check each option against PAGE.
check() {
	local label=$1 page=$mandir/$2 out status opts opt
	shift 2
	out=$("$@" 2>&1)
	status=$?
	t "$status" "$label exits 0"
	if [ ! -r "$page" ]; then
		t 1 "$label: man page source \`$page\` is readable"
		return
	fi
	# Long options only: `--` alone (end of options) is not one. A short form is always
	# printed next to its long one, and the long one is what the page must name.
	opts=$(printf '%s\n' "$out" | grep -oE -- '--[a-zA-Z0-9][a-zA-Z0-9-]*' | sort -u)
	if [ -z "$opts" ]; then
		t 1 "$label prints at least one --option (control: the extraction sees them)"
		return
	fi
	for opt in $opts; do
		# As a whole token: `--cgroup` must not be satisfied by `--cgroup-pids` alone.
		grep -qE -- "(^|[^a-zA-Z0-9-])${opt}([^a-zA-Z0-9-]|\$)" "$page"
		t $? "$label: \`$opt\` is documented in $(basename "$page")"
	done
}

check "toren-sandbox --help" toren-sandbox.1.scd "$cli" --help
# every subcommand the dispatch table lists, with a section of its own in the page
cmds=$("$cli" --help | sed -n '/^commands:/,/^$/p' | awk 'NF >= 2 && $1 ~ /^[a-z]+$/ {print $1}')
[ -n "$cmds" ]; t $? "toren-sandbox --help lists its commands (control)"
for c in $cmds; do
	grep -qE "^## $c\b" "$mandir/toren-sandbox.1.scd"
	t $? "\`$c\` has a section in toren-sandbox.1.scd"
	check "toren-sandbox $c --help" toren-sandbox.1.scd "$cli" "$c" --help
done
check "toren-sandbox-helper --help" toren-sandbox-helper.8.scd "$helper" --help

# Control: the check fails for an option no page can contain.
bogus=--no-such-option-$$
grep -qE -- "(^|[^a-zA-Z0-9-])${bogus}([^a-zA-Z0-9-]|\$)" "$mandir/toren-sandbox.1.scd"
t "$([ $? -ne 0 ] && echo 0 || echo 1)" "an undocumented option is detected (control: \`$bogus\` is not found)"

echo "1..$n"
[ "$failed" = 0 ]
