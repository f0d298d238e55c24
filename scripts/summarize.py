#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw logs of a run into one verdict.

Reads, from the results directory:
  stages.tsv        name, seconds, exit status, start time per stage
                    (scripts/stage.sh)
  kunit-uml.json    kunit.py's parsed UML results, kunit-uml.log its raw
                    log (scripts/run-kunit.sh; make run); or kunit-uml-nopm.*,
                    the run without CONFIG_PM_SLEEP (make check), whose
                    skips its stage checks
  console.log       the guest's kernel log, boot-time KUnit included
                    (scripts/run-qemu.sh); parsed with 'kunit.py parse'
  ktap.log          the guest's kselftest KTAP: one subtest per ABI, each
                    the output of kselftest's run_kselftest.sh
  accel             the accelerator the guest ran with
For an arm64 guest (--arch arm64, make arm64: results/arm64/), the guest's
results only: UML's KUnit runs on the host, whatever the guest.
Writes summary.txt and summary.json (Documentation/summary.schema.json,
checked before it is written) there and prints summary.txt.

A test counts as passed only if it says ok without SKIP. Any failure,
any skip, a missing result the tree provides tests for, or a kernel log
(never the tests' own output) with a WARN, BUG, KASAN, lockdep, RCU
stall or hung task report fails the run. Exit status: 0 when the run
passed, 1 when it failed, 2 on bad usage.
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

SCHEMA_VERSION = 4
ORIGIN = 'eventpoll_series'
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO_DIR, 'Documentation', 'summary.schema.json')

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
# Banner lines that name a debug facility without reporting anything.
SPLAT_NOISE = re.compile(r'kasan: KernelAddressSanitizer initialized|'
                         r'KernelAddressSanitizer.*enabled|'
                         r'Attempted to kill init')

# The guests' architectures, the default first.
ARCHES = ('x86_64', 'arm64')
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
    'kunit-uml': ('KUnit (UML)', 'uml', 'kunit.py defaults + fs/tests/.kunitconfig'),
    'kunit-uml-nopm': ('KUnit (UML, no PM_SLEEP)', 'uml-nopm',
                       'kunit.py defaults + fs/tests/.kunitconfig + CONFIG_PM_SLEEP=n'),
}


def posted_programs():
    """The kselftest programs of the postings: TEST_GEN_PROGS of the
    Makefile the last posting leaves (its mirror, selftests/Makefile)."""
    text = read_text(os.path.join(REPO_DIR, 'selftests', 'Makefile')) or ''
    m = re.search(r'^TEST_GEN_PROGS\s*:?=((?:.*\\\n)*.*)$', text, re.M)
    return set(m[1].replace('\\\n', ' ').split()) if m else set()


def guest_groups(arch):
    """The guest's groups: its boot-time KUnit and its kselftests."""
    return (f'KUnit ({arch} guest, boot)', f'kselftests ({arch} guest)')


def layer_of(group, result, posted):
    """posted, proof or bench, for a result of group @group."""
    if group.startswith('kselftests '):
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
    holding run_kselftest.sh's TAP, whose '# ' lines hold each program's."""
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
                                  'status': status_of(t)})
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


