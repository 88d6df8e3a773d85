/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_CURSOR_H
#define PLATEAU_CURSOR_H

/*
 * A bounded reader over bytes in memory: fixed-size little-endian
 * integers, DWARF's LEB128 numbers, protobuf's varints, runs of bytes.
 * No read ever goes past end.  A read that would is refused: it sets
 * err (the first error is kept), moves p to end so every later read is
 * refused too (the error is sticky), and returns 0 (NULL for bytes).  A
 * parser can therefore read a whole structure and check cursor_ok() once.
 *
 * Header-only and libc-only: the in-process agent (src/agent/), which
 * links no plateau library, includes it as well as the CLI and the
 * server.  Nothing here allocates; the bytes are borrowed from the caller
 * and must outlive the cursor.  Plain fields: a parser may narrow end to
 * a record it has checked fits (end only ever moves towards p).
 *
 * The two variable-length encodings differ in one rule, as their formats do:
 * - LEB128 (DWARF, .eh_frame): any length is valid (assemblers pad with
 *   0x80 bytes); bits beyond 64 are dropped.  Cut off by end: CURSOR_SHORT,
 *   and the bits read so far are returned (never sign-extended).
 * - varint (protobuf, plateau's blobs): at most 10 bytes; a tenth byte with
 *   its top bit set is CURSOR_OVERLONG, and the bits of the tenth byte
 *   beyond 64 are dropped (a reader wanting exactly 64 bits checks that
 *   byte itself).  Cut off by end: CURSOR_SHORT.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum cursor_err {
	CURSOR_OK = 0,
	CURSOR_SHORT,	 /* the data ends inside the value */
	CURSOR_OVERLONG, /* a varint longer than 10 bytes */
};

#define CURSOR_VARINT_MAX 10 /* bytes of the longest varint */

struct cursor {
	const uint8_t *p, *end; /* the next byte; one past the last */
	int err;		/* enum cursor_err: the first failed read's */
};

/* A cursor over [P, END); P past END is a cursor already failed (CURSOR_SHORT). */
static inline struct cursor cursor_span(const void *p, const void *end)
{
	struct cursor c = {(const uint8_t *)p, (const uint8_t *)end, CURSOR_OK};

	if (c.p > c.end) {
		c.p = c.end;
		c.err = CURSOR_SHORT;
	}
	return c;
}

/* A cursor over the LEN bytes at BUF. */
static inline struct cursor cursor_make(const void *buf, size_t len)
{
	return cursor_span(buf, (const uint8_t *)buf + len);
}

static inline bool cursor_ok(const struct cursor *c)
{
	return c->err == CURSOR_OK;
}

/* Bytes left to read (0 once failed). */
static inline size_t cursor_left(const struct cursor *c)
{
	return (size_t)(c->end - c->p);
}

/* Fail C with WHY (kept only when it is the first error); returns false. */
static inline bool cursor_fail(struct cursor *c, int why)
{
	if (c->err == CURSOR_OK)
		c->err = why;
	c->p = c->end;
	return false;
}

/* The next N bytes (borrowed, in place) and past them; NULL when fewer are left. */
static inline const uint8_t *cursor_bytes(struct cursor *c, size_t n)
{
	const uint8_t *at = c->p;

	if (n > cursor_left(c)) {
		cursor_fail(c, CURSOR_SHORT);
		return NULL;
	}
	c->p += n;
	return at;
}

/* Move past N bytes; false when fewer are left. */
static inline bool cursor_skip(struct cursor *c, size_t n)
{
	return cursor_bytes(c, n) != NULL;
}

/* Copy the next N bytes to OUT (as they are: host order); false, OUT untouched, when short. */
static inline bool cursor_copy(struct cursor *c, void *out, size_t n)
{
	const uint8_t *at = cursor_bytes(c, n);

	if (at)
		memcpy(out, at, n);
	return at != NULL;
}

/* An unsigned integer of N bytes (at most 8), big- or little-endian. */
static inline uint64_t cursor_uint(struct cursor *c, size_t n, bool big_endian)
{
	const uint8_t *at = cursor_bytes(c, n);
	uint64_t v = 0;

	for (size_t i = 0; at && i < n; i++)
		v |= (uint64_t)at[i] << (8 * (big_endian ? n - 1 - i : i));
	return v;
}

static inline uint8_t cursor_u8(struct cursor *c)
{
	if (c->p == c->end) {
		cursor_fail(c, CURSOR_SHORT);
		return 0;
	}
	return *c->p++;
}

/* Little-endian fixed-size integers (a load, swapped on a big-endian host). */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CURSOR_LE(bits, v) __builtin_bswap##bits(v)
#else
#define CURSOR_LE(bits, v) (v)
#endif
#define CURSOR_LOAD(bits)                                                      \
	static inline uint##bits##_t cursor_u##bits(struct cursor *c)          \
	{                                                                      \
		uint##bits##_t v = 0;                                          \
                                                                               \
		return cursor_copy(c, &v, sizeof(v)) ? CURSOR_LE(bits, v) : 0; \
	}
CURSOR_LOAD(16)
CURSOR_LOAD(32)
CURSOR_LOAD(64)
#undef CURSOR_LOAD

/*
 * A LEB128 number: its bits and *SHIFT, the bit count its bytes held
 * (what a signed reader extends from; 0 when nothing could be read).
 */
static inline uint64_t cursor_leb128(struct cursor *c, unsigned *shift, bool *sign)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	*sign = false;
	do {
		if (c->p == c->end) {
			cursor_fail(c, CURSOR_SHORT);
			return v;
		}
		b = *c->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*sign = b & 0x40;
	return v;
}

/* An unsigned LEB128 number (DWARF's ULEB128). */
static inline uint64_t cursor_uleb128(struct cursor *c)
{
	unsigned shift;
	bool sign;

	return cursor_leb128(c, &shift, &sign);
}

/* A signed LEB128 number (DWARF's SLEB128): sign-extended from its last byte's bit 6. */
static inline int64_t cursor_sleb128(struct cursor *c)
{
	unsigned shift;
	bool sign;
	uint64_t v = cursor_leb128(c, &shift, &sign);

	if (sign && shift < 64)
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* The rest of cursor_varint(), out of the way of its one-byte case. */
static inline uint64_t cursor_varint_long(struct cursor *c)
{
	const uint8_t *p = c->p;
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (p == c->end) {
			cursor_fail(c, CURSOR_SHORT);
			return 0;
		}
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			c->p = p;
			return v;
		}
	}
	cursor_fail(c, CURSOR_OVERLONG);
	return 0;
}

/* A protobuf varint (unsigned, at most 10 bytes). */
static inline uint64_t cursor_varint(struct cursor *c)
{
	if (__builtin_expect(c->p != c->end && *c->p < 0x80, 1))
		return *c->p++;
	return cursor_varint_long(c);
}

#endif
