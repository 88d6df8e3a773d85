/* fixture.h - shared helpers of the agent benchmark's fixture programs.
 *
 * Every fixture does a fixed, deterministic amount of work and prints one
 * line on stdout at the end:
 *   bench: wall_ns=N cpu_ns=N threads_cpu_ns=N checksum=N [more k=v]
 * wall_ns and cpu_ns cover the work only (from the first line of main to
 * the join of the last worker): the process's wall time and its user +
 * system time over all threads (an in-process agent's own threads
 * included), but not what a profiler does before main or after exit.
 * threads_cpu_ns is the sum of the worker threads' own CPU clocks, the
 * reference a CPU profiler's accounting is compared with.
 */
#ifndef BENCH_AGENT_FIXTURE_H
#define BENCH_AGENT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

#define FN __attribute__((noinline))

static inline uint64_t fx_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t fx_mono_ns(void)
{
	return fx_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t fx_thread_cpu_ns(void)
{
	return fx_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* User + system time of every thread of the process so far. */
static inline uint64_t fx_proc_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static inline uint64_t fx_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline long fx_arg(const char *s, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < min || v > max) {
		fprintf(stderr, "fixture: bad number \"%s\" (%ld..%ld)\n", s, min, max);
		exit(2);
	}
	return v;
}

#endif
