/* SPDX-License-Identifier: MIT */
/*
 * Tests of the allocation hooks (alloc.c).  This file includes alloc.c, so
 * the test program itself defines malloc & co. and the C++ operators, as
 * libplateau.so does when preloaded: every allocation of the process goes
 * through the hooks to the real allocator (libc's, or the sanitizer's).
 * Build with -fno-omit-frame-pointer (the unwinder double walks frame
 * pointers) and link libstdc++ (the real operator new is libstdc++'s).
 *
 * The agent's thread registry, ring and unwinder are test doubles below;
 * emitted samples land in an array.
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
static bool ready_before_init; /* the hooks resolved themselves before main */

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

/* These two do not fit SITE_FN's shape. */
SITE static void *site_posix_memalign(size_t n)
{
	void *p = NULL;

	if (v_posix_memalign(&p, 64, n) != 0)
		p = NULL;
	BARRIER();
	return p;
}

SITE static void *site_realloc(void *old, size_t n)
{
	void *p = v_realloc(old, n);

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

/* ---- tests ---- */

/* One call of site S with N, sampled at mean 1, checked end to end. */
SITE static void check_site(const struct site *s, size_t n)
{
	size_t bytes = n * s->mult;
	uint64_t before = main_t->alloc_bytes;
	struct walk *w;
	void *p;

	sampling_start(1, 7);
	p = s->fn(n);
	sampling_stop();
	if (!p)
		fail_msg("%s: NULL", s->name);
	if ((uintptr_t)p % s->align)
		fail_msg("%s: %p not aligned to %zu", s->name, p, s->align);
	memset(p, 0x5a, bytes);
	/* Counted once: one sample and BYTES added to the thread's total. */
	if (atomic_load(&nemits) != 1 || main_t->alloc_bytes - before != bytes)
		fail_msg("%s: %zu samples, %llu bytes", s->name, atomic_load(&nemits),
			 (unsigned long long)(main_t->alloc_bytes - before));
	assert_int_equal(recs[0].kind, AGENT_KIND_ALLOC);
	assert_int_equal(recs[0].v0, AGENT_WEIGHT_ONE);
	assert_int_equal(recs[0].v1, bytes);
	assert_int_equal(recs[0].tid, main_t->tid);
	assert_true(recs[0].nframes >= 2);
	if (!in_fn(recs[0].pcs[0], (const void *)s->fn, SITE_BYTES) ||
	    !in_fn(recs[0].pcs[1], (const void *)check_site, CALLER_BYTES))
		fail_msg("%s: leaf %#lx is not in its site %p", s->name,
			 (unsigned long)recs[0].pcs[0], (const void *)s->fn);
	assert_int_equal(recs[0].flags, 0);
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_ptr_equal((void *)w->e[0].ptr, p);
	assert_int_equal(w->e[0].size, bytes);
	assert_true(w->e[0].weight == 1.0);
	assert_int_equal(w->e[0].nframes, recs[0].nframes);
	assert_int_equal(w->e[0].pcs[0], recs[0].pcs[0]);
	v_free(w);
	s->release(p, n);
	assert_int_equal(agent_live_count(), 0);
	assert_int_equal(atomic_load(&nemits), 1);
}

static void test_every_hook_sampled(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NSITES; i++) {
		check_site(&sites[i], 100);
		check_site(&sites[i], 1);
	}
	/* malloc(0) is an allocation too (sampled as 1 byte, 0 bytes reported). */
	check_site(&sites[0], 0);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
}

/* With sampling off, every hook still allocates right and counts alloc_bytes. */
static void test_every_hook_unsampled(void **state)
{
	size_t i;

	(void)state;
	rec_reset();
	for (i = 0; i < NSITES; i++) {
		uint64_t before = main_t->alloc_bytes;
		void *p = sites[i].fn(1000);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % sites[i].align, 0);
		memset(p, 1, 1000 * sites[i].mult);
		assert_int_equal(main_t->alloc_bytes - before, 1000 * sites[i].mult);
		sites[i].release(p, 1000);
	}
	assert_int_equal(atomic_load(&nemits), 0);
	assert_int_equal(agent_live_count(), 0);
}

