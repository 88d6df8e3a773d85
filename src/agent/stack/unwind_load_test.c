/* SPDX-License-Identifier: MIT */
/*
 * Tests of the agent's unwinder while its tables change: a library
 * dlopened after a refresh and dlclosed again, timer signals at arbitrary
 * pcs of frame-pointer-less code, refreshes racing walks in signal
 * handlers, and a retired table reclaimed only once no walker can still
 * read it.  Same build and fixtures as unwind_test.c (its header comment
 * says how the stacks are checked); the dlopen tests load libunwind-dl.so
 * from the directory of this executable, or from $PLATEAU_UNWIND_DL.
 */
#include "agent/stack/unwind_testutil.h"

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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dlopen),
		cmocka_unit_test(test_timer_spin),
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_reclaim_waits),
	};

	(void)argc;
	(void)argv;
	return cmocka_run_group_tests(tests, setup, NULL);
}
