#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`image build base`: the default image from Debian's packages, and serve's `base` template.

The one test that needs a network: mmdebstrap downloads Debian's packages from the mirror
the build uses (the host's apt sources; TS_IMAGE_BUILD_MIRROR overrides), and nothing else
leaves the machine. An unreachable mirror is a skip with the reason, never a pass. It takes
a minute or two a mode; it runs in the root mode and as the test user (TS_IMAGE_BUILD_USER=0
leaves the second out, reported as a skip); under `unshare -r` (one id) the build is
refused, and that refusal is what is checked. Downloaded packages are kept in an apt cache
on the test machine (/var/tmp/toren-sandbox-apt-<uid>, or TS_IMAGE_BUILD_CACHE), so a
second run downloads nothing.

Checked, inside sandboxes from the image: node, python3, git, curl run; `sudo -n true` is
refused without the sudo policy and works in serve's `base` template (a root and sudo for
`user`); the E2B server uses the local image `base` for its `base` template when the store
has one (a marker package the host lacks is there) and the host image when it has none; a
killed build leaves no image and no work directory in use. TAP on stdout.
Env: TS_CLI, TOREN_SANDBOX_ROOT, TS_MODE (modes.sh).
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

cli = os.environ.get("TS_CLI", "toren-sandbox")
root = os.environ.get("TOREN_SANDBOX_ROOT", "")
mode = os.environ.get("TS_MODE", "root")
KEY = "e2b_" + "0" * 40
MARKER = "hello"  # a tiny Debian package with /usr/bin/hello, which hosts rarely have
n = 0
failed = 0


