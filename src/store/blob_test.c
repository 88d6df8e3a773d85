/* SPDX-License-Identifier: MIT */
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
static uint32_t add(struct profile *p, const char *stack, uint32_t labels, const int64_t *v)
{
	uint32_t node = testutil_stack(p, stack);

	assert_int_equal(profile_add_sample(p, node, labels, v), 0);
	return node;
}

static void add1(struct profile *p, const char *stack, int64_t v)
{
	add(p, stack, 0, &v);
}

static struct profile *simple_profile(void)
{
	struct profile *p = profile_new();

	profile_add_type(p, "samples", "count");
	add1(p, "main;a;b", 10);
	add1(p, "main;a;c", 20);
	add1(p, "main;d", 30);
	add1(p, "main;d;d;d", 40);
	return p;
}

static uint32_t str_label(struct profile *p, const char *key, const char *val)
{
	struct label l = {profile_intern_str(p, key), profile_intern_str(p, val), 0, 0};

	return profile_intern_labels(p, &l, 1);
}

/* Every feature of the model: types with decimals, labels, flags, odd strings, times. */
static struct profile *rich_profile(void)
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

static void encode(const struct profile *p, int level, struct strbuf *sb)
{
	struct error err = ERROR_INIT;

	strbuf_reset(sb);
	assert_int_equal(blob_encode_level(p, level, sb, &err), 0);
}

static void assert_equal(const struct profile *a, const struct profile *b)
{
	struct strbuf why = STRBUF_INIT;

	if (!profile_equal(a, b, &why))
		fail_msg("profiles differ: %s", why.buf);
	strbuf_release(&why);
}

/* decode(encode(p)) == p at every level, and encoding that again gives the same blob. */
static void assert_round_trip(const struct profile *p)
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

/* A body written by hand: varints, as doc/store-format.md lays them out. */
struct body {
	struct strbuf sb;
};

static void put_u(struct body *b, uint64_t v)
{
	while (v >= 0x80) {
		strbuf_addch(&b->sb, (int)(v | 0x80) & 0xff);
		v >>= 7;
	}
	strbuf_addch(&b->sb, (int)v);
}

static void put_s(struct body *b, int64_t v)
{
	put_u(b, ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)));
}

static void put_all(struct body *b, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_u(b, v[i]);
}

