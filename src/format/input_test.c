/* SPDX-License-Identifier: MIT */
/*
 * input_gunzip: members, the inflated-size cap, lying trailers, truncated
 * and corrupt data.  The test links with -Wl,--wrap=malloc,--wrap=realloc
 * so it can see the largest buffer plateau's own code asks for: a gzip
 * bomb must be refused having allocated no more than the cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <zlib.h>

#include "util/common.h"
#include "format/input.h"

void *__real_malloc(size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *ptr, size_t size);

static size_t largest; /* the largest allocation since the last reset */

void *__wrap_malloc(size_t size)
{
	largest = MAX(largest, size);
	return __real_malloc(size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	largest = MAX(largest, size);
	return __real_realloc(ptr, size);
}

/* One gzip member (or a zlib stream) of data, appended to *buf. */
static void deflate_into(char **buf, size_t *len, const void *data, size_t n, bool gzip)
{
	z_stream zs;
	size_t bound;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(
		deflateInit2(&zs, 9, Z_DEFLATED, gzip ? 15 + 16 : 15, 9, Z_DEFAULT_STRATEGY), Z_OK);
	bound = deflateBound(&zs, n) + 32;
	*buf = realloc(*buf, *len + bound);
	assert_non_null(*buf);
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)n;
	zs.next_out = (Bytef *)*buf + *len;
	zs.avail_out = (uInt)bound;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*len += zs.total_out;
	deflateEnd(&zs);
}

static void gzip_into(char **buf, size_t *len, const void *data, size_t n)
{
	deflate_into(buf, len, data, n, true);
}

/* n bytes of text that compress, but not to nothing. */
static char *text(size_t n)
{
	char *t = malloc(n + 1);
	uint64_t s = 1;

	assert_non_null(t);
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005u + 1442695040888963407u;
		t[i] = (char)('a' + (s >> 33) % 8);
	}
	t[n] = '\0';
	return t;
}

static void expect_inflates(const char *gz, size_t len, size_t max, const char *want,
			    size_t want_len)
{
	struct error err = ERROR_INIT;
	char *out = NULL;
	size_t out_len = 0;

	if (input_gunzip("t", gz, len, max, &out, &out_len, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(out_len, want_len);
	assert_memory_equal(out, want, want_len);
	assert_int_equal(out[out_len], '\0');
	free(out);
}

/* Fails with code, and a message that starts with want. */
static void expect_fails(const char *gz, size_t len, size_t max, int code, const char *want)
{
	struct error err = ERROR_INIT;
	char *out = (char *)"untouched";
	size_t out_len = 7;

	assert_int_equal(input_gunzip("t", gz, len, max, &out, &out_len, &err), code);
	assert_int_equal(err.code, code);
	if (strncmp(err.msg, want, strlen(want)))
		fail_msg("got \"%s\", want \"%s...\"", err.msg, want);
	assert_null(strchr(err.msg, '\n'));
	assert_string_equal(out, "untouched");
	assert_int_equal(out_len, 7);
}

static void set_isize(char *gz, size_t len, uint32_t isize)
{
	for (int i = 0; i < 4; i++)
		gz[len - 4 + i] = (char)(isize >> (8 * i));
}

static void test_single_member(void **state)
{
	char *t = text(100000), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, t, 100000);
	expect_inflates(gz, len, 1 << 20, t, 100000);
	free(gz);
	free(t);
}

/* The trailer at the end is the last member's: too small or too big a hint. */
static void test_concatenated_members(void **state)
{
	char *t = text(300001), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, "hello ", 6);
	gzip_into(&gz, &len, "world", 5);
	expect_inflates(gz, len, 1 << 20, "hello world", 11);
	free(gz);

	gz = NULL;
	len = 0;
	gzip_into(&gz, &len, t, 300000);
	gzip_into(&gz, &len, t + 300000, 1);
	expect_inflates(gz, len, 1 << 20, t, 300001);
	free(gz);

	gz = NULL;
	len = 0;
	gzip_into(&gz, &len, t, 1);
	gzip_into(&gz, &len, t + 1, 300000);
	expect_inflates(gz, len, 1 << 20, t, 300001);
	free(gz);

	gz = NULL;
	len = 0;
	for (size_t i = 0; i < 300001; i += 1000)
		gzip_into(&gz, &len, t + i, MIN((size_t)1000, 300001 - i));
	expect_inflates(gz, len, 1 << 20, t, 300001);
	free(gz);
	free(t);
}

