/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_STACK_UNWIND_H
#define PLATEAU_AGENT_STACK_UNWIND_H

/*
 * The agent's stack unwinder (doc/agent-unwind.md).  x86_64 Linux only.
 *
 * Stacks are walked with unwind tables built ahead of time from every loaded
 * module's .eh_frame, so code without frame pointers (Debian's libc) keeps
 * its callers.  The tables are built by agent_unwind_refresh() (COLD), and
 * read lock-free by the walkers (HOT), which never touch the dynamic loader:
 * no dl_iterate_phdr, dladdr or dlsym, no allocation, no locks, no stdio,
 * errno preserved, and every read of stack memory is bounds-checked or done
 * through process_vm_readv, so a walk never faults.
 *
 * The tables are owned by this module (mmap'd memory, never freed while a
 * walker may still read them).  Walkers run against whatever table was last
 * published; code loaded after the last refresh is outside every module and
 * ends the walk (truncated).
 *
 * Output conventions shared by both walkers:
 *  - PCS receives up to MAX addresses, leaf first;
 *  - the first entry of a frame interrupted by a signal is its exact pc (the
 *    interrupted instruction); every other entry is a return address minus 1,
 *    so it points into the call instruction and symbolizes to the caller's
 *    line;
 *  - STACK_LO/STACK_HI ([lo, hi)) bound every stack read, and no read goes
 *    below the walk's first sp: the caller vouches that [sp, hi) is mapped
 *    (the thread's stack).  When both are 0 the bounds are unknown and
 *    stack memory is read with process_vm_readv on our own pid (slower,
 *    never faults);
 *  - *TRUNCATED (may be NULL) is set to true when the walk stopped for any
 *    other reason than reaching the outermost frame (CFI marking the return
 *    address undefined, as _start and the thread entry do, or a zero return
 *    address), and to false otherwise.
 *
 * The return value is the number of entries written.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Build or update the tables of every loaded module: the main program,
 * shared libraries and the vDSO (COLD: call at start and after dlopen or
 * dlclose).  Thread-safe: takes an internal lock and calls dl_iterate_phdr.
 * Modules already in the table (same load base and same file) are reused
 * without parsing; modules no longer loaded are retired and their memory is
 * unmapped once no walker can still be using it (a walker that never leaves,
 * e.g. a thread that died mid-walk, makes refresh give up waiting after about
 * a second and leak the retired memory rather than hang).  A signal handler
 * walking on the refreshing thread uses the table then published.  Returns 0, or
 * -ENOMEM (the previous table stays in place).  A module whose .eh_frame is
 * missing or unusable is still listed (its code is then walked with frame
 * pointers), and counted in agent_unwind_stats().bad_modules.
 */
int agent_unwind_refresh(void);

/*
 * Walk the stack of a signal's ucontext_t (UCONTEXT, as passed to an
 * SA_SIGINFO handler) (HOT).  pcs[0] is the interrupted pc itself.
 */
size_t agent_unwind_signal(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
			   uintptr_t *pcs, size_t max, bool *truncated);

/*
 * Walk the caller's own stack (HOT; for malloc and lock hooks).  The SKIP
 * innermost frames are dropped: with SKIP 0, pcs[0] is the return address
 * into the caller of agent_unwind_here, minus 1.
 */
size_t agent_unwind_here(uintptr_t stack_lo, uintptr_t stack_hi, uintptr_t *pcs, size_t max,
			 unsigned skip, bool *truncated);

/* Sizes and counters of the unwinder, for diagnostics. */
struct agent_unwind_stats {
	size_t modules;	    /* modules in the published table */
	size_t rows;	    /* CFI rows over all of them */
	size_t bytes;	    /* mapped memory held by the tables */
	size_t bad_modules; /* listed modules without usable CFI */
	size_t bad_fdes;    /* malformed FDEs skipped (that code is walked with frame pointers) */
	uint64_t refreshes; /* successful agent_unwind_refresh() calls */
	uint64_t parsed;    /* modules parsed (new or changed) */
	uint64_t reused;    /* modules kept from the previous table */
	uint64_t retired;   /* modules dropped after they were unloaded */
	uint64_t leaked;    /* retired mappings never unmapped (a walker never left) */
	uint64_t last_refresh_ns; /* duration of the last refresh */
};

/* Copy the current statistics into *OUT (COLD; takes the refresh lock). */
void agent_unwind_stats(struct agent_unwind_stats *out);

struct dl_phdr_info;

/*
 * Build the rows of one module as agent_unwind_refresh() would, without
 * publishing them (COLD; for the fuzz target and tests).  INFO describes
 * the module as dl_iterate_phdr does, and the caller vouches for what the
 * loader guarantees: the program headers are readable, and so is every
 * readable (PF_R) PT_LOAD's [dlpi_addr + p_vaddr, + p_filesz); no other
 * byte is read (other segments' addresses are only compared).  *OUT gets
 * the statistics of a table holding only this module: all zero when INFO
 * has no executable PT_LOAD (refresh skips such a module), else modules,
 * parsed 1 and the module's rows, bytes, bad_modules and bad_fdes.  Takes
 * no lock and touches no table; what it maps is unmapped before it
 * returns.  Returns 0, or -ENOMEM.
 */
int agent_unwind_parse_module(const struct dl_phdr_info *info, struct agent_unwind_stats *out);

/* Frames of the agent's own a hook may have below its caller's (-O0 inlines nothing). */
#define AGENT_UNWIND_OWN_MAX 8

/*
 * HOT: the stack of the code that called a hook, given the return address
 * RA the hook received.  BUF (AGENT_MAX_DEPTH + AGENT_UNWIND_OWN_MAX frames)
 * gets the walk from here; the frames above RA's (the agent's own) are
 * skipped by searching for RA, not by a fixed count, so inlining and tail
 * calls do not matter.  When the walk misses RA the caller alone is kept,
 * marked truncated.  *STACK points at the caller's frame in BUF; returns the
 * number of frames from there, at most MAX_DEPTH.
 */
static inline size_t agent_unwind_caller(uintptr_t stack_lo, uintptr_t stack_hi, uintptr_t ra,
					 uintptr_t *buf, size_t max_depth, const uintptr_t **stack,
					 bool *truncated)
{
	size_t n = agent_unwind_here(stack_lo, stack_hi, buf, max_depth + AGENT_UNWIND_OWN_MAX, 0,
				     truncated);
	size_t k;

	for (k = 0; k < n && k <= AGENT_UNWIND_OWN_MAX; k++)
		if (buf[k] == ra - 1 || buf[k] == ra)
			break;
	if (k == n || k > AGENT_UNWIND_OWN_MAX) {
		buf[0] = ra - 1;
		k = 0;
		n = 1;
		*truncated = true;
	}
	n -= k;
	if (n > max_depth) {
		n = max_depth;
		*truncated = true;
	}
	*stack = buf + k;
	return n;
}

/*
 * Fork (COLD): the refresh lock is held across fork() — taken by PREPARE,
 * released in the parent, made new in the child (whose only thread was not
 * walking).  The agent's one set of fork handlers calls these, so that every
 * agent lock is taken in one fixed order.
 */
void agent_unwind_atfork_prepare(void);
void agent_unwind_atfork_parent(void);
void agent_unwind_atfork_child(void);

#endif
