/* idle-threads.c - idle-thread fixture of the agent benchmark
 * (PLATEAU_MODES=wall).
 *
 * Starts THREADS threads (default 1000, 256 KiB stacks) that block in
 * read() on a pipe nobody writes to, waits until all of them are blocked
 * (each says so before its read, then 100 ms more), then sleeps SECONDS
 * (default 2) and measures the process's CPU time over that sleep only:
 * nothing of the program runs then, so what is left is the cost of an
 * in-process agent watching 1,001 idle threads.  Closing the pipe ends
 * the threads.
 *
 * Prints: bench: wall_ns=N cpu_ns=N threads_cpu_ns=0 checksum=0
 *         idle_ns=N idle_cpu_ns=N threads=N
 * where wall_ns/cpu_ns cover the whole of main (start-up and joins) and
 * idle_ns/idle_cpu_ns the sleep alone.
 *
 * Usage: idle-threads [-t THREADS] [-s SECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "fixture.h"

static int pipe_fd[2];
static atomic_long ready;

static void *idle_main(void *arg)
{
	char c;

	(void)arg;
	atomic_fetch_add(&ready, 1);
	while (read(pipe_fd[0], &c, 1) < 0)
		;
	return NULL;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
		;
}

int main(int argc, char **argv)
{
	uint64_t t0 = fx_mono_ns(), c0 = fx_proc_cpu_ns(), i0, ic0, i1, ic1;
	long nthreads = 1000, seconds = 2;
	pthread_t *tid;
	pthread_attr_t attr;
	int c;

	while ((c = getopt(argc, argv, "t:s:")) != -1) {
		if (c == 't')
			nthreads = fx_arg(optarg, 1, 100000);
		else if (c == 's')
			seconds = fx_arg(optarg, 1, 3600);
		else
			return fprintf(stderr, "usage: idle-threads [-t THREADS] [-s SECONDS]\n"),
			       2;
	}
	if (pipe(pipe_fd) || !(tid = calloc((size_t)nthreads, sizeof(*tid))))
		return perror("idle-threads"), 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&tid[i], &attr, idle_main, NULL))
			return perror("pthread_create"), 1;
	while (atomic_load(&ready) < nthreads)
		sleep_ns(1000000);
	sleep_ns(100000000);
	i0 = fx_mono_ns();
	ic0 = fx_proc_cpu_ns();
	sleep_ns((uint64_t)seconds * 1000000000u);
	i1 = fx_mono_ns();
	ic1 = fx_proc_cpu_ns();
	close(pipe_fd[1]);
	for (long i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	printf("bench: wall_ns=%llu cpu_ns=%llu threads_cpu_ns=0 checksum=0 idle_ns=%llu "
	       "idle_cpu_ns=%llu threads=%ld\n",
	       (unsigned long long)(fx_mono_ns() - t0), (unsigned long long)(fx_proc_cpu_ns() - c0),
	       (unsigned long long)(i1 - i0), (unsigned long long)(ic1 - ic0), nthreads);
	return 0;
}
