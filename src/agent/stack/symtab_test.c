/* SPDX-License-Identifier: MIT */
/*
 * Tests of the agent's symbol table on this very process: its own
 * functions, libc (through libc6-dbg's debug file), the vDSO, copies of
 * the test binary mapped like a loader would (deleted, unmapped, replaced
 * on disk) and broken ELF files mapped executable.  Expected values come
 * from other sources than the code under test: the loader's in-memory
 * program headers and notes (dl_iterate_phdr), dladdr and readelf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <elf.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/stack/symtab.h"
#include "symbol/plt_testutil.h"

#define SYM_MAX 256

static char tmpdir[64];

__attribute__((noinline)) int symtab_test_leaf(int x);
__attribute__((noinline)) int symtab_test_leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 3;
}

__attribute__((noinline)) static int symtab_test_static(int x)
{
	__asm__ volatile("" ::: "memory");
	return symtab_test_leaf(x) + 1;
}

/* The main program's executable segment, from the loader's program headers. */
struct text {
	uintptr_t bias;
	uint64_t offset, vaddr, filesz;
};

static int text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text *t = arg;

	(void)size;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			*t = (struct text){info->dlpi_addr, p->p_offset, p->p_vaddr, p->p_filesz};
			return 1;
		}
	}
	return 1; /* the first object is the main program */
}

static struct text main_text(void)
{
	struct text t = {0};

	dl_iterate_phdr(text_cb, &t);
	assert_true(t.filesz > 0);
	return t;
}

/* The GNU build-id in the notes the loader mapped, as hex; "" when none. */
struct note_req {
	const char *name; /* dlpi_name to match; "" = main program */
	char hex[2 * 64 + 1];
};

static int note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct note_req *r = arg;

	(void)size;
	if (strcmp(info->dlpi_name, r->name))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		const unsigned char *n = (const unsigned char *)(info->dlpi_addr + p->p_vaddr);
		size_t off = 0;

		while (p->p_type == PT_NOTE && off + 12 <= p->p_memsz) {
			uint32_t nsz, dsz, type;

			memcpy(&nsz, n + off, 4);
			memcpy(&dsz, n + off + 4, 4);
			memcpy(&type, n + off + 8, 4);
			off += 12;
			if (type == NT_GNU_BUILD_ID && nsz == 4 && !memcmp(n + off, "GNU", 4)) {
				for (uint32_t k = 0; k < dsz && k < 64; k++)
					snprintf(r->hex + 2 * k, 3, "%02x", n[off + 4 + k]);
				return 1;
			}
			off += ((nsz + 3) & ~3u) + ((dsz + 3) & ~3u);
		}
	}
	return 1;
}

static void loaded_build_id(const char *dlpi_name, char *hex)
{
	struct note_req r = {.name = dlpi_name};

	dl_iterate_phdr(note_cb, &r);
	memcpy(hex, r.hex, sizeof(r.hex));
}

static void hex_of(const struct agent_mapping *m, char *hex)
{
	hex[0] = '\0';
	for (size_t k = 0; k < m->build_id_len; k++)
		snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
}

/* Value and size of symbol NAME in FILE's .symtab or .dynsym, by readelf; 0 if absent. */
static uint64_t readelf_sym(const char *file, const char *name, uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[1024];
	uint64_t value = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -sW '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char type[32], sname[SYM_MAX], szs[32];
		unsigned long v;

		if (sscanf(line, "%*s %lx %31s %31s %*s %*s %*s %255s", &v, szs, type, sname) != 4)
			continue;
		sname[strcspn(sname, "@")] = '\0'; /* readelf shows versions as name@VERSION */
		if (!strcmp(type, "FUNC") && !strcmp(sname, name)) {
			value = v;
			*size = strtoull(szs, NULL, 0);
			break;
		}
	}
	pclose(p);
	return value;
}

