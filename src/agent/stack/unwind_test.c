/* SPDX-License-Identifier: MIT */
/*
 * Tests of the agent's unwinder on this process's real stacks, one walk at
 * a time (tables that change under walks: unwind_load_test.c; what both
 * share: unwind_testutil.h).  Built with -fomit-frame-pointer, linked with
 * tests/fixtures/src/agent/stack/unwind_fixture.c (a shared library built
 * -O2 -fomit-frame-pointer) and -rdynamic, so that dladdr1() gives the
 * range of the test's own functions.  The lazy-binding test loads
 * libunwind-lazy.so (tests/fixtures/src/agent/stack/unwind_lazy.c) from the
 * directory of this executable; unwind_load_test.c loads libunwind-dl.so
 * (tests/fixtures/src/agent/stack/unwind_dl.c) from there too, or from
 * $PLATEAU_UNWIND_DL.
 *
 * Stacks are taken in a SIGPROF handler (raise() or per-thread timers) and by
 * agent_unwind_here(), then checked frame by frame against the functions'
 * address ranges and against glibc's backtrace() (libgcc's unwinder) taken
 * on the same call path outside the handler.  Only the unwinder must avoid
 * the loader: the tests use dladdr and backtrace freely, outside handlers.
 */
#include "agent/stack/unwind_testutil.h"

/* Exported (-rdynamic) so that pc_in() finds them. */
void cb_here(void *arg);
void cb_drap(void *arg);
void cb_rbx(void *arg);
void lazy_hook(void);
int cmp_sample(const void *a, const void *b);
void sort_sampled(void);
void call_nocfi(void);

/* ---- helpers ---- */

static bool pc_in_file(uintptr_t pc, const char *part)
{
	Dl_info info;

	return dladdr((void *)pc, &info) && info.dli_fname && strstr(info.dli_fname, part);
}

static void assert_same(const struct sample *a, const struct sample *b)
{
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->pcs, b->pcs, a->n * sizeof(a->pcs[0]));
	assert_int_equal(a->truncated, b->truncated);
}

/* HERE, walked inside the handler, continues through the signal frame into FULL. */
static void assert_sigframe_tail(const struct sample *here, const struct sample *full)
{
	size_t j;

	assert_false(here->truncated);
	assert_true(here->n > full->n);
	j = here->n - full->n;
	assert_memory_equal(here->pcs + j, full->pcs, full->n * sizeof(uintptr_t));
	assert_true(pc_in(here->pcs[0], "walk_one"));
}

/* ---- tests ---- */

static void test_refresh(void **state)
{
	struct agent_unwind_stats a, b;
	uintptr_t pcs[4];
	bool truncated = false;

	(void)state;
	agent_unwind_stats(&a);
	if (a.refreshes == 0) {
		/* No table yet: the walk stops after its first pc, truncated. */
		assert_int_equal(agent_unwind_here(t_lo, t_hi, pcs, 4, 0, &truncated), 1);
		assert_true(truncated);
	}
	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&a);
	print_message("# refresh: %zu modules, %zu rows, %zu KiB, %zu without CFI, %zu bad FDEs, "
		      "%.3f ms\n",
		      a.modules, a.rows, a.bytes / 1024, a.bad_modules, a.bad_fdes,
		      (double)a.last_refresh_ns / 1e6);
	/* exe, fixture, cmocka, libc, libgcc_s, ld.so and the vDSO at least */
	assert_true(a.modules >= 7);
	assert_int_equal(a.bad_modules, 0);
	assert_int_equal(a.bad_fdes, 0);
	assert_true(a.rows > 10000); /* libc alone has ~3700 FDEs */
	assert_true(a.bytes >= a.rows * 12);

	assert_int_equal(agent_unwind_refresh(), 0);
	agent_unwind_stats(&b);
	print_message("# refresh again (all reused): %.3f ms\n", (double)b.last_refresh_ns / 1e6);
	assert_int_equal(b.parsed, a.parsed);
	assert_int_equal(b.reused - a.reused, b.modules);
	assert_int_equal(b.modules, a.modules);
	assert_int_equal(b.rows, a.rows);
	assert_int_equal(b.leaked, 0);
}

