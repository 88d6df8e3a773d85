/* SPDX-License-Identifier: MIT */
/*
 * The agent's signal handler and per-thread CPU timers (see cpu.h).  Timers
 * are created with raw system calls: a thread CPU clock of any tid of the
 * process, delivered to that tid (SIGEV_THREAD_ID), so threads that existed
 * before the agent started are timed too.  Each timer signal weighs
 * interval x (1 + si_overrun): the kernel tick caps the signal rate, and
 * the overrun count says how many expirations one signal stands for.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/hooks/cpu.h"
#include "agent/core/ring.h"
#include "agent/core/thread.h"
#include "agent/stack/unwind.h"
#include "util/banned.h"

#define CPUCLOCK_SCHED	   2
#define CPUCLOCK_PERTHREAD 4

static _Atomic int agent_signo;
static atomic_flag moving = ATOMIC_FLAG_INIT;

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction;

static clockid_t thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD);
}

int agent_signal_current(void)
{
	return atomic_load(&agent_signo);
}

bool agent_context_in_syscall(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t page_off = (uintptr_t)ip & 4095;

	/* Interrupted and to be restarted: rip was moved back onto the syscall. */
	if (page_off <= 4094 && ip[0] == 0x0f && ip[1] == 0x05)
		return true;
	/* Interrupted without restart: rip after the syscall, rax = -EINTR. */
	return page_off >= 2 && ip[-2] == 0x0f && ip[-1] == 0x05 &&
	       uc->uc_mcontext.gregs[REG_RAX] == -EINTR;
}

static void take_sample(struct agent_thread *t, enum agent_kind kind, int64_t v0, int64_t v1,
			const void *uc, unsigned state)
{
	struct agent_sample *s = agent_sample_begin(t, AGENT_MAX_DEPTH);
	bool truncated = false;
	size_t n;

	if (!s)
		return;
	/* Unwound straight into the ring. */
	n = agent_unwind_signal(uc, t->stack_lo, t->stack_hi, s->pcs, AGENT_MAX_DEPTH, &truncated);
	agent_sample_fill(t, s, kind, v0, v1, n, truncated ? AGENT_SAMPLE_TRUNCATED : 0, state);
	agent_sample_end(t, s);
}

static uint64_t own_cputime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Where a wall sample caught T in a system call, as /proc/self/task/TID/syscall
 * shows it while the call blocks (wall.c compares them): the stack pointer,
 * the pc after the syscall instruction (a call to be restarted has rip moved
 * back onto it) and the first argument.
 */
static void note_call_site(struct agent_thread *t, const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	bool rewound = ((uintptr_t)ip & 4095) <= 4094 && ip[0] == 0x0f && ip[1] == 0x05;

	t->wall_sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	t->wall_pc = (uintptr_t)ip + (rewound ? 2 : 0);
	t->wall_arg0 = (uintptr_t)uc->uc_mcontext.gregs[REG_RDI];
}

/*
 * A wall sample: first the time the sampler charged to the thread's previous
 * wall stack and nobody collected yet (a record ahead of the new sample, so
 * the collector charges it to the stack it belongs to), then the sample.
 */
static void take_wall_sample(struct agent_thread *t, int64_t weight, const void *uc)
{
	uint64_t owed = atomic_exchange(&t->wall_repeat_ns, 0);
	bool blocked = agent_context_in_syscall(uc);

	if (owed && !agent_emit(t, AGENT_KIND_WALL_REPEAT, (int64_t)owed, 0, NULL, 0, 0, 0))
		atomic_fetch_add(&t->wall_repeat_ns, owed);
	take_sample(t, AGENT_KIND_WALL, weight, 0, uc,
		    blocked ? AGENT_STATE_BLOCKED : AGENT_STATE_RUNNING);
	t->wall_blocked = blocked;
	if (blocked)
		note_call_site(t, uc);
	/* What the thread does from here on is what the sampler compares. */
	t->wall_cputime = own_cputime();
	t->wall_seen = true;
	atomic_store_explicit(&t->wall_handled, atomic_load(&t->wall_sent), memory_order_release);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct agent_thread *t;

	(void)sig;
	if (!atomic_load_explicit(&agent_state.running, memory_order_relaxed))
		goto out;
	t = agent_thread_self_slow();
	if (!t || t->internal)
		goto out;
	if (si->si_code == SI_TIMER) {
		/* A CPU timer's signal can interrupt a blocking call too (eintr.c). */
		t->eintr_ours = 1;
		take_sample(t, AGENT_KIND_CPU,
			    (int64_t)cpu_sample_weight_ns(agent_state.interval_ns, si->si_overrun),
			    1, uc, AGENT_STATE_RUNNING);
	} else if (si->si_code == SI_QUEUE && si->si_errno == AGENT_WALL_MAGIC &&
		   si->si_pid == getpid()) {
		t->eintr_ours = 1;
		take_wall_sample(t, (int64_t)(intptr_t)si->si_value.sival_ptr, uc);
	}
out:
	errno = saved;
}

static int install(int signo)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return real_sigaction(signo, &sa, NULL) == 0 ? 0 : -errno;
}

