/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's per-CU DWARF index against the reference it replaces
 * (dwarf_getscopes on every lookup): on -O2 -g fixtures with inlining,
 * compiled here, and on this test program itself, every address of
 * .text must give the same frames both ways.  And the address map the
 * index is painted on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "symbol/symbolize.h"
#include "symbol/symbolize_dwarf.h"

/* C: a hash table, qsort, recursion, a cold path; helpers inlined up to four deep. */
static const char c_src[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"struct entry { char key[32]; long value; struct entry *next; };\n"
	"struct table { struct entry **slots; size_t mask, count; };\n"
	"static inline unsigned long hash_str(const char *s)\n"
	"{\n"
	"	unsigned long h = 5381;\n"
	"	while (*s)\n"
	"		h = h * 33 + (unsigned char)*s++;\n"
	"	return h;\n"
	"}\n"
	"static inline struct entry **slot_of(struct table *t, const char *key)\n"
	"{\n"
	"	return &t->slots[hash_str(key) & t->mask];\n"
	"}\n"
	"static inline struct entry *find(struct table *t, const char *key)\n"
	"{\n"
	"	for (struct entry *e = *slot_of(t, key); e; e = e->next)\n"
	"		if (!strcmp(e->key, key))\n"
	"			return e;\n"
	"	return NULL;\n"
	"}\n"
	"static void *xalloc(size_t n)\n"
	"{\n"
	"	void *p = calloc(1, n);\n"
	"	if (__builtin_expect(!p, 0)) {\n"
	"		fprintf(stderr, \"out of memory (%zu bytes)\\n\", n);\n"
	"		abort();\n"
	"	}\n"
	"	return p;\n"
	"}\n"
	"static void grow(struct table *t)\n"
	"{\n"
	"	size_t old = t->mask + 1;\n"
	"	struct entry **slots = t->slots, *e, *next;\n"
	"	t->mask = old * 2 - 1;\n"
	"	t->slots = xalloc((t->mask + 1) * sizeof(*t->slots));\n"
	"	for (size_t i = 0; i < old; i++) {\n"
	"		for (e = slots[i]; e; e = next) {\n"
	"			struct entry **s = slot_of(t, e->key);\n"
	"			next = e->next;\n"
	"			e->next = *s;\n"
	"			*s = e;\n"
	"		}\n"
	"	}\n"
	"	free(slots);\n"
	"}\n"
	"static inline void put(struct table *t, const char *key, long v)\n"
	"{\n"
	"	struct entry *e = find(t, key), **s;\n"
	"	if (e) {\n"
	"		e->value += v;\n"
	"		return;\n"
	"	}\n"
	"	if (t->count * 2 > t->mask)\n"
	"		grow(t);\n"
	"	e = xalloc(sizeof(*e));\n"
	"	snprintf(e->key, sizeof(e->key), \"%s\", key);\n"
	"	e->value = v;\n"
	"	s = slot_of(t, key);\n"
	"	e->next = *s;\n"
	"	*s = e;\n"
	"	t->count++;\n"
	"}\n"
	"static inline long clamp(long x, long lo, long hi)\n"
	"{\n"
	"	return x < lo ? lo : x > hi ? hi : x;\n"
	"}\n"
	"static inline long score(const struct entry *e)\n"
	"{\n"
	"	long s = 0;\n"
	"	for (const char *p = e->key; *p; p++) {\n"
	"		if (*p >= 'a' && *p <= 'z') {\n"
	"			long w = clamp(*p - 'a', 2, 20);\n"
	"			s += w * w;\n"
	"		} else {\n"
	"			s -= 3;\n"
	"		}\n"
	"	}\n"
	"	return s * e->value;\n"
	"}\n"
	"static int cmp_entries(const void *a, const void *b)\n"
	"{\n"
	"	long x = score(*(struct entry *const *)a), y = score(*(struct entry *const *)b);\n"
	"	return x < y ? -1 : x > y;\n"
	"}\n"
	"__attribute__((noinline)) long fib(int n)\n"
	"{\n"
	"	return n < 2 ? n : fib(n - 1) + fib(n - 2);\n"
	"}\n"
	"static long depth(const char *s, int level)\n"
	"{\n"
	"	if (!*s)\n"
	"		return level;\n"
	"	switch (*s) {\n"
	"	case '(': return depth(s + 1, level + 1);\n"
	"	case ')': return depth(s + 1, level - 1) + 1;\n"
	"	default: return depth(s + 1, level) + (*s == ' ');\n"
	"	}\n"
	"}\n"
	"static const char text[] = \"the quick brown fox (jumps (over)) the lazy dog\";\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	struct table t = {xalloc(8 * sizeof(struct entry *)), 7, 0};\n"
	"	struct entry **all;\n"
	"	char word[32];\n"
	"	size_t n = 0, k = 0;\n"
	"	long total = 0;\n"
	"	for (const char *p = text;; p++) {\n"
	"		if (*p >= 'a' && *p <= 'z' && n < sizeof(word) - 1) {\n"
	"			word[n++] = *p;\n"
	"			continue;\n"
	"		}\n"
	"		if (n) {\n"
	"			word[n] = '\\0';\n"
	"			put(&t, word, argc + (long)n);\n"
	"			n = 0;\n"
	"		}\n"
	"		if (!*p)\n"
	"			break;\n"
	"	}\n"
	"	all = xalloc(t.count * sizeof(*all));\n"
	"	for (size_t i = 0; i <= t.mask; i++)\n"
	"		for (struct entry *e = t.slots[i]; e; e = e->next)\n"
	"			all[k++] = e;\n"
	"	qsort(all, k, sizeof(*all), cmp_entries);\n"
	"	for (size_t i = 0; i < k; i++)\n"
	"		total += score(all[i]);\n"
	"	printf(\"%zu %ld %ld %ld %s\\n\", k, total, fib(argc + 15), depth(text, 0),\n"
	"	       argc > 1 ? argv[1] : \"\");\n"
	"	return 0;\n"
	"}\n";

/* C++: namespaces, templates, member functions, virtuals, lambdas (linkage names). */
static const char cxx_src[] =
	"#include <cstdio>\n"
	"namespace geo {\n"
	"struct point {\n"
	"	double x, y;\n"
	"	double norm2() const { return x * x + y * y; }\n"
	"};\n"
	"template <typename T> inline T clampv(T v, T lo, T hi)\n"
	"{\n"
	"	return v < lo ? lo : hi < v ? hi : v;\n"
	"}\n"
	"template <typename T, int N> class ring {\n"
	"	T items_[N];\n"
	"	int head_ = 0, size_ = 0;\n"
	"public:\n"
	"	void push(const T &v)\n"
	"	{\n"
	"		items_[(head_ + size_) % N] = v;\n"
	"		if (size_ < N)\n"
	"			size_++;\n"
	"		else\n"
	"			head_ = (head_ + 1) % N;\n"
	"	}\n"
	"	template <typename F> void each(F f) const\n"
	"	{\n"
	"		for (int i = 0; i < size_; i++)\n"
	"			f(items_[(head_ + i) % N]);\n"
	"	}\n"
	"};\n"
	"class shape {\n"
	"public:\n"
	"	virtual ~shape() {}\n"
	"	virtual double area() const = 0;\n"
	"};\n"
	"class rect : public shape {\n"
	"	point lo_, hi_;\n"
	"public:\n"
	"	rect(point lo, point hi) : lo_(lo), hi_(hi) {}\n"
	"	double area() const override\n"
	"	{\n"
	"		return clampv(hi_.x - lo_.x, 0.0, 1e9) * clampv(hi_.y - lo_.y, 0.0, 1e9);\n"
	"	}\n"
	"};\n"
	"class disc : public shape {\n"
	"	point c_;\n"
	"	double r_;\n"
	"public:\n"
	"	disc(point c, double r) : c_(c), r_(r) {}\n"
	"	double area() const override { return 3.14159 * r_ * r_ + c_.norm2() * 0; }\n"
	"};\n"
	"} // namespace geo\n"
	"template <typename T, typename Less> static void insertion_sort(T *a, int n, Less less)\n"
	"{\n"
	"	for (int i = 1; i < n; i++) {\n"
	"		T v = a[i];\n"
	"		int j = i;\n"
	"		for (; j > 0 && less(v, a[j - 1]); j--)\n"
	"			a[j] = a[j - 1];\n"
	"		a[j] = v;\n"
	"	}\n"
	"}\n"
	"static int count_words(const char *text, const char *word)\n"
	"{\n"
	"	int n = 0;\n"
	"	for (const char *p = text; *p; p++) {\n"
	"		const char *q = word, *r = p;\n"
	"		while (*q && *r == *q)\n"
	"			q++, r++;\n"
	"		n += !*q && (p == text || p[-1] == ' ') && (*r == ' ' || !*r);\n"
	"	}\n"
	"	return n;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	static geo::point pts[128];\n"
	"	geo::ring<geo::shape *, 16> shapes;\n"
	"	int n = 100 + argc;\n"
	"	double total = 0;\n"
	"	for (int i = 0; i < n; i++)\n"
	"		pts[i] = {(double)(i * 7 % 13), (double)(i * 5 % 11)};\n"
	"	insertion_sort(pts, n, [](const geo::point &a, const geo::point &b) {\n"
	"		return a.norm2() < b.norm2();\n"
	"	});\n"
	"	for (int i = 0; i + 1 < n; i += 2) {\n"
	"		if (i % 4)\n"
	"			shapes.push(new geo::rect(pts[i], pts[i + 1]));\n"
	"		else\n"
	"			shapes.push(new geo::disc(pts[i], pts[i + 1].x));\n"
	"	}\n"
	"	shapes.each([&total](geo::shape *s) { total += s->area(); });\n"
	"	std::printf(\"%.1f %d %s\\n\", total, count_words(\"the fox the end\", \"the\"),\n"
	"		    argc > 1 ? argv[1] : \"\");\n"
	"	return 0;\n"
	"}\n";

static char tmpdir[] = "/tmp/symbolize_dwarf_test.XXXXXX";

/*
 * libdw's dwarf_getscopes leaks its scope array when it finds no
 * abstract origin for an inlined instance (elfutils 0.188): the
 * reference does that at every inlined address of the LTO fixture and of
 * some damaged copies.  The LeakSanitizer reads this at start-up; unused
 * in other builds.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libdw.so\n";
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	struct strbuf sb;
	va_list ap;
	int rc;

	strbuf_init(&sb, 0);
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	rc = system(sb.buf);
	strbuf_release(&sb);
	return rc;
}

static int write_source(const char *name, const char *src)
{
	char path[sizeof(tmpdir) + 16];
	size_t len = strlen(src);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	if (fwrite(src, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir) || write_source("inl.c", c_src) || write_source("inl.cc", cxx_src))
		return -1;
	/* inl.lto: the inlined functions' abstract origins are in another CU. */
	return run("cd %s && cc -O2 -g -o inl inl.c && ./inl >/dev/null && "
		   "cc -O2 -g -flto -o inl.lto inl.c && ./inl.lto >/dev/null && "
		   "c++ -O2 -g -o inlxx inl.cc && ./inlxx >/dev/null",
		   tmpdir);
}

