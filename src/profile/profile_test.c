/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/profile.h"
#include "profile/profile_testutil.h"

/* Add "a;b;c" style stacks to a one-type profile. */
static void add(struct profile *p, const char *stack, int64_t v)
{
	assert_int_equal(profile_add_sample(p, testutil_stack(p, stack), 0, &v), 0);
}

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();

	profile_add_type(p, "samples", "count");
	add(p, "main;a;b", 10);
	add(p, "main;a;c", 20);
	add(p, "main;d", 30);
	add(p, "main;a;b", 5);
	add(p, "main;d;d;d", 40); /* recursion */
	return p;
}

static const struct func_stat *find(const struct profile *p, const struct func_stat *fs, size_t n,
				    const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(profile_str(p, fs[i].key), name))
			return &fs[i];
	}
	fail_msg("no function %s", name);
	return NULL;
}

static void test_tree_and_totals(void **state)
{
	struct profile *p = sample_profile();
	int64_t *tot = malloc(p->nr_nodes * sizeof(int64_t));

	(void)state;
	/* root, main, a, b, c, d, d, d */
	assert_int_equal(p->nr_nodes, 8);
	assert_int_equal(p->nr_samples, 4);
	profile_node_totals(p, 0, tot, NULL);
	assert_int_equal(tot[0], 105);
	assert_int_equal(profile_total(p, 0), 105);
	free(tot);
	profile_free(p);
}

static void test_functions_self_total(void **state)
{
	struct profile *p = sample_profile();
	struct func_stat *fs;
	size_t n = profile_functions(p, 0, FUNC_BY_FUNCTION, &fs);

	(void)state;
	assert_int_equal(find(p, fs, n, "main")->total, 105);
	assert_int_equal(find(p, fs, n, "main")->self, 0);
	assert_int_equal(find(p, fs, n, "a")->total, 35);
	assert_int_equal(find(p, fs, n, "b")->self, 15);
	/* Recursive d counts once per stack. */
	assert_int_equal(find(p, fs, n, "d")->total, 70);
	assert_int_equal(find(p, fs, n, "d")->self, 70);
	free(fs);
	profile_free(p);
}

/*
 * The agent's shape: one samples/count type for two value types (cpu and
 * wall), each sample carrying a value of one of them (wall samples have a
 * thread_state label, so they never merge with cpu samples).
 */
static void test_counts_where(void **state)
{
	struct profile *p = profile_new();
	const int64_t cpu[3] = {1, 10, 0}, wall[3] = {3, 0, 30}, cpu2[3] = {2, 20, 0};
	struct label state_label = {.key = profile_intern_str(p, "thread_state"),
				    .str = profile_intern_str(p, "blocked")};
	uint32_t blocked = profile_intern_labels(p, &state_label, 1);
	struct func_stat *fs;
	int64_t *tot;
	size_t n;

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_type(p, "wall", "nanoseconds");
	assert_int_equal(profile_add_sample(p, testutil_stack(p, "main;burn"), 0, cpu), 0);
	assert_int_equal(profile_add_sample(p, testutil_stack(p, "main;burn"), blocked, wall), 0);
	assert_int_equal(profile_add_sample(p, testutil_stack(p, "main;wait"), blocked, wall), 0);
	assert_int_equal(profile_add_sample(p, testutil_stack(p, "main;other"), 0, cpu2), 0);
	tot = malloc(p->nr_nodes * sizeof(int64_t));
	profile_node_totals_where(p, 0, 1, tot, NULL);
	assert_int_equal(tot[0], 3); /* the cpu samples: 1 + 2 */
	profile_node_totals_where(p, 0, 2, tot, NULL);
	assert_int_equal(tot[0], 6);
	profile_node_totals_where(p, 0, PROFILE_ANY_TYPE, tot, NULL);
	assert_int_equal(tot[0], 9);
	free(tot);
	n = profile_functions_where(p, 0, 1, FUNC_BY_FUNCTION, &fs);
	assert_int_equal(find(p, fs, n, "burn")->self, 1);
	assert_int_equal(find(p, fs, n, "main")->total, 3);
	assert_int_equal(find(p, fs, n, "wait")->total, 0);
	free(fs);
	n = profile_functions_where(p, 0, 2, FUNC_BY_FUNCTION, &fs);
	assert_int_equal(find(p, fs, n, "burn")->self, 3);
	assert_int_equal(find(p, fs, n, "main")->total, 6);
	free(fs);
	profile_free(p);
}

