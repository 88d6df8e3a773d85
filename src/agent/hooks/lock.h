/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_LOCK_H
#define PLATEAU_AGENT_HOOKS_LOCK_H

/*
 * Lock-contention profiling (PLATEAU_MODES=lock, doc/agent-lock.md).
 *
 * lock.c defines and exports the blocking pthread lock functions, so that
 * with libplateau.so preloaded they interpose libc's:
 *
 *   pthread_mutex_lock, pthread_mutex_timedlock, pthread_mutex_clocklock,
 *   pthread_rwlock_rdlock, pthread_rwlock_wrlock,
 *   pthread_rwlock_timedrdlock, pthread_rwlock_timedwrlock,
 *   pthread_rwlock_clockrdlock, pthread_rwlock_clockwrlock.
 *
 * Each hook (HOT: no allocation, no lock of its own, no dlsym once
 * resolved, errno kept) tries the lock first; only a call that would block
 * is timed around the real function, and a wait that ends with the lock
 * held (0, EOWNERDEAD) or with ETIMEDOUT goes through lock_sample_take()
 * with the rate agent_state.cfg.lock_threshold_ns.  A kept wait becomes one
 * AGENT_KIND_LOCK sample on the waiting thread: v0 = contentions (weight in
 * AGENT_WEIGHT_ONE units), v1 = delay ns (weighted), stack leaf first with
 * pcs[0] in the function that called the pthread function.  Return codes
 * are always the real function's.
 *
 * A hook passes straight to the real function when sampling is off or lock
 * mode is not selected, on internal threads, on threads without a slot, and
 * when the thread is already inside a hook (agent_thread.in_hook).
 *
 * Uses: agent_state, agent_now_mono, agent_thread_self,
 * agent_thread_internal, agent_emit (agent.h), agent_unwind_here
 * (unwind.h) and t->lock_rng, which thread.c seeds per thread.
 */

/*
 * Resolve the real functions with dlsym(RTLD_NEXT) (cold: dlsym may
 * allocate).  Call once at agent start, before sampling is turned on and
 * before any signal timer is armed.  A hook that runs earlier (another
 * library's constructor) resolves its own function lazily; racing threads
 * find the same address and the first store wins.  Returns 0, or -ENOENT
 * when one of the functions every glibc has is missing (then lock mode must
 * stay off); the clock variants (glibc >= 2.30) are optional.
 */
int agent_lock_init(void);

#endif
