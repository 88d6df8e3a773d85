/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"

#include <limits.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif
#include <linux/perf_event.h>

#include "perf/perf_event.h"
#include "symbol/symbolize.h"
#include "record/unwind.h"

/*
 * The unwinder against this very process: perf samples of its own
 * frame-pointer-less code (-O2), of a comparator called back by libc's
 * qsort, of memcpy and of the vDSO must unwind back to main; so must
 * in-process register + stack snapshots.  Names come from the symbolizer.
 */

#define MAX_MAPS    512
#define MAX_FRAMES  128
#define SNAP_STACK  16384
#define STACK_USER  16384
#define NO_SANITIZE __attribute__((no_sanitize_address))

struct xmap {
	char path[PATH_MAX];
	uint64_t start, end, pgoff;
	struct sym_module *mod;
};

/* This process's executable mappings, as an unwinder and a symbolizer see them. */
struct fixture {
	struct xmap maps[MAX_MAPS];
	size_t nr;
	char exe[PATH_MAX];
	uint64_t stack_end; /* top of the main thread's [stack] */
	struct symbolizer *sym;
	struct unwinder *u;
};

static volatile uint64_t sink;

/* ---- the fixture ---- */

static void fixture_add(struct fixture *fx, const char *line)
{
	unsigned long long start, end, off;
	char perms[8];
	int pos = 0;
	struct xmap *m;
	const char *path;

	if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &pos) < 4)
		return;
	path = pos ? line + pos : "";
	if (!strcmp(path, "[stack]"))
		fx->stack_end = end;
	if (perms[2] != 'x' || fx->nr == MAX_MAPS)
		return;
	m = &fx->maps[fx->nr++];
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->start = start;
	m->end = end;
	m->pgoff = off;
}

static struct fixture *fixture_new(void)
{
	struct fixture *fx = xcalloc(1, sizeof(*fx));
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	ssize_t n;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		fixture_add(fx, line);
	}
	fclose(f);
	n = readlink("/proc/self/exe", fx->exe, sizeof(fx->exe) - 1);
	assert_true(n > 0);
	fx->sym = symbolizer_new();
	fx->u = unwinder_new();
	for (size_t i = 0; i < fx->nr; i++) {
		struct xmap *m = &fx->maps[i];

		m->mod = symbolizer_module(fx->sym, m->path, m->start, m->end, m->pgoff, NULL);
		unwinder_add_map(fx->u, m->path, m->start, m->end, m->pgoff);
	}
	assert_true(fx->nr >= 2);
	return fx;
}

static void fixture_free(struct fixture *fx)
{
	unwinder_free(fx->u);
	symbolizer_free(fx->sym);
	free(fx);
}

static const struct xmap *map_of(const struct fixture *fx, uint64_t addr)
{
	for (size_t i = 0; i < fx->nr; i++)
		if (addr >= fx->maps[i].start && addr < fx->maps[i].end)
			return &fx->maps[i];
	return NULL;
}

static bool in_exe(const struct fixture *fx, uint64_t addr)
{
	const struct xmap *m = map_of(fx, addr);

	return m && !strcmp(m->path, fx->exe);
}

/* The function containing frame i of ips (return addresses looked up at -1). */
static const char *frame_name(struct fixture *fx, const uint64_t *ips, int i)
{
	uint64_t addr = i ? ips[i] - 1 : ips[0];
	const struct xmap *m = map_of(fx, addr);
	struct sym_frame fr[8];
	struct error err = ERROR_INIT;
	int n;

	if (!m)
		return NULL;
	n = symbolizer_lookup(fx->sym, m->mod, addr, fr, ARRAY_SIZE(fr), &err);
	return n > 0 ? fr[n - 1].function : NULL;
}

/* "burn_c" matches burn_c and GCC's clones like burn_c.constprop.0. */
static bool name_is(const char *name, const char *want)
{
	size_t len = strlen(want);

	return name && !strncmp(name, want, len) && (name[len] == 0 || name[len] == '.');
}

static int find_frame(struct fixture *fx, const uint64_t *ips, int n, int from, const char *want)
{
	for (int i = from; i < n; i++)
		if (name_is(frame_name(fx, ips, i), want))
			return i;
	return -1;
}

