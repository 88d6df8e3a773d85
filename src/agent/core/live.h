/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_LIVE_H
#define PLATEAU_AGENT_CORE_LIVE_H

/*
 * The table of sampled allocations that are still live, for the in-use
 * profile (inuse_objects, inuse_space; doc/agent-alloc.md).  The malloc
 * hooks insert a sampled pointer after the allocation returned and remove
 * it before the memory goes back to the allocator, from any thread; the
 * collector walks it with agent_live_foreach.
 *
 * One process-wide table of fixed capacity in one anonymous MAP_PRIVATE
 * mapping (a forked child inherits a copy, see agent_live_fork_child).
 * Each pointer hashes to a home bucket of AGENT_LIVE_BUCKET slots and lives
 * in that bucket or the next one; its payload (stack, labels, size, weight)
 * comes from a pool that reuses the payload freed last, so the pages the
 * table touches follow the number of sampled blocks live, not the number of
 * samples.  Insert, remove and lookup are lock-free and never allocate; when
 * both buckets are full the sample is dropped and counted in
 * agent_state.counters.live_full.  Slots are freed in place (no tombstones),
 * so the table never degrades.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/core/agent.h"

#define AGENT_LIVE_CAPACITY_DEFAULT 65536u
#define AGENT_LIVE_CAPACITY_MIN	    16u
#define AGENT_LIVE_CAPACITY_MAX	    (1u << 20)
#define AGENT_LIVE_BUCKET	    8u /* slots per bucket: one cache line of keys */

/* What agent_live_insert copies (it borrows PCS and LABELS). */
struct agent_live_sample {
	uintptr_t ptr; /* the allocation; 0 and 1 are refused */
	uint64_t size; /* bytes requested */
	double weight; /* the allocations this sample stands for */
	uint32_t tid;
	unsigned flags; /* AGENT_SAMPLE_* */
	const uintptr_t *pcs;
	size_t nframes; /* cut to AGENT_MAX_DEPTH */
	const uint32_t *labels;
	size_t nlabels; /* cut to AGENT_MAX_LABELS */
};

/* One entry as agent_live_foreach and agent_live_take hand it out (a copy). */
struct agent_live_entry {
	uintptr_t ptr;
	uint64_t size;
	double weight;
	uint32_t tid;
	uint16_t nframes;
	uint8_t nlabels;
	uint8_t flags;
	uint32_t labels[AGENT_MAX_LABELS];
	uintptr_t pcs[AGENT_MAX_DEPTH]; /* leaf first; nframes of them are valid */
};

/*
 * Map the table with room for CAPACITY entries (COLD), rounded up to a
 * power of two >= AGENT_LIVE_CAPACITY_MIN.  Returns 0, -EINVAL when
 * CAPACITY is 0 or above AGENT_LIVE_CAPACITY_MAX, -EBUSY when a table
 * exists, or the negative errno of mmap.
 */
int agent_live_init(size_t capacity);

/* Unmap the table (COLD).  No hook may be running; a no-op without a table. */
void agent_live_fini(void);

/*
 * Record a sampled allocation (HOT, any thread).  Returns false, counting
 * live_full, when both of its buckets are full or there is no table.
 */
bool agent_live_insert(const struct agent_live_sample *s);

/*
 * What free() reads for every pointer: per home bucket, the number of keys
 * whose home it is (at most 2 * AGENT_LIVE_BUCKET), and the hash's shift.
 * Read-mostly, its own cache line; HOMES is NULL without a table.
 */
struct agent_live_filter {
	atomic_uint_least8_t *_Atomic homes;
	unsigned shift; /* 64 - log2(buckets) */
};
extern struct agent_live_filter agent_live_filter;

static inline __attribute__((no_sanitize_address)) size_t agent_live_home(uintptr_t ptr,
									  unsigned shift)
{
	return (size_t)((((uint64_t)ptr >> 4) * UINT64_C(0x9e3779b97f4a7c15)) >> shift);
}

/*
 * Whether PTR may be in the table (HOT, inline in every free): false is
 * certain, and answered from one bucket counter without touching the keys.
 */
static inline __attribute__((no_sanitize_address)) bool agent_live_maybe(uintptr_t ptr)
{
	atomic_uint_least8_t *homes =
		atomic_load_explicit(&agent_live_filter.homes, memory_order_acquire);

	return homes && atomic_load_explicit(&homes[agent_live_home(ptr, agent_live_filter.shift)],
					     memory_order_relaxed) != 0;
}

/* Forget PTR (HOT, any thread).  Returns whether it was there. */
bool agent_live_remove(uintptr_t ptr);

/* Forget PTR and copy its entry into *OUT (HOT).  Returns whether it was there. */
bool agent_live_take(uintptr_t ptr, struct agent_live_entry *out);

/* Entries in the table (may lag concurrent inserts and removes by a few). */
size_t agent_live_count(void);

/* Entries the table can hold (0 without a table) and bytes of address space it maps. */
size_t agent_live_capacity(void);
size_t agent_live_mapped_bytes(void);

/* Payloads ever handed out: the high-water mark of entries live at once. */
size_t agent_live_payloads_used(void);

/*
 * Call FN(entry, ARG) on a consistent copy of every entry (COLD, the
 * collector).  Each entry is one that was live at some moment during the
 * walk; an entry inserted or removed while the walk runs may or may not be
 * seen.  Returns the number of entries passed to FN.
 */
size_t agent_live_foreach(void (*fn)(const struct agent_live_entry *e, void *arg), void *arg);

/*
 * In a forked child (COLD, single-threaded): release the slots that threads
 * of the parent were filling when fork() ran and recount the table.  The
 * entries themselves stay valid: the child has a copy of the parent's heap.
 */
void agent_live_fork_child(void);

#endif
