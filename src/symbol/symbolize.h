/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SYMBOLIZE_H
#define PLATEAU_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/*
 * The symbolizer turns a runtime address inside one executable mapping
 * of a process into function names, innermost (inlined) first, with
 * file:line when DWARF is available.  See doc/symbolize.md for where it
 * looks and in what order.
 *
 * Ownership: the symbolizer owns every module and every string it hands
 * out; they stay valid until symbolizer_free().  Not thread-safe.
 */
struct symbolizer;
struct sym_module;

/* Why an address has no name (out[0].reason when symbolizer_lookup returns 0). */
enum sym_reason {
	SYM_OK = 0,
	SYM_NO_SYMBOL,	  /* the file has a symbol table, but no function covers addr */
	SYM_STRIPPED,	  /* no .symtab (nor a debug file with one) and not in .dynsym */
	SYM_NO_FILE,	  /* the mapped file cannot be opened */
	SYM_DELETED,	  /* the mapping names a "(deleted)" file */
	SYM_NOT_ELF,	  /* the file is not a usable ELF (or is truncated) */
	SYM_BUILD_ID,	  /* the file's build-id differs from the recorded one */
	SYM_OUT_OF_RANGE, /* addr is outside the mapping or any PT_LOAD */
};

/* A fixed, static English phrase for reason, e.g. "stripped". */
const char *sym_reason_str(enum sym_reason reason);

enum sym_frame_flags {
	SYM_FRAME_INLINED = 1 << 0, /* inlined into the next frame of out[] */
	SYM_FRAME_KERNEL = 1 << 1,  /* from /proc/kallsyms */
	/*
	 * Only on a failed lookup (SYM_STRIPPED or SYM_NO_SYMBOL): offset is
	 * not addr's own ELF vaddr but the start of the function holding it,
	 * from the .eh_frame FDE that covers addr (found through the file's
	 * .eh_frame_hdr), so every address of one unnamed function gets the
	 * same offset.  Absent when no FDE covers addr.
	 */
	SYM_FRAME_FUNC_START = 1 << 2,
};

struct sym_frame {
	const char *function; /* demangled; borrowed from the symbolizer; NULL if unnamed */
	const char *file;     /* source file or NULL; borrowed */
	unsigned line;	      /* 0 when unknown */
	unsigned flags;	      /* enum sym_frame_flags */
	uint64_t offset;      /* addr as an ELF virtual address of the file (what addr2line takes);
			    its function's start with SYM_FRAME_FUNC_START */
	enum sym_reason reason;
};

/* A new, empty symbolizer.  Caller has ownership; free with symbolizer_free(). */
struct symbolizer *symbolizer_new(void);
/* Release everything; NULL is a no-op. */
void symbolizer_free(struct symbolizer *s);

/*
 * One executable mapping [start, end) of the file at path, mapped from
 * file offset pgoff (as in /proc/PID/maps or PERF_RECORD_MMAP2).
 * Two paths name text symbol maps with absolute addresses instead (pgoff
 * ignored): "/proc/kallsyms" or "[kernel.kallsyms]" (the running kernel;
 * frames carry SYM_FRAME_KERNEL) and "/tmp/perf-PID.map" (a JIT's map).
 * build_id_hex may be NULL; when given (hex), a file whose build-id
 * differs is not trusted (SYM_BUILD_ID), and a file that is gone, deleted
 * or differs is replaced by /usr/lib/debug/.build-id/xx/yyyy.debug when
 * that exists.  The file is opened and its symbols loaded once per (path,
 * build-id); a file that cannot be used still yields a module whose
 * lookups report why.  Call once per mapping (each call allocates a
 * module).  Never NULL; owned by s.
 */
struct sym_module *symbolizer_module(struct symbolizer *s, const char *path, uint64_t start,
				     uint64_t end, uint64_t pgoff, const char *build_id_hex);

/*
 * Name the runtime address addr of module m: fills out[0..n) innermost
 * first (all but the outermost carry SYM_FRAME_INLINED) and returns n >= 1;
 * with max too small the outer frames are left out.
 * Returns 0 when addr cannot be named, with out[0].reason saying why
 * (and out[0].offset set when known).  Returns ERR_USAGE (negative, err
 * set) when max is 0 or an argument is NULL.
 */
int symbolizer_lookup(struct symbolizer *s, struct sym_module *m, uint64_t addr,
		      struct sym_frame *out, size_t max, struct error *err);

#endif
