/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_AGENT_H
#define PLATEAU_AGENT_CORE_AGENT_H

/*
 * The in-process agent's internal contract (libplateau.so).  Everything here
 * runs inside arbitrary host programs, so the rules are strict:
 *
 *  - "hot" functions (marked HOT below) run in signal handlers, malloc hooks
 *    and lock hooks: they never allocate, never lock, never use stdio, and
 *    save errno; when a buffer is full the sample is dropped and counted;
 *  - "cold" code (the collector thread, start/stop, dlopen refresh) may
 *    allocate: every thread the agent owns is marked internal, and the hooks
 *    let an internal thread's calls through untouched (agent_thread_internal);
 *  - all thread-local state is initial-exec TLS (AGENT_TLS), so touching it
 *    never calls the TLS allocator.
 *
 * Modules, by folder (doc/agent.md, "Where the code lives"):
 *  - hooks/: cpu.c (signal handler, CPU timers), wall.c (wall sampler),
 *    alloc.c, lock.c, eintr.c (sleep/poll retried after our signals): HOT,
 *    they include only core's hot-safe headers and stack/unwind.h;
 *  - core/: this contract, thread.c (thread registry, pthread_create),
 *    ring.c (per-thread sample rings), live.c, sampling.c, config.c;
 *  - stack/: unwind.c (.eh_frame parsing in unwind_cfi.c), symtab.c (ELF
 *    reading in symtab_elf.c and symtab_code.c);
 *  - export/: collect.c (the collector thread: drains rings, aggregates,
 *    exports), aggregate.c, export.c, pprof.c, push.c;
 *  - sdk/: agent.c (start/stop, fork, config), labels.c, region.c.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "agent/core/config.h"
#include "agent/core/sampling.h"

#define AGENT_TLS	 __thread __attribute__((tls_model("initial-exec")))
#define AGENT_API	 __attribute__((visibility("default")))
#define AGENT_MAX_DEPTH	 128 /* frames kept per sample */
#define AGENT_MAX_LABELS 8   /* label ids carried per sample */

/* What a sample measures; each kind fills its own value columns. */
enum agent_kind {
	AGENT_KIND_CPU,	  /* v0 = cpu ns (weight), v1 = 1 sample */
	AGENT_KIND_WALL,  /* v0 = wall ns */
	AGENT_KIND_ALLOC, /* v0 = objects (weight, 1e-6 fixed point), v1 = bytes (weighted) */
	AGENT_KIND_LOCK, /* v0 = contentions (weight, 1e-6 fixed point), v1 = delay ns (weighted) */
	AGENT_KIND_COUNT,
	AGENT_KIND_REQUEST_END = 0x100, /* marker: v0 = request id, v1 = 1 when slow */
	AGENT_KIND_WALL_REPEAT, /* v0 = wall ns blocked in the previous wall sample's stack */
};

/* Fixed-point scale of fractional weights (objects, contentions). */
#define AGENT_WEIGHT_ONE 1000000

/*
 * One sample as it crosses a ring: the header, then NFRAMES return
 * addresses, leaf first (pcs[0] is the interrupted or calling pc).
 */
struct agent_sample {
	uint16_t kind;	  /* enum agent_kind */
	uint16_t nframes; /* <= AGENT_MAX_DEPTH */
	uint8_t nlabels;  /* <= AGENT_MAX_LABELS */
	uint8_t state;	  /* enum agent_thread_state, for wall samples */
	uint16_t flags;	  /* AGENT_SAMPLE_* */
	uint32_t tid;
	uint32_t request;		   /* plateau_request_begin id, 0 outside requests */
	uint32_t labels[AGENT_MAX_LABELS]; /* label ids (labels.c), innermost last */
	int64_t v[2];
	uintptr_t pcs[];
};

enum agent_sample_flags {
	AGENT_SAMPLE_TRUNCATED = 1 << 0, /* the unwinder stopped early */
};

enum agent_thread_state {
	AGENT_STATE_RUNNING, /* on CPU or runnable */
	AGENT_STATE_BLOCKED, /* in a system call, or has not run since its last sample */
};

/* Counters of what was dropped or went wrong; exported in the profile's comments. */
struct agent_counters {
	atomic_uint_fast64_t samples;	       /* samples read from the rings */
	atomic_uint_fast64_t dropped_full;     /* ring full */
	atomic_uint_fast64_t dropped_busy;     /* nested sample on a thread already writing */
	atomic_uint_fast64_t dropped_nothread; /* event on a thread without a slot */
	atomic_uint_fast64_t live_full;	       /* in-use table full */
	atomic_uint_fast64_t label_overflow;   /* label values sent to _other */
	atomic_uint_fast64_t profiles_written;
	atomic_uint_fast64_t profiles_pushed;
	atomic_uint_fast64_t profiles_dropped; /* push queue full or retries exhausted */
	atomic_uint_fast64_t push_errors;
	atomic_uint_fast64_t wall_reads;   /* threads' CPU clocks read by the wall sampler */
	atomic_uint_fast64_t wall_signals; /* wall samples asked for */
};

/* ---- agent.c ---- */

struct agent {
	atomic_bool running;	       /* sampling is on; beside cfg's hot fields (config.h) */
	volatile bool restart_pending; /* see agent_restart_check() */
	struct agent_config cfg;
	uint64_t start_ns;    /* CLOCK_REALTIME of the current profile's start */
	uint64_t interval_ns; /* 1e9 / hz */
	_Atomic int
		fatal_signal; /* SIGINT/SIGTERM/SIGHUP caught: write the profile, then die of it */
	struct agent_counters counters;
};

extern struct agent agent_state;

