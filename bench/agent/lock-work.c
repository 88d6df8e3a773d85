/* lock-work.c - mutex fixture of the agent benchmark (PLATEAU_MODES=lock).
 *
 * THREADS threads (default 1) each take and release a pthread mutex ITERS
 * times (fixed work).  With -s every thread uses the same mutex
 * (contended when THREADS > 1); without it each thread has its own
 * (uncontended: every pthread_mutex_lock succeeds at once).  Inside the
 * lock a thread updates the lock's counter and mixes a few words; with
 * -w N it also does N rounds of private arithmetic outside the lock, so
 * that contended threads do not only queue.  -t 0 runs one worker on the
 * main thread and creates no thread: glibc then takes and releases
 * mutexes without atomic instructions until a second thread exists
 * (its single-thread fast path), which an agent's own thread ends.
 *
 * Usage: lock-work [-t THREADS] [-n ITERS] [-s] [-w OUTSIDE_WORK]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>
#include "fixture.h"

#define MAX_THREAD 64

struct lock {
	pthread_mutex_t mu;
	uint64_t count, mix;
} __attribute__((aligned(64)));

struct worker {
	pthread_t tid;
	struct lock *lock;
	long iters, outside;
	uint64_t seed, sum, cpu_ns;
} __attribute__((aligned(64))); /* no false sharing between workers */

static struct lock locks[MAX_THREAD];

FN static uint64_t outside_work(uint64_t *seed, long n)
{
	uint64_t h = 0;

	for (long i = 0; i < n; i++)
		h += fx_rnd(seed);
	return h;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct lock *l = w->lock;

	for (long i = 0; i < w->iters; i++) {
		pthread_mutex_lock(&l->mu);
		l->count++;
		l->mix = (l->mix ^ (uint64_t)i) * 0x100000001b3ULL;
		pthread_mutex_unlock(&l->mu);
		if (w->outside)
			w->sum += outside_work(&w->seed, w->outside);
	}
	w->cpu_ns = fx_thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t t0 = fx_mono_ns(), c0 = fx_proc_cpu_ns(), sum = 0, tcpu = 0, count = 0;
	static struct worker w[MAX_THREAD];
	long iters = 50000000, nthreads = 1, outside = 0;
	int c, shared = 0;

	while ((c = getopt(argc, argv, "t:n:sw:")) != -1) {
		if (c == 't')
			nthreads = fx_arg(optarg, 0, MAX_THREAD);
		else if (c == 'n')
			iters = fx_arg(optarg, 1, 1L << 40);
		else if (c == 's')
			shared = 1;
		else if (c == 'w')
			outside = fx_arg(optarg, 0, 1L << 20);
		else
			return fprintf(stderr, "usage: lock-work [-t N] [-n ITERS] [-s] [-w N]\n"),
			       2;
	}
	for (long i = 0; i < MAX_THREAD; i++)
		pthread_mutex_init(&locks[i].mu, NULL);
	for (long i = 0; i < (nthreads ? nthreads : 1); i++) {
		w[i].lock = &locks[shared ? 0 : i];
		w[i].iters = iters;
		w[i].outside = outside;
		w[i].seed = 0x9e3779b97f4a7c15ULL + (uint64_t)i;
		if (!nthreads)
			worker_main(&w[i]);
		else if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			return perror("pthread_create"), 1;
	}
	for (long i = 0; i < (nthreads ? nthreads : 1); i++) {
		if (nthreads)
			pthread_join(w[i].tid, NULL);
		sum += w[i].sum;
		tcpu += w[i].cpu_ns;
	}
	for (long i = 0; i < MAX_THREAD; i++)
		count += locks[i].count;
	printf("bench: wall_ns=%llu cpu_ns=%llu threads_cpu_ns=%llu checksum=%llu count=%llu\n",
	       (unsigned long long)(fx_mono_ns() - t0), (unsigned long long)(fx_proc_cpu_ns() - c0),
	       (unsigned long long)tcpu, (unsigned long long)sum, (unsigned long long)count);
	return 0;
}
