#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Local images: `image import` of OCI layouts and `docker save` tarballs, `run --image NAME`.

The images are built here, without any network: a root file system from busybox-static,
packed into layers (tar, gzip), described by configs, manifests and indexes with their
sha256 digests. Checked: the image's files are what a command sees (not the host's); a
whiteout and an opaque directory of an upper layer hide the lower layer's files; a
multi-arch index yields this machine's architecture; a corrupted blob is refused; hostile
layers (`..` and absolute names, a symlink out, hard links out, a device, setuid bits, an
oversized entry, a tar bomb) are refused or neutralised and nothing lands outside;
`image ls`, `inspect`, `rm`, `prune`; prune never deletes what a sandbox uses (a stopped
durable sandbox starts after `image rm` + `prune` of its image; a running one-shot sandbox
keeps reading its files).

TAP on stdout. Env: TS_CLI (the toren-sandbox binary), TOREN_SANDBOX_ROOT.
"""
import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile

cli = os.environ.get("TS_CLI", "toren-sandbox")
root = os.environ.get("TOREN_SANDBOX_ROOT", "")
n = 0
failed = 0
BUSYBOX = shutil.which("busybox") or "/bin/busybox"
ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386",
        "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}.get(platform.machine(), "unknown")


def t(cond, desc):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def ts(*args, timeout=120):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def sh(image, script):
    return ts("run", "--image", image, "--", "/bin/sh", "-c", script)


# --- building images -------------------------------------------------------------------

def tar_bytes(entries, compress=True):
    """entries: (name, kind, data/target, mode) with kind file|dir|symlink|hardlink|chr|fifo"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, data, mode in entries:
            ti = tarfile.TarInfo(name)
            ti.mode = mode
            ti.mtime = 1700000000
            if kind == "file":
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
                continue
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
            elif kind == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, data
            elif kind == "hardlink":
                ti.type, ti.linkname = tarfile.LNKTYPE, data
            elif kind == "chr":
                ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            tf.addfile(ti)
    raw = buf.getvalue()
    return (gzip.compress(raw, mtime=0) if compress else raw), raw


def busybox_base():
    bb = open(BUSYBOX, "rb").read()
    e = [("bin", "dir", None, 0o755), ("bin/busybox", "file", bb, 0o755)]
    for app in ("sh", "ls", "cat", "test", "echo", "id", "stat", "wc", "find"):
        e.append((f"bin/{app}", "symlink", "busybox", 0o777))
    e += [("etc", "dir", None, 0o755),
          ("etc/os-release", "file", b"ID=busybox-test\n", 0o644),
          ("keep", "dir", None, 0o755), ("keep/a", "file", b"a\n", 0o644),
          ("keep/b", "file", b"b\n", 0o644),
          ("opq", "dir", None, 0o755), ("opq/old1", "file", b"old\n", 0o644),
          ("opq/sub", "dir", None, 0o755), ("opq/sub/old2", "file", b"old\n", 0o644),
          ("gone.txt", "file", b"gone\n", 0o644)]
    return e