/*
 * A fork child of a profiled process restarts sampling lazily, at its first
 * allocation or thread creation after fork() returned: not in the atfork
 * handler, where a replaced allocator (ASan's, say) may still hold the locks
 * it took for the fork.  Cheap enough for every hook to test.
 */
void agent_restart_slow(void);

static inline void agent_restart_check(void)
{
	if (__builtin_expect(agent_state.restart_pending, 0))
		agent_restart_slow();
}

/* Monotonic and realtime clocks in ns (vDSO, async-signal-safe). */
uint64_t agent_now_mono(void);
uint64_t agent_now_real(void);

/* One line on stderr, "plateau: ..." (write(2), no stdio; cold and hot-safe). */
void agent_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- thread.c ---- */

/*
 * A thread the agent knows.  Slots live in one table for the life of the
 * process and are reused after the collector has drained an exited
 * thread's ring.  Each slot starts a cache line, and what other threads
 * write (the wall sampler, on every tick) sits on a line of its own: the
 * owner writes its sampler state on every allocation, and a line shared
 * with another thread's slot would bounce between their cores.
 */
struct __attribute__((aligned(64))) agent_thread {
	/* the first cache line: everything the malloc and lock hooks read */
	atomic_int status; /* SLOT_FREE / SLOT_LIVE / SLOT_EXITED */
	pid_t tid;
	volatile sig_atomic_t busy;    /* a hot path of this thread is writing a sample */
	volatile sig_atomic_t in_hook; /* inside a malloc/lock hook: do not recurse */
	bool internal;		       /* an agent thread: hooks pass through */
	uint32_t gen;		       /* incremented each time the slot is claimed */
	struct alloc_sampler alloc;    /* alloc.c */
	uint64_t alloc_bytes;	       /* bytes this thread ever allocated (regions read it) */
	uint64_t lock_rng;	       /* lock.c */
	uintptr_t stack_lo, stack_hi;  /* the thread's stack, for the unwinder */
	struct agent_ring *ring;
	/* cpu.c */
	int cpu_timer; /* kernel timer id + 1; 0 = none */
	/* wall.c: the thread's CPU time after its last wall sample; while it does
	   not move, the sampler adds to wall_repeat_ns instead of signalling */
	uint64_t wall_cputime;
	bool wall_seen;
	bool wall_blocked; /* the last wall sample caught a system call */
	/* that call: stack pointer, pc after the syscall instruction, first argument */
	uintptr_t wall_sp, wall_pc, wall_arg0;
	_Atomic unsigned wall_handled;	  /* wall_sent when the handler last sampled */
	volatile sig_atomic_t eintr_ours; /* our handler ran: an EINTR may be ours */
	unsigned eintr_snap;		  /* wall_sent when the current blocking call began */
	/* labels.c: the thread's current label ids, innermost last; nlabels written last */
	uint32_t labels[AGENT_MAX_LABELS];
	volatile sig_atomic_t nlabels;
	int labels_hidden; /* pushes that did not fit, still to be popped */
	/* labels.c: plateau_request_begin/end; the collector holds this request's samples */
	uint32_t request;
	uint32_t request_seq;
	uint64_t request_start;
	char name[16]; /* the thread's name, read by the collector */
	/* written by the wall sampler (and the collector) */
	_Alignas(64) _Atomic uint64_t wall_repeat_ns;
	_Atomic uint64_t wall_looked_ns; /* the sampler's last look (monotonic); 0: none yet */
	_Atomic uint8_t wall_gap;	 /* rounds between looks; 0: look at the next round */
	uint32_t wall_next;		 /* the round of the next look (the sampler's) */
	_Atomic unsigned wall_sent;	 /* wall signals sent to this thread */
	uint64_t wall_base;		 /* its CPU time at a look that found it blocked */
	bool wall_base_ok;		 /* wall_base is set: an equal clock means no move */
	uint32_t wall_sent_round;	 /* the round of the last signal */
	/* eintr.c: when a wrapped blocking call last began or ended (monotonic);
	   on the sampler's line, which it reads every round anyway */
	_Atomic uint64_t wall_mark_ns;
	uint64_t wall_mark_seen; /* wall_mark_ns at the sampler's last look */
};

_Static_assert(offsetof(struct agent_thread, lock_rng) + sizeof(uint64_t) <= 64,
	       "the hooks' fields share the slot's first cache line");

/* The calling thread's slot, NULL when it has none (hot: a TLS read). */
struct agent_thread *agent_thread_self(void);

/* Whether hooks on this thread must pass straight through (hot). */
bool agent_thread_internal(void);

/* Register the calling thread (cold; called by pthread_create's trampoline and at start). */
struct agent_thread *agent_thread_register(void);

/*
 * The calling thread's slot, registering it now if it has none (cold: once
 * per thread).  For threads started without the agent's pthread_create:
 * jemalloc finds glibc's with dlsym(RTLD_NEXT), so its background threads
 * skip the agent's.  Allocates nothing and takes no lock (the stack bounds
 * stay unknown, as an adopted thread's), so a malloc hook may call it.  NULL when the
 * thread has exited or no slot is free, counted as dropped_nothread.
 */
struct agent_thread *agent_thread_register_late(void);

/* Mark the calling thread internal: its allocations and locks are not sampled. */
void agent_thread_set_internal(void);

/* ---- ring.c ---- */

/*
 * Write a sample on the calling thread (HOT).  Takes the thread's labels,
 * tid and busy flag from T.  Returns false when the sample was dropped (and
 * counted).  PCS are leaf first.
 */
bool agent_emit(struct agent_thread *t, enum agent_kind kind, int64_t v0, int64_t v1,
		const uintptr_t *pcs, size_t nframes, unsigned flags, unsigned state);

#endif