static void test_merge_and_types(void **state)
{
	struct profile *a = sample_profile(), *b = sample_profile(), *c = profile_new();
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(profile_merge(a, b, &err), 0);
	assert_int_equal(profile_total(a, 0), 210);
	assert_int_equal(a->nr_nodes, 8);
	profile_add_type(c, "cpu", "nanoseconds");
	assert_int_not_equal(profile_merge(a, c, &err), 0);
	assert_non_null(strstr(err.msg, "different sample types"));
	profile_free(a);
	profile_free(b);
	profile_free(c);
}

static void test_filter_prune_scale(void **state)
{
	struct profile *p = sample_profile(), *f, *pr;
	struct error err = ERROR_INIT;

	(void)state;
	f = profile_filter(p, "^a$", NULL, &err);
	assert_non_null(f);
	assert_int_equal(profile_total(f, 0), 35);
	profile_free(f);
	f = profile_filter(p, NULL, "^d$", &err);
	assert_int_equal(profile_total(f, 0), 35);
	profile_free(f);
	assert_null(profile_filter(p, "(", NULL, &err));
	assert_non_null(strstr(err.msg, "bad focus pattern"));
	/* 15 of 105 is under 20%: b is pruned into [pruned]; totals kept. */
	pr = profile_prune(p, 0, 0.2);
	assert_int_equal(profile_total(pr, 0), 105);
	assert_true(strtab_find(&pr->strs, "[pruned]", 8) != IDHASH_NONE);
	profile_free(pr);
	profile_scale(p, 0.5);
	assert_int_equal(profile_total(p, 0), 53); /* 7.5->8, 10, 15, 20 */
	profile_free(p);
}

static void test_labels_split_samples(void **state)
{
	struct profile *p = profile_new();
	struct label l[2];
	uint32_t s1, s2, node;
	int64_t v = 1;

	(void)state;
	profile_add_type(p, "samples", "count");
	l[0] = (struct label){profile_intern_str(p, "endpoint"), profile_intern_str(p, "/a"), 0, 0};
	l[1] = (struct label){profile_intern_str(p, "thread"), profile_intern_str(p, "t1"), 0, 0};
	s1 = profile_intern_labels(p, l, 2);
	/* Same set given in another order is the same id. */
	struct label r[2] = {l[1], l[0]};
	assert_int_equal(profile_intern_labels(p, r, 2), s1);
	s2 = profile_intern_labels(p, l, 1);
	assert_int_not_equal(s1, s2);
	node = profile_child(p, 0, profile_frame_named(p, "f", 1));
	profile_add_sample(p, node, s1, &v);
	profile_add_sample(p, node, s2, &v);
	profile_add_sample(p, node, s1, &v);
	assert_int_equal(p->nr_samples, 2);
	assert_int_equal(profile_total(p, 0), 3);
	profile_free(p);
}

static void test_overflow_saturates(void **state)
{
	struct profile *p = profile_new();
	int64_t big = INT64_MAX, one = 1;
	uint32_t node;

	(void)state;
	profile_add_type(p, "samples", "count");
	node = profile_child(p, 0, profile_frame_named(p, "f", 1));
	assert_int_equal(profile_add_sample(p, node, 0, &big), 0);
	assert_false(p->saturated);
	assert_int_equal(profile_add_sample(p, node, 0, &one), ERR_LIMIT);
	assert_int_equal(profile_total(p, 0), INT64_MAX);
	assert_true(p->saturated);
	big = INT64_MIN;
	node = profile_child(p, 0, profile_frame_named(p, "g", 1));
	assert_int_equal(profile_add_sample(p, node, 0, &big), 0);
	one = -1;
	assert_int_equal(profile_add_sample(p, node, 0, &one), ERR_LIMIT);
	assert_true(profile_sample_values(p, 1)[0] == INT64_MIN);
	profile_free(p);
}

