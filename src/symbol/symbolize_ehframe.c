/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "symbol/ehframe_hdr.h"
#include "symbol/symbolize_elf.h"

/*
 * Where an unnamed function starts, through the file's .eh_frame_hdr
 * table and .eh_frame FDEs: the parsing and its checks are symbol/ehframe_hdr.h's,
 * shared with the agent; this reads the sections with libelf, once per file.
 *
 * Why not libdw's CFI (dwarf_getcfi_elf, dwarf_cfi_addrframe,
 * dwarf_frame_info), measured with build/ehframe_bench
 * (bench/ehframe_bench.c: 200,000 addresses at random in .text, both ways):
 *
 * - It does not answer the question.  dwarf_frame_info's start is that of
 *   the CFI row holding the address (the rules change after each push in
 *   a prologue), not the FDE's initial location; libdw has no call that
 *   returns the FDE's start for an address (dwarf_next_cfi walks the
 *   entries and leaves the encoded pointer to the caller, which is what
 *   symbol/ehframe_hdr.h decodes).  Both find an FDE for the same addresses,
 *   but libdw's start agrees with the function's on 21% of them in
 *   /usr/bin/python3 (9,069 functions named with 20,303 offsets, 2.2 per
 *   function), 4% in sqlite3 (8.7 per function), 22% in libc.so.6 (3.3):
 *   one unnamed function would become several frames, which
 *   SYM_FRAME_FUNC_START exists to prevent.
 * - Memory.  libdw caches every CIE and FDE it parses and allocates a
 *   Dwarf_Frame per lookup: +741 KB of heap after the lookups in
 *   python3, +291 KB in libc, +31 KB in sqlite3; this keeps no heap (the
 *   table and FDEs are read in place from libelf's section data).
 * - Time: the same order.  Set up 0.05-0.44 ms here, 0.08-0.49 ms there;
 *   0.28-0.75 us a lookup here, 0.41-1.17 us there (runs vary on the
 *   shared 2-core machine).
 * - One answer for both collectors.  The agent's unwind rows and symbol
 *   tables (src/agent/stack/unwind_cfi.c, symtab_code.c) are built inside the
 *   programs it profiles, with no library but libc and libcurl and with
 *   mmap for memory (in dl_iterate_phdr's callback), so they cannot use
 *   libdw; sharing symbol/ehframe_hdr.h keeps `plateau record` and the agent
 *   naming an unnamed function by the same start.  The record-time
 *   unwinder (record/unwind.c) does use libdw (dwfl_getthread_frames): there
 *   CFI rows are what is needed.
 */

static void ehframe_load(struct sym_ehframe *eh, Elf *elf)
{
	const char *ident = elf ? elf_getident(elf, NULL) : NULL;
	GElf_Shdr hsh, fsh;
	Elf_Scn *hs = ident ? sym_elf_section(elf, ".eh_frame_hdr", &hsh) : NULL;
	Elf_Scn *fs = hs ? sym_elf_section(elf, ".eh_frame", &fsh) : NULL;
	Elf_Data *hd, *fd;
	struct ehframe *t = &eh->t;

	eh->tried = true;
	/* A debug file keeps these sections as SHT_NOBITS: nothing to read. */
	if (!fs || hsh.sh_type != SHT_PROGBITS || fsh.sh_type != SHT_PROGBITS ||
	    !(hd = elf_getdata(hs, NULL)) || !hd->d_buf || !(fd = elf_getdata(fs, NULL)) ||
	    !fd->d_buf || !fd->d_size)
		return;
	t->msb = ident[EI_DATA] == ELFDATA2MSB;
	t->addr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	t->addr_mask = t->addr_size == 4 ? UINT32_MAX : UINT64_MAX;
	t->hdr_addr = hsh.sh_addr;
	t->frame = fd->d_buf;
	t->frame_size = fd->d_size;
	t->frame_addr = fsh.sh_addr;
	ehframe_table(t, hd->d_buf, hd->d_size);
}

bool sym_dso_func_start(struct sym_dso *d, uint64_t vaddr, uint64_t *start)
{
	const struct ehframe *t = &d->eh.t;
	size_t lo = 0, hi;
	uint64_t begin, range;

	if (!d->eh.tried)
		ehframe_load(&d->eh, d->text ? NULL : d->elf);
	hi = t->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ehframe_table_addr(t, mid, 0) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The table's start must be the FDE's, and the FDE must reach vaddr. */
	if (!lo || !ehframe_fde_range(t, ehframe_table_addr(t, lo - 1, 1), &begin, &range) ||
	    begin != ehframe_table_addr(t, lo - 1, 0) || vaddr - begin >= range)
		return false;
	*start = begin;
	return true;
}
