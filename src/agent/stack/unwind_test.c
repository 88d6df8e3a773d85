/* SPDX-License-Identifier: MIT */
/*
 * Tests of the agent's unwinder on this process's real stacks.  Built with
 * -fomit-frame-pointer, linked with tests/fixtures/src/agent/stack/unwind_fixture.c
 * (a shared library built -O2 -fomit-frame-pointer) and -rdynamic, so that
 * dladdr1() gives the range of the test's own functions.  The dlopen tests
 * load libunwind-dl.so (tests/fixtures/src/agent/stack/unwind_dl.c) from the
 * directory of this executable, or from $PLATEAU_UNWIND_DL.
 *
 * Stacks are taken in a SIGPROF handler (raise() or per-thread timers) and by
 * agent_unwind_here(), then checked frame by frame against the functions'
 * address ranges and against glibc's backtrace() (libgcc's unwinder) taken
 * on the same call path outside the handler.  Only the unwinder must avoid
 * the loader: the tests use dladdr and backtrace freely, outside handlers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/userfaultfd.h>

#include "agent/stack/unwind.h"

#define TEST __attribute__((noinline, visibility("default")))
#define MAXF 128

/* tests/fixtures/src/agent/stack/unwind_fixture.c */
typedef void (*fx_cb)(void *arg);
void fx_level1(fx_cb cb, void *arg);
void fx_aligned(fx_cb cb, void *arg);
void fx_drap(fx_cb cb, void *arg, size_t n);
void fx_nocfi(fx_cb cb, void *arg);
void fx_rbx(fx_cb cb, void *arg);
uint64_t fx_spin(uint64_t rounds);
uint64_t fx_spin_leaf(uint64_t x);
extern volatile uintptr_t fx_ra[4];
extern volatile uintptr_t fx_spin_ra, fx_aligned_ra, fx_drap_ra;

/* Exported (-rdynamic) so that pc_in() finds them. */
void sample_now(void);
void cb_sample(void *arg);
void cb_here(void *arg);
void cb_nop(void *arg);
void cb_drap(void *arg);
void cb_rbx(void *arg);
void lazy_hook(void);
void walk_one(const void *uc);
int cmp_sample(const void *a, const void *b);
void sort_sampled(void);
void call_nocfi(void);

struct sample {
	uintptr_t pcs[MAXF];
	size_t n;
	bool truncated;
};

enum mode { MODE_ONE, MODE_TIMER, MODE_STRESS };

static volatile sig_atomic_t mode;
static __thread uintptr_t t_lo, t_hi; /* this thread's stack */
static volatile uint64_t sink;

/* MODE_ONE: the walks of the last raise(), with several bounds. */
static struct sample s_full, s_free, s_cut, s_low, s_max, s_here;
static uintptr_t cut_at; /* an address on the stack, between the handler and the test */

/* sample_now(): its return address and the backtrace() it took first. */
static uintptr_t sample_ra, bt[MAXF];
static size_t bt_n;
static uintptr_t cb_ra; /* return address into cb_sample's caller */

TEST void walk_one(const void *uc)
{
	s_full.n = agent_unwind_signal(uc, t_lo, t_hi, s_full.pcs, MAXF, &s_full.truncated);
	s_free.n = agent_unwind_signal(uc, 0, 0, s_free.pcs, MAXF, &s_free.truncated);
	s_cut.n = agent_unwind_signal(uc, t_lo, cut_at, s_cut.pcs, MAXF, &s_cut.truncated);
	s_low.n = agent_unwind_signal(uc, cut_at, t_hi, s_low.pcs, MAXF, &s_low.truncated);
	s_max.n = agent_unwind_signal(uc, t_lo, t_hi, s_max.pcs, 3, &s_max.truncated);
	/* as a hook running in a signal handler would: through the sigreturn frame */
	s_here.n = agent_unwind_here(t_lo, t_hi, s_here.pcs, MAXF, 0, &s_here.truncated);
}

/* MODE_TIMER and MODE_STRESS: samples of one thread, kept for checks after the fact. */
#define RING_MAX 2000
static struct sample ring[RING_MAX];
static atomic_int ring_n;
static atomic_int ring_tid;			   /* the thread whose samples go to ring */
static atomic_long ring_samples, ring_truncated;   /* all of its samples, kept or not */
static atomic_long other_samples, other_truncated; /* the other threads' */

static void record(const void *uc)
{
	int i = atomic_load(&ring_n);
	bool free_bounds = i & 1; /* every other sample takes the process_vm_readv path */
	struct sample s;

	s.n = agent_unwind_signal(uc, free_bounds ? 0 : t_lo, free_bounds ? 0 : t_hi, s.pcs, MAXF,
				  &s.truncated);
	if (s.truncated)
		atomic_fetch_add(&ring_truncated, 1);
	if (i < RING_MAX) {
		ring[i] = s;
		atomic_store(&ring_n, i + 1);
	}
	atomic_fetch_add(&ring_samples, 1);
}