/* U(1, 2, 3): those varints, in b. */
#define U(...)                                      \
	put_all(b, (const uint64_t[]){__VA_ARGS__}, \
		sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* The header and a raw body, ready to decode. */
static void raw_blob(const struct body *b, struct strbuf *out)
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
static void small_body(struct body *b, const char *what)
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

static void test_small_body_decodes(void **state)
{
	struct strbuf blob = STRBUF_INIT;
	struct body b = {STRBUF_INIT};
	struct error err = ERROR_INIT;
	struct profile *p;

	(void)state;
	small_body(&b, "all");
	raw_blob(&b, &blob);
	assert_int_equal(blob_decode(blob.buf, blob.len, NULL, &p, &err), 0);
	assert_int_equal(p->nr_nodes, 3);
	assert_int_equal(p->nr_samples, 2);
	assert_int_equal(profile_total(p, 0), 15);
	assert_string_equal(profile_str(p, p->types[0].unit), "count");
	assert_round_trip(p);
	profile_free(p);
	strbuf_release(&blob);
	strbuf_release(&b.sb);
}

static void test_fixtures_round_trip(void **state)
{
	static const char *const files[] = {
		"tests/fixtures/folded/base.folded",
		"tests/fixtures/folded/new.folded",
		"tests/fixtures/folded/noise.folded",
		"tests/fixtures/pprof/go_cpu.pb.gz",
		"tests/fixtures/pprof/go_heap.pb.gz",
		"fuzz/corpus/pprof/features.pb",
		"fuzz/corpus/pprof/decimals.pb",
		"fuzz/corpus/pprof/diff.pb",
		"tests/fixtures/perf/system_wide.perf.txt",
		"tests/fixtures/perf/cxx_names.perf.txt",
		"tests/fixtures/perf/jit_map.perf.txt",
		"tests/fixtures/perf/multi_event.perf.txt",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct error err = ERROR_INIT;
		struct profile *p;
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", SOURCE_ROOT, files[i]);
		if (profile_read_file(path, NULL, &p, &err))
			fail_msg("%s", err.msg);
		assert_true(p->nr_samples > 0);
		assert_round_trip(p);
		profile_free(p);
	}
}

static void test_empty_profiles(void **state)
{
	struct profile *p = profile_new();

	(void)state;
	assert_round_trip(p);
	profile_add_type(p, "samples", "count");
	assert_round_trip(p);
	profile_child(p, 0, profile_frame_named(p, "lonely", 6));
	assert_round_trip(p);
	profile_free(p);
}

static void test_every_feature_round_trips(void **state)
{
	struct profile *p = rich_profile();

	(void)state;
	assert_round_trip(p);
	profile_free(p);
}

/* A profile of many stacks (a few thousand nodes) and values of several sizes. */
static struct profile *big_profile(uint32_t seed)
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

/*
 * A set's labels are kept in the order of the profile's key ids; a decoded
 * profile interns "k1" first (a frame's name), the original "k2": the blob
 * must not follow either.
 */
static void test_label_order_is_canonical(void **state)
{
	struct profile *p = profile_new();
	struct label l[2];
	int64_t v = 1;
	uint32_t k2 = profile_intern_str(p, "k2"), k1 = profile_intern_str(p, "k1");

	(void)state;
	profile_add_type(p, "samples", "count");
	l[0] = (struct label){k1, profile_intern_str(p, "x"), 0, 0};
	l[1] = (struct label){k2, 0, 5, profile_intern_str(p, "bytes")};
	add(p, "k1;f", profile_intern_labels(p, l, 2), &v);
	assert_round_trip(p);
	profile_free(p);
}

/*
 * A node's samples go by blob label set, and the sets are numbered by
 * first use in node order, then profile set.  Samples added in another
 * order than their sets were interned, at a node whose sets the blob
 * numbers in yet another order (a node before it used one of them
 * first); sets first used in the order of their ids, which the blob
 * keeps (each node's samples sorted once); and labels but one sample a
 * node, where nothing is sorted.
 */
static void test_samples_within_a_node(void **state)
{
	struct profile *p[3];
	uint32_t set[3][4];
	int64_t v = 1;

	(void)state;
	for (int k = 0; k < 3; k++) {
		p[k] = profile_new();
		profile_add_type(p[k], "samples", "count");
		for (int i = 0; i < 4; i++) {
			char val[8];

			snprintf(val, sizeof(val), "t%d", i);
			set[k][i] = str_label(p[k], "thread", val);
		}
	}
	add(p[0], "main;first", set[0][2], &v);
	add(p[0], "main;second", set[0][3], &v);
	add(p[0], "main;second", set[0][1], &v);
	add(p[0], "main;first", set[0][0], &v);
	add(p[0], "main;first", set[0][3], &v);
	add(p[0], "main;first", set[0][1], &v);
	add(p[0], "main", set[0][2], &v);
	add(p[0], "main", 0, &v);
	add(p[1], "main;first", set[1][1], &v);
	add(p[1], "main;second", set[1][3], &v);
	add(p[1], "main;first", set[1][0], &v);
	add(p[1], "main;second", set[1][2], &v);
	for (uint32_t i = 0; i < 4; i++) {
		char stack[16];

		snprintf(stack, sizeof(stack), "main;f%u", i);
		add(p[2], stack, set[2][3 - i], &v);
	}
	for (int k = 0; k < 3; k++) {
		assert_round_trip(p[k]);
		profile_free(p[k]);
	}
}

static void test_big_profile_round_trips(void **state)
{
	struct profile *p = big_profile(1);

	(void)state;
	assert_true(p->nr_nodes > 1000);
	assert_round_trip(p);
	profile_free(p);
}

/* blob_merge_into(dst, blob) leaves dst as profile_merge(dst, decode(blob)) does. */
static void assert_merge_like_profile_merge(struct profile *a, struct profile *b,
					    const struct profile *src, int level)
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

/* Merge each of srcs in turn into two profiles, once as profiles, once as blobs. */
static void merge_all(struct profile **srcs, size_t n, int level)
{
	struct profile *a = profile_new(), *b = profile_new();

	for (size_t i = 0; i < n; i++)
		assert_merge_like_profile_merge(a, b, srcs[i], level);
	profile_free(a);
	profile_free(b);
}

static void test_merge_into_equals_profile_merge(void **state)
{
	struct profile *small[] = {simple_profile(), simple_profile(), big_profile(8),
				   simple_profile()};
	struct profile *big[] = {big_profile(2), big_profile(3), big_profile(2)};

	(void)state;
	small[1]->types[0].decimals = 2; /* merging raises the decimals of what is there */
	big[1]->types[1].decimals = 1;
	big[1]->duration_nanos = 5;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		merge_all(small, ARRAY_SIZE(small), levels[l]); /* big_profile(8) is refused */
		merge_all(big, ARRAY_SIZE(big), levels[l]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(small); i++)
		profile_free(small[i]);
	for (size_t i = 0; i < ARRAY_SIZE(big); i++)
		profile_free(big[i]);
}

static void test_merge_into_rich_and_empty(void **state)
{
	struct profile *rich = rich_profile(), *empty = profile_new();
	struct profile *a = profile_new(), *b = profile_new();

	(void)state;
	assert_merge_like_profile_merge(a, b, rich, 1);
	assert_merge_like_profile_merge(a, b, rich, 1); /* sums overflow: both saturate */
	assert_true(a->saturated);
	profile_free(a);
	profile_free(b);
	a = profile_new();
	b = profile_new();
	assert_merge_like_profile_merge(a, b, empty, 0);
	assert_merge_like_profile_merge(a, b, empty, 0);
	profile_free(a);
	profile_free(b);
	profile_free(rich);
	profile_free(empty);
}

/*
 * Two types, samples with a value in one of them only; ONLY >= 0: just
 * that type and its samples, as a push's series sees it.
 */
static struct profile *two_types(int only)
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

/* A push's blob holds every type; each series merges its own out of it. */
static void test_merge_type_into(void **state)
{
	struct profile *both = two_types(-1);
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		strbuf_reset(&sb);
		assert_int_equal(blob_encode_level(both, levels[l], &sb, &err), 0);
		for (uint32_t t = 0; t < 2; t++) {
			struct profile *want = two_types((int)t), *got = profile_new();

			assert_int_equal(blob_merge_type_into(got, sb.buf, sb.len, t, NULL, &err),
					 0);
			if (!profile_equal(got, want, &why))
				fail_msg("type %u: %s", t, why.buf);
			/* Twice: as profile_merge of the single-type profile. */
			assert_int_equal(blob_merge_type_into(got, sb.buf, sb.len, t, NULL, &err),
					 0);
			assert_int_equal(profile_merge(want, want, &err), 0);
			if (!profile_equal(got, want, &why))
				fail_msg("type %u twice: %s", t, why.buf);
			profile_free(want);
			profile_free(got);
		}
	}
	{
		struct profile *dst = profile_new();

		assert_int_equal(blob_merge_type_into(dst, sb.buf, sb.len, 2, NULL, &err),
				 ERR_USAGE);
		assert_string_equal(err.msg, "blob: no sample type 2 (the blob has 2)");
		err = (struct error)ERROR_INIT;
		/* Into a profile of the other type: refused as blob_merge_into refuses. */
		assert_int_equal(blob_merge_type_into(dst, sb.buf, sb.len, 0, NULL, &err), 0);
		assert_int_equal(blob_merge_type_into(dst, sb.buf, sb.len, 1, NULL, &err),
				 ERR_USAGE);
		profile_free(dst);
	}
	strbuf_release(&sb);
	strbuf_release(&why);
	profile_free(both);
}