/* Totals over samples that each fit saturate instead of overflowing. */
static void test_node_totals_saturate(void **state)
{
	struct profile *p = profile_new();
	int64_t big = INT64_MAX, small = INT64_MIN, tot[4];

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "a", 1)), 0, &big);
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, &big);
	profile_node_totals(p, 0, tot, NULL);
	assert_true(tot[0] == INT64_MAX);
	profile_free(p);
	p = profile_new();
	profile_add_type(p, "samples", "count");
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "a", 1)), 0, &small);
	profile_add_sample(p, profile_child(p, 0, profile_frame_named(p, "b", 1)), 0, &small);
	profile_node_totals(p, 0, tot, NULL);
	assert_true(tot[0] == INT64_MIN);
	profile_free(p);
}

/* The capacity goal, scaled down for a unit test (bench/model-memory.py runs it in full). */
static void test_many_stacks(void **state)
{
	struct profile *p = profile_new();
	uint32_t frames[12];
	int64_t v = 1;

	(void)state;
	profile_add_type(p, "samples", "count");
	for (uint32_t i = 0; i < 64; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fn%u", i);
		profile_frame_named(p, name, strlen(name));
	}
	for (uint32_t s = 0; s < 300000; s++) {
		uint32_t stack = s % 50000;

		for (int d = 0; d < 12; d++)
			frames[d] = (stack >> (d * 2)) % 64;
		profile_add_sample(p, profile_stack(p, frames, 12), 0, &v);
	}
	assert_int_equal(profile_total(p, 0), 300000);
	assert_int_equal(p->nr_samples, 50000);
	profile_free(p);
}

/* Frames f0 .. f(n-1), known by name. */
static uint32_t *named_frames(struct profile *p, uint32_t n)
{
	uint32_t *fr = malloc(n * sizeof(*fr));

	for (uint32_t i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		fr[i] = profile_frame_named(p, name, strlen(name));
	}
	return fr;
}

/*
 * Wide nodes (the root, and one deeper) grow past the child hash's
 * threshold and through its rehashes while narrow nodes grow beside them:
 * every child is found again, under its own parent only, and the sibling
 * lists stay newest first.
 */
static void test_wide_nodes(void **state)
{
	struct profile *p = profile_new();
	uint32_t *fr = named_frames(p, 2001), *top = malloc(2000 * sizeof(*top));
	uint32_t *deep = malloc(2000 * sizeof(*deep)), a, b, nr = 0, stack[3];

	(void)state;
	profile_add_type(p, "samples", "count");
	a = profile_child(p, 0, fr[0]);
	b = profile_child(p, a, fr[1]);
	for (uint32_t i = 0; i < 2000; i++) {
		top[i] = profile_child(p, 0, fr[i]);
		deep[i] = profile_child(p, b, fr[i]);
		/* Narrow nodes: three children each under every fifth deep one. */
		for (uint32_t j = 0; j < 3 && i % 5 == 0; j++)
			assert_int_not_equal(profile_child(p, deep[i], fr[j]), 0);
	}
	assert_int_equal(top[0], a);
	assert_int_equal(p->nr_nodes, 1 + 2000 + 1 + 2000 + 400 * 3); /* b too */
	for (uint32_t i = 0; i < 2000; i++) {
		assert_int_equal(profile_find_child(p, 0, fr[i]), top[i]);
		assert_int_equal(profile_child(p, 0, fr[i]), top[i]);
		assert_int_equal(profile_find_child(p, b, fr[i]), deep[i]);
		assert_int_equal(p->nodes[deep[i]].parent, b);
		assert_int_equal(p->nodes[deep[i]].frame, fr[i]);
		assert_int_equal(profile_find_child(p, deep[i], fr[1]), i % 5 ? 0 : deep[i] + 2);
	}
	assert_int_equal(profile_find_child(p, 0, fr[2000]), 0);
	assert_int_equal(profile_find_child(p, b, fr[2000]), 0);
	assert_int_equal(p->nodes[b].first_child, deep[1999]);
	for (uint32_t c = p->nodes[b].first_child; c; c = p->nodes[c].next_sibling) {
		assert_true(!p->nodes[c].next_sibling || p->nodes[c].next_sibling < c);
		nr++;
	}
	assert_int_equal(nr, 2000);
	/* A stack through both wide nodes, then on into new nodes. */
	stack[0] = fr[0], stack[1] = fr[1], stack[2] = fr[5];
	assert_int_equal(profile_stack(p, stack, 3), deep[5]);
	stack[2] = fr[2000];
	nr = p->nr_nodes;
	assert_int_equal(profile_stack(p, stack, 3), nr);
	assert_int_equal(profile_find_child(p, b, fr[2000]), nr);
	free(fr);
	free(top);
	free(deep);
	profile_free(p);
}

