/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_STACK_UNWIND_ROWS_H
#define PLATEAU_AGENT_STACK_UNWIND_ROWS_H

/*
 * Internal to the agent's unwinder (unwind.h, doc/agent-unwind.md): what
 * its two halves share.  unwind_cfi.c (COLD) turns one module's .eh_frame
 * into rows; unwind.c keeps the modules and their tables, publishes them
 * and walks stacks with them (HOT: no malloc, no locks, no loader call).
 *
 * A module's rows are one array sorted by pc, each row holding from its pc
 * to the next row's; a pc below the first row, or in a CFA_NONE row, has no
 * usable CFI.  The array is built by uw_cfi_build() in memory the caller
 * then owns, copied into the module by unwind.c and never changed once
 * published.  Everything lives in private anonymous mappings: refresh never
 * calls malloc, and the memory helpers here are for refresh, never a walker.
 */

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* ---- x86_64 specifics shared by both halves ---- */

#if !defined(__x86_64__) || !defined(__linux__)
#error "the agent's unwinder (src/agent/unwind*.c) supports x86_64 Linux only"
#endif

#define RA_CFA_OFFSET (-8) /* a call pushes the return address just below the CFA */
#define WORD	      8

/* ---- rows ---- */

enum cfa_kind {
	CFA_NONE,      /* no usable CFI: frame-pointer heuristic */
	CFA_RSP,       /* CFA = rsp + off */
	CFA_RBP,       /* CFA = rbp + off */
	CFA_DEREF_RSP, /* CFA = *(rsp + off) */
	CFA_DEREF_RBP, /* CFA = *(rbp + off) */
	CFA_PLT,       /* CFA = rsp + off, + 8 when (pc & 15) >= aux */
	CFA_SIGFRAME,  /* the sigreturn trampoline: registers in the ucontext at rsp */
	CFA_OUTERMOST, /* return address undefined: the walk is complete */
	CFA_RBX,       /* CFA = rbx + off (ld.so's lazy-binding resolver) */
};

/* How the caller's rbp (bp) or rbx (bx; the first three only) is found. */
enum bp_kind {
	BP_SAME,   /* unchanged */
	BP_AT,	   /* saved at CFA + aux * 8 */
	BP_LOST,   /* not recoverable */
	BP_AT_RBP, /* saved at rbp + aux * 8 (stack realignment with a DRAP) */
};

/*
 * A row holds from its pc to the next row's.  rule packs kind (4 bits),
 * bp (2), its aux (7, signed), bx (2), its aux (7, signed) and, in the high
 * half, off (32, signed, bytes); a CFA_NONE rule is always 0.
 */
typedef uint64_t uw_rule;

struct __attribute__((packed)) uw_row {
	uint32_t pc; /* offset from the module's lo */
	uw_rule rule;
};

#define RULE_KIND(r)   ((unsigned)(r)&15u)
#define RULE_BP(r)     ((unsigned)((r) >> 4) & 3u)
#define RULE_AUX(r)    ((int32_t)((uint32_t)(r) << 19) >> 25)
#define RULE_BX(r)     ((unsigned)((r) >> 13) & 3u)
#define RULE_BX_AUX(r) ((int32_t)((uint32_t)(r) << 10) >> 25)
#define RULE_OFF(r)    ((int32_t)(uint32_t)((r) >> 32))
#define RULE_GAP       ((uw_rule)1 << 22) /* unwind_cfi.c only: an FDE's end, until compacted */

/* The rule of a row; CFA_NONE when OFF or AUX does not fit (BX_AUX only loses rbx). */
static inline uw_rule rule_make(unsigned kind, unsigned bp, int64_t aux, unsigned bx,
				int64_t bx_aux, int64_t off)
{
	if (off < INT32_MIN || off > INT32_MAX || aux < -64 || aux > 63)
		return CFA_NONE;
	if (bx_aux < -64 || bx_aux > 63)
		bx = BP_LOST, bx_aux = 0;
	return kind | bp << 4 | ((uw_rule)aux & 0x7f) << 6 | (uw_rule)bx << 13 |
	       ((uw_rule)bx_aux & 0x7f) << 15 | (uw_rule)(uint32_t)off << 32;
}

