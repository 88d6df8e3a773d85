/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/cursor.h"

#define CURSOR_OF(bytes) cursor_make(bytes, sizeof(bytes))

static void test_fixed_le(void **state)
{
	static const uint8_t b[] = {1, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 8, 7, 6, 5, 4, 3, 2, 1};
	struct cursor c = CURSOR_OF(b);

	(void)state;
	assert_int_equal(cursor_u8(&c), 1);
	assert_int_equal(cursor_u16(&c), 0x1234);
	assert_int_equal(cursor_u32(&c), 0x12345678);
	assert_true(cursor_u64(&c) == 0x0102030405060708ULL);
	assert_true(cursor_ok(&c));
	assert_int_equal(cursor_left(&c), 0);
	c = CURSOR_OF(b);
	assert_true(cursor_skip(&c, 1));
	assert_int_equal(cursor_uint(&c, 2, true), 0x3412);
	assert_int_equal(cursor_uint(&c, 3, false), 0x345678);
}

/* A read past the end reads nothing, fails, and every later read fails too. */
static void test_bounds_sticky(void **state)
{
	static const uint8_t b[] = {0xaa, 0xbb, 0xcc};
	struct cursor c = CURSOR_OF(b);
	uint32_t v = 7;

	(void)state;
	assert_int_equal(cursor_u16(&c), 0xbbaa);
	assert_int_equal(cursor_u16(&c), 0); /* one byte left: refused */
	assert_false(cursor_ok(&c));
	assert_int_equal(c.err, CURSOR_SHORT);
	assert_int_equal(cursor_left(&c), 0);
	assert_int_equal(cursor_u8(&c), 0); /* the byte that was left is not read */
	assert_false(cursor_copy(&c, &v, 1));
	assert_int_equal(v, 7);
	assert_null(cursor_bytes(&c, 1));
	assert_int_equal(cursor_varint(&c), 0);
	assert_int_equal(c.err, CURSOR_SHORT);

	c = CURSOR_OF(b);
	assert_null(cursor_bytes(&c, 4));
	assert_false(cursor_skip(&c, 1));
	c = CURSOR_OF(b);
	assert_ptr_equal(cursor_bytes(&c, 3), b);
	assert_true(cursor_ok(&c));
	assert_false(cursor_skip(&c, SIZE_MAX));
	c = cursor_span(b + 2, b + 1); /* start past the end */
	assert_false(cursor_ok(&c));
	assert_int_equal(cursor_u8(&c), 0);
	c = cursor_make(b, 0);
	assert_int_equal(cursor_uleb128(&c), 0);
	assert_int_equal(c.err, CURSOR_SHORT);
}

/* The first error is the one kept. */
static void test_first_error_kept(void **state)
{
	static const uint8_t b[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1};
	struct cursor c = CURSOR_OF(b);

	(void)state;
	assert_int_equal(cursor_varint(&c), 0);
	assert_int_equal(c.err, CURSOR_OVERLONG);
	cursor_u8(&c);
	assert_int_equal(c.err, CURSOR_OVERLONG);
}

static void test_leb128(void **state)
{
	static const uint8_t b[] = {2,	  0x7f, 0x80, 1,    0xe5, 0x8e, 0x26,
				    0x7e, 0x80, 0x7f, 0xc0, 0xbb, 0x78};
	struct cursor c = CURSOR_OF(b);

	(void)state;
	assert_int_equal(cursor_uleb128(&c), 2);
	assert_int_equal(cursor_uleb128(&c), 127);
	assert_int_equal(cursor_uleb128(&c), 128);
	assert_int_equal(cursor_uleb128(&c), 624485);
	assert_int_equal(cursor_sleb128(&c), -2);
	assert_int_equal(cursor_sleb128(&c), -128);
	assert_int_equal(cursor_sleb128(&c), -123456);
	assert_true(cursor_ok(&c));
	assert_int_equal(cursor_left(&c), 0);
}

/* DWARF puts no limit on the length: padding is read, bits past 64 dropped. */
static void test_leb128_overlong(void **state)
{
	uint8_t b[16];
	struct cursor c;

	(void)state;
	memset(b, 0x80, sizeof(b));
	b[0] = 0x81;
	b[15] = 0;
	c = CURSOR_OF(b);
	assert_int_equal(cursor_uleb128(&c), 1);
	assert_true(cursor_ok(&c));
	memset(b, 0xff, sizeof(b));
	b[15] = 0x7f;
	c = CURSOR_OF(b);
	assert_true(cursor_uleb128(&c) == UINT64_MAX);
	c = CURSOR_OF(b);
	assert_int_equal(cursor_sleb128(&c), -1); /* 112 bits: nothing more to extend */
	assert_true(cursor_ok(&c));
}

/* Cut off: the bits read so far, never sign-extended, and CURSOR_SHORT. */
static void test_leb128_truncated(void **state)
{
	static const uint8_t b[] = {0xff, 0xff};
	struct cursor c = CURSOR_OF(b);

	(void)state;
	assert_int_equal(cursor_sleb128(&c), 0x3fff);
	assert_int_equal(c.err, CURSOR_SHORT);
	assert_int_equal(cursor_left(&c), 0);
}

static void test_varint(void **state)
{
	static const uint8_t b[] = {0,	  0x96, 1,    0xff, 0xff, 0xff, 0xff,
				    0xff, 0xff, 0xff, 0xff, 0xff, 1};
	struct cursor c = CURSOR_OF(b);

	(void)state;
	assert_int_equal(cursor_varint(&c), 0);
	assert_int_equal(cursor_varint(&c), 150);
	assert_true(cursor_varint(&c) == UINT64_MAX);
	assert_true(cursor_ok(&c));
	assert_int_equal(cursor_left(&c), 0);
}

/* Ten bytes at most; the tenth's bits past 64 are dropped. */
static void test_varint_overlong(void **state)
{
	uint8_t b[11];
	struct cursor c;

	(void)state;
	memset(b, 0x80, sizeof(b));
	b[9] = 0x7f;
	c = cursor_make(b, 10);
	assert_true(cursor_varint(&c) == (uint64_t)1 << 63);
	assert_true(cursor_ok(&c));
	b[9] = 0x80;
	b[10] = 0;
	c = CURSOR_OF(b);
	assert_int_equal(cursor_varint(&c), 0);
	assert_int_equal(c.err, CURSOR_OVERLONG);
	/* Ten continuation bytes are too long even when the data ends there. */
	c = cursor_make(b, 10);
	cursor_varint(&c);
	assert_int_equal(c.err, CURSOR_OVERLONG);
	c = cursor_make(b, 9);
	cursor_varint(&c);
	assert_int_equal(c.err, CURSOR_SHORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_le),	 cmocka_unit_test(test_bounds_sticky),
		cmocka_unit_test(test_first_error_kept), cmocka_unit_test(test_leb128),
		cmocka_unit_test(test_leb128_overlong),	 cmocka_unit_test(test_leb128_truncated),
		cmocka_unit_test(test_varint),		 cmocka_unit_test(test_varint_overlong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
