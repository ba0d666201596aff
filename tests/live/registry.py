#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`image pull` from real registries on this machine, `run --image REF`.

Registries on 127.0.0.1 (a loopback registry is plain http): Debian's `docker-registry`,
images pushed to it with `skopeo` from OCI layouts built here (busybox-static, images.py's
builders); a second `docker-registry` with token authentication, whose JWTs a token server
here signs with openssl; and a token-auth registry written here (the bearer flow as Docker
Hub speaks it, credentials from an auth file) that counts what it serves and can stall.
Checked: a two-layer image with a whiteout and an opaque directory; a multi-arch index
yields this machine's architecture; a pull by digest, and a digest the registry's bytes
do not match; a corrupted blob refused with nothing left in use; a second pull fetches no
layer; two concurrent pulls download each blob once; the bearer flow refuses without
credentials and works with them; a pull killed mid-layer leaves no half layer (its work
directory, unlocked, is swept by the next pull) and the next pull works; `run --image
REF` pulls what the store lacks; `image ls` shows it; serve
pulls an E2B templateID that is a reference off its loop, and SIGTERM while such a pull
stalls ends serve at once with no half layer; the agent runner pulls its `sandbox.image`;
while a pull streams a layer into its work directory, a prune and an import leave that
directory and the unnamed store layer it builds on alone, and the pull installs whole
layers (an opaque directory over that layer).