static void test_merge_into_refuses_other_types(void **state)
{
	struct profile *p = simple_profile(), *dst = profile_new();
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	profile_add_type(dst, "cpu", "nanoseconds");
	add1(dst, "x", 1);
	encode(p, 1, &sb);
	assert_int_equal(blob_merge_into(dst, sb.buf, sb.len, NULL, &err), ERR_USAGE);
	assert_string_equal(err.msg, "blob: cannot merge profiles of different sample types "
				     "(cpu/nanoseconds and samples/count)");
	assert_int_equal(profile_total(dst, 0), 1);
	strbuf_release(&sb);
	profile_free(p);
	profile_free(dst);
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

/* A profile's nodes without samples stay in a decoded profile, not in a merged one. */
static void test_empty_nodes(void **state)
{
	struct profile *p = simple_profile(), *q, *m = profile_new();
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	profile_child(p, 1, profile_frame_named(p, "unsampled", 9));
	encode(p, 1, &sb);
	assert_int_equal(blob_decode(sb.buf, sb.len, NULL, &q, &err), 0);
	assert_int_equal(q->nr_nodes, p->nr_nodes);
	assert_int_equal(blob_merge_into(m, sb.buf, sb.len, NULL, &err), 0);
	assert_int_equal(m->nr_nodes, p->nr_nodes - 1);
	profile_free(p);
	profile_free(q);
	profile_free(m);
	strbuf_release(&sb);
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

static void test_encode_choices(void **state)
{
	struct profile *p = profile_new(), *big = big_profile(5);
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(blob_encode_level(p, 100, &sb, &err), ERR_USAGE);
	assert_int_equal(sb.len, 0);
	/* Too small for zstd to shrink: stored raw at any level. */
	encode(p, 3, &sb);
	assert_int_equal(sb.buf[5], 0);
	encode(big, 3, &sb);
	assert_int_equal(sb.buf[5], 1);
	assert_memory_equal(sb.buf, "PLTB\1", 5);
	/* blob_encode appends. */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "key");
	assert_int_equal(blob_encode(p, &sb, &err), 0);
	assert_memory_equal(sb.buf, "keyPLTB", 7);
	strbuf_release(&sb);
	profile_free(p);
	profile_free(big);
}

/*
 * Blob nodes are in preorder, a node's children in the order they were
 * added, whatever order the stacks came in: later stacks that branch off
 * early nodes, a node that gains a child after its subtree was closed, a
 * wide root.  Decoding adds the nodes in blob order, so q's ids show it.
 */
static void test_node_order(void **state)
{
	static const char *const stacks[] = {"a;b;c", "a;d", "a;b;e", "f", "a;b;c;g",
					     "a;d;h", "f;i", "a;j",   "k"};
	static const char *const want[] = {"a", "b", "c", "g", "e", "d", "h", "j", "f", "i", "k"};
	struct profile *p = profile_new(), *q;
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	profile_add_type(p, "samples", "count");
	for (size_t i = 0; i < ARRAY_SIZE(stacks); i++)
		add1(p, stacks[i], (int64_t)i + 1);
	for (int i = 0; i < 300; i++) { /* a wide root: every child a leaf */
		char name[16];

		snprintf(name, sizeof(name), "w%d", i);
		add1(p, name, 1);
	}
	encode(p, 0, &sb);
	assert_int_equal(blob_decode(sb.buf, sb.len, NULL, &q, &err), 0);
	assert_equal(p, q);
	assert_int_equal(q->nr_nodes, p->nr_nodes);
	for (uint32_t n = 1; n < q->nr_nodes; n++) {
		const char *name = profile_str(q, q->frames[q->nodes[n].frame].name);
		char wide[16];

		if (n <= ARRAY_SIZE(want)) {
			assert_string_equal(name, want[n - 1]);
			continue;
		}
		snprintf(wide, sizeof(wide), "w%u", n - 1 - (uint32_t)ARRAY_SIZE(want));
		assert_string_equal(name, wide);
		assert_int_equal(q->nodes[n].parent, 0);
	}
	assert_round_trip(p);
	strbuf_release(&sb);
	profile_free(q);
	profile_free(p);
}

/*
 * A type's values are written as their gcd g, then each divided by it:
 * the gcd of values of every size and sign, one that only the last value
 * lowers, powers of two up to 2^63 (INT64_MIN's magnitude), odd ones up
 * to 2^62 + 1.  Four samples down one stack, so that the body ends with
 * u g and the four s quotients in the order given.
 */
static void test_value_gcds(void **state)
{
	static const int64_t p31 = 1000000007; /* a prime */
	static const struct {
		int64_t v[4];
		uint64_t g;
		int64_t q[4];
	} cases[] = {
		{{6LL << 40, -(9LL << 40), 0, 15LL << 40}, 3ULL << 40, {2, -3, 0, 5}},
		{{INT64_MIN, INT64_MIN, 0, 1LL << 62}, 1ULL << 62, {-2, -2, 0, 1}},
		{{INT64_MIN, 0, INT64_MIN, 0}, 1ULL << 63, {-1, 0, -1, 0}},
		{{77, 91, 1001, 14}, 7, {11, 13, 143, 2}},
		{{p31 * 6, p31 * 10, p31 * 14, p31 * 3}, (uint64_t)p31, {6, 10, 14, 3}},
		{{INT64_MAX, -INT64_MAX, 1, 2}, 1, {INT64_MAX, -INT64_MAX, 1, 2}},
		{{(1LL << 62) + 1, -((1LL << 62) + 1), 0, (1LL << 62) + 1},
		 (1ULL << 62) + 1,
		 {1, -1, 0, 1}},
		{{0, 0, 0, 0}, 0, {0}},
	};
	static const char *const stacks[] = {"a", "a;b", "a;b;c", "a;b;c;d"};
	struct strbuf sb = STRBUF_INIT;
	struct body want = {STRBUF_INIT};

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		struct profile *p = profile_new();

		profile_add_type(p, "v", "count");
		for (size_t i = 0; i < 4; i++)
			add1(p, stacks[i], cases[c].v[i]);
		strbuf_reset(&want.sb);
		put_u(&want, cases[c].g);
		for (size_t i = 0; cases[c].g && i < 4; i++)
			put_s(&want, cases[c].q[i]);
		encode(p, 0, &sb);
		assert_true(sb.len > want.sb.len);
		assert_memory_equal(sb.buf + sb.len - want.sb.len, want.sb.buf, want.sb.len);
		assert_round_trip(p);
		profile_free(p);
	}
	strbuf_release(&sb);
	strbuf_release(&want.sb);
}

