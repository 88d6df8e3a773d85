/* SPDX-License-Identifier: MIT */
/*
 * Function starts from .eh_frame (symbolize_ehframe.c) on a fixture
 * compiled here: stripped, with a symbol dropped, split debug files, lld's
 * shared pages, corrupted and fuzzed tables.
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

static const char eh_src[] =
	"#include <stdio.h>\n"
	"void eh_nofde(void);\n"
	"__asm__(\".text\\n.globl eh_nofde\\n.type eh_nofde, @function\\neh_nofde:\\n\"\n"
	"	\".rept 64\\nnop\\n.endr\\nret\\n.size eh_nofde, .-eh_nofde\\n\");\n"
	"__attribute__((noinline, noipa)) unsigned eh_one(unsigned x)\n"
	"{ for (unsigned i = 0; i < 100; i++) x = x * 31 + i; return x; }\n"
	"__attribute__((noinline, noipa)) unsigned eh_two(unsigned x)\n"
	"{ unsigned s = 0; for (unsigned i = 0; i < x; i++) s += (i * i) ^ x; return s; }\n"
	"__attribute__((noinline, noipa)) unsigned eh_three(unsigned x)\n"
	"{ return eh_one(x) + eh_two(x + 1) * 3; }\n"
	"__attribute__((noinline, noipa)) unsigned eh_four(unsigned x)\n"
	"{ char buf[64]; snprintf(buf, sizeof(buf), \"%u\", x); return (unsigned)buf[0]; }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char line[4096];\n"
	"	FILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"	(void)argv;\n"
	"	eh_nofde();\n"
	"	printf(\"sum %u\\nfn %p\\n\", eh_three((unsigned)argc) + eh_four((unsigned)argc),\n"
	"	       (void *)eh_one);\n"
	"	while (f && fgets(line, sizeof(line), f)) {\n"
	"		unsigned long lo, hi;\n"
	"		if (sscanf(line, \"%lx-%lx\", &lo, &hi) == 2 && lo <= (unsigned "
	"long)eh_one &&\n"
	"		    (unsigned long)eh_one < hi)\n"
	"			printf(\"map %s\", line);\n"
	"	}\n"
	"	return 0;\n"
	"}\n";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir) || write_source("ehfix.c", eh_src, sizeof(eh_src) - 1))
		return -1;
	/*
	 * eh: stripped copy; eh.nosym: eh_two dropped from .symtab;
	 * eh.split: no .symtab, its debug file's lacks eh_three.
	 */
	return run("cd %s && cc -O2 -fPIE -pie -o eh ehfix.c && nm -S eh > eh.nm && "
		   "cp eh eh.stripped && strip eh.stripped && "
		   "cp eh eh.nosym && objcopy --strip-symbol=eh_two eh.nosym && "
		   "cp eh eh.split && objcopy --only-keep-debug eh.split eh.split.debug && "
		   "objcopy --strip-symbol=eh_three eh.split.debug && objcopy --strip-all eh.split "
		   "&& "
		   "objcopy --add-gnu-debuglink=eh.split.debug eh.split",
		   tmpdir)
		       ? -1
		       : 0;
}

/* The eh fixture: its functions (from nm -S on the unstripped file) and its text mapping. */
enum { EH_ONE, EH_TWO, EH_THREE, EH_FOUR, EH_NOFDE, EH_NR };
#define EH_ALL ((1u << EH_NOFDE) - 1) /* the functions with an FDE */

struct eh_fn {
	const char *name;
	uint64_t value, size;
};

static struct eh_fn eh_fns[EH_NR] = {
	{"eh_one", 0, 0},  {"eh_two", 0, 0},   {"eh_three", 0, 0},
	{"eh_four", 0, 0}, {"eh_nofde", 0, 0},
};
static struct mapping eh_map;
static uint64_t eh_bias;

