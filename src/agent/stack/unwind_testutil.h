/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_STACK_UNWIND_TESTUTIL_H
#define PLATEAU_AGENT_STACK_UNWIND_TESTUTIL_H

/*
 * For the unwinder's tests (unwind_test.c: walks checked frame by frame;
 * unwind_load_test.c: tables that change under walking threads): the
 * SIGPROF handler and the samples it takes, the stack bounds, the checks
 * against dladdr and backtrace(), and the fixtures' paths.  Header-only,
 * with definitions: include it once, from the test program's only file.
 * The tests, their build (-fomit-frame-pointer, -rdynamic, the fixture
 * library) and what they check are described in unwind_test.c.
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
void cb_nop(void *arg);
void walk_one(const void *uc);

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

TEST void cb_nop(void *arg)
{
	(void)arg;
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

/* ---- fixtures and set-up ---- */

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

#endif
