#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw logs of a run into one verdict.

Reads, from the results directory:
  stages.tsv      name, seconds, exit status per stage (scripts/stage.sh)
  kunit-uml.log   kunit.py's raw UML log (scripts/run-kunit.sh)
  console.log     the QEMU guest console: boot-time KUnit, then the
                  kselftests' KTAP (scripts/run-qemu.sh)
Writes summary.txt and summary.json there and prints summary.txt.

A test counts as passed only if it says ok without SKIP. Any failure,
any skip, a missing result the tree provides tests for, or a kernel log
with a WARN, BUG, KASAN, lockdep, RCU stall or hung task report fails
the run. Exit status: 0 when the run passed, 1 when it failed, 2 on
bad usage.
"""

import argparse
import json
import os
import re
import sys

TIMESTAMP = re.compile(r'^\[\s*\d+\.\d+\]\s?')
RESULT = re.compile(r'^(?P<indent>\s*)(?P<ok>ok|not ok) (?P<num>\d+) (?P<name>[^#]*?)'
                    r'\s*(?:#\s*(?P<directive>.*))?$')

# Reports that make a kernel log a failure, whatever the tests said.
SPLATS = [
    (re.compile(r'WARNING: .* at '), 'WARN'),
    (re.compile(r'\bBUG[: ]'), 'BUG'),
    (re.compile(r'KASAN'), 'KASAN report'),
    (re.compile(r'possible (recursive|circular) locking|inconsistent lock state|'
                r'lock held when returning|bad unlock balance|'
                r'suspicious RCU usage|DEBUG_LOCKS_WARN_ON'), 'lockdep splat'),
    (re.compile(r'rcu: INFO: .*detected stall|rcu_.*self-detected stall'), 'RCU stall'),
    (re.compile(r'blocked for more than \d+ seconds'), 'hung task'),
    (re.compile(r'sleeping function called from invalid context'), 'atomic sleep'),
    (re.compile(r'Kernel panic|Oops|general protection fault|UBSAN'), 'crash'),
]
# Banner lines that name a debug facility without reporting anything.
SPLAT_NOISE = re.compile(r'kasan: KernelAddressSanitizer initialized|'
                         r'KernelAddressSanitizer.*enabled|'
                         r'Attempted to kill init')


def read_lines(path):
    try:
        with open(path, errors='replace') as f:
            return [TIMESTAMP.sub('', l.rstrip('\r\n')).replace('\r', '') for l in f]
    except FileNotFoundError:
        return None


def kunit_cases(lines):
    """Leaf results of every KUnit suite: suite.case or suite.case.param."""
    cases, suite_cases, params = [], [], []
    for line in lines:
        m = RESULT.match(line)
        if not m:
            continue
        depth = len(m['indent'].expandtabs(4)) // 4
        status = result_status(m)
        if depth == 2:
            params.append((m['name'], status))
        elif depth == 1:
            if params:
                suite_cases += [(f"{m['name']}.{p}", s) for p, s in params]
            else:
                suite_cases.append((m['name'], status))
            params = []
        elif depth == 0:
            cases += [(f"{m['name']}.{c}", s) for c, s in suite_cases]
            if not suite_cases:
                cases.append((m['name'], status))
            suite_cases = []
    return cases


def result_status(m):
    directive = (m['directive'] or '').strip().upper()
    if m['ok'] == 'not ok':
        return 'fail'
    return 'skip' if directive.startswith('SKIP') else 'pass'


def selftest_results(lines):
    """Per-test results of each selftest program, then per program."""
    tests, programs, current = [], [], None
    for line in lines:
        if line.startswith('# selftests: '):
            current = line.split(': ', 2)[2].split(' ')[0]
            continue
        if line.startswith('# ') and current:
            inner = RESULT.match(line[2:])
            if inner and not inner['indent']:
                tests.append((f"{current}:{inner['name']}", result_status(inner)))
            continue
        m = RESULT.match(line)
        if m and not m['indent'] and m['name'].startswith('selftests: '):
            programs.append((m['name'].split(': ', 2)[2], result_status(m),
                             (m['directive'] or '').strip()))
            current = None
    return tests, programs


def splats(lines):
    found = []
    for line in lines:
        if SPLAT_NOISE.search(line):
            continue
        for pattern, what in SPLATS:
            if pattern.search(line):
                found.append(f'{what}: {line.strip()}')
                break
    return found


def count(results):
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    for _, status in results:
        c[status] += 1
    return c


def stages(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                name, secs, rc = line.rstrip('\n').split('\t')
                rows.append({'stage': name, 'seconds': int(secs), 'status': int(rc)})
    except FileNotFoundError:
        pass
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('results', help='results directory')
    ap.add_argument('--expect-kunit', action='store_true',
                    help='the tree has a KUnit suite: no KUnit result is a failure')
    ap.add_argument('--allow-skip', action='store_true',
                    help='do not count skipped tests as failures')
    ap.add_argument('--list-failed', action='store_true',
                    help='only print the failed kselftests of console.log, '
                         'one <abi>/<program>:<test> a line')
    args = ap.parse_args()
    if not os.path.isdir(args.results):
        ap.error(f'{args.results} is not a directory')
    if args.list_failed:
        tests, _ = selftest_results(read_lines(os.path.join(args.results, 'console.log')) or [])
        print('\n'.join(t for t, status in tests if status == 'fail'))
        return 0

    problems, out = [], []
    summary = {'stages': stages(os.path.join(args.results, 'stages.tsv'))}
    for row in summary['stages']:
        if row['status'] != 0:
            problems.append(f"stage {row['stage']} exited {row['status']}")

    uml = read_lines(os.path.join(args.results, 'kunit-uml.log'))
    console = read_lines(os.path.join(args.results, 'console.log'))
    boot = console[:next((i for i, l in enumerate(console)
                          if l.startswith('Run /init')), len(console))] if console else None
    groups = {
        'KUnit (UML)': kunit_cases(uml) if uml else [],
        'KUnit (x86_64 guest, boot)': kunit_cases(boot) if boot else [],
    }
    tests, programs = selftest_results(console or [])
    groups['kselftests (x86_64 guest)'] = tests

    for name in ('KUnit (UML)', 'KUnit (x86_64 guest, boot)'):
        if not groups[name]:
            msg = f'{name}: ran no test'
            (problems.append if args.expect_kunit else out.append)(msg)
    if not programs:
        problems.append('kselftests: ran no test program')
    for prog, status, directive in programs:
        if status != 'pass' and not (status == 'skip' and args.allow_skip):
            problems.append(f'kselftest program {prog}: {status} {directive}'.strip())

    summary['results'] = {}
    for name, results in groups.items():
        c = count(results)
        summary['results'][name] = {'counts': c, 'tests': dict(results)}
        for test, status in results:
            if status == 'fail' or (status == 'skip' and not args.allow_skip):
                problems.append(f'{name}: {test}: {status}')

    summary['kernel_log'] = splats(uml or []) + splats(console or [])
    problems += [f'kernel log: {s}' for s in summary['kernel_log']]

    out.append(f"{'stage':<28}{'seconds':>8}  status")
    for row in summary['stages']:
        out.append(f"{row['stage']:<28}{row['seconds']:>8}  {'ok' if row['status'] == 0 else 'FAILED'}")
    out.append('')
    out.append(f"{'tests':<28}{'passed':>8}{'failed':>8}{'skipped':>8}")
    for name, res in summary['results'].items():
        c = res['counts']
        out.append(f"{name:<28}{c['pass']:>8}{c['fail']:>8}{c['skip']:>8}")
    out.append('')
    for prog, status, directive in programs:
        per = count([t for t in tests if t[0].startswith(prog + ':')])
        out.append(f"  {prog:<38} {status:<5} {per['pass']} passed, {per['fail']} failed, "
                   f"{per['skip']} skipped {directive}".rstrip())
    out.append('')
    out.append('kernel log: ' + ('clean' if not summary['kernel_log'] else
                                 f"{len(summary['kernel_log'])} report(s)"))
    accel = os.path.join(args.results, 'accel')
    if os.path.exists(accel):
        out.append('guest accelerator: ' + open(accel).read().strip())
    summary['problems'] = problems
    summary['verdict'] = 'fail' if problems else 'pass'
    out += [''] + [f'FAIL: {p}' for p in problems]
    total = {'pass': 0, 'fail': 0, 'skip': 0}
    for res in summary['results'].values():
        for k in total:
            total[k] += res['counts'][k]
    out.append(f"verdict: {summary['verdict'].upper()}")
    # The plain closing line CI reads.
    out.append(f"{total['pass']} passed, {total['fail']} failed, {total['skip']} skipped")

    text = '\n'.join(out) + '\n'
    with open(os.path.join(args.results, 'summary.txt'), 'w') as f:
        f.write(text)
    with open(os.path.join(args.results, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    sys.stdout.write(text)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
