#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The privileged surface stays small and where it belongs (STYLE.md). (clone3 is not
# listed: glibc uses it without namespace flags for posix_spawn and threads.)
#  - the helper links libc, libcap and libnl-3 only;
#  - no other binary imports the namespace/mount/capability calls: only the helper may
#    build sandboxes. (init lowers capabilities, never raises them: in a sandbox with two
#    users each child it forks empties its bounding set and clears its sets with raw
#    prctl/capset syscalls, runtime/ids.c, before it runs anything.)
set -u
cli=$1 helper=$2 init=$3 # then the other binaries
n=0 fail=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi; }

# Release builds link the helper statically (start-up time); sanitizer builds cannot.
if readelf -d "$helper" 2>/dev/null | grep -q NEEDED; then
	needed=$(readelf -d "$helper" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
	extra=$(for lib in $needed; do case $lib in
		libc.so.*|libcap.so.*|libnl-3.so.*|ld-linux*|libasan.so.*|libubsan.so.*) ;;
		*) echo "$lib";; esac; done)
	t "$([ -z "$extra" ] && echo 0 || echo 1)" "helper links only libc, libcap, libnl-3 (NEEDED: $needed)"
	echo "$needed" | grep -q 'libcap.so'; t $? "helper links libcap (control: the check sees NEEDED entries)"
else
	t 0 "helper is static: no shared library at all (checked below by symbols)"
	nm "$helper" | grep -qw cap_init; t $? "helper contains libcap (control: the symbol check sees archives)"
fi
# whatever the linkage: no code of the host library's dependencies in the helper
lib_syms=$(nm "$helper" 2>/dev/null | awk '{print $NF}' | grep -E '^(sqlite3_|yaml_|json_|seccomp_init|seccomp_rule|curl_|nettle_)' | head -3 | tr '\n' ' ')
t "$([ -z "$lib_syms" ] && echo 0 || echo 1)" "helper has no sqlite, yaml, json, libseccomp, curl or nettle code ($lib_syms)"
nm "$helper" 2>/dev/null | grep -q 'nl_connect'; t $? "helper contains libnl (control)"

# libcurl and libmicrohttpd are loaded with dlopen where used (src/lib/curl-dl.h,
# src/server/mhd-dl.h): linked, they and their ~35 libraries cost every start of the CLI
for bin in "$@"; do
	needed=$(readelf -d "$bin" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	bad=$(echo "$needed" | tr ' ' '\n' | grep -E '^lib(curl|microhttpd)' | tr '\n' ' ')
	t "$([ -z "$bad" ] && echo 0 || echo 1)" "$(basename "$bin") has neither libcurl nor libmicrohttpd in DT_NEEDED ($bad)"
done
readelf -d "$cli" | grep -q 'NEEDED.*libc\.so'; t $? "CLI lists libc in DT_NEEDED (control: the check sees NEEDED entries)"
nm -D --undefined-only "$cli" | grep -qE ' (curl_|MHD_)'; t "$([ $? = 1 ] && echo 0 || echo 1)" "CLI imports no curl_ or MHD_ symbol"

forbidden='^(mount|umount|umount2|pivot_root|unshare|setns|capset|cap_set_proc|seccomp_load|mount_setattr|move_mount|open_tree|fsopen|fsmount)$'
bad=$(nm -D --undefined-only "$cli" | awk '{print $NF}' | sed 's/@.*//' | grep -E "$forbidden" | tr '\n' ' ')
t "$([ -z "$bad" ] && echo 0 || echo 1)" "CLI imports none of the sandbox-building calls ($bad)"
# init is static: look for the symbols it would contain if it called them
bad=$(nm "$init" 2>/dev/null | awk '$2 ~ /[TtWw]/ {print $3}' | grep -E "$forbidden" | tr '\n' ' ')
t "$([ -z "$bad" ] && echo 0 || echo 1)" "init contains none of the sandbox-building calls ($bad)"
{ nm -D --undefined-only "$helper" 2>/dev/null; nm "$helper" 2>/dev/null; } | awk '{print $NF}' | sed 's/@.*//' | grep -qx mount
t $? "helper does use mount (control: the symbol check can see it)"
echo "1..$n"
exit $fail