/* The last pcs of the refresher's truncated samples. */
#define STOPS_MAX 256
static uintptr_t stops[STOPS_MAX];
static atomic_int stops_n;

static void other_sample(const void *uc)
{
	struct sample s;
	int i;

	s.n = agent_unwind_signal(uc, t_lo, t_hi, s.pcs, MAXF, &s.truncated);
	atomic_fetch_add(&other_samples, 1);
	if (!s.truncated)
		return;
	atomic_fetch_add(&other_truncated, 1);
	i = atomic_fetch_add(&stops_n, 1);
	if (i < STOPS_MAX)
		stops[i] = s.pcs[s.n - 1];
}

/*
 * The refresher's walks may stop only in code loaded after the last refresh
 * (the fixture's constructors and destructors run inside dlopen/dlclose):
 * now that it is unloaded, no loaded module holds those pcs.
 */
static void check_refresher_stops(void)
{
	int i, n = atomic_load(&stops_n);
	Dl_info info;

	for (i = 0; i < n && i < STOPS_MAX; i++)
		if (dladdr((void *)stops[i], &info))
			fail_msg("a walk stopped at %#lx in %s (%s)", (unsigned long)stops[i],
				 info.dli_fname, info.dli_sname ? info.dli_sname : "?");
}

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)sig;
	(void)si;
	if (mode == MODE_ONE) {
		walk_one(uc);
	} else if (gettid() == atomic_load(&ring_tid)) {
		record(uc);
	} else {
		other_sample(uc);
	}
	errno = saved;
}

static void set_stack_bounds(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
	assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
	pthread_attr_destroy(&attr);
	t_lo = (uintptr_t)addr;
	t_hi = t_lo + size;
}

/* ---- helpers ---- */

/* Whether PC lies inside the dynamic symbol NAME (dladdr1's symbol size). */
static bool pc_in(uintptr_t pc, const char *name)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!dladdr1((void *)pc, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_sname || !sym)
		return false;
	return strcmp(info.dli_sname, name) == 0 && pc >= (uintptr_t)info.dli_saddr &&
	       pc < (uintptr_t)info.dli_saddr + sym->st_size;
}

static bool pc_in_file(uintptr_t pc, const char *part)
{
	Dl_info info;

	return dladdr((void *)pc, &info) && info.dli_fname && strstr(info.dli_fname, part);
}

static size_t find_pc(const struct sample *s, uintptr_t pc)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->pcs[i] == pc)
			return i;
	fail_msg("pc %#lx not in the walk of %zu frames", (unsigned long)pc, s->n);
	return 0;
}

static void tables_ready(void)
{
	assert_int_equal(agent_unwind_refresh(), 0);
}

static void assert_same(const struct sample *a, const struct sample *b)
{
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->pcs, b->pcs, a->n * sizeof(a->pcs[0]));
	assert_int_equal(a->truncated, b->truncated);
}

/*
 * From sample_now's caller to the outermost frame, the walk S is exactly the
 * backtrace() taken in sample_now (its return addresses minus 1).  Under
 * ASan backtrace() is intercepted and has one more frame on top: the
 * comparison starts at sample_now's return address in both.
 */
static size_t assert_matches_backtrace(const struct sample *s)
{
	size_t k = find_pc(s, sample_ra - 1), m, i;

	for (m = 0; m < bt_n && bt[m] != sample_ra; m++)
		;
	assert_true(m < bt_n);
	assert_int_equal(s->n - k, bt_n - m);
	for (i = 0; m + i < bt_n; i++)
		assert_int_equal(s->pcs[k + i] + 1, bt[m + i]);
	assert_false(s->truncated);
	assert_true(k >= 1 && pc_in(s->pcs[k - 1], "sample_now"));
	return k;
}

/* Take a backtrace, then a signal, on the same path. */
TEST void sample_now(void)
{
	void *b[MAXF];
	int i, n;

	sample_ra = (uintptr_t)__builtin_return_address(0);
	n = backtrace(b, MAXF);
	for (i = 0; i < n; i++)
		bt[i] = (uintptr_t)b[i];
	bt_n = (size_t)n;
	raise(SIGPROF);
	sink++;
}

TEST void cb_sample(void *arg)
{
	(void)arg;
	cb_ra = (uintptr_t)__builtin_return_address(0);
	sample_now();
	sink++;
}

/* One frame of an expected walk: the function it lies in, and its return address (0: any). */
struct hop {
	const char *fn;
	uintptr_t ra;
};

/* From frame K of S on: frame K + i lies in HOPS[i].fn, and frame K + i + 1 is its ra - 1. */
static void assert_hops(const struct sample *s, size_t k, const struct hop *hops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_true(s->n > k + i + (hops[i].ra != 0));
		assert_true(pc_in(s->pcs[k + i], hops[i].fn));
		if (hops[i].ra)
			assert_int_equal(s->pcs[k + i + 1], hops[i].ra - 1);
	}
}

