/* cpu-work.c - CPU-bound fixture of the agent benchmark (PLATEAU_MODES=cpu).
 *
 * THREADS threads (default 2) each run ROUNDS rounds (fixed work, no
 * system calls, no allocation); a round walks a recursive chain 12 frames
 * deep and hashes a 4 KiB block at its bottom, so samples have real
 * stacks to unwind.  A CPU profiler's cost shows up as a longer run and
 * as more CPU time.
 *
 * Usage: cpu-work [-t THREADS] [-n ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>
#include "fixture.h"

#define CHAIN	   12
#define BLOCK	   4096
#define MAX_THREAD 64

struct worker {
	pthread_t tid;
	long rounds;
	uint64_t seed, sum, cpu_ns;
	uint8_t block[BLOCK];
} __attribute__((aligned(64))); /* no false sharing between workers */

FN static uint64_t hash_block(const uint8_t *b, uint64_t h)
{
	for (size_t i = 0; i < BLOCK; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

FN static uint64_t walk(const uint8_t *b, int depth, uint64_t h)
{
	if (depth == 0)
		return hash_block(b, h);
	/* Not a tail call: the chain stays on the stack. */
	return walk(b, depth - 1, h + (uint64_t)depth) ^ (uint64_t)depth;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (size_t i = 0; i < BLOCK; i++)
		w->block[i] = (uint8_t)fx_rnd(&w->seed);
	for (long r = 0; r < w->rounds; r++)
		w->sum += walk(w->block, CHAIN, w->sum + (uint64_t)r);
	w->cpu_ns = fx_thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t t0 = fx_mono_ns(), c0 = fx_proc_cpu_ns(), sum = 0, tcpu = 0;
	static struct worker w[MAX_THREAD];
	long rounds = 400000, nthreads = 2;
	int c;

	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			nthreads = fx_arg(optarg, 1, MAX_THREAD);
		else if (c == 'n')
			rounds = fx_arg(optarg, 1, 1L << 40);
		else
			return fprintf(stderr, "usage: cpu-work [-t THREADS] [-n ROUNDS]\n"), 2;
	}
	for (long i = 0; i < nthreads; i++) {
		w[i].rounds = rounds;
		w[i].seed = 0x9e3779b97f4a7c15ULL + (uint64_t)i;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			return perror("pthread_create"), 1;
	}
	for (long i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		sum += w[i].sum;
		tcpu += w[i].cpu_ns;
	}
	printf("bench: wall_ns=%llu cpu_ns=%llu threads_cpu_ns=%llu checksum=%llu\n",
	       (unsigned long long)(fx_mono_ns() - t0), (unsigned long long)(fx_proc_cpu_ns() - c0),
	       (unsigned long long)tcpu, (unsigned long long)sum);
	return 0;
}
