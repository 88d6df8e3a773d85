/* SPDX-License-Identifier: MIT */
/*
 * The malloc-family and C++ operator new/delete hooks (see alloc.h and
 * doc/agent-alloc.md).  Every exported function here is HOT.
 *
 * Double counting: operator new is hooked and calls the real operator with
 * t->in_hook raised, so the malloc (or aligned_alloc) that libstdc++'s
 * operator calls through its PLT passes straight through.  The throwing
 * operators call the real nothrow one first, so no exception ever crosses
 * a frame that holds in_hook raised; only when it fails do they call the
 * real throwing operator (new_handler, std::bad_alloc) with in_hook down,
 * and the malloc inside counts that allocation.
 *
 * Stacks: each exported hook takes its own return address, and the sampled
 * path drops every unwound frame up to that call site, so the leaf is the
 * caller's call instruction however the compiler inlined the helpers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/hooks/alloc.h"
#include "agent/core/live.h"
#include "agent/stack/unwind.h"
#include "util/banned.h"

#define RA()		((uintptr_t)__builtin_return_address(0))
#define BOOT_SIZE	(256 * 1024)
#define BOOT_ALIGN	16
#define BOOT_PAGE	4096  /* valloc's alignment before sysconf has been asked */
#define BOOT_WAIT_SPINS 10000 /* sched_yield()s before a waiter falls back to the arena */
#define NOINLINE	__attribute__((noinline))
/* ld.so calls malloc while a sanitizer runtime initialises, before it maps
 * its shadow memory: instrumented hook code would fault there. */
#define NOASAN	    __attribute__((no_sanitize_address))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x)   __builtin_expect(!!(x), 1)

/* The C++ operators (Itanium ABI, LP64: size_t is 'm'). */
AGENT_API void *_Znwm(size_t size);
AGENT_API void *_Znam(size_t size);
AGENT_API void *_ZnwmRKSt9nothrow_t(size_t size, const void *tag);
AGENT_API void *_ZnamRKSt9nothrow_t(size_t size, const void *tag);
AGENT_API void *_ZnwmSt11align_val_t(size_t size, size_t align);
AGENT_API void *_ZnamSt11align_val_t(size_t size, size_t align);
AGENT_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag);
AGENT_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag);
AGENT_API void _ZdlPv(void *p);
AGENT_API void _ZdaPv(void *p);
AGENT_API void _ZdlPvm(void *p, size_t size);
AGENT_API void _ZdaPvm(void *p, size_t size);
AGENT_API void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
AGENT_API void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);
AGENT_API void _ZdlPvSt11align_val_t(void *p, size_t align);
AGENT_API void _ZdaPvSt11align_val_t(void *p, size_t align);
AGENT_API void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align);
AGENT_API void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);
AGENT_API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag);
AGENT_API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag);

/* operator new variant = R_NEW + these bits; delete variant = R_DELETE + shape * 2 + array. */
enum { NEW_ARRAY = 1, NEW_NOTHROW = 2, NEW_ALIGNED = 4 };
enum { DEL_PLAIN, DEL_SIZED, DEL_NOTHROW, DEL_ALIGNED, DEL_SIZED_ALIGNED, DEL_ALIGNED_NOTHROW };

enum real_id {
	R_MALLOC,
	R_FREE,
	R_CALLOC,
	R_REALLOC,
	R_POSIX_MEMALIGN, /* the last one required */
	R_ALIGNED_ALLOC,
	R_MEMALIGN,
	R_VALLOC,
	R_PVALLOC,
	R_NEW,
	R_DELETE = R_NEW + 8,
	R_COUNT = R_DELETE + 12
};

