#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the logs of 'make bench' into tables, JSON and a plot.

Reads, from the bench results directory (scripts/run-bench.sh):
  meta.tsv               key, value: what ran, where, how long
  boots.tsv              boot number, kernel (base or patched), wall seconds
  raw/boot-NN-KERNEL.ktap  that boot's KTAP (guest/init, epoll.bench=): one
                         result line per entry script, and the JSON lines
                         of epoll_micro ({"test": ...}) and epoll_server
                         ({"variant": ...}) indented in it
  epitem-KERNEL.txt      pahole -C epitem of that kernel's fs/eventpoll.o
Writes bench.txt (the two tables), bench.json, bench.png (gnuplot, with
its data files under plot/) there, and prints bench.txt.

Part 2 statistics: each boot contributes one value per test, the median
of that boot's repetitions. Per kernel: the median over boots and the
spread, (max - min) / median. The ratio is patched median / base median;
the noise is the larger half-spread of the two kernels, and a ratio whose
distance from 1 is within the noise, with overlapping ranges, is "within
noise". Exit status: 0, 1 when a log is missing or unusable, an entry
script failed, a patched boot lacks one of the server's variants, a safe
variant saw a use-after-free or a wrong answer, or the two kernels'
struct epitem differ in size.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

SERVER_METRICS = [
    # key, heading, format
    ('rps', 'req/s', '{:.0f}'),
    ('p50_us', 'p50 us', '{:.1f}'),
    ('p99_us', 'p99 us', '{:.1f}'),
    ('held_mean_bytes', 'held mean B', '{:.0f}'),
    ('held_peak_bytes', 'held peak B', '{:.0f}'),
    ('uaf', 'use-after-free', '{:.0f}'),
    ('server_cpu_s', 'server CPU s', '{:.2f}'),
    ('cpu_us_per_request', 'CPU us/req', '{:.1f}'),
]
VARIANTS = ('disable', 'userspace', 'naive')
COLORS = {'disable': 0x2ca02c, 'userspace': 0x1f77b4, 'naive': 0xd62728}
JSON_LINE = re.compile(r'(\{"(?:test|variant)".*\})\s*$')
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


def collect(rdir):
    """Per test the per-boot medians of each kernel, per server variant its
    runs, and the problems found on the way."""
    boots = read_tsv(os.path.join(rdir, 'boots.tsv'))
    micro, server, order, problems = {}, {}, [], []
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
            e = micro.setdefault(t['test'], {'unit': t['unit'], 'base': [], 'patched': []})
            e[kernel].append(t['median'])
        if kernel == 'patched':
            variants = [l for l in lines if 'variant' in l]
            missing = set(VARIANTS) - {v['variant'] for v in variants}
            if missing:
                problems.append(f"{tag}: no epoll_server result for "
                                f"{', '.join(sorted(missing))}")
            for v in variants:
                server.setdefault(v['variant'], []).append(v)
    return boots, order, micro, server, problems


def micro_rows(micro):
    rows = []
    for name, e in micro.items():
        if not e['base'] or not e['patched']:
            continue
        b, p = stats(e['base']), stats(e['patched'])
        ratio = p['median'] / b['median']
        noise = max(b['spread_pct'], p['spread_pct']) / 2
        delta = 100.0 * (ratio - 1)
        overlap = p['min'] <= b['max'] and b['min'] <= p['max']
        if min(len(e['base']), len(e['patched'])) < 2:
            verdict = 'no noise estimate (1 boot)'
        elif abs(delta) <= noise and overlap:
            verdict = 'within noise'
        else:
            verdict = 'slower' if delta > 0 else 'faster'
        rows.append({'test': name, 'unit': e['unit'], 'base': b, 'patched': p,
                     'ratio': ratio, 'delta_pct': delta, 'noise_pct': noise,
                     'verdict': verdict})
    return rows


def server_rows(server):
    rows = []
    for v in VARIANTS:
        runs = server.get(v)
        if not runs:
            continue
        metrics = {k: stats([float(r[k]) for r in runs]) for k, _, _ in SERVER_METRICS}
        rows.append({'variant': v, 'boots': len(runs), 'metrics': metrics,
                     'uaf_total': sum(int(r['uaf']) for r in runs),
                     'disable_busy': sum(int(r['disable_busy']) for r in runs),
                     'disable_ok': sum(int(r['disable_ok']) for r in runs),
                     'wrong_answers': sum(int(r['wrong']) for r in runs),
                     'conn_bytes': runs[0]['conn_bytes'],
                     'workers': runs[0]['workers'], 'clients': runs[0]['clients']})
    return rows