TAP on stdout. Env: TS_CLI, TOREN_SANDBOX_ROOT.
"""
import base64
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import images  # noqa: E402  (the image builders)

cli = os.environ.get("TS_CLI", "toren-sandbox")
root = os.environ.get("TOREN_SANDBOX_ROOT", "")
must_work = os.environ.get("TS_TESTS_MUST_WORK") == "1"
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


def ts(*args, timeout=180, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout, env=e)


def pull(*args, env=None):
    r = ts("image", "pull", "--json", *args, env=env)
    try:
        return r, json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        return r, None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def registry_blob(data, layout, manifest, i):
    """Where the registry keeps layer i of manifest (pushed from layout) on disk."""
    man = json.load(open(f"{layout}/blobs/sha256/{manifest['digest'][7:]}"))
    lhex = man["layers"][i]["digest"][7:]
    return f"{data}/docker/registry/v2/blobs/sha256/{lhex[:2]}/{lhex}/data"


def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xff]))


def layer_dirs():
    d = f"{root}/images/oci/layers/sha256"
    return set(os.listdir(d)) if os.path.isdir(d) else set()


# --- the docker-registry -------------------------------------------------------------------

def start_registry(work):
    port = free_port()
    data = f"{work}/registry"
    cfg = f"{work}/registry.yml"
    with open(cfg, "w") as f:
        f.write(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {data}\n"
                f"http:\n  addr: 127.0.0.1:{port}\nlog:\n  level: error\n")
    log = open(f"{work}/registry.log", "w")
    p = subprocess.Popen(["docker-registry", "serve", cfg], stdout=log, stderr=log)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p, port, data
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("docker-registry did not listen")


def push(layout, ref_name, dest, all_=False):
    args = ["skopeo", "copy", "--quiet", "--dest-tls-verify=false"]
    if all_:
        args.append("--all")
    args += [f"oci:{layout}:{ref_name}", f"docker://{dest}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        diag(r.stderr)
    return r.returncode == 0


# --- the token-auth registry -----------------------------------------------------------------

class TokenRegistry:
    """The bearer flow: /v2/ answers 401 with a challenge naming /token, which hands out a
    token for the right Basic credentials; manifests and blobs come from an OCI layout."""

    def __init__(self, layout, user, password, slow_blob=None):
        self.layout = layout
        self.creds = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.token = "tok-" + hashlib.sha256(os.urandom(8)).hexdigest()[:16]
        self.blob_gets = {}
        self.slow_blob = slow_blob  # a digest served slowly (for the killed pull)
        self.gate = None  # a threading.Event: the slow blob's second half waits for it, not 30 s
        self.anon = False  # tokens without credentials too (as Docker Hub's for public images)
        self.pad = {}  # hex -> bytes appended when it is served (longer than its descriptor)
        self.lock = threading.Lock()
        reg = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, code, body=b"", ctype="application/json", extra=None):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/token":
                    if not (reg.anon and not self.headers.get("Authorization")) and \
                            self.headers.get("Authorization") != "Basic " + reg.creds:
                        return self.send(401, b'{"details":"bad credentials"}')
                    return self.send(200, json.dumps({"token": reg.token}).encode())
                if self.headers.get("Authorization") != "Bearer " + reg.token:
                    port = self.server.server_address[1]
                    return self.send(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                                     extra={"WWW-Authenticate":
                                            f'Bearer realm="http://127.0.0.1:{port}/token",'
                                            f'service="fake-registry",scope="repository:x/y:pull"'})
                parts = path.split("/")  # /v2/x/y/(manifests|blobs)/REF
                if len(parts) < 6:
                    return self.send(200, b"{}")
                kind, ref = parts[-2], parts[-1]
                if kind == "manifests":
                    if ref.startswith("sha256:"):
                        h = ref[7:]
                    else:
                        idx = json.load(open(f"{reg.layout}/index.json"))
                        m = [d for d in idx["manifests"]
                             if d.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref]
                        if not m:
                            return self.send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"no such tag"}]}')
                        h = m[0]["digest"][7:]
                    data = open(f"{reg.layout}/blobs/sha256/{h}", "rb").read()
                    mt = json.loads(data).get("mediaType", "application/vnd.oci.image.manifest.v1+json")
                    return self.send(200, data, mt)
                h = ref[7:]
                fn = f"{reg.layout}/blobs/sha256/{h}"
                if not os.path.exists(fn):
                    return self.send(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
                with reg.lock:
                    reg.blob_gets[h] = reg.blob_gets.get(h, 0) + 1
                data = open(fn, "rb").read() + reg.pad.get(h, b"")
                if reg.slow_blob and ref == reg.slow_blob:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    half = len(data) // 2
                    self.wfile.write(data[:half])
                    self.wfile.flush()
                    if reg.gate:
                        reg.gate.wait(30)  # the test lets it go on
                    else:
                        time.sleep(30)  # the pull is killed meanwhile
                    try:
                        self.wfile.write(data[half:])
                    except OSError:
                        pass
                    return
                self.send(200, data, "application/octet-stream")

            do_HEAD = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def main():
    if not shutil.which("docker-registry") or not shutil.which("skopeo"):
        why = "docker-registry and skopeo are not installed (apt-get install docker-registry skopeo)"
        if must_work:
            t(False, why)
        else:
            print(f"1..0 # SKIP {why}")
            return 0
    work = tempfile.mkdtemp(prefix="ts-registry-")
    reg = None
    try:
        reg = start_registry(work)
        run_tests(work, reg[1], reg[2])
    finally:
        if reg:
            reg[0].kill()
            reg[0].wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{n}")
    return 1 if failed else 0


def run_tests(work, port, data):
    host = f"127.0.0.1:{port}"
    base = images.busybox_base()
    upper = [("keep/b", "file", b"b2\n", 0o644), ("keep/new", "file", b"new\n", 0o644),
             (".wh.gone.txt", "file", b"", 0o644), ("opq", "dir", None, 0o755),
             ("opq/.wh..wh..opq", "file", b"", 0o644), ("opq/fresh", "file", b"fresh\n", 0o644)]

    # a two-layer image with whiteouts
    lay = images.Layout(f"{work}/two")
    m = lay.image([base, upper])
    lay.index([images.named(m, "v1")])
    t(push(f"{work}/two", "v1", f"{host}/test/two:1"), "skopeo pushes a two-layer image")
    before = layer_dirs()
    r, j = pull(f"{host}/test/two:1")
    t(r.returncode == 0 and j and j["layers"] == 2 and j["cached"] == 0 and j["downloaded"] > 0,
      "image pull fetches both layers") or diag(r.stdout + r.stderr)
    t(r.returncode == 0 and r.stdout.count("\n") == 1,
      "not a terminal: no progress bar, one line of JSON") or diag(r.stdout)
    t(len(layer_dirs() - before) == 2, "two layer directories unpacked")
    r = ts("run", "--image", f"{host}/test/two:1", "--", "/bin/sh", "-c",
           "cat /etc/os-release /keep/a /keep/b /keep/new /opq/fresh; ls /opq; test -e /gone.txt || echo nogone")
    t(r.returncode == 0 and "ID=busybox-test" in r.stdout and "b2" in r.stdout and "new" in r.stdout
      and "nogone" in r.stdout and "old1" not in r.stdout,
      "run --image REF sees the pulled image: upper files, whiteout, opaque directory") or diag(r.stdout + r.stderr)
    r = ts("image", "ls")
    t(r.returncode == 0 and f"{host}/test/two:1" in r.stdout, "image ls lists the pulled image") or diag(r.stdout)

    # second pull: nothing downloaded
    r, j = pull(f"{host}/test/two:1", "two-again")
    t(r.returncode == 0 and j and j["cached"] == 2 and j["downloaded"] == 0,
      "a second pull of the same layers downloads no layer") or diag(r.stdout + r.stderr)

    # by digest, and a digest the registry's bytes do not match
    digest = json.loads(ts("image", "inspect", f"{host}/test/two:1").stdout)["digest"]
    r, j = pull(f"{host}/test/two@{digest}", "two-by-digest")
    t(r.returncode == 0 and j and j["digest"] == digest, "pull by digest") or diag(r.stdout + r.stderr)
    bad = "sha256:" + "0" * 64
    r, j = pull(f"{host}/test/two@{bad}", "two-bad-digest")
    t(r.returncode != 0 and ts("image", "inspect", "two-bad-digest").returncode != 0,
      "a digest the registry has no manifest for is refused") or diag(r.stderr)

    # multi-arch
    lay = images.Layout(f"{work}/multi")
    mine = lay.image([base + [("arch", "file", images.ARCH.encode(), 0o644)]])
    other_arch = "s390x" if images.ARCH != "s390x" else "arm64"
    other = lay.image([base + [("arch", "file", other_arch.encode(), 0o644)]], arch=other_arch)
    lay.index([images.named(other, "m"), images.named(mine, "m")])
    # skopeo --all wants one index: nest the two manifests in an index named m
    idx = lay.blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                               "manifests": [other, mine]}))
    idx["mediaType"] = "application/vnd.oci.image.index.v1+json"
    lay.index([images.named(idx, "m")])
    t(push(f"{work}/multi", "m", f"{host}/test/multi:1", all_=True), "skopeo pushes a multi-arch index")
    r, j = pull(f"{host}/test/multi:1")
    out = ts("run", "--image", f"{host}/test/multi:1", "--", "/bin/cat", "/arch")
    t(r.returncode == 0 and out.stdout.strip() == images.ARCH,
      f"a multi-arch index yields linux/{images.ARCH}") or diag(r.stderr + out.stdout + out.stderr)

    # a corrupted blob: the registry's stored copy altered after the push
    lay = images.Layout(f"{work}/corrupt")
    cm = lay.image([base + [("c", "file", b"corrupt me\n" * 100, 0o644)]])
    lay.index([images.named(cm, "c")])
    push(f"{work}/corrupt", "c", f"{host}/test/corrupt:1")
    blob = registry_blob(data, f"{work}/corrupt", cm, 0)
    if t(os.path.exists(blob), "the registry's copy of the layer is on disk"):
        flip_byte(blob, 40)
    before = layer_dirs()
    r, j = pull(f"{host}/test/corrupt:1")
    t(r.returncode != 0 and "does not match its digest" in r.stderr,
      "a corrupted blob is refused (digest mismatch)") or diag(r.stderr)
    t(layer_dirs() == before and ts("image", "inspect", f"{host}/test/corrupt:1").returncode != 0,
      "nothing of the corrupted image is left in use")
    tmp = f"{root}/images/oci/tmp"
    t(not os.path.isdir(tmp) or not [e for e in os.listdir(tmp) if e.startswith(("layer-", "pull-"))],
      "no half layer in tmp/, no work directory of the pull left") or diag(os.listdir(tmp))

    # a corrupted layer over a good one: the layer below, checked, stays as the next
    # pull's cache. The top blob differs only in its gzip header's MTIME, which no
    # decompressor checks, so only its digest, known at the blob's end, refuses it; it is
    # larger than the bottom one, which is done by then.
    lay = images.Layout(f"{work}/partial")
    pm = lay.image([[("bottom", "file", os.urandom(4096), 0o644)],
                    [("top", "file", os.urandom(4 << 20), 0o644)]])
    lay.index([images.named(pm, "p")])
    push(f"{work}/partial", "p", f"{host}/test/partial:1")
    blob = registry_blob(data, f"{work}/partial", pm, 1)
    if t(os.path.exists(blob), "the registry's copy of the top layer is on disk"):
        flip_byte(blob, 4)
    before = layer_dirs()
    r, j = pull(f"{host}/test/partial:1")
    t(r.returncode != 0 and "does not match its digest" in r.stderr
      and len(layer_dirs()) == len(before) + 1,
      "a pull failing on its top layer keeps the checked layer below") or diag(r.stderr)
    if os.path.exists(blob):
        flip_byte(blob, 4)  # back as it was
    r, j = pull(f"{host}/test/partial:1")
    t(r.returncode == 0 and j and j["layers"] == 2 and j["cached"] == 1,
      "the next pull takes that layer from the store, downloading only the other") \
        or diag(r.stdout + r.stderr)

    # hostile layers through the registry: the same neutralising as an import
    outside = f"{work}/outside"
    os.makedirs(outside)
    os.chmod(work, 0o755)
    os.chmod(outside, 0o777)
    hostile = [("../escape-dotdot", "file", b"x", 0o644),
               (f"{outside}/abs-escape", "file", b"x", 0o644),
               ("link", "symlink", outside, 0o777),
               ("link/through-symlink", "file", b"x", 0o644),
               ("hl-up", "hardlink", "../../../../etc/passwd", 0o644),
               ("dev-null", "chr", None, 0o666),
               ("suid", "file", b"#!/bin/sh\n", 0o4755),
               ("kept.txt", "file", b"kept\n", 0o644)]
    lay = images.Layout(f"{work}/hostile")
    lay.index([images.named(lay.image([base, hostile]), "h")])
    push(f"{work}/hostile", "h", f"{host}/test/hostile:1")
    r, j = pull(f"{host}/test/hostile:1")
    w = r.stderr
    t(r.returncode == 0 and all(x in w for x in ("`../escape-dotdot`", "goes through a symbolic link",
                                                 "`hl-up`: a hard link", "`dev-null`: a device node",
                                                 "`suid`: cleared its setuid")),
      "a hostile layer pulled: each bad entry neutralised and named") or diag(w)
    t(os.listdir(outside) == [] and not os.path.exists(f"{work}/escape-dotdot"),
      "nothing of it was written outside its layer directory") or diag(os.listdir(outside))
    r = ts("run", "--image", f"{host}/test/hostile:1", "--", "/bin/sh", "-c",
           "cat /kept.txt; stat -c '%a %n' /suid; ls /")
    t(r.returncode == 0 and "kept" in r.stdout and "755 /suid" in r.stdout and "dev-null" not in r.stdout,
      "inside: no setuid bit, no device") or diag(r.stdout + r.stderr)
    bomb = images.Layout(f"{work}/bomb")
    bomb.index([images.named(bomb.image([[(f"f{i}", "file", b"\0" * (1 << 20), 0o644) for i in range(12)]]), "b")])
    push(f"{work}/bomb", "b", f"{host}/test/bomb:1")
    before = layer_dirs()
    r, j = pull("--max-size", "8M", f"{host}/test/bomb:1")
    t(r.returncode != 0 and "more than" in r.stderr and layer_dirs() == before,
      "a tar bomb (small compressed, huge unpacked) is refused past --max-size") or diag(r.stderr)

    # an unknown tag, an unreachable registry
    r, j = pull(f"{host}/test/two:nope")
    t(r.returncode != 0 and "404" in r.stderr, "an unknown tag: 404 named") or diag(r.stderr)
    r, j = pull(f"127.0.0.1:{free_port()}/test/two:1")
    t(r.returncode != 0 and "127.0.0.1" in r.stderr, "a registry that does not answer: a clear error") or diag(r.stderr)
    r = ts("image", "pull", "Bad/Name:1")
    t(r.returncode != 0 and "bad name" in r.stderr, "a malformed reference is refused") or diag(r.stderr)

    token_tests(work, base)
    docker_token_tests(work, base)
    serve_tests(work, host, base)
    serve_limit_tests(work, host, base)
    agent_tests(work, host, base)


def agent_tests(work, host, base):
    """the agent runner: `sandbox.image` a registry reference, pulled by the backend."""
    lay = images.Layout(f"{work}/agent")
    m = lay.image([base, [("agent.txt", "file", b"agent image\n", 0o644)]])
    lay.index([images.named(m, "a")])
    push(f"{work}/agent", "a", f"{host}/test/agent:1")
    cfg = f"{work}/agent.yaml"
    with open(cfg, "w") as f:
        f.write(f"sandbox:\n  image: {host}/test/agent:1\n  approval: never\n")
    r = ts("runs", "new", "--agent", cfg, env={"TOREN_SANDBOX": "local"})
    run = r.stdout.strip()
    t(r.returncode == 0 and run, "runs new with that agent") or diag(r.stderr)
    r = ts("tool", "--run", run, "-", "bash", json.dumps({"command": "cat /agent.txt"}),
           env={"TOREN_SANDBOX": "local"})
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {}
    t(r.returncode == 0 and "agent image" in j.get("text", ""),
      "an agent whose sandbox.image is a registry reference runs on it (pulled)") or diag(r.stdout + r.stderr)
    t(ts("image", "inspect", f"{host}/test/agent:1").returncode == 0, "and the store has it now")
    if run:
        sb = ts("runs", "show", run).stdout
        try:
            sid = json.loads(sb).get("sandbox")
        except ValueError:
            sid = None
        if sid:
            ts("rm", "-f", sid)


def start_serve(what, *extra):
    """serve on free loopback ports: (process, "HOST:PORT" of its control plane), or
    (process, None) after a failed check named what."""
    serve = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen", "127.0.0.1:0",
                              *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = serve.stdout.readline()
    mm = re.search(r"control plane on (\S+), envd on (\S+)", line)
    if not t(mm is not None, what) or not mm:
        diag(line)
        return serve, None
    return serve, mm.group(1).rstrip(",")


def serve_tests(work, host, base):
    """serve: an E2B templateID that is a reference the store lacks is pulled, off the
    loop (another request is answered meanwhile)."""
    lay = images.Layout(f"{work}/srv")
    m = lay.image([base, [("pulled.txt", "file", b"pulled by serve\n", 0o644)]])
    lay.index([images.named(m, "s")])
    push(f"{work}/srv", "s", f"{host}/test/srv:1")
    serve, api = start_serve("serve starts", "--pull", host)
    try:
        if not api:
            return

        def req(method, path, body=None):
            h, p = api.rsplit(":", 1)
            c = http.client.HTTPConnection(h, int(p), timeout=120)
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"X-API-KEY": "k", "Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read()
            c.close()
            try:
                return r.status, json.loads(text) if text else None
            except ValueError:
                return r.status, None

        result = {}
        th = threading.Thread(target=lambda: result.update(
            r=req("POST", "/v2/sandboxes", {"templateID": f"{host}/test/srv:1", "timeout": 120})))
        th.start()
        st, _ = req("GET", "/v2/sandboxes")
        t(st == 200, "serve answers other requests while a template is pulled")
        th.join(150)
        st, j = result.get("r", (0, None))
        t(st == 201 and (j or {}).get("templateID") == f"{host}/test/srv:1",
          f"E2B create with a registry reference as templateID: pulled, 201 ({st} {j})")
        if st == 201:
            r = ts("exec", j["sandboxID"], "--", "/bin/cat", "/pulled.txt")
            t(r.returncode == 0 and r.stdout == "pulled by serve\n",
              "the sandbox runs on the pulled image") or diag(r.stdout + r.stderr)
            req("DELETE", "/sandboxes/" + j["sandboxID"])
        st, j = req("POST", "/v2/sandboxes", {"templateID": f"{host}/test/srv:nope"})
        t(st == 404 and (j or {}).get("code") == 404,
          f"a reference the registry does not have: 404 JSON ({st} {j})")
        other = f"127.0.0.1:{free_port()}/test/srv:1"
        st, j = req("POST", "/v2/sandboxes", {"templateID": other})
        t(st == 404 and "serve --pull" in ((j or {}).get("message") or ""),
          f"a registry `serve --pull` does not name: 404, nothing fetched ({st} {j})")
        st, j = req("POST", "/v1/sandboxes", {"image": other})
        t(st == 404, f"the same on /v1 ({st} {j})")
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
        err = serve.stderr.read()
        t(serve.returncode == 0, "serve stops cleanly") or diag(err[-2000:])


def serve_limit_tests(work, host, base):
    """serve --pull-max-size: an image whose layers to fetch weigh more is 507 before any
    layer is downloaded, and the store gains neither a layer nor a name."""
    lay = images.Layout(f"{work}/big")
    m = lay.image([base, [("big", "file", os.urandom(256 << 10), 0o644)]])
    lay.index([images.named(m, "b")])
    push(f"{work}/big", "b", f"{host}/test/big:1")
    before = layer_dirs()
    serve, api = start_serve("serve --pull-max-size 64K starts", "--pull", host,
                             "--pull-max-size", "64K")
    try:
        if not api:
            return
        h, p = api.rsplit(":", 1)
        c = http.client.HTTPConnection(h, int(p), timeout=120)
        c.request("POST", "/v2/sandboxes", body=json.dumps({"templateID": f"{host}/test/big:1"}),
                  headers={"X-API-KEY": "k", "Content-Type": "application/json"})
        r = c.getresponse()
        try:
            j = json.loads(r.read() or b"null")
        except ValueError:
            j = None
        c.close()
        msg = (j or {}).get("message") or ""
        t(r.status == 507 and (j or {}).get("code") == 507 and "nothing was downloaded" in msg,
          f"a 256 KiB layer against --pull-max-size 64K: 507 JSON before the download ({r.status} {j})")
        t(layer_dirs() == before, "the refused pull left no layer in the store")
        r2 = ts("image", "ls")
        t(f"{host}/test/big:1" not in r2.stdout, "and no image name") or diag(r2.stdout)
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
    r = subprocess.run([cli, "serve", "--pull-max-size", "lots"], capture_output=True, text=True, timeout=30)
    t(r.returncode == 2 and "--pull-max-size `lots`" in r.stderr,
      "serve --pull-max-size with a bad size: exit 2, named") or diag(r.stderr)


def serve_stop_tests(work, treg, base):
    """serve stopping while one of its pulls waits on a stalled layer: the pull is
    cancelled and its thread joined, serve exits at once and the store has no half layer."""
    lay = images.Layout(f"{work}/tok")
    m = lay.image([base, [("stall", "file", os.urandom(1 << 20), 0o644)]])
    idx = json.load(open(f"{work}/tok/index.json"))
    idx["manifests"].append(images.named(m, "4"))
    with open(f"{work}/tok/index.json", "w") as f:
        json.dump(idx, f)
    man = json.load(open(f"{work}/tok/blobs/sha256/{m['digest'][7:]}"))
    treg.slow_blob = man["layers"][1]["digest"]
    treg.anon = True  # serve pulls anonymously
    host = f"127.0.0.1:{treg.port}"
    before = layer_dirs()
    serve, api = start_serve("serve starts (a pull to cancel)", "--pull", host)
    try:
        if not api:
            return
        h, p = api.rsplit(":", 1)
        answer = {}

        def create():
            try:
                c = http.client.HTTPConnection(h, int(p), timeout=60)
                c.request("POST", "/v2/sandboxes", body=json.dumps({"templateID": f"{host}/x/y:4"}),
                          headers={"X-API-KEY": "k", "Content-Type": "application/json"})
                r = c.getresponse()
                answer["status"] = r.status
                r.read()
                c.close()
            except OSError as e:
                answer["error"] = str(e)
        th = threading.Thread(target=create, daemon=True)
        th.start()
        deadline = time.time() + 30
        while time.time() < deadline and treg.blob_gets.get(treg.slow_blob[7:], 0) == 0:
            time.sleep(0.05)
        if not t(treg.blob_gets.get(treg.slow_blob[7:], 0) > 0, "serve's pull reaches the stalled layer"):
            return
        time.sleep(0.5)
        t0 = time.time()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        took = time.time() - t0
        t(serve.returncode == 0 and took < 10,
          f"SIGTERM with a pull stalled in its download: serve cancels and joins it, exits 0 "
          f"in {took:.1f} s (the registry stalls 30 s)") or diag(f"rc {serve.returncode}")
        th.join(10)
        t(answer.get("status") == 503, f"the waiting create is answered 503 ({answer})")
        err = serve.stderr.read() if serve.returncode is not None else ""
        t("ERROR: AddressSanitizer" not in err and "runtime error" not in err,
          "no sanitizer report at exit") or diag(err[-3000:])
        tmp = f"{root}/images/oci/tmp"
        t(layer_dirs() == before and not [e for e in os.listdir(tmp) if e.startswith("layer-")],
          "the cancelled pull leaves no layer, whole or half") or diag(os.listdir(tmp))
        t(ts("image", "inspect", f"{host}/x/y:4").returncode != 0, "and no image name")
    finally:
        treg.anon = False
        treg.slow_blob = None
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def docker_token_tests(work, base):
    """Debian's docker-registry with token authentication: a token server here issues
    RS256 JWTs (signed with openssl) for the right Basic credentials, which the registry
    verifies against the test's certificate."""
    if not shutil.which("openssl"):
        if must_work:
            t(False, "token-auth docker-registry: openssl is not installed")
        else:
            skip("token-auth docker-registry", "openssl is not installed")
        return
    d = f"{work}/tokreg"
    os.makedirs(d)
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        f"{d}/key.pem", "-out", f"{d}/cert.pem", "-days", "2", "-subj", "/CN=ts-token"],
                       capture_output=True, text=True)
    if not t(r.returncode == 0, "a token-signing certificate"):
        diag(r.stderr)
        return
    der = subprocess.run(["openssl", "x509", "-in", f"{d}/cert.pem", "-outform", "DER"],
                         capture_output=True).stdout
    creds = base64.b64encode(b"bob:hunter2").decode()
    issued = []

    class Tok(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            if self.headers.get("Authorization") != "Basic " + creds:
                body = b'{"details":"wrong credentials"}'
                self.send_response(401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            access = []
            for sc in q.get("scope", []):
                kind, name, actions = sc.split(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
            now = int(time.time())
            head = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
            claims = {"iss": "ts-test-issuer", "sub": "bob", "aud": q.get("service", [""])[0],
                      "exp": now + 300, "nbf": now - 10, "iat": now,
                      "jti": hashlib.sha256(os.urandom(8)).hexdigest(), "access": access}
            signing = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(claims).encode())
            sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", f"{d}/key.pem"],
                                 input=signing.encode(), capture_output=True).stdout
            tok = signing + "." + b64url(sig)
            issued.append(tok)
            body = json.dumps({"token": tok, "access_token": tok, "expires_in": 300}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    tsrv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Tok)
    tsrv.daemon_threads = True
    threading.Thread(target=tsrv.serve_forever, daemon=True).start()
    port = free_port()
    with open(f"{d}/registry.yml", "w") as f:
        f.write(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {d}/data\n"
                f"http:\n  addr: 127.0.0.1:{port}\nlog:\n  level: error\n"
                f"auth:\n  token:\n    realm: http://127.0.0.1:{tsrv.server_address[1]}/token\n"
                f"    service: ts-test-registry\n    issuer: ts-test-issuer\n"
                f"    rootcertbundle: {d}/cert.pem\n")
    log = open(f"{d}/registry.log", "w")
    reg = subprocess.Popen(["docker-registry", "serve", f"{d}/registry.yml"], stdout=log, stderr=log)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        host = f"127.0.0.1:{port}"
        lay = images.Layout(f"{d}/img")
        m = lay.image([base, [("jwt", "file", b"behind a token\n", 0o644)]])
        lay.index([images.named(m, "j")])
        r = subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds",
                            "bob:hunter2", f"oci:{d}/img:j", f"docker://{host}/priv/app:1"],
                           capture_output=True, text=True, timeout=120)
        t(r.returncode == 0, "skopeo pushes to the token-auth docker-registry") or diag(r.stderr)
        none = f"{d}/none.json"
        with open(none, "w") as f:
            json.dump({"auths": {}}, f)
        r, j = pull(f"{host}/priv/app:1", "jwt-anon", env={"REGISTRY_AUTH_FILE": none})
        t(r.returncode != 0 and "refused" in r.stderr,
          "token-auth docker-registry: an anonymous pull is refused, saying so") or diag(r.stderr)
        authf = f"{d}/auth.json"
        with open(authf, "w") as f:
            json.dump({"auths": {f"http://{host}": {"auth": creds}}}, f)
        before = len(issued)
        r, j = pull(f"{host}/priv/app:1", "jwt-ok", env={"REGISTRY_AUTH_FILE": authf})
        t(r.returncode == 0 and j and j["layers"] == 2 and len(issued) > before,
          "token-auth docker-registry: a JWT for the auth file's credentials, the image pulled") \
            or diag(r.stdout + r.stderr)
        r = ts("run", "--image", "jwt-ok", "--", "/bin/cat", "/jwt")
        t(r.returncode == 0 and r.stdout == "behind a token\n", "and it runs") or diag(r.stderr)
    finally:
        reg.kill()
        reg.wait()
        tsrv.shutdown()