static void print_stack(struct fixture *fx, const char *what, const uint64_t *ips, int n)
{
	print_message("%s: %d frames\n", what, n);
	for (int i = 0; i < n; i++) {
		const char *name = frame_name(fx, ips, i);
		const struct xmap *m = map_of(fx, i ? ips[i] - 1 : ips[0]);

		print_message("  #%d %#" PRIx64 " %s (%s)\n", i, ips[i], name ? name : "?",
			      m ? m->path : "unmapped");
	}
}

/* ---- workloads: noinline, with work after each call so no tail call hides a frame ---- */

__attribute__((noinline)) static void burn_c(unsigned iters)
{
	for (unsigned i = 0; i < iters; i++)
		sink = sink * 31 + i;
}

__attribute__((noinline)) static void burn_b(unsigned iters)
{
	burn_c(iters);
	sink++;
}

__attribute__((noinline)) static void burn_a(void)
{
	burn_b(20000);
	sink++;
}

__attribute__((noinline)) static int cmp_burn(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	for (int i = 0; i < 300; i++)
		sink += (uint64_t)i;
	return (x > y) - (x < y);
}

static void shuffle(int *v, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		*seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
		v[i] = (int)(*seed % 1000);
	}
}

__attribute__((noinline)) static void qsort_chain(void)
{
	static uint64_t seed = 88172645463325252ULL;
	int v[64];

	shuffle(v, ARRAY_SIZE(v), &seed);
	qsort(v, ARRAY_SIZE(v), sizeof(v[0]), cmp_burn);
	sink += (uint64_t)v[0];
}

#define COPY_SIZE (256 * 1024)
static char *copy_src, *copy_dst;

__attribute__((noinline)) static void memcpy_chain(void)
{
	memcpy(copy_dst, copy_src, COPY_SIZE);
	sink += (uint64_t)copy_dst[COPY_SIZE / 2];
}