/* A signal in libc's raise(), under cb_sample called through the fixture. */
static void test_signal_fixture(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_level1(cb_sample, NULL);
	assert_true(pc_in_file(s_full.pcs[0], "libc.so"));
	k = assert_matches_backtrace(&s_full);
	assert_fixture_chain(&s_full, k);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

static uintptr_t cb_drap_ra;

TEST void cb_drap(void *arg)
{
	cb_drap_ra = (uintptr_t)__builtin_return_address(0);
	fx_drap(cb_sample, arg, 24);
	sink++;
}

/* Through realigned frames: CFA = rbp + 16, then CFA = *(rbp - 8) with rbp at [rbp]. */
static void test_signal_realigned(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_aligned(cb_drap, NULL);
	k = assert_matches_backtrace(&s_full);
	assert_hops(&s_full, k,
		    (const struct hop[]){{"cb_sample", cb_ra},
					 {"fx_drap", fx_drap_ra},
					 {"cb_drap", cb_drap_ra},
					 {"fx_aligned", fx_aligned_ra}},
		    4);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

#define JUNK ((uintptr_t)0x1230) /* a word that is no return address */

/*
 * Walk a made-up context at PC whose stack holds a zero return address at
 * word RA_AT and junk everywhere else: the right CFA rule reads the zero and
 * ends the walk after one frame; a wrong one returns into junk, and the
 * frame-pointer fallback stops at the junk rbp (both truncated).
 */
static void assert_ends_at(uintptr_t pc, size_t ra_at)
{
	uintptr_t stack[8], pcs[4];
	bool truncated = true;
	ucontext_t uc;
	size_t i;

	for (i = 0; i < 8; i++)
		stack[i] = i == ra_at ? 0 : JUNK;
	memset(&uc, 0, sizeof(uc));
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)stack;
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)JUNK;
	assert_int_equal(agent_unwind_signal(&uc, (uintptr_t)stack, (uintptr_t)(stack + 8), pcs, 4,
					     &truncated),
			 1);
	assert_int_equal(pcs[0], pc);
	assert_false(truncated);
}

/*
 * An interrupted lazy PLT stub (jmp *GOT; push $index; jmp PLT0): CFA =
 * rsp + 8 up to the push, rsp + 16 after it.  The stub is the target of
 * fx_level2's call to fx_level3 (the call rel32 before fx_ra[3]).
 */
static void test_signal_plt(void **state)
{
	uintptr_t ra, plt;
	int32_t rel;

	(void)state;
	tables_ready();
	fx_level1(cb_nop, NULL);
	ra = fx_ra[3];
	assert_int_equal(*(const uint8_t *)(ra - 5), 0xe8);
	memcpy(&rel, (const void *)(ra - 4), 4);
	plt = ra + (uintptr_t)(intptr_t)rel;
	assert_false(pc_in(plt, "fx_level3")); /* a stub, not the function */
	assert_ends_at(plt, 0);
	assert_ends_at(plt + 6, 0);
	assert_ends_at(plt + 11, 1);
}

static uintptr_t nocfi_ra;
static struct sample nocfi_ref;

TEST void call_nocfi(void)
{
	nocfi_ra = (uintptr_t)__builtin_return_address(0);
	nocfi_ref.n = agent_unwind_here(t_lo, t_hi, nocfi_ref.pcs, MAXF, 0, &nocfi_ref.truncated);
	fx_nocfi(cb_sample, NULL);
	sink++;
}

/* Code without CFI that keeps a frame pointer: the walk follows rbp through it. */
static void test_signal_nocfi(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	call_nocfi();
	k = find_pc(&s_full, sample_ra - 1);
	assert_hops(&s_full, k,
		    (const struct hop[]){
			    {"cb_sample", cb_ra}, {"fx_nocfi", 0}, {"call_nocfi", nocfi_ra}},
		    3);
	/* from call_nocfi's caller on, the frames agent_unwind_here saw there */
	assert_false(nocfi_ref.truncated);
	assert_int_equal(s_full.n - (k + 3), nocfi_ref.n - 1);
	assert_memory_equal(s_full.pcs + k + 3, nocfi_ref.pcs + 1,
			    (nocfi_ref.n - 1) * sizeof(uintptr_t));
	assert_false(s_full.truncated);
	assert_same(&s_free, &s_full);
}

static uintptr_t cb_rbx_ra;

/* Between fx_rbx and cb_sample: saves rbx (its CFI says where) and leaves junk in it. */
TEST void cb_rbx(void *arg)
{
	cb_rbx_ra = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("mov %0, %%rbx" : : "i"(JUNK) : "rbx");
	cb_sample(arg);
	sink++;
}

