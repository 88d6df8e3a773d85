/* SPDX-License-Identifier: MIT */
/*
 * Symbolizer tests on fixture programs compiled here at run time: each
 * prints its own function addresses and /proc/self/maps line, which are
 * the oracle; libc is checked against dladdr.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "symbol/symbolize.h"
#include "symbol/plt_testutil.h"

#include "symbol/symbolize_testutil.h"

static const char fixture_src[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"static void *volatile ret;\n"
	"__attribute__((noinline)) int leaf_fn(int x)\n"
	"{ ret = __builtin_return_address(0); return x * 3 + 1; } /* LEAF */\n"
	"static inline __attribute__((always_inline)) int inl_fn(int x)\n"
	"{\n"
	"	return leaf_fn(x) + 7; /* INL_CALL */\n"
	"}\n"
	"__attribute__((noinline)) int outer_fn(int x)\n"
	"{\n"
	"	return inl_fn(x) * 2; /* OUTER_CALL */\n"
	"}\n"
	"int mangled_fn(int x) __asm__(\"_ZN3foo3barEi\");\n"
	"__attribute__((noinline)) int mangled_fn(int x) { return x + 1; }\n"
	"int rust_legacy(int x) __asm__(\"_ZN4core3fmt5write17h0123456789abcdefE\");\n"
	"__attribute__((noinline)) int rust_legacy(int x) { return x + 2; }\n"
	"int rust_v0(int x) __asm__(\"_RNvCs1234_7mycrate3foo\");\n"
	"__attribute__((noinline)) int rust_v0(int x) { return x + 3; }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char line[4096];\n"
	"	FILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"	(void)argv;\n"
	"	printf(\"%d %d %d %d\\n\", outer_fn(argc), mangled_fn(argc), rust_legacy(argc),\n"
	"	       rust_v0(argc));\n"
	"	printf(\"rust %p %p\\n\", (void *)rust_legacy, (void *)rust_v0);\n"
	"	printf(\"leaf %p\\nouter %p\\nmangled %p\\nret %p\\n\", (void *)leaf_fn,\n"
	"	       (void *)outer_fn, (void *)mangled_fn, ret);\n"
	"	while (f && fgets(line, sizeof(line), f)) {\n"
	"		unsigned long lo, hi;\n"
	"		if (sscanf(line, \"%lx-%lx\", &lo, &hi) == 2 && lo <= (unsigned "
	"long)leaf_fn &&\n"
	"		    (unsigned long)leaf_fn < hi)\n"
	"			printf(\"map %s\", line);\n"
	"	}\n"
	"	return 0;\n"
	"}\n";

/*
 * Functions with .eh_frame FDEs, and eh_nofde, written in assembly without
 * CFI: no FDE covers it.  Prints eh_one's address and its mapping.
 */

struct fixture_run {
	uint64_t leaf, outer, mangled, ret, rust_legacy, rust_v0;
	struct mapping map;
};

static unsigned marker_line(const char *marker)
{
	const char *p = strstr(fixture_src, marker);
	unsigned line = 1;

	assert_non_null(p);
	for (const char *q = fixture_src; q < p; q++)
		line += *q == '\n';
	return line;
}

