/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_STACK_SYMTAB_ELF_H
#define PLATEAU_AGENT_STACK_SYMTAB_ELF_H

/*
 * Internal to the agent's symbol table (symtab.c): reading one ELF file
 * (symtab_elf.c).  The headers, the build-id and the function symbols of
 * the file itself or of its separate debug file.  COLD and not
 * thread-safe, as symtab.h says; every read is bounds-checked against the
 * size seen at open, so a file truncated under us yields an error, never
 * SIGBUS.  Nothing here knows about mappings or /proc/self/maps.
 */

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "agent/stack/symtab.h"

/*
 * Where a file's bytes come from: an fd read with pread (owned after
 * src_open(): src_close()), or MEM (the vDSO's image, borrowed; fd -1).
 */
struct src {
	int fd;
	const uint8_t *mem;
	uint64_t size;
};

/* One ELF file being read.  SRC is a copy: elf_release() does not close it. */
struct elf {
	struct src src;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh; /* NULL until elf_sections() */
	size_t shnum;
	char *shstr; /* NUL-terminated section names, or NULL */
	size_t shstrsize;
};

struct sym {
	uint64_t addr; /* file vaddr */
	uint32_t name; /* offset in the strings of its struct syms */
	uint32_t size : 30;
	uint32_t rank : 2; /* binding: 0 global, 1 weak, 2 local */
};

/* A file's function symbols, sorted by address, one per address.  Owned: syms_clear(). */
struct syms {
	struct sym *v;
	size_t n;
	char *strs; /* the string table the names are in, NUL-terminated at strsize */
	size_t strsize;
};

/*
 * The file a separate debug file is looked for, borrowed: its path (the
 * debuglink's directories come from it; the file is never its own debug
 * file) and its build-id (len 0: none, then the debuglink's CRC must match).
 */
struct debug_query {
	const char *path;
	const uint8_t *build_id;
	size_t build_id_len;
};

/*
 * Open PATH, a non-empty regular file, into S (O_NONBLOCK: a FIFO put at
 * the path cannot hang us); *ST gets its fstat.  Returns 0 (S then owns
 * the fd: src_close()), -errno, or -ENOEXEC when it is not such a file.
 */
int src_open(struct src *s, const char *path, struct stat *st);

/* Close S's fd, if it has one of its own; S's fd is then -1. */
void src_close(struct src *s);

/*
 * The build-id of the file at S, no headers read yet, into OUT
 * (AGENT_BUILD_ID_MAX bytes); its length, or 0 when none.
 */
size_t src_build_id(const struct src *s, uint8_t *out);

/*
 * Start reading S as ELF into E: 0 for a 64-bit little-endian executable
 * or shared object, else -ENOEXEC (E then holds nothing to release).  E
 * borrows S's fd or memory, which must stay open (or mapped) while E is
 * used.  Release with elf_release().
 */
int elf_open(struct elf *e, const struct src *s);

/* Free what E read (not its src); E can be released again. */
void elf_release(struct elf *e);

/* E's *N program headers (caller frees), or NULL when absent, malformed or out of memory. */
Elf64_Phdr *elf_phdrs(const struct elf *e, size_t *n);

/*
 * Read E's section headers and names (the names are optional).  Returns
 * 0, -ENOEXEC when they are absent or malformed, or -ENOMEM.
 */
int elf_sections(struct elf *e);

/*
 * E's build-id, into OUT (AGENT_BUILD_ID_MAX bytes), from the PT_NOTE
 * segments among the NPH headers PH (may be NULL), else from the SHT_NOTE
 * sections if elf_sections() read them; its length, or 0 when none.
 */
size_t elf_build_id(const struct elf *e, const Elf64_Phdr *ph, size_t nph, uint8_t *out);

/*
 * Load the function symbols of E's first section of TYPE (SHT_SYMTAB or
 * SHT_DYNSYM; elf_sections() read) into OUT, which must be empty.  Returns
 * 0 when some were found; else -ENOENT (none, or no such table), -E2BIG
 * or another -errno, and OUT is left empty.
 */
int elf_symbols(const struct elf *e, uint32_t type, struct syms *out);

/*
 * Load into OUT (empty) the .symtab of the separate debug file of Q's
 * file, read as E: /usr/lib/debug/.build-id/xx/rest.debug, then the name
 * in E's .gnu_debuglink (if elf_sections() read it) in the file's
 * directory DIR, in DIR/.debug and in /usr/lib/debug/DIR; the build-id,
 * or with none the debuglink's CRC, must match.  Returns 0 when symbols
 * were found, else a negative errno (-ENOENT: no debug file), OUT empty.
 */
int debug_symbols(const struct elf *e, const struct debug_query *q, struct syms *out);

/* Free TAB's symbols and names; TAB is then empty.  An empty TAB is a no-op. */
void syms_clear(struct syms *tab);

/* E's first section called NAME (elf_sections() read), or NULL. */
const Elf64_Shdr *elf_section_named(const struct elf *e, const char *name);

/*
 * Section SH's bytes, NUL-terminated (caller frees); *LEN their number.
 * NULL when it has none in the file, is compressed, over MAX bytes, or
 * cannot be read.
 */
char *elf_read_section(const struct elf *e, const Elf64_Shdr *sh, uint64_t max, size_t *len);

/* Sort TAB, keep one symbol per address (with a size if any alias has one), shrink. */
void syms_finish(struct syms *tab);

/* ---- symtab_code.c: names from the code's own tables ---- */

/*
 * Add to TAB (loaded or empty, elf_sections() read on E) a symbol
 * "target@plt" (symbol/symname.h) for each PLT entry of E (.plt, .plt.sec,
 * .plt.got) whose GOT slot or relocation index names a dynamic symbol,
 * "[plt]" for the other entries and one "[plt]" over each whole PLT
 * section; then sort TAB again.  Returns 0, or a negative errno (TAB is
 * then as it was).
 */
int elf_plt_symbols(const struct elf *e, struct syms *tab);

/* The function ranges of a file's .eh_frame, one per .eh_frame_hdr entry, sorted by start. */
struct fde_ranges {
	uint64_t *start; /* file vaddrs */
	uint64_t *len;	 /* 0: the entry's FDE is unusable or does not start there */
	size_t n;
};

/*
 * Load into OUT (empty) the ranges of E's .eh_frame FDEs, found through
 * its .eh_frame_hdr table, checked by the rules doc/symbolize.md gives for
 * `plateau record` ("Unnamed addresses").  Returns 0, or a negative errno
 * (OUT empty: no usable table).
 */
int elf_fde_ranges(const struct elf *e, struct fde_ranges *out);

/* Where the function holding file vaddr ADDR starts, per R: true and *START, or false. */
bool fde_ranges_find(const struct fde_ranges *r, uint64_t addr, uint64_t *start);

/* Free R's arrays; R is then empty. */
void fde_ranges_clear(struct fde_ranges *r);

#endif