/* ---- memory: everything lives in private anonymous mappings ---- */

/* SIZE bytes of zeroes, or NULL. */
static inline void *map_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Unmap what map_alloc() or map_grow() mapped; NULL is a no-op. */
static inline void map_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/*
 * Grow *P (*CAP elements of SIZE bytes; NULL and 0 at first) to at least N,
 * up to MAX elements.  False when that is more than MAX or out of memory:
 * *P and *CAP are then unchanged.
 */
static inline bool map_grow(void **p, size_t *cap, size_t n, size_t size, size_t max)
{
	size_t ncap = *cap ? *cap : 4096 / size;
	void *q;

	while (ncap < n)
		ncap *= 2;
	if (ncap > max)
		ncap = max;
	if (ncap < n)
		return false;
	if (!*p)
		q = map_alloc(ncap * size);
	else
		q = mremap(*p, *cap * size, ncap * size, MREMAP_MAYMOVE);
	if (!q || q == MAP_FAILED)
		return false;
	*p = q;
	*cap = ncap;
	return true;
}

/* Heapsort: qsort may allocate, and refresh keeps to mmap. */
static inline void swap_bytes(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

static inline void sift_down(char *v, size_t size, size_t i, size_t n,
			     int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && cmp(v + c * size, v + (c + 1) * size) < 0)
			c++;
		if (cmp(v + i * size, v + c * size) >= 0)
			return;
		swap_bytes(v + i * size, v + c * size, size);
		i = c;
	}
}

static inline void heap_sort(void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *))
{
	char *v = base;
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(v, size, i, n, cmp);
	for (i = n; i-- > 1;) {
		swap_bytes(v, v + i * size, size);
		sift_down(v, size, 0, i, cmp);
	}
}

/* ---- one module's rows: built by unwind_cfi.c, kept by unwind.c ---- */

/* What identifies a loaded module, from its dl_phdr_info (unwind.c's modinfo_get()). */
struct modinfo {
	const struct dl_phdr_info *info; /* borrowed: valid while dl_iterate_phdr calls back */
	uintptr_t lo, hi;		 /* the executable PT_LOADs' range [lo, hi) */
	uintptr_t hdr, hdr_end;		 /* PT_GNU_EH_FRAME (.eh_frame_hdr); hdr 0: none */
	uint64_t key; /* hash of the name, program headers and notes (unwind.c only) */
};

/* One module's rows, as uw_cfi_build() left them. */
struct uw_rows {
	struct uw_row *v; /* sorted by pc, one row per pc, none equal to the one before */
	size_t n;
	size_t map_size; /* bytes mapped at v (0: v is NULL); the caller owns them: map_free() */
	size_t bad_fdes; /* FDEs skipped or cut short as malformed */
};

/*
 * Build the rows of the module MI describes into *OUT (COLD): every FDE of
 * its .eh_frame, found through the .eh_frame_hdr at [mi->hdr, mi->hdr_end),
 * run into rows, sorted, a gap row ending each FDE, equal neighbours merged.
 * Reads only what agent_unwind_parse_module() (unwind.h) allows: MI's
 * program headers and its readable PT_LOAD bytes.  Never fails: a module
 * without a usable .eh_frame_hdr, with over 4 GiB of code or over 2^22 rows,
 * or one parsed when memory ran out gets no rows (out->n 0; out->v may still
 * be mapped).  out->bad_fdes counts even then.  Takes no lock.
 */
void uw_cfi_build(const struct modinfo *mi, struct uw_rows *out);

/* Whether a readable PT_LOAD of INFO holds ADDR; if so, its bytes are [*LO, *HI). */
bool uw_load_bounds(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

#endif
