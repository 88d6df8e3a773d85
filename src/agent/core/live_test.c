/* SPDX-License-Identifier: MIT */
/*
 * Tests of the live table (live.c): capacity and errors, exact payloads,
 * full buckets, churn without degradation, stale duplicates, concurrent
 * writers under a reader that checks every entry it sees for tearing, and
 * a forked child.  Pointers are made up: the table never dereferences them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/core/live.h"

/* ---- test doubles of the agent ---- */

struct agent agent_state;

/* ---- helpers ---- */

/* A payload that is a function of PTR, so that a torn read shows. */
static void make_sample(uintptr_t ptr, struct agent_live_sample *s, uintptr_t *pcs,
			uint32_t *labels)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->ptr = ptr;
	s->size = ptr * 3 + 1;
	s->weight = (double)(ptr & 0xffff) + 0.5;
	s->tid = (uint32_t)(ptr >> 4);
	s->flags = (unsigned)(ptr >> 4) & 1;
	s->nframes = (ptr >> 4) % AGENT_MAX_DEPTH + 1;
	s->nlabels = (ptr >> 4) % (AGENT_MAX_LABELS + 1);
	for (i = 0; i < s->nframes; i++)
		pcs[i] = ptr ^ (i * 0x1001);
	for (i = 0; i < s->nlabels; i++)
		labels[i] = (uint32_t)(ptr >> 4) + (uint32_t)i;
	s->pcs = pcs;
	s->labels = labels;
}

static bool insert_ptr(uintptr_t ptr)
{
	uintptr_t pcs[AGENT_MAX_DEPTH];
	uint32_t labels[AGENT_MAX_LABELS];
	struct agent_live_sample s;

	make_sample(ptr, &s, pcs, labels);
	return agent_live_insert(&s);
}

/* Whether E is exactly what make_sample(e->ptr) inserted. */
static bool entry_ok(const struct agent_live_entry *e)
{
	uintptr_t pcs[AGENT_MAX_DEPTH];
	uint32_t labels[AGENT_MAX_LABELS];
	struct agent_live_sample s;

	make_sample(e->ptr, &s, pcs, labels);
	if (e->size != s.size || e->weight != s.weight || e->tid != s.tid || e->flags != s.flags ||
	    e->nframes != s.nframes || e->nlabels != s.nlabels)
		return false;
	return memcmp(e->pcs, pcs, s.nframes * sizeof(pcs[0])) == 0 &&
	       memcmp(e->labels, labels, s.nlabels * sizeof(labels[0])) == 0;
}

struct walk {
	size_t n, bad;
	uintptr_t ptrs[4096];
};

static void collect(const struct agent_live_entry *e, void *arg)
{
	struct walk *w = arg;

	if (!entry_ok(e))
		w->bad++;
	if (w->n < sizeof(w->ptrs) / sizeof(w->ptrs[0]))
		w->ptrs[w->n] = e->ptr;
	w->n++;
}

static bool walk_has(const struct walk *w, uintptr_t ptr)
{
	size_t i;

	for (i = 0; i < w->n && i < sizeof(w->ptrs) / sizeof(w->ptrs[0]); i++)
		if (w->ptrs[i] == ptr)
			return true;
	return false;
}

static int setup(void **state)
{
	(void)state;
	memset(&agent_state, 0, sizeof(agent_state));
	return agent_live_init(4096);
}

static int teardown(void **state)
{
	(void)state;
	agent_live_fini();
	return 0;
}

/* ---- tests ---- */

static void test_init_errors(void **state)
{
	(void)state;
	agent_live_fini();
	assert_int_equal(agent_live_capacity(), 0);
	assert_false(agent_live_maybe(0x1000));
	assert_false(agent_live_remove(0x1000));
	assert_int_equal(agent_live_foreach(collect, NULL), 0);
	/* No table: a sample is dropped and counted. */
	assert_false(insert_ptr(0x1000));
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 1);
	assert_int_equal(agent_live_init(0), -EINVAL);
	assert_int_equal(agent_live_init(AGENT_LIVE_CAPACITY_MAX + 1), -EINVAL);
	assert_int_equal(agent_live_init(100), 0);
	assert_int_equal(agent_live_capacity(), 128);
	assert_true(agent_live_mapped_bytes() >= 128 * (AGENT_MAX_DEPTH * sizeof(uintptr_t) + 72));
	assert_int_equal(agent_live_init(100), -EBUSY);
	agent_live_fini();
	agent_live_fini();
	assert_int_equal(agent_live_init(1), 0);
	assert_int_equal(agent_live_capacity(), AGENT_LIVE_CAPACITY_MIN);
	agent_live_fini();
	assert_int_equal(agent_live_init(4096), 0);
}