def fmt_range(s, f):
    return f"{f.format(s['median'])} [{f.format(s['min'])}-{f.format(s['max'])}]"


def text(meta, order, srows, mrows, epitem):
    out = []
    n_p = order.count('patched')
    out.append(f"make bench, {meta.get('date', '?')}: {meta.get('boots', '?')} boots of each "
               f"kernel, interleaved {' '.join(k[0].upper() for k in order)} "
               f"(B = base, P = patched)")
    out.append(f"guest: QEMU {meta.get('qemu', '?')}, TCG, {meta.get('clock', '?')}, "
               f"{meta.get('smp', '?')} vCPUs; kernels: {meta.get('config', '?')}")
    out.append(f"host: {meta.get('host', '?')}; epoll_micro scale {meta.get('scale', '?')}")
    out.append('Under TCG absolute numbers mean little: compare within this run only '
               '(ratios, and variants against each other).')
    out.append('')
    out.append(f'Part 1: epoll_server on the patched kernel, median [min-max] of {n_p} boots')
    if srows:
        r0 = srows[0]
        out.append(f"({r0['workers']} workers, {r0['clients']} clients, "
                   f"{r0['conn_bytes']} B of state a connection)")
        head = f"{'variant':<10}" + ''.join(f'{h:>24}' for _, h, _ in SERVER_METRICS[:4])
        out.append(head)
        for r in srows:
            out.append(f"{r['variant']:<10}" + ''.join(
                f"{fmt_range(r['metrics'][k], f):>24}" for k, _, f in SERVER_METRICS[:4]))
        head = f"{'variant':<10}" + ''.join(f'{h:>24}' for _, h, _ in SERVER_METRICS[4:])
        out.append(head)
        for r in srows:
            out.append(f"{r['variant']:<10}" + ''.join(
                f"{fmt_range(r['metrics'][k], f):>24}" for k, _, f in SERVER_METRICS[4:]))
        for r in srows:
            extra = ''
            if r['variant'] == 'disable':
                extra = f", DISABLE answered 0 {r['disable_ok']}x and EBUSY {r['disable_busy']}x"
            out.append(f"  {r['variant']}: use-after-free in all boots: {r['uaf_total']}, "
                       f"wrong answers: {r['wrong_answers']}{extra}")
    else:
        out.append('  (no results)')
    out.append('')
    out.append("Part 2: epoll microbenchmarks, median over boots of each boot's median; "
               "spread = (max-min)/median over boots;")
    out.append("ratio = patched/base (all are times: > 1 is slower); noise = half the larger "
               "spread; 'within noise' = |ratio-1| <= noise and the ranges overlap")
    out.append(f"{'test':<15}{'unit':<15}{'base':>12}{'spread':>8}{'patched':>12}"
               f"{'spread':>8}{'ratio':>8}{'noise':>8}  verdict")
    for r in mrows:
        out.append(f"{r['test']:<15}{r['unit']:<15}{r['base']['median']:>12.1f}"
                   f"{r['base']['spread_pct']:>7.1f}%{r['patched']['median']:>12.1f}"
                   f"{r['patched']['spread_pct']:>7.1f}%{r['ratio']:>8.3f}"
                   f"{r['noise_pct']:>7.1f}%  {r['verdict']}")
    out.append('')
    b, p = epitem.get('base'), epitem.get('patched')
    same = 'equal' if b is not None and b == p else 'DIFFERENT'
    out.append(f"sizeof(struct epitem): base {b} B, patched {p} B ({same}; pahole on "
               f"fs/eventpoll.o compiled with -g)")
    if meta.get('wall'):
        out.append(f"make bench took {meta['wall']} (builds {meta.get('build_time', '?')}, "
                   f"boots {meta.get('boot_time', '?')})")
    return '\n'.join(out) + '\n'


