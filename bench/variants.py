#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn the helper command line of `toren-sandbox run --dry-run -- /bin/true` into a
bench-timer command file of ablations: the same helper run with one part left out at a
time, so the difference to the full run is that part's wall-clock cost (set-up and
teardown together, no tracer attached). A variant that does not apply to the command line
at hand (e.g. no overlay root) is left out.

usage: variants.py DRY_RUN_LINE BWRAP_ARGS CLI_PATH [MERGED_LAYER] > CMDFILE

MERGED_LAYER: with an overlay root of several lowers, a directory holding them copied into
one; adds the variant "one read-only layer" (the helper binds a single read-only lower
instead of building an overlay).
"""
import shlex
import sys


def find(tokens, name, first=None):
    for i, t in enumerate(tokens):
        if t == name and (first is None or (i + 1 < len(tokens) and tokens[i + 1] == first)):
            return i
    return None


def remove(tokens, name, nargs, first=None):
    """Remove `name ARG...` (the one whose first argument is `first`, if given) and the
    `--perms M` / `--size S` right before it; unchanged when absent."""
    i = find(tokens, name, first)
    if i is None:
        return tokens
    j = i
    while j >= 2 and tokens[j - 2] in ("--perms", "--size"):
        j -= 2
    return tokens[:j] + tokens[i + 1 + nargs:]


def remove_all(tokens, name, nargs):
    while name in tokens:
        tokens = remove(tokens, name, nargs)
    return tokens


def root_span(tokens):
    """(start, end) of the options that make the root: an overlay (with its
    --overlay-src), or a bind / tmpfs on `/`."""
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "--overlay-src":
            j = i
            while tokens[j] == "--overlay-src":
                j += 2
            if tokens[j] == "--overlay" and tokens[j + 3] == "/":
                return i, j + 4
            if tokens[j] == "--ro-overlay" and tokens[j + 1] == "/":
                return i, j + 2
            i = j
            continue
        if t in ("--ro-bind", "--bind") and tokens[i + 2] == "/":
            return i, i + 3
        if t == "--tmpfs" and tokens[i + 1] == "/":
            return i, i + 2
        if t == "--":
            break
        i += 1
    return None


def replace_root(tokens, new):
    s, e = root_span(tokens)
    return tokens[:s] + new + tokens[e:]


def tmpfs_root(tokens):
    """A tmpfs root with the merged-usr symlinks, as bubblewrap's command builds it."""
    out = replace_root(tokens, ["--tmpfs", "/"])
    k = find(out, "--ro-bind", "/usr")
    links = []
    for d in ("bin", "lib", "lib64", "sbin"):
        links += ["--symlink", f"usr/{d}", f"/{d}"]
    return out[:k + 3] + links + out[k + 3:]


def direct_cmd(tokens):
    """Let the helper execute /bin/true as PID 1 instead of toren-sandbox-init."""
    k = tokens.index("--")
    return tokens[:k + 1] + ["/bin/true"]


def no_cgroup(tokens):
    for opt in ("--cgroup-pids", "--cgroup-memory", "--cgroup-cpu-quota", "--cgroup"):
        tokens = remove_all(tokens, opt, 1)
    return tokens


def main():
    line, bwrap, cli = sys.argv[1], sys.argv[2], sys.argv[3]
    merged = sys.argv[4] if len(sys.argv) > 4 else None
    words = shlex.split(line)
    assert words[:2] == ["env", "-i"], line
    words = words[2:]
    redirs = [w for w in words if w[:1].isdigit() and "<" in w]
    helper = [w for w in words if w not in redirs]
    s, e = root_span(helper)
    root = helper[s:e]
    lowers = [root[i + 1] for i, t in enumerate(root) if t == "--overlay-src"]
    writable_overlay = "--overlay" in root

    v = [("helper: full", helper)]
    v.append(("helper: no seccomp", remove(helper, "--seccomp", 1)))
    v.append(("helper: no cgroup", no_cgroup(helper)))
    v.append(("helper: no sysfs", remove(helper, "--sysfs", 1)))
    v.append(("helper: no proc", remove(helper, "--proc", 1)))
    nodev = remove(remove(remove(helper, "--remount-ro", 1, "/dev"), "--mqueue", 1),
                   "--dev", 1)
    v.append(("helper: no dev, mqueue", nodev))
    notmp = helper
    for d in ("/tmp", "/var/tmp", "/var", "/root", "/run"):
        notmp = remove(remove(notmp, "--tmpfs", 1, d), "--dir", 1, d)
    v.append(("helper: no /tmp /var /root /run tmpfs", notmp))
    v.append(("helper: no read-only remount of /", remove(helper, "--remount-ro", 1, "/")))
    if root != ["--tmpfs", "/"]:
        v.append(("helper: tmpfs root instead of " + ("overlay" if lowers else "the layer bind"),
                  tmpfs_root(helper)))
    if writable_overlay:
        ro = replace_root(helper, [w for lo in lowers for w in ("--overlay-src", lo)]
                          + ["--ro-overlay", "/"])
        v.append(("helper: read-only overlay (no upper/work)", remove(ro, "--remount-ro", 1, "/")))
        if merged and len(lowers) > 1:
            one = replace_root(helper, ["--overlay-src", merged, "--ro-overlay", "/"])
            v.append(("helper: one read-only layer (bind, no overlay)",
                      remove(one, "--remount-ro", 1, "/")))
    v.append(("helper: no init (CMD is PID 1)", direct_cmd(helper)))
    # The floor of this design: bubblewrap's mount set, nothing else toren adds.
    m = no_cgroup(remove(tmpfs_root(direct_cmd(helper)), "--seccomp", 1))
    for name, arg in (("--sysfs", "/sys"), ("--mqueue", "/dev/mqueue"),
                      ("--remount-ro", "/dev"), ("--remount-ro", "/"), ("--tmpfs", "/var/tmp"),
                      ("--dir", "/var/tmp"), ("--tmpfs", "/var"), ("--tmpfs", "/root"),
                      ("--tmpfs", "/run")):
        m = remove(m, name, 1, arg)
    v.append(("helper: bwrap's mount set, no seccomp/cgroup/init", m))

    print("# generated by bench/variants.py")
    print(f"toren-sandbox run\t{cli} run -- /bin/true")
    print(f"toren-sandbox run --dry-run (CLI only)\t{cli} run --dry-run -- /bin/true")
    print(f"bwrap\t{bwrap}")
    # exec + dynamic loading alone, and /bin/true for scale
    print(f"toren-sandbox --version (exec only)\t{cli} --version")
    print(f"toren-sandbox-helper --version (exec only)\t{helper[0]} --version")
    print("/bin/true (spawn baseline)\t/bin/true")
    seen = []
    for label, argv in v:
        if label != "helper: full" and argv == helper:
            continue  # does not apply to this command line
        if argv in seen:
            continue
        seen.append(argv)
        pre = redirs if "--seccomp" in argv else []
        # the id maps ("0 100000 65536") are words with spaces: separate by 0x1f
        print(f"{label}\t{chr(31).join(pre + argv)}")


if __name__ == "__main__":
    main()