/* malloc, calloc, realloc, reallocarray: contents, realloc(p, 0), overflow. */
static void check_c_semantics(void)
{
	unsigned char *p, *q;
	size_t i;

	p = v_malloc(1000);
	assert_non_null(p);
	for (i = 0; i < 1000; i++)
		p[i] = (unsigned char)i;
	q = v_realloc(p, 100000);
	assert_non_null(q);
	for (i = 0; i < 1000; i++)
		assert_int_equal(q[i], (unsigned char)i);
	p = v_realloc(q, 10);
	assert_non_null(p);
	for (i = 0; i < 10; i++)
		assert_int_equal(p[i], (unsigned char)i);
	assert_null(v_realloc(p, 0)); /* glibc frees */
	p = v_calloc(1000, 7);
	assert_non_null(p);
	for (i = 0; i < 7000; i++)
		assert_int_equal(p[i], 0);
	v_free(p);
	errno = 0;
	assert_null(v_calloc(HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(v_malloc(HUGE_SIZE));
	assert_int_equal(errno, ENOMEM);
	p = v_reallocarray(NULL, 10, 10);
	assert_non_null(p);
	p[99] = 7;
	errno = 0;
	assert_null(v_reallocarray(p, HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(p[99], 7); /* still allocated */
	v_free(p);
	v_free(NULL);
}

/* posix_memalign, aligned_alloc, memalign, valloc, pvalloc: alignment and errors. */
static void check_aligned_semantics(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), al;
	void *a = NULL;

	for (al = sizeof(void *); al <= 8192; al *= 2) {
		assert_int_equal(v_posix_memalign(&a, al, 33), 0);
		assert_int_equal((uintptr_t)a % al, 0);
		v_free(a);
	}
	assert_int_equal(v_posix_memalign(&a, 64, HUGE_SIZE), ENOMEM);
	/* A bad alignment comes back as the result; errno is left alone. */
	errno = 4242;
	assert_int_equal(v_posix_memalign(&a, 3, 16), EINVAL);
	assert_int_equal(v_posix_memalign(&a, 4, 16), EINVAL);
	assert_int_equal(v_posix_memalign(&a, 24, 16), EINVAL);
	assert_int_equal(errno, 4242);
	a = v_aligned_alloc(256, 512);
	assert_true(a && (uintptr_t)a % 256 == 0);
	v_free(a);
	a = v_memalign(4096, 10);
	assert_true(a && (uintptr_t)a % 4096 == 0);
	v_free(a);
	a = v_valloc(10);
	assert_true(a && (uintptr_t)a % page == 0);
	v_free(a);
	a = v_pvalloc(10);
	assert_true(a && (uintptr_t)a % page == 0);
	assert_true(malloc_usable_size(a) >= page);
	memset(a, 1, page);
	v_free(a);
}

static void check_semantics(void)
{
	check_c_semantics();
	check_aligned_semantics();
	_ZdlPv(NULL);
	_ZdaPv(NULL);
	/* A failing nothrow new returns NULL: the real operator's exception stays inside it. */
	assert_null(v_new_nt(HUGE_SIZE, &_ZSt7nothrow));
	assert_null(v_new_array_al_nt(HUGE_SIZE, 64, &_ZSt7nothrow));
	assert_int_equal(main_t->in_hook, 0);
}

static void test_semantics(void **state)
{
	(void)state;
	check_semantics();
	sampling_start(1, 3);
	check_semantics();
	sampling_stop();
	assert_true(atomic_load(&nemits) > 10);
	/* Failed allocations are not samples; everything was freed. */
	assert_int_equal(agent_live_count(), 0);
}

/* errno is the real function's, sampled or not. */
static void test_errno_kept(void **state)
{
	void *p;

	(void)state;
	sampling_start(1, 5);
	errno = EXDEV;
	p = site_malloc(10);
	assert_int_equal(errno, EXDEV);
	v_free(p);
	assert_int_equal(errno, EXDEV);
	p = site_new(10);
	assert_int_equal(errno, EXDEV);
	_ZdlPv(p);
	assert_int_equal(errno, EXDEV);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 2);
}

/* No slot, an internal thread, a nested hook: pass through, count only what is due. */
static void *noslot_main(void *arg)
{
	uint64_t *dropped = arg;
	uint64_t before = atomic_load(&agent_state.counters.dropped_nothread);
	void *p = site_malloc(10), *q = site_new(10);

	v_free(p);
	_ZdlPv(q);
	dropped[0] = atomic_load(&agent_state.counters.dropped_nothread) - before;
	self_internal = true;
	before = atomic_load(&agent_state.counters.dropped_nothread);
	p = site_malloc(10);
	v_free(p);
	dropped[1] = atomic_load(&agent_state.counters.dropped_nothread) - before;
	return NULL;
}

/* pthread_create allocates on the calling thread: keep that out of the counts. */
static void spawn_noslot(uint64_t *dropped)
{
	pthread_t th;

	main_t->in_hook++;
	assert_int_equal(pthread_create(&th, NULL, noslot_main, dropped), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	main_t->in_hook--;
}

static void test_pass_through(void **state)
{
	uint64_t dropped[2] = {0, 0}, before;
	void *p;

	(void)state;
	sampling_start(1, 1);
	spawn_noslot(dropped);
	assert_int_equal(dropped[0], 2); /* the new counted once, through its malloc */
	assert_int_equal(dropped[1], 0);
	before = main_t->alloc_bytes;
	main_t->in_hook = 1;
	p = site_malloc(10);
	v_free(p);
	main_t->in_hook = 0;
	main_t->internal = true;
	p = site_new(10);
	_ZdlPv(p);
	main_t->internal = false;
	assert_int_equal(main_t->alloc_bytes, before);
	/* Mode off: nothing sampled, nothing dropped, bytes still counted. */
	agent_state.cfg.modes = AGENT_MODE_CPU;
	before = atomic_load(&agent_state.counters.dropped_nothread);
	spawn_noslot(dropped);
	assert_int_equal(dropped[0], 0);
	assert_int_equal(atomic_load(&agent_state.counters.dropped_nothread), before);
	before = main_t->alloc_bytes;
	p = site_malloc(10);
	v_free(p);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 0);
	assert_int_equal(main_t->alloc_bytes, before + 10);
}

/* A thread started behind the agent's back gets a slot at its first allocation. */
static void *late_main(void *arg)
{
	struct agent_thread **got = arg;
	void *p = site_malloc(100);

	*got = self;
	v_free(p);
	return NULL;
}

static void test_late_register(void **state)
{
	struct agent_thread *got = NULL;
	uint64_t before = atomic_load(&agent_state.counters.dropped_nothread);
	pthread_t th;

	(void)state;
	sampling_start(1, 1);
	late_slots = true;
	main_t->in_hook++;
	assert_int_equal(pthread_create(&th, NULL, late_main, &got), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	main_t->in_hook--;
	late_slots = false;
	sampling_stop();
	assert_non_null(got);
	/* Its 100 bytes, and what a sanitizer's runtime allocates on it. */
	assert_true(got->alloc_bytes >= 100);
	assert_int_equal(atomic_load(&agent_state.counters.dropped_nothread), before);
}

/* At a 512 KiB mean the estimate of the bytes allocated is unbiased. */
static void test_estimate_512k(void **state)
{
	const uint64_t mean = 512 * KIB;
	double truth_bytes = 0, var_bytes = 0, var_count = 0, est_count, est_bytes;
	double exp_samples = 0, var_samples = 0;
	const size_t n = 400000;
	size_t i;

	(void)state;
	sampling_start(mean, 42);
	for (i = 0; i < n; i++) {
		size_t size = 1 + (i * 7919) % (64 * KIB);
		double p = 1.0 / alloc_sample_scale(size, mean);

		v_free(site_malloc(size));
		truth_bytes += (double)size;
		var_bytes += (double)size * (double)size * (1.0 - p) / p;
		var_count += (1.0 - p) / p;
		exp_samples += p;
		var_samples += p * (1.0 - p);
	}
	sampling_stop();
	est_bytes = (double)atomic_load(&sum_v1);
	est_count = (double)atomic_load(&sum_v0) / AGENT_WEIGHT_ONE;
	if (fabs(est_bytes - truth_bytes) > 4 * sqrt(var_bytes))
		fail_msg("bytes: estimated %.6g, true %.6g, sigma %.3g", est_bytes, truth_bytes,
			 sqrt(var_bytes));
	if (fabs(est_count - (double)n) > 4 * sqrt(var_count))
		fail_msg("count: estimated %.6g, true %zu, sigma %.3g", est_count, n,
			 sqrt(var_count));
	if (fabs((double)atomic_load(&nemits) - exp_samples) > 4 * sqrt(var_samples))
		fail_msg("samples: %zu, expected %.6g", atomic_load(&nemits), exp_samples);
	assert_int_equal(agent_live_count(), 0);
}

/* In use: of N sampled blocks, free half; the table holds exactly the other half. */
static void test_inuse_half(void **state)
{
	enum { N = 1000 };
	static void *p[N];
	struct walk *w;
	size_t i, k;

	(void)state;
	sampling_start(1, 9);
	for (i = 0; i < N; i++)
		p[i] = site_malloc(i + 1);
	for (i = 0; i < N; i += 2)
		v_free(p[i]);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), N);
	assert_int_equal(agent_live_count(), N / 2);
	w = walk_now();
	assert_int_equal(w->n, N / 2);
	for (k = 0; k < w->n; k++) {
		for (i = 1; i < N; i += 2)
			if (w->e[k].ptr == (uintptr_t)p[i])
				break;
		assert_true(i < N);
		assert_int_equal(w->e[k].size, i + 1);
		assert_true(w->e[k].weight == 1.0);
		assert_true(in_fn(w->e[k].pcs[0], (const void *)site_malloc, SITE_BYTES));
	}
	v_free(w);
	for (i = 1; i < N; i += 2)
		v_free(p[i]);
	assert_int_equal(agent_live_count(), 0);
}

/* realloc frees the old entry and records the new block; a failed one keeps the old. */
static void test_realloc_moves(void **state)
{
	struct walk *w;
	char *p, *q;

	(void)state;
	sampling_start(1, 11);
	p = site_malloc(100);
	q = site_realloc(p, 1 << 20);
	assert_non_null(q);
	assert_int_equal(agent_live_count(), 1);
	w = walk_now();
	assert_ptr_equal((void *)w->e[0].ptr, q);
	assert_int_equal(w->e[0].size, 1 << 20);
	assert_true(in_fn(w->e[0].pcs[0], (const void *)site_realloc, SITE_BYTES));
	v_free(w);
	assert_int_equal(atomic_load(&nemits), 2);
	assert_int_equal(recs[1].v1, 1 << 20);
	assert_null(site_realloc(q, 0));
	assert_int_equal(agent_live_count(), 0);
	p = site_malloc(64);
	p[63] = 'x';
	errno = 0;
	assert_null(site_realloc(p, HUGE_SIZE));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(p[63], 'x');
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_ptr_equal((void *)w->e[0].ptr, p);
	assert_int_equal(w->e[0].size, 64);
	assert_true(in_fn(w->e[0].pcs[0], (const void *)site_malloc, SITE_BYTES));
	v_free(w);
	sampling_stop();
	v_free(p);
	assert_int_equal(agent_live_count(), 0);
}

/* The thread's labels travel with the live entry. */
static void test_labels(void **state)
{
	struct walk *w;
	void *p;

	(void)state;
	main_t->labels[0] = 3;
	main_t->labels[1] = 8;
	main_t->nlabels = 2;
	sampling_start(1, 13);
	p = site_malloc(5);
	sampling_stop();
	main_t->nlabels = 0;
	w = walk_now();
	assert_int_equal(w->n, 1);
	assert_int_equal(w->e[0].nlabels, 2);
	assert_int_equal(w->e[0].labels[0], 3);
	assert_int_equal(w->e[0].labels[1], 8);
	v_free(w);
	v_free(p);
}

SITE static void *deep(unsigned depth)
{
	void *p = depth ? deep(depth - 1) : site_malloc(7);

	BARRIER();
	return p;
}

/* Stacks deeper than AGENT_MAX_DEPTH are cut there and flagged. */
static void test_truncated(void **state)
{
	void *p;

	(void)state;
	sampling_start(1, 17);
	p = deep(AGENT_MAX_DEPTH + 50);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), 1);
	assert_int_equal(recs[0].nframes, AGENT_MAX_DEPTH);
	assert_int_equal(recs[0].flags, AGENT_SAMPLE_TRUNCATED);
	assert_true(in_fn(recs[0].pcs[0], (const void *)site_malloc, SITE_BYTES));
	assert_true(in_fn(recs[0].pcs[1], (const void *)deep, SITE_BYTES));
	v_free(p);
}