static const char *const real_names[R_COUNT] = {
	"malloc",
	"free",
	"calloc",
	"realloc",
	"posix_memalign",
	"aligned_alloc",
	"memalign",
	"valloc",
	"pvalloc",
	"_Znwm",
	"_Znam",
	"_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv",
	"_ZdaPv",
	"_ZdlPvm",
	"_ZdaPvm",
	"_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t",
	"_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

enum { BOOT_UNRESOLVED, BOOT_RESOLVING, BOOT_READY, BOOT_FAILED };

/*
 * What every hook reads, on one cache line (with malloc's to realloc's
 * real functions): the functions are written before the state turns READY
 * (release); refresh may fill NULLs later.
 */
static struct {
	atomic_int state;
	_Atomic(void *) fns[R_COUNT];
} __attribute__((aligned(64))) boot;

static AGENT_TLS bool resolving_here;  /* this thread is in resolve(): dlsym allocates */
static AGENT_TLS unsigned noslot_nest; /* in_hook for a thread without a slot */
static size_t page_size = BOOT_PAGE;   /* set before boot.state turns READY */
static _Alignas(64) unsigned char boot_arena[BOOT_SIZE];
static atomic_size_t boot_used;
static atomic_uint_fast64_t seed_counter;
static const char nothrow_tag; /* stands for std::nothrow: the operators never read it */

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);

#define REAL(id, type) ((type)atomic_load_explicit(&boot.fns[id], memory_order_relaxed))

/* ---- resolution and the bootstrap arena ---- */

static NOASAN bool boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_SIZE;
}

/* Bump allocation; memory is zero (bss, never reused) and never freed. */
static NOASAN void *boot_alloc(size_t size, size_t align)
{
	uintptr_t base = (uintptr_t)boot_arena;
	size_t old = atomic_load_explicit(&boot_used, memory_order_relaxed), start;

	if ((align & (align - 1)) || align > BOOT_SIZE / 2) {
		errno = EINVAL;
		return NULL;
	}
	if (align < BOOT_ALIGN)
		align = BOOT_ALIGN;
	do {
		start = ((base + old + sizeof(size_t) + align - 1) & ~(uintptr_t)(align - 1)) -
			base;
		if (start > BOOT_SIZE || size > BOOT_SIZE - start) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!atomic_compare_exchange_weak_explicit(
		&boot_used, &old, start + size, memory_order_relaxed, memory_order_relaxed));
	memcpy(boot_arena + start - sizeof(size_t), &size, sizeof(size));
	return boot_arena + start;
}

static NOASAN void lookup(bool all)
{
	size_t i;

	for (i = all ? 0 : R_NEW; i < R_COUNT; i++)
		if (!atomic_load_explicit(&boot.fns[i], memory_order_relaxed))
			atomic_store_explicit(&boot.fns[i], dlsym(RTLD_NEXT, real_names[i]),
					      memory_order_relaxed);
	/*
	 * A C program has no operator new, so dlsym leaves an error pending.  It
	 * is not cleared: dlerror() translates its message through gettext,
	 * which takes libc's locale lock for reading — and a hook may run inside
	 * newlocale() with that lock held for writing by this very thread; the
	 * failed read lock is then released anyway and corrupts the lock.
	 */
}

/*
 * Another thread is resolving: wait for it rather than eat the arena, but
 * not forever, since it may be blocked on a lock this thread holds (dlsym
 * takes the loader lock, and a dlopen on this thread may hold it).
 */
static NOASAN bool wait_resolved(void)
{
	int spins, s = BOOT_RESOLVING;

	for (spins = 0; spins < BOOT_WAIT_SPINS && s == BOOT_RESOLVING; spins++) {
		sched_yield();
		s = atomic_load_explicit(&boot.state, memory_order_acquire);
	}
	return s == BOOT_READY;
}

/* Resolve once; false (use the arena) for dlsym's own allocations or after a failure. */
static NOINLINE NOASAN bool resolve(void)
{
	int expected = BOOT_UNRESOLVED, saved = errno;
	long page;
	bool ok = true;
	size_t i;

	if (!atomic_compare_exchange_strong(&boot.state, &expected, BOOT_RESOLVING)) {
		ok = expected == BOOT_READY ||
		     (expected == BOOT_RESOLVING && !resolving_here && wait_resolved());
		errno = saved;
		return ok;
	}
	resolving_here = true;
	lookup(true);
	resolving_here = false;
	for (i = 0; i <= R_POSIX_MEMALIGN; i++)
		ok = ok && atomic_load_explicit(&boot.fns[i], memory_order_relaxed) != NULL;
	page = sysconf(_SC_PAGESIZE);
	if (page > 0)
		page_size = (size_t)page;
	atomic_store_explicit(&boot.state, ok ? BOOT_READY : BOOT_FAILED, memory_order_release);
	errno = saved;
	return ok;
}