static bool have_readelf(void)
{
	return system("readelf --version >/dev/null 2>&1") == 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/symtab-test-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_own_functions(void **state)
{
	struct agent_symtab *st = agent_symtab_new();
	const struct agent_mapping *m;
	char exe[PATH_MAX], hex[129], want[129];
	const char *name;
	uintptr_t start;
	int i;

	(void)state;
	assert_non_null(st);
	assert_int_equal(symtab_test_static(1), 11);
	i = agent_symtab_lookup(st, (uintptr_t)&symtab_test_leaf + 1, &name, &start);
	assert_true(i >= 0);
	assert_string_equal(name, "symtab_test_leaf");
	assert_true(start == (uintptr_t)&symtab_test_leaf);
	i = agent_symtab_lookup(st, (uintptr_t)&symtab_test_static, &name, &start);
	assert_string_equal(name, "symtab_test_static");
	assert_true(start == (uintptr_t)&symtab_test_static);
	m = agent_symtab_mapping(st, (size_t)i);
	assert_non_null(m);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_string_equal(m->path, exe);
	assert_true(m->is_main && m->live && m->has_functions && !m->deleted);
	assert_true(m->start <= (uintptr_t)&symtab_test_static &&
		    (uintptr_t)&symtab_test_static < m->limit);
	hex_of(m, hex);
	loaded_build_id("", want);
	assert_string_equal(hex, want);
	assert_true(strlen(hex) == 40);
	/* Outside every executable mapping. */
	assert_int_equal(agent_symtab_lookup(st, 0, &name, &start), -1);
	assert_null(name);
	assert_true(start == 0);
	assert_int_equal(agent_symtab_lookup(st, (uintptr_t)&tmpdir, &name, NULL), -1);
	agent_symtab_free(st);
	agent_symtab_free(NULL);
}

/* Every loaded object's build-id matches the loader's notes; libc's path too. */
static int check_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct agent_symtab *st = arg;
	char real[PATH_MAX], want[129], hex[129];
	const struct agent_mapping *m;
	int i;

	(void)size;
	if (!info->dlpi_name[0] || info->dlpi_name[0] != '/' || !realpath(info->dlpi_name, real))
		return 0;
	for (size_t k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[k];

		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
			continue;
		i = agent_symtab_lookup(st, info->dlpi_addr + p->p_vaddr + p->p_filesz / 2, NULL,
					NULL);
		assert_true(i >= 0);
		m = agent_symtab_mapping(st, (size_t)i);
		assert_string_equal(m->path, real);
		loaded_build_id(info->dlpi_name, want);
		hex_of(m, hex);
		assert_string_equal(hex, want);
	}
	return 0;
}

static void test_build_ids(void **state)
{
	struct agent_symtab *st = agent_symtab_new();

	(void)state;
	assert_non_null(st);
	dl_iterate_phdr(check_cb, st);
	agent_symtab_free(st);
}

/* libc's own qsort (&qsort is the sanitizer's interceptor under ASan). */
static uintptr_t libc_qsort(void)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uintptr_t p = h ? (uintptr_t)dlsym(h, "qsort") : 0;

	assert_true(p != 0);
	dlclose(h);
	return p;
}

/* A libc function only the debug file's .symtab names. */
static void test_libc_debug_file(void **state)
{
	struct agent_symtab *st = agent_symtab_new();
	char want[129], debug[PATH_MAX];
	const char *name, *local = "msort_with_tmp.part.0";
	uintptr_t start, qsort_fn = libc_qsort();
	uint64_t value, size = 0;
	Dl_info dl;
	int i;

	(void)state;
	assert_non_null(st);
	assert_true(dladdr((void *)qsort_fn, &dl) && dl.dli_fname);
	i = agent_symtab_lookup(st, qsort_fn, &name, &start);
	assert_true(i >= 0);
	assert_string_equal(name, "qsort");
	assert_true(start == qsort_fn);
	loaded_build_id(dl.dli_fname, want);
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", want, want + 2);
	if (!have_readelf() || access(debug, R_OK)) {
		print_message("# SKIP libc debug file: no readelf or no %s (libc6-dbg)\n", debug);
		agent_symtab_free(st);
		skip();
	}
	value = readelf_sym(debug, local, &size);
	assert_true(value != 0 && size > 8);
	assert_true(readelf_sym(dl.dli_fname, local, &(uint64_t){0}) == 0); /* not in .dynsym */
	i = agent_symtab_lookup(st, (uintptr_t)dl.dli_fbase + value + size / 2, &name, &start);
	assert_true(i >= 0);
	assert_string_equal(name, local);
	assert_true(start == (uintptr_t)dl.dli_fbase + value);
	assert_true(agent_symtab_mapping(st, (size_t)i)->has_functions);
	agent_symtab_free(st);
}

