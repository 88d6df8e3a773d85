/* SPDX-License-Identifier: MIT */
/*
 * wallsplit THREADS ROUNDS: each of THREADS threads alternates 300 ms in
 * nanosleep (called from sleep_part) and 100 ms blocked in read on a pipe
 * (called from read_part), ROUNDS times.  One feeder thread writes a byte
 * to every thread's pipe 400 ms after the previous write (absolute times),
 * so each read blocks until about 100 ms after its nanosleep ended.
 *
 * Prints "sleep_ns=N read_ns=N": the time the threads spent inside the
 * two calls, summed over threads, measured around the calls (the truth the
 * agent's wall profile is held to, stack by stack).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NS	  1000000000ull
#define SLEEP_NS  300000000ull
#define PERIOD_NS 400000000ull

struct worker {
	pthread_t th;
	int fd[2];
	uint64_t sleep_ns, read_ns;
};

static struct worker *workers;
static int nthreads, rounds;
static uint64_t t0;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void sleep_part(struct worker *w)
{
	struct timespec ts = {0, (long)SLEEP_NS};
	uint64_t a = mono_ns();

	while (nanosleep(&ts, &ts) != 0)
		;
	w->sleep_ns += mono_ns() - a;
}

__attribute__((noinline)) static void read_part(struct worker *w)
{
	uint64_t a = mono_ns();
	char c;

	while (read(w->fd[0], &c, 1) != 1)
		;
	w->read_ns += mono_ns() - a;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int r = 0; r < rounds; r++) {
		sleep_part(w);
		read_part(w);
	}
	return NULL;
}

/* Round R's byte goes out at t0 + (R + 1) * 400 ms. */
static void *feeder_main(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		uint64_t at = t0 + (uint64_t)(r + 1) * PERIOD_NS;
		struct timespec ts = {(time_t)(at / NS), (long)(at % NS)};

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
			;
		for (int i = 0; i < nthreads; i++)
			if (write(workers[i].fd[1], "x", 1) != 1)
				abort();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t sleep_ns = 0, read_ns = 0;
	pthread_t feeder;

	if (argc != 3 || (nthreads = atoi(argv[1])) < 1 || nthreads > 1000 ||
	    (rounds = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: wallsplit THREADS ROUNDS\n");
		return 2;
	}
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	for (int i = 0; i < nthreads; i++)
		if (pipe(workers[i].fd) != 0)
			return 1;
	t0 = mono_ns();
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) != 0)
			return 1;
	if (pthread_create(&feeder, NULL, feeder_main, NULL) != 0)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(workers[i].th, NULL);
		sleep_ns += workers[i].sleep_ns;
		read_ns += workers[i].read_ns;
	}
	pthread_join(feeder, NULL);
	printf("sleep_ns=%llu read_ns=%llu\n", (unsigned long long)sleep_ns,
	       (unsigned long long)read_ns);
	return 0;
}
