/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "util/common.h"
#include "server/flamebearer.h"
#include "profile/profile_testutil.h"

/* Add a "a;b;c" stack with value v of its one type. */
static void add(struct profile *p, const char *stack, int64_t v)
{
	assert_int_equal(profile_add_sample(p, testutil_stack(p, stack), 0, &v), 0);
}

/* Add each "stack value" line of text, as add() does. */
static void add_lines(struct profile *p, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n'), *sp = memrchr(text, ' ', (size_t)(nl - text));
		char stack[256];

		assert_non_null(sp);
		assert_true((size_t)(sp - text) < sizeof(stack));
		memcpy(stack, text, (size_t)(sp - text));
		stack[sp - text] = '\0';
		add(p, stack, strtoll(sp + 1, NULL, 10));
		text = nl + 1;
	}
}

static struct profile *new_profile(const char *type, const char *unit)
{
	struct profile *p = profile_new();

	profile_add_type(p, type, unit);
	return p;
}

/* The reply for p (type 0) with o, or NULL with err set. */
static char *render(const struct profile *p, const struct fb_options *o, struct error *err)
{
	struct strbuf sb = STRBUF_INIT;

	if (flamebearer_write(p, o, &sb, err)) {
		assert_int_equal(sb.len, 0);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static char *render_diff(const struct profile *l, const struct profile *r,
			 const struct fb_options *o, struct error *err)
{
	struct strbuf sb = STRBUF_INIT;

	if (flamebearer_write_diff(l, r, o, &sb, err)) {
		assert_int_equal(sb.len, 0);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

#define TAIL_SINGLE(rate, units, name)                                                       \
	"},\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":" rate        \
	",\"units\":\"" units "\",\"name\":\"" name "\"},\"timeline\":null,\"groups\":null," \
	"\"heatmap\":null}\n"

static void expect(const struct profile *p, const struct fb_options *o, const char *want)
{
	struct error err = ERROR_INIT;
	char *got = render(p, o, &err);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* The tree of Pyroscope's own test (a;b 1, a;c 2): the same names and levels. */
static void test_pyroscope_example(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct fb_options o = {0};

	(void)state;
	add(p, "a;b", 1);
	add(p, "a;c", 2);
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"a\",\"c\",\"b\"],"
	       "\"levels\":[[0,3,0,0],[0,3,0,1],[0,1,1,3,0,2,2,2]],\"numTicks\":3,\"maxSelf\":"
	       "2" TAIL_SINGLE("100", "samples", "samples"));
	o.sample_rate = 99;
	o.name = "app.cpu";
	o.spy_name = "plateau";
	o.units = "objects";
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"a\",\"c\",\"b\"],"
	       "\"levels\":[[0,3,0,0],[0,3,0,1],[0,1,1,3,0,2,2,2]],\"numTicks\":3,\"maxSelf\":2},"
	       "\"metadata\":{\"format\":\"single\",\"spyName\":\"plateau\",\"sampleRate\":99,"
	       "\"units\":\"objects\",\"name\":\"app.cpu\"},\"timeline\":null,\"groups\":null,"
	       "\"heatmap\":null}\n");
	profile_free(p);
}

/* A node's self value comes before its children; a second root sits after the first. */
static void test_self_and_roots(void **state)
{
	struct profile *p = new_profile("cpu", "nanoseconds");
	struct fb_options o = {0};

	(void)state;
	add_lines(p, "main 5\n"
		     "main;y 2\n"
		     "z 1\n"
		     "main;x 3\n");
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"z\",\"main\",\"y\",\"x\"],"
	       "\"levels\":[[0,11,0,0],[0,10,5,2,0,1,1,1],[5,3,3,4,0,2,2,3]],"
	       "\"numTicks\":11,\"maxSelf\":5" TAIL_SINGLE("1000000000", "samples", "cpu"));
	profile_free(p);
}

/* Frames of one name in different modules are one node, as in Pyroscope's trees. */
static void test_merged_by_name(void **state)
{
	struct profile *p = new_profile("alloc_space", "bytes");
	struct frame f = {0};
	uint32_t a, b;
	int64_t v = 1;

	(void)state;
	f.name = profile_intern_str(p, "f");
	f.module = profile_intern_str(p, "a.so");
	a = profile_child(p, 0, profile_intern_frame(p, &f));
	f.module = profile_intern_str(p, "b.so");
	b = profile_child(p, 0, profile_intern_frame(p, &f));
	assert_int_not_equal(a, b);
	assert_int_equal(profile_add_sample(p, a, 0, &v), 0);
	v = 2;
	assert_int_equal(profile_add_sample(p, b, 0, &v), 0);
	expect(p, &(struct fb_options){0},
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"f\"],"
	       "\"levels\":[[0,3,0,0],[0,3,3,1]],\"numTicks\":3,\"maxSelf\":3" TAIL_SINGLE(
		       "100", "bytes", "alloc_space"));
	profile_free(p);
}

/* Decimals: each node's self rounded, totals summed from them, zero nodes left out. */
static void test_decimals_rounded(void **state)
{
	struct profile *p = new_profile("samples", "count");

	(void)state;
	assert_int_equal(profile_set_decimals(p, 0, 1), 0);
	add(p, "a", 15);  /* 1.5 -> 2 */
	add(p, "a;b", 4); /* 0.4 -> 0 */
	add(p, "c", 6);	  /* 0.6 -> 1 */
	expect(p, &(struct fb_options){0},
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"c\",\"a\"],"
	       "\"levels\":[[0,3,0,0],[0,2,2,2,0,1,1,1]],\"numTicks\":3,\"maxSelf\":2" TAIL_SINGLE(
		       "100", "samples", "samples"));
	profile_free(p);
}

static void test_names_escaped(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct error err = ERROR_INIT;
	uint32_t node = profile_child(p, 0, profile_frame_named(p, "a\"<b>\\\n\xff", 8));
	int64_t v = 1;
	char *got;

	(void)state;
	assert_int_equal(profile_add_sample(p, node, 0, &v), 0);
	got = render(p, &(struct fb_options){0}, &err);
	assert_non_null(got);
	assert_non_null(
		strstr(got, "\"names\":[\"total\",\"a\\\"\\u003cb\\u003e\\\\\\n\\ufffd\"]"));
	free(got);
	profile_free(p);
}

static void test_empty_profile(void **state)
{
	struct profile *p = new_profile("inuse_objects", "count");

	(void)state;
	expect(p, &(struct fb_options){0},
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\"],\"levels\":[[0,0,0,0]],"
	       "\"numTicks\":0,\"maxSelf\":0" TAIL_SINGLE("100", "objects", "inuse_objects"));
	profile_free(p);
}

static void test_timeline(void **state)
{
	struct profile *p = new_profile("samples", "count");
	const int64_t values[] = {954, 0, 7};
	struct fb_timeline tl = {1677178490, 10, values, 3};
	struct fb_options o = {.timeline = &tl};
	struct error err = ERROR_INIT;
	char *got;

	(void)state;
	add(p, "a", 1);
	got = render(p, &o, &err);
	assert_non_null(strstr(got, ",\"timeline\":{\"startTime\":1677178490,\"samples\":[954,0,7],"
				    "\"durationDelta\":10,\"watermarks\":null},\"groups\":null,"));
	free(got);
	tl.n = 0;
	got = render(p, &o, &err);
	assert_non_null(strstr(got, "\"samples\":[],"));
	free(got);
	tl.values = (const int64_t[]){-1};
	tl.n = 1;
	assert_null(render(p, &o, &err));
	assert_string_equal(err.msg, "flamebearer: negative timeline value");
	err = (struct error)ERROR_INIT;
	tl.step_s = 0;
	assert_null(render(p, &o, &err));
	assert_int_equal(err.code, ERR_USAGE);
	assert_string_equal(err.msg, "flamebearer: timeline step 0 below 1 s");
	profile_free(p);
}

static void test_errors(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct error err = ERROR_INIT;
	struct fb_options o = {.type = 1};

	(void)state;
	add(p, "a", 1);
	assert_null(render(p, &o, &err));
	assert_string_equal(err.msg, "flamebearer: no sample type 1");
	err = (struct error)ERROR_INIT;
	o.type = 0;
	o.sample_rate = -1;
	assert_null(render(p, &o, &err));
	assert_string_equal(err.msg, "flamebearer: sample rate -1 out of range");
	err = (struct error)ERROR_INIT;
	o.sample_rate = 0;
	add(p, "b", -5);
	assert_null(render(p, &o, &err));
	assert_int_equal(err.code, ERR_FORMAT);
	assert_string_equal(err.msg, "flamebearer: negative samples value");
	profile_free(p);
}

/*
 * Decode a reply's levels and check the tree they draw: every node lies
 * inside one node of the level above, after its self value, without
 * overlapping its siblings, and each total is its self plus its
 * children's totals.  Returns numTicks; *nodes gets the node count.
 */
static int64_t check_levels(const char *json, size_t side, size_t width, size_t *nodes)
{
	cJSON *root = cJSON_Parse(json), *fb = cJSON_GetObjectItem(root, "flamebearer");
	cJSON *levels = cJSON_GetObjectItem(fb, "levels"), *level;
	int64_t ticks = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(fb, "numTicks"));
	int64_t *prev = NULL, *cur = NULL;
	size_t nprev = 0, ncur = 0;

	assert_non_null(levels);
	*nodes = 0;
	cJSON_ArrayForEach(level, levels)
	{
		int64_t x = 0, *g;
		size_t n = (size_t)cJSON_GetArraySize(level);

		assert_int_equal(n % width, 0);
		cur = calloc(n + 1, sizeof(*cur));
		for (size_t i = 0; i < n; i++)
			cur[i] = (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(level, (int)i));
		ncur = n;
		for (size_t i = 0; i < n; i += width) {
			g = cur + i + side * 3;
			g[0] += x; /* delta decoding */
			x = g[0] + g[1];
			assert_true(g[2] <= g[1]);
		}
		/* Each parent: self + the children inside it = its total. */
		for (size_t i = 0; i < nprev; i += width) {
			int64_t *pg = prev + i + side * 3, sum = pg[2], end = pg[0] + pg[2];

			for (size_t j = 0; j < ncur; j += width) {
				g = cur + j + side * 3;
				if (g[0] >= pg[0] && g[0] < pg[0] + pg[1] && g[1]) {
					assert_true(g[0] >= end);
					end = g[0] + g[1];
					sum += g[1];
				}
			}
			assert_true(end <= pg[0] + pg[1]);
			assert_int_equal(sum, pg[1]);
		}
		*nodes += n / width;
		free(prev);
		prev = cur;
		nprev = ncur;
	}
	free(prev);
	cJSON_Delete(root);
	return ticks;
}

/* A root with n children f00..f(n-1), child i holding i+1, some with a child below. */
static struct profile *wide_profile(int n)
{
	struct profile *p = new_profile("samples", "count");
	char stack[32];

	for (int i = 0; i < n; i++) {
		snprintf(stack, sizeof(stack), "main;f%02d", i);
		add(p, stack, i + 1);
		snprintf(stack, sizeof(stack), "main;f%02d;g", i);
		add(p, stack, i % 3);
	}
	return p;
}

static void test_max_nodes_folds(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct fb_options o = {.max_nodes = 3};

	(void)state;
	add_lines(p, "main;f1 10\n"
		     "main;f2 8\n"
		     "main;f3 6\n"
		     "main;f4 4\n"
		     "main;f5;deep 2\n");
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"other\",\"f2\","
	       "\"f1\"],\"levels\":[[0,30,0,0],[0,30,0,1],[0,10,10,4,0,8,8,3,0,12,12,2]],"
	       "\"numTicks\":30,\"maxSelf\":12" TAIL_SINGLE("100", "samples", "samples"));
	/* Enough room: nothing folded. */
	o.max_nodes = 7;
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"f5\",\"deep\","
	       "\"f4\",\"f3\",\"f2\",\"f1\"],\"levels\":[[0,30,0,0],[0,30,0,1],"
	       "[0,10,10,7,0,8,8,6,0,6,6,5,0,4,4,4,0,2,0,2],[28,2,2,3]],"
	       "\"numTicks\":30,\"maxSelf\":10" TAIL_SINGLE("100", "samples", "samples"));
	profile_free(p);
}

