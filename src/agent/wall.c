/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/cpu.h"
#include "agent/thread.h"
#include "agent/wall.h"
#include "util/banned.h"

#define CPUCLOCK_SCHED	   2
#define CPUCLOCK_PERTHREAD 4

static pthread_t sampler;
static atomic_bool sampler_on;

static int thread_cputime(pid_t tid, uint64_t *ns)
{
	clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD);
	struct timespec ts;

	if (clock_gettime(clk, &ts) != 0)
		return -errno;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

static void signal_thread(struct agent_thread *t, int signo, uint64_t weight_ns)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = signo;
	si.si_code = SI_QUEUE;
	si.si_errno = AGENT_WALL_MAGIC;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)weight_ns;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), t->tid, signo, &si);
}

/*
 * One round over the threads.  CPU time that moved by less than 1% of the
 * interval since the thread's last sample is the handler's own and the
 * retry of an interrupted call: the thread is idle.
 */
static void wall_round(uint64_t elapsed_ns)
{
	size_t n = agent_thread_count();
	int signo = agent_signal_current();
	uint64_t slack = agent_state.interval_ns / 100;

	for (size_t i = 0; i < n && signo; i++) {
		struct agent_thread *t = agent_thread_at(i);
		uint64_t cpu = 0;

		if (atomic_load(&t->status) != SLOT_LIVE || t->internal)
			continue;
		if (thread_cputime(t->tid, &cpu) != 0)
			continue;
		if (t->wall_seen && cpu - t->wall_cputime <= slack) {
			atomic_fetch_add(&t->wall_repeat_ns, elapsed_ns);
			continue;
		}
		/*
		 * Counted before the signal is sent: an EINTR is ours even when
		 * the handler runs late (a sanitizer defers them), see eintr.c.
		 */
		atomic_fetch_add(&t->wall_sent, 1);
		signal_thread(t, signo, elapsed_ns);
	}
}

static void *sampler_main(void *arg)
{
	uint64_t interval = agent_state.interval_ns, last = agent_now_mono();
	struct timespec next;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (atomic_load(&sampler_on)) {
		uint64_t now;

		next.tv_nsec += (long)(interval % 1000000000u);
		next.tv_sec += (time_t)(interval / 1000000000u) + next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		now = agent_now_mono();
		if (atomic_load(&agent_state.running))
			wall_round(now - last);
		last = now;
	}
	return NULL;
}

int agent_wall_start(void)
{
	int rc;

	if (!(agent_state.cfg.modes & AGENT_MODE_WALL) || atomic_load(&sampler_on))
		return 0;
	atomic_store(&sampler_on, true);
	rc = agent_thread_spawn(&sampler, sampler_main, NULL);
	if (rc != 0) {
		atomic_store(&sampler_on, false);
		return -rc;
	}
	return 0;
}

void agent_wall_stop(void)
{
	if (!atomic_exchange(&sampler_on, false))
		return;
	pthread_join(sampler, NULL);
}

void agent_wall_atfork_child(void)
{
	/* The sampler thread did not come along. */
	atomic_store(&sampler_on, false);
}
