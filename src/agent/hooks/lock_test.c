/* SPDX-License-Identifier: MIT */
/*
 * Tests of the lock hooks (lock.c) through the real glibc locks.  This file
 * holds doubles of agent_state, agent_now_mono, agent_thread_self,
 * agent_thread_internal, agent_emit (which records every sample) and
 * agent_unwind_here (a frame-pointer walk; build with
 * -fno-omit-frame-pointer and -rdynamic so that dladdr names the callers).
 *
 * Contention is made certain, not hoped for: a holder thread takes the
 * lock, waits until /proc says the waiting thread sleeps (it is then inside
 * the real lock function), holds on a little longer and releases.  No test
 * depends on how fast the machine is, only on waits lasting at least as
 * long as they were made to.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/core/agent.h"
#include "agent/hooks/lock.h"
#include "agent/stack/unwind.h"

#define MS	   UINT64_C(1000000)
#define US	   UINT64_C(1000)
#define REC_MAX	   65536
#define REC_FRAMES 8

/* ---- doubles ---- */

struct rec {
	int kind;
	int64_t v0, v1;
	size_t nframes;
	unsigned flags, state;
	pid_t tid;
	uintptr_t pcs[REC_FRAMES];
};

struct agent agent_state;
static struct rec recs[REC_MAX];
static atomic_int nrecs;
static AGENT_TLS struct agent_thread *self_slot;
static AGENT_TLS bool self_internal;
static struct agent_thread *main_slot;

struct agent_thread *agent_thread_self(void)
{
	return self_slot;
}

bool agent_thread_internal(void)
{
	return self_internal;
}

uint64_t agent_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Records the sample, then clobbers errno as a real one may. */
bool agent_emit(struct agent_thread *t, enum agent_kind kind, int64_t v0, int64_t v1,
		const uintptr_t *pcs, size_t nframes, unsigned flags, unsigned state)
{
	int i = atomic_fetch_add(&nrecs, 1);
	struct rec *r;
	size_t k;

	errno = EILSEQ;
	if (i >= REC_MAX)
		return false;
	r = &recs[i];
	*r = (struct rec){kind, v0, v1, nframes, flags, state, t->tid, {0}};
	for (k = 0; k < nframes && k < REC_FRAMES; k++)
		r->pcs[k] = pcs[k];
	return true;
}

/* Frame-pointer walk inside [lo, hi): pcs[0] is in our caller. */
size_t agent_unwind_here(uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max, unsigned skip,
			 bool *truncated)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	size_t n = 0;

	*truncated = false;
	while (fp >= lo && fp <= hi - 16 && (fp & 7) == 0) {
		const uintptr_t *frame = (const uintptr_t *)fp;

		if (frame[1] == 0)
			break;
		if (skip) {
			skip--;
		} else if (n == max) {
			*truncated = true;
			break;
		} else {
			pcs[n++] = frame[1] - 1;
		}
		if (frame[0] <= fp)
			break;
		fp = frame[0];
	}
	errno = EILSEQ;
	return n;
}

/* ---- helpers ---- */

