/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_SAMPLING_H
#define PLATEAU_AGENT_CORE_SAMPLING_H

/*
 * Sampling arithmetic of the in-process agent: which allocation, lock wait
 * or CPU signal becomes a sample, and what it weighs so that the sum of the
 * weights estimates the true totals without bias. See doc/agent-sampling.md.
 *
 * Every function here is async-signal-safe and allocation-free: it touches
 * only the state the caller passes in (typically a thread-local struct),
 * takes no lock and calls only pure libm functions (log1p, expm1).
 * Nothing here is thread-safe on shared state: give each thread its own.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default mean gap between allocation samples, in bytes (as gperftools, Go, jemalloc). */
#define ALLOC_SAMPLE_MEAN_DEFAULT ((uint64_t)512 * 1024)

/* Means above this are clamped so that every gap fits the countdown. */
#define ALLOC_SAMPLE_MEAN_MAX ((uint64_t)1 << 56)

/*
 * Poisson sampling over allocated bytes: each allocation of `size` bytes
 * counts size + 1 bytes and is sampled with probability
 * 1 - exp(-(size + 1) / mean). Caller owns the struct; fields are private.
 */
struct alloc_sampler {
	uint64_t rng;	   /* splitmix64 state */
	int64_t countdown; /* bytes left before the next sample point, >= 0 */
	uint64_t mean;	   /* mean gap in bytes; 0 = off, 1 = every allocation */
};

/*
 * Set up `s` with mean gap `mean` bytes and a PRNG seeded from `seed`
 * (any value, 0 included). mean == 0 turns sampling off; mean == 1 samples
 * every allocation at weight 1 (Go's MemProfileRate convention); larger
 * means are clamped to ALLOC_SAMPLE_MEAN_MAX. Same seed, same decisions.
 */
void alloc_sampler_init(struct alloc_sampler *s, uint64_t mean, uint64_t seed);

/*
 * Account one allocation of `size` bytes. Returns true when it is sampled
 * and then stores its weight, alloc_sample_scale(size, mean), in
 * *weight_out (may be NULL): the sampled allocation stands for `weight`
 * allocations and weight * size bytes. Returns false (weight untouched)
 * otherwise. Any size is fine, SIZE_MAX included.
 */
bool alloc_sampler_take(struct alloc_sampler *s, size_t size, double *weight_out);

/*
 * The common case of alloc_sampler_take, inline: when an allocation of
 * `size` bytes is certainly not sampled, account it and return true;
 * otherwise return false with `s` untouched (call alloc_sampler_take).
 */
static inline bool alloc_sampler_skip(struct alloc_sampler *s, size_t size)
{
	if (s->mean <= 1 || s->countdown <= 0 || (uint64_t)size >= (uint64_t)s->countdown - 1)
		return false;
	s->countdown -= (int64_t)size + 1;
	return true;
}

/*
 * Per-sample (tcmalloc-style) unbiasing weight of one sampled allocation:
 * 1 / (1 - exp(-(size + 1) / mean)), computed with expm1 so that it stays
 * precise for tiny and huge ratios; >= 1, about mean / (size + 1) for small
 * sizes and 1 for sizes far above mean. Returns 1 for mean <= 1 and 0 for
 * mean == 0 (nothing is sampled).
 */
double alloc_sample_scale(size_t size, uint64_t mean);

/*
 * Per-stack (pprof/Go/jemalloc-style) scale for a stack that got `count`
 * samples totalling `bytes` bytes: 1 / (1 - exp(-avg / mean)) with
 * avg = bytes / count + 1, to multiply the stack's raw count and bytes.
 * Exact when every allocation at the stack has the same size; use the
 * per-sample weight when sizes vary. Returns 0 when count == 0.
 */
double alloc_stack_scale(uint64_t count, uint64_t bytes, uint64_t mean);

/*
 * Lock-wait sampling with rate `rate_ns` (Go's block-profile estimator):
 * a wait >= rate_ns is kept at weight 1; a shorter one is kept with
 * probability wait_ns / rate_ns at weight rate_ns / wait_ns (a wait of 0
 * is treated as 1 ns for the draw). rate_ns == 0 keeps every wait at
 * weight 1. On true, *weight (may be NULL) gets the weight: the sample
 * stands for `weight` contentions and weight * wait_ns nanoseconds of
 * delay. `rng` is caller-owned splitmix64 state, any value.
 */
bool lock_sample_take(uint64_t *rng, uint64_t wait_ns, uint64_t rate_ns, double *weight);

/*
 * Weight of one CPU-timer signal: interval_ns * (1 + overrun), where
 * overrun is timer_getoverrun()'s count of expirations merged into this
 * signal; a negative overrun (the call failed) counts as 0. Saturates at
 * UINT64_MAX instead of wrapping.
 */
uint64_t cpu_sample_weight_ns(uint64_t interval_ns, int overrun);

/* Next value of the splitmix64 generator whose state is *state. */
uint64_t sampling_rand64(uint64_t *state);

#endif
