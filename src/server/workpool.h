/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_WORKPOOL_H
#define PLATEAU_WORKPOOL_H

/*
 * A fixed set of threads that run queued work in order of arrival.
 * plateau serve runs its request handlers here (http.c), so that
 * libmicrohttpd's one event loop, which holds every connection, never
 * waits for the store.
 */

#include "util/error.h"

#define WORKPOOL_MAX 256 /* threads of one pool at most */

/* One piece of work; the caller embeds it and keeps it alive until FN runs. */
struct work {
	void (*fn)(struct work *w);
	struct work *next; /* the pool's */
};

struct workpool;

/*
 * Start N threads (1..WORKPOOL_MAX) into *OUT.  Returns 0, or ERR_USAGE
 * for a bad N, ERR_NOMEM or ERR_IO (a thread could not start) with
 * nothing left running.
 */
int workpool_start(unsigned n, struct workpool **out, struct error *err);

/*
 * Queue W: W->fn(W) runs on one of the threads.  Never allocates.
 * Returns 0, or -1 once workpool_stop() has begun (W is not queued).
 */
int workpool_submit(struct workpool *p, struct work *w);

/* Refuse new work, run everything queued, then end the threads. */
void workpool_stop(struct workpool *p);

/* Free a stopped pool; NULL-safe. */
void workpool_free(struct workpool *p);

#endif
