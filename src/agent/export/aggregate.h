/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_AGGREGATE_H
#define PLATEAU_AGENT_EXPORT_AGGREGATE_H

/*
 * The collector's aggregates (aggregate.c): (kind, labels, stack) -> two
 * weighted sums and the number of samples behind them.  Cold code, owned by
 * the collector thread; memory from malloc (the collector is internal).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/core/agent.h"

#define AGENT_KEY_LABELS (AGENT_MAX_LABELS + 3) /* the thread's, + thread, state, latency */

#define AGENT_KIND_INUSE AGENT_KIND_COUNT /* entries of the in-use snapshot */

struct agent_entry {
	uint64_t hash;
	uint16_t kind, nframes;
	uint8_t nlabels;
	uint32_t labels[AGENT_KEY_LABELS];
	uintptr_t *pcs;
	int64_t v0, v1;
	int64_t n; /* samples behind the sums: the count the sampling error comes from */
};

struct agent_agg {
	struct agent_entry *e;
	size_t n, alloc;
	uint32_t *index; /* open addressing: entry + 1, 0 = empty */
	size_t index_size;
};

/* K's hash, over its kind, labels and stack (K's hash field is not read). */
uint64_t agent_entry_hash(const struct agent_entry *k);

/*
 * Add K's sums to its entry in A, creating it with a copy of K's stack.
 * K->hash must be agent_entry_hash(K) and its labels sorted.  Returns the
 * entry's index (stable until agent_agg_clear) or -1 when out of memory.
 */
ssize_t agent_agg_add(struct agent_agg *a, const struct agent_entry *k);

/* Free everything A holds and empty it. */
void agent_agg_clear(struct agent_agg *a);

/* qsort comparator of label ids. */
int agent_cmp_u32(const void *x, const void *y);

#endif
