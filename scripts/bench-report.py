#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the logs of 'make bench' into tables, JSON and plots.

Reads, from the bench results directory (scripts/run-bench.sh):
  meta.tsv               key, value: what ran, where, how long
  boots.tsv              boot number, kernel, wall seconds
  raw/boot-NN-KERNEL.ktap  that boot's KTAP (guest/init, epoll.bench=): one
                         result line per entry script, and the JSON lines
                         of epoll_micro ({"test": ...}), epoll_wakeups
                         ({"bench": "epoll_wakeups", ...}),
                         epoll_oneshot_window ({"bench":
                         "epoll_oneshot_window", ...}) and epoll_server
                         ({"variant": ...}) indented in it
  epitem-KERNEL.txt      pahole -C epitem of that kernel's fs/eventpoll.o
Writes bench.txt, bench.json, bench.png and sweep.png (gnuplot, data and
scripts under plot/) there, and prints bench.txt.

Statistics: a boot contributes one value per figure (for epoll_micro, the
median of the boot's repetitions). Per kernel: the median over boots and
the spread, (max - min) / median. A ratio is a kernel's median over
base's; its noise is the larger half-spread of the two. The control
kernel moves code and changes nothing else: a cost of the patched kernel
counts as real only if its distance from 1 exceeds both its noise and
the control's distance from 1, and its floor ratio (the kernel's fastest
repetition over all boots against base's, which under -icount is
closest to the instructions of the path itself) lies beyond the
control's on the same side.

Exit status: 0; 1 when a log is missing or unusable, an entry script
failed, a patched boot lacks a variant of the server, a safe variant saw
a use-after-free or a wrong answer, or struct epitem differs in size.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

KERNELS = ('base', 'control', 'fixes', 'patched')
VARIANTS = ('disable', 'userspace', 'naive', 'gen', 'perthread', 'qsbr', 'uring',
            'uring-multishot')
# The settings of epoll_server_bench.sh's runs; the sweep varies them.
DEFAULTS = {'workers': 4, 'clients': 16, 'conn_requests': 16}
SERVER_METRICS = [
    # key, heading, format
    ('rps', 'req/s', '{:.0f}'),
    ('p50_us', 'p50 us', '{:.0f}'),
    ('p99_us', 'p99 us', '{:.0f}'),
    ('cpu_us_per_request', 'CPU us/req', '{:.1f}'),
    ('syscalls_per_request', 'syscalls/req', '{:.2f}'),
    ('retire_p50_us', 'retire p50 us', '{:.0f}'),
    ('retire_p99_us', 'retire p99 us', '{:.0f}'),
    ('held_mean_bytes', 'retired B mean', '{:.0f}'),
    ('held_peak_bytes', 'retired B peak', '{:.0f}'),
    ('state_mean_bytes', 'state B mean', '{:.0f}'),
    ('state_peak_bytes', 'state B peak', '{:.0f}'),
    ('idle_wakeups_per_s_per_worker', 'idle wakeups/s/w', '{:.1f}'),
    ('uaf', 'use-after-free', '{:.0f}'),
]
SWEEP_METRICS = ('rps', 'cpu_us_per_request', 'p99_us', 'held_mean_bytes')
JSON_LINE = re.compile(r'(\{"(?:test|variant|bench)".*\})\s*$')
# The guest's result line of one entry script (not indented).
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
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {'median': med, 'min': lo, 'max': hi,
            'spread_pct': 100.0 * (hi - lo) / med if med else 0.0,
            'boots': values}


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