static void eh_load_fixture(void)
{
	char path[4200], line[4200], name[64], type;
	unsigned long value, size;
	uint64_t runtime = 0;
	void *p;
	FILE *f;

	if (eh_map.end)
		return;
	snprintf(path, sizeof(path), "%s/eh.nm", tmpdir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx %lx %c %63s", &value, &size, &type, name) != 4)
			continue;
		for (size_t i = 0; i < EH_NR; i++) {
			if (!strcmp(name, eh_fns[i].name))
				eh_fns[i] = (struct eh_fn){eh_fns[i].name, value, size};
		}
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/eh", tmpdir);
	f = popen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "fn %p", &p) == 1)
			runtime = (uintptr_t)p;
		else if (!strncmp(line, "map ", 4))
			assert_true(parse_maps_line(line + 4, &eh_map));
	}
	assert_int_equal(pclose(f), 0);
	for (size_t i = 0; i < EH_NR; i++)
		assert_true(eh_fns[i].value && eh_fns[i].size > 8);
	assert_true(runtime && eh_map.end);
	eh_bias = runtime - eh_fns[EH_ONE].value;
}

/* Look up the ELF address vaddr of the eh fixture copy at path; n. */
static int eh_lookup(struct symbolizer *s, const char *path, uint64_t vaddr, struct sym_frame *f)
{
	struct sym_module *m =
		symbolizer_module(s, path, eh_map.start, eh_map.end, eh_map.pgoff, NULL);

	return lookup(s, m, vaddr + eh_bias, f, 4);
}

/*
 * Addresses at the start, inside and at the end of each eh function
 * in the stripped copy at path: those in mask give their function's
 * start with SYM_FRAME_FUNC_START, the others (and eh_nofde) their own
 * address; functions outside care are only checked for sanity.
 */
static void eh_check(const char *path, unsigned mask, unsigned care)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[4];

	for (size_t i = 0; i < EH_NR; i++) {
		uint64_t v = eh_fns[i].value, size = eh_fns[i].size;
		uint64_t offs[] = {0, 1, size / 2, size - 1};

		for (size_t k = 0; k < ARRAY_SIZE(offs); k++) {
			assert_int_equal(eh_lookup(s, path, v + offs[k], f), 0);
			assert_int_equal(f[0].reason, SYM_STRIPPED);
			assert_int_equal(f[0].flags & ~(unsigned)SYM_FRAME_FUNC_START, 0);
			if (f[0].flags)
				assert_true(f[0].offset <= v + offs[k]);
			else
				assert_int_equal(f[0].offset, v + offs[k]);
			if (!(care & (1u << i)))
				continue;
			if (mask & (1u << i)) {
				assert_int_equal(f[0].flags, SYM_FRAME_FUNC_START);
				assert_int_equal(f[0].offset, v);
			} else {
				assert_int_equal(f[0].flags, 0);
			}
		}
	}
	symbolizer_free(s);
}

/* A stripped executable: every address of a function gives its start. */
static void test_eh_func_start(void **state)
{
	char path[4200];

	(void)state;
	eh_load_fixture();
	snprintf(path, sizeof(path), "%s/eh.stripped", tmpdir);
	eh_check(path, EH_ALL, ~0u);
}

/*
 * An lld-linked PIE: its text segment starts in the file page that ends
 * the read-only segment, so two PT_LOADs hold the text mapping's pgoff;
 * the executable one gives the bias (the first one put every address
 * a page or more off).
 */