static int teardown(void **state)
{
	(void)state;
	return run("rm -rf %s", tmpdir);
}

/* An ELF file's .text and its executable PT_LOAD, mapped so that runtime = ELF addresses. */
struct text_map {
	uint64_t lo, hi;	    /* .text */
	uint64_t start, end, pgoff; /* the mapping */
};

static void read_text_map(const char *path, struct text_map *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t shstrndx, nph;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	memset(t, 0, sizeof(*t));
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n =
			gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (n && !strcmp(n, ".text")) {
			t->lo = sh.sh_addr;
			t->hi = sh.sh_addr + sh.sh_size;
		}
	}
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    ph.p_vaddr <= t->lo && t->hi <= ph.p_vaddr + ph.p_memsz) {
			t->start = ph.p_vaddr & ~0xfffULL;
			t->end = ph.p_vaddr + ph.p_memsz;
			t->pgoff = ph.p_offset & ~0xfffULL;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(t->lo < t->hi && t->end);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void expect_same_frames(uint64_t addr, int n, const struct sym_frame *a,
			       const struct sym_frame *b)
{
	for (int i = 0; i < (n ? n : 1); i++) {
		if (same_str(a[i].function, b[i].function) && same_str(a[i].file, b[i].file) &&
		    a[i].line == b[i].line && a[i].flags == b[i].flags &&
		    a[i].offset == b[i].offset && a[i].reason == b[i].reason)
			continue;
		fail_msg("%#" PRIx64
			 " frame %d: index %s %s:%u flags %u, reference %s %s:%u flags %u",
			 addr, i, a[i].function, a[i].file, a[i].line, a[i].flags, b[i].function,
			 b[i].file, b[i].line, b[i].flags);
	}
}

struct compare_stats {
	size_t addrs, inlined, deepest;
	struct sym_dwarf_stats index; /* the indexing symbolizer's */
};

/*
 * Every step-th address of path's .text, symbolized by the index and by
 * the reference, with room for 16 frames and (every 3rd address) for 1
 * and 2: the same count and the same frames.
 */
static void compare_modes(const char *path, uint64_t step, struct compare_stats *cs)
{
	struct symbolizer *fast = symbolizer_new(), *ref = symbolizer_new();
	static const size_t maxes[] = {16, 1, 2};
	struct sym_module *mf, *mr;
	struct sym_dwarf_stats st;
	struct text_map t;

	memset(cs, 0, sizeof(*cs));
	read_text_map(path, &t);
	symbolizer_set_dwarf_mode(ref, SYM_DWARF_REFERENCE);
	assert_int_equal(symbolizer_dwarf_mode(fast), SYM_DWARF_INDEX);
	mf = symbolizer_module(fast, path, t.start, t.end, t.pgoff, NULL);
	mr = symbolizer_module(ref, path, t.start, t.end, t.pgoff, NULL);
	for (uint64_t addr = t.lo; addr < t.hi; addr += step) {
		for (size_t k = 0; k < (cs->addrs % 3 ? 1 : ARRAY_SIZE(maxes)); k++) {
			struct sym_frame a[16], b[16];
			struct error err = ERROR_INIT;
			int na = symbolizer_lookup(fast, mf, addr, a, maxes[k], &err);
			int nb = symbolizer_lookup(ref, mr, addr, b, maxes[k], &err);

			if (na != nb)
				fail_msg("%#" PRIx64
					 " (max %zu): %d frames from the index, %d from "
					 "the reference",
					 addr, maxes[k], na, nb);
			expect_same_frames(addr, na, a, b);
			if (k == 0 && na > 1)
				cs->inlined++;
			if (k == 0 && (size_t)na > cs->deepest)
				cs->deepest = (size_t)na;
		}
		cs->addrs++;
	}
	symbolizer_dwarf_stats(fast, &cs->index);
	symbolizer_dwarf_stats(ref, &st);
	assert_int_equal(st.cus, 0);
	symbolizer_free(fast);
	symbolizer_free(ref);
}

/* The index did the work: no CU fell back to dwarf_getscopes. */
static void expect_indexed(const struct compare_stats *cs)
{
	assert_true(cs->index.cus >= 1);
	assert_int_equal(cs->index.slow_cus, 0);
	assert_true(cs->index.funcs >= 1 && cs->index.intervals >= 1 && cs->index.bytes > 0);
}

static void test_c_every_address(void **state)
{
	struct compare_stats cs;
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "%s/inl", tmpdir);
	compare_modes(path, 1, &cs);
	expect_indexed(&cs);
	assert_true(cs.addrs > 1000);
	/* The fixture is what it is meant to be: inline chains, some of them deep. */
	assert_true(cs.inlined > cs.addrs / 10);
	assert_true(cs.deepest >= 4);
}

