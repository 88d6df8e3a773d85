/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_HOOKS_ALLOC_H
#define PLATEAU_AGENT_HOOKS_ALLOC_H

/*
 * Allocation profiling (PLATEAU_MODES=alloc; doc/agent-alloc.md).
 *
 * alloc.c defines, with default visibility, malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, reallocarray
 * and the 20 C++ operators new/new[]/delete/delete[] of the Itanium ABI
 * (plain, nothrow, sized, aligned), so that libplateau.so interposes them
 * when preloaded.  Every hook is HOT: it forwards to the next definition
 * (dlsym(RTLD_NEXT)), adds the size to the thread's alloc_bytes, and when
 * the thread's sampler picks the allocation, emits an AGENT_KIND_ALLOC
 * sample and records the pointer in the live table (live.h).  Frees,
 * reallocs and deletes remove sampled pointers from the live table.
 *
 * Hooks may run before agent_alloc_init (from the loader, libc's own
 * start-up, other libraries' constructors): they then resolve the real
 * functions themselves, once, and answer the allocations dlsym makes
 * meanwhile from a static arena that is never given back.
 */

#include <stddef.h>

/*
 * Resolve the real allocation functions (COLD; the agent's constructor,
 * before sampling starts; idempotent).  Returns 0, or -ENOENT when malloc,
 * free, calloc, realloc or posix_memalign has no next definition (the
 * hooks then answer from the bootstrap arena until it is exhausted).
 */
int agent_alloc_init(void);

/*
 * Look up the C++ operators that were missing at init (COLD; after a
 * dlopen that may have brought libstdc++ in).  Until then those operators
 * allocate through the real malloc, without std::new_handler, and a failed
 * throwing new returns NULL instead of throwing.
 */
void agent_alloc_refresh(void);

/* Bytes handed out by the bootstrap arena (for the profile's comments). */
size_t agent_alloc_boot_used(void);

#endif
