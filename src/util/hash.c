/* SPDX-License-Identifier: MIT */
#include <xxhash.h>

#include "util/common.h"
#include "util/error.h"
#include "util/hash.h"

/*
 * xxHash's XXH3: keys are mostly short (names, a stack's packed ids),
 * which it reads as overlapping words, where a byte-copied tail reloaded
 * as a word stalls on store forwarding.
 */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(data, len, seed);
}

void idhash_release(struct idhash *h)
{
	free(h->slots);
	h->slots = NULL;
	h->mask = h->count = 0;
}

static void idhash_put(struct idhash_slot *slots, uint32_t mask, uint32_t hash, uint32_t id)
{
	uint32_t pos = hash;

	while (slots[pos & mask].id_plus1)
		pos++;
	slots[pos & mask].hash = hash;
	slots[pos & mask].id_plus1 = id + 1;
}

/* At least double the slots, to hold n ids at 50% load; ERR_NOMEM. */
static int idhash_grow(struct idhash *h, size_t n)
{
	uint32_t old_size = h->mask ? h->mask + 1 : 0;
	size_t size = old_size ? (size_t)old_size * 2 : 64;
	struct idhash_slot *slots;

	while (size < n * 2)
		size *= 2;
	if (size > (1U << 31))
		return ERR_NOMEM;
	slots = calloc(size, sizeof(*slots));
	if (!slots)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < old_size; i++) {
		if (h->slots[i].id_plus1)
			idhash_put(slots, (uint32_t)(size - 1), h->slots[i].hash,
				   h->slots[i].id_plus1 - 1);
	}
	free(h->slots);
	h->slots = slots;
	h->mask = (uint32_t)(size - 1);
	return 0;
}

int idhash_try_reserve(struct idhash *h, size_t n)
{
	if (n && (!h->mask || n * 2 > (size_t)h->mask + 1))
		return idhash_grow(h, n);
	return 0;
}

void idhash_reserve(struct idhash *h, size_t n)
{
	if (idhash_try_reserve(h, n) < 0)
		die("out of memory: a hash table of %zu ids", n);
}

int idhash_try_insert(struct idhash *h, uint32_t hash, uint32_t id)
{
	if ((!h->mask || (h->count + 1) * 2 > h->mask + 1) &&
	    idhash_grow(h, (size_t)h->count + 1) < 0)
		return ERR_NOMEM;
	idhash_put(h->slots, h->mask, hash, id);
	h->count++;
	return 0;
}

void idhash_insert(struct idhash *h, uint32_t hash, uint32_t id)
{
	if (idhash_try_insert(h, hash, id) < 0)
		die("out of memory: a hash table of %zu ids", (size_t)h->count + 1);
}
