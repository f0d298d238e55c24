#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Where the series adds instructions to epoll's paths, kernel by kernel.

Usage: bench-insns.py [--out JSON] NAME=KOUT ...   (the first is the reference)

Each KOUT is a kernel of scripts/run-bench.sh ($OUT_DIR/build/bench-NAME):
KOUT/build/qemu/vmlinux, the kernel as booted; KOUT/epitem-probe.o,
fs/eventpoll.c compiled once more with kbuild's command line plus -g (GCC's
-g does not change code: checked here, function by function, against
vmlinux); KOUT/linux/, its source, which the line table names.

Prints, and writes as JSON with --out:
  1. per function of fs/eventpoll.c in vmlinux (what the compiler did not
     inline): instructions in each kernel, for those that differ and for
     the paths the benchmarks time (insert, modify, remove, the one-shot
     re-arm, the delivery);
  2. per source function, inlined copies included (from the -g object's
     line table, objdump --inlines): ep_insert, ep_modify, ep_remove and
     the rest, instructions in each kernel;
  3. per source line whose instruction count changed against the
     reference (lines matched by their text within their function, since
     line numbers move): the count in each kernel and the line itself:
     what the added instructions are for.

Exit status: 0; 1 when an input is missing, objdump fails, or the -g
object's code differs from vmlinux's for a function (then its line
attribution would not hold).
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

# Functions the benchmarks' paths run through (epoll_micro's ctl_add,
# ctl_mod, ctl_del, wait_N, oneshot_rearm), as fs/eventpoll.c of 7.3 names
# them; reported whether or not they changed.
PATH_SYMBOLS = ('__x64_sys_epoll_ctl', 'do_epoll_ctl', 'do_epoll_ctl_file', 'ep_ctl_lock',
                '__x64_sys_epoll_wait', 'do_epoll_wait', 'ep_poll', 'ep_try_send_events',
                'ep_send_events', 'ep_deliver_event', 'ep_done_scan', 'ep_start_scan',
                'ep_item_poll', 'ep_poll_callback', 'ep_insert', 'ep_modify', 'ep_remove',
                'ep_disable', 'io_epoll_ctl_prep')
SOURCE_FUNCS = ('do_epoll_ctl', 'do_epoll_ctl_file', 'ep_insert', 'ep_register_epitem',
                'ep_modify', 'ep_disable', 'ep_remove', 'ep_remove_file', 'ep_remove_epi',
                'ep_poll', 'ep_try_send_events', 'ep_send_events', 'ep_deliver_event',
                'ep_start_scan', 'ep_done_scan', 'ep_item_poll', 'ep_poll_callback',
                'do_epoll_wait')

SYM = re.compile(r'^[0-9a-f]+ <([^>]+)>:$')
FUNC = re.compile(r'^([A-Za-z_][\w.]*)\(\):$')
INLINED = re.compile(r'^inlined by (\S+):(\d+)(?: \(discriminator \d+\))? \(([^)]+)\)$')
SRCLINE = re.compile(r'^(/\S+|\S+\.[ch]):(\d+)(?: \(discriminator \d+\))?$')
INSN = re.compile(r'^\s*([0-9a-f]+):\t(.*)$')


def objdump(args):
    try:
        return subprocess.run(['objdump'] + args, check=True, capture_output=True,
                              text=True).stdout
    except subprocess.CalledProcessError as e:
        sys.exit(f'bench-insns: objdump {" ".join(args)}: {e.stderr.strip()}')


def mnemonic(insn):
    """The instruction without addresses: comparable across builds."""
    insn = re.sub(r'#.*', '', insn).strip()
    insn = re.sub(r'\b[0-9a-f]+ <[^>]+>', 'ADDR', insn)
    insn = re.sub(r'0x[0-9a-f]+\(%rip\)', 'ADDR(%rip)', insn)
    return re.sub(r'\s+', ' ', insn)


