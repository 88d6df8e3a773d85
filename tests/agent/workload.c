/* SPDX-License-Identifier: MIT */
/*
 * The agent's test workloads: one program, a mode per argument, each doing
 * something whose cost the test knows, in functions whose names it looks
 * for in the profile.  Built by tests/cli/agent.sh without frame pointers
 * (-O2 -fomit-frame-pointer), as Debian builds its libraries.
 *
 *   workload cpu THREADS MS     burn MS of CPU per thread (2/3 in burn_a, 1/3 in burn_b);
 *                               prints the threads' CPU time in ns
 *   workload wall MS            main burns, a thread sleeps in sleeper(); prints nothing
 *   workload idle THREADS MS    THREADS threads blocked in read() in idler() for MS ms;
 *                               prints how long they were blocked in ns
 *   workload alloc MIB          allocate MIB MiB in alloc_site (64 KiB blocks), keep half
 *   workload lock MS            4 threads contend for one mutex in lock_site
 *   workload eintr MS           nanosleep, poll, epoll_wait, select, usleep without EINTR retry
 *   workload labels MS          burn under SDK labels; a slow request; a region
 *   workload sigprof MS         own SIGPROF handler + ITIMER_PROF; prints its signal count
 *   workload churn N            N short threads, a few at a time
 *   workload fork N             N fork + waitpid rounds; the children allocate and exit
 *   workload dlopen N LIB       N dlopen/dlsym/call/dlclose rounds of LIB
 *   workload storm MS           4 threads malloc/realloc/free random sizes
 *   workload late MS            (SDK) 2 threads start burning, then plateau_start/stop
 *   workload cardinality N      (SDK) N distinct values of label "user"
 *   workload regions N          (SDK) 4 threads x N calls of a region recursing 3 deep
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef WITH_SDK
#include "plateau.h"
#endif

static __thread volatile uint64_t sink; /* per thread: the workloads race on nothing */

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void spin_for(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns, x = sink;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

__attribute__((noinline)) void burn_a(uint64_t ns)
{
	spin_for(ns);
	sink++;
}

__attribute__((noinline)) void burn_b(uint64_t ns)
{
	spin_for(ns);
	sink++;
}

struct cpu_arg {
	uint64_t ms, cpu_ns;
};

static void *cpu_thread(void *p)
{
	struct cpu_arg *a = p;
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

	for (uint64_t done = 0; done < a->ms; done += 3) {
		burn_a(2000000);
		burn_b(1000000);
	}
	a->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

static int do_cpu(int threads, uint64_t ms)
{
	pthread_t th[64];
	struct cpu_arg args[64];
	uint64_t total = 0;

	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 0; i < threads; i++) {
		args[i].ms = ms;
		pthread_create(&th[i], NULL, cpu_thread, &args[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += args[i].cpu_ns;
	}
	printf("%llu\n", (unsigned long long)total);
	return 0;
}

__attribute__((noinline)) void sleeper(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
	sink++;
}

static void *sleep_thread(void *p)
{
	sleeper((uint64_t)(uintptr_t)p);
	return NULL;
}

/* Prints the wall time main spent in burn_a (more than MS of CPU when the machine is busy). */
static int do_wall(uint64_t ms)
{
	pthread_t th;
	uint64_t t0;

	pthread_create(&th, NULL, sleep_thread, (void *)(uintptr_t)ms);
	t0 = now_ns(CLOCK_MONOTONIC);
	burn_a(ms * 1000000);
	printf("%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - t0));
	pthread_join(th, NULL);
	return 0;
}

static int idle_pipe[2];

__attribute__((noinline)) void idler(void)
{
	char c;

	while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	sink++;
}

static void *idle_thread(void *p)
{
	(void)p;
	idler();
	return NULL;
}

/* Prints the time from the last thread's start to the pipe's closing. */
static int do_idle(int threads, uint64_t ms)
{
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000};
	uint64_t t0;

	if (!th || pipe(idle_pipe) != 0)
		return 1;
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, idle_thread, NULL) != 0)
			return 1;
	t0 = now_ns(CLOCK_MONOTONIC);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	printf("%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - t0));
	close(idle_pipe[1]);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	free(th);
	return 0;
}

__attribute__((noinline)) void *alloc_site(size_t n)
{
	void *p = malloc(n);

	memset(p, 1, n);
	return p;
}

static int do_alloc(uint64_t mib)
{
	size_t n = mib * 16; /* 64 KiB blocks */
	void **keep = calloc(n, sizeof(*keep));

	for (size_t i = 0; i < n; i++) {
		keep[i] = alloc_site(64 * 1024);
		if (i % 2) {
			free(keep[i]);
			keep[i] = NULL;
		}
	}
	printf("%llu\n", (unsigned long long)(n * 64 * 1024));
	return 0; /* the kept half stays in use at exit */
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t lock_ms;
static _Atomic uint64_t lock_wait_ns;

/* The time each lock call took is summed: the truth the profile estimates. */
__attribute__((noinline)) void lock_site(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&mu);
	lock_wait_ns += now_ns(CLOCK_MONOTONIC) - t0;
	spin_for(200000);
	pthread_mutex_unlock(&mu);
}

static void *lock_thread(void *p)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + lock_ms * 1000000;

	(void)p;
	while (now_ns(CLOCK_MONOTONIC) < end)
		lock_site();
	return NULL;
}

static int do_lock(uint64_t ms)
{
	pthread_t th[4];

	lock_ms = ms;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, lock_thread, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("%llu\n", (unsigned long long)lock_wait_ns);
	return 0;
}

/* Each call must take its full time and never fail with EINTR. */
static int do_eintr(uint64_t ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000};
	int ep = epoll_create1(0), fails = 0;
	struct epoll_event ev;
	uint64_t end = now_ns(CLOCK_MONOTONIC) + ms * 1000000;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		struct timeval tv = {.tv_sec = 0, .tv_usec = 50000};

		if (nanosleep(&ts, NULL) != 0)
			fails++, fprintf(stderr, "nanosleep: %s\n", strerror(errno));
		if (poll(NULL, 0, 50) != 0)
			fails++, fprintf(stderr, "poll: %s\n", strerror(errno));
		if (epoll_wait(ep, &ev, 1, 50) != 0)
			fails++, fprintf(stderr, "epoll_wait: %s\n", strerror(errno));
		if (select(0, NULL, NULL, NULL, &tv) != 0)
			fails++, fprintf(stderr, "select: %s\n", strerror(errno));
		if (usleep(50000) != 0)
			fails++, fprintf(stderr, "usleep: %s\n", strerror(errno));
		if (now_ns(CLOCK_MONOTONIC) - t0 < 245 * 1000000ull)
			fails++, fprintf(stderr, "a round took %llu ns\n",
					 (unsigned long long)(now_ns(CLOCK_MONOTONIC) - t0));
	}
	printf("%d\n", fails);
	return fails != 0;
}