/* A real "other" frame takes what is folded beside it, whether kept or dropped. */
static void test_max_nodes_real_other(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct fb_options o = {.max_nodes = 3};

	(void)state;
	add_lines(p, "main;other 9\n"
		     "main;a 11\n"
		     "main;b 1\n"
		     "main;c 2\n");
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"other\",\"a\"],"
	       "\"levels\":[[0,23,0,0],[0,23,0,1],[0,11,11,3,0,12,12,2]],"
	       "\"numTicks\":23,\"maxSelf\":12" TAIL_SINGLE("100", "samples", "samples"));
	/* "other" dropped too (max 2): one leaf holds b, c and itself. */
	o.max_nodes = 2;
	add(p, "main;other;x", 1);
	expect(p, &o,
	       "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"other\",\"a\"],"
	       "\"levels\":[[0,24,0,0],[0,24,0,1],[0,11,11,3,0,13,13,2]],"
	       "\"numTicks\":24,\"maxSelf\":13" TAIL_SINGLE("100", "samples", "samples"));
	profile_free(p);
}

/* Folding keeps numTicks and every total, at any max_nodes. */
static void test_max_nodes_keeps_totals(void **state)
{
	struct profile *p = wide_profile(40);
	struct error err = ERROR_INIT;
	size_t all = 0, nodes;

	(void)state;
	for (size_t max = 0; max <= 90; max += max < 10 ? 1 : 7) {
		struct fb_options o = {.max_nodes = max};
		char *got = render(p, &o, &err);

		assert_non_null(got);
		assert_int_equal(check_levels(got, 0, 4, &nodes), 820 + 39);
		if (!max)
			all = nodes;
		else
			assert_true(nodes <= all && nodes <= 2 * max + 2); /* root, others */
		free(got);
	}
	profile_free(p);
}