def collect(rdir):
    """Per test and kernel the boots' medians, the server runs by variant
    and settings, the wakeup counts per kernel, and the problems."""
    boots = read_tsv(os.path.join(rdir, 'boots.tsv'))
    micro, server, wakeups, order, problems = {}, {}, {}, [], []
    for n, kernel, _ in boots:
        order.append(kernel)
        tag = f'boot-{int(n):02d}-{kernel}'
        lines, entries = read_ktap(os.path.join(rdir, 'raw', f'{tag}.ktap'))
        if not entries:
            problems.append(f'{tag}: the guest reported no benchmark')
        for e in entries:
            if not e['ok']:
                problems.append(f"{tag}: {e['entry']} failed {e['directive']}".rstrip())
        tests = [l for l in lines if 'test' in l]
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
        if kernel == 'patched':
            runs = [l for l in lines if 'variant' in l]
            got = {r['variant'] for r in runs if settings(r) == settings(DEFAULTS)}
            missing = set(VARIANTS) - got
            if missing:
                problems.append(f"{tag}: no epoll_server result for {', '.join(sorted(missing))}")
            for r in runs:
                server.setdefault((r['variant'], settings(r)), []).append(r)
    return boots, order, micro, server, wakeups, problems


def ratio_row(base, other):
    b, o = stats(base), stats(other)
    ratio = o['median'] / b['median']
    return {'kernel': o, 'ratio': ratio, 'delta_pct': 100.0 * (ratio - 1),
            'noise_pct': max(b['spread_pct'], o['spread_pct']) / 2}


def micro_rows(micro, kernels):
    rows = []
    for name, e in micro.items():
        if 'base' not in e:
            continue
        row = {'test': name, 'unit': e['unit'], 'base': stats(e['base'])}
        for k in kernels:
            if k != 'base' and k in e:
                row[k] = ratio_row(e['base'], e[k])
                row[k]['floor_ratio'] = min(e['reps:' + k]) / min(e['reps:base'])
        p, c = row.get('patched'), row.get('control')
        if p:
            # A cost is real when the medians show it beyond the noise and
            # the control's distance, and the floors beyond the control's.
            limit = max(p['noise_pct'], abs(c['delta_pct']) if c else 0.0)
            floor_limit = abs(c['floor_ratio'] - 1) if c else 0.0
            median_says = abs(p['delta_pct']) > limit
            floor_says = abs(p['floor_ratio'] - 1) > floor_limit and \
                (p['floor_ratio'] > 1) == (p['delta_pct'] > 0)
            if len(e['base']) < 2:
                p['verdict'] = 'no noise estimate (1 boot)'
            elif not (median_says and floor_says):
                p['verdict'] = 'within noise'
            else:
                p['verdict'] = 'slower' if p['delta_pct'] > 0 else 'faster'
        rows.append(row)
    return rows


def server_rows(server, key):
    rows = []
    for (variant, s), runs in sorted(server.items()):
        if s != key:
            continue
        metrics = {k: stats([float(r.get(k, 0)) for r in runs]) for k, _, _ in SERVER_METRICS}
        rows.append({'variant': variant, 'boots': len(runs), 'metrics': metrics,
                     'uaf_total': sum(int(r['uaf']) for r in runs),
                     'wrong_answers': sum(int(r['wrong']) for r in runs),
                     'disable_busy': sum(int(r.get('disable_busy', 0)) for r in runs),
                     'disable_ok': sum(int(r.get('disable_ok', 0)) for r in runs),
                     'futex_per_request': statistics.median(
                         float(r.get('sys_futex', 0)) / max(1, int(r['requests'])) for r in runs),
                     'conn_bytes': runs[0].get('conn_bytes')})
    rows.sort(key=lambda r: VARIANTS.index(r['variant']) if r['variant'] in VARIANTS else 99)
    return rows


def sweep_rows(server):
    """Medians per (variant, settings) for the settings other than the default."""
    out = []
    for (variant, s), runs in sorted(server.items()):
        if s == settings(DEFAULTS):
            continue
        out.append({'variant': variant, 'workers': s[0], 'clients': s[1], 'churn': s[2],
                    'runs': len(runs),
                    'uaf_total': sum(int(r['uaf']) for r in runs),
                    **{m: statistics.median(float(r.get(m, 0)) for r in runs)
                       for m in SWEEP_METRICS}})
    return out


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


def fmt_range(s, f):
    return f"{f.format(s['median'])} [{f.format(s['min'])}-{f.format(s['max'])}]"