static void test_lld_shared_page(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct mapping map = {0};
	struct sym_module *m;
	struct sym_frame f[4];
	char path[4200], line[4200];
	uint64_t fn = 0;
	void *p;
	FILE *pf;

	(void)state;
	assert_int_equal(run("cd %s && cc -O2 -fPIE -pie -fuse-ld=lld -o eh.lld ehfix.c", tmpdir),
			 0);
	snprintf(path, sizeof(path), "%s/eh.lld", tmpdir);
	pf = popen(path, "r");
	assert_non_null(pf);
	while (fgets(line, sizeof(line), pf)) {
		if (sscanf(line, "fn %p", &p) == 1)
			fn = (uintptr_t)p;
		else if (!strncmp(line, "map ", 4))
			assert_true(parse_maps_line(line + 4, &map));
	}
	assert_int_equal(pclose(pf), 0);
	assert_true(fn && map.end);
	m = symbolizer_module(s, map.path, map.start, map.end, map.pgoff, NULL);
	assert_int_equal(lookup(s, m, fn, f, 4), 1);
	assert_string_equal(f[0].function, "eh_one");
	symbolizer_free(s);
}

/* A .symtab without the function (in the file or its debug file): SYM_NO_SYMBOL, its start. */
static void test_eh_no_symbol(void **state)
{
	const char *files[] = {"eh.nosym", "eh.split"};
	const size_t missing[] = {EH_TWO, EH_THREE};
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f[4];
	char path[4200];

	(void)state;
	eh_load_fixture();
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		const struct eh_fn *fn = &eh_fns[missing[i]];

		snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
		assert_int_equal(eh_lookup(s, path, fn->value + fn->size / 2, f), 0);
		assert_int_equal(f[0].reason, SYM_NO_SYMBOL);
		assert_int_equal(f[0].flags, SYM_FRAME_FUNC_START);
		assert_int_equal(f[0].offset, fn->value);
		assert_int_equal(eh_lookup(s, path, eh_fns[EH_ONE].value + 3, f), 1);
		assert_string_equal(f[0].function, "eh_one");
		assert_int_equal(f[0].flags, 0);
		assert_int_equal(f[0].offset, eh_fns[EH_ONE].value + 3);
		/* No FDE and no symbol... but eh_nofde has a symbol: named, raw offset. */
		assert_int_equal(eh_lookup(s, path, eh_fns[EH_NOFDE].value + 5, f), 1);
		assert_string_equal(f[0].function, "eh_nofde");
		assert_int_equal(f[0].offset, eh_fns[EH_NOFDE].value + 5);
	}
	symbolizer_free(s);
}

struct eh_section {
	unsigned index;
	uint64_t addr, off, size;
};

