/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/diff.h"
#include "format/format.h"
#include "render/flamegraph_int.h"

static struct profile *folded(const char *text, bool keep_order)
{
	struct read_options ro = {.keep_order = keep_order};
	struct error err = ERROR_INIT;
	struct profile *p = NULL;
	struct input in;

	assert_int_equal(input_from_buf(&in, "t.folded", text, strlen(text), 1 << 20, &err), 0);
	if (folded_read(&in, &ro, &p, &err))
		fail_msg("%s", err.msg);
	input_close(&in);
	return p;
}

static char *svg(const struct profile *p, const struct flame_options *o)
{
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (flamegraph_svg_write(p, o, f, &err))
		fail_msg("%s", err.msg);
	fclose(f);
	return buf;
}

/* The frame of the layout named name (the nth of that name), or NULL. */
static const struct flame_frame *find(const struct flame_layout *l, const char *name, int nth)
{
	for (size_t i = 1; i < l->nr; i++) {
		const struct profile *p = l->p;
		uint32_t id = p->frames[p->nodes[l->frames[i].node].frame].name;

		if (!strcmp(profile_str(p, id), name) && nth-- == 0)
			return &l->frames[i];
	}
	return NULL;
}

static void layout(struct flame_layout *l, const struct profile *p, const struct flame_options *o)
{
	struct error err = ERROR_INIT;

	if (flame_layout_build(l, p, o, &err))
		fail_msg("%s", err.msg);
}

/* The value of attribute attr of the first element after needle, as a number. */
static double attr_after(const char *doc, const char *needle, const char *attr)
{
	const char *s = strstr(doc, needle);
	char key[64];

	assert_non_null(s);
	snprintf(key, sizeof(key), " %s=\"", attr);
	s = strstr(s, key);
	assert_non_null(s);
	return strtod(s + strlen(key), NULL);
}

static void test_widths_proportional(void **state)
{
	struct profile *p = folded("a;b 30\na;c 10\n", false);
	struct flame_options o;
	struct flame_layout l;
	const struct flame_frame *a, *b, *c;
	char *doc;

	(void)state;
	flame_options_init(&o);
	layout(&l, p, &o);
	assert_int_equal(l.frames[0].value, 40);
	a = find(&l, "a", 0);
	b = find(&l, "b", 0);
	c = find(&l, "c", 0);
	assert_non_null(a);
	assert_int_equal(a->value, 40);
	assert_int_equal(b->start, 0);
	assert_int_equal(b->value, 30);
	assert_int_equal(c->start, 30);
	assert_int_equal(c->value, 10);
	assert_int_equal(b->depth, 2);
	assert_int_equal(l.max_depth, 2);
	flame_layout_release(&l);
	doc = svg(p, &o);
	/* 1180 px for 40 samples: 885 and 295 px. */
	assert_float_equal(attr_after(doc, "<title>b (30 samples, 75.00%)", "width"), 885.0, 1e-9);
	assert_float_equal(attr_after(doc, "<title>c (10 samples, 25.00%)", "x"), 895.0, 1e-9);
	assert_float_equal(attr_after(doc, "<title>c (10 samples, 25.00%)", "width"), 295.0, 1e-9);
	assert_non_null(strstr(doc, "<title>all (40 samples, 100%)"));
	free(doc);
	profile_free(p);
}

