#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run the generated mutants (scripts/mutate.py) against the tests.

  kunit [ID...]   one UML boot per mutant: kunit.py exec with
                  eventpoll.mutant=ID; a mutant is killed by the KUnit
                  cases that fail (or by 'crash'/'timeout' when the run
                  does not finish). Appends to $MUT_OUT/kunit.tsv and skips
                  ids already there.
  guest [ID...]   boots of the debug x86_64 kernel: guest/init runs the
                  kselftest programs once per mutant (epoll.mutants=...),
                  selecting it at run time; a boot stops at the first
                  killed mutant and the next boot goes on with the rest.
                  The verdicts come from the guest's KTAP
                  ($MUT_OUT/results/ktap.log, one subtest "mutant-<id>"
                  each), a crash from the kernel log (console.log).
                  GUEST_LAYER=posted (the default) runs the posted
                  programs on every mutant not argued equivalent, into
                  $MUT_OUT/guest-posted.tsv; GUEST_LAYER=proof the proof
                  layer's on every mutant nothing has killed yet, into
                  guest-proof.tsv. GUEST_LAYER=suites runs the LTP and
                  liburing tests of the postings (external/; guest/init,
                  epoll.suite_mutants=) on every mutant that one of the
                  kselftest cases they were written from killed
                  (mutants/moved.tsv), each with the tests written from
                  its killers, into guest-suites.tsv; their own failures
                  then replace the moved cases' kills in the report.
                  Ids already in the file are skipped.
                  With GUEST_JOBS=N, N guests of one CPU share the
                  mutants (results merged from $MUT_OUT/job<k>/). With
                  GUEST_FAILFAST=1 (the default) a mutant's tests stop
                  at its first failure or skip (epoll.failfast=1).
  report          merges mutants/generated.tsv, the result files
                  (kunit.tsv and every guest*.tsv), mutants/equivalent.tsv,
                  invisible.tsv, undocumented.tsv and race-only.tsv into
                  mutants/results.tsv and prints the scores: of every test
                  (posted and proof), of the posted tests (a killer counts
                  as posted when it is a case of the posted KUnit suite,
                  kunit/, or a program of the posted Makefile,
                  selftests/), and of the posted kselftests alone over
                  the user-visible mutants; then why each mutant the
                  posted tests leave alive survives.
  sample          make check's short mode: KUnit on SAMPLE (default 12)
                  mutants spread over mutants/results.tsv; each must get
                  its recorded verdict.
  seed            writes kunit.tsv, guest-posted.tsv and guest-suites.tsv
                  back from the committed
                  mutants/results.tsv, when $MUT_OUT has none (a new
                  machine): 'kunit' and 'guest' then run only what is
                  asked, and 'report' gives results.tsv again.