static void fixture_exec(const char *name, struct fixture_run *r)
{
	char cmd[4200], line[4200];
	void *p, *q;
	FILE *f;

	memset(r, 0, sizeof(*r));
	snprintf(cmd, sizeof(cmd), "%s/%s", tmpdir, name);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "leaf %p", &p) == 1)
			r->leaf = (uintptr_t)p;
		else if (sscanf(line, "outer %p", &p) == 1)
			r->outer = (uintptr_t)p;
		else if (sscanf(line, "mangled %p", &p) == 1)
			r->mangled = (uintptr_t)p;
		else if (sscanf(line, "rust %p %p", &p, &q) == 2) {
			r->rust_legacy = (uintptr_t)p;
			r->rust_v0 = (uintptr_t)q;
		} else if (sscanf(line, "ret %p", &p) == 1)
			r->ret = (uintptr_t)p;
		else if (!strncmp(line, "map ", 4))
			assert_true(parse_maps_line(line + 4, &r->map));
	}
	assert_int_equal(pclose(f), 0);
	assert_true(r->leaf && r->outer && r->mangled && r->ret && r->rust_v0 && r->map.end);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir) || write_source("symfix.c", fixture_src, sizeof(fixture_src) - 1))
		return -1;
	return run("cd %s && cc -O0 -g -fPIE -pie -o o0 symfix.c && cc -O2 -g -fPIE -pie -o o2 "
		   "symfix.c && cc -O0 -g -fno-PIE -no-pie -o nopie symfix.c && "
		   "c++ -x c++ -O2 -g -fPIE -pie -o cxx "
		   "symfix.c && cp o2 stripped && strip stripped && cp o2 split && "
		   "objcopy --only-keep-debug split split.debug && objcopy --strip-all split && "
		   "objcopy --add-gnu-debuglink=split.debug split && cp o2 badcrc && "
		   "objcopy --only-keep-debug badcrc badcrc.debug && objcopy --strip-all badcrc && "
		   "objcopy --add-gnu-debuglink=badcrc.debug badcrc && echo >> badcrc.debug && "
		   "cp o2 fifo && objcopy --only-keep-debug fifo fifo.debug && objcopy --strip-all "
		   "fifo && "
		   "objcopy --add-gnu-debuglink=fifo.debug fifo && rm fifo.debug && mkfifo "
		   "fifo.debug && "
		   "cp o2 mini && objcopy --only-keep-debug o2 mini.dbg && "
		   "objcopy --strip-debug --remove-section .comment mini.dbg && xz -f mini.dbg && "
		   "strip --strip-all mini && objcopy --add-section .gnu_debugdata=mini.dbg.xz "
		   "mini && "
		   "printf 'not an elf\\n' > text && "
		   "head -c 1000 o0 > truncated && chmod +x truncated",
		   tmpdir);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* The names, inline chain and lines of a fixture with DWARF (in it or in its debug file). */
static void check_debug_fixture(const char *name, bool cxx)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[8];
	struct fixture_run r;
	struct sym_module *m;
	int n;

	fixture_exec(name, &r);
	m = symbolizer_module(s, r.map.path, r.map.start, r.map.end, r.map.pgoff, NULL);

	assert_int_equal(lookup(s, m, r.leaf, f, 8), 1);
	assert_string_equal(f[0].function, cxx ? "leaf_fn(int)" : "leaf_fn");
	assert_true(ends_with(f[0].file, "/symfix.c"));
	assert_int_equal(f[0].line, marker_line("LEAF"));
	assert_int_equal(f[0].flags, 0);

	/* At -O2 the entry may already be inside the inlined inl_fn. */
	n = lookup(s, m, r.outer, f, 8);
	assert_true(n >= 1);
	assert_string_equal(f[n - 1].function, cxx ? "outer_fn(int)" : "outer_fn");

	n = lookup(s, m, r.ret - 1, f, 8);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].function, "inl_fn");
	assert_int_equal(f[0].flags, SYM_FRAME_INLINED);
	assert_true(ends_with(f[0].file, "/symfix.c"));
	assert_int_equal(f[0].line, marker_line("INL_CALL"));
	assert_string_equal(f[1].function, cxx ? "outer_fn(int)" : "outer_fn");
	assert_int_equal(f[1].flags, 0);
	assert_true(ends_with(f[1].file, "/symfix.c"));
	assert_int_equal(f[1].line, marker_line("OUTER_CALL"));
	assert_int_equal(f[0].offset, f[1].offset);

	/* Room for one frame: the innermost only. */
	assert_int_equal(lookup(s, m, r.ret - 1, f, 1), 1);
	assert_string_equal(f[0].function, "inl_fn");

	assert_int_equal(lookup(s, m, r.mangled, f, 8), 1);
	assert_string_equal(f[0].function, "foo::bar(int)");
	assert_int_equal(lookup(s, m, r.rust_legacy, f, 8), 1);
	assert_string_equal(f[0].function, "core::fmt::write");
	assert_int_equal(lookup(s, m, r.rust_v0, f, 8), 1);
	assert_string_equal(f[0].function, "mycrate::foo");
	symbolizer_free(s);
}

static void test_o0(void **state)
{
	(void)state;
	check_debug_fixture("o0", false);
}

static void test_o2(void **state)
{
	(void)state;
	check_debug_fixture("o2", false);
}

/* The same source as C++: names from mangled symbols and DW_AT_linkage_name. */
static void test_cxx(void **state)
{
	(void)state;
	check_debug_fixture("cxx", true);
}