/* gzip -c /dev/null: nothing, alone or among other members. */
static void test_empty_member(void **state)
{
	char *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, "", 0);
	assert_int_equal(len, 20);
	expect_inflates(gz, len, 1 << 20, "", 0);
	expect_inflates(gz, len, 0, "", 0);
	gzip_into(&gz, &len, "abc", 3);
	gzip_into(&gz, &len, "", 0);
	expect_inflates(gz, len, 1 << 20, "abc", 3);
	expect_inflates(gz, len, 3, "abc", 3);
	expect_fails(gz, len, 2, ERR_LIMIT, "t: inflates to more than 2 bytes");
	free(gz);
}

static void test_cap_exact(void **state)
{
	char *t = text(65536), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, t, 65536);
	expect_inflates(gz, len, 65536, t, 65536);
	expect_fails(gz, len, 65535, ERR_LIMIT, "t: inflates to more than 65535 bytes");
	expect_fails(gz, len, 0, ERR_LIMIT, "t: inflates to more than 0 bytes");
	/* The same across two members, the cap reached in the second. */
	gzip_into(&gz, &len, "z", 1);
	t = realloc(t, 65537);
	t[65536] = 'z';
	expect_inflates(gz, len, 65537, t, 65537);
	expect_fails(gz, len, 65536, ERR_LIMIT, "t: inflates to more than 65536 bytes");
	free(gz);
	free(t);
}

/* 64 MiB of zeros in about 64 KB, under a 1 MiB cap. */
static void test_gzip_bomb(void **state)
{
	size_t n = (size_t)64 << 20, len = 0, max = 1 << 20;
	char *zeros = calloc(1, n), *gz = NULL;

	(void)state;
	assert_non_null(zeros);
	gzip_into(&gz, &len, zeros, n);
	free(zeros);
	largest = 0;
	expect_fails(gz, len, max, ERR_LIMIT, "t: inflates to more than 1048576 bytes");
	assert_true(largest <= max + 1);
	/* A trailer claiming 4 GiB: the first buffer is clamped too. */
	set_isize(gz, len, UINT32_MAX);
	largest = 0;
	expect_fails(gz, len, max, ERR_LIMIT, "t: inflates to more than 1048576 bytes");
	assert_true(largest <= max + 1);
	free(gz);
}

/* A trailer that lies about the size is corrupt, and costs no more memory. */
static void test_lying_isize(void **state)
{
	char *t = text(50000), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, t, 50000);
	set_isize(gz, len, 1);
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	set_isize(gz, len, 0);
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	set_isize(gz, len, 49999);
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	set_isize(gz, len, 50001);
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	/* Too big: the buffer follows the input's size, not the trailer. */
	set_isize(gz, len, UINT32_MAX);
	largest = 0;
	expect_fails(gz, len, (size_t)1 << 40, ERR_FORMAT, "t: corrupt gzip data at byte");
	assert_true(largest <= len * 1032 + 1);
	/* Every member's trailer is checked, not only the last one's. */
	set_isize(gz, len, 1);
	gzip_into(&gz, &len, "!", 1);
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	free(gz);
	free(t);
}

