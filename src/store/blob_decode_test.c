/* SPDX-License-Identifier: MIT */
/*
 * Blobs that must not decode: truncated at every byte, flipped bytes,
 * bad headers, bodies and samples, limits, zstd bombs, varints of every
 * length and past 64 bits; a failed merge leaves its target as it was.
 * Round trips and merges are in blob_test.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <zstd.h>

#include "util/common.h"
#include "format/format.h"
#include "profile/profile_testutil.h"
#include "store/blob.h"
#include "store/blob_testutil.h"

/* Decoding fails with code and a one-line "blob: " message containing msg (if set). */
static void assert_decode_fails(const void *data, size_t len, const struct blob_limits *lim,
				int code, const char *msg)
{
	struct error err = ERROR_INIT;
	struct profile *q = (struct profile *)1;

	if (!blob_decode(data, len, lim, &q, &err))
		fail_msg("decoded (expected \"%s\")", msg ? msg : "an error");
	assert_null(q);
	if (err.code != code || strncmp(err.msg, "blob: ", 6) || strchr(err.msg, '\n') ||
	    (msg && !strstr(err.msg, msg)))
		fail_msg("code %d \"%s\", expected %d \"%s\"", err.code, err.msg, code, msg);
}

/* A corrupt blob leaves the profile it was to be merged into as it was. */
static void test_corrupt_merge_leaves_dst(void **state)
{
	struct profile *p = simple_profile(), *dst = simple_profile(), *before = simple_profile();
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	encode(p, 0, &sb);
	assert_int_equal(blob_merge_into(dst, sb.buf, sb.len - 1, NULL, &err), ERR_FORMAT);
	assert_equal(dst, before);
	strbuf_release(&sb);
	profile_free(p);
	profile_free(dst);
	profile_free(before);
}

/* Every prefix of a blob is refused, raw or compressed. */
static void test_truncation_at_every_byte(void **state)
{
	struct profile *p = rich_profile();
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		encode(p, levels[l], &sb);
		for (size_t len = 0; len < sb.len; len++)
			assert_decode_fails(sb.buf, len, NULL, ERR_FORMAT, NULL);
	}
	strbuf_release(&sb);
	profile_free(p);
}

/* A changed byte is refused, or gives a profile that round-trips; never a crash. */
static void test_flipped_bytes(void **state)
{
	static const uint8_t masks[] = {0x01, 0x10, 0x80, 0xff};
	struct profile *p = rich_profile();
	struct strbuf sb = STRBUF_INIT;
	size_t refused = 0, tried = 0;

	(void)state;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		encode(p, levels[l], &sb);
		for (size_t i = 0; i < sb.len; i++) {
			for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
				struct error err = ERROR_INIT;
				struct profile *q;

				sb.buf[i] ^= (char)masks[m];
				tried++;
				if (blob_decode(sb.buf, sb.len, NULL, &q, &err)) {
					assert_true(err.code == ERR_FORMAT ||
						    err.code == ERR_LIMIT ||
						    err.code == ERR_UNSUPPORTED);
					assert_null(strchr(err.msg, '\n'));
					refused++;
				} else {
					/*
					 * zstd's checksum catches changes to a compressed body;
					 * one to its frame header may leave the content as it was.
					 */
					if (levels[l])
						assert_equal(p, q);
					assert_round_trip(q);
					profile_free(q);
				}
				sb.buf[i] ^= (char)masks[m];
			}
		}
	}
	assert_true(refused > tried / 2);
	strbuf_release(&sb);
	profile_free(p);
}

static void test_header_errors(void **state)
{
	struct profile *p = big_profile(7);
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	encode(p, 1, &sb);
	assert_decode_fails("PLT", 3, NULL, ERR_FORMAT, "not a profile blob");
	assert_decode_fails("PLTX\1\0", 6, NULL, ERR_FORMAT, "not a profile blob");
	sb.buf[4] = 2;
	assert_decode_fails(sb.buf, sb.len, NULL, ERR_UNSUPPORTED, "blob: version 2");
	sb.buf[4] = 1;
	sb.buf[5] = 3;
	assert_decode_fails(sb.buf, sb.len, NULL, ERR_UNSUPPORTED, "blob: unknown flags 0x03");
	sb.buf[5] = 1;
	strbuf_addch(&sb, 0);
	assert_decode_fails(sb.buf, sb.len, NULL, ERR_FORMAT, "not one whole zstd frame");
	strbuf_release(&sb);
	profile_free(p);
}