static void test_self_left_and_merge_by_name(void **state)
{
	struct profile *p = folded("a 5\na;b 3\n", false);
	struct flame_options o;
	struct flame_layout l;
	uint32_t f1, f2, n1, n2, x;
	struct frame fr = {0};
	int64_t v = 4;

	(void)state;
	flame_options_init(&o);
	layout(&l, p, &o);
	assert_int_equal(find(&l, "b", 0)->start, 5);
	flame_layout_release(&l);
	profile_free(p);

	/* Two frames named "f" (different modules) under one parent draw as one. */
	p = profile_new();
	profile_add_type(p, "samples", "count");
	fr.name = profile_intern_str(p, "f");
	fr.module = profile_intern_str(p, "liba.so");
	f1 = profile_intern_frame(p, &fr);
	fr.module = profile_intern_str(p, "libb.so");
	f2 = profile_intern_frame(p, &fr);
	x = profile_frame_named(p, "x", 1);
	n1 = profile_child(p, profile_child(p, 0, f1), x);
	n2 = profile_child(p, profile_child(p, 0, f2), x);
	profile_add_sample(p, n1, 0, &v);
	profile_add_sample(p, n2, 0, &v);
	layout(&l, p, &o);
	assert_int_equal(l.nr, 3); /* all, f, x */
	assert_int_equal(find(&l, "f", 0)->value, 8);
	assert_int_equal(find(&l, "x", 0)->value, 8);
	assert_null(find(&l, "f", 1));
	flame_layout_release(&l);
	profile_free(p);
}

static void test_sibling_order_like_sorted_lines(void **state)
{
	/* foo has only children: "foo;" sorts after "foo::bar", as in sort(1). */
	struct profile *p = folded("x;foo;z 1\nx;foo::bar 1\nx;fo 1\n", false);
	struct flame_options o;
	struct flame_layout l;

	(void)state;
	flame_options_init(&o);
	layout(&l, p, &o);
	assert_int_equal(find(&l, "fo", 0)->start, 0);
	assert_int_equal(find(&l, "foo::bar", 0)->start, 1);
	assert_int_equal(find(&l, "foo", 0)->start, 2);
	flame_layout_release(&l);
	profile_free(p);
}

static void test_minwidth_omits(void **state)
{
	struct profile *p = folded("a;big 10000\na;tiny 2\na;tiny;deeper 1\n", false);
	struct flame_options o;
	struct flame_layout l;

	(void)state;
	flame_options_init(&o);
	layout(&l, p, &o); /* 3 of 10003 samples are 0.35 px: kept */
	assert_non_null(find(&l, "tiny", 0));
	assert_non_null(find(&l, "deeper", 0));
	flame_layout_release(&l);
	o.minwidth = 1;
	layout(&l, p, &o);
	assert_null(find(&l, "tiny", 0));
	assert_null(find(&l, "deeper", 0));
	assert_int_equal(find(&l, "a", 0)->value, 10003); /* still counted in a */
	assert_int_equal(l.max_depth, 2);
	flame_layout_release(&l);
	o.minwidth = 50;
	o.minwidth_pct = true;
	layout(&l, p, &o);
	assert_int_equal(l.nr, 3); /* all, a, big */
	flame_layout_release(&l);
	profile_free(p);
}

static void test_inverted_y(void **state)
{
	struct profile *p = folded("a;b 1\n", false);
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	/* Height: 3 rows of 16 + 36 top + 34 bottom + 18 footer = 136. */
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "height=\"136\""));
	assert_float_equal(attr_after(doc, "<title>all", "y"), 136 - 18 - 34 - 16 + 1, 1e-9);
	assert_float_equal(attr_after(doc, "<title>b (", "y"), 136 - 18 - 34 - 48 + 1, 1e-9);
	assert_non_null(strstr(doc, ">Flame Graph</text>"));
	free(doc);
	o.inverted = true;
	doc = svg(p, &o);
	assert_float_equal(attr_after(doc, "<title>all", "y"), 36, 1e-9);
	assert_float_equal(attr_after(doc, "<title>b (", "y"), 36 + 32, 1e-9);
	assert_non_null(strstr(doc, ">Icicle Graph</text>"));
	assert_non_null(strstr(doc, "fg:inverted=\"1\""));
	free(doc);
	o.subtitle = "sub";
	doc = svg(p, &o);
	assert_float_equal(attr_after(doc, "<title>all", "y"), 36 + 24, 1e-9);
	free(doc);
	profile_free(p);
}

