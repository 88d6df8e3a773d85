/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_ADDR2LINE_H
#define PLATEAU_ADDR2LINE_H

#include <stddef.h>

/*
 * stackcollapse-perf.pl --inline, through libdw instead of addr2line: the
 * chain of functions inlined at an address, with the names addr2line
 * prints for `addr2line -a PC -e DSO -i -f -s -C` (linkage names
 * demangled with their parameters, C names as they are).
 *
 * Like the script, an address that lies in no section of the file is
 * retried as the symbol's own address plus the offset perf printed
 * ("name+0x1c"), the symbol looked up in the static symbol table as
 * `nm` lists it.  Results are cached per (dso, address string); files
 * are opened once.  Not thread-safe: one cache per thread.
 */
struct inline_cache;

struct inline_cache *inline_cache_new(void);
void inline_cache_free(struct inline_cache *c);

/*
 * The function names at pc (hex digits as perf prints them) in the file
 * dso, outermost first and joined by ';'.  rawfunc is perf's symbol
 * column.  Returns a string owned by the cache, valid until it is freed,
 * and its length in *len: "" when the file cannot be read as ELF, "??"
 * when nothing is known about pc (the script then falls back to perf's
 * own name).
 */
const char *inline_cache_lookup(struct inline_cache *c, const char *pc, size_t pc_len,
				const char *rawfunc, size_t raw_len, const char *dso,
				size_t dso_len, size_t *len);

#endif
