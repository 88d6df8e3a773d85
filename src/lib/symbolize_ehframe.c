/* SPDX-License-Identifier: MIT */
#include <dwarf.h>

#include "util/common.h"
#include "lib/symbolize_elf.h"

/*
 * Where an unnamed function starts: .eh_frame_hdr's sorted table of
 * (initial location, FDE address) pairs finds the last FDE starting at or
 * before the address, and the FDE itself (in .eh_frame) says whether its
 * range [pc_begin, pc_begin + pc_range) holds it.  Only the encodings
 * linkers emit are read: a table of DW_EH_PE_udata4 count and
 * DW_EH_PE_datarel|DW_EH_PE_sdata4 entries, and FDE pointers that are
 * absolute or pc-relative.  Every read is bounded by its section (or by the
 * CIE/FDE's own length); anything else makes the table or the entry unusable.
 */

#define EH_TABLE_ENC (DW_EH_PE_datarel | DW_EH_PE_sdata4)
#define EH_ENTRY     8 /* two sdata4 values */
#define EH_LEN_64    0xffffffffu

/* A bounded reader over bytes that sit at ELF address base_addr. */
struct eh_cur {
	const unsigned char *p, *end;
	const unsigned char *base;
	uint64_t base_addr;
	const struct sym_ehframe *eh;
};

static uint64_t eh_get(const unsigned char *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * (msb ? n - 1 - i : i));
	return v;
}

static uint64_t sign_extend(uint64_t v, size_t bytes)
{
	uint64_t bit = (uint64_t)1 << (8 * bytes - 1);

	return bytes >= 8 ? v : (v ^ bit) - bit;
}

static uint64_t cur_addr(const struct eh_cur *c)
{
	return c->base_addr + (uint64_t)(c->p - c->base);
}

static bool cur_uint(struct eh_cur *c, size_t n, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	*v = eh_get(c->p, n, c->eh->msb);
	c->p += n;
	return true;
}

static bool cur_leb(struct eh_cur *c, bool sign, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	unsigned char b;

	do {
		if (c->p == c->end || shift >= 64)
			return false;
		b = *c->p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = r;
	return true;
}

/* The value of a DW_EH_PE encoding, without applying its base. */
static bool cur_raw(struct eh_cur *c, unsigned enc, uint64_t *v)
{
	size_t n;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: n = c->eh->addr_size; break;
	case DW_EH_PE_uleb128: return cur_leb(c, false, v);
	case DW_EH_PE_sleb128: return cur_leb(c, true, v);
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2: n = 2; break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: n = 4; break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: n = 8; break;
	default: return false;
	}
	if (!cur_uint(c, n, v))
		return false;
	if (enc & DW_EH_PE_signed)
		*v = sign_extend(*v, n);
	return true;
}

/* An address: absolute or pc-relative; other bases and indirection are refused. */
static bool cur_pointer(struct eh_cur *c, unsigned enc, uint64_t *v)
{
	uint64_t field = cur_addr(c);

	if ((enc & DW_EH_PE_indirect) || !cur_raw(c, enc, v))
		return false;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		*v += field;
	else if ((enc & 0x70) != DW_EH_PE_absptr)
		return false;
	*v &= c->eh->addr_mask;
	return true;
}

/* Limit c to a CIE or FDE's length (32-bit form only; 0 ends .eh_frame). */
static bool cur_record(struct eh_cur *c)
{
	uint64_t len;

	if (!cur_uint(c, 4, &len) || !len || len == EH_LEN_64 || len > (size_t)(c->end - c->p))
		return false;
	c->end = c->p + len;
	return true;
}

static bool frame_cursor(const struct sym_ehframe *eh, uint64_t addr, struct eh_cur *c)
{
	uint64_t off = addr - eh->frame_addr;

	if (addr < eh->frame_addr || off >= eh->frame_size)
		return false;
	*c = (struct eh_cur){eh->frame + off, eh->frame + eh->frame_size, eh->frame, eh->frame_addr,
			     eh};
	return true;
}

/* Walk the "z" augmentation data up to 'R', the FDE pointer encoding. */
static bool cie_aug_enc(struct eh_cur *c, const char *aug, unsigned *enc)
{
	uint64_t x;

	for (; *aug; aug++) {
		switch (*aug) {
		case 'R':
			if (!cur_uint(c, 1, &x))
				return false;
			*enc = (unsigned)x;
			return true;
		case 'L':
			if (!cur_uint(c, 1, &x))
				return false;
			break;
		case 'P':
			if (!cur_uint(c, 1, &x) || (x & 0x70) == DW_EH_PE_aligned ||
			    !cur_raw(c, (unsigned)x, &x))
				return false;
			break;
		case 'S':
		case 'B':
		case 'G': break;
		default: return false;
		}
	}
	return true;
}

