/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "render/flamegraph.h"
#include "format/format.h"

extern const char asset_viewer_js[];
extern const size_t asset_viewer_js_len;

static struct profile *read_folded(const char *text)
{
	struct error err = ERROR_INIT;
	struct input in;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "t.folded", text, strlen(text), 1 << 20, &err), 0);
	assert_int_equal(folded_read(&in, NULL, &p, &err), 0);
	input_close(&in);
	return p;
}

/* The whole page for p with options o (NULL: defaults). */
static char *page_of(const struct profile *p, const struct flame_options *o)
{
	struct flame_options def;
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!o) {
		flame_options_init(&def);
		def.type = p->default_type;
		o = &def;
	}
	assert_int_equal(flamegraph_html_write(p, o, f, &err), 0);
	fclose(f);
	return buf;
}

/* The JSON data block of a page (a pointer into it, NUL-terminated in place). */
static char *data_of(char *page)
{
	const char *open = "<script type=\"application/json\" id=\"plateau-data\">";
	char *start = strstr(page, open), *end;

	assert_non_null(start);
	start += strlen(open);
	end = strstr(start, "</script>");
	assert_non_null(end);
	*end = '\0';
	return start;
}

/* The text between "key": and the matching close of the value that follows. */
static void assert_field(const char *json, const char *key, const char *want)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	at = strstr(json, pat);
	if (!at)
		fail_msg("no %s in %s", key, json);
	at += strlen(pat);
	if (strncmp(at, want, strlen(want)))
		fail_msg("%s: want %s, got %.*s", key, want, (int)strlen(want) + 20, at);
}

static void test_levels_and_offsets(void **state)
{
	/* all=10; a=6 (self 1) over b=3 and c=2; d=4 with a gap of 1 self. */
	struct profile *p = read_folded("a 1\na;b 3\na;c 2\nd 1\nd;e 3\n");
	char *page = page_of(p, NULL), *json = data_of(page);

	(void)state;
	assert_field(json, "total", "10,");
	assert_field(json, "names", "[\"all\",\"a\",\"d\",\"b\",\"c\",\"e\"]");
	/* [x delta, total, self, name]: b and c packed from a's left edge, e from d's. */
	assert_field(json, "levels",
		     "[\n[0,10,0,0],\n[0,6,1,1,0,4,1,2],\n[0,3,3,3,0,2,2,4,1,3,3,5]]");
	free(page);
	profile_free(p);
}

static void test_flamechart_keeps_order(void **state)
{
	struct read_options ro = {.keep_order = true};
	struct error err = ERROR_INIT;
	const char *text = "init;load 5\nrun 3\ninit 2\n";
	struct flame_options o;
	struct profile *p = NULL;
	struct input in;
	char *page, *json;

	(void)state;
	assert_int_equal(input_from_buf(&in, "t.folded", text, strlen(text), 1 << 20, &err), 0);
	assert_int_equal(folded_read(&in, &ro, &p, &err), 0);
	input_close(&in);
	flame_options_init(&o);
	o.type = p->default_type;
	o.flamechart = true;
	page = page_of(p, &o);
	json = data_of(page);
	/* "init" twice, apart in time: two boxes in the chart, one in the levels. */
	assert_field(json, "levels", "[\n[0,10,0,0],\n[0,7,2,1,0,3,3,2],\n[0,5,5,3]]");
	assert_field(json, "chart", "[\n[0,10,0,0],\n[0,5,0,1,0,3,3,2,0,2,2,1],\n[0,5,5,3]]");
	free(page);
	o.flamechart = false;
	page = page_of(p, &o);
	assert_null(strstr(data_of(page), "\"chart\""));
	free(page);
	profile_free(p);
}