static inline NOASAN bool real_ready(void)
{
	if (atomic_load_explicit(&boot.state, memory_order_acquire) == BOOT_READY)
		return true;
	return resolve();
}

NOASAN int agent_alloc_init(void)
{
	int s;

	real_ready();
	/* Another thread may be resolving right now: it does not take long. */
	while ((s = atomic_load_explicit(&boot.state, memory_order_acquire)) == BOOT_RESOLVING)
		sched_yield();
	return s == BOOT_READY ? 0 : -ENOENT;
}

NOASAN void agent_alloc_refresh(void)
{
	int saved = errno;

	if (atomic_load_explicit(&boot.state, memory_order_acquire) == BOOT_READY)
		lookup(false);
	errno = saved;
}

NOASAN size_t agent_alloc_boot_used(void)
{
	return atomic_load_explicit(&boot_used, memory_order_relaxed);
}

static NOASAN void *boot_realloc(void *old, size_t size)
{
	size_t have;
	void *p;

	if (size == 0)
		return NULL; /* as glibc: realloc(p, 0) frees */
	memcpy(&have, (char *)old - sizeof(size_t), sizeof(have));
	p = real_ready() ? REAL(R_MALLOC, malloc_fn)(size) : boot_alloc(size, 0);
	if (p)
		memcpy(p, old, have < size ? have : size);
	return p;
}

/* ---- accounting ---- */

static NOASAN bool sampling_on(void)
{
	return atomic_load_explicit(&agent_state.running, memory_order_acquire) &&
	       (agent_state.cfg.modes & AGENT_MODE_ALLOC);
}

static inline NOASAN uint64_t sample_mean(void)
{
	uint64_t mean = agent_state.cfg.alloc_rate;

	return mean > ALLOC_SAMPLE_MEAN_MAX ? ALLOC_SAMPLE_MEAN_MAX : mean;
}

/* The calling thread's slot when this call is to be accounted, else NULL. */
static inline NOASAN struct agent_thread *hook_thread(void)
{
	struct agent_thread *t = agent_thread_self();

	if (UNLIKELY(!t)) {
		/* A thread the program started some other way: give it a slot now. */
		if (!sampling_on() || noslot_nest || agent_thread_internal())
			return NULL;
		t = agent_thread_register_late();
		if (!t)
			return NULL;
	}
	return t->in_hook || t->internal ? NULL : t;
}

/*
 * The fast path of every C allocation: true when an allocation of SIZE
 * bytes is accounted already and certainly not sampled, so that the hook
 * can jump to the real function (a tail call, no frame of ours on the way
 * back); false leaves everything to the slow path.  An allocation that
 * then fails has still moved the sampler on: no bias, the sample points
 * only shift.
 */
static inline NOASAN bool alloc_fast(size_t size)
{
	struct agent_thread *t = agent_thread_self();

	if (UNLIKELY(!t || t->in_hook || t->internal || agent_state.restart_pending))
		return false;
	if (sampling_on() &&
	    (t->alloc.mean != sample_mean() || !alloc_sampler_skip(&t->alloc, size)))
		return false;
	t->alloc_bytes += size;
	return true;
}

static NOASAN int64_t round_i64(double x)
{
	return x < 9.2e18 ? (int64_t)llround(x) : INT64_MAX;
}

