#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the archives of security-cases.md FA-10 into DIR, for tests/live/files.sh.

  evil.tar     ../x, /abs, a/../../up, x -> CANARY then x/passwd, a hard link to
               CANARY, a character device, a FIFO, a setuid file, a setgid+sticky
               directory, and good/ok.txt (the control)
  evil.tar.gz  the same, gzip-compressed
  evil.zip     ../zx, /zabs, a setuid file, zgood/ok.txt (the control)
  plain.tar    hello.txt and pkg/a.txt (no directory entries), the control
  empty.tar    a valid archive without entries
  junk.tar     not an archive

usage: make-archives.py DIR CANARY_DIR
"""
import io
import sys
import tarfile
import zipfile


def add(tf, name, data=None, **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    if data is not None:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)


def evil_tar(path, canary, mode):
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tf:
        add(tf, "../x", b"dotdot\n", mode=0o644)
        add(tf, "/abs", b"absolute\n", mode=0o644)
        add(tf, "a/../../up", b"up\n", mode=0o644)
        add(tf, "x", type=tarfile.SYMTYPE, linkname=canary)
        add(tf, "x/passwd", b"through-link\n", mode=0o644)
        add(tf, "hl", type=tarfile.LNKTYPE, linkname=canary + "/keep")
        add(tf, "dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3, mode=0o666)
        add(tf, "fifo", type=tarfile.FIFOTYPE, mode=0o644)
        add(tf, "suid", b"#!/bin/sh\n", mode=0o4755)
        add(tf, "sdir", type=tarfile.DIRTYPE, mode=0o3777)
        add(tf, "good/ok.txt", b"ok\n", mode=0o640)


def main():
    out, canary = sys.argv[1], sys.argv[2]
    evil_tar(out + "/evil.tar", canary, "w")
    evil_tar(out + "/evil.tar.gz", canary, "w:gz")
    with zipfile.ZipFile(out + "/evil.zip", "w") as zf:
        zf.writestr("../zx", "dotdot\n")
        zf.writestr("/zabs", "absolute\n")
        zi = zipfile.ZipInfo("zsuid")
        zi.external_attr = (0o104755 << 16)
        zf.writestr(zi, "#!/bin/sh\n")
        zf.writestr("zgood/ok.txt", "ok\n")
    with tarfile.open(out + "/plain.tar", "w") as tf:
        add(tf, "hello.txt", b"hello\n", mode=0o644)
        add(tf, "pkg/a.txt", b"a\n", mode=0o644)
    tarfile.open(out + "/empty.tar", "w").close()
    with open(out + "/junk.tar", "wb") as f:
        f.write(b"this is not an archive\n" * 40)


main()