/* Each part of a valid body spoiled by hand gives its own message. */
static void test_body_errors(void **state)
{
	struct body body = {STRBUF_INIT}, *b = &body;
	struct strbuf blob = STRBUF_INIT;

	(void)state;
	small_body(b, "all");
	strbuf_addch(&b->sb, 0);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: 1 bytes after the samples");

	strbuf_reset(&b->sb);
	for (int i = 0; i < 10; i++)
		strbuf_addch(&b->sb, 0xff);
	strbuf_addch(&b->sb, 0x01);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: strings: count: number over 64 bits");

	strbuf_reset(&b->sb);
	U(1000, 1, 1);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: 1000 strings cannot fit in the 2 bytes left");
	strbuf_reset(&b->sb);
	U(1ull << 40);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_LIMIT, "blob: 1099511627776 strings");
	strbuf_reset(&b->sb);
	U(2, 1, 200, 'a');
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: string 2: length 200 past the end");

	small_body(b, "strings");
	U(1, 12, 0, 0, 0, 0, 0); /* 1 + 6 */
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: frame 0: name 7 out of range");
	small_body(b, "strings");
	U(1, 0, 9, 0, 0, 0, 0);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: frame 0: module 9 out of range");
	small_body(b, "strings");
	U(1, 0, 0, 0, 0, 0, 16);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: frame 0: unknown flags 0x10");

	small_body(b, "frames");
	U(2, 0, 5, 0, 0);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: node 2: parent delta 5 out of range (at most 1)");
	small_body(b, "frames");
	U(2, 0, 0, 0, 4);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: node 2: frame 3 out of range");

	small_body(b, "nodes");
	U(17);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_LIMIT,
			    "blob: 17 sample types (at most 16");
	small_body(b, "nodes");
	U(1, 1);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: sample types: default 1 out of range");
	small_body(b, "nodes");
	U(1, 0, 3, 4, 10);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: sample type 0: decimals 10 out of range");
	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: profile: duration: data ends inside it");

	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0, 1, 1, 5, 6, 0, 0, 2); /* profile labels: set 2 of 2 */
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: profile: labels 2 out of range");
	strbuf_release(&blob);
	strbuf_release(&b->sb);
}

static void test_sample_errors(void **state)
{
	struct body body = {STRBUF_INIT}, *b = &body;
	struct strbuf blob = STRBUF_INIT;

	(void)state;
	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0, 1, 1, 5, 6, 0, 0, 0, 0);
	U(2, 2, 1, 0, 0, 1, 1, 1); /* node 2 then node 3 */
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: sample 1: node delta 1 out of range");
	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0, 1, 1, 5, 6, 0, 0, 0, 0);
	U(2, 2, 0, 1, 1, 1, 1, 1); /* the same (node, set) twice */
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: sample 1: not after sample 0 (node 2)");
	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0, 1, 1, 5, 6, 0, 0, 0, 0);
	U(1, 2, 0, 1ull << 62, 4); /* 2 * 2^62 */
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: sample 0: value of type 0 over 64 bits");

	/* INT64_MIN is -1 times 2^63: the largest divisor there is. */
	small_body(b, "nodes");
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0, 1, 1, 5, 6, 0, 0, 0, 0);
	U(1, 2, 0, 1ull << 63);
	put_s(b, -1);
	raw_blob(b, &blob);
	{
		struct error err = ERROR_INIT;
		struct profile *p;

		assert_int_equal(blob_decode(blob.buf, blob.len, NULL, &p, &err), 0);
		assert_true(profile_total(p, 0) == INT64_MIN);
		assert_round_trip(p);
		profile_free(p);
	}
	strbuf_release(&blob);
	strbuf_release(&b->sb);
}

static void test_limits(void **state)
{
	struct profile *p = big_profile(4);
	struct strbuf sb = STRBUF_INIT;
	struct blob_limits lim = BLOB_LIMITS_DEFAULT;
	struct error err = ERROR_INIT;
	struct profile *q;
	char msg[128];

	(void)state;
	encode(p, 1, &sb);
	lim.max_nodes = p->nr_nodes - 2;
	snprintf(msg, sizeof(msg), "blob: %u nodes (limit %u)", p->nr_nodes - 1, lim.max_nodes);
	assert_decode_fails(sb.buf, sb.len, &lim, ERR_LIMIT, msg);
	lim.max_nodes = p->nr_nodes - 1;
	assert_int_equal(blob_decode(sb.buf, sb.len, &lim, &q, &err), 0);
	profile_free(q);
	lim = (struct blob_limits)BLOB_LIMITS_DEFAULT;
	lim.max_strings = 10;
	assert_decode_fails(sb.buf, sb.len, &lim, ERR_LIMIT, "strings (limit 10)");
	lim = (struct blob_limits)BLOB_LIMITS_DEFAULT;
	lim.max_samples = 100;
	assert_decode_fails(sb.buf, sb.len, &lim, ERR_LIMIT, "samples (limit 100)");
	lim = (struct blob_limits)BLOB_LIMITS_DEFAULT;
	lim.max_inflated = 1000;
	assert_decode_fails(sb.buf, sb.len, &lim, ERR_LIMIT, "(limit 1000)");
	encode(p, 0, &sb);
	assert_decode_fails(sb.buf, sb.len, &lim, ERR_LIMIT, "blob: body of");
	strbuf_release(&sb);
	profile_free(p);
}