static uint64_t now_ns(void)
{
	return agent_now_mono();
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct timespec abs_in(clockid_t clock, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec += (long)(ns % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* A slot for the calling thread with its real stack bounds. */
static struct agent_thread *thread_register(uint64_t seed)
{
	struct agent_thread *t = calloc(1, sizeof(*t));
	pthread_attr_t attr;
	void *addr = NULL;
	size_t size = 0;

	if (!t || pthread_getattr_np(pthread_self(), &attr) != 0)
		abort();
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	t->tid = gettid();
	t->stack_lo = (uintptr_t)addr;
	t->stack_hi = (uintptr_t)addr + size;
	t->lock_rng = seed;
	self_slot = t;
	return t;
}

/* Whether thread TID of process PID sleeps (S or D), polled for up to 10 s. */
static bool wait_blocked(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	for (i = 0; i < 200000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		char *paren;

		if (fd >= 0)
			close(fd);
		if (len > 0) {
			buf[len] = '\0';
			paren = strrchr(buf, ')');
			if (paren && paren[1] == ' ' && (paren[2] == 'S' || paren[2] == 'D'))
				return true;
		}
		sleep_us(50);
	}
	return false;
}

/* Samples recorded (emitted beyond REC_MAX are counted, not kept). */
static int nsamples(void)
{
	int n = atomic_load(&nrecs);

	return n < REC_MAX ? n : REC_MAX;
}

/* ---- holder threads ---- */

enum hold { HOLD_MUTEX, HOLD_RD, HOLD_WR };

struct holder {
	pthread_t th;
	enum hold how;
	void *lock;
	int depth;    /* times to take it (recursive mutexes); 0 means 1 */
	pid_t waiter; /* release HOLD_US after this thread blocks; 0: on release */
	uint64_t hold_us;
	bool die;	 /* exit with the lock held */
	atomic_int held; /* 1 held, -1 failed */
	atomic_bool release;
	int err; /* first problem, asserted by holder_join */
};

static int hold_lock(struct holder *h)
{
	switch (h->how) {
	case HOLD_MUTEX: return pthread_mutex_lock(h->lock);
	case HOLD_RD: return pthread_rwlock_rdlock(h->lock);
	default: return pthread_rwlock_wrlock(h->lock);
	}
}

static int hold_unlock(struct holder *h)
{
	if (h->how == HOLD_MUTEX)
		return pthread_mutex_unlock(h->lock);
	return pthread_rwlock_unlock(h->lock);
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	int i, depth = h->depth ? h->depth : 1, rc;

	for (i = 0; i < depth; i++) {
		rc = hold_lock(h);
		if (rc != 0 && rc != EOWNERDEAD) {
			h->err = rc;
			atomic_store(&h->held, -1);
			return NULL;
		}
	}
	atomic_store(&h->held, 1);
	if (h->waiter) {
		if (!wait_blocked(getpid(), h->waiter))
			h->err = ETIMEDOUT;
		sleep_us(h->hold_us);
	} else {
		while (!atomic_load(&h->release))
			sleep_us(100);
	}
	for (i = 0; i < depth && !h->die; i++) {
		rc = hold_unlock(h);
		if (rc != 0 && !h->err)
			h->err = rc;
	}
	return NULL;
}

static void holder_start(struct holder *h)
{
	assert_int_equal(pthread_create(&h->th, NULL, holder_main, h), 0);
	while (atomic_load(&h->held) == 0)
		sched_yield();
	assert_int_equal(atomic_load(&h->held), 1);
}

static void holder_join(struct holder *h)
{
	atomic_store(&h->release, true);
	assert_int_equal(pthread_join(h->th, NULL), 0);
	assert_int_equal(h->err, 0);
}

/* A holder of LOCK that lets go HOLD_US after the calling thread blocks. */
static void hold_against_me(struct holder *h, enum hold how, void *lock, uint64_t hold_us)
{
	*h = (struct holder){.how = how, .lock = lock, .waiter = gettid(), .hold_us = hold_us};
	holder_start(h);
}

/* The one sample the last contended call left, checked for what every lock sample is. */
static const struct rec *only_sample(void)
{
	const struct rec *r = &recs[0];

	assert_int_equal(nsamples(), 1);
	assert_int_equal(r->kind, AGENT_KIND_LOCK);
	assert_int_equal(r->tid, gettid());
	assert_true(r->nframes >= 1 && r->nframes <= AGENT_MAX_DEPTH);
	assert_int_equal(r->state, 0);
	assert_true(r->v0 >= AGENT_WEIGHT_ONE);
	assert_true(r->v1 >= 0);
	return r;
}

static void reset(void)
{
	atomic_store(&nrecs, 0);
}

static int setup(void **state)
{
	(void)state;
	agent_state.cfg.modes = AGENT_MODE_LOCK;
	agent_state.cfg.lock_threshold_ns = 0;
	atomic_store(&agent_state.running, true);
	self_internal = false;
	main_slot->in_hook = 0;
	main_slot->lock_rng = 1;
	reset();
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	main_slot = thread_register(1);
	return agent_lock_init();
}

static int group_teardown(void **state)
{
	(void)state;
	self_slot = NULL;
	free(main_slot);
	return 0;
}

/* ---- one function that calls every hook, for the stack checks ---- */

enum op { OP_LOCK, OP_TIMED, OP_CLOCK, OP_RD, OP_WR, OP_TRD, OP_TWR, OP_CRD, OP_CWR, OP_N };

int lock_test_blocking_caller(enum op op, void *lock);
static atomic_int calls_done;

/* Exported and never tail-calling, so that dladdr names it as pcs[0] (link with -rdynamic). */
AGENT_API __attribute__((noinline)) int lock_test_blocking_caller(enum op op, void *lock)
{
	struct timespec rt = abs_in(CLOCK_REALTIME, 60000 * MS);
	struct timespec mono = abs_in(CLOCK_MONOTONIC, 60000 * MS);
	int rc;

	switch (op) {
	case OP_LOCK: rc = pthread_mutex_lock(lock); break;
	case OP_TIMED: rc = pthread_mutex_timedlock(lock, &rt); break;
	case OP_CLOCK: rc = pthread_mutex_clocklock(lock, CLOCK_MONOTONIC, &mono); break;
	case OP_RD: rc = pthread_rwlock_rdlock(lock); break;
	case OP_WR: rc = pthread_rwlock_wrlock(lock); break;
	case OP_TRD: rc = pthread_rwlock_timedrdlock(lock, &rt); break;
	case OP_TWR: rc = pthread_rwlock_timedwrlock(lock, &rt); break;
	case OP_CRD: rc = pthread_rwlock_clockrdlock(lock, CLOCK_MONOTONIC, &mono); break;
	default: rc = pthread_rwlock_clockwrlock(lock, CLOCK_MONOTONIC, &mono); break;
	}
	atomic_fetch_add(&calls_done, 1);
	return rc;
}

static bool op_is_mutex(enum op op)
{
	return op == OP_LOCK || op == OP_TIMED || op == OP_CLOCK;
}

/* ---- tests ---- */

static void test_uncontended(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	int i, op;

	(void)state;
	errno = 4242;
	for (i = 0; i < 1000; i++) {
		assert_int_equal(pthread_mutex_lock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
	}
	for (op = 0; op < OP_N; op++) {
		void *lock = op_is_mutex(op) ? (void *)&m : (void *)&rw;

		assert_int_equal(lock_test_blocking_caller(op, lock), 0);
		if (op_is_mutex(op))
			assert_int_equal(pthread_mutex_unlock(&m), 0);
		else
			assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	}
	assert_int_equal(errno, 4242);
	assert_int_equal(nsamples(), 0);
}

/* The inline path for default mutexes leaves exactly the state glibc's own lock does. */
struct cond_waiter {
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	atomic_int phase;
	int rc;
};

static void *cond_waiter_main(void *arg)
{
	struct cond_waiter *w = arg;
	struct agent_thread *t = thread_register(7);

	w->rc = pthread_mutex_lock(w->m);
	atomic_store(&w->phase, 1);
	while (w->rc == 0 && atomic_load(&w->phase) == 1)
		w->rc = pthread_cond_wait(w->cv, w->m);
	if (w->rc == 0)
		w->rc = pthread_mutex_unlock(w->m);
	self_slot = NULL;
	free(t);
	return NULL;
}

static void test_default_mutex_state(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, m2;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	struct cond_waiter w = {.m = &m, .cv = &cv};
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_mutex_lock(&m), 0);
#ifdef __GLIBC__
	assert_int_equal(m.__data.__lock, 1);
	assert_int_equal(m.__data.__owner, gettid());
	assert_int_equal(m.__data.__nusers, 1);
#endif
	assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
	assert_int_equal(pthread_mutex_destroy(&m), EBUSY);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
#ifdef __GLIBC__
	assert_int_equal(m.__data.__lock, 0);
	assert_int_equal(m.__data.__owner, 0);
	assert_int_equal(m.__data.__nusers, 0);
#endif
	/* Taken by glibc's trylock, then by the hook after glibc's unlock. */
	assert_int_equal(pthread_mutex_trylock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	/* A condition variable releases and retakes it inside glibc. */
	assert_int_equal(pthread_create(&th, NULL, cond_waiter_main, &w), 0);
	while (atomic_load(&w.phase) != 1)
		sched_yield();
	assert_int_equal(pthread_mutex_lock(&m), 0); /* the waiter is in cond_wait: free */
	atomic_store(&w.phase, 2);
	assert_int_equal(pthread_cond_signal(&cv), 0);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(pthread_mutex_destroy(&m), 0);
	/* pthread_mutex_init with default attributes is kind 0 too. */
	assert_int_equal(pthread_mutex_init(&m2, NULL), 0);
	assert_int_equal(pthread_mutex_lock(&m2), 0);
	assert_int_equal(pthread_mutex_destroy(&m2), EBUSY);
	assert_int_equal(pthread_mutex_unlock(&m2), 0);
	assert_int_equal(pthread_mutex_destroy(&m2), 0);
}

static void test_contended_delay(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct holder h;
	const struct rec *r;
	uint64_t t0, elapsed;

	(void)state;
	agent_state.cfg.lock_threshold_ns = 10 * US;
	hold_against_me(&h, HOLD_MUTEX, &m, 20000);
	errno = 4242;
	t0 = now_ns();
	assert_int_equal(pthread_mutex_lock(&m), 0);
	elapsed = now_ns() - t0;
	assert_int_equal(errno, 4242);
	holder_join(&h);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	r = only_sample();
	assert_int_equal(r->v0, AGENT_WEIGHT_ONE);
	assert_true(r->v1 >= (int64_t)(15 * MS));
	assert_true((uint64_t)r->v1 <= elapsed);
}

/* Every hook charges the wait to the function that called it. */
static void test_stack_first_frame(void **state)
{
	int op;

	(void)state;
	for (op = 0; op < OP_N; op++) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
		bool mutex = op_is_mutex(op);
		const struct rec *r;
		struct holder h;
		Dl_info info;

		reset();
		hold_against_me(&h, mutex ? HOLD_MUTEX : HOLD_WR, mutex ? (void *)&m : (void *)&rw,
				2000);
		assert_int_equal(lock_test_blocking_caller(op, mutex ? (void *)&m : (void *)&rw),
				 0);
		holder_join(&h);
		if (mutex)
			assert_int_equal(pthread_mutex_unlock(&m), 0);
		else
			assert_int_equal(pthread_rwlock_unlock(&rw), 0);
		r = only_sample();
		assert_true(r->nframes >= 2); /* our frames were found and cut */
		assert_true(dladdr((void *)r->pcs[0], &info) != 0);
		if (!info.dli_sname)
			fail_msg("op %d: pc %#lx %#lx %#lx in %s", op, (unsigned long)r->pcs[0],
				 (unsigned long)r->pcs[1], (unsigned long)r->pcs[2],
				 info.dli_fname);
		if (strcmp(info.dli_sname, "lock_test_blocking_caller") != 0)
			fail_msg("op %d: first frame in %s", op, info.dli_sname);
	}
}

struct kind {
	const char *name;
	int type, protocol, robust, pshared;
	int depth; /* how deep a holder takes it */
};

static const struct kind kinds[] = {
	{"normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 3},
	{"adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"robust", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_ROBUST,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"pi", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"pi-errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"pi-recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_PRIVATE, 2},
	{"pi-robust", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_ROBUST,
	 PTHREAD_PROCESS_PRIVATE, 1},
	{"pshared", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED,
	 PTHREAD_PROCESS_SHARED, 1},
	{"pshared-robust-errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE,
	 PTHREAD_MUTEX_ROBUST, PTHREAD_PROCESS_SHARED, 1},
};

static void kind_init(pthread_mutex_t *m, const struct kind *k)
{
	pthread_mutexattr_t a;

	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_settype(&a, k->type), 0);
	assert_int_equal(pthread_mutexattr_setprotocol(&a, k->protocol), 0);
	assert_int_equal(pthread_mutexattr_setrobust(&a, k->robust), 0);
	assert_int_equal(pthread_mutexattr_setpshared(&a, k->pshared), 0);
	assert_int_equal(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static const struct kind *kind_named(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	}
	fail_msg("no kind %s", name);
	return NULL;
}

/* Each kind, each mutex hook: free, then held by another thread. */
static void test_kinds_contended(void **state)
{
	size_t i;
	int op;

	(void)state;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		for (op = OP_LOCK; op <= OP_CLOCK; op++) {
			const struct kind *k = &kinds[i];
			pthread_mutex_t m;
			struct holder h;

			kind_init(&m, k);
			reset();
			assert_int_equal(lock_test_blocking_caller(op, &m), 0);
			assert_int_equal(pthread_mutex_unlock(&m), 0);
			assert_int_equal(nsamples(), 0);
			h = (struct holder){.how = HOLD_MUTEX,
					    .lock = &m,
					    .depth = k->depth,
					    .waiter = gettid(),
					    .hold_us = 2000};
			holder_start(&h);
			if (lock_test_blocking_caller(op, &m) != 0)
				fail_msg("%s op %d: contended lock failed", k->name, op);
			holder_join(&h);
			assert_int_equal(pthread_mutex_unlock(&m), 0);
			if (nsamples() != 1)
				fail_msg("%s op %d: %d samples", k->name, op, nsamples());
			assert_int_equal(pthread_mutex_destroy(&m), 0);
		}
	}
}

/* Recursive holders: the holder takes the lock DEPTH times and gives it all back. */
static void test_recursive(void **state)
{
	const char *names[] = {"recursive", "pi-recursive"};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct timespec past = {0, 0};
		pthread_mutex_t m;
		struct holder h = {.how = HOLD_MUTEX, .lock = &m, .depth = 3, .hold_us = 2000};

		kind_init(&m, kind_named(names[i]));
		assert_int_equal(pthread_mutex_lock(&m), 0);
		assert_int_equal(pthread_mutex_lock(&m), 0);
		assert_int_equal(pthread_mutex_timedlock(&m, &past), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), EPERM);
		assert_int_equal(nsamples(), 0);
		h.waiter = gettid();
		holder_start(&h);
		assert_int_equal(pthread_mutex_lock(&m), 0);
		holder_join(&h);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), EPERM);
		only_sample();
		reset();
	}
}

