/* SPDX-License-Identifier: MIT */
/*
 * Tests of the allocation hooks (alloc.c) one by one: every hook sampled and
 * not, the C semantics each keeps, errno, the threads that pass through, and
 * the bootstrap before the real functions are resolved.  The doubles and the
 * call sites are in alloc_testutil.h, which includes alloc.c; the estimates
 * and the in-use table are tested by alloc_inuse_test.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/hooks/alloc_testutil.h"

static bool ready_before_init; /* the hooks resolved themselves before main */

/* ---- tests ---- */

/* One call of site S with N, sampled at mean 1, checked end to end. */
SITE static void check_site(const struct site *s, size_t n)
{
	size_t bytes = n * s->mult;
	uint64_t before = main_t->alloc_bytes;
	struct walk *w;
	void *p;

	sampling_start(1, 7);
	p = s->fn(n);
	sampling_stop();
	if (!p)
		fail_msg("%s: NULL", s->name);
	if ((uintptr_t)p % s->align)
		fail_msg("%s: %p not aligned to %zu", s->name, p, s->align);
	memset(p, 0x5a, bytes);
	/* Counted once: one sample and BYTES added to the thread's total. */
	if (atomic_load(&nemits) != 1 || main_t->alloc_bytes - before != bytes)
		fail_msg("%s: %zu samples, %llu bytes", s->name, atomic_load(&nemits),
			 (unsigned long long)(main_t->alloc_bytes - before));
	assert_int_equal(recs[0].kind, AGENT_KIND_ALLOC);
	assert_int_equal(recs[0].v0, AGENT_WEIGHT_ONE);
	assert_int_equal(recs[0].v1, bytes);
	assert_int_equal(recs[0].tid, main_t->tid);
	assert_true(recs[0].nframes >= 2);
	if (!in_fn(recs[0].pcs[0], (const void *)s->fn, SITE_BYTES) ||
	    !in_fn(recs[0].pcs[1], (const void *)check_site, CALLER_BYTES))
		fail_msg("%s: leaf %#lx is not in its site %p", s->name,
			 (unsigned long)recs[0].pcs[0], (const void *)s->fn);
	assert_int_equal(recs[0].flags, 0);
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_ptr_equal((void *)w->e[0].ptr, p);
	assert_int_equal(w->e[0].size, bytes);
	assert_true(w->e[0].weight == 1.0);
	assert_int_equal(w->e[0].nframes, recs[0].nframes);
	assert_int_equal(w->e[0].pcs[0], recs[0].pcs[0]);
	v_free(w);
	s->release(p, n);
	assert_int_equal(agent_live_count(), 0);
	assert_int_equal(atomic_load(&nemits), 1);
}

static void test_every_hook_sampled(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NSITES; i++) {
		check_site(&sites[i], 100);
		check_site(&sites[i], 1);
	}
	/* malloc(0) is an allocation too (sampled as 1 byte, 0 bytes reported). */
	check_site(&sites[0], 0);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
}

/* With sampling off, every hook still allocates right and counts alloc_bytes. */
static void test_every_hook_unsampled(void **state)
{
	size_t i;

	(void)state;
	rec_reset();
	for (i = 0; i < NSITES; i++) {
		uint64_t before = main_t->alloc_bytes;
		void *p = sites[i].fn(1000);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % sites[i].align, 0);
		memset(p, 1, 1000 * sites[i].mult);
		assert_int_equal(main_t->alloc_bytes - before, 1000 * sites[i].mult);
		sites[i].release(p, 1000);
	}
	assert_int_equal(atomic_load(&nemits), 0);
	assert_int_equal(agent_live_count(), 0);
}

