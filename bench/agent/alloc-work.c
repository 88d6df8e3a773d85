/* alloc-work.c - allocation-heavy fixture of the agent benchmark
 * (PLATEAU_MODES=alloc).
 *
 * THREADS threads (default 4) each make OPS allocations (fixed,
 * deterministic sequence per thread): every step frees a random block of
 * the thread's 4096 live ones and replaces it with a new one; 80% of the
 * new blocks are small (16..256 bytes), 18% medium (256 B..4 KiB), 2%
 * larger (4..64 KiB); one in eight steps uses calloc and one in eight
 * grows the block with realloc.  The first bytes of each block (at most
 * 64) are written and read back, as a program would, but the work is
 * dominated by the allocator.  Mean request about 1.2 KiB.  The report
 * line adds allocs=N bytes=N: the calls (realloc counted as one) and the
 * bytes they asked for, the truth for a heap profiler's alloc_objects and
 * alloc_space (the worker's own 32 KiB slot array is left out).
 *
 * Usage: alloc-work [-t THREADS] [-n OPS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "fixture.h"

#define LIVE	   4096
#define MAX_THREAD 64

struct worker {
	pthread_t tid;
	long ops;
	uint64_t seed, sum, cpu_ns;
	uint64_t allocs, bytes; /* what a heap profiler should account */
} __attribute__((aligned(64))); /* no false sharing between workers */

static size_t pick_size(uint64_t r)
{
	unsigned p = (unsigned)(r % 100);

	r >>= 8;
	if (p < 80)
		return 16 + r % 241;
	if (p < 98)
		return 256 + r % 3841;
	return 4096 + r % 61441;
}

FN static char *new_block(struct worker *w, uint64_t r, size_t size)
{
	char *p;

	if ((r >> 40) % 8 == 0)
		p = calloc(1, size);
	else
		p = malloc(size);
	if (!p)
		abort();
	w->allocs++;
	w->bytes += size;
	if ((r >> 44) % 8 == 0) {
		size += size / 2;
		if (!(p = realloc(p, size)))
			abort();
		w->allocs++;
		w->bytes += size;
	}
	memset(p, (int)(r & 0xff), size < 64 ? size : 64);
	return p;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char **live = calloc(LIVE, sizeof(*live));

	if (!live)
		abort();
	for (long i = 0; i < w->ops; i++) {
		uint64_t r = fx_rnd(&w->seed);
		size_t slot = (size_t)(r >> 52) % LIVE;

		if (live[slot])
			w->sum += (unsigned char)live[slot][0];
		free(live[slot]);
		live[slot] = new_block(w, r, pick_size(r));
	}
	for (size_t i = 0; i < LIVE; i++)
		free(live[i]);
	free(live);
	w->cpu_ns = fx_thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t t0 = fx_mono_ns(), c0 = fx_proc_cpu_ns(), sum = 0, tcpu = 0, allocs = 0, bytes = 0;
	static struct worker w[MAX_THREAD];
	long ops = 4000000, nthreads = 4;
	int c;

	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			nthreads = fx_arg(optarg, 1, MAX_THREAD);
		else if (c == 'n')
			ops = fx_arg(optarg, 1, 1L << 40);
		else
			return fprintf(stderr, "usage: alloc-work [-t THREADS] [-n OPS]\n"), 2;
	}
	for (long i = 0; i < nthreads; i++) {
		w[i].ops = ops;
		w[i].seed = 0x2545f4914f6cdd1dULL * (uint64_t)(i + 1);
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			return perror("pthread_create"), 1;
	}
	for (long i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		sum += w[i].sum;
		tcpu += w[i].cpu_ns;
		allocs += w[i].allocs;
		bytes += w[i].bytes;
	}
	printf("bench: wall_ns=%llu cpu_ns=%llu threads_cpu_ns=%llu checksum=%llu allocs=%llu "
	       "bytes=%llu\n",
	       (unsigned long long)(fx_mono_ns() - t0), (unsigned long long)(fx_proc_cpu_ns() - c0),
	       (unsigned long long)tcpu, (unsigned long long)sum, (unsigned long long)allocs,
	       (unsigned long long)bytes);
	return 0;
}