/* A full table drops and counts; the hooks go on working. */
static void test_table_full(void **state)
{
	enum { N = 100 };
	void *p[N];
	size_t i;

	(void)state;
	agent_live_fini();
	assert_int_equal(agent_live_init(16), 0);
	sampling_start(1, 19);
	for (i = 0; i < N; i++)
		p[i] = site_malloc(32);
	sampling_stop();
	assert_int_equal(atomic_load(&nemits), N);
	assert_int_equal(agent_live_count(), 16);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), N - 16);
	for (i = 0; i < N; i++)
		v_free(p[i]);
	assert_int_equal(agent_live_count(), 0);
	agent_live_fini();
	assert_int_equal(agent_live_init(AGENT_LIVE_CAPACITY_DEFAULT), 0);
	atomic_store(&agent_state.counters.live_full, 0);
}

/* ---- concurrent stress ---- */

#define STRESS_THREADS 4
#define STRESS_OPS     1000000
#define STRESS_HELD    128
#define STRESS_MAX     2048

struct block {
	void *p;
	size_t size;
	bool cxx;
};

struct stresser {
	pthread_t th;
	unsigned id;
	struct block held[STRESS_HELD];
	bool failed;
};

static atomic_bool stress_done;
static atomic_size_t stress_bad_entries;

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

