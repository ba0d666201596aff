#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn the helper command line of `toren-sandbox run --dry-run -- /bin/true` into a
bench-timer command file of ablations: the same helper run with one part left out at a
time, so the difference to the full run is that part's wall-clock cost (set-up and
teardown together, no tracer attached).

usage: variants.py DRY_RUN_LINE BWRAP_ARGS CLI_PATH [MERGED_LAYER] > CMDFILE

MERGED_LAYER: a directory holding the identity and host layers copied into one; adds the
variant "one read-only layer" (the helper bind-mounts a single read-only lower instead of
building an overlay).
"""
import shlex
import sys


def remove(tokens, name, nargs, first=None):
    """Remove `name ARG...` (the one whose first argument is `first`, if given) and a
    `--perms M` right before it. Returns a new list; raises if absent."""
    for i, t in enumerate(tokens):
        if t == name and (first is None or tokens[i + 1] == first):
            j = i
            if j >= 2 and tokens[j - 2] == "--perms":
                j -= 2
            return tokens[:j] + tokens[i + 1 + nargs:]
    raise KeyError(f"{name} {first or ''}")


def remove_all(tokens, name, nargs):
    while name in tokens:
        tokens = remove(tokens, name, nargs)
    return tokens


def tmpfs_root(tokens):
    """Replace the overlay root (identity + host /etc layers, upper, work) by a tmpfs
    with the merged-usr symlinks, as bubblewrap's command builds it."""
    out, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t == "--overlay-src":
            i += 2
            continue
        if t == "--overlay":
            out += ["--tmpfs", "/"]
            i += 4
            continue
        out.append(t)
        if t == "--ro-bind" and tokens[i + 1] == "/usr":
            out += tokens[i + 1:i + 3]
            for d in ("bin", "lib", "lib64", "sbin"):
                out += ["--symlink", f"usr/{d}", f"/{d}"]
            i += 3
            continue
        i += 1
    return out


def ro_root(tokens, lowers):
    """Replace the writable overlay by a read-only one of `lowers` (no upper, no work).
    One lower makes the helper bind it instead of mounting overlayfs. The final
    `--remount-ro /` is then redundant and dropped."""
    out, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t == "--overlay-src":
            i += 2
            continue
        if t == "--overlay":
            for lo in lowers:
                out += ["--overlay-src", lo]
            out += ["--ro-overlay", "/"]
            i += 4
            continue
        out.append(t)
        i += 1
    return remove(out, "--remount-ro", 1, "/")


def direct_cmd(tokens):
    """Let the helper execute /bin/true as PID 1 instead of toren-sandbox-init."""
    k = tokens.index("--")
    return tokens[:k + 1] + ["/bin/true"]


def main():
    line, bwrap, cli = sys.argv[1], sys.argv[2], sys.argv[3]
    merged = sys.argv[4] if len(sys.argv) > 4 else None
    words = shlex.split(line)
    assert words[:2] == ["env", "-i"], line
    words = words[2:]
    redirs = [w for w in words if w[:1].isdigit() and "<" in w]
    helper = [w for w in words if w not in redirs]
    has_cg = "--cgroup" in helper

    v = []
    v.append(("helper: full", helper))
    v.append(("helper: no seccomp", remove(helper, "--seccomp", 1)))
    if has_cg:
        nocg = remove_all(remove_all(remove_all(helper, "--cgroup-pids", 1),
                                     "--cgroup-memory", 1), "--cgroup", 1)
        v.append(("helper: no cgroup", nocg))
    v.append(("helper: no sysfs", remove(helper, "--sysfs", 1)))
    v.append(("helper: no proc", remove(helper, "--proc", 1)))
    nodev = remove(remove(remove(helper, "--remount-ro", 1, "/dev"), "--mqueue", 1),
                   "--dev", 1)
    v.append(("helper: no dev+mqueue", nodev))
    notmp = helper
    for d in ("/tmp", "/var/tmp", "/var", "/root", "/run"):
        notmp = remove(notmp, "--tmpfs", 1, d)
    v.append(("helper: no 5 tmpfs", notmp))
    v.append(("helper: no ro remount of /", remove(helper, "--remount-ro", 1, "/")))
    v.append(("helper: tmpfs root, no overlay", tmpfs_root(helper)))
    lowers = [helper[i + 1] for i, t in enumerate(helper) if t == "--overlay-src"]
    v.append(("helper: read-only overlay (2 lowers, no upper/work)", ro_root(helper, lowers)))
    if merged:
        v.append(("helper: one read-only layer (bind, no overlay)", ro_root(helper, [merged])))
    v.append(("helper: no init (CMD is PID 1)", direct_cmd(helper)))
    # The floor of this design: bubblewrap's mount set, nothing else toren adds.
    m = tmpfs_root(direct_cmd(helper))
    m = remove(m, "--seccomp", 1)
    if has_cg:
        m = remove_all(remove_all(remove_all(m, "--cgroup-pids", 1), "--cgroup-memory", 1),
                       "--cgroup", 1)
    for name, arg in (("--sysfs", "/sys"), ("--mqueue", "/dev/mqueue"),
                      ("--remount-ro", "/dev"), ("--remount-ro", "/"), ("--tmpfs", "/var/tmp"),
                      ("--tmpfs", "/var"), ("--tmpfs", "/root"), ("--tmpfs", "/run")):
        m = remove(m, name, 1, arg)
    v.append(("helper: bwrap's mount set, no seccomp/cgroup/init", m))

    print("# generated by bench/variants.py")
    print(f"toren-sandbox run\t{cli} run -- /bin/true")
    print(f"toren-sandbox run --dry-run (CLI only)\t{cli} run --dry-run -- /bin/true")
    print(f"bwrap\t{bwrap}")
    # exec + dynamic loading alone: the CLI (libseccomp, libyaml, libjansson, libnettle),
    # the helper (libcap, libnl-3), and /bin/true for scale
    print(f"toren-sandbox --version (exec + ld.so only)\t{cli} --version")
    print(f"toren-sandbox-helper --version (exec + ld.so only)\t{helper[0]} --version")
    print("/bin/true (spawn baseline)\t/bin/true")
    for label, argv in v:
        uses_fd = "--seccomp" in argv
        pre = redirs if uses_fd else []
        # the id maps ("0 100000 65536") are words with spaces: separate by 0x1f
        print(f"{label}\t{chr(31).join(pre + argv)}")


if __name__ == "__main__":
    main()