/* Enter a sampled block in the live table, with the thread's labels. */
static NOASAN void live_add(const struct agent_thread *t, void *p, size_t size, double w,
			    const uintptr_t *pcs, size_t n, unsigned flags)
{
	uint32_t labels[AGENT_MAX_LABELS];
	size_t nl = (size_t)t->nlabels, i; /* written last by labels.c */
	struct agent_live_sample s = {
		.ptr = (uintptr_t)p,
		.size = size,
		.weight = w,
		.tid = (uint32_t)t->tid,
		.flags = flags,
		.pcs = pcs,
		.nframes = n,
		.labels = labels,
	};

	s.nlabels = nl < AGENT_MAX_LABELS ? nl : AGENT_MAX_LABELS;
	for (i = 0; i < s.nlabels; i++)
		labels[i] = t->labels[i];
	agent_live_insert(&s);
}

/* A sampled allocation: one sample to the ring, one entry in the live table. */
static NOINLINE NOASAN void record(struct agent_thread *t, void *p, size_t size, double w,
				   uintptr_t ra)
{
	uintptr_t buf[AGENT_MAX_DEPTH + AGENT_UNWIND_OWN_MAX];
	const uintptr_t *stack;
	bool truncated = false;
	int saved = errno;
	unsigned flags;
	size_t n;

	t->in_hook++;
	n = agent_unwind_caller(t->stack_lo, t->stack_hi, ra, buf, AGENT_MAX_DEPTH, &stack,
				&truncated);
	flags = truncated ? AGENT_SAMPLE_TRUNCATED : 0;
	agent_emit(t, AGENT_KIND_ALLOC, round_i64(w * AGENT_WEIGHT_ONE),
		   round_i64(w * (double)size), stack, n, flags, 0);
	live_add(t, p, size, w, stack, n, flags);
	t->in_hook--;
	errno = saved;
}

static NOASAN void sampler_sync(struct agent_thread *t)
{
	uint64_t mean = sample_mean(), seed;

	if (t->alloc.mean == mean)
		return;
	/* A slot nobody set up for this rate yet (thread.c seeds slots it claims). */
	seed = atomic_fetch_add_explicit(&seed_counter, 0x9e3779b97f4a7c15u, memory_order_relaxed);
	alloc_sampler_init(&t->alloc, mean, seed ^ (uint64_t)t->tid << 32 ^ (uintptr_t)t);
}

/* Account a successful allocation of SIZE bytes at P made for the caller at RA. */
static NOINLINE NOASAN void note_alloc(struct agent_thread *t, void *p, size_t size, uintptr_t ra)
{
	double w;

	agent_restart_check(); /* the allocator's locks are free again here */
	t->alloc_bytes += size;
	if (!sampling_on())
		return;
	sampler_sync(t);
	if (alloc_sampler_take(&t->alloc, size, &w))
		record(t, p, size, w, ra);
}

/* ---- the C allocation functions ---- */

/* Everything but the fast path: the bootstrap arena, samples, threads without a slot. */
static NOINLINE NOASAN void *malloc_slow(size_t size, uintptr_t ra)
{
	struct agent_thread *t;
	void *p;

	if (UNLIKELY(!real_ready()))
		return boot_alloc(size, 0);
	t = hook_thread();
	p = REAL(R_MALLOC, malloc_fn)(size);
	if (p && t)
		note_alloc(t, p, size, ra);
	return p;
}

static inline NOASAN bool ready(void)
{
	return atomic_load_explicit(&boot.state, memory_order_acquire) == BOOT_READY;
}

AGENT_API NOASAN void *malloc(size_t size)
{
	if (LIKELY(ready() && alloc_fast(size)))
		return REAL(R_MALLOC, malloc_fn)(size);
	return malloc_slow(size, RA());
}

