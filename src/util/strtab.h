/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STRTAB_H
#define PLATEAU_STRTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/hash.h"

/*
 * A string interner: each distinct byte string gets a dense 32-bit id;
 * id 0 is always the empty string.  Strings live in chunks that never
 * move, so a pointer from strtab_str() stays valid until
 * strtab_release().  Strings may contain any byte; each is also
 * NUL-terminated for convenience.
 */
struct strtab_chunk;

struct strtab {
	struct strtab_chunk *chunks;
	const char **strs;
	uint32_t *lens;
	uint32_t nr, alloc;
	struct idhash index;
};

void strtab_init(struct strtab *t);
void strtab_release(struct strtab *t);

/* Room for n more strings of bytes bytes in all, so adding them grows nothing. */
void strtab_reserve(struct strtab *t, uint32_t n, size_t bytes);

/* The id of s[0..len), adding it when new.  len must be below 4 GiB. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t len);

/*
 * As strtab_init(), strtab_reserve() and strtab_intern(), for code that
 * survives allocation failure: ERR_NOMEM (util/error.h) instead of
 * dying, the table unchanged (after a failed init, released).
 */
int strtab_try_init(struct strtab *t);
int strtab_try_reserve(struct strtab *t, uint32_t n, size_t bytes);
int strtab_try_intern(struct strtab *t, const char *s, size_t len, uint32_t *id);

static inline uint32_t strtab_intern_str(struct strtab *t, const char *s)
{
	return strtab_intern(t, s, strlen(s));
}

/* The id of s, or IDHASH_NONE when it was never interned. */
uint32_t strtab_find(const struct strtab *t, const char *s, size_t len);

static inline const char *strtab_str(const struct strtab *t, uint32_t id)
{
	return t->strs[id];
}

static inline uint32_t strtab_len(const struct strtab *t, uint32_t id)
{
	return t->lens[id];
}

#endif