/* What the store does: truncate to max_nodes, keep the blob. */
static void test_truncated_profile_round_trips(void **state)
{
	struct profile *p = big_profile(6), *t;
	struct error err = ERROR_INIT;

	(void)state;
	t = profile_truncate(p, 1, 200, &err);
	assert_non_null(t);
	assert_true(t->nr_nodes < p->nr_nodes);
	assert_true(profile_total(t, 1) == profile_total(p, 1));
	assert_round_trip(t);
	profile_free(t);
	profile_free(p);
}

/* The fixture at path, whole, into sb. */
static void read_fixture(const char *path, struct strbuf *sb)
{
	char full[512], buf[4096];
	FILE *f;
	size_t n;

	snprintf(full, sizeof(full), "%s/%s", SOURCE_ROOT, path);
	f = fopen(full, "rb");
	if (!f)
		fail_msg("%s: %s", full, strerror(errno));
	strbuf_reset(sb);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(sb, buf, n);
	fclose(f);
}

static void assert_bytes(const struct strbuf *got, const struct strbuf *want, const char *what)
{
	if (got->len != want->len || memcmp(got->buf, want->buf, got->len))
		fail_msg("%s: %zu bytes, not the %zu of the fixture", what, got->len, want->len);
}

/*
 * Encoding gives the bytes it always gave (tests/fixtures/blob/README.md):
 * the store compares blobs as bytes, and a faster encoder must not change
 * them.  Through a blob_tree too, and from the decoded fixture.
 */