static NOINLINE NOASAN void *calloc_slow(size_t n, size_t size, uintptr_t ra)
{
	struct agent_thread *t;
	size_t bytes;
	void *p;

	if (UNLIKELY(!real_ready())) {
		if (__builtin_mul_overflow(n, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(bytes, 0);
	}
	t = hook_thread();
	p = REAL(R_CALLOC, calloc_fn)(n, size);
	if (p && t)
		note_alloc(t, p, n * size, ra);
	return p;
}

AGENT_API NOASAN void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (LIKELY(ready() && !__builtin_mul_overflow(n, size, &bytes) && alloc_fast(bytes)))
		return REAL(R_CALLOC, calloc_fn)(n, size);
	return calloc_slow(n, size, RA());
}

static NOINLINE NOASAN void free_slow(void *p)
{
	if (boot_owns(p))
		return;
	agent_live_remove((uintptr_t)p);
	if (real_ready())
		REAL(R_FREE, free_fn)(p);
}

AGENT_API NOASAN void free(void *p)
{
	if (!p)
		return;
	if (LIKELY(ready() && !boot_owns(p) && !agent_live_maybe((uintptr_t)p)))
		return REAL(R_FREE, free_fn)(p);
	free_slow(p);
}

/* realloc of a pointer that may be sampled: its entry leaves the table, and
 * comes back if realloc fails (the old block then stays allocated). */
static NOINLINE NOASAN void *realloc_tracked(void *old, size_t size)
{
	struct agent_live_entry e;
	bool had = agent_live_take((uintptr_t)old, &e);
	void *p = REAL(R_REALLOC, realloc_fn)(old, size);

	if (!p && size != 0 && had) {
		struct agent_live_sample s = {
			.ptr = e.ptr,
			.size = e.size,
			.weight = e.weight,
			.tid = e.tid,
			.flags = e.flags,
			.pcs = e.pcs,
			.nframes = e.nframes,
			.labels = e.labels,
			.nlabels = e.nlabels,
		};
		int saved = errno;

		agent_live_insert(&s);
		errno = saved;
	}
	return p;
}

static NOINLINE NOASAN void *realloc_slow(void *old, size_t size, uintptr_t ra)
{
	struct agent_thread *t;
	void *p;

	if (!old)
		return malloc_slow(size, ra);
	if (boot_owns(old))
		return boot_realloc(old, size);
	if (UNLIKELY(!real_ready())) {
		errno = ENOMEM;
		return NULL;
	}
	t = hook_thread();
	if (agent_live_maybe((uintptr_t)old))
		p = realloc_tracked(old, size);
	else
		p = REAL(R_REALLOC, realloc_fn)(old, size);
	if (p && t)
		note_alloc(t, p, size, ra);
	return p;
}

/* realloc(p, 0) frees p and allocates nothing: glibc returns NULL. */
static inline NOASAN bool realloc_fast(void *old, size_t size)
{
	return ready() && old && !boot_owns(old) && !agent_live_maybe((uintptr_t)old) &&
	       alloc_fast(size);
}

AGENT_API NOASAN void *realloc(void *old, size_t size)
{
	if (LIKELY(realloc_fast(old, size)))
		return REAL(R_REALLOC, realloc_fn)(old, size);
	return realloc_slow(old, size, RA());
}

AGENT_API NOASAN void *reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (LIKELY(realloc_fast(old, bytes)))
		return REAL(R_REALLOC, realloc_fn)(old, bytes);
	return realloc_slow(old, bytes, RA());
}

/* posix_memalign through the real one, for a missing aligned_alloc and friends. */
static NOASAN void *memalign_via_posix(size_t align, size_t size)
{
	void *p;
	int err;

	if (align < sizeof(void *))
		align = sizeof(void *);
	err = REAL(R_POSIX_MEMALIGN, posix_memalign_fn)(&p, align, size);
	if (err) {
		errno = err;
		return NULL;
	}
	return p;
}

/* aligned_alloc, memalign (ALIGN, SIZE) or valloc, pvalloc (SIZE) through the real one. */
static NOASAN void *call_aligned(enum real_id id, size_t align, size_t size)
{
	void *fn = atomic_load_explicit(&boot.fns[id], memory_order_relaxed);
	bool paged = id == R_VALLOC || id == R_PVALLOC;

	if (fn && paged)
		return ((malloc_fn)fn)(size);
	if (fn)
		return ((memalign_fn)fn)(align, size);
	if (paged)
		align = page_size;
	if (id == R_PVALLOC)
		size = size ? (size + page_size - 1) & ~(page_size - 1) : page_size;
	return memalign_via_posix(align, size);
}