static void test_vdso(void **state)
{
	uintptr_t base = getauxval(AT_SYSINFO_EHDR), start;
	struct agent_symtab *st;
	const struct agent_mapping *m;
	char path[PATH_MAX], want[129], hex[129];
	const char *name;
	uint64_t value, size = 0;
	FILE *f;
	int i;

	(void)state;
	if (!base || !have_readelf()) {
		print_message("# SKIP vdso: no vDSO or no readelf\n");
		skip();
	}
	st = agent_symtab_new();
	assert_non_null(st);
	i = agent_symtab_lookup(st, base, NULL, NULL);
	assert_true(i >= 0);
	m = agent_symtab_mapping(st, (size_t)i);
	assert_string_equal(m->path, "[vdso]");
	/* Dump the image for readelf to read. */
	snprintf(path, sizeof(path), "%s/vdso.so", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fwrite((const void *)base, 1, m->limit - m->start, f) == m->limit - m->start);
	fclose(f);
	value = readelf_sym(path, "__vdso_clock_gettime", &size);
	assert_true(value != 0 && size > 1);
	assert_true(agent_symtab_lookup(st, base + value + 1, &name, &start) == i);
	assert_string_equal(name, "__vdso_clock_gettime");
	assert_true(start == base + value);
	loaded_build_id("linux-vdso.so.1", want);
	hex_of(m, hex);
	assert_string_equal(hex, want);
	agent_symtab_free(st);
}

/* A copy of the test binary, its text mapped where a loader would put it. */
struct copy {
	char path[PATH_MAX];
	void *base;
	size_t len;
	uintptr_t fn_pc, fn_start; /* symtab_test_leaf + 1 in the copy, and its start */
};

static void copy_file(const char *from, const char *to, size_t max)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;
	size_t done = 0;

	assert_true(in >= 0 && out >= 0);
	while (done < max && (n = read(in, buf, sizeof(buf))) > 0) {
		size_t k = (size_t)n < max - done ? (size_t)n : max - done;

		assert_true(write(out, buf, k) == (ssize_t)k);
		done += k;
	}
	close(in);
	close(out);
}

static void copy_map(struct copy *c)
{
	struct text t = main_text();
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), floor = t.offset & ~(page - 1);
	int fd = open(c->path, O_RDONLY);

	assert_true(fd >= 0);
	c->len = t.filesz + (t.offset - floor);
	c->base = mmap(NULL, c->len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)floor);
	assert_true(c->base != MAP_FAILED);
	close(fd);
	c->fn_start = (uintptr_t)c->base + (t.offset - floor) +
		      ((uintptr_t)&symtab_test_leaf - t.bias - t.vaddr);
	c->fn_pc = c->fn_start + 1;
}

static void copy_new(struct copy *c, const char *name, size_t max)
{
	snprintf(c->path, sizeof(c->path), "%s/%s", tmpdir, name);
	copy_file("/proc/self/exe", c->path, max);
	copy_map(c);
}

