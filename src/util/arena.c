/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/arena.h"

#define ARENA_CHUNK ((size_t)64 << 10)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

char *arena_memdup(struct arena *a, const void *data, size_t len)
{
	size_t need = st_add(len, 1);
	struct arena_chunk *c = a->head;
	char *p;

	if (!c || c->size - c->used < need) {
		size_t size = MAX(need, ARENA_CHUNK);

		c = xmalloc(st_add(sizeof(*c), size));
		c->used = 0;
		c->size = size;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += need;
	memcpy(p, data, len);
	p[len] = '\0';
	return p;
}

void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}