__attribute__((noinline)) static void vdso_chain(void)
{
	struct timespec ts;

	for (int i = 0; i < 200; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
}

/* ---- perf samples of this thread ---- */

enum leaf_kind {
	LEAF_FUNCTION, /* the leaf is the named function of the executable */
	LEAF_FOREIGN,  /* the leaf is outside the executable (libc, libasan) */
	LEAF_VDSO,     /* the leaf is in [vdso] */
};

struct phase {
	const char *name;
	void (*work)(void);
	enum leaf_kind kind;
	const char *leaf;   /* LEAF_FUNCTION */
	const char *caller; /* must be found above the leaf, and main above it */
	bool via_libc;	    /* a frame outside the executable lies between them */
	uint64_t samples, ok;
	uint64_t bad[MAX_FRAMES]; /* the first stack that did not unwind as expected */
	int nr_bad;
};

struct drain_ctx {
	struct fixture *fx;
	struct unwinder *clone;
	struct phase *phase;
	uint64_t regs_mask;
	uint64_t unwound, frames;
};

static bool leaf_matches(struct drain_ctx *c, const uint64_t *ips, int n)
{
	const struct xmap *m = map_of(c->fx, ips[0]);

	switch (c->phase->kind) {
	case LEAF_FUNCTION: return name_is(frame_name(c->fx, ips, 0), c->phase->leaf);
	case LEAF_FOREIGN: return n > 0 && !in_exe(c->fx, ips[0]);
	case LEAF_VDSO: return m && !strcmp(m->path, "[vdso]");
	}
	return false;
}

static bool stack_ok(struct drain_ctx *c, const uint64_t *ips, int n)
{
	int caller = find_frame(c->fx, ips, n, 1, c->phase->caller);
	bool crossed = !c->phase->via_libc;

	for (int i = 1; i < caller && !crossed; i++)
		crossed = !in_exe(c->fx, ips[i] - 1);
	return caller > 0 && crossed && find_frame(c->fx, ips, n, caller + 1, "main") > caller;
}

static int on_sample(const struct perf_record *r, void *arg)
{
	struct drain_ctx *c = arg;
	const struct perf_sample *s = &r->u.sample;
	struct error err = ERROR_INIT;
	uint64_t ips[MAX_FRAMES], ips2[MAX_FRAMES];
	int n, n2;

	if (r->type != PERF_RECORD_SAMPLE || !s->regs_abi)
		return 0;
	n = unwinder_unwind(c->fx->u, s->tid, s->regs, c->regs_mask, s->stack,
			    (size_t)s->stack_dyn_size, ips, MAX_FRAMES, &err);
	if (n < 0)
		fail_msg("%s", err.msg);
	assert_true(n >= 1 && n <= MAX_FRAMES);
	assert_int_equal(ips[0], s->ip);
	/* The clone is independent of the original, and unwinds the same. */
	n2 = unwinder_unwind(c->clone, s->tid, s->regs, c->regs_mask, s->stack,
			     (size_t)s->stack_dyn_size, ips2, MAX_FRAMES, &err);
	assert_int_equal(n2, n);
	assert_memory_equal(ips, ips2, (size_t)n * sizeof(ips[0]));
	c->unwound++;
	c->frames += (uint64_t)n;
	if (!leaf_matches(c, ips, n))
		return 0;
	c->phase->samples++;
	if (stack_ok(c, ips, n))
		c->phase->ok++;
	else if (!c->phase->nr_bad) {
		memcpy(c->phase->bad, ips, (size_t)n * sizeof(ips[0]));
		c->phase->nr_bad = n;
	}
	return 0;
}

static double thread_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the phase's work in chunks, sampled, unwinding each chunk's samples after it. */
static void run_phase(struct perf_session *ps, struct drain_ctx *c, struct phase *p)
{
	struct error err = ERROR_INIT;

	c->phase = p;
	for (int chunk = 0; chunk < 8; chunk++) {
		double t0 = thread_cpu_now();

		if (perf_session_enable(ps, true, &err))
			fail_msg("%s", err.msg);
		do
			for (int k = 0; k < 10; k++) /* few samples in the harness */
				p->work();
		while (thread_cpu_now() - t0 < 0.015);
		if (perf_session_enable(ps, false, &err) ||
		    perf_session_drain(ps, on_sample, c, &err))
			fail_msg("%s", err.msg);
	}
	print_message("%-8s %3" PRIu64 " samples with the leaf, %3" PRIu64
		      " unwound to %s and main\n",
		      p->name, p->samples, p->ok, p->caller);
	if (p->ok * 10 < p->samples * 9)
		print_stack(c->fx, "first stack that did not", p->bad, p->nr_bad);
	assert_true(p->samples >= 20);
	assert_true(p->ok * 10 >= p->samples * 9);
}

/* perf_event_open refused or absent: the one case where this test may skip. */
static bool perf_unavailable(const char *msg)
{
	return strstr(msg, "refused") || strstr(msg, "Permission denied") ||
	       strstr(msg, "No such file");
}

static void test_perf_samples(void **state)
{
	struct phase phases[] = {
		{"chain", burn_a, LEAF_FUNCTION, "burn_c", "burn_a", false},
		{"qsort", qsort_chain, LEAF_FUNCTION, "cmp_burn", "qsort_chain", true},
		{"memcpy", memcpy_chain, LEAF_FOREIGN, NULL, "memcpy_chain", false},
		{"vdso", vdso_chain, LEAF_VDSO, NULL, "vdso_chain", false},
	};
	struct perf_open_opts o = {0};
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct drain_ctx c = {0};

	(void)state;
	o.pid = 0;
	o.freq = 2000;
	o.callchain = true;
	o.stack_user = STACK_USER;
	o.exclude_kernel = true;
	o.ring_pages = 512;
	if (perf_session_open(&ps, &o, &err)) {
		if (perf_unavailable(err.msg)) {
			print_message("SKIP: perf events unavailable: %s\n", err.msg);
			skip();
		}
		fail_msg("%s", err.msg);
	}
	copy_src = xcalloc(1, COPY_SIZE);
	copy_dst = xcalloc(1, COPY_SIZE);
	c.fx = fixture_new();
	c.clone = unwinder_clone(c.fx->u);
	c.regs_mask = ps.layout.regs_mask;
	assert_true(c.regs_mask != 0);
	for (size_t i = 0; i < ARRAY_SIZE(phases); i++)
		run_phase(&ps, &c, &phases[i]);
	print_message("%" PRIu64 " samples unwound, %.1f frames on average\n", c.unwound,
		      c.unwound ? (double)c.frames / (double)c.unwound : 0.0);
	assert_int_equal(ps.stats.lost, 0);
	perf_session_close(&ps);
	unwinder_free(c.clone);
	fixture_free(c.fx);
	free(copy_src);
	free(copy_dst);
}

/* ---- in-process snapshots: registers + a copy of the stack, as perf takes them ---- */

#if defined(__x86_64__)
#define SNAP_MASK                                                                              \
	((1ULL << PERF_REG_X86_BX) | (1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) |   \
	 (1ULL << PERF_REG_X86_IP) | (1ULL << PERF_REG_X86_R12) | (1ULL << PERF_REG_X86_R13) | \
	 (1ULL << PERF_REG_X86_R14) | (1ULL << PERF_REG_X86_R15))

/* Registers in perf bit order: BX BP SP IP R12 R13 R14 R15. */
struct snap {
	uint64_t regs[8];
	uint8_t stack[SNAP_STACK];
	size_t len;
	bool taken;
};

static struct snap *snap_target;
static uint64_t snap_stack_end;

/* Like the kernel's copy: word by word, past ASan's redzones. */
NO_SANITIZE static void stack_copy(uint8_t *dst, uint64_t sp, size_t len)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;

	for (size_t i = 0; i < len / 8; i++) {
		uint64_t w = src[i];

		memcpy(dst + i * 8, &w, 8);
	}
}