static void test_insert_remove_take(void **state)
{
	struct agent_live_entry e;
	struct walk *w = calloc(1, sizeof(*w));
	uintptr_t i;

	(void)state;
	assert_non_null(w);
	assert_false(agent_live_maybe(0x5000));
	for (i = 1; i <= 300; i++)
		assert_true(insert_ptr(i << 4));
	assert_int_equal(agent_live_count(), 300);
	assert_int_equal(agent_live_foreach(collect, w), 300);
	assert_int_equal(w->bad, 0);
	for (i = 1; i <= 300; i++)
		assert_true(walk_has(w, i << 4));
	assert_true(agent_live_maybe(16));
	assert_false(agent_live_remove(301 << 4));
	for (i = 1; i <= 300; i += 2)
		assert_true(agent_live_remove(i << 4));
	assert_false(agent_live_remove(1 << 4));
	assert_true(agent_live_take(2 << 4, &e));
	assert_int_equal(e.ptr, 2 << 4);
	assert_true(entry_ok(&e));
	assert_false(agent_live_take(2 << 4, &e));
	assert_int_equal(agent_live_count(), 149);
	memset(w, 0, sizeof(*w));
	assert_int_equal(agent_live_foreach(collect, w), 149);
	assert_int_equal(w->bad, 0);
	for (i = 4; i <= 300; i += 2)
		assert_true(walk_has(w, i << 4) && agent_live_remove(i << 4));
	assert_int_equal(agent_live_count(), 0);
	assert_false(agent_live_maybe(16));
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
	free(w);
}

static void test_limits(void **state)
{
	uintptr_t pcs[AGENT_MAX_DEPTH + 10];
	uint32_t labels[AGENT_MAX_LABELS + 3] = {0};
	struct agent_live_sample s = {.ptr = 0x7770,
				      .size = 5,
				      .weight = 1.0,
				      .pcs = pcs,
				      .nframes = AGENT_MAX_DEPTH + 10,
				      .labels = labels,
				      .nlabels = AGENT_MAX_LABELS + 3};
	struct agent_live_entry e;
	size_t i;

	(void)state;
	for (i = 0; i < AGENT_MAX_DEPTH + 10; i++)
		pcs[i] = i + 100;
	assert_true(agent_live_insert(&s));
	assert_true(agent_live_take(0x7770, &e));
	assert_int_equal(e.nframes, AGENT_MAX_DEPTH);
	assert_int_equal(e.nlabels, AGENT_MAX_LABELS);
	assert_int_equal(e.pcs[AGENT_MAX_DEPTH - 1], AGENT_MAX_DEPTH - 1 + 100);
	/* 0 and 1 are not pointers (1 marks a slot being written): refused, not counted. */
	s.ptr = 0;
	assert_false(agent_live_insert(&s));
	s.ptr = 1;
	assert_false(agent_live_insert(&s));
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
	assert_int_equal(agent_live_count(), 0);
}

static void test_full(void **state)
{
	struct walk *w = calloc(1, sizeof(*w));
	size_t ok = 0, i;

	(void)state;
	assert_non_null(w);
	agent_live_fini();
	assert_int_equal(agent_live_init(16), 0);
	for (i = 1; i <= 100; i++)
		ok += insert_ptr(i << 4);
	/* Two buckets of 8: everything fits, whichever home, until 16. */
	assert_int_equal(ok, 16);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 84);
	assert_int_equal(agent_live_count(), 16);
	assert_int_equal(agent_live_foreach(collect, w), 16);
	assert_int_equal(w->bad, 0);
	for (i = 0; i < 16; i++)
		assert_true(agent_live_remove(w->ptrs[i]));
	assert_int_equal(agent_live_count(), 0);
	assert_true(insert_ptr(0x12340));
	assert_true(agent_live_remove(0x12340));
	free(w);
}

/* Heavy churn leaves nothing behind: no tombstones, counters back to 0. */
static void test_churn(void **state)
{
	static uintptr_t held[600];
	uint64_t rng = 1;
	size_t i, dropped = 0;

	(void)state;
	for (i = 0; i < 1000000; i++) {
		size_t k;
		uintptr_t p;

		rng = rng * 6364136223846793005u + 1442695040888963407u;
		k = (rng >> 33) % 600;
		p = (uintptr_t)(rng >> 12) << 4 | 16;
		if (held[k]) {
			assert_true(agent_live_remove(held[k]));
			held[k] = 0;
		} else if (insert_ptr(p)) {
			held[k] = p;
		} else {
			dropped++;
		}
	}
	/* 600 of 4096 slots: a pair of buckets (16 slots) almost never fills. */
	assert_true(dropped < 100);
	/* Payloads are reused: ~500k inserts touched no more than were live at once. */
	assert_true(agent_live_payloads_used() <= 600);
	for (i = 0; i < 600; i++)
		if (held[i])
			assert_true(agent_live_remove(held[i]));
	assert_int_equal(agent_live_count(), 0);
	assert_int_equal(agent_live_foreach(collect, NULL), 0);
	for (i = 0; i < 10000; i++)
		assert_false(agent_live_maybe((uintptr_t)i * 4096 + 16));
}