static void test_diff(void **state)
{
	struct profile *l = new_profile("cpu", "nanoseconds"), *r = profile_new();
	struct fb_options o = {0};
	struct error err = ERROR_INIT;
	char *got;

	(void)state;
	profile_add_type(r, "samples", "count");
	profile_add_type(r, "cpu", "nanoseconds");
	add(l, "a;b", 1);
	add(l, "a;c", 2);
	/* Right's type is its second: cpu is matched by name. */
	assert_int_equal(profile_add_sample(r, testutil_stack(r, "a;b"), 0, (int64_t[]){1, 3}), 0);
	assert_int_equal(profile_add_sample(r, testutil_stack(r, "a;d"), 0, (int64_t[]){1, 1}), 0);
	got = render_diff(l, r, &o, &err);
	assert_non_null(got);
	assert_string_equal(
		got,
		"{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"a\",\"d\",\"c\",\"b\"],"
		"\"levels\":[[0,3,0,0,4,0,0],[0,3,0,0,4,0,1],"
		"[0,1,1,0,3,3,4,0,2,2,0,0,0,3,0,0,0,0,1,1,2]],\"numTicks\":7,\"maxSelf\":3},"
		"\"metadata\":{\"format\":\"double\",\"spyName\":\"\",\"sampleRate\":1000000000,"
		"\"units\":\"samples\",\"name\":\"cpu\"},\"timeline\":null,\"groups\":null,"
		"\"heatmap\":null,\"leftTicks\":3,\"rightTicks\":4}\n");
	free(got);
	assert_int_equal(check_levels(got = render_diff(l, r, &o, &err), 1, 7, &(size_t){0}), 7);
	free(got);
	profile_free(l);
	profile_free(r);
}

