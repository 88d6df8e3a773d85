/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_WALL_H
#define PLATEAU_AGENT_HOOKS_WALL_H

/*
 * The wall-clock sampler (wall.c): a thread that, every interval, looks at
 * each live thread's CPU time.  A thread that ran since its last sample is
 * signalled and samples its own stack (labelled running, or blocked when the
 * signal caught it in a system call); a thread that did not run is not
 * woken: the interval is added to its wall_repeat_ns, and the collector
 * charges it to the thread's previous stack, labelled blocked.  A thread
 * found idle is looked at less often (every 2, 4, then 8 rounds) unless it
 * begins or ends a blocking call eintr.c wraps; the time since the last
 * look is charged at the next look (split where the thread left its
 * previous call), at stop, or when it exits.  The rule is in doc/agent.md.
 */

/* Start and stop the sampler thread (cold).  Start returns 0 or -errno. */
int agent_wall_start(void);
void agent_wall_stop(void);

struct agent_thread;

/* The calling thread T is exiting: charge what it is owed (hot enough: once per thread). */
void agent_wall_thread_exit(struct agent_thread *t);

/* In a fork child: forget the parent's sampler thread. */
void agent_wall_atfork_child(void);

#endif
