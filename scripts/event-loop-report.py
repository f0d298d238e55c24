#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check and tabulate the Qpid Proton runs of make event-loop.

Reads DIR/<kernel>.ktap and DIR/<kernel>.console for each kernel named
(scripts/run-event-loop-tests.sh copies them there), writes DIR/summary.txt
and prints it. The checks:
  - the guest ran the entry and every Proton test exited 0;
  - every test printed its epoll_ctl_count line;
  - base: no EPOLL_CTL_DISABLE call succeeded or failed with EBUSY, and
    each proactor answered the probe with EFAULT or EINVAL (fallback);
  - patched: each proactor's probe got ENOENT, and the proactor tests
    disarmed at least one socket with it (the new path ran);
  - no call failed otherwise, and the kernel log has no splat
    (scripts/summarize.py's list).
Exit status: 0 when every check passes, 1 otherwise.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import splats  # noqa: E402

TEST = re.compile(r'# qpid-proton: (?P<test>\S+)(?: (?P<args>.*))?$')
EXIT = re.compile(r'# qpid-proton: (?P<test>\S+) exit=(?P<status>\d+)$')
COUNT = re.compile(r'epoll_ctl_count: (?P<fields>(?:\w+=\d+ ?)+)$')
# The tests that create a proactor, so probe once at least.
PROACTOR_TESTS = ('c-proactor-test', 'c-threaderciser')


def parse(ktap):
    """{test: {'status': int, 'counts': {...}}} and the entry's verdict."""
    tests, current, verdict = {}, None, None
    for raw in ktap:
        line = raw.strip()
        m = EXIT.search(line)
        if m:
            tests.setdefault(m['test'], {})['status'] = int(m['status'])
            current = None
            continue
        m = TEST.search(line)
        if m:
            current = m['test']
            tests[current] = {}
            continue
        m = COUNT.search(line)
        if m and current:
            tests[current]['counts'] = {k: int(v) for k, v in
                                        (f.split('=') for f in m['fields'].split())}
            continue
        m = re.match(r'(ok|not ok) \d+ qpid_proton_tests\.sh', line)
        if m:
            verdict = m[1]
    return tests, verdict


def check(kernel, tests, verdict, console):
    problems = []
    if verdict != 'ok':
        problems.append(f'{kernel}: the entry did not end ok ({verdict or "no result"})')
    for s in splats(console):
        problems.append(f'{kernel}: kernel log: {s}')
    for name, t in sorted(tests.items()):
        c = t.get('counts')
        if t.get('status') != 0:
            problems.append(f'{kernel}: {name} exited {t.get("status", "never")}')
        if c is None:
            problems.append(f'{kernel}: {name} printed no epoll_ctl_count line')
            continue
        if c['other']:
            problems.append(f'{kernel}: {name}: {c["other"]} DISABLE calls failed otherwise')
        probe = name in PROACTOR_TESTS
        if kernel == 'base':
            if c['ok'] or c['ebusy'] or c['enoent']:
                problems.append(f'{kernel}: {name}: DISABLE answered on a kernel without it')
            if probe and not (c['efault'] or c['einval']):
                problems.append(f'{kernel}: {name}: no probe answered EFAULT or EINVAL')
        else:
            if c['efault'] or c['einval']:
                problems.append(f'{kernel}: {name}: the probe or a call failed as on an old kernel')
            if probe and not c['enoent']:
                problems.append(f'{kernel}: {name}: no probe answered ENOENT')
            if probe and not c['ok']:
                problems.append(f'{kernel}: {name}: no socket was disarmed: the new path never ran')
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--proton', default='', help='the Proton commit tested, for the header')
    ap.add_argument('--tests', required=True,
                    help='comma-separated: the Proton tests each guest must have run')
    ap.add_argument('dir')
    ap.add_argument('kernels', nargs='+')
    args = ap.parse_args()

    rows, problems = [], []
    for k in args.kernels:
        try:
            with open(os.path.join(args.dir, f'{k}.ktap'), errors='replace') as f:
                ktap = f.readlines()
            with open(os.path.join(args.dir, f'{k}.console'), errors='replace') as f:
                console = f.readlines()
        except OSError as e:
            problems.append(f'{k}: {e}')
            continue
        tests, verdict = parse(ktap)
        if sorted(tests) != sorted(args.tests.split(',')):
            problems.append(f'{k}: tests run: {", ".join(sorted(tests)) or "none"}')
        problems += check(k, tests, verdict, console)
        for name, t in sorted(tests.items()):
            c = t.get('counts', {})
            rows.append((k, name, str(t.get('status', '-')), str(c.get('disable', '-')),
                         str(c.get('ok', '-')), str(c.get('ebusy', '-')),
                         str(c.get('enoent', '-')),
                         str(c.get('efault', 0) + c.get('einval', 0)) if c else '-'))

    head = ('kernel', 'test', 'exit', 'DISABLE calls', 'disarmed (0)', 'EBUSY',
            'ENOENT (probe)', 'EFAULT/EINVAL (probe)')
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    out = [f'Qpid Proton {args.proton}'.rstrip(), '']
    for r in [head] + rows:
        out.append('  '.join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    out.append('')
    out += [f'FAIL: {p}' for p in problems] or ['PASS: every check of scripts/event-loop-report.py']
    text = '\n'.join(out) + '\n'
    with open(os.path.join(args.dir, 'summary.txt'), 'w') as f:
        f.write(text)
    sys.stdout.write(text)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
