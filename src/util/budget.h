/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_BUDGET_H
#define PLATEAU_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * One memory budget shared by whoever charges it (plateau serve's
 * requests: their inflated bodies, pprof decoding arrays and profiles):
 * bytes are taken as buffers grow and given back when they are freed, so
 * all requests at once hold LIMIT bytes at most however many gzip bombs
 * arrive together.  Thread-safe; zero-initialise used.
 */
struct budget {
	atomic_size_t used;
	size_t limit;
};

/* Take N bytes from B (NULL: no budget, always true); false when over its limit. */
static inline bool budget_take(struct budget *b, size_t n)
{
	size_t cur;

	if (!b)
		return true;
	cur = atomic_load(&b->used);
	do {
		if (n > b->limit || cur > b->limit - n)
			return false;
	} while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
	return true;
}

static inline void budget_give(struct budget *b, size_t n)
{
	if (b && n)
		atomic_fetch_sub(&b->used, n);
}

#endif