/* A non-PIE executable: load bias 0. */
static void test_nopie(void **state)
{
	(void)state;
	check_debug_fixture("nopie", false);
}

static void test_split_debuglink(void **state)
{
	(void)state;
	check_debug_fixture("split", false);
}

/* MiniDebugInfo: names from .gnu_debugdata's .symtab, no DWARF. */
static void test_minidebuginfo(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[4];
	struct fixture_run r;
	struct sym_module *m;

	(void)state;
	fixture_exec("mini", &r);
	m = symbolizer_module(s, r.map.path, r.map.start, r.map.end, r.map.pgoff, NULL);
	assert_int_equal(lookup(s, m, r.leaf, f, 4), 1);
	assert_string_equal(f[0].function, "leaf_fn");
	assert_null(f[0].file);
	assert_int_equal(lookup(s, m, r.ret - 1, f, 4), 1);
	assert_string_equal(f[0].function, "outer_fn");
	assert_int_equal(lookup(s, m, r.mangled, f, 4), 1);
	assert_string_equal(f[0].function, "foo::bar(int)");
	symbolizer_free(s);
}

static void expect_stripped(const char *name)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[4];
	struct fixture_run r;
	struct sym_module *m;
	uint64_t bias;

	fixture_exec(name, &r);
	m = symbolizer_module(s, r.map.path, r.map.start, r.map.end, r.map.pgoff, NULL);
	assert_int_equal(lookup(s, m, r.leaf, f, 4), 0);
	assert_int_equal(f[0].reason, SYM_STRIPPED);
	assert_string_equal(sym_reason_str(f[0].reason), "stripped");
	assert_int_not_equal(f[0].offset, 0);
	assert_int_equal(f[0].flags, SYM_FRAME_FUNC_START);
	bias = r.leaf - f[0].offset;
	/* Inside outer_fn: its start, from its FDE. */
	assert_int_equal(lookup(s, m, r.ret - 1, f, 4), 0);
	assert_int_equal(f[0].reason, SYM_STRIPPED);
	assert_int_equal(f[0].flags, SYM_FRAME_FUNC_START);
	assert_int_equal(f[0].offset, r.outer - bias);
	symbolizer_free(s);
}

static void test_stripped(void **state)
{
	(void)state;
	expect_stripped("stripped");
}

/* A debug file whose CRC differs from the .gnu_debuglink's is not used. */
static void test_debuglink_crc(void **state)
{
	(void)state;
	expect_stripped("badcrc");
	/* A FIFO where the debug file should be is not opened (opening it would hang). */
	expect_stripped("fifo");
}

/*
 * libc's qsort in this process (asked of libc itself: the sanitizers
 * interpose their own), named as dladdr names it, in the mapping
 * /proc/self/maps gives.
 */
static void *libc_qsort(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *p = libc ? dlsym(libc, "qsort") : NULL;

	if (libc)
		dlclose(libc);
	return p;
}

static void test_libc(void **state)
{
	void *fn = libc_qsort();
	uint64_t addr = (uintptr_t)fn;
	struct symbolizer *s = symbolizer_new();
	struct mapping map = {0};
	struct sym_frame f[8];
	char line[4200];
	Dl_info info;
	FILE *maps;
	int n;

	(void)state;
	assert_non_null(fn);
	assert_true(dladdr(fn, &info) && info.dli_sname);
	assert_string_equal(info.dli_sname, "qsort");
	maps = fopen("/proc/self/maps", "r");
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		if (parse_maps_line(line, &map) && map.start <= addr && addr < map.end)
			break;
		map.end = 0;
	}
	fclose(maps);
	assert_true(map.end != 0);
	struct sym_module *m = symbolizer_module(s, map.path, map.start, map.end, map.pgoff, NULL);
	n = lookup(s, m, addr, f, 8);
	assert_true(n >= 1);
	assert_string_equal(f[n - 1].function, info.dli_sname);
	/* libc6-dbg's build-id debug file has the DWARF. */
	assert_true(ends_with(f[0].file, ".c"));
	assert_true(f[0].line > 0);
	/* And again, through the last-lookup cache. */
	assert_int_equal(lookup(s, m, addr, f, 8), n);
	assert_string_equal(f[n - 1].function, info.dli_sname);
	symbolizer_free(s);

	/* libc gone, but its build-id finds libc6-dbg's debug file, which stands in. */
	char bid[128] = "", deleted[4200];
	snprintf(line, sizeof(line), "readelf -n '%s' | awk '/Build ID/ { print $3 }'", map.path);
	maps = popen(line, "r");
	assert_non_null(maps);
	assert_non_null(fgets(bid, sizeof(bid), maps));
	pclose(maps);
	bid[strcspn(bid, "\n")] = '\0';
	snprintf(deleted, sizeof(deleted), "%s (deleted)", map.path);
	s = symbolizer_new();
	m = symbolizer_module(s, deleted, map.start, map.end, map.pgoff, bid);
	assert_int_equal(lookup(s, m, addr, f, 8), n);
	assert_string_equal(f[n - 1].function, "qsort");
	assert_true(ends_with(f[0].file, ".c"));
	m = symbolizer_module(s, deleted, map.start, map.end, map.pgoff, NULL);
	assert_int_equal(lookup(s, m, addr, f, 8), 0);
	assert_int_equal(f[0].reason, SYM_DELETED);
	symbolizer_free(s);
}

