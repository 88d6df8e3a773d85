/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_THREAD_H
#define PLATEAU_AGENT_CORE_THREAD_H

/*
 * The thread registry (thread.c); agent_thread_self, _internal, _register
 * and _set_internal are declared in agent.h.
 */

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/core/agent.h"

#define AGENT_MAX_THREADS 8192 /* live threads sampled at once; more are counted and not sampled */

enum agent_slot_status {
	SLOT_FREE,
	SLOT_CLAIMED, /* being set up */
	SLOT_LIVE,
	SLOT_EXITED, /* thread gone, ring not yet drained */
};

/* Map the table and create the exit key (cold, once).  Returns 0 or -errno. */
int agent_thread_init(void);

/* Slots 0..count-1 may be in use (any status); agent_thread_at(i) is slot i. */
size_t agent_thread_count(void);
struct agent_thread *agent_thread_at(size_t i);

/* The live slot of TID (HOT-safe: a scan, no lock), or NULL. */
struct agent_thread *agent_thread_find(pid_t tid);

/* agent_thread_self(), falling back to a scan by tid for adopted threads (HOT-safe). */
struct agent_thread *agent_thread_self_slow(void);

/*
 * Give a slot to TID, a thread of this process that existed before the agent
 * started (cold): its stack bounds stay unknown, its TLS is bound when its
 * first signal arrives.  Returns the slot or NULL.
 */
struct agent_thread *agent_thread_adopt(pid_t tid);

/* The collector is done with an exited slot: make it free. */
void agent_thread_release(struct agent_thread *t);

/* In a fork child: only the calling thread lives on; every ring is emptied. */
void agent_thread_atfork_child(void);

/*
 * Start one of the agent's own threads (cold): it gets no slot, blocks every
 * signal, and its allocations and locks are never sampled.  Returns 0 or an
 * errno value, like pthread_create.
 */
int agent_thread_spawn(pthread_t *th, void *(*fn)(void *), void *arg);

/* dlsym(RTLD_NEXT, NAME) (cold; agent.c). */
void *agent_dlsym_next(const char *name);

#endif