/* The fixture chain in S after cb_sample: fx_level3, 2, 1, then the test at RA. */
static void assert_fixture_chain(const struct sample *s, size_t k)
{
	const struct hop hops[] = {
		{"cb_sample", cb_ra},
		{"fx_level3", fx_ra[3]},
		{"fx_level2", fx_ra[2]},
		{"fx_level1", fx_ra[1]},
	};

	assert_hops(s, k, hops, 4);
}

/* HERE, walked inside the handler, continues through the signal frame into FULL. */
static void assert_sigframe_tail(const struct sample *here, const struct sample *full)
{
	size_t j;

	assert_false(here->truncated);
	assert_true(here->n > full->n);
	j = here->n - full->n;
	assert_memory_equal(here->pcs + j, full->pcs, full->n * sizeof(uintptr_t));
	assert_true(pc_in(here->pcs[0], "walk_one"));
}

/* ---- tests ---- */

static void test_refresh(void **state)
{
	struct agent_unwind_stats a, b;
	uintptr_t pcs[4];
	bool truncated = false;

	(void)state;
	agent_unwind_stats(&a);
	if (a.refreshes == 0) {
		/* No table yet: the walk stops after its first pc, truncated. */
		assert_int_equal(agent_unwind_here(t_lo, t_hi, pcs, 4, 0, &truncated), 1);
		assert_true(truncated);
	}
	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&a);
	print_message("# refresh: %zu modules, %zu rows, %zu KiB, %zu without CFI, %zu bad FDEs, "
		      "%.3f ms\n",
		      a.modules, a.rows, a.bytes / 1024, a.bad_modules, a.bad_fdes,
		      (double)a.last_refresh_ns / 1e6);
	/* exe, fixture, cmocka, libc, libgcc_s, ld.so and the vDSO at least */
	assert_true(a.modules >= 7);
	assert_int_equal(a.bad_modules, 0);
	assert_int_equal(a.bad_fdes, 0);
	assert_true(a.rows > 10000); /* libc alone has ~3700 FDEs */
	assert_true(a.bytes >= a.rows * 12);

	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&b);
	print_message("# refresh again (all reused): %.3f ms\n", (double)b.last_refresh_ns / 1e6);
	assert_int_equal(b.parsed, a.parsed);
	assert_int_equal(b.reused - a.reused, b.modules);
	assert_int_equal(b.modules, a.modules);
	assert_int_equal(b.rows, a.rows);
	assert_int_equal(b.leaked, 0);
}

/* A signal in libc's raise(), under cb_sample called through the fixture. */
static void test_signal_fixture(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_level1(cb_sample, NULL);
	assert_true(pc_in_file(s_full.pcs[0], "libc.so"));
	k = assert_matches_backtrace(&s_full);
	assert_fixture_chain(&s_full, k);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

static uintptr_t cb_drap_ra;

TEST void cb_drap(void *arg)
{
	cb_drap_ra = (uintptr_t)__builtin_return_address(0);
	fx_drap(cb_sample, arg, 24);
	sink++;
}

/* Through realigned frames: CFA = rbp + 16, then CFA = *(rbp - 8) with rbp at [rbp]. */
static void test_signal_realigned(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_aligned(cb_drap, NULL);
	k = assert_matches_backtrace(&s_full);
	assert_hops(&s_full, k,
		    (const struct hop[]){{"cb_sample", cb_ra},
					 {"fx_drap", fx_drap_ra},
					 {"cb_drap", cb_drap_ra},
					 {"fx_aligned", fx_aligned_ra}},
		    4);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

#define JUNK ((uintptr_t)0x1230) /* a word that is no return address */

/*
 * Walk a made-up context at PC whose stack holds a zero return address at
 * word RA_AT and junk everywhere else: the right CFA rule reads the zero and
 * ends the walk after one frame; a wrong one returns into junk, and the
 * frame-pointer fallback stops at the junk rbp (both truncated).
 */
static void assert_ends_at(uintptr_t pc, size_t ra_at)
{
	uintptr_t stack[8], pcs[4];
	bool truncated = true;
	ucontext_t uc;
	size_t i;

	for (i = 0; i < 8; i++)
		stack[i] = i == ra_at ? 0 : JUNK;
	memset(&uc, 0, sizeof(uc));
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)stack;
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)JUNK;
	assert_int_equal(agent_unwind_signal(&uc, (uintptr_t)stack, (uintptr_t)(stack + 8), pcs, 4,
					     &truncated),
			 1);
	assert_int_equal(pcs[0], pc);
	assert_false(truncated);
}

/*
 * An interrupted lazy PLT stub (jmp *GOT; push $index; jmp PLT0): CFA =
 * rsp + 8 up to the push, rsp + 16 after it.  The stub is the target of
 * fx_level2's call to fx_level3 (the call rel32 before fx_ra[3]).
 */
