/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_STACK_SYMTAB_H
#define PLATEAU_AGENT_STACK_SYMTAB_H

/*
 * The agent's symbol table: the executable mappings of the process (from
 * /proc/self/maps) and the function symbols of their files, for turning
 * raw pcs into pprof mappings and function names (doc/agent-export.md).
 *
 * COLD only: the collector thread calls this at export time.  It
 * allocates, opens files and is not thread-safe (one user at a time); it
 * never touches the hot path's state.  Files are read with pread from
 * disk with every offset bounds-checked, never through the host's mapped
 * image (which dlclose may remove); only the vDSO, which is never
 * unmapped, is read from memory.  A file that is not ELF, truncated,
 * replaced on disk or otherwise odd simply yields no names.
 *
 * Symbols come from the file's .symtab, else from its separate debug file
 * (/usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink), else
 * from .dynsym; they are loaded lazily, per file, on the first lookup that
 * needs them.  Names are raw (mangled, not demangled) symbol names
 * without a symbol version suffix ("memcpy@@GLIBC_2.14" is "memcpy");
 * PLT stubs are named "target@plt" from the file's relocations.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_BUILD_ID_MAX	 64	      /* bytes; GNU build-ids are 20 */
#define AGENT_SYMTAB_MAX_LIVE	 8192	      /* executable mappings kept per snapshot */
#define AGENT_SYMTAB_MAX_DEAD	 256	      /* unmapped mappings kept for old samples */
#define AGENT_SYMTAB_MAPS_MAX	 (64u << 20)  /* bytes of /proc/self/maps read */
#define AGENT_SYMTAB_SECTION_MAX (512u << 20) /* bytes of one symbol or string table */

/* One executable mapping.  Owned by the symtab; see agent_symtab_mapping(). */
struct agent_mapping {
	uintptr_t start, limit;	 /* [start, limit) in this process */
	uint64_t file_offset;	 /* of start in the file */
	const char *path;	 /* as /proc/self/maps names it, without " (deleted)"; "[vdso]" */
	const uint8_t *build_id; /* NULL when the file has none */
	size_t build_id_len;
	bool live;	    /* in the latest snapshot; false once unmapped (kept for old samples) */
	bool deleted;	    /* the file was deleted (or is a memfd) when seen */
	bool is_main;	    /* the program's executable (holds AT_ENTRY) */
	bool has_functions; /* symbols were found (known once a lookup loaded them) */
};

struct agent_symtab;

/*
 * A snapshot of the executable file mappings of this process, with their
 * build-ids.  Returns NULL with errno set when /proc/self/maps cannot be
 * read or memory runs out.  Caller owns it: agent_symtab_free().
 */
struct agent_symtab *agent_symtab_new(void);

/*
 * Take a new snapshot into ST.  Mappings still present and their loaded
 * symbols are kept; new ones are added; vanished ones (dlclose) stay,
 * marked not live, so samples taken before still resolve, up to
 * AGENT_SYMTAB_MAX_DEAD of them (the longest gone are dropped first).
 * Invalidates mapping indices, agent_mapping pointers and names returned
 * before.  Returns 0 or -errno (ST is then unchanged but still usable).
 */
int agent_symtab_refresh(struct agent_symtab *st);

/* Free ST and everything it returned; NULL is a no-op. */
void agent_symtab_free(struct agent_symtab *st);

/*
 * Resolve PC.  Returns the index of the mapping that holds it (live
 * mappings win over vanished ones), or -1 when none does.  *NAME (may be
 * NULL) gets the function's symbol name, borrowed from ST until it is
 * freed or refreshed, or NULL when unknown; *START (may be NULL) the
 * function's first address in this process, or 0 when unknown.
 */
int agent_symtab_lookup(struct agent_symtab *st, uintptr_t pc, const char **name, uintptr_t *start);

/*
 * For PC, which agent_symtab_lookup() did not name: *VADDR gets the file
 * vaddr its frame is named by ("module+0xVADDR", symbol/symname.h, as
 * `plateau record` names it): the start of the function holding PC, from
 * the .eh_frame FDE that covers it (the file's .eh_frame_hdr table, read
 * on the first call per file), else PC's own file vaddr.  Returns the
 * index of the mapping holding PC, or -1 (*VADDR untouched) when none
 * does or its load bias is unknown.
 */
int agent_symtab_unnamed(struct agent_symtab *st, uintptr_t pc, uint64_t *vaddr);

/* Number of mappings (live and vanished); indices are 0..n-1. */
size_t agent_symtab_nmappings(const struct agent_symtab *st);

/* Mapping I, borrowed until ST is freed or refreshed; NULL when out of range. */
const struct agent_mapping *agent_symtab_mapping(const struct agent_symtab *st, size_t i);

/*
 * A symtab whose only mapping is PATH's bytes at FILE_OFFSET, as if mapped executable at [START, LIMIT).
 * The file is read as a snapshot reads a mapped file (PT_LOADs for the
 * bias, the build-id), its symbols on the first lookup; refresh is not
 * meant for it.  NULL with errno EINVAL (PATH not absolute, START >= LIMIT)
 * or ENOMEM.  Caller owns it: agent_symtab_free().  (The fuzz target's
 * entry point: one file, no /proc/self/maps.)
 */
struct agent_symtab *agent_symtab_new_file(const char *path, uintptr_t start, uintptr_t limit,
					   uint64_t file_offset);

#endif