def stages(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                fields = line.rstrip('\n').split('\t')
                row = {'stage': fields[0], 'seconds': int(fields[1]), 'status': int(fields[2])}
                if len(fields) > 3:
                    row['start_time'] = iso(int(fields[3]))
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


def guest_subdir(arch):
    """Where an arch's guest builds and reports below build/ and results/
    (scripts/lib.sh's GUEST_SUBDIR)."""
    return '' if arch == ARCHES[0] else arch


def metadata(out_dir, results, stage_rows, arch):
    tree = os.path.join(out_dir, 'linux')
    guest = os.path.join(out_dir, 'build', guest_subdir(arch), 'qemu')
    uml = os.path.join(out_dir, 'build', uml_run(results)) if arch == ARCHES[0] else None
    starts = [r['start_time'] for r in stage_rows if 'start_time' in r]
    return {
        'base_commit': read_text(os.path.join(out_dir, 'base-commit')),
        'base_name': git(tree, 'describe', '--always', '--tags',
                         read_text(os.path.join(out_dir, 'base-commit')) or 'HEAD'),
        'top_commit': git(tree, 'rev-parse', 'HEAD'),
        'series_digest': patchset_hash(),
        'kernel_tree': os.environ.get('KERNEL_TREE') or None,
        'kernel_release': read_text(os.path.join(guest, 'include', 'config', 'kernel.release')),
        'arch': arch,
        'config_digest': sha256_file(os.path.join(guest, '.config')),
        'compiler': compiler(guest),
        'uml_compiler': compiler(uml) if uml else None,
        'uml_run': uml_run(results) if uml else None,
        'accelerator': read_text(os.path.join(results, 'accel')),
        'start_time': min(starts) if starts else None,
        'end_time': iso(int(datetime.datetime.now().timestamp())),
    }


def kcidb(run, stage_rows, groups, programs, kernel_log):
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
    guest = build('guest', 'kernel', run['arch'], run['compiler'],
                  f"tinyconfig + config/guest.config + config/qemu-{run['arch']}.config"
                  ' + config/debug.config + config/proof.config')
    guest['misc'] = {'config_digest': run['config_digest'],
                     'kernel_release': run['kernel_release']}
    builds = [guest]
    kunit_guest, kselftests = guest_groups(run['arch'])
    tests, seen = [], {}
    status = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP'}

    def test(build_id, path, st, log, misc=None):
        key = f'{build_id}:{path}'
        seen[key] = seen.get(key, 0) + 1
        t = {'id': key + (f'#{seen[key]}' if seen[key] > 1 else ''), 'build_id': build_id,
             'origin': ORIGIN, 'path': path, 'status': st,
             'environment': {'comment': 'QEMU ' + (run['accelerator'] or '?')
                             if build_id.endswith(':guest') else 'UML'},
             'misc': {'log_path': log, **(misc or {})}}
        tests.append(t)
    if run['uml_run']:
        uml_group, uml_id, uml_config = UML_RUNS[run['uml_run']]
        uml = build(uml_id, run['uml_run'], 'um', run['uml_compiler'], uml_config)
        builds.insert(0, uml)
        for names, st in groups[uml_group]:
            test(uml['id'], '.'.join(['kunit'] + [component(n) for n in names]),
                 status[st], f"{run['uml_run']}.log", {'name': '.'.join(names)})
    boot_ok = by_stage.get('qemu', {}).get('status') == 0
    if 'qemu' in by_stage:
        test(guest['id'], 'boot', 'PASS' if boot_ok else 'FAIL', 'console.log')
    for names, st in groups[kunit_guest]:
        test(guest['id'], '.'.join(['kunit'] + [component(n) for n in names]),
             status[st], 'console.log', {'name': '.'.join(names)})
    for p in programs:
        test(guest['id'], f"kselftest.{p['abi']}.{component(p['program'])}",
             status[p['status']], 'ktap.log',
             {'exit_status': p['exit_status'], 'directive': p['directive']})
    for t in groups[kselftests]:
        abi, program, name, st = t
        test(guest['id'], '.'.join(['kselftest', abi, component(program)] +
                                       [component(n) for n in name.split('.')]),
             status[st], 'ktap.log', {'name': name})
    if 'qemu' in by_stage:
        test(guest['id'], 'kernel_log', 'FAIL' if kernel_log else 'PASS', 'console.log',
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
    ap.add_argument('--arch', choices=ARCHES, default=os.environ.get('GUEST_ARCH') or ARCHES[0],
                    help='the guest\'s architecture (default: $GUEST_ARCH, else x86_64)')
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

    uml_name = uml_run(args.results) if args.arch == ARCHES[0] else None
    uml_group = UML_RUNS[uml_name][0] if uml_name else None
    uml_log = read_lines(os.path.join(args.results, f'{uml_name}.log')) if uml_name else None
    console = read_lines(os.path.join(args.results, 'console.log'))
    boot = console[:next((i for i, l in enumerate(console)
                          if l.startswith('Run /init')), len(console))] if console else None
    tree = os.path.join(out_dir, 'linux')
    guest = kunit_parse(tree, boot, 'kunit-guest', args.results)
    kunit_guest, kselftests = guest_groups(args.arch)
    groups = {}
    if uml_name:
        groups[uml_group] = kunit_cases(os.path.join(args.results, f'{uml_name}.json')) or []
    groups[kunit_guest] = guest or []
    groups[kselftests] = [(t['abi'], t['program'], t['test'], t['status']) for t in ktests]
    for name in [g for g in (uml_group, kunit_guest) if g]:
        if not groups[name]:
            msg = f'{name}: ran no test'
            (problems.append if args.expect_kunit else out.append)(msg)
    if not programs:
        problems.append('kselftests: ran no test program')
    elif not done:
        problems.append('kselftests: the guest did not finish (no "epoll-guest: done" in ktap.log)')
    for p in programs:
        if p['status'] != 'pass' and not (p['status'] == 'skip' and args.allow_skip):
            problems.append(f"kselftest program {p['abi']}/{p['program']}: "
                            f"{p['status']} {p['directive']}".strip())
    for name, results in groups.items():
        for r in results:
            st = r[-1]
            skip_checked = name == UML_RUNS['kunit-uml-nopm'][0]
            if st == 'fail' or (st == 'skip' and not args.allow_skip and not skip_checked):
                label = '.'.join(r[0]) if name != kselftests else f'{r[0]}/{r[1]}:{r[2]}'
                problems.append(f'{name}: {label}: {st}')

    kernel_log = splats(uml_log or []) + splats(console or [])
    problems += [f'kernel log: {s}' for s in kernel_log]
    run = metadata(out_dir, args.results, stage_rows, args.arch)
    counts = {name: count(r[-1] for r in results) for name, results in groups.items()}
    posted = posted_programs()
    layers = {name: {layer: count(r[-1] for r in results if layer_of(name, r, posted) == layer)
                     for layer in LAYERS}
              for name, results in groups.items()}
    summary = {
        'schema': 'eventpoll-series-summary', 'schema_version': SCHEMA_VERSION,
        'run': run, 'stages': stage_rows, 'counts': counts, 'layers': layers,
        'programs': programs, 'kernel_log': kernel_log,
        'kcidb': kcidb(run, stage_rows, groups, programs, kernel_log),
    }

    out.append(f"{'stage':<28}{'seconds':>8}  status")
    for row in stage_rows:
        out.append(f"{row['stage']:<28}{row['seconds']:>8}  {'ok' if row['status'] == 0 else 'FAILED'}")
    out.append('')
    out.append(f"{'tests':<36}{'passed':>8}{'failed':>8}{'skipped':>8}")
    for name, c in counts.items():
        out.append(f"{name:<36}{c['pass']:>8}{c['fail']:>8}{c['skip']:>8}")
        for layer, lc in layers[name].items():
            if sum(lc.values()):
                out.append(f"{'  ' + layer:<36}{lc['pass']:>8}{lc['fail']:>8}{lc['skip']:>8}")
    out.append('')
    for p in programs:
        per = count(t['status'] for t in ktests
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
