#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the logs of 'make bench' into tables, JSON and plots.

Reads, from the bench results directory (scripts/run-bench.sh):
  meta.tsv               key, value: what ran, where, how long, the seed
  boots.tsv              boot number, kernel (or patched-smp1: the patched
                         kernel with one vCPU), wall seconds, the order of
                         the server's variants in that boot
  raw/boot-NN-KERNEL.ktap  that boot's KTAP (guest/init, epoll.bench=): one
                         result line per entry script, and the JSON lines
                         of epoll_micro ({"test": ...}), epoll_wakeups and
                         epoll_oneshot_window ({"bench": ...}), perf bench
                         epoll ({"bench": "perf_epoll", ...}) and
                         epoll_server ({"variant": ...}) indented in it
  native.tsv, raw/native-NN.log  the rounds of scripts/run-bench-native.sh:
                         the server on the host's own kernel, no emulator
  epitem-KERNEL.txt      pahole -C epitem of that kernel's fs/eventpoll.o
  functions-KERNEL.tsv   nm -S of that kernel's epoll functions
  insns.txt              scripts/bench-insns.py's tables
Writes bench.txt, bench.json, rfc-table.txt, bench.png and sweep.png
(gnuplot; data and scripts under plot/) there, and prints bench.txt.

Statistics: a boot (or a native round) contributes one value per figure
(for epoll_micro and perf bench, the median of the boot's repetitions).
Every figure is the median over boots with its range, [min-max]. Two
figures differ only when their ranges do not overlap; where they overlap
the report says "no difference" whatever the medians say. With 5 boots,
disjoint ranges mean that every boot of one lies beyond every boot of the
other. The calibration compares, for each figure, the orderings of
variants that the emulated run resolves (disjoint ranges) with the
native run's and the one-vCPU run's: an ordering is supported when the
other run resolves it the same way, unresolved when its ranges overlap,
contradicted when it resolves it the other way.

Exit status: 0; 1 when a log is missing or unusable, an entry script
failed, a boot lacks a variant of the server, a native round lacks one
that needs nothing the host lacks, a safe variant saw a use-after-free or
a wrong answer, or struct epitem differs in size.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import textwrap

KERNELS = ('base', 'control', 'fixes', 'patched')
SMP1 = 'patched-smp1'
# The runs of the server: the patched kernel with 2 and 1 vCPUs, the host.
SETUPS = ('guest', 'smp1', 'native')
SETUP_NAMES = {'guest': 'guest, 2 vCPUs', 'smp1': 'guest, 1 vCPU', 'native': 'native'}
# The variants, in the order the tables list them; epoll_server --list
# names the same (bench/server/harness.c).
VARIANTS = ('disable', 'shutdown', 'gen', 'qsbr-self', 'qsbr', 'userspace', 'perthread',
            'uring-recv', 'uring', 'uring-multishot', 'naive')
# What the host lacks is skipped there, not missing.
NEEDS_PATCHED = ('disable',)
UNSAFE = ('naive',)
# The settings of epoll_server_bench.sh's runs; the sweep varies them.
DEFAULTS = {'workers': 4, 'clients': 16, 'conn_requests': 16}
SERVER_METRICS = [
    # key, heading, format, better (+1 higher, -1 lower, 0 neither)
    ('rps', 'req/s', '{:.0f}', 1),
    ('p50_us', 'p50 us', '{:.0f}', -1),
    ('p99_us', 'p99 us', '{:.0f}', -1),
    ('cpu_us_per_request', 'CPU us/req', '{:.1f}', -1),
    ('syscalls_per_request', 'syscalls/req', '{:.2f}', -1),
    ('retire_p50_us', 'retire p50 us', '{:.0f}', -1),
    ('retire_p99_us', 'retire p99 us', '{:.0f}', -1),
    ('held_mean_bytes', 'retired B mean', '{:.0f}', -1),
    ('held_peak_bytes', 'retired B peak', '{:.0f}', -1),
    ('state_mean_bytes', 'state B mean', '{:.0f}', -1),
    ('idle_wakeups_per_s_per_worker', 'idle wakeups/s/w', '{:.1f}', -1),
    ('futex_per_request', 'futex/req', '{:.3f}', -1),
    ('uaf', 'use-after-free', '{:.0f}', -1),
]
METRIC = {k: (h, f, b) for k, h, f, b in SERVER_METRICS}
# The figures whose ordering of variants the calibration checks.
CALIBRATED = ('cpu_us_per_request', 'syscalls_per_request', 'retire_p50_us',
              'held_mean_bytes', 'p99_us', 'rps')
SHARED = ('disable', 'shutdown', 'gen', 'qsbr-self', 'qsbr', 'userspace')
PARTITIONED = ('perthread', 'uring-recv', 'uring', 'uring-multishot')
SWEEP_METRICS = ('rps', 'cpu_us_per_request', 'p99_us', 'held_mean_bytes')
JSON_LINE = re.compile(r'(\{"(?:test|variant|bench)".*\})\s*$')
# The result line of one entry script (not indented).
ENTRY_RESULT = re.compile(r'^(ok|not ok) \d+ (\S+)(?:\s*#\s*(.*))?$')


def read_tsv(path):
    with open(path) as f:
        return [line.rstrip('\n').split('\t') for line in f if line.strip()]


def read_ktap(path):
    """The JSON lines and the entry results of one boot's KTAP."""
    lines, entries = [], []
    try:
        f = open(path, errors='replace')
    except FileNotFoundError:
        sys.exit(f'bench-report: no {path}')
    with f:
        for line in f:
            m = JSON_LINE.search(line)
            if m:
                lines.append(json.loads(m.group(1)))
                continue
            m = ENTRY_RESULT.match(line.rstrip('\n'))
            if m:
                entries.append({'entry': m.group(2), 'ok': m.group(1) == 'ok',
                                'directive': (m.group(3) or '').strip()})
    return lines, entries


def stats(values):
    values = [float(v) for v in values]
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {'median': med, 'min': lo, 'max': hi, 'n': len(values),
            'spread_pct': 100.0 * (hi - lo) / med if med else 0.0,
            'values': values}


def order(a, b):
    """-1 if @a lies wholly below @b, 1 wholly above, 0 if the ranges overlap."""
    if a['max'] < b['min']:
        return -1
    if a['min'] > b['max']:
        return 1
    return 0


def fmt_range(s, f):
    if s['n'] == 1 or s['min'] == s['max']:
        return f.format(s['median'])
    return f"{f.format(s['median'])} [{f.format(s['min'])}-{f.format(s['max'])}]"


def epitem_size(path):
    try:
        with open(path) as f:
            m = re.search(r'/\* size: (\d+),', f.read())
    except FileNotFoundError:
        return None
    return int(m.group(1)) if m else None


def function_sizes(rdir, kernels):
    """{function: {kernel: bytes}} from functions-<kernel>.tsv (nm -S)."""
    out = {}
    for k in kernels:
        try:
            for name, size in read_tsv(os.path.join(rdir, f'functions-{k}.tsv')):
                out.setdefault(name, {})[k] = int(size, 16)
        except FileNotFoundError:
            pass
    return out


def settings(run):
    return tuple(int(run.get(k, DEFAULTS[k])) for k in DEFAULTS)


def server_runs(lines, setup, tag, server, problems, expect):
    runs = [dict(r, futex_per_request=float(r.get('sys_futex', 0)) / max(1, int(r['requests'])))
            for r in lines if 'variant' in r]
    got = {r['variant'] for r in runs if settings(r) == settings(DEFAULTS)}
    missing = set(expect) - got
    if missing:
        problems.append(f"{tag}: no epoll_server result for {', '.join(sorted(missing))}")
    for r in runs:
        server.setdefault((setup, r['variant'], settings(r)), []).append(r)


def collect(rdir):
    """Per test and kernel the boots' medians, the server runs by setup,
    variant and settings, the wakeup counts, perf bench, and the problems."""
    boots = read_tsv(os.path.join(rdir, 'boots.tsv'))
    micro, server, wakeups, perf, problems = {}, {}, {}, {}, []
    for row in boots:
        n, kernel = row[0], row[1]
        tag = f'boot-{int(n):02d}-{kernel}'
        lines, entries = read_ktap(os.path.join(rdir, 'raw', f'{tag}.ktap'))
        if not entries:
            problems.append(f'{tag}: the guest reported no benchmark')
        for e in entries:
            if not e['ok']:
                problems.append(f"{tag}: {e['entry']} failed {e['directive']}".rstrip())
        if kernel == SMP1:
            server_runs(lines, 'smp1', tag, server, problems, VARIANTS)
            continue
        tests = [l for l in lines if 'test' in l and 'bench' not in l]
        if not tests:
            problems.append(f'{tag}: no epoll_micro results')
        for t in tests:
            e = micro.setdefault(t['test'], {'unit': t['unit']})
            e.setdefault(kernel, []).append(t['median'])
            e.setdefault('reps:' + kernel, []).extend(t.get('reps', [t['median']]))
        for bench in ('epoll_wakeups', 'epoll_oneshot_window'):
            runs = [l for l in lines if l.get('bench') == bench]
            wakeups.setdefault(bench, {}).setdefault(kernel, []).extend(runs)
            if not runs:
                problems.append(f'{tag}: no {bench} result')
        runs = [l for l in lines if l.get('bench') == 'perf_epoll']
        if not runs:
            problems.append(f'{tag}: no perf bench epoll result')
        by_test = {}
        for r in runs:
            by_test.setdefault(r['test'], []).append(float(r['ops_per_s']))
        for t, v in by_test.items():
            perf.setdefault(t, {}).setdefault(kernel, []).append(statistics.median(v))
        if kernel == 'patched':
            server_runs(lines, 'guest', tag, server, problems, VARIANTS)
    native = []
    npath = os.path.join(rdir, 'native.tsv')
    if os.path.isfile(npath):
        native = read_tsv(npath)
        for row in native:
            tag = f'native-{int(row[0]):02d}'
            lines, entries = read_ktap(os.path.join(rdir, 'raw', f'{tag}.log'))
            for e in entries:
                if not e['ok']:
                    problems.append(f"{tag}: {e['entry']} failed {e['directive']}".rstrip())
            server_runs(lines, 'native', tag, server, problems,
                        [v for v in VARIANTS if v not in NEEDS_PATCHED])
    return boots, native, micro, server, wakeups, perf, problems


def ratio_row(base, other, base_reps, other_reps):
    b, o = stats(base), stats(other)
    ratio = o['median'] / b['median']
    return {'kernel': o, 'ratio': ratio, 'delta_pct': 100.0 * (ratio - 1),
            'range_ratio': (o['min'] / b['median'], o['max'] / b['median']),
            'differs': order(o, b), 'floor': min(other_reps),
            'floor_ratio': min(other_reps) / min(base_reps)}


def micro_rows(micro, kernels, ns_per_insn):
    rows = []
    for name, e in micro.items():
        if 'base' not in e:
            continue
        row = {'test': name, 'unit': e['unit'], 'base': stats(e['base']),
               'base_floor': min(e['reps:base'])}
        for k in kernels:
            if k != 'base' and k in e:
                row[k] = ratio_row(e['base'], e[k], e['reps:base'], e['reps:' + k])
                if ns_per_insn and e['unit'].startswith('ns/'):
                    row[k]['floor_insns'] = (row[k]['floor'] - row['base_floor']) / ns_per_insn
        p, c = row.get('patched'), row.get('control')
        if p:
            if len(e['base']) < 2:
                p['verdict'] = 'no range (1 boot)'
            elif not p['differs']:
                p['verdict'] = 'no difference'
            elif c and c['differs'] == p['differs']:
                p['verdict'] = 'as the control'
            else:
                p['verdict'] = 'slower' if p['differs'] > 0 else 'faster'
        rows.append(row)
    return rows


def perf_rows(perf, kernels):
    rows = []
    for t, e in sorted(perf.items()):
        if 'base' not in e:
            continue
        b = stats(e['base'])
        row = {'test': t, 'base': b}
        for k in kernels:
            if k != 'base' and k in e:
                o = stats(e[k])
                row[k] = {'kernel': o, 'ratio': o['median'] / b['median'], 'differs': order(o, b)}
        rows.append(row)
    return rows


def server_rows(server, setup, key):
    rows = []
    for (st, variant, s), runs in server.items():
        if st != setup or s != key:
            continue
        metrics = {k: stats([float(r.get(k, 0)) for r in runs]) for k in METRIC}
        rows.append({'variant': variant, 'boots': len(runs), 'metrics': metrics,
                     'uaf_total': sum(int(r['uaf']) for r in runs),
                     'wrong_answers': sum(int(r['wrong']) for r in runs),
                     'disable_busy': sum(int(r.get('disable_busy', 0)) for r in runs),
                     'disable_ok': sum(int(r.get('disable_ok', 0)) for r in runs),
                     'forced_events': sum(int(r.get('forced_events', 0)) for r in runs),
                     'handler_frees': sum(int(r.get('handler_frees', 0)) for r in runs),
                     'gp_by_worker': sum(int(r.get('gp_by_worker', 0)) for r in runs),
                     'grace_periods': sum(int(r.get('grace_periods', 0)) for r in runs),
                     'conn_bytes': runs[0].get('conn_bytes'),
                     'kernel': runs[0].get('kernel', '?')})
    rows.sort(key=lambda r: VARIANTS.index(r['variant']) if r['variant'] in VARIANTS else 99)
    return rows


def sweep_rows(server, setup):
    """Per (variant, settings) other than the default: the figures' stats."""
    out = []
    for (st, variant, s), runs in server.items():
        if st != setup or s == settings(DEFAULTS):
            continue
        out.append({'variant': variant, 'workers': s[0], 'clients': s[1], 'churn': s[2],
                    'runs': len(runs), 'uaf_total': sum(int(r['uaf']) for r in runs),
                    'wrong_total': sum(int(r.get('wrong', 0)) for r in runs),
                    **{m: stats([float(r.get(m, 0)) for r in runs]) for m in SWEEP_METRICS}})
    out.sort(key=lambda r: (VARIANTS.index(r['variant']) if r['variant'] in VARIANTS else 99,
                            r['workers'], r['clients'], r['churn']))
    return out


def against(rows, ref='disable'):
    """Per variant and figure: how it stands against @ref (ranges); {} without @ref."""
    base = {r['variant']: r for r in rows}.get(ref)
    out = {}
    if not base:
        return out
    for r in rows:
        if r['variant'] == ref:
            continue
        out[r['variant']] = {k: order(r['metrics'][k], base['metrics'][k]) for k in METRIC}
    return out


def calibrate(ref_rows, other_rows):
    """Per calibrated figure: the orderings @ref_rows resolves, and how
    @other_rows resolves each: supported, unresolved, contradicted."""
    a = {r['variant']: r['metrics'] for r in ref_rows if r['variant'] not in UNSAFE}
    b = {r['variant']: r['metrics'] for r in other_rows if r['variant'] not in UNSAFE}
    common = [v for v in VARIANTS if v in a and v in b]
    out = {}
    for k in CALIBRATED:
        res = {'supported': [], 'unresolved': [], 'contradicted': [], 'new': [],
               'ref_rank': sorted(common, key=lambda v: a[v][k]['median']),
               'other_rank': sorted(common, key=lambda v: b[v][k]['median'])}
        for i, x in enumerate(common):
            for y in common[i + 1:]:
                oa, ob = order(a[x][k], a[y][k]), order(b[x][k], b[y][k])
                pair = (x, y) if oa <= 0 and ob <= 0 else (y, x)
                if oa == 0:
                    if ob:
                        res['new'].append(pair)
                    continue
                res['supported' if ob == oa else 'unresolved' if ob == 0
                    else 'contradicted'].append((x, y) if oa < 0 else (y, x))
        out[k] = res
    return out


def group_gap(rows, k='cpu_us_per_request'):
    """Median of the shared-instance variants' medians over the partitioned ones'."""
    m = {r['variant']: r['metrics'][k]['median'] for r in rows}
    sh = [m[v] for v in SHARED if v in m]
    pa = [m[v] for v in PARTITIONED if v in m]
    if not sh or not pa:
        return None
    return {'shared': statistics.median(sh), 'partitioned': statistics.median(pa),
            'ratio': statistics.median(sh) / statistics.median(pa)}


def wakeup_rows(wakeups, kernels):
    rows = []
    for k in kernels:
        runs = wakeups.get('epoll_wakeups', {}).get(k)
        if not runs:
            continue
        rows.append({'kernel': k, 'spurious_per_1000': stats([r['spurious_per_1000'] for r in runs]),
                     'wakeups_per_1000': stats([r['wakeups_per_1000'] for r in runs]),
                     'deliveries': statistics.median(r['deliveries'] for r in runs),
                     'handling_switches': sum(r['handling_switches'] for r in runs),
                     'ok': all(r['ok'] for r in runs)})
    return rows


def window_rows(wakeups, kernels):
    """bench/epoll_oneshot_window: sleepers woken per round, per kernel."""
    rows = []
    for k in kernels:
        runs = wakeups.get('epoll_oneshot_window', {}).get(k)
        if not runs:
            continue
        rows.append({'kernel': k, 'woken_per_round': stats([r['woken_per_round'] for r in runs]),
                     'rounds': sum(r['rounds'] for r in runs), 'sleepers': runs[0]['sleepers'],
                     'ok': all(r['ok'] for r in runs)})
    return rows


def table(out, rows, keys, width=21, name_width=16):
    for i in range(0, len(keys), 4):
        chunk = keys[i:i + 4]
        out.append(f"{'variant':<{name_width}}" + ''.join(f'{METRIC[k][0]:>{width}}' for k in chunk))
        for r in rows:
            out.append(f"{r['variant']:<{name_width}}" + ''.join(
                f"{fmt_range(r['metrics'][k], METRIC[k][1]):>{width}}" for k in chunk))


def sign(o, better):
    """'+' better than the reference, '-' worse, '=' no difference, for @better."""
    if o == 0:
        return '='
    if better == 0:
        return '<' if o < 0 else '>'
    return '+' if o * better > 0 else '-'


def server_part(out, title, rows, n):
    out.append(title)
    if not rows:
        out.append('  (no results)')
        return
    table(out, rows, [k for k in METRIC])
    for r in rows:
        extra = []
        if r['variant'] == 'disable':
            extra.append(f"DISABLE answered 0 {r['disable_ok']}x, EBUSY {r['disable_busy']}x")
        if r['variant'] == 'shutdown':
            extra.append(f"{r['forced_events']} forced events, {r['handler_frees']} "
                         f"retired while handled")
        if r['variant'] == 'qsbr-self':
            extra.append(f"{r['grace_periods']} grace periods, {r['gp_by_worker']} "
                         f"ended by a worker")
        out.append(f"  {r['variant']}: {r['boots']} of {n}, use-after-free {r['uaf_total']}, "
                   f"wrong answers {r['wrong_answers']}" + ''.join(f'; {x}' for x in extra))


def against_part(out, rows, label):
    vs = against(rows)
    if not vs:
        return
    keys = [k for k in METRIC if k != 'uaf']
    out.append(f'Against disable ({label}): + better, - worse, = no difference '
               '(the ranges overlap); rows are the other variants')
    head = f"{'variant':<16}" + ''.join(f'{METRIC[k][0][:8]:>9}' for k in keys)
    out.append(head)
    for v, o in vs.items():
        out.append(f'{v:<16}' + ''.join(f'{sign(o[k], METRIC[k][2]):>9}' for k in keys))


def calibration_part(out, cal, ref, other):
    out.append(f'  {SETUP_NAMES[other]} against {SETUP_NAMES[ref]}: orderings of two variants '
               f'that {SETUP_NAMES[ref]} resolves (disjoint ranges)')
    for k, res in cal.items():
        n = len(res['supported']) + len(res['unresolved']) + len(res['contradicted'])
        verdict = ('supported' if n and not res['contradicted'] and
                   len(res['supported']) >= len(res['unresolved'])
                   else 'contradicted' if res['contradicted'] else
                   'not resolved' if n else 'nothing to compare')
        out.append(f"    {METRIC[k][0]:<16} {n:>3} resolved: {len(res['supported']):>3} the same, "
                   f"{len(res['unresolved']):>3} unresolved, {len(res['contradicted']):>3} "
                   f"reversed ({verdict})")
        res['verdict'] = verdict
        if res['contradicted']:
            out.append('      reversed: ' + ', '.join(f'{a}<{b}' for a, b in res['contradicted']))
        out.append(f"      ranked by median, {ref}: {' '.join(res['ref_rank'])}")
        out.append(f"      ranked by median, {other}: {' '.join(res['other_rank'])}")


def text(meta, boots, native, kernels, srv, sweeps, cal, gaps, wrows, winrows, mrows, prows,
         epitem, funcs, insns, ns_per_insn):
    out = []
    nb = sum(1 for b in boots if b[1] == 'patched')
    out.append(f"make bench, {meta.get('date', '?')}: {meta.get('boots', '?')} boots of each "
               f"kernel ({', '.join(kernels)}), {meta.get('smp1_boots', 0)} of the patched one "
               f"with 1 vCPU, {len(native)} native rounds; seed {meta.get('seed', '?')}")
    out.append('boot order: ' + ' '.join(
        f"{b[1][0].upper()}{'1' if b[1] == SMP1 else ''}" for b in boots) +
        ' (B base, C control, F fixes, P patched, P1 patched with 1 vCPU)')
    out.append(f"guest: QEMU {meta.get('qemu', '?')}, TCG, {meta.get('clock', '?')}, "
               f"{meta.get('smp', '?')} vCPUs; kernels: {meta.get('config', '?')}")
    out.append(f"host: {meta.get('host', '?')}, load {meta.get('load_end', '?')} at the end; "
               f"epoll_micro scale {meta.get('scale', '?')}; liburing {meta.get('liburing', '?')}")
    if native:
        loads = [float(x) for r in native for x in r[4:6]]
        out.append(f"native rounds: kernel {native[0][1]}, load average (1 min) "
                   f"{min(loads):.1f}-{max(loads):.1f} around them")
    out.append('Every figure: median [min-max] over boots (rounds). Two figures differ only '
               'where their ranges do not overlap.')
    out.append('')
    server_part(out, f"Part 1: epoll_server on the patched kernel, {SETUP_NAMES['guest']} "
                f"({DEFAULTS['workers']} workers, {DEFAULTS['clients']} connections, retired "
                f"after {DEFAULTS['conn_requests']} requests, 20 ms idle or 200 ms age)",
                srv['guest'], nb)
    against_part(out, srv['guest'], SETUP_NAMES['guest'])
    out.append('')
    for setup in ('smp1', 'native'):
        if not srv[setup]:
            continue
        label = SETUP_NAMES[setup] + (f" ({srv[setup][0]['kernel']})" if setup == 'native' else '')
        server_part(out, f'Part 1, {label}: the same workload', srv[setup],
                    len(native) if setup == 'native' else int(meta.get('smp1_boots', 0)))
        against_part(out, srv[setup], label)
        out.append('')
    out.append('Calibration: does the emulator rank the variants as the native run '
               '(and as one vCPU) does?')
    for (ref, other), c in cal.items():
        calibration_part(out, c, ref, other)
    for setup, g in gaps.items():
        if g:
            out.append(f"  CPU us/request, shared-instance variants over partitioned ones "
                       f"(median of medians), {SETUP_NAMES[setup]}: {g['shared']:.1f} / "
                       f"{g['partitioned']:.1f} = {g['ratio']:.2f}")
    out.append('')
    for setup, rows in sweeps.items():
        if not rows:
            continue
        out.append(f'Part 2: the sweep, {SETUP_NAMES[setup]}: connections x churn (retired '
                   'after N requests), then workers; median [min-max]')
        out.append(f"{'variant':<16}{'w':>2}{'conns':>6}{'churn':>6}{'req/s':>22}"
                   f"{'CPU us/req':>19}{'p99 us':>22}{'retired B':>22}{'uaf':>7}")
        for r in rows:
            out.append(f"{r['variant']:<16}{r['workers']:>2}{r['clients']:>6}{r['churn']:>6}"
                       f"{fmt_range(r['rps'], '{:.0f}'):>22}"
                       f"{fmt_range(r['cpu_us_per_request'], '{:.1f}'):>19}"
                       f"{fmt_range(r['p99_us'], '{:.0f}'):>22}"
                       f"{fmt_range(r['held_mean_bytes'], '{:.0f}'):>22}{r['uaf_total']:>7}")
        out.append('')
    out.append('Part 3: spurious wakeups of epoll_wait() sleepers per 1000 one-shot '
               'deliveries (bench/epoll_wakeups)')
    base_w = {r['kernel']: r for r in wrows}.get('base')
    for r in wrows:
        d = ''
        if base_w and r['kernel'] != 'base':
            o = order(r['spurious_per_1000'], base_w['spurious_per_1000'])
            d = '   against base: ' + ('no difference' if not o else 'fewer' if o < 0 else 'more')
        out.append(f"  {r['kernel']:<8} spurious {fmt_range(r['spurious_per_1000'], '{:.1f}'):>24}"
                   f"   all wakeups {fmt_range(r['wakeups_per_1000'], '{:.1f}'):>26}{d}")
    out.append('Part 3b: the same second wakeup made to land in the window every time '
               '(bench/epoll_oneshot_window): sleepers woken per round, 1 needed')
    for r in winrows:
        out.append(f"  {r['kernel']:<8} woken {fmt_range(r['woken_per_round'], '{:.2f}'):>20}"
                   f"   rounds {r['rounds']}, {r['sleepers']} sleepers")
    out.append('')
    out.append('Part 4: epoll microbenchmarks (bench/epoll_micro): base median [min-max], '
               'then each kernel / base median [range of its boots / base median];')
    out.append('verdict: no difference where the patched and base ranges overlap, "as the '
               'control" where the layout control differs the same way')
    head = f"{'test':<15}{'unit':<10}{'base':>26}"
    for k in kernels[1:]:
        head += f'{k:>22}'
    out.append(head + '  patched verdict')
    for r in mrows:
        line = f"{r['test']:<15}{r['unit']:<10}{fmt_range(r['base'], '{:.1f}'):>26}"
        for k in kernels[1:]:
            if k in r:
                lo, hi = r[k]['range_ratio']
                line += f"{r[k]['ratio']:>8.3f} [{lo:.3f}-{hi:.3f}]"
            else:
                line += f"{'-':>22}"
        out.append(line + f"  {r.get('patched', {}).get('verdict', '-')}")
    out.append('')
    out.append('Part 4b: the fastest repetition over all boots: under -icount a time is '
               'executed instructions, and what else runs meanwhile only adds;')
    out.append('ratio to base, and the difference in instructions per operation '
               f"({ns_per_insn:g} ns of guest time per instruction)" if ns_per_insn else
               'ratio to base')
    out.append(f"{'test':<15}{'base floor':>12}" + ''.join(f'{k:>20}' for k in kernels[1:]))
    for r in mrows:
        line = f"{r['test']:<15}{r['base_floor']:>12.1f}"
        for k in kernels[1:]:
            if k not in r:
                line += f"{'-':>20}"
            elif 'floor_insns' in r[k]:
                line += f"{r[k]['floor_ratio']:>9.4f} {r[k]['floor_insns']:>+7.1f} ins"
            else:
                line += f"{r[k]['floor_ratio']:>20.4f}"
        out.append(line)
    out.append('')
    out.append("Part 4c: the kernel's own epoll benchmarks, perf bench epoll (tools/perf "
               'of the series tree, static; 2 threads, 1 s, median of the boot\'s runs): '
               'operations/s')
    out.append(f"{'test':<14}{'base':>26}" + ''.join(f'{k:>20}' for k in kernels[1:]))
    for r in prows:
        line = f"{r['test']:<14}{fmt_range(r['base'], '{:.0f}'):>26}"
        for k in kernels[1:]:
            if k in r:
                v = r[k]
                mark = {0: '=', 1: '(more)', -1: '(fewer)'}[v['differs']]
                line += f"{v['ratio']:>12.3f} {mark:>7}"
            else:
                line += f"{'-':>20}"
        out.append(line)
    out.append('  ratio kernel / base; = the ranges overlap (no difference)')
    out.append('')
    out.append('Part 5: where the code grew')
    out.append(insns.rstrip('\n') if insns else '  (no insns.txt: scripts/bench-insns.py did not run)')
    out.append('')
    out.append("epoll's functions whose size differs from base (bytes, nm -S)")
    changed = {f: v for f, v in funcs.items() if len(set(v.get(k) for k in kernels)) > 1}
    out.append(f"{'function':<32}" + ''.join(f'{k:>10}' for k in kernels))
    for f, v in sorted(changed.items()):
        out.append(f"{f:<32}" + ''.join(f"{v[k] if k in v else '-':>10}" for k in kernels))
    if not changed:
        out.append('  (none)')
    sizes = ', '.join(f'{k} {epitem.get(k)} B' for k in kernels)
    same = 'equal' if len({epitem.get(k) for k in kernels}) == 1 else 'DIFFERENT'
    out.append(f"sizeof(struct epitem): {sizes} ({same}; pahole on fs/eventpoll.o with -g)")
    if meta.get('wall'):
        out.append(f"make bench took {meta['wall']} (builds {meta.get('build_time', '?')}, "
                   f"boots {meta.get('boot_time', '?')}, native {meta.get('native_time', '?')})")
    return '\n'.join(out) + '\n'


# The cover letter's tables: pairs of figures, so that a median and its
# range fit 72 columns.
RFC_PAIRS = (('cpu_us_per_request', 'syscalls_per_request'),
             ('retire_p50_us', 'held_mean_bytes'),
             ('p99_us', 'idle_wakeups_per_s_per_worker'))
RFC_NATIVE_PAIRS = RFC_PAIRS[:2]


def rfc_cell(s, k):
    f = '{:.1f}' if k == 'cpu_us_per_request' else '{:.0f}' if k == 'p99_us' else METRIC[k][1]
    if s['min'] == s['max']:
        return f.format(s['median'])
    return f"{f.format(s['median'])} [{f.format(s['min'])}-{f.format(s['max'])}]"


def rfc_block(out, rows, pairs, vs):
    for pair in pairs:
        out.append(f"{'':<16}" + ''.join(f'{METRIC[k][0]:>25}  ' for k in pair).rstrip())
        for r in rows:
            cells = []
            for k in pair:
                o = vs.get(r['variant'], {}).get(k)
                mark = '' if o is None else sign(o, METRIC[k][2])
                cells.append(f"{rfc_cell(r['metrics'][k], k):>25} {mark:1}")
            out.append((f"{r['variant']:<16}" + ''.join(cells)).rstrip())
        out.append('')


def rfc_table(meta, srv, cal, native_kernel):
    """The cover letter's table: plain text, at most 72 columns."""
    rows = [r for r in srv['guest'] if r['variant'] not in UNSAFE]
    nrows = [r for r in srv['native'] if r['variant'] not in UNSAFE]
    out = textwrap.wrap(
        f"make bench of {meta.get('date', '?')[:10]}: Linux 7.3.4 with the series in QEMU "
        f"(TCG, {meta.get('clock', '?')}, 2 vCPUs), {meta.get('boots', '?')} boots, the "
        f"variants in a random order per boot (seed {meta.get('seed', '?')}). 4 workers, "
        '16 connections, each retired after 16 requests, 20 ms idle or 200 ms while '
        'workers may be handling it. Median [min-max] over boots; against disable: + '
        'better, - worse, = no difference (the ranges overlap).', 72) + ['']
    rfc_block(out, rows, RFC_PAIRS, against(srv['guest']))
    if nrows:
        out += textwrap.wrap(
            f"The same natively: {native_kernel} (no DISABLE) on the 2-core host, "
            f"{nrows[0]['boots']} rounds, wall-clock CPU; against shutdown:", 72) + ['']
        rfc_block(out, nrows, RFC_NATIVE_PAIRS, against(srv['native'], 'shutdown'))
    c = cal.get(('guest', 'native'))
    if c:
        out.append('Orderings of two variants the emulator resolves, and how the')
        out.append('native run resolves them (same / unresolved / reversed):')
        for k in RFC_PAIRS[0] + RFC_PAIRS[1]:
            res = c[k]
            out.append(f"  {METRIC[k][0]:<16} {len(res['supported']):>3} / "
                       f"{len(res['unresolved']):>3} / {len(res['contradicted']):>3}")
    while out and not out[-1]:
        out.pop()
    wide = [l for l in out if len(l) > 72]
    if wide:
        sys.exit(f'bench-report: the RFC table has lines over 72 columns: {wide[0]!r}')
    return '\n'.join(out) + '\n'


GNUPLOT = r'''
set terminal pngcairo size 1500,800 font "DejaVu Sans,10" noenhanced
set output "{png}"
set multiplot title "{title}" font ",13"
set style fill solid 0.6 border -1
set grid ytics lc rgb "#dddddd"

set origin 0,0
set size 0.5,0.95
set key top left
set title "Part 4: kernel / base, median of {nb} boots each (error bar: the range of its boots)"
set ylabel "time ratio (1 = no change; < 1 = faster)"
set xtics rotate by -40 nomirror
set yrange [{ylo}:{yhi}]
set xrange [-0.7:{nx}-0.3]
plot 1 notitle lc rgb "#444444" dt 2, \
     "{micro}" using ($0-0.15):2:3:4:xtic(1) with yerrorbars pt 7 ps 1.1 lc rgb "#999999" title "control", \
     "" using ($0):5:6:7 with yerrorbars pt 7 ps 1.1 lc rgb "#ff7f0e" title "fixes", \
     "" using ($0+0.15):8:9:10 with yerrorbars pt 7 ps 1.1 lc rgb "#1f77b4" title "patched"

unset key
set xtics rotate by -40 nomirror
set boxwidth 0.6
set xrange [-0.6:{nv}-0.4]
set yrange [0:*]
unset ylabel
array T[4] = [{titles}]
do for [i=0:3] {{
    set origin 0.5 + (i % 2) * 0.25, 0.48 - int(i / 2) * 0.47
    set size 0.25, 0.47
    set title T[i + 1]
    plot "{server}" using 0:(column(2 + 3 * i)):xtic(1) with boxes lc rgb "#2ca02c", \
         "" using 0:(column(2 + 3 * i)):(column(3 + 3 * i)):(column(4 + 3 * i)) with yerrorbars pt 0 lc rgb "black"
}}
unset multiplot
'''

SWEEP_GNUPLOT = r'''
set terminal pngcairo size 1600,{height} font "DejaVu Sans,10" noenhanced
set output "{png}"
set multiplot layout {nrows},3 title "epoll_server sweep: median and range [min-max] over boots; each setting's points are spread apart so that every range shows" font ",12"
set grid lc rgb "#dddddd"
set key outside right top vertical font ",8"
set xtics ({xtics}) rotate by -25 font ",8"
set xrange [-0.5:{nx}-0.5]
{panels}
unset multiplot
'''


def plot(rdir, meta, srows, mrows, sweeps):
    pdir = os.path.join(rdir, 'plot')
    os.makedirs(pdir, exist_ok=True)
    sweep_plot(rdir, pdir, sweeps)
    if not mrows or not srows:
        return
    micro = os.path.join(pdir, 'micro.dat')
    lo, hi = 1.0, 1.0
    with open(micro, 'w') as f:
        f.write('# test control low high fixes low high patched low high\n')
        for r in mrows:
            cells = []
            for k in ('control', 'fixes', 'patched'):
                x = r.get(k)
                if not x:
                    cells.append('NaN NaN NaN')
                    continue
                a, b = x['range_ratio']
                cells.append(f"{x['ratio']:.4f} {a:.4f} {b:.4f}")
                lo, hi = min(lo, a), max(hi, b)
            f.write(f"{r['test']} {' '.join(cells)}\n")
    pad = max(0.02, (hi - lo) * 0.15)
    server = os.path.join(pdir, 'server.dat')
    keys = ['rps', 'cpu_us_per_request', 'held_mean_bytes', 'retire_p50_us']
    with open(server, 'w') as f:
        f.write('# variant ' + ' '.join(f'{k} {k}_min {k}_max' for k in keys) + '\n')
        for r in srows:
            m = r['metrics']
            f.write(r['variant'] + ' ' + ' '.join(
                f"{m[k]['median']:.3f} {m[k]['min']:.3f} {m[k]['max']:.3f}" for k in keys) + '\n')
    png = os.path.join(rdir, 'bench.png')
    script = GNUPLOT.format(
        png=png, micro=micro, server=server, nx=len(mrows), nv=len(srows),
        nb=meta.get('boots', '?'), ylo=f'{lo - pad:.3f}', yhi=f'{hi + pad:.3f}',
        title=f"EPOLL_CTL_DISABLE: what it costs and what it buys "
              f"(TCG, {meta.get('clock', '')}, {meta.get('date', '')[:10]}; "
              f"bars: median, error bars: range over boots)",
        titles='"Part 1: requests/s (higher is better)", '
               '"CPU us per request (lower is better)", '
               '"retired, not yet freed: mean B", '
               '"retirement latency p50, us"')
    with open(os.path.join(pdir, 'bench.gp'), 'w') as f:
        f.write(script)
    subprocess.run(['gnuplot', os.path.join(pdir, 'bench.gp')], check=True)


def sweep_plot(rdir, pdir, sweeps):
    points = [(8, 4, 4), (8, 64, 4), (64, 4, 4), (64, 64, 4), (16, 16, 1), (16, 16, 2),
              (16, 16, 8)]
    names = ['8 conns churn 4', '8 conns churn 64', '64 conns churn 4', '64 conns churn 64',
             '1 worker', '2 workers', '8 workers']
    titles = {'rps': 'requests/s', 'cpu_us_per_request': 'CPU us per request',
              'held_mean_bytes': 'retired, not yet freed: mean B (log)'}
    panels = []
    setups = [s for s in ('guest', 'native') if sweeps.get(s)]
    if not setups:
        return
    for setup in setups:
        rows = sweeps[setup]
        variants = [v for v in VARIANTS if any(r['variant'] == v for r in rows)]
        data = os.path.join(pdir, f'sweep-{setup}.dat')
        with open(data, 'w') as f:
            for v in variants:
                f.write(f'# {v}\n')
                vi = VARIANTS.index(v)
                mine = [r for r in rows if r['variant'] == v and
                        (r['clients'], r['churn'], r['workers']) in points]
                for r in sorted(mine, key=lambda r: points.index(
                        (r['clients'], r['churn'], r['workers']))):
                    key = (r['clients'], r['churn'], r['workers'])
                    x = points.index(key) + (vi - len(VARIANTS) / 2) * 0.05
                    f.write(f'{x:.3f} ' + ' '.join(
                        f"{r[m]['median']:.3f} {r[m]['min']:.3f} {r[m]['max']:.3f}"
                        for m in titles) + '\n')
                f.write('\n\n')
        for mi, m in enumerate(titles):
            col = 2 + 3 * mi
            # The settings are categories, not a scale: points, no lines;
            # a variant keeps its colour and mark in every panel.
            plots = ', '.join(
                f'"{data}" index {vi} using 1:{col}:{col + 1}:{col + 2} with yerrorbars '
                f'lc {VARIANTS.index(v) + 1} pt {VARIANTS.index(v) + 1} ps 1.2 title "{v}"'
                for vi, v in enumerate(variants))
            log = 'set logscale y' if m == 'held_mean_bytes' else 'unset logscale y'
            panels.append(f'{log}\nset title "{SETUP_NAMES[setup]}: {titles[m]}"\nplot {plots}')
    script = SWEEP_GNUPLOT.format(
        png=os.path.join(rdir, 'sweep.png'), height=520 * len(setups), nrows=len(setups),
        xtics=', '.join(f'"{n}" {i}' for i, n in enumerate(names)), nx=len(points),
        panels='\n'.join(panels))
    with open(os.path.join(pdir, 'sweep.gp'), 'w') as f:
        f.write(script)
    subprocess.run(['gnuplot', os.path.join(pdir, 'sweep.gp')], check=True)


def ns_per_instruction(meta):
    m = re.search(r'shift=(\d+)', meta.get('clock', ''))
    return float(2 ** int(m.group(1))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('results', help='the bench results directory')
    ap.add_argument('--no-plot', action='store_true', help='skip gnuplot')
    args = ap.parse_args()
    rdir = args.results
    for name in ('meta.tsv', 'boots.tsv'):
        if not os.path.isfile(os.path.join(rdir, name)):
            ap.error(f'no {name} in {rdir}: not the results of scripts/run-bench.sh')
    meta = dict(read_tsv(os.path.join(rdir, 'meta.tsv')))
    boots, native, micro, server, wakeups, perf, problems = collect(rdir)
    kernels = [k for k in KERNELS if any(b[1] == k for b in boots)]
    ns_insn = ns_per_instruction(meta)
    mrows = micro_rows(micro, kernels, ns_insn)
    prows = perf_rows(perf, kernels)
    srv = {s: server_rows(server, s, settings(DEFAULTS)) for s in SETUPS}
    sweeps = {s: sweep_rows(server, s) for s in ('guest', 'native')}
    cal = {}
    for ref, other in (('guest', 'native'), ('guest', 'smp1'), ('smp1', 'native')):
        if srv[ref] and srv[other]:
            cal[(ref, other)] = calibrate(srv[ref], srv[other])
    gaps = {s: group_gap(srv[s]) for s in SETUPS}
    wrows = wakeup_rows(wakeups, kernels)
    winrows = window_rows(wakeups, kernels)
    epitem = {k: epitem_size(os.path.join(rdir, f'epitem-{k}.txt')) for k in kernels}
    for s in SETUPS:
        problems += [f"epoll_server --retire={r['variant']} ({SETUP_NAMES[s]}): "
                     f"{r['uaf_total']} use-after-free, {r['wrong_answers']} wrong answers"
                     for r in srv[s] if r['variant'] not in UNSAFE
                     and (r['uaf_total'] or r['wrong_answers'])]
    for s, rows in sweeps.items():
        problems += [f"epoll_server sweep --retire={r['variant']} ({SETUP_NAMES[s]}): "
                     f"{r['uaf_total']} use-after-free, {r['wrong_total']} wrong answers"
                     for r in rows if r['variant'] not in UNSAFE
                     and (r['uaf_total'] or r['wrong_total'])]
    problems += [f"epoll_wakeups on {r['kernel']}: a run failed" for r in wrows if not r['ok']]
    problems += [f"epoll_oneshot_window on {r['kernel']}: a run failed"
                 for r in winrows if not r['ok']]
    if None in epitem.values() or len(set(epitem.values())) != 1:
        problems.append(f"sizeof(struct epitem): {epitem}")
    funcs = function_sizes(rdir, kernels)
    insns = ''
    if os.path.isfile(os.path.join(rdir, 'insns.txt')):
        with open(os.path.join(rdir, 'insns.txt')) as f:
            insns = f.read()
        problems += [l[6:] for l in insns.splitlines() if l.startswith('FAIL: ')]
    txt = text(meta, boots, native, kernels, srv, sweeps, cal, gaps, wrows, winrows, mrows,
               prows, epitem, funcs, insns, ns_insn)
    native_kernel = native[0][1] if native else '?'
    rfc = rfc_table(meta, srv, cal, native_kernel)
    txt += '\nThe table for the RFC (rfc-table.txt):\n' + rfc
    txt += ''.join(f'FAIL: {p}\n' for p in problems)
    txt += (f"verdict: {'FAIL' if problems else 'PASS'} (every boot ran, the safe variants "
            f"are safe, struct epitem kept its size; the figures are for a person to read)\n")
    with open(os.path.join(rdir, 'bench.txt'), 'w') as f:
        f.write(txt)
    with open(os.path.join(rdir, 'rfc-table.txt'), 'w') as f:
        f.write(rfc)
    doc = {'meta': meta, 'boots': [{'n': int(b[0]), 'kernel': b[1], 'wall_s': float(b[2]),
                                    'variants': b[3].split(',') if len(b) > 3 else []}
                                   for b in boots],
           'native': [{'round': int(r[0]), 'kernel': r[1], 'wall_s': float(r[2]),
                       'variants': r[3].split(','), 'load_before': float(r[4]),
                       'load_after': float(r[5])} for r in native],
           'epitem_size': epitem, 'functions': funcs, 'server': srv, 'sweep': sweeps,
           'calibration': {f'{a}/{b}': c for (a, b), c in cal.items()}, 'cpu_gap': gaps,
           'wakeups': wrows, 'window': winrows, 'micro': mrows, 'perf_bench': prows,
           'problems': problems, 'verdict': 'fail' if problems else 'pass'}
    with open(os.path.join(rdir, 'bench.json'), 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')
    if not args.no_plot:
        plot(rdir, meta, srv['guest'], mrows, sweeps)
    sys.stdout.write(txt)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
