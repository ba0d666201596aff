#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# docs/test-cases.md describes every case id the tests cite, and says nothing about them
# that the tree contradicts. Checks, one TAP line each:
#   - every id a test cites has a row above "## Not yet tested" (the ids: two capitals, a
#     dash and two digits anywhere under tests/, such as `SC-04`; `H<N>`, `B<N>`, `R<N>`, `T<N>`
#     in tests/live/hardening.py, which defines them; fuzz corpora are data, and this
#     checker's own examples are not citations);
#   - every such row has a description, names at least one file under tests/ and every
#     file it names exists, and its id is cited by some test unless the row says
#     "no id cited";
#   - no id is described twice, and no id listed under "## Not yet tested" is cited by a
#     test (then it is tested, and its row belongs above).
#
# usage: check-test-cases.sh SOURCE_DIR [DOC]   (DOC: default docs/test-cases.md)
set -u
src=$1
cd "$src" || exit 1
doc=${2:-docs/test-cases.md}
n=0 failed=0
t() { # t STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

if [ ! -r "$doc" ]; then
	t 1 "\`$doc\` is readable"
	echo "1..$n"
	exit 1
fi

cited=$({
	grep -rhoIE --exclude-dir=corpus --exclude-dir=docs --exclude-dir=node_modules '\b[A-Z]{2}-[0-9]{2}\b' tests
	grep -hoE '\b[HBRT][0-9]{1,2}\b' tests/live/hardening.py
} | sort -u)
is_cited() { grep -rqIw --exclude-dir=corpus --exclude-dir=docs --exclude-dir=node_modules -e "$1" tests; }

# One line per table row: SECTION<TAB>ID<TAB>ROW, SECTION T (described) or U (not yet
# tested). Header and separator rows are left out.
rows=$(awk '
	/^## / { untested = ($0 == "## Not yet tested") }
	/^\|/ {
		split($0, c, "|"); id = c[2]; gsub(/^ +| +$/, "", id)
		if (id == "" || id == "id" || id ~ /^-+$/) next
		print (untested ? "U" : "T") "\t" id "\t" $0
	}' "$doc")
described=$(printf '%s\n' "$rows" | awk -F'\t' '$1 == "T" { print $2 }')
untested=$(printf '%s\n' "$rows" | awk -F'\t' '$1 == "U" { print $2 }')

# Controls: the extraction sees ids on both sides, and a made-up id is not found.
[ "$(printf '%s\n' "$cited" | grep -c .)" -ge 50 ]
t $? "the tests cite at least 50 case ids (control: the extraction sees them)"
[ "$(printf '%s\n' "$described" | grep -c .)" -ge 50 ]
t $? "$doc describes at least 50 case ids (control: the table rows are read)"
! printf '%s\n' "$described" | grep -qx 'ZZ-99'
t $? "an id that is described nowhere is detected (control: \`ZZ-99\` is not found)"

for id in $cited; do
	if printf '%s\n' "$described" | grep -qxF -- "$id"; then
		t 0 "\`$id\` (cited by a test) is described in $doc"
	elif printf '%s\n' "$untested" | grep -qxF -- "$id"; then
		t 1 "\`$id\` is cited by a test but listed under \"Not yet tested\" in $doc"
	else
		where=$(grep -rlIw --exclude-dir=corpus --exclude-dir=docs --exclude-dir=node_modules -e "$id" tests | head -3 | tr '\n' ' ')
		t 1 "\`$id\` is cited by a test (${where% }) but not described in $doc"
	fi
done

dups=$(printf '%s\n' "$described" "$untested" | grep . | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ]
t $? "no id has two rows in $doc${dups:+ (twice: $dups)}"

while IFS=$'\t' read -r sect id row; do
	[ -n "$sect" ] || continue
	if [ "$sect" = U ]; then
		! is_cited "$id"
		t $? "\`$id\` (not yet tested) is cited by no test"
		continue
	fi
	why=
	desc=$(printf '%s\n' "$row" | awk -F'|' '{ print $3 }')
	[ "${#desc}" -ge 20 ] || why+=" no description;"
	files=$(printf '%s\n' "$row" | grep -oE '`tests/[^`]+`' | tr -d '`' | sort -u)
	[ -n "$files" ] || why+=" names no file under tests/;"
	for f in $files; do
		[ -e "$f" ] || why+=" \`$f\` does not exist;"
	done
	if ! printf '%s\n' "$row" | grep -qi 'no id cited' && ! is_cited "$id"; then
		why+=" no test cites it (say \"no id cited\" if that is intended);"
	fi
	[ -z "$why" ]
	t $? "\`$id\`: described, its files exist, a test cites it${why:+:$why}"
done <<<"$rows"

echo "1..$n"
[ "$failed" = 0 ]
