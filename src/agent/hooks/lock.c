/* SPDX-License-Identifier: MIT */
/*
 * Lock-contention profiling: the blocking pthread mutex and rwlock
 * functions, interposed (lock.h, doc/agent-lock.md).  Everything reached
 * from a hook is HOT; only resolve() and agent_lock_init() are cold.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "agent/core/agent.h"
#include "agent/hooks/lock.h"
#include "agent/stack/unwind.h"
#include "util/banned.h"

/* glibc's owner field of a robust mutex unlocked while inconsistent (INT_MAX - 1). */
#define GLIBC_MUTEX_NOTRECOVERABLE 0x7ffffffe

/* Frames of our own (hook, slow path, recorder) that can lie above the caller's. */
#define NSEC_PER_SEC 1000000000L

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NOINLINE      __attribute__((noinline))

enum lock_op {
	OP_MUTEX_LOCK,
	OP_MUTEX_TIMEDLOCK,
	OP_MUTEX_CLOCKLOCK,
	OP_RDLOCK,
	OP_WRLOCK,
	OP_TIMEDRDLOCK,
	OP_TIMEDWRLOCK,
	OP_CLOCKRDLOCK,
	OP_CLOCKWRLOCK,
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"pthread_mutex_lock",	      "pthread_mutex_timedlock",    "pthread_mutex_clocklock",
	"pthread_rwlock_rdlock",      "pthread_rwlock_wrlock",	    "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
};

/* The real functions, NULL until resolved; written once (compare-and-swap). */
static _Atomic(void *) real_fns[OP_COUNT];

/* One lock call's arguments; CLOCK and ABSTIME only for the timed ops. */
struct lock_call {
	enum lock_op op;
	void *lock;
	clockid_t clock;
	const struct timespec *abstime;
};

typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*mutex_timed_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*mutex_clock_fn)(pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*rwlock_fn)(pthread_rwlock_t *);
typedef int (*rwlock_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*rwlock_clock_fn)(pthread_rwlock_t *, clockid_t, const struct timespec *);

/* Cold: dlsym may allocate and set errno, neither of which the hook's caller may see. */
static NOINLINE __attribute__((cold)) void *resolve(enum lock_op op)
{
	int saved_errno = errno;
	void *expected = NULL;
	void *fn = dlsym(RTLD_NEXT, op_names[op]);

	errno = saved_errno;
	if (!fn)
		return NULL;
	if (!atomic_compare_exchange_strong(&real_fns[op], &expected, fn))
		return expected;
	return fn;
}

static ALWAYS_INLINE void *real_fn(enum lock_op op)
{
	void *fn = atomic_load_explicit(&real_fns[op], memory_order_acquire);

	return __builtin_expect(fn != NULL, 1) ? fn : resolve(op);
}

static ALWAYS_INLINE int call_real(struct lock_call c)
{
	void *fn = real_fn(c.op);

	if (!fn)
		return ENOSYS;
	switch (c.op) {
	case OP_MUTEX_LOCK: return ((mutex_fn)fn)(c.lock);
	case OP_MUTEX_TIMEDLOCK: return ((mutex_timed_fn)fn)(c.lock, c.abstime);
	case OP_MUTEX_CLOCKLOCK: return ((mutex_clock_fn)fn)(c.lock, c.clock, c.abstime);
	case OP_RDLOCK:
	case OP_WRLOCK: return ((rwlock_fn)fn)(c.lock);
	case OP_TIMEDRDLOCK:
	case OP_TIMEDWRLOCK: return ((rwlock_timed_fn)fn)(c.lock, c.abstime);
	case OP_CLOCKRDLOCK:
	case OP_CLOCKWRLOCK: return ((rwlock_clock_fn)fn)(c.lock, c.clock, c.abstime);
	default: return EINVAL;
	}
}

static ALWAYS_INLINE int call_try(struct lock_call c)
{
	switch (c.op) {
	case OP_MUTEX_LOCK:
	case OP_MUTEX_TIMEDLOCK:
	case OP_MUTEX_CLOCKLOCK: return pthread_mutex_trylock(c.lock);
	case OP_RDLOCK:
	case OP_TIMEDRDLOCK:
	case OP_CLOCKRDLOCK: return pthread_rwlock_tryrdlock(c.lock);
	default: return pthread_rwlock_trywrlock(c.lock);
	}
}

