#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve's warm pool (`serve --pool`), over raw HTTP on loopback.

Starts its own serves (the staged CLI, TS_CLI, on ports the kernel picks, with the state
root of modes.sh) and checks: bad --pool values refused; the pool fills (GET /v1/pool and
the store's records, labelled); an E2B create takes a member (its id was a member's, the
claimed count grows) and the pool refills to its target; the claimed sandbox has the
create's metadata, its timeout counted from the create, created/started times of the
create, and no process left from warming; a file one claimed sandbox wrote is not in the
next; a create with envVars takes a member too, whose processes (CLI exec, /v1 commands,
after a restart) see them, a process's own envs over them, HOME among them over the
user's, and the next member none of them; a /v1 create takes a member of the `v1:` kind
(no root, no sudo, its envs); a network create and a /v1 create with no member of its kind
start their own; a claimed sandbox runs the same processes and changed the same files as
a fresh one; pool members are in no list and unknown by id;
the pool's label keys are refused in a create; serve's exit removes the members; after
kill -9 of serve the next serve removes the orphans. The sandbox side is checked through
the CLI on the same state root. TAP on stdout.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

cli = os.environ.get("TS_CLI")
KEY = "e2b_" + "0" * 40
POOL_LABEL = "toren-sandbox.pool"
n = 0
failed = 0
created = []
serves = []


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


def ts(*args, timeout=60):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def start_serve(*extra):
    p = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--envd-listen",
                          "127.0.0.1:0", *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"control plane on (\S+), envd on (\S+)", line)
    if not m:
        p.wait(timeout=10)
        return None, (line + p.stderr.read()).replace("\n", " ")
    serves.append(p)
    return p, m.group(1).rstrip(",")


def stop_serve(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    err = p.stderr.read()
    if err.strip():
        diag("serve's stderr: " + err[-1500:])


def request(api, method, path, body=None):
    host, port = api.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    h = {"X-API-KEY": KEY}
    data = json.dumps(body) if body is not None else None
    if data is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    try:
        j = json.loads(text) if text else None
    except ValueError:
        j = None
    return r.status, j


def pool(api):
    st, j = request(api, "GET", "/v1/pool")
    return j if st == 200 and isinstance(j, dict) else {}


def ready(api, tpl="base", kind="e2b"):
    for e in pool(api).get("templates", []):
        if e.get("template") == tpl and e.get("api", "e2b") == kind:
            return e.get("ready", 0)
    return 0


def members(kind=None):
    """ids of the store's records that carry the pool's label (kind "e2b": without `v1:`)"""
    r = ts("ls", "--json")
    try:
        recs = json.loads(r.stdout or "[]")
    except ValueError:
        return []
    out = []
    for rec in recs:
        labels = rec.get("labels") or {}
        if isinstance(labels, dict) and POOL_LABEL in labels and (
                kind != "e2b" or not labels[POOL_LABEL].startswith("v1:")):
            out.append(rec["id"])
    return out


def wait(pred, timeout=60.0, step=0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def ms_of(stamp):
    import calendar
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z", stamp or "")
    if not m:
        return None
    y, mo, d, hh, mi, ss, ms = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, hh, mi, ss)) * 1000 + ms


def create(api, body, path="/v2/sandboxes"):
    st, j = request(api, "POST", path, body)
    sid = (j or {}).get("sandboxID") or (j or {}).get("id")
    if st == 201 and sid:
        created.append(sid)
    return st, j, sid


def sh(sid, script, *opts):
    return ts("exec", *opts, sid, "--", "sh", "-c", script)


def ctl_call(sid, msgs):
    """send control-protocol messages (type, [(tag, value)]) to the sandbox's init on one
    connection, each answered before the next: [(type, {tag: value})] (ctl.h)"""
    import socket
    import struct
    path = os.path.join(os.environ.get("TOREN_SANDBOX_ROOT", ""), sid, "run", "control.sock")
    out = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as so:
        so.settimeout(10)
        so.connect(path)
        for rid, (typ, fields) in enumerate(msgs, 1):
            pay = b""
            for tag, v in fields:
                v = struct.pack("<Q", v) if isinstance(v, int) else v.encode()
                pay += struct.pack("<HI", tag, len(v)) + v
            so.sendall(struct.pack("<IHHI", len(pay), typ, 0, rid) + pay)
            buf = b""
            while len(buf) < 12 or len(buf) < 12 + struct.unpack_from("<I", buf)[0]:
                chunk = so.recv(65536)
                if not chunk:
                    return out
                buf += chunk
            ln, rtyp = struct.unpack_from("<IH", buf)
            got, pos = {}, 12
            while pos < 12 + ln:
                tag, tl = struct.unpack_from("<HI", buf, pos)
                v = buf[pos + 6:pos + 6 + tl]
                got[tag] = struct.unpack("<Q", v)[0] if tl == 8 and tag in (1, 10) else v
                pos += 6 + tl
            out.append((rtyp, got))
    return out