/* A profile of cpu in nanoseconds: stack st[i] holds v[i]. */
static struct profile *stacks(const char *const *st, const int64_t *v, size_t n)
{
	struct profile *p = new_profile("cpu", "nanoseconds");

	for (size_t i = 0; i < n; i++)
		add(p, st[i], v[i]);
	return p;
}

/* The trees of Pyroscope's diff tests (pkg/model): the same names and levels. */
static void test_diff_pyroscope_examples(void **state)
{
	static const char *const st[] = {"a;b", "a;c", "a;e", "a;d"};
	static const int64_t lv[] = {1, 2, 3}, rv[] = {4, 0, 12, 8};
	struct profile *l = stacks(st, lv, 2), *r = stacks(st, (const int64_t[]){4, 8}, 2);
	struct error err = ERROR_INIT;
	char *got;

	(void)state;
	got = render_diff(l, r, &(struct fb_options){0}, &err);
	assert_non_null(strstr(got, "{\"names\":[\"total\",\"a\",\"c\",\"b\"],\"levels\":[[0,3,0,0,"
				    "12,0,0],[0,3,0,0,12,0,1],[0,1,1,0,4,4,3,0,2,2,0,8,8,2]],"
				    "\"numTicks\":15,\"maxSelf\":8}"));
	free(got);
	profile_free(l);
	profile_free(r);
	l = stacks(st, lv, 3);
	r = stacks(st, rv, 4);
	got = render_diff(l, r, &(struct fb_options){0}, &err);
	assert_non_null(strstr(got, "{\"names\":[\"total\",\"a\",\"e\",\"d\",\"c\",\"b\"],"
				    "\"levels\":[[0,6,0,0,24,0,0],[0,6,0,0,24,0,1],"
				    "[0,1,1,0,4,4,5,0,2,2,0,0,0,4,0,0,0,0,8,8,3,0,3,3,0,12,12,2]],"
				    "\"numTicks\":30,\"maxSelf\":12}"));
	free(got);
	profile_free(l);
	profile_free(r);
}