/* Samples added past a small reservation, and past a second one, are all found. */
static void test_reserve_then_grow(void **state)
{
	struct profile *p = profile_new();
	struct profile_counts small = {4, 4, 4, 4, 16}, more = {0, 0, 100, 3000, 0};
	uint32_t *fr, sets[3], nodes[1000], stack[3];
	int64_t v[2];

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	assert_int_equal(profile_find_sample(p, 0, 0), IDHASH_NONE);
	profile_reserve(p, &small);
	fr = named_frames(p, 50);
	for (uint32_t i = 0; i < 3; i++) {
		struct label l = {profile_intern_str(p, "thread"), 0, 0, 0};
		char name[16];

		snprintf(name, sizeof(name), "t%u", i);
		l.str = profile_intern_str(p, name);
		sets[i] = profile_intern_labels(p, &l, 1);
	}
	for (uint32_t round = 0; round < 2; round++) {
		for (uint32_t s = 0; s < 1000; s++) {
			stack[0] = fr[s % 50], stack[1] = fr[s / 50], stack[2] = fr[s % 7];
			nodes[s] = profile_stack(p, stack, 3);
			v[0] = s, v[1] = 10 * s;
			assert_int_equal(profile_add_sample(p, nodes[s], sets[s % 3], v), 0);
			if (round == 0 && s == 500)
				profile_reserve(p, &more);
		}
	}
	assert_int_equal(p->nr_samples, 1000);
	for (uint32_t s = 0; s < 1000; s++) {
		uint32_t id = profile_find_sample(p, nodes[s], sets[s % 3]);

		assert_int_not_equal(id, IDHASH_NONE);
		assert_int_equal(profile_sample_values(p, id)[0], 2 * s);
		assert_int_equal(profile_sample_values(p, id)[1], 20 * s);
		assert_int_equal(profile_find_sample(p, nodes[s], sets[(s + 1) % 3]), IDHASH_NONE);
	}
	assert_int_equal(profile_total(p, 1), 20 * (999 * 1000 / 2));
	free(fr);
	profile_free(p);
}

static struct label str_label(struct profile *p, const char *key, const char *str)
{
	return (struct label){profile_intern_str(p, key), profile_intern_str(p, str), 0, 0};
}

