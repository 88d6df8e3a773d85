/* SPDX-License-Identifier: MIT */
/* deadlines (sockets cut once late) and workpool (every queued work runs). */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "server/deadline.h"
#include "server/workpool.h"
#include "util/clock.h"

#define MS INT64_C(1000000)

/* Whether the peer of a cut socket reads end-of-file within WAIT_MS. */
static bool peer_sees_eof(int fd, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&p, 1, wait_ms) == 1 && read(fd, &c, 1) == 0;
}

static void test_deadline_cuts_late_socket(void **state)
{
	struct error err = ERROR_INIT;
	struct deadlines *d;
	struct deadline *late, *none, *future;
	int a[2], b[2], c[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c), 0);
	assert_int_equal(deadlines_start(20 * MS, &d, &err), 0);
	late = deadlines_add(d, a[0]);
	none = deadlines_add(d, b[0]);
	future = deadlines_add(d, c[0]);
	assert_non_null(late);
	deadline_set(late, clock_ns(CLOCK_MONOTONIC) + 50 * MS);
	deadline_set(future, clock_ns(CLOCK_MONOTONIC) + 60000 * MS);
	assert_true(peer_sees_eof(a[1], 5000));
	assert_false(peer_sees_eof(b[1], 200));
	assert_false(peer_sees_eof(c[1], 1));
	assert_int_equal(deadlines_cut(d), 1);
	/* A deadline cleared in time is not enforced. */
	deadline_set(future, clock_ns(CLOCK_MONOTONIC) + 30 * MS);
	deadline_set(future, 0);
	assert_false(peer_sees_eof(c[1], 200));
	deadlines_remove(d, late);
	deadlines_remove(d, none);
	deadlines_remove(d, future);
	deadlines_stop(d);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
		close(c[i]);
	}
}

struct count_work {
	struct work w;
	atomic_int *ran;
};

static void count_one(struct work *w)
{
	struct count_work *cw = (struct count_work *)w;

	usleep(100);
	atomic_fetch_add(cw->ran, 1);
}

static void test_workpool_runs_everything_queued(void **state)
{
	struct error err = ERROR_INIT;
	struct workpool *p;
	struct count_work works[200];
	atomic_int ran = 0;

	(void)state;
	assert_int_equal(workpool_start(0, &p, &err), ERR_USAGE);
	assert_int_equal(workpool_start(3, &p, &err), 0);
	for (size_t i = 0; i < 200; i++) {
		works[i] = (struct count_work){{count_one, NULL}, &ran};
		assert_int_equal(workpool_submit(p, &works[i].w), 0);
	}
	workpool_stop(p);
	assert_int_equal(atomic_load(&ran), 200);
	assert_int_equal(workpool_submit(p, &works[0].w), -1);
	workpool_free(p);
}

struct self_work {
	struct work w;
	pthread_t ran_on;
	atomic_int done;
};

static void note_thread(struct work *w)
{
	struct self_work *sw = (struct self_work *)w;

	sw->ran_on = pthread_self();
	atomic_store(&sw->done, 1);
}

/* One request at a time runs on the thread that went idle last, not on each in turn. */
static void test_workpool_reuses_last_idle_thread(void **state)
{
	struct error err = ERROR_INIT;
	struct workpool *p;
	struct self_work sw;
	pthread_t seen[8];
	size_t nseen = 0;

	(void)state;
	assert_int_equal(workpool_start(8, &p, &err), 0);
	for (int round = 0; round < 40; round++) {
		size_t i;

		sw = (struct self_work){{note_thread, NULL}, 0, 0};
		assert_int_equal(workpool_submit(p, &sw.w), 0);
		while (!atomic_load(&sw.done))
			usleep(100);
		usleep(5000); /* the thread is back on the idle stack */
		for (i = 0; i < nseen && !pthread_equal(seen[i], sw.ran_on); i++)
			;
		if (i == nseen && nseen < 8)
			seen[nseen++] = sw.ran_on;
	}
	workpool_stop(p);
	workpool_free(p);
	assert_in_range(nseen, 1, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline_cuts_late_socket),
		cmocka_unit_test(test_workpool_runs_everything_queued),
		cmocka_unit_test(test_workpool_reuses_last_idle_thread),
	};

	return cmocka_run_group_tests_name("server_deadline", tests, NULL, NULL);
}
