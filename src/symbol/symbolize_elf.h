/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SYMBOLIZE_ELF_H
#define PLATEAU_SYMBOLIZE_ELF_H

/* Internal to the symbolizer: one ELF file and its symbol table. */

#include <stdbool.h>
#include <gelf.h>

#include "util/arena.h"
#include "util/strtab.h"
#include "symbol/ehframe_hdr.h"
#include "symbol/symbolize.h"

struct sym_sym {
	uint64_t start, end; /* ELF virtual addresses, [start, end) */
	const char *name;    /* borrowed from the ELF string table */
	const char *pretty;  /* demangled name (interned) or NULL until first hit */
	unsigned rank;	     /* binding preference among aliases, lower wins */
};

/* The .eh_frame_hdr table and .eh_frame of sym_dso.elf (symbolize_ehframe.c). */
struct sym_ehframe {
	struct ehframe t; /* borrowed from sym_dso.elf; t.nr == 0: none */
	bool tried;	  /* loaded (or found unusable) */
};

struct sym_dso {
	char *path;
	char *key_bid;	       /* the build-id the caller gave, or NULL: part of the cache key */
	char *build_id;	       /* hex; given, or read from the note; may be NULL */
	enum sym_reason state; /* SYM_OK when the file is usable */
	int fd, dbg_fd;
	Elf *elf, *dbg_elf; /* dbg_elf: separate debug file, may be NULL */
	char *dbg_path;
	Elf *mini_elf;	      /* MiniDebugInfo (.gnu_debugdata), may be NULL */
	void *mini_buf;	      /* its decompressed bytes */
	struct sym_sym *syms; /* sorted by start, non-overlapping */
	size_t nr_syms;
	bool has_symtab;      /* from .symtab (main or debug), not only .dynsym */
	struct sym_sym *last; /* last-lookup cache */
	void *dwarf;	      /* symbolize.c's DWARF state, NULL until asked */
	bool dwarf_tried;
	bool from_debug; /* elf is the debug file (dbg_path): the file itself is gone */
	bool text;	 /* a text symbol map, not an ELF file: addresses are absolute */
	bool kernel;	 /* /proc/kallsyms */
	struct arena
		text_names; /* names of a text map (not interned: they are nearly all distinct) */
	struct sym_ehframe eh; /* loaded on the first unnamed address */
};

/* Open path, read its build-id, find its debug file, load its symbols.  Sets d->state. */
void sym_dso_load(struct sym_dso *d, const char *build_id_hex);
void sym_dso_release(struct sym_dso *d);
/* Sort d->syms, drop aliases, end each symbol at the next one when it has no size. */
void sym_dso_finish(struct sym_dso *d);
/*
 * When d->path names a text symbol map (/proc/kallsyms, [kernel.kallsyms],
 * or a JIT map /tmp/perf-PID.map), load it, set d->state and return true;
 * otherwise return false (symbolize_text.c).
 */
bool sym_text_load(struct sym_dso *d);
/*
 * An in-memory ELF from the xz stream xz[0..size) of a .gnu_debugdata
 * section, or NULL when it is not one (symbolize_xz.c).  On success *buf
 * holds its bytes: free it after elf_end().
 */
Elf *sym_minidebug_open(const void *xz, size_t size, void **buf);
/*
 * Add a symbol "target@plt" for each PLT stub of d->elf whose target its
 * relocations name, and "[plt]" for what is left of each PLT section
 * (symbolize_plt.c); *alloc is d->syms's capacity.  Names live in
 * d->text_names.
 */
void sym_plt_read(struct sym_dso *d, size_t *alloc);
/* The section called name in elf (its header in *sh), or NULL. */
Elf_Scn *sym_elf_section(Elf *elf, const char *name, GElf_Shdr *sh);
/*
 * Where the function holding vaddr starts: the pc_begin of the .eh_frame
 * FDE that covers vaddr, found through d->elf's .eh_frame_hdr table
 * (loaded on the first call).  Returns false, *start untouched, when no
 * FDE covers vaddr or the file has no usable table (symbolize_ehframe.c).
 */
bool sym_dso_func_start(struct sym_dso *d, uint64_t vaddr, uint64_t *start);
/* The symbol covering vaddr or NULL (uses and updates the last-lookup cache). */
struct sym_sym *sym_dso_find(struct sym_dso *d, uint64_t vaddr);
/*
 * The load bias of a mapping of d at start from file offset pgoff: runtime
 * address = ELF vaddr + bias, from the PT_LOAD holding pgoff (an executable
 * one when several share its page).  Returns -1 when no PT_LOAD holds pgoff.
 */
int sym_dso_bias(struct sym_dso *d, uint64_t start, uint64_t pgoff, uint64_t *bias);

#endif