static void test_cxx_every_address(void **state)
{
	struct compare_stats cs;
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "%s/inlxx", tmpdir);
	compare_modes(path, 1, &cs);
	expect_indexed(&cs);
	assert_true(cs.addrs > 1000);
	assert_true(cs.inlined > cs.addrs / 10);
	assert_true(cs.deepest >= 3);
}

/*
 * LTO: each inlined instance's abstract origin is in an early-debug CU,
 * where libdw up to 0.188 does not look (no inline frames then), and
 * 0.189 on does.
 */
static void test_lto_every_address(void **state)
{
	struct compare_stats cs;
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "%s/inl.lto", tmpdir);
	compare_modes(path, 1, &cs);
	expect_indexed(&cs);
	assert_true(cs.addrs > 1000);
}

/*
 * dwz: the DIEs two CUs have in common (types, the inline functions'
 * abstract origins) moved to a partial unit each CU imports.  The walk
 * follows the imports in place, and finds the origins there.
 */
static void test_dwz_every_address(void **state)
{
	struct compare_stats cs;
	char path[4200];

	(void)state;
	if (run("command -v dwz >/dev/null")) {
		print_message("# dwz is not installed (scripts/deps.sh installs it)\n");
		skip();
	}
	assert_int_equal(run("cd %s && cc -O2 -g -c inl.c -o a.o && "
			     "cc -O2 -g -Dmain=main2 -Dfib=fib2 -c inl.c -o b.o && "
			     "cc -o inl.dwz a.o b.o && dwz inl.dwz && "
			     "readelf --debug-dump=info inl.dwz 2>/dev/null | "
			     "grep -q DW_TAG_imported_unit",
			     tmpdir),
			 0);
	snprintf(path, sizeof(path), "%s/inl.dwz", tmpdir);
	compare_modes(path, 1, &cs);
	expect_indexed(&cs);
	assert_int_equal(cs.index.cus, 2);
	assert_true(cs.inlined > cs.addrs / 10);
}