def v1_run(api, sid, body):
    """POST /v1/sandboxes/ID/commands: (status, stdout)"""
    st, j = request(api, "POST", f"/v1/sandboxes/{sid}/commands", body)
    return st, (j or {}).get("stdout", "") if isinstance(j, dict) else ""


def comms(sid):
    """the names of the sandbox's processes but the listing's own sh and cat"""
    r = sh(sid, "for p in /proc/[0-9]*; do cat $p/comm; done 2>/dev/null")
    names = sorted(x for x in r.stdout.split() if x not in ("sh", "cat"))
    return names


def changed(sid):
    """the paths in the sandbox's upper layer and workspace, seen from the host (what the
    sandbox changed; a directory the mode cannot read counts as one entry)"""
    root = os.environ.get("TOREN_SANDBOX_ROOT")
    if not root:
        return None
    out = []
    for part in ("upper", "workspace"):
        base = os.path.join(root, sid, part)
        for d, dirs, files in os.walk(base, onerror=lambda e: out.append("unreadable:" + os.path.relpath(e.filename, base))):
            out += [os.path.join(part, os.path.relpath(os.path.join(d, x), base)) for x in dirs + files]
    return sorted(out)


# --- bad values ---------------------------------------------------------------------------
for bad, why in (("33", "past 32 per template"), ("base=x", "not a number"),
                 ("nosuchimage=1", "a template not in the store"),
                 ("=1", "an empty template")):
    p, got = start_serve("--pool", bad)
    t(p is None and "pool" in got, f"--pool {bad} ({why}) refused: {got[:160]}")
    if p:
        stop_serve(p)
p, got = start_serve(*sum((["--pool", f"t{i}=1"] for i in range(65)), []))
t(p is None, "65 --pool values refused")

serve, api = start_serve("--pool", "2", "--pool", "v1:1")
if not serve:
    if os.environ.get("TS_TESTS_MUST_WORK") == "1":
        print(f"1..{n + 1}\nnot ok {n + 1} - serve --pool 2 did not start: {api}")
        sys.exit(1)
    print(f"1..{n}\n# serve did not start: {api}")
    sys.exit(1 if failed else 0)