/* zstd frames that would inflate past the limit are refused before anything is allocated. */
static void test_zstd_bombs(void **state)
{
	size_t big = (size_t)80 << 20, cap = ZSTD_compressBound(big), n;
	char *zeros = calloc(1, big), *z = malloc(6 + cap);
	struct blob_limits lim = BLOB_LIMITS_DEFAULT;
	ZSTD_CCtx *c = ZSTD_createCCtx();

	(void)state;
	assert_non_null(zeros);
	assert_non_null(z);
	memcpy(z, "PLTB\1\1", 6);
	n = ZSTD_compress(z + 6, cap, zeros, big, 1);
	assert_false(ZSTD_isError(n));
	assert_true(n < 8192);
	assert_decode_fails(z, 6 + n, NULL, ERR_LIMIT, "blob: body inflates to 83886080 bytes");
	lim.max_inflated = 1 << 20;
	n = ZSTD_compress(z + 6, cap, zeros, (size_t)2 << 20, 1);
	assert_decode_fails(z, 6 + n, &lim, ERR_LIMIT, "inflates to 2097152 bytes (limit 1048576)");
	/* A frame that does not state its size would have to be inflated to learn it. */
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
	{
		ZSTD_inBuffer in = {zeros, (size_t)1 << 20, 0};
		ZSTD_outBuffer out = {z + 6, cap, 0};

		assert_int_equal(ZSTD_compressStream2(c, &out, &in, ZSTD_e_end), 0);
		assert_decode_fails(z, 6 + out.pos, NULL, ERR_FORMAT, "does not state its size");
	}
	/* Zeros where the body should be: decodes as far as the zeros go, then stops. */
	n = ZSTD_compress(z + 6, cap, zeros, 64, 1);
	assert_decode_fails(z, 6 + n, NULL, ERR_FORMAT, "blob: 50 bytes after the samples");
	ZSTD_freeCCtx(c);
	free(zeros);
	free(z);
}

/*
 * Numbers of every length, 1 to 10 bytes, on both sides of each length's
 * boundary: in frame lines and addresses (whose differences are signed),
 * string lengths and sample values (in the columns of what; with no
 * V_VALUES, a single sample).  What follows a column decides whether the
 * decoder reads it with its end checks or without (column_fits in
 * blob_decode.c): pad_nodes unsampled nodes after the frames, and
 * big_types types of 10-byte values after the first, give the columns
 * before them more bytes left; what = V_LINES or V_ADDRS gives the frame
 * columns few.
 */
static struct profile *varint_profile(unsigned what, uint32_t pad_nodes, uint32_t big_types)
{
	static const uint32_t long_names[] = {126, 127, 128, 129, 16383, 16384};
	struct profile *p = profile_new();
	int64_t vals[4 + 10 * 4];
	uint32_t n = 0, node = 0, pad;
	char *name = xmalloc(16384);