def t(cond, desc):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}", flush=True)


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def ts(*args, timeout=120):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def host_mirror():
    """The mirror the build will use: the first URI of the host's apt sources."""
    m = os.environ.get("TS_IMAGE_BUILD_MIRROR")
    if m:
        return m
    texts = []
    for d, names in (("/etc/apt", ["sources.list"]),
                     ("/etc/apt/sources.list.d", sorted(os.listdir("/etc/apt/sources.list.d"))
                      if os.path.isdir("/etc/apt/sources.list.d") else [])):
        for name in names:
            if name.endswith((".list", ".sources")):
                try:
                    texts.append(open(os.path.join(d, name)).read())
                except OSError:
                    pass
    for text in texts:
        mm = re.search(r"^URIs:\s*(\S+)", text, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        if mm and "debian" in mm.group(1):
            return mm.group(1)
    return "http://deb.debian.org/debian"


def suite():
    try:
        for line in open("/etc/os-release"):
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "stable"


def reachable(mirror):
    url = f"{mirror.rstrip('/')}/dists/{suite()}/InRelease"
    try:
        with urllib.request.urlopen(url, timeout=15) as r:
            return r.status == 200, f"{url}: HTTP {r.status}"
    except Exception as e:  # any failure is "not reachable", with its reason
        return False, f"{url}: {e}"


def cache_dir():
    d = os.environ.get("TS_IMAGE_BUILD_CACHE") or f"/var/tmp/toren-sandbox-apt-{os.getuid()}"
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
    except OSError:
        return None
    # someone else's directory in /var/tmp is not ours to fill (or to trust); mmdebstrap's
    # sync-out gives it the mode of /var/cache/apt/archives (0755)
    if st.st_uid != os.getuid() or st.st_mode & 0o022 or not os.path.isdir(d):
        return None
    return d


def main():
    try:
        run_tests()
    finally:
        print(f"1..{n}")
    sys.exit(1 if failed else 0)


def run_tests():
    # bad input is refused before anything runs (no network, every mode)
    for args, want, what in (
            (["--packages", "bash;rm -rf /", "base"], "not a Debian package name", "a bad package name"),
            (["--mirror", "http://x y/debian", "base"], "without spaces or quotes", "a bad mirror"),
            (["--mirror", "ftp://x/debian", "base"], "an http://, https:// or file:/ URL", "a mirror that is not http(s) or file"),
            (["--suite", "../x", "base"], "a Debian release name", "a bad suite"),
            (["--name", "../x", "base"], "image name `../x`", "a bad image name"),
            (["nosuch"], "no recipe `nosuch`", "an unknown recipe"),
            (["--apt-cache", "rel/dir", "base"], "an absolute path", "a relative apt cache")):
        r = ts("image", "build", *args)
        t(r.returncode in (1, 2) and want in r.stderr and not os.path.exists(f"{root}/images/oci/index.json"),
          f"image build refuses {what}, building nothing") or diag(r.stderr)
    if mode == "userns":
        r = ts("image", "build", "base")
        t(r.returncode == 1 and "user namespace of its own" in r.stderr
          and "base" not in ts("image", "ls").stdout,
          "under `unshare -r` the build is refused, saying why") or diag(r.stderr)
        skip("image build base", "mmdebstrap needs root or subordinate ids; `unshare -r` has one id")
        return
    if mode == "user" and os.environ.get("TS_IMAGE_BUILD_USER") == "0":
        skip("image build base as the test user", "TS_IMAGE_BUILD_USER=0 leaves it out")
        return
    if subprocess.run(["sh", "-c", "command -v mmdebstrap"], capture_output=True).returncode:
        skip("image build base", "mmdebstrap is not installed (apt-get install mmdebstrap)")
        return
    mirror = host_mirror()
    ok, why = reachable(mirror)
    if not ok:
        skip("image build base", f"the Debian mirror is not reachable: {why}")
        return
    cache = cache_dir()
    cache_args = ["--apt-cache", cache] if cache else []

    # a killed build: no name, and its work directory is removed by the next prune
    p = subprocess.Popen([cli, "image", "build", "-q", *cache_args, "--name", "killed", "base"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tmp = f"{root}/images/oci/tmp"
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.isdir(tmp) and os.listdir(tmp)):
        time.sleep(0.1)
    time.sleep(2)
    p.kill()
    p.wait()
    busy = os.listdir(tmp) if os.path.isdir(tmp) else []
    r = ts("image", "prune")
    deadline = time.time() + 300  # mmdebstrap, told by SIGTERM, cleans up and exits
    while time.time() < deadline and os.listdir(tmp):
        time.sleep(0.5)
        ts("image", "prune")
    t(busy and "killed" not in ts("image", "ls").stdout and os.listdir(tmp) == [],
      "a killed build records no image, and its work directory goes with the next prune") \
        or diag(f"tmp before {busy}, after {os.listdir(tmp)}; {r.stderr}")

    start = time.time()
    r = ts("image", "build", *cache_args, "--packages", MARKER, "base", timeout=1800)
    took = time.time() - start
    t(r.returncode == 0 and re.match(r"^base sha256:[0-9a-f]{64}$", r.stdout.strip()),
      f"image build base ({took:.0f} s, mirror {mirror}, apt cache {cache or 'none'})") \
        or diag(r.stdout + r.stderr[-3000:])
    diag(f"image build base took {took:.1f} s")
    lst = {e["name"]: e for e in json.loads(ts("image", "ls", "--json").stdout or "[]")}
    t("base" in lst and lst["base"]["layers"] == 1 and lst["base"]["size"] > 50 << 20
      and lst["base"]["source"].startswith("build:"),
      "image ls: `base`, one layer, its size, source build:") or diag(lst)
    if "base" not in lst:
        return
    checks = [("node --version", r"^v\d+\.\d+"), ("python3 -c 'print(1)'", r"^1$"),
              ("git --version", r"^git version "), ("curl --version", r"^curl \d"),
              ("npm --version", r"^\d+\.\d+"), ("tput -T xterm cols", r"^\d+$")]
    for cmd, want in checks:
        r = ts("run", "--image", "base", "--", "/bin/sh", "-c", cmd)
        t(r.returncode == 0 and re.search(want, r.stdout.strip().split("\n")[0] if r.stdout else ""),
          f"run --image base: {cmd}") or diag(r.stdout + r.stderr)
    r = ts("run", "--image", "base", "--", "/bin/sh", "-c",
           f"test -x /usr/bin/{MARKER} && grep -h ^ID= /etc/os-release; id -un")
    t(r.stdout.split() == ["ID=debian", "user"], "the image's own files (the marker package); user `user`") \
        or diag(r.stdout + r.stderr)
    r = ts("run", "--image", "base", "--", "sudo", "-n", "true")
    t(r.returncode != 0, "without the sudo policy, sudo -n true is refused (no privilege to gain)") \
        or diag(r.stdout + r.stderr)
    serve_checks()


def serve_checks():
    serve = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen",
                              "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    created = []
    try:
        line = serve.stdout.readline()
        m = re.search(r"control plane on (\S+), envd on (\S+)", line)
        if not t(m is not None, "serve starts"):
            diag(line)
            return
        api = m.group(1).rstrip(",")

        def request(method, path, body=None):
            host, port = api.rsplit(":", 1)
            c = http.client.HTTPConnection(host, int(port), timeout=120)
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
            resp = c.getresponse()
            text = resp.read()
            c.close()
            return resp.status, json.loads(text) if text else None

        def sandbox():
            st, j = request("POST", "/sandboxes", {"templateID": "base", "timeout": 300})
            sid = (j or {}).get("sandboxID")
            if sid:
                created.append(sid)
            return st, j, sid

        st, j, sid = sandbox()
        t(st == 201 and sid, "an E2B sandbox of template base") or diag(f"{st} {j}")
        if sid:
            r = ts("exec", sid, "--", "/bin/sh", "-c",
                   f"test -x /usr/bin/{MARKER} && echo IMAGE; node --version >/dev/null && "
                   "python3 -c 'print(1)' >/dev/null && git --version >/dev/null && echo TOOLS; "
                   "sudo -n true && echo SUDO; id -un")
            t(r.stdout.split() == ["IMAGE", "TOOLS", "SUDO", "user"],
              "the base template runs the local image `base`: its tools, and `sudo -n true` "
              "works for `user` (the template's sudo)") or diag(r.stdout + r.stderr)
        # without `base` in the store: the host image, as before
        t(ts("image", "rm", "base").returncode == 0, "image rm base")
        st, j, sid2 = sandbox()
        if t(st == 201 and sid2, "an E2B sandbox of template base without the image"):
            r = ts("exec", sid2, "--", "/bin/sh", "-c",
                   f"test -x /usr/bin/{MARKER} && echo IMAGE || echo HOST")
            host_has = os.path.exists(f"/usr/bin/{MARKER}")
            t(r.stdout.strip() == ("IMAGE" if host_has else "HOST"),
              "... runs the host image") or diag(r.stdout + r.stderr)
        if sid:
            r = ts("exec", sid, "--", "/bin/sh", "-c", f"test -x /usr/bin/{MARKER} && echo IMAGE")
            t(r.stdout.strip() == "IMAGE", "the first sandbox keeps its image after image rm") \
                or diag(r.stdout + r.stderr)
    finally:
        for i in created:
            try:
                request("DELETE", "/sandboxes/" + i)
            except Exception:
                pass
            ts("rm", "-f", i)
        serve.terminate()
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
        ts("image", "prune")


if __name__ == "__main__":
    main()
