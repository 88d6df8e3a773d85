/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <cmocka.h>

#include "util/common.h"
#include "profile/stats.h"

static void test_wilson(void **state)
{
	double lo, hi;

	(void)state;
	/* 50 of 100: about 40.4%..59.6%. */
	stats_wilson(50, 100, STATS_Z95, &lo, &hi);
	assert_true(fabs(lo - 0.4038) < 0.001 && fabs(hi - 0.5962) < 0.001);
	/* 0 of 10 stays inside [0, 1]. */
	stats_wilson(0, 10, STATS_Z95, &lo, &hi);
	assert_true(lo == 0 && hi > 0.25 && hi < 0.35);
	stats_wilson(1, 0, STATS_Z95, &lo, &hi);
	assert_true(lo == 0 && hi == 1);
}

static void test_two_prop(void **state)
{
	(void)state;
	/* 10% vs 12% of 100 samples: noise.  Of 100,000: real. */
	assert_true(stats_two_prop_p(10, 100, 12, 100) > 0.5);
	assert_true(stats_two_prop_p(10000, 100000, 12000, 100000) < 1e-6);
	/* Equal shares: p = 1. */
	assert_true(fabs(stats_two_prop_p(30, 100, 300, 1000) - 1.0) < 1e-9);
	assert_true(fabs(stats_normal_sf(1.959963984540054) - 0.025) < 1e-6);
}

/* Equal weights count as themselves; unequal ones as (sum w)^2 / sum w^2. */
static void test_effective_samples(void **state)
{
	struct stats_weights w = {0, 0};

	(void)state;
	stats_weights_add(&w, 300, 3); /* three samples of 100 */
	stats_weights_add(&w, 100, 1);
	assert_true(fabs(stats_weights_n(&w) - 4) < 1e-9);
	/* One sample of 300 and one of 100: 400^2 / (90000 + 10000) = 1.6. */
	w = (struct stats_weights){0, 0};
	stats_weights_add(&w, 300, 1);
	stats_weights_add(&w, 100, 0); /* a row always stands for one sample at least */
	assert_true(fabs(stats_weights_n(&w) - 1.6) < 1e-9);
	w = (struct stats_weights){0, 0};
	assert_true(stats_weights_n(&w) == 0);
}

/* Every share lies inside its interval, at any n, printed bounds included. */
static void test_share_holds_estimate(void **state)
{
	static const double ns[] = {0, 0.3, 1, 2.5, 17, 100, 299.7, 1e4, 1e6, 1e9};
	struct stats_share sh;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
		for (int k = 0; k <= 1000; k++) {
			stats_share_of(k, 1000, ns[i], &sh);
			assert_true(sh.lo <= sh.share && sh.share <= sh.hi);
			assert_true(stats_pct_floor(sh.lo, 1) <= round(10000 * sh.share) / 100);
			assert_true(stats_pct_ceil(sh.hi, 1) >= round(10000 * sh.share) / 100);
		}
	}
	/* The interval narrows with the effective samples: 25% of 100 vs of 10,000. */
	stats_share_of(25, 100, 100, &sh);
	assert_true(fabs(sh.lo - 0.17545) < 1e-4 && fabs(sh.hi - 0.34304) < 1e-4);
	stats_share_of(25, 100, 10000, &sh);
	assert_true(sh.hi - sh.lo < 0.02);
	/* A share over nothing is unknown: 0..1. */
	stats_share_of(0, 0, 0, &sh);
	assert_true(sh.share == 0 && sh.lo == 0 && sh.hi == 1);
}

static void test_counter(void **state)
{
	struct profile *p = profile_new();
	struct sample_counter c;
	int64_t v = 3000000;

	(void)state;
	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "a", 1)), 0, &v);
	v = 1000000;
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, &v);
	stats_counter_init(&c, p, 0);
	assert_true(c.count_type == -1 && c.per_sample == 1000000);
	assert_true(stats_count(&c, 3000000) == 3);
	profile_free(p);
}

/* A folded file of perf event periods calls its type samples/count: not counts. */
static void test_counter_folded_periods(void **state)
{
	struct profile *p = profile_new();
	struct sample_counter c;
	int64_t v = 2002002;

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "a", 1)), 0, &v);
	v = 1001001;
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, &v);
	stats_counter_init(&c, p, 0);
	assert_true(c.count_type == -1 && c.per_sample == 1001001);
	profile_free(p);
	/* Raw counts stay counts. */
	p = profile_new();
	profile_add_type(p, "samples", "count");
	v = 7;
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "a", 1)), 0, &v);
	v = 1;
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, &v);
	stats_counter_init(&c, p, 0);
	assert_true(c.per_sample == 1);
	profile_free(p);
}

/*
 * A profile of several kinds (the agent's: cpu and alloc samples side by
 * side, one samples/count column): each type's samples are those of the
 * rows that have a value of that type.
 */
static void test_counter_per_kind(void **state)
{
	struct profile *p = profile_new();
	struct sample_counter c;
	int64_t cpu[3] = {3, 30000000, 0}, alloc[3] = {5, 0, 500000};
	uint32_t a = profile_child(p, 0, profile_frame_named(p, "a", 1));

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_type(p, "alloc_space", "bytes");
	profile_add_sample(p, a, 0, cpu);
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, alloc);
	stats_counter_init(&c, p, 1);
	assert_int_equal(c.count_type, 0);
	assert_true(stats_total_samples(&c, p, 1) == 3);
	assert_true(stats_sample_count(&c, alloc, 1) == 0);
	stats_counter_init(&c, p, 2);
	assert_true(stats_total_samples(&c, p, 2) == 5);
	assert_true(stats_sample_count(&c, alloc, 2) == 5);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wilson),
		cmocka_unit_test(test_two_prop),
		cmocka_unit_test(test_effective_samples),
		cmocka_unit_test(test_share_holds_estimate),
		cmocka_unit_test(test_counter),
		cmocka_unit_test(test_counter_folded_periods),
		cmocka_unit_test(test_counter_per_kind),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