/* A signal with no handler of the program's, from SIGRTMAX down; 0 if none. */
static int free_rt_signal(void)
{
	for (int s = SIGRTMAX; s >= SIGRTMIN + 4; s--) {
		struct sigaction old;

		if (real_sigaction(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			return s;
	}
	return 0;
}

static bool has_handler(int signo)
{
	struct sigaction old;

	if (real_sigaction(signo, NULL, &old) != 0)
		return false;
	return (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != on_signal
					   : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
}

int agent_signal_init(void)
{
	int signo = SIGPROF;

	if (!real_sigaction)
		real_sigaction = (sigaction_fn)agent_dlsym_next("sigaction");
	if (!real_sigaction)
		return -ENOSYS;
	if (atomic_load(&agent_signo))
		return 0;
	if (has_handler(SIGPROF)) {
		signo = free_rt_signal();
		if (!signo)
			return -EBUSY;
		agent_warn("SIGPROF has a handler of the program's: sampling with signal %d",
			   signo);
	}
	atomic_store(&agent_signo, signo);
	return install(signo);
}

int agent_cpu_thread_start(struct agent_thread *t)
{
	struct sigevent sev;
	struct itimerspec its;
	int id, signo = atomic_load(&agent_signo);

	if (!(agent_state.cfg.modes & AGENT_MODE_CPU) || t->cpu_timer || !signo || t->internal)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
	sev._sigev_un._tid = t->tid;
	if (syscall(SYS_timer_create, thread_cpu_clock(t->tid), &sev, &id) != 0)
		return -errno;
	its.it_interval.tv_sec = (time_t)(agent_state.interval_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(agent_state.interval_ns % 1000000000u);
	its.it_value = its.it_interval;
	if (syscall(SYS_timer_settime, id, 0, &its, NULL) != 0) {
		int err = errno;

		syscall(SYS_timer_delete, id);
		return -err;
	}
	t->cpu_timer = id + 1;
	return 0;
}

void agent_cpu_thread_stop(struct agent_thread *t)
{
	int id = t->cpu_timer;

	if (id) {
		t->cpu_timer = 0;
		syscall(SYS_timer_delete, id - 1);
	}
}

static void for_each_live(void (*fn)(struct agent_thread *))
{
	size_t n = agent_thread_count();

	for (size_t i = 0; i < n; i++) {
		struct agent_thread *t = agent_thread_at(i);

		if (atomic_load(&t->status) == SLOT_LIVE)
			fn(t);
	}
}

static void start_one(struct agent_thread *t)
{
	agent_cpu_thread_start(t);
}

void agent_cpu_start_all(void)
{
	for_each_live(start_one);
}

void agent_cpu_stop_all(void)
{
	for_each_live(agent_cpu_thread_stop);
}

/*
 * The program wants SIGNO for itself: move the agent to a free real-time
 * signal and re-create every timer on it, or stop signal sampling.
 */
static void yield_signal(int signo)
{
	int next;

	if (signo != atomic_load(&agent_signo) || atomic_flag_test_and_set(&moving))
		return;
	next = free_rt_signal();
	agent_cpu_stop_all();
	if (next && install(next) == 0) {
		agent_warn("the program takes signal %d: sampling moves to signal %d", signo, next);
		atomic_store(&agent_signo, next);
		agent_cpu_start_all();
	} else {
		agent_warn("the program takes signal %d and no signal is free: cpu and wall "
			   "sampling are off",
			   signo);
		atomic_store(&agent_signo, 0);
	}
	atomic_flag_clear(&moving);
}

static bool installs_handler(const struct sigaction *act)
{
	if (!act)
		return false;
	return (act->sa_flags & SA_SIGINFO)
		       ? act->sa_sigaction != on_signal
		       : act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

AGENT_API int sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction)
		real_sigaction = (sigaction_fn)agent_dlsym_next("sigaction");
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (signo > 0 && signo == atomic_load(&agent_signo) && installs_handler(act))
		yield_signal(signo);
	return real_sigaction(signo, act, old);
}

AGENT_API sighandler_t signal(int signo, sighandler_t handler)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- fatal signals at their default action ---- */

static void set_default(int signo)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	real_sigaction(signo, &sa, NULL);
}

void agent_signal_die(int signo)
{
	sigset_t set;

	set_default(signo);
	sigemptyset(&set);
	sigaddset(&set, signo);
	kill(getpid(), signo);
	/* The collector blocks every signal: let the process-wide one land elsewhere. */
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void on_fatal(int signo)
{
	int expect = 0, saved = errno;

	/* A second one, or no collector to write: die now. */
	if (!atomic_load(&agent_state.running) ||
	    !atomic_compare_exchange_strong(&agent_state.fatal_signal, &expect, signo)) {
		set_default(signo);
		kill(getpid(), signo);
	}
	errno = saved;
}

void agent_signal_catch_fatal(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, sa;

		if (real_sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
		    old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		real_sigaction(sigs[i], &sa, NULL);
	}
}

typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);

AGENT_API int setitimer(__itimer_which_t which, const struct itimerval *restrict nv,
			struct itimerval *restrict old)
{
	static setitimer_fn real;

	if (!real)
		real = (setitimer_fn)agent_dlsym_next("setitimer");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (which == ITIMER_PROF && nv && (nv->it_value.tv_sec || nv->it_value.tv_usec))
		yield_signal(SIGPROF);
	return real(which, nv, old);
}