static void test_signal_plt(void **state)
{
	uintptr_t ra, plt;
	int32_t rel;

	(void)state;
	tables_ready();
	fx_level1(cb_nop, NULL);
	ra = fx_ra[3];
	assert_int_equal(*(const uint8_t *)(ra - 5), 0xe8);
	memcpy(&rel, (const void *)(ra - 4), 4);
	plt = ra + (uintptr_t)(intptr_t)rel;
	assert_false(pc_in(plt, "fx_level3")); /* a stub, not the function */
	assert_ends_at(plt, 0);
	assert_ends_at(plt + 6, 0);
	assert_ends_at(plt + 11, 1);
}

static uintptr_t nocfi_ra;
static struct sample nocfi_ref;

TEST void call_nocfi(void)
{
	nocfi_ra = (uintptr_t)__builtin_return_address(0);
	nocfi_ref.n = agent_unwind_here(t_lo, t_hi, nocfi_ref.pcs, MAXF, 0, &nocfi_ref.truncated);
	fx_nocfi(cb_sample, NULL);
	sink++;
}

/* Code without CFI that keeps a frame pointer: the walk follows rbp through it. */
static void test_signal_nocfi(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	call_nocfi();
	k = find_pc(&s_full, sample_ra - 1);
	assert_hops(&s_full, k,
		    (const struct hop[]){
			    {"cb_sample", cb_ra}, {"fx_nocfi", 0}, {"call_nocfi", nocfi_ra}},
		    3);
	/* from call_nocfi's caller on, the frames agent_unwind_here saw there */
	assert_false(nocfi_ref.truncated);
	assert_int_equal(s_full.n - (k + 3), nocfi_ref.n - 1);
	assert_memory_equal(s_full.pcs + k + 3, nocfi_ref.pcs + 1,
			    (nocfi_ref.n - 1) * sizeof(uintptr_t));
	assert_false(s_full.truncated);
	assert_same(&s_free, &s_full);
}

static uintptr_t cb_rbx_ra;

/* Between fx_rbx and cb_sample: saves rbx (its CFI says where) and leaves junk in it. */
TEST void cb_rbx(void *arg)
{
	cb_rbx_ra = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("mov %0, %%rbx" : : "i"(JUNK) : "rbx");
	cb_sample(arg);
	sink++;
}

/*
 * Through a frame whose CFA is rbx + 16 (as ld.so's lazy-binding resolver's
 * is), with rbx changed below it: the walk restores rbx from cb_rbx's save
 * slot.  Without that the walk ends at fx_rbx, truncated.
 */