/* Label sets are sorted by key, the last of a repeated key kept, whatever the count. */
static void test_label_sets_normalized(void **state)
{
	struct profile *p = profile_new();
	struct label in[40], norm[20];
	const struct label *got;
	uint32_t id, k1, k2;
	size_t n;

	(void)state;
	in[0] = str_label(p, "k1", "a");
	in[1] = str_label(p, "k2", "b");
	in[2] = str_label(p, "k1", "c");
	id = profile_intern_labels(p, in, 3);
	got = profile_labels(p, id, &n);
	k1 = profile_intern_str(p, "k1"), k2 = profile_intern_str(p, "k2");
	assert_int_equal(n, 2);
	assert_int_equal(got[0].key, k1);
	assert_string_equal(profile_str(p, got[0].str), "c");
	assert_int_equal(got[1].key, k2);
	in[0] = in[2];
	assert_int_equal(profile_find_labels(p, in, 2), id);
	in[0] = str_label(p, "k1", "a");
	assert_int_equal(profile_find_labels(p, in, 2), IDHASH_NONE);
	/* More labels than fit on the stack: each key twice, "x" then "y", keys reversed. */
	for (uint32_t i = 0; i < 20; i++) {
		char key[8];

		snprintf(key, sizeof(key), "key%02u", i);
		in[19 - i] = str_label(p, key, "x");
		in[20 + (i * 7) % 20] = str_label(p, key, "y");
		norm[i] = in[20 + (i * 7) % 20];
	}
	id = profile_intern_labels(p, in, 40);
	got = profile_labels(p, id, &n);
	assert_int_equal(n, 20);
	for (uint32_t i = 0; i < 20; i++) {
		assert_int_equal(got[i].key, norm[i].key);
		assert_string_equal(profile_str(p, got[i].str), "y");
	}
	assert_int_equal(profile_intern_labels(p, norm, 20), id);
	assert_int_equal(profile_find_labels(p, in + 20, 20), id);
	/* Numeric labels differ by value and by unit. */
	in[0] = (struct label){k1, 0, 5, profile_intern_str(p, "bytes")};
	id = profile_intern_labels(p, in, 1);
	in[0].num = 6;
	assert_int_not_equal(profile_intern_labels(p, in, 1), id);
	in[0].num = 5, in[0].unit = 0;
	assert_int_not_equal(profile_intern_labels(p, in, 1), id);
	in[0].unit = profile_intern_str(p, "bytes");
	assert_int_equal(profile_intern_labels(p, in, 1), id);
	/* A slice of a stored set makes a set of its own, while the labels grow. */
	for (int64_t i = 0; i < 200; i++) {
		struct label l[3] = {{k1, 0, i, 0}, {k2, 0, i, 0}, {in[0].unit, 0, i, 0}};
		uint32_t set = profile_intern_labels(p, l, 3), part;

		got = profile_labels(p, set, &n);
		part = profile_intern_labels(p, got + 1, 2);
		got = profile_labels(p, part, &n);
		assert_int_equal(n, 2);
		assert_int_equal(got[0].key, k2);
		assert_int_equal(got[1].num, i);
	}
	profile_free(p);
}

/* In q, the node with the stack of p's node n (frames by content), or 0. */
static uint32_t node_in(const struct profile *p, uint32_t n, const struct profile *q)
{
	uint32_t *stack = NULL, node = 0;
	size_t alloc = 0, depth = profile_node_stack(p, n, &stack, &alloc);

	for (size_t i = 0; i < depth && (i == 0 || node); i++) {
		struct frame f = p->frames[stack[i]];
		uint32_t id;

		f.name =
			strtab_find(&q->strs, profile_str(p, f.name), strtab_len(&p->strs, f.name));
		f.module = strtab_find(&q->strs, profile_str(p, f.module), 0);
		f.file = f.module;
		id = f.name == IDHASH_NONE ? IDHASH_NONE : profile_find_frame(q, &f);
		node = id == IDHASH_NONE ? 0 : profile_find_child(q, node, id);
	}
	free(stack);
	return node;
}

static uint32_t count_named(const struct profile *p, const char *name)
{
	uint32_t n = 0;

	for (uint32_t i = 1; i < p->nr_nodes; i++)
		n += !strcmp(profile_str(p, p->frames[p->nodes[i].frame].name), name);
	return n;
}

