/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_CPU_H
#define PLATEAU_AGENT_HOOKS_CPU_H

/*
 * The agent's signal and its CPU timers (cpu.c).  One handler serves CPU
 * samples (a per-thread CPU-time POSIX timer, si_code SI_TIMER) and wall
 * samples (queued by the wall sampler with rt_tgsigqueueinfo, si_code
 * SI_QUEUE and a magic si_errno).  The signal is SIGPROF unless the program
 * has its own SIGPROF handler, installs one later (sigaction, signal) or
 * arms ITIMER_PROF: then the agent moves to a free real-time signal, or
 * turns CPU and wall sampling off with a warning when none is free.
 */

#include <stdint.h>

#include "agent/core/agent.h"

#define AGENT_WALL_MAGIC 0x706c7477 /* si_errno of a wall signal: "pltw" */

/* Choose the signal and install the handler (cold).  Returns 0 or -errno. */
int agent_signal_init(void);

/* The signal in use, or 0 when sampling by signal is off. */
int agent_signal_current(void);

/* Arm T's CPU timer (cold; T may be another thread, by tid).  Returns 0 or -errno. */
int agent_cpu_thread_start(struct agent_thread *t);

/* Delete T's CPU timer if it has one (async-signal-safe). */
void agent_cpu_thread_stop(struct agent_thread *t);

/* Arm or delete the timers of every live thread (cold). */
void agent_cpu_start_all(void);
void agent_cpu_stop_all(void);

/*
 * SIGINT, SIGTERM and SIGHUP left at their default action would end the
 * program before the profile is written: catch them, let the collector
 * write it, then restore the default and die of the same signal
 * (agent_signal_die).  A handler the program installs replaces the agent's.
 */
void agent_signal_catch_fatal(void);
void agent_signal_die(int signo);

/* Whether the interrupted context is in (or right after) a system call (HOT). */
bool agent_context_in_syscall(const void *ucontext);

#endif