static void test_truncated(void **state)
{
	char *t = text(20000), *gz = NULL;
	size_t len = 0, first;

	(void)state;
	gzip_into(&gz, &len, t, 10000);
	first = len;
	gzip_into(&gz, &len, t + 10000, 10000);
	for (size_t cut = 0; cut < len; cut++) {
		struct error err = ERROR_INIT;
		char *out;
		size_t out_len;
		int rc = input_gunzip("t", gz, cut, 1 << 20, &out, &out_len, &err);

		/* Cut at the second member, or after its first byte: one member, and garbage. */
		if (cut == first || cut == first + 1) {
			assert_int_equal(rc, 0);
			assert_int_equal(out_len, 10000);
			free(out);
			continue;
		}
		assert_int_equal(rc, ERR_FORMAT);
		if (strncmp(err.msg, "t: truncated gzip data at byte ", 31) &&
		    strncmp(err.msg, "t: corrupt gzip data at byte ", 29))
			fail_msg("cut at %zu: %s", cut, err.msg);
	}
	/* In the header, the deflate data and the trailer: truncated, said so. */
	expect_fails(gz, 5, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	expect_fails(gz, first / 2, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	expect_fails(gz, first - 3, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	expect_fails(gz, len - 1, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	expect_fails(gz, first + 100, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	free(gz);
	free(t);
}

static void test_corrupt(void **state)
{
	char *t = text(20000), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, t, 20000);
	/* The CRC, the compression method, a block type that does not exist. */
	gz[len - 8] ^= 1;
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	gz[len - 8] ^= 1;
	gz[2] = 7;
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte");
	gz[2] = 8;
	gz[10] |= 6;
	expect_fails(gz, len, 1 << 20, ERR_FORMAT, "t: corrupt gzip data at byte 1");
	gz[10] = 0;
	free(gz);
	/* Garbage in the second member. */
	gz = NULL;
	len = 0;
	gzip_into(&gz, &len, "abc", 3);
	gz = realloc(gz, len + 30);
	memcpy(gz + len, "\037\213\010\000garbage-garbage-garbage!", 29);
	expect_fails(gz, len + 29, 1 << 20, ERR_FORMAT, "t: ");
	free(gz);
	free(t);
}

/* Bytes after the last member that do not start one are ignored, as gunzip does. */
static void test_trailing_bytes_and_zlib(void **state)
{
	char *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, "abc", 3);
	gz = realloc(gz, len + 4);
	memcpy(gz + len, "\0\0\0\0", 4);
	expect_inflates(gz, len + 4, 1 << 20, "abc", 3);
	free(gz);
	gz = NULL;
	len = 0;
	deflate_into(&gz, &len, "zlib, too", 9, false);
	expect_inflates(gz, len, 1 << 20, "zlib, too", 9);
	expect_fails(gz, len - 1, 1 << 20, ERR_FORMAT, "t: truncated gzip data at byte");
	free(gz);
}

/*
 * A shared budget: two bodies inflate together while they fit, a third is
 * refused naming the budget (and charged nothing), and closing gives
 * every byte back.
 */
static void test_budget_shared(void **state)
{
	struct budget b = {.limit = 3 << 20};
	struct error err = ERROR_INIT;
	struct input x, y, z;
	char *t = text(1 << 20), *gz = NULL;
	size_t len = 0;

	(void)state;
	gzip_into(&gz, &len, t, 1 << 20);
	assert_int_equal(input_from_buf_budget(&x, "x", gz, len, 4 << 20, &b, &err), 0);
	assert_int_equal(atomic_load(&b.used), 1 << 20);
	assert_int_equal(input_from_buf_budget(&y, "y", gz, len, 4 << 20, &b, &err), 0);
	assert_memory_equal(y.data, t, 1 << 20);
	b.limit = (2 << 20) + 4096;
	assert_int_equal(input_from_buf_budget(&z, "z", gz, len, 4 << 20, &b, &err), ERR_LIMIT);
	assert_non_null(strstr(err.msg, INPUT_BUDGET_MSG));
	assert_int_equal(atomic_load(&b.used), 2 << 20);
	input_close(&x);
	input_close(&y);
	assert_int_equal(atomic_load(&b.used), 0);
	free(gz);
	free(t);
}

/* A bomb under a budget smaller than its cap: refused at the budget, all given back. */
static void test_budget_bomb(void **state)
{
	struct budget b = {.limit = 1 << 20};
	struct error err = ERROR_INIT;
	char *zeros = calloc(16 << 20, 1), *gz = NULL;
	size_t len = 0;
	struct input in;

	(void)state;
	assert_non_null(zeros);
	gzip_into(&gz, &len, zeros, 16 << 20);
	largest = 0;
	assert_int_equal(input_from_buf_budget(&in, "bomb", gz, len, 64 << 20, &b, &err),
			 ERR_LIMIT);
	assert_non_null(strstr(err.msg, INPUT_BUDGET_MSG));
	assert_true(largest <= (1 << 20) + 1);
	assert_int_equal(atomic_load(&b.used), 0);
	free(gz);
	free(zeros);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_member),
		cmocka_unit_test(test_concatenated_members),
		cmocka_unit_test(test_empty_member),
		cmocka_unit_test(test_cap_exact),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_lying_isize),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_trailing_bytes_and_zlib),
		cmocka_unit_test(test_budget_shared),
		cmocka_unit_test(test_budget_bomb),
	};

	return cmocka_run_group_tests_name("input", tests, NULL, NULL);
}
