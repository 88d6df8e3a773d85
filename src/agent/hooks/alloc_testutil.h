/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_ALLOC_TESTUTIL_H
#define PLATEAU_AGENT_HOOKS_ALLOC_TESTUTIL_H

/*
 * For the tests of the allocation hooks (alloc_test.c: each hook, its
 * semantics and its bootstrap; alloc_inuse_test.c: estimates and the in-use
 * table).  This header includes alloc.c, so the test program itself
 * defines malloc & co. and the C++ operators, as libplateau.so does when
 * preloaded: every allocation of the process goes through the hooks to the
 * real allocator (libc's, or the sanitizer's).  Build with
 * -fno-omit-frame-pointer (the unwinder double walks frame pointers) and
 * link libstdc++ (the real operator new is libstdc++'s).
 *
 * The agent's thread registry, ring and unwinder are test doubles below;
 * emitted samples land in an array.  Header-only, with definitions: include
 * it once, from the test program's only file.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/hooks/alloc.c"

#ifdef __clang__
#define SITE __attribute__((noinline, optnone))
#else
#define SITE __attribute__((noipa))
#endif
#define BARRIER()    __asm__ volatile("" ::: "memory")
#define KIB	     ((size_t)1024)
#define HUGE_SIZE    (SIZE_MAX / 4)
#define SITE_BYTES   256  /* a site function is shorter than this */
#define CALLER_BYTES 4096 /* and so is the function that calls it */

/* libstdc++'s std::nothrow (referencing it also makes us need libstdc++). */
extern const char _ZSt7nothrow;

AGENT_API const char *__asan_default_options(void);
AGENT_API const char *__asan_default_options(void)
{
	/* The tests make allocations fail on purpose. */
	return "allocator_may_return_null=1";
}

/* ---- test doubles: thread registry ---- */

#define SLOTS 32

struct agent agent_state;

void agent_restart_slow(void)
{
}
static struct agent_thread slots[SLOTS];
static atomic_int nslots;
static AGENT_TLS struct agent_thread *self;
static AGENT_TLS bool self_internal;
static struct agent_thread *main_t;

NOASAN struct agent_thread *agent_thread_self(void)
{
	return self;
}

NOASAN bool agent_thread_internal(void)
{
	return self_internal || (self && self->in_hook);
}

static struct agent_thread *attach_bounds(uint64_t seed, bool bounds);

/* Give the calling thread a slot whose sampler is seeded with SEED. */
static struct agent_thread *attach(uint64_t seed)
{
	return attach_bounds(seed, true);
}

/* The same, its stack bounds read only when BOUNDS (pthread_getattr_np allocates). */
static struct agent_thread *attach_bounds(uint64_t seed, bool bounds)
{
	int i = atomic_fetch_add(&nslots, 1);
	struct agent_thread *t;
	pthread_attr_t attr;
	size_t size;
	void *addr;

	if (i >= SLOTS)
		return NULL;
	t = &slots[i];
	memset(t, 0, sizeof(*t));
	t->tid = gettid();
	if (bounds && pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	alloc_sampler_init(&t->alloc, agent_state.cfg.alloc_rate, seed);
	self = t;
	return t;
}

static bool late_slots; /* agent_thread_register_late finds a free slot */

/* A thread without a slot: one now when LATE_SLOTS, else counted (a full table). */
NOASAN struct agent_thread *agent_thread_register_late(void)
{
	if (late_slots)
		return attach_bounds(7, false);
	atomic_fetch_add(&agent_state.counters.dropped_nothread, 1);
	return NULL;
}

/* ---- test doubles: ring and unwinder ---- */

#define REC_MAX 4096
#define REC_PCS 4

struct rec {
	enum agent_kind kind;
	int64_t v0, v1;
	size_t nframes;
	unsigned flags;
	pid_t tid;
	uintptr_t pcs[REC_PCS];
};

static struct rec recs[REC_MAX];
static atomic_size_t nemits;
static _Atomic int64_t sum_v0, sum_v1;

NOASAN bool agent_emit(struct agent_thread *t, enum agent_kind kind, int64_t v0, int64_t v1,
		       const uintptr_t *pcs, size_t nframes, unsigned flags, unsigned state)
{
	size_t i = atomic_fetch_add(&nemits, 1), k;

	(void)state;
	atomic_fetch_add(&sum_v0, v0);
	atomic_fetch_add(&sum_v1, v1);
	if (i >= REC_MAX)
		return true;
	recs[i] = (struct rec){.kind = kind,
			       .v0 = v0,
			       .v1 = v1,
			       .nframes = nframes,
			       .flags = flags,
			       .tid = t->tid};
	for (k = 0; k < nframes && k < REC_PCS; k++)
		recs[i].pcs[k] = pcs[k];
	return true;
}

/* Frame-pointer walk within [lo, hi): the test is built with frame pointers. */
NOASAN size_t agent_unwind_here(uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max,
				unsigned skip, bool *truncated)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	size_t n = 0;
	unsigned k = 0;

