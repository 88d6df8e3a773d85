/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "symbol/ehframe_hdr.h"
#include "symbol/symbolize_elf.h"

/*
 * Where an unnamed function starts, through the file's .eh_frame_hdr
 * table and .eh_frame FDEs: the parsing and its checks are lib/ehframe_hdr.h's,
 * shared with the agent; this reads the sections with libelf, once per file.
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
