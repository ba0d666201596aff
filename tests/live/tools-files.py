#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The file tools (read_file, write_file, edit_file) through `toren-sandbox tool`.

Every tool's contract and its errors, on a real sandbox: line tags (recomputed here, so a
tag is checked against its definition, not against itself), offset/limit on a 10k-line
file, binary and too-large files refused, edits by tags chained through their results,
tags gone stale refused with the current lines, a change made by `bash` (here `exec`)
between a read and an edit detected, several edits applied atomically or not at all,
protected paths refused for writing at any depth while reading them works, and escapes
(`..`, absolute paths outside, symlinks out, absolute and relative) refused.

TAP on stdout. Env: TS_CLI (the toren-sandbox binary), TOREN_SANDBOX_ROOT; TS_TOOL_DRIVER
(optional): tests/runner/tool-driver, to call the toolbox without the runner.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

cli = os.environ["TS_CLI"]
n = 0
failed = 0
M = (1 << 64) - 1


def t(cond, desc):
    global n, failed
    n += 1
    desc = desc.replace("\n", " ").replace("#", "%23")
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    if not cond:
        failed += 1
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def tag(line):
    """linetag.c's tag: FNV-1a 64, murmur3's finaliser, the top 12 bits."""
    if isinstance(line, str):
        line = line.encode()
    h = 0xCBF29CE484222325
    for b in line:
        h ^= b
        h = (h * 0x100000001B3) & M
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M
    h ^= h >> 33
    return "%03x" % (h >> 52)


def ref(content, k):
    """`N:tag` of line k (1-based) of content."""
    return f"{k}:{tag(content.split(chr(10))[k - 1])}"


def tagged(content, a=1, b=None):
    lines = content.split("\n")
    if content.endswith("\n"):
        lines = lines[:-1]
    b = b or len(lines)
    return "".join(f"{k}:{tag(lines[k - 1])}|{lines[k - 1]}\n" for k in range(a, b + 1))


def chash(data):
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()[:32]


def skip_all(why):
    if os.environ.get("TS_TESTS_MUST_WORK") == "1":
        print("1..1\nnot ok 1 - " + why + " (TS_TESTS_MUST_WORK=1)")
        sys.exit(1)
    print("1..0 # SKIP " + why)
    sys.exit(0)


tmp = tempfile.mkdtemp(prefix="ts-tools-files-")
os.chmod(tmp, 0o755)
agent = os.path.join(tmp, "agent.yaml")
agent_v1 = os.path.join(tmp, "v1.yaml")
with open(agent, "w") as f:
    f.write("name: files\nsandbox:\n  approval: never\n")
with open(agent_v1, "w") as f:
    f.write("name: files-v1\nsandbox:\n  approval: never\n  tools: 1\n")

p = subprocess.run([cli, "create"], capture_output=True, text=True, timeout=120)
sb = p.stdout.strip().splitlines()[-1] if p.returncode == 0 and p.stdout.strip() else ""
if not sb:
    skip_all("cannot create a sandbox: " + p.stderr.strip()[:300])
run = ""
run_sb = ""


def cleanup():
    if driver:
        driver.stdin.close()
        driver.wait(timeout=60)
    if run:
        subprocess.run([cli, "runs", "finish", run], capture_output=True, timeout=60)
    for s in {sb, run_sb} - {""}:
        subprocess.run([cli, "rm", "-f", s], capture_output=True, timeout=60)
    subprocess.run(["rm", "-rf", tmp])


driver = None


