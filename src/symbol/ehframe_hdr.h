/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_EHFRAME_HDR_H
#define PLATEAU_EHFRAME_HDR_H

/*
 * Where an unnamed function starts, from bytes already in memory:
 * .eh_frame_hdr's sorted table of (initial location, FDE address) pairs
 * finds the last FDE starting at or before an address, and the FDE itself
 * (in .eh_frame) says whether its range [pc_begin, pc_begin + pc_range)
 * holds it.  Only the encodings linkers emit are read: a table of
 * EH_PE_UDATA4 count and EH_PE_DATAREL|EH_PE_SDATA4 entries, and FDE
 * pointers that are absolute or pc-relative.  Every read is bounded by its
 * section (or by the CIE/FDE's own length); anything else makes the table
 * or the entry unusable.
 *
 * One definition for both collectors, so that they find the same start:
 * `plateau record` (src/symbol/symbolize_ehframe.c, over libelf's section
 * data) and the in-process agent (src/agent/symtab_code.c, over sections it
 * read itself).  Header-only and libc-only (its reads are util/cursor.h's,
 * header-only too): the agent may include it (doc/symbolize.md, "Unnamed
 * addresses").  Nothing here allocates; every pointer is borrowed from the
 * caller.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/cursor.h"

/* DW_EH_PE pointer encodings (the LSB's .eh_frame format). */
enum {
	EH_PE_ABSPTR = 0x00,
	EH_PE_ULEB = 0x01,
	EH_PE_UDATA2 = 0x02,
	EH_PE_UDATA4 = 0x03,
	EH_PE_UDATA8 = 0x04,
	EH_PE_SIGNED = 0x08,
	EH_PE_SLEB = 0x09,
	EH_PE_SDATA2 = 0x0a,
	EH_PE_SDATA4 = 0x0b,
	EH_PE_SDATA8 = 0x0c,
	EH_PE_PCREL = 0x10,
	EH_PE_DATAREL = 0x30,
	EH_PE_ALIGNED = 0x50,
	EH_PE_INDIRECT = 0x80,
	EH_PE_OMIT = 0xff,
};

#define EHFRAME_TABLE_ENC (EH_PE_DATAREL | EH_PE_SDATA4)
#define EHFRAME_ENTRY	  8 /* a table entry: two sdata4 values */
#define EHFRAME_LEN_64	  0xffffffffu

/*
 * One file's .eh_frame_hdr table and the .eh_frame it points into, with
 * what the file's ELF header says about its values.  table and frame are
 * borrowed.  nr == 0: no usable table.
 */
struct ehframe {
	const uint8_t *table; /* nr pairs (start, FDE) of sdata4, relative to hdr_addr */
	size_t nr;
	uint64_t hdr_addr;    /* .eh_frame_hdr's ELF vaddr */
	const uint8_t *frame; /* .eh_frame's bytes */
	size_t frame_size;
	uint64_t frame_addr;
	uint64_t addr_mask; /* addresses wrap at the ELF class's width */
	unsigned addr_size; /* bytes of an EH_PE_ABSPTR value */
	bool msb;	    /* big-endian file */
};

/* A bounded reader over bytes that sit at ELF address base_addr. */
struct ehframe_cur {
	struct cursor c;
	const uint8_t *base;
	uint64_t base_addr;
	const struct ehframe *eh;
};

static inline uint64_t ehframe_get(const uint8_t *p, size_t n, bool msb)
{
	struct cursor c = cursor_make(p, n);

	return cursor_uint(&c, n, msb);
}

static inline uint64_t ehframe_sign_extend(uint64_t v, size_t bytes)
{
	uint64_t bit = (uint64_t)1 << (8 * bytes - 1);

	return bytes >= 8 ? v : (v ^ bit) - bit;
}

static inline uint64_t ehframe_cur_addr(const struct ehframe_cur *c)
{
	return c->base_addr + (uint64_t)(c->c.p - c->base);
}

static inline bool ehframe_cur_uint(struct ehframe_cur *c, size_t n, uint64_t *v)
{
	uint64_t x = cursor_uint(&c->c, n, c->eh->msb);

	if (!cursor_ok(&c->c))
		return false;
	*v = x;
	return true;
}

