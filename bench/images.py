#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/run-images.sh (issue 11's image targets).

usage: images.py build LAYOUT MB       an OCI layout (ref names `big` and `bb`) made from
                                       this host's /usr: 4 gzip layers, about MB MB
                                       compressed in all; prints a JSON summary
       images.py blobs LAYOUT REF         the layer blobs of image REF, bottom first
       images.py inflate BLOB...          gunzip the blobs with zlib into nothing (a floor)
       images.py served LOG OFFSET     sum the docker-registry access log from byte OFFSET
                                       on: requests and bytes per user agent (JSON)

`big` is a real root file system: merged-usr symlinks, the host's /usr/bin/true with the
libraries it loads, and compressible content as an image has it (binaries and shared
libraries, python sources, message catalogues, a top layer with a whiteout). Files are
owned by 0:0 with setuid/setgid bits cleared (as a build would leave them for a rootless
store; the unpacker would clear them anyway, with a warning per file). `bb` is the busybox
image of tests/live/images.py: one small layer, a static /bin/true.
"""
import gzip
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile

BIG_FILE = 8 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "live"))

# Bottom first: (name, share of the compressed total, host paths, first: always included).
LAYERS = [
    ("base", 0.40, ["/usr/bin", "/usr/sbin"], ["/usr/bin/true", "/usr/bin/dash", "/usr/bin/ls", "/usr/bin/cat", "/usr/bin/wc"]),
    ("libs", 0.30, ["/usr/lib/x86_64-linux-gnu"], []),
    ("share", 0.25, ["/usr/lib/python3", "/usr/share/locale", "/usr/share/perl"], []),
    ("app", 0.05, ["/usr/libexec", "/usr/share/i18n"], []),
]


class Sink:
    """The compressed stream: written to a file, hashed and counted."""

    def __init__(self, f):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return self.f.write(b)

    def flush(self):
        self.f.flush()


class Tee:
    """The tar stream: hashed (the diff_id) and counted on its way into gzip."""

    def __init__(self, gz):
        self.gz, self.h, self.n = gz, hashlib.sha256(), 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return self.gz.write(b)

    def tell(self):
        return self.n


def needed_libs(prog):
    out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if m:
            # the name as loaded (often a soname symlink) and the file it leads to
            p = m.group(1)
            libs.append(os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)))
            libs.append(os.path.realpath(p))
    return libs


class LayerWriter:
    def __init__(self, layout, budget):
        self.tmp = os.path.join(layout, "blobs", "sha256", "layer.tmp")
        self.f = open(self.tmp, "wb")
        self.sink = Sink(self.f)
        self.gz = gzip.GzipFile(fileobj=self.sink, mode="wb", compresslevel=6, mtime=0)
        self.tee = Tee(self.gz)
        self.tf = tarfile.open(fileobj=self.tee, mode="w", format=tarfile.PAX_FORMAT)
        self.budget = budget
        self.seen = set()
        self.must = set()
        self.files = 0

    def full(self):
        return self.sink.n >= self.budget

    def add_dir(self, arc, mode=0o755):
        if not arc or arc in self.seen:
            return
        parent = os.path.dirname(arc)
        if parent:
            self.add_dir(parent)
        ti = tarfile.TarInfo(arc)
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, mode, 1700000000
        self.tf.addfile(ti)
        self.seen.add(arc)

    def add_symlink(self, arc, target):
        if arc in self.seen:
            return
        self.add_dir(os.path.dirname(arc))
        ti = tarfile.TarInfo(arc)
        ti.type, ti.linkname, ti.mode, ti.mtime = tarfile.SYMTYPE, target, 0o777, 1700000000
        self.tf.addfile(ti)
        self.seen.add(arc)

    def add_bytes(self, arc, data, mode=0o644):
        self.add_dir(os.path.dirname(arc))
        ti = tarfile.TarInfo(arc)
        ti.size, ti.mode, ti.mtime = len(data), mode, 1700000000
        self.tf.addfile(ti, io.BytesIO(data))
        self.seen.add(arc)
        self.files += 1

    def add_host(self, path):
        """The host file or symlink path (absolute) at the same place in the layer."""
        arc = path.lstrip("/")
        if arc in self.seen:
            return
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            self.add_symlink(arc, os.readlink(path))
            return
        if not stat.S_ISREG(st.st_mode) or not os.access(path, os.R_OK):
            return
        if st.st_size > BIG_FILE and arc not in self.must:
            return  # a few huge libraries would make the layer a handful of files
        self.add_dir(os.path.dirname(arc))
        ti = self.tf.gettarinfo(path, arc)
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = "root"
        ti.mode &= 0o1777
        if ti.type == tarfile.REGTYPE:
            with open(path, "rb") as f:
                self.tf.addfile(ti, f)
        else:
            self.tf.addfile(ti)  # a hard link to a file already in this layer
        self.seen.add(arc)
        self.files += 1

    def add_tree(self, top):
        for dirpath, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
                if self.full():
                    return
                self.add_host(os.path.join(dirpath, name))

    def close(self, layout):
        self.tf.close()
        self.gz.close()
        self.f.close()
        hexd = self.sink.h.hexdigest()
        os.rename(self.tmp, os.path.join(layout, "blobs", "sha256", hexd))
        return ({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                 "digest": "sha256:" + hexd, "size": self.sink.n},
                "sha256:" + self.tee.h.hexdigest(), self.tee.n)


def build(layout, mb):
    import images  # tests/live/images.py: Layout, busybox_base, named, ARCH
    lay = images.Layout(layout)
    total = mb * 1000 * 1000
    descs, diffs, summary = [], [], []
    for i, (name, share, trees, first) in enumerate(LAYERS):
        w = LayerWriter(layout, int(total * share))
        if i == 0:
            w.add_symlink("usr/bin/sh", "dash")
            for d in ("bin", "lib", "lib64", "sbin"):
                w.add_symlink(d, "usr/" + d)
            w.add_dir("etc")
            w.add_bytes("etc/os-release", b"ID=toren-bench\nPRETTY_NAME=\"toren-sandbox bench image\"\n")
            w.add_bytes("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n")
            w.add_bytes("etc/group", b"root:x:0:\nnogroup:x:65534:\n")
            w.add_dir("usr/lib64")
            for p in first:
                for lib in [p] + needed_libs(p):
                    w.must.add(lib.lstrip("/"))
                    w.add_host(lib)
            w.add_symlink("usr/lib64/ld-linux-x86-64.so.2", "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        if i == len(LAYERS) - 1:
            # what an upper layer of a real image does: remove a file, change one
            w.add_bytes("usr/bin/.wh.true-was-here", b"")
            w.add_bytes("etc/os-release", b"ID=toren-bench\nVERSION_ID=2\n")
        for t in trees:
            if w.full():
                break
            w.add_tree(t)
        d, diff, raw = w.close(layout)
        descs.append(d)
        diffs.append(diff)
        summary.append({"layer": name, "compressed": d["size"], "uncompressed": raw, "files": w.files})
    cfg = {"architecture": images.ARCH, "os": "linux",
           "config": {"Env": ["PATH=/usr/bin:/bin"], "Cmd": ["/bin/sh"]},
           "rootfs": {"type": "layers", "diff_ids": diffs}}
    c = lay.blob(json.dumps(cfg))
    c["mediaType"] = "application/vnd.oci.image.config.v1+json"
    m = lay.blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                             "config": c, "layers": descs}))
    m["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    bb = lay.image([images.busybox_base() + [("bin/true", "symlink", "busybox", 0o777)]])
    lay.index([images.named(m, "big"), images.named(bb, "bb")])
    print(json.dumps({"layers": summary,
                      "compressed": sum(s["compressed"] for s in summary),
                      "uncompressed": sum(s["uncompressed"] for s in summary),
                      "files": sum(s["files"] for s in summary)}))


# 127.0.0.1 - - [date] "GET /v2/... HTTP/1.1" 200 1028203 "" "toren-sandbox/0.1.0"
ACCESS = re.compile(r'"(GET|HEAD) (\S+) [^"]*" (\d{3}) (\d+|-) "[^"]*" "([^"]*)"')


def served(log, offset):
    out = {}
    with open(log, "rb") as f:
        f.seek(int(offset))
        for line in f.read().decode(errors="replace").splitlines():
            m = ACCESS.search(line)
            if not m:
                continue
            ua = m.group(5).split("/")[0] or "?"
            e = out.setdefault(ua, {"requests": 0, "bytes": 0, "blob_gets": 0, "blob_bytes": 0})
            n = int(m.group(4)) if m.group(4) != "-" else 0
            e["requests"] += 1
            e["bytes"] += n
            if m.group(1) == "GET" and "/blobs/" in m.group(2):
                e["blob_gets"] += 1
                e["blob_bytes"] += n
    print(json.dumps(out))


def blobs(layout, ref):
    idx = json.load(open(f"{layout}/index.json"))
    m = [d for d in idx["manifests"] if d.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref][0]
    man = json.load(open(f"{layout}/blobs/sha256/{m['digest'][7:]}"))
    print(" ".join(f"{layout}/blobs/sha256/{l['digest'][7:]}" for l in man["layers"]))


def inflate(paths):
    import zlib
    for p in paths:
        d = zlib.decompressobj(31)
        with open(p, "rb") as f:
            for b in iter(lambda: f.read(1 << 16), b""):
                d.decompress(b)


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "build":
        build(a[1], int(a[2]))
    elif len(a) == 3 and a[0] == "blobs":
        blobs(a[1], a[2])
    elif len(a) >= 2 and a[0] == "inflate":
        inflate(a[1:])
    elif len(a) == 3 and a[0] == "served":
        served(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
