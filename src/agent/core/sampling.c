/* SPDX-License-Identifier: MIT */
/*
 * Sampling arithmetic for the agent. Only libc and libm; no allocation, no
 * locks, no errno changes (log1p and expm1 are called on arguments where
 * they cannot fail), so every function may run in a signal handler or a
 * malloc hook.
 */
#include <math.h>

#include "agent/core/sampling.h"

uint64_t sampling_rand64(uint64_t *state)
{
	/* splitmix64 (Steele, Lea, Flood 2014): every state, 0 included, is fine. */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * A standard exponential draw, -log(1 - v) with v uniform on [0, 1) from
 * the top 53 bits. 1 - v >= 2^-53, so there is no log(0), every draw is
 * finite (at most 53 ln 2 ~ 36.74) and log1p keeps short gaps precise.
 */
static double exp_draw(uint64_t *rng)
{
	double v = (double)(sampling_rand64(rng) >> 11) * 0x1.0p-53;

	return -log1p(-v);
}

/* Bytes to the next sample point, rounded up: with integer sizes the
 * allocation that makes the countdown <= 0 is exactly the one that holds it. */
static int64_t alloc_gap(struct alloc_sampler *s)
{
	return (int64_t)ceil(exp_draw(&s->rng) * (double)s->mean);
}

void alloc_sampler_init(struct alloc_sampler *s, uint64_t mean, uint64_t seed)
{
	s->rng = seed;
	s->mean = mean > ALLOC_SAMPLE_MEAN_MAX ? ALLOC_SAMPLE_MEAN_MAX : mean;
	s->countdown = s->mean > 1 ? alloc_gap(s) : 0;
}

bool alloc_sampler_take(struct alloc_sampler *s, size_t size, double *weight_out)
{
	uint64_t bytes = size == SIZE_MAX ? (uint64_t)SIZE_MAX : (uint64_t)size + 1;

	if (s->mean <= 1) {
		if (s->mean == 0)
			return false;
		if (weight_out)
			*weight_out = 1.0;
		return true;
	}
	if ((uint64_t)s->countdown > bytes) {
		s->countdown -= (int64_t)bytes;
		return false;
	}
	/* Exponential gaps are memoryless: the next point is a fresh gap past
	 * the end of this allocation, whatever else fell inside it. */
	s->countdown = alloc_gap(s);
	if (weight_out)
		*weight_out = alloc_sample_scale(size, s->mean);
	return true;
}

/* 1 / (1 - exp(-x)) for x > 0, precise at both ends. */
static double poisson_scale(double x)
{
	return 1.0 / -expm1(-x);
}

double alloc_sample_scale(size_t size, uint64_t mean)
{
	if (mean == 0)
		return 0.0;
	if (mean == 1)
		return 1.0;
	if (mean > ALLOC_SAMPLE_MEAN_MAX)
		mean = ALLOC_SAMPLE_MEAN_MAX;
	return poisson_scale(((double)size + 1.0) / (double)mean);
}

double alloc_stack_scale(uint64_t count, uint64_t bytes, uint64_t mean)
{
	double avg;

	if (count == 0 || mean == 0)
		return 0.0;
	if (mean == 1)
		return 1.0;
	if (mean > ALLOC_SAMPLE_MEAN_MAX)
		mean = ALLOC_SAMPLE_MEAN_MAX;
	avg = (double)bytes / (double)count + 1.0;
	return poisson_scale(avg / (double)mean);
}

/* Uniform on [0, n) by multiply-high (Lemire); bias below 2^-64 * n. */
static uint64_t rand_below(uint64_t *rng, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)sampling_rand64(rng) * n) >> 64);
}

bool lock_sample_take(uint64_t *rng, uint64_t wait_ns, uint64_t rate_ns, double *weight)
{
	uint64_t wait = wait_ns ? wait_ns : 1;

	if (rate_ns == 0 || wait >= rate_ns) {
		if (weight)
			*weight = 1.0;
		return true;
	}
	/* Kept with probability wait / rate. */
	if (rand_below(rng, rate_ns) >= wait)
		return false;
	if (weight)
		*weight = (double)rate_ns / (double)wait;
	return true;
}

uint64_t cpu_sample_weight_ns(uint64_t interval_ns, int overrun)
{
	uint64_t ticks = overrun > 0 ? (uint64_t)overrun + 1 : 1;
	uint64_t w;

	if (__builtin_mul_overflow(interval_ns, ticks, &w))
		return UINT64_MAX;
	return w;
}