/*
 * glibc 2.36's trylock of a robust (non-PI) mutex that is not recoverable
 * returns ENOTRECOVERABLE but leaves the lock word taken (it compares the
 * CAS result, 0, with its tid), so every later lock blocks forever where
 * the real lock would keep returning ENOTRECOVERABLE.  The owner field (a
 * tid, 0, or glibc's marks above any tid) tells such a mutex beforehand.
 */
static ALWAYS_INLINE bool mutex_not_recoverable(pthread_mutex_t *m)
{
#ifdef __GLIBC__
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == GLIBC_MUTEX_NOTRECOVERABLE;
#else
	(void)m;
	return false;
#endif
}

/*
 * Whether trying first gives the real function's result on a free lock.
 * glibc rejects an unsupported clock (all clock variants) and a malformed
 * abstime (rwlocks only) with EINVAL before looking at the lock; such calls
 * go straight through so that they still fail, as do unrecoverable mutexes.
 */
static ALWAYS_INLINE bool try_first_ok(struct lock_call c)
{
	const struct timespec *ts = c.abstime;

	switch (c.op) {
	case OP_MUTEX_LOCK:
	case OP_MUTEX_TIMEDLOCK: return !mutex_not_recoverable(c.lock);
	case OP_MUTEX_CLOCKLOCK:
		return !mutex_not_recoverable(c.lock) &&
		       (c.clock == CLOCK_REALTIME || c.clock == CLOCK_MONOTONIC);
	case OP_CLOCKRDLOCK:
	case OP_CLOCKWRLOCK:
		if (c.clock != CLOCK_REALTIME && c.clock != CLOCK_MONOTONIC)
			return false;
		/* fall through */
	case OP_TIMEDRDLOCK:
	case OP_TIMEDWRLOCK: return !ts || (ts->tv_nsec >= 0 && ts->tv_nsec < NSEC_PER_SEC);
	default: return true;
	}
}

static ALWAYS_INLINE bool sampling_on(void)
{
	return atomic_load(&agent_state.running) && (agent_state.cfg.modes & AGENT_MODE_LOCK);
}

/* The calling thread when its lock waits are to be measured, else NULL. */
static ALWAYS_INLINE struct agent_thread *hook_thread(void)
{
	struct agent_thread *t;

	if (!sampling_on() || agent_thread_internal())
		return NULL;
	t = agent_thread_self();
	if (!t || t->in_hook)
		return NULL;
	return t;
}

static void lock_record(struct agent_thread *t, uint64_t wait_ns, uintptr_t ra)
{
	uintptr_t buf[AGENT_MAX_DEPTH + AGENT_UNWIND_OWN_MAX];
	const uintptr_t *stack;
	bool truncated = false;
	double weight = 1.0;
	size_t n;

	if (!lock_sample_take(&t->lock_rng, wait_ns, agent_state.cfg.lock_threshold_ns, &weight))
		return;
	n = agent_unwind_caller(t->stack_lo, t->stack_hi, ra, buf, AGENT_MAX_DEPTH, &stack,
				&truncated);
	agent_emit(t, AGENT_KIND_LOCK, llround(weight * AGENT_WEIGHT_ONE),
		   llround(weight * (double)wait_ns), stack, n,
		   truncated ? AGENT_SAMPLE_TRUNCATED : 0, 0);
}

/*
 * The lock was busy: time the real (blocking) call.  A timed-out wait is
 * contention too and is counted with its delay; errors (EDEADLK, EINVAL,
 * ENOTRECOVERABLE...) are not waits and are only passed back.
 */
static NOINLINE int lock_contended(struct agent_thread *t, struct lock_call c, uintptr_t ra)
{
	int saved_errno = errno;
	uint64_t t0, t1;
	int rc;

	t->in_hook = 1;
	t0 = agent_now_mono();
	rc = call_real(c);
	t1 = agent_now_mono();
	if ((rc == 0 || rc == EOWNERDEAD || rc == ETIMEDOUT) && sampling_on())
		lock_record(t, t1 > t0 ? t1 - t0 : 0, ra);
	t->in_hook = 0;
	errno = saved_errno;
	return rc;
}

