/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the agent unwinder's CFI parser (src/agent/stack/unwind_cfi.c:
 * .eh_frame_hdr, CIEs, FDEs, CFA programs and expressions) through
 * agent_unwind_parse_module(), on a module the harness lays out in a heap
 * buffer of exactly the bytes its readable PT_LOADs claim, so that a read
 * past them is an ASan report.  Byte 0 picks the input's shape:
 *  - bit 0 clear: bytes 1-4 (int32) place the code relative to the first
 *    byte of .eh_frame, bytes 5-8 (uint32) give its length, and the rest
 *    is a raw .eh_frame.  The harness puts an .eh_frame_hdr before it:
 *    with bit 1 clear one without a table (the parser walks .eh_frame to
 *    its terminator), with bit 1 set one whose table lists every entry
 *    found by following the lengths;
 *  - bit 0 set: bytes 1-8 are ignored and the rest is an ELF64 file, loaded
 *    as ld.so would map it (each PT_LOAD's file bytes at its vaddr, cut at
 *    the end of the file), with its own PT_GNU_EH_FRAME.
 * Checked: the parse succeeds; a module without executable code is
 * skipped; rows are at most one per byte of code (and, walking .eh_frame,
 * fewer than its bytes); malformed FDEs are at most the entries; a module
 * without rows is counted bad.  See fuzz/README.md.
 */
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/stack/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__ubsan_default_options(void);

/* The fuzz build lets UBSan recover; a report must end the run as a crash. */
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define HDR	    9
#define F_ELF	    1u
#define F_TABLE	    2u
#define PHDRS_MAX   64
#define SPAN_MAX    (16u << 20) /* bytes of one loaded image */
#define ENTRIES_MAX 65536
#define EH_HDR_MIN  8 /* version, 3 encodings, eh_frame_ptr */

#define BUG(...)                                                \
	do {                                                    \
		fprintf(stderr, "fuzz_agentcfi: " __VA_ARGS__); \
		fputc('\n', stderr);                            \
		abort();                                        \
	} while (0)