static inline NOASAN void *aligned_hook(enum real_id id, size_t align, size_t size, uintptr_t ra)
{
	struct agent_thread *t;
	void *p;

	if (UNLIKELY(!real_ready()))
		return boot_alloc(size, id == R_VALLOC || id == R_PVALLOC ? BOOT_PAGE : align);
	t = hook_thread();
	p = call_aligned(id, align, size);
	if (p && t)
		note_alloc(t, p, size, ra);
	return p;
}

AGENT_API NOASAN void *aligned_alloc(size_t align, size_t size)
{
	return aligned_hook(R_ALIGNED_ALLOC, align, size, RA());
}

AGENT_API NOASAN void *memalign(size_t align, size_t size)
{
	return aligned_hook(R_MEMALIGN, align, size, RA());
}

AGENT_API NOASAN void *valloc(size_t size)
{
	return aligned_hook(R_VALLOC, 0, size, RA());
}

AGENT_API NOASAN void *pvalloc(size_t size)
{
	return aligned_hook(R_PVALLOC, 0, size, RA());
}

AGENT_API NOASAN int posix_memalign(void **out, size_t align, size_t size)
{
	uintptr_t ra = RA();
	struct agent_thread *t;
	int err;

	if (UNLIKELY(!real_ready())) {
		int saved = errno;
		void *p = align % sizeof(void *) ? NULL : boot_alloc(size, align);

		err = p ? 0 : align % sizeof(void *) ? EINVAL : errno;
		errno = saved;
		if (p)
			*out = p;
		return err;
	}
	t = hook_thread();
	err = REAL(R_POSIX_MEMALIGN, posix_memalign_fn)(out, align, size);
	if (err == 0 && t)
		note_alloc(t, *out, size, ra);
	return err;
}

/* ---- C++ operator new and delete ---- */

/* The real operator new variant V, or malloc when libstdc++ had none for us. */
static NOASAN void *real_new(unsigned v, size_t size, size_t align)
{
	void *fn = atomic_load_explicit(&boot.fns[R_NEW + v], memory_order_relaxed);

	if (!fn) {
		if (v & NEW_ALIGNED)
			return memalign_via_posix(align, size ? size : 1);
		return REAL(R_MALLOC, malloc_fn)(size ? size : 1);
	}
	switch (v & (NEW_NOTHROW | NEW_ALIGNED)) {
	case 0: return ((void *(*)(size_t))fn)(size);
	case NEW_NOTHROW: return ((void *(*)(size_t, const void *))fn)(size, &nothrow_tag);
	case NEW_ALIGNED: return ((void *(*)(size_t, size_t))fn)(size, align);
	default: return ((void *(*)(size_t, size_t, const void *))fn)(size, align, &nothrow_tag);
	}
}

/* A thread without a slot (counted): not again in a nested malloc. */
static NOASAN void *new_noslot(unsigned v, size_t size, size_t align)
{
	void *p;

	noslot_nest++;
	p = real_new(v | NEW_NOTHROW, size, align);
	noslot_nest--;
	if (!p && !(v & NEW_NOTHROW))
		p = real_new(v, size, align);
	return p;
}

static inline NOASAN void *new_hook(unsigned v, size_t size, size_t align, uintptr_t ra)
{
	struct agent_thread *t;
	void *p;

	if (UNLIKELY(!real_ready()))
		return boot_alloc(size, align);
	t = agent_thread_self();
	if (!t) {
		if (noslot_nest)
			return real_new(v, size, align);
		t = hook_thread(); /* a slot now, or the drop counted */
		if (!t)
			return new_noslot(v, size, align);
	}
	if (t->in_hook || t->internal)
		return real_new(v, size, align);
	t->in_hook++;
	p = real_new(v | NEW_NOTHROW, size, align);
	t->in_hook--;
	if (p)
		note_alloc(t, p, size, ra);
	else if (!(v & NEW_NOTHROW))
		p = real_new(v, size, align); /* new_handler or std::bad_alloc */
	return p;
}

AGENT_API NOASAN void *_Znwm(size_t size)
{
	return new_hook(0, size, 0, RA());
}

AGENT_API NOASAN void *_Znam(size_t size)
{
	return new_hook(NEW_ARRAY, size, 0, RA());
}

