/* burn-threads.c - fixed-work CPU-bound workload for the `plateau record` benchmarks.
 *
 * Two threads (or -t N) each run the same fixed number of rounds; a round
 * fills an array, sorts it with libc's qsort (a program comparator called
 * from a libc frame), walks a recursive chain 16 frames deep and hashes a
 * block at its bottom.  The amount of work is fixed, so a profiler's cost
 * shows up as a longer run; the program times itself (CLOCK_MONOTONIC
 * from the first line of main to the join of the last thread), which
 * leaves out the profiler's own start-up before exec and its work after
 * the exit.
 *
 * At exit it writes one line, to stdout or to the file given by -r:
 *   elapsed_ns=N exit_mono_ns=N cpu_ns=N parent_cpu_ns=N threads=N rounds=N checksum=N
 * exit_mono_ns is CLOCK_MONOTONIC at the end, so that a driver can time
 * what a profiler does after the workload exited (same clock system-wide);
 * cpu_ns is the process's own user + system time; parent_cpu_ns the CPU
 * time its parent (the profiler, when run under one) used while the
 * workload ran, from /proc/PPID/task/TID/schedstat, so that a driver can
 * tell the profiler's CPU during the run from its start-up and exit work.
 *
 * Build: cc -O2 -g [-fno-omit-frame-pointer] -pthread burn-threads.c
 * Usage: burn-threads [-t THREADS] [-n ROUNDS] [-r REPORT_FILE]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/resource.h>

#define FN	   __attribute__((noinline))
#define NKEYS	   2048
#define CHAIN	   16
#define BLOCK	   4096
#define MAX_THREAD 64

struct worker {
	pthread_t tid;
	long rounds;
	uint64_t seed;
	uint64_t sum;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* On-CPU nanoseconds of all threads of process pid so far (0 when unreadable). */
static uint64_t task_cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns, sum = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", (int)pid, de->d_name);
		if ((f = fopen(path, "r"))) {
			if (fscanf(f, "%llu", &ns) == 1)
				sum += ns;
			fclose(f);
		}
	}
	closedir(d);
	return sum;
}

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

FN static void fill_keys(uint32_t *k, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		k[i] = (uint32_t)rnd(seed);
}

FN static int cmp_keys(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

FN static uint64_t sort_keys(uint32_t *k, size_t n, uint64_t *seed)
{
	fill_keys(k, n, seed);
	qsort(k, n, sizeof(*k), cmp_keys);
	return k[n / 2];
}

FN static uint64_t hash_block(const uint8_t *b, size_t n, uint64_t h)
{
	for (int pass = 0; pass < 24; pass++)
		for (size_t i = 0; i < n; i++)
			h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

FN static uint64_t walk(const uint8_t *b, int depth, uint64_t h)
{
	if (depth == 0)
		return hash_block(b, BLOCK, h);
	/* Not a tail call: the chain stays on the stack. */
	return walk(b, depth - 1, h + (uint64_t)depth) ^ (uint64_t)depth;
}

FN static uint64_t round_once(struct worker *w, uint32_t *keys, const uint8_t *block)
{
	uint64_t h = sort_keys(keys, NKEYS, &w->seed);

	return walk(block, CHAIN, h);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t *keys = malloc(NKEYS * sizeof(*keys));
	uint8_t *block = malloc(BLOCK);

	if (!keys || !block)
		abort();
	for (size_t i = 0; i < BLOCK; i++)
		block[i] = (uint8_t)rnd(&w->seed);
	for (long r = 0; r < w->rounds; r++)
		w->sum += round_once(w, keys, block);
	free(keys);
	free(block);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: burn-threads [-t THREADS] [-n ROUNDS] [-r REPORT_FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t t0 = mono_ns(), p0 = task_cpu_ns(getppid()), sum = 0, t1, p1;
	struct worker w[MAX_THREAD];
	long rounds = 8000;
	int nthreads = 2, c;
	FILE *out = stdout;

	while ((c = getopt(argc, argv, "t:n:r:")) != -1) {
		if (c == 't')
			nthreads = atoi(optarg);
		else if (c == 'n')
			rounds = atol(optarg);
		else if (c == 'r' && !(out = fopen(optarg, "w")))
			perror(optarg), exit(1);
		else if (c != 'r')
			usage();
	}
	if (nthreads < 1 || nthreads > MAX_THREAD || rounds < 1)
		usage();
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){.rounds = rounds,
				       .seed = 0x9e3779b97f4a7c15ULL + (uint64_t)i};
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			perror("pthread_create"), exit(1);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		sum += w[i].sum;
	}
	t1 = mono_ns();
	p1 = task_cpu_ns(getppid());
	fprintf(out,
		"elapsed_ns=%llu exit_mono_ns=%llu cpu_ns=%llu parent_cpu_ns=%llu threads=%d "
		"rounds=%ld checksum=%llu\n",
		(unsigned long long)(t1 - t0), (unsigned long long)t1, (unsigned long long)cpu_ns(),
		(unsigned long long)(p1 - p0), nthreads, rounds, (unsigned long long)sum);
	return fclose(out) ? 1 : 0;
}