	*truncated = false;
	while ((uintptr_t)fp >= lo && (uintptr_t)fp + 16 <= hi && !((uintptr_t)fp & 7)) {
		const uintptr_t *next = (const uintptr_t *)fp[0];

		if (fp[1] == 0)
			break;
		if (n == max) {
			*truncated = true;
			break;
		}
		if (k++ >= skip)
			pcs[n++] = fp[1] - 1;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* ---- sampling control ---- */

static void rec_reset(void)
{
	atomic_store(&nemits, 0);
	atomic_store(&sum_v0, 0);
	atomic_store(&sum_v1, 0);
	memset(recs, 0, sizeof(recs));
}

/* Sample the main thread's allocations with mean MEAN and a fixed SEED. */
static void sampling_start(uint64_t mean, uint64_t seed)
{
	agent_state.cfg.modes = AGENT_MODE_ALLOC;
	agent_state.cfg.alloc_rate = mean;
	alloc_sampler_init(&main_t->alloc, mean, seed);
	rec_reset();
	atomic_store(&agent_state.running, true);
}

static void sampling_stop(void)
{
	atomic_store(&agent_state.running, false);
}

/* ---- call sites: each hook called through a pointer the compiler cannot see through ---- */

static void *(*volatile v_malloc)(size_t) = malloc;
static void *(*volatile v_calloc)(size_t, size_t) = calloc;
static void *(*volatile v_realloc)(void *, size_t) = realloc;
static void *(*volatile v_reallocarray)(void *, size_t, size_t) = reallocarray;
static void (*volatile v_free)(void *) = free;
static int (*volatile v_posix_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile v_aligned_alloc)(size_t, size_t) = aligned_alloc;
static void *(*volatile v_memalign)(size_t, size_t) = memalign;
static void *(*volatile v_valloc)(size_t) = valloc;
static void *(*volatile v_pvalloc)(size_t) = pvalloc;
static void *(*volatile v_new)(size_t) = _Znwm;
static void *(*volatile v_new_array)(size_t) = _Znam;
static void *(*volatile v_new_nt)(size_t, const void *) = _ZnwmRKSt9nothrow_t;
static void *(*volatile v_new_array_nt)(size_t, const void *) = _ZnamRKSt9nothrow_t;
static void *(*volatile v_new_al)(size_t, size_t) = _ZnwmSt11align_val_t;
static void *(*volatile v_new_array_al)(size_t, size_t) = _ZnamSt11align_val_t;
static void *(*volatile v_new_al_nt)(size_t, size_t,
				     const void *) = _ZnwmSt11align_val_tRKSt9nothrow_t;
static void *(*volatile v_new_array_al_nt)(size_t, size_t,
					   const void *) = _ZnamSt11align_val_tRKSt9nothrow_t;

/* A call site of its own for each hook: SITE_FN(name, expression using n). */
#define SITE_FN(name, call)              \
	SITE static void *name(size_t n) \
	{                                \
		void *p = (call);        \
		BARRIER();               \
		return p;                \
	}

SITE_FN(site_malloc, v_malloc(n))
SITE_FN(site_calloc, v_calloc(n, 3))
SITE_FN(site_realloc_null, v_realloc(NULL, n))
SITE_FN(site_reallocarray, v_reallocarray(NULL, n, 2))
SITE_FN(site_aligned_alloc, v_aligned_alloc(64, n * 64)) /* C11 (and ASan) want a multiple */
SITE_FN(site_memalign, v_memalign(128, n))
SITE_FN(site_valloc, v_valloc(n))
SITE_FN(site_pvalloc, v_pvalloc(n))
SITE_FN(site_new, v_new(n))
SITE_FN(site_new_array, v_new_array(n))
SITE_FN(site_new_nt, v_new_nt(n, &_ZSt7nothrow))
SITE_FN(site_new_array_nt, v_new_array_nt(n, &_ZSt7nothrow))
SITE_FN(site_new_al, v_new_al(n, 64))
SITE_FN(site_new_array_al, v_new_array_al(n, 64))
SITE_FN(site_new_al_nt, v_new_al_nt(n, 64, &_ZSt7nothrow))
SITE_FN(site_new_array_al_nt, v_new_array_al_nt(n, 64, &_ZSt7nothrow))

/* This one does not fit SITE_FN's shape (nor site_realloc, alloc_inuse_test.c's). */
SITE static void *site_posix_memalign(size_t n)
{
	void *p = NULL;

	if (v_posix_memalign(&p, 64, n) != 0)
		p = NULL;
	BARRIER();
	return p;
}

/* REL_FN(name, statement using p and n): the matching release. */
#define REL_FN(name, call)                  \
	static void name(void *p, size_t n) \
	{                                   \
		(void)n;                    \
		call;                       \
	}

REL_FN(rel_free, v_free(p))
REL_FN(rel_delete, _ZdlPv(p))
REL_FN(rel_delete_sized, _ZdlPvm(p, n))
REL_FN(rel_delete_array, _ZdaPv(p))
REL_FN(rel_delete_array_sized, _ZdaPvm(p, n))
REL_FN(rel_delete_nt, _ZdlPvRKSt9nothrow_t(p, &_ZSt7nothrow))
REL_FN(rel_delete_array_nt, _ZdaPvRKSt9nothrow_t(p, &_ZSt7nothrow))
REL_FN(rel_delete_al, _ZdlPvSt11align_val_t(p, 64))
REL_FN(rel_delete_al_sized, _ZdlPvmSt11align_val_t(p, n, 64))
REL_FN(rel_delete_array_al, _ZdaPvSt11align_val_t(p, 64))
REL_FN(rel_delete_array_al_sized, _ZdaPvmSt11align_val_t(p, n, 64))
REL_FN(rel_delete_al_nt, _ZdlPvSt11align_val_tRKSt9nothrow_t(p, 64, &_ZSt7nothrow))
REL_FN(rel_delete_array_al_nt, _ZdaPvSt11align_val_tRKSt9nothrow_t(p, 64, &_ZSt7nothrow))

struct site {
	const char *name;
	void *(*fn)(size_t n);
	size_t mult;  /* bytes accounted per unit of n */
	size_t align; /* alignment the block must have */
	void (*release)(void *p, size_t n);
};

static const struct site sites[] = {
	{"malloc", site_malloc, 1, 16, rel_free},
	{"calloc", site_calloc, 3, 16, rel_free},
	{"realloc(NULL)", site_realloc_null, 1, 16, rel_free},
	{"reallocarray", site_reallocarray, 2, 16, rel_free},
	{"posix_memalign", site_posix_memalign, 1, 64, rel_free},
	{"aligned_alloc", site_aligned_alloc, 64, 64, rel_free},
	{"memalign", site_memalign, 1, 128, rel_free},
	{"valloc", site_valloc, 1, 4096, rel_free},
	{"pvalloc", site_pvalloc, 1, 4096, rel_free},
	{"new", site_new, 1, 16, rel_delete},
	{"new/sized delete", site_new, 1, 16, rel_delete_sized},
	{"new[]", site_new_array, 1, 16, rel_delete_array},
	{"new[]/sized delete[]", site_new_array, 1, 16, rel_delete_array_sized},
	{"new nothrow", site_new_nt, 1, 16, rel_delete_nt},
	{"new[] nothrow", site_new_array_nt, 1, 16, rel_delete_array_nt},
	{"new aligned", site_new_al, 1, 64, rel_delete_al},
	{"new aligned/sized delete", site_new_al, 1, 64, rel_delete_al_sized},
	{"new[] aligned", site_new_array_al, 1, 64, rel_delete_array_al},
	{"new[] aligned/sized delete[]", site_new_array_al, 1, 64, rel_delete_array_al_sized},
	{"new aligned nothrow", site_new_al_nt, 1, 64, rel_delete_al_nt},
	{"new[] aligned nothrow", site_new_array_al_nt, 1, 64, rel_delete_array_al_nt},
};

#define NSITES (sizeof(sites) / sizeof(sites[0]))

static bool in_fn(uintptr_t pc, const void *fn, size_t bytes)
{
	return pc - (uintptr_t)fn < bytes;
}

/* ---- live table walks ---- */

struct walk {
	size_t n;
	struct agent_live_entry e[2048];
};

static void collect(const struct agent_live_entry *e, void *arg)
{
	struct walk *w = arg;

	if (w->n < sizeof(w->e) / sizeof(w->e[0]))
		w->e[w->n] = *e;
	w->n++;
}

static struct walk *walk_now(void)
{
	struct walk *w;

	main_t->in_hook++; /* not a sample of its own */
	w = v_calloc(1, sizeof(*w));
	main_t->in_hook--;
	assert_non_null(w);
	agent_live_foreach(collect, w);
	return w;
}

/* ---- the group: the main thread's slot and the live table ---- */

static int group_setup(void **state)
{
	(void)state;
	main_t = attach(1);
	return main_t && agent_live_init(AGENT_LIVE_CAPACITY_DEFAULT) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	agent_live_fini();
	return 0;
}

#endif