/* A LEB128 number of at most 10 bytes (a longer one is refused, not truncated). */
static inline bool ehframe_cur_leb(struct ehframe_cur *c, bool sign, uint64_t *v)
{
	const uint8_t *at = c->c.p;
	uint64_t x = sign ? (uint64_t)cursor_sleb128(&c->c) : cursor_uleb128(&c->c);

	if (!cursor_ok(&c->c) || c->c.p - at > CURSOR_VARINT_MAX)
		return false;
	*v = x;
	return true;
}

/* The value of encoding ENC's format, without applying its base. */
static inline bool ehframe_cur_raw(struct ehframe_cur *c, unsigned enc, uint64_t *v)
{
	size_t n;

	switch (enc & 0x0f) {
	case EH_PE_ABSPTR: n = c->eh->addr_size; break;
	case EH_PE_ULEB: return ehframe_cur_leb(c, false, v);
	case EH_PE_SLEB: return ehframe_cur_leb(c, true, v);
	case EH_PE_UDATA2:
	case EH_PE_SDATA2: n = 2; break;
	case EH_PE_UDATA4:
	case EH_PE_SDATA4: n = 4; break;
	case EH_PE_UDATA8:
	case EH_PE_SDATA8: n = 8; break;
	default: return false;
	}
	if (!ehframe_cur_uint(c, n, v))
		return false;
	if (enc & EH_PE_SIGNED)
		*v = ehframe_sign_extend(*v, n);
	return true;
}

/* An address: absolute or pc-relative; other bases and indirection are refused. */
static inline bool ehframe_cur_pointer(struct ehframe_cur *c, unsigned enc, uint64_t *v)
{
	uint64_t field = ehframe_cur_addr(c);

	if ((enc & EH_PE_INDIRECT) || !ehframe_cur_raw(c, enc, v))
		return false;
	if ((enc & 0x70) == EH_PE_PCREL)
		*v += field;
	else if ((enc & 0x70) != EH_PE_ABSPTR)
		return false;
	*v &= c->eh->addr_mask;
	return true;
}

/* Limit C to a CIE or FDE's length (32-bit form only; 0 ends .eh_frame). */
static inline bool ehframe_cur_record(struct ehframe_cur *c)
{
	uint64_t len;

	if (!ehframe_cur_uint(c, 4, &len) || !len || len == EHFRAME_LEN_64 ||
	    len > cursor_left(&c->c))
		return false;
	c->c.end = c->c.p + len;
	return true;
}

/* A reader at ELF address ADDR of .eh_frame, up to its end. */
static inline bool ehframe_cursor(const struct ehframe *eh, uint64_t addr, struct ehframe_cur *c)
{
	uint64_t off = addr - eh->frame_addr;

	if (addr < eh->frame_addr || off >= eh->frame_size)
		return false;
	*c = (struct ehframe_cur){cursor_span(eh->frame + off, eh->frame + eh->frame_size),
				  eh->frame, eh->frame_addr, eh};
	return true;
}