static void expect_name(struct agent_symtab *st, const struct copy *c, const char *want, bool live)
{
	const struct agent_mapping *m;
	const char *name;
	uintptr_t start;
	int i = agent_symtab_lookup(st, c->fn_pc, &name, &start);

	assert_true(i >= 0);
	m = agent_symtab_mapping(st, (size_t)i);
	assert_string_equal(m->path, c->path);
	assert_true(m->live == live);
	assert_true(m->start == (uintptr_t)c->base);
	if (!want) {
		assert_null(name);
		return;
	}
	assert_non_null(name);
	assert_string_equal(name, want);
	assert_true(start == c->fn_start);
}

static void test_deleted_file(void **state)
{
	struct agent_symtab *st;
	struct copy c;
	int i;

	(void)state;
	copy_new(&c, "deleted-copy", SIZE_MAX);
	assert_int_equal(unlink(c.path), 0);
	st = agent_symtab_new();
	assert_non_null(st);
	expect_name(st, &c, "symtab_test_leaf", true);
	i = agent_symtab_lookup(st, c.fn_pc, NULL, NULL);
	assert_true(agent_symtab_mapping(st, (size_t)i)->deleted);
	/* Loaded while mapped: still named after the file is gone for good. */
	munmap(c.base, c.len);
	assert_int_equal(agent_symtab_refresh(st), 0);
	expect_name(st, &c, "symtab_test_leaf", false);
	agent_symtab_free(st);
}

static void test_unmapped_module(void **state)
{
	struct agent_symtab *st = agent_symtab_new();
	size_t before = agent_symtab_nmappings(st);
	struct copy c;

	(void)state;
	assert_non_null(st);
	copy_new(&c, "dlclosed-copy", SIZE_MAX);
	assert_int_equal(agent_symtab_refresh(st), 0);
	assert_true(agent_symtab_nmappings(st) == before + 1);
	munmap(c.base, c.len);
	/* The refresh that sees it gone loads it; deleting the file afterwards is fine. */
	assert_int_equal(agent_symtab_refresh(st), 0);
	assert_int_equal(unlink(c.path), 0);
	expect_name(st, &c, "symtab_test_leaf", false);
	/* Refreshing again keeps it (and its names) until the dead cache overflows. */
	assert_int_equal(agent_symtab_refresh(st), 0);
	expect_name(st, &c, "symtab_test_leaf", false);
	assert_true(agent_symtab_nmappings(st) == before + 1);
	agent_symtab_free(st);
}

static void edit_file(const char *path, void (*edit)(unsigned char *buf, size_t len));

/* Change one byte of the build-id (found by its value, from the loader's notes). */
static void other_build_id(unsigned char *buf, size_t len)
{
	char hex[129];
	unsigned char id[64];
	size_t n;

	loaded_build_id("", hex);
	n = strlen(hex) / 2;
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	for (size_t off = 0; off + n <= len; off++) {
		if (!memcmp(buf + off, id, n)) {
			buf[off] ^= 0xff;
			return;
		}
	}
	fail_msg("build-id not found in the copy");
}

/*
 * A file replaced on disk between the snapshot and the first lookup (here
 * by another build of the same program: same symbols, other build-id)
 * gives no names rather than names from the wrong file.
 */