static void test_flamechart_order(void **state)
{
	struct profile *p = folded("m;b 1\nm;a 2\nm;b 1\nm;b 1\n", true);
	struct flame_options o;
	struct flame_layout l;

	(void)state;
	flame_options_init(&o);
	o.flamechart = true;
	layout(&l, p, &o);
	assert_int_equal(find(&l, "b", 0)->start, 0);
	assert_int_equal(find(&l, "b", 0)->value, 1);
	assert_int_equal(find(&l, "a", 0)->start, 1);
	assert_int_equal(find(&l, "a", 0)->value, 2);
	assert_int_equal(find(&l, "b", 1)->start, 3);
	assert_int_equal(find(&l, "b", 1)->value, 2); /* consecutive samples merge */
	assert_int_equal(find(&l, "m", 0)->value, 5);
	assert_null(find(&l, "m", 1));
	flame_layout_release(&l);
	/* Merged mode: alphabetical, one b. */
	o.flamechart = false;
	layout(&l, p, &o);
	assert_int_equal(find(&l, "a", 0)->start, 0);
	assert_int_equal(find(&l, "b", 0)->value, 3);
	assert_null(find(&l, "b", 1));
	flame_layout_release(&l);
	/* Reversed flame chart keeps the input order. */
	o.flamechart = o.reverse = true;
	layout(&l, p, &o);
	assert_int_equal(find(&l, "b", 0)->depth, 1);
	assert_int_equal(find(&l, "m", 0)->depth, 2);
	assert_int_equal(find(&l, "a", 0)->start, 1);
	flame_layout_release(&l);
	profile_free(p);
}

static void test_reverse(void **state)
{
	struct profile *p = folded("a;b;c 2\nx;c 1\n", false);
	struct flame_options o;
	struct flame_layout l;

	(void)state;
	flame_options_init(&o);
	o.reverse = true;
	layout(&l, p, &o);
	assert_int_equal(find(&l, "c", 0)->depth, 1);
	assert_int_equal(find(&l, "c", 0)->value, 3);
	assert_int_equal(find(&l, "b", 0)->depth, 2);
	assert_int_equal(find(&l, "a", 0)->depth, 3);
	assert_int_equal(find(&l, "x", 0)->depth, 2);
	flame_layout_release(&l);
	profile_free(p);
}

static void test_diff_colours(void **state)
{
	struct profile *p = folded("a;b 10 20\na;c 10 5\na;d 3 3\n", false);
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	doc = svg(p, &o);
	/* Widths are the new column's; colours scale by the largest |delta| (10). */
	assert_non_null(strstr(doc, "<title>b (20 samples, 71.43%; +35.71%)"));
	assert_non_null(strstr(doc, "fill=\"rgb(255,0,0)\""));
	assert_non_null(strstr(strstr(doc, "<title>c ("), "fill=\"rgb(105,105,255)\""));
	assert_non_null(strstr(strstr(doc, "<title>d ("), "fill=\"rgb(255,255,255)\""));
	assert_non_null(strstr(doc, "base 43.48% -> new 71.43% (+27.95 pp)"));
	free(doc);
	o.negate = true;
	doc = svg(p, &o);
	assert_non_null(strstr(strstr(doc, "<title>b ("), "fill=\"rgb(0,0,255)\""));
	assert_non_null(strstr(doc, "<title>b (20 samples, 71.43%; -35.71%)"));
	free(doc);
	profile_free(p);
}

static struct profile *diff_of(const char *base, const char *new)
{
	struct profile *b = folded(base, false), *n = folded(new, false), *d;
	struct diff_options dopt = {.base_type = 0, .new_type = 0, .alpha = 0.05};
	struct error err = ERROR_INIT;

	d = diff_build(b, n, &dopt, &err);
	assert_non_null(d);
	profile_free(b);
	profile_free(n);
	return d;
}

