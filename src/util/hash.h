/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_HASH_H
#define PLATEAU_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Hashing and an open-addressing index of 32-bit ids.
 *
 * struct idhash does not store keys: each slot holds an id (plus one, so 0
 * means empty) into an array its owner keeps, together with the id's
 * 32-bit hash.  The owner probes with idhash_first()/idhash_next() and
 * compares keys itself, which keeps the index at 8 bytes per slot whatever
 * the key is.  The table doubles at 50% load.
 */

/*
 * A 64-bit hash of LEN bytes (xxHash's XXH3), not cryptographic.  Only
 * for in-memory tables: no value is ever stored or compared across runs,
 * so the function may change.
 */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);

static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

struct idhash_slot {
	uint32_t hash;
	uint32_t id_plus1; /* 0: empty */
};

struct idhash {
	struct idhash_slot *slots;
	uint32_t mask; /* number of slots - 1, or 0 when empty */
	uint32_t count;
};

#define IDHASH_INIT        \
	{                  \
		NULL, 0, 0 \
	}
#define IDHASH_NONE UINT32_MAX

void idhash_release(struct idhash *h);

/*
 * Iterate the ids whose stored hash equals hash; *pos is the probe
 * cursor.  Returns IDHASH_NONE when the probe reaches an empty slot.
 */
static inline uint32_t idhash_probe(const struct idhash *h, uint32_t hash, uint32_t *pos)
{
	if (!h->mask)
		return IDHASH_NONE;
	for (;;) {
		const struct idhash_slot *s = &h->slots[*pos & h->mask];

		(*pos)++;
		if (!s->id_plus1)
			return IDHASH_NONE;
		if (s->hash == hash)
			return s->id_plus1 - 1;
	}
}

/* Room for n ids in all without growing. */
void idhash_reserve(struct idhash *h, size_t n);

/* Add id with hash; the caller has checked it is not present. */
void idhash_insert(struct idhash *h, uint32_t hash, uint32_t id);

/*
 * As idhash_reserve() and idhash_insert(), for code that survives
 * allocation failure: ERR_NOMEM (util/error.h) instead of dying, the
 * table unchanged (an id it could not insert is not in it).
 */
int idhash_try_reserve(struct idhash *h, size_t n);
int idhash_try_insert(struct idhash *h, uint32_t hash, uint32_t id);

#endif