	vals[n++] = 0;
	vals[n++] = INT64_MIN;
	vals[n++] = INT64_MAX;
	vals[n++] = INT64_MIN + 1;
	/* zigzag(v) is 2v or -2v - 1: these put it on both sides of 2^7k. */
	for (int j = 0; j <= 63; j += 7) {
		int64_t b = (int64_t)1 << (j ? j - 1 : 0);

		vals[n++] = b;
		vals[n++] = -b;
		vals[n++] = b - 1;
		vals[n++] = -b - 1;
	}
	assert_int_equal(n, ARRAY_SIZE(vals));
	profile_add_type(p, "v", "count");
	for (uint32_t t = 0; t < big_types; t++)
		profile_add_type(p, t ? "big2" : "big1", "count");
	for (uint32_t i = 0; i < n; i++) {
		int64_t v[3] = {vals[i], INT64_MIN + 1 + 2 * (int64_t)i,
				INT64_MAX - 2 * (int64_t)i};
		uint32_t shift = 7 * (i % 5), len;
		struct frame f = {0};

		/* The first names' lengths on both sides of 2^7 and 2^14. */
		if (i < ARRAY_SIZE(long_names)) {
			len = long_names[i];
			memset(name, 'a' + (char)i, len);
		} else {
			len = (uint32_t)snprintf(name, 16, "f%u", i);
		}
		f.name = profile_intern(p, name, len);
		if (what & V_LINES)
			f.line = i == n - 1 ? UINT32_MAX
				 : i % 2    ? (uint32_t)((1ull << shift) - 1)
					    : (uint32_t)(1ull << shift);
		if (what & V_ADDRS)
			f.addr = (uint64_t)vals[(i * 7) % n];
		node = profile_child(p, i % 3 ? node : 0, profile_intern_frame(p, &f));
		if ((what & V_VALUES) || i == n - 1)
			assert_int_equal(profile_add_sample(p, node, 0, v), 0);
	}
	pad = profile_frame_named(p, "pad", 3);
	for (uint32_t i = 0, at = 0; i < pad_nodes; i++)
		at = profile_child(p, at, pad);
	free(name);
	return p;
}

static void test_varints_of_every_length(void **state)
{
	static const unsigned whats[] = {V_ALL, V_LINES, V_ADDRS};
	static const uint32_t pads[] = {0, 8, 64, 1024};

	(void)state;
	for (size_t w = 0; w < ARRAY_SIZE(whats); w++) {
		for (size_t i = 0; i < ARRAY_SIZE(pads); i++) {
			for (uint32_t big = 0; big <= 2; big++) {
				struct profile *p = varint_profile(whats[w], pads[i], big);

				assert_round_trip(p);
				profile_free(p);
			}
		}
	}
}

/* Cut anywhere, inside a number or between two, a raw body is a clean one-line error. */
static void test_varint_truncation(void **state)
{
	struct profile *p = varint_profile(V_ALL, 64, 1);
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	encode(p, 0, &sb);
	for (size_t len = 0; len < sb.len; len++)
		assert_decode_fails(sb.buf, len, NULL, ERR_FORMAT, NULL);
	/* Cut in the last value: the last column is read with end checks. */
	assert_decode_fails(sb.buf, sb.len - 1, NULL, ERR_FORMAT,
			    "blob: sample 43: value: data ends inside it");
	strbuf_release(&sb);
	profile_free(p);
}

/* A number over 64 bits in a column, read with end checks and without. */
static void test_varint_over_64_bits(void **state)
{
	static const uint8_t ten[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	static const uint8_t eleven[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0x01};
	struct body body = {STRBUF_INIT}, *b = &body;
	struct strbuf blob = STRBUF_INIT;

	(void)state;
	for (size_t pad = 0; pad <= 64; pad += 64) {
		for (int k = 0; k < 2; k++) {
			strbuf_reset(&b->sb);
			U(1 + !pad); /* two strings and no more bytes: too few for the fast path */
			strbuf_add(&b->sb, k ? eleven : ten, k ? sizeof(eleven) : sizeof(ten));
			for (size_t i = 0; i < pad; i++)
				strbuf_addch(&b->sb, 0);
			raw_blob(b, &blob);
			assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
					    "blob: string 1: length: number over 64 bits");
		}
	}
	/* The largest number there is, in 10 bytes: a length out of range. */
	strbuf_reset(&b->sb);
	U(1, UINT64_MAX);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT, "blob: string 1: length");
	strbuf_reset(&b->sb);
	U(2);
	strbuf_add(&b->sb, "\x80\x80", 2);
	raw_blob(b, &blob);
	assert_decode_fails(blob.buf, blob.len, NULL, ERR_FORMAT,
			    "blob: string 1: length: data ends inside it");
	strbuf_release(&blob);
	strbuf_release(&b->sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corrupt_merge_leaves_dst),
		cmocka_unit_test(test_truncation_at_every_byte),
		cmocka_unit_test(test_flipped_bytes),
		cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_body_errors),
		cmocka_unit_test(test_sample_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_zstd_bombs),
		cmocka_unit_test(test_varints_of_every_length),
		cmocka_unit_test(test_varint_truncation),
		cmocka_unit_test(test_varint_over_64_bits),
	};

	return cmocka_run_group_tests_name("blob_decode", tests, NULL, NULL);
}