static void stress_op(struct block *b, uint64_t *rng, bool *failed)
{
	uint64_t r = lcg(rng);
	size_t size = 1 + (size_t)(r >> 4) % STRESS_MAX;

	if (!b->p) {
		b->cxx = (r & 3) == 0;
		b->p = b->cxx	      ? site_new(size)
		       : (r & 3) == 1 ? site_calloc(size)
				      : site_malloc(size);
		b->size = (r & 3) == 1 ? 3 * size : size;
		*failed |= !b->p;
		if (b->p)
			memset(b->p, 1, b->size < 16 ? b->size : 16);
	} else if ((r & 4) || b->cxx) {
		if (b->cxx)
			_ZdlPv(b->p);
		else
			v_free(b->p);
		b->p = NULL;
	} else {
		void *q = site_realloc(b->p, size);

		*failed |= !q;
		if (q) {
			b->p = q;
			b->size = size;
		}
	}
}

static void *stress_main(void *arg)
{
	struct stresser *s = arg;
	uint64_t rng = s->id * 7777u + 1;
	size_t i;

	if (!attach(s->id)) {
		s->failed = true;
		return NULL;
	}
	for (i = 0; i < STRESS_OPS; i++)
		stress_op(&s->held[lcg(&rng) % STRESS_HELD], &rng, &s->failed);
	return NULL;
}

