/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_COLLECT_H
#define PLATEAU_AGENT_EXPORT_COLLECT_H

/*
 * The collector (collect.c): the agent thread that drains every thread's
 * ring, aggregates samples by (kind, labels, stack), charges idle threads'
 * wall time to their last stack, holds request samples until the request
 * ends, and every PLATEAU_UPLOAD_INTERVAL writes the profile file
 * (cumulative since start) and pushes the interval's profile (a delta).
 */

#include <stdbool.h>
#include <stdint.h>

/* Start the collector thread (cold).  Returns 0 or -errno. */
int agent_collect_start(void);

/*
 * Stop it, then drain, write and push one last time from the calling thread
 * (at exit or plateau_stop).  PUSH_DEADLINE_MS bounds the wait for the
 * server.  Returns 0 or -errno of the file write.
 */
int agent_collect_stop(uint64_t push_deadline_ms);

/* In a fork child: forget the parent's samples and threads (state only; no threads start). */
void agent_collect_atfork_child(void);
void agent_collect_atfork_prepare(void);
void agent_collect_atfork_parent(void);

/* The output file path of this process ("" when none). */
const char *agent_collect_output(void);

#endif