static void test_diff_neutral_when_noise(void **state)
{
	struct profile *small = diff_of("a;b 5\na;c 5\n", "a;b 6\na;c 4\n");
	/* Counts without a common divisor: they are samples, not event periods. */
	struct profile *big = diff_of("a;b 1001\na;c 999\n", "a;b 1500\na;c 501\n");
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	o.type = 1;
	o.diff_significance = true;
	doc = svg(small, &o);
	assert_non_null(strstr(strstr(doc, "<title>b ("), "fill=\"rgb(215,215,215)\""));
	assert_non_null(strstr(doc, "change not significant (p="));
	assert_non_null(strstr(doc, "base 10 samples, new 10 samples"));
	free(doc);
	doc = svg(big, &o);
	assert_non_null(strstr(strstr(doc, "<title>b ("), "fill=\"rgb(255,0,0)\""));
	assert_non_null(strstr(strstr(doc, "<title>c ("), "fill=\"rgb(0,0,255)\""));
	assert_non_null(strstr(doc, "self change significant (p="));
	assert_non_null(strstr(doc, "base 50.05% -> new 74.96% (+24.91 pp)"));
	free(doc);
	/* Without the test, the small change is coloured as flamegraph.pl does. */
	o.diff_significance = false;
	doc = svg(small, &o);
	assert_null(strstr(doc, "rgb(215,215,215)"));
	free(doc);
	profile_free(small);
	profile_free(big);
}

static bool valid_utf8_xml_text(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		size_t n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : 4;

		if (c < 0x20 && c != '\n' && c != '\t')
			return false;
		if (c >= 0x80 && (c < 0xc2 || c > 0xf4))
			return false;
		if (i + n > len)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((u[i + k] & 0xc0) != 0x80)
				return false;
		}
		if (c == 0xed && u[i + 1] >= 0xa0)
			return false;
		i += n;
	}
	return true;
}

static void test_escaping(void **state)
{
	struct profile *p =
		folded("main;a&b<c>\"d'e;\x01\x1f\x7f;\xff\xfe;\xc3\x28;\xed\xa0\x80;\xef\xbf\xbf;"
		       "caf\xc3\xa9;]]>x;<!--y-- 1\n",
		       false);
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	o.title = "<b>&";
	o.notes = "a--b-->c";
	doc = svg(p, &o);
	assert_true(valid_utf8_xml_text(doc, strlen(doc)));
	assert_non_null(strstr(doc, "<title>a&amp;b&lt;c&gt;&quot;d&apos;e ("));
	assert_non_null(strstr(doc, "<title>??? ("));
	assert_non_null(strstr(doc, "<title>?? ("));
	assert_non_null(strstr(doc, "<title>?( ("));
	assert_non_null(strstr(doc, "<title>??? ("));
	assert_non_null(strstr(doc, "<title>caf\xc3\xa9 ("));
	assert_non_null(strstr(doc, "<title>]]&gt;x ("));
	assert_non_null(strstr(doc, ">&lt;b&gt;&amp;</text>"));
	assert_non_null(strstr(doc, "<!-- NOTES: a- -b- -&gt;c -->"));
	free(doc);
	profile_free(p);
}

static void test_labels_truncated(void **state)
{
	struct profile *p = folded("a_very_long_function_name 1\nb 1\n", false);
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	o.width = 200; /* 90 px per frame: 12 characters of 7.08 px */
	doc = svg(p, &o);
	assert_non_null(strstr(doc, ">a_very_lon..</text>"));
	assert_non_null(strstr(doc, ">b</text>"));
	free(doc);
	o.width = 40; /* 10 px: under three characters, no label */
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "\"></text>"));
	assert_null(strstr(doc, ">b</text>"));
	free(doc);
	profile_free(p);
}

