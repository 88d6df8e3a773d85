/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_DEADLINE_H
#define PLATEAU_DEADLINE_H

/*
 * Deadlines on sockets.  plateau serve gives a connection a fixed time to
 * send its request's headers (http.c): libmicrohttpd's own timeout starts
 * again on every byte, so a client sending one byte a second would keep
 * its connection for ever.  A thread looks at the watched sockets every
 * period and shuts down (shutdown(2), both directions) each one whose
 * deadline has passed; the socket's owner then reads end-of-file and
 * closes it.  The socket is never closed here: its owner must call
 * deadlines_remove() before it closes the socket, so that a later socket
 * with the same number is never touched.
 */

#include <stdint.h>

#include "util/error.h"

struct deadlines;
struct deadline; /* one watched socket */

/* Start the watching thread, which looks every PERIOD_NS (> 0). */
int deadlines_start(int64_t period_ns, struct deadlines **out, struct error *err);

/*
 * Watch FD, with no deadline yet.  Returns its entry, owned by D until
 * deadlines_remove(), or NULL when out of memory (FD has no deadline).
 */
struct deadline *deadlines_add(struct deadlines *d, int fd);

/*
 * Shut E's socket down once CLOCK_MONOTONIC passes AT_NS; 0 clears the
 * deadline.  Any thread may call it; NULL-safe.
 */
void deadline_set(struct deadline *e, int64_t at_ns);

/* Stop watching E (NULL-safe) and free it. */
void deadlines_remove(struct deadlines *d, struct deadline *e);

/* How many sockets were shut down for a passed deadline. */
uint64_t deadlines_cut(struct deadlines *d);

/* End the thread and free D (its entries must have been removed); NULL-safe. */
void deadlines_stop(struct deadlines *d);

#endif