/* A pointer inserted twice (a free we never saw) leaves with one remove. */
static void test_stale_duplicate(void **state)
{
	(void)state;
	assert_true(insert_ptr(0xabc0));
	assert_true(insert_ptr(0xabc0));
	assert_int_equal(agent_live_count(), 2);
	assert_true(agent_live_remove(0xabc0));
	assert_int_equal(agent_live_count(), 0);
	assert_false(agent_live_maybe(0xabc0));
}

#define WRITERS	    4
#define WRITER_OPS  400000
#define WRITER_HELD 256

struct writer {
	pthread_t th;
	unsigned id;
	uintptr_t held[WRITER_HELD];
	size_t dropped;
};

static atomic_bool writers_done;

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	uint64_t rng = wr->id + 1;
	uintptr_t next = 1;
	size_t i;

	for (i = 0; i < WRITER_OPS; i++) {
		size_t k;

		rng = rng * 6364136223846793005u + 1442695040888963407u;
		k = (rng >> 33) % WRITER_HELD;
		if (wr->held[k]) {
			if (!agent_live_remove(wr->held[k]))
				return (void *)1;
			wr->held[k] = 0;
		} else {
			uintptr_t p = ((uintptr_t)wr->id << 44) | (next++ << 4);

			if (insert_ptr(p))
				wr->held[k] = p;
			else
				wr->dropped++;
		}
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct walk *w = arg;
	size_t rounds = 0;

	while (!atomic_load(&writers_done) || rounds < 2) {
		w->n = 0;
		agent_live_foreach(collect, w);
		rounds++;
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct writer *wr = calloc(WRITERS, sizeof(*wr));
	struct walk *w = calloc(1, sizeof(*w));
	pthread_t reader;
	size_t i, k, held = 0;
	void *rc;

	(void)state;
	assert_non_null(wr);
	assert_non_null(w);
	atomic_store(&writers_done, false);
	assert_int_equal(pthread_create(&reader, NULL, reader_main, w), 0);
	for (i = 0; i < WRITERS; i++) {
		wr[i].id = (unsigned)i + 1;
		assert_int_equal(pthread_create(&wr[i].th, NULL, writer_main, &wr[i]), 0);
	}
	for (i = 0; i < WRITERS; i++) {
		assert_int_equal(pthread_join(wr[i].th, &rc), 0);
		assert_null(rc);
	}
	atomic_store(&writers_done, true);
	assert_int_equal(pthread_join(reader, NULL), 0);
	assert_int_equal(w->bad, 0); /* no torn entry, ever */
	memset(w, 0, sizeof(*w));
	agent_live_foreach(collect, w);
	for (i = 0; i < WRITERS; i++)
		for (k = 0; k < WRITER_HELD; k++)
			if (wr[i].held[k]) {
				assert_true(walk_has(w, wr[i].held[k]));
				held++;
			}
	assert_int_equal(w->n, held);
	assert_int_equal(agent_live_count(), held);
	for (i = 0; i < WRITERS; i++)
		for (k = 0; k < WRITER_HELD; k++)
			if (wr[i].held[k])
				assert_true(agent_live_remove(wr[i].held[k]));
	assert_int_equal(agent_live_count(), 0);
	free(wr);
	free(w);
}

/* A forked child keeps the table and can go on using it. */
static void test_fork(void **state)
{
	int status;
	pid_t pid;
	uintptr_t i;

	(void)state;
	for (i = 1; i <= 80; i++)
		assert_true(insert_ptr(i << 8));
	for (i = 51; i <= 80; i++) /* freed payloads: the child rebuilds the free list */
		assert_true(agent_live_remove(i << 8));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static struct walk w, w2;
		size_t added = 0;

		agent_live_fork_child();
		agent_live_foreach(collect, &w);
		if (w.n != 50 || w.bad || agent_live_count() != 50 || !agent_live_remove(1 << 8) ||
		    !insert_ptr(0x999990) || agent_live_count() != 50)
			_exit(1);
		/* New entries never share a payload with the inherited ones. */
		for (i = 1; i <= 2000; i++)
			added += insert_ptr(0x1000000 + (i << 4));
		agent_live_foreach(collect, &w2);
		if (w2.bad || w2.n != 50 + added || added < 1900)
			_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's table is its own. */
	assert_int_equal(agent_live_count(), 50);
	assert_true(agent_live_remove(1 << 8));
	for (i = 2; i <= 50; i++)
		assert_true(agent_live_remove(i << 8));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insert_remove_take, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
	};

	return cmocka_run_group_tests_name("live", tests, NULL, NULL);
}
