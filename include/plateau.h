/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_H
#define PLATEAU_H

/*
 * The plateau C SDK: link with -lplateau (pkg-config plateau) or load
 * libplateau.so with LD_PRELOAD.  Configuration comes from the PLATEAU_*
 * environment variables (doc/agent-config.md); see doc/agent-sdk.md.
 *
 * Every function is safe to call from any thread, at any time, whether the
 * agent is running or not: when it is off they do nothing (labels, requests)
 * or only measure (regions).  None of them may be called from a signal
 * handler.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- start and stop ---- */

/*
 * Start sampling with the configuration from the environment.  The agent
 * starts by itself when it is loaded with LD_PRELOAD or when a PLATEAU_*
 * variable is set; a program linked with it may instead start it here.
 * Returns 0, or -1 when the configuration is bad (one line on stderr says
 * why) or sampling cannot start.  Starting twice is harmless.
 */
int plateau_start(void);

/* Stop sampling and write (or push) the profile so far.  Returns 0 or -1. */
int plateau_stop(void);

/* ---- thread-local labels ---- */

/*
 * Label this thread's samples KEY=VALUE until the matching pop.  Strings are
 * copied.  Up to 8 labels are active per thread; an inner label with the
 * same key hides the outer one.  Each key keeps at most
 * plateau_set_label_cap() distinct values per process (default 256): later
 * values become "_other" and are counted.  Returns 0, or -1 when the label
 * was not pushed (no room, empty key; pop is then still expected).
 */
int plateau_label_push(const char *key, const char *value);
void plateau_label_pop(void);

/* Push the NULL-terminated KEY, VALUE, KEY, VALUE ... list; returns how many pairs to pop. */
int plateau_labels_push(const char *const *kv);
void plateau_labels_pop(int n);

/* Distinct values kept per label key (1..65536); returns the previous cap. */
unsigned plateau_set_label_cap(unsigned values_per_key);

void plateau__labels_cleanup(int *n);

#define PLATEAU__CAT2(a, b) a##b
#define PLATEAU__CAT(a, b)  PLATEAU__CAT2(a, b)

/*
 * Label the samples of the rest of the enclosing block:
 *     PLATEAU_WITH_LABELS("endpoint", "/checkout", "tier", "gold");
 * The labels are popped when the block is left, however it is left.
 */
#define PLATEAU_WITH_LABELS(...)                                            \
	int PLATEAU__CAT(plateau__labels_, __LINE__)                        \
		__attribute__((cleanup(plateau__labels_cleanup), unused)) = \
			plateau_labels_push((const char *const[]){__VA_ARGS__, NULL})

/* ---- regions: instrumented blocks with sampled timing and memory ---- */

struct plateau_region {
	const void *stats; /* private */
	uint64_t start_ns;
	uint64_t start_bytes;
	double slow_ms;
	int measured;
};

/*
 * Measure a named block on a SAMPLE_RATE fraction of calls (0..1; 1 = every
 * call): its duration, and the bytes this thread allocated inside it.  A
 * measured call slower than SLOW_MS (0 = never) is logged on stderr as
 *     NAME took 12.345ms, allocated 7753.5KB
 * Counts and latency percentiles per region go into the profile.  NAME must
 * stay valid for the life of the process (a string literal).
 */
void plateau_region_begin(struct plateau_region *r, const char *name, double sample_rate,
			  double slow_ms);
void plateau_region_end(struct plateau_region *r);
struct plateau_region plateau__region_start(const char *name, double sample_rate, double slow_ms);

/* The rest of the enclosing block is region NAME. */
#define PLATEAU_REGION(name, sample_rate, slow_ms)                     \
	struct plateau_region PLATEAU__CAT(plateau__region_, __LINE__) \
		__attribute__((cleanup(plateau_region_end), unused)) = \
			plateau__region_start(name, sample_rate, slow_ms)

/* Percentiles of a region so far (ns), from every process-wide measured call. */
struct plateau_region_stats {
	uint64_t calls;	   /* every call, measured or not */
	uint64_t measured; /* calls timed */
	uint64_t p50_ns, p95_ns, p99_ns, max_ns;
	uint64_t total_ns;    /* over measured calls */
	uint64_t total_bytes; /* allocated in measured calls */
};
int plateau_region_stats(const char *name, struct plateau_region_stats *out);

/* ---- slow requests ---- */

/*
 * Hold this thread's samples from here to plateau_request_end; if the request
 * took longer than THRESHOLD_NS, they are labelled latency=slow, so the
 * stacks of the slowest requests can be selected on their own.  Requests do
 * not nest: a second begin ends the first.  end returns 1 when slow, else 0.
 */
void plateau_request_begin(void);
int plateau_request_end(uint64_t threshold_ns);

#ifdef __cplusplus
}
#endif

#endif