static void test_siblings_merged_by_name(void **state)
{
	struct profile *p = profile_new();
	struct frame f = {0};
	uint32_t stack[2], n;
	int64_t v = 5;
	char *page, *json;

	(void)state;
	profile_add_type(p, "samples", "count");
	/* Two frames named "f" (different modules) under one parent: one box. */
	stack[0] = profile_frame_named(p, "main", 4);
	f.name = profile_intern_str(p, "f");
	f.module = profile_intern_str(p, "liba.so");
	stack[1] = profile_intern_frame(p, &f);
	n = profile_stack(p, stack, 2);
	profile_add_sample(p, n, 0, &v);
	f.module = profile_intern_str(p, "libb.so");
	stack[1] = profile_intern_frame(p, &f);
	v = 7;
	n = profile_stack(p, stack, 2);
	profile_add_sample(p, n, 0, &v);
	page = page_of(p, NULL);
	json = data_of(page);
	assert_field(json, "levels", "[\n[0,12,0,0],\n[0,12,0,1],\n[0,12,12,2]]");
	assert_field(json, "functions", "[[1,0,12],[2,12,12]]");
	free(page);
	profile_free(p);
}

static void test_children_sorted_bytewise(void **state)
{
	struct profile *p = read_folded("r;b 1\nr;B 2\nr;a 4\n");
	char *page = page_of(p, NULL), *json = data_of(page);

	(void)state;
	/* 'B' < 'a' < 'b' bytewise. */
	assert_field(json, "names", "[\"all\",\"r\",\"B\",\"a\",\"b\"]");
	assert_field(json, "levels", "[\n[0,7,0,0],\n[0,7,0,1],\n[0,2,2,2,0,4,4,3,0,1,1,4]]");
	free(page);
	profile_free(p);
}

static void test_recursion_counted_once(void **state)
{
	struct profile *p = read_folded("f;g;f 2\nf 1\n");
	char *page = page_of(p, NULL), *json = data_of(page);

	(void)state;
	/* functions: [name, self, total]; f's total is 3, not 5. */
	assert_field(json, "functions", "[[1,3,3],[2,0,2]]");
	free(page);
	profile_free(p);
}

static void test_hostile_names_escaped(void **state)
{
	struct profile *p = read_folded(
		"</script><img src=x onerror=alert(1)>;q\"\\ 1\nbad\xff\xc3(;&<!-- 2\n");
	char *page = page_of(p, NULL), *json;

	(void)state;
	/* The only "</script" in the page close the two script blocks. */
	assert_null(strstr(strstr(strstr(page, "</script") + 1, "</script") + 1, "</script"));
	json = data_of(page);
	assert_null(strchr(json, '<'));
	assert_non_null(
		strstr(json, "\"\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\""));
	assert_non_null(strstr(json, "\"q\\\"\\\\\""));
	assert_non_null(strstr(json, "\"bad\\ufffd\\ufffd(\""));
	assert_non_null(strstr(json, "\"\\u0026\\u003c!--\""));
	free(page);
	profile_free(p);
}

static void test_control_bytes_and_utf8(void **state)
{
	struct profile *p = profile_new();
	const char name[] = "t\x01\x1f\x7f\xe2\x82\xac\xed\xa0\x80\xf0\x9f\x94\xa5";
	uint32_t fr;
	int64_t v = 1;
	char *page, *json;

	(void)state;
	profile_add_type(p, "samples", "count");
	fr = profile_frame_named(p, name, sizeof(name) - 1);
	profile_add_sample(p, profile_stack(p, &fr, 1), 0, &v);
	page = page_of(p, NULL);
	json = data_of(page);
	/* Controls escaped (DEL may stand), the euro sign and the emoji kept, a surrogate replaced. */
	assert_non_null(strstr(json, "\"t\\u0001\\u001f\x7f\xe2\x82\xac\\ufffd\\ufffd\\ufffd"
				     "\xf0\x9f\x94\xa5\""));
	free(page);
	profile_free(p);
}