/*
 * Through a frame whose CFA is rbx + 16 (as ld.so's lazy-binding resolver's
 * is), with rbx changed below it: the walk restores rbx from cb_rbx's save
 * slot.  Without that the walk ends at fx_rbx, truncated.
 */
static void test_signal_rbx(void **state)
{
	size_t k;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	fx_rbx(cb_rbx, NULL);
	k = assert_matches_backtrace(&s_full);
	assert_hops(
		&s_full, k,
		(const struct hop[]){{"cb_sample", cb_ra}, {"cb_rbx", cb_rbx_ra}, {"fx_rbx", 0}},
		3);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
}

static uintptr_t lazy_hook_ra; /* into the IFUNC resolver, called by ld.so */

TEST void lazy_hook(void)
{
	lazy_hook_ra = (uintptr_t)__builtin_return_address(0);
	raise(SIGPROF);
	sink++;
}

/*
 * A signal inside ld.so's lazy-binding resolver, deterministically: the
 * fixture's first call of an IFUNC symbol through its lazy PLT runs the
 * IFUNC resolver on the stack of _dl_fixup and _dl_runtime_resolve_* (CFA =
 * rbx + N), and the resolver calls lazy_hook.  The walk goes through ld.so
 * to fx_lazy_call and this test, and ends at the outermost frame.
 */
static void test_signal_lazy_resolver(void **state)
{
	void *h = dlopen(fixture_path("libunwind-lazy.so"), RTLD_LAZY | RTLD_LOCAL);
	void (**hook)(void);
	int (*call)(void);
	volatile uintptr_t *ra;
	size_t k, j, in_ld = 0;

	(void)state;
	assert_non_null(h);
	hook = (void (**)(void))dlsym(h, "fx_lazy_hook");
	*(void **)&call = dlsym(h, "fx_lazy_call");
	ra = (volatile uintptr_t *)dlsym(h, "fx_lazy_ra");
	assert_true(hook && call && ra);
	*hook = lazy_hook;
	tables_ready();
	mode = MODE_ONE;
	s_full.n = 0;
	assert_int_equal(call(), 43);
	assert_true(s_full.n > 0); /* the hook ran: the binding was lazy */
	k = find_pc(&s_full, lazy_hook_ra - 1);
	j = find_pc(&s_full, *ra - 1);
	assert_true(j > k + 1);
	for (size_t i = k + 1; i < j; i++)
		in_ld += pc_in_file(s_full.pcs[i], "ld-linux");
	assert_true(in_ld >= 1);
	assert_true(pc_in(s_full.pcs[j - 1], "fx_lazy_call"));
	assert_false(s_full.truncated);
	assert_same(&s_free, &s_full);
	assert_sigframe_tail(&s_here, &s_full);
	*hook = NULL;
}

/* The vDSO is a module too: at the entry of its clock_gettime, CFA = rsp + 8. */
static void test_signal_vdso(void **state)
{
	uintptr_t fn;
	void *vdso;

	(void)state;
	tables_ready();
	vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(vdso);
	fn = (uintptr_t)dlsym(vdso, "__vdso_clock_gettime");
	assert_true(fn != 0);
	assert_ends_at(fn, 0);
	dlclose(vdso);
}

static int cmp_calls;
static uintptr_t sort_ra;

TEST int cmp_sample(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (++cmp_calls == 20)
		sample_now();
	return (x > y) - (x < y);
}

TEST void sort_sampled(void)
{
	int v[64], i;

	sort_ra = (uintptr_t)__builtin_return_address(0);
	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	cmp_calls = 0;
	qsort(v, 64, sizeof(v[0]), cmp_sample);
	sink += (uint64_t)v[0];
}

/* A signal in a comparator called by qsort (libc, no frame pointers). */
static void test_signal_qsort(void **state)
{
	size_t k, j, in_libc = 0;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	sort_sampled();
	k = assert_matches_backtrace(&s_full);
	assert_true(pc_in(s_full.pcs[k], "cmp_sample"));
	/* qsort and its merge sort; under ASan, the sanitizer's own qsort */
	for (j = k + 1; j < s_full.n && !pc_in(s_full.pcs[j], "sort_sampled"); j++)
		in_libc += pc_in_file(s_full.pcs[j], "libc.so") ||
			   pc_in_file(s_full.pcs[j], "libasan.so");
	assert_true(in_libc >= 1);
	assert_true(j + 1 < s_full.n);
	assert_int_equal(s_full.pcs[j + 1], sort_ra - 1);
	assert_same(&s_free, &s_full);
}