static void test_errorcheck_self(void **state)
{
	const char *names[] = {"errorcheck", "pi-errorcheck", "pshared-robust-errorcheck"};
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct timespec past = {0, 0}, later = abs_in(CLOCK_MONOTONIC, 1000 * MS);
		pthread_mutex_t m;

		kind_init(&m, kind_named(names[i]));
		errno = 4242;
		assert_int_equal(pthread_mutex_lock(&m), 0);
		assert_int_equal(pthread_mutex_lock(&m), EDEADLK);
		assert_int_equal(pthread_mutex_timedlock(&m, &past), EDEADLK);
		assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &later), EDEADLK);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), EPERM);
		assert_int_equal(errno, 4242);
		assert_int_equal(nsamples(), 0);
	}
}

/* A holder that dies with the lock held, before we try it. */
static void kill_owner(pthread_mutex_t *m)
{
	struct holder h = {.how = HOLD_MUTEX, .lock = m, .die = true};

	holder_start(&h);
	holder_join(&h);
}

static void test_robust_owner_died(void **state)
{
	const char *names[] = {"robust", "pi-robust", "pshared-robust-errorcheck"};
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct timespec later = abs_in(CLOCK_REALTIME, 1000 * MS), soon;
		pthread_mutex_t m;

		kind_init(&m, kind_named(names[i]));
		kill_owner(&m);
		assert_int_equal(pthread_mutex_lock(&m), EOWNERDEAD);
		assert_int_equal(pthread_mutex_consistent(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(pthread_mutex_lock(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		/*
		 * Unlocked without pthread_mutex_consistent: gone for good, and
		 * it stays so (a hook that tried glibc's trylock here would
		 * leave it taken: the timedlock would time out, the lock hang).
		 */
		kill_owner(&m);
		assert_int_equal(pthread_mutex_timedlock(&m, &later), EOWNERDEAD);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		soon = abs_in(CLOCK_REALTIME, 50 * MS);
		assert_int_equal(pthread_mutex_timedlock(&m, &soon), ENOTRECOVERABLE);
		assert_int_equal(pthread_mutex_lock(&m), ENOTRECOVERABLE);
		soon = abs_in(CLOCK_MONOTONIC, 50 * MS);
		assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &soon),
				 ENOTRECOVERABLE);
		assert_int_equal(pthread_mutex_lock(&m), ENOTRECOVERABLE);
		assert_int_equal(nsamples(), 0);
	}
}

/* The owner dies while we wait: the wait ends in EOWNERDEAD and is a contention. */
static void test_robust_dies_while_waiting(void **state)
{
	const char *names[] = {"robust", "pi-robust", "pshared-robust-errorcheck"};
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		pthread_mutex_t m;
		struct holder h;

		kind_init(&m, kind_named(names[i]));
		reset();
		h = (struct holder){.how = HOLD_MUTEX,
				    .lock = &m,
				    .waiter = gettid(),
				    .hold_us = 2000,
				    .die = true};
		holder_start(&h);
		assert_int_equal(pthread_mutex_lock(&m), EOWNERDEAD);
		holder_join(&h);
		assert_int_equal(pthread_mutex_consistent(&m), 0);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		only_sample();
	}
}