AGENT_API NOASAN void *_ZnwmRKSt9nothrow_t(size_t size, const void *tag)
{
	(void)tag;
	return new_hook(NEW_NOTHROW, size, 0, RA());
}

AGENT_API NOASAN void *_ZnamRKSt9nothrow_t(size_t size, const void *tag)
{
	(void)tag;
	return new_hook(NEW_ARRAY | NEW_NOTHROW, size, 0, RA());
}

AGENT_API NOASAN void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	return new_hook(NEW_ALIGNED, size, align, RA());
}

AGENT_API NOASAN void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	return new_hook(NEW_ARRAY | NEW_ALIGNED, size, align, RA());
}

AGENT_API NOASAN void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align,
							  const void *tag)
{
	(void)tag;
	return new_hook(NEW_ALIGNED | NEW_NOTHROW, size, align, RA());
}

AGENT_API NOASAN void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align,
							  const void *tag)
{
	(void)tag;
	return new_hook(NEW_ARRAY | NEW_ALIGNED | NEW_NOTHROW, size, align, RA());
}

/* Deletes leave the live table here: an operator new that is not built on
 * malloc has a delete that never reaches our free. */
static inline NOASAN void delete_hook(unsigned shape, unsigned array, void *p, size_t size,
				      size_t align)
{
	void *fn;

	if (!p || boot_owns(p))
		return;
	agent_live_remove((uintptr_t)p);
	if (!real_ready())
		return;
	fn = atomic_load_explicit(&boot.fns[R_DELETE + shape * 2 + array], memory_order_relaxed);
	if (!fn) {
		REAL(R_FREE, free_fn)(p);
		return;
	}
	switch (shape) {
	case DEL_PLAIN: ((void (*)(void *))fn)(p); break;
	case DEL_SIZED: ((void (*)(void *, size_t))fn)(p, size); break;
	case DEL_NOTHROW: ((void (*)(void *, const void *))fn)(p, &nothrow_tag); break;
	case DEL_ALIGNED: ((void (*)(void *, size_t))fn)(p, align); break;
	case DEL_SIZED_ALIGNED: ((void (*)(void *, size_t, size_t))fn)(p, size, align); break;
	default: ((void (*)(void *, size_t, const void *))fn)(p, align, &nothrow_tag); break;
	}
}

AGENT_API NOASAN void _ZdlPv(void *p)
{
	delete_hook(DEL_PLAIN, 0, p, 0, 0);
}

AGENT_API NOASAN void _ZdaPv(void *p)
{
	delete_hook(DEL_PLAIN, 1, p, 0, 0);
}

AGENT_API NOASAN void _ZdlPvm(void *p, size_t size)
{
	delete_hook(DEL_SIZED, 0, p, size, 0);
}

AGENT_API NOASAN void _ZdaPvm(void *p, size_t size)
{
	delete_hook(DEL_SIZED, 1, p, size, 0);
}

AGENT_API NOASAN void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
	(void)tag;
	delete_hook(DEL_NOTHROW, 0, p, 0, 0);
}

AGENT_API NOASAN void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
	(void)tag;
	delete_hook(DEL_NOTHROW, 1, p, 0, 0);
}

AGENT_API NOASAN void _ZdlPvSt11align_val_t(void *p, size_t align)
{
	delete_hook(DEL_ALIGNED, 0, p, 0, align);
}

AGENT_API NOASAN void _ZdaPvSt11align_val_t(void *p, size_t align)
{
	delete_hook(DEL_ALIGNED, 1, p, 0, align);
}

AGENT_API NOASAN void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	delete_hook(DEL_SIZED_ALIGNED, 0, p, size, align);
}

AGENT_API NOASAN void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	delete_hook(DEL_SIZED_ALIGNED, 1, p, size, align);
}

AGENT_API NOASAN void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
	(void)tag;
	delete_hook(DEL_ALIGNED_NOTHROW, 0, p, 0, align);
}

AGENT_API NOASAN void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
	(void)tag;
	delete_hook(DEL_ALIGNED_NOTHROW, 1, p, 0, align);
}
