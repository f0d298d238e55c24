# SPDX-License-Identifier: GPL-2.0
#
# Entry points; each stage is one script in scripts/ (see README.md).

SHELL := /bin/bash
OUT_DIR ?= $(CURDIR)/out
ifeq ($(filter /%,$(OUT_DIR)),)
$(error OUT_DIR must be an absolute path, not '$(OUT_DIR)')
endif
ifeq ($(abspath $(OUT_DIR)),/)
$(error OUT_DIR must not be /)
endif
# Settings the scripts read (make help lists them).
export OUT_DIR KERNEL_TREE KERNEL_BASE JOBS FORCE QEMU_APPEND EPOLL_CACHE_DIR \
	DURATION SEED KCSAN BENCH_BOOTS BENCH_ICOUNT BENCH_SCALE BENCH_CHECK BENCH_SEED \
	BENCH_SMP1_BOOTS BENCH_NATIVE_ROUNDS BENCH_PERF_REPS \
	GUEST_JOBS GUEST_TESTS GUEST_PANIC GUEST_ARCH QEMU_CPU SUBMIT_FROM FRESH

S := scripts
RESULTS := $(OUT_DIR)/results
STAGE := $(S)/stage.sh
EXPECT_KUNIT = $$([ ! -f $(OUT_DIR)/linux/fs/tests/.kunitconfig ] || echo --expect-kunit)

# make check builds the matrix short: the postings against the base
# (-q -t), in the configurations no other stage of make check compiles
# alike. Left to make matrix (every patch, every configuration):
# x86_64-gcc (the bisect stage builds every patch with x86_64 gcc and
# sparse), arm64-gcc (64-bit gcc with W=1: the x86_64-no-* one),
# x86_64-no-pm-sleep (KUnit on UML without PM_SLEEP builds and runs it)
# and x86_64-no-io-uring (x86_64-no-epoll builds the same io_uring and
# eventpoll headers the other way).
MATRIX_CHECK_CONFIGS ?= x86_64-clang-debug i386-gcc arm-gcc x86_64-no-epoll
MATRIX_CHECK_FLAGS ?= -q -t $(foreach c,$(MATRIX_CHECK_CONFIGS),-c $(c))

# make check also runs bench/'s short correctness mode (epoll_server
# --check, epoll_oneshot_window --check) in the guest; make check
# BENCH_CHECK= leaves it out. Its short mode of mutation testing is the
# mutate-sample stage.
check: BENCH_CHECK = 1

# The guest: its debug kernel runs the KUnit suite at boot (with
# CONFIG_PM_SLEEP, under KASAN and lockdep), then the kselftests as four
# users, then LTP's and liburing's epoll tests with our postings.
define guest_stages
	$(STAGE) kernel $(S)/build-kernel.sh
	$(STAGE) selftests $(S)/build-selftests.sh
	$(if $(filter arm64,$(GUEST_ARCH)),,$(STAGE) ltp $(S)/build-ltp-tests.sh)
	$(if $(filter arm64,$(GUEST_ARCH)),,$(STAGE) liburing $(S)/build-liburing-tests.sh)
	$(STAGE) initramfs $(S)/make-initramfs.sh
	$(STAGE) -k qemu $(S)/run-qemu.sh
endef

define fresh_results
	$(S)/check-disk.sh
	mkdir -p $(RESULTS)
	rm -f $(RESULTS)/{stages.tsv,summary.*,console.log,kunit-uml.*,kunit-uml-nopm.*}
	$(STAGE) deps $(S)/install-deps.sh
	$(STAGE) apply $(S)/apply-series.sh
endef

.PHONY: help run check deps tree kunit kernel selftests initramfs qemu guests \
	summary arm64 lint lint-series lint-docs htmldocs backport matrix mutate stress \
	bench event-loop export submit mail-roundtrip suites litmus clean

