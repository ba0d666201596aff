#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# musl-gcc searches only musl's own headers; init also needs the kernel's (linux/,
# asm/, asm-generic/), which are libc-independent. Make DEST a directory of links to
# exactly those, to be searched after musl's (-idirafter), so that nothing else of
# glibc's headers can slip into a musl build.
# usage: musl-kernel-headers.sh DEST MULTIARCH
set -eu
dest=$1 multiarch=$2
mkdir -p "$dest"
ln -sfn /usr/include/linux "$dest/linux"
ln -sfn /usr/include/asm-generic "$dest/asm-generic"
ln -sfn "/usr/include/$multiarch/asm" "$dest/asm"