/* A child process holds a process-shared mutex; it releases it, or dies holding it. */
static void test_pshared_fork(void **state)
{
	pthread_mutex_t *m =
		mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t parent = getpid(), me = gettid();
	int round;

	(void)state;
	assert_true(m != MAP_FAILED);
	kind_init(m, kind_named("pshared-robust-errorcheck"));
	for (round = 0; round < 2; round++) {
		int fds[2], status = 0;
		char c = 0;
		pid_t child;

		reset();
		assert_int_equal(pipe(fds), 0);
		child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			self_slot = NULL;
			if (pthread_mutex_lock(m) != 0 || write(fds[1], "x", 1) != 1)
				_exit(10);
			if (!wait_blocked(parent, me))
				_exit(11);
			sleep_us(2000);
			if (round == 0 && pthread_mutex_unlock(m) != 0)
				_exit(12);
			_exit(0);
		}
		assert_int_equal(read(fds[0], &c, 1), 1);
		assert_int_equal(pthread_mutex_lock(m), round == 0 ? 0 : EOWNERDEAD);
		assert_int_equal(waitpid(child, &status, 0), child);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (round == 1)
			assert_int_equal(pthread_mutex_consistent(m), 0);
		assert_int_equal(pthread_mutex_unlock(m), 0);
		only_sample();
		close(fds[0]);
		close(fds[1]);
	}
	munmap(m, sizeof(*m));
}

