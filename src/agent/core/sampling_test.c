/* SPDX-License-Identifier: MIT */
/*
 * Statistical tests of the agent's sampling arithmetic. Seeds are fixed,
 * so every run is the same; each tolerance is 4 standard errors computed
 * from the exact sampling probabilities, so a correct estimator passes and
 * a biased one (wrong scale, size instead of size + 1, dropped remainder)
 * fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <math.h>
#include <cmocka.h>

#include "agent/core/sampling.h"

#define KIB ((uint64_t)1024)
#define MIB (KIB * KIB)

struct size_class {
	size_t size;
	uint64_t n;	  /* allocations made */
	uint64_t samples; /* allocations sampled */
	double est_count; /* sum of weights */
	double est_bytes; /* sum of weight * size */
};

/* |got - want| within 4 sigma, plus a hair for rounding when sigma is ~0. */
static void assert_within(double got, double want, double sigma, const char *what)
{
	double tol = 4.0 * sigma + 1e-9 * fabs(want) + 1e-9;

	if (fabs(got - want) > tol)
		fail_msg("%s: got %.6g, want %.6g +- %.6g", what, got, want, tol);
}

/* 2,000,000 allocations in a fixed interleaving: per 200, 20 of 0 bytes,
 * 160 of 16 bytes, 19 of 4 KiB and one of 1 MiB. */
static struct size_class *pick_class(struct size_class *c, uint64_t i)
{
	unsigned k = (unsigned)(i % 200);

	if (k < 20)
		return &c[0];
	if (k < 180)
		return &c[1];
	return k < 199 ? &c[2] : &c[3];
}

static void simulate_mix(uint64_t mean, uint64_t seed, struct size_class *c)
{
	struct alloc_sampler s;
	uint64_t i;

	alloc_sampler_init(&s, mean, seed);
	for (i = 0; i < 2000000; i++) {
		struct size_class *cl = pick_class(c, i);
		double w = -1.0;

		cl->n++;
		if (!alloc_sampler_take(&s, cl->size, &w))
			continue;
		assert_true(w >= 1.0);
		cl->samples++;
		cl->est_count += w;
		cl->est_bytes += w * (double)cl->size;
	}
}

static void check_mix(uint64_t mean, uint64_t seed)
{
	struct size_class c[4] = {{.size = 0}, {.size = 16}, {.size = 4 * KIB}, {.size = MIB}};
	double true_bytes = 0, est_bytes = 0, var_bytes = 0, exp_samples = 0, var_samples = 0;
	double small_samples = 0, small_bytes = 0;
	unsigned k;

	simulate_mix(mean, seed, c);
	assert_int_equal(c[0].n + c[1].n + c[2].n + c[3].n, 2000000);
	assert_int_equal(c[3].n, 10000);
	for (k = 0; k < 4; k++) {
		double p = 1.0 / alloc_sample_scale(c[k].size, mean);
		double n = (double)c[k].n, sz = (double)c[k].size;
		double var_count = n * (1.0 - p) / p;

		assert_within(c[k].est_count, n, sqrt(var_count), "count per class");
		assert_within(c[k].est_bytes, n * sz, sz * sqrt(var_count), "bytes per class");
		true_bytes += n * sz;
		est_bytes += c[k].est_bytes;
		var_bytes += sz * sz * var_count;
		exp_samples += n * p;
		var_samples += n * p * (1.0 - p);
	}
	assert_within(est_bytes, true_bytes, sqrt(var_bytes), "total bytes");
	assert_within((double)(c[0].samples + c[1].samples + c[2].samples + c[3].samples),
		      exp_samples, sqrt(var_samples), "samples");
	/* Far below T the sample rate is one per T bytes (counting size + 1). */
	small_samples = (double)(c[0].samples + c[1].samples);
	small_bytes = (double)c[0].n * 1 + (double)c[1].n * 17;
	assert_within(small_samples, small_bytes / (double)mean,
		      sqrt(small_bytes / (double)mean) + 0.001 * small_bytes / (double)mean,
		      "small-size sample rate");
}

static void test_alloc_mix_512k(void **state)
{
	(void)state;
	check_mix(512 * KIB, 42);
	check_mix(512 * KIB, 7);
}

static void test_alloc_mix_64k(void **state)
{
	(void)state;
	check_mix(64 * KIB, 42);
	check_mix(64 * KIB, 0);
}

static void test_alloc_zero_bytes(void **state)
{
	struct alloc_sampler s;
	uint64_t mean = 4 * KIB, n = 1000000, i, samples = 0;
	double est = 0, w, p = -expm1(-1.0 / (double)mean);

	(void)state;
	alloc_sampler_init(&s, mean, 3);
	for (i = 0; i < n; i++) {
		if (alloc_sampler_take(&s, 0, &w)) {
			samples++;
			est += w;
		}
	}
	assert_true(samples > 0);
	assert_within((double)samples, (double)n * p, sqrt((double)n * p * (1 - p)),
		      "zero-byte samples");
	assert_within(est, (double)n, sqrt((double)n * (1 - p) / p), "zero-byte count");
}