help:
	@sed -n 's/^## //p' $(firstword $(MAKEFILE_LIST))
	@printf '%s\n' '' 'Variables (make VAR=value target, or in the environment):' \
	  '  OUT_DIR       absolute path for trees, builds, results (default: ./out)' \
	  '  KERNEL_TREE   a kernel git tree to use instead of Debian'"'"'s linux-source-7.3' \
	  '  KERNEL_BASE   the commit of KERNEL_TREE to apply to (default: its HEAD)' \
	  '  JOBS          parallel make jobs (default: nproc)' \
	  '  FORCE=1       make tree/run/check: set unexported work in out/linux aside' \
	  '  FRESH=1       make check: run the build and lint stages even when they passed with the same inputs' \
	  '  QEMU_APPEND   more guest command line, e.g. epoll.tests=epoll_ctl_disable_test' \
	  '  GUEST_ARCH    the guest stages'"'"' architecture: x86_64 (default) or arm64 (make arm64 sets it)' \
	  '  QEMU_CPU      the arm64 guest'"'"'s CPU model (default: max)' \
	  '  STEP          make mutate: only prepare, prepare-kunit, kunit, guest, report or seed (default: all)' \
	  '  GUEST_JOBS    make mutate: guests of one CPU side by side in the guest sweep (default: 1)' \
	  '  GUEST_LAYER   make mutate STEP=guest: posted (the posted programs, every mutant), proof (the rest) or suites (LTP, liburing)' \
	  '  GUEST_TESTS   make mutate: the kselftest programs of the guest sweep (default: the layer'"'"'s)' \
	  '  GUEST_SHUFFLE make mutate: a seed; the guest sweep in random order, so that a stopped one is a sample' \
	  '  SAMPLE        make check: mutants in the KUnit sample of the mutate-sample stage (default: 12)' \
	  '  GUEST_PANIC   make mutate: 0 lets the guest go on after a kernel report, for the tests to see it (default: 1)' \
	  '  DURATION      make stress: seconds of stress per ABI (default: 450)' \
	  '  SEED          make stress: EPOLL_STRESS_SEED, to replay a run' \
	  '  KCSAN=1       make stress: a KCSAN kernel (built in out/kcsan) instead of KASAN' \
	  '  BENCH_CHECK   1: bench/'"'"'s --check runs in the -m64 kselftests (make check: 1, else empty)' \
	  '  BENCH_BOOTS   make bench: boots of each kernel (default: 5)' \
	  '  BENCH_ICOUNT  make bench: QEMU -icount value (default: shift=1,sleep=off; none: no -icount)' \
	  '  BENCH_SCALE   make bench: factor on the microbenchmarks'"'"' iteration counts (default: 1)' \
	  '  BENCH_SEED    make bench: seed of the boot and variant orders, printed in the report (default: 1)' \
	  '  BENCH_SMP1_BOOTS     make bench: boots of the patched kernel with one vCPU (default: BENCH_BOOTS)' \
	  '  BENCH_NATIVE_ROUNDS  make bench: rounds of the server on this host'"'"'s kernel (default: BENCH_BOOTS)' \
	  '  PROTON_VERSION  make event-loop: Debian'"'"'s qpid-proton source version (default: 0.37.0-2)' \
	  '  SEND=1        make submit: really send the mails (git send-email)' \
	  '  POSTING       make submit, make mail-roundtrip: only this posting (fixes, ..., ltp, liburing; default: all)' \
	  '  SUBMIT_FROM   make submit: the sender, "Name <addr>" (default: git config user.name, user.email)' \
	  '  EPOLL_CACHE_DIR  base tree and ccache, kept across clones (default: ~/.cache/eventpoll-series)'

## make run      apply the series, KUnit on UML, boot the guest, run the kselftests
run:
	$(fresh_results)
	$(STAGE) -k kunit-uml $(S)/run-kunit.sh
	$(guest_stages)
	$(S)/summarize.py $(RESULTS) $(EXPECT_KUNIT)

## make check    what CI runs: series and lint checks, the guest, KUnit on UML without PM_SLEEP, builds
check:
	$(fresh_results)
	$(STAGE) -c check-series $(S)/check-series.sh
	$(STAGE) check-series-self-test $(S)/check-series.sh --self-test
	$(STAGE) -c check-external $(S)/check-external.sh
	$(STAGE) mutate-list $(S)/run-mutate.sh --check
	$(STAGE) -k mutate-sample $(S)/run-mutate.sh sample
	$(STAGE) -c checkpatch $(S)/lint-series.sh checkpatch
	$(STAGE) -c mail-roundtrip $(S)/check-mail.sh
	$(STAGE) -c lint-docs $(S)/lint-docs.sh $(OUT_DIR)/linux
	$(STAGE) -c htmldocs $(S)/check-htmldocs.sh $(OUT_DIR)/linux
	$(STAGE) -c litmus $(S)/check-litmus.sh
	$(guest_stages)
	$(STAGE) -k -c $(foreach g,base no-io-uring no-pm-sleep,-o guest-$(g)) guests $(S)/run-guests.sh
	$(STAGE) -k -c -o arm64 arm64 $(MAKE) --no-print-directory arm64
	$(STAGE) -k kunit-uml-nopm $(S)/run-kunit.sh --no-pm-sleep
	$(STAGE) -k -c bisect-sparse-cocci $(S)/lint-series.sh build
	$(STAGE) -k -c build-matrix $(S)/build-matrix.sh $(MATRIX_CHECK_FLAGS)
	$(STAGE) -k -c backport $(S)/check-backport.sh
	$(S)/summarize.py $(RESULTS) $(EXPECT_KUNIT)

## make guests   the posted tests on kernels without PM_SLEEP, without IO_URING, and the base
guests:
	$(S)/run-guests.sh

## make deps tree kunit kernel selftests initramfs qemu summary   one stage each
deps:
	$(S)/install-deps.sh
tree:
	$(S)/apply-series.sh
kunit:
	$(S)/run-kunit.sh