static void test_golden_bytes(void **state)
{
	static const char *const files[][2] = {
		{NULL, "tests/fixtures/blob/rich.blob"},
		{"tests/fixtures/pprof/go_cpu.pb.gz", "tests/fixtures/blob/go_cpu.blob"},
		{"tests/fixtures/perf/system_wide.perf.txt",
		 "tests/fixtures/blob/system_wide.blob"},
		{"tests/fixtures/perf/multi_event.perf.txt",
		 "tests/fixtures/blob/multi_event.blob"},
		{"tests/fixtures/perf/cxx_names.perf.txt", "tests/fixtures/blob/cxx_names.blob"},
	};
	struct strbuf want = STRBUF_INIT, got = STRBUF_INIT;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct error err = ERROR_INIT;
		struct profile *p, *q;
		struct blob_tree *t;
		char path[512];

		if (files[i][0]) {
			snprintf(path, sizeof(path), "%s/%s", SOURCE_ROOT, files[i][0]);
			if (profile_read_file(path, NULL, &p, &err))
				fail_msg("%s", err.msg);
		} else {
			p = rich_profile();
		}
		read_fixture(files[i][1], &want);
		encode(p, 0, &got);
		assert_bytes(&got, &want, files[i][1]);
		t = blob_tree_new(p);
		strbuf_reset(&got);
		assert_int_equal(blob_encode_tree(p, t, 0, &got, &err), 0);
		assert_bytes(&got, &want, files[i][1]);
		blob_tree_free(t);
		assert_int_equal(blob_decode(want.buf, want.len, NULL, &q, &err), 0);
		assert_equal(p, q);
		encode(q, 0, &got);
		assert_bytes(&got, &want, files[i][1]);
		profile_free(q);
		profile_free(p);
	}
	strbuf_release(&want);
	strbuf_release(&got);
}

