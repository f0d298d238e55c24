#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw logs of a run into one verdict.

Reads, from the results directory:
  stages.tsv        name, seconds, exit status, start time per stage and,
                    for a stage not run again, when it passed before
                    (scripts/stage.sh)
  kunit-uml.json    kunit.py's parsed UML results, kunit-uml.log its raw
                    log (scripts/run-kunit.sh; make run); or kunit-uml-nopm.*,
                    the run without CONFIG_PM_SLEEP (make check), whose
                    skips its stage checks
  console.log       the guest's kernel log, boot-time KUnit included
                    (scripts/run-qemu.sh); parsed with 'kunit.py parse'
  ktap.log          the guest's kselftest KTAP: one subtest per ABI, each
                    the output of kselftest's run_kselftest.sh, and one
                    per environment the posted programs ran in as
                    <abi>@<environment> (guest/init)
  accel             the accelerator the guest ran with
  guest-<name>/     the same (console.log, ktap.log, accel, config) of
                    each other guest: a kernel without a feature, the
                    base kernel
  arm64/            the same of the arm64 guest (make arm64), if it ran
and config/outcomes.tsv, the outcome each test must have where it is not
a pass.
Writes summary.txt and summary.json (Documentation/summary.schema.json,
checked before it is written) there and prints summary.txt.

