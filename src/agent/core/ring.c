/* SPDX-License-Identifier: MIT */
/*
 * Single-producer single-consumer sample rings (see ring.h).  The producer
 * publishes a record with a release store of head after filling it; the
 * consumer reads head with acquire, copies nothing (records are read in
 * place), and frees space with a release store of tail.
 */
#include <string.h>
#include <sys/mman.h>

#include "agent/core/ring.h"
#include "util/banned.h"

#define PAD_KIND 0xffff /* a padding record: skip to the end of the buffer */

struct agent_ring *agent_ring_new(void)
{
	size_t bytes = sizeof(struct agent_ring) + AGENT_RING_SIZE;
	struct agent_ring *r =
		mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	r->size = AGENT_RING_SIZE;
	return r;
}

void agent_ring_free(struct agent_ring *r)
{
	if (r)
		munmap(r, sizeof(*r) + r->size);
}

void agent_ring_reset(struct agent_ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);

	atomic_store_explicit(&r->tail, head, memory_order_release);
}

struct agent_sample *agent_ring_reserve(struct agent_ring *r, size_t len)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	size_t off = head & (r->size - 1), room_end = r->size - off;
	size_t need = len <= room_end ? len : room_end + len;

	if (len > r->size / 2 || head - tail + need > r->size)
		return NULL;
	if (len > room_end) {
		/* Pad to the end; the record starts at offset 0. */
		struct agent_sample *pad = (struct agent_sample *)(r->data + off);

		if (room_end >= sizeof(pad->kind))
			pad->kind = PAD_KIND;
		atomic_store_explicit(&r->head, head + room_end, memory_order_release);
		off = 0;
	}
	return (struct agent_sample *)(r->data + off);
}

void agent_ring_commit(struct agent_ring *r, const struct agent_sample *s)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	atomic_store_explicit(&r->head, head + agent_sample_size(s->nframes), memory_order_release);
}

size_t agent_ring_drain(struct agent_ring *r, void (*fn)(const struct agent_sample *s, void *arg),
			void *arg)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	size_t n = 0;

	while (tail < head) {
		size_t off = tail & (r->size - 1), room_end = r->size - off;
		const struct agent_sample *s = (const struct agent_sample *)(r->data + off);

		/* Records are 8-aligned, so fewer than 8 bytes at the end are padding too. */
		if (room_end < sizeof(*s) || s->kind == PAD_KIND) {
			tail += room_end;
			continue;
		}
		fn(s, arg);
		tail += agent_sample_size(s->nframes);
		n++;
	}
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	return n;
}

void agent_sample_fill(const struct agent_thread *t, struct agent_sample *s, enum agent_kind kind,
		       int64_t v0, int64_t v1, size_t nframes, unsigned flags, unsigned state)
{
	size_t nl = (size_t)t->nlabels;

	if (nl > AGENT_MAX_LABELS)
		nl = AGENT_MAX_LABELS;
	s->kind = (uint16_t)kind;
	s->nframes = (uint16_t)nframes;
	s->nlabels = (uint8_t)nl;
	s->state = (uint8_t)state;
	s->flags = (uint16_t)flags;
	s->tid = (uint32_t)t->tid;
	s->request = t->request;
	for (size_t i = 0; i < nl; i++)
		s->labels[i] = t->labels[i];
	s->v[0] = v0;
	s->v[1] = v1;
}

struct agent_sample *agent_sample_begin(struct agent_thread *t, size_t max_frames)
{
	struct agent_sample *s;

	if (t->busy) {
		atomic_fetch_add_explicit(&agent_state.counters.dropped_busy, 1,
					  memory_order_relaxed);
		return NULL;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	s = agent_ring_reserve(t->ring, agent_sample_size(max_frames));
	if (!s) {
		atomic_fetch_add_explicit(&agent_state.counters.dropped_full, 1,
					  memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
	}
	return s;
}

void agent_sample_end(struct agent_thread *t, const struct agent_sample *s)
{
	agent_ring_commit(t->ring, s);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

bool agent_emit(struct agent_thread *t, enum agent_kind kind, int64_t v0, int64_t v1,
		const uintptr_t *pcs, size_t nframes, unsigned flags, unsigned state)
{
	struct agent_sample *s;

	if (nframes > AGENT_MAX_DEPTH)
		nframes = AGENT_MAX_DEPTH;
	s = agent_sample_begin(t, nframes);
	if (!s)
		return false;
	agent_sample_fill(t, s, kind, v0, v1, nframes, flags, state);
	if (nframes)
		memcpy(s->pcs, pcs, nframes * sizeof(*pcs));
	agent_sample_end(t, s);
	return true;
}
