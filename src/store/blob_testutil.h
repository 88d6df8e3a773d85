/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_BLOB_TESTUTIL_H
#define PLATEAU_BLOB_TESTUTIL_H

/*
 * What the blob tests share (blob_test.c: round trips, merges, encoding
 * choices, golden bytes; blob_decode_test.c: what must not decode):
 * profile builders, encoding, equality, raw bodies written by hand.
 * Each file uses only some of them, hence the unused attributes.
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

#ifndef SOURCE_ROOT
#define SOURCE_ROOT "."
#endif

static const int levels[] = {0, 1, 3};

/* Profile building. */

/* Add a "a;b;c" stack with values (one per type) under label set labels. */
__attribute__((unused)) static uint32_t add(struct profile *p, const char *stack, uint32_t labels,
					    const int64_t *v)
{
	uint32_t node = testutil_stack(p, stack);

	assert_int_equal(profile_add_sample(p, node, labels, v), 0);
	return node;
}

__attribute__((unused)) static void add1(struct profile *p, const char *stack, int64_t v)
{
	add(p, stack, 0, &v);
}

__attribute__((unused)) static struct profile *simple_profile(void)
{
	struct profile *p = profile_new();

	profile_add_type(p, "samples", "count");
	add1(p, "main;a;b", 10);
	add1(p, "main;a;c", 20);
	add1(p, "main;d", 30);
	add1(p, "main;d;d;d", 40);
	return p;
}

__attribute__((unused)) static uint32_t str_label(struct profile *p, const char *key,
						  const char *val)
{
	struct label l = {profile_intern_str(p, key), profile_intern_str(p, val), 0, 0};

	return profile_intern_labels(p, &l, 1);
}

/* Every feature of the model: types with decimals, labels, flags, odd strings, times. */
__attribute__((unused)) static struct profile *rich_profile(void)
{
	struct profile *p = profile_new();
	struct frame f = {0};
	struct label l[3];
	int64_t v[3];
	uint32_t n, set;

	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_type(p, "wall", "seconds");
	profile_add_type(p, "alloc_space", "bytes");
	p->types[1].decimals = 3;
	p->types[2].decimals = 9;
	p->default_type = 1;
	p->period_type = (struct sample_type){profile_intern_str(p, "cpu"),
					      profile_intern_str(p, "nanoseconds"), 0};
	p->period = 10101010;
	p->time_nanos = -1;
	p->duration_nanos = INT64_MAX;
	f.name = profile_intern(p, "with\0nul", 8);
	f.module = profile_intern_str(p, "/usr/lib/libc.so.6");
	f.file = profile_intern_str(p, "mem\xff\xfe.c");
	f.line = UINT32_MAX;
	f.addr = UINT64_MAX;
	f.flags = FRAME_INLINED | FRAME_JIT;
	n = profile_child(p, 0, profile_intern_frame(p, &f));
	f.name = profile_intern_str(p, "entry_SYSCALL_64");
	f.module = profile_intern_str(p, "[kernel.kallsyms]");
	f.file = f.line = 0;
	f.addr = 0xffffffff81000000ULL;
	f.flags = FRAME_KERNEL | FRAME_UNSYMBOLIZED;
	n = profile_child(p, n, profile_intern_frame(p, &f));
	l[0] = (struct label){profile_intern_str(p, "thread"), profile_intern_str(p, "worker 1"), 0,
			      0};
	l[1] = (struct label){profile_intern_str(p, "bytes"), 0, -4096,
			      profile_intern_str(p, "bytes")};
	l[2] = (struct label){profile_intern_str(p, ""), 0, INT64_MIN, 0};
	set = profile_intern_labels(p, l, 3);
	v[0] = INT64_MIN, v[1] = INT64_MAX, v[2] = 0;
	assert_int_equal(profile_add_sample(p, n, set, v), 0);
	v[0] = 7, v[1] = -3, v[2] = 1000000000;
	assert_int_equal(profile_add_sample(p, n, 0, v), 0);
	assert_int_equal(profile_add_sample(p, 0, set, v), 0); /* a sample at the root */
	add(p, "main;work;work", str_label(p, "thread", "worker 2"), v);
	add(p, "main;idle", 0, v);
	profile_child(p, 0, profile_frame_named(p, "no samples", 10)); /* an empty node */
	p->profile_labels = str_label(p, "service_name", "shop");
	ALLOC_GROW(p->comments, 3, p->alloc_comments);
	p->comments[p->nr_comments++] = profile_intern_str(p, "recorded by a test");
	p->comments[p->nr_comments++] = 0;
	p->comments[p->nr_comments++] = profile_intern_str(p, "recorded by a test");
	return p;
}