static void test_truncate_small(void **state)
{
	struct profile *p = sample_profile(), *t;
	struct error err = ERROR_INIT;
	int64_t tot[8];

	(void)state;
	/* main 105, then d 70 (not a 35), then d;d 40; a and d;d;d fold into others. */
	t = profile_truncate(p, 0, 3, &err);
	assert_non_null(t);
	assert_int_equal(t->nr_nodes, 1 + 3 + 2);
	assert_int_equal(count_named(t, "other"), 2);
	assert_int_equal(count_named(t, "a"), 0);
	assert_int_equal(profile_total(t, 0), 105);
	profile_node_totals(t, 0, tot, NULL);
	assert_int_equal(tot[node_in(p, 5, t)], 70);
	profile_free(t);
	/* Nothing kept: one other under the root holds everything. */
	t = profile_truncate(p, 0, 0, &err);
	assert_int_equal(t->nr_nodes, 2);
	assert_int_equal(profile_total(t, 0), 105);
	profile_free(t);
	/* Room for all: the same profile. */
	t = profile_truncate(p, 0, 100, &err);
	assert_true(profile_equal(p, t, NULL));
	profile_free(t);
	assert_null(profile_truncate(p, 1, 3, &err));
	assert_string_equal(err.msg, "cannot truncate by sample type 1 of 1");
	profile_free(p);
}

/* Many stacks, two types, labels: a profile to truncate. */
static struct profile *wide_profile(void)
{
	struct profile *p = profile_new();
	struct label l = {0};
	uint32_t frames[16], sets[3] = {0};

	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	l.key = profile_intern_str(p, "thread");
	l.str = profile_intern_str(p, "one");
	sets[1] = profile_intern_labels(p, &l, 1);
	l.str = profile_intern_str(p, "two");
	sets[2] = profile_intern_labels(p, &l, 1);
	for (uint32_t s = 0; s < 4000; s++) {
		uint32_t x = s * 2654435761u, depth = 3 + x % 13;
		int64_t v[2] = {1 + x % 5, (int64_t)(x % 1000) * 1000};

		for (uint32_t d = 0; d < depth; d++) {
			char name[16];

			snprintf(name, sizeof(name), "f%u", (x >> (2 * d)) % 6);
			frames[d] = profile_frame_named(p, name, strlen(name));
		}
		assert_int_equal(
			profile_add_sample(p, profile_stack(p, frames, depth), sets[s % 3], v), 0);
	}
	return p;
}

static int64_t *sort_total;

static int by_weight(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (sort_total[x] != sort_total[y])
		return sort_total[x] > sort_total[y] ? -1 : 1;
	return (x > y) - (x < y);
}

/* Totals per type and per label set kept; the n heaviest nodes kept with their totals. */
static void check_truncation(const struct profile *p, uint32_t type, uint32_t n)
{
	int64_t *total = malloc(p->nr_nodes * sizeof(int64_t)), *ttotal;
	uint32_t *order = malloc(p->nr_nodes * sizeof(uint32_t));
	struct error err = ERROR_INIT;
	struct profile *t = profile_truncate(p, type, n, &err);

	assert_non_null(t);
	for (uint32_t ty = 0; ty < p->nr_types; ty++)
		assert_true(profile_total(t, ty) == profile_total(p, ty));
	assert_true(t->nr_nodes - 1 <= n + count_named(t, "other"));
	assert_true(t->nr_nodes - 1 - count_named(t, "other") <= n);
	profile_node_totals(p, type, total, NULL);
	ttotal = malloc(t->nr_nodes * sizeof(int64_t));
	profile_node_totals(t, type, ttotal, NULL);
	for (uint32_t i = 0; i < p->nr_nodes - 1; i++)
		order[i] = i + 1;
	sort_total = total;
	qsort(order, p->nr_nodes - 1, sizeof(*order), by_weight);
	for (uint32_t i = 0; i < MIN(n, p->nr_nodes - 1); i++) {
		uint32_t m = node_in(p, order[i], t);

		assert_int_not_equal(m, 0);
		assert_true(ttotal[m] == total[order[i]]);
	}
	assert_int_equal(t->nr_labelsets, p->nr_labelsets);
	free(ttotal);
	free(total);
	free(order);
	profile_free(t);
}