__attribute__((noinline)) NO_SANITIZE static void snapshot(struct snap *s)
{
	uint64_t *r = s->regs;

	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, %3\n\t"
			 "mov %%rbx, %0\n\t"
			 "mov %%rbp, %1\n\t"
			 "mov %%rsp, %2\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7\n\t"
			 : "=m"(r[0]), "=m"(r[1]), "=m"(r[2]), "=m"(r[3]), "=m"(r[4]), "=m"(r[5]),
			   "=m"(r[6]), "=m"(r[7])
			 :
			 : "rax", "memory");
	s->len = MIN((uint64_t)SNAP_STACK, snap_stack_end - r[2]) & ~(size_t)7;
	stack_copy(s->stack, r[2], s->len);
	s->taken = true;
}

__attribute__((noinline)) static int cmp_snap(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (snap_target && !snap_target->taken)
		snapshot(snap_target);
	sink++;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void qsort_snap_chain(struct snap *s)
{
	int v[16] = {5, 3, 9, 1, 7, 2, 8, 6, 4, 0, 15, 11, 13, 12, 10, 14};

	snap_target = s;
	qsort(v, ARRAY_SIZE(v), sizeof(v[0]), cmp_snap);
	snap_target = NULL;
	sink += (uint64_t)v[0];
}

/* A snapshot taken inside a comparator called by libc's qsort. */
static struct snap *snap_take(struct fixture *fx)
{
	struct snap *s = xcalloc(1, sizeof(*s));

	assert_true(fx->stack_end != 0);
	snap_stack_end = fx->stack_end;
	qsort_snap_chain(s);
	assert_true(s->taken && s->len > 1024);
	return s;
}

static int snap_unwind(struct unwinder *u, const struct snap *s, uint64_t *ips, size_t max)
{
	struct error err = ERROR_INIT;
	int n = unwinder_unwind(u, 1, s->regs, SNAP_MASK, s->stack, s->len, ips, max, &err);

	if (n < 0)
		fail_msg("%s", err.msg);
	return n;
}

/* The snapshot's stack: snapshot, cmp_snap, libc, qsort_snap_chain, ..., main. */
static void assert_snap_stack(struct fixture *fx, const uint64_t *ips, int n)
{
	int cmp = find_frame(fx, ips, n, 0, "cmp_snap");
	int chain = find_frame(fx, ips, n, 0, "qsort_snap_chain");
	int main_at = find_frame(fx, ips, n, 0, "main");

	if (!name_is(frame_name(fx, ips, 0), "snapshot") || cmp != 1 || chain < 3 ||
	    main_at <= chain || in_exe(fx, ips[2] - 1)) {
		print_stack(fx, "snapshot", ips, n);
		fail_msg("the snapshot did not unwind through qsort to main");
	}
}

static void test_snapshot_through_libc(void **state)
{
	struct fixture *fx = fixture_new();
	struct snap *s = snap_take(fx);
	uint64_t ips[MAX_FRAMES], again[MAX_FRAMES];
	int n;

	(void)state;
	n = snap_unwind(fx->u, s, ips, MAX_FRAMES);
	assert_snap_stack(fx, ips, n);
	/* Cached modules and CFI give the same answer the second time. */
	assert_int_equal(snap_unwind(fx->u, s, again, MAX_FRAMES), n);
	assert_memory_equal(ips, again, (size_t)n * sizeof(ips[0]));
	/* max bounds the frames written. */
	assert_int_equal(snap_unwind(fx->u, s, again, 3), 3);
	assert_memory_equal(ips, again, 3 * sizeof(ips[0]));
	assert_int_equal(snap_unwind(fx->u, s, again, 1), 1);
	/* Only part of the stack copied: the inner frames, not main. */
	{
		struct snap *part = xmemdup(s, sizeof(*s));
		int partial;

		part->len = 256;
		partial = snap_unwind(fx->u, part, again, MAX_FRAMES);
		assert_true(partial >= 2 && partial <= find_frame(fx, ips, n, 0, "main"));
		assert_memory_equal(ips, again, 2 * sizeof(ips[0]));
		free(part);
	}
	free(s);
	fixture_free(fx);
}

static void test_clone_is_independent(void **state)
{
	struct fixture *fx = fixture_new();
	struct snap *s = snap_take(fx);
	uint64_t ips[MAX_FRAMES], ips2[MAX_FRAMES];
	struct unwinder *c;
	int n;

	(void)state;
	n = snap_unwind(fx->u, s, ips, MAX_FRAMES); /* the original has loaded its modules */
	c = unwinder_clone(fx->u);
	/* A change to the original after the clone does not reach the clone. */
	for (size_t i = 0; i < fx->nr; i++)
		unwinder_add_map(fx->u, "/nonexistent/lib.so", fx->maps[i].start, fx->maps[i].end,
				 0);
	unwinder_free(fx->u);
	fx->u = NULL;
	assert_int_equal(snap_unwind(c, s, ips2, MAX_FRAMES), n);
	assert_memory_equal(ips, ips2, (size_t)n * sizeof(ips[0]));
	assert_null(unwinder_clone(NULL));
	unwinder_free(c);
	free(s);
	fixture_free(fx);
}

/* dlclose + dlopen: a file mapped over another one's range replaces it. */
static void test_replaced_mappings(void **state)
{
	struct fixture *fx = fixture_new();
	struct snap *s = snap_take(fx);
	uint64_t ips[MAX_FRAMES], ips2[MAX_FRAMES];
	int n, n2;

	(void)state;
	n = snap_unwind(fx->u, s, ips, MAX_FRAMES);
	assert_snap_stack(fx, ips, n);
	/* Every executable mapping replaced by a file that is no ELF: no CFI left. */
	for (size_t i = 0; i < fx->nr; i++)
		unwinder_add_map(fx->u, "/etc/passwd", fx->maps[i].start, fx->maps[i].end, 0);
	n2 = snap_unwind(fx->u, s, ips2, MAX_FRAMES);
	assert_true(n2 >= 1 && n2 <= MAX_FRAMES);
	assert_int_equal(ips2[0], ips[0]);
	/* The real files mapped back: the same stack again. */
	for (size_t i = 0; i < fx->nr; i++)
		unwinder_add_map(fx->u, fx->maps[i].path, fx->maps[i].start, fx->maps[i].end,
				 fx->maps[i].pgoff);
	assert_int_equal(snap_unwind(fx->u, s, ips2, MAX_FRAMES), n);
	assert_memory_equal(ips, ips2, (size_t)n * sizeof(ips[0]));
	/* Mappings reported twice, non-file mappings and odd paths change nothing. */
	for (size_t i = 0; i < fx->nr; i++)
		unwinder_add_map(fx->u, fx->maps[i].path, fx->maps[i].start, fx->maps[i].end,
				 fx->maps[i].pgoff);
	unwinder_add_map(fx->u, "//anon", 0x1000, 0x2000, 0);
	unwinder_add_map(fx->u, "[heap]", 0x3000, 0x4000, 0);
	unwinder_add_map(fx->u, "", 0x5000, 0x6000, 0);
	unwinder_add_map(fx->u, "relative/path.so", 0x7000, 0x8000, 0);
	unwinder_add_map(fx->u, "/dev/zero", 0x9000, 0xa000, 0);
	unwinder_add_map(fx->u, "/lib/x.so (deleted)", 0xb000, 0xc000, 0);
	unwinder_add_map(fx->u, fx->exe, 0xd000, 0xd000, 0);	      /* empty */
	unwinder_add_map(fx->u, fx->exe, 0xe000, 0xf000, 1ULL << 40); /* beyond the file */
	unwinder_add_map(fx->u, NULL, 0x10000, 0x11000, 0);
	unwinder_add_map(NULL, "/bin/sh", 0x10000, 0x11000, 0);
	assert_int_equal(snap_unwind(fx->u, s, ips2, MAX_FRAMES), n);
	assert_memory_equal(ips, ips2, (size_t)n * sizeof(ips[0]));
	free(s);
	fixture_free(fx);
}
#endif /* __x86_64__ */

/* ---- hand-made stacks: the frame-pointer fallback and the bounds of memory ---- */

#define FAKE_SP 0x7ff000100000ULL
#define NOCODE	0x1000ULL /* no module maps it: libdw falls back to the frame pointer */

/* Registers AX..R15 in the default perf mask 0xff0fff order (20 values). */
#define FULL_MASK 0xff0fffULL
enum { R_BP = 6, R_SP = 7, R_IP = 8 };

static int unwind_fake(struct unwinder *u, const uint64_t *regs, const uint8_t *stack, size_t len,
		       uint64_t *ips, size_t max)
{
	struct error err = ERROR_INIT;
	int n = unwinder_unwind(u, 42, regs, FULL_MASK, stack, len, ips, max, &err);

	if (n < 0)
		fail_msg("%s", err.msg);
	assert_true((size_t)n <= max);
	return n;
}

static void put64(uint8_t *stack, size_t off, uint64_t v)
{
	memcpy(stack + off, &v, 8);
}

static void test_frame_pointer_and_bounds(void **state)
{
	struct fixture *fx = fixture_new();
	uint64_t regs[20] = {0}, ips[16];
	uint8_t stack[512] = {0};
	uint64_t ret = (uint64_t)(uintptr_t)&burn_b + 8; /* a code address of this program */
	static uint64_t outside[2];
	int n;

	(void)state;
	regs[R_IP] = NOCODE;
	regs[R_SP] = FAKE_SP;
	/* rbp -> {saved rbp, return address} inside the copy: followed. */
	regs[R_BP] = FAKE_SP + 64;
	put64(stack, 64, FAKE_SP + 256);
	put64(stack, 72, ret);
	n = unwind_fake(fx->u, regs, stack, sizeof(stack), ips, ARRAY_SIZE(ips));
	assert_true(n >= 2);
	assert_int_equal(ips[0], NOCODE);
	assert_int_equal(ips[1], ret);
	/* The same frame in this process's memory, outside the copy: never read. */
	outside[0] = FAKE_SP + 256;
	outside[1] = ret;
	regs[R_BP] = (uint64_t)(uintptr_t)outside;
	assert_int_equal(unwind_fake(fx->u, regs, stack, sizeof(stack), ips, 16), 1);
	/* Inside the copy's address range, but the copy is shorter. */
	regs[R_BP] = FAKE_SP + 64;
	assert_int_equal(unwind_fake(fx->u, regs, stack, 72, ips, 16), 1);
	assert_int_equal(unwind_fake(fx->u, regs, NULL, 0, ips, 16), 1);
	/* A frame that points at itself ends the walk. */
	put64(stack, 64, FAKE_SP + 64);
	put64(stack, 72, NOCODE + 0x100);
	n = unwind_fake(fx->u, regs, stack, sizeof(stack), ips, ARRAY_SIZE(ips));
	assert_true(n >= 2 && n <= 3);
	/* A return address of 0 ends the walk. */
	put64(stack, 72, 0);
	assert_int_equal(unwind_fake(fx->u, regs, stack, sizeof(stack), ips, 16), 1);
	fixture_free(fx);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A plausible or random value: code addresses, stack addresses, junk. */
static uint64_t garbage_word(struct fixture *fx, uint64_t *seed, uint64_t sp)
{
	uint64_t r = xorshift(seed);
	const struct xmap *m = &fx->maps[r % fx->nr];

	switch ((r >> 16) % 4) {
	case 0: return m->start + (xorshift(seed) % (m->end - m->start));
	case 1: return sp + (xorshift(seed) % 8192) - 1024;
	case 2: return xorshift(seed) % 64;
	default: return xorshift(seed);
	}
}

/* Random registers and stacks: no crash, no hang, at most max frames. */
static void test_garbage(void **state)
{
	struct fixture *fx = fixture_new();
	uint64_t seed = 0x9e3779b97f4a7c15ULL, regs[20], ips[64], total = 0;
	static uint8_t stack[8192];

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		uint64_t sp = (xorshift(&seed) & 3) ? FAKE_SP : xorshift(&seed);
		size_t len = (size_t)(xorshift(&seed) % (sizeof(stack) + 1));
		int n;

		for (size_t i = 0; i < ARRAY_SIZE(regs); i++)
			regs[i] = garbage_word(fx, &seed, sp);
		regs[R_SP] = sp;
		for (size_t off = 0; off + 8 <= sizeof(stack); off += 8)
			put64(stack, off, garbage_word(fx, &seed, sp));
		n = unwind_fake(fx->u, regs, stack, len, ips, ARRAY_SIZE(ips));
		assert_true(n >= 1);
		assert_int_equal(ips[0], regs[R_IP]);
		total += (uint64_t)n;
	}
	print_message("3000 garbage samples: %" PRIu64 " frames\n", total);
	fixture_free(fx);
}

static void test_arguments(void **state)
{
	struct unwinder *u = unwinder_new();
	uint64_t regs[20] = {0}, ips[4], ip_flags[2] = {NOCODE, 0};
	uint8_t stack[64] = {0};
	struct error err = ERROR_INIT;

	(void)state;
	regs[R_IP] = NOCODE;
	regs[R_SP] = FAKE_SP;
	assert_int_equal(unwinder_unwind(NULL, 1, regs, FULL_MASK, stack, 64, ips, 4, &err),
			 ERR_USAGE);
	assert_non_null(strstr(err.msg, "unwind"));
	err = (struct error)ERROR_INIT;
	assert_int_equal(unwinder_unwind(u, 1, NULL, FULL_MASK, stack, 64, ips, 4, &err),
			 ERR_USAGE);
	assert_non_null(strstr(err.msg, "regs"));
	err = (struct error)ERROR_INIT;
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK, NULL, 64, ips, 4, &err), ERR_USAGE);
	assert_non_null(strstr(err.msg, "stack"));
	err = (struct error)ERROR_INIT;
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK, stack, 64, NULL, 4, &err),
			 ERR_USAGE);
	err = (struct error)ERROR_INIT;
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK, stack, 64, ips, 0, &err),
			 ERR_USAGE);
	assert_non_null(strstr(err.msg, "max"));
	/* NULL err is allowed. */
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK, stack, 64, ips, 0, NULL),
			 ERR_USAGE);
