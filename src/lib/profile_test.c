/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "lib/profile.h"
#include "lib/profile_testutil.h"

/* Add "a;b;c" style stacks to a one-type profile. */
static void add(struct profile *p, const char *stack, int64_t v)
{
	assert_int_equal(profile_add_sample(p, testutil_stack(p, stack), 0, &v), 0);
}

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();

	profile_add_type(p, "samples", "count");
	add(p, "main;a;b", 10);
	add(p, "main;a;c", 20);
	add(p, "main;d", 30);
	add(p, "main;a;b", 5);
	add(p, "main;d;d;d", 40); /* recursion */
	return p;
}

static const struct func_stat *find(const struct profile *p, const struct func_stat *fs, size_t n,
				    const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(profile_str(p, fs[i].key), name))
			return &fs[i];
	}
	fail_msg("no function %s", name);
	return NULL;
}

static void test_tree_and_totals(void **state)
{
	struct profile *p = sample_profile();
	int64_t *tot = malloc(p->nr_nodes * sizeof(int64_t));

	(void)state;
	/* root, main, a, b, c, d, d, d */
	assert_int_equal(p->nr_nodes, 8);
	assert_int_equal(p->nr_samples, 4);
	profile_node_totals(p, 0, tot, NULL);
	assert_int_equal(tot[0], 105);
	assert_int_equal(profile_total(p, 0), 105);
	free(tot);
	profile_free(p);
}

static void test_functions_self_total(void **state)
{
	struct profile *p = sample_profile();
	struct func_stat *fs;
	size_t n = profile_functions(p, 0, FUNC_BY_FUNCTION, &fs);

	(void)state;
	assert_int_equal(find(p, fs, n, "main")->total, 105);
	assert_int_equal(find(p, fs, n, "main")->self, 0);
	assert_int_equal(find(p, fs, n, "a")->total, 35);
	assert_int_equal(find(p, fs, n, "b")->self, 15);
	/* Recursive d counts once per stack. */
	assert_int_equal(find(p, fs, n, "d")->total, 70);
	assert_int_equal(find(p, fs, n, "d")->self, 70);
	free(fs);
	profile_free(p);
}

static void test_merge_and_types(void **state)
{
	struct profile *a = sample_profile(), *b = sample_profile(), *c = profile_new();
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(profile_merge(a, b, &err), 0);
	assert_int_equal(profile_total(a, 0), 210);
	assert_int_equal(a->nr_nodes, 8);
	profile_add_type(c, "cpu", "nanoseconds");
	assert_int_not_equal(profile_merge(a, c, &err), 0);
	assert_non_null(strstr(err.msg, "different sample types"));
	profile_free(a);
	profile_free(b);
	profile_free(c);
}

static void test_filter_prune_scale(void **state)
{
	struct profile *p = sample_profile(), *f, *pr;
	struct error err = ERROR_INIT;

	(void)state;
	f = profile_filter(p, "^a$", NULL, &err);
	assert_non_null(f);
	assert_int_equal(profile_total(f, 0), 35);
	profile_free(f);
	f = profile_filter(p, NULL, "^d$", &err);
	assert_int_equal(profile_total(f, 0), 35);
	profile_free(f);
	assert_null(profile_filter(p, "(", NULL, &err));
	assert_non_null(strstr(err.msg, "bad focus pattern"));
	/* 15 of 105 is under 20%: b is pruned into [pruned]; totals kept. */
	pr = profile_prune(p, 0, 0.2);
	assert_int_equal(profile_total(pr, 0), 105);
	assert_true(strtab_find(&pr->strs, "[pruned]", 8) != IDHASH_NONE);
	profile_free(pr);
	profile_scale(p, 0.5);
	assert_int_equal(profile_total(p, 0), 53); /* 7.5->8, 10, 15, 20 */
	profile_free(p);
}

static void test_labels_split_samples(void **state)
{
	struct profile *p = profile_new();
	struct label l[2];
	uint32_t s1, s2, node;
	int64_t v = 1;

	(void)state;
	profile_add_type(p, "samples", "count");
	l[0] = (struct label){profile_intern_str(p, "endpoint"), profile_intern_str(p, "/a"), 0, 0};
	l[1] = (struct label){profile_intern_str(p, "thread"), profile_intern_str(p, "t1"), 0, 0};
	s1 = profile_intern_labels(p, l, 2);
	/* Same set given in another order is the same id. */
	struct label r[2] = {l[1], l[0]};
	assert_int_equal(profile_intern_labels(p, r, 2), s1);
	s2 = profile_intern_labels(p, l, 1);
	assert_int_not_equal(s1, s2);
	node = profile_child(p, 0, profile_frame_named(p, "f", 1));
	profile_add_sample(p, node, s1, &v);
	profile_add_sample(p, node, s2, &v);
	profile_add_sample(p, node, s1, &v);
	assert_int_equal(p->nr_samples, 2);
	assert_int_equal(profile_total(p, 0), 3);
	profile_free(p);
}

static void test_overflow_is_refused(void **state)
{
	struct profile *p = profile_new();
	int64_t big = INT64_MAX, one = 1;
	uint32_t node;

	(void)state;
	profile_add_type(p, "samples", "count");
	node = profile_child(p, 0, profile_frame_named(p, "f", 1));
	assert_int_equal(profile_add_sample(p, node, 0, &big), 0);
	assert_int_equal(profile_add_sample(p, node, 0, &one), ERR_LIMIT);
	assert_int_equal(profile_total(p, 0), INT64_MAX);
	profile_free(p);
}

/* The capacity goal, scaled down for a unit test (bench/model-memory.py runs it in full). */
static void test_many_stacks(void **state)
{
	struct profile *p = profile_new();
	uint32_t frames[12];
	int64_t v = 1;

	(void)state;
	profile_add_type(p, "samples", "count");
	for (uint32_t i = 0; i < 64; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fn%u", i);
		profile_frame_named(p, name, strlen(name));
	}
	for (uint32_t s = 0; s < 300000; s++) {
		uint32_t stack = s % 50000;

		for (int d = 0; d < 12; d++)
			frames[d] = (stack >> (d * 2)) % 64;
		profile_add_sample(p, profile_stack(p, frames, 12), 0, &v);
	}
	assert_int_equal(profile_total(p, 0), 300000);
	assert_int_equal(p->nr_samples, 50000);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_and_totals),
		cmocka_unit_test(test_functions_self_total),
		cmocka_unit_test(test_merge_and_types),
		cmocka_unit_test(test_filter_prune_scale),
		cmocka_unit_test(test_labels_split_samples),
		cmocka_unit_test(test_overflow_is_refused),
		cmocka_unit_test(test_many_stacks),
	};

	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