static void test_header_and_title(void **state)
{
	struct profile *p = read_folded("a;b 3\na 1\n");
	struct flame_options o;
	char *page, *json;

	(void)state;
	flame_options_init(&o);
	o.title = "A <b>&\" title";
	o.inverted = true;
	page = page_of(p, &o);
	assert_non_null(strstr(page, "<title>A &lt;b&gt;&amp;&quot; title</title>"));
	json = data_of(page);
	assert_field(json, "title", "\"A \\u003cb\\u003e\\u0026\\\" title\"");
	assert_field(json, "type", "\"samples\"");
	assert_field(json, "unit", "\"count\"");
	assert_field(json, "samples", "4,");
	assert_field(json, "inverted", "true");
	assert_field(json, "diff", "null");
	free(page);
	profile_free(p);
}

static void test_minwidth_percent_leaves_gap(void **state)
{
	struct profile *p = read_folded("a;aaa 1\na;big 97\nb 2\n");
	struct flame_options o;
	char *page, *json;

	(void)state;
	flame_options_init(&o);
	o.minwidth = 2;
	o.minwidth_pct = true;
	page = page_of(p, &o);
	json = data_of(page);
	/* "aaa" (1%) is left out of the graph, leaving a gap: "big" keeps x = 1. */
	assert_field(json, "levels", "[\n[0,100,0,0],\n[0,98,0,1,0,2,2,2],\n[1,97,97,3]]");
	/* The table still lists every function. */
	assert_non_null(strstr(json, "\"aaa\""));
	free(page);
	profile_free(p);
}

static void test_diff_values_and_significance(void **state)
{
	/* Folded "stack base new": a grew from 10 to 300 samples, b's share change is noise. */
	struct profile *p = read_folded("a 10 300\nb 90 100\nc 200 0\n");
	struct flame_options o;
	char *page, *json;

	(void)state;
	flame_options_init(&o);
	o.diff_significance = true;
	page = page_of(p, &o);
	json = data_of(page);
	/* [dx, new total, new self, name, base total, base self, significant]; c (new 0) drops out. */
	assert_field(json, "levels",
		     "[\n[0,400,0,0,300,0,0],\n[0,300,300,1,10,10,1,0,100,100,2,90,90,0]]");
	assert_field(json, "diff",
		     "{\"baseTotal\":300,\"baseSamples\":300,\"newSamples\":400,\"alpha\":0.05,"
		     "\"significance\":true");
	assert_field(json, "functions", "[[1,300,300,10,10],[2,100,100,90,90],[3,0,0,200,200]]");
	free(page);
	profile_free(p);
}

static void test_empty_profile_is_an_error(void **state)
{
	struct profile *p = profile_new();
	struct flame_options o;
	struct error err = ERROR_INIT;
	FILE *f = fopen("/dev/null", "w");

	(void)state;
	profile_add_type(p, "samples", "count");
	flame_options_init(&o);
	assert_int_equal(flamegraph_html_write(p, &o, f, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "no samples"));
	o.type = 3;
	assert_int_equal(flamegraph_html_write(p, &o, f, &err), ERR_USAGE);
	fclose(f);
	profile_free(p);
}

static void test_script_cannot_close_early(void **state)
{
	(void)state;
	/* The embedded viewer must not contain "</script" itself. */
	for (size_t i = 0; i + 8 <= asset_viewer_js_len; i++)
		assert_false(asset_viewer_js[i] == '<' &&
			     !strncasecmp(asset_viewer_js + i, "</script", 8));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels_and_offsets),
		cmocka_unit_test(test_flamechart_keeps_order),
		cmocka_unit_test(test_siblings_merged_by_name),
		cmocka_unit_test(test_children_sorted_bytewise),
		cmocka_unit_test(test_recursion_counted_once),
		cmocka_unit_test(test_hostile_names_escaped),
		cmocka_unit_test(test_control_bytes_and_utf8),
		cmocka_unit_test(test_header_and_title),
		cmocka_unit_test(test_minwidth_percent_leaves_gap),
		cmocka_unit_test(test_diff_values_and_significance),
		cmocka_unit_test(test_empty_profile_is_an_error),
		cmocka_unit_test(test_script_cannot_close_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