/* malloc, calloc, realloc, reallocarray: contents, realloc(p, 0), overflow. */
static void check_c_semantics(void)
{
	unsigned char *p, *q;
	size_t i;

	p = v_malloc(1000);
	assert_non_null(p);
	for (i = 0; i < 1000; i++)
		p[i] = (unsigned char)i;
	q = v_realloc(p, 100000);
	assert_non_null(q);
	for (i = 0; i < 1000; i++)
		assert_int_equal(q[i], (unsigned char)i);
	p = v_realloc(q, 10);
	assert_non_null(p);
	for (i = 0; i < 10; i++)
		assert_int_equal(p[i], (unsigned char)i);
	assert_null(v_realloc(p, 0)); /* glibc frees */
	p = v_calloc(1000, 7);
	assert_non_null(p);
	for (i = 0; i < 7000; i++)
		assert_int_equal(p[i], 0);
	v_free(p);
	errno = 0;
	assert_null(v_calloc(HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(v_malloc(HUGE_SIZE));
	assert_int_equal(errno, ENOMEM);
	p = v_reallocarray(NULL, 10, 10);
	assert_non_null(p);
	p[99] = 7;
	errno = 0;
	assert_null(v_reallocarray(p, HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(p[99], 7); /* still allocated */
	v_free(p);
	v_free(NULL);
}

/* posix_memalign, aligned_alloc, memalign, valloc, pvalloc: alignment and errors. */
static void check_aligned_semantics(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), al;
	void *a = NULL;

	for (al = sizeof(void *); al <= 8192; al *= 2) {
		assert_int_equal(v_posix_memalign(&a, al, 33), 0);
		assert_int_equal((uintptr_t)a % al, 0);
		v_free(a);
	}
	assert_int_equal(v_posix_memalign(&a, 64, HUGE_SIZE), ENOMEM);
	/* A bad alignment comes back as the result; errno is left alone. */
	errno = 4242;
	assert_int_equal(v_posix_memalign(&a, 3, 16), EINVAL);
	assert_int_equal(v_posix_memalign(&a, 4, 16), EINVAL);
	assert_int_equal(v_posix_memalign(&a, 24, 16), EINVAL);
	assert_int_equal(errno, 4242);
	a = v_aligned_alloc(256, 512);
	assert_true(a && (uintptr_t)a % 256 == 0);
	v_free(a);
	a = v_memalign(4096, 10);
	assert_true(a && (uintptr_t)a % 4096 == 0);
	v_free(a);
	a = v_valloc(10);
	assert_true(a && (uintptr_t)a % page == 0);
	v_free(a);
	a = v_pvalloc(10);
	assert_true(a && (uintptr_t)a % page == 0);
	assert_true(malloc_usable_size(a) >= page);
	memset(a, 1, page);
	v_free(a);
}

static void check_semantics(void)
{
	check_c_semantics();
	check_aligned_semantics();
	_ZdlPv(NULL);
	_ZdaPv(NULL);
	/* A failing nothrow new returns NULL: the real operator's exception stays inside it. */
	assert_null(v_new_nt(HUGE_SIZE, &_ZSt7nothrow));
	assert_null(v_new_array_al_nt(HUGE_SIZE, 64, &_ZSt7nothrow));
	assert_int_equal(main_t->in_hook, 0);
}

static void test_semantics(void **state)
{
	(void)state;
	check_semantics();
	sampling_start(1, 3);
	check_semantics();
	sampling_stop();
	assert_true(atomic_load(&nemits) > 10);
	/* Failed allocations are not samples; everything was freed. */
	assert_int_equal(agent_live_count(), 0);
}

/* errno is the real function's, sampled or not. */
static void test_errno_kept(void **state)
{
	void *p;

	(void)state;
	sampling_start(1, 5);
	errno = EXDEV;
	p = site_malloc(10);
	assert_int_equal(errno, EXDEV);
	v_free(p);
	assert_int_equal(errno, EXDEV);
	p = site_new(10);
	assert_int_equal(errno, EXDEV);
	_ZdlPv(p);
	assert_int_equal(errno, EXDEV);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 2);
}

/* No slot, an internal thread, a nested hook: pass through, count only what is due. */
static void *noslot_main(void *arg)
{
	uint64_t *dropped = arg;
	uint64_t before = atomic_load(&agent_state.counters.dropped_nothread);
	void *p = site_malloc(10), *q = site_new(10);

	v_free(p);
	_ZdlPv(q);
	dropped[0] = atomic_load(&agent_state.counters.dropped_nothread) - before;
	self_internal = true;
	before = atomic_load(&agent_state.counters.dropped_nothread);
	p = site_malloc(10);
	v_free(p);
	dropped[1] = atomic_load(&agent_state.counters.dropped_nothread) - before;
	return NULL;
}

/* pthread_create allocates on the calling thread: keep that out of the counts. */
static void spawn_noslot(uint64_t *dropped)
{
	pthread_t th;

	main_t->in_hook++;
	assert_int_equal(pthread_create(&th, NULL, noslot_main, dropped), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	main_t->in_hook--;
}

static void test_pass_through(void **state)
{
	uint64_t dropped[2] = {0, 0}, before;
	void *p;

	(void)state;
	sampling_start(1, 1);
	spawn_noslot(dropped);
	assert_int_equal(dropped[0], 2); /* the new counted once, through its malloc */
	assert_int_equal(dropped[1], 0);
	before = main_t->alloc_bytes;
	main_t->in_hook = 1;
	p = site_malloc(10);
	v_free(p);
	main_t->in_hook = 0;
	main_t->internal = true;
	p = site_new(10);
	_ZdlPv(p);
	main_t->internal = false;
	assert_int_equal(main_t->alloc_bytes, before);
	/* Mode off: nothing sampled, nothing dropped, bytes still counted. */
	agent_state.cfg.modes = AGENT_MODE_CPU;
	before = atomic_load(&agent_state.counters.dropped_nothread);
	spawn_noslot(dropped);
	assert_int_equal(dropped[0], 0);
	assert_int_equal(atomic_load(&agent_state.counters.dropped_nothread), before);
	before = main_t->alloc_bytes;
	p = site_malloc(10);
	v_free(p);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 0);
	assert_int_equal(main_t->alloc_bytes, before + 10);
}

/* A thread started behind the agent's back gets a slot at its first allocation. */
static void *late_main(void *arg)
{
	struct agent_thread **got = arg;
	void *p = site_malloc(100);

	*got = self;
	v_free(p);
	return NULL;
}

static void test_late_register(void **state)
{
	struct agent_thread *got = NULL;
	uint64_t before = atomic_load(&agent_state.counters.dropped_nothread);
	pthread_t th;

	(void)state;
	sampling_start(1, 1);
	late_slots = true;
	main_t->in_hook++;
	assert_int_equal(pthread_create(&th, NULL, late_main, &got), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	main_t->in_hook--;
	late_slots = false;
	sampling_stop();
	assert_non_null(got);
	/* Its 100 bytes, and what a sanitizer's runtime allocates on it. */
	assert_true(got->alloc_bytes >= 100);
	assert_int_equal(atomic_load(&agent_state.counters.dropped_nothread), before);
}

/* ---- bootstrap ---- */

/* While dlsym runs, the hooks answer from the arena; its blocks survive init. */
static void test_bootstrap_arena(void **state)
{
	unsigned char *p, *q, *z, *r;
	void *a = NULL, *n;
	size_t i;

	(void)state;
	assert_true(ready_before_init);
	assert_int_equal(agent_alloc_init(), 0);
	/* Another thread resolving for too long: wait, then fall back to the arena. */
	atomic_store(&boot.state, BOOT_RESOLVING);
	p = v_malloc(8);
	assert_true(boot_owns(p));
	/* As dlsym's allocations on the resolving thread. */
	resolving_here = true;
	p = v_malloc(100);
	z = v_calloc(10, 10);
	assert_int_equal(v_posix_memalign(&a, 256, 10), 0);
	assert_int_equal(v_posix_memalign(&a, 3, 10), EINVAL);
	n = v_new(10);
	q = v_valloc(10);
	errno = 0;
	assert_null(v_calloc(HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	assert_true(boot_owns(p) && boot_owns(z) && boot_owns(a) && boot_owns(n) && boot_owns(q));
	assert_int_equal((uintptr_t)a % 256, 0);
	assert_int_equal((uintptr_t)q % page_size, 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(z[i], 0);
	memset(p, 'a', 100);
	v_free(q);
	q = v_realloc(p, 200);
	assert_true(boot_owns(q));
	for (i = 0; i < 100; i++)
		assert_int_equal(q[i], 'a');
	v_free(p);
	_ZdlPv(n);
	resolving_here = false;
	atomic_store(&boot.state, BOOT_READY);
	r = v_realloc(q, 5000);
	assert_non_null(r);
	assert_false(boot_owns(r));
	for (i = 0; i < 100; i++)
		assert_int_equal(r[i], 'a');
	v_free(r);
	v_free(q);
	v_free(a);
	assert_null(v_realloc(z, 0));
	assert_true(agent_alloc_boot_used() >= 100 + 100 + 10 + 10 + 10 + 200);
}

static pthread_barrier_t race_barrier;

static void *race_main(void *arg)
{
	size_t i;

	(void)arg;
	pthread_barrier_wait(&race_barrier);
	for (i = 0; i < 1000; i++) {
		char *p = v_malloc(64), *q = v_calloc(8, 8);

		if (!p || !q)
			return (void *)1;
		p = v_realloc(p, 128);
		if (!p)
			return (void *)1;
		p[127] = q[63];
		v_free(p);
		v_free(q);
	}
	return NULL;
}

/* Hooks called before anything is resolved, from several threads at once. */
static void test_lazy_resolve_race(void **state)
{
	void *saved[R_COUNT], *rc;
	pthread_t th[4];
	size_t i;

	(void)state;
	for (i = 0; i < R_COUNT; i++)
		saved[i] = atomic_load(&boot.fns[i]);
	assert_int_equal(pthread_barrier_init(&race_barrier, NULL, 5), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_main, NULL), 0);
	atomic_store(&boot.state, BOOT_UNRESOLVED);
	for (i = 0; i < R_COUNT; i++)
		atomic_store(&boot.fns[i], NULL);
	pthread_barrier_wait(&race_barrier);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	pthread_barrier_destroy(&race_barrier);
	assert_int_equal(atomic_load(&boot.state), BOOT_READY);
	for (i = 0; i < R_COUNT; i++)
		assert_ptr_equal(atomic_load(&boot.fns[i]), saved[i]);
	/* Refresh finds nothing new and changes nothing. */
	agent_alloc_refresh();
	for (i = 0; i < R_COUNT; i++)
		assert_ptr_equal(atomic_load(&boot.fns[i]), saved[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bootstrap_arena),
		cmocka_unit_test(test_lazy_resolve_race),
		cmocka_unit_test(test_every_hook_sampled),
		cmocka_unit_test(test_every_hook_unsampled),
		cmocka_unit_test(test_semantics),
		cmocka_unit_test(test_errno_kept),
		cmocka_unit_test(test_pass_through),
		cmocka_unit_test(test_late_register),
	};

	/* Nothing here called agent_alloc_init: the loader's and libc's first
	 * allocations made the hooks resolve themselves. */
	ready_before_init = atomic_load(&boot.state) == BOOT_READY;
	return cmocka_run_group_tests_name("alloc", tests, group_setup, group_teardown);
}
