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
#include "store/blob_testutil.h"

/* Merge each of srcs in turn into two profiles, once as profiles, once as blobs. */
static void merge_all(struct profile **srcs, size_t n, int level)
{
	struct profile *a = profile_new(), *b = profile_new();

	for (size_t i = 0; i < n; i++)
		assert_merge_like_profile_merge(a, b, srcs[i], level);
	profile_free(a);
	profile_free(b);
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
		cmocka_unit_test(test_empty_nodes),
		cmocka_unit_test(test_encode_choices),
		cmocka_unit_test(test_node_order),
		cmocka_unit_test(test_value_gcds),
		cmocka_unit_test(test_truncated_profile_round_trips),
		cmocka_unit_test(test_golden_bytes),
		cmocka_unit_test(test_tree_shared_by_views),
	};

	return cmocka_run_group_tests_name("blob", tests, NULL, NULL);
}