static void test_palettes_deterministic(void **state)
{
	struct flame_colorer c;
	char a[32], b[32];

	(void)state;
	/* flamegraph.pl's colours for these names (its default, seeded by the name). */
	flame_colorer_init(&c, PAL_HOT, false, false, 1);
	flame_color(&c, "main", 4, 0, a);
	assert_string_equal(a, "rgb(243,179,42)");
	flame_color(&c, "foo", 3, 0, a);
	assert_string_equal(a, "rgb(220,71,17)");
	flame_color(&c, "bar_[k]", 7, 0, a);
	assert_string_equal(a, "rgb(223,87,20)");
	flame_color(&c, "", 0, 0, a);
	assert_string_equal(a, "rgb(213,39,9)");
	flame_color(&c, "-", 1, 0, a);
	assert_string_equal(a, "rgb(200,200,200)");
	flame_colorer_release(&c);

	flame_colorer_init(&c, PAL_JAVA, false, false, 1);
	flame_color(&c, "schedule_[k]", 12, 0, a);
	assert_int_equal(strncmp(a, "rgb(", 4), 0);
	assert_int_equal(a[strlen(a) - 3], ','); /* orange: blue is 0 */
	flame_color(&c, "schedule", 8, FRAME_KERNEL, b);
	assert_int_equal(b[strlen(b) - 3], ',');
	flame_color(&c, "java/lang/Thread.run", 20, 0, a);
	assert_true(strtol(strchr(a, ',') + 1, NULL, 10) >= 200); /* green */
	flame_colorer_release(&c);

	flame_colorer_init(&c, PAL_HOT, true, false, 1);
	flame_color(&c, "memcpy", 6, 0, a);
	flame_color(&c, "memcpy", 6, 0, b);
	assert_string_equal(a, b);
	flame_color(&c, "zlib_inflate", 12, 0, b);
	assert_string_not_equal(a, b);
	flame_colorer_release(&c);

	flame_colorer_init(&c, PAL_HOT, false, false, 1);
	flame_color(&c, "inlined_fn", 10, FRAME_INLINED, a);
	assert_true(strtol(a + 4, NULL, 10) < 120); /* aqua, not hot */
	flame_colorer_release(&c);
	assert_int_equal(flame_palette_parse("orange"), PAL_ORANGE);
	assert_int_equal(flame_palette_parse("pink"), -1);
}

static void test_tooltip_interval_and_flags(void **state)
{
	struct profile *p = folded("a;b 25\na;c 75\n", false);
	struct flame_options o;
	struct frame fr = {0};
	int64_t v = 1;
	char *doc;

	(void)state;
	flame_options_init(&o);
	doc = svg(p, &o);
	/* Wilson 95% interval of 25/100: 17.545% to 34.304%, rounded outward. */
	assert_non_null(
		strstr(doc, "<title>b (25 samples, 25.00%)\n95% interval: 17.54% to 34.31%"));
	assert_non_null(
		strstr(doc, "100 samples; 95% sampling error of a share: +/-9.6 pp at 50%"));
	free(doc);
	profile_free(p);

	p = profile_new();
	profile_add_type(p, "samples", "count");
	fr.name = profile_intern_str(p, "helper");
	fr.flags = FRAME_INLINED;
	profile_add_sample(p, profile_child(p, 0, profile_intern_frame(p, &fr)), 0, &v);
	fr.name = profile_intern_str(p, "libc.so+0x1234");
	fr.flags = FRAME_UNSYMBOLIZED;
	profile_add_sample(p, profile_child(p, 0, profile_intern_frame(p, &fr)), 0, &v);
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "\n(inlined)</title>"));
	assert_non_null(strstr(doc, "\nunsymbolized: no symbol for this address</title>"));
	free(doc);
	profile_free(p);
}