static void eh_section(const char *path, const char *name, struct eh_section *sec)
{
	char cmd[4200], line[4200], got[64], type[32];
	unsigned idx;
	unsigned long addr, off, size;
	FILE *f;

	memset(sec, 0, sizeof(*sec));
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " [%u] %63s %31s %lx %lx %lx", &idx, got, type, &addr, &off,
			   &size) == 6 &&
		    !strcmp(got, name))
			*sec = (struct eh_section){idx, addr, off, size};
	}
	assert_int_equal(pclose(f), 0);
	assert_true(sec->size > 0);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void write_bytes(const char *path, const unsigned char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The stripped eh fixture's bytes and where its .eh_frame_hdr, .eh_frame and FDEs are. */
struct eh_image {
	unsigned char *buf;
	size_t len;
	struct eh_section hdr, frame;
	size_t count;
	size_t fde_off[EH_NR]; /* file offset of each function's FDE */
};

static void eh_image_load(struct eh_image *im)
{
	char path[4200];
	const unsigned char *h;

	eh_load_fixture();
	snprintf(path, sizeof(path), "%s/eh.stripped", tmpdir);
	im->buf = slurp(path, &im->len);
	eh_section(path, ".eh_frame_hdr", &im->hdr);
	eh_section(path, ".eh_frame", &im->frame);
	assert_true(im->hdr.off + im->hdr.size <= im->len);
	h = im->buf + im->hdr.off;
	/* What GNU ld writes: version 1, pcrel|sdata4, udata4, datarel|sdata4. */
	assert_memory_equal(h, "\x01\x1b\x03\x3b", 4);
	im->count = le32(h + 8);
	assert_true(12 + 8 * im->count <= im->hdr.size);
	memset(im->fde_off, 0, sizeof(im->fde_off));
	for (size_t i = 0; i < im->count; i++) {
		uint64_t start = im->hdr.addr + (uint64_t)(int32_t)le32(h + 12 + 8 * i);
		uint64_t fde = im->hdr.addr + (uint64_t)(int32_t)le32(h + 16 + 8 * i);

		for (size_t k = 0; k < EH_NR; k++) {
			if (start == eh_fns[k].value)
				im->fde_off[k] = (size_t)(fde - im->frame.addr + im->frame.off);
		}
	}
	for (size_t k = 0; k < EH_NOFDE; k++)
		assert_true(im->fde_off[k] > 0 && im->fde_off[k] + 16 <= im->len);
	assert_int_equal(im->fde_off[EH_NOFDE], 0);
}

/* Section header field at byte field of section sec (ELF64). */
static unsigned char *eh_shdr(struct eh_image *im, const struct eh_section *sec, size_t field)
{
	uint64_t shoff, entsize = (uint64_t)im->buf[0x3a] | (uint64_t)im->buf[0x3b] << 8;

	memcpy(&shoff, im->buf + 0x28, 8);
	assert_int_equal(entsize, 64);
	assert_true(shoff + (sec->index + 1) * entsize <= im->len);
	return im->buf + shoff + sec->index * entsize + field;
}

enum eh_patch_kind { EH_AT_HDR, EH_AT_FDE, EH_AT_CIE, EH_AT_SHDR_SIZE };

struct eh_patch {
	const char *what;
	enum eh_patch_kind at;
	size_t off;	     /* byte offset from the header, eh_one's FDE or CIE */
	int width;	     /* 1 or 4 bytes */
	uint32_t value;	     /* written, or added with add */
	bool add;	     /* add value to what is there */
	unsigned mask, care; /* as for eh_check */
};

static void eh_apply(struct eh_image *im, const struct eh_patch *p, unsigned char *copy)
{
	unsigned char *at;
	size_t fde = im->fde_off[EH_ONE];

	switch (p->at) {
	case EH_AT_HDR: at = copy + im->hdr.off + p->off; break;
	case EH_AT_FDE: at = copy + fde + p->off; break;
	case EH_AT_CIE: at = copy + fde + 4 - le32(copy + fde + 4) + p->off; break;
	default: at = copy + (eh_shdr(im, &im->hdr, 32) - im->buf); break;
	}
	assert_true(at >= copy && at + p->width <= copy + im->len);
	if (p->width == 1)
		*at = (unsigned char)(p->add ? *at + p->value : p->value);
	else
		put_le32(at, p->add ? le32(at) + p->value : p->value);
}

/* Damaged .eh_frame_hdr tables and FDEs: no crash, and the raw address where they are bad. */
static void test_eh_corrupt(void **state)
{
	const unsigned one = 1u << EH_ONE, rest = EH_ALL & ~one;
	const struct eh_patch patches[] = {
		{"version 2", EH_AT_HDR, 0, 1, 2, false, 0, ~0u},
		{"table udata8", EH_AT_HDR, 3, 1, 0x04, false, 0, ~0u},
		{"table pcrel", EH_AT_HDR, 3, 1, 0x1b, false, 0, ~0u},
		{"count udata8", EH_AT_HDR, 2, 1, 0x04, false, 0, ~0u},
		{"eh_frame_ptr omitted", EH_AT_HDR, 1, 1, 0xff, false, 0, ~0u},
		{"count huge", EH_AT_HDR, 8, 4, 0xffffffffu, false, 0, ~0u},
		{"count one too many", EH_AT_HDR, 8, 4, 1, true, 0, ~0u},
		{"unsorted", EH_AT_HDR, 12, 4, 0x7fffffffu, false, 0, ~0u},
		{"section cut mid-table", EH_AT_SHDR_SIZE, 0, 4, 0xfffffffcu, true, 0, ~0u},
		{"FDE is a CIE", EH_AT_FDE, 4, 4, 0, false, rest, ~0u},
		{"CIE pointer past the start", EH_AT_FDE, 4, 4, 0x7fffffffu, false, rest, ~0u},
		{"FDE length 64-bit", EH_AT_FDE, 0, 4, 0xffffffffu, false, rest, ~0u},
		{"FDE length huge", EH_AT_FDE, 0, 4, 0x7ffffff0u, false, rest, ~0u},
		{"FDE length 0", EH_AT_FDE, 0, 4, 0, false, rest, ~0u},
		{"pc_begin off by one", EH_AT_FDE, 8, 4, 1, true, rest, ~0u},
		{"pc_range 0", EH_AT_FDE, 12, 4, 0, false, rest, ~0u},
		{"CIE version 2", EH_AT_CIE, 8, 1, 2, false, 0, one},
		{"CIE augmentation zX", EH_AT_CIE, 10, 1, 'X', false, 0, one},
		{"CIE FDE encoding indirect", EH_AT_CIE, 16, 1, 0x9b, false, 0, one},
		{"CIE FDE encoding datarel", EH_AT_CIE, 16, 1, 0x3b, false, 0, one},
		{"CIE augmentation length huge", EH_AT_CIE, 15, 1, 0x7f, false, 0, one},
		{"CIE id not 0", EH_AT_CIE, 4, 1, 1, false, 0, one},
	};
	struct eh_image im;
	char path[4200];

	(void)state;
	eh_image_load(&im);
	/* The CIE patches assume "zR", factors and register in one byte each. */
	{
		size_t fde = im.fde_off[EH_ONE];
		const unsigned char *cie = im.buf + fde + 4 - le32(im.buf + fde + 4);

		assert_memory_equal(cie + 8, "\x01zR\0", 4);
		assert_int_equal(cie[15], 1);
		assert_int_equal(cie[16], 0x1b);
		/* pc_begin is pc-relative: it names eh_one. */
		assert_int_equal(im.frame.addr + (fde - im.frame.off) + 8 +
					 (uint64_t)(int32_t)le32(im.buf + fde + 8),
				 eh_fns[EH_ONE].value);
	}
	snprintf(path, sizeof(path), "%s/eh.patched", tmpdir);
	for (size_t i = 0; i < ARRAY_SIZE(patches); i++) {
		unsigned char *copy = malloc(im.len);

		assert_non_null(copy);
		memcpy(copy, im.buf, im.len);
		eh_apply(&im, &patches[i], copy);
		write_bytes(path, copy, im.len);
		free(copy);
		print_message("eh patch: %s\n", patches[i].what);
		eh_check(path, patches[i].mask, patches[i].care);
	}
	free(im.buf);
}

/* Random bytes in .eh_frame_hdr and .eh_frame: a function start or the raw address, no crash. */
static void test_eh_fuzz(void **state)
{
	uint64_t seed = 7;
	struct eh_image im;
	char path[4200];

	(void)state;
	eh_image_load(&im);
	snprintf(path, sizeof(path), "%s/eh.fuzz", tmpdir);
	for (int i = 0; i < 200; i++) {
		unsigned char *copy = malloc(im.len);

		assert_non_null(copy);
		memcpy(copy, im.buf, im.len);
		for (int k = 0; k < 1 + i % 6; k++) {
			const struct eh_section *sec = k % 2 ? &im.frame : &im.hdr;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			copy[sec->off + (seed >> 33) % sec->size] ^=
				(unsigned char)(seed >> 17 | 1);
		}
		write_bytes(path, copy, im.len);
		free(copy);
		eh_check(path, 0, 0);
	}
	free(im.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eh_func_start),	cmocka_unit_test(test_eh_no_symbol),
		cmocka_unit_test(test_lld_shared_page), cmocka_unit_test(test_eh_corrupt),
		cmocka_unit_test(test_eh_fuzz),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