GNUPLOT = r'''
set terminal pngcairo size 1400,760 font "DejaVu Sans,10" noenhanced
set output "{png}"
set multiplot title "{title}" font ",13"
set style fill solid 0.6 border -1
set grid ytics lc rgb "#dddddd"
unset key

set origin 0,0
set size 0.52,0.95
set title "Cost for everyone else: patched / base, median of {nb} boots each\n(error bar: the noise, half the larger of the two kernels' spreads over boots)"
set ylabel "time ratio (1 = no change; < 1 = patched faster)"
set xtics rotate by -40 nomirror
set yrange [{ylo}:{yhi}]
set xrange [-0.7:{nx}-0.3]
plot 1 lc rgb "#444444" dt 2, \
     "{micro}" using 0:2:3:4:xtic(1) with yerrorbars pt 7 ps 1.3 lc rgb "#1f77b4"

set xtics norotate
set boxwidth 0.6
set xrange [-0.6:2.6]
set yrange [0:*]
unset ylabel
array T[4] = [{titles}]
do for [i=0:3] {{
    set origin 0.52 + (i % 2) * 0.24, 0.48 - int(i / 2) * 0.47
    set size 0.24, 0.47
    set title T[i + 1]
    plot "{server}" using 0:(column(2 + 3 * i)):(column(14)):xtic(1) with boxes lc rgb variable, \
         "" using 0:(column(2 + 3 * i)):(column(3 + 3 * i)):(column(4 + 3 * i)) with yerrorbars pt 0 lc rgb "black"
}}
unset multiplot
'''


def plot(rdir, meta, srows, mrows):
    pdir = os.path.join(rdir, 'plot')
    os.makedirs(pdir, exist_ok=True)
    micro = os.path.join(pdir, 'micro.dat')
    lo, hi = 1.0, 1.0
    with open(micro, 'w') as f:
        f.write('# test ratio low high\n')
        for r in mrows:
            n = r['noise_pct'] / 100
            f.write(f"{r['test']} {r['ratio']:.4f} {r['ratio'] - n:.4f} {r['ratio'] + n:.4f}\n")
            lo, hi = min(lo, r['ratio'] - n), max(hi, r['ratio'] + n)
    pad = max(0.02, (hi - lo) * 0.15)
    server = os.path.join(pdir, 'server.dat')
    keys = ['rps', 'p99_us', 'held_mean_bytes', 'uaf']
    with open(server, 'w') as f:
        f.write('# variant ' + ' '.join(f'{k} {k}_min {k}_max' for k in keys) + ' color\n')
        for i, r in enumerate(srows):
            m = r['metrics']
            f.write(r['variant'] + ' ' + ' '.join(
                f"{m[k]['median']:.3f} {m[k]['min']:.3f} {m[k]['max']:.3f}" for k in keys) +
                f' {COLORS[r["variant"]]}\n')
    png = os.path.join(rdir, 'bench.png')
    script = GNUPLOT.format(
        png=png, micro=micro, server=server, nx=len(mrows), nb=meta.get('boots', '?'),
        ylo=f'{lo - pad:.3f}', yhi=f'{hi + pad:.3f}',
        title=f"EPOLL_CTL_DISABLE: what it costs and what it buys "
              f"(TCG, {meta.get('clock', '')}; compare within the run only)",
        titles='"Part 1: requests/s (higher is better)", '
               '"p99 latency, us (lower is better)", '
               '"state retired, not yet freed: mean B", '
               '"use-after-free detected (0 = safe)"')
    with open(os.path.join(pdir, 'bench.gp'), 'w') as f:
        f.write(script)
    subprocess.run(['gnuplot', os.path.join(pdir, 'bench.gp')], check=True)
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
    boots, order, micro, server, problems = collect(rdir)
    mrows, srows = micro_rows(micro), server_rows(server)
    epitem = {k: epitem_size(os.path.join(rdir, f'epitem-{k}.txt'))
              for k in ('base', 'patched')}
    problems += [f"epoll_server --retire={r['variant']}: {r['uaf_total']} use-after-free, "
                 f"{r['wrong_answers']} wrong answers"
                 for r in srows if r['variant'] != 'naive'
                 and (r['uaf_total'] or r['wrong_answers'])]
    if epitem['base'] is None or epitem['base'] != epitem['patched']:
        problems.append(f"sizeof(struct epitem): base {epitem['base']}, "
                        f"patched {epitem['patched']}")
    txt = text(meta, order, srows, mrows, epitem)
    txt += ''.join(f'FAIL: {p}\n' for p in problems)
    txt += (f"verdict: {'FAIL' if problems else 'PASS'} (every boot ran, the safe variants "
            f"are safe, struct epitem kept its size; the ratios are for a person to read)\n")
    with open(os.path.join(rdir, 'bench.txt'), 'w') as f:
        f.write(txt)
    doc = {'meta': meta, 'order': order,
           'boots': [{'n': int(n), 'kernel': k, 'wall_s': float(w)} for n, k, w in boots],
           'epitem_size': epitem, 'server': srows, 'micro': mrows,
           'problems': problems, 'verdict': 'fail' if problems else 'pass'}
    with open(os.path.join(rdir, 'bench.json'), 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')
    if not args.no_plot and mrows:
        plot(rdir, meta, srows, mrows)
    sys.stdout.write(txt)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