/* Which columns of varint_profile() hold numbers of every length (the others hold 0s). */
enum { V_LINES = 1, V_ADDRS = 2, V_VALUES = 4, V_ALL = 7 };

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

static void view_of(struct view *w, const struct profile *p, uint32_t t)
{
	uint32_t n = 0;

	w->samples = xmalloc((p->nr_samples + 1) * sizeof(*w->samples));
	w->values = xmalloc((p->nr_samples + 1) * sizeof(*w->values));
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		int64_t v = profile_sample_values(p, i)[t];

		if (v && i % (t + 2)) {
			w->samples[n] = p->samples[i];
			w->values[n++] = v;
		}
	}
	w->v = *p;
	w->st = p->types[t];
	w->v.types = &w->st;
	w->v.nr_types = 1;
	w->v.default_type = 0;
	w->v.samples = w->samples;
	w->v.values = w->values;
	w->v.nr_samples = n;
}

/* Views that share a tree encode through it to the bytes they encode to alone. */
static void test_tree_shared_by_views(void **state)
{
	struct profile *p = big_profile(9);
	struct strbuf alone = STRBUF_INIT, shared = STRBUF_INIT;
	struct error err = ERROR_INIT;
	struct blob_tree *t = blob_tree_new(p);
	struct view w;

	(void)state;
	blob_tree_free(NULL);
	for (uint32_t type = 0; type < p->nr_types; type++) {
		for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
			/* A string interned after the tree, as the service's type names are. */
			uint32_t name = profile_intern_str(p, type ? "cpu2" : "samples2");

			view_of(&w, p, type);
			w.st.type = name;
			encode(&w.v, levels[l], &alone);
			strbuf_reset(&shared);
			assert_int_equal(blob_encode_tree(&w.v, t, levels[l], &shared, &err), 0);
			assert_bytes(&shared, &alone, "a view through the tree");
			free(w.samples);
			free(w.values);
		}
	}
	/* A profile that grew, or another, does not share the tree. */
	profile_child(p, 0, profile_frame_named(p, "new", 3));
	strbuf_reset(&shared);
	assert_int_equal(blob_encode_tree(p, t, 1, &shared, &err), ERR_USAGE);
	assert_string_equal(err.msg, "blob: the profile does not share the encoded call tree");
	assert_int_equal(shared.len, 0);
	assert_int_equal(blob_encode_tree(p, t, 100, &shared, &err), ERR_USAGE);
	blob_tree_free(t);
	profile_free(p);
	strbuf_release(&alone);
	strbuf_release(&shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_body_decodes),
		cmocka_unit_test(test_fixtures_round_trip),
		cmocka_unit_test(test_empty_profiles),
		cmocka_unit_test(test_every_feature_round_trips),
		cmocka_unit_test(test_label_order_is_canonical),
		cmocka_unit_test(test_samples_within_a_node),
		cmocka_unit_test(test_big_profile_round_trips),
		cmocka_unit_test(test_merge_into_equals_profile_merge),
		cmocka_unit_test(test_merge_into_rich_and_empty),
		cmocka_unit_test(test_merge_into_refuses_other_types),
		cmocka_unit_test(test_merge_type_into),
		cmocka_unit_test(test_corrupt_merge_leaves_dst),
		cmocka_unit_test(test_empty_nodes),
		cmocka_unit_test(test_truncation_at_every_byte),
		cmocka_unit_test(test_flipped_bytes),
		cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_body_errors),
		cmocka_unit_test(test_sample_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_zstd_bombs),
		cmocka_unit_test(test_encode_choices),
		cmocka_unit_test(test_node_order),
		cmocka_unit_test(test_value_gcds),
		cmocka_unit_test(test_truncated_profile_round_trips),
		cmocka_unit_test(test_golden_bytes),
		cmocka_unit_test(test_varints_of_every_length),
		cmocka_unit_test(test_varint_truncation),
		cmocka_unit_test(test_varint_over_64_bits),
		cmocka_unit_test(test_tree_shared_by_views),
	};

	return cmocka_run_group_tests_name("blob", tests, NULL, NULL);
}
