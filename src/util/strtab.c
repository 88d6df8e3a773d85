/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/error.h"
#include "util/strtab.h"

#define CHUNK_SIZE (1U << 20)

struct strtab_chunk {
	struct strtab_chunk *next;
	size_t used, size;
	char data[];
};

/* Room for a string of LEN bytes and its NUL; NULL when no memory. */
static char *chunk_alloc(struct strtab *t, size_t len)
{
	struct strtab_chunk *c = t->chunks;
	size_t need = len + 1; /* len < UINT32_MAX: strtab_intern */
	char *p;

	if (!c || c->size - c->used < need) {
		/* Start small (many tables hold few strings), double up to CHUNK_SIZE. */
		size_t grow = c ? MIN(c->size * 2, (size_t)CHUNK_SIZE) : (size_t)4096;
		size_t size = need > CHUNK_SIZE / 4 ? need : MAX(grow, need);

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
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

int strtab_try_init(struct strtab *t)
{
	uint32_t id;

	memset(t, 0, sizeof(*t));
	if (strtab_try_intern(t, "", 0, &id) < 0) {
		strtab_release(t);
		return ERR_NOMEM;
	}
	return 0;
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

/* Room in strs and lens for NR strings in all. */
static int grow_ids(struct strtab *t, size_t nr)
{
	size_t alloc = t->alloc;
	uint32_t *lens;

	if (nr <= t->alloc)
		return 0;
	if (nr > UINT32_MAX || alloc_grow(&t->strs, sizeof(*t->strs), nr, &alloc) < 0)
		return ERR_NOMEM;
	if (alloc > UINT32_MAX)
		alloc = UINT32_MAX;
	lens = alloc_array(t->lens, alloc, sizeof(*t->lens));
	if (!lens)
		return ERR_NOMEM; /* strs may have grown: alloc, the smaller, bounds both */
	t->lens = lens;
	t->alloc = (uint32_t)alloc;
	return 0;
}

void strtab_reserve(struct strtab *t, uint32_t n, size_t bytes)
{
	if (strtab_try_reserve(t, n, bytes) < 0)
		die("out of memory: a string table of %zu strings", (size_t)t->nr + n);
}

int strtab_try_reserve(struct strtab *t, uint32_t n, size_t bytes)
{
	struct strtab_chunk *c = t->chunks;
	size_t need;

	if (__builtin_add_overflow(bytes, n, &need)) /* each string is followed by a NUL */
		return ERR_NOMEM;
	if (grow_ids(t, (size_t)t->nr + n) < 0 ||
	    idhash_try_reserve(&t->index, (size_t)t->nr + n) < 0)
		return ERR_NOMEM;
	/* One chunk for them all, in front (chunk_alloc fills the first one). */
	if (need && (!c || c->size - c->used < need)) {
		c = need > SIZE_MAX - sizeof(*c) ? NULL : malloc(sizeof(*c) + need);
		if (!c)
			return ERR_NOMEM;
		c->used = 0;
		c->size = need;
		c->next = t->chunks;
		t->chunks = c;
	}
	return 0;
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
	uint32_t id;

	if (len >= UINT32_MAX || t->nr == UINT32_MAX - 1)
		die("string table full");
	if (strtab_try_intern(t, s, len, &id) < 0)
		die("out of memory: a string of %zu bytes", len);
	return id;
}

int strtab_try_intern(struct strtab *t, const char *s, size_t len, uint32_t *id)
{
	uint32_t hash = (uint32_t)hash_bytes(s, len, 0);
	char *copy;

	*id = lookup(t, s, len, hash);
	if (*id != IDHASH_NONE)
		return 0;
	/* A full table: no memory for more (BUG-free for the caller, who reports it). */
	if (len >= UINT32_MAX || t->nr == UINT32_MAX - 1)
		return ERR_NOMEM;
	if (grow_ids(t, (size_t)t->nr + 1) < 0 ||
	    idhash_try_reserve(&t->index, (size_t)t->nr + 1) < 0)
		return ERR_NOMEM;
	copy = chunk_alloc(t, len);
	if (!copy)
		return ERR_NOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	*id = t->nr++;
	t->strs[*id] = copy;
	t->lens[*id] = (uint32_t)len;
	idhash_insert(&t->index, hash, *id); /* reserved above: cannot fail */
	return 0;
}