def work_dirs():
    """the pulls' work directories in tmp/ (the layers they stream are unpacked there)"""
    d = f"{root}/images/oci/tmp"
    return sorted(e for e in os.listdir(d) if e.startswith("pull-")) if os.path.isdir(d) else []


def add_tag(layout, m, tag):
    idx = json.load(open(f"{layout}/index.json"))
    idx["manifests"].append(images.named(m, tag))
    with open(f"{layout}/index.json", "w") as f:
        json.dump(idx, f)
    return json.load(open(f"{layout}/blobs/sha256/{m['digest'][7:]}"))


def stream_tests(work, treg, base, env):
    """a pull streams its layers into a work directory of its own, without the store's
    lock: a prune and an import meanwhile leave that directory and the store's layer the
    pull builds on alone; the pull then installs whole layers (an opaque directory over
    that lower layer included)."""
    host = f"127.0.0.1:{treg.port}"
    lay = images.Layout(f"{work}/tok")
    base2 = base + [("g2", "dir", None, 0o755), ("g2/old", "file", b"old\n", 0o644), ("g2/keep", "file", b"k\n", 0o644)]
    g1 = lay.image([base2])
    add_tag(f"{work}/tok", g1, "g1")
    gated = os.urandom(1 << 20)
    g2 = lay.image([base2, [("g2", "dir", None, 0o755), ("g2/.wh..wh..opq", "file", b"", 0o644),
                            ("g2/new", "file", b"new\n", 0o644), ("gated", "file", gated, 0o644)]])
    man = add_tag(f"{work}/tok", g2, "g2")
    r, j = pull(f"{host}/x/y:g1", "tok-g1", env=env)
    r2 = ts("image", "rm", "tok-g1")
    t(r.returncode == 0 and r2.returncode == 0, "an image pulled and removed: its layer stays, used by no name") \
        or diag(r.stderr + r2.stderr)
    lower = layer_dirs()
    treg.gate = threading.Event()
    treg.slow_blob = man["layers"][1]["digest"]
    p = subprocess.Popen([cli, "image", "pull", "--json", f"{host}/x/y:g2", "tok-g2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **env))
    try:
        deadline = time.time() + 20
        while time.time() < deadline and treg.blob_gets.get(treg.slow_blob[7:], 0) == 0:
            time.sleep(0.05)
        time.sleep(0.5)
        during = work_dirs()
        wd = f"{root}/images/oci/tmp/{during[0]}" if during else None
        t(len(during) == 1 and os.listdir(wd) and p.poll() is None,
          "a pull streaming a layer: its work directory holds the layer being unpacked") \
            or diag(f"{during} {p.poll()}")
        pr = ts("image", "prune", timeout=25)
        lay_q = images.Layout(f"{work}/quick2")
        lay_q.index([images.named(lay_q.image([base]), "q")])
        im = ts("image", "import", f"oci:{work}/quick2:q", "quick2", timeout=25)
        t(pr.returncode == 0 and im.returncode == 0 and work_dirs() == during and
          wd and os.listdir(wd) and p.poll() is None,
          "a prune and an import while it streams leave its work directory alone") \
            or diag(pr.stdout + pr.stderr + im.stderr + f" {work_dirs()}")
        t(lower <= layer_dirs(), "and the prune leaves the store's layer it builds on (no image names it)") \
            or diag(lower - layer_dirs())
        unrecorded = {k for k in lower if not os.path.exists(f"{root}/images/oci/diffids/{k}")}
        t(not unrecorded, "and that layer's diff_id record") or diag(unrecorded)
    finally:
        treg.gate.set()
    out, errs = p.communicate(timeout=60)
    treg.slow_blob = None
    treg.gate = None
    t(p.returncode == 0, "the pull, let go on, ends well") or diag(errs)
    # a pull that fails (its bottom layer's diff_id) while its other layer's download
    # stalls: that download is ended at once, not waited for
    b0 = [("bad0", "file", os.urandom(4096), 0o644)]
    b1 = [("stall1", "file", os.urandom(1 << 20), 0o644)]
    good1 = "sha256:" + hashlib.sha256(images.tar_bytes(b1)[1]).hexdigest()
    bm = add_tag(f"{work}/tok", lay.image([b0, b1], config_extra={
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "2" * 64, good1]}}), "bad")
    treg.gate = threading.Event()
    treg.slow_blob = bm["layers"][1]["digest"]
    try:
        t0 = time.time()
        r, j = pull(f"{host}/x/y:bad", "tok-bad", env=env)
        took = time.time() - t0
    finally:
        treg.gate.set()
        treg.slow_blob = None
        treg.gate = None
    t(r.returncode != 0 and "config's diff_id says" in r.stderr and took < 20,
      f"a pull failing on one layer ends the other's stalled download: fails in {took:.1f} s "
      f"(the registry stalls 30 s)") or diag(r.stderr)
    t(work_dirs() == [], "and leaves no work directory") or diag(work_dirs())
    r = ts("run", "--image", "tok-g2", "--", "/bin/sh", "-c",
           "ls /g2; wc -c < /gated; test -e /g2/old || echo noold")
    t(r.returncode == 0 and r.stdout.split() == ["new", str(len(gated)), "noold"],
      "its layers are whole: the opaque directory hides the lower layer's files") \
        or diag(r.stdout + r.stderr)
    t(work_dirs() == [], "and its work directory is gone") or diag(work_dirs())