A test counts as passed only if it says ok without SKIP. Any outcome
other than config/outcomes.tsv's (pass where it names none; a skip must
also give the reason it names), a missing result the tree provides tests
for, or a kernel log
(never the tests' own output) with a WARN, BUG, KASAN, lockdep, RCU
stall or hung task report fails the run. Exit status: 0 when the run
passed, 1 when it failed, 2 on bad usage.
"""

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys

SCHEMA_VERSION = 6
ORIGIN = 'eventpoll_series'
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO_DIR, 'Documentation', 'summary.schema.json')
OUTCOMES = os.path.join(REPO_DIR, 'config', 'outcomes.tsv')
# The guests' architectures, the default first. The main guest's logs are
# at the top of the results directory; an arm64 guest's below arm64/
# (scripts/lib.sh's GUEST_SUBDIR), or at the top with --arch arm64.
ARCHES = ('x86_64', 'arm64')
MAIN_GUEST = ARCHES[0]
GUEST_DIR_PREFIX = 'guest-'
# The subtests of other projects' suites in ktap.log (guest/init), and the
# group each is counted in.
SUITE_PREFIX = 'suite:'
SUITE_GROUPS = {'ltp': 'LTP', 'liburing': 'liburing'}

TIMESTAMP = re.compile(r'^\[\s*\d+\.\d+\]\s?')
RESULT = re.compile(r'^(?P<ok>ok|not ok) (?P<num>\d+) (?P<name>[^#]*?)'
                    r'\s*(?:#\s*(?P<directive>.*))?$')
PROGRAM_HEADER = re.compile(r'^# selftests: (?P<collection>[^:]+): (?P<program>\S+)')

# Reports that make a kernel log a failure, whatever the tests said.
SPLATS = [
    (re.compile(r'WARNING: .* at '), 'WARN'),
    (re.compile(r'BUG: KCSAN'), 'KCSAN report'),
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
LOCKDEP_BANNER = 'Lock dependency validator:'
# Banner lines that name a debug facility without reporting anything.
SPLAT_NOISE = re.compile(r'kasan: KernelAddressSanitizer initialized|'
                         r'KernelAddressSanitizer.*enabled|'
                         r'Attempted to kill init')

GROUPS = ('KUnit (UML)', 'KUnit (x86_64 guest, boot)', 'kselftests (x86_64 guest)')


def kunit_group(guest):
    return f'KUnit ({guest} guest, boot)'


def kselftest_group(guest):
    return f'kselftests ({guest} guest)'

# What a result belongs to: the postings' tests (upstream's deflaked
# epoll_wakeup_test among them), the local proof layer's, or bench/'s
# short correctness runs.
LAYERS = ('posted', 'proof', 'bench')
# The bench/ programs whose short checks run with the kselftests
# (BENCH_CHECK=1): their entries' names start so.
BENCH_PROGRAMS = ('epoll_server', 'epoll_oneshot_window')
# The UML KUnit runs: make run's, and make check's without CONFIG_PM_SLEEP
# (the guest's boot runs the suite with it): results and build name, group,
# KCIDB build and configuration. The second may skip the cases about the
# wakeup source itself; scripts/run-kunit.sh fails its stage on any other skip.
UML_RUNS = {
    'kunit-uml': (GROUPS[0], 'uml', 'kunit.py defaults + fs/tests/.kunitconfig'),
    'kunit-uml-nopm': ('KUnit (UML, no PM_SLEEP)', 'uml-nopm',
                       'kunit.py defaults + fs/tests/.kunitconfig + CONFIG_PM_SLEEP=n'),
}


def posted_programs():
    """The kselftest programs of the postings: TEST_GEN_PROGS of the
    Makefile the last posting leaves (its mirror, selftests/Makefile)."""
    text = read_text(os.path.join(REPO_DIR, 'selftests', 'Makefile')) or ''
    m = re.search(r'^TEST_GEN_PROGS\s*:?=((?:.*\\\n)*.*)$', text, re.M)
    return set(m[1].replace('\\\n', ' ').split()) if m else set()


def layer_of(group, result, posted):
    """posted, proof or bench, for a result of group @group."""
    if group.startswith('kselftests'):
        program = result[1]
        if program in posted:
            return 'posted'
        return 'bench' if program.startswith(BENCH_PROGRAMS) else 'proof'
    return 'proof' if result[0][0].endswith('_proof') else 'posted'


def read_lines(path):
    try:
        with open(path, errors='replace') as f:
            return [TIMESTAMP.sub('', l.rstrip('\r\n')).replace('\r', '') for l in f]
    except FileNotFoundError:
        return None


def read_text(path):
    try:
        with open(path, errors='replace') as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def status_of(m):
    """KTAP: SKIP wins over ok/not ok, as kunit_parser has it."""
    if (m['directive'] or '').strip().upper().startswith('SKIP'):
        return 'skip'
    return 'pass' if m['ok'] == 'ok' else 'fail'


def kunit_cases(json_path):
    """Leaf cases of kunit.py's JSON: ([suite, case, param...], status)."""
    try:
        with open(json_path) as f:
            root = json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    status = {'PASS': 'pass', 'SKIP': 'skip'}
    cases = []

    def walk(group, names):
        for case in group.get('test_cases', []):
            cases.append((names + [case['name']], status.get(case['status'], 'fail')))
        for sub in group.get('sub_groups', []):
            walk(sub, names + [sub['name']])
    walk(root, [])
    return cases


def kunit_skip_reasons(log_lines):
    """The reason of each skipped KUnit result in a KTAP log, keyed by the
    names of its subtests from the top down, joined by dots."""
    reasons, stack = {}, []
    for line in log_lines or []:
        indent = len(line) - len(line.lstrip(' '))
        text = line.strip()
        if text.startswith('# Subtest: '):
            stack = [(i, n) for i, n in stack if i < indent] + [(indent, text[11:])]
            continue
        m = RESULT.match(text)
        if m and (m['directive'] or '').upper().startswith('SKIP'):
            path = [n for i, n in stack if i <= indent] + [m['name']]
            reasons['.'.join(path)] = m['directive'][4:].strip()
    return reasons


def kunit_reason(reasons, names):
    """The reason kunit_skip_reasons() found for case @names, or ''."""
    key = '.'.join(names)
    return next((r for k, r in reasons.items() if k == key or k.endswith('.' + key)), '')


def kunit_parse(tree, log_lines, name, results):
    """'kunit.py parse --json' of a kernel log; the parsed cases or None."""
    kunit = os.path.join(tree, 'tools', 'testing', 'kunit', 'kunit.py')
    if not log_lines or not os.path.exists(kunit):
        return None
    raw = os.path.abspath(os.path.join(results, f'{name}.log'))
    out = os.path.abspath(os.path.join(results, f'{name}.json'))
    with open(raw, 'w') as f:
        f.write('\n'.join(log_lines) + '\n')
    with open(os.path.join(results, f'{name}.txt'), 'w') as f:
        subprocess.run([sys.executable, kunit, 'parse', f'--json={out}', raw],
                       stdout=f, stderr=subprocess.STDOUT, check=False)
    return kunit_cases(out)


def kselftest_results(lines):
    """Programs and their tests in ktap.log: one block per ABI, indented,
    holding run_kselftest.sh's TAP, whose '# ' lines hold each program's.
    The blocks' own results are kept as programs named '' (the runner of
    that ABI or environment)."""
    programs, tests, block, done = [], [], [], False
    for line in lines:
        if line.startswith('# epoll-guest: done'):
            done = True
        if line[:1].isspace():
            block.append(line.strip())
            continue
        m = RESULT.match(line)
        if not m:
            continue
        abi, current = m['name'], None
        if abi.startswith(SUITE_PREFIX):
            suite = abi[len(SUITE_PREFIX):]
            for inner in block:
                r = RESULT.match(inner)
                if r:
                    tests.append({'abi': abi, 'program': suite, 'test': r['name'],
                                  'status': status_of(r),
                                  'directive': (r['directive'] or '').strip()})
            programs.append({'abi': abi, 'program': suite,
                             'status': 'pass' if m['ok'] == 'ok' else 'fail',
                             'directive': (m['directive'] or '').strip(),
                             'exit_status': None})
            block = []
            continue
        if m['ok'] != 'ok':
            programs.append({'abi': abi, 'program': '', 'status': 'fail',
                             'directive': '; '.join(l for l in block if not l.startswith('#'))[:200],
                             'exit_status': None})
        for inner in block:
            header = PROGRAM_HEADER.match(inner)
            if header:
                current = header['program']
                continue
            r = RESULT.match(inner)
            if r and r['name'].startswith('selftests: '):
                directive = (r['directive'] or '').strip()
                program = r['name'].split(': ', 2)[2]
                programs.append({'abi': abi, 'program': program,
                                 'status': status_of(r), 'directive': directive,
                                 'exit_status': exit_status(r, directive)})
                current = None
                continue
            if current and inner.startswith('# '):
                t = RESULT.match(inner[2:])
                if t:
                    tests.append({'abi': abi, 'program': current, 'test': t['name'],
                                  'status': status_of(t),
                                  'directive': (t['directive'] or '').strip()})
        block = []
    return programs, tests, done


def exit_status(m, directive):
    """The exit status kselftest's runner reports for a program, or None
    for a timeout."""
    if directive.startswith('exit='):
        return int(directive[5:])
    if directive.upper().startswith('TIMEOUT'):
        return None
    if directive.upper().startswith('SKIP'):
        return 4
    return 0 if m['ok'] == 'ok' else 1


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


def lockdep_problems(console, where):
    """A kernel with lockdep (its boot banner) must end the run with
    debug_locks still 1, as guest/init reads it from /proc/lockdep_stats:
    lockdep stops at its first report or when its tables fill, and its
    silence after that proves nothing."""
    if not any(LOCKDEP_BANNER in line for line in console):
        return []
    state = next((line.split('epoll-guest: lockdep ', 1)[1].strip() for line in console
                  if 'epoll-guest: lockdep ' in line), None)
    if state is None:
        return [f'{where}: no lockdep state at the end of the run '
                f'(guest/init prints debug_locks from /proc/lockdep_stats)']
    if state != 'debug_locks: 1':
        return [f'{where}: lockdep turned itself off during the run ({state}): '
                f'the kernel log is not proof of anything after that']
    return []


def load_outcomes(path):
    """config/outcomes.tsv's rules, in order: run, program, test (shell
    patterns), status and, for a skip, the reason the test must give."""
    rules = []
    for n, line in enumerate(read_lines(path) or [], 1):
        if not line.strip() or line.startswith('#'):
            continue
        f = line.split('\t')
        if len(f) < 4 or f[3] not in ('pass', 'fail', 'skip'):
            raise SystemExit(f'{path}:{n}: want run<TAB>program<TAB>test<TAB>'
                             f'pass|fail|skip[<TAB>reason], not: {line}')
        rules.append({'run': f[0], 'program': f[1], 'test': f[2], 'status': f[3],
                      'reason': f[4] if len(f) > 4 else '', 'line': n, 'used': 0})
    return rules


def expected(rules, run, program, test):
    """The first rule for @test of @program in @run (guest/abi[@env]), or
    None: a pass."""
    for r in rules:
        if (any(fnmatch.fnmatchcase(run, pat) for pat in r['run'].split(',')) and
                fnmatch.fnmatchcase(program, r['program']) and
                fnmatch.fnmatchcase(test, r['test'])):
            return r
    return None


def outcome(rules, run, program, test):
    """The status config/outcomes.tsv wants of a test."""
    r = expected(rules, run, program, test)
    return r['status'] if r else 'pass'


def outcome_problem(rules, run, program, test, status, directive):
    """What is wrong with a result, against the rules; None if nothing."""
    r = expected(rules, run, program, test)
    if r:
        r['used'] += 1
    want = r['status'] if r else 'pass'
    if status != want:
        got = status + (f' ({directive})' if directive else '')
        why = f" (outcomes.tsv:{r['line']})" if r else ''
        return f'{want} expected{why}, got {got}'
    if want == 'skip' and r['reason'] not in directive:
        return f"skipped for '{directive}', not for '{r['reason']}' (outcomes.tsv:{r['line']})"
    return None


def guest_dirs(results):
    """(name, directory) of each guest whose logs are in @results."""
    found = [(MAIN_GUEST, results)]
    for d in sorted(os.listdir(results)):
        path = os.path.join(results, d)
        if d.startswith(GUEST_DIR_PREFIX) and os.path.isdir(path):
            found.append((d[len(GUEST_DIR_PREFIX):], path))
        elif d in ARCHES and d != MAIN_GUEST and os.path.exists(os.path.join(path, 'ktap.log')):
            found.append((d, path))
    return found


def guest_subdir(arch):
    """Where an arch's guest builds and reports below build/ and results/."""
    return '' if arch == ARCHES[0] else arch


def guest_has_kunit(out_dir, guest, path):
    """Whether the guest's kernel was built with the series' KUnit suite."""
    config = (os.path.join(out_dir, 'build', guest_subdir(guest), 'qemu', '.config')
              if guest in ARCHES else os.path.join(path, 'config'))
    return 'CONFIG_EPOLL_KUNIT_TEST=y' in (read_text(config) or '')


def stages(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                fields = line.rstrip('\n').split('\t')
                row = {'stage': fields[0], 'seconds': int(fields[1]), 'status': int(fields[2])}
                if len(fields) > 3:
                    row['start_time'] = iso(int(fields[3]))
                if len(fields) > 4 and fields[4]:
                    row['passed_before'] = iso(int(fields[4]))
                rows.append(row)
    except FileNotFoundError:
        pass
    return rows


def iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat()


def git(tree, *args):
    try:
        return subprocess.run(['git', '-C', tree, *args], capture_output=True, text=True,
                              check=True).stdout.strip() or None
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def sha256_file(path):
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def patchset_hash():
    """KCIDB's patchset hash: sha256 over the sha256 of each patch, in order."""
    try:
        with open(os.path.join(REPO_DIR, 'series')) as f:
            names = [l.split('#')[0].strip() for l in f]
    except FileNotFoundError:
        return None
    sums = [sha256_file(os.path.join(REPO_DIR, 'patches', n)) for n in names if n]
    if None in sums:
        return None
    return hashlib.sha256(''.join(s + '\n' for s in sums).encode()).hexdigest()


def compiler(build):
    text = read_text(os.path.join(build, 'include', 'generated', 'compile.h')) or ''
    m = re.search(r'LINUX_COMPILER\s+"([^"]*)"', text)
    return m[1] if m else None


def component(name):
    """A KCIDB path component: no dots, nothing but [A-Za-z0-9_-]."""
    return re.sub(r'[^A-Za-z0-9_-]+', '_', name).strip('_') or '_'


def uml_run(results):
    """The UML KUnit run whose results are there (make run's by default)."""
    return next((n for n in UML_RUNS if os.path.exists(os.path.join(results, f'{n}.log'))),
                'kunit-uml')


def metadata(out_dir, results, stage_rows):
    tree = os.path.join(out_dir, 'linux')
    guest = os.path.join(out_dir, 'build', guest_subdir(MAIN_GUEST), 'qemu')
    uml = os.path.join(out_dir, 'build', uml_run(results))
    starts = [r['start_time'] for r in stage_rows if 'start_time' in r]
    return {
        'base_commit': read_text(os.path.join(out_dir, 'base-commit')),
        'base_name': git(tree, 'describe', '--always', '--tags',
                         read_text(os.path.join(out_dir, 'base-commit')) or 'HEAD'),
        'top_commit': git(tree, 'rev-parse', 'HEAD'),
        'series_digest': patchset_hash(),
        'kernel_tree': os.environ.get('KERNEL_TREE') or None,
        'kernel_release': read_text(os.path.join(guest, 'include', 'config', 'kernel.release')),
        'arch': 'x86_64',
        'config_digest': sha256_file(os.path.join(guest, '.config')),
        'compiler': compiler(guest),
        'uml_compiler': compiler(uml),
        'uml_run': uml_run(results),
        'accelerator': read_text(os.path.join(results, 'accel')),
        'start_time': min(starts) if starts else None,
        'end_time': iso(int(datetime.datetime.now().timestamp())),
    }


def kcidb(run, stage_rows, groups, guest_runs, kernel_log):
    """The run as KernelCI's KCIDB v5 objects: one checkout (base + series),
    one build per kernel (UML for KUnit, the x86_64 guest), one test per
    result; the guest's boot and its kernel log are tests too."""
    run_id = f"{(run['top_commit'] or 'unknown')[:12]}-{run['start_time'] or run['end_time']}"
    run_id = re.sub(r'[^A-Za-z0-9_.-]', '_', run_id)
    checkout = {'id': f'{ORIGIN}:{run_id}', 'origin': ORIGIN,
                'tree_name': 'linux-source-7.3' if not run['kernel_tree'] else 'custom',
                'valid': all(r['status'] == 0 for r in stage_rows if r['stage'] == 'apply')}
    if run['base_commit']:
        checkout['git_commit_hash'] = run['base_commit']
    if run['base_name']:
        checkout['git_commit_name'] = run['base_name']
    if run['series_digest']:
        checkout['patchset_hash'] = run['series_digest']
    if run['start_time']:
        checkout['start_time'] = run['start_time']
    checkout['misc'] = {'top_commit': run['top_commit']}
    by_stage = {r['stage']: r for r in stage_rows}

    def build(name, stage, arch, cc, config):
        b = {'id': f'{checkout["id"]}:{name}', 'checkout_id': checkout['id'], 'origin': ORIGIN,
             'architecture': arch, 'config_name': config}
        if cc:
            b['compiler'] = cc
        row = by_stage.get(stage)
        if row:
            b['status'] = 'PASS' if row['status'] == 0 else 'FAIL'
            b['duration'] = float(row['seconds'])
            if 'start_time' in row:
                b['start_time'] = row['start_time']
        return b
    uml_group, uml_id, uml_config = UML_RUNS[run['uml_run']]
    builds = [build(uml_id, run['uml_run'], 'um', run['uml_compiler'], uml_config),
              build('guest', 'kernel', run['arch'], run['compiler'],
                    'tinyconfig + config/qemu-x86_64.config + config/debug.config')]
    builds[1]['misc'] = {'config_digest': run['config_digest'],
                         'kernel_release': run['kernel_release']}
    for g in guest_runs[1:]:
        b = build(f"guest-{g['guest']}", f"guest-{g['guest']}", g['guest'], None,
                  f"config/guests: {g['guest']}")
        b['architecture'] = 'arm64' if g['guest'].startswith('arm64') else 'x86_64'
        builds.append(b)
    tests, seen = [], {}
    status = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP'}

    def test(build_id, path, st, log, misc=None):
        key = f'{build_id}:{path}'
        seen[key] = seen.get(key, 0) + 1
        t = {'id': key + (f'#{seen[key]}' if seen[key] > 1 else ''), 'build_id': build_id,
             'origin': ORIGIN, 'path': path, 'status': st,
             'environment': {'comment': 'UML' if build_id == builds[0]['id']
                             else 'QEMU ' + (run['accelerator'] or '?')},
             'misc': {'log_path': log, **(misc or {})}}
        tests.append(t)
    for names, st in groups[uml_group]:
        test(builds[0]['id'], '.'.join(['kunit'] + [component(n) for n in names]),
             status[st], f"{run['uml_run']}.log", {'name': '.'.join(names)})
    boot_ok = by_stage.get('qemu', {}).get('status') == 0
    if 'qemu' in by_stage:
        test(builds[1]['id'], 'boot', 'PASS' if boot_ok else 'FAIL', 'console.log')
    for b, g in zip(builds[1:], guest_runs):
        logs = '' if g['guest'] == MAIN_GUEST else os.path.basename(g['path']) + '/'
        for names, st in groups[kunit_group(g['guest'])]:
            test(b['id'], '.'.join(['kunit'] + [component(n) for n in names]),
                 status[st], logs + 'console.log', {'name': '.'.join(names)})
        for p in g['programs']:
            test(b['id'], f"kselftest.{component(p['abi'])}.{component(p['program'])}",
                 status[p['status']], logs + 'ktap.log',
                 {'exit_status': p['exit_status'], 'directive': p['directive']})
        suites = [r for label in SUITE_GROUPS.values()
                  for r in groups.get(f"{label} ({g['guest']} guest)", [])]
        for abi, program, name, st in suites:
            test(b['id'], '.'.join([component(program), component(name)]),
                 status[st], logs + 'ktap.log', {'name': name})
        for abi, program, name, st in groups[kselftest_group(g['guest'])]:
            test(b['id'], '.'.join(['kselftest', component(abi), component(program)] +
                                   [component(n) for n in name.split('.')]),
                 status[st], logs + 'ktap.log', {'name': name})
    if 'qemu' in by_stage:
        test(builds[1]['id'], 'kernel_log', 'FAIL' if kernel_log else 'PASS', 'console.log',
             {'reports': kernel_log})
    return {'version': {'major': 5, 'minor': 3}, 'checkouts': [checkout],
            'builds': builds, 'tests': tests}


def validate(summary):
    try:
        import jsonschema
    except ImportError:
        return ['python3-jsonschema is missing: run scripts/install-deps.sh']
    with open(SCHEMA) as f:
        schema = json.load(f)
    errors = jsonschema.Draft7Validator(schema).iter_errors(summary)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors]


def count(statuses):
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    for st in statuses:
        c[st] += 1
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('results', help='results directory')
    ap.add_argument('--out-dir', help='the run\'s OUT_DIR (default: the parent of results, '
                                      'or of results/arm64 for --arch arm64)')
    ap.add_argument('--arch', choices=ARCHES, default=ARCHES[0],
                    help='the architecture of the guest whose logs are at the top of '
                         'results (default: x86_64; arm64: make arm64\'s results/arm64)')
    ap.add_argument('--expect-kunit', action='store_true',
                    help='the tree has a KUnit suite: no KUnit result is a failure')
    ap.add_argument('--allow-skip', action='store_true',
                    help='do not count skipped tests as failures')
    ap.add_argument('--list-failed', action='store_true',
                    help='only print the failed kselftests of ktap.log, '
                         'one <abi>/<program>:<test> a line')
    args = ap.parse_args()
    if not os.path.isdir(args.results):
        ap.error(f'{args.results} is not a directory')
    global MAIN_GUEST
    MAIN_GUEST = args.arch
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results))
    if not args.out_dir and guest_subdir(args.arch):
        out_dir = os.path.dirname(out_dir)
    ktap = read_lines(os.path.join(args.results, 'ktap.log'))
    programs, ktests, done = kselftest_results(ktap or [])
    if args.list_failed:
        print('\n'.join(f"{t['abi']}/{t['program']}:{t['test']}"
                        for t in ktests if t['status'] == 'fail'))
        return 0

    problems, out = [], []
    stage_rows = stages(os.path.join(args.results, 'stages.tsv'))
    for row in stage_rows:
        if row['status'] != 0:
            problems.append(f"stage {row['stage']} exited {row['status']}")

    uml_name = uml_run(args.results)
    uml_group = UML_RUNS[uml_name][0]
    uml_log = read_lines(os.path.join(args.results, f'{uml_name}.log'))
    tree = os.path.join(out_dir, 'linux')
    uml = kunit_cases(os.path.join(args.results, f'{uml_name}.json'))
    groups = {uml_group: uml or []}
    # KUnit on UML runs on the host, whatever the guest: not an arm64 result.
    if args.arch != ARCHES[0]:
        uml_log, groups[uml_group] = None, []
    elif not groups[uml_group]:
        msg = f'{uml_group}: ran no test'
        (problems.append if args.expect_kunit else out.append)(msg)
    strict = not args.allow_skip
    rules = load_outcomes(OUTCOMES) if strict else []
    uml_reasons = kunit_skip_reasons(uml_log)
    for names, st in groups[uml_group]:
        if strict:
            why = outcome_problem(rules, f'{UML_RUNS[uml_name][1]}/kunit', names[0],
                                  '.'.join(names[1:]), st, kunit_reason(uml_reasons, names))
        else:
            why = 'failed' if st == 'fail' else None
        if why:
            problems.append(f"{uml_group}: {'.'.join(names)}: {why}")
    kernel_log = splats(uml_log or [])
    environments, guest_runs, all_programs, all_tests = {}, [], [], []
    for guest, path in guest_dirs(args.results):
        g_ktap = ktap if guest == MAIN_GUEST else read_lines(os.path.join(path, 'ktap.log'))
        g_programs, g_tests, g_done = ((programs, ktests, done) if guest == MAIN_GUEST
                                       else kselftest_results(g_ktap or []))
        console = read_lines(os.path.join(path, 'console.log'))
        boot = console[:next((i for i, l in enumerate(console)
                              if l.startswith('Run /init')), len(console))] if console else None
        name = 'kunit-guest' if guest == MAIN_GUEST else os.path.join(
            os.path.basename(path), 'kunit-guest')
        kunit = kunit_parse(tree, boot, name, args.results) or []
        kg, sg = kunit_group(guest), kselftest_group(guest)
        groups[kg] = kunit
        groups[sg] = [(t['abi'], t['program'], t['test'], t['status']) for t in g_tests
                      if not t['abi'].startswith(SUITE_PREFIX)]
        for t in g_tests:
            if t['abi'].startswith(SUITE_PREFIX):
                name = f"{SUITE_GROUPS.get(t['program'], t['program'])} ({guest} guest)"
                groups.setdefault(name, []).append(
                    (t['abi'], t['program'], t['test'], t['status']))
        guest_runs.append({'guest': guest, 'path': path, 'programs': g_programs,
                           'accel': read_text(os.path.join(path, 'accel'))})
        label = '' if guest == MAIN_GUEST else f'{guest}/'
        all_programs += [dict(p, abi=label + p['abi']) for p in g_programs]
        all_tests += [dict(t, abi=label + t['abi']) for t in g_tests]
        if not kunit and guest_has_kunit(out_dir, guest, path) and (
                args.expect_kunit or guest != MAIN_GUEST):
            problems.append(f'{kg}: ran no test')
        elif not kunit:
            out.append(f'{kg}: ran no test')
        reasons = kunit_skip_reasons(boot)
        for names, st in kunit:
            why = outcome_problem(rules, f'{guest}/kunit', names[0], '.'.join(names[1:]),
                                  st, kunit_reason(reasons, names)) if strict else (
                'failed' if st == 'fail' else None)
            if why:
                problems.append(f"{kg}: {'.'.join(names)}: {why}")
        if not g_programs:
            problems.append(f'{sg}: ran no test program')
        elif not g_done:
            problems.append(f'{sg}: the guest did not finish (no "epoll-guest: done" in ktap.log)')
        for t in g_tests:
            run_key = f"{guest}/{t['abi']}"
            environments.setdefault(run_key, []).append(t['status'])
            if strict:
                why = outcome_problem(rules, run_key, t['program'], t['test'],
                                      t['status'], t['directive'])
            else:
                why = 'failed' if t['status'] == 'fail' else None
            if why:
                problems.append(f"{sg}: {t['abi']}/{t['program']}:{t['test']}: {why}")
        posted_set = posted_programs()
        for p in g_programs:
            if not p['program']:
                ran_here = {q['program'] for q in g_programs if q['abi'] == p['abi']} - {''}
                expected_fail = any(
                    outcome(rules, f"{guest}/{p['abi']}", q, t['test']) == 'fail'
                    for q in ran_here for t in g_tests
                    if t['abi'] == p['abi'] and t['program'] == q)
                if not ran_here or not expected_fail:
                    problems.append(f"{sg}: {p['abi']}: the runner failed"
                                    f"{': ' + p['directive'] if p['directive'] else ''}")
                continue
            mine = [t for t in g_tests if t['abi'] == p['abi'] and t['program'] == p['program']]
            if not mine and p['status'] == 'pass':
                problems.append(f"{sg}: program {p['abi']}/{p['program']} reported no test")
            want = {outcome(rules, f"{guest}/{p['abi']}", p['program'], t['test'])
                    for t in mine}
            ok = ({'fail'} if 'fail' in want else {'skip', 'pass'} if want == {'skip'}
                  else {'pass'})
            if args.allow_skip:
                ok |= {'skip'}
            if p['status'] not in ok:
                problems.append(f"{sg}: program {p['abi']}/{p['program']}: "
                                f"{p['status']} {p['directive']}, expected "
                                f"{' or '.join(sorted(ok))}".strip())
        for abi in {p['abi'] for p in g_programs}:
            if ('@' in abi or guest != MAIN_GUEST) and not abi.startswith(SUITE_PREFIX):
                missing = posted_set - {p['program'] for p in g_programs if p['abi'] == abi}
                if missing:
                    problems.append(f"{sg}: {abi}: posted programs that did not run: "
                                    f"{' '.join(sorted(missing))}")
        kernel_log += splats(console or [])
        problems += lockdep_problems(console or [], sg)
    ran = set(environments) | {f'{g["guest"]}/kunit' for g in guest_runs} | (
        {f'{UML_RUNS[uml_name][1]}/kunit'} if groups[uml_group] else set())
    if strict and not os.path.exists(OUTCOMES):
        problems.append(f'no {OUTCOMES}: every skip and expected failure must be listed there')
    for r in rules:
        if not r['used'] and not any(ch in r['program'] + r['test'] for ch in '*?[') and \
                any(fnmatch.fnmatchcase(k, pat) for k in ran for pat in r['run'].split(',')):
            problems.append(f"outcomes.tsv:{r['line']}: {r['program']}:{r['test']} "
                            f"did not run in {r['run']}")
    programs = all_programs
    problems += [f'kernel log: {s}' for s in kernel_log]
    run = metadata(out_dir, args.results, stage_rows)
    run['arch'] = args.arch
    counts = {name: count(r[-1] for r in results) for name, results in groups.items()}
    posted = posted_programs()
    layers = {name: {layer: count(r[-1] for r in results if layer_of(name, r, posted) == layer)
                     for layer in LAYERS}
              for name, results in groups.items()}
    summary = {
        'schema': 'eventpoll-series-summary', 'schema_version': SCHEMA_VERSION,
        'run': run, 'stages': stage_rows, 'counts': counts, 'layers': layers,
        'environments': {k: count(v) for k, v in environments.items()},
        'programs': programs, 'kernel_log': kernel_log,
        'kcidb': kcidb(run, stage_rows, groups, guest_runs, kernel_log),
    }

    out.append(f"{'stage':<28}{'seconds':>8}  status")
    for row in stage_rows:
        status = 'ok' if row['status'] == 0 else 'FAILED'
        if 'passed_before' in row:
            status += f" (inputs unchanged since its pass of {row['passed_before'][:16]})"
        out.append(f"{row['stage']:<28}{row['seconds']:>8}  {status}")
    out.append('')
    out.append(f"{'tests':<36}{'passed':>8}{'failed':>8}{'skipped':>8}")
    for name, c in counts.items():
        out.append(f"{name:<36}{c['pass']:>8}{c['fail']:>8}{c['skip']:>8}")
        for layer, lc in layers[name].items():
            if sum(lc.values()):
                out.append(f"{'  ' + layer:<36}{lc['pass']:>8}{lc['fail']:>8}{lc['skip']:>8}")
    out.append('')
    out.append(f"{'kselftests by guest/ABI@environment':<36}{'passed':>8}{'failed':>8}{'skipped':>8}")
    for name, c in summary['environments'].items():
        out.append(f"  {name:<34}{c['pass']:>8}{c['fail']:>8}{c['skip']:>8}")
    out.append('')
    for p in programs:
        per = count(t['status'] for t in all_tests
                    if t['abi'] == p['abi'] and t['program'] == p['program'])
        out.append(f"  {p['abi'] + '/' + p['program']:<38} {p['status']:<5} "
                   f"{per['pass']} passed, {per['fail']} failed, "
                   f"{per['skip']} skipped {p['directive']}".rstrip())
    out.append('')
    out.append('kernel log: ' + ('clean' if not kernel_log else f'{len(kernel_log)} report(s)'))
    if run['accelerator']:
        out.append('guest accelerator: ' + run['accelerator'])
    summary['problems'] = problems
    summary['verdict'] = 'fail' if problems else 'pass'
    problems += [f'summary.json: {e}' for e in validate(summary)]
    summary['verdict'] = 'fail' if problems else 'pass'
    out += [''] + [f'FAIL: {p}' for p in problems]
    total = count([])
    for c in counts.values():
        for k in total:
            total[k] += c[k]
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