def parse_debug_object(path):
    """{symbol: [insn]} of the -g object, each insn a dict: text, func
    (innermost source function), line, chain (outer functions)."""
    out, sym = {}, None
    func, line, chain = None, None, []
    header, header_inl = False, []
    for raw in objdump(['-d', '-l', '--inlines', '-w', '--no-show-raw-insn', path]).splitlines():
        m = SYM.match(raw)
        if m:
            sym = m.group(1)
            out[sym] = []
            continue
        m = INSN.match(raw)
        if m:
            if header:
                chain = header_inl
                header, header_inl = False, []
            if sym is not None and m.group(2).strip() and m.group(2).strip() != '(bad)':
                out[sym].append({'text': m.group(2).strip(), 'func': func, 'line': line,
                                 'chain': chain})
            continue
        m = FUNC.match(raw)
        if m:
            func, header = m.group(1), True
            continue
        m = INLINED.match(raw)
        if m:
            header = True
            header_inl.append(m.group(3))
            continue
        m = SRCLINE.match(raw)
        if m:
            line, header = (m.group(1), int(m.group(2))), True
    return out


def vmlinux_counts(vmlinux, symbols):
    """{symbol: [mnemonic]} for @symbols in @vmlinux: one objdump per run
    of neighbouring symbols (nm gives where each is)."""
    where = {}
    nm = subprocess.run(['nm', '-S', vmlinux], check=True, capture_output=True, text=True)
    for line in nm.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] in symbols and f[2] in 'tT':
            where[f[3]] = (int(f[0], 16), int(f[1], 16))
    runs = []
    for addr, size in sorted(where.values()):
        if runs and addr - runs[-1][1] < 4096:
            runs[-1][1] = max(runs[-1][1], addr + size)
        else:
            runs.append([addr, addr + size])
    out, sym = {}, None
    for lo, hi in runs:
        for raw in objdump(['-d', '-w', '--no-show-raw-insn', f'--start-address={lo:#x}',
                            f'--stop-address={hi:#x}', vmlinux]).splitlines():
            m = SYM.match(raw)
            if m:
                sym = m.group(1)
                out.setdefault(sym, [])
                continue
            m = INSN.match(raw)
            if m and sym and m.group(2).strip():
                out[sym].append(mnemonic(m.group(2)))
    return {s: v for s, v in out.items() if s in where}


