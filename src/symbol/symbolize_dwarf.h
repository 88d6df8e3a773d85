/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SYMBOLIZE_DWARF_H
#define PLATEAU_SYMBOLIZE_DWARF_H

/*
 * Internal to the symbolizer (symbolize_dwarf.c): inline chains and
 * file:line from DWARF, through a per-compile-unit address index; and the
 * address map that index is made of, also used by addr2line.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbol/symbolize.h"

/*
 * An address map: the addresses covered by a set of ranges, cut into
 * disjoint intervals [start[i], start[i + 1]) each owned by one id (or
 * -1, none).  Built by painting ranges over the elementary intervals
 * that every range bound cuts; looked up by binary search.
 */
struct sym_addrmap {
	uint64_t *start; /* nr + 1 increasing bounds (none when nr == 0) */
	int32_t *owner;	 /* owner[i] of [start[i], start[i + 1]), or -1 */
	size_t nr;
};

/*
 * Cut at the bounds of ranges[0..nr) (pairs lo, hi; a range with
 * lo >= hi is ignored); every interval owned by -1.  Caller has
 * ownership: sym_addrmap_release().
 */
void sym_addrmap_init(struct sym_addrmap *m, const uint64_t (*ranges)[2], size_t nr);
/*
 * Give [lo, hi) — one of the ranges m was cut at — to id, where the
 * current owner is within [if_lo, if_hi) (-1 being a possible owner).
 * Returns the number of intervals looked at (the cost).
 */
size_t sym_addrmap_paint(struct sym_addrmap *m, uint64_t lo, uint64_t hi, int32_t id, int32_t if_lo,
			 int32_t if_hi);
/* Merge neighbours with the same owner (after the caller changed owners as it likes). */
void sym_addrmap_finish(struct sym_addrmap *m);
/* The owner of addr, or -1. */
int32_t sym_addrmap_find(const struct sym_addrmap *m, uint64_t addr);
/* Heap bytes held. */
size_t sym_addrmap_bytes(const struct sym_addrmap *m);
void sym_addrmap_release(struct sym_addrmap *m);

/* One file's DWARF (libdwfl session and per-CU indexes); opaque. */
struct sym_dwarf;

/*
 * The DWARF of the ELF file at path, or NULL when libdwfl cannot use it
 * (or it is not at address 0).  Free with sym_dwarf_free (NULL-safe).
 */
struct sym_dwarf *sym_dwarf_open(const char *path);
void sym_dwarf_free(struct sym_dwarf *w);

/* How sym_dwarf_frames finds the DIEs holding an address. */
enum sym_dwarf_mode {
	SYM_DWARF_INDEX,     /* per-CU address index, built on the CU's first lookup */
	SYM_DWARF_REFERENCE, /* dwarf_getscopes on every lookup (slow; the index must agree) */
};

/*
 * The inline chain at the ELF address vaddr into out[0..max), innermost
 * first: every frame but a real function carries SYM_FRAME_INLINED; the
 * innermost frame's file:line is the line table's, an outer frame's the
 * call site of the frame inside it.  Returns the count, 0 when no DWARF
 * function holds vaddr (out[0].file and line may still be set from the
 * line table).  Names are demangled through s.
 */
size_t sym_dwarf_frames(struct symbolizer *s, struct sym_dwarf *w, uint64_t vaddr,
			struct sym_frame *out, size_t max);

/* What the per-CU indexes hold (summed over files by symbolizer_dwarf_stats). */
struct sym_dwarf_stats {
	size_t cus;	  /* compile units indexed */
	size_t slow_cus;  /* compile units left to dwarf_getscopes (walk failed) */
	size_t funcs;	  /* subprograms and inlined instances in the indexes */
	size_t intervals; /* address intervals in the indexes */
	size_t bytes;	  /* heap bytes of the indexes */
};

/* Add w's index statistics to *st (w may be NULL). */
void sym_dwarf_stats(const struct sym_dwarf *w, struct sym_dwarf_stats *st);

/* symbolize.c: name demangled (parameters kept, version dropped), interned in s; NULL for NULL. */
const char *sym_demangle(struct symbolizer *s, const char *name);
/* symbolize.c: the way s looks DWARF up (tests compare both); SYM_DWARF_INDEX by default. */
void symbolizer_set_dwarf_mode(struct symbolizer *s, enum sym_dwarf_mode mode);
enum sym_dwarf_mode symbolizer_dwarf_mode(const struct symbolizer *s);
/* symbolize.c: the index statistics of every file of s. */
void symbolizer_dwarf_stats(const struct symbolizer *s, struct sym_dwarf_stats *st);

#endif
