/* SPDX-License-Identifier: MIT */
/*
 * The thread registry: one slot per live thread, in a table mapped once.
 * A thread claims a free slot with a compare-and-swap, so registration is
 * safe from any thread without a lock; its slot pointer lives in
 * initial-exec TLS, so every hot path finds it with one load.  At thread
 * exit a pthread key destructor marks the slot exited; the collector drains
 * its ring and frees it for reuse (the ring memory is kept).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/hooks/cpu.h"
#include "agent/core/ring.h"
#include "agent/core/thread.h"
#include "agent/hooks/wall.h"
#include "util/banned.h"

static struct agent_thread *slots;
static atomic_size_t slots_used; /* high-water mark of claimed slots */
static pthread_key_t exit_key;
static AGENT_TLS struct agent_thread *self;
static AGENT_TLS bool self_internal;
static AGENT_TLS bool self_gone; /* the thread's exit destructor ran: no slot again */

struct agent_thread *agent_thread_self(void)
{
	return self;
}

bool agent_thread_internal(void)
{
	return self_internal || (self && self->in_hook);
}

void agent_thread_set_internal(void)
{
	self_internal = true;
	if (self) {
		self->internal = true;
		agent_cpu_thread_stop(self);
	}
}

size_t agent_thread_count(void)
{
	return atomic_load_explicit(&slots_used, memory_order_acquire);
}

struct agent_thread *agent_thread_at(size_t i)
{
	return slots && i < AGENT_MAX_THREADS ? &slots[i] : NULL;
}

struct agent_thread *agent_thread_find(pid_t tid)
{
	size_t n = agent_thread_count();

	for (size_t i = 0; i < n; i++)
		if (atomic_load_explicit(&slots[i].status, memory_order_acquire) == SLOT_LIVE &&
		    slots[i].tid == tid)
			return &slots[i];
	return NULL;
}

struct agent_thread *agent_thread_self_slow(void)
{
	if (!self && slots)
		self = agent_thread_find(gettid());
	return self;
}

/* Claim a free slot (async-signal-safe): reset it for TID, with a ring. */
static struct agent_thread *claim(pid_t tid)
{
	for (size_t i = 0; slots && i < AGENT_MAX_THREADS; i++) {
		struct agent_thread *t = &slots[i];
		int expect = SLOT_FREE;
		struct agent_ring *ring;
		uint32_t gen;
		size_t used;

		if (!atomic_compare_exchange_strong(&t->status, &expect, SLOT_CLAIMED))
			continue;
		ring = t->ring ? t->ring : agent_ring_new();
		if (!ring) {
			atomic_store(&t->status, SLOT_FREE);
			return NULL;
		}
		agent_ring_reset(ring);
		gen = t->gen;
		memset((char *)t + offsetof(struct agent_thread, tid), 0,
		       sizeof(*t) - offsetof(struct agent_thread, tid));
		t->gen = gen + 1;
		t->ring = ring;
		t->tid = tid;
		alloc_sampler_init(&t->alloc, agent_state.cfg.alloc_rate,
				   agent_now_mono() ^ ((uint64_t)tid << 32));
		t->lock_rng = agent_now_mono() * 0x9e3779b97f4a7c15u ^ (uint64_t)tid;
		used = atomic_load(&slots_used);
		while (used < i + 1 && !atomic_compare_exchange_weak(&slots_used, &used, i + 1))
			;
		atomic_store_explicit(&t->status, SLOT_LIVE, memory_order_release);
		return t;
	}
	return NULL;
}

static void stack_bounds(struct agent_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	/* pthread_getattr_np allocates (and reads /proc for the main thread). */
	t->in_hook = 1;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	t->in_hook = 0;
}

/*
 * Give the calling thread a slot.  Its stack bounds only when BOUNDS:
 * pthread_getattr_np allocates under the thread's own lock, so it must not
 * run inside a malloc hook (the program's own pthread_getattr_np may be what
 * is allocating).
 */
static struct agent_thread *register_self(bool bounds)
{
	struct agent_thread *t;

	if (self)
		return self;
	t = claim(gettid());
	if (!t) {
		atomic_fetch_add(&agent_state.counters.dropped_nothread, 1);
		return NULL;
	}
	t->internal = self_internal;
	/* Before stack_bounds: what it allocates is the agent's (in_hook), not
	 * an allocation of a thread without a slot. */
	self = t;
	if (bounds)
		stack_bounds(t);
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	pthread_setspecific(exit_key, t);
	if (atomic_load(&agent_state.running))
		agent_cpu_thread_start(t);
	return t;
}

struct agent_thread *agent_thread_register(void)
{
	return register_self(true);
}

struct agent_thread *agent_thread_register_late(void)
{
	if (self || self_internal)
		return self;
	if (self_gone) {
		atomic_fetch_add(&agent_state.counters.dropped_nothread, 1);
		return NULL;
	}
	/* A thread adopted at start (found in /proc/self/task) has a slot already. */
	if (agent_thread_self_slow())
		return self;
	return register_self(false); /* stack bounds unknown, as an adopted thread's */
}