static void test_signal_rbx(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_rbx(cb_rbx, NULL);
	k = assert_matches_backtrace(&s_full);
	assert_hops(
		&s_full, k,
		(const struct hop[]){{"cb_sample", cb_ra}, {"cb_rbx", cb_rbx_ra}, {"fx_rbx", 0}},
		3);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

static const char *fixture_path(const char *name);

static uintptr_t lazy_hook_ra; /* into the IFUNC resolver, called by ld.so */

TEST void lazy_hook(void)
{
	lazy_hook_ra = (uintptr_t)__builtin_return_address(0);
	raise(SIGPROF);
	sink++;
}

/*
 * A signal inside ld.so's lazy-binding resolver, deterministically: the
 * fixture's first call of an IFUNC symbol through its lazy PLT runs the
 * IFUNC resolver on the stack of _dl_fixup and _dl_runtime_resolve_* (CFA =
 * rbx + N), and the resolver calls lazy_hook.  The walk goes through ld.so
 * to fx_lazy_call and this test, and ends at the outermost frame.
 */
static void test_signal_lazy_resolver(void **state)
{
	void *h = dlopen(fixture_path("libunwind-lazy.so"), RTLD_LAZY | RTLD_LOCAL);
	void (**hook)(void);
	int (*call)(void);
	volatile uintptr_t *ra;
	size_t k, j, in_ld = 0;

	(void)state;
	assert_non_null(h);
	hook = (void (**)(void))dlsym(h, "fx_lazy_hook");
	*(void **)&call = dlsym(h, "fx_lazy_call");
	ra = (volatile uintptr_t *)dlsym(h, "fx_lazy_ra");
	assert_true(hook && call && ra);
	*hook = lazy_hook;
	tables_ready();
	mode = MODE_ONE;
	s_full.n = 0;
	assert_int_equal(call(), 43);
	assert_true(s_full.n > 0); /* the hook ran: the binding was lazy */
	k = find_pc(&s_full, lazy_hook_ra - 1);
	j = find_pc(&s_full, *ra - 1);
	assert_true(j > k + 1);
	for (size_t i = k + 1; i < j; i++)
		in_ld += pc_in_file(s_full.pcs[i], "ld-linux");
	assert_true(in_ld >= 1);
	assert_true(pc_in(s_full.pcs[j - 1], "fx_lazy_call"));
	assert_false(s_full.truncated);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
	*hook = NULL;
}

/* The vDSO is a module too: at the entry of its clock_gettime, CFA = rsp + 8. */
static void test_signal_vdso(void **state)
{
	uintptr_t fn;
	void *vdso;

	(void)state;
	tables_ready();
	vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(vdso);
	fn = (uintptr_t)dlsym(vdso, "__vdso_clock_gettime");
	assert_true(fn != 0);
	assert_ends_at(fn, 0);
	dlclose(vdso);
}

static int cmp_calls;
static uintptr_t sort_ra;

TEST int cmp_sample(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (++cmp_calls == 20)
		sample_now();
	return (x > y) - (x < y);
}

TEST void sort_sampled(void)
{
	int v[64], i;

	sort_ra = (uintptr_t)__builtin_return_address(0);
	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	cmp_calls = 0;
	qsort(v, 64, sizeof(v[0]), cmp_sample);
	sink += (uint64_t)v[0];
}

/* A signal in a comparator called by qsort (libc, no frame pointers). */
static void test_signal_qsort(void **state)
{
	size_t k, j, in_libc = 0;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	sort_sampled();
	k = assert_matches_backtrace(&s_full);
	assert_true(pc_in(s_full.pcs[k], "cmp_sample"));
	/* qsort and its merge sort; under ASan, the sanitizer's own qsort */
	for (j = k + 1; j < s_full.n && !pc_in(s_full.pcs[j], "sort_sampled"); j++)
		in_libc += pc_in_file(s_full.pcs[j], "libc.so") ||
			   pc_in_file(s_full.pcs[j], "libasan.so");
	assert_true(in_libc >= 1);
	assert_true(j + 1 < s_full.n);
	assert_int_equal(s_full.pcs[j + 1], sort_ra - 1);
	assert_same(&s_free, &s_full);
}

/* Bounds that cut the stack truncate the walk cleanly; MAX does too. */
static void test_signal_bounds(void **state)
{
	volatile char here;
	size_t i;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	cut_at = (uintptr_t)&here; /* below this test's frame, above the fixture's */
	fx_level1(cb_sample, NULL);
	assert_false(s_full.truncated);
	assert_true(s_cut.truncated);
	assert_true(s_cut.n >= 1 && s_cut.n < s_full.n);
	for (i = 0; i < s_cut.n; i++)
		assert_int_equal(s_cut.pcs[i], s_full.pcs[i]);
	/* Up to this test's frame, whose return address lies above the cut. */
	assert_int_equal(s_cut.n, find_pc(&s_full, fx_ra[1] - 1) + 1);
	/* Nothing readable: only the interrupted pc. */
	assert_int_equal(s_low.n, 1);
	assert_true(s_low.truncated);
	assert_int_equal(s_low.pcs[0], s_full.pcs[0]);
	assert_int_equal(s_max.n, 3);
	assert_true(s_max.truncated);
	assert_memory_equal(s_max.pcs, s_full.pcs, 3 * sizeof(uintptr_t));
	cut_at = 0;
}

static struct sample h_full, h_skip, h_free;

TEST void cb_here(void *arg)
{
	void *b[MAXF];
	int i, n;

	(void)arg;
	cb_ra = (uintptr_t)__builtin_return_address(0);
	h_full.n = agent_unwind_here(t_lo, t_hi, h_full.pcs, MAXF, 0, &h_full.truncated);
	h_skip.n = agent_unwind_here(t_lo, t_hi, h_skip.pcs, MAXF, 2, &h_skip.truncated);
	h_free.n = agent_unwind_here(0, 0, h_free.pcs, MAXF, 0, &h_free.truncated);
	n = backtrace(b, MAXF);
	for (i = 0; i < n; i++)
		bt[i] = (uintptr_t)b[i];
	bt_n = (size_t)n;
	sink++;
}

/* agent_unwind_here() from a callback several frames down. */
static void test_here(void **state)
{
	size_t m, i;

	(void)state;
	tables_ready();
	fx_level1(cb_here, NULL);
	assert_false(h_full.truncated);
	assert_true(pc_in(h_full.pcs[0], "cb_here"));
	assert_int_equal(h_full.pcs[1], cb_ra - 1);
	assert_true(pc_in(h_full.pcs[1], "fx_level3"));
	assert_true(pc_in(h_full.pcs[2], "fx_level2"));
	assert_true(pc_in(h_full.pcs[3], "fx_level1"));
	assert_int_equal(h_full.pcs[4], fx_ra[1] - 1);
	/* the rest is backtrace()'s */
	for (m = 0; m < bt_n && bt[m] != cb_ra; m++)
		;
	assert_int_equal(h_full.n - 1, bt_n - m);
	for (i = 0; m + i < bt_n; i++)
		assert_int_equal(h_full.pcs[1 + i] + 1, bt[m + i]);
	/* SKIP drops frames; 0/0 bounds give the same frames (pcs[0] is another call). */
	assert_int_equal(h_skip.n, h_full.n - 2);
	assert_memory_equal(h_skip.pcs, h_full.pcs + 2, h_skip.n * sizeof(uintptr_t));
	assert_false(h_skip.truncated);
	assert_int_equal(h_free.n, h_full.n);
	assert_memory_equal(h_free.pcs + 1, h_full.pcs + 1, (h_free.n - 1) * sizeof(uintptr_t));
	assert_false(h_free.truncated);
	/* No room at all. */
	assert_int_equal(agent_unwind_here(t_lo, t_hi, NULL, 0, 0, NULL), 0);
}

static char dl_path[PATH_MAX];

/* The library NAME beside this executable. */
static const char *fixture_path(const char *name)
{
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", dl_path, sizeof(dl_path) - 32);
	assert_true(n > 0);
	dl_path[n] = '\0';
	slash = strrchr(dl_path, '/');
	assert_non_null(slash);
	assert_true(strlen(name) < 31);
	memcpy(slash + 1, name, strlen(name) + 1);
	return dl_path;
}

static const char *dl_fixture(void)
{
	const char *env = getenv("PLATEAU_UNWIND_DL");

	return env ? env : fixture_path("libunwind-dl.so");
}

/* dlopen after a refresh: unknown until the next refresh; dlclose retires it. */
static void test_dlopen(void **state)
{
	struct agent_unwind_stats before, loaded, closed;
	void (*outer)(fx_cb, void *);
	volatile uintptr_t *ra;
	const char *path = dl_fixture();
	void *h;
	size_t k;

	(void)state;
	mode = MODE_ONE;
	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&before);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen %s: %s", path, dlerror());
	*(void **)&outer = dlsym(h, "dl_outer");
	ra = dlsym(h, "dl_ra");
	assert_non_null(outer);
	assert_non_null(ra);

	/* Not refreshed: the walk stops at the first pc in the new library. */
	outer(cb_sample, NULL);
	k = find_pc(&s_full, sample_ra - 1);
	assert_int_equal(s_full.n, k + 2);
	assert_int_equal(s_full.pcs[k + 1], cb_ra - 1);
	assert_true(pc_in(s_full.pcs[k + 1], "dl_inner"));
	assert_true(s_full.truncated);

	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&loaded);
	assert_int_equal(loaded.modules, before.modules + 1);
	assert_int_equal(loaded.parsed, before.parsed + 1);
	outer(cb_sample, NULL);
	k = assert_matches_backtrace(&s_full);
	assert_true(pc_in(s_full.pcs[k + 1], "dl_inner"));
	assert_true(pc_in(s_full.pcs[k + 2], "dl_outer"));
	assert_int_equal(s_full.pcs[k + 3], *ra - 1);

	assert_int_equal(dlclose(h), 0);
	assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&closed);
	assert_int_equal(closed.modules, before.modules);
	assert_int_equal(closed.retired, loaded.retired + 1);
	assert_int_equal(closed.leaked, 0);
	fx_level1(cb_sample, NULL);
	assert_fixture_chain(&s_full, assert_matches_backtrace(&s_full));
}