/*
 * glibc's own fast path for a default mutex (kind 0: not recursive,
 * error-checking, robust, priority-inheriting, process-shared or elided),
 * inline: the lock word from 0 to 1, then the owner's tid and the user
 * count, as its pthread_mutex_lock and _trylock write them, so that its
 * unlock, condition variables and pthread_mutex_destroy find the same
 * state.  The layout is glibc's ABI (the static initialisers depend on it);
 * lock_test checks the interplay.  Saves the call into glibc's trylock on
 * every uncontended lock.  EBUSY: taken by someone else; -1: not a default
 * mutex (or not glibc), ask glibc.
 */
static ALWAYS_INLINE int mutex_try_default(pthread_mutex_t *m, const struct agent_thread *t)
{
#if defined(__GLIBC__) && defined(__x86_64__)
	int unlocked = 0;

	if (__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) != 0)
		return -1;
	if (!__atomic_compare_exchange_n(&m->__data.__lock, &unlocked, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return EBUSY;
	m->__data.__owner = t->tid;
	++m->__data.__nusers;
	return 0;
#else
	(void)m;
	(void)t;
	return -1;
#endif
}

/* Everything but an uncontended default mutex: one function for all the ops
 * (the call's fields one by one: passed in registers, not copied). */
static NOINLINE int lock_slow(enum lock_op op, void *lock, clockid_t clock,
			      const struct timespec *abstime, uintptr_t ra)
{
	struct lock_call c = {op, lock, clock, abstime};
	struct agent_thread *t = hook_thread();
	int rc = -1;

	if (!t || !try_first_ok(c))
		return call_real(c);
	if (c.op == OP_MUTEX_LOCK || c.op == OP_MUTEX_TIMEDLOCK)
		rc = mutex_try_default(c.lock, t);
	if (rc < 0)
		rc = call_try(c);
	if (rc != EBUSY)
		return rc; /* taken, or the same error the real function would give */
	return lock_contended(t, c, ra);
}

/* The whole hook, inlined into each interposer: the common case needs no frame. */
static ALWAYS_INLINE int lock_hook(struct lock_call c, uintptr_t ra)
{
	if (c.op == OP_MUTEX_LOCK || c.op == OP_MUTEX_TIMEDLOCK) {
		struct agent_thread *t = hook_thread();

		if (t && mutex_try_default(c.lock, t) == 0)
			return 0;
	}
	return lock_slow(c.op, c.lock, c.clock, c.abstime, ra);
}

#define CALLER ((uintptr_t)__builtin_return_address(0))

AGENT_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lock_hook((struct lock_call){OP_MUTEX_LOCK, m, 0, NULL}, CALLER);
}

AGENT_API int pthread_mutex_timedlock(pthread_mutex_t *restrict m,
				      const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_MUTEX_TIMEDLOCK, m, CLOCK_REALTIME, abstime},
			 CALLER);
}

AGENT_API int pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t clock,
				      const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_MUTEX_CLOCKLOCK, m, clock, abstime}, CALLER);
}

AGENT_API int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	return lock_hook((struct lock_call){OP_RDLOCK, rw, 0, NULL}, CALLER);
}

AGENT_API int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	return lock_hook((struct lock_call){OP_WRLOCK, rw, 0, NULL}, CALLER);
}

AGENT_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict rw,
					 const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_TIMEDRDLOCK, rw, CLOCK_REALTIME, abstime}, CALLER);
}

AGENT_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict rw,
					 const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_TIMEDWRLOCK, rw, CLOCK_REALTIME, abstime}, CALLER);
}

AGENT_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict rw, clockid_t clock,
					 const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_CLOCKRDLOCK, rw, clock, abstime}, CALLER);
}

AGENT_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict rw, clockid_t clock,
					 const struct timespec *restrict abstime)
{
	return lock_hook((struct lock_call){OP_CLOCKWRLOCK, rw, clock, abstime}, CALLER);
}

int agent_lock_init(void)
{
	int rc = 0;
	unsigned op;

	for (op = 0; op < OP_COUNT; op++) {
		bool optional =
			op == OP_MUTEX_CLOCKLOCK || op == OP_CLOCKRDLOCK || op == OP_CLOCKWRLOCK;

		if (!real_fn((enum lock_op)op) && !optional)
			rc = -ENOENT;
	}
	return rc;
}