class Sources:
    """Lines of the source files the line table names, read on demand;
    relative names are relative to the kernel's build directory."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.files = {}

    def line(self, path, n):
        full = os.path.normpath(os.path.join(self.build_dir, path))
        if full not in self.files:
            try:
                with open(full, errors='replace') as f:
                    self.files[full] = f.read().split('\n')
            except OSError:
                self.files[full] = []
        lines = self.files[full]
        return lines[n - 1].strip() if 0 < n <= len(lines) else '?'


def kernel_data(name, kout):
    obj = os.path.join(kout, 'epitem-probe.o')
    vmlinux = os.path.join(kout, 'build', 'qemu', 'vmlinux')
    for p in (obj, vmlinux):
        if not os.path.isfile(p):
            sys.exit(f'bench-insns: no {p}: run scripts/run-bench.sh to build the {name} kernel')
    dbg = parse_debug_object(obj)
    src = Sources(os.path.join(kout, 'build', 'qemu'))
    syms = sorted(s for s, insns in dbg.items() if insns)
    vm = vmlinux_counts(vmlinux, syms)
    problems = []
    for s in syms:
        if s not in vm:
            continue    # discarded by the linker (unused), or renamed
        if [mnemonic(i['text']) for i in dbg[s]] != vm[s]:
            # Relocated calls and jumps aside, the code must be the same.
            a = [re.sub(r'ADDR.*', '', mnemonic(i['text'])) for i in dbg[s]]
            b = [re.sub(r'ADDR.*', '', x) for x in vm[s]]
            if [x.split(' ')[0] for x in a] != [x.split(' ')[0] for x in b]:
                problems.append(f'{name}: {s}: the -g object has {len(a)} instructions, '
                                f'vmlinux {len(b)}, or other opcodes')
    per_func, per_line, copies = collections.Counter(), collections.Counter(), {}
    line_text = {}
    for s, insns in dbg.items():
        for i in insns:
            stack = [i['func']] + list(i['chain'])
            for f in set(stack):
                per_func[f] += 1
                copies.setdefault(f, set()).add(s)
            if i['line'] and i['func']:
                path, ln = i['line']
                key = (s, i['func'], f'{os.path.basename(path)}: {src.line(path, ln)}')
                per_line[key] += 1
                line_text.setdefault(key, ln)
    return {'symbols': {s: len(v) for s, v in vm.items()},
            'per_func': dict(per_func), 'copies': {f: len(v) for f, v in copies.items()},
            'per_line': per_line, 'line_no': line_text, 'problems': problems}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', help='write the tables as JSON here too')
    ap.add_argument('kernels', nargs='+', metavar='NAME=KOUT')
    args = ap.parse_args()
    kernels = []
    for k in args.kernels:
        if '=' not in k:
            ap.error(f'{k}: want NAME=KOUT')
        kernels.append(tuple(k.split('=', 1)))
    names = [n for n, _ in kernels]
    data = {n: kernel_data(n, kout) for n, kout in kernels}
    ref = names[0]
    out = []
    w = 10

    out.append('Instructions of fs/eventpoll.c, static, per kernel (objdump of each '
               'vmlinux; inlined code counts in its caller)')
    out.append(f"{'function (vmlinux symbol)':<30}" + ''.join(f'{n:>{w}}' for n in names))
    syms = sorted(set().union(*(d['symbols'] for d in data.values())))
    for s in syms:
        vals = [data[n]['symbols'].get(s) for n in names]
        if len(set(vals)) > 1 or s in PATH_SYMBOLS:
            out.append(f'{s:<30}' + ''.join(f"{v if v is not None else '-':>{w}}" for v in vals))
    out.append('')
    out.append('The same per source function, inlined copies included (line table of the '
               '-g object; copies: how many functions hold one)')
    out.append(f"{'source function':<30}" + ''.join(f'{n:>{w}}' for n in names) + '  copies')
    for f in SOURCE_FUNCS:
        vals = [data[n]['per_func'].get(f) for n in names]
        if all(v is None for v in vals):
            continue
        cps = '/'.join(str(data[n]['copies'].get(f, 0)) for n in names)
        out.append(f'{f:<30}' + ''.join(f"{v if v is not None else '-':>{w}}" for v in vals)
                   + f'  {cps}')
    out.append('')
    out.append(f'Source lines whose instruction count differs from {ref}, by the function '
               'that holds them (vmlinux symbol) and the source function they come from')
    keys = set().union(*(d['per_line'] for d in data.values()))
    changed = []
    for key in keys:
        vals = [data[n]['per_line'].get(key, 0) for n in names]
        if len(set(vals)) > 1:
            changed.append((key, vals))

    def line_no(key):
        return data[names[-1]]['line_no'].get(key) or data[ref]['line_no'].get(key) or 0

    changed.sort(key=lambda kv: (kv[0][0], line_no(kv[0])))
    sym = None
    for (symbol, func, text), vals in changed:
        if symbol != sym:
            sym = symbol
            tot = [sum(v for (k, v) in data[n]['per_line'].items() if k[0] == symbol)
                   for n in names]
            out.append(f'{symbol}: ' + ', '.join(f'{n} {t}' for n, t in zip(names, tot)))
            out.append(f"  {'from':<20}" + ''.join(f'{n:>9}' for n in names) + '  line')
        out.append(f'  {func[:19]:<20}' + ''.join(f'{v:>9}' for v in vals) +
                   f'  {text[:78]} ({line_no((symbol, func, text))})')
    if not changed:
        out.append('  (none)')
    problems = [p for n in names for p in data[n]['problems']]
    out += [f'FAIL: {p}' for p in problems]
    print('\n'.join(out))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump({'kernels': names,
                       'symbols': {s: {n: data[n]['symbols'].get(s) for n in names} for s in syms},
                       'source_functions': {f: {n: data[n]['per_func'].get(f) for n in names}
                                            for f in SOURCE_FUNCS},
                       'lines': [{'symbol': k[0], 'function': k[1], 'text': k[2],
                                  'line': line_no(k), 'counts': dict(zip(names, v))}
                                 for k, v in changed],
                       'problems': problems}, f, indent=1)
            f.write('\n')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
