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
 * A thread found idle is looked at again after twice as many rounds as
 * before, up to WALL_GAP_MAX: with 1,000 idle threads the clock reads, not
 * the signals, are the sampler's cost.  A look charges the time since the
 * previous one: to the thread's previous stack when it still has not run
 * (exact: it stayed blocked there), to the stack it records when it has (as
 * a sample at a longer interval would).  A look that finds the thread
 * running sets the gap back to one round.  A thread that exits between
 * looks charges the time since the last one itself (agent_wall_thread_exit);
 * wall_looked_ns is exchanged by both, so no time is charged twice.
 */
#define WALL_GAP_MAX 8

static uint32_t round_no; /* the sampler's */

/* Returns what it did: 0 nothing, 1 read the thread's clock, 2 and signalled it. */
static int wall_look(struct agent_thread *t, int signo, uint64_t now, uint64_t elapsed_ns)
{
	unsigned gap = atomic_load_explicit(&t->wall_gap, memory_order_relaxed);
	uint64_t cpu = 0, prev, owed;

	if (gap && (int32_t)(t->wall_next - round_no) > 0)
		return 0;
	if (thread_cputime(t->tid, &cpu) != 0)
		return 0;
	prev = atomic_exchange(&t->wall_looked_ns, now);
	/* No previous look: a new thread's first round, or one settled meanwhile. */
	owed = prev ? (now > prev ? now - prev : 0) : gap ? 0 : elapsed_ns;
	/*
	 * CPU time that moved by less than 1% of the time looked at since the
	 * thread's last sample is the handler's own and the retry of an
	 * interrupted call: the thread is idle.
	 */
	if (t->wall_seen && cpu - t->wall_cputime <= owed / 100) {
		if (owed)
			atomic_fetch_add(&t->wall_repeat_ns, owed);
		gap = gap ? gap * 2 : 2;
		if (gap > WALL_GAP_MAX)
			gap = WALL_GAP_MAX;
		atomic_store_explicit(&t->wall_gap, (uint8_t)gap, memory_order_relaxed);
		t->wall_next = round_no + gap;
		return 1;
	}
	atomic_store_explicit(&t->wall_gap, 1, memory_order_relaxed);
	t->wall_next = round_no + 1;
	if (!owed)
		return 1;
	/*
	 * Counted before the signal is sent: an EINTR is ours even when the
	 * handler runs late (a sanitizer defers them), see eintr.c.
	 */
	atomic_fetch_add(&t->wall_sent, 1);
	signal_thread(t, signo, owed);
	return 2;
}

/* One round over the threads. */
static void wall_round(uint64_t now, uint64_t elapsed_ns)
{
	size_t n = agent_thread_count();
	int signo = agent_signal_current();
	uint64_t reads = 0, signals = 0;

	round_no++;
	for (size_t i = 0; i < n && signo; i++) {
		struct agent_thread *t = agent_thread_at(i);
		int did;

		if (atomic_load(&t->status) != SLOT_LIVE || t->internal)
			continue;
		did = wall_look(t, signo, now, elapsed_ns);
		reads += did > 0;
		signals += did > 1;
	}
	atomic_fetch_add(&agent_state.counters.wall_reads, reads);
	atomic_fetch_add(&agent_state.counters.wall_signals, signals);
}

/* Charge an idle thread the time since the sampler's last look; forget the look. */
static void settle(struct agent_thread *t, uint64_t now)
{
	uint64_t prev;

	if (atomic_exchange_explicit(&t->wall_gap, 0, memory_order_relaxed) < 2)
		return;
	prev = atomic_exchange(&t->wall_looked_ns, 0);
	if (prev && now > prev)
		atomic_fetch_add(&t->wall_repeat_ns, now - prev);
}

void agent_wall_thread_exit(struct agent_thread *t)
{
	if (atomic_load(&sampler_on))
		settle(t, agent_now_mono());
}

/* At stop: idle threads' time since their last look goes to their previous stacks. */
static void settle_all(void)
{
	size_t n = agent_thread_count();
	uint64_t now = agent_now_mono();

	for (size_t i = 0; i < n; i++) {
		struct agent_thread *t = agent_thread_at(i);

		if (atomic_load(&t->status) == SLOT_LIVE)
			settle(t, now);
		atomic_store(&t->wall_looked_ns, 0);
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
			wall_round(now, now - last);
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
	settle_all();
}

void agent_wall_atfork_child(void)
{
	struct agent_thread *t = agent_thread_self();

	/* The sampler thread did not come along, nor what the parent owed. */
	atomic_store(&sampler_on, false);
	if (t) {
		atomic_store(&t->wall_looked_ns, 0);
		atomic_store(&t->wall_gap, 0);
	}
}