static void test_diff_max_nodes(void **state)
{
	struct profile *l = wide_profile(20), *r = wide_profile(30);
	struct error err = ERROR_INIT;
	struct fb_options o = {.max_nodes = 5};
	size_t nodes;
	char *got = render_diff(l, r, &o, &err);

	(void)state;
	assert_non_null(got);
	assert_non_null(strstr(got, "\"leftTicks\":229,\"rightTicks\":495}"));
	for (size_t side = 0; side < 2; side++)
		check_levels(got, side, 7, &nodes);
	assert_true(nodes <= 1 + 5 + 6); /* root, kept, others */
	free(got);
	profile_free(l);
	profile_free(r);
}

static void test_diff_errors(void **state)
{
	struct profile *l = new_profile("cpu", "nanoseconds"),
		       *r = new_profile("wall", "nanoseconds");
	struct error err = ERROR_INIT;

	(void)state;
	assert_null(render_diff(l, r, &(struct fb_options){0}, &err));
	assert_int_equal(err.code, ERR_USAGE);
	assert_string_equal(err.msg, "flamebearer: right profile has no sample type cpu");
	profile_free(r);
	r = new_profile("cpu", "count");
	err = (struct error)ERROR_INIT;
	assert_null(render_diff(l, r, &(struct fb_options){0}, &err));
	assert_string_equal(err.msg,
			    "flamebearer: cannot compare cpu in nanoseconds with cpu in count");
	err = (struct error)ERROR_INIT;
	assert_null(render_diff(l, r, &(struct fb_options){.type = 3}, &err));
	assert_string_equal(err.msg, "flamebearer: no sample type 3");
	profile_free(l);
	profile_free(r);
}

/*
 * Issue 14: totals past 64 bits are no error (a stored window must stay
 * readable): every value is divided to fit, proportions kept, and the
 * metadata says so.
 */
