# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by run-bench.sh and profile.sh (sourced; REPO must be set).

# build_rev REV DIR: export commit REV of the repository into DIR/src (git archive: the
# work tree and the index are not touched) and build it in DIR/src/build as build/ is
# configured (debugoptimized), without tests and man pages. Log in DIR/build.log.
build_rev() {
	local rev=$1 dir=$2
	mkdir -p "$dir/src"
	git -C "$REPO" archive "$rev" | tar -x -C "$dir/src"
	if ! meson setup "$dir/src/build" "$dir/src" --buildtype=debugoptimized \
		-Dtests=false -Dman=disabled >"$dir/build.log" 2>&1 ||
		! ninja -C "$dir/src/build" >>"$dir/build.log" 2>&1; then
		echo "bench: building $rev failed; see the log:" >&2
		tail -20 "$dir/build.log" >&2
		return 1
	fi
	chmod -R a+rX "$dir/src"
}

# snapshot_build TOREN DIR: copy the binaries next to TOREN into DIR/bin (with an
# empty build.ninja, so the source tree's policy/ stays in use) and print the new path.
# A rebuild during the run then cannot change the binaries under test.
snapshot_build() {
	local toren=$1 dir=$2 bd
	bd=$(dirname "$toren")
	if [ ! -e "$bd/build.ninja" ]; then
		echo "$toren"
		return
	fi
	mkdir -p "$dir/bin"
	cp "$bd"/toren-sandbox "$bd"/toren-sandbox-helper "$bd"/toren-sandbox-init "$dir/bin/"
	# what a template with sudo or a network proxy needs, where the build has it
	for b in toren-sandbox-sudo toren-sandbox-proxy; do
		[ ! -e "$bd/$b" ] || cp "$bd/$b" "$dir/bin/"
	done
	: >"$dir/bin/build.ninja"
	chmod -R a+rX "$dir/bin"
	echo "$dir/bin/toren-sandbox"
}
