#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare a workload's results outside and inside the sandbox (see driver.sh).

  compare.py cpython-rerun MODE INTENDED OUT_WS IN_WS RERUN_IDS RERUN_MODULES
      writes the CPython test ids that still differ (and are not intended) and their
      modules, for another run on both sides
  compare.py cpython MODE INTENDED OUT_WS IN_WS
      one line per CPython test module
  compare.py results WORKLOAD MODE INTENDED OUT_WS IN_WS WORK
      one line per `RESULT NAME VALUE` line of WORK/outside.log and WORK/inside.log

Output lines are `ok DESC`, `not ok DESC` and `# TEXT`; driver.sh makes TAP of them.

INTENDED (intended.txt) lists the differences that the sandbox's design explains:
  @KEY TEXT                                   a reason, used as @KEY below
  WORKLOAD MODES OUTSIDE INSIDE ID REASON...  one intended difference
Each field may be "double-quoted" to hold spaces.
MODES is `*` or a comma-separated list of root, user, userns. OUTSIDE and INSIDE are
fnmatch patterns of the result on each side (CPython: pass, fail, skip, absent); ID is
an fnmatch pattern of the test id (CPython: the full unittest id; results: the NAME).
A difference matches an entry only with both results as listed: a test that is expected
to skip inside and fails there instead is still a difference.
"""
import fnmatch
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

# five fields, each a word or a "double-quoted string with spaces", then the reason
ENTRY = re.compile(r'^' + r'("[^"]*"|\S+)\s+' * 5 + r'(\S.*)$')
STATUS_ORDER = {'pass': 0, 'skip': 1, 'absent': 2, 'fail': 3}


def out(line):
    print(line.replace('\n', ' '), flush=True)


def diag(text):
    for line in str(text).splitlines() or ['']:
        out('# ' + line)


def clip(text, n=300):
    text = ' '.join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + '...'


class Intended:
    def __init__(self, path):
        self.reasons = {}
        self.entries = []
        self.used = set()
        with open(path, encoding='utf-8') as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                if line.startswith('@'):
                    key, _, text = line.partition(' ')
                    self.reasons[key] = text.strip()
                    continue
                m = ENTRY.match(line)
                if not m:
                    raise SystemExit(f'{path}:{lineno}: want WORKLOAD MODES OUTSIDE INSIDE ID REASON')
                parts = [f[1:-1] if f.startswith('"') else f for f in m.groups()]
                self.entries.append(parts + [lineno])
        for e in self.entries:
            for key in re.findall(r'@[\w-]+', e[5]):
                if key not in self.reasons:
                    raise SystemExit(f'{path}:{e[6]}: unknown reason {key}')

    def reason(self, text, short=False):
        """The entry's own words, then the shared reasons it names (short: their keys,
        and self.used collects them for one line each at the end)."""
        keys = re.findall(r'@[\w-]+', text)
        own = ' '.join(re.sub(r'@[\w-]+', '', text).split())
        if short:
            self.used.update(keys)
            return (own + ' ' + ' '.join(f'[{k[1:]}]' for k in keys)).strip()
        shared = ' '.join(f'[{k[1:]}] {self.reasons[k]}' for k in keys)
        return (own + ' ' + shared).strip()

    def explain_used(self):
        for k in sorted(self.used):
            diag(f'[{k[1:]}] {self.reasons[k]}')

    def match(self, workload, mode, ident, got_out, got_in, short=False):
        for wl, modes, o, i, pat, why, _ in self.entries:
            if wl != workload:
                continue
            if modes != '*' and mode not in modes.split(','):
                continue
            if (fnmatch.fnmatchcase(ident, pat) and fnmatch.fnmatchcase(got_out, o)
                    and fnmatch.fnmatchcase(got_in, i)):
                return self.reason(why, short)
        return None


# --- CPython -------------------------------------------------------------------------

LOG_MODULE = re.compile(r'\[\s*\d+/\d+(?:/\d+)?\] (test_[\w.]+) (.*)$')
LOG_FAIL = re.compile(r'^(FAIL|ERROR): \w+ \((test\.[\w.]+)\)')


def module_status(rest):
    rest = rest.split(' -- ')[0].strip()
    for word in ('passed', 'failed', 'skipped', 'crashed', 'timed out', 'env changed',
                 'run no tests', 'interrupted', 'resource denied'):
        if rest.startswith(word):
            return word.replace(' ', '-'), rest
    return clip(rest, 40).replace(' ', '-'), rest


def load_run(ws, prefix):
    """{test id: (status, message)} and {module: (status, text)} of one run on one side."""
    tests, modules = {}, {}
    xml = os.path.join(ws, prefix + '.xml')
    if os.path.exists(xml):
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError as e:
            root = None
            diag(f'{xml}: {e}')
        if root is not None:
            for tc in root.iter('testcase'):
                name = tc.get('name')
                if not name:
                    continue  # failed through subTest only: the log has it (below)
                st, msg = 'pass', ''
                for c in tc:
                    if c.tag in ('failure', 'error'):
                        st, msg = 'fail', c.get('message') or c.text or ''
                    elif c.tag == 'skipped':
                        st, msg = 'skip', c.text or ''
                prev = tests.get(name)
                if prev is None or STATUS_ORDER[st] > STATUS_ORDER[prev[0]]:
                    tests[name] = (st, msg)
    log = os.path.join(ws, prefix + '.log')
    if os.path.exists(log):
        with open(log, encoding='utf-8', errors='replace') as f:
            lines = [line.rstrip('\n') for line in f]
        for n, line in enumerate(lines):
            m = LOG_MODULE.search(line)
            if m:
                modules[m.group(1)] = module_status(m.group(2))
            m = LOG_FAIL.match(line)
            if m and tests.get(m.group(2), ('',))[0] != 'fail':
                # the traceback's last line, before the next separator
                msg, k = '', n + 2
                while k < len(lines) and not lines[k].startswith(('=====', '-----')):
                    if lines[k].strip():
                        msg = lines[k].strip()
                    k += 1
                tests[m.group(2)] = ('fail', f'{line}: {msg}')
    return tests, modules


def module_of(test_id, modules):
    parts = test_id.split('.')
    for n in range(len(parts), 1, -1):
        name = '.'.join(parts[1:n])
        if name in modules:
            return name
    return parts[1] if len(parts) > 1 else test_id


class CPython:
    def __init__(self, mode, intended, out_ws, in_ws):
        self.mode, self.intended = mode, intended
        self.runs = {}
        for side, ws in (('outside', out_ws), ('inside', in_ws)):
            self.runs[side] = [load_run(ws, 'full')]
            for path in sorted(glob.glob(os.path.join(ws, 'rerun*.xml'))):
                self.runs[side].append(load_run(ws, os.path.basename(path)[:-4]))
        self.modules = {}
        for side in ('outside', 'inside'):
            for m in self.runs[side][0][1]:
                self.modules.setdefault(m, None)

    def first(self, side, tid):
        return self.runs[side][0][0].get(tid, ('absent', ''))

    def seen(self, side, tid):
        """Statuses of every run that has the test (the first run counts as absent too)."""
        got = {self.first(side, tid)[0]}
        for tests, _ in self.runs[side][1:]:
            if tid in tests:
                got.add(tests[tid][0])
        return got

    def classify(self):
        """{module: [(test id, kind, out status, in status, detail)]} for every id."""
        ids = set(self.runs['outside'][0][0]) | set(self.runs['inside'][0][0])
        per = {m: [] for m in self.modules}
        for tid in sorted(ids):
            o, i = self.first('outside', tid), self.first('inside', tid)
            mod = module_of(tid, self.modules)
            per.setdefault(mod, [])
            if o[0] == i[0]:
                per[mod].append((tid, 'same', o[0], i[0], o[1]))
                continue
            why = self.intended.match('cpython', self.mode, tid, o[0], i[0], short=True)
            if why:
                per[mod].append((tid, 'intended', o[0], i[0], why))
            elif self.seen('outside', tid) & self.seen('inside', tid):
                per[mod].append((tid, 'flaky', o[0], i[0], self.history(tid)))
            else:
                detail = i[1] if i[0] != 'pass' else o[1]
                per[mod].append((tid, 'differs', o[0], i[0], detail))
        return per

    def history(self, tid):
        h = []
        for side in ('outside', 'inside'):
            runs = [self.first(side, tid)[0]] + [t[tid][0] for t, _ in self.runs[side][1:] if tid in t]
            h.append(f'{side} ' + '/'.join(runs))
        return ', '.join(h)

    def rerun(self, ids_path, modules_path):
        per = self.classify()
        ids, mods = [], []
        for mod, rows in per.items():
            bad = [r[0] for r in rows if r[1] == 'differs']
            if bad:
                ids += bad
                mods.append(mod)
        with open(ids_path, 'w') as f:
            f.writelines(t + '\n' for t in ids)
        with open(modules_path, 'w') as f:
            f.writelines(m + '\n' for m in mods)

    def report(self):
        per = self.classify()
        mod_out = self.runs['outside'][0][1]
        mod_in = self.runs['inside'][0][1]
        if not mod_out:
            out('not ok cpython: regrtest ran outside (no module results in full.log)')
        if not mod_in:
            out('not ok cpython: regrtest ran inside (no module results in full.log)')
        for mod in sorted(per):
            rows = per[mod]
            mo = mod_out.get(mod, ('absent', 'absent'))
            mi = mod_in.get(mod, ('absent', 'absent'))
            bad = [r for r in rows if r[1] == 'differs']
            intended = [r for r in rows if r[1] == 'intended']
            flaky = [r for r in rows if r[1] == 'flaky']
            same = [r for r in rows if r[1] == 'same']
            counts = {}
            for r in same:
                counts[r[2]] = counts.get(r[2], 0) + 1
            modst_differs = False
            if mo[0] != mi[0]:
                # A module's own verdict may differ only through the tests compared
                # below (failed vs passed) or as an intended difference of its own.
                explained = (bad or flaky or
                             {mo[0], mi[0]} <= {'passed', 'failed'} and intended or
                             self.intended.match('cpython', self.mode, 'module:' + mod, mo[0], mi[0]))
                if not explained:
                    modst_differs = True
            desc = (f'cpython {mod}: {len(rows)} test ids, '
                    + ', '.join(f'{n} {s}' for s, n in sorted(counts.items()))
                    + ' alike')
            if intended:
                desc += f', {len(intended)} intended differences'
            if flaky:
                desc += f', {len(flaky)} flaky'
            if mo[0] != 'passed' and mo[0] == mi[0]:
                desc += f' (module {mo[0]} on both sides)'
            if bad or modst_differs:
                out(f'not ok {desc}, {len(bad)} DIFFERENCES'
                    + (f' (module: outside {mo[0]}, inside {mi[0]})' if mo[0] != mi[0] else ''))
            else:
                out(f'ok {desc}')
            if modst_differs:
                diag(f'module {mod}: outside "{mo[1]}", inside "{mi[1]}"')
            if mo[0] != 'passed' and mo[0] == mi[0] and not rows:
                diag(f'module {mod}: {mo[1]}')
            for tid, _, o, i, detail in bad:
                diag(f'DIFFERENCE {tid}: outside {o}, inside {i}: {clip(detail)}')
            for tid, _, o, i, detail in flaky:
                diag(f'flaky (not counted) {tid}: {detail}')
            for tid, _, o, i, why in intended:
                diag(f'intended {tid}: outside {o}, inside {i}: {clip(why, 400)}')
            for tid, _, o, i, detail in same:
                if o == 'fail':
                    diag(f'fails on both sides {tid}: {clip(detail, 200)}')
        if self.intended.used:
            diag('the intended differences above, why:')
            self.intended.explain_used()


# --- RESULT lines ---------------------------------------------------------------------

def load_results(path):
    res, order = {}, []
    if os.path.exists(path):
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                if not line.startswith('RESULT '):
                    continue
                _, name, *value = line.rstrip('\n').split(' ', 2)
                if name not in res:
                    order.append(name)
                res[name] = value[0] if value else ''
    return res, order


def results(workload, mode, intended, work):
    ro, order_o = load_results(os.path.join(work, 'outside.log'))
    ri, order_i = load_results(os.path.join(work, 'inside.log'))
    so = open(os.path.join(work, 'outside.status')).read().strip()
    si = open(os.path.join(work, 'inside.status')).read().strip()
    ro['exit-status'], ri['exit-status'] = so, si
    order = ['exit-status'] + order_o + [n for n in order_i if n not in ro]
    if ro.get('end') != 'ok':
        out(f'not ok {workload}: the workload completed outside (the control; status {so})')
        with open(os.path.join(work, 'outside.log'), errors='replace') as f:
            diag(''.join(f.readlines()[-30:]))
    failed = False
    for name in order:
        # NAME#N: a TAP subtest that is not a plain ok, listed on one side only
        absent = 'ok' if '#' in name else '<absent>'
        o, i = ro.get(name, absent), ri.get(name, absent)
        if o == i:
            out(f'ok {workload} {name}: {clip(o, 100)}')
            if o.startswith('FAIL'):
                diag(f'{name} fails on both sides')
            continue
        why = intended.match(workload, mode, name, o, i)
        if why:
            out(f'ok {workload} {name}: intended difference')
            diag(f'outside: {clip(o)}')
            diag(f'inside:  {clip(i)}')
            diag(f'why: {clip(why, 400)}')
        else:
            failed = True
            out(f'not ok {workload} {name}: outside and inside differ')
            diag(f'outside: {clip(o, 1000)}')
            diag(f'inside:  {clip(i, 1000)}')
    if failed:
        with open(os.path.join(work, 'inside.log'), errors='replace') as f:
            lines = [l for l in f.readlines() if not l.startswith('RESULT ')]
        if lines:
            diag('inside, other output (last 30 lines):')
            diag(''.join(lines[-30:]))


def main(argv):
    cmd = argv[1]
    if cmd == 'cpython-rerun':
        mode, intended, out_ws, in_ws, ids, mods = argv[2:8]
        CPython(mode, Intended(intended), out_ws, in_ws).rerun(ids, mods)
    elif cmd == 'cpython':
        mode, intended, out_ws, in_ws = argv[2:6]
        CPython(mode, Intended(intended), out_ws, in_ws).report()
    elif cmd == 'results':
        workload, mode, intended, _, _, work = argv[2:8]
        results(workload, mode, Intended(intended), work)
    else:
        raise SystemExit(f'unknown command {cmd}')


if __name__ == '__main__':
    main(sys.argv)