#if defined(__x86_64__)
	/* No IP: nothing known.  No SP: the PC only.  No mappings at all: the PC. */
	assert_int_equal(unwinder_unwind(u, 1, NULL, 0, stack, 64, ips, 4, &err), 0);
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK & ~(1ULL << PERF_REG_X86_IP), stack,
					 64, ips, 4, &err),
			 0);
	ips[0] = 0;
	assert_int_equal(unwinder_unwind(u, 1, ip_flags,
					 (1ULL << PERF_REG_X86_IP) | (1ULL << PERF_REG_X86_FLAGS),
					 stack, 64, ips, 4, &err),
			 1);
	assert_int_equal(ips[0], NOCODE);
	assert_int_equal(unwinder_unwind(u, 0, regs, FULL_MASK, stack, 64, ips, 4, &err), 1);
	assert_int_equal(ips[0], NOCODE);
#else
	assert_int_equal(unwinder_unwind(u, 1, regs, FULL_MASK, stack, 64, ips, 4, &err),
			 ERR_UNSUPPORTED);
#endif
	unwinder_free(u);
	unwinder_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_frame_pointer_and_bounds),
		cmocka_unit_test(test_garbage),
#if defined(__x86_64__)
		cmocka_unit_test(test_snapshot_through_libc),
		cmocka_unit_test(test_clone_is_independent),
		cmocka_unit_test(test_replaced_mappings),
		cmocka_unit_test(test_perf_samples),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
