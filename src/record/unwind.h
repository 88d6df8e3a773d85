/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_UNWIND_H
#define PLATEAU_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/*
 * DWARF unwinding of perf samples taken with PERF_SAMPLE_REGS_USER +
 * PERF_SAMPLE_STACK_USER: the user registers and a copy of the top of the
 * user stack are unwound after the fact with libdw (CFI from .eh_frame or
 * .debug_frame, frame-pointer fallback where a module has none).  See
 * doc/unwind.md for what is cached and the limits.
 *
 * One unwinder describes one address space (one process image); it is
 * not thread-safe, but distinct unwinders may be used in distinct
 * threads.  Only x86-64 unwinds; elsewhere unwinder_unwind() returns
 * ERR_UNSUPPORTED.
 */
struct unwinder;

/* A new unwinder with no mappings.  Caller has ownership (unwinder_free). */
struct unwinder *unwinder_new(void);
/* Release everything; NULL is a no-op. */
void unwinder_free(struct unwinder *u);

/*
 * Report one executable mapping (from MMAP2 or /proc/PID/maps): the file
 * at path (copied) mapped at [start, end) from file offset pgoff.
 * "[vdso]" is handled when it matches this kernel's vDSO; other non-file
 * mappings (anon, "[...]", "//anon", paths that are not absolute) are
 * ignored.  A mapping that overlaps earlier ones replaces them
 * (dlclose + dlopen); each file is loaded once however many executable
 * mappings it has.  Files are opened lazily, at the next unwind, and a
 * file that cannot be used (missing, not ELF, no PT_LOAD covering pgoff)
 * is skipped silently: frames in it unwind by frame pointer.
 */
void unwinder_add_map(struct unwinder *u, const char *path, uint64_t start, uint64_t end,
		      uint64_t pgoff);

/*
 * A copy for a forked child: the same mappings, independent of u from
 * then on.  Cheap (copies the mapping list; files are opened lazily).
 * Caller has ownership.  NULL gives NULL.
 */
struct unwinder *unwinder_clone(const struct unwinder *u);

/*
 * Unwind one perf sample.  regs holds the PERF_SAMPLE_REGS_USER values in
 * the bit order of regs_mask (x86-64 perf_regs numbering, popcount(mask)
 * values); stack holds stack_len valid bytes copied from the user SP.
 * Writes ips[0..n) innermost first: ips[0] is the interrupted PC, ips[1..]
 * are return addresses, not yet adjusted by -1 (for a frame interrupted
 * by a signal, whose PC is exact, the value is PC + 1 so that the caller's
 * -1 lands on it).  Returns n: 0 when regs_mask lacks IP, 1 when only the
 * PC is known (no SP, or nothing could be unwound), at most max.
 * Unwinding stops at max frames, at a PC of 0, and when the stack pointer
 * does not grow from one frame to the next.  Memory is read only inside
 * the stack copy and the mapped files; garbage registers or stack give a
 * short or wrong stack, never a crash or a hang.
 * Returns ERR_USAGE (err set) for a NULL u, regs (with a non-zero mask),
 * stack (with stack_len > 0) or ips, or max == 0; ERR_UNSUPPORTED on an
 * architecture other than x86-64.
 */
int unwinder_unwind(struct unwinder *u, uint32_t tid, const uint64_t *regs, uint64_t regs_mask,
		    const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max,
		    struct error *err);

#endif
