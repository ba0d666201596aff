#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The toolkit's process and search tools through `toren-sandbox tool` (issue 10):

bash (output in arrival order, the head-and-tail cut with its exact dropped count, the
exit code as a result, a timeout that kills the whole process group), background bash
with bash_output (since, pieces of 64 KiB), bash_stop (the whole group: a grandchild
goes too) and bash_list; find (globs with `**`, .gitignore nested and negated, `.git`
skipped, the cut and its message); grep (ERE, glob, line tags as read_file's, the cut,
a bad expression); send_file (no channel, an outbox with its sidecar, a webhook served
here on 127.0.0.1 that records the multipart fields: photo or document).

TAP on stdout. Env: TS_CLI (the toren-sandbox binary), TOREN_SANDBOX_ROOT.
"""
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

cli = os.environ["TS_CLI"]
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


SB = None
AGENT = None  # an agent file to pass (channels), else the default


def tool(name, args, agent=None, timeout=180):
    """(exit status, result object or None, stderr)."""
    cmd = [cli, "tool", "--approve-cmd", "true"]
    if agent:
        cmd += ["--agent", agent]
    cmd += [SB, name, json.dumps(args)]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    try:
        obj = json.loads(p.stdout)
    except ValueError:
        obj = None
    return p.returncode, obj, p.stderr.decode(errors="replace")


def ok_result(res):
    rc, obj, _ = res
    return rc == 0 and obj is not None and obj["is_error"] is False


def err_code(res):
    rc, obj, _ = res
    if rc != 1 or not obj or not obj["is_error"]:
        return None
    return obj["data"].get("error")


def sh(command, timeout_s=None):
    args = {"command": command}
    if timeout_s:
        args["timeout"] = timeout_s
    return tool("bash", args)


def short(res):
    rc, obj, e = res
    return f"rc {rc}, {json.dumps(obj)[:400] if obj else e[:400]}"


# --- the tag algorithm of src/runner/linetag.c, independently ------------------------

M64 = (1 << 64) - 1


def linetag(line: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in line:
        h ^= b
        h = (h * 0x100000001B3) & M64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    h ^= h >> 33
    return "".join("0123456789abcdef"[(h >> (60 - 4 * i)) & 0xF] for i in range(3))


# --- bash ------------------------------------------------------------------------------


def test_bash():
    r = sh("echo out1; sleep 0.2; echo err1 >&2; sleep 0.2; echo out2; exit 3")
    t(ok_result(r) and r[1]["data"]["exit_code"] == 3,
      f"a non-zero exit is a result, not a tool error ({short(r)})")
    t(ok_result(r) and r[1]["text"].startswith("out1\nerr1\nout2\n")
      and r[1]["text"].rstrip().endswith("[exit code 3]"),
      "stdout and stderr interleaved in arrival order, then the exit code")
    r = sh("pwd")
    t(ok_result(r) and r[1]["text"].startswith("/home/user\n"), f"bash runs in the workspace ({short(r)})")

    # the cut: head and tail of 16 KiB each, the exact count between
    r = sh("seq 1 200000")
    want = "".join(f"{i}\n" for i in range(1, 200001)).encode()
    ok = ok_result(r)
    if ok:
        d, text = r[1]["data"], r[1]["text"]
        head, tail = want[:16384], want[-16384:]
        dropped = len(want) - len(head) - len(tail)
        marker = f"[... {dropped} bytes dropped ...]\n"
        t(d["bytes"] == len(want) and d["truncated"] and d["dropped"] == dropped,
          f"the output's size and the bytes dropped are counted ({d})")
        body = text.encode()
        t(body.startswith(head), "the head is the first 16 KiB, unchanged")
        t(marker.encode() in body and body.split(marker.encode(), 1)[1].startswith(tail),
          f"then one marker line `{marker.strip()}`, then the last 16 KiB")
        t(len(body) < 34 * 1024, f"the text stays bounded ({len(body)} bytes)")
    else:
        t(False, f"seq 1 200000 ({short(r)})")
    r = sh("head -c 30000 /dev/zero | tr '\\0' x")
    t(ok_result(r) and not r[1]["data"]["truncated"] and r[1]["text"].startswith("x" * 30000 + "\n[exit code 0]"),
      "32 KiB or less is kept whole")
    r = sh("printf 'a\\xffb\\n'")
    t(ok_result(r) and r[1]["text"].startswith("a\ufffdb"), "bytes that are not UTF-8 become U+FFFD")

    # the timeout kills the whole process group
    start = time.monotonic()
    r = sh("(sleep 300) & echo $! > /tmp/tp-child; echo started; sleep 300", timeout_s=2)
    took = time.monotonic() - start
    t(err_code(r) == "timeout" and r[1]["data"]["timed_out"] and "started" in r[1]["text"],
      f"a timeout is a `timeout` error that keeps the output ({short(r)})")
    t(took < 60, f"it ended within 60 s ({took:.1f} s)")
    r = sh("kill -0 $(cat /tmp/tp-child) 2>/dev/null && echo alive || echo gone")
    t(ok_result(r) and r[1]["text"].startswith("gone"), f"the command's background child is gone too ({short(r)})")
    r = sh("sleep 1 & echo $! > /tmp/tp-ctl; kill -0 $(cat /tmp/tp-ctl) && echo alive")
    t(ok_result(r) and r[1]["text"].startswith("alive"), "control: that check sees a live process")

    for args, what in (({}, "no command"), ({"command": "true", "bogus": 1}, "an unknown argument"),
                       ({"command": "true", "timeout": 0}, "timeout 0"),
                       ({"command": "true", "timeout": 4000}, "timeout past 3600"),
                       ({"command": 5}, "a command that is not a string"),
                       ({"command": "true", "background": "yes"}, "background not a boolean")):
        r = tool("bash", args)
        t(err_code(r) == "invalid_argument", f"bash with {what}: invalid_argument ({short(r)})")


def wait_output(bid, pred, limit=30):
    end = time.monotonic() + limit
    r = None
    while time.monotonic() < end:
        r = tool("bash_output", {"id": bid})
        if ok_result(r) and pred(r[1]):
            return r
        time.sleep(0.2)
    return r


def test_background():
    r = tool("bash", {"command": "echo start; sleep 0.3; echo second; (sleep 300) & echo $! > /tmp/tp-gc; sleep 300",
                      "background": True})
    ok = ok_result(r) and r[1]["data"].get("id") and r[1]["data"].get("pid", 0) > 0
    t(ok, f"background: returns an id and a pid at once ({short(r)})")
    if not ok:
        return
    bid = r[1]["data"]["id"]
    r = wait_output(bid, lambda o: "second" in o["text"])
    t(r and ok_result(r) and r[1]["data"]["running"] and r[1]["text"].startswith("start\nsecond\n"),
      f"bash_output: the output so far, still running ({short(r)})")
    r = tool("bash_output", {"id": bid, "since": 6})
    t(ok_result(r) and r[1]["text"].startswith("second\n") and r[1]["data"]["since"] == 6
      and r[1]["data"]["next_since"] == r[1]["data"]["size"] == 13,
      f"bash_output since 6: from that byte on, next_since at the end ({short(r)})")
    r = tool("bash_list", {})
    mine = [p for p in (r[1]["data"]["processes"] if ok_result(r) else []) if p["id"] == bid]
    t(len(mine) == 1 and mine[0]["running"] and "echo second" in mine[0]["command"],
      f"bash_list: it runs, with its command ({short(r)})")
    r = sh("kill -0 $(cat /tmp/tp-gc) && echo alive")
    t(ok_result(r) and r[1]["text"].startswith("alive"), "its grandchild runs (control)")
    r = tool("bash_stop", {"id": bid})
    t(ok_result(r) and r[1]["data"]["stopped"] and not r[1]["data"]["running"],
      f"bash_stop: it ended ({short(r)})")
    r = sh("sleep 0.5; kill -0 $(cat /tmp/tp-gc) 2>/dev/null && echo alive || echo gone")
    t(ok_result(r) and r[1]["text"].startswith("gone"), f"bash_stop ended the whole group: the grandchild is gone ({short(r)})")
    r = tool("bash_output", {"id": bid})
    t(ok_result(r) and not r[1]["data"]["running"] and r[1]["data"]["exit_code"] is not None,
      f"bash_output after the stop: ended, with its status ({short(r)})")
    r = tool("bash_list", {})
    mine = [p for p in (r[1]["data"]["processes"] if ok_result(r) else []) if p["id"] == bid]
    t(len(mine) == 1 and not mine[0]["running"], "bash_list: it is listed as ended")
    r = tool("bash_stop", {"id": bid})
    t(ok_result(r) and not r[1]["data"]["stopped"], f"bash_stop of an ended one says so ({short(r)})")

    # an end of its own, and output longer than one piece
    r = tool("bash", {"command": "seq 1 30000; exit 5", "background": True})
    bid2 = r[1]["data"]["id"] if ok_result(r) else "none"
    t(bid2 != bid, "a second background process has an id of its own")
    r = wait_output(bid2, lambda o: not o["data"]["running"])
    t(r and ok_result(r) and r[1]["data"]["exit_code"] == 5, f"its exit code once it ended ({short(r)})")
    want = "".join(f"{i}\n" for i in range(1, 30001))
    got, since, pieces, first_more = "", 0, 0, None
    while pieces < 20:
        r = tool("bash_output", {"id": bid2, "since": since})
        if not ok_result(r):
            break
        d = r[1]["data"]
        chunk = r[1]["text"][: d["next_since"] - d["since"]]
        got += chunk
        pieces += 1
        if first_more is None:
            first_more = d["more"]
        since = d["next_since"]
        if not d["more"]:
            break
    t(first_more and pieces >= 3 and got == want,
      f"followed with since, 64 KiB a piece, the output comes whole ({pieces} pieces, {len(got)} of {len(want)} bytes)")

    r = tool("bash_output", {"id": "bg999-ffffff"})
    t(err_code(r) == "not_found", f"bash_output of an unknown id: not_found ({short(r)})")
    r = tool("bash_output", {"id": "../../etc/passwd"})
    t(err_code(r) == "invalid_argument", f"an id that is not one: invalid_argument ({short(r)})")
    r = tool("bash_stop", {"id": "bg999-ffffff"})
    t(err_code(r) == "not_found", f"bash_stop of an unknown id: not_found ({short(r)})")
    r = tool("bash_output", {"id": bid, "since": -1})
    t(err_code(r) == "invalid_argument", "a negative since: invalid_argument")


TREE = r"""
set -e
rm -rf proj && mkdir -p proj/src/deep proj/build proj/node_modules/x proj/.git/objects proj/sub/inner proj/docs
cd proj
printf '*.log\nbuild/\nnode_modules/\n!keep.log\n/rootonly.txt\n' > .gitignore
printf '!*.log\n/local.txt\n' > sub/.gitignore
printf 'int main(void) { return 0; }\n' > src/main.c
printf 'first\nfoo TODO bar\n' > src/deep/a.c
echo x > a.log
echo TODO > keep.log
echo TODO > sub/b.log
echo TODO > sub/local.txt
echo TODO > sub/inner/local.txt
echo TODO > rootonly.txt
echo TODO > docs/rootonly.txt
echo TODO > build/out.c
echo TODO > node_modules/x/i.js
echo TODO > .git/objects/o
printf 'TODO\0binary' > src/bin.dat
echo done
"""


def test_find():
    r = tool("find", {"pattern": "**", "path": "proj"})
    want = {"proj/.gitignore", "proj/keep.log", "proj/src/", "proj/src/bin.dat", "proj/src/deep/",
            "proj/src/deep/a.c", "proj/src/main.c", "proj/sub/", "proj/sub/.gitignore", "proj/sub/b.log",
            "proj/sub/inner/", "proj/sub/inner/local.txt", "proj/docs/", "proj/docs/rootonly.txt"}
    got = set(r[1]["text"].splitlines()) if ok_result(r) else set()
    t(got == want, f"find **: everything but .git and the ignored "
      f"(extra {sorted(got - want)}, missing {sorted(want - got)})")
    t(ok_result(r) and r[1]["data"]["paths"] == sorted(r[1]["data"]["paths"]), "sorted")
    for pat, exp in (("*.c", {"proj/src/main.c", "proj/src/deep/a.c"}),
                     ("src/**/*.c", {"proj/src/main.c", "proj/src/deep/a.c"}),
                     ("src/*.c", {"proj/src/main.c"}),
                     ("**/deep/*", {"proj/src/deep/a.c"}),
                     ("*.log", {"proj/keep.log", "proj/sub/b.log"}),
                     ("local.txt", {"proj/sub/inner/local.txt"}),
                     ("rootonly.txt", {"proj/docs/rootonly.txt"}),
                     ("m?in.[ch]", {"proj/src/main.c"})):
        r = tool("find", {"pattern": pat, "path": "proj"})
        got = set(r[1]["text"].splitlines()) if ok_result(r) else set()
        t(got == exp, f"find `{pat}`: {sorted(exp)} (got {sorted(got)})")
    r = tool("find", {"pattern": "*", "path": "proj/build"})
    t(ok_result(r) and r[1]["text"].splitlines() == ["proj/build/out.c"],
      f"an ignored directory named as the path is searched ({short(r)})")
    r = tool("find", {"pattern": "*.nothing", "path": "proj"})
    t(ok_result(r) and r[1]["data"]["count"] == 0 and "no matches" in r[1]["text"],
      f"no match is a result that says so ({short(r)})")
    r = tool("find", {"pattern": ""})
    t(err_code(r) == "invalid_argument", "an empty pattern: invalid_argument")
    r = tool("find", {"pattern": "*", "path": "../.."})
    t(r[0] == 1 and r[1] and r[1]["is_error"], f"a path out of the workspace is refused ({short(r)})")

    r = sh("rm -rf many && mkdir many && cd many && seq -f 'f%05g.txt' 1 1500 | xargs touch && echo ok")
    r = tool("find", {"pattern": "*.txt", "path": "many"})
    ok = ok_result(r)
    d = r[1]["data"] if ok else {}
    lines = r[1]["text"].splitlines() if ok else []
    t(ok and d["shown"] == 1000 and d["count"] == 1500 and d["count_exact"] and d["truncated"],
      f"find's cut: 1000 of 1500 ({ {k: v for k, v in d.items() if k != 'paths'} })")
    t(ok and lines[999] == "many/f01000.txt" and lines[0] == "many/f00001.txt",
      "the first 1000 in order are shown")
    t(ok and re.search(r"\[cut: 1000 of 1500 matches shown .*narrow `path` or `pattern`", r[1]["text"]),
      f"the cut is said, with what to do ({lines[-1] if lines else ''})")
    r = sh("rm -rf huge && mkdir huge && cd huge && seq -f 'h%05g' 1 12000 | xargs touch && echo ok")
    r = tool("find", {"pattern": "h*", "path": "huge"})
    t(ok_result(r) and not r[1]["data"]["count_exact"] and r[1]["data"]["count"] >= 10000
      and "at least" in r[1]["text"], f"far past the cut the search stops: `at least` ({short(r)[:200]})")


def test_grep():
    r = tool("grep", {"pattern": "TODO", "path": "proj"})
    ok = ok_result(r)
    lines = r[1]["text"].splitlines() if ok else []
    got = {tuple(l.split(":", 2)[:2]) for l in lines if not l.startswith("[")}
    want = {("proj/src/deep/a.c", "2"), ("proj/keep.log", "1"), ("proj/sub/b.log", "1"),
            ("proj/sub/inner/local.txt", "1"), ("proj/docs/rootonly.txt", "1")}
    t(got == want, f"grep: binary files, .git and the ignored are skipped "
      f"(extra {sorted(got - want)}, missing {sorted(want - got)})")
    fmt = all(re.fullmatch(r"[^:]+:\d+:[0-9a-f]{3}\|.*", l) for l in lines if not l.startswith("["))
    tags = {m["path"]: m["tag"] for m in r[1]["data"]["matches"]} if ok else {}
    if ok and any(tags.values()):
        t(fmt, f"each match is path:N:tag|text ({lines[:2]})")
        t(tags.get("proj/src/deep/a.c") == linetag(b"foo TODO bar") and tags.get("proj/keep.log") == linetag(b"TODO"),
          f"the tags are the lines' tags (linetag.c's algorithm, computed here) ({tags})")
    else:
        skip("each match is path:N:tag|text", "ts_linetag is a placeholder on this tree")
        skip("the tags are the lines' tags", "ts_linetag is a placeholder on this tree")
    rr = tool("read_file", {"path": "proj/src/deep/a.c"})
    if ok_result(rr) and tags.get("proj/src/deep/a.c"):
        line2 = [l for l in rr[1]["text"].splitlines() if l.startswith("2:")]
        t(line2 and line2[0].split("|", 1)[0] == "2:" + tags["proj/src/deep/a.c"],
          f"grep's tag is read_file's tag for the line ({line2})")
    else:
        skip("grep's tag is read_file's tag", f"read_file or ts_linetag not on this tree ({short(rr)[:100]})")
    t(ok and any(l.endswith("|foo TODO bar") for l in lines), "the matched line's text follows the tag")

    r = tool("grep", {"pattern": "TODO|main", "path": "proj", "glob": "*.c"})
    got = {l.split(":", 1)[0] for l in r[1]["text"].splitlines()} if ok_result(r) else set()
    t(got == {"proj/src/main.c", "proj/src/deep/a.c"}, f"ERE alternation and a glob on names ({got})")
    r = tool("grep", {"pattern": "TODO", "path": "proj", "glob": "src/**/*.c"})
    got = {l.split(":", 1)[0] for l in r[1]["text"].splitlines()} if ok_result(r) else set()
    t(got == {"proj/src/deep/a.c"}, f"a glob with `/` on the path below `path` ({got})")
    r = tool("grep", {"pattern": "^[a-z]+ TODO [a-z]{3}$", "path": "proj"})
    t(ok_result(r) and r[1]["data"]["count"] == 1, f"anchors, classes and intervals of ERE ({short(r)})")
    r = tool("grep", {"pattern": "TODO", "path": "proj/sub/local.txt"})
    t(ok_result(r) and r[1]["data"]["count"] == 1, f"a file named as the path is searched, ignored or not ({short(r)})")
    r = tool("grep", {"pattern": "nothing-matches-this"})
    t(ok_result(r) and r[1]["data"]["count"] == 0 and "no matches" in r[1]["text"],
      f"no match (grep's exit 1) is a result ({short(r)})")
    r = tool("grep", {"pattern": "(unclosed"})
    t(err_code(r) == "invalid_argument" and "grep" in r[1]["text"],
      f"a bad regular expression: invalid_argument with grep's message ({short(r)})")
    r = tool("grep", {"pattern": ""})
    t(err_code(r) == "invalid_argument", "an empty pattern: invalid_argument")

    r = sh("rm -rf gm && mkdir gm && seq -f 'match %g' 1 3000 > gm/a.txt && "
           "python3 -c 'print(\"x\" * 3000 + \" needle \" + \"y\" * 10)' > gm/long.txt 2>/dev/null || "
           "{ head -c 3000 /dev/zero | tr \"\\0\" x; echo ' needle yyyyyyyyyy'; } > gm/long.txt; echo ok")
    r = tool("grep", {"pattern": "match", "path": "gm"})
    d = r[1]["data"] if ok_result(r) else {}
    t(d.get("shown") == 1000 and d.get("count") == 3000 and d.get("truncated")
      and "[cut: 1000 of 3000 matching lines shown" in r[1]["text"],
      f"grep's cut: 1000 of 3000, said ({ {k: v for k, v in d.items() if k != 'matches'} })")
    r = tool("grep", {"pattern": "needle", "path": "gm"})
    line = r[1]["text"].splitlines()[0] if ok_result(r) else ""
    t("[... " in line and "more bytes of this line]" in line and len(line) < 700,
      f"a long line is cut with a marker ({line[:60]}...{line[-60:]})")
    tag = line.split(":", 2)[2][:3] if line.count(":") >= 2 else ""
    full = b"x" * 3000 + b" needle " + b"y" * 10
    if tag and tag != "|":
        t(tag == linetag(full), "its tag is the whole line's")
    else:
        skip("its tag is the whole line's", "ts_linetag is a placeholder on this tree")


# --- send_file ---------------------------------------------------------------------------


class Hook(http.server.BaseHTTPRequestHandler):
    posts = []

    def do_POST(self):
        import email.parser
        import email.policy
        body = self.rfile.read(int(self.headers["Content-Length"]))
        head = b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n"
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        parts = {}
        for p in msg.iter_parts():
            name = p.get_param("name", header="content-disposition")
            parts[name] = {"filename": p.get_filename(), "type": p.get_content_type(),
                           "data": p.get_payload(decode=True)}
        Hook.posts.append({"path": self.path, "parts": parts})
        code = 500 if "fail" in self.path else 200
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b'{"ok":false,"why":"told to fail"}' if code != 200 else b'{"ok":true}')

    def log_message(self, *a):
        pass


def agent_file(tmp, name, channel):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nsandbox:\n  approval: never\n  channel:\n    {channel}\n")
    return path


def test_send(tmp):
    r = sh("printf '\\x89PNG\\r\\n\\x1a\\n0123456789' > pic.png; printf 'hello\\n' > notes.txt; "
           "printf 'GIF89a...' > anim.bin; echo ok")
    r = tool("send_file", {"path": "notes.txt"})
    t(err_code(r) == "no_channel" and "sandbox.channel" in r[1]["text"],
      f"no channel: no_channel, saying how to configure one ({short(r)})")

    outbox = os.path.join(tmp, "outbox")
    os.mkdir(outbox)
    agent = agent_file(tmp, "outbox", f"outbox: {outbox}")
    r = tool("send_file", {"path": "notes.txt", "caption": "the notes"}, agent=agent)
    if r[0] == 2 and not r[1]:
        skip("send_file to an outbox", f"the agent configuration cannot name a channel on this tree ({r[2].strip()[:120]})")
    else:
        t(ok_result(r) and r[1]["data"]["channel"] == "outbox" and r[1]["data"]["kind"] == "document",
          f"send_file to an outbox ({short(r)})")
        files = sorted(os.listdir(outbox))
        data = [f for f in files if not f.endswith(".json")]
        t(len(data) == 1 and data[0].endswith("notes.txt") and files == sorted(data + [data[0] + ".json"]),
          f"the file under a new name and its sidecar ({files})")
        if len(data) == 1:
            with open(os.path.join(outbox, data[0]), "rb") as f:
                content = f.read()
            with open(os.path.join(outbox, data[0] + ".json")) as f:
                side = json.load(f)
            t(content == b"hello\n", "the file's content")
            t(side["caption"] == "the notes" and side["path"] == "notes.txt" and side["size"] == 6
              and side["sha256"] == hashlib.sha256(b"hello\n").hexdigest() and side["time"],
              f"the sidecar: caption, path, size, sha256, time ({side})")
        r = tool("send_file", {"path": "notes.txt"}, agent=agent)
        files2 = [f for f in os.listdir(outbox) if not f.endswith(".json")]
        t(ok_result(r) and len(files2) == 2, f"a second send never overwrites the first ({files2})")
        r = tool("send_file", {"path": "pic.png"}, agent=agent)
        t(ok_result(r) and r[1]["data"]["kind"] == "photo", "an image is a photo")
        r = tool("send_file", {"path": "missing.txt"}, agent=agent)
        t(err_code(r) == "not_found", f"a missing file: not_found ({short(r)})")
        r = tool("send_file", {"path": "proj"}, agent=agent)
        t(err_code(r) == "invalid_argument", f"a directory: invalid_argument ({short(r)})")
        r = tool("send_file", {"path": "../../etc/passwd"}, agent=agent)
        t(r[0] == 1 and r[1]["is_error"], f"a path out of the workspace is refused ({short(r)})")

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        agent = agent_file(tmp, "hook", f"webhook: http://127.0.0.1:{port}/hook")
        r = tool("send_file", {"path": "pic.png", "caption": "a picture"}, agent=agent)
        if r[0] == 2 and not r[1]:
            skip("send_file to a webhook", f"the agent configuration cannot name a channel on this tree ({r[2].strip()[:120]})")
            return
        post = Hook.posts[-1] if Hook.posts else {"parts": {}}
        photo = post["parts"].get("photo")
        t(ok_result(r) and photo and photo["filename"] == "pic.png" and photo["type"] == "image/png"
          and photo["data"] == b"\x89PNG\r\n\x1a\n0123456789",
          f"a PNG goes to the webhook as `photo`, with its name and type ({short(r)}; {post})")
        t(post["parts"].get("caption", {}).get("data") == b"a picture", "with the caption field")
        r = tool("send_file", {"path": "notes.txt"}, agent=agent)
        post = Hook.posts[-1] if Hook.posts else {"parts": {}}
        doc = post["parts"].get("document")
        t(ok_result(r) and doc and doc["filename"] == "notes.txt" and doc["data"] == b"hello\n"
          and "photo" not in post["parts"], f"a text file goes as `document` ({post})")
        r = tool("send_file", {"path": "anim.bin"}, agent=agent)
        post = Hook.posts[-1] if Hook.posts else {"parts": {}}
        t("photo" in post["parts"] and post["parts"]["photo"]["type"] == "image/gif",
          "an image is known by its first bytes, whatever its name")
        agent = agent_file(tmp, "hookfail", f"webhook: http://127.0.0.1:{port}/fail?token=sekrit")
        r = tool("send_file", {"path": "notes.txt"}, agent=agent)
        t(err_code(r) == "channel_failed" and "500" in r[1]["text"] and "told to fail" in r[1]["text"]
          and "sekrit" not in r[1]["text"],
          f"a non-2xx answer: a tool error with the status and the body, not the URL's token ({short(r)})")
    finally:
        srv.shutdown()


def main():
    global SB
    p = subprocess.run([cli, "create"], capture_output=True, text=True, timeout=120)
    SB = p.stdout.strip()
    if p.returncode != 0 or not SB:
        if os.environ.get("TS_TESTS_MUST_WORK") == "1":
            t(False, f"a sandbox to test in ({p.stderr.strip()[:200]})")
        else:
            print(f"1..0 # SKIP no sandbox: {p.stderr.strip()[:200]}")
            sys.exit(0)
        return
    tmp = tempfile.mkdtemp(prefix="ts-tools-proc-")
    try:
        test_bash()
        test_background()
        r = sh(TREE)
        t(ok_result(r) and "done" in r[1]["text"], f"a tree with .gitignore files ({short(r)})")
        r = tool("find", {"pattern": "*.c", "path": "proj"})
        if err_code(r) == "unimplemented":
            # workspace paths (wspath.c) come from another branch: until they are merged
            skip("find, grep and send_file", "ts_ws_resolve is a placeholder on this tree")
        else:
            test_find()
            test_grep()
            test_send(tmp)
    finally:
        subprocess.run([cli, "rm", "-f", SB], capture_output=True, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as ex:  # a crash is a failure, never a silent pass
        import traceback
        diag(traceback.format_exc())
        t(False, f"the script ran to its end ({ex!r})")
    print(f"1..{n}")
    sys.exit(1 if failed else 0)