/* Blob helpers. */

__attribute__((unused)) static void encode(const struct profile *p, int level, struct strbuf *sb)
{
	struct error err = ERROR_INIT;

	strbuf_reset(sb);
	assert_int_equal(blob_encode_level(p, level, sb, &err), 0);
}

__attribute__((unused)) static void assert_equal(const struct profile *a, const struct profile *b)
{
	struct strbuf why = STRBUF_INIT;

	if (!profile_equal(a, b, &why))
		fail_msg("profiles differ: %s", why.buf);
	strbuf_release(&why);
}

/* decode(encode(p)) == p at every level, and encoding that again gives the same blob. */
__attribute__((unused)) static void assert_round_trip(const struct profile *p)
{
	struct strbuf sb = STRBUF_INIT, again = STRBUF_INIT;
	struct error err = ERROR_INIT;
	struct profile *q;

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		encode(p, levels[i], &sb);
		if (blob_decode(sb.buf, sb.len, NULL, &q, &err))
			fail_msg("level %d: %s", levels[i], err.msg);
		assert_equal(p, q);
		encode(q, levels[i], &again);
		assert_int_equal(again.len, sb.len);
		assert_memory_equal(again.buf, sb.buf, sb.len);
		profile_free(q);
	}
	strbuf_release(&sb);
	strbuf_release(&again);
}

/* A body written by hand: varints, as doc/store-format.md lays them out. */
struct body {
	struct strbuf sb;
};

__attribute__((unused)) static void put_u(struct body *b, uint64_t v)
{
	while (v >= 0x80) {
		strbuf_addch(&b->sb, (int)(v | 0x80) & 0xff);
		v >>= 7;
	}
	strbuf_addch(&b->sb, (int)v);
}

__attribute__((unused)) static void put_s(struct body *b, int64_t v)
{
	put_u(b, ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)));
}

__attribute__((unused)) static void put_all(struct body *b, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_u(b, v[i]);
}