def token_tests(work, base):
    lay = images.Layout(f"{work}/tok")
    base = base + [("tokbase", "file", b"a base layer of its own\n", 0o644)]
    m = lay.image([base, [("tok", "file", b"token image\n", 0o644)]])
    lay.index([images.named(m, "1")])
    man = json.load(open(f"{work}/tok/blobs/sha256/{m['digest'][7:]}"))
    layer_hexes = [d["digest"][7:] for d in man["layers"]]
    treg = TokenRegistry(f"{work}/tok", "alice", "s3cret")
    host = f"127.0.0.1:{treg.port}"
    try:
        noauth = f"{work}/none.json"
        with open(noauth, "w") as f:
            json.dump({"auths": {}}, f)
        r, j = pull(f"{host}/x/y:1", "tok-anon", env={"REGISTRY_AUTH_FILE": noauth})
        t(r.returncode != 0 and "refused" in r.stderr,
          "token registry: no credentials, a clear refusal") or diag(r.stderr)
        authf = f"{work}/auth.json"
        with open(authf, "w") as f:
            json.dump({"auths": {host: {"auth": base64.b64encode(b"alice:s3cret").decode()}}}, f)
        wrongf = f"{work}/wrong.json"
        with open(wrongf, "w") as f:
            json.dump({"auths": {host: {"username": "alice", "password": "nope"}}}, f)
        r, j = pull(f"{host}/x/y:1", "tok-wrong", env={"REGISTRY_AUTH_FILE": wrongf})
        t(r.returncode != 0 and "credentials" in r.stderr, "token registry: wrong credentials refused") or diag(r.stderr)

        # two pulls at once: each blob downloaded once
        env = {"REGISTRY_AUTH_FILE": authf}
        procs = [subprocess.Popen([cli, "image", "pull", "--json", f"{host}/x/y:1", f"tok-{i}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, **env)) for i in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        ok = all(p.returncode == 0 for p in procs)
        t(ok, "token registry: the bearer flow with the auth file's credentials") or diag(outs)
        t(all(treg.blob_gets.get(h) == 1 for h in layer_hexes),
          "two concurrent pulls download each layer once") or diag(treg.blob_gets)
        r = ts("run", "--image", "tok-1", "--", "/bin/cat", "/tok")
        t(r.returncode == 0 and r.stdout == "token image\n", "the pulled image runs") or diag(r.stderr)

        # a pull killed mid-layer
        lay2 = images.Layout(f"{work}/tok")
        big = os.urandom(2 << 20)
        m2 = lay2.image([base, [("big", "file", big, 0o644)]])
        idx = json.load(open(f"{work}/tok/index.json"))
        idx["manifests"].append(images.named(m2, "2"))
        with open(f"{work}/tok/index.json", "w") as f:
            json.dump(idx, f)
        man2 = json.load(open(f"{work}/tok/blobs/sha256/{m2['digest'][7:]}"))
        treg.slow_blob = man2["layers"][1]["digest"]
        before = layer_dirs()
        p = subprocess.Popen([cli, "image", "pull", "--quiet", f"{host}/x/y:2", "tok-killed"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, **env))
        deadline = time.time() + 20
        while time.time() < deadline and treg.blob_gets.get(treg.slow_blob[7:], 0) == 0:
            time.sleep(0.05)
        time.sleep(0.3)
        # the stalled download holds no lock others wait for: a run on a stored image and an
        # import go on (the registry holds the layer 30 s)
        t0 = time.time()
        r = ts("run", "--image", "tok-1", "--", "/bin/cat", "/tok", timeout=25)
        lay_q = images.Layout(f"{work}/quick")
        lay_q.index([images.named(lay_q.image([base]), "q")])
        r2 = ts("image", "import", f"oci:{work}/quick:q", "quick", timeout=25)
        t(r.returncode == 0 and r2.returncode == 0 and time.time() - t0 < 20 and p.poll() is None,
          "while a pull waits on its registry, a run and an import are not kept waiting") \
            or diag(r.stderr + r2.stderr)
        killed_wd = work_dirs()
        p.send_signal(signal.SIGKILL)
        p.wait()
        t(layer_dirs() == before, "a pull killed mid-layer leaves no layer in use")
        t(ts("image", "inspect", "tok-killed").returncode != 0, "and no image name")
        t(len(killed_wd) == 1 and work_dirs() == killed_wd,
          "its work directory (the half layer streamed into it) stays, unlocked") or diag(killed_wd)
        treg.slow_blob = None
        r, j = pull(f"{host}/x/y:2", "tok-after", env=env)
        t(r.returncode == 0 and j and j["cached"] == 1, "the next pull works (the shared base layer cached)") or diag(r.stderr)
        t(work_dirs() == [], "and sweeps the killed pull's work directory") or diag(work_dirs())
        r = ts("run", "--image", "tok-after", "--", "/bin/sh", "-c", "wc -c < /big")
        t(r.returncode == 0 and r.stdout.strip() == str(len(big)), "and its layer is whole") or diag(r.stdout + r.stderr)

        stream_tests(work, treg, base, env)
        serve_stop_tests(work, treg, base)

        # a blob longer than its descriptor: cut off at the descriptor's size, refused
        lay3 = images.Layout(f"{work}/tok")
        m3 = lay3.image([base, [("long", "file", b"long\n", 0o644)]])
        idx = json.load(open(f"{work}/tok/index.json"))
        idx["manifests"].append(images.named(m3, "3"))
        with open(f"{work}/tok/index.json", "w") as f:
            json.dump(idx, f)
        man3 = json.load(open(f"{work}/tok/blobs/sha256/{m3['digest'][7:]}"))
        treg.pad[man3["layers"][1]["digest"][7:]] = b"\0" * (8 << 20)
        before = layer_dirs()
        r, j = pull(f"{host}/x/y:3", "tok-long", env=env)
        t(r.returncode != 0 and "longer than" in r.stderr and layer_dirs() == before,
          "a blob longer than its descriptor is refused at the descriptor's size") or diag(r.stderr)
    finally:
        treg.close()


if __name__ == "__main__":
    sys.exit(main())