try:
    filled = wait(lambda: ready(api) == 2 and ready(api, None, "v1") == 1, 90)
    if not filled:
        diag(json.dumps(pool(api)))
        if os.environ.get("TS_TESTS_MUST_WORK") != "1" and pool(api).get("templates", [{}])[0].get("last_error"):
            print(f"1..{n + 1}\nok {n + 1} - the pool fills # SKIP sandboxes cannot start here: "
                  + pool(api)["templates"][0]["last_error"][:150])
            sys.exit(1 if failed else 0)
    t(filled, f"serve --pool 2 --pool v1:1: two E2B members and one /v1 member ready ({json.dumps(pool(api))[:300]})")
    m0 = members()
    t(len(m0) == 3, f"... three records in the store carry `{POOL_LABEL}` ({m0})")
    vm = [i for i in m0 if (json.loads(ts("inspect", i).stdout or "{}").get("labels") or {}).get(POOL_LABEL) == "v1:"]
    t(len(vm) == 1, f"... one of them labelled `v1:` ({vm})")
    m0 = [i for i in m0 if i not in vm]

    # --- not listed, not known by id --------------------------------------------------------
    st, j = request(api, "GET", "/v2/sandboxes")
    ids = [s.get("sandboxID") for s in j or []]
    t(st == 200 and not set(ids) & set(m0), f"GET /v2/sandboxes lists no member ({ids})")
    st, j = request(api, "GET", "/sandboxes")
    ids = [s.get("sandboxID") for s in j or []]
    t(st == 200 and not set(ids) & set(m0), "GET /sandboxes lists no member")
    st, j = request(api, "GET", "/v1/sandboxes")
    ids = [s.get("id") for s in (j or {}).get("sandboxes", [])]
    t(st == 200 and not set(ids) & set(m0), f"GET /v1/sandboxes lists no member ({ids})")
    st, _ = request(api, "GET", "/sandboxes/" + m0[0]) if m0 else (0, None)
    t(st == 404, f"GET /sandboxes/MEMBER: 404 ({st})")
    st, _ = request(api, "GET", "/v1/sandboxes/" + m0[0]) if m0 else (0, None)
    t(st == 404, f"GET /v1/sandboxes/MEMBER: 404 ({st})")
    st, _ = request(api, "DELETE", "/sandboxes/" + m0[0]) if m0 else (0, None)
    t(st == 404, f"DELETE /sandboxes/MEMBER: 404 ({st})")
    st, _ = request(api, "DELETE", "/v1/sandboxes/" + m0[0]) if m0 else (0, None)
    t(st == 404, f"DELETE /v1/sandboxes/MEMBER: 404 ({st})")
    st, _ = request(api, "DELETE", "/v1/sandboxes/" + m0[0][:6]) if m0 else (0, None)
    t(st == 404 and sorted(members()) == sorted(m0 + vm), f"DELETE /v1/sandboxes/PREFIX-OF-MEMBER: 404, nothing removed ({st})")

    # --- a claim ------------------------------------------------------------------------------
    before = pool(api).get("claimed", 0)
    t0 = int(time.time() * 1000)
    st, j, a = create(api, {"templateID": "base", "metadata": {"who": "first"}, "timeout": 120})
    t1 = int(time.time() * 1000)
    t(st == 201 and a in m0, f"an E2B create takes a member ({st}, {a} in {m0})")
    t(pool(api).get("claimed", 0) == before + 1, "... and the pool counts the claim")
    t(wait(lambda: ready(api) == 2, 90), "the pool refills to 2 after the claim")
    t(a not in members(), "the claimed sandbox no longer carries the pool's label")
    st, j = request(api, "GET", "/sandboxes/" + a)
    t(st == 200 and j.get("metadata") == {"who": "first"},
      f"the claimed sandbox has the create's metadata ({(j or {}).get('metadata')})")
    sa, ea = ms_of((j or {}).get("startedAt")), ms_of((j or {}).get("endAt"))
    t(sa is not None and t0 - 1000 <= sa <= t1 + 1000,
      f"... startedAt is the create's time ({(j or {}).get('startedAt')}, create {t0}..{t1})")
    t(sa is not None and ea is not None and abs((ea - sa) - 120000) <= 1000,
      f"... endAt is startedAt + the 120 s timeout ({ea} - {sa})")
    st, j = request(api, "GET", "/v2/sandboxes?metadata=who%3Dfirst")
    t(st == 200 and [s["sandboxID"] for s in j or []] == [a], "... and is listed by its metadata")
    insp = json.loads(ts("inspect", a).stdout or "{}")
    t(insp.get("labels") == {"who": "first"}, f"the store's record has only the create's labels ({insp.get('labels')})")
    names_a = comms(a)
    t("bash" not in names_a, f"no process is left from warming ({names_a})")

    # --- nothing leaks into the next claim ----------------------------------------------------
    r = sh(a, "echo x > /tmp/leak && echo y > /home/user/leak && echo ok")
    t(r.returncode == 0 and "ok" in r.stdout, f"the claimed sandbox writes files ({r.stderr.strip()[:100]})")
    st, _ = request(api, "DELETE", "/sandboxes/" + a)
    t(st == 204, f"killed ({st})")
    m1 = members()
    st, j, b = create(api, {"templateID": "base", "metadata": {"who": "second"}})
    t(st == 201 and b in m1 and b != a, f"the next create takes another member ({b} in {m1})")
    r = sh(b, "ls /tmp/leak /home/user/leak 2>&1; echo rc=$?")
    t("rc=0" not in r.stdout, f"... which has none of the first one's files ({r.stdout.strip()[:120]})")
    names_b = comms(b)
    fb = changed(b)

    # --- envVars from the pool -----------------------------------------------------------------
    t(wait(lambda: ready(api) == 2, 90), "the pool is full again")
    m1 = members()
    before = pool(api).get("claimed", 0)
    st, j, f = create(api, {"templateID": "base",
                            "envVars": {"POOLTEST": "seen", "POOLTWO": "a b=c", "HOME": "/tmp"}})
    t(st == 201 and f in m1 and pool(api).get("claimed", 0) == before + 1,
      f"a create with envVars takes a member ({st}, {f} in {m1})")
    r = sh(f, "echo v=$POOLTEST w=$POOLTWO h=$HOME")
    t("v=seen w=a b=c h=/tmp" in r.stdout,
      f"... whose commands see them, HOME over the user's (CLI exec: {r.stdout.strip()} {r.stderr.strip()[:100]})")
    r = sh(f, "echo v=$POOLTEST", "-e", "POOLTEST=mine")
    t("v=mine" in r.stdout, f"... a command's own env over them (CLI exec -e: {r.stdout.strip()})")
    st, out = v1_run(api, f, {"cmd": "echo v=$POOLTEST h=$HOME"})
    t(st == 200 and "v=seen h=/tmp" in out, f"... /v1 commands see them ({st}, {out.strip()})")
    st, out = v1_run(api, f, {"cmd": "echo v=$POOLTEST h=$HOME", "user": "root"})
    if st == 403 and os.environ.get("TS_MODE") == "userns":
        skip("... as root too", "no root ids for a sandbox under unshare -r")
    else:
        t(st == 200 and "v=seen h=/tmp" in out, f"... as root too ({st}, {out.strip()})")
    st, out = v1_run(api, f, {"cmd": "echo v=$POOLTEST", "envs": {"POOLTEST": "over"}})
    t(st == 200 and "v=over" in out, f"... and a /v1 command's envs win ({st}, {out.strip()})")
    insp = json.loads(ts("inspect", f).stdout or "{}")
    t(insp.get("labels") == {}, f"... its record has no pool label ({insp.get('labels')})")
    r = ts("restart", f)
    r2 = sh(f, "echo v=$POOLTEST h=$HOME")
    t(r.returncode == 0 and "v=seen h=/tmp" in r2.stdout,
      f"... and keeps them across a restart (recorded as a create's: {r.stderr.strip()[:100]} {r2.stdout.strip()})")
    m2 = members()
    st, j, g = create(api, {"templateID": "base"})
    r = sh(g, "echo v=${POOLTEST-unset} h=$HOME")
    t(st == 201 and g in m2 and "v=unset h=/home/user" in r.stdout,
      f"the next member has none of them ({g} in {m2}: {r.stdout.strip()})")
    # the control protocol (ctl.h, v3 to v5): HELLO's versions, SETENV (v4) all or nothing
    HELLO, ERROR, OK, SETENV, T_VERSION, T_ENV, T_CODE, T_VMAX = 1, 3, 2, 26, 1, 4, 10, 40
    try:
        a3 = ctl_call(g, [(HELLO, [(T_VERSION, 3)])])
        a4 = ctl_call(g, [(HELLO, [(T_VERSION, 3), (T_VMAX, 4)])])
        a9 = ctl_call(g, [(HELLO, [(T_VERSION, 6), (T_VMAX, 9)])])
        a2 = ctl_call(g, [(HELLO, [(T_VERSION, 2)])])
        se = ctl_call(g, [(HELLO, [(T_VERSION, 3), (T_VMAX, 4)]),
                          (SETENV, [(T_ENV, "CTLOK=x"), (T_ENV, "1BAD=y")]),
                          (SETENV, [(T_ENV, "NOEQUALS")])])
    except OSError as ex:
        a3 = a4 = a9 = a2 = se = [("error", str(ex))]
    t(a3[:1] == [(HELLO, a3[0][1])] and a3[0][1].get(T_VERSION) == 3,
      f"init answers a v3 client's HELLO with version 3 ({a3})")
    t(a4 and a4[0][0] == HELLO and a4[0][1].get(T_VERSION) == 4,
      f"... and a client of versions 3 to 4 with 4 ({a4})")
    t(a9 and a9[0][0] == ERROR and a2 and a2[0][0] == ERROR,
      f"... and refuses versions 6-9 (v5 is the newest) and 2 ({a9}, {a2})")
    t(len(se) == 3 and se[1][0] == ERROR and se[1][1].get(T_CODE) == 22 and se[2][0] == ERROR,
      f"SETENV with a bad entry (a bad name, no `=`) is ERROR EINVAL ({se})")
    r = sh(g, "echo c=${CTLOK-unset}")
    t("c=unset" in r.stdout, f"... and sets none of the good ones ({r.stdout.strip()})")

    st, j, h = create(api, {"templateID": "base", "envVars": {"1BAD": "x"}})
    t(pool(api).get("claimed", 0) == before + 2,
      f"a create with an env name a start refuses does not take a member ({st})")

    # --- creates that bypass the pool ----------------------------------------------------------
    t(wait(lambda: ready(api) == 2, 90), "the pool is full again")
    before = pool(api).get("claimed", 0)
    m2 = members()
    st, j, x = create(api, {"templateID": "base", "network": {}})
    t(pool(api).get("claimed", 0) == before and x not in m2,
      f"a create with `network` does not take a member ({st}, {x})")
    st, j, v0 = create(api, {"image": "base"}, "/v1/sandboxes")
    t(st == 201 and v0 not in m2 and pool(api).get("claimed", 0) == before,
      f"a /v1 create of an image without a /v1 member does not take a member ({st}, {v0})")
    root0 = v1_run(api, v0, {"cmd": "id -u", "user": "root"})[0]
    sudo0 = "rc=0" in sh(v0, "sudo -n true 2>&1; echo rc=$?").stdout
    st, j, v = create(api, {"envs": {"POOLV1": "one"}, "metadata": {"who": "v1"}}, "/v1/sandboxes")
    t(st == 201 and v in vm and pool(api).get("claimed", 0) == before + 1,
      f"a /v1 create takes the /v1 member ({st}, {v} in {vm})")
    t((j or {}).get("metadata") == {"who": "v1"} and (j or {}).get("timeout_absolute") is False
      and abs((j or {}).get("timeout_ms", 0) - 1800000) <= 1000,
      f"... with its metadata and /v1's default idle timeout ({json.dumps(j)[:200]})")
    st, out = v1_run(api, v, {"cmd": "echo v=$POOLV1; id -u"})
    t(st == 200 and "v=one" in out and "1000" in out, f"... its command sees its envs, as the user ({st}, {out.strip()})")
    st, out = v1_run(api, v, {"cmd": "id -u", "user": "root"})
    r = sh(v, "sudo -n true 2>&1; echo rc=$?")
    t(st == root0 and ("rc=0" in r.stdout) == sudo0 and not sudo0,
      f"... and no sudo, and root as a fresh /v1 sandbox has it ({st} / {root0} {out.strip()[:60]}; {r.stdout.strip()[:80]})")
    t(wait(lambda: ready(api, None, "v1") == 1, 90), "the /v1 kind refills")
    before += 1
    for key in (POOL_LABEL, "toren-sandbox.pool-owner"):
        st, j, y = create(api, {"templateID": "base", "metadata": {key: "x"}})
        t(st == 400 and pool(api).get("claimed", 0) == before, f"metadata key `{key}` refused: 400 ({st})")
        st, j, y = create(api, {"metadata": {key: "x"}}, "/v1/sandboxes")
        t(st == 400, f"... in a /v1 create too ({st})")

    # --- a member whose init died is not handed out -----------------------------------------
    t(wait(lambda: ready(api) == 2, 90), "the pool is full again")
    dead = members("e2b")
    r = ts("stop", *dead) if dead else None
    t(r is not None and r.returncode == 0, f"both members stopped behind serve's back ({dead})")
    st, j, d = create(api, {"templateID": "base"})
    t(st == 201 and d not in dead, f"a create then gets a sandbox that runs, not a stopped member ({st}, {d})")
    r = sh(d, "echo alive") if d else None
    t(r is not None and "alive" in r.stdout, "... which runs commands")
    t(wait(lambda: not set(dead) & set(x["id"] for x in json.loads(ts("ls", "--json").stdout or "[]")), 30),
      "... and the stopped members are removed")

    # --- serve's exit ------------------------------------------------------------------------
    stop_serve(serve)
    serves.remove(serve)
    left = members()
    t(left == [], f"serve's exit removes the members ({left})")
    t(all(i in [r["id"] for r in json.loads(ts("ls", "--json").stdout or "[]")] for i in (b, f, v)),
      "... and keeps the sandboxes it handed out")

    # --- kill -9, then a new serve -------------------------------------------------------------
    serve, api = start_serve("--pool", "2")
    t(serve is not None and wait(lambda: ready(api) == 2, 90), "a second serve --pool 2 fills its pool")
    orphans = members()
    serve.send_signal(signal.SIGKILL)
    serve.wait()
    serves.remove(serve)
    t(len(orphans) == 2 and sorted(members()) == sorted(orphans),
      f"after kill -9 its members are left ({orphans})")
    serve, api = start_serve()
    t(serve is not None and wait(lambda: members() == [], 60),
      f"the next serve (no --pool) removes them ({members()})")
    t(pool(api).get("orphans_removed") == 2, f"... and counts them ({pool(api)})")

    # --- a claimed sandbox is what a fresh one is -----------------------------------------------
    st, j, e = create(api, {"templateID": "base", "metadata": {"who": "second"}})
    names_e = comms(e)
    t(st == 201 and names_b == names_e,
      f"a claimed sandbox runs the same processes as a fresh one ({names_b} / {names_e})")
    fe = changed(e)
    t(fb is not None and fb == fe,
      f"no file was changed by warming: its upper layer and workspace hold what a fresh one's do ({fb} / {fe})")
finally:
    for p in list(serves):
        stop_serve(p)
    for i in created:
        ts("rm", "-f", "--purge", i)
    left = members()
    if left:
        ts("rm", "-f", "--purge", *left)

print(f"1..{n}")
print(f"# {n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