static timer_t thread_timer(long interval_ns)
{
	struct sigevent sev;
	struct itimerspec its = {{0, interval_ns}, {0, interval_ns}};
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev._sigev_un._tid = gettid();
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &t), 0);
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	return t;
}

/* Where a spin sample can land, innermost first. */
enum { AT_LEAF, AT_REGS, AT_MID, AT_SPIN, AT_ELSEWHERE, AT_COUNT };
static const char *const spin_fn[] = {"fx_spin_leaf", "fx_spin_regs", "fx_spin_mid", "fx_spin"};

/* The depth of a function of the chain: leaf and regs are both called by mid. */
static size_t spin_depth(int at)
{
	return at == AT_LEAF ? 0 : (size_t)at - 1;
}

/*
 * A sample of the spin loop: if it landed in the fixture, the chain up to
 * fx_spin and its caller must be there, and above fx_spin every sample has
 * the same frames as REF.  Returns where it landed.
 */
static int check_spin_sample(const struct sample *s, const struct sample *ref)
{
	size_t top, i, d;
	int at;

	if (s->truncated)
		fail_msg("truncated sample of %zu frames, pc %#lx", s->n, (unsigned long)s->pcs[0]);
	assert_int_equal(s->pcs[s->n - 1], ref->pcs[ref->n - 1]);
	for (at = 0; at < AT_ELSEWHERE && !pc_in(s->pcs[0], spin_fn[at]); at++)
		;
	if (at == AT_ELSEWHERE)
		return at;
	d = spin_depth(at);
	top = 2 - d; /* index of fx_spin's frame */
	for (i = 1; i <= top; i++)
		if (!pc_in(s->pcs[i], spin_fn[AT_MID + (int)(d + i) - 1]))
			fail_msg("frame %zu %#lx of a sample in %s is not in %s", i,
				 (unsigned long)s->pcs[i], spin_fn[at],
				 spin_fn[AT_MID + (int)(d + i) - 1]);
	assert_int_equal(s->pcs[top + 1], fx_spin_ra - 1);
	assert_int_equal(s->n - top - 1, ref->n - find_pc(ref, fx_spin_ra - 1));
	assert_memory_equal(s->pcs + top + 1, ref->pcs + find_pc(ref, fx_spin_ra - 1),
			    (s->n - top - 1) * sizeof(uintptr_t));
	return at;
}

