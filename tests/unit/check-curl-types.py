#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""curl's compile-time checks of curl_easy_setopt/getinfo arguments (curl/typecheck-gcc.h)
hold for every call through the dlopen'ed table (ts_curl_setopt, src/lib/curl-dl.h).

GCC does not report them in a normal build: the macro that makes the check comes from a
system header, whose diagnostics are dropped. Each file that calls ts_curl_setopt or
ts_curl_getinfo is compiled again, as the build compiles it, with -Wsystem-headers and
optimisation (the checks need both), and must give no `-Wattribute-warning`; a control
file with a wrong argument type must give one. One TAP line per file.

usage: check-curl-types.py BUILD_ROOT SOURCE_ROOT
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

build, src = sys.argv[1], sys.argv[2]
entries = json.load(open(os.path.join(build, "compile_commands.json")))


def flags_of(e):
    """The entry's compiler command without its output and dependency options."""
    out, skip = [], False
    for a in shlex.split(e["command"]):
        if skip:
            skip = False
            continue
        if a in ("-o", "-MQ", "-MF", "-MT"):
            skip = True
            continue
        if a in ("-MD", "-MMD", "-Werror", "-c") or a == e["file"]:
            continue
        out.append(a)
    return out


def warnings(e, path):
    cmd = flags_of(e) + ["-O2", "-Wsystem-headers", "-c", path, "-o", os.devnull]
    r = subprocess.run(cmd, cwd=e["directory"], capture_output=True, text=True)
    return r.returncode, [l for l in r.stderr.splitlines() if "Wattribute-warning" in l]


n = fail = 0


def tap(good, what):
    global n, fail
    n += 1
    print(("ok" if good else "not ok") + " %d - %s" % (n, what))
    if not good:
        fail = 1


users = []
for e in entries:
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if not f.endswith(".c") or not os.path.exists(f):
        continue
    text = open(f, errors="replace").read()
    if "ts_curl_setopt(" in text or "ts_curl_getinfo(" in text:
        if f.endswith("/curl-dl.h"):
            continue
        users.append((e, f))
tap(len(users) >= 5, "%d files call libcurl's setopt/getinfo through the table" % len(users))
for e, f in users:
    rc, w = warnings(e, f)
    tap(rc == 0 and not w, "%s: every option's argument has curl's type%s" %
        (os.path.relpath(f, src), "".join("\n# " + l for l in w)))

# the control: the same flags, one argument of the wrong type, must be caught
if users:
    e = users[0][0]
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as t:
        t.write('#include "curl-dl.h"\n'
                "int ts_control(const struct ts_curl *C, CURL *h);\n"
                "int ts_control(const struct ts_curl *C, CURL *h)\n"
                "{\n\treturn ts_curl_setopt(C, h, CURLOPT_TIMEOUT, \"10\");\n}\n")
    try:
        rc, w = warnings(e, t.name)
    finally:
        os.unlink(t.name)
    tap(rc == 0 and any("expects a long" in l for l in w),
        "control: a string for a long option is reported")
print("1..%d" % n)
sys.exit(fail)
