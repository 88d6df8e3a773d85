/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_SPINLOCK_H
#define PLATEAU_AGENT_CORE_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>

/*
 * The agent's own locks (cold paths only: start/stop, refresh, export, fork).
 * Not pthread mutexes: those go through the agent's lock hooks (and a
 * sanitizer's), and the host's lock profile must not show the agent's.
 * Holders never block for long; waiters yield.
 */
struct agent_lock {
	atomic_flag held;
};
#define AGENT_LOCK_INIT          \
	{                        \
		ATOMIC_FLAG_INIT \
	}

static inline void agent_lock(struct agent_lock *l)
{
	for (unsigned spins = 0; atomic_flag_test_and_set_explicit(&l->held, memory_order_acquire);
	     spins++)
		if (spins > 64)
			sched_yield();
}

static inline void agent_unlock(struct agent_lock *l)
{
	atomic_flag_clear_explicit(&l->held, memory_order_release);
}

/* In a fork child, whose only thread may have held it (it holds none now). */
static inline void agent_lock_reset(struct agent_lock *l)
{
	atomic_flag_clear_explicit(&l->held, memory_order_release);
}

#endif