static void test_name_flags(void **state)
{
	static const struct {
		const char *name;
		uint32_t flags;
	} cases[] = {
		{"[unknown]", FRAME_UNSYMBOLIZED},
		{"", FRAME_UNSYMBOLIZED},
		{"0x7f3a00c0ffee", FRAME_UNSYMBOLIZED},
		{"libc.so.6+0x9d2c0", FRAME_UNSYMBOLIZED},
		{"[kernel.kallsyms]+0xffffffff81000000", FRAME_UNSYMBOLIZED},
		{"0xcafe_[k]", FRAME_UNSYMBOLIZED | FRAME_KERNEL},
		{"[unknown]_[j]", FRAME_UNSYMBOLIZED | FRAME_JIT},
		{"inl_[i]", FRAME_INLINED},
		{"main", 0},
		{"deadbeef", 0},
		{"0x", 0},
		{"0xgg", 0},
		{"a+b", 0},
		{"+0x12", 0},
		{"mod+0x", 0},
		{"operator new (unsigned long)+0x1c", 0},
		{"waker_[w]", 0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint32_t got = flame_name_flags(cases[i].name, strlen(cases[i].name));

		if (got != cases[i].flags)
			fail_msg("%s: flags %u, not %u", cases[i].name, got, cases[i].flags);
	}
}

static void test_unsymbolized_grey(void **state)
{
	struct flame_colorer c;
	char a[32];
	unsigned r, g, b;

	(void)state;
	flame_colorer_init(&c, PAL_JAVA, false, false, 1);
	flame_color(&c, "libc.so.6+0x10", 14, FRAME_UNSYMBOLIZED, a);
	assert_int_equal(sscanf(a, "rgb(%u,%u,%u)", &r, &g, &b), 3);
	assert_true(r == g && g == b && r >= 175 && r <= 215);
	flame_colorer_release(&c);
}

/* flame_format_value as viewer.js prints (JavaScript's toFixed: halfway away from zero). */
static void test_format_value(void **state)
{
	static const struct {
		double v;
		const char *unit, *want;
	} cases[] = {
		{950, "nanoseconds", "950 ns"},
		{1125, "nanoseconds", "1.13 \xc2\xb5s"}, /* printf's %.2f: 1.12 */
		{2625000000.0, "nanoseconds", "2.63 s"},
		{0, "nanoseconds", "0.00 s"},
		{1500, "microseconds", "1.50 ms"},
		{90, "seconds", "90.00 s"},
		{1023, "bytes", "1023 B"},
		{1152, "bytes", "1.13 KiB"},
		{1048576, "bytes", "1.00 MiB"},
		{1125899906842624.0, "bytes", "1024.00 TiB"},
	};

	(void)state;
	assert_true(flame_unit_formatted("bytes") && flame_unit_formatted("milliseconds"));
	assert_false(flame_unit_formatted("count") || flame_unit_formatted("ns") ||
		     flame_unit_formatted(NULL));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strbuf sb = STRBUF_INIT;

		flame_format_value(&sb, cases[i].v, cases[i].unit);
		if (strcmp(sb.buf, cases[i].want))
			fail_msg("%g %s: '%s', not '%s'", cases[i].v, cases[i].unit, sb.buf,
				 cases[i].want);
		strbuf_release(&sb);
	}
}

static void test_root_label_and_amounts(void **state)
{
	struct profile *p = folded("a;b 1500\na;c 500\n", false);
	struct flame_options o;
	char *doc;

	(void)state;
	flame_options_init(&o);
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "\">all (2,000 samples, 100%)</text>"));
	free(doc);
	o.countname = "microseconds";
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "<title>all (2.00 ms, 100%)</title>"));
	assert_non_null(strstr(doc, "\">all (2.00 ms, 100%)</text>"));
	assert_non_null(strstr(doc, "<title>b (1.50 ms, 75.00%)"));
	assert_non_null(strstr(doc, "<g fg:v=\"1500\">\n<title>b "));
	free(doc);
	o.width = 60; /* 40 px for the root, 5 characters: cut as any label */
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "\">all..</text>"));
	free(doc);
	profile_free(p);
}