/* A small mean makes the estimate tight (0.5% at 4 sigma), so a scale off by
 * a few percent (size instead of size + 1, say) fails here. */
static void test_alloc_precise(void **state)
{
	struct alloc_sampler s;
	uint64_t mean = 64, n = 2000000, i, samples = 0;
	double est = 0, w, p = 1.0 / alloc_sample_scale(16, mean);

	(void)state;
	alloc_sampler_init(&s, mean, 21);
	for (i = 0; i < n; i++) {
		if (alloc_sampler_take(&s, 16, &w)) {
			samples++;
			est += w;
		}
	}
	assert_within((double)samples, (double)n * p, sqrt((double)n * p * (1 - p)),
		      "samples at T = 64");
	assert_within(est, (double)n, sqrt((double)n * (1 - p) / p), "count at T = 64");
	assert_within(est * 16, (double)n * 16, 16 * sqrt((double)n * (1 - p) / p),
		      "bytes at T = 64");
}

static void test_alloc_large(void **state)
{
	struct alloc_sampler s;
	uint64_t mean = 512 * KIB, i, samples = 0, n = 100000;
	double w = 0, p;

	(void)state;
	alloc_sampler_init(&s, mean, 11);
	/* Far above T: always sampled (gaps never exceed ~36.74 T), scale 1. */
	for (i = 0; i < 10000; i++) {
		assert_true(alloc_sampler_take(&s, (size_t)(64 * mean), &w));
		assert_true(fabs(w - 1.0) < 1e-12);
	}
	/* Huge sizes do not overflow. */
	assert_true(alloc_sampler_take(&s, SIZE_MAX, &w));
	assert_true(w == 1.0);
	assert_true(alloc_sampler_take(&s, SIZE_MAX - 1, NULL));
	assert_true(alloc_sample_scale(SIZE_MAX, 2) == 1.0);
	/* At T, sampled with probability 1 - exp(-(T + 1) / T). */
	p = -expm1(-(double)(mean + 1) / (double)mean);
	assert_true(fabs(alloc_sample_scale(mean, mean) - 1.0 / p) < 1e-12);
	assert_true(fabs(alloc_sample_scale(mean, mean) - 1.582) < 0.001);
	for (i = 0; i < n; i++)
		samples += alloc_sampler_take(&s, mean, NULL);
	assert_within((double)samples, (double)n * p, sqrt((double)n * p * (1 - p)),
		      "samples at T");
	/* The sampler still behaves after the huge ones: small sizes rarely hit. */
	samples = 0;
	for (i = 0; i < 1000; i++)
		samples += alloc_sampler_take(&s, 16, NULL);
	assert_true(samples <= 2);
}

static void test_alloc_mean_edges(void **state)
{
	struct alloc_sampler s;
	double w = 0;
	int i;

	(void)state;
	alloc_sampler_init(&s, 1, 5);
	for (i = 0; i < 1000; i++) {
		assert_true(alloc_sampler_take(&s, (size_t)i % 3, &w));
		assert_true(w == 1.0);
	}
	assert_true(alloc_sample_scale(0, 1) == 1.0);
	alloc_sampler_init(&s, 0, 5);
	for (i = 0; i < 1000; i++)
		assert_false(alloc_sampler_take(&s, SIZE_MAX, &w));
	/* An absurd mean is clamped, not overflowed. */
	alloc_sampler_init(&s, UINT64_MAX, 5);
	assert_true(s.countdown >= 0);
	assert_false(alloc_sampler_take(&s, 0, &w));
	assert_true(alloc_sampler_take(&s, SIZE_MAX, &w));
	/* Small sizes: scale ~ T / (size + 1). */
	assert_true(fabs(alloc_sample_scale(15, 512 * KIB) - (512.0 * 1024 / 16 + 0.5)) < 0.01);
}

static void test_alloc_stack_scale(void **state)
{
	uint64_t mean = 512 * KIB;

	(void)state;
	assert_true(fabs(alloc_stack_scale(7, 7 * 4096, mean) - alloc_sample_scale(4096, mean)) <
		    1e-9);
	assert_true(fabs(alloc_stack_scale(3, 0, mean) - alloc_sample_scale(0, mean)) < 1e-9);
	assert_true(alloc_stack_scale(0, 0, mean) == 0.0);
	assert_true(alloc_stack_scale(2, UINT64_MAX, mean) == 1.0);
	assert_true(alloc_stack_scale(5, 100, 1) == 1.0);
}

