/* SPDX-License-Identifier: MIT */
/*
 * Tests of what the allocation hooks (alloc.c) record: the estimate of the
 * bytes allocated, the in-use table (frees, reallocs, labels, deep stacks,
 * a full table) and 4 threads racing the hooks.  The doubles and the call
 * sites are in alloc_testutil.h, which includes alloc.c; the hooks one by
 * one are tested by alloc_test.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/hooks/alloc_testutil.h"

/* ---- tests ---- */

/* At a 512 KiB mean the estimate of the bytes allocated is unbiased. */
static void test_estimate_512k(void **state)
{
	const uint64_t mean = 512 * KIB;
	double truth_bytes = 0, var_bytes = 0, var_count = 0, est_count, est_bytes;
	double exp_samples = 0, var_samples = 0;
	const size_t n = 400000;
	size_t i;

	(void)state;
	sampling_start(mean, 42);
	for (i = 0; i < n; i++) {
		size_t size = 1 + (i * 7919) % (64 * KIB);
		double p = 1.0 / alloc_sample_scale(size, mean);

		v_free(site_malloc(size));
		truth_bytes += (double)size;
		var_bytes += (double)size * (double)size * (1.0 - p) / p;
		var_count += (1.0 - p) / p;
		exp_samples += p;
		var_samples += p * (1.0 - p);
	}
	sampling_stop();
	est_bytes = (double)atomic_load(&sum_v1);
	est_count = (double)atomic_load(&sum_v0) / AGENT_WEIGHT_ONE;
	if (fabs(est_bytes - truth_bytes) > 4 * sqrt(var_bytes))
		fail_msg("bytes: estimated %.6g, true %.6g, sigma %.3g", est_bytes, truth_bytes,
			 sqrt(var_bytes));
	if (fabs(est_count - (double)n) > 4 * sqrt(var_count))
		fail_msg("count: estimated %.6g, true %zu, sigma %.3g", est_count, n,
			 sqrt(var_count));
	if (fabs((double)atomic_load(&nemits) - exp_samples) > 4 * sqrt(var_samples))
		fail_msg("samples: %zu, expected %.6g", atomic_load(&nemits), exp_samples);
	assert_int_equal(agent_live_count(), 0);
}

/* In use: of N sampled blocks, free half; the table holds exactly the other half. */
static void test_inuse_half(void **state)
{
	enum { N = 1000 };
	static void *p[N];
	struct walk *w;
	size_t i, k;

	(void)state;
	sampling_start(1, 9);
	for (i = 0; i < N; i++)
		p[i] = site_malloc(i + 1);
	for (i = 0; i < N; i += 2)
		v_free(p[i]);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), N);
	assert_int_equal(agent_live_count(), N / 2);
	w = walk_now();
	assert_int_equal(w->n, N / 2);
	for (k = 0; k < w->n; k++) {
		for (i = 1; i < N; i += 2)
			if (w->e[k].ptr == (uintptr_t)p[i])
				break;
		assert_true(i < N);
		assert_int_equal(w->e[k].size, i + 1);
		assert_true(w->e[k].weight == 1.0);
		assert_true(in_fn(w->e[k].pcs[0], (const void *)site_malloc, SITE_BYTES));
	}
	v_free(w);
	for (i = 1; i < N; i += 2)
		v_free(p[i]);
	assert_int_equal(agent_live_count(), 0);
}

/* A call site of realloc (see SITE_FN in alloc_testutil.h). */
SITE static void *site_realloc(void *old, size_t n)
{
	void *p = v_realloc(old, n);

	BARRIER();
	return p;
}