/* Time-outs are contention: counted once, with their delay. */
static void test_timeouts(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct holder hm = {.how = HOLD_MUTEX, .lock = &m};
	struct holder hw = {.how = HOLD_WR, .lock = &rw};
	int op;

	(void)state;
	holder_start(&hm);
	holder_start(&hw);
	for (op = OP_TIMED; op <= OP_CWR; op++) {
		clockid_t clock = op == OP_CLOCK || op == OP_CRD || op == OP_CWR ? CLOCK_MONOTONIC
										 : CLOCK_REALTIME;
		struct timespec ts = abs_in(clock, 30 * MS), past = {0, 0};
		const struct rec *r;
		uint64_t t0, elapsed;
		int rc;

		if (op == OP_RD || op == OP_WR)
			continue;
		reset();
		errno = 4242;
		t0 = now_ns();
		switch (op) {
		case OP_TIMED: rc = pthread_mutex_timedlock(&m, &ts); break;
		case OP_CLOCK: rc = pthread_mutex_clocklock(&m, clock, &ts); break;
		case OP_TRD: rc = pthread_rwlock_timedrdlock(&rw, &ts); break;
		case OP_TWR: rc = pthread_rwlock_timedwrlock(&rw, &ts); break;
		case OP_CRD: rc = pthread_rwlock_clockrdlock(&rw, clock, &ts); break;
		default: rc = pthread_rwlock_clockwrlock(&rw, clock, &ts); break;
		}
		elapsed = now_ns() - t0;
		assert_int_equal(rc, ETIMEDOUT);
		assert_int_equal(errno, 4242);
		r = only_sample();
		assert_true(r->v1 >= (int64_t)(15 * MS) && (uint64_t)r->v1 <= elapsed);
		/* An abstime already past: ETIMEDOUT at once, still a (short) contention. */
		reset();
		if (op_is_mutex(op))
			rc = pthread_mutex_timedlock(&m, &past);
		else
			rc = pthread_rwlock_timedwrlock(&rw, &past);
		assert_int_equal(rc, ETIMEDOUT);
		only_sample();
	}
	holder_join(&hm);
	holder_join(&hw);
}