/*
 * This program: the library's own code, as the build compiled it (-O2 -g
 * by default), tens of compile units.  Every 61st address: the reference
 * costs ~0.2 ms a lookup here.
 */
static void test_self(void **state)
{
	struct compare_stats cs;
	char path[4200];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	(void)state;
	assert_true(n > 0);
	path[n] = '\0';
	compare_modes(path, 61, &cs);
	expect_indexed(&cs);
	assert_true(cs.addrs > 1000);
}

/* Whether path has a section called name. */
static bool elf_has_section(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;
	GElf_Shdr sh;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		const char *n =
			gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		found = n && !strcmp(n, name);
	}
	elf_end(elf);
	close(fd);
	return found;
}

/*
 * No .debug_aranges: gcc's build with the section removed.  The CU is
 * found from the CUs' own ranges, and every address gives what the
 * build with aranges gives (the code is the same bytes), in both modes.
 */
static void test_gcc_no_aranges(void **state)
{
	struct symbolizer *with = symbolizer_new(), *without = symbolizer_new();
	struct sym_module *mw, *mo;
	struct compare_stats cs;
	char a[4200], b[4200];
	size_t lines = 0, addrs = 0;
	struct text_map t;

	(void)state;
	snprintf(a, sizeof(a), "%s/inl", tmpdir);
	snprintf(b, sizeof(b), "%s/inl.noar", tmpdir);
	assert_int_equal(
		run("cd %s && objcopy --remove-section .debug_aranges inl inl.noar", tmpdir), 0);
	assert_true(elf_has_section(a, ".debug_aranges"));
	assert_false(elf_has_section(b, ".debug_aranges"));
	compare_modes(b, 1, &cs);
	expect_indexed(&cs);
	assert_true(cs.inlined > cs.addrs / 10);
	assert_true(cs.deepest >= 4);

	read_text_map(a, &t);
	mw = symbolizer_module(with, a, t.start, t.end, t.pgoff, NULL);
	mo = symbolizer_module(without, b, t.start, t.end, t.pgoff, NULL);
	for (uint64_t addr = t.lo; addr < t.hi; addr++, addrs++) {
		struct sym_frame x[16], y[16];
		struct error err = ERROR_INIT;
		int nx = symbolizer_lookup(with, mw, addr, x, ARRAY_SIZE(x), &err);
		int ny = symbolizer_lookup(without, mo, addr, y, ARRAY_SIZE(y), &err);

		if (nx != ny)
			fail_msg("%#" PRIx64 ": %d frames with aranges, %d without", addr, nx, ny);
		expect_same_frames(addr, nx, y, x);
		lines += y[0].file && y[0].line;
	}
	assert_true(lines > addrs / 2);
	symbolizer_free(with);
	symbolizer_free(without);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/*
 * Every address of the function name (start, size), straight from the
 * DWARF: the outermost frame is the function itself, every file is
 * inl.c, and most lines are known (clang gives line 0 to code it made up).
 */
static void expect_dwarf_function(struct symbolizer *s, struct sym_dwarf *w, const char *name,
				  uint64_t start, uint64_t size)
{
	uint64_t lines = 0;

	for (uint64_t addr = start; addr < start + size; addr++) {
		struct sym_frame f[16];
		size_t n;

		memset(f, 0, sizeof(f));
		n = sym_dwarf_frames(s, w, addr, f, ARRAY_SIZE(f));
		if (!n || !same_str(f[n - 1].function, name) ||
		    (f[n - 1].flags & SYM_FRAME_INLINED))
			fail_msg("%#" PRIx64 " in %s: %zu frames, outermost %s", addr, name, n,
				 n ? f[n - 1].function : "none");
		for (size_t i = 0; i < n; i++) {
			if (!ends_with(f[i].file, "/inl.c"))
				fail_msg("%#" PRIx64 " in %s frame %zu (%s): at %s:%u", addr, name,
					 i, f[i].function, f[i].file, f[i].line);
		}
		lines += f[0].line > 0;
	}
	if (lines <= size / 2)
		fail_msg("%s: %" PRIu64 " of %" PRIu64 " addresses with a line", name, lines, size);
}

/*
 * clang's default: no .debug_aranges at all.  The index agrees with the
 * reference (both find the CU by its ranges), and every address of each
 * fixture function clang kept gets that function's name and a line of
 * inl.c from DWARF alone.
 */
static void test_clang_no_aranges(void **state)
{
	static const char *const funcs[] = {"hash_str",	   "slot_of", "find",  "xalloc",
					    "grow",	   "put",     "clamp", "score",
					    "cmp_entries", "fib",     "depth", "main"};
	struct symbolizer *s = symbolizer_new();
	struct compare_stats cs;
	struct sym_dwarf *w;
	Elf_Scn *scn = NULL;
	size_t checked = 0;
	bool fib = false, main_seen = false;
	char path[4200];
	GElf_Shdr sh;
	Elf *elf;
	int fd;

	(void)state;
	assert_int_equal(
		run("cd %s && clang -O2 -g -o inl.clang inl.c && ./inl.clang >/dev/null", tmpdir),
		0);
	snprintf(path, sizeof(path), "%s/inl.clang", tmpdir);
	assert_true(elf_has_section(path, ".debug_info"));
	assert_false(elf_has_section(path, ".debug_aranges"));
	compare_modes(path, 1, &cs);
	expect_indexed(&cs);
	assert_true(cs.inlined > cs.addrs / 10);
	assert_true(cs.deepest >= 3);

	w = sym_dwarf_open(path);
	assert_non_null(w);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		assert_non_null(data);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t k = 0; name && k < ARRAY_SIZE(funcs); k++) {
				if (strcmp(name, funcs[k]))
					continue;
				expect_dwarf_function(s, w, name, sym.st_value, sym.st_size);
				checked++;
				fib |= !strcmp(name, "fib");
				main_seen |= !strcmp(name, "main");
			}
		}
	}
	elf_end(elf);
	close(fd);
	print_message("# clang build: %zu fixture functions checked\n", checked);
	assert_true(fib && main_seen);
	sym_dwarf_free(w);
	symbolizer_free(s);
}