static void test_totals_past_64_bits(void **state)
{
	struct fb_options o = {0};
	struct error err = ERROR_INIT;
	struct frame f = {0};
	struct profile *p, *l, *r;
	uint32_t node;
	char *got;

	(void)state;
	p = new_profile("samples", "count");
	add(p, "a", INT64_MAX / 2 + 1);
	add(p, "b", INT64_MAX / 2 + 1);
	got = render(p, &o, &err);
	assert_non_null(got);
	assert_non_null(strstr(got, "\"saturated\":true,\"divisor\":4}"));
	assert_true(check_levels(got, 0, 4, &(size_t){0}) == INT64_C(1) << 61);
	assert_non_null(strstr(got, "\"levels\":[[0,2305843009213693952,0,0],"
				    "[0,1152921504606846976,1152921504606846976,2,"
				    "0,1152921504606846976,1152921504606846976,1]]"));
	free(got);
	profile_free(p);

	/* Two frames of one name: merged, their sum saturates, then is divided. */
	p = new_profile("samples", "count");
	add(p, "a", INT64_MAX / 2 + 1);
	f.name = profile_intern_str(p, "a");
	f.module = profile_intern_str(p, "m.so");
	node = profile_child(p, 0, profile_intern_frame(p, &f));
	assert_int_equal(profile_add_sample(p, node, 0, &(int64_t){INT64_MAX / 2 + 1}), 0);
	got = render(p, &o, &err);
	assert_non_null(got);
	assert_non_null(strstr(got, "\"saturated\":true,\"divisor\":4}"));
	assert_non_null(strstr(got, "\"levels\":[[0,2305843009213693951,0,0],"
				    "[0,2305843009213693951,2305843009213693951,1]]"));
	free(got);
	profile_free(p);

	/* Each side fits, their sum (numTicks) does not. */
	l = new_profile("cpu", "nanoseconds");
	r = new_profile("cpu", "nanoseconds");
	add(l, "a", INT64_MAX / 2 + 1);
	add(r, "a", INT64_MAX / 2 + 1);
	got = render_diff(l, r, &o, &err);
	assert_non_null(got);
	assert_non_null(strstr(got, "\"saturated\":true,\"divisor\":4}"));
	assert_non_null(strstr(got, "\"leftTicks\":1152921504606846976,"
				    "\"rightTicks\":1152921504606846976"));
	free(got);
	profile_free(l);
	profile_free(r);
}

static void test_units(void **state)
{
	static const struct {
		const char *type, *unit, *units;
		int64_t ticks;
	} cases[] = {
		{"cpu", "nanoseconds", "samples", 1000000000},
		{"wall", "microseconds", "samples", 1000000},
		{"offcpu", "nanoseconds", "samples", 1000000000},
		{"samples", "count", "samples", 0},
		{"alloc_objects", "count", "objects", 0},
		{"inuse_objects", "count", "objects", 0},
		{"alloc_space", "bytes", "bytes", 0},
		{"inuse_space", "bytes", "bytes", 0},
		{"contentions", "count", "lock_samples", 0},
		{"delay", "nanoseconds", "lock_nanoseconds", 1000000000},
		{"goroutine", "count", "goroutines", 0},
		{"exception", "count", "exceptions", 0},
		{"region_time", "milliseconds", "samples", 1000},
		{"things", "count", "objects", 0},
		{"things", "", "objects", 0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t ticks = -1;

		assert_string_equal(flamebearer_units(cases[i].type, cases[i].unit, &ticks),
				    cases[i].units);
		assert_int_equal(ticks, cases[i].ticks);
	}
}

/* The sample rate of count-valued samples comes from the period when not given. */
static void test_rate_from_period(void **state)
{
	struct profile *p = new_profile("samples", "count");
	struct error err = ERROR_INIT;
	char *got;

	(void)state;
	p->period_type.type = profile_intern_str(p, "cpu");
	p->period_type.unit = profile_intern_str(p, "nanoseconds");
	p->period = 10101010; /* 99 Hz */
	add(p, "a", 1);
	got = render(p, &(struct fb_options){0}, &err);
	assert_non_null(strstr(got, "\"sampleRate\":99,"));
	free(got);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pyroscope_example),
		cmocka_unit_test(test_self_and_roots),
		cmocka_unit_test(test_merged_by_name),
		cmocka_unit_test(test_decimals_rounded),
		cmocka_unit_test(test_names_escaped),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_max_nodes_folds),
		cmocka_unit_test(test_max_nodes_real_other),
		cmocka_unit_test(test_max_nodes_keeps_totals),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_diff_pyroscope_examples),
		cmocka_unit_test(test_diff_max_nodes),
		cmocka_unit_test(test_diff_errors),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_totals_past_64_bits),
		cmocka_unit_test(test_rate_from_period),
	};

	return cmocka_run_group_tests_name("flamebearer", tests, NULL, NULL);
}