static void test_truncate_keeps_totals_and_heaviest(void **state)
{
	static const uint32_t sizes[] = {0, 1, 2, 10, 100, 1000, 100000};
	struct profile *p = wide_profile();

	(void)state;
	assert_true(p->nr_nodes > 1000);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		check_truncation(p, 0, sizes[i]);
		check_truncation(p, 1, sizes[i]);
	}
	profile_free(p);
}

static void test_profile_equal(void **state)
{
	struct profile *p = sample_profile(), *q = profile_new(), *r = sample_profile();
	struct strbuf why = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	assert_true(profile_equal(p, p, NULL));
	/* A copy through merge has other ids (a merge creates nodes in sample order). */
	assert_int_equal(profile_merge(q, p, &err), 0);
	assert_true(profile_equal(p, q, NULL));
	assert_true(profile_equal(q, p, NULL));
	profile_sample_values(r, 0)[0]++;
	assert_false(profile_equal(p, r, &why));
	assert_non_null(strstr(why.buf, "has other values"));
	profile_sample_values(r, 0)[0]--;
	profile_child(r, 2, profile_frame_named(r, "x", 1));
	strbuf_reset(&why);
	assert_false(profile_equal(p, r, &why));
	assert_string_equal(why.buf, "8 nodes and 9");
	strbuf_reset(&why);
	r->time_nanos = 1;
	assert_false(profile_equal(p, r, &why));
	assert_string_equal(why.buf, "times differ");
	strbuf_release(&why);
	profile_free(p);
	profile_free(q);
	profile_free(r);
}