class Layout:
    """An OCI image layout being written in dir."""

    def __init__(self, path):
        self.path = path
        os.makedirs(f"{path}/blobs/sha256", exist_ok=True)
        with open(f"{path}/oci-layout", "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)

    def blob(self, data):
        if isinstance(data, str):
            data = data.encode()
        h = hashlib.sha256(data).hexdigest()
        with open(f"{self.path}/blobs/sha256/{h}", "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + h, "size": len(data)}

    def image(self, layers, arch=ARCH, config_extra=None):
        """layers: lists of entries, bottom first; the manifest's descriptor"""
        ldescs, diffs = [], []
        for entries in layers:
            gz, raw = tar_bytes(entries)
            d = self.blob(gz)
            d["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
            ldescs.append(d)
            diffs.append("sha256:" + hashlib.sha256(raw).hexdigest())
        cfg = {"architecture": arch, "os": "linux",
               "config": {"Env": ["PATH=/bin:/imgbin", "IMAGE_VAR=from image", "HOME=/nothere",
                                  "bad name=x"], "WorkingDir": "/keep", "User": "65534"},
               "rootfs": {"type": "layers", "diff_ids": diffs}}
        cfg.update(config_extra or {})
        c = self.blob(json.dumps(cfg))
        c["mediaType"] = "application/vnd.oci.image.config.v1+json"
        m = self.blob(json.dumps({"schemaVersion": 2,
                                  "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                  "config": c, "layers": ldescs}))
        m["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
        m["platform"] = {"os": "linux", "architecture": arch}
        return m

    def index(self, manifests):
        with open(f"{self.path}/index.json", "w") as f:
            json.dump({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": manifests}, f)


def named(desc, name):
    d = dict(desc)
    d["annotations"] = {"org.opencontainers.image.ref.name": name}
    return d


def main():
    work = tempfile.mkdtemp(prefix="ts-images-")
    ids = []
    try:
        run_tests(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


def run_tests(work):
    r = ts("image", "ls", "--json")
    t(r.returncode == 0 and json.loads(r.stdout or "null") == [], "image ls of an empty store: []") \
        or diag(r.stdout + r.stderr)
    # 1. a two-layer image: a whiteout and an opaque directory over the base
    lay = Layout(f"{work}/oci")
    upper = [(".wh.gone.txt", "file", b"", 0o644),
             ("opq", "dir", None, 0o755), ("opq/.wh..wh..opq", "file", b"", 0o644),
             ("opq/new1", "file", b"new\n", 0o644),
             ("keep/c", "file", b"c\n", 0o644), ("added.txt", "file", b"added\n", 0o644)]
    two = lay.image([busybox_base(), upper])
    one = lay.image([busybox_base()])
    lay.index([named(two, "two"), named(one, "one")])

    r = ts("image", "import", f"oci:{work}/oci:two", "bb2")
    t(r.returncode == 0 and r.stdout.startswith("bb2 sha256:" + two["digest"][7:]),
      "image import oci:DIR:REF prints the name and the manifest's digest") or diag(r.stderr)
    r = ts("image", "import", f"oci:{work}/oci", "bbx")
    t(r.returncode != 0 and "name one with" in r.stderr,
      "a layout with several images and no REF is refused, asking for one") or diag(r.stderr)
    r = ts("image", "import", f"oci:{work}/oci:one", "bb1")
    t(r.returncode == 0, "the one-layer image imports too") or diag(r.stderr)

    r = sh("bb2", "cat /etc/os-release; ls /; test -e /usr/bin/python3 && echo HOST-PY; "
                  "test -e /bin/bash && echo HOST-BASH; echo end")
    t(r.returncode == 0 and "ID=busybox-test" in r.stdout and "added.txt" in r.stdout
      and "HOST-" not in r.stdout and "end" in r.stdout,
      "run --image NAME sees the image's files and not the host's") or diag(r.stdout + r.stderr)
    r = sh("bb2", "test -e /gone.txt && echo PRESENT || echo ABSENT")
    t(r.stdout.strip() == "ABSENT", "a whiteout in the upper layer hides the lower file") \
        or diag(r.stdout + r.stderr)
    r = sh("bb1", "cat /gone.txt")
    t(r.stdout.strip() == "gone", "the lower layer alone still has it (shared layer unchanged)") \
        or diag(r.stdout + r.stderr)
    r = sh("bb2", "cd /opq && find . | sort | tr '\\n' ' '")
    t(r.stdout.split() == [".", "./new1"],
      "an opaque directory shows only the upper layer's entries") or diag(r.stdout + r.stderr)
    r = sh("bb2", "ls /keep | tr '\\n' ' '")
    t(r.stdout.split() == ["a", "b", "c"], "a plain directory merges both layers") \
        or diag(r.stdout + r.stderr)
    r = sh("bb2", "echo x > /added.txt")
    t(r.returncode != 0, "the image's files are read-only to the sandbox's user") \
        or diag(r.stdout + r.stderr)

    r = ts("run", "--image", "bb2", "--", "/bin/sh", "-c", 'echo "$PATH|$IMAGE_VAR|$HOME|$(pwd)|$(id -u)"')
    t(r.stdout.strip() == "/bin:/imgbin|from image|/home/user|/home/user|1000",
      "the config's Env is set (not HOME); WorkingDir and User give way to the sandbox's") \
        or diag(r.stdout + r.stderr)
    pol = f"{work}/policy.yaml"
    with open(pol, "w") as f:
        f.write("env:\n  - IMAGE_VAR=from policy\n")
    r = ts("run", "--policy", pol, "--image", "bb2", "--", "/bin/sh", "-c", 'echo "$IMAGE_VAR"')
    t(r.stdout.strip() == "from policy", "the policy's env wins over the image's") \
        or diag(r.stdout + r.stderr)

    # 2. ls, inspect
    r = ts("image", "ls", "--json")
    try:
        lst = {e["name"]: e for e in json.loads(r.stdout)}
    except Exception:
        lst = {}
    t(set(lst) == {"bb1", "bb2"} and lst["bb2"]["layers"] == 2 and lst["bb2"]["size"] > 100000
      and lst["bb2"]["digest"] == two["digest"],
      "image ls --json: names, digests, layers, size on disk") or diag(r.stdout + r.stderr)
    r = ts("image", "ls")
    t(r.returncode == 0 and "bb2" in r.stdout and "NAME" in r.stdout, "image ls: a table") \
        or diag(r.stdout + r.stderr)
    r = ts("image", "inspect", "bb2")
    try:
        j = json.loads(r.stdout)
    except Exception:
        j = {}
    t(j.get("config", {}).get("config", {}).get("WorkingDir") == "/keep"
      and len(j.get("layers", [])) == 2 and all(os.path.isdir(l["path"]) for l in j["layers"])
      and j["layers"][0]["digest"] == json.loads(open(
          f"{work}/oci/blobs/sha256/{two['digest'][7:]}").read())["layers"][0]["digest"],
      "image inspect: config, manifest and layer directories") or diag(r.stdout + r.stderr)
    bb1_layer = json.loads(ts("image", "inspect", "bb1").stdout)["layers"][0]["path"]
    t(bb1_layer == j["layers"][0]["path"], "the shared base layer is unpacked once") \
        or diag(bb1_layer)
    r = ts("image", "inspect", "nosuch")
    t(r.returncode != 0 and "no image `nosuch`" in r.stderr, "inspect of an unknown name fails")

    # 3. multi-arch: a nested index, another architecture first
    ma = Layout(f"{work}/multi")
    other = "arm64" if ARCH != "arm64" else "amd64"
    d_other = ma.image([busybox_base() + [("arch", "file", other.encode(), 0o644)]], arch=other)
    d_this = ma.image([busybox_base() + [("arch", "file", ARCH.encode(), 0o644)]])
    inner = ma.blob(json.dumps({"schemaVersion": 2,
                                "mediaType": "application/vnd.oci.image.index.v1+json",
                                "manifests": [d_other, d_this]}))
    inner["mediaType"] = "application/vnd.oci.image.index.v1+json"
    ma.index([named(inner, "latest")])
    r = ts("image", "import", f"oci:{work}/multi:latest", "multi")
    t(r.returncode == 0 and d_this["digest"] in r.stdout,
      f"a multi-arch index yields linux/{ARCH}") or diag(r.stdout + r.stderr)
    r = sh("multi", "cat /arch")
    t(r.stdout.strip() == ARCH, "and its files are that architecture's") or diag(r.stdout + r.stderr)

    # 4. a corrupted blob
    bad = Layout(f"{work}/bad")
    d = bad.image([busybox_base(), [("x", "file", b"x\n", 0o644)]])
    man = json.loads(open(f"{work}/bad/blobs/sha256/{d['digest'][7:]}").read())
    lp = f"{work}/bad/blobs/sha256/{man['layers'][1]['digest'][7:]}"
    data = bytearray(open(lp, "rb").read())
    data[len(data) // 2] ^= 0xff
    open(lp, "wb").write(bytes(data))
    bad.index([d])
    r = ts("image", "import", f"oci:{work}/bad", "bad")
    t(r.returncode != 0 and "does not match its digest" in r.stderr,
      "a layer blob that does not match its digest is refused") or diag(r.stderr)
    t("bad" not in ts("image", "ls").stdout, "and no name is recorded")
    cfgp = f"{work}/bad/blobs/sha256/{man['config']['digest'][7:]}"
    open(lp, "wb").write(bytes(data[:-1]))
    with open(cfgp, "a") as f:
        f.write(" ")
    r = ts("image", "import", f"oci:{work}/bad", "bad")
    t(r.returncode != 0 and "does not match its digest" in r.stderr,
      "a config blob that does not match its digest is refused") or diag(r.stderr)

    lie = Layout(f"{work}/lie")
    lie.index([lie.image([busybox_base()], config_extra={
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]}})])
    r = ts("image", "import", f"oci:{work}/lie", "lie")
    t(r.returncode != 0 and "config's diff_id says" in r.stderr,
      "a layer that does not decompress to its config's diff_id is refused") or diag(r.stderr)
    lie2 = Layout(f"{work}/lie2")
    lie2.index([lie2.image([busybox_base()], config_extra={
        "rootfs": {"type": "layers", "diff_ids": []}})])
    r = ts("image", "import", f"oci:{work}/lie2", "lie")
    t(r.returncode != 0 and "diff_ids do not list" in r.stderr,
      "a config whose diff_ids do not match the layers is refused") or diag(r.stderr)
    # a layer no store has yet: its diff_id is taken while it is unpacked into tmp/, so the
    # refusal must also remove what was unpacked (the busybox layer above was in the store)
    layers_dir, tmp_dir = f"{root}/images/oci/layers/sha256", f"{root}/images/oci/tmp"
    lie3 = Layout(f"{work}/lie3")
    lie3.index([lie3.image([busybox_base() + [("lie3", "file", b"in no store yet\n", 0o644)]],
                           config_extra={"rootfs": {"type": "layers", "diff_ids": ["sha256:" + "1" * 64]}})])
    before = set(os.listdir(layers_dir))
    r = ts("image", "import", f"oci:{work}/lie3", "lie3")
    t(r.returncode != 0 and "config's diff_id says" in r.stderr and set(os.listdir(layers_dir)) == before
      and not [x for x in os.listdir(tmp_dir) if x.startswith("layer-")] and "lie3" not in ts("image", "ls").stdout,
      "a new layer that does not decompress to its diff_id: refused, nothing installed, nothing in tmp/") \
        or diag(r.stderr)
    # a gzip stream cut short (its digest names the cut bytes): refused while unpacking
    cut = Layout(f"{work}/cut")
    gz, raw = tar_bytes(busybox_base() + [("cut", "file", os.urandom(200000), 0o644)])
    ld = cut.blob(gz[:len(gz) * 3 // 4])
    ld["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
    cd = cut.blob(json.dumps({"architecture": ARCH, "os": "linux", "config": {},
                              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}}))
    cd["mediaType"] = "application/vnd.oci.image.config.v1+json"
    md = cut.blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                              "config": cd, "layers": [ld]}))
    md["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    cut.index([md])
    r = ts("image", "import", f"oci:{work}/cut", "cut")
    t(r.returncode != 0 and set(os.listdir(layers_dir)) == before
      and not [x for x in os.listdir(tmp_dir) if x.startswith("layer-")] and "cut" not in ts("image", "ls").stdout,
      "a layer whose compressed stream is cut short is refused, nothing installed") or diag(r.stderr)

    # 5. hostile layers
    outside = f"{work}/outside"
    os.makedirs(outside)
    os.chmod(work, 0o755)
    os.chmod(outside, 0o777)
    hostile = [("../escape-dotdot", "file", b"x", 0o644),
               ("a/../../escape-inner", "file", b"x", 0o644),
               (f"{outside}/abs-escape", "file", b"x", 0o644),
               ("link", "symlink", outside, 0o777),
               ("link/through-symlink", "file", b"x", 0o644),
               ("hl-abs", "hardlink", "/etc/passwd", 0o644),
               ("hl-up", "hardlink", "../../../../etc/passwd", 0o644),
               ("hl-link", "hardlink", "link", 0o644),
               ("dev-null", "chr", None, 0o666),
               ("fifo", "fifo", None, 0o644),
               ("suid", "file", b"#!/bin/sh\n", 0o4755),
               ("sgid-dir", "dir", None, 0o2775),
               ("kept.txt", "file", b"kept\n", 0o644)]
    hl = Layout(f"{work}/hostile")
    hl.index([hl.image([busybox_base(), hostile])])
    r = ts("image", "import", f"oci:{work}/hostile", "hostile")
    t(r.returncode == 0, "a hostile layer is imported with its bad entries neutralised") \
        or diag(r.stderr)
    w = r.stderr
    t(all(s in w for s in ("`../escape-dotdot`: an absolute name", "goes through a symbolic link",
                            "`hl-abs`: a hard link", "`hl-up`: a hard link", "`hl-link`: a hard link",
                            "`dev-null`: a device node", "`fifo`: a FIFO",
                            "`suid`: cleared its setuid", "`sgid-dir/`: cleared")),
      "each neutralised entry is named in a warning") or diag(w)
    t(os.listdir(outside) == [] and not os.path.exists(f"{work}/escape-dotdot")
      and not os.path.exists(f"{root}/images/oci/layers/escape-dotdot")
      and not os.path.exists(f"{root}/images/oci/escape-inner"),
      "nothing was written outside the layer directory") or diag(os.listdir(outside))
    r = sh("hostile", "cat /kept.txt; stat -c '%a %n' /suid /sgid-dir; ls -l /link; "
                      "test -e /dev-null-x; ls / | tr '\\n' ' '")
    out = r.stdout
    t("kept" in out and "755 /suid" in out and "775 /sgid-dir" in out and "hl-abs" not in out
      and "fifo" not in out and "escape" not in out,
      "inside: no setuid/setgid bits, no device, no hard link out") or diag(out + r.stderr)

    # 6. bounds: an oversized entry, a tar bomb (small compressed, huge unpacked)
    big = Layout(f"{work}/big")
    big.index([big.image([[("big", "file", b"\0" * (3 << 20), 0o644)]])])
    r = ts("image", "import", "--max-size", "1M", f"oci:{work}/big", "big")
    t(r.returncode != 0 and ("larger than" in r.stderr or "more than" in r.stderr)
      and "big" not in ts("image", "ls").stdout, "an entry past --max-size is refused") \
        or diag(r.stderr)
    bomb = Layout(f"{work}/bomb")
    bomb.index([bomb.image([[(f"f{i}", "file", b"\0" * (1 << 20), 0o644) for i in range(12)]])])
    t(os.path.getsize(f"{work}/bomb/index.json") > 0, "the bomb is small compressed")
    r = ts("image", "import", "--max-size", "8M", f"oci:{work}/bomb", "bomb")
    t(r.returncode != 0 and "more than" in r.stderr, "a layer unpacking past --max-size is refused") \
        or diag(r.stderr)
    leftovers = [x for x in os.listdir(f"{root}/images/oci/tmp")]
    t(leftovers == [], "a refused layer leaves nothing in tmp/") or diag(leftovers)

    # a killed import leaves no half layer in use, and the next import cleans up after it
    slow = Layout(f"{work}/slow")
    slow.index([slow.image([busybox_base() + [(f"z{i}", "file", b"\0" * (16 << 20), 0o644)
                                              for i in range(12)]])])
    p = subprocess.Popen([cli, "image", "import", f"oci:{work}/slow", "slow"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    import time
    deadline = time.time() + 30
    while time.time() < deadline and not any(
            x.startswith("layer-") for x in os.listdir(f"{root}/images/oci/tmp")):
        time.sleep(0.01)
    p.kill()
    p.wait()
    layers_now = os.listdir(f"{root}/images/oci/layers/sha256")
    t(p.returncode == -9 and "slow" not in ts("image", "ls").stdout
      and os.listdir(f"{root}/images/oci/tmp") != [],
      "an import killed while unpacking records no name (its work stays in tmp/)") \
        or diag(f"rc {p.returncode} tmp {os.listdir(root + '/images/oci/tmp')}")
    r = ts("image", "import", f"oci:{work}/slow", "slow")
    t(r.returncode == 0 and os.listdir(f"{root}/images/oci/tmp") == []
      and len(os.listdir(f"{root}/images/oci/layers/sha256")) == len(layers_now) + 1,
      "the next import cleans tmp/ and installs the whole layer") or diag(r.stderr)
    r = sh("slow", "wc -c < /z11")
    t(r.stdout.strip() == str(16 << 20), "and the layer is complete") or diag(r.stdout + r.stderr)
    ts("image", "rm", "slow")
    ts("image", "prune")

    # 7. docker-archive
    base_gz, base_raw = tar_bytes(busybox_base(), compress=False)
    up_gz, up_raw = tar_bytes(upper + [("from-docker", "file", b"docker\n", 0o644)], compress=False)
    cfg = json.dumps({"architecture": ARCH, "os": "linux", "config": {},
                      "rootfs": {"type": "layers", "diff_ids": [
                          "sha256:" + hashlib.sha256(base_raw).hexdigest(),
                          "sha256:" + hashlib.sha256(up_raw).hexdigest()]}}).encode()
    cfgname = hashlib.sha256(cfg).hexdigest() + ".json"
    manifest = json.dumps([{"Config": cfgname, "RepoTags": ["bb:latest"],
                            "Layers": ["l1/layer.tar", "l2/layer.tar"]}]).encode()
    arch_entries = [("manifest.json", "file", manifest, 0o644), (cfgname, "file", cfg, 0o644),
                    ("l1", "dir", None, 0o755), ("l1/layer.tar", "file", base_raw, 0o644),
                    ("l2", "dir", None, 0o755), ("l2/layer.tar", "file", up_raw, 0o644)]
    _, archive = tar_bytes(arch_entries, compress=False)
    with open(f"{work}/docker.tar", "wb") as f:
        f.write(archive)
    r = ts("image", "import", f"docker-archive:{work}/docker.tar", "dock")
    t(r.returncode == 0 and " sha256:" in r.stdout, "image import docker-archive:FILE") \
        or diag(r.stderr)
    r = sh("dock", "cat /from-docker; test -e /gone.txt || echo nogone; ls /opq")
    t(r.stdout.split() == ["docker", "nogone", "new1"],
      "a docker-archive image runs with its layers and whiteouts") or diag(r.stdout + r.stderr)
    broken = bytearray(up_raw)
    broken[600] ^= 1
    arch_entries[5] = ("l2/layer.tar", "file", bytes(broken), 0o644)
    with open(f"{work}/docker-bad.tar", "wb") as f:
        f.write(tar_bytes(arch_entries, compress=False)[1])
    r = ts("image", "import", f"docker-archive:{work}/docker-bad.tar", "dockbad")
    t(r.returncode != 0 and "does not match its digest" in r.stderr,
      "a docker-archive layer that does not match its diff_id is refused") or diag(r.stderr)

    for what, entries in (
            ("a layer path out of the archive", [("manifest.json", "file", json.dumps(
                [{"Config": cfgname, "Layers": ["../../../../etc/passwd", "l2/layer.tar"]}]).encode(), 0o644)]),
            ("an absolute config path", [("manifest.json", "file", json.dumps(
                [{"Config": "/etc/hostname", "Layers": ["l1/layer.tar", "l2/layer.tar"]}]).encode(), 0o644)]),
            ("a layer that is a symlink out", [("manifest.json", "file", json.dumps(
                [{"Config": cfgname, "Layers": ["evil.tar", "l2/layer.tar"]}]).encode(), 0o644),
                ("evil.tar", "symlink", "/etc/passwd", 0o777)])):
        good = [e for e in arch_entries if e[0] != "manifest.json"]
        with open(f"{work}/docker-evil.tar", "wb") as f:
            f.write(tar_bytes(entries + good, compress=False)[1])
        r = ts("image", "import", f"docker-archive:{work}/docker-evil.tar", "dockevil")
        t(r.returncode != 0 and "leads out of it" in r.stderr
          and "dockevil" not in ts("image", "ls").stdout,
          f"a docker-archive with {what} is refused") or diag(r.stderr)

    # 7b. changes to an image's directories: the root is an overlay mounted with `userxattr`
    # in the sandbox's user namespace, whose marks are user.overlay.* in the upper (without
    # it, removing a lower directory failed with EIO: no opaque mark could be set); as root
    # (root-range) the layers unpacked by root are id-mapped so that a copy-up can give its
    # copy an owner (without it, EOVERFLOW). In a single-id namespace (userns) there is no
    # root inside, the root is read-only: the mount is checked, and that a write is EROFS.
    changes(work)
    if os.environ.get("TS_MODE", "") == "root":
        linked_dir(work)

    # 8. create --image NAME, then rm and prune
    r = ts("create", "--image", "bb2")
    sid = r.stdout.strip()
    t(r.returncode == 0 and sid, "create --image NAME") or diag(r.stderr)
    if sid:
        r = ts("exec", sid, "--", "/bin/sh", "-c", 'cat /added.txt; echo "$IMAGE_VAR"')
        t(r.stdout.split("\n")[:2] == ["added", "from image"],
          "exec in it sees the image and its Env") or diag(r.stdout + r.stderr)
        ts("rm", "-f", sid)
    r = ts("run", "--image", "nosuch", "--", "/bin/true")
    t(r.returncode != 0 and "no image `nosuch`" in r.stderr, "run --image of an unknown name fails") \
        or diag(r.stderr)
    # 9. what sandboxes use outlives `image rm` + `image prune`: a stopped durable sandbox
    # (its spec pins the layers at create) and a running one-shot one (it holds its layers)
    def layer_dirs(name):
        r = ts("image", "inspect", name)
        return [l["path"] for l in json.loads(r.stdout)["layers"]] if r.returncode == 0 else []
    bb2_dirs, multi_dirs = layer_dirs("bb2"), layer_dirs("multi")
    r = ts("create", "--image", "bb2")
    keep = r.stdout.strip()
    t(r.returncode == 0 and keep and ts("stop", keep).returncode == 0,
      "a durable sandbox from bb2, stopped") or diag(r.stderr)
    run = subprocess.Popen([cli, "run", "--image", "multi", "--", "/bin/sh", "-c",
                            "echo up; read x; cat /arch"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    up = run.stdout.readline().strip()
    t(up == "up", "a one-shot sandbox from multi, running") or diag(up)
    layers_before = set(os.listdir(f"{root}/images/oci/layers/sha256"))
    r = ts("image", "rm", "bb2", "bb1", "multi", "hostile", "dock")
    t(r.returncode == 0 and ts("image", "ls", "--json").stdout.strip() == "[]",
      "image rm forgets the names, also of images in use") or diag(r.stderr)
    t(set(os.listdir(f"{root}/images/oci/layers/sha256")) == layers_before,
      "their layers stay until prune")
    r = ts("image", "prune")
    t(r.returncode == 0 and bb2_dirs and all(os.path.isdir(d) for d in bb2_dirs),
      "image prune keeps the layers a stopped durable sandbox was created from") \
        or diag(r.stdout + r.stderr + str(bb2_dirs))
    t(multi_dirs and all(os.path.isdir(d) for d in multi_dirs),
      "and the layers a running one-shot sandbox stacks") or diag(multi_dirs)
    t(len(os.listdir(f"{root}/images/oci/layers/sha256")) == len(set(bb2_dirs + multi_dirs)),
      "and deletes the others") or diag(os.listdir(f"{root}/images/oci/layers/sha256"))
    out, _ = run.communicate("go\n", timeout=60)
    t(run.returncode == 0 and out.strip() == ARCH,
      "the one-shot sandbox still reads its image's files after the prune") or diag(out)
    if keep:
        r = ts("start", keep)
        t(r.returncode == 0, "the durable sandbox starts after its image was removed and pruned") \
            or diag(r.stderr)
        r = ts("exec", keep, "--", "/bin/sh", "-c", 'cat /added.txt /keep/c; echo "$IMAGE_VAR"')
        t(r.stdout.split("\n")[:3] == ["added", "c", "from image"],
          "and sees its image's files and Env") or diag(r.stdout + r.stderr)
        ts("rm", "-f", keep)
    r = ts("image", "prune")
    t(r.returncode == 0 and os.listdir(f"{root}/images/oci/layers/sha256") == []
      and os.listdir(f"{root}/images/oci/blobs/sha256") == [],
      "once the sandboxes are gone, image prune deletes every unreferenced layer and blob") \
        or diag(r.stdout + r.stderr)


def linked_dir(work):
    """Root mode: `--image DIR` under `--user root` is id-mapped (what root owns in DIR is
    the sandbox root's, SECURITY.md), but only when no component of DIR's path is a
    symbolic link: another user who owns a directory on the way could otherwise swap it
    for a link to `/` while the helper sets up, and have the host's root file system
    id-mapped."""
    d = f"{work}/dirimg"
    os.makedirs(f"{d}/bin", exist_ok=True)
    shutil.copy(BUSYBOX, f"{d}/bin/busybox")
    for app in ("sh", "stat"):
        if not os.path.lexists(f"{d}/bin/{app}"):
            os.symlink("busybox", f"{d}/bin/{app}")
    with open(f"{d}/secret", "w") as f:
        f.write("s\n")
    os.chmod(f"{d}/secret", 0o600)
    os.chmod(work, 0o755)
    os.chmod(d, 0o755)
    os.symlink(d, f"{work}/dirimg-link")
    probe = "stat -c '%U %G' /secret"
    r = ts("run", "--user", "root", "--image", d, "--", "/bin/sh", "-c", probe)
    t(r.returncode == 0 and r.stdout.strip() == "root root",
      "--image DIR as root, --user root: root's files in DIR are the sandbox root's (id-mapped)") \
        or diag(r.stdout + r.stderr)
    r = ts("run", "--user", "root", "--image", f"{work}/dirimg-link", "--", "/bin/sh", "-c", probe)
    t(r.returncode == 0 and r.stdout.strip() == "nobody nogroup"
      and "symbolic link: not id-mapped" in r.stderr,
      "the same DIR reached through a symbolic link is not id-mapped (a warning says why)") \
        or diag(r.stdout + r.stderr)


CHANGE = ("cd /w && rm deep/a/b/f && echo rmfile && rm -rf deep && test ! -e deep && echo rmtree"
          " && mkdir deep && touch deep/new && echo remade && ls -A deep && mv ren ren2 && echo mv"
          " && echo $(ls -A /w) && cat ren2/s")
CHANGED = ["rmfile", "rmtree", "remade", "new", "mv", "deep keep ren2", "s"]
AFTER = "ls -A /w/deep; echo $(ls -A /w); cat /w/ren2/s; test -e /w/deep/a || echo no-a"


def changes(work):
    mode = os.environ.get("TS_MODE", "")
    entries = busybox_base() + [(f"bin/{a}", "symlink", "busybox", 0o777)
                                for a in ("rm", "mkdir", "mv", "touch", "grep")]
    entries += [("w", "dir", None, 0o777), ("w/deep", "dir", None, 0o777),
                ("w/deep/a", "dir", None, 0o777), ("w/deep/a/b", "dir", None, 0o777),
                ("w/deep/a/b/f", "file", b"f\n", 0o666), ("w/ren", "dir", None, 0o777),
                ("w/ren/s", "file", b"s\n", 0o666), ("w/keep", "file", b"k\n", 0o666)]
    lay = Layout(f"{work}/chg")
    lay.index([named(lay.image([entries]), "latest")])
    r = ts("image", "import", f"oci:{work}/chg:latest", "chg")
    if not t(r.returncode == 0, "an image with a directory tree to change imports"):
        diag(r.stderr)
        return
    if mode == "userns":
        r = ts("create", "--image", "chg")
        sid = r.stdout.strip()
        t(r.returncode == 0 and sid, "userns: a durable sandbox of the image") or diag(r.stderr)
        if not sid:
            return
        r = ts("exec", sid, "--", "/bin/sh", "-c", "grep ' / / ' /proc/self/mountinfo")
        t(" overlay " in r.stdout and ",userxattr" in r.stdout,
          "userns: its root is an overlay mounted with userxattr") or diag(r.stdout + r.stderr)
        r = ts("exec", sid, "--", "/bin/sh", "-c", "rm -rf /w/deep; mkdir /w/x")
        t(r.returncode != 0 and "Read-only file system" in r.stderr
          and "Input/output error" not in r.stderr,
          "userns: without a root inside the image is read-only: EROFS, never EIO") \
            or diag(r.stdout + r.stderr)
        t(ts("stop", sid).returncode == 0 and ts("start", sid).returncode == 0,
          "userns: it stops and starts again")
        r = ts("exec", sid, "--", "/bin/sh", "-c", "cat /w/deep/a/b/f")
        t(r.stdout.strip() == "f", "userns: and the image's files are there") \
            or diag(r.stdout + r.stderr)
        ts("rm", "-f", "--purge", sid)
        ts("image", "rm", "chg")
        return
    r = ts("run", "--user", "root", "--image", "chg", "--", "/bin/sh", "-c", CHANGE)
    t(r.returncode == 0 and r.stdout.split("\n")[:7] == CHANGED
      and "Input/output error" not in r.stderr and "Value too large" not in r.stderr,
      "--user root: a lower file removed, its directory tree removed and made again (only "
      "the new entry), a lower directory renamed; no EIO, no EOVERFLOW") or diag(r.stdout + r.stderr)
    r = ts("run", "--user", "root", "--image", "chg", "--", "/bin/sh", "-c", "stat -c '%U %G' /w/keep")
    # layers belong to the importing user: root's are id-mapped to the sandbox's root, the
    # test user's are the sandbox's user
    owner = "root root" if mode == "root" else "user user"
    t(r.stdout.strip() == owner, f"the image's files belong to the importer's id inside ({owner})") \
        or diag(r.stdout + r.stderr)
    r = ts("create", "--user", "root", "--image", "chg")
    sid = r.stdout.strip()
    t(r.returncode == 0 and sid, "a durable sandbox with root of the image") or diag(r.stderr)
    if not sid:
        ts("image", "rm", "chg")
        return
    r = ts("exec", sid, "--", "/bin/sh", "-c", CHANGE)
    t(r.returncode == 0 and r.stdout.split("\n")[:7] == CHANGED and "error" not in r.stderr,
      "durable: the same changes") or diag(r.stdout + r.stderr)
    deep = f"{root}/{sid}/upper/w/deep"
    try:
        mark = os.getxattr(deep, "user.overlay.opaque", follow_symlinks=False)
    except OSError as e:
        mark = str(e)
    t(mark == b"y", "the remade directory is opaque in the upper by user.overlay.opaque") \
        or diag(mark)
    want = ["new", "deep keep ren2", "s", "no-a"]
    r1 = ts("stop", sid)
    r2 = ts("start", sid)
    r = ts("exec", sid, "--", "/bin/sh", "-c", AFTER)
    t(r1.returncode == 0 and r2.returncode == 0 and r.stdout.split("\n")[:4] == want,
      "durable: after stop and start the changes are kept (the lower tree stays hidden)") \
        or diag(r1.stderr + r2.stderr + r.stdout + r.stderr)
    r = ts("snapshot", sid)
    snap = r.stdout.strip()
    t(r.returncode == 0 and snap, "a snapshot of it") or diag(r.stderr)
    ts("rm", "-f", "--purge", sid)
    if snap:
        r = ts("create", "--user", "root", "--image", snap)
        sid2 = r.stdout.strip()
        r = ts("exec", sid2, "--", "/bin/sh", "-c", AFTER) if sid2 else r
        t(sid2 and r.stdout.split("\n")[:4] == want,
          "a sandbox from the snapshot has the changes, the opaque directory too") \
            or diag(r.stdout + r.stderr)
        if sid2:
            ts("rm", "-f", "--purge", sid2)
        ts("snapshot", "rm", snap)
    ts("image", "rm", "chg")


if __name__ == "__main__":
    main()