struct agent_thread *agent_thread_adopt(pid_t tid)
{
	struct agent_thread *t = agent_thread_find(tid);

	if (t)
		return t;
	t = claim(tid);
	if (t && atomic_load(&agent_state.running))
		agent_cpu_thread_start(t);
	return t;
}

/* The thread is leaving: its slot waits for the collector to drain it. */
static void on_thread_exit(void *arg)
{
	struct agent_thread *t = arg;

	if (!t)
		return;
	agent_cpu_thread_stop(t);
	agent_wall_thread_exit(t);
	self = NULL;
	self_gone = true;
	atomic_store_explicit(&t->status, SLOT_EXITED, memory_order_release);
}

void agent_thread_release(struct agent_thread *t)
{
	atomic_store_explicit(&t->status, SLOT_FREE, memory_order_release);
}

void agent_thread_atfork_child(void)
{
	size_t n = agent_thread_count();

	for (size_t i = 0; i < n; i++) {
		struct agent_thread *t = &slots[i];

		if (t->ring)
			agent_ring_reset(t->ring);
		if (t == self) {
			t->tid = gettid();
			t->cpu_timer = 0; /* timers are not inherited */
			continue;
		}
		atomic_store(&t->status, SLOT_FREE);
	}
}

int agent_thread_init(void)
{
	size_t bytes = sizeof(struct agent_thread) * AGENT_MAX_THREADS;
	void *p;

	if (slots)
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (pthread_key_create(&exit_key, on_thread_exit) != 0) {
		munmap(p, bytes);
		return -EAGAIN;
	}
	slots = p;
	return 0;
}

/* ---- pthread_create: every new thread registers before it runs its code ---- */

struct trampoline {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *arg)
{
	struct trampoline tr = *(struct trampoline *)arg;

	free(arg);
	agent_thread_register();
	return tr.fn(tr.arg);
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

AGENT_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	static pthread_create_fn real;
	struct agent_thread *t = self;
	struct trampoline *tr;
	int rc;

	if (!real)
		real = (pthread_create_fn)agent_dlsym_next("pthread_create");
	if (!real)
		return EAGAIN;
	agent_restart_check();
	if (!slots)
		return real(th, attr, fn, arg);
	if (t)
		t->in_hook++;
	tr = malloc(sizeof(*tr));
	if (t)
		t->in_hook--;
	if (!tr)
		return real(th, attr, fn, arg);
	tr->fn = fn;
	tr->arg = arg;
	rc = real(th, attr, thread_start, tr);
	if (rc != 0)
		free(tr);
	return rc;
}

/* ---- the agent's own threads: no slot, every signal blocked, hooks pass through ---- */

struct internal_trampoline {
	void *(*fn)(void *);
	void *arg;
	atomic_int started; /* the thread runs its own code: the spawner may go on */
};

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

/*
 * An ASan-built agent loaded into a program without ASan finds glibc's
 * pthread_create before ASan's, so ASan never sees its threads start, and
 * nobody clears the shadow of a stack glibc hands out again: in a fork
 * child, the stack of a parent thread that did not come along, redzones
 * and all (a false stack-buffer-overflow now and then in the fork loop).
 * The thread clears its own.
 */
static void stack_shadow_clear(void)
{
	pthread_attr_t attr;
	size_t size;
	void *addr;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0)
		__asan_unpoison_memory_region(addr, size);
	pthread_attr_destroy(&attr);
}
#else
static void stack_shadow_clear(void)
{
}
#endif

static void *internal_start(void *arg)
{
	struct internal_trampoline *tr = arg;
	void *(*fn)(void *) = tr->fn;
	void *fn_arg = tr->arg;

	self_internal = true;
	stack_shadow_clear();
	/* TR is on the spawner's stack: not touched after this. */
	atomic_store_explicit(&tr->started, 1, memory_order_release);
	return fn(fn_arg);
}

/*
 * Returns once the thread runs FN: whatever a runtime does when a thread
 * starts is over by then.  ASan's allocates, and a fork made meanwhile
 * (a program that forks at once, the agent started in its constructor)
 * leaves the child with the allocator's lock held: it hung in about one
 * run in three.  The agent's threads allocate only under locks that fork
 * takes first.
 */
int agent_thread_spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
	static pthread_create_fn real;
	struct internal_trampoline tr = {.fn = fn, .arg = arg};
	sigset_t all, old;
	int rc;

	if (!real)
		real = (pthread_create_fn)agent_dlsym_next("pthread_create");
	if (!real)
		return ENOSYS;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = real(th, NULL, internal_start, &tr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		while (!atomic_load_explicit(&tr.started, memory_order_acquire))
			sched_yield();
	return rc;
}