/* The FDE pointer encoding of the CIE at addr (absptr when it has no 'R'). */
static bool cie_fde_enc(const struct sym_ehframe *eh, uint64_t addr, unsigned *enc)
{
	struct eh_cur c;
	uint64_t id, version, x, len;
	const char *aug;
	size_t n;

	if (!frame_cursor(eh, addr, &c) || !cur_record(&c) || !cur_uint(&c, 4, &id) || id ||
	    !cur_uint(&c, 1, &version) || (version != 1 && version != 3))
		return false;
	aug = (const char *)c.p;
	n = strnlen(aug, (size_t)(c.end - c.p));
	if (n == (size_t)(c.end - c.p))
		return false;
	c.p += n + 1;
	*enc = DW_EH_PE_absptr;
	if (aug[0] != 'z')
		return !aug[0];
	/* Code and data alignment factors, return address register, data length. */
	if (!cur_leb(&c, false, &x) || !cur_leb(&c, true, &x) ||
	    !(version == 1 ? cur_uint(&c, 1, &x) : cur_leb(&c, false, &x)) ||
	    !cur_leb(&c, false, &len) || len > (size_t)(c.end - c.p))
		return false;
	c.end = c.p + len;
	return cie_aug_enc(&c, aug + 1, enc);
}

/* [*begin, *begin + *range) of the FDE at addr. */
static bool fde_range(const struct sym_ehframe *eh, uint64_t addr, uint64_t *begin, uint64_t *range)
{
	struct eh_cur c;
	uint64_t field, delta;
	unsigned enc;

	if (!frame_cursor(eh, addr, &c) || !cur_record(&c))
		return false;
	/* The CIE pointer counts back from its own field; 0 would make this a CIE. */
	field = cur_addr(&c);
	if (!cur_uint(&c, 4, &delta) || !delta || delta > field - eh->frame_addr ||
	    !cie_fde_enc(eh, field - delta, &enc))
		return false;
	/* The range is a length: never signed. */
	return cur_pointer(&c, enc, begin) && cur_raw(&c, enc & ~(unsigned)DW_EH_PE_signed, range);
}

/* Field 0 (initial location) or 1 (FDE address) of table entry i. */
static uint64_t table_addr(const struct sym_ehframe *eh, size_t i, size_t field)
{
	uint64_t off = eh_get(eh->table + EH_ENTRY * i + 4 * field, 4, eh->msb);

	return (eh->hdr_addr + sign_extend(off, 4)) & eh->addr_mask;
}

/* Check the header and point at the table; an unusable one leaves eh->nr 0. */
static void ehframe_table(struct sym_ehframe *eh, const Elf_Data *hdr)
{
	struct eh_cur c = {hdr->d_buf, (const unsigned char *)hdr->d_buf + hdr->d_size, hdr->d_buf,
			   eh->hdr_addr, eh};
	uint64_t version, ptr_enc, count_enc, table_enc, x, count;

	if (!cur_uint(&c, 1, &version) || version != 1 || !cur_uint(&c, 1, &ptr_enc) ||
	    !cur_uint(&c, 1, &count_enc) || !cur_uint(&c, 1, &table_enc) ||
	    count_enc != DW_EH_PE_udata4 || table_enc != EH_TABLE_ENC ||
	    !cur_raw(&c, (unsigned)ptr_enc, &x) || !cur_uint(&c, 4, &count) ||
	    count > (size_t)(c.end - c.p) / EH_ENTRY)
		return;
	eh->table = c.p;
	/* The binary search needs the order the format promises. */
	for (size_t i = 1; i < count; i++) {
		if (table_addr(eh, i, 0) < table_addr(eh, i - 1, 0))
			return;
	}
	eh->nr = count;
}

static void ehframe_load(struct sym_ehframe *eh, Elf *elf)
{
	const char *ident = elf ? elf_getident(elf, NULL) : NULL;
	GElf_Shdr hsh, fsh;
	Elf_Scn *hs = ident ? sym_elf_section(elf, ".eh_frame_hdr", &hsh) : NULL;
	Elf_Scn *fs = hs ? sym_elf_section(elf, ".eh_frame", &fsh) : NULL;
	Elf_Data *hd, *fd;

	eh->tried = true;
	/* A debug file keeps these sections as SHT_NOBITS: nothing to read. */
	if (!fs || hsh.sh_type != SHT_PROGBITS || fsh.sh_type != SHT_PROGBITS ||
	    !(hd = elf_getdata(hs, NULL)) || !hd->d_buf || !(fd = elf_getdata(fs, NULL)) ||
	    !fd->d_buf || !fd->d_size)
		return;
	eh->msb = ident[EI_DATA] == ELFDATA2MSB;
	eh->addr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	eh->addr_mask = eh->addr_size == 4 ? UINT32_MAX : UINT64_MAX;
	eh->hdr_addr = hsh.sh_addr;
	eh->frame = fd->d_buf;
	eh->frame_size = fd->d_size;
	eh->frame_addr = fsh.sh_addr;
	ehframe_table(eh, hd);
}

bool sym_dso_func_start(struct sym_dso *d, uint64_t vaddr, uint64_t *start)
{
	struct sym_ehframe *eh = &d->eh;
	size_t lo = 0, hi;
	uint64_t begin, range;

	if (!eh->tried)
		ehframe_load(eh, d->text ? NULL : d->elf);
	hi = eh->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (table_addr(eh, mid, 0) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The table's start must be the FDE's, and the FDE must reach vaddr. */
	if (!lo || !fde_range(eh, table_addr(eh, lo - 1, 1), &begin, &range) ||
	    begin != table_addr(eh, lo - 1, 0) || vaddr - begin >= range)
		return false;
	*start = begin;
	return true;
}