/*
 * Arguments glibc rejects: the hooks give the real functions' answers, on
 * free and on held locks, and never emit for them.
 */
static void test_bad_arguments(void **state)
{
	int (*real_clock)(pthread_mutex_t *, clockid_t, const struct timespec *) =
		(int (*)(pthread_mutex_t *, clockid_t, const struct timespec *))dlsym(
			RTLD_NEXT, "pthread_mutex_clocklock");
	int (*real_trd)(pthread_rwlock_t *, const struct timespec *) =
		(int (*)(pthread_rwlock_t *, const struct timespec *))dlsym(
			RTLD_NEXT, "pthread_rwlock_timedrdlock");
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec bad = {0, 1000000000L}, neg = {0, -1}, past = {0, 0};
	struct holder h;

	(void)state;
	assert_non_null(real_clock);
	assert_non_null(real_trd);
	/* Free locks. */
	assert_int_equal(real_clock(&m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_mutex_trylock(&m), 0); /* and it was not taken */
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), 0); /* glibc: not checked when free */
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(real_trd(&rw, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_timedrdlock(&rw, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_timedwrlock(&rw, &neg), EINVAL);
	assert_int_equal(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_clockwrlock(&rw, CLOCK_THREAD_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_rwlock_trywrlock(&rw), 0);
	assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	/* Held locks. */
	h = (struct holder){.how = HOLD_MUTEX, .lock = &m};
	holder_start(&h);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), EINVAL);
	assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	holder_join(&h);
	h = (struct holder){.how = HOLD_WR, .lock = &rw};
	holder_start(&h);
	assert_int_equal(pthread_rwlock_timedrdlock(&rw, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	holder_join(&h);
	assert_int_equal(nsamples(), 0);
}

static void test_rwlock(void **state)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec past = {0, 0};
	struct holder h = {.how = HOLD_RD, .lock = &rw};

	(void)state;
	/* Readers share. */
	holder_start(&h);
	assert_int_equal(pthread_rwlock_rdlock(&rw), 0);
	assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	assert_int_equal(pthread_rwlock_timedrdlock(&rw, &past), 0);
	assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	holder_join(&h);
	assert_int_equal(nsamples(), 0);
	/* A writer blocks a reader. */
	hold_against_me(&h, HOLD_WR, &rw, 2000);
	assert_int_equal(pthread_rwlock_rdlock(&rw), 0);
	holder_join(&h);
	assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	only_sample();
	reset();
	/* A reader blocks a writer. */
	hold_against_me(&h, HOLD_RD, &rw, 2000);
	assert_int_equal(pthread_rwlock_wrlock(&rw), 0);
	holder_join(&h);
	only_sample();
	reset();
	/* Our own write lock: EDEADLK from the real functions, not a wait. */
	assert_int_equal(pthread_rwlock_wrlock(&rw), EDEADLK);
	assert_int_equal(pthread_rwlock_rdlock(&rw), EDEADLK);
	assert_int_equal(pthread_rwlock_timedrdlock(&rw, &past), EDEADLK);
	assert_int_equal(pthread_rwlock_unlock(&rw), 0);
	assert_int_equal(nsamples(), 0);
}

/* Sampling off, lock mode off, internal thread, inside a hook: straight through. */
static void test_passthrough(void **state)
{
	int c;

	(void)state;
	for (c = 0; c < 4; c++) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		struct holder h;

		if (c == 0)
			atomic_store(&agent_state.running, false);
		else if (c == 1)
			agent_state.cfg.modes = AGENT_MODE_CPU | AGENT_MODE_ALLOC;
		else if (c == 2)
			self_internal = true;
		else
			main_slot->in_hook = 1;
		hold_against_me(&h, HOLD_MUTEX, &m, 2000);
		assert_int_equal(pthread_mutex_lock(&m), 0);
		holder_join(&h);
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		assert_int_equal(nsamples(), 0);
		assert_int_equal(main_slot->in_hook, c == 3);
		setup(NULL);
	}
}

