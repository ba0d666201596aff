#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The privileged surface stays small and where it belongs (STYLE.md):
#  - the helper links libc, libcap and libnl-3 only;
#  - no other binary imports the namespace/mount/capability calls: only the helper may
#    build sandboxes.
set -u
cli=$1 helper=$2 init=$3
n=0 fail=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi; }

needed=$(readelf -d "$helper" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
extra=$(for lib in $needed; do case $lib in
	libc.so.*|libcap.so.*|libnl-3.so.*|ld-linux*|libasan.so.*|libubsan.so.*) ;;
	*) echo "$lib";; esac; done)
t "$([ -z "$extra" ] && echo 0 || echo 1)" "helper links only libc, libcap, libnl-3 (NEEDED: $needed)"
echo "$needed" | grep -q 'libcap.so' ; t $? "helper links libcap (control: the check sees NEEDED entries)"

forbidden='^(mount|umount|umount2|pivot_root|unshare|setns|capset|cap_set_proc|clone3|seccomp_load|mount_setattr|move_mount|open_tree|fsopen|fsmount)$'
bad=$(nm -D --undefined-only "$cli" | awk '{print $NF}' | sed 's/@.*//' | grep -E "$forbidden" | tr '\n' ' ')
t "$([ -z "$bad" ] && echo 0 || echo 1)" "CLI imports none of the sandbox-building calls ($bad)"
# init is static: look for the symbols it would contain if it called them
bad=$(nm "$init" 2>/dev/null | awk '$2 ~ /[TtWw]/ {print $3}' | grep -E "$forbidden" | tr '\n' ' ')
t "$([ -z "$bad" ] && echo 0 || echo 1)" "init contains none of the sandbox-building calls ($bad)"
nm -D --undefined-only "$helper" | awk '{print $NF}' | sed 's/@.*//' | grep -qx mount
t $? "helper does import mount (control: the symbol check can see it)"
echo "1..$n"
exit $fail