/* Bounds that cut the stack truncate the walk cleanly; MAX does too. */
static void test_signal_bounds(void **state)
{
	volatile char here;
	size_t i;

	(void)state;
	tables_ready();
	mode = MODE_ONE;
	cut_at = (uintptr_t)&here; /* below this test's frame, above the fixture's */
	fx_level1(cb_sample, NULL);
	assert_false(s_full.truncated);
	assert_true(s_cut.truncated);
	assert_true(s_cut.n >= 1 && s_cut.n < s_full.n);
	for (i = 0; i < s_cut.n; i++)
		assert_int_equal(s_cut.pcs[i], s_full.pcs[i]);
	/* Up to this test's frame, whose return address lies above the cut. */
	assert_int_equal(s_cut.n, find_pc(&s_full, fx_ra[1] - 1) + 1);
	/* Nothing readable: only the interrupted pc. */
	assert_int_equal(s_low.n, 1);
	assert_true(s_low.truncated);
	assert_int_equal(s_low.pcs[0], s_full.pcs[0]);
	assert_int_equal(s_max.n, 3);
	assert_true(s_max.truncated);
	assert_memory_equal(s_max.pcs, s_full.pcs, 3 * sizeof(uintptr_t));
	cut_at = 0;
}

static struct sample h_full, h_skip, h_free;

TEST void cb_here(void *arg)
{
	void *b[MAXF];
	int i, n;

	(void)arg;
	cb_ra = (uintptr_t)__builtin_return_address(0);
	h_full.n = agent_unwind_here(t_lo, t_hi, h_full.pcs, MAXF, 0, &h_full.truncated);
	h_skip.n = agent_unwind_here(t_lo, t_hi, h_skip.pcs, MAXF, 2, &h_skip.truncated);
	h_free.n = agent_unwind_here(0, 0, h_free.pcs, MAXF, 0, &h_free.truncated);
	n = backtrace(b, MAXF);
	for (i = 0; i < n; i++)
		bt[i] = (uintptr_t)b[i];
	bt_n = (size_t)n;
	sink++;
}

/* agent_unwind_here() from a callback several frames down. */
static void test_here(void **state)
{
	size_t m, i;

	(void)state;
	tables_ready();
	fx_level1(cb_here, NULL);
	assert_false(h_full.truncated);
	assert_true(pc_in(h_full.pcs[0], "cb_here"));
	assert_int_equal(h_full.pcs[1], cb_ra - 1);
	assert_true(pc_in(h_full.pcs[1], "fx_level3"));
	assert_true(pc_in(h_full.pcs[2], "fx_level2"));
	assert_true(pc_in(h_full.pcs[3], "fx_level1"));
	assert_int_equal(h_full.pcs[4], fx_ra[1] - 1);
	/* the rest is backtrace()'s */
	for (m = 0; m < bt_n && bt[m] != cb_ra; m++)
		;
	assert_int_equal(h_full.n - 1, bt_n - m);
	for (i = 0; m + i < bt_n; i++)
		assert_int_equal(h_full.pcs[1 + i] + 1, bt[m + i]);
	/* SKIP drops frames; 0/0 bounds give the same frames (pcs[0] is another call). */
	assert_int_equal(h_skip.n, h_full.n - 2);
	assert_memory_equal(h_skip.pcs, h_full.pcs + 2, h_skip.n * sizeof(uintptr_t));
	assert_false(h_skip.truncated);
	assert_int_equal(h_free.n, h_full.n);
	assert_memory_equal(h_free.pcs + 1, h_full.pcs + 1, (h_free.n - 1) * sizeof(uintptr_t));
	assert_false(h_free.truncated);
	/* No room at all. */
	assert_int_equal(agent_unwind_here(t_lo, t_hi, NULL, 0, 0, NULL), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_signal_fixture),
		cmocka_unit_test(test_signal_realigned),
		cmocka_unit_test(test_signal_plt),
		cmocka_unit_test(test_signal_vdso),
		cmocka_unit_test(test_signal_nocfi),
		cmocka_unit_test(test_signal_rbx),
		cmocka_unit_test(test_signal_lazy_resolver),
		cmocka_unit_test(test_signal_qsort),
		cmocka_unit_test(test_signal_bounds),
		cmocka_unit_test(test_here),
	};

	(void)argc;
	(void)argv;
	return cmocka_run_group_tests(tests, setup, NULL);
}