/* U(1, 2, 3): those varints, in b. */
#define U(...)                                      \
	put_all(b, (const uint64_t[]){__VA_ARGS__}, \
		sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* The header and a raw body, ready to decode. */
__attribute__((unused)) static void raw_blob(const struct body *b, struct strbuf *out)
{
	strbuf_reset(out);
	strbuf_add(out, "PLTB\1\0", 6);
	strbuf_add(out, b->sb.buf, b->sb.len);
}

/*
 * A valid body: strings "main" "f" "samples" "count" "k" "v"; frames main
 * and f; nodes main, main/f; one type samples/count; one label set {k=v};
 * samples (main/f, {}) = 6 and (main/f, {k=v}) = 9.
 */
__attribute__((unused)) static void small_body(struct body *b, const char *what)
{
	strbuf_reset(&b->sb);
	U(6, 4, 1, 7, 5, 1, 1);
	strbuf_addstr(&b->sb, "mainfsamplescountkv");
	if (!strcmp(what, "strings"))
		return;
	U(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); /* frames: names 1 then 2, the rest 0 */
	if (!strcmp(what, "frames"))
		return;
	U(2, 0, 0, 0, 0); /* nodes: 1 under 0, 2 under 1; frames 0 then 1 */
	if (!strcmp(what, "nodes"))
		return;
	U(1, 0, 3, 4, 0, 0, 0, 0, 0, 0); /* types, period, times */
	U(1, 1, 5, 6, 0, 0);		 /* one label set {k=v} */
	U(0, 0);			 /* no profile labels, no comments */
	U(2, 2, 0, 0, 1, 3, 4, 6);	 /* samples at node 2, sets 0 and 1, values 2*3 and 3*3 */
}

/* A profile of many stacks (a few thousand nodes) and values of several sizes. */
__attribute__((unused)) static struct profile *big_profile(uint32_t seed)
{
	struct profile *p = profile_new();
	uint32_t frames[24];

	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	for (uint32_t s = 0; s < 3000; s++) {
		uint32_t x = (s * 2654435761u) ^ seed, depth = 4 + x % 20;
		int64_t v[2] = {1 + x % 3, (int64_t)(1 + x % 3) * 10000000};

		for (uint32_t d = 0; d < depth; d++) {
			char name[32];

			snprintf(name, sizeof(name), "fn_%u", (x >> (d % 16)) % (40 + d * 8));
			frames[d] = profile_frame_named(p, name, strlen(name));
		}
		profile_add_sample(p, profile_stack(p, frames, depth), s % 7 ? 0 : 1 + s % 3, v);
		if (s == 0) {
			str_label(p, "thread", "a");
			str_label(p, "thread", "b");
			str_label(p, "thread", "c");
		}
	}
	return p;
}

/* blob_merge_into(dst, blob) leaves dst as profile_merge(dst, decode(blob)) does. */
__attribute__((unused)) static void assert_merge_like_profile_merge(struct profile *a,
								    struct profile *b,
								    const struct profile *src,
								    int level)
{
	struct error e1 = ERROR_INIT, e2 = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	int r1, r2;

	encode(src, level, &sb);
	r1 = profile_merge(a, src, &e1);
	r2 = blob_merge_into(b, sb.buf, sb.len, NULL, &e2);
	assert_int_equal(r1, r2);
	assert_int_equal(a->saturated, b->saturated);
	if (!r1)
		assert_equal(a, b);
	strbuf_release(&sb);
}

/*
 * Two types, samples with a value in one of them only; ONLY >= 0: just
 * that type and its samples, as a push's series sees it.
 */
__attribute__((unused)) static struct profile *two_types(int only)
{
	static const struct {
		const char *stack;
		int64_t v[2];
		bool labelled;
	} rows[] = {
		{"main;a;b", {1, 0}, false}, {"main;a;c", {0, 500}, true},
		{"main;d", {2, 700}, false}, {"main;e;f", {0, 300}, false},
		{"main;a;b", {3, 0}, true},
	};
	struct profile *p = profile_new();
	const char *names[2][2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};

	for (int t = 0; t < 2; t++)
		if (only < 0 || only == t)
			profile_add_type(p, names[t][0], names[t][1]);
	p->types[only < 0 ? 1 : 0].decimals = only != 0 ? 1 : 0;
	p->period = 10;
	p->duration_nanos = 10000;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		uint32_t set = rows[i].labelled ? str_label(p, "thread", "w") : 0;

		if (only < 0)
			add(p, rows[i].stack, set, rows[i].v);
		else if (rows[i].v[only])
			add(p, rows[i].stack, set, &rows[i].v[only]);
	}
	return p;
}

/* Which columns of varint_profile() hold numbers of every length (the others hold 0s). */
enum { V_LINES = 1, V_ADDRS = 2, V_VALUES = 4, V_ALL = 7 };

/*
 * A single-type view of p, as the service encodes: p's tree, frames and
 * strings, the samples with a value of type t.
 */
struct view {
	struct profile v;
	struct sample_type st;
	struct psample *samples;
	int64_t *values;
};

#endif