struct slotless {
	pthread_mutex_t *m;
	atomic_int tid;
	int rc;
};

static void *slotless_main(void *arg)
{
	struct slotless *s = arg;

	atomic_store(&s->tid, gettid());
	s->rc = pthread_mutex_lock(s->m);
	if (s->rc == 0)
		s->rc = pthread_mutex_unlock(s->m);
	return NULL;
}

/* A thread without a slot blocks: its lock works and nothing is emitted. */
static void test_no_slot(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct holder h = {.how = HOLD_MUTEX, .lock = &m};
	struct slotless s = {.m = &m};
	pthread_t th;

	(void)state;
	holder_start(&h);
	assert_int_equal(pthread_create(&th, NULL, slotless_main, &s), 0);
	while (atomic_load(&s.tid) == 0)
		sched_yield();
	assert_true(wait_blocked(getpid(), atomic_load(&s.tid)));
	holder_join(&h);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(s.rc, 0);
	assert_int_equal(nsamples(), 0);
}

/* A first PRNG state whose first draw against RATE keeps (or drops) a wait of WAIT ns. */
static uint64_t seed_for(uint64_t wait, uint64_t rate, bool keep)
{
	uint64_t seed;

	for (seed = 1;; seed++) {
		uint64_t s = seed;

		if (lock_sample_take(&s, wait, rate, NULL) == keep)
			return seed;
	}
}

/*
 * Threshold 1 s, a wait of a few ms: kept with probability wait / R.  The
 * seeds fix the draw: one below 100 us keeps any such wait, at weight
 * R / wait and delay R; one above 900 ms drops it.
 */
static void test_threshold_seeded(void **state)
{
	const uint64_t rate = 1000 * MS;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	const struct rec *r;
	struct holder h;
	uint64_t t0, elapsed;
	double wait;

	(void)state;
	agent_state.cfg.lock_threshold_ns = rate;
	main_slot->lock_rng = seed_for(100 * US, rate, true);
	hold_against_me(&h, HOLD_MUTEX, &m, 3000);
	t0 = now_ns();
	assert_int_equal(pthread_mutex_lock(&m), 0);
	elapsed = now_ns() - t0;
	holder_join(&h);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	r = only_sample();
	assert_true(llabs(r->v1 - (int64_t)rate) <= 1);
	wait = (double)rate * AGENT_WEIGHT_ONE / (double)r->v0; /* the wait the hook measured */
	assert_true(wait >= 3.0 * MS * 0.999 && wait <= (double)elapsed * 1.001);
	reset();
	main_slot->lock_rng = seed_for(900 * MS, rate, false);
	hold_against_me(&h, HOLD_MUTEX, &m, 3000);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	holder_join(&h);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(nsamples(), 0);
}

struct relay {
	pthread_mutex_t *m;
	int n;
	pid_t waiter;
	atomic_int held, done;
	int err;
};

/* Takes the lock N times; each time lets go 100..500 us after the waiter blocks. */
static void *relay_main(void *arg)
{
	struct relay *r = arg;
	int i;

	for (i = 1; i <= r->n; i++) {
		if (pthread_mutex_lock(r->m) != 0)
			r->err = EINVAL;
		atomic_store(&r->held, i);
		if (!wait_blocked(getpid(), r->waiter))
			r->err = ETIMEDOUT;
		sleep_us(100 + (uint64_t)(i * 37 % 400));
		pthread_mutex_unlock(r->m);
		while (atomic_load(&r->done) != i)
			sched_yield();
	}
	return NULL;
}

/*
 * Many contended waits shorter than R = 1 ms: the estimated count and
 * delay (Σ weight, Σ weight · wait) match the truth within 5 standard
 * errors of the estimator (doc/agent-sampling.md), the truth being N
 * contentions and the delay measured around each call.
 */
