/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_LOCK_TESTUTIL_H
#define PLATEAU_AGENT_HOOKS_LOCK_TESTUTIL_H

/*
 * For the tests of the lock hooks (lock_test.c: each lock function and
 * kind; lock_sampling_test.c: which waits are kept and what they weigh):
 * the doubles of agent_state, agent_now_mono, agent_thread_self,
 * agent_thread_internal, agent_emit (which records every sample) and
 * agent_unwind_here (a frame-pointer walk; build with
 * -fno-omit-frame-pointer and -rdynamic so that dladdr names the callers),
 * the holder threads that make contention certain, and one function that
 * calls every hook.  Header-only, with definitions: include it once, from
 * the test program's only file.
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

#endif