static void test_perf_map(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[2];
	struct sym_module *m;
	char path[4200];
	FILE *map;

	(void)state;
	snprintf(path, sizeof(path), "%s/perf-4242.map", tmpdir);
	map = fopen(path, "w");
	assert_non_null(map);
	fputs("1000 100 jit_one\nnot a line\n2000 0 LazyCompile:two a.js:3\n3000 10 last\n", map);
	assert_int_equal(fclose(map), 0);
	m = symbolizer_module(s, path, 0, UINT64_MAX, 0, NULL);
	assert_int_equal(lookup(s, m, 0x1050, f, 2), 1);
	assert_string_equal(f[0].function, "jit_one");
	assert_int_equal(f[0].offset, 0x1050);
	assert_int_equal(lookup(s, m, 0x2fff, f, 2), 1);
	assert_string_equal(f[0].function, "LazyCompile:two a.js:3");
	assert_null(f[0].file);
	assert_int_equal(lookup(s, m, 0x1100, f, 2), 0);
	assert_int_equal(f[0].reason, SYM_NO_SYMBOL);
	assert_int_equal(lookup(s, m, 0x3010, f, 2), 0);
	symbolizer_free(s);
}

/* The kernel's "schedule", as /proc/kallsyms lists it. */
static void test_kallsyms(void **state)
{
	struct symbolizer *s = symbolizer_new();
	unsigned long long addr = 0;
	struct sym_frame f[2];
	struct sym_module *m;
	char line[4200];
	FILE *ks;

	(void)state;
	ks = fopen("/proc/kallsyms", "r");
	assert_non_null(ks);
	while (!addr && fgets(line, sizeof(line), ks)) {
		if (!strstr(line, " T schedule\n") || sscanf(line, "%llx", &addr) != 1)
			addr = 0;
	}
	fclose(ks);
	assert_true(addr != 0);
	m = symbolizer_module(s, "[kernel.kallsyms]", 0, UINT64_MAX, 0, NULL);
	assert_int_equal(lookup(s, m, addr + 1, f, 2), 1);
	assert_string_equal(f[0].function, "schedule");
	assert_int_equal(f[0].flags, SYM_FRAME_KERNEL);
	symbolizer_free(s);
}

/* Damaged copies of o0 (bytes flipped, then cut short): a reason or names, never a crash. */
static void test_corrupt(void **state)
{
	uint64_t seed = 42;
	struct fixture_run r;
	char path[4200];
	size_t len;
	unsigned char *orig;

	(void)state;
	fixture_exec("o0", &r);
	orig = slurp(r.map.path, &len);
	assert_true(len > 4096);
	snprintf(path, sizeof(path), "%s/corrupt", tmpdir);
	for (int i = 0; i < 256; i++) {
		unsigned char *copy = malloc(len);
		size_t cut = len;
		FILE *f;

		assert_non_null(copy);
		memcpy(copy, orig, len);
		for (int k = 0; k < 16; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t x = (size_t)(seed >> 33);
			/* ELF header, section headers (at the end), anywhere. */
			size_t pos = k < 2 ? x % 64 : k < 8 ? len - 1 - x % 2048 : x % len;

			copy[pos] ^= (unsigned char)(seed >> 17);
		}
		if (i % 4 == 3)
			cut = (size_t)(seed >> 40) % len;
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(copy, 1, cut, f), cut);
		assert_int_equal(fclose(f), 0);
		free(copy);

		struct symbolizer *s = symbolizer_new();
		struct sym_module *m =
			symbolizer_module(s, path, r.map.start, r.map.end, r.map.pgoff, NULL);
		uint64_t addrs[] = {r.leaf, r.outer, r.ret - 1, r.mangled, r.map.start};
		struct sym_frame fr[8];

		for (size_t a = 0; a < ARRAY_SIZE(addrs); a++) {
			int n = lookup(s, m, addrs[a], fr, 8);

			assert_true(n <= 8);
			assert_true(n > 0 || fr[0].reason != SYM_OK);
		}
		symbolizer_free(s);
	}
	free(orig);
}