#ifdef WITH_SDK
__attribute__((noinline)) void checkout(uint64_t ms)
{
	PLATEAU_WITH_LABELS("endpoint", "/checkout");
	burn_a(ms * 1000000);
}

__attribute__((noinline)) void handle_request(int i, uint64_t ms)
{
	PLATEAU_REGION("handle_request", 1.0, (double)ms / 2); /* only the slow one is logged */
	plateau_request_begin();
	if (i == 3)
		burn_b(ms * 1000000); /* the one slow request */
	else
		burn_a(ms * 20000); /* 25 times under the threshold: a busy machine stays under */
	plateau_request_end(ms * 500000);
}

static atomic_int late_go;

/* Runs (waits on the CPU) before the agent starts, burns once it has. */
static void *late_thread(void *p)
{
	while (!late_go)
		spin_for(100000);
	burn_b((uint64_t)(uintptr_t)p * 1000000);
	return NULL;
}

/* Threads that exist before the agent starts are found in /proc/self/task. */
static int do_late(uint64_t ms)
{
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, late_thread, (void *)(uintptr_t)ms);
	if (plateau_start() != 0)
		return 1;
	late_go = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return plateau_stop() != 0;
}

static int do_cardinality(uint64_t n)
{
	char value[32];

	for (uint64_t i = 0; i < n; i++) {
		snprintf(value, sizeof(value), "u%llu", (unsigned long long)i);
		plateau_label_push("user", value);
		free(alloc_site(100)); /* one sample per value at PLATEAU_ALLOC_RATE=1 */
		plateau_label_pop();
	}
	return 0;
}

__attribute__((noinline)) void recurse(int depth)
{
	void *p;

	PLATEAU_REGION("recurse", 1.0, 0);
	p = malloc(1000);
	sink += (uintptr_t)p & 1;
	free(p);
	if (depth > 1)
		recurse(depth - 1);
}

static void *region_thread(void *p)
{
	for (uint64_t i = 0; i < (uint64_t)(uintptr_t)p; i++)
		recurse(3);
	return NULL;
}

static int do_regions(uint64_t n)
{
	struct plateau_region_stats st;
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, region_thread, (void *)(uintptr_t)n);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (plateau_region_stats("recurse", &st) != 0)
		return 1;
	printf("calls=%llu measured=%llu bytes=%llu\n", (unsigned long long)st.calls,
	       (unsigned long long)st.measured, (unsigned long long)st.total_bytes);
	return 0;
}

