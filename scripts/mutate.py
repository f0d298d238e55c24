#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Generate the mutants of the code the series proves, mechanically.

Reads fs/eventpoll.c, io_uring/epoll.c and include/linux/eventpoll.h of a
patched tree, applies the operators below to the bodies of the functions
in TARGETS, and writes the tree back with every mutation site turned into
a run-time switch on one global, ep_mutant (boot: eventpoll.mutant=N,
run time: /sys/module/eventpoll/parameters/mutant; 0 changes nothing):

  statement level   { if (unlikely(ep_mutant == N)) { MUTATED } else { ORIGINAL } }
  expression level  (unlikely(ep_mutant == N) ? (MUTATED) : ORIGINAL)

Mutants on the same site chain; a site nested in another is switched
only inside the other's ORIGINAL, so exactly one mutant is live at once.

Operators:
  stmt-delete   an expression statement (a call, an assignment, a goto)
                removed; lock/unlock primitives, lockdep and KUnit hooks
                are left alone (deleting them only deadlocks or warns)
  cond-negate   an if condition C becomes !(C)
  cond-true     ... becomes 1
  cond-false    ... becomes 0
  term-drop     one operand of a && or || chain dropped
  mask-drop     one constant of an EPOLL*/POLL* '|' mask dropped
  errno         -EXXX replaced by another errno (-EINVAL, or -EPERM
                where it was -EINVAL)
  errno-zero    -EXXX replaced by 0 (success) in a return/assignment
  cap-ns        capable(C) -> ns_capable(current_user_ns(), C)
  cap-noaudit   capable(C) -> has_capability_noaudit(current, C)
  cap-true/cap-false  capable(C) -> 1 / 0
  early-return  the first statement after the declarations replaced by
                'return 0;' (int functions) or 'return;' (void ones)
  bool-negate   the value returned by a bool function negated
  unlock-early  an unlock (spin_unlock*, mutex_unlock, rcu_read_unlock)
                or __pm_relax() swapped with the statement before it

Output: the mutated files in place (--apply) or a patch on stdout
(--patch), and a TSV (id, file, function, line, operator, original,
mutated) with --tsv.
"""

import argparse
import fnmatch
import glob
import hashlib
import os
import re
import subprocess
import sys

# file -> functions whose bodies are mutated. First definition only (the
# #else stubs are not built with CONFIG_PM_SLEEP=y).
TARGETS = {
    "fs/eventpoll.c": [
        # wakeup sources: create, activate, relax, destroy; EPOLLWAKEUP
        "ep_pm_stay_awake", "ep_has_wakeup_source", "ep_pm_stay_awake_rcu",
        "ep_create_wakeup_source", "ep_destroy_wakeup_source",
        "ep_take_care_of_epollwakeup", "ep_free",
        # ready-list paths that queue or drop an item holding one
        "ep_poll_callback", "ep_deliver_event", "ep_send_events",
        "ep_start_scan", "ep_done_scan", "__ep_eventpoll_poll",
        "ep_item_poll", "ep_insert", "ep_modify", "ep_remove_epi",
        "ep_remove", "eventpoll_release_file", "ep_clear_and_put",
        "ep_eventpoll_release", "ep_disable",
        # ctl entry points and their locking
        "do_epoll_ctl_file", "do_epoll_ctl", "SYSCALL_DEFINE4(epoll_ctl",
        "ep_ctl_lock", "ep_ctl_unlock",
        # IORING_OP_EPOLL_WAIT's way in
        "epoll_sendevents", "ep_check_params", "ep_try_send_events",
    ],
    "io_uring/epoll.c": ["io_epoll_ctl_prep", "io_epoll_ctl",
                         "io_epoll_wait_prep", "io_epoll_wait"],
    "include/linux/eventpoll.h": [
        "eventpoll_release", "ep_op_has_event", "ep_op_check_no_event",
        "epoll_put_uevent",
    ],
}

NO_DELETE = re.compile(
    r"^(spin_(un)?lock\w*|mutex_(un)?lock\w*|rcu_read_(un)?lock|"
    r"write_seqcount_\w+|lockdep_\w+|KUNIT_\w+|cond_resched|might_sleep)$")
UNLOCK = re.compile(r"^(spin_unlock\w*|mutex_unlock|rcu_read_unlock|__pm_relax)$")
DECL_START = {"int", "bool", "long", "unsigned", "struct", "__poll_t",
              "poll_table", "CLASS", "LIST_HEAD", "const", "static", "char",
              "u64", "__u64"}
ERRNOS = {"EINVAL", "EPERM", "ENOENT", "EBADF", "EEXIST", "EFAULT", "ENOMEM",
          "EBUSY", "ELOOP", "EAGAIN", "EINTR"}

PRELUDE_C = """
/* Mutation testing only (scripts/mutate.py): never part of the series. */
#include <linux/moduleparam.h>
int ep_mutant;
EXPORT_SYMBOL_GPL(ep_mutant);
module_param_named(mutant, ep_mutant, int, 0644);
"""
PRELUDE_H = """
/* Mutation testing only (scripts/mutate.py): the live mutant, 0 for none. */
extern int ep_mutant;
#define EP_MUT(n) __builtin_expect(ep_mutant == (n), 0)
"""


class Tok:
    __slots__ = ("s", "a", "b")

    def __init__(self, s, a, b):
        self.s, self.a, self.b = s, a, b

    def __repr__(self):
        return self.s


TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<com>/\*.*?\*/|//[^\n]*) |
    (?P<pp>^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*) |
    (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*') |
    (?P<id>[A-Za-z_]\w*) | (?P<num>\d[\w.]*) |
    (?P<op>->|\+\+|--|&&|\|\||<<=|>>=|<<|>>|[-+*/%&|^!=<>]=|[-+*/%&|^!~<>=?:;,.(){}\[\]])
""", re.S | re.X | re.M)


