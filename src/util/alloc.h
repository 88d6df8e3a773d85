/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_ALLOC_H
#define PLATEAU_ALLOC_H

#include <stddef.h>

/*
 * Allocation wrappers for the command-line tools: they die() on failure,
 * so callers never check for NULL.  Library code that must survive
 * allocation failure (the agent, the server) uses the plain libc calls.
 *
 * st_add() and st_mult() compute sizes and die on overflow; use them for
 * every size computed from input.
 */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);

size_t st_add(size_t a, size_t b);
size_t st_mult(size_t a, size_t b);

/*
 * Grow the array x (with x##_alloc slots) so it holds at least nr
 * elements; amortised doubling.  Like git's ALLOC_GROW.
 */
#define ALLOC_GROW(x, nr, alloc)                                                  \
	do {                                                                      \
		if ((nr) > (alloc)) {                                             \
			size_t grow_ = (alloc) < 16 ? 16 : (alloc) + (alloc) / 2; \
			if (grow_ < (nr))                                         \
				grow_ = (nr);                                     \
			(x) = xrealloc((x), st_mult(sizeof(*(x)), grow_));        \
			(alloc) = grow_;                                          \
		}                                                                 \
	} while (0)

#endif
