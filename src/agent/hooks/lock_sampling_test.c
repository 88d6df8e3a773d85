/* SPDX-License-Identifier: MIT */
/*
 * Tests of which lock waits the hooks (lock.c) keep and what they weigh:
 * the threshold drawn from a seeded PRNG, the estimate of short waits, and
 * many threads contending at once.  The doubles and the holder threads are
 * in lock_testutil.h; each lock function and kind is tested by lock_test.c.
 */
#include "agent/hooks/lock_testutil.h"

/* ---- tests ---- */

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
		cmocka_unit_test_setup(test_threshold_seeded, setup),
		cmocka_unit_test_setup(test_estimator_short_waits, setup),
		cmocka_unit_test_setup(test_hammer_threads, setup),
	};

	return cmocka_run_group_tests_name("lock_sampling", tests, group_setup, group_teardown);
}