static int do_labels(uint64_t ms)
{
	struct plateau_region_stats st;

	checkout(ms);
	for (int i = 0; i < 10; i++)
		handle_request(i, ms);
	if (plateau_region_stats("handle_request", &st) == 0)
		printf("calls=%llu measured=%llu\n", (unsigned long long)st.calls,
		       (unsigned long long)st.measured);
	return 0;
}
#endif

static volatile sig_atomic_t prof_signals;

static void on_prof(int sig)
{
	(void)sig;
	prof_signals++;
}

static int do_sigprof(uint64_t ms)
{
	struct itimerval it = {.it_interval = {0, 10000}, .it_value = {0, 10000}};

	signal(SIGPROF, on_prof);
	setitimer(ITIMER_PROF, &it, NULL);
	burn_a(ms * 1000000);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	printf("%d\n", (int)prof_signals);
	return prof_signals > 0 ? 0 : 1;
}

static void *short_thread(void *p)
{
	void *m = malloc(100 + (uintptr_t)p % 1000);

	spin_for(20000);
	free(m);
	return NULL;
}

static int do_churn(uint64_t n)
{
	for (uint64_t i = 0; i < n; i += 8) {
		pthread_t th[8];

		for (int j = 0; j < 8; j++)
			if (pthread_create(&th[j], NULL, short_thread, (void *)(uintptr_t)(i + j)))
				return 1;
		for (int j = 0; j < 8; j++)
			pthread_join(th[j], NULL);
	}
	return 0;
}

static int do_fork(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (pid == 0) {
			free(alloc_site(1000));
			spin_for(1000000);
			exit(7); /* through the agent's destructor: each child writes its profile */
		}
		spin_for(200000);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 7)
			return 1;
	}
	return 0;
}

static int do_dlopen(uint64_t n, const char *lib)
{
	for (uint64_t i = 0; i < n; i++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		double (*fn)(double);

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		fn = (double (*)(double))dlsym(h, "cbrt");
		if (fn)
			sink += (uint64_t)fn(27.0);
		spin_for(100000);
		dlclose(h);
	}
	return 0;
}

static void *storm_thread(void *p)
{
	uint64_t x = (uintptr_t)p * 0x9e3779b97f4a7c15u + 1,
		 end = now_ns(CLOCK_MONOTONIC) + lock_ms * 1000000;
	void *slot[64] = {0};

	while (now_ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 1000; i++) {
			unsigned k;

			x = x * 6364136223846793005u + 1442695040888963407u;
			k = (unsigned)(x >> 58);
			switch ((x >> 40) % 3) {
			case 0:
				free(slot[k]);
				slot[k] = malloc((x >> 20) % 70000);
				break;
			case 1: slot[k] = realloc(slot[k], (x >> 24) % 9000); break;
			default: free(slot[k]); slot[k] = calloc(1 + (x >> 30) % 64, 16);
			}
		}
	}
	for (int i = 0; i < 64; i++)
		free(slot[i]);
	return NULL;
}

static int do_storm(uint64_t ms)
{
	pthread_t th[4];

	lock_ms = ms;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, storm_thread, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 100;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "cpu"))
		return do_cpu((int)n, argc > 3 ? strtoull(argv[3], NULL, 10) : 300);
	if (!strcmp(argv[1], "wall"))
		return do_wall(n);
	if (!strcmp(argv[1], "idle") && argc > 3)
		return do_idle((int)n, strtoull(argv[3], NULL, 10));
	if (!strcmp(argv[1], "alloc"))
		return do_alloc(n);
	if (!strcmp(argv[1], "lock"))
		return do_lock(n);
	if (!strcmp(argv[1], "eintr"))
		return do_eintr(n);
	if (!strcmp(argv[1], "sigprof"))
		return do_sigprof(n);
	if (!strcmp(argv[1], "churn"))
		return do_churn(n);
	if (!strcmp(argv[1], "fork"))
		return do_fork(n);
	if (!strcmp(argv[1], "dlopen") && argc > 3)
		return do_dlopen(n, argv[3]);
	if (!strcmp(argv[1], "storm"))
		return do_storm(n);
#ifdef WITH_SDK
	if (!strcmp(argv[1], "labels"))
		return do_labels(n);
	if (!strcmp(argv[1], "late"))
		return do_late(n);
	if (!strcmp(argv[1], "cardinality"))
		return do_cardinality(n);
	if (!strcmp(argv[1], "regions"))
		return do_regions(n);
#endif
	return 2;
}
