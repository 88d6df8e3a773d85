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

/*
 * For code that must survive allocation failure (the server, and the
 * library functions it calls): these return NULL, or ERR_NOMEM
 * (util/error.h), and leave everything as it was; nothing dies.
 * alloc_memdup() copies N bytes and adds a NUL; alloc_strdup() a string.
 * ALLOC_TRY_GROW(x, nr, alloc) is ALLOC_GROW that evaluates to 0, or to
 * ERR_NOMEM with x and alloc unchanged (also when the size overflows).
 */
void *alloc_memdup(const void *p, size_t n);
/* realloc(p, n * size), NULL on overflow too; p stays valid when it fails. */
void *alloc_array(void *p, size_t n, size_t size);
char *alloc_strdup(const char *s);
int alloc_grow(void *pptr, size_t elem, size_t nr, size_t *alloc);
#define ALLOC_TRY_GROW(x, nr, alloc) \
	((size_t)(nr) <= (alloc) ? 0 : alloc_grow(&(x), sizeof(*(x)), (nr), &(alloc)))

#endif
