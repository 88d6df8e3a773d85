/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_ARENA_H
#define PLATEAU_ARENA_H

#include <stddef.h>

/*
 * A bump allocator for many small copies freed together: chunks of 64 KiB
 * (a larger request gets a chunk of its own) that never move, so
 * returned pointers stay valid until arena_release().
 */
struct arena_chunk;

struct arena {
	struct arena_chunk *head;
};

#define ARENA_INIT   \
	{            \
		NULL \
	}

/* A copy of data[0..len) followed by a NUL; owned by the arena. */
char *arena_memdup(struct arena *a, const void *data, size_t len);
void arena_release(struct arena *a);

#endif