The trees and builds come from scripts/run-mutate.sh (make mutate).
Environment: OUT_DIR (default ./out); MUT_OUT (default $OUT_DIR/mut);
KUNIT_EXEC_TIMEOUT (s, default 60); GUEST_TESTS, the programs
(default: the layer's); GUEST_RESULTS, the result file (default: the
layer's); GUEST_ABIS
(default m64); GUEST_BATCH, mutants a boot at most (default 20);
GUEST_APPEND, more of the guest's kernel command line (default for the
proof layer: epoll_stress.seconds=5); GUEST_JOBS, guests of
one CPU side by side (default 1: one guest of QEMU_SMP CPUs);
GUEST_SHUFFLE, a seed: the mutants in a random order, so that a sweep
stopped early has run on a random sample (report gives its interval);
QEMU_TIMEOUT, the limit of one boot (default 300 s plus 120 s a mutant
of the batch; one mutant's run takes 20-50 s); GUEST_STALL, seconds
without guest output after which a boot is stopped (default 200, above
the runner's per-program limit under TCG, 180 s). The guest panics,
hence reboots, on an oops, a WARN, a KASAN report or a task hung for
HUNG_TASK_SECS (30 s; both guests have CONFIG_DETECT_HUNG_TASK), and the
test that was running is named among the killers; GUEST_PANIC=0 lets it
report and go on.
"""

import fnmatch
import glob
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.abspath(os.environ.get("OUT_DIR", os.path.join(REPO, "out")))
MUT = os.environ.get("MUT_OUT", os.path.join(OUT, "mut"))
TREE = os.path.join(MUT, "linux")
UML = os.path.join(MUT, "build", "kunit-uml")
GEN = os.path.join(REPO, "mutants", "generated.tsv")
EQUIV = os.path.join(REPO, "mutants", "equivalent.tsv")
INVISIBLE = os.path.join(REPO, "mutants", "invisible.tsv")
UNDOCUMENTED = os.path.join(REPO, "mutants", "undocumented.tsv")
RACE_ONLY = os.path.join(REPO, "mutants", "race-only.tsv")
MOVED = os.path.join(REPO, "mutants", "moved.tsv")
# The other projects' suites the postings add tests to (external/). Their
# killers are "<suite>:<test>" (":SKIP" when the test skipped).
SUITES = tuple(sorted(d for d in os.listdir(os.path.join(REPO, "external"))
                     if os.path.isdir(os.path.join(REPO, "external", d))))
RESULTS = os.path.join(REPO, "mutants", "results.tsv")
KUNIT_TSV = os.path.join(MUT, "kunit.tsv")
# Two guest sweeps (GUEST_LAYER), each with its result file: the posted
# programs on every mutant, for their own score; the proof layer's on
# what no test has killed yet, its stress program shortened.
LAYER = os.environ.get("GUEST_LAYER") or "posted"
if LAYER not in ("posted", "proof", "suites"):
    sys.exit(f"mutate-sweep: GUEST_LAYER must be posted, proof or suites, not '{LAYER}'")
LAYER_DEFAULTS = {
    "posted": ("guest-posted.tsv", "epoll_wakeup_abi_test,epoll_ctl_disable_test,"
               "epoll_wakeup_test", ""),
    "proof": ("guest-proof.tsv", "epoll_proof_abi_test,epoll_proof_disable_test,"
              "epoll_proof_stress_test", "epoll_stress.seconds=5"),
    # A test that hangs under a mutant fails at its limit (exit 124): a
    # clean run of one takes 1-3 s in this guest.
    "suites": ("guest-suites.tsv", "", "epoll.suite_timeout=60"),
}[LAYER]
SUITES_TSV = os.path.join(MUT, "guest-suites.tsv")
GUEST_TSV = os.path.join(MUT, os.environ.get("GUEST_RESULTS") or LAYER_DEFAULTS[0])
# What the guest boots (the OUT_DIR of run-qemu.sh): the posted layer and
# the suites the kernel without sanitizers (MUT/fast,
# config/nodebug.config), whose reports would not count for them anyway;
# the proof layer the debug one.
GUEST_ROOT = os.environ.get("GUEST_ROOT") or (MUT if LAYER == "proof" else os.path.join(MUT, "fast"))
FAILFAST = os.environ.get("GUEST_FAILFAST", "1")
TIMEOUT = int(os.environ.get("KUNIT_EXEC_TIMEOUT", "60"))
TESTS = os.environ.get("GUEST_TESTS") or LAYER_DEFAULTS[1]
ABIS = os.environ.get("GUEST_ABIS", "m64")
BATCH = int(os.environ.get("GUEST_BATCH", "20"))
APPEND = os.environ.get("GUEST_APPEND", LAYER_DEFAULTS[2])
STALL = int(os.environ.get("GUEST_STALL", "200"))
JOBS = int(os.environ.get("GUEST_JOBS") or "1")
SHUFFLE = os.environ.get("GUEST_SHUFFLE", "")


def log(*a):
    print("mutate-sweep:", *a, file=sys.stderr, flush=True)


def read_tsv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append(line.rstrip("\n").split("\t"))
    return rows


def generated():
    return {int(r[0]): r for r in read_tsv(GEN)}


def stamp():
    """The second line of every result file: the generated.tsv its ids
    are of. Results of another list (an older series) are stale."""
    with open(GEN, "rb") as f:
        return "# mutants/generated.tsv sha256:" + hashlib.sha256(f.read()).hexdigest()[:16]


def read_results(path):
    """Rows of a result file of this sweep; refuse one of other mutants."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        f.readline()
        if f.readline().rstrip("\n") != stamp():
            sys.exit(f"mutate-sweep: {path} is not of the mutants of mutants/generated.tsv "
                     "(made for an older series or list, or before result files were "
                     "stamped): its ids name other mutants; move it away")
    return read_tsv(path)


def start_results(path, header):
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(header + "\n" + stamp() + "\n")


def equivalents(gen, path=EQUIV):
    """{id: why} of mutants/equivalent.tsv (or of mutants/invisible.tsv),
    each checked to be the mutant (function, operator, original) its
    argument was written for."""
    equiv = {}
    for r in read_tsv(path):
        g = gen.get(int(r[0]))
        if g is None or (g[2], g[4], g[5]) != tuple(r[1:4]):
            sys.exit(f"mutate-sweep: mutants/{os.path.basename(path)}: mutant {r[0]} is not "
                     f"{' / '.join(r[1:4])}: renumber or drop the argument")
        equiv[int(r[0])] = r[4]
    return equiv


def failed_cases(node, path, out):
    """Names of failing leaf cases (suite.case) in kunit.py's JSON."""
    for c in node.get("test_cases", []):
        if c["status"] not in ("PASS", "SKIP"):
            out.add(".".join(path[-1:] + [c["name"]]) if path else c["name"])
    for g in node.get("sub_groups", []):
        name = g["name"]
        sub = path + [name]
        before = len(out)
        failed_cases(g, sub, out)
        # a parameterised case: report the case, not each parameter
        if len(out) > before and len(sub) >= 3:
            kept = {o for o in out if not o.startswith(name + ".")}
            out.clear()
            out.update(kept)
            out.add(".".join(sub[-2:]))
    return out


def kunit_one(mid):
    js = os.path.join(MUT, f"kunit-{mid}.json")
    logf = os.path.join(MUT, f"kunit-{mid}.log")
    start = time.time()
    try:
        p = subprocess.run(
            ["./tools/testing/kunit/kunit.py", "exec", f"--build_dir={UML}",
             f"--kernel_args=eventpoll.mutant={mid}", f"--timeout={TIMEOUT}",
             f"--json={js}", "--raw_output=all"],
            cwd=TREE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=TIMEOUT + 30)
        raw = p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        raw = (e.stdout or b"").decode(errors="replace")
        raw += "\n(timeout)\n"
    secs = time.time() - start
    with open(logf, "w") as f:
        f.write(raw)
    killers = set()
    ntests = 0
    if os.path.exists(js):
        try:
            with open(js) as f:
                data = json.load(f)
            killers = failed_cases(data, [], set())
        except ValueError:
            pass
        os.unlink(js)
    oks = len(re.findall(r"^\s*ok \d+ eventpoll_", raw, re.M))
    nots = re.findall(r"^\s*not ok \d+ (eventpoll_\w+)", raw, re.M)
    ntests = oks + len(nots)
    killers = {k.split(".")[-1] for k in killers} | set(nots)
    # Every suite of the tree (the posted one, the proof layer's) ended.
    suites = ["eventpoll"] + (["eventpoll_proof"] if os.path.exists(
        os.path.join(TREE, "fs", "tests", "eventpoll_proof_kunit.c")) else [])
    done = all(re.search(rf"^\s*(ok|not ok) \d+ {name}\s*$", raw, re.M) for name in suites)
    if not done:
        killers.add("timeout" if "(timeout)" in raw or secs >= TIMEOUT else "crash")
    for pat, what in ((r"BUG[: ]|Kernel panic|Oops|general protection", "crash"),
                      (r"WARNING: .* at ", "WARN"), (r"KASAN", "KASAN")):
        if re.search(pat, raw):
            killers.add(what)
    # mutant 0 must have run every case; a mutant that ran fewer crashed
    return sorted(killers), secs, ntests


def cmd_kunit(ids):
    gen = generated()
    done = {int(r[0]) for r in read_results(KUNIT_TSV)}
    ids = ids or sorted(gen)
    start_results(KUNIT_TSV, "# id\tkillers\tseconds\tcases")
    t0 = time.time()
    if 0 not in done:
        k, s, n = kunit_one(0)
        if k:
            sys.exit(f"mutate-sweep: mutant 0 (no mutation) fails KUnit: {k}")
        log(f"baseline: {n} cases pass in {s:.1f}s")
    for mid in ids:
        if mid in done:
            continue
        k, s, n = kunit_one(mid)
        with open(KUNIT_TSV, "a") as f:
            f.write(f"{mid}\t{','.join(k)}\t{s:.1f}\t{n}\n")
        log(f"{mid} {gen[mid][2]} {gen[mid][4]}: {'killed by ' + ','.join(k) if k else 'SURVIVED'} ({s:.1f}s)")
    log(f"kunit sweep: {len(ids)} mutants in {time.time() - t0:.0f}s")


# Kernel reports, as scripts/summarize.py and guest/init know them.
KERNEL_REPORTS = (
    (r"WARNING: .* at ", "kernel:WARN"), (r"KASAN", "kernel:KASAN"),
    (r"(^|[^A-Za-z_])BUG[: ]", "kernel:BUG"),
    (r"possible (recursive|circular) locking|inconsistent lock state|"
     r"bad unlock balance|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|"
     r"lock held when returning", "kernel:lockdep"),
    (r"detected stall", "kernel:rcu-stall"),
    (r"called from invalid context", "kernel:atomic-sleep"),
    (r"blocked for more than", "kernel:hung-task"),
    (r"Oops|general protection|Kernel panic|UBSAN", "kernel:crash"),
    (r"suspend held off after the tests", "kernel:suspend-held"))
KERNEL_NOISE = re.compile(r"KernelAddressSanitizer initialized|KernelAddressSanitizer.*enabled")
# In the runner's output: a program's header and result, and behind "# "
# the program's own (kselftest_harness.h) result lines.
PROG_HEADER = re.compile(r"^# selftests: filesystems/epoll: (\S+)")
PROG_RESULT = re.compile(r"^(ok|not ok) \d+ selftests: filesystems/epoll: (\S+)\s*(?:#\s*(.*))?$")
CASE_RESULT = re.compile(r"^# (ok|not ok) \d+ (\S+)\s*(?:#\s*(.*))?$")


def kernel_killers(lines):
    k = []
    for line in lines:
        if KERNEL_NOISE.search(line):
            continue
        for pat, what in KERNEL_REPORTS:
            if re.search(pat, line) and what not in k:
                k.append(what)
    return k


def parse_ktap(ktap, console):
    """({mutant: (status, killers)}, the mutant left unfinished or None)
    from one boot's KTAP (guest/init: a subtest "mutant-<id>" per mutant)
    and kernel log. A subtest's lines are indented by 4, its ABIs' runner
    output by 8, each program's own KTAP behind the runner's "# "."""
    res, cur, seg = {}, None, []
    lines = ktap.splitlines()
    if lines and not ktap.endswith("\n"):
        lines.pop()     # cut off mid-line: a boot stopped while it wrote
    for line in lines:
        m = re.match(r"^    # epoll-mutant: (\d+)$", line)
        if m:
            cur, seg = int(m.group(1)), []
            continue
        m = re.match(r"^(ok|not ok) \d+ mutant-(\d+)$", line)
        if m and cur == int(m.group(2)):
            k = (suite_killers if LAYER == "suites" else killers_of)(seg)
            res[cur] = ("killed" if m.group(1) == "not ok" or k else "survived", k)
            cur = None
            continue
        if cur is not None:
            seg.append(line)
    if cur is None:
        return res, None
    # No result: the kernel crashed or hung, or the boot's time ran out.
    # What the kernel logged after the mutant's start marker says which,
    # and the test that was running names the kill.
    after = console.split(f"epoll-mutant: start {cur}", 1)
    k = (suite_killers if LAYER == "suites" else killers_of)(seg, unfinished=True) + \
        kernel_killers(after[1].splitlines() if len(after) > 1 else [])
    return res, (cur, k)



# kselftest_harness.h's line as a test starts, behind the runner's "# ".
CASE_START = re.compile(r"^# #\s+RUN\s+(\S+) \.\.\.")


# In a suite's KTAP (guest/suite-run) behind the guest's indent: its
# header, and a test's result.
SUITE_HEADER = re.compile(r"^# (\S+): \d+ tests from ")
SUITE_CASE = re.compile(r"^(ok|not ok) \d+ (\S+)\s*(?:#\s*(.*))?$")


def program_lines(seg, add):
    """The lines of a mutant's subtest at the programs' indent (8), without
    it; add() gets the kill of each kernel report on the way."""
    for line in seg:
        if line.startswith("    # epoll-mutant: kernel: "):
            for what in kernel_killers([line]):
                add(what)
        elif line.startswith("        "):
            yield line[8:]


def suite_killers(seg, unfinished=False):
    """killers_of for a mutant's subtest of the suites (GUEST_LAYER=suites):
    <suite>:<test> of each failed test, <suite>:<test>:SKIP of each that
    skipped, kernel:<what> of the kernel's reports. The suite runner
    prints a test's result only when it ends, so a crash or a hang names
    no test."""
    k = []

    def add(what):
        if what not in k:
            k.append(what)
    suite = None
    for inner in program_lines(seg, add):
        m = SUITE_HEADER.match(inner)
        if m:
            suite = m.group(1)
            continue
        m = SUITE_CASE.match(inner)
        if m and suite:
            if (m.group(3) or "").upper().startswith("SKIP"):
                add(f"{suite}:{m.group(2)}:SKIP")
            elif m.group(1) == "not ok":
                add(f"{suite}:{m.group(2)}")
    if not k and any(re.match(r"^    not ok \d+ ", l) for l in seg):
        k.append("guest-no-result")     # a suite failed, but none of its tests did
    return k


def killers_of(seg, unfinished=False):
    """From the lines of one mutant's subtest: prog:test of each failed
    test; prog:test:SKIP of each skipped one (the guest kernel has every
    feature the tests ask for, so a mutant that makes one look absent is
    caught, as make check's verdict counts a skip); prog:TIMEOUT of a
    program that timed out, prog:exit=N of one that failed without a
    failed test; kernel:<what> of the kernel's reports. unfinished: the
    subtest ended in a crash or a hang, and prog:test:running names the
    test that had started without a result line."""
    k, prog, failed, running = [], None, False, None

    def add(what):
        if what not in k:
            k.append(what)
    for inner in program_lines(seg, add):
        m = PROG_HEADER.match(inner)
        if m:
            prog, failed, running = m.group(1), False, None
            continue
        m = CASE_START.match(inner)
        if m and prog:
            running = f"{prog}:{m.group(1)}"
            continue
        m = CASE_RESULT.match(inner)
        if m:
            running = None
        if m and prog:
            skip = (m.group(3) or "").upper().startswith("SKIP")
            if skip:
                add(f"{prog}:{m.group(2)}:SKIP")
            elif m.group(1) == "not ok":
                failed = True
                add(f"{prog}:{m.group(2)}")
            continue
        m = PROG_RESULT.match(inner)
        if m:
            d = (m.group(3) or "").strip()
            if d.upper().startswith("TIMEOUT"):
                add(f"{m.group(2)}:TIMEOUT")
            elif d.upper().startswith("SKIP"):
                add(f"{m.group(2)}:SKIP")
            elif m.group(1) == "not ok" and not failed:
                add(f"{m.group(2)}:{d.split()[0] if d else 'exit'}")
            prog, running = None, None
    if unfinished and running:
        add(f"{running}:running")
    if not k and any(re.match(r"^    not ok \d+ ", l) for l in seg):
        k.append("guest-no-result")     # an ABI failed, but no program or test did
    return k


# The last test of each program: fails when the kernel reported a bug.
REPORT_TEST = "kernel.reported_no_bug_while_the_tests_ran"

# A mutant that oopses, warns, makes KASAN report or keeps a task in
# uninterruptible sleep for HUNG_TASK_SECS ends the boot at once
# (panic=-1 reboots, QEMU exits) instead of leaving the guest wedged
# until the boot's time runs out (a task stuck on a mutex ignores the
# harness's SIGKILL). The kernel log names the report, the KTAP the test
# that was running. No test of ours sleeps on a lock for anything near
# HUNG_TASK_SECS, even under TCG.
HUNG_TASK_SECS = 30
CRASH_ARGS = ("oops=panic panic_on_warn=1 kasan.fault=panic hung_task_panic=1 "
              f"sysctl.kernel.hung_task_timeout_secs={HUNG_TASK_SECS}")
if os.environ.get("GUEST_PANIC", "1") == "0":
    CRASH_ARGS = ""


def run_guest(env, ktap):
    """run-qemu.sh, stopped when the guest's KTAP stops growing for STALL
    seconds: a mutant that wedges the kernel without an oops (a spin with
    interrupts off) would otherwise hold the boot for QEMU_TIMEOUT."""
    p = subprocess.Popen([os.path.join(REPO, "scripts", "run-qemu.sh")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    size, since = -1, time.time()
    while p.poll() is None:
        time.sleep(5)
        now = os.path.getsize(ktap) if os.path.exists(ktap) else 0
        if now != size:
            size, since = now, time.time()
        elif time.time() - since > STALL:
            log(f"no guest output for {STALL}s: stopping the boot")
            # The whole session: timeout(1) under run-qemu.sh puts QEMU
            # in a process group of its own.
            subprocess.run(["pkill", "-TERM", "-s", str(p.pid)])
            p.wait()


def job_dirs():
    return sorted(glob.glob(os.path.join(MUT, "job[0-9]*")))


def merge_jobs():
    """Add the results of the parallel guests (MUT/job<k>/guest.tsv) that
    GUEST_TSV lacks, a survivor's verdict re-read from its boot's saved
    logs with this parser (which may know more than the one that ran)."""
    start_results(GUEST_TSV, "# id\tstatus\tkillers\tboot")
    done = {int(r[0]) for r in read_results(GUEST_TSV)}
    new = []
    for d in job_dirs():
        for r in read_results(os.path.join(d, os.path.basename(GUEST_TSV))):
            mid = int(r[0])
            if mid in done:
                continue
            base = os.path.join(d, f"guest-boot-{r[3]}")
            if r[1] == "survived" and os.path.exists(base + ".ktap.log"):
                with open(base + ".ktap.log", errors="replace") as k, \
                        open(base + ".console.log", errors="replace") as c:
                    res, _ = parse_ktap(k.read(), c.read())
                if mid in res:
                    r = [r[0], res[mid][0], ",".join(res[mid][1]), r[3]]
            done.add(mid)
            new.append(r)
    with open(GUEST_TSV, "a") as f:
        for r in new:
            f.write("\t".join(r) + "\n")
    if new:
        log(f"merged {len(new)} results of {len(job_dirs())} parallel guests into {GUEST_TSV}")


def guest_parallel(todo):
    """GUEST_JOBS guests of one CPU each side by side, each on every
    GUEST_JOBS-th mutant with a results directory of its own (MUT/job<k>,
    its guest's in job<k>/<layer>/, sharing the builds). The tests mostly
    sleep (timeouts, held-up reads), so several small guests finish more
    mutants an hour than one guest of two CPUs."""
    procs = []
    for k in range(JOBS):
        part = todo[k::JOBS]
        if not part:
            continue
        d = os.path.join(MUT, f"job{k}")
        root = os.path.join(d, LAYER)
        os.makedirs(root, exist_ok=True)
        for name in ("build", "linux"):
            if not os.path.lexists(os.path.join(root, name)):
                os.symlink(os.path.realpath(os.path.join(GUEST_ROOT, name)),
                           os.path.join(root, name))
        env = dict(os.environ, MUT_OUT=d, GUEST_ROOT=root, GUEST_JOBS="1", QEMU_SMP="1")
        with open(os.path.join(d, "sweep.log"), "a") as out:
            procs.append(subprocess.Popen([os.path.abspath(__file__), "guest", *map(str, part)],
                                          env=env, stdout=out, stderr=out))
    log(f"{len(todo)} mutants on {len(procs)} guests of one CPU; progress in {MUT}/job*/sweep.log")
    for p in procs:
        p.wait()
    merge_jobs()


def moved_to_suites():
    """(pattern, suite, test) for each kselftest case of mutants/moved.tsv
    that now lives in LTP or liburing."""
    out = []
    for r in read_tsv(MOVED):
        kind, _, name = r[1].partition(":") if len(r) > 1 else ("", "", "")
        if kind in SUITES:
            out.append((r[0], kind, name))
    return out


def suite_plan():
    """{id: [test, ...]}: every mutant that a case which moved to a suite
    killed (mutants/results.tsv), with the tests written from its killers."""
    moved, plan = moved_to_suites(), {}
    for r in read_results(RESULTS):
        for k in filter(None, r[4].split(",")):
            for pat, _, test in moved:
                if fnmatch.fnmatchcase(k, pat) and test not in plan.setdefault(int(r[0]), []):
                    plan[int(r[0])].append(test)
    return plan


def cmd_guest(ids):
    merge_jobs()
    done = {int(r[0]) for r in read_results(GUEST_TSV)}
    plan = suite_plan() if LAYER == "suites" else {}
    if not ids and LAYER == "suites":
        ids = sorted(plan)
    elif not ids:
        gen, equiv = generated(), equivalents(generated())
        ids = [m for m in sorted(gen) if m not in equiv]
        if LAYER == "proof":
            dead = {int(r[0]) for r in read_results(KUNIT_TSV) if r[1]}
            dead |= {m for m, (st, _) in guest_results().items() if st == "killed"}
            ids = [m for m in ids if m not in dead]
    todo = [i for i in ids if i not in done]
    if SHUFFLE:
        # A sweep stopped early has then run on a random sample.
        random.Random(SHUFFLE).shuffle(todo)
    if JOBS > 1 and len(todo) > 1:
        t0 = time.time()
        guest_parallel(todo)
        log(f"guest sweep: {len(todo)} mutants, {JOBS} guests, {time.time() - t0:.0f}s")
        return
    if not os.path.exists(os.path.join(GUEST_ROOT, "build", "initramfs.cpio.gz")):
        sys.exit(f"mutate-sweep: no guest in {GUEST_ROOT}: run 'scripts/run-mutate.sh prepare'")
    results = os.path.join(GUEST_ROOT, "results")
    t0 = time.time()
    boot = 0
    while todo:
        boot += 1
        batch = todo[:BATCH]
        if LAYER == "suites":
            # A mutant outside the plan (ids given) runs every planned test.
            every = sorted({t for ts in plan.values() for t in ts})
            what = (f"epoll.suites={','.join(SUITES)} epoll.suite_mutants=" +
                    ",".join(f"{m}:{'+'.join(plan.get(m) or every)}" for m in batch))
        else:
            what = (f"epoll.tests={TESTS} epoll.abis={ABIS} epoll.failfast={FAILFAST} "
                    f"epoll.mutants={','.join(map(str, batch))}")
        env = dict(os.environ, OUT_DIR=GUEST_ROOT,
                   QEMU_TIMEOUT=os.environ.get("QEMU_TIMEOUT", str(300 + 120 * len(batch))),
                   QEMU_APPEND=f"kunit.enable=0 {CRASH_ARGS} {what} {APPEND}".rstrip())
        # run-qemu.sh's GUEST_RESULTS is its results directory, not the
        # result file this script's GUEST_RESULTS names.
        env.pop("GUEST_RESULTS", None)
        bt = time.time()
        for name in ("ktap.log", "console.log"):
            if os.path.exists(os.path.join(results, name)):
                os.unlink(os.path.join(results, name))
        run_guest(env, os.path.join(results, "ktap.log"))
        text = {}
        for name in ("ktap.log", "console.log"):
            try:
                with open(os.path.join(results, name), errors="replace") as f:
                    text[name] = f.read()
            except FileNotFoundError:
                text[name] = ""
            with open(os.path.join(MUT, f"guest-boot-{int(bt)}.{name}"), "w") as f:
                f.write(text[name])
        if "# epoll-mutant: no " in text["ktap.log"]:
            sys.exit("mutate-sweep: the guest kernel has no eventpoll.mutant parameter")
        res, left = parse_ktap(text["ktap.log"], text["console.log"])
        # A mutant left unfinished is killed (crash or hang), unless it
        # was not the boot's first and the kernel reported nothing: then
        # the boot's time may have run out, and it goes first next boot.
        if left and (left[0] == batch[0] or any(k.startswith("kernel:") for k in left[1])):
            res[left[0]] = ("killed", left[1] + ["crash-or-hang"])
        if not res:
            log(f"boot {boot}: no mutant ran (see {MUT}/guest-boot-{int(bt)}.*.log)")
            res = {batch[0]: ("killed", ["crash-or-hang"])}
        with open(GUEST_TSV, "a") as f:
            for mid in batch:
                if mid in res:
                    st, k = res[mid]
                    f.write(f"{mid}\t{st}\t{','.join(k)}\t{int(bt)}\n")
                    log(f"guest {mid}: {st} {','.join(k)}")
        todo = [i for i in todo if i not in res]
        log(f"boot {boot}: {len(res)} mutants in {time.time() - bt:.0f}s, {len(todo)} left")
    log(f"guest sweep: {len(ids)} mutants, {boot} boots, {time.time() - t0:.0f}s")


def posted_kunit_cases():
    """The cases of the posted KUnit suite (its mirror, kunit/)."""
    try:
        with open(os.path.join(REPO, "kunit", "eventpoll_kunit.c")) as f:
            return set(re.findall(r"KUNIT_CASE(?:_PARAM)?\((eventpoll_\w+)", f.read()))
    except FileNotFoundError:
        return set()


# The kselftest program upstream already has, which the deflake posting
# changes; the others of the posted Makefile are new.
UPSTREAM_PROGRAM = "epoll_wakeup_test"


def posted_programs():
    """The kselftest programs of the postings (their mirror, selftests/)."""
    try:
        with open(os.path.join(REPO, "selftests", "Makefile")) as f:
            text = f.read()
    except FileNotFoundError:
        return set()
    m = re.search(r"^TEST_GEN_PROGS\s*:?=((?:.*\\\n)*.*)$", text, re.M)
    return set(m[1].replace("\\\n", " ").split()) if m else set()


def wilson_interval(k, n):
    """The 95% Wilson interval of k successes in n random draws."""
    z, p = 1.96, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def posted_program_downed(ks):
    """Whether the kernel crashed or hung under a posted program (a row
    of guest-posted.tsv), rather than only reporting something."""
    ks = set(ks)
    if ks & {"kernel:BUG", "kernel:hung-task", "kernel:rcu-stall"}:
        return True
    if "kernel:crash" in ks:
        return "kernel:WARN" not in ks      # not a panic_on_warn
    return "crash-or-hang" in ks and not any(k.startswith("kernel:") for k in ks)


def layer_of(killer, cases, programs):
    """posted or proof: which tests a killer belongs to. A crash, a
    timeout or a kernel report counts for the proof layer only: the test
    did not fail, and the posted score must not guess (prog:test:running
    names the test under which it happened; a posted program that hung
    is posted_program_downed's)."""
    if killer.endswith(":running"):
        return "proof"
    if ":" in killer:
        prog = killer.split(":", 1)[0]
        return "posted" if prog in programs or prog in SUITES else "proof"
    return "posted" if killer in cases else "proof"


def guest_results():
    """{id: (status, killers)} of every guest sweep (guest*.tsv), merged."""
    out = {}
    for path in sorted(glob.glob(os.path.join(MUT, "guest*.tsv"))):
        for r in read_results(path):
            mid = int(r[0])
            st, ks = out.get(mid, ("survived", []))
            kill = [k for k in r[2].split(",") if k]
            if r[1] == "killed" or kill:
                st = "killed"
            out[mid] = (st, ks + [k for k in kill if k not in ks])
    return out


def cmd_report(ids):
    merge_jobs()
    gen = generated()
    excl = set()
    up = os.path.join(REPO, "mutants", "uncompilable")
    if os.path.exists(up):
        excl = {int(l.split("#")[0]) for l in open(up) if l.split("#")[0].strip()}
    equiv = equivalents(gen)
    invisible = equivalents(gen, INVISIBLE)
    undocumented = equivalents(gen, UNDOCUMENTED)
    race_only = equivalents(gen, RACE_ONLY)
    ku = {int(r[0]): [k for k in r[1].split(",") if k] for r in read_results(KUNIT_TSV)}
    gu = guest_results()
    suite_swept = {int(r[0]) for r in read_results(SUITES_TSV)}
    cases, programs = posted_kunit_cases(), posted_programs()
    rows = []
    st_count = {}
    for mid, g in sorted(gen.items()):
        kk = ku.get(mid)
        gs, gk = gu.get(mid, (None, []))
        if mid in excl:
            st = "uncompilable"
        elif kk or gk or gs == "killed":
            st = "killed"
        elif mid in equiv:
            st = "equivalent"
        elif kk is None and gs is None:
            st = "not-run"
        else:
            st = "survived"
        ran = ("kunit" if kk is not None else "") + ("+guest" if gs else "") + \
            ("+suites" if mid in suite_swept else "")
        note = equiv.get(mid, "")
        if st in ("survived", "killed") and mid in invisible:
            note = "not user-visible: " + invisible[mid]
        elif st in ("survived", "killed") and mid in undocumented:
            note = "no documented behaviour: " + undocumented[mid]
        elif st in ("survived", "killed") and mid in race_only:
            note = "only through a race or a fault: " + race_only[mid]
        rows.append((mid, g[2], g[4], st, ",".join((kk or []) + gk), g[1], g[3], ran or "none", note))
        st_count[st] = st_count.get(st, 0) + 1
    with open(RESULTS, "w") as f:
        f.write("# id\tfunction\toperator\tstatus\tkillers\tfile\tline\tran\tnote\n")
        f.write(stamp() + "\n")
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")

    # A kselftest case that moved to LTP or liburing no longer runs: on a
    # mutant the suites' sweep ran on, only its destination's own result
    # counts; elsewhere its kill is carried over (mutants/moved.tsv).
    to_suites = [pat for pat, _, _ in moved_to_suites()]

    def killers(r):
        return [k for k in r[4].split(",") if k and not (
            r[0] in suite_swept and any(fnmatch.fnmatchcase(k, p) for p in to_suites))]

    def wilson(a, b):
        """The 95% interval of a score measured on a sample (Wilson)."""
        if not b or b >= len([r for r in live if r[0] not in invisible]):
            return ""
        lo, hi = wilson_interval(a, b)
        return f" (a sample; 95% interval {100 * lo:.0f}-{100 * hi:.0f}%)"

    def pct(a, b):
        return f"{a}/{b} = {100 * a / b:.1f}%" if b else f"{a}/0"

    total = len(rows)
    live = [r for r in rows if r[3] in ("killed", "survived")]
    print(f"{total} mutants: " + ", ".join(f"{k} {v}" for k, v in sorted(st_count.items())))
    killed = sum(r[3] == "killed" for r in live)
    print(f"posted + proof (every test): {pct(killed, len(live))} of the non-equivalent mutants")
    # A guest that crashed or hung while only posted programs ran (the
    # posted sweep) failed them: that counts for them. A report the
    # programs themselves would not see (WARN, lockdep, ...) does not.
    downed = {int(r[0]) for path in glob.glob(os.path.join(MUT, "guest-posted*.tsv"))
              for r in read_results(path) if posted_program_downed(r[2].split(","))}
    posted = [r for r in live if r[0] in downed
              or any(layer_of(k, cases, programs) == "posted" for k in killers(r))]
    print(f"posted tests (KUnit, kselftests, LTP, liburing): {pct(len(posted), len(live))}")
    swept = {int(r[0]) for r in read_results(os.path.join(MUT, "guest-posted.tsv"))}
    samp = [r for r in live if r[0] in swept]
    if len(samp) < len(live):
        # Only a sample had the guest: the scores on it estimate all.
        print(f"on the {len(samp)} the posted guest sweep ran on: posted + proof "
              f"{pct(sum(r[3] == 'killed' for r in samp), len(samp))}"
              f"{wilson(sum(r[3] == 'killed' for r in samp), len(samp))}; posted tests "
              f"{pct(sum(r in posted for r in samp), len(samp))}"
              f"{wilson(sum(r in posted for r in samp), len(samp))}")

    def by_program(r, progs):
        return r[0] in downed or any(":" in k and k.split(":")[0] in progs and
                                     not k.endswith(":running") for k in killers(r))

    def scaled(what, base, rest, ran, killed):
        """A later sweep ran on a random part (ran) of the mutants the
        earlier ones left (rest): scale its kill rate to all of rest."""
        if not ran or len(ran) >= len(rest):
            return
        k = sum(map(killed, ran))
        lo, hi = wilson_interval(k, len(ran))
        est = lambda q: 100 * (len(base) - len(rest) + q * len(rest)) / len(base)
        print(f"{what}, estimated: {len(ran)} of the {len(rest)} left (a random part) run, "
              f"{k} killed: {est(k / len(ran)):.1f}% of {len(base)} (95% interval "
              f"{est(lo):.0f}-{est(hi):.0f}%)")

    # The programs: the posted kselftests, and the suites' tests.
    programs_and_suites = programs | set(SUITES)
    new_programs = programs_and_suites - {UPSTREAM_PROGRAM}
    vis = [r for r in samp if r[0] not in invisible]
    new = [r for r in vis if by_program(r, new_programs)]
    pk = [r for r in vis if by_program(r, programs_and_suites)]
    print(f"posted programs alone (kselftests, LTP, liburing), user-visible mutants they ran on: "
          f"{pct(len(pk), len(vis))}{wilson(len(pk), len(vis))}")
    print(f"  of which the programs the postings add (not {UPSTREAM_PROGRAM}): "
          f"{pct(len(new), len(vis))}{wilson(len(new), len(vis))}")
    # Upstream's program, and the proof guest, may have run on a random
    # part of what the programs the postings add left.
    upstream = {int(r[0]) for r in read_results(os.path.join(MUT, "guest-posted-upstream.tsv"))}
    rest = [r for r in vis if r not in new]
    scaled("posted programs alone with " + UPSTREAM_PROGRAM, vis, rest,
           [r for r in rest if r[0] in upstream], lambda r: by_program(r, programs_and_suites))
    proofed = {int(r[0]) for r in read_results(os.path.join(MUT, "guest-proof.tsv"))}
    rest = [r for r in samp if not ku.get(r[0]) and not by_program(r, new_programs)]
    scaled("posted + proof", samp, rest, [r for r in rest if r[0] in proofed],
           lambda r: r[3] == "killed")
    by_destination(live, killers, cases, programs)
    if suite_swept:
        print(f"  (LTP and liburing: their own results on the {len(suite_swept)} mutants their "
              f"sweep ran on, guest-suites.tsv; carried over from mutants/moved.tsv elsewhere)")
    print(f"  ({len([r for r in live if r[0] not in invisible])} user-visible, "
          f"{len([r for r in live if r[0] in invisible])} not: mutants/invisible.tsv)")
    # Every mutant the posted tests leave alive, and why.
    posted_ids = {r[0] for r in posted}
    why = {}
    for r in rows:
        if r[3] not in ("killed", "survived", "equivalent") or r[0] in posted_ids:
            continue
        if r[3] != "equivalent" and r[0] not in swept:
            continue        # the posted programs did not run on it
        if r[3] == "killed":
            c = "killed by the proof layer"
        elif r[3] == "equivalent":
            c = "equivalent (mutants/equivalent.tsv)"
        elif r[0] in invisible:
            c = "no effect user space can see (mutants/invisible.tsv)"
        elif r[0] in undocumented:
            c = "no documented behaviour covers it (mutants/undocumented.tsv)"
        elif r[0] in race_only:
            c = "visible only through a race or a fault (mutants/race-only.tsv)"
        else:
            c = "UNCLASSIFIED"
        why.setdefault(c, []).append(r[0])
    print(f"survivors of the posted tests: {sum(len(v) for v in why.values())}"
          + (f" (of the {len(samp)} the posted guest ran on, and the equivalent)"
             if len(samp) < len(live) else ""))
    for c, ids in sorted(why.items()):
        more = f": {' '.join(map(str, ids[:30]))}{' ...' if len(ids) > 30 else ''}" \
            if c == "UNCLASSIFIED" else ""
        print(f"  {len(ids):4d} {c}{more}")
    # The verdicts on the mutants only a race or a fault shows (their 6th
    # column; scripts/mutate.py --check checks each against its evidence).
    verdicts = {}
    for r in read_tsv(RACE_ONLY):
        verdicts.setdefault(r[5] if len(r) > 5 else "survived", []).append(int(r[0]))
    left = verdicts.get("survived", [])
    print(f"race-only.tsv: {sum(map(len, verdicts.values()))} mutants: "
          + ", ".join(f"{k} {len(v)}" for k, v in sorted(verdicts.items()) if k != "survived")
          + f"; left unkilled and unproved: {len(left)}"
          + (f" ({' '.join(map(str, left))})" if left else ""))
    by_op = {}
    for r in rows:
        d = by_op.setdefault(r[2], {})
        d[r[3]] = d.get(r[3], 0) + 1
    for op, d in sorted(by_op.items()):
        print(f"  {op:14s} " + " ".join(f"{k}={v}" for k, v in sorted(d.items())))


def by_destination(live, killers, cases, programs):
    """The posted tests' kills per destination: the KUnit suite, the
    kselftests, and LTP and liburing: their tests' own failures
    (<suite>:<test>), or a kill of the kselftest case a test was written
    from (mutants/moved.tsv) where the suites did not run (killers()
    drops the moved cases where they did)."""
    moved = [r for r in read_tsv(MOVED) if len(r) >= 2]

    def dest(k):
        if layer_of(k, cases, programs) != "posted":
            return None
        if k.split(":")[0] in SUITES:
            return k.split(":")[0]
        for pat, d in moved:
            if fnmatch.fnmatchcase(k, pat):
                return d.partition(":")[0]
        if ":" in k:
            return "kselftest" if k.split(":")[0] in programs else None
        return "kunit" if k in cases else None

    tally = {}
    for r in live:
        for d in {dest(k) for k in killers(r)} - {None}:
            tally[d] = tally.get(d, 0) + 1
    only = {}
    for r in live:
        ds = {dest(k) for k in killers(r)} - {None}
        if len(ds) == 1:
            only[next(iter(ds))] = only.get(next(iter(ds)), 0) + 1
    print("posted tests by destination (killed by it / by it alone): " + ", ".join(
        f"{d} {tally.get(d, 0)}/{only.get(d, 0)}" for d in ("kunit", "kselftest", "ltp", "liburing"))
        + f", of {len(live)}")


def guest_killer(k):
    """A killer that the guest sweep reports, not KUnit: prog:test,
    kernel:<what>, or a guest that stalled or gave no result."""
    return ":" in k or k in ("crash-or-hang", "guest-no-result")


def cmd_sample(ids):
    """make check's short mode: KUnit on SAMPLE mutants spread over
    mutants/results.tsv (killed and survived alike), each of which must
    get the verdict recorded there, and mutant 0 none."""
    n = int(os.environ.get("SAMPLE", "12"))
    rows = [r for r in read_results(RESULTS) if "kunit" in r[7]]
    if not rows:
        sys.exit(f"mutate-sweep: no KUnit verdicts in {RESULTS}")
    sample = rows[::max(1, len(rows) // n)][:n]
    k, _, cases = kunit_one(0)
    if k:
        sys.exit(f"mutate-sweep: mutant 0 (no mutation) fails KUnit: {k}")
    wrong = []
    for r in sample:
        rec = [x for x in r[4].split(",") if x and not guest_killer(x)]
        k, secs, _ = kunit_one(int(r[0]))
        ok = bool(k) == bool(rec)
        log(f"{r[0]} {r[1]} {r[2]}: {'killed' if k else 'survived'}, recorded "
            f"{'killed' if rec else 'survived'} ({secs:.1f}s){'' if ok else ' MISMATCH'}")
        if not ok:
            wrong.append(r[0])
    if wrong:
        sys.exit(f"mutate-sweep: mutants {', '.join(wrong)} no longer get their recorded "
                 f"KUnit verdict: the series or the tests changed since mutants/results.tsv; "
                 f"run 'make mutate'")
    log(f"{len(sample)} sampled mutants get their recorded KUnit verdicts; mutant 0 passes "
        f"{cases} cases")


def cmd_seed(ids):
    if ids:
        sys.exit("mutate-sweep: seed takes no ids")
    for path in (KUNIT_TSV, GUEST_TSV, SUITES_TSV):
        if os.path.exists(path):
            sys.exit(f"mutate-sweep: {path} exists: seed only fills an empty {MUT}")
    rows = read_results(RESULTS)
    if not rows:
        sys.exit(f"mutate-sweep: no results in {RESULTS}")
    os.makedirs(MUT, exist_ok=True)
    start_results(KUNIT_TSV, "# id\tkillers\tseconds\tcases")
    start_results(GUEST_TSV, "# id\tstatus\tkillers\tboot")
    start_results(SUITES_TSV, "# id\tstatus\tkillers\tboot")
    with open(KUNIT_TSV, "a") as ku, open(GUEST_TSV, "a") as gu, open(SUITES_TSV, "a") as su:
        for r in rows:
            killers = [k for k in r[4].split(",") if k]
            kk = [k for k in killers if not guest_killer(k)]
            sk = [k for k in killers if k.split(":")[0] in SUITES]
            gk = [k for k in killers if guest_killer(k) and k not in sk]
            if "kunit" in r[7]:
                ku.write(f"{r[0]}\t{','.join(kk)}\t0\t0\n")
            if "guest" in r[7]:
                st = "killed" if gk else "survived"
                gu.write(f"{r[0]}\t{st}\t{','.join(gk)}\tseed\n")
            if "suites" in r[7]:
                st = "killed" if sk else "survived"
                su.write(f"{r[0]}\t{st}\t{','.join(sk)}\tseed\n")
    log(f"seeded {KUNIT_TSV}, {GUEST_TSV} and {SUITES_TSV} from {RESULTS} ({len(rows)} mutants)")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 1)
    ids = [int(x) for x in sys.argv[2:]]
    {"kunit": cmd_kunit, "guest": cmd_guest, "report": cmd_report,
     "seed": cmd_seed, "sample": cmd_sample}[sys.argv[1]](ids)


if __name__ == "__main__":
    main()
