/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/sdk/region.h"
#include "util/banned.h"

#define SUB_BITS 5
#define SUB	 (1u << SUB_BITS)
#define BUCKETS	 ((64 - SUB_BITS + 1) * SUB)

struct region {
	const char *name;
	atomic_uint_fast64_t calls, measured, total_ns, total_bytes, max_ns;
	atomic_uint_fast64_t hist[BUCKETS];
};

static struct region *regions;
static _Atomic size_t nregions;
static atomic_flag lock = ATOMIC_FLAG_INIT;
static AGENT_TLS uint64_t rng;

/* Bucket of V: values below SUB are exact, above that SUB per power of two. */
static unsigned bucket_of(uint64_t v)
{
	unsigned e;

	if (v < SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
	return (e - SUB_BITS + 1) * SUB + (unsigned)((v >> (e - SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket B's range. */
static uint64_t bucket_value(unsigned b)
{
	unsigned e;
	uint64_t lo, width;

	if (b < SUB)
		return b;
	e = b / SUB - 1 + SUB_BITS;
	width = (uint64_t)1 << (e - SUB_BITS);
	lo = ((uint64_t)1 << e) + (uint64_t)(b % SUB) * width;
	return lo + width / 2;
}

static struct region *region_find(const char *name)
{
	size_t n = atomic_load_explicit(&nregions, memory_order_acquire);
	struct region *r = NULL;

	for (size_t i = 0; i < n; i++)
		if (regions[i].name == name || !strcmp(regions[i].name, name))
			return &regions[i];
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	if (!regions) {
		void *p = mmap(NULL, sizeof(struct region) * AGENT_REGIONS_MAX,
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		regions = p == MAP_FAILED ? NULL : p;
	}
	n = atomic_load(&nregions);
	for (size_t i = 0; regions && i < n && !r; i++)
		if (!strcmp(regions[i].name, name))
			r = &regions[i];
	if (!r && regions && n < AGENT_REGIONS_MAX) {
		r = &regions[n];
		r->name = name;
		atomic_store_explicit(&nregions, n + 1, memory_order_release);
	}
	atomic_flag_clear_explicit(&lock, memory_order_release);
	return r;
}

static bool sampled(double rate)
{
	if (rate >= 1)
		return true;
	if (!(rate > 0))
		return false;
	if (!rng)
		rng = agent_now_mono() ^ (uint64_t)(uintptr_t)&rng;
	return (double)(sampling_rand64(&rng) >> 11) * 0x1p-53 < rate;
}

static uint64_t thread_bytes(void)
{
	struct agent_thread *t = agent_thread_self();

	return t ? t->alloc_bytes : 0;
}

AGENT_API void plateau_region_begin(struct plateau_region *r, const char *name, double sample_rate,
				    double slow_ms)
{
	struct region *reg = name ? region_find(name) : NULL;

	memset(r, 0, sizeof(*r));
	r->stats = reg;
	if (!reg)
		return;
	atomic_fetch_add_explicit(&reg->calls, 1, memory_order_relaxed);
	if (!sampled(sample_rate))
		return;
	r->measured = 1;
	r->slow_ms = slow_ms;
	r->start_bytes = thread_bytes();
	r->start_ns = agent_now_mono();
}

AGENT_API struct plateau_region plateau__region_start(const char *name, double sample_rate,
						      double slow_ms)
{
	struct plateau_region r;

	plateau_region_begin(&r, name, sample_rate, slow_ms);
	return r;
}

static void log_slow(const char *name, uint64_t ns, uint64_t bytes)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s took %.3fms, allocated %.1fKB\n", name,
			 (double)ns / 1e6, (double)bytes / 1024.0);

	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

AGENT_API void plateau_region_end(struct plateau_region *r)
{
	struct region *reg = (struct region *)r->stats;
	uint64_t ns, bytes, max;

	if (!reg || !r->measured)
		return;
	ns = agent_now_mono() - r->start_ns;
	bytes = thread_bytes() - r->start_bytes;
	atomic_fetch_add_explicit(&reg->measured, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&reg->total_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&reg->total_bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&reg->hist[bucket_of(ns)], 1, memory_order_relaxed);
	max = atomic_load_explicit(&reg->max_ns, memory_order_relaxed);
	while (ns > max && !atomic_compare_exchange_weak(&reg->max_ns, &max, ns))
		;
	r->measured = 0;
	if (r->slow_ms > 0 && (double)ns > r->slow_ms * 1e6)
		log_slow(reg->name, ns, bytes);
}

static void fill_stats(struct region *reg, struct plateau_region_stats *out)
{
	uint64_t counts[BUCKETS], total = 0, want[3], seen = 0;
	uint64_t *dst[3] = {&out->p50_ns, &out->p95_ns, &out->p99_ns};
	static const double q[3] = {0.50, 0.95, 0.99};
	unsigned k = 0;

	memset(out, 0, sizeof(*out));
	out->calls = atomic_load(&reg->calls);
	out->measured = atomic_load(&reg->measured);
	out->total_ns = atomic_load(&reg->total_ns);
	out->total_bytes = atomic_load(&reg->total_bytes);
	out->max_ns = atomic_load(&reg->max_ns);
	for (unsigned b = 0; b < BUCKETS; b++)
		total += counts[b] = atomic_load_explicit(&reg->hist[b], memory_order_relaxed);
	for (unsigned i = 0; i < 3; i++)
		want[i] = (uint64_t)ceil(q[i] * (double)total);
	for (unsigned b = 0; b < BUCKETS && k < 3 && total; b++) {
		seen += counts[b];
		while (k < 3 && seen >= want[k] && want[k] > 0) {
			uint64_t v = bucket_value(b);

			*dst[k++] = v < out->max_ns ? v : out->max_ns;
		}
	}
}

size_t agent_region_count(void)
{
	return atomic_load_explicit(&nregions, memory_order_acquire);
}

const char *agent_region_get(size_t i, struct plateau_region_stats *out)
{
	if (i >= agent_region_count())
		return NULL;
	fill_stats(&regions[i], out);
	return regions[i].name;
}

AGENT_API int plateau_region_stats(const char *name, struct plateau_region_stats *out)
{
	size_t n = agent_region_count();

	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(regions[i].name, name)) {
			fill_stats(&regions[i], out);
			return 0;
		}
	return -1;
}
