#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""E2B's control plane of `toren-sandbox serve`, over raw HTTP on loopback.

Starts its own serve (the staged CLI, TS_CLI, on ports the kernel picks, with the state
root of modes.sh) and checks every endpoint of spec §2 and delta §2-3 and their errors:
the 401 without X-API-KEY, create (v1 and v2, every body field accepted, stored and
echoed; bad bodies 400 and nothing made), info, connect (200/201, extend only, endAt
byte-identical when shorter), timeout (shorten: gone at the deadline; lengthen), list
(paging with X-Next-Token, order, state, metadata's three-step encoding, startedAfter,
template), pause (409 twice, processes stopped with the same pid, connect resumes with
the same token, env and files), autoPause at the deadline, kill (404 after), metrics
(real samples, the window filter), 404 JSON for what a local server has not. The
sandbox side is checked through the CLI on the same state root. TAP on stdout.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import uuid

cli = os.environ.get("TS_CLI")
KEY = "e2b_" + "0" * 40
RUN = uuid.uuid4().hex[:12]
n = 0
failed = 0
created = []


def t(cond, desc):
    global n, failed
    n += 1
    desc = desc.replace("\n", " ").replace("#", "%23")
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}", flush=True)


def diag(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


if not cli or not os.access(cli, os.X_OK):
    print("1..0 # SKIP TS_CLI is not set or not executable")
    sys.exit(0)

serve = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen",
                          "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
line = serve.stdout.readline()
m = re.search(r"control plane on (\S+), envd on (\S+)", line)
if not m:
    err = serve.stderr.read() if serve.poll() is not None else ""
    if os.environ.get("TS_TESTS_MUST_WORK") == "1":
        print("1..1\nnot ok 1 - serve did not start: " + (line + err).replace("\n", " "))
        sys.exit(1)
    print("1..0 # SKIP serve did not start: " + (line + err).replace("\n", " ")[:200])
    sys.exit(0)
API = m.group(1).rstrip(",")
ENVD = m.group(2)


def request(method, path, body=None, headers=None, key=True, raw=None, addr=None):
    host, port = (addr or API).rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    h = {"X-API-KEY": KEY} if key else {}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    if data is not None:
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    try:
        j = json.loads(text) if text else None
    except ValueError:
        j = None
    return r.status, j, dict((k.lower(), v) for k, v in r.getheaders())


def is_error(status, j, code):
    return status == code and isinstance(j, dict) and j.get("code") == code and \
        isinstance(j.get("message"), str)


def ts(*args, timeout=60):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def create(body=None, path="/v2/sandboxes"):
    b = {"metadata": {"run": RUN}}
    b.update(body or {})
    st, j, _ = request("POST", path, b)
    if st == 201 and j:
        created.append(j["sandboxID"])
    return st, j


def info(sid):
    return request("GET", "/sandboxes/" + sid)


def ms_of(stamp):
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z", stamp or "")
    if not m:
        return None
    y, mo, d, hh, mi, ss, ms = (int(x) for x in m.groups())
    import calendar
    return calendar.timegm((y, mo, d, hh, mi, ss)) * 1000 + ms


def listed(query=""):
    st, j, h = request("GET", "/v2/sandboxes?" + query)
    return st, j, h


def mine(items):
    return [s["sandboxID"] for s in items or [] if s.get("metadata", {}).get("run") == RUN]


def wait(pred, timeout=30.0, step=0.25):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def proc_states(sid):
    """host pid -> (state, sandbox pid) of every descendant of the sandbox's init"""
    r = ts("inspect", sid)
    try:
        init = json.loads(r.stdout)["init"]["pid"]
    except (ValueError, KeyError, TypeError):
        return {}
    out, todo = {}, [init]
    while todo:
        p = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
        if p == init:
            continue
        try:
            st = open(f"/proc/{p}/status").read()
            state = re.search(r"^State:\s+(\S)", st, re.M).group(1)
            nspid = re.search(r"^NSpid:.*\s(\d+)$", st, re.M).group(1)
            out[p] = (state, int(nspid))
        except (OSError, AttributeError):
            pass
    return out


def health(sid):
    st, j, _ = request("GET", "/health", headers={"E2b-Sandbox-Id": sid,
                                                   "E2b-Sandbox-Port": "49983"},
                       key=False, addr=ENVD)
    return st, j


try:
    # --- auth -------------------------------------------------------------------------
    for method, path in [("POST", "/v2/sandboxes"), ("GET", "/v2/sandboxes"),
                         ("GET", "/sandboxes/x"), ("DELETE", "/sandboxes/x"),
                         ("POST", "/sandboxes/x/pause"), ("GET", "/volumes")]:
        st, j, _ = request(method, path, {} if method == "POST" else None, key=False)
        t(is_error(st, j, 401), f"{method} {path} without X-API-KEY: 401 JSON (got {st} {j})")
    st, j, _ = request("POST", "/v2/sandboxes", {}, headers={"X-API-KEY": ""}, key=False)
    t(is_error(st, j, 401), "an empty X-API-KEY is refused too")
    st, j, _ = listed()
    before_all = len(j or [])

    # --- create ----------------------------------------------------------------------
    full = {"templateID": "base", "metadata": {"run": RUN, "color": "blue"},
            "envVars": {"FOO": "bar baz"}, "timeout": 120, "allow_internet_access": True,
            "network": {"allowOut": ["10.0.0.0/8"], "denyOut": [], "maskRequestHost": "x"},
            "iam": {"tokens": {"a": {"audience": "b", "tokenType": "c"}}}, "mcp": {},
            "autoPause": False, "autoPauseMemory": True, "autoResume": {"enabled": True},
            "volumeMounts": [], "secure": True}
    # a `network` object asks for egress, which a rootless sandbox gets only where
    # /dev/net/tun is 0666 (not here: tests/live/network-env.sh sets it up for its tests)
    if not (os.geteuid() == 0 and os.environ.get("TS_MODE", "root") == "root"):
        del full["network"]
    t0 = int(time.time() * 1000)
    st, a = create(full)
    t(st == 201, f"POST /v2/sandboxes with every body field: 201 ({st} {a})")
    a = a or {}
    sid = a.get("sandboxID", "")
    t(a.get("templateID") == "base" and isinstance(a.get("clientID"), str) and
      a.get("envdVersion") == "0.6.13" and "domain" in a and a["domain"] is None,
      "Sandbox: templateID base, clientID, envdVersion 0.6.13, domain null")
    tok = a.get("envdAccessToken", "")
    t(re.fullmatch(r"[0-9a-f]{64,}", tok or "") is not None and
      isinstance(a.get("trafficAccessToken"), str), "envdAccessToken: 32+ random bytes in hex")
    st, b2 = create({"timeout": 300, "secure": True, "allow_internet_access": True,
                     "envVars": {}, "templateID": "base"}, path="/sandboxes")
    t(st == 201 and (b2 or {}).get("sandboxID"), "POST /sandboxes (the 2.45 body): 201")
    t((b2 or {}).get("envdAccessToken") not in (None, "", tok),
      "each sandbox has its own envdAccessToken")
    st, j = create({})
    t(st == 201, "POST /v2/sandboxes {} (no template: base, timeout 300 s): 201")
    empty_id = (j or {}).get("sandboxID", "")
    st, d, _ = info(empty_id)
    if st == 200:
        t(abs(ms_of(d["endAt"]) - ms_of(d["startedAt"]) - 300000) < 2000,
          "without timeout the deadline is 300 s after the start")
    else:
        t(False, f"info of the default sandbox ({st})")

    # --- a template from the local image store -----------------------------------------
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import images  # tests/live/images.py, staged beside this script
    import tempfile
    lay_dir = tempfile.mkdtemp(prefix="ts-ctl-img-")
    lay = images.Layout(lay_dir)
    lay.index([images.named(lay.image([images.busybox_base()]), "v")])
    r = ts("image", "import", f"oci:{lay_dir}:v", "ctl-bb")
    t(r.returncode == 0, "an image imported for a template") or diag(r.stderr)
    st, j = create({"templateID": "ctl-bb", "metadata": {"run": RUN}})
    t(st == 201 and (j or {}).get("templateID") == "ctl-bb",
      f"templateID naming a stored image: 201, echoed ({st} {j})")
    if st == 201:
        r = ts("exec", j["sandboxID"], "--", "/bin/cat", "/etc/os-release")
        t(r.returncode == 0 and "ID=busybox-test" in r.stdout,
          "the sandbox runs on that image") or diag(r.stdout + r.stderr)
        request("DELETE", "/sandboxes/" + j["sandboxID"])
    for tpl in ("/etc", "../x", "no-such-image"):
        st, j = create({"templateID": tpl, "metadata": {"run": RUN}})
        t(is_error(st, j, 404), f"templateID {tpl!r}: 404 JSON, never a host path ({st} {j})")
    ts("image", "rm", "ctl-bb")
    import shutil
    shutil.rmtree(lay_dir, ignore_errors=True)

    # --- bad creates change nothing -----------------------------------------------------
    st, j, _ = listed("metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    count = len(j or [])
    bad = [("malformed JSON", None, b"{\"templateID\":"), ("not an object", [], None),
           ("metadata a string", {"metadata": "x"}, None),
           ("metadata value a number", {"metadata": {"a": 1}}, None),
           ("envVars value a number", {"envVars": {"A": 1}}, None),
           ("envVars key with =", {"envVars": {"A=B": "1"}}, None),
           ("timeout a string", {"timeout": "60"}, None),
           ("timeout negative", {"timeout": -1}, None),
           ("timeout a fraction", {"timeout": 1.5}, None),
           ("templateID a number", {"templateID": 5}, None),
           ("autoPause a string", {"autoPause": "yes"}, None),
           ("network an array", {"network": []}, None),
           ("autoResume.enabled a string", {"autoResume": {"enabled": "no"}}, None),
           ("volumeMounts an object", {"volumeMounts": {}}, None),
           ("volumeMounts without a path", {"volumeMounts": [{"name": "v"}]}, None),
           ("secure a number", {"secure": 1}, None)]
    for name, body, raw in bad:
        b = body
        if isinstance(body, dict):
            b = dict(body)
            b.setdefault("metadata", {"run": RUN}) if "metadata" not in body else None
        st, j, _ = request("POST", "/v2/sandboxes", b, raw=raw)
        t(is_error(st, j, 400), f"create with {name}: 400 JSON ({st} {j})")
    big = json.dumps({"metadata": {"run": RUN, "pad": "x" * (2 << 20)}}).encode()
    st, j, _ = request("POST", "/v2/sandboxes", raw=big)
    t(st in (400, 413) and isinstance(j, dict) and j.get("code") == st,
      f"a 2 MiB create body: {st} with a JSON error whose code is the status")
    st, j, _ = request("POST", "/v2/sandboxes", {"templateID": "no-such-" + RUN,
                                                  "metadata": {"run": RUN}})
    t(is_error(st, j, 404), f"an unknown template: 404 JSON ({st} {j})")
    st, j, _ = request("POST", "/v2/sandboxes", {"templateID": "/", "metadata": {"run": RUN}})
    t(is_error(st, j, 404), "a host path as template: 404, never an image from the network")
    st, j, _ = listed("metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(len(j or []) == count, f"and none of the bad creates made a sandbox ({len(j or [])})")

    # --- info ----------------------------------------------------------------------------
    st, d, _ = info(sid)
    t(st == 200, "GET /sandboxes/{id}: 200")
    d = d or {}
    started, end = ms_of(d.get("startedAt")), ms_of(d.get("endAt"))
    t(started is not None and end is not None, f"startedAt and endAt are RFC 3339 ({d.get('startedAt')}, {d.get('endAt')})")
    t(started is not None and abs(started - t0) < 10000, "startedAt is the creation time")
    t(end is not None and started is not None and abs(end - started - 120000) < 2000,
      "endAt is startedAt + the 120 s timeout")
    t(d.get("state") == "running", "state running")
    t(d.get("envdAccessToken") == tok and d.get("envdVersion") == "0.6.13",
      "the same envdAccessToken and envdVersion")
    t(all(isinstance(d.get(k), int) and d[k] > 0 for k in ("cpuCount", "memoryMB", "diskSizeMB")),
      f"cpuCount, memoryMB, diskSizeMB ({d.get('cpuCount')}, {d.get('memoryMB')}, {d.get('diskSizeMB')})")
    t(d.get("metadata") == {"run": RUN, "color": "blue"}, f"metadata ({d.get('metadata')})")
    t(d.get("network") == full.get("network"), "network echoed")
    t(d.get("lifecycle") == {"onTimeout": "kill", "autoResume": True},
      f"lifecycle {{onTimeout kill, autoResume}} echoed ({d.get('lifecycle')})")
    t(d.get("allowInternetAccess") is True, "allowInternetAccess echoed")
    r = ts("exec", sid, "--", "sh", "-c", 'printf %s "$FOO"')
    t(r.stdout == "bar baz", f"envVars reach the sandbox ({r.stdout!r} {r.stderr.strip()})")
    st, j, _ = info("deadbeef0000")
    t(is_error(st, j, 404), "info of an unknown id: 404 JSON")
    st, j, _ = info("a" * 70)
    t(is_error(st, j, 404), "info of an over-long id: 404 JSON")

    # --- connect -------------------------------------------------------------------------
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {"timeout": 10})
    t(st == 200 and (j or {}).get("sandboxID") == sid and j.get("envdAccessToken") == tok,
      f"connect to a running sandbox: 200 with its token ({st})")
    st, d2, _ = info(sid)
    t((d2 or {}).get("endAt") == d.get("endAt"), "a shorter connect timeout leaves endAt byte-identical")
    st, j, _ = request("POST", f"/sandboxes/{sid}/connect", {"timeout": 300})
    t(st == 200, "connect on the v1 path: 200")
    st, d3, _ = info(sid)
    e3 = ms_of((d3 or {}).get("endAt"))
    t(e3 is not None and abs(e3 - (time.time() * 1000 + 300000)) < 5000,
      "a longer connect timeout extends endAt to now + timeout")
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {})
    st2, d4, _ = info(sid)
    t(st == 200 and (d4 or {}).get("endAt") == d3.get("endAt"), "connect {} leaves endAt alone")
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {"timeout": "x"})
    t(is_error(st, j, 400), "connect with a string timeout: 400")
    st, j, _ = request("POST", "/v2/sandboxes/deadbeef0000/connect", {})
    t(is_error(st, j, 404), "connect to an unknown id: 404 JSON")

    # --- timeout ---------------------------------------------------------------------
    st, j, _ = request("POST", f"/sandboxes/{sid}/timeout", {"timeout": 600})
    st2, d5, _ = info(sid)
    e5 = ms_of((d5 or {}).get("endAt"))
    t(st == 204 and e5 is not None and abs(e5 - (time.time() * 1000 + 600000)) < 5000,
      "POST /timeout 600: 204 and endAt = now + 600 s")
    for name, body in [("missing timeout", {}), ("a string", {"timeout": "1"}),
                       ("negative", {"timeout": -5})]:
        st, j, _ = request("POST", f"/sandboxes/{sid}/timeout", body)
        t(is_error(st, j, 400), f"POST /timeout with {name}: 400")
    st2, d6, _ = info(sid)
    t((d6 or {}).get("endAt") == d5.get("endAt"), "and the bad ones changed nothing")
    st, j, _ = request("POST", "/sandboxes/deadbeef0000/timeout", {"timeout": 5})
    t(is_error(st, j, 404), "POST /timeout of an unknown id: 404")
    st, short = create({"timeout": 300})
    short_id = (short or {}).get("sandboxID", "")
    hs, hj = health(short_id)
    have_health = hs == 204
    st, j, _ = request("POST", f"/sandboxes/{short_id}/timeout", {"timeout": 3})
    t(st == 204, "shorten the timeout to 3 s: 204")
    st, d7, _ = info(short_id)
    t(st == 200 and abs(ms_of(d7["endAt"]) - (time.time() * 1000 + 3000)) < 2000,
      "endAt = now + 3 s")
    time.sleep(4.5)
    if have_health:
        hs, hj = health(short_id)
        t(hs == 502, f"/health is 502 past the deadline ({hs})")
    else:
        skip("/health is 502 past the deadline", f"envd has no /health yet ({hs})")
    st, j, _ = info(short_id)
    t(is_error(st, j, 404), f"past the deadline: GET /sandboxes/{{id}} 404 ({st})")
    st, j, _ = listed("metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(short_id not in mine(j), "and it is not listed")
    r = ts("inspect", short_id)
    t(r.returncode != 0, "the reaper removed it (E2B's kill): the CLI no longer knows it")

    st, st_j = create({"timeout": 3})
    stopped_id = (st_j or {}).get("sandboxID", "")
    ts("stop", stopped_id)
    st, d14, _ = info(stopped_id)
    t(st == 200 and d14.get("state") == "paused", "stopped behind serve's back: it reads as paused")
    gone = wait(lambda: info(stopped_id)[0] == 404, timeout=10)
    t(gone and ts("inspect", stopped_id).returncode != 0,
      "and past its E2B deadline it is killed all the same (a paused one would not be)")

    # --- pause and resume ------------------------------------------------------------------
    r = ts("exec", "-d", sid, "--", "sh", "-c", "echo hi >/tmp/kept; exec sleep 1000")
    time.sleep(0.5)
    ps_before = ts("ps", sid).stdout
    pids = [l.split()[1] for l in ps_before.splitlines()[1:] if "running" in l]
    t(len(pids) >= 1, f"a background process to keep ({pids})")
    if have_health:
        hs, _ = health(sid)
        t(hs == 204, "/health is 204 while running")
    st, j, _ = request("POST", f"/sandboxes/{sid}/pause", {})
    t(st == 204, f"POST /pause: 204 ({st} {j})")
    states = proc_states(sid)
    t(states and all(s == "T" for s, _ in states.values()),
      f"every process of the sandbox is stopped ({states})")
    st, d8, _ = info(sid)
    t((d8 or {}).get("state") == "paused", "state paused")
    st, j, _ = request("POST", f"/sandboxes/{sid}/pause", {"memory": True})
    t(is_error(st, j, 409), f"a second pause: 409 JSON ({st} {j})")
    if have_health:
        hs, _ = health(sid)
        t(hs == 502, f"/health is 502 while paused ({hs})")
    else:
        skip("/health is 502 while paused", "envd has no /health yet")
    st, j, _ = listed("state=paused&metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(sid in mine(j), "listed with state=paused")
    st, j, _ = listed("state=running&metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(sid not in mine(j), "not listed with state=running")
    r = ts("exec", sid, "--", "true")
    t(r.returncode != 0, "nothing runs in a paused sandbox")
    st, j, _ = request("POST", f"/sandboxes/{sid}/pause", {"memory": "x"})
    t(is_error(st, j, 400), "pause with a string memory: 400")
    st, j, _ = request("POST", "/sandboxes/deadbeef0000/pause", {})
    t(is_error(st, j, 404), "pause of an unknown id: 404")
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {"timeout": 120})
    t(st == 201 and (j or {}).get("envdAccessToken") == tok,
      f"connect resumes it: 201 with the same envdAccessToken ({st})")
    st, d9, _ = info(sid)
    t((d9 or {}).get("state") == "running", "state running again")
    t(abs(ms_of(d9["endAt"]) - (time.time() * 1000 + 120000)) < 5000,
      "the resumed sandbox's deadline is now + the connect timeout")
    states2 = proc_states(sid)
    t(states2 and not any(s == "T" for s, _ in states2.values()), "no process is stopped now")
    ps_after = ts("ps", sid).stdout
    pids2 = [l.split()[1] for l in ps_after.splitlines()[1:] if "running" in l]
    t(pids2 == pids, f"the same processes with the same pids ({pids} -> {pids2})")
    r = ts("exec", sid, "--", "sh", "-c", 'cat /tmp/kept; printf %s "$FOO"')
    t(r.stdout == "hi\nbar baz", f"files and env kept ({r.stdout!r})")
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {})
    t(st == 200, "connect once more: 200 (running)")
    st, j, _ = request("POST", f"/sandboxes/{sid}/resume", {})
    t(is_error(st, j, 409), "the old resume of a running sandbox: 409")

    # --- autoPause at the deadline ------------------------------------------------------
    st, ap = create({"autoPause": True, "timeout": 2})
    ap_id = (ap or {}).get("sandboxID", "")
    st, d10, _ = info(ap_id)
    t((d10 or {}).get("lifecycle", {}).get("onTimeout") == "pause", "autoPause: lifecycle onTimeout pause")
    got = wait(lambda: (info(ap_id)[1] or {}).get("state") == "paused", timeout=10)
    t(got, "past its deadline an autoPause sandbox is paused, not killed")
    time.sleep(2.5)
    st, d15, _ = info(ap_id)
    t(st == 200 and d15.get("state") == "paused",
      "a paused sandbox stays, its deadline long past (2.5 s later still there, paused)")
    st, j, _ = request("POST", f"/sandboxes/{ap_id}/connect", {"timeout": 60})
    t(st == 201, "and connect resumes it: 201")

    # --- list ---------------------------------------------------------------------------
    group = "g" + RUN
    ids = []
    for i in range(3):
        st, j = create({"metadata": {"run": RUN, "group": group, "test-key": "a b&c=d"}})
        ids.append((j or {}).get("sandboxID"))
        time.sleep(0.05)
    q = "metadata=" + urllib.parse.quote("group=" + group, safe="")
    st, j, h = listed(q)
    t(st == 200 and [s["sandboxID"] for s in j] == ids[::-1],
      f"list: newest first by default ({[s['sandboxID'] for s in j or []]})")
    t("x-next-token" not in h, "one page: no X-Next-Token")
    item = (j or [{}])[0]
    t(all(k in item for k in ("sandboxID", "templateID", "clientID", "startedAt", "endAt",
                              "cpuCount", "memoryMB", "diskSizeMB", "metadata", "state",
                              "envdVersion")) and "envdAccessToken" not in item,
      "ListedSandbox fields, without the token")
    st, j, _ = listed(q + "&order=asc")
    t([s["sandboxID"] for s in j or []] == ids, "order=asc: oldest first")
    st, p1, h1 = listed(q + "&limit=2")
    tok1 = h1.get("x-next-token")
    t([s["sandboxID"] for s in p1 or []] == ids[:0:-1] and tok1,
      f"limit=2: the two newest and X-Next-Token ({tok1})")
    st, p2, h2 = listed(q + "&limit=2&nextToken=" + urllib.parse.quote(tok1 or "", safe=""))
    t([s["sandboxID"] for s in p2 or []] == ids[:1] and "x-next-token" not in h2,
      "the next page: the oldest, no X-Next-Token on the last page")
    st, p3, h3 = listed(q + "&limit=1&order=asc")
    st, p4, _ = listed(q + "&limit=1&order=asc&nextToken=" +
                       urllib.parse.quote(h3.get("x-next-token", ""), safe=""))
    t([s["sandboxID"] for s in (p3 or []) + (p4 or [])] == ids[:2], "paging in asc order")
    enc = urllib.parse.quote(urllib.parse.quote("test-key", safe="") + "=" +
                             urllib.parse.quote(urllib.parse.quote("a b&c=d", safe=""), safe=""),
                             safe="")
    st, j, _ = listed("metadata=" + enc + "&state=running")
    t(sorted(mine(j)) == sorted(ids), "metadata with the SDK's three-step encoding (a b&c=d)")
    enc2 = urllib.parse.quote("group=" + group + "&test-key=" +
                              urllib.parse.quote(urllib.parse.quote("a b&c=d", safe=""), safe=""),
                              safe="")
    st, j, _ = listed("metadata=" + enc2)
    t(sorted(mine(j)) == sorted(ids), "two metadata pairs: AND")
    st, j, _ = listed("metadata=" + urllib.parse.quote("group=" + group + "&color=none", safe=""))
    t(j == [], "a pair nothing has: []")
    st, newest, _ = info(ids[2])
    after = newest["startedAt"]
    st, j, _ = listed(q + "&startedAfter=" + urllib.parse.quote(after, safe=""))
    t([s["sandboxID"] for s in j or []] == [ids[2]], "startedAfter is inclusive (its own startedAt)")
    later = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms_of(after) / 1000 + 1)) + \
        ".%03dZ" % (ms_of(after) % 1000)
    st, j, _ = listed(q + "&startedAfter=" + urllib.parse.quote(later, safe=""))
    t(j == [], "startedAfter one second later: []")
    st, j, _ = listed(q + "&template=base")
    t(len(j or []) == 3, "template=base: all three")
    st, j, _ = listed(q + "&template=nothing-" + RUN)
    t(st == 200 and j == [], "an unknown template: []")
    st, j, _ = listed(q + "&state=running,paused")
    t(len(j or []) == 3, "state=running,paused")
    for name, query in [("state", "state=sleeping"), ("limit 0", "limit=0"),
                        ("limit 101", "limit=101"), ("limit abc", "limit=abc"),
                        ("order", "order=up"), ("startedAfter", "startedAfter=yesterday"),
                        ("nextToken", "nextToken=%25%25"),
                        ("metadata", "metadata=" + urllib.parse.quote("nokey", safe=""))]:
        st, j, _ = listed(query)
        t(is_error(st, j, 400), f"list with a bad {name}: 400 JSON ({st})")
    st, j, _ = request("GET", "/sandboxes?metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(st == 200 and sid in mine(j), "GET /sandboxes (v1) lists too")

    # --- metrics -------------------------------------------------------------------------
    ts("exec", "-d", ids[0], "--", "sh", "-c", "while :; do :; done")
    def busy():
        st, j, _ = request("GET", f"/sandboxes/{ids[0]}/metrics")
        return [s for s in j or [] if s.get("cpuUsedPct", 0) > 5] and j
    samples = wait(busy, timeout=30, step=1)
    t(samples, f"metrics: samples within 30 s, one with cpuUsedPct > 5 while it spins")
    s0 = (samples or [{}])[-1]
    t(all(k in s0 for k in ("timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed",
                            "memTotal", "memCache", "diskUsed", "diskTotal")),
      f"every field ({s0})")
    t(s0.get("memUsed", 0) > 0 and s0.get("memTotal", 0) >= s0.get("memUsed", 0) and
      s0.get("diskTotal", 0) > 0, "memUsed, memTotal and diskTotal are real numbers")
    t(ms_of(s0.get("timestamp")) // 1000 == s0.get("timestampUnix"), "timestamp and timestampUnix agree")
    now = int(time.time())
    st, j, _ = request("GET", f"/sandboxes/{ids[0]}/metrics?start={now - 60}&end={now + 10}")
    t(st == 200 and j and all(now - 70 <= x["timestampUnix"] <= now + 20 for x in j),
      "start/end filter: the samples fall in the window")
    st, j, _ = request("GET", f"/sandboxes/{ids[0]}/metrics?start={now - 7200}&end={now - 3600}")
    t(st == 200 and j == [], "a window before the sandbox existed: []")
    st, j, _ = request("GET", f"/sandboxes/{ids[0]}/metrics?start=abc")
    t(is_error(st, j, 400), "metrics with a bad start: 400")
    st, j, _ = request("GET", "/sandboxes/deadbeef0000/metrics")
    t(is_error(st, j, 404), "metrics of an unknown id: 404")
    st, j, _ = request("GET", f"/sandboxes/metrics?sandbox_ids={ids[0]},deadbeef0000")
    t(st == 200 and ids[0] in (j or {}).get("sandboxes", {}) and
      "deadbeef0000" not in j["sandboxes"], "GET /sandboxes/metrics?sandbox_ids: the newest of each known")

    # --- network, logs, what a local server has not ---------------------------------------
    st, j, _ = request("PUT", f"/sandboxes/{sid}/network", {"allowOut": ["1.2.3.4"]})
    st2, d11, _ = info(sid)
    t(st == 204 and (d11 or {}).get("network") == {"allowOut": ["1.2.3.4"]},
      "PUT /network: 204, then echoed")
    st, j, _ = request("PUT", f"/sandboxes/{sid}/network", raw=b"[1")
    t(is_error(st, j, 400), "PUT /network with malformed JSON: 400")
    # snapshots and fork exist (tests/live/snapshot.sh, e2b-sdk snapshots.test.mjs): here
    # only their typed errors, which change nothing
    st, j, _ = request("POST", "/sandboxes/000000000000/snapshots", {})
    t(is_error(st, j, 404), "POST /sandboxes/UNKNOWN/snapshots: 404 JSON")
    st, j, _ = request("POST", "/sandboxes/000000000000/fork", {})
    t(is_error(st, j, 404), "POST /sandboxes/UNKNOWN/fork: 404 JSON")
    st, j, _ = request("POST", f"/sandboxes/{sid}/fork", {"count": 0})
    t(is_error(st, j, 400), "POST /fork with count 0: 400 JSON")
    st, j, _ = request("GET", "/snapshots?sandboxID=000000000000")
    t(st == 200 and j == [], f"GET /snapshots of a sandbox without any: 200 [] ({st} {j})")
    for method, path in [("GET", "/volumes"),
                         ("POST", "/volumes"), ("GET", "/volumes/v1"),
                         ("PUT", "/volumecontent/v1/file"), ("GET", "/secrets"),
                         ("DELETE", "/secrets/s1"), ("POST", "/v3/templates"),
                         ("GET", "/v2/templates/t/builds/b"), ("DELETE", "/templates/t"),
                         ("GET", "/templates/aliases/a"), ("GET", "/templates/tags")]:
        st, j, _ = request(method, path, {} if method in ("POST", "PUT") else None)
        t(is_error(st, j, 404), f"{method} {path}: 404 JSON")

    # --- a sandbox the command line made ---------------------------------------------------
    r = ts("create", "--label", "run=" + RUN, "--label", "cli=yes")
    cli_id = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
    t(cli_id, f"toren-sandbox create on serve's state root ({r.stderr.strip()[:200]})")
    st, d12, _ = info(cli_id)
    t(st == 200 and "envdAccessToken" not in (d12 or {}) and d12.get("state") == "running" and
      d12.get("metadata", {}).get("cli") == "yes",
      "GET of a CLI sandbox: 200, running, its labels as metadata, no token")
    st, j, _ = listed("metadata=" + urllib.parse.quote("cli=yes&run=" + RUN, safe=""))
    t(mine(j) == [cli_id], "listed")
    ts("stop", cli_id)
    st, d13, _ = info(cli_id)
    t((d13 or {}).get("state") == "paused", "a stopped CLI sandbox reads as paused")
    st, j, _ = request("POST", f"/v2/sandboxes/{cli_id}/connect", {"timeout": 60})
    t(st == 201 and (info(cli_id)[1] or {}).get("state") == "running",
      "connect starts it again: 201, running")
    st, j, _ = request("DELETE", f"/sandboxes/{cli_id}")
    t(st == 204 and ts("inspect", cli_id).returncode != 0, "and DELETE removes it: 204")

    # --- kill ----------------------------------------------------------------------------
    st, j, _ = request("DELETE", f"/sandboxes/{sid}")
    t(st == 204, "DELETE /sandboxes/{id}: 204")
    st, j, _ = request("DELETE", f"/sandboxes/{sid}")
    t(is_error(st, j, 404), "a second DELETE: 404 JSON {code:404}")
    st, j, _ = info(sid)
    t(is_error(st, j, 404), "GET after kill: 404")
    st, j, _ = request("POST", f"/v2/sandboxes/{sid}/connect", {})
    t(is_error(st, j, 404), "connect after kill: 404")
    st, j, _ = listed("metadata=" + urllib.parse.quote("run=" + RUN, safe=""))
    t(sid not in mine(j), "not listed after kill")
    t(ts("inspect", sid).returncode != 0, "and gone from the backend (removed, not stopped)")
    st, j, _ = request("POST", f"/sandboxes/{ap_id}/pause", {})
    st, j, _ = request("DELETE", f"/sandboxes/{ap_id}")
    t(st == 204, "kill of a paused sandbox: 204")

    # a `network` object asks for egress; without one a sandbox has loopback only
    st, j = create()
    plain = j.get("sandboxID") if st == 201 and j else ""
    got = json.loads(ts("inspect", plain).stdout or "{}").get("network", {}).get("mode") if plain else None
    t(got == "none", f"create without `network`: loopback only (inspect: {got})")
    if os.geteuid() == 0 and os.environ.get("TS_MODE", "root") == "root":
        st, j = create({"network": {"allowOut": ["192.0.2.0/24"]}})
        nid = j.get("sandboxID") if st == 201 and j else ""
        got = json.loads(ts("inspect", nid).stdout or "{}").get("network", {}).get("mode") if nid else None
        t(st == 201 and got == "egress",
          f"create with a `network` object: egress ({st}, inspect: {got})")
        st, j, _ = info(nid) if nid else (0, None, None)
        t(st == 200 and j and j.get("network", {}).get("allowOut") == ["192.0.2.0/24"],
          "... and its network object is echoed")
    else:
        skip("create with a `network` object: egress", "rootless egress needs /dev/net/tun 0666 (tests/live/network-env.sh covers it)")
finally:
    for i in created:
        try:
            request("DELETE", "/sandboxes/" + i)
        except OSError:
            pass
    serve.terminate()
    try:
        serve.wait(timeout=20)
    except subprocess.TimeoutExpired:
        serve.kill()
    err = serve.stderr.read()
    if err.strip():
        diag("serve's stderr: " + err[-2000:])

print(f"1..{n}")
print(f"# {n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