static void test_alloc_reproducible(void **state)
{
	struct alloc_sampler a, b, c;
	uint64_t rng = 99, i, differ = 0, hits = 0;

	(void)state;
	alloc_sampler_init(&a, 64 * KIB, 1234);
	alloc_sampler_init(&b, 64 * KIB, 1234);
	alloc_sampler_init(&c, 64 * KIB, 1235);
	for (i = 0; i < 200000; i++) {
		size_t size = (size_t)(sampling_rand64(&rng) % (16 * KIB));
		double wa = 0, wb = 0, wc = 0;
		bool ta = alloc_sampler_take(&a, size, &wa);
		bool tb = alloc_sampler_take(&b, size, &wb);
		bool tc = alloc_sampler_take(&c, size, &wc);

		assert_true(ta == tb && wa == wb);
		hits += ta;
		differ += ta != tc;
	}
	assert_true(hits > 1000);
	assert_true(differ > 0);
}

struct wait_class {
	uint64_t wait, n;
	double est_count, est_delay;
};

static void test_lock_estimator(void **state)
{
	const uint64_t rate = 10000;
	struct wait_class c[] = {
		{0, 20000}, {1000, 200000}, {5000, 100000}, {10000, 5000}, {50000, 10000}};
	uint64_t rng = 77, i;
	unsigned k;
	double true_delay = 0, est_delay = 0, var_delay = 0, true_n = 0, est_n = 0, var_n = 0;

	(void)state;
	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		double p = c[k].wait >= rate ? 1.0 : (double)(c[k].wait ? c[k].wait : 1) / rate;
		double w = 0, n = (double)c[k].n;

		for (i = 0; i < c[k].n; i++) {
			if (!lock_sample_take(&rng, c[k].wait, rate, &w))
				continue;
			assert_true(w >= 1.0);
			c[k].est_count += w;
			c[k].est_delay += w * (double)c[k].wait;
		}
		assert_within(c[k].est_count, n, sqrt(n * (1 - p) / p), "lock count per class");
		assert_within(c[k].est_delay, n * (double)c[k].wait,
			      (double)c[k].wait * sqrt(n * (1 - p) / p), "lock delay per class");
		true_delay += n * (double)c[k].wait;
		est_delay += c[k].est_delay;
		var_delay += (double)(c[k].wait * c[k].wait) * n * (1 - p) / p;
		true_n += n;
		est_n += c[k].est_count;
		var_n += n * (1 - p) / p;
	}
	assert_within(est_delay, true_delay, sqrt(var_delay), "lock total delay");
	assert_within(est_n, true_n, sqrt(var_n), "lock total count");
}

static void test_lock_edges(void **state)
{
	uint64_t rng = 0;
	double w = 0;
	int i, kept = 0;

	(void)state;
	/* Rate 0 keeps everything at weight 1, zero waits included. */
	for (i = 0; i < 100; i++) {
		assert_true(lock_sample_take(&rng, (uint64_t)i, 0, &w));
		assert_true(w == 1.0);
	}
	/* At or above the rate: always, weight 1. */
	assert_true(lock_sample_take(&rng, 10, 10, &w) && w == 1.0);
	assert_true(lock_sample_take(&rng, UINT64_MAX, UINT64_MAX - 1, &w) && w == 1.0);
	/* Below it: weight rate / wait. */
	for (i = 0; i < 1000; i++) {
		if (lock_sample_take(&rng, 250, 1000, &w)) {
			kept++;
			assert_true(w == 4.0);
		}
	}
	assert_true(kept > 150 && kept < 350);
	assert_false(lock_sample_take(&rng, 1, UINT64_MAX, NULL));
}

static void test_cpu_weight(void **state)
{
	const uint64_t ms = 1000000;

	(void)state;
	assert_true(cpu_sample_weight_ns(10 * ms, 0) == 10 * ms);
	assert_true(cpu_sample_weight_ns(10 * ms, 3) == 40 * ms);
	assert_true(cpu_sample_weight_ns(10 * ms, -1) == 10 * ms);
	assert_true(cpu_sample_weight_ns(10 * ms, INT_MIN) == 10 * ms);
	assert_true(cpu_sample_weight_ns(1, INT_MAX) == (uint64_t)INT_MAX + 1);
	assert_true(cpu_sample_weight_ns(0, 5) == 0);
	assert_true(cpu_sample_weight_ns(UINT64_MAX / 2, 1) == UINT64_MAX - 1);
	assert_true(cpu_sample_weight_ns(UINT64_MAX / 2 + 1, 1) == UINT64_MAX);
	assert_true(cpu_sample_weight_ns(UINT64_MAX, 0) == UINT64_MAX);
	assert_true(cpu_sample_weight_ns(UINT64_MAX, INT_MAX) == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_mix_512k),	  cmocka_unit_test(test_alloc_mix_64k),
		cmocka_unit_test(test_alloc_zero_bytes),  cmocka_unit_test(test_alloc_precise),
		cmocka_unit_test(test_alloc_large),	  cmocka_unit_test(test_alloc_mean_edges),
		cmocka_unit_test(test_alloc_stack_scale), cmocka_unit_test(test_alloc_reproducible),
		cmocka_unit_test(test_lock_estimator),	  cmocka_unit_test(test_lock_edges),
		cmocka_unit_test(test_cpu_weight),
	};

	return cmocka_run_group_tests_name("sampling", tests, NULL, NULL);
}