def tool(name, args, v1=False, use_run=False):
    """(exit status, result object) of one call."""
    global driver
    if os.environ.get("TS_TOOL_DRIVER"):
        if not driver:
            driver = subprocess.Popen([os.environ["TS_TOOL_DRIVER"], sb], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        driver.stdin.write(json.dumps({"tool": name, "args": args, "version": 1 if v1 else 2,
                                       "run": use_run}) + "\n")
        driver.stdin.flush()
        obj = json.loads(driver.stdout.readline())
        return obj.pop("exit"), obj
    cmd = [cli, "tool", "--agent", agent_v1 if v1 else agent]
    if use_run:
        cmd += ["--run", run, "-"]
    else:
        cmd += [sb]
    cmd += [name, "-"]
    p = subprocess.run(cmd, input=json.dumps(args), capture_output=True, text=True, timeout=120)
    try:
        obj = json.loads(p.stdout)
    except ValueError:
        obj = {"is_error": None, "text": p.stdout + p.stderr, "data": {}}
    return p.returncode, obj


def ex(script, on=None):
    """Run sh -c script in the sandbox as its user (bash's way of changing files)."""
    p = subprocess.run([cli, "exec", on or sb, "--", "sh", "-c", script], capture_output=True,
                       timeout=120)
    return p.returncode, p.stdout


def cat(path, on=None):
    rc, out = ex(f"cat '{path}'", on)
    return out.decode(errors="replace") if rc == 0 else None


def err_is(res, code, desc, needle=None):
    rc, o = res
    good = rc == 1 and o.get("is_error") is True and (o.get("data") or {}).get("error") == code
    if needle is not None:
        good = good and needle in o.get("text", "")
    if not t(good, desc):
        diag(f"exit {rc}: {json.dumps(o)[:600]}")
    return good


def ok_res(res, desc):
    rc, o = res
    good = rc == 0 and o.get("is_error") is False
    if not t(good, desc):
        diag(f"exit {rc}: {json.dumps(o)[:600]}")
    return good


try:
    # --- write_file ------------------------------------------------------------------
    rc, o = tool("write_file", {"path": "a/b/c.txt", "content": "one\ntwo\n"})
    d = o.get("data") or {}
    t(rc == 0 and d.get("created") is True and d.get("bytes") == 8 and d.get("lines") == 2
      and o["text"].startswith("created `a/b/c.txt`"),
      "write_file creates a file and its parents, saying bytes and lines")
    t(cat("/home/user/a/b/c.txt") == "one\ntwo\n", "... with that content")
    t(d.get("hash") == chash("one\ntwo\n"), "its hash is the content's (sha256, 128 bits)")
    rc, o = tool("write_file", {"path": "/home/user/a/b/c.txt", "content": "one\ntwo\nthree\n"})
    t(rc == 0 and o["data"].get("created") is False and o["text"].startswith("replaced"),
      "write_file replaces a file (an absolute path inside the workspace)")
    ex("printf 'echo hi\\n' > x.sh && chmod 750 x.sh")
    tool("write_file", {"path": "x.sh", "content": "echo bye\n"})
    rc, out = ex("stat -c %a x.sh")
    t(out.strip() == b"750", f"a replaced file keeps its mode ({out.strip().decode()})")
    err_is(tool("write_file", {"path": "a/b", "content": "x"}), "is_directory",
           "write_file of a directory: is_directory")
    err_is(tool("write_file", {"path": "q.txt"}), "invalid_argument",
           "write_file without content: invalid_argument", "content")
    err_is(tool("write_file", {"path": "q.txt", "content": 3}), "invalid_argument",
           "write_file with content not a string: invalid_argument")
    err_is(tool("write_file", {"path": "q.txt", "content": "x", "mode": 0o600}),
           "invalid_argument", "write_file with an unknown argument: invalid_argument", "mode")
    err_is(tool("write_file", {"path": "", "content": "x"}), "invalid_argument",
           "write_file of an empty path: invalid_argument")

    # --- read_file -------------------------------------------------------------------
    c = "one\ntwo\nthree\n"
    rc, o = tool("read_file", {"path": "a/b/c.txt"})
    t(rc == 0 and o["text"] == tagged(c) + "[lines 1-3 of 3: end of file]\n",
      "read_file tags every line N:tag|text, the tag being the line's hash")
    if rc != 0 or not o["text"].startswith(tagged(c)):
        diag(o["text"][:300])
    d = o.get("data") or {}
    t(d.get("lines") == 3 and d.get("more") is False and d.get("hash") == chash(c)
      and d.get("path") == "a/b/c.txt", "... its data: lines, more, hash, the path")
    rc, o = tool("read_file", {"path": "a/b/c.txt"}, v1=True)
    t(rc == 0 and o["text"] == c, "tools: 1: read_file shows the content as it is, no tags")
    err_is(tool("read_file", {"path": "nope.txt"}), "not_found", "read_file of a missing file: not_found")
    err_is(tool("read_file", {"path": "a/b"}), "is_directory", "read_file of a directory: is_directory")
    err_is(tool("read_file", {}), "invalid_argument", "read_file without path: invalid_argument")
    err_is(tool("read_file", {"path": "a/b/c.txt", "limit": 0}), "invalid_argument",
           "read_file with limit 0: invalid_argument")
    err_is(tool("read_file", {"path": "a/b/c.txt", "offset": 4}), "invalid_argument",
           "read_file past the end: invalid_argument, saying how many lines", "3 lines")
    ex("printf '' > empty.txt")
    rc, o = tool("read_file", {"path": "empty.txt"})
    t(rc == 0 and "empty" in o["text"] and o["data"].get("lines") == 0, "an empty file: 0 lines")
    ex("printf 'ab\\000cd' > nul.bin; printf 'caf\\351\\n' > latin1.txt")
    err_is(tool("read_file", {"path": "nul.bin"}), "binary", "a file with NUL bytes: binary")
    err_is(tool("read_file", {"path": "latin1.txt"}), "binary", "a file that is not UTF-8: binary")
    ex("seq 1 9000 > late.txt; printf 'x\\377y\\n' >> late.txt")
    rc, o = tool("read_file", {"path": "late.txt", "offset": 9001})
    t(rc == 0 and f"9001:{tag(b'x' + bytes([255]) + b'y')}|x\ufffdy" in o["text"]
      and "U+FFFD" in o["text"],
      "a bad byte past the sniffed part: shown as U+FFFD, tagged by its real bytes")
    ex("yes 0123456789abcdef | head -c 17000000 > huge.txt")
    err_is(tool("read_file", {"path": "huge.txt"}), "too_large", "a file over 16 MiB: too_large")
    err_is(tool("edit_file", {"path": "huge.txt", "old_string": "0", "new_string": "1"}),
           "too_large", "edit_file of it: too_large")
    ex("rm -f huge.txt; head -c 5000 /dev/zero | tr '\\0' x > long.txt; echo >> long.txt; echo end >> long.txt")
    rc, o = tool("read_file", {"path": "long.txt"})
    t(rc == 0 and o["text"].startswith(f"1:{tag('x' * 5000)}|" + "x" * 2000 + " [... line cut")
      and f"2:{tag('end')}|end" in o["text"],
      "a long line is cut with a marker; its tag covers the whole line")

    # 10k lines, offset/limit
    ex("seq 1 10000 | sed 's/^/line /' > big.txt")
    big = "".join(f"line {k}\n" for k in range(1, 10001))
    rc, o = tool("read_file", {"path": "big.txt"})
    d = o.get("data") or {}
    t(rc == 0 and d.get("lines") == 10000 and d.get("end") == 2000 and d.get("more") is True
      and d.get("next_offset") == 2001
      and "[lines 1-2000 of 10000; read on with offset 2001]" in o["text"],
      "a 10k-line file: 2000 lines by default, and how to read on")
    t(o["text"].startswith(tagged(big, 1, 2000)), "... tagged right")
    rc, o = tool("read_file", {"path": "big.txt", "offset": 9990, "limit": 20})
    t(rc == 0 and o["text"] == tagged(big, 9990, 10000) + "[lines 9990-10000 of 10000: end of file]\n",
      "offset 9990, limit 20: the last 11 lines, the end said")
    rc, o = tool("read_file", {"path": "big.txt", "offset": 100, "limit": 3})
    t(rc == 0 and o["text"] == tagged(big, 100, 102) + "[lines 100-102 of 10000; read on with offset 103]\n",
      "offset 100, limit 3")
    rc, o = tool("read_file", {"path": "big.txt", "offset": 1, "limit": 100000})
    t(rc == 0 and o["data"].get("end") == 10000 and len(o["text"]) < 256 * 1024,
      "limit 100000 reads all 10k lines within the result's bound")
    rc, o = tool("read_file", {"path": "big.txt", "offset": 9999, "limit": 1})
    r9999 = ref(big, 9999)
    rc, o = tool("edit_file", {"path": "big.txt", "edits": [{"start": r9999, "new_string": "changed"}]})
    t(rc == 0 and cat("big.txt").endswith("line 9998\nchanged\nline 10000\n"),
      "edit_file of line 9999 of 10k by its tag")

    # --- edit_file: old_string -------------------------------------------------------
    tool("write_file", {"path": "e.txt", "content": "alpha\nbeta\ngamma\nbeta\n"})
    rc, o = tool("edit_file", {"path": "e.txt", "old_string": "alpha", "new_string": "ALPHA"}, v1=True)
    t(rc == 0 and cat("e.txt") == "ALPHA\nbeta\ngamma\nbeta\n" and "|" not in o["text"],
      "tools: 1: edit_file replaces a unique old_string (no tags in the result)")
    err_is(tool("edit_file", {"path": "e.txt", "old_string": "beta", "new_string": "B"}, v1=True),
           "ambiguous", "an old_string found twice: ambiguous, saying how often", "occurs 2 times")
    err_is(tool("edit_file", {"path": "e.txt", "old_string": "delta", "new_string": "D"}, v1=True),
           "not_found", "an old_string not there: not_found, saying so", "not found")
    err_is(tool("edit_file", {"path": "e.txt", "edits": [{"old_string": "a", "new_string": "b"}]}, v1=True),
           "invalid_argument", "tools: 1: edits are refused, naming version 2", "version 2")
    rc, o = tool("edit_file", {"path": "e.txt", "old_string": "beta", "new_string": "BETA", "replace_all": True})
    t(rc == 0 and cat("e.txt") == "ALPHA\nBETA\ngamma\nBETA\n" and o["data"].get("replaced") == 2,
      "replace_all replaces both")
    new = "ALPHA\nBETA\ngamma\nBETA\n"
    t(tagged(new, 1, 4) in o["text"], "the result shows the changed lines with their new tags")
    err_is(tool("edit_file", {"path": "missing.txt", "old_string": "a", "new_string": "b"}),
           "not_found", "edit_file of a missing file: not_found, naming write_file", "write_file")
    err_is(tool("edit_file", {"path": "nul.bin", "old_string": "ab", "new_string": "x"}),
           "binary", "edit_file of a binary file: binary")
    err_is(tool("edit_file", {"path": "e.txt", "old_string": "x", "new_string": "y", "bogus": 1}),
           "invalid_argument", "edit_file with an unknown argument: invalid_argument")

    # --- edit_file: tags -------------------------------------------------------------
    c = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    tool("write_file", {"path": "m.py", "content": c})
    rc, o = tool("edit_file", {"path": "m.py", "edits": [
        {"start": ref(c, 2), "new_string": "    x = 1\n    return x"},
        {"after": ref(c, 5), "new_string": "\ndef h():\n    return 3"},
        {"after": "0:", "new_string": "import os"}]})
    c2 = "import os\ndef f():\n    x = 1\n    return x\n\ndef g():\n    return 2\n\ndef h():\n    return 3\n"
    t(rc == 0 and cat("m.py") == c2, "three tag edits in one call, by the lines as read")
    t(tagged(c2, 1, 6) in o["text"] and tagged(c2, 6, 10) in o["text"],
      "the result tags the changed lines as read_file would")
    rc, o = tool("edit_file", {"path": "m.py", "edits": [
        {"start": ref(c2, 9), "end": ref(c2, 10), "new_string": ""}]})
    c3 = "import os\ndef f():\n    x = 1\n    return x\n\ndef g():\n    return 2\n\n"
    t(rc == 0 and cat("m.py") == c3, "a chained edit with tags from the last result deletes a range")

    # stale tags: the line changed since it was read
    ex("sed -i 's/return 2/return 22/' m.py")
    before = cat("m.py")
    rc, o = tool("edit_file", {"path": "m.py", "edits": [{"start": ref(c3, 7), "new_string": "    pass"}]})
    cur = before or ""
    err_is((rc, o), "stale", "an edit whose tag no longer matches its line: stale")
    t(f"7:{tag('    return 22')}|    return 22" in o["text"] and cat("m.py") == before,
      "... refused with the current line tagged, the file unchanged")
    rc, o = tool("edit_file", {"path": "m.py", "edits": [{"start": "99:abc", "new_string": "x"}]})
    err_is((rc, o), "stale", "a line past the end: refused", "past the end")

    # atomic: one bad edit of several, overlaps
    rc, o = tool("edit_file", {"path": "m.py", "edits": [
        {"start": ref(cur, 1), "new_string": "import sys"},
        {"old_string": "x = 1", "new_string": "x = 2"},
        {"start": "3:" + ("000" if tag(cur.split("\n")[2]) != "000" else "001"), "new_string": "x"}]})
    t(rc == 1 and o["data"].get("error") == "stale" and cat("m.py") == cur,
      "three edits, one with a bad tag: none applied (the file is byte for byte as it was)")
    rc, o = tool("edit_file", {"path": "m.py", "edits": [
        {"start": ref(cur, 1), "new_string": "import sys"},
        {"old_string": "no such text", "new_string": "y"}]})
    t(rc == 1 and o["data"].get("error") == "not_found" and cat("m.py") == cur,
      "two edits, one old_string not found: none applied")
    rc, o = tool("edit_file", {"path": "m.py", "edits": [
        {"start": ref(cur, 2), "end": ref(cur, 4), "new_string": "pass"},
        {"old_string": "x = 1", "new_string": "x = 2"}]})
    t(rc == 1 and o["data"].get("error") == "overlap" and cat("m.py") == cur,
      "overlapping edits: refused, none applied")

    # a change by bash between read and edit (the run remembers what was read)
    if os.environ.get("TS_TOOL_DRIVER"):
        t(True, "a run on the sandbox (the driver's memory)")
    else:
        p = subprocess.run([cli, "runs", "new", "--agent", agent, "--sandbox", sb],
                           capture_output=True, text=True, timeout=120)
        run = p.stdout.strip()
        t(p.returncode == 0 and run, f"a run on the sandbox ({p.stderr.strip()[:200]})")
    s = "a = 1\nb = 2\nc = 3\n"
    ok_res(tool("write_file", {"path": "s.txt", "content": s}, use_run=True), "write_file in the run")
    run_sb = sb
    if run:
        # the run's own sandbox: the one it was begun on, or one it made
        p = subprocess.run([cli, "runs", "show", run], capture_output=True, text=True, timeout=60)
        try:
            run_sb = json.loads(p.stdout).get("sandbox") or sb
        except ValueError:
            pass
    ok_res(tool("edit_file", {"path": "s.txt", "old_string": "a = 1", "new_string": "a = 10"}, use_run=True),
           "an old_string edit right after the write")
    s = "a = 10\nb = 2\nc = 3\n"
    ok_res(tool("read_file", {"path": "s.txt"}, use_run=True), "read_file in the run")
    ex("echo 'd = 4' >> s.txt", run_sb)
    rc, o = tool("edit_file", {"path": "s.txt", "old_string": "b = 2", "new_string": "b = 20"}, use_run=True)
    err_is((rc, o), "stale", "bash changed the file after the read: an old_string edit is stale", "read_file")
    t(cat("s.txt", run_sb) == s + "d = 4\n", "... and the file is as bash left it")
    rc, o = tool("edit_file", {"path": "s.txt", "edits": [{"start": ref(s, 2), "new_string": "b = 20"}]},
                 use_run=True)
    t(rc == 0 and "had changed" in o["text"] and o["data"].get("stale") is True
      and cat("s.txt", run_sb) == "a = 10\nb = 20\nc = 3\nd = 4\n",
      "a tag edit of an unchanged line applies, warning that the file had changed")
    ex("echo 'e = 5' >> s.txt", run_sb)
    ok_res(tool("read_file", {"path": "s.txt"}, use_run=True), "read again")
    ok_res(tool("edit_file", {"path": "s.txt", "old_string": "c = 3", "new_string": "c = 30"}, use_run=True),
           "after a new read the old_string edit applies")

    # --- protected paths -------------------------------------------------------------
    ex("mkdir -p deep/er && echo SECRET=1 > deep/er/.env && echo k > deep/er/server.pem && ln -s deep/er/.env envlink")
    rc, o = tool("read_file", {"path": "deep/er/.env"})
    t(rc == 0 and "SECRET=1" in o["text"], "a protected file can be read")
    for path in [".env", "deep/er/.env", "deep/er/server.pem", "x/y/z/.env.local", "new/id_rsa",
                 "credentials/notes.txt", "envlink", "/home/user/deep/er/.env"]:
        err_is(tool("write_file", {"path": path, "content": "x"}), "protected",
               f"write_file `{path}`: protected, read but not written", "can be read")
    for path in ["deep/er/.env", "envlink"]:
        err_is(tool("edit_file", {"path": path, "old_string": "SECRET=1", "new_string": "x"}),
               "protected", f"edit_file `{path}`: protected")
    err_is(tool("edit_file", {"path": "deep/er/.env", "edits": [{"after": "0:", "new_string": "x"}]}),
           "protected", "edit_file by tags: protected")
    t(cat("deep/er/.env") == "SECRET=1\n", "the protected file is unchanged")
    rc, out = ex("ls new credentials x 2>&1")
    t(rc != 0, "no parent directory was made for a refused write")

    # --- escapes ---------------------------------------------------------------------
    ex("ln -s /etc out; ln -s ../../etc a/rel_out; ln -s /etc/passwd pw; ln -s a/b inlink; "
       "ln -s /home/user/a abslink; ln -s loop1 loop2; ln -s loop2 loop1; ln -s .. up")
    for path, what in [("../etc/passwd", ".."), ("a/../../etc/passwd", "a/../.."),
                       ("/etc/passwd", "an absolute path outside"), ("/home/userx/f", "a prefix"),
                       ("out/passwd", "an absolute symlink out"), ("pw", "a symlink to a file out"),
                       ("a/rel_out/passwd", "a relative symlink out"), ("up/etc/passwd", "a symlink to ..")]:
        err_is(tool("read_file", {"path": path}), "escape", f"read_file `{path}` ({what}): escape")
    err_is(tool("write_file", {"path": "out/new.txt", "content": "x"}), "escape",
           "write_file through a symlink out: escape")
    err_is(tool("edit_file", {"path": "pw", "old_string": "root", "new_string": "x"}), "escape",
           "edit_file through a symlink out: escape")
    err_is(tool("write_file", {"path": "../escaped.txt", "content": "x"}), "escape",
           "write_file with ..: escape")
    rc, o = tool("read_file", {"path": "inlink/c.txt"})
    t(rc == 0 and o["data"].get("path") == "a/b/c.txt", "a relative symlink inside is followed (control)")
    rc, o = tool("read_file", {"path": "abslink/b/c.txt"})
    t(rc == 0 and o["data"].get("path") == "a/b/c.txt", "an absolute symlink inside is followed")
    rc, o = tool("read_file", {"path": "a/b/../b/./c.txt"})
    t(rc == 0 and o["data"].get("path") == "a/b/c.txt", ". and .. inside the workspace resolve")
    rc, o = tool("write_file", {"path": "inlink/new.txt", "content": "via link\n"})
    t(rc == 0 and cat("a/b/new.txt") == "via link\n", "write_file through a symlink inside")
    err_is(tool("read_file", {"path": "loop1"}), "invalid_argument", "a symlink loop: refused", "symlinks")
    err_is(tool("read_file", {"path": "a/b/c.txt/x"}), "not_a_directory", "a file used as a directory")
finally:
    cleanup()

print(f"1..{n}")
if failed:
    print(f"# {failed} of {n} failed")
sys.exit(1 if failed else 0)