/* Where the fixture's DWARF sections lie in the file. */
static size_t debug_sections(const char *path, size_t (*secs)[2], size_t max)
{
	static const char *const names[] = {".debug_info", ".debug_abbrev", ".debug_rnglists",
					    ".debug_line", ".debug_aranges"};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	size_t shstrndx, n = 0;
	GElf_Shdr sh;
	Elf *elf;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn)) && n < max) {
		const char *name =
			gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		for (size_t i = 0; name && i < ARRAY_SIZE(names); i++) {
			if (!strcmp(name, names[i]) && sh.sh_size) {
				secs[n][0] = sh.sh_offset;
				secs[n++][1] = sh.sh_size;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long size;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size > 0);
	rewind(f);
	buf = malloc((size_t)size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return buf;
}

/*
 * Damaged DWARF: a few bytes of its sections flipped.  Whatever libdw
 * makes of it, the index agrees with the reference at every address
 * (where the walk fails, the CU is left to dwarf_getscopes), and
 * nothing crashes.  Both ways must have been taken.
 */
static void test_damaged_dwarf(void **state)
{
	size_t secs[8][2], nsecs, len, indexed = 0, slow = 0;
	char src[4200], path[4200];
	unsigned char *orig;
	uint64_t seed = 11;

	(void)state;
	snprintf(src, sizeof(src), "%s/inl", tmpdir);
	snprintf(path, sizeof(path), "%s/damaged", tmpdir);
	orig = slurp(src, &len);
	nsecs = debug_sections(src, secs, ARRAY_SIZE(secs));
	assert_true(nsecs >= 3);
	for (int i = 0; i < 16; i++) {
		unsigned char *copy = malloc(len);
		struct compare_stats cs;
		FILE *f;

		assert_non_null(copy);
		memcpy(copy, orig, len);
		for (int k = 0; k < 1 + i % 4; k++) {
			size_t *sec;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			sec = secs[(seed >> 20) % nsecs];
			copy[sec[0] + (seed >> 33) % sec[1]] ^= (unsigned char)(1u << (seed >> 61));
		}
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(copy, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		free(copy);
		compare_modes(path, 1, &cs);
		indexed += cs.index.cus > 0;
		slow += cs.index.slow_cus > 0;
	}
	free(orig);
	print_message("# damaged copies: %zu indexed, %zu left to libdw\n", indexed, slow);
	assert_true(indexed > 0 && slow > 0);
}

static void expect_owner(const struct sym_addrmap *m, uint64_t addr, int32_t want)
{
	int32_t got = sym_addrmap_find(m, addr);

	if (got != want)
		fail_msg("%#" PRIx64 ": owner %d, want %d", addr, got, want);
}

/* Painting: conditions on the current owner, later paint wins, merging, misses. */
static void test_addrmap(void **state)
{
	static const uint64_t ranges[][2] = {
		{0x100, 0x200}, {0x120, 0x140}, {0x180, 0x1c0},
		{0x130, 0x190}, {0x300, 0x300}, {0x400, 0x410},
	};
	struct sym_addrmap m;

	(void)state;
	sym_addrmap_init(&m, ranges, ARRAY_SIZE(ranges));
	/* Bounds 100 120 130 140 180 190 1c0 200 400 410: nine intervals. */
	assert_int_equal(m.nr, 9);
	expect_owner(&m, 0x150, -1);
	sym_addrmap_paint(&m, 0x100, 0x200, 0, -1, INT32_MAX);
	/* Children of 0 (owners 0 and its subtree [0, 3)): 2 first, then 1, each in 0's. */
	sym_addrmap_paint(&m, 0x180, 0x1c0, 2, 0, 3);
	sym_addrmap_paint(&m, 0x120, 0x140, 1, 0, 3);
	/* Not 0's: paints nothing where 1 or 2 already are. */
	sym_addrmap_paint(&m, 0x130, 0x190, 5, -1, 0);
	sym_addrmap_paint(&m, 0x400, 0x410, 7, -1, 0);
	sym_addrmap_finish(&m);
	expect_owner(&m, 0xff, -1);
	expect_owner(&m, 0x100, 0);
	expect_owner(&m, 0x11f, 0);
	expect_owner(&m, 0x120, 1);
	expect_owner(&m, 0x13f, 1);
	expect_owner(&m, 0x140, 0);
	expect_owner(&m, 0x180, 2);
	expect_owner(&m, 0x1bf, 2);
	expect_owner(&m, 0x1c0, 0);
	expect_owner(&m, 0x1ff, 0);
	expect_owner(&m, 0x200, -1);
	expect_owner(&m, 0x300, -1);
	expect_owner(&m, 0x405, 7);
	expect_owner(&m, 0x410, -1);
	expect_owner(&m, UINT64_MAX, -1);
	/* 100 120 140 180 1c0 200 400 410: seven intervals after merging. */
	assert_int_equal(m.nr, 7);
	assert_true(sym_addrmap_bytes(&m) > 0);
	sym_addrmap_release(&m);
	assert_int_equal(sym_addrmap_find(&m, 0x150), -1);

	/* Nothing painted, or no ranges: empty, every lookup misses. */
	sym_addrmap_init(&m, ranges, ARRAY_SIZE(ranges));
	sym_addrmap_finish(&m);
	assert_int_equal(m.nr, 0);
	assert_int_equal(sym_addrmap_bytes(&m), 0);
	expect_owner(&m, 0x150, -1);
	sym_addrmap_release(&m);
	sym_addrmap_init(&m, NULL, 0);
	expect_owner(&m, 0, -1);
	sym_addrmap_finish(&m);
	sym_addrmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addrmap),		  cmocka_unit_test(test_c_every_address),
		cmocka_unit_test(test_cxx_every_address), cmocka_unit_test(test_lto_every_address),
		cmocka_unit_test(test_dwz_every_address), cmocka_unit_test(test_gcc_no_aranges),
		cmocka_unit_test(test_clang_no_aranges),  cmocka_unit_test(test_self),
		cmocka_unit_test(test_damaged_dwarf),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