static void test_estimator_short_waits(void **state)
{
	const uint64_t rate = 1 * MS;
	const int n = 1500;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct relay rl = {.m = &m, .n = n, .waiter = gettid()};
	double truth = 0, var_delay = 0, var_count = 0, est_delay = 0, est_count = 0;
	pthread_t th;
	int i;

	(void)state;
	agent_state.cfg.lock_threshold_ns = rate;
	main_slot->lock_rng = 20240601;
	assert_int_equal(pthread_create(&th, NULL, relay_main, &rl), 0);
	for (i = 1; i <= n; i++) {
		uint64_t t0, w;

		while (atomic_load(&rl.held) != i)
			sched_yield();
		t0 = now_ns();
		assert_int_equal(pthread_mutex_lock(&m), 0);
		w = now_ns() - t0;
		assert_int_equal(pthread_mutex_unlock(&m), 0);
		atomic_store(&rl.done, i);
		truth += (double)w;
		if (w < rate) {
			var_delay += (double)w * (double)(rate - w);
			var_count += (double)rate / (double)w - 1.0;
		}
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rl.err, 0);
	for (i = 0; i < nsamples(); i++) {
		const struct rec *r = &recs[i];

		assert_int_equal(r->kind, AGENT_KIND_LOCK);
		if (r->v0 > AGENT_WEIGHT_ONE)
			assert_true(llabs(r->v1 - (int64_t)rate) <= 1); /* short: exactly R */
		est_count += (double)r->v0 / AGENT_WEIGHT_ONE;
		est_delay += (double)r->v1;
	}
	assert_true(nsamples() > 0 && nsamples() < n);
	/* Each measured wait exceeds the hook's by its own overhead: allow 20 us per call. */
	if (fabs(est_delay - truth) > 5 * sqrt(var_delay) + n * 20.0 * US)
		fail_msg("delay: estimated %.4g ns, measured %.4g ns, sigma %.3g", est_delay, truth,
			 sqrt(var_delay));
	if (fabs(est_count - n) > 5 * sqrt(var_count))
		fail_msg("count: estimated %.1f, true %d, sigma %.1f", est_count, n,
			 sqrt(var_count));
}

struct hammer {
	pthread_mutex_t *m;
	pthread_rwlock_t *rw;
	long *counter, *wcounter;
	atomic_long reads;
	int iters;
	uint64_t seed;
};

void *lock_test_hammer_worker(void *arg);

/* Registered workers: four of these share one mutex and one rwlock. */
AGENT_API void *lock_test_hammer_worker(void *arg)
{
	struct hammer *h = arg;
	struct agent_thread *t = thread_register(h->seed + (uint64_t)gettid());
	int i;

	for (i = 0; i < h->iters; i++) {
		if (pthread_mutex_lock(h->m) != 0)
			abort();
		(*h->counter)++;
		pthread_mutex_unlock(h->m);
		if (i % 8 == 0) {
			if (pthread_rwlock_rdlock(h->rw) != 0)
				abort();
			atomic_fetch_add(&h->reads, 1);
			pthread_rwlock_unlock(h->rw);
		}
		if (i % 32 == 0) {
			if (pthread_rwlock_wrlock(h->rw) != 0)
				abort();
			(*h->wcounter)++;
			pthread_rwlock_unlock(h->rw);
		}
	}
	self_slot = NULL;
	free(t);
	return NULL;
}

static void test_hammer_threads(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	long counter = 0, wcounter = 0;
	struct hammer h = {.m = &m,
			   .rw = &rw,
			   .counter = &counter,
			   .wcounter = &wcounter,
			   .iters = 20000,
			   .seed = 7};
	pthread_t th[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lock_test_hammer_worker, &h), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(counter, 4 * 20000);
	assert_int_equal(wcounter, 4 * ((20000 + 31) / 32));
	assert_int_equal(atomic_load(&h.reads), 4 * (20000 / 8));
	for (i = 0; i < nsamples(); i++) {
		const struct rec *r = &recs[i];
		Dl_info info;

		assert_int_equal(r->kind, AGENT_KIND_LOCK);
		assert_int_equal(r->v0, AGENT_WEIGHT_ONE);
		assert_true(r->tid != gettid() && r->nframes >= 1);
		assert_true(dladdr((void *)r->pcs[0], &info) != 0 && info.dli_sname);
		assert_string_equal(info.dli_sname, "lock_test_hammer_worker");
	}
	print_message("# hammer: %d contended waits sampled\n", atomic_load(&nrecs));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_uncontended, setup),
		cmocka_unit_test_setup(test_default_mutex_state, setup),
		cmocka_unit_test_setup(test_contended_delay, setup),
		cmocka_unit_test_setup(test_stack_first_frame, setup),
		cmocka_unit_test_setup(test_kinds_contended, setup),
		cmocka_unit_test_setup(test_recursive, setup),
		cmocka_unit_test_setup(test_errorcheck_self, setup),
		cmocka_unit_test_setup(test_robust_owner_died, setup),
		cmocka_unit_test_setup(test_robust_dies_while_waiting, setup),
		cmocka_unit_test_setup(test_pshared_fork, setup),
		cmocka_unit_test_setup(test_timeouts, setup),
		cmocka_unit_test_setup(test_bad_arguments, setup),
		cmocka_unit_test_setup(test_rwlock, setup),
		cmocka_unit_test_setup(test_passthrough, setup),
		cmocka_unit_test_setup(test_no_slot, setup),
		cmocka_unit_test_setup(test_threshold_seeded, setup),
		cmocka_unit_test_setup(test_estimator_short_waits, setup),
		cmocka_unit_test_setup(test_hammer_threads, setup),
	};

	return cmocka_run_group_tests_name("lock", tests, group_setup, group_teardown);
}