kernel:
	$(S)/build-kernel.sh
selftests:
	$(S)/build-selftests.sh
initramfs:
	$(S)/make-initramfs.sh
qemu:
	$(S)/run-qemu.sh
summary:
	$(S)/summarize.py $(if $(filter arm64,$(GUEST_ARCH)),$(RESULTS)/arm64,$(RESULTS)) $(EXPECT_KUNIT)

## make arm64    the guest on arm64 (QEMU virt, TCG): its debug kernel with boot-time KUnit, the
##               kselftests (64-bit), the summary; in build/arm64/ and results/arm64/. The stages
##               one by one: GUEST_ARCH=arm64 make kernel selftests initramfs qemu summary
arm64: GUEST_ARCH = arm64
# bench/'s checks, LTP's and liburing's tests are built for x86_64 only;
# the other users' runs are x86_64's (guest/init's epoll.envs=).
arm64: BENCH_CHECK =
arm64: QEMU_APPEND += epoll.envs=
arm64:
	mkdir -p $(RESULTS)/arm64
	rm -f $(RESULTS)/arm64/{stages.tsv,summary.*,console.log,ktap.log,kunit-guest.*}
	$(STAGE) deps $(S)/install-deps.sh
	[ -f $(OUT_DIR)/series-applied ] || $(STAGE) apply $(S)/apply-series.sh
	$(guest_stages)
	$(S)/summarize.py --arch arm64 $(RESULTS)/arm64 $(EXPECT_KUNIT)
## make lint     series checks, checkpatch, bisect build + sparse + coccinelle, docs
## make lint-series lint-docs   the two halves of make lint
lint: lint-series lint-docs
lint-series:
	$(S)/check-series.sh
	$(S)/lint-series.sh
lint-docs:
	$(S)/lint-docs.sh $(OUT_DIR)/linux

## make litmus  litmus/ under herd7 and the tree's memory model: each test has the outcome it states
litmus:
	$(S)/check-litmus.sh

## make htmldocs Sphinx build of Documentation/userspace-api, base vs patched: no new warning
htmldocs:
	$(S)/check-htmldocs.sh $(OUT_DIR)/linux

## make backport the fixes posting applied to and built on 6.12 and 6.1 (Debian's sources), and
##               the KUnit test run on 6.12 with them (make check: without the KUnit run)
backport:
	$(S)/check-backport.sh --kunit

## make matrix [MATRIX="arm-gcc i386-gcc"]   every patch, objects only, on x86_64 gcc and
##               clang, i386, arm, arm64, x86_64 without PM_SLEEP/IO_URING/EPOLL: no new warning
matrix:
	$(S)/build-matrix.sh $(foreach c,$(MATRIX),-c $(c))

## make mutate  generated mutants (scripts/mutate.py), all in one kernel: KUnit on UML, kselftests in the guest
mutate:
	$(S)/run-mutate.sh $(if $(STEP),$(STEP),all)

## make stress  [DURATION=450 SEED= KCSAN=1]  long run of epoll_proof_stress_test in the guest
stress:
	$(S)/run-stress.sh

## make bench   four kernels (non-debug) in boots of a seeded random order under -icount: every
##               epoll_server variant, natively too; the costs; tables, JSON, plots in results/bench/
bench:
	@start=$$(date +%s); \
	$(S)/install-deps.sh && \
	{ [ -f $(OUT_DIR)/series-applied ] || $(S)/apply-series.sh; } && \
	$(S)/run-bench.sh; rc=$$?; \
	t=$$(($$(date +%s) - start)); \
	echo "make bench: $$((t / 60))m $$((t % 60))s in all"; \
	exit $$rc

## make event-loop  Qpid Proton's epoll proactor with bench/qpid-proton/'s EPOLL_CTL_DISABLE patch:
##               its own tests on the base and the patched kernel, table in results/event-loop/
event-loop:
	$(S)/install-deps.sh
	[ -f $(OUT_DIR)/series-applied ] || $(S)/apply-series.sh
	$(S)/run-event-loop-tests.sh

## make export   turn the commits in out/linux back into patches/, series, proof/, kunit/, selftests/
export:
	$(S)/export-series.sh

## make suites   LTP's and liburing's epoll tests with external/'s postings, static, for the guest
suites:
	$(S)/build-ltp-tests.sh
	$(S)/build-liburing-tests.sh

## make submit   each posting as mails signed by the sender (SUBMIT_FROM or git config), checked;
##               dry run (SEND=1 sends)
submit:
	$(S)/submit.sh $(if $(SEND),--send) $(POSTING)

## make mail-roundtrip  the postings as mails into local mboxes, back with b4 am and git am:
##               threading, recipients, trailers, base and prerequisites, the workbench's trees
mail-roundtrip:
	$(S)/check-mail.sh $(POSTING)

## make clean    remove build dirs and results (the cache and out/linux stay)
clean:
	rm -rf -- $(OUT_DIR)/build $(OUT_DIR)/results