static void check_spin_ring(int n, size_t *landed)
{
	const struct sample *ref = NULL;
	int i;

	for (i = 0; i < n && !ref; i++)
		if (!ring[i].truncated && pc_in(ring[i].pcs[0], "fx_spin_leaf"))
			ref = &ring[i];
	assert_non_null(ref);
	for (i = 0; i < n; i++)
		landed[check_spin_sample(&ring[i], ref)]++;
}

/* Timer signals at arbitrary pcs of frame-pointer-less code: every stack is whole. */
static void test_timer_spin(void **state)
{
	struct timespec start, now;
	size_t landed[AT_COUNT] = {0};
	timer_t t;
	int n;

	(void)state;
	tables_ready();
	atomic_store(&ring_n, 0);
	atomic_store(&ring_samples, 0);
	atomic_store(&ring_truncated, 0);
	atomic_store(&ring_tid, gettid());
	mode = MODE_TIMER;
	t = thread_timer(200000);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		fx_spin(50);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (atomic_load(&ring_n) < 400 && now.tv_sec - start.tv_sec < 60);
	timer_delete(t);
	mode = MODE_ONE;
	n = atomic_load(&ring_n);
	assert_true(n >= 400);
	assert_int_equal(atomic_load(&ring_truncated), 0);
	check_spin_ring(n, landed);
	print_message(
		"# %d timer samples: leaf %zu, regs %zu, mid %zu, fx_spin %zu, elsewhere %zu\n", n,
		landed[AT_LEAF], landed[AT_REGS], landed[AT_MID], landed[AT_SPIN],
		landed[AT_ELSEWHERE]);
	assert_true(landed[AT_LEAF] > 0 && landed[AT_REGS] > 0);
}

/*
 * A walker stuck inside its walk: its stack is a userfaultfd page, so the
 * process_vm_readv of the 0/0 bounds path blocks until the test fills it.
 */
struct stuck {
	int uffd;
	char *page;
	pthread_t th;
	uintptr_t pcs[8];
	size_t n;
	bool truncated;
	atomic_bool done;
};

static void *stuck_walk(void *arg)
{
	struct stuck *w = arg;
	ucontext_t uc;

	memset(&uc, 0, sizeof(uc));
	/* At a function's entry CFA = rsp + 8: the first read is [rsp]. */
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)&fx_spin_leaf;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(w->page + 64);
	w->n = agent_unwind_signal(&uc, 0, 0, w->pcs, 8, &w->truncated);
	atomic_store(&w->done, true);
	return NULL;
}

/* Start a walker and return once it is blocked in its walk; false without userfaultfd. */
static bool stuck_start(struct stuck *w)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg;
	struct uffd_msg msg;

	memset(w, 0, sizeof(*w));
	w->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (w->uffd < 0)
		return false;
	assert_int_equal(ioctl(w->uffd, UFFDIO_API, &api), 0);
	w->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(w->page != MAP_FAILED);
	reg.range.start = (uintptr_t)w->page;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	assert_int_equal(ioctl(w->uffd, UFFDIO_REGISTER, &reg), 0);
	assert_int_equal(pthread_create(&w->th, NULL, stuck_walk, w), 0);
	assert_int_equal(read(w->uffd, &msg, sizeof(msg)), sizeof(msg));
	assert_int_equal(msg.event, UFFD_EVENT_PAGEFAULT);
	return true;
}

/* Fill the page with zeros (a zero return address: the walk ends) and join. */
static void stuck_release(struct stuck *w)
{
	struct uffdio_zeropage zp = {.range = {(uintptr_t)w->page, 4096}};

	assert_int_equal(ioctl(w->uffd, UFFDIO_ZEROPAGE, &zp), 0);
	pthread_join(w->th, NULL);
	assert_true(atomic_load(&w->done));
	assert_int_equal(w->n, 1);
	assert_int_equal(w->pcs[0], (uintptr_t)&fx_spin_leaf);
	assert_false(w->truncated);
	munmap(w->page, 4096);
	close(w->uffd);
}

static atomic_bool refresher_done;

