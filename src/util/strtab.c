/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/strtab.h"

#define CHUNK_SIZE (1U << 20)

struct strtab_chunk {
	struct strtab_chunk *next;
	size_t used, size;
	char data[];
};

static char *chunk_alloc(struct strtab *t, size_t len)
{
	struct strtab_chunk *c = t->chunks;
	size_t need = st_add(len, 1);
	char *p;

	if (!c || c->size - c->used < need) {
		/* Start small (many tables hold few strings), double up to CHUNK_SIZE. */
		size_t grow = c ? MIN(c->size * 2, (size_t)CHUNK_SIZE) : (size_t)4096;
		size_t size = need > CHUNK_SIZE / 4 ? need : MAX(grow, need);

		c = xmalloc(st_add(sizeof(*c), size));
		c->used = 0;
		c->size = size;
		/* A big string gets a chunk of its own behind the current one. */
		if (need > CHUNK_SIZE / 4 && t->chunks) {
			c->next = t->chunks->next;
			t->chunks->next = c;
		} else {
			c->next = t->chunks;
			t->chunks = c;
		}
	}
	p = c->data + c->used;
	c->used += need;
	return p;
}

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	strtab_intern(t, "", 0);
}

void strtab_release(struct strtab *t)
{
	struct strtab_chunk *c = t->chunks;

	while (c) {
		struct strtab_chunk *next = c->next;

		free(c);
		c = next;
	}
	free(t->strs);
	free(t->lens);
	idhash_release(&t->index);
	memset(t, 0, sizeof(*t));
}

void strtab_reserve(struct strtab *t, uint32_t n, size_t bytes)
{
	struct strtab_chunk *c = t->chunks;
	size_t need = st_add(bytes, n); /* each string is followed by a NUL */

	if (st_add(t->nr, n) > t->alloc) {
		uint32_t alloc = t->alloc;

		ALLOC_GROW(t->strs, st_add(t->nr, n), alloc);
		t->lens = xrealloc(t->lens, st_mult(alloc, sizeof(*t->lens)));
		t->alloc = alloc;
	}
	idhash_reserve(&t->index, st_add(t->nr, n));
	/* One chunk for them all, in front (chunk_alloc fills the first one). */
	if (need && (!c || c->size - c->used < need)) {
		c = xmalloc(st_add(sizeof(*c), need));
		c->used = 0;
		c->size = need;
		c->next = t->chunks;
		t->chunks = c;
	}
}

static uint32_t lookup(const struct strtab *t, const char *s, size_t len, uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&t->index, hash, &pos)) != IDHASH_NONE) {
		if (t->lens[id] == len && !memcmp(t->strs[id], s, len))
			return id;
	}
	return IDHASH_NONE;
}

uint32_t strtab_find(const struct strtab *t, const char *s, size_t len)
{
	return lookup(t, s, len, (uint32_t)hash_bytes(s, len, 0));
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	uint32_t hash = (uint32_t)hash_bytes(s, len, 0);
	uint32_t id = lookup(t, s, len, hash);
	char *copy;

	if (id != IDHASH_NONE)
		return id;
	if (len >= UINT32_MAX || t->nr == UINT32_MAX - 1)
		die("string table full");
	copy = chunk_alloc(t, len);
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (t->nr >= t->alloc) {
		uint32_t alloc = t->alloc;

		ALLOC_GROW(t->strs, t->nr + 1, alloc);
		t->lens = xrealloc(t->lens, st_mult(alloc, sizeof(*t->lens)));
		t->alloc = alloc;
	}
	id = t->nr++;
	t->strs[id] = copy;
	t->lens[id] = (uint32_t)len;
	idhash_insert(&t->index, hash, id);
	return id;
}