static void expect_reason(const char *path, const char *build_id, enum sym_reason want)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_module *m = symbolizer_module(s, path, 0x1000, 0x2000, 0, build_id);
	struct sym_frame f[2];

	assert_int_equal(lookup(s, m, 0x1100, f, 2), 0);
	assert_int_equal(f[0].reason, want);
	symbolizer_free(s);
}

static void test_bad_input(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct error err = ERROR_INIT;
	struct sym_frame f[1];
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "%s/text", tmpdir);
	expect_reason(path, NULL, SYM_NOT_ELF);
	snprintf(path, sizeof(path), "%s/truncated", tmpdir);
	expect_reason(path, NULL, SYM_NOT_ELF);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	expect_reason(path, NULL, SYM_NO_FILE);
	expect_reason("[vdso]", NULL, SYM_NO_FILE);
	expect_reason("/dev/null", NULL, SYM_NO_FILE);
	snprintf(path, sizeof(path), "%s/pipe", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_reason(path, NULL, SYM_NO_FILE);
	snprintf(path, sizeof(path), "%s/o0 (deleted)", tmpdir);
	expect_reason(path, NULL, SYM_DELETED);
	snprintf(path, sizeof(path), "%s/o0", tmpdir);
	expect_reason(path, "00ff00ff", SYM_BUILD_ID);

	struct sym_module *m = symbolizer_module(s, path, 0x1000, 0x2000, 0, NULL);
	assert_int_equal(lookup(s, m, 0x3000, f, 1), 0);
	assert_int_equal(f[0].reason, SYM_OUT_OF_RANGE);
	assert_int_equal(symbolizer_lookup(s, m, 0x1100, f, 0, &err), ERR_USAGE);
	assert_int_equal(err.code, ERR_USAGE);
	symbolizer_free(s);
	symbolizer_free(NULL);
	for (int r = SYM_OK; r <= SYM_OUT_OF_RANGE; r++)
		assert_string_not_equal(sym_reason_str((enum sym_reason)r), "unknown");
	assert_string_equal(sym_reason_str((enum sym_reason)99), "unknown");
}

/* A symbolizer with one module: the file under test. */
struct plt_handle {
	struct symbolizer *s;
	struct sym_module *m;
};

static void *plt_open(const char *path, uint64_t off, uint64_t vaddr, uint64_t size)
{
	struct plt_handle *h = malloc(sizeof(*h));

	assert_non_null(h);
	h->s = symbolizer_new();
	/* Mapped where the file says: runtime addresses are ELF vaddrs. */
	h->m = symbolizer_module(h->s, path, vaddr, vaddr + size, off, NULL);
	return h;
}

static const char *plt_name(void *v, uint64_t addr)
{
	struct plt_handle *h = v;
	struct error err = ERROR_INIT;
	struct sym_frame fr[2];

	assert_int_equal(symbolizer_lookup(h->s, h->m, addr, fr, 2, &err), 1);
	return fr[0].function;
}

static void plt_close(void *v)
{
	struct plt_handle *h = v;

	symbolizer_free(h->s);
	free(h);
}

/*
 * Each PLT stub objdump names "x@plt" is named so (not "[plt]" for all of
 * them), in a lazy .plt with .plt.got, in an IBT build (.plt.sec, 16-byte
 * .plt.got) and in a non-PIE program; the lazy PLT's header stays "[plt]".
 */
static void test_plt_stubs(void **state)
{
	(void)state;
	testutil_plt_stubs(tmpdir, &(struct testutil_plt_ops){plt_open, plt_name, plt_close});
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_o0),
		cmocka_unit_test(test_o2),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_split_debuglink),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_debuglink_crc),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_perf_map),
		cmocka_unit_test(test_kallsyms),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_plt_stubs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
