/* SPDX-License-Identifier: MIT */
/*
 * Tests of the lock hooks (lock.c) through the real glibc locks, function
 * by function and kind by kind: delays, stacks, recursive, error-checking,
 * robust and process-shared mutexes, timeouts, bad arguments, rwlocks and
 * the threads that pass through.  The doubles and the holder threads are
 * in lock_testutil.h; which waits are kept and what they weigh is tested
 * by lock_sampling_test.c.
 *
 * Contention is made certain, not hoped for: a holder thread takes the
 * lock, waits until /proc says the waiting thread sleeps (it is then inside
 * the real lock function), holds on a little longer and releases.  No test
 * depends on how fast the machine is, only on waits lasting at least as
 * long as they were made to.
 */
#include "agent/hooks/lock_testutil.h"

/* ---- helpers ---- */

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
	};

	return cmocka_run_group_tests_name("lock", tests, group_setup, group_teardown);
}
