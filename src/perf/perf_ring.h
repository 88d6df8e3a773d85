/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERF_RING_H
#define PLATEAU_PERF_RING_H

/* Internal to perf_event.c / perf_ring.c: one mmap'ed perf ring buffer. */
#include "perf/perf_event.h"

struct perf_ring {
	int fd;
	int cpu;    /* -1 for a per-process event */
	void *base; /* the mapping: 1 metadata page + data pages */
	size_t map_size;
	uint8_t *data;	    /* the data area */
	uint64_t data_size; /* a power of two */
	uint64_t *bounce;   /* data_size bytes, for records that wrap */
	int *redirected;    /* owned fds whose output was set to this ring (all_threads) */
	size_t nr_redirected, alloc_redirected;
};

/* Map 1 + pages pages of fd.  Takes ownership of fd (closed on failure). */
int perf_ring_map(struct perf_ring *r, int fd, int cpu, unsigned pages, struct error *err);
/* Unmap, close fd and the redirected fds.  A zeroed ring with fd -1 is a no-op. */
void perf_ring_unmap(struct perf_ring *r);
/* Point fd's output at r (PERF_EVENT_IOC_SET_OUTPUT) and keep it.  Takes ownership of fd. */
int perf_ring_redirect(struct perf_ring *r, int fd, struct error *err);
/* Call fn with the tid of every FORK record in the ring, without consuming anything. */
void perf_ring_peek_forks(const struct perf_ring *r, void (*fn)(uint32_t tid, void *arg),
			  void *arg);

#endif