static void check_racing_entry(const struct agent_live_entry *e, void *arg)
{
	(void)arg;
	if (e->size == 0 || e->size > 3 * STRESS_MAX || e->weight < 1.0 || e->nframes < 2 ||
	    !(in_fn(e->pcs[0], (const void *)site_malloc, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_calloc, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_new, SITE_BYTES) ||
	      in_fn(e->pcs[0], (const void *)site_realloc, SITE_BYTES)))
		atomic_fetch_add(&stress_bad_entries, 1);
}

static void *stress_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stress_done))
		agent_live_foreach(check_racing_entry, NULL);
	return NULL;
}

static int cmp_block(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct block *)a)->p;
	uintptr_t y = (uintptr_t)((const struct block *)b)->p;

	return x < y ? -1 : x > y;
}

struct stress_check {
	struct block *all;
	size_t n, seen, wrong;
};

static void check_final_entry(const struct agent_live_entry *e, void *arg)
{
	struct stress_check *c = arg;
	struct block key = {.p = (void *)e->ptr};
	const struct block *b = bsearch(&key, c->all, c->n, sizeof(key), cmp_block);

	c->seen++;
	if (!b || b->size != e->size)
		c->wrong++;
}

/* 4 threads allocate, free and reallocate; every entry left is a block still allocated. */
static void test_stress(void **state)
{
	struct stresser *s = v_calloc(STRESS_THREADS, sizeof(*s));
	struct stress_check c = {0};
	pthread_t reader;
	size_t i, k;

	(void)state;
	assert_non_null(s);
	c.all = v_calloc(STRESS_THREADS * STRESS_HELD, sizeof(*c.all));
	assert_non_null(c.all);
	sampling_start(KIB, 23);
	atomic_store(&stress_done, false);
	assert_int_equal(pthread_create(&reader, NULL, stress_reader, NULL), 0);
	for (i = 0; i < STRESS_THREADS; i++) {
		s[i].id = (unsigned)i + 100;
		assert_int_equal(pthread_create(&s[i].th, NULL, stress_main, &s[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_join(s[i].th, NULL), 0);
	atomic_store(&stress_done, true);
	assert_int_equal(pthread_join(reader, NULL), 0);
	sampling_stop();
	for (i = 0; i < STRESS_THREADS; i++) {
		assert_false(s[i].failed);
		for (k = 0; k < STRESS_HELD; k++)
			if (s[i].held[k].p)
				c.all[c.n++] = s[i].held[k];
	}
	qsort(c.all, c.n, sizeof(*c.all), cmp_block);
	agent_live_foreach(check_final_entry, &c);
	assert_int_equal(c.wrong, 0);
	assert_int_equal(c.seen, agent_live_count());
	assert_true(c.seen > c.n / 2); /* most blocks are sampled at this mean */
	assert_int_equal(atomic_load(&stress_bad_entries), 0);
	assert_int_equal(atomic_load(&agent_state.counters.live_full), 0);
	assert_true(atomic_load(&nemits) > STRESS_OPS);
	for (i = 0; i < STRESS_THREADS; i++)
		for (k = 0; k < STRESS_HELD; k++)
			if (s[i].held[k].p) {
				if (s[i].held[k].cxx)
					_ZdlPv(s[i].held[k].p);
				else
					v_free(s[i].held[k].p);
			}
	assert_int_equal(agent_live_count(), 0);
	v_free(c.all);
	v_free(s);
}

/* ---- bootstrap ---- */

/* While dlsym runs, the hooks answer from the arena; its blocks survive init. */
static void test_bootstrap_arena(void **state)
{
	unsigned char *p, *q, *z, *r;
	void *a = NULL, *n;
	size_t i;

	(void)state;
	assert_true(ready_before_init);
	assert_int_equal(agent_alloc_init(), 0);
	/* Another thread resolving for too long: wait, then fall back to the arena. */
	atomic_store(&boot.state, BOOT_RESOLVING);
	p = v_malloc(8);
	assert_true(boot_owns(p));
	/* As dlsym's allocations on the resolving thread. */
	resolving_here = true;
	p = v_malloc(100);
	z = v_calloc(10, 10);
	assert_int_equal(v_posix_memalign(&a, 256, 10), 0);
	assert_int_equal(v_posix_memalign(&a, 3, 10), EINVAL);
	n = v_new(10);
	q = v_valloc(10);
	errno = 0;
	assert_null(v_calloc(HUGE_SIZE, 8));
	assert_int_equal(errno, ENOMEM);
	assert_true(boot_owns(p) && boot_owns(z) && boot_owns(a) && boot_owns(n) && boot_owns(q));
	assert_int_equal((uintptr_t)a % 256, 0);
	assert_int_equal((uintptr_t)q % page_size, 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(z[i], 0);
	memset(p, 'a', 100);
	v_free(q);
	q = v_realloc(p, 200);
	assert_true(boot_owns(q));
	for (i = 0; i < 100; i++)
		assert_int_equal(q[i], 'a');
	v_free(p);
	_ZdlPv(n);
	resolving_here = false;
	atomic_store(&boot.state, BOOT_READY);
	r = v_realloc(q, 5000);
	assert_non_null(r);
	assert_false(boot_owns(r));
	for (i = 0; i < 100; i++)
		assert_int_equal(r[i], 'a');
	v_free(r);
	v_free(q);
	v_free(a);
	assert_null(v_realloc(z, 0));
	assert_true(agent_alloc_boot_used() >= 100 + 100 + 10 + 10 + 10 + 200);
}

static pthread_barrier_t race_barrier;

static void *race_main(void *arg)
{
	size_t i;

	(void)arg;
	pthread_barrier_wait(&race_barrier);
	for (i = 0; i < 1000; i++) {
		char *p = v_malloc(64), *q = v_calloc(8, 8);

		if (!p || !q)
			return (void *)1;
		p = v_realloc(p, 128);
		if (!p)
			return (void *)1;
		p[127] = q[63];
		v_free(p);
		v_free(q);
	}
	return NULL;
}

/* Hooks called before anything is resolved, from several threads at once. */
static void test_lazy_resolve_race(void **state)
{
	void *saved[R_COUNT], *rc;
	pthread_t th[4];
	size_t i;

	(void)state;
	for (i = 0; i < R_COUNT; i++)
		saved[i] = atomic_load(&boot.fns[i]);
	assert_int_equal(pthread_barrier_init(&race_barrier, NULL, 5), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_main, NULL), 0);
	atomic_store(&boot.state, BOOT_UNRESOLVED);
	for (i = 0; i < R_COUNT; i++)
		atomic_store(&boot.fns[i], NULL);
	pthread_barrier_wait(&race_barrier);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	pthread_barrier_destroy(&race_barrier);
	assert_int_equal(atomic_load(&boot.state), BOOT_READY);
	for (i = 0; i < R_COUNT; i++)
		assert_ptr_equal(atomic_load(&boot.fns[i]), saved[i]);
	/* Refresh finds nothing new and changes nothing. */
	agent_alloc_refresh();
	for (i = 0; i < R_COUNT; i++)
		assert_ptr_equal(atomic_load(&boot.fns[i]), saved[i]);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bootstrap_arena),
		cmocka_unit_test(test_lazy_resolve_race),
		cmocka_unit_test(test_every_hook_sampled),
		cmocka_unit_test(test_every_hook_unsampled),
		cmocka_unit_test(test_semantics),
		cmocka_unit_test(test_errno_kept),
		cmocka_unit_test(test_pass_through),
		cmocka_unit_test(test_late_register),
		cmocka_unit_test(test_estimate_512k),
		cmocka_unit_test(test_inuse_half),
		cmocka_unit_test(test_realloc_moves),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_stress),
	};

	/* Nothing here called agent_alloc_init: the loader's and libc's first
	 * allocations made the hooks resolve themselves. */
	ready_before_init = atomic_load(&boot.state) == BOOT_READY;
	return cmocka_run_group_tests_name("alloc", tests, group_setup, group_teardown);
}