/* realloc frees the old entry and records the new block; a failed one keeps the old. */
static void test_realloc_moves(void **state)
{
	struct walk *w;
	char *p, *q;

	(void)state;
	sampling_start(1, 11);
	p = site_malloc(100);
	q = site_realloc(p, 1 << 20);
	assert_non_null(q);
	assert_int_equal(agent_live_count(), 1);
	w = walk_now();
	assert_ptr_equal((void *)w->e[0].ptr, q);
	assert_int_equal(w->e[0].size, 1 << 20);
	assert_true(in_fn(w->e[0].pcs[0], (const void *)site_realloc, SITE_BYTES));
	v_free(w);
	assert_int_equal(atomic_load(&nemits), 2);
	assert_int_equal(recs[1].v1, 1 << 20);
	assert_null(site_realloc(q, 0));
	assert_int_equal(agent_live_count(), 0);
	p = site_malloc(64);
	p[63] = 'x';
	errno = 0;
	assert_null(site_realloc(p, HUGE_SIZE));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(p[63], 'x');
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_ptr_equal((void *)w->e[0].ptr, p);
	assert_int_equal(w->e[0].size, 64);
	assert_true(in_fn(w->e[0].pcs[0], (const void *)site_malloc, SITE_BYTES));
	v_free(w);
	sampling_stop();
	v_free(p);
	assert_int_equal(agent_live_count(), 0);
}

/* The thread's labels travel with the live entry. */
static void test_labels(void **state)
{
	struct walk *w;
	void *p;

	(void)state;
	main_t->labels[0] = 3;
	main_t->labels[1] = 8;
	main_t->nlabels = 2;
	sampling_start(1, 13);
	p = site_malloc(5);
	sampling_stop();
	main_t->nlabels = 0;
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_int_equal(w->e[0].nlabels, 2);
	assert_int_equal(w->e[0].labels[0], 3);
	assert_int_equal(w->e[0].labels[1], 8);
	v_free(w);
	v_free(p);
}

SITE static void *deep(unsigned depth)
{
	void *p = depth ? deep(depth - 1) : site_malloc(7);

	BARRIER();
	return p;
}

/* Stacks deeper than AGENT_MAX_DEPTH are cut there and flagged. */
static void test_truncated(void **state)
{
	void *p;

	(void)state;
	sampling_start(1, 17);
	p = deep(AGENT_MAX_DEPTH + 50);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 1);
	assert_int_equal(recs[0].nframes, AGENT_MAX_DEPTH);
	assert_int_equal(recs[0].flags, AGENT_SAMPLE_TRUNCATED);
	assert_true(in_fn(recs[0].pcs[0], (const void *)site_malloc, SITE_BYTES));
	assert_true(in_fn(recs[0].pcs[1], (const void *)deep, SITE_BYTES));
	v_free(p);
}

/* A full table drops and counts; the hooks go on working. */
static void test_table_full(void **state)
{
	enum { N = 100 };
	void *p[N];
	size_t i;

	(void)state;
	agent_live_fini();
	assert_int_equal(agent_live_init(16), 0);
	sampling_start(1, 19);
	for (i = 0; i < N; i++)
		p[i] = site_malloc(32);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), N);
	assert_int_equal(agent_live_count(), 16);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), N - 16);
	for (i = 0; i < N; i++)
		v_free(p[i]);
	assert_int_equal(agent_live_count(), 0);
	agent_live_fini();
	assert_int_equal(agent_live_init(AGENT_LIVE_CAPACITY_DEFAULT), 0);
	atomic_store(&agent_state.counters.live_full, 0);
}

/* ---- concurrent stress ---- */

#define STRESS_THREADS 4
#define STRESS_OPS     1000000
#define STRESS_HELD    128
#define STRESS_MAX     2048

struct block {
	void *p;
	size_t size;
	bool cxx;
};

struct stresser {
	pthread_t th;
	unsigned id;
	struct block held[STRESS_HELD];
	bool failed;
};

static atomic_bool stress_done;
static atomic_size_t stress_bad_entries;

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

static void stress_op(struct block *b, uint64_t *rng, bool *failed)
{
	uint64_t r = lcg(rng);
	size_t size = 1 + (size_t)(r >> 4) % STRESS_MAX;

	if (!b->p) {
		b->cxx = (r & 3) == 0;
		b->p = b->cxx	      ? site_new(size)
		       : (r & 3) == 1 ? site_calloc(size)
				      : site_malloc(size);
		b->size = (r & 3) == 1 ? 3 * size : size;
		*failed |= !b->p;
		if (b->p)
			memset(b->p, 1, b->size < 16 ? b->size : 16);
	} else if ((r & 4) || b->cxx) {
		if (b->cxx)
			_ZdlPv(b->p);
		else
			v_free(b->p);
		b->p = NULL;
	} else {
		void *q = site_realloc(b->p, size);

		*failed |= !q;
		if (q) {
			b->p = q;
			b->size = size;
		}
	}
}