static void test_replaced_file(void **state)
{
	struct agent_symtab *st;
	struct copy c;
	char other[PATH_MAX];

	(void)state;
	copy_new(&c, "replaced-copy", SIZE_MAX);
	st = agent_symtab_new();
	assert_non_null(st);
	munmap(c.base, c.len);
	snprintf(other, sizeof(other), "%s/other", tmpdir);
	copy_file("/proc/self/exe", other, SIZE_MAX);
	edit_file(other, other_build_id);
	assert_int_equal(rename(other, c.path), 0);
	expect_name(st, &c, NULL, true);
	agent_symtab_free(st);
	/* The same bytes under a new inode are accepted: the build-id proves them. */
	copy_new(&c, "replaced-copy", SIZE_MAX);
	copy_file("/proc/self/exe", other, SIZE_MAX);
	st = agent_symtab_new();
	munmap(c.base, c.len);
	assert_int_equal(rename(other, c.path), 0);
	expect_name(st, &c, "symtab_test_leaf", true);
	agent_symtab_free(st);
	unlink(c.path);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_true(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* Map PATH whole, executable, at offset 0; look up an address inside. */
static void lookup_mapped(const char *path, size_t len, uintptr_t off, bool want_map)
{
	int fd = open(path, O_RDONLY);
	void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	struct agent_symtab *st;
	const char *name = "x";
	int i;

	assert_true(fd >= 0 && p != MAP_FAILED);
	close(fd);
	st = agent_symtab_new();
	assert_non_null(st);
	i = agent_symtab_lookup(st, (uintptr_t)p + off, &name, NULL);
	if (want_map) {
		assert_true(i >= 0);
		assert_string_equal(agent_symtab_mapping(st, (size_t)i)->path, path);
		assert_null(name);
	}
	agent_symtab_free(st);
	munmap(p, len);
}

static void test_not_elf(void **state)
{
	char path[PATH_MAX], junk[8192];

	(void)state;
	memset(junk, 0x5a, sizeof(junk));
	snprintf(path, sizeof(path), "%s/junk", tmpdir);
	write_file(path, junk, sizeof(junk));
	lookup_mapped(path, sizeof(junk), 100, true);
	/* Just the magic, then nothing. */
	write_file(path, ELFMAG, SELFMAG);
	lookup_mapped(path, 4096, 2, true);
	unlink(path);
}

static void test_truncated(void **state)
{
	struct text t = main_text();
	struct agent_symtab *st;
	struct copy c;

	(void)state;
	/* The headers and the start of the text: no section table, no symbols. */
	copy_new(&c, "truncated-copy", t.offset + 4096);
	st = agent_symtab_new();
	assert_non_null(st);
	expect_name(st, &c, NULL, true);
	agent_symtab_free(st);
	munmap(c.base, c.len);
	unlink(c.path);
}

/* Read the copy's ELF header, change it with EDIT, write it back. */
static void edit_file(const char *path, void (*edit)(unsigned char *buf, size_t len))
{
	struct stat sb;
	unsigned char *buf;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0 && !fstat(fd, &sb));
	buf = malloc((size_t)sb.st_size);
	assert_non_null(buf);
	assert_true(pread(fd, buf, (size_t)sb.st_size, 0) == sb.st_size);
	edit(buf, (size_t)sb.st_size);
	assert_true(pwrite(fd, buf, (size_t)sb.st_size, 0) == sb.st_size);
	close(fd);
	free(buf);
}

static void shoff_far(unsigned char *buf, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

	(void)len;
	eh->e_shoff = UINT64_C(0x7fffffffffff0000);
}

static void shnum_huge(unsigned char *buf, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

	(void)len;
	eh->e_shnum = 0xffff;
	eh->e_shstrndx = 0xfffe;
}

/* Every section points outside the file, or links nowhere. */
static void sections_out(unsigned char *buf, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(buf + eh->e_shoff);

	assert_true(eh->e_shoff + eh->e_shnum * sizeof(*sh) <= len);
	for (size_t i = 1; i < eh->e_shnum; i++) {
		if (i % 3 == 0)
			sh[i].sh_offset = len + 4096 * i;
		else if (i % 3 == 1)
			sh[i].sh_size = UINT64_MAX - sh[i].sh_offset / 2;
		else
			sh[i].sh_offset = UINT64_MAX - 7;
		sh[i].sh_link = (uint32_t)(eh->e_shnum + i);
	}
}

static void test_bad_section_table(void **state)
{
	void (*const edits[])(unsigned char *, size_t) = {shoff_far, shnum_huge, sections_out};
	struct agent_symtab *st;
	struct copy c;

	(void)state;
	for (size_t k = 0; k < sizeof(edits) / sizeof(edits[0]); k++) {
		char name[32];

		snprintf(name, sizeof(name), "bad-shdr-%zu", k);
		copy_new(&c, name, SIZE_MAX);
		/* Control: the intact copy is named. */
		st = agent_symtab_new();
		assert_non_null(st);
		expect_name(st, &c, "symtab_test_leaf", true);
		agent_symtab_free(st);
		munmap(c.base, c.len);
		edit_file(c.path, edits[k]);
		copy_map(&c);
		st = agent_symtab_new();
		assert_non_null(st);
		expect_name(st, &c, NULL, true);
		agent_symtab_free(st);
		munmap(c.base, c.len);
		unlink(c.path);
	}
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static unsigned char *fuzz_orig;
static size_t fuzz_len;

/* Flip bytes in the headers and the section table (where parsers go wrong). */
static void corrupt(unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)fuzz_orig;
	size_t nflips = 1 + rng() % 8;

	memcpy(buf, fuzz_orig, len < fuzz_len ? len : fuzz_len);
	for (size_t i = 0; i < nflips; i++) {
		size_t region = rng() % 3, at;

		if (region == 0)
			at = rng() % (sizeof(Elf64_Ehdr) + eh->e_phnum * sizeof(Elf64_Phdr));
		else if (region == 1)
			at = eh->e_shoff + rng() % (eh->e_shnum * sizeof(Elf64_Shdr));
		else
			at = rng() % len;
		if (at < len)
			buf[at] = (unsigned char)rng();
	}
}

static void test_random_corruption(void **state)
{
	struct copy c;
	struct stat sb;
	int fd;

	(void)state;
	copy_new(&c, "fuzz-copy", SIZE_MAX);
	munmap(c.base, c.len);
	fd = open(c.path, O_RDONLY);
	assert_true(fd >= 0 && !fstat(fd, &sb));
	fuzz_len = (size_t)sb.st_size;
	fuzz_orig = malloc(fuzz_len);
	assert_true(pread(fd, fuzz_orig, fuzz_len, 0) == (ssize_t)fuzz_len);
	close(fd);
	for (int k = 0; k < 200; k++) {
		struct agent_symtab *st;
		const char *name;

		edit_file(c.path, corrupt);
		copy_map(&c);
		st = agent_symtab_new();
		assert_non_null(st);
		for (uintptr_t pc = (uintptr_t)c.base; pc < (uintptr_t)c.base + c.len; pc += 61) {
			uint64_t va;

			if (agent_symtab_lookup(st, pc, &name, NULL) >= 0 && !name)
				agent_symtab_unnamed(st, pc, &va);
		}
		agent_symtab_free(st);
		munmap(c.base, c.len);
	}
	free(fuzz_orig);
	unlink(c.path);
}

static void *plt_open(const char *path, uint64_t off, uint64_t vaddr, uint64_t size)
{
	return agent_symtab_new_file(path, vaddr, vaddr + size, off);
}

static const char *plt_name(void *h, uint64_t addr)
{
	const char *name;

	assert_true(agent_symtab_lookup(h, addr, &name, NULL) >= 0);
	return name;
}

static void plt_close(void *h)
{
	agent_symtab_free(h);
}

/* Each PLT stub is named as objdump names it; the lazy PLT's header is "[plt]". */
static void test_plt_stubs(void **state)
{
	(void)state;
	testutil_plt_stubs(tmpdir, &(struct testutil_plt_ops){plt_open, plt_name, plt_close});
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_functions),	  cmocka_unit_test(test_build_ids),
		cmocka_unit_test(test_libc_debug_file),	  cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_deleted_file),	  cmocka_unit_test(test_unmapped_module),
		cmocka_unit_test(test_replaced_file),	  cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),	  cmocka_unit_test(test_bad_section_table),
		cmocka_unit_test(test_random_corruption), cmocka_unit_test(test_plt_stubs),
	};

	return cmocka_run_group_tests_name("symtab", tests, setup, teardown);
}