/* A guess is taken only when it is the very child or sample; any other is looked up. */
static void test_near_guesses(void **state)
{
	struct profile *p = profile_new();
	uint32_t a, b, ab, ba, fa, fb, id;
	int64_t one = 1, two = 2, big = INT64_MAX;
	(void)state;

	profile_add_type(p, "samples", "count");
	p->keep_order = true;
	fa = profile_frame_named(p, "a", 1);
	fb = profile_frame_named(p, "b", 1);
	a = profile_child(p, 0, fa);
	b = profile_child(p, 0, fb);
	ab = profile_child(p, a, fb);
	/* Right; the root; past the end; the same frame under another parent; another frame. */
	assert_int_equal(profile_child_near(p, a, fb, ab), ab);
	assert_int_equal(profile_child_near(p, 0, fa, 0), a);
	assert_int_equal(profile_child_near(p, 0, fa, p->nr_nodes), a);
	ba = profile_child_near(p, b, fb, ab);
	assert_int_equal(ba, p->nr_nodes - 1);
	assert_int_equal(p->nodes[ba].parent, b);
	id = profile_child_near(p, b, fa, ba);
	assert_int_equal(id, p->nr_nodes - 1);
	assert_int_not_equal(id, ba);
	assert_int_equal(profile_child_near(p, b, fb, ba), ba);
	assert_int_equal(p->nr_nodes, 6);

	id = 7;
	assert_int_equal(profile_add_sample_near(p, ab, 0, &one, &id), 0);
	assert_int_equal(id, 0);
	id = 0;
	assert_int_equal(profile_add_sample_near(p, ba, 0, &one, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(profile_add_sample_near(p, ba, 0, &two, &id), 0);
	assert_int_equal(id, 1);
	id = 1;
	assert_int_equal(profile_add_sample_near(p, ab, 0, &two, &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(p->nr_samples, 2);
	assert_int_equal(profile_sample_values(p, 0)[0], 3);
	assert_int_equal(profile_sample_values(p, 1)[0], 3);
	assert_int_equal(profile_find_sample(p, ba, 0), 1);
	/* The input order is kept as with profile_add_sample; an overflow saturates. */
	assert_int_equal(p->nr_order, 4);
	assert_int_equal(p->order[3], 0);
	assert_false(p->saturated);
	assert_int_equal(profile_add_sample_near(p, ab, 0, &big, &id), ERR_LIMIT);
	assert_true(profile_sample_values(p, 0)[0] == INT64_MAX);
	assert_true(p->saturated);
	assert_int_equal(p->nr_order, 5);
	profile_free(p);
}

/*
 * Issue 14: two profiles whose values each fit merge into one that
 * saturates (flagged), never into an error or a wrapped value; so does a
 * rescale to more decimals.
 */
static void test_merge_saturates(void **state)
{
	struct profile *a = profile_new(), *b = profile_new(), *dst = profile_new();
	struct error err = ERROR_INIT;
	int64_t big = INT64_MAX - 1, two = 2;

	(void)state;
	profile_add_type(a, "samples", "count");
	profile_add_type(b, "samples", "count");
	assert_int_equal(
		profile_add_sample(a, profile_child(a, 0, profile_frame_named(a, "f", 1)), 0, &big),
		0);
	assert_int_equal(
		profile_add_sample(b, profile_child(b, 0, profile_frame_named(b, "f", 1)), 0, &two),
		0);
	assert_int_equal(profile_merge(dst, a, &err), 0);
	assert_false(dst->saturated);
	assert_int_equal(profile_merge(dst, b, &err), 0);
	assert_true(dst->saturated);
	assert_true(profile_total(dst, 0) == INT64_MAX);
	b->types[0].decimals = 1;
	assert_int_equal(profile_merge(a, b, &err), 0);
	assert_true(a->saturated);
	assert_int_equal(a->types[0].decimals, 1);
	assert_true(profile_sample_values(a, 0)[0] == INT64_MAX);
	profile_free(a);
	profile_free(b);
	profile_free(dst);
}

/* A profile charges its budget as it grows and gives it all back when freed. */
static void test_charge(void **state)
{
	struct budget b = {.limit = 1 << 20};
	struct profile *p = profile_new();
	int64_t one = 1;
	uint32_t node = 0;

	(void)state;
	p->budget = &b;
	profile_add_type(p, "samples", "count");
	assert_int_equal(profile_charge(p), 0);
	for (int i = 0; i < 1000; i++)
		node = profile_child(p, node, profile_frame_named(p, "f", 1));
	assert_int_equal(profile_add_sample(p, node, 0, &one), 0);
	assert_int_equal(profile_charge(p), 0);
	assert_true(atomic_load(&b.used) == p->charged && p->charged > 1000 * 16);
	b.limit = p->charged + 10;
	for (int i = 0; i < 100; i++)
		node = profile_child(p, node, profile_frame_named(p, "f", 1));
	assert_int_equal(profile_charge(p), ERR_LIMIT);
	profile_free(p);
	assert_int_equal(atomic_load(&b.used), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_saturates),
		cmocka_unit_test(test_charge),
		cmocka_unit_test(test_tree_and_totals),
		cmocka_unit_test(test_functions_self_total),
		cmocka_unit_test(test_counts_where),
		cmocka_unit_test(test_merge_and_types),
		cmocka_unit_test(test_filter_prune_scale),
		cmocka_unit_test(test_labels_split_samples),
		cmocka_unit_test(test_overflow_saturates),
		cmocka_unit_test(test_node_totals_saturate),
		cmocka_unit_test(test_many_stacks),
		cmocka_unit_test(test_wide_nodes),
		cmocka_unit_test(test_reserve_then_grow),
		cmocka_unit_test(test_label_sets_normalized),
		cmocka_unit_test(test_truncate_small),
		cmocka_unit_test(test_truncate_keeps_totals_and_heaviest),
		cmocka_unit_test(test_profile_equal),
		cmocka_unit_test(test_near_guesses),
	};

	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
