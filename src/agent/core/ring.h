/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_RING_H
#define PLATEAU_AGENT_CORE_RING_H

/*
 * Per-thread sample rings: one producer (the owning thread, from its signal
 * handlers and hooks, serialised by agent_thread.busy) and one consumer (the
 * collector thread).  Records are struct agent_sample, 8-byte aligned, never
 * split across the end of the buffer: a record that does not fit before the
 * end is preceded by a padding record.  Memory comes from mmap, so a ring can
 * be created from a hot path (a thread seen for the first time in a handler).
 */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/core/agent.h"

#define AGENT_RING_SIZE ((size_t)256 * 1024) /* data bytes per thread, a power of two */

struct agent_ring {
	_Atomic uint64_t head; /* bytes written, advanced by the producer */
	char pad0[56];
	_Atomic uint64_t tail; /* bytes consumed, advanced by the consumer */
	char pad1[56];
	size_t size; /* of data, a power of two */
	unsigned char data[];
};

/* A ring of AGENT_RING_SIZE bytes from mmap (async-signal-safe); NULL when out of memory. */
struct agent_ring *agent_ring_new(void);

/* Unmap it; NULL is fine. */
void agent_ring_free(struct agent_ring *r);

/* Empty it (the consumer, or a fork child that owns every ring). */
void agent_ring_reset(struct agent_ring *r);

/*
 * Producer (HOT): room for a record of LEN bytes (agent_sample_size of the
 * most frames it may hold), or NULL when the ring is full.  Nothing is
 * visible to the consumer until agent_ring_commit, which takes the record's
 * final size from s->nframes.
 */
struct agent_sample *agent_ring_reserve(struct agent_ring *r, size_t len);
void agent_ring_commit(struct agent_ring *r, const struct agent_sample *s);

/* Bytes one sample of NFRAMES takes in a ring. */
static inline size_t agent_sample_size(size_t nframes)
{
	return (sizeof(struct agent_sample) + nframes * sizeof(uintptr_t) + 7) & ~(size_t)7;
}

/*
 * A sample of up to MAX_FRAMES on T (HOT): NULL, counted, when T is already
 * writing one (a signal inside a hook) or its ring is full; otherwise fill
 * it and publish it with agent_sample_end.  agent_emit is both in one.
 */
struct agent_sample *agent_sample_begin(struct agent_thread *t, size_t max_frames);
void agent_sample_end(struct agent_thread *t, const struct agent_sample *s);

/* Fill S's header from T (labels, tid, request) and the arguments (HOT). */
void agent_sample_fill(const struct agent_thread *t, struct agent_sample *s, enum agent_kind kind,
		       int64_t v0, int64_t v1, size_t nframes, unsigned flags, unsigned state);

/*
 * Consumer (cold): call FN on every committed record in order, then free
 * their space.  Returns the number of records.  FN must not keep S.
 */
size_t agent_ring_drain(struct agent_ring *r, void (*fn)(const struct agent_sample *s, void *arg),
			void *arg);

#endif