def table(out, rows, metrics, width=22):
    for i in range(0, len(metrics), 4):
        chunk = metrics[i:i + 4]
        out.append(f"{'variant':<16}" + ''.join(f'{h:>{width}}' for _, h, _ in chunk))
        for r in rows:
            out.append(f"{r['variant']:<16}" + ''.join(
                f"{fmt_range(r['metrics'][k], f):>{width}}" for k, _, f in chunk))


def text(meta, order, kernels, srows, sweep, wrows, winrows, mrows, epitem, funcs):
    out = []
    n_p = order.count('patched')
    out.append(f"make bench, {meta.get('date', '?')}: {meta.get('boots', '?')} boots of each "
               f"kernel ({', '.join(kernels)}), in the order "
               f"{' '.join(k[0].upper() for k in order)}")
    out.append(f"guest: QEMU {meta.get('qemu', '?')}, TCG, {meta.get('clock', '?')}, "
               f"{meta.get('smp', '?')} vCPUs; kernels: {meta.get('config', '?')}")
    out.append(f"host: {meta.get('host', '?')}; epoll_micro scale {meta.get('scale', '?')}")
    out.append('Under TCG absolute numbers mean little: compare within this run only '
               '(ratios, and variants against each other).')
    out.append('')
    out.append(f'Part 1: epoll_server on the patched kernel, median [min-max] of {n_p} boots '
               f"({DEFAULTS['workers']} workers, {DEFAULTS['clients']} connections, "
               f"retired after {DEFAULTS['conn_requests']} requests, 20 ms idle or 200 ms age)")
    if srows:
        table(out, srows, SERVER_METRICS)
        for r in srows:
            extra = ''
            if r['variant'] == 'disable':
                extra = f"; DISABLE answered 0 {r['disable_ok']}x, EBUSY {r['disable_busy']}x"
            out.append(f"  {r['variant']}: use-after-free {r['uaf_total']}, wrong answers "
                       f"{r['wrong_answers']}, futex calls/request {r['futex_per_request']:.3f}"
                       f"{extra}")
    else:
        out.append('  (no results)')
    out.append('')
    out.append('Part 2: the sweep (patched kernel, median of the boots): connections x '
               'churn (retired after N requests), then workers')
    if sweep:
        out.append(f"{'variant':<16}{'workers':>8}{'conns':>7}{'churn':>7}{'req/s':>10}"
                   f"{'CPU us/req':>12}{'p99 us':>10}{'retired B':>11}{'uaf':>6}")
        for r in sweep:
            out.append(f"{r['variant']:<16}{r['workers']:>8}{r['clients']:>7}{r['churn']:>7}"
                       f"{r['rps']:>10.0f}{r['cpu_us_per_request']:>12.1f}{r['p99_us']:>10.0f}"
                       f"{r['held_mean_bytes']:>11.0f}{r['uaf_total']:>6}")
    else:
        out.append('  (no results)')
    out.append('')
    out.append('Part 3: spurious wakeups of epoll_wait() sleepers per 1000 one-shot '
               'deliveries (bench/epoll_wakeups), median [min-max] over boots')
    for r in wrows:
        out.append(f"  {r['kernel']:<8} spurious {fmt_range(r['spurious_per_1000'], '{:.1f}'):>24}"
                   f"   all wakeups {fmt_range(r['wakeups_per_1000'], '{:.1f}'):>26}"
                   f"   deliveries {r['deliveries']:.0f}")
    out.append('')
    out.append('Part 3b: the same second wakeup made to land in the window every time '
               '(bench/epoll_oneshot_window, userfaultfd): sleepers woken per round, '
               'of whom 1 is needed, median [min-max] over boots')
    for r in winrows:
        out.append(f"  {r['kernel']:<8} woken {fmt_range(r['woken_per_round'], '{:.2f}'):>20}"
                   f"   rounds {r['rounds']}, {r['sleepers']} sleepers")
    out.append('')
    out.append("Part 4: epoll microbenchmarks, ratio = kernel / base of the medians over boots "
               "(times: > 1 is slower), noise = half the larger spread;")
    out.append("the patched kernel's cost is real only beyond its noise and beyond the layout "
               "control's distance from 1, in the medians and in the floors (Part 4b)")
    head = f"{'test':<15}{'unit':<12}{'base':>11}{'spread':>8}"
    for k in kernels[1:]:
        head += f"{k:>10}{'noise':>7}"
    out.append(head + '  patched verdict')
    for r in mrows:
        line = (f"{r['test']:<15}{r['unit']:<12}{r['base']['median']:>11.1f}"
                f"{r['base']['spread_pct']:>7.1f}%")
        for k in kernels[1:]:
            if k in r:
                line += f"{r[k]['ratio']:>10.3f}{r[k]['noise_pct']:>6.1f}%"
            else:
                line += f"{'-':>10}{'-':>7}"
        out.append(line + f"  {r.get('patched', {}).get('verdict', '-')}")
    out.append('')
    out.append("Part 4b: the same, ratio of the fastest repetitions over all boots: under "
               "-icount time is executed instructions,")
    out.append("and what a repetition shares with other work (RCU callbacks, the timer) only "
               "adds to it")
    out.append(f"{'test':<15}" + ''.join(f'{k:>10}' for k in kernels[1:]))
    for r in mrows:
        out.append(f"{r['test']:<15}" + ''.join(
            f"{r[k]['floor_ratio']:>10.3f}" if k in r else f"{'-':>10}" for k in kernels[1:]))
    out.append('')
    out.append("Where the code grew: epoll's functions whose size differs from base "
               "(bytes of code, nm -S; inlined code counts in its caller)")
    changed = {f: v for f, v in funcs.items() if len(set(v.get(k) for k in kernels)) > 1}
    out.append(f"{'function':<32}" + ''.join(f'{k:>10}' for k in kernels))
    for f, v in sorted(changed.items()):
        out.append(f"{f:<32}" + ''.join(f"{v[k] if k in v else '-':>10}" for k in kernels))
    if not changed:
        out.append('  (none)')
    out.append('')
    sizes = ', '.join(f'{k} {epitem.get(k)} B' for k in kernels)
    same = 'equal' if len({epitem.get(k) for k in kernels}) == 1 else 'DIFFERENT'
    out.append(f"sizeof(struct epitem): {sizes} ({same}; pahole on fs/eventpoll.o with -g)")
    if meta.get('wall'):
        out.append(f"make bench took {meta['wall']} (builds {meta.get('build_time', '?')}, "
                   f"boots {meta.get('boot_time', '?')})")
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
set title "Part 4: kernel / base, median of {nb} boots each (error bar: the noise)"
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
set terminal pngcairo size 1500,560 font "DejaVu Sans,10" noenhanced
set output "{png}"
set multiplot layout 1,3 title "epoll_server sweep on the patched kernel (median of the boots; TCG: compare variants only)" font ",12"
set grid lc rgb "#dddddd"
set key outside bottom center horizontal
set xtics ("8 conns, churn 4" 0, "8 conns, churn 64" 1, "64 conns, churn 4" 2, "64 conns, churn 64" 3) rotate by -20
set title "requests/s"
plot for [v in "{variants}"] "{data}" using 1:(strcol(2) eq v ? $3 : 1/0) with linespoints title v
set title "CPU us per request"
plot for [v in "{variants}"] "{data}" using 1:(strcol(2) eq v ? $4 : 1/0) with linespoints title v
set title "retired, not yet freed: mean B"
plot for [v in "{variants}"] "{data}" using 1:(strcol(2) eq v ? $5 : 1/0) with linespoints title v
unset multiplot
'''


def plot(rdir, meta, srows, mrows, sweep):
    pdir = os.path.join(rdir, 'plot')
    os.makedirs(pdir, exist_ok=True)
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
                n = x['noise_pct'] / 100
                cells.append(f"{x['ratio']:.4f} {x['ratio'] - n:.4f} {x['ratio'] + n:.4f}")
                lo, hi = min(lo, x['ratio'] - n), max(hi, x['ratio'] + n)
            f.write(f"{r['test']} {' '.join(cells)}\n")
    pad = max(0.02, (hi - lo) * 0.15)
    server = os.path.join(pdir, 'server.dat')
    keys = ['rps', 'cpu_us_per_request', 'held_mean_bytes', 'idle_wakeups_per_s_per_worker']
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
              f"(TCG, {meta.get('clock', '')}; compare within the run only)",
        titles='"Part 1: requests/s (higher is better)", '
               '"CPU us per request (lower is better)", '
               '"retired, not yet freed: mean B", '
               '"idle wakeups per s and worker"')
    with open(os.path.join(pdir, 'bench.gp'), 'w') as f:
        f.write(script)
    subprocess.run(['gnuplot', os.path.join(pdir, 'bench.gp')], check=True)
    grid = [r for r in sweep if r['workers'] == DEFAULTS['workers']]
    if grid:
        data = os.path.join(pdir, 'sweep.dat')
        pos = {(8, 4): 0, (8, 64): 1, (64, 4): 2, (64, 64): 3}
        with open(data, 'w') as f:
            f.write('# x variant rps cpu_us_per_request held_mean_bytes\n')
            for r in sorted(grid, key=lambda r: (r['variant'], pos.get((r['clients'], r['churn']), 9))):
                x = pos.get((r['clients'], r['churn']))
                if x is not None:
                    f.write(f"{x} {r['variant']} {r['rps']:.1f} {r['cpu_us_per_request']:.2f} "
                            f"{r['held_mean_bytes']:.0f}\n")
        with open(os.path.join(pdir, 'sweep.gp'), 'w') as f:
            f.write(SWEEP_GNUPLOT.format(png=os.path.join(rdir, 'sweep.png'), data=data,
                                         variants=' '.join(sorted({r['variant'] for r in grid}))))
        subprocess.run(['gnuplot', os.path.join(pdir, 'sweep.gp')], check=True)
    return png


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
    boots, order, micro, server, wakeups, problems = collect(rdir)
    kernels = [k for k in KERNELS if k in order]
    mrows = micro_rows(micro, kernels)
    srows = server_rows(server, settings(DEFAULTS))
    sweep = sweep_rows(server)
    wrows = wakeup_rows(wakeups, kernels)
    winrows = window_rows(wakeups, kernels)
    epitem = {k: epitem_size(os.path.join(rdir, f'epitem-{k}.txt')) for k in kernels}
    problems += [f"epoll_server --retire={r['variant']}: {r['uaf_total']} use-after-free, "
                 f"{r['wrong_answers']} wrong answers"
                 for r in srows if r['variant'] != 'naive'
                 and (r['uaf_total'] or r['wrong_answers'])]
    problems += [f"epoll_server sweep --retire={r['variant']}: {r['uaf_total']} use-after-free"
                 for r in sweep if r['variant'] != 'naive' and r['uaf_total']]
    problems += [f"epoll_wakeups on {r['kernel']}: a run failed" for r in wrows if not r['ok']]
    problems += [f"epoll_oneshot_window on {r['kernel']}: a run failed"
                 for r in winrows if not r['ok']]
    if None in epitem.values() or len(set(epitem.values())) != 1:
        problems.append(f"sizeof(struct epitem): {epitem}")
    funcs = function_sizes(rdir, kernels)
    txt = text(meta, order, kernels, srows, sweep, wrows, winrows, mrows, epitem, funcs)
    txt += ''.join(f'FAIL: {p}\n' for p in problems)
    txt += (f"verdict: {'FAIL' if problems else 'PASS'} (every boot ran, the safe variants "
            f"are safe, struct epitem kept its size; the figures are for a person to read)\n")
    with open(os.path.join(rdir, 'bench.txt'), 'w') as f:
        f.write(txt)
    doc = {'meta': meta, 'order': order,
           'boots': [{'n': int(n), 'kernel': k, 'wall_s': float(w)} for n, k, w in boots],
           'epitem_size': epitem, 'functions': funcs, 'server': srows, 'sweep': sweep, 'wakeups': wrows,
           'window': winrows,
           'micro': mrows, 'problems': problems, 'verdict': 'fail' if problems else 'pass'}
    with open(os.path.join(rdir, 'bench.json'), 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')
    if not args.no_plot and mrows:
        plot(rdir, meta, srows, mrows, sweep)
    sys.stdout.write(txt)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