/* Walk the "z" augmentation data up to 'R', the FDE pointer encoding. */
static inline bool ehframe_cie_aug_enc(struct ehframe_cur *c, const char *aug, unsigned *enc)
{
	uint64_t x;

	for (; *aug; aug++) {
		switch (*aug) {
		case 'R':
			if (!ehframe_cur_uint(c, 1, &x))
				return false;
			*enc = (unsigned)x;
			return true;
		case 'L':
			if (!ehframe_cur_uint(c, 1, &x))
				return false;
			break;
		case 'P':
			if (!ehframe_cur_uint(c, 1, &x) || (x & 0x70) == EH_PE_ALIGNED ||
			    !ehframe_cur_raw(c, (unsigned)x, &x))
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

/* The FDE pointer encoding of the CIE at ADDR (absptr when it has no 'R'). */
static inline bool ehframe_cie_fde_enc(const struct ehframe *eh, uint64_t addr, unsigned *enc)
{
	struct ehframe_cur c;
	uint64_t id, version, x, len;
	const char *aug;
	size_t n;

	if (!ehframe_cursor(eh, addr, &c) || !ehframe_cur_record(&c) ||
	    !ehframe_cur_uint(&c, 4, &id) || id || !ehframe_cur_uint(&c, 1, &version) ||
	    (version != 1 && version != 3))
		return false;
	aug = (const char *)c.c.p;
	n = strnlen(aug, cursor_left(&c.c));
	if (!cursor_skip(&c.c, n + 1))
		return false;
	*enc = EH_PE_ABSPTR;
	if (aug[0] != 'z')
		return !aug[0];
	/* Code and data alignment factors, return address register, data length. */
	if (!ehframe_cur_leb(&c, false, &x) || !ehframe_cur_leb(&c, true, &x) ||
	    !(version == 1 ? ehframe_cur_uint(&c, 1, &x) : ehframe_cur_leb(&c, false, &x)) ||
	    !ehframe_cur_leb(&c, false, &len) || len > cursor_left(&c.c))
		return false;
	c.c.end = c.c.p + len;
	return ehframe_cie_aug_enc(&c, aug + 1, enc);
}

/* [*begin, *begin + *range) of the FDE at ELF address ADDR. */
static inline bool ehframe_fde_range(const struct ehframe *eh, uint64_t addr, uint64_t *begin,
				     uint64_t *range)
{
	struct ehframe_cur c;
	uint64_t field, delta;
	unsigned enc;

	if (!ehframe_cursor(eh, addr, &c) || !ehframe_cur_record(&c))
		return false;
	/* The CIE pointer counts back from its own field; 0 would make this a CIE. */
	field = ehframe_cur_addr(&c);
	if (!ehframe_cur_uint(&c, 4, &delta) || !delta || delta > field - eh->frame_addr ||
	    !ehframe_cie_fde_enc(eh, field - delta, &enc))
		return false;
	/* The range is a length: never signed. */
	return ehframe_cur_pointer(&c, enc, begin) &&
	       ehframe_cur_raw(&c, enc & ~(unsigned)EH_PE_SIGNED, range);
}

/* Field 0 (initial location) or 1 (FDE address) of table entry I (< eh->nr). */
static inline uint64_t ehframe_table_addr(const struct ehframe *eh, size_t i, size_t field)
{
	uint64_t off = ehframe_get(eh->table + EHFRAME_ENTRY * i + 4 * field, 4, eh->msb);

	return (eh->hdr_addr + ehframe_sign_extend(off, 4)) & eh->addr_mask;
}

/*
 * Check .eh_frame_hdr's bytes HDR[0..SIZE) (at ELF address eh->hdr_addr)
 * and point eh->table at its table; eh->nr is its entry count, or 0 when
 * the header or the table is unusable (a binary search needs the order
 * the format promises).  The other fields of EH must be set.
 */
static inline void ehframe_table(struct ehframe *eh, const uint8_t *hdr, size_t size)
{
	struct ehframe_cur c = {cursor_make(hdr, size), hdr, eh->hdr_addr, eh};
	uint64_t version, ptr_enc, count_enc, table_enc, x, count;

	eh->nr = 0;
	if (!ehframe_cur_uint(&c, 1, &version) || version != 1 ||
	    !ehframe_cur_uint(&c, 1, &ptr_enc) || !ehframe_cur_uint(&c, 1, &count_enc) ||
	    !ehframe_cur_uint(&c, 1, &table_enc) || count_enc != EH_PE_UDATA4 ||
	    table_enc != EHFRAME_TABLE_ENC || !ehframe_cur_raw(&c, (unsigned)ptr_enc, &x) ||
	    !ehframe_cur_uint(&c, 4, &count) || count > cursor_left(&c.c) / EHFRAME_ENTRY)
		return;
	eh->table = c.c.p;
	for (size_t i = 1; i < count; i++) {
		if (ehframe_table_addr(eh, i, 0) < ehframe_table_addr(eh, i - 1, 0))
			return;
	}
	eh->nr = count;
}

#endif