static void test_diff_title(void **state)
{
	struct profile *base = folded("a;b 10\n", false), *new = folded("a;b 12\n", false), *d;
	struct diff_options dopt = {.alpha = 0.05};
	struct error err = ERROR_INIT;
	struct strbuf t = STRBUF_INIT;
	struct flame_options o;

	(void)state;
	d = diff_build(base, new, &dopt, &err);
	assert_non_null(d);
	flame_options_init(&o);
	flame_title(d, &o, &t);
	assert_string_equal(t.buf, "Differential Flame Graph");
	strbuf_reset(&t);
	o.base_name = "base.folded";
	o.new_name = "new <1>.folded";
	flame_title(d, &o, &t);
	assert_string_equal(t.buf, "Diff: base.folded \xe2\x86\x92 new <1>.folded");
	strbuf_reset(&t);
	flame_title(base, &o, &t);
	assert_string_equal(t.buf, "Flame Graph");
	strbuf_reset(&t);
	o.title = "Mine";
	flame_title(d, &o, &t);
	assert_string_equal(t.buf, "Mine");
	strbuf_release(&t);
	profile_free(d);
	profile_free(base);
	profile_free(new);
}

static void test_total_factor_and_errors(void **state)
{
	struct profile *p = folded("a 10\n", false);
	struct flame_options o;
	struct error err = ERROR_INIT;
	char *doc;
	FILE *f;

	(void)state;
	flame_options_init(&o);
	o.total = 20;
	o.factor = 3;
	doc = svg(p, &o);
	assert_non_null(strstr(doc, "<title>all (60 samples, 100%)"));
	assert_non_null(strstr(doc, "<title>a (30 samples, 50.00%)"));
	assert_float_equal(attr_after(doc, "<title>a (", "width"), 590.0, 1e-9);
	free(doc);
	profile_free(p);

	flame_options_init(&o);
	p = folded("a 0\n", false);
	f = fopen("/dev/null", "w");
	assert_int_equal(flamegraph_svg_write(p, &o, f, &err), ERR_FORMAT);
	o.colors = "pink";
	assert_int_equal(flamegraph_svg_write(p, &o, f, &err), ERR_USAGE);
	fclose(f);
	profile_free(p);
}

static void test_deep_stack(void **state)
{
	size_t depth = 100000, len = depth * 2 + 16;
	char *text = xmalloc(len);
	struct flame_options o;
	struct flame_layout l;
	struct profile *p;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < depth; i++) {
		text[n++] = i & 1 ? 'b' : 'a';
		text[n++] = i + 1 < depth ? ';' : ' ';
	}
	memcpy(text + n, "7\n", 3);
	p = folded(text, false);
	flame_options_init(&o);
	layout(&l, p, &o);
	assert_int_equal(l.max_depth, depth);
	assert_int_equal(l.nr, depth + 1);
	flame_layout_release(&l);
	free(text);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_widths_proportional),
		cmocka_unit_test(test_self_left_and_merge_by_name),
		cmocka_unit_test(test_sibling_order_like_sorted_lines),
		cmocka_unit_test(test_minwidth_omits),
		cmocka_unit_test(test_inverted_y),
		cmocka_unit_test(test_flamechart_order),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_diff_colours),
		cmocka_unit_test(test_diff_neutral_when_noise),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_labels_truncated),
		cmocka_unit_test(test_palettes_deterministic),
		cmocka_unit_test(test_tooltip_interval_and_flags),
		cmocka_unit_test(test_total_factor_and_errors),
		cmocka_unit_test(test_deep_stack),
		cmocka_unit_test(test_name_flags),
		cmocka_unit_test(test_unsymbolized_grey),
		cmocka_unit_test(test_format_value),
		cmocka_unit_test(test_root_label_and_amounts),
		cmocka_unit_test(test_diff_title),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
