/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/hooks/cpu.h"
#include "agent/core/thread.h"
#include "agent/hooks/wall.h"
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
 * Wall time goes to the stack a thread was in while the time passed.  A
 * thread found idle (its CPU clock has not moved since a look that found it
 * blocked) is still in the same call, so the time since the last look goes
 * to its last wall stack, and it is looked at again after twice as many
 * rounds as before, up to WALL_GAP_MAX: with 1,000 idle threads the clock
 * reads, not the signals, are the sampler's cost.  A thread that has run
 * since (its clock moved, beyond the retry of a call our signal
 * interrupted) is signalled and records its new stack; the time since the
 * last look is split where the thread left its previous call when that is
 * known (the blocking calls eintr.c wraps mark their start and end), else
 * evenly beyond the last round, and the thread is looked at every round
 * again.  A thread that exits between looks charges the time since the
 * last one itself (agent_wall_thread_exit); wall_looked_ns is exchanged by
 * both, so no time is charged twice.
 */
#define WALL_GAP_MAX 8

static uint32_t round_no; /* the sampler's */

/*
 * Whether thread T is blocked in the system call its last wall sample
 * caught: the same stack pointer, pc and first argument in
 * /proc/self/task/TID/syscall ("NR ARG0 ... ARG5 SP PC").  -1 when the file
 * cannot be read.
 */
static int same_call(const struct agent_thread *t)
{
	char path[64], buf[256], *p = buf, *end;
	unsigned long long f[9];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (int i = 0; i < 9; i++) {
		f[i] = strtoull(p, &end, 0);
		if (end == p)
			return 0; /* "running", or "-1 SP PC": not in a system call */
		p = end;
	}
	return f[1] == t->wall_arg0 && f[7] == t->wall_sp && f[8] == t->wall_pc;
}

/*
 * Whether T is still in the call its last wall sample caught, its CPU clock
 * now at CPU: exactly when the clock has not moved since a look that found
 * it so; when it moved by no more than the retry of the call after our
 * signal (1% of the time looked at), by where the call is.
 */
static bool still_blocked(struct agent_thread *t, uint64_t cpu, uint64_t since, uint64_t owed)
{
	uint64_t base = t->wall_base_ok ? t->wall_base : t->wall_cputime;
	uint64_t mark = atomic_load_explicit(&t->wall_mark_ns, memory_order_relaxed);
	int same;

	if (!t->wall_seen || !t->wall_blocked ||
	    atomic_load_explicit(&t->wall_handled, memory_order_acquire) !=
		    atomic_load(&t->wall_sent))
		return false;
	if (t->wall_base_ok && cpu == base)
		return true;
	/* It began or ended a wrapped call, or ran for longer than a retry. */
	if ((since && mark > since) || cpu - base > owed / 100)
		return false;
	same = same_call(t);
	return same != 0; /* -1: nothing to tell by; a retry is the likelier */
}

/* The time since the look at SINCE that T spent in its previous call; the rest is the new sample's. */
static uint64_t old_share(const struct agent_thread *t, uint64_t since, uint64_t now, uint64_t owed)
{
	uint64_t mark = atomic_load_explicit(&t->wall_mark_ns, memory_order_relaxed);
	uint64_t interval = agent_state.interval_ns;

	if (!t->wall_seen || !t->wall_blocked)
		return 0; /* it was running: a sample stands for its round */
	if (since && mark > since)
		return mark < now ? mark - since : owed; /* a mark after NOW: all of it */
	return owed > interval ? (owed - interval) / 2 : 0;
}

/* Returns what it did: 0 nothing, 1 read the thread's clock, 2 and signalled it. */
static int wall_look(struct agent_thread *t, int signo, uint64_t now, uint64_t elapsed_ns)
{
	unsigned gap = atomic_load_explicit(&t->wall_gap, memory_order_relaxed);
	uint64_t mark = atomic_load_explicit(&t->wall_mark_ns, memory_order_relaxed);
	uint64_t cpu = 0, prev, owed, old;

	/* Not due, unless it began or ended a wrapped blocking call since the last look. */
	if (gap && (int32_t)(t->wall_next - round_no) > 0 && mark == t->wall_mark_seen)
		return 0;
	/* The last signal not handled yet: its sample comes, the time waits (a few rounds). */
	if (atomic_load_explicit(&t->wall_handled, memory_order_acquire) !=
		    atomic_load(&t->wall_sent) &&
	    round_no - t->wall_sent_round < 4)
		return 0;
	if (thread_cputime(t->tid, &cpu) != 0)
		return 0;
	t->wall_mark_seen = mark;
	prev = atomic_exchange(&t->wall_looked_ns, now);
	/* No previous look: a new thread's first round, or one settled meanwhile. */
	owed = prev ? (now > prev ? now - prev : 0) : gap ? 0 : elapsed_ns;
	if (still_blocked(t, cpu, prev, owed)) {
		t->wall_base = cpu;
		t->wall_base_ok = true;
		if (owed)
			atomic_fetch_add(&t->wall_repeat_ns, owed);
		gap = gap ? gap * 2 : 2;
		if (gap > WALL_GAP_MAX)
			gap = WALL_GAP_MAX;
		atomic_store_explicit(&t->wall_gap, (uint8_t)gap, memory_order_relaxed);
		t->wall_next = round_no + gap;
		return 1;
	}
	t->wall_base_ok = false;
	atomic_store_explicit(&t->wall_gap, 1, memory_order_relaxed);
	t->wall_next = round_no + 1;
	if (!owed)
		return 1;
	/* Before the signal: the handler passes it on ahead of its sample (cpu.c). */
	old = old_share(t, prev, now, owed);
	if (old)
		atomic_fetch_add(&t->wall_repeat_ns, old);
	/*
	 * Counted before the signal is sent: an EINTR is ours even when the
	 * handler runs late (a sanitizer defers them), see eintr.c.
	 */
	atomic_fetch_add(&t->wall_sent, 1);
	t->wall_sent_round = round_no;
	signal_thread(t, signo, owed - old);
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
