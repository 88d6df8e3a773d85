/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SYMNAME_H
#define PLATEAU_SYMNAME_H

/*
 * How code is named when its file does not name it, shared by every
 * collector so that one function gets one frame whichever collector saw
 * it: `plateau record` (src/record/record_profile.c, symbolize_elf.c) and the
 * in-process agent (src/agent/export/pprof.c, symtab_code.c).  Header-only and
 * free of dependencies: the agent may include it (doc/symbolize.md,
 * "Names of unnamed code" and "PLT stubs").
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The suffix of a PLT stub's name: "strlen@plt", as perf and objdump name them. */
#define SYMNAME_PLT_SUFFIX "@plt"
/* A PLT entry whose target cannot be told (the lazy-binding header, PLT0). */
#define SYMNAME_PLT_ANON "[plt]"

/*
 * The name of unnamed code of the file at PATH: "BASENAME+0xVADDR", VADDR
 * the ELF virtual address of the function's start when the unwind tables
 * (.eh_frame) give it, else of the address itself (what addr2line takes).
 * Writes at most SIZE bytes to BUF (always NUL-terminated when SIZE > 0);
 * returns what snprintf returns.
 */
static inline int symname_unnamed(char *buf, size_t size, const char *path, uint64_t vaddr)
{
	const char *b = strrchr(path, '/');

	return snprintf(buf, size, "%.4000s+0x%" PRIx64, b && b[1] ? b + 1 : path, vaddr);
}

/* What an x86-64 PLT entry's code says about its target. */
enum symname_plt_kind {
	SYMNAME_PLT_NONE,  /* not a stub we know (PLT0, other code) */
	SYMNAME_PLT_GOT,   /* jumps through the GOT slot at *value (an ELF vaddr) */
	SYMNAME_PLT_INDEX, /* pushes *value, its relocation's index in .rela.plt */
};

static inline uint32_t symname_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Decode the first instruction of the x86-64 PLT entry CODE[0..LEN) at ELF
 * vaddr ADDR, after an optional endbr64: `jmp *rel32(%rip)` (optionally
 * with a bnd prefix) is a .plt (lazy), .plt.sec or .plt.got stub and gives
 * its GOT slot; `push $imm32` is an IBT .plt entry and gives its
 * relocation index.  The lazy-binding header (`push GOT+8(%rip)`) and
 * anything else give SYMNAME_PLT_NONE.
 */
static inline enum symname_plt_kind symname_plt_stub(const uint8_t *code, size_t len, uint64_t addr,
						     uint64_t *value)
{
	size_t i = 0;

	if (len >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa)
		i = 4;
	if (i < len && code[i] == 0xf2) /* bnd */
		i++;
	if (len - i >= 6 && code[i] == 0xff && code[i + 1] == 0x25) {
		int32_t rel = (int32_t)symname_le32(code + i + 2);

		*value = addr + i + 6 + (uint64_t)(int64_t)rel;
		return SYMNAME_PLT_GOT;
	}
	if (len - i >= 5 && code[i] == 0x68) {
		*value = symname_le32(code + i + 1);
		return SYMNAME_PLT_INDEX;
	}
	return SYMNAME_PLT_NONE;
}

/*
 * A relocation that names a symbol, by the GOT slot it fills: what a PLT
 * stub that jumps through that slot (SYMNAME_PLT_GOT) is named after.  The
 * agent keeps the dynamic symbol's index, `plateau record` its name
 * (borrowed from the ELF string table).
 */
struct symname_slot {
	uint64_t got; /* ELF vaddr of the slot */
	union {
		uint32_t sym;	  /* src/agent/stack/symtab_code.c */
		const char *name; /* src/symbol/symbolize_plt.c */
	};
};

/* qsort() order of struct symname_slot: by got. */
static inline int symname_slot_cmp(const void *a, const void *b)
{
	const struct symname_slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The first of V[0..N) (sorted by got) whose slot is GOT, or NULL. */
static inline const struct symname_slot *symname_slot_find(const struct symname_slot *v, size_t n,
							   uint64_t got)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].got == got ? &v[lo] : NULL;
}

#endif