def tokenize(text, a, b):
    out = []
    pos = a
    while pos < b:
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"cannot tokenize at {pos}: {text[pos:pos+40]!r}")
        kind = m.lastgroup
        if kind not in ("ws", "com", "pp"):
            out.append(Tok(m.group(), m.start(), m.end()))
        pos = m.end()
    return out


def match_close(toks, i):
    """Index of the bracket closing toks[i]."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    o, c, d = toks[i].s, pairs[toks[i].s], 0
    for j in range(i, len(toks)):
        if toks[j].s == o:
            d += 1
        elif toks[j].s == c:
            d -= 1
            if d == 0:
                return j
    raise SyntaxError("unbalanced")


class Stmt:
    def __init__(self, kind, i, j, **kw):
        self.kind, self.i, self.j = kind, i, j   # tokens i..j inclusive
        self.__dict__.update(kw)


def parse_stmt(toks, i):
    t = toks[i].s
    if t == "{":
        j = match_close(toks, i)
        return Stmt("block", i, j, body=parse_block(toks, i + 1, j))
    if t == "if":
        c = match_close(toks, i + 1)
        then = parse_stmt(toks, c + 1)
        els = None
        end = then.j
        if end + 1 < len(toks) and toks[end + 1].s == "else":
            els = parse_stmt(toks, end + 2)
            end = els.j
        return Stmt("if", i, end, cond=(i + 2, c - 1), then=then, els=els)
    if t in ("for", "while", "switch"):
        c = match_close(toks, i + 1)
        body = parse_stmt(toks, c + 1)
        return Stmt("loop", i, body.j, body=body)
    if t == "do":
        body = parse_stmt(toks, i + 1)
        c = match_close(toks, body.j + 2)
        return Stmt("loop", i, c + 1, body=body)
    if t in ("case", "default"):
        j = i
        while toks[j].s != ":":
            j += 1
        return Stmt("label", i, j)
    if toks[i + 1].s == ":" and re.match(r"\w+$", t):
        return Stmt("label", i, i + 1)
    if t in ("return", "break", "continue", "goto"):
        j = i
        while toks[j].s != ";":
            if toks[j].s in "({[":
                j = match_close(toks, j)
            j += 1
        return Stmt(t, i, j)
    # expression statement, declaration, or a macro loop "name(...) stmt"
    j = i
    while toks[j].s != ";":
        if toks[j].s in "([":
            j = match_close(toks, j)
            if toks[j].s == ")" and toks[j + 1].s == "{" and toks[i + 1].s == "(" \
                    and j == match_close(toks, i + 1):
                body = parse_stmt(toks, j + 1)
                return Stmt("loop", i, body.j, body=body)
        j += 1
    decl = t in DECL_START or (re.match(r"[A-Za-z_]\w*$", t) and
                               re.match(r"[A-Za-z_*]", toks[i + 1].s) and
                               toks[i + 1].s not in ("=",))
    return Stmt("decl" if decl else "expr", i, j)


def parse_block(toks, i, end):
    out = []
    while i < end:
        s = parse_stmt(toks, i)
        out.append(s)
        i = s.j + 1
    return out


class Mut:
    def __init__(self, kind, a, b, op, mutated, func):
        self.kind, self.a, self.b = kind, a, b   # chars a..b of the file
        self.op, self.mutated, self.func = op, mutated, func
        self.id = None


def find_function(text, name):
    """(type tokens, body start '{' offset, end '}' offset) of @name."""
    if name.startswith("SYSCALL_DEFINE"):
        m = re.search(re.escape(name) + r"\b", text)
    else:
        m = re.search(r"^(?![ \t]*\*)[\w \t*]*?\b" + re.escape(name) + r"\(", text, re.M)
    if not m:
        raise SystemExit(f"mutate.py: function {name} not found")
    # skip prototypes: first match followed by a body
    while True:
        k = m.end()
        toks = tokenize(text, m.start(), min(len(text), m.start() + 2000))
        i = [t.s for t in toks].index("(")
        c = match_close(toks, i)
        if toks[c + 1].s == "{":
            head = text[m.start():toks[c].b]
            tk = tokenize(text, toks[c + 1].a, len(text))
            e = match_close(tk, 0)
            return head, tk[0].a, tk[e].b
        m = re.compile(r"^(?![ \t]*\*)[\w \t*]*?\b" + re.escape(name) + r"\(",
                       re.M).search(text, k)
        if not m:
            raise SystemExit(f"mutate.py: no definition of {name}")


def rtype(head, name):
    pre = head.split(name)[0]
    if name.startswith("SYSCALL"):
        return "long"
    words = re.findall(r"\w+", pre)
    words = [w for w in words if w not in ("static", "inline", "noinline", "__init")]
    if "*" in pre:
        return "ptr"
    return " ".join(words)


def text_of(text, toks, i, j):
    return text[toks[i].a:toks[j].b]


def cond_mutations(text, toks, ci, cj, func, muts):
    a, b = toks[ci].a, toks[cj].b
    c = text[a:b]
    muts.append(Mut("expr", a, b, "cond-negate", f"!({c})", func))
    muts.append(Mut("expr", a, b, "cond-true", "1", func))
    muts.append(Mut("expr", a, b, "cond-false", "0", func))
    term_drops(text, toks, ci, cj, func, muts)


def split_top(toks, i, j, ops):
    """Split tokens i..j at top-level operators in @ops."""
    parts, start, op = [], i, None
    k = i
    while k <= j:
        s = toks[k].s
        if s in "([":
            k = match_close(toks, k)
        elif s in ops:
            parts.append((start, k - 1))
            op = s
            start = k + 1
        elif s == "?":
            return [], None
        k += 1
    parts.append((start, j))
    return parts, op


def term_drops(text, toks, i, j, func, muts):
    for ops in (("&&",), ("||",)):
        parts, op = split_top(toks, i, j, ops)
        if len(parts) > 1 and not split_top(toks, i, j, ("&&", "||") if op == "||" else ("||",))[1]:
            for n, (pi, pj) in enumerate(parts):
                rest = [text_of(text, toks, x, y) for m, (x, y) in enumerate(parts) if m != n]
                muts.append(Mut("expr", toks[i].a, toks[j].b, "term-drop",
                                f" {op} ".join(rest), func))
    # recurse into parenthesised groups that are not call arguments
    k = i
    while k <= j:
        if toks[k].s == "(":
            e = match_close(toks, k)
            if k == i or not re.match(r"\w+$", toks[k - 1].s):
                if e - k > 1:
                    term_drops(text, toks, k + 1, e - 1, func, muts)
            k = e
        k += 1


MASKC = re.compile(r"^E?POLL[A-Z_]+$")


def expr_mutations(text, toks, i, j, func, muts, in_return):
    k = i
    while k <= j:
        s = toks[k].s
        # -EXXX
        if s == "-" and k + 1 <= j and toks[k + 1].s in ERRNOS and \
                (k == i or toks[k - 1].s in ("=", "return", "(", ",", "?", ":")):
            e = toks[k + 1].s
            a, b = toks[k].a, toks[k + 1].b
            alt = "EPERM" if e == "EINVAL" else "EINVAL"
            muts.append(Mut("expr", a, b, "errno", f"-{alt}", func))
            if k > i and toks[k - 1].s in ("=", "return") or in_return:
                muts.append(Mut("expr", a, b, "errno-zero", "0", func))
        # capable(C)
        if s == "capable" and toks[k + 1].s == "(":
            e = match_close(toks, k + 1)
            arg = text_of(text, toks, k + 2, e - 1)
            a, b = toks[k].a, toks[e].b
            muts.append(Mut("expr", a, b, "cap-ns", f"ns_capable(current_user_ns(), {arg})", func))
            muts.append(Mut("expr", a, b, "cap-noaudit", f"has_capability_noaudit(current, {arg})", func))
            muts.append(Mut("expr", a, b, "cap-true", "true", func))
            muts.append(Mut("expr", a, b, "cap-false", "false", func))
        # A | B | C of EPOLL*/POLL* constants
        if MASKC.match(s) and (k == i or toks[k - 1].s != "|") and k + 2 <= j and toks[k + 1].s == "|":
            terms = [k]
            m = k
            while m + 2 <= j and toks[m + 1].s == "|" and MASKC.match(toks[m + 2].s):
                m += 2
                terms.append(m)
            if len(terms) > 1:
                for n in range(len(terms)):
                    rest = [toks[t].s for x, t in enumerate(terms) if x != n]
                    muts.append(Mut("expr", toks[k].a, toks[m].b, "mask-drop",
                                    " | ".join(rest), func))
            k = m
        k += 1


def walk(text, toks, stmts, func, rt, muts, first):
    """Mutations of the statements of one block."""
    decls_done = False
    prev = None
    for st in stmts:
        if first and not decls_done and st.kind not in ("decl",):
            decls_done = True
            if st.kind not in ("return", "label") and rt in ("int", "void", "long"):
                ret = "return;" if rt == "void" else "return 0;"
                muts.append(Mut("stmt", toks[st.i].a, toks[st.j].b, "early-return", ret, func))
        if st.kind == "expr":
            call = toks[st.i].s
            if not NO_DELETE.match(call):
                muts.append(Mut("stmt", toks[st.i].a, toks[st.j].b, "stmt-delete", ";", func))
            expr_mutations(text, toks, st.i, st.j, func, muts, False)
            if UNLOCK.match(call) and prev is not None and prev.kind in ("expr", "if") \
                    and not (prev.kind == "expr" and re.match(r"(spin_|mutex_|rcu_read_)", toks[prev.i].s)):
                muts.append(Mut("stmt", toks[prev.i].a, toks[st.j].b, "unlock-early",
                                text_of(text, toks, st.i, st.j) + "\n" +
                                text_of(text, toks, prev.i, prev.j), func))
        elif st.kind == "goto":
            muts.append(Mut("stmt", toks[st.i].a, toks[st.j].b, "stmt-delete", ";", func))
        elif st.kind == "decl":
            expr_mutations(text, toks, st.i, st.j, func, muts, False)
        elif st.kind == "return":
            expr_mutations(text, toks, st.i + 1, st.j - 1, func, muts, True)
            if rt == "bool" and st.j - st.i > 1:
                muts.append(Mut("expr", toks[st.i + 1].a, toks[st.j - 1].b, "bool-negate",
                                "!(" + text_of(text, toks, st.i + 1, st.j - 1) + ")", func))
        elif st.kind == "if":
            cond_mutations(text, toks, st.cond[0], st.cond[1], func, muts)
            expr_mutations(text, toks, st.cond[0], st.cond[1], func, muts, False)
            for sub in (st.then, st.els):
                if sub is not None:
                    walk(text, toks, sub.body if sub.kind == "block" else [sub],
                         func, rt, muts, False)
        elif st.kind == "loop":
            b = st.body
            walk(text, toks, b.body if b.kind == "block" else [b], func, rt, muts, False)
        elif st.kind == "block":
            walk(text, toks, st.body, func, rt, muts, False)
        if st.kind != "label":
            prev = st


def mutations_of(path, text):
    muts = []
    for name in TARGETS[path]:
        head, a, b = find_function(text, name)
        rt = rtype(head, name)
        fname = "epoll_ctl (syscall)" if name.startswith("SYSCALL") else name
        toks = tokenize(text, a, b)
        stmts = parse_block(toks, 1, len(toks) - 1)
        walk(text, toks, stmts, fname, rt, muts, True)
    # same site, same text: once
    seen, out = set(), []
    for m in muts:
        key = (m.a, m.b, m.mutated.strip())
        if key not in seen and m.mutated.strip() != text[m.a:m.b].strip():
            seen.add(key)
            out.append(m)
    return out


def render(text, a, b, muts, lo=0):
    """Text a..b with the mutations inside it switched in."""
    # outermost sites first; sites nested in another are rendered inside it
    sites = {}
    for m in muts:
        sites.setdefault((m.a, m.b), []).append(m)
    keys = sorted(sites, key=lambda k: (k[0], -k[1]))
    out, pos, k = [], a, 0
    while k < len(keys):
        sa, sb = keys[k]
        inner = [m for m in muts if m.a >= sa and m.b <= sb and (m.a, m.b) != (sa, sb)]
        # skip the sites nested in this one
        k += 1
        while k < len(keys) and keys[k][1] <= sb:
            k += 1
        if k < len(keys) and keys[k][0] < sb:
            raise SystemExit(f"mutate.py: overlapping sites at {sa}-{sb} and {keys[k]}")
        out.append(text[pos:sa])
        orig = render(text, sa, sb, inner)
        here = sites[(sa, sb)]
        if here[0].kind == "expr":
            s = "".join(f"(EP_MUT({m.id}) ? ({m.mutated}) : " for m in here)
            out.append(s + "(" + orig + ")" + ")" * len(here))
        else:
            s = "{ "
            for m in here:
                s += f"if (EP_MUT({m.id})) {{ {m.mutated} }} else "
            out.append(s + "{ " + orig + " } }")
        pos = sb
    out.append(text[pos:b])
    return "".join(out)


def drop_overlaps(muts):
    """Partially overlapping sites cannot nest: keep the earlier one."""
    keep = []
    for m in sorted(muts, key=lambda m: (m.a, -m.b)):
        bad = any(k.a < m.a < k.b < m.b or m.a < k.a < m.b < k.b for k in keep)
        if not bad:
            keep.append(m)
    return keep


def lineno(text, off):
    return text.count("\n", 0, off) + 1


def generate(tree, exclude):
    """(rows of the TSV, {path: mutated text}) for the tree."""
    files = {}
    allm = []
    for path in TARGETS:
        with open(os.path.join(tree, path)) as f:
            text = f.read()
        if "ep_mutant" in text:
            raise SystemExit(f"mutate.py: {path} is already mutated")
        ms = drop_overlaps(mutations_of(path, text))
        ms.sort(key=lambda m: (m.a, m.b))
        files[path] = (text, ms)
        allm += [(path, m) for m in ms]
    for n, (path, m) in enumerate(allm, 1):
        m.id = n
    rows, out = [], {}
    for path, (text, ms) in files.items():
        for m in ms:
            orig = " ".join(text[m.a:m.b].split())
            mut = " ".join(m.mutated.split())
            st = "uncompilable" if m.id in exclude else ""
            rows.append((m.id, path, m.func, lineno(text, m.a), m.op, orig, mut, st))
        live = [m for m in ms if m.id not in exclude]
        new = render(text, 0, len(text), live)
        if path == "fs/eventpoll.c":
            k = new.index("\n#include <linux/eventpoll.h>") + len("\n#include <linux/eventpoll.h>\n")
            new = new[:k] + PRELUDE_C + new[k:]
        elif path.endswith(".h"):
            k = new.index("struct file;\n") + len("struct file;\n")
            new = new[:k] + PRELUDE_H + new[k:]
        out[path] = new
    return rows, out


def harness_names(text):
    """fixture[.variant].test names of a kselftest_harness program."""
    variants = {}
    for f, v in re.findall(r"^FIXTURE_VARIANT_ADD\(\s*(\w+)\s*,\s*(\w+)\s*\)", text, re.M):
        variants.setdefault(f, []).append(v)
    names = set()
    for f, t in re.findall(r"^TEST_F(?:_TIMEOUT)?\(\s*(\w+)\s*,\s*(\w+)", text, re.M):
        for v in variants.get(f, [None]):
            names.add(f"{f}.{v}.{t}" if v else f"{f}.{t}")
    for t in re.findall(r"^TEST\(\s*(\w+)", text, re.M):
        names.add(f"global.{t}")
    return names


def new_test_lines():
    """{path: the lines new-tests/*.patch add to it}: the tests the guest
    sweep runs on top of the series (scripts/run-mutate.sh applies them)."""
    added = {}
    for name in sorted(os.listdir(NEW_TESTS)) if os.path.isdir(NEW_TESTS) else []:
        if not name.endswith(".patch"):
            continue
        path = None
        for line in open(os.path.join(NEW_TESTS, name)):
            if line.startswith("+++ b/"):
                path = line[6:].rstrip("\n")
            elif line.startswith("+") and not line.startswith("+++") and path:
                added.setdefault(path, []).append(line[1:])
    return added


def stamp(path):
    """The line a result file carries to name the generated.tsv it is for."""
    with open(path, "rb") as f:
        return "# mutants/generated.tsv sha256:" + hashlib.sha256(f.read()).hexdigest()[:16]


def second_line(path):
    with open(path) as f:
        f.readline()
        return f.readline().rstrip("\n")


def external_test(suite, name):
    """Whether the LTP or liburing posting (external/) adds test @name."""
    if suite == "ltp":
        return bool(glob.glob(os.path.join(REPO, "external", "ltp", "tests", "testcases", "kernel",
                                           "syscalls", "*", name + ".c")))
    return suite == "liburing" and os.path.exists(
        os.path.join(REPO, "external", "liburing", "tests", "test", name + ".c"))


def check(tree, exclude):
    """The generator still applies; results name existing tests only."""
    problems = []
    rows, _ = generate(tree, exclude)
    old = {int(r[0]): r for r in read_tsv(GEN_TSV)}
    new = {r[0]: r for r in rows}
    key = lambda r: (r[1], r[2], r[4], r[5], r[6])   # not the line
    if set(old) != set(new) or any(key(old[i]) != key(tuple(map(str, new[i]))) for i in new):
        diff = [i for i in sorted(set(old) | set(new))
                if i not in old or i not in new or key(old[i]) != key(tuple(map(str, new[i])))]
        problems.append(f"mutants/generated.tsv is stale for the series ({len(diff)} mutants differ, "
                        f"first {diff[:5]}): regenerate it ('scripts/mutate.py out/linux --tsv "
                        f"mutants/generated.tsv', or 'make mutate STEP=prepare'), move the old "
                        f"results aside and run the sweep again")
    kcases = set()
    for src in ("fs/tests/eventpoll_kunit.c", "fs/tests/eventpoll_proof_kunit.c"):
        if os.path.exists(os.path.join(tree, src)):      # the proof layer may be absent
            text = open(os.path.join(tree, src)).read()
            kcases |= set(re.findall(r"KUNIT_CASE(?:_PARAM)?\(\s*(\w+)", text))
            kcases |= set(re.findall(r"^\s*\.name\s*=\s*\"(\w+)\"", text, re.M))
    progs = {}
    sdir = "tools/testing/selftests/filesystems/epoll"
    added = new_test_lines()
    results = read_tsv(RESULTS_TSV)
    if not results:
        problems.append("no mutants/results.tsv")
    elif os.path.exists(GEN_TSV) and second_line(RESULTS_TSV) != stamp(GEN_TSV):
        problems.append("mutants/results.tsv was made for another mutants/generated.tsv: its results "
                        "are not of these mutants; run 'scripts/mutate-sweep.py report' (results "
                        "of an older series belong in mutants/<version>/)")
    for path in (EQUIV_TSV, INVISIBLE_TSV, UNDOCUMENTED_TSV, RACE_ONLY_TSV):
        for r in read_tsv(path):
            g = old.get(int(r[0]))
            if g is None or (g[2], g[4], g[5]) != tuple(r[1:4]):
                problems.append(f"mutants/{os.path.basename(path)}: mutant {r[0]} is not "
                                f"{' / '.join(r[1:4])} in generated.tsv: renumber or drop "
                                f"the argument")
    moved = read_tsv(MOVED_TSV)
    used = set()
    for old_killer, dest in moved:
        kind, _, name = dest.partition(":")
        if kind in ("ltp", "liburing"):
            ok = external_test(kind, name)
        elif kind == "kselftest":
            prog, _, t = name.partition(":")
            src = os.path.join(tree, sdir, prog + ".c")
            ok = os.path.exists(src) and t in harness_names(
                open(src).read() + "".join(added.get(os.path.join(sdir, prog + ".c"), [])))
        else:
            ok = False
        if not ok:
            problems.append(f"mutants/moved.tsv: {old_killer}: no destination {dest}")
    seen = set()
    for r in results:
        seen.add(int(r[0]))
        g = old.get(int(r[0]))
        if g is not None and (r[1], r[2], r[5]) != (g[2], g[4], g[1]):
            problems.append(f"results.tsv: mutant {r[0]} is {r[5]} {r[1]} {r[2]}, generated.tsv "
                            f"says {g[1]} {g[2]} {g[4]}")
        for k in filter(None, r[4].split(",") if len(r) > 4 else []):
            if k in kcases or k in ("crash", "timeout", "WARN", "KASAN", "crash-or-hang",
                                    "guest-no-result") \
                    or k.startswith("kernel:"):
                continue
            hit = [i for i, m in enumerate(moved) if fnmatch.fnmatchcase(k, m[0])]
            if hit:
                used.add(hit[0])
                continue
            prog, _, t = k.partition(":")
            t = t.removesuffix(":SKIP")     # a test that skipped
            t = t.removesuffix(":running")  # the test running at a crash or hang
            if prog in ("ltp", "liburing"):  # a test of the LTP or liburing posting
                if not external_test(prog, t):
                    problems.append(f"results.tsv: mutant {r[0]}: the {prog} posting has no "
                                    f"test {t}")
                continue
            src = os.path.join(sdir, prog + ".c")
            if prog not in progs:
                progs[prog] = None
                if os.path.exists(os.path.join(tree, src)):
                    text = open(os.path.join(tree, src)).read() + "".join(added.get(src, []))
                    progs[prog] = harness_names(text)
            if progs[prog] is None:
                problems.append(f"results.tsv: mutant {r[0]}: no test program {prog}")
            elif t not in ("TIMEOUT", "SKIP") and not re.match(r"exit(=\d+)?$", t) and t not in progs[prog]:
                problems.append(f"results.tsv: mutant {r[0]}: {prog} has no test {t}")
    for i, m in enumerate(moved):
        if i not in used:
            problems.append(f"mutants/moved.tsv: no killer in results.tsv is {m[0]}: drop the line")
    missing = set(new) - seen
    if missing:
        problems.append(f"results.tsv lacks {len(missing)} mutants, e.g. {sorted(missing)[:5]}")
    with open(TESTING_MD) as f:
        problems += race_problems(results, f.read())
    for p in problems:
        print("mutate.py:", p, file=sys.stderr)
    if problems:
        sys.exit(1)
    status = {}
    for r in results:
        status[r[3]] = status.get(r[3], 0) + 1
    races = {}
    for r in read_tsv(RACE_ONLY_TSV):
        races[r[5]] = races.get(r[5], 0) + 1
    print(f"mutate.py: {len(rows)} mutants still generated as recorded; results.tsv is of "
          f"them ({', '.join(f'{k} {v}' for k, v in sorted(status.items()))}) and names "
          f"{len(kcases)} KUnit cases and tests of {len(progs)} kselftest programs that exist; "
          f"race-only.tsv's verdicts hold ({', '.join(f'{k} {v}' for k, v in sorted(races.items()))})",
          file=sys.stderr)


# The verdicts of mutants/race-only.tsv (its 6th column), each with what
# its 7th column, the evidence, names.
RACE_VERDICTS = {
    "killed-assert": "a lockdep assertion of the tests posting reports it on its first call "
                     "(evidence: its killers in results.tsv)",
    "killed-window": "a proof test with the race window (fs/tests/eventpoll_window.c) fails "
                     "(evidence: its killers in results.tsv)",
    "killed-test": "a proof test fails without needing the race (evidence: its killers in "
                   "results.tsv)",
    "killed-litmus": "the memory model allows the outcome the code rules out, with the mutant "
                     "only (evidence: litmus/ files, one Sometimes)",
    "equivalent-litmus": "the memory model forbids the bad outcome with and without the mutant "
                         "(evidence: litmus/ files, all Never)",
    "equivalent-argued": "an argument in Documentation/testing.md shows no execution can tell it "
                         "(evidence: Documentation/testing.md)",
    "survived": "nothing kills or proves it yet",
}
LITMUS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "litmus")


def litmus_header(name):
    """The leading (* ... *) comment and the stated result of a litmus test."""
    with open(os.path.join(LITMUS_DIR, name)) as f:
        text = f.read()
    m = re.search(r"\(\*(.*?)\*\)", text, re.S)
    head = m.group(1) if m else ""
    r = re.search(r"^ \* Result: (Never|Sometimes|Always)\b", head, re.M)
    return head, r.group(1) if r else None


def race_problems(results, testing_md):
    """What is wrong with the verdicts of mutants/race-only.tsv: an
    unknown verdict, a kill results.tsv does not record, a litmus test
    that is missing, does not name the mutant or says the wrong thing,
    an argument Documentation/testing.md does not make."""
    problems = []
    res = {int(r[0]): r for r in results}
    for r in read_tsv(RACE_ONLY_TSV):
        mid = int(r[0])
        verdict = r[5] if len(r) > 5 else ""
        evidence = [e for e in (r[6] if len(r) > 6 else "").split(",") if e]
        where = f"mutants/race-only.tsv: mutant {mid}"
        if verdict not in RACE_VERDICTS:
            problems.append(f"{where}: verdict '{verdict}' is none of {', '.join(RACE_VERDICTS)}")
            continue
        if verdict != "survived" and not evidence:
            problems.append(f"{where}: {verdict} names no evidence")
        if verdict in ("killed-assert", "killed-window", "killed-test"):
            row = res.get(mid)
            killers = set(row[4].split(",")) if row and len(row) > 4 else set()
            if not row or row[3] != "killed":
                problems.append(f"{where}: {verdict}, but results.tsv does not record it killed")
            for e in evidence:
                if e not in killers:
                    problems.append(f"{where}: {verdict} by {e}, which results.tsv does not "
                                    f"list among its killers")
        elif verdict in ("killed-litmus", "equivalent-litmus"):
            results_of = []
            for e in evidence:
                if not os.path.exists(os.path.join(LITMUS_DIR, e)):
                    problems.append(f"{where}: no litmus/{e}")
                    continue
                head, result = litmus_header(e)
                results_of.append(result)
                if not re.search(rf"\b{mid}\b", head):
                    problems.append(f"{where}: litmus/{e} does not name the mutant")
            if verdict == "killed-litmus" and "Sometimes" not in results_of:
                problems.append(f"{where}: killed-litmus, but none of its litmus tests says "
                                f"Sometimes")
            if verdict == "equivalent-litmus" and any(x != "Never" for x in results_of):
                problems.append(f"{where}: equivalent-litmus, but not all of its litmus tests "
                                f"say Never")
        elif verdict == "equivalent-argued":
            if not re.search(rf"\b[Mm]utants? (?:\d+(?:, | and ))*{mid}\b", testing_md):
                problems.append(f"{where}: equivalent-argued, but Documentation/testing.md "
                                f"argues nothing about mutant {mid}")
    return problems



def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN_TSV = os.path.join(REPO, "mutants", "generated.tsv")
RESULTS_TSV = os.path.join(REPO, "mutants", "results.tsv")
EQUIV_TSV = os.path.join(REPO, "mutants", "equivalent.tsv")
INVISIBLE_TSV = os.path.join(REPO, "mutants", "invisible.tsv")
UNDOCUMENTED_TSV = os.path.join(REPO, "mutants", "undocumented.tsv")
RACE_ONLY_TSV = os.path.join(REPO, "mutants", "race-only.tsv")
TESTING_MD = os.path.join(REPO, "Documentation", "testing.md")
MOVED_TSV = os.path.join(REPO, "mutants", "moved.tsv")
NEW_TESTS = os.path.join(REPO, "new-tests")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", help="the patched kernel tree (out/linux)")
    ap.add_argument("--apply", action="store_true", help="write the mutated files into the tree")
    ap.add_argument("--tsv", help="write the mutant list here")
    ap.add_argument("--check", action="store_true",
                    help="only check that mutants/generated.tsv and results.tsv fit the tree")
    ap.add_argument("--exclude", default="",
                    help="comma-separated mutant ids to leave out (not compilable)")
    args = ap.parse_args()
    exclude = {int(x) for x in args.exclude.split(",") if x}
    if args.check:
        check(args.tree, exclude)
        return
    rows, out = generate(args.tree, exclude)
    if args.apply:
        for path, new in out.items():
            with open(os.path.join(args.tree, path), "w") as f:
                f.write(new)
    if args.tsv:
        with open(args.tsv, "w") as f:
            f.write("# id\tfile\tfunction\tline\toperator\toriginal\tmutated\tnote\n")
            for r in rows:
                f.write("\t".join(str(x).replace("\t", " ") for x in r) + "\n")
    counts = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    print(f"mutate.py: {len(rows)} mutants: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