static void *refresher(void *arg)
{
	(void)arg;
	assert_int_equal(agent_unwind_refresh(), 0);
	atomic_store(&refresher_done, true);
	return NULL;
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * Refresh frees a retired table only after every walker that may use it has
 * left: with a walker stuck mid-walk, refresh waits; and when the walker
 * stays past the timeout, refresh gives up and leaks the table instead.
 */
static void test_reclaim_waits(void **state)
{
	struct agent_unwind_stats before, after;
	struct timespec t0;
	struct stuck w;
	pthread_t th;
	bool early;
	void *h;

	(void)state;
	tables_ready();
	h = dlopen(dl_fixture(), RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	assert_int_equal(agent_unwind_refresh(), 0);
	if (!stuck_start(&w)) {
		dlclose(h);
		print_message("# userfaultfd unavailable (%s): cannot hold a walker\n",
			      strerror(errno));
		skip();
	}
	agent_unwind_stats(&before);
	dlclose(h);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	atomic_store(&refresher_done, false);
	assert_int_equal(pthread_create(&th, NULL, refresher, NULL), 0);
	usleep(50000);
	/* Before the drain timeout, the refresh must still be waiting. */
	early = since(&t0) < 0.5 && atomic_load(&refresher_done);
	stuck_release(&w);
	pthread_join(th, NULL);
	assert_false(early);
	agent_unwind_stats(&after);
	assert_int_equal(after.retired, before.retired + 1);
	assert_int_equal(after.leaked, before.leaked);

	/* A walker that never leaves: refresh returns after its timeout, leaking. */
	assert_true(stuck_start(&w));
	assert_int_equal(agent_unwind_refresh(), 0);
	assert_false(atomic_load(&w.done));
	stuck_release(&w);
	agent_unwind_stats(&after);
	assert_true(after.leaked > before.leaked);
	print_message("# a stuck walker made refresh leak %lu mapping(s)\n",
		      (unsigned long)(after.leaked - before.leaked));
}

#define STRESS_ROUNDS 3000

static atomic_bool stress_stop;

static void *spinner(void *arg)
{
	timer_t t;

	(void)arg;
	set_stack_bounds();
	atomic_store(&ring_tid, gettid());
	t = thread_timer(100000);
	while (!atomic_load(&stress_stop))
		fx_spin(20);
	timer_delete(t);
	return NULL;
}

TEST void cb_nop(void *arg)
{
	(void)arg;
	sink++;
}

/* dlopen/dlclose + refresh in a loop while both threads take signals that unwind. */
static void test_stress(void **state)
{
	struct agent_unwind_stats before, after;
	size_t landed[AT_COUNT] = {0};
	const char *path = dl_fixture();
	void (*outer)(fx_cb, void *);
	pthread_t th;
	timer_t t;
	int i;

	(void)state;
	atomic_store(&ring_n, 0);
	atomic_store(&ring_samples, 0);
	atomic_store(&ring_truncated, 0);
	atomic_store(&ring_tid, -1);
	atomic_store(&other_samples, 0);
	atomic_store(&other_truncated, 0);
	atomic_store(&stops_n, 0);
	atomic_store(&stress_stop, false);
	mode = MODE_STRESS;
	agent_unwind_stats(&before);
	assert_int_equal(pthread_create(&th, NULL, spinner, NULL), 0);
	t = thread_timer(150000);
	for (i = 0; i < STRESS_ROUNDS; i++) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

		assert_non_null(h);
		assert_int_equal(agent_unwind_refresh(), 0);
		*(void **)&outer = dlsym(h, "dl_outer");
		outer(cb_nop, NULL);
		assert_int_equal(dlclose(h), 0);
		assert_int_equal(agent_unwind_refresh(), 0);
	}
	timer_delete(t);
	atomic_store(&stress_stop, true);
	pthread_join(th, NULL);
	mode = MODE_ONE;
	agent_unwind_stats(&after);
	check_spin_ring(atomic_load(&ring_n), landed);
	print_message(
		"# stress: %d rounds, spinner %ld samples (%d checked: leaf %zu, regs %zu, "
		"mid %zu, fx_spin %zu, elsewhere %zu), refresher %ld samples (%ld truncated)\n",
		STRESS_ROUNDS, atomic_load(&ring_samples), atomic_load(&ring_n), landed[AT_LEAF],
		landed[AT_REGS], landed[AT_MID], landed[AT_SPIN], landed[AT_ELSEWHERE],
		atomic_load(&other_samples), atomic_load(&other_truncated));
	check_refresher_stops();
	assert_true(atomic_load(&ring_n) > 0);
	assert_int_equal(atomic_load(&ring_truncated), 0);
	assert_int_equal(after.retired - before.retired, STRESS_ROUNDS);
	assert_int_equal(after.parsed - before.parsed, STRESS_ROUNDS);
	assert_int_equal(after.modules, before.modules);
	assert_int_equal(after.leaked, 0);
}

static int setup(void **state)
{
	struct sigaction sa;
	void *b[4];

	(void)state;
	set_stack_bounds();
	backtrace(b, 4); /* loads libgcc_s now, not between two refreshes */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGPROF, &sa, NULL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_signal_fixture),
		cmocka_unit_test(test_signal_realigned),
		cmocka_unit_test(test_signal_plt),
		cmocka_unit_test(test_signal_vdso),
		cmocka_unit_test(test_signal_nocfi),
		cmocka_unit_test(test_signal_rbx),
		cmocka_unit_test(test_signal_lazy_resolver),
		cmocka_unit_test(test_signal_qsort),
		cmocka_unit_test(test_signal_bounds),
		cmocka_unit_test(test_here),
		cmocka_unit_test(test_dlopen),
		cmocka_unit_test(test_timer_spin),
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_reclaim_waits),
	};

	(void)argc;
	(void)argv;
	return cmocka_run_group_tests(tests, setup, NULL);
}