static uint64_t get(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (size_t i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void parse(const struct dl_phdr_info *info, struct agent_unwind_stats *st)
{
	int rc = agent_unwind_parse_module(info, st);

	if (rc)
		BUG("agent_unwind_parse_module returned %d", rc);
	if (st->modules > 1 || st->parsed != st->modules || st->bad_modules > st->modules)
		BUG("%zu modules, %zu bad, %llu parsed", st->modules, st->bad_modules,
		    (unsigned long long)st->parsed);
	if (!st->modules && (st->rows || st->bytes || st->bad_fdes))
		BUG("a skipped module has %zu rows", st->rows);
	if (st->modules && (st->bad_modules != !st->rows || st->bytes < st->rows * 8))
		BUG("%zu rows in %zu bytes, bad %zu", st->rows, st->bytes, st->bad_modules);
}

/* The offsets of the entries of .eh_frame, up to its terminator; returns how many. */
static size_t entries(const uint8_t *p, size_t n, uint32_t *out, size_t max)
{
	size_t off = 0, k = 0;

	while (k < max && n - off >= 4) {
		uint64_t len = get(p + off, 4), head = 4;

		if (!len)
			break;
		if (len == 0xffffffff) {
			if (n - off < 12)
				break;
			len = get(p + off + 4, 8);
			head = 12;
		}
		if (len > n - off - head)
			break;
		out[k++] = (uint32_t)off;
		off += head + len;
	}
	return k;
}

/*
 * [.eh_frame_hdr][.eh_frame] in one buffer: a readable PT_LOAD of exactly
 * its bytes, the code as a PT_LOAD that is executable but not readable (the
 * parser only compares addresses with it), and PT_GNU_EH_FRAME.
 */
static void raw(const uint8_t *cfg, const uint8_t *f, size_t n, bool table)
{
	uint32_t *ent = table ? malloc(ENTRIES_MAX * sizeof(*ent)) : NULL;
	size_t k = ent ? entries(f, n, ent, ENTRIES_MAX) : 0;
	size_t hdr = EH_HDR_MIN + (table ? 4 + 8 * k : 0), total = hdr + n;
	uint8_t *buf = malloc(total ? total : 1);
	struct agent_unwind_stats st;
	Elf64_Phdr ph[3] = {
		{.p_type = PT_LOAD, .p_flags = PF_R, .p_filesz = total, .p_memsz = total},
		{.p_type = PT_LOAD,
		 .p_flags = PF_X,
		 .p_vaddr = hdr + (uint64_t)(int32_t)get(cfg, 4),
		 .p_memsz = get(cfg + 4, 4)},
		{.p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_filesz = hdr, .p_memsz = hdr},
	};
	struct dl_phdr_info info = {.dlpi_name = "fuzz", .dlpi_phdr = ph, .dlpi_phnum = 3};

	if (!buf || (table && !ent))
		BUG("out of memory");
	/* version 1, eh_frame_ptr pcrel sdata4, then the table's count and entries */
	buf[0] = 1;
	buf[1] = 0x1b;
	buf[2] = table ? 0x03 : 0xff;
	buf[3] = table ? 0x3b : 0xff;
	put32(buf + 4, (uint32_t)(hdr - 4));
	if (table)
		put32(buf + 8, (uint32_t)k);
	for (size_t i = 0; i < k; i++) {
		put32(buf + 12 + 8 * i, (uint32_t)i);
		put32(buf + 16 + 8 * i, (uint32_t)(hdr + ent[i]));
	}
	memcpy(buf + hdr, f, n);
	info.dlpi_addr = (uintptr_t)buf;
	parse(&info, &st);
	if (st.modules && st.rows > ph[1].p_memsz + 1)
		BUG("%zu rows for %llu bytes of code", st.rows, (unsigned long long)ph[1].p_memsz);
	if (!table && st.rows > n)
		BUG("%zu rows from %zu bytes of .eh_frame", st.rows, n);
	if (st.bad_fdes > (table ? k : n / 8))
		BUG("%zu bad FDEs of %zu entries", st.bad_fdes, table ? k : n / 8);
	free(buf);
	free(ent);
}

/* Each PT_LOAD's readable bytes cut to the file; false when none or too far apart. */
static bool image_span(Elf64_Phdr *ph, size_t nph, size_t n, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < nph; i++) {
		Elf64_Phdr *p = &ph[i];

		if (p->p_type != PT_LOAD)
			continue;
		if (p->p_offset >= n || p->p_vaddr > UINT64_MAX - n)
			p->p_filesz = 0;
		else if (p->p_filesz > n - p->p_offset)
			p->p_filesz = n - p->p_offset;
		if (!p->p_filesz)
			continue;
		*lo = p->p_vaddr < *lo ? p->p_vaddr : *lo;
		*hi = p->p_vaddr + p->p_filesz > *hi ? p->p_vaddr + p->p_filesz : *hi;
	}
	return *lo < *hi && *hi - *lo <= SPAN_MAX;
}

static void elf(const uint8_t *f, size_t n)
{
	Elf64_Phdr ph[PHDRS_MAX];
	struct dl_phdr_info info = {.dlpi_name = "fuzz", .dlpi_phdr = ph};
	struct agent_unwind_stats st;
	uint64_t phoff, lo, hi;
	uint8_t *img;

	if (n < sizeof(Elf64_Ehdr) || memcmp(f, ELFMAG, SELFMAG) || f[EI_CLASS] != ELFCLASS64 ||
	    f[EI_DATA] != ELFDATA2LSB || get(f + 54, 2) != sizeof(Elf64_Phdr))
		return;
	phoff = get(f + 32, 8);
	info.dlpi_phnum = (ElfW(Half))get(f + 56, 2);
	if (info.dlpi_phnum > PHDRS_MAX || phoff > n ||
	    info.dlpi_phnum > (n - phoff) / sizeof(Elf64_Phdr))
		return;
	memcpy(ph, f + phoff, info.dlpi_phnum * sizeof(Elf64_Phdr));
	if (!image_span(ph, info.dlpi_phnum, n, &lo, &hi))
		return;
	img = calloc(1, hi - lo);
	if (!img)
		BUG("out of memory");
	for (size_t i = 0; i < info.dlpi_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_filesz)
			memcpy(img + (ph[i].p_vaddr - lo), f + ph[i].p_offset, ph[i].p_filesz);
	}
	info.dlpi_addr = (uintptr_t)img - lo;
	parse(&info, &st);
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	if (data[0] & F_ELF)
		elf(data + HDR, size - HDR);
	else
		raw(data + 1, data + HDR, size - HDR, data[0] & F_TABLE);
	return 0;
}