static void *stress_main(void *arg)
{
	struct stresser *s = arg;
	uint64_t rng = s->id * 7777u + 1;
	size_t i;

	if (!attach(s->id)) {
		s->failed = true;
		return NULL;
	}
	for (i = 0; i < STRESS_OPS; i++)
		stress_op(&s->held[lcg(&rng) % STRESS_HELD], &rng, &s->failed);
	return NULL;
}

static void check_racing_entry(const struct agent_live_entry *e, void *arg)
{
	(void)arg;
	if (e->size == 0 || e->size > 3 * STRESS_MAX || e->weight < 1.0 || e->nframes < 2 ||
	    !(in_fn(e->pcs[0], (const void *)site_malloc, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_calloc, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_new, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_realloc, SITE_BYTES)))
		atomic_fetch_add(&stress_bad_entries, 1);
}

static void *stress_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stress_done))
		agent_live_foreach(check_racing_entry, NULL);
	return NULL;
}

static int cmp_block(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct block *)a)->p;
	uintptr_t y = (uintptr_t)((const struct block *)b)->p;

	return x < y ? -1 : x > y;
}

struct stress_check {
	struct block *all;
	size_t n, seen, wrong;
};

static void check_final_entry(const struct agent_live_entry *e, void *arg)
{
	struct stress_check *c = arg;
	struct block key = {.p = (void *)e->ptr};
	const struct block *b = bsearch(&key, c->all, c->n, sizeof(key), cmp_block);

	c->seen++;
	if (!b || b->size != e->size)
		c->wrong++;
}

/* 4 threads allocate, free and reallocate; every entry left is a block still allocated. */
static void test_stress(void **state)
{
	struct stresser *s = v_calloc(STRESS_THREADS, sizeof(*s));
	struct stress_check c = {0};
	pthread_t reader;
	size_t i, k;

	(void)state;
	assert_non_null(s);
	c.all = v_calloc(STRESS_THREADS * STRESS_HELD, sizeof(*c.all));
	assert_non_null(c.all);
	sampling_start(KIB, 23);
	atomic_store(&stress_done, false);
	assert_int_equal(pthread_create(&reader, NULL, stress_reader, NULL), 0);
	for (i = 0; i < STRESS_THREADS; i++) {
		s[i].id = (unsigned)i + 100;
		assert_int_equal(pthread_create(&s[i].th, NULL, stress_main, &s[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_join(s[i].th, NULL), 0);
	atomic_store(&stress_done, true);
	assert_int_equal(pthread_join(reader, NULL), 0);
	sampling_stop();
	for (i = 0; i < STRESS_THREADS; i++) {
		assert_false(s[i].failed);
		for (k = 0; k < STRESS_HELD; k++)
			if (s[i].held[k].p)
				c.all[c.n++] = s[i].held[k];
	}
	qsort(c.all, c.n, sizeof(*c.all), cmp_block);
	agent_live_foreach(check_final_entry, &c);
	assert_int_equal(c.wrong, 0);
	assert_int_equal(c.seen, agent_live_count());
	assert_true(c.seen > c.n / 2); /* most blocks are sampled at this mean */
	assert_int_equal(atomic_load(&stress_bad_entries), 0);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
	assert_true(atomic_load(&nemits) > STRESS_OPS);
	for (i = 0; i < STRESS_THREADS; i++)
		for (k = 0; k < STRESS_HELD; k++)
			if (s[i].held[k].p) {
				if (s[i].held[k].cxx)
					_ZdlPv(s[i].held[k].p);
				else
					v_free(s[i].held[k].p);
			}
	assert_int_equal(agent_live_count(), 0);
	v_free(c.all);
	v_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate_512k), cmocka_unit_test(test_inuse_half),
		cmocka_unit_test(test_realloc_moves), cmocka_unit_test(test_labels),
		cmocka_unit_test(test_truncated),     cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests_name("alloc_inuse", tests, group_setup, group_teardown);
}
