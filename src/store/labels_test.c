/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "store/ingest_name.h"
#include "store/labels.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(label_key_valid("region", 6));
	assert_true(label_key_valid("_x9", 3));
	assert_true(label_key_valid("__name__", 8));
	assert_false(label_key_valid("", 0));
	assert_false(label_key_valid("9x", 2));
	assert_false(label_key_valid("pod.name", 8));
	assert_false(label_key_valid("a-b", 3));
	assert_true(label_key_valid(
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", 64));
	assert_false(label_key_valid(
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", 65));
	assert_true(series_app_valid("my.app-v2_x", 11));
	assert_false(series_app_valid("a/b", 3));
	assert_false(series_app_valid("", 0));
	assert_true(series_type_valid("alloc_space", 11));
	assert_false(series_type_valid("cpu-x", 5));
	assert_false(series_type_valid("a.b", 3));
}

static void test_sort_and_get(void **state)
{
	struct series_label l[] = {{"zone", "b"}, {"Region", "R"}, {"region", "eu"}, {"_a", "1"}};

	(void)state;
	labels_sort(l, ARRAY_SIZE(l));
	assert_string_equal(l[0].key, "Region");
	assert_string_equal(l[1].key, "_a");
	assert_string_equal(l[2].key, "region");
	assert_string_equal(l[3].key, "zone");
	assert_string_equal(labels_get(l, 4, "region"), "eu");
	assert_string_equal(labels_get(l, 4, "zone"), "b");
	assert_string_equal(labels_get(l, 4, "Region"), "R");
	assert_null(labels_get(l, 4, "host"));
	assert_null(labels_get(l, 0, "zone"));
}

static void expect_invalid(const struct series_label *l, size_t n, int code, const char *msg)
{
	struct error err = ERROR_INIT;

	assert_int_equal(labels_validate(l, n, &err), code);
	assert_string_equal(err.msg, msg);
}

static void test_validate(void **state)
{
	static char long_value[LABEL_VALUE_MAX + 2];
	struct series_label l[LABELS_MAX + 1];
	struct error err = ERROR_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(l); i++) {
		static char keys[LABELS_MAX + 1][8];

		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		l[i].key = keys[i];
		l[i].value = "v";
	}
	assert_int_equal(labels_validate(l, LABELS_MAX, &err), 0);
	expect_invalid(l, LABELS_MAX + 1, ERR_LIMIT, "more than 32 labels");
	l[1].key = "k0";
	expect_invalid(l, 2, ERR_FORMAT, "label \"k0\" is given twice");
	l[1].key = "k1";
	l[1].value = "";
	expect_invalid(l, 2, ERR_FORMAT, "label \"k1\" has an empty value");
	l[1].value = "a\tb";
	expect_invalid(l, 2, ERR_FORMAT, "label \"k1\" has a control character in its value");
	l[1].value = "a\x7f";
	expect_invalid(l, 2, ERR_FORMAT, "label \"k1\" has a control character in its value");
	l[1].value = "caf\xc3";
	expect_invalid(l, 2, ERR_FORMAT, "label \"k1\" has a value that is not UTF-8");
	l[1].value = "caf\xc3\xa9 \xe2\x82\xac";
	assert_int_equal(labels_validate(l, 2, &err), 0);
	memset(long_value, 'v', LABEL_VALUE_MAX);
	l[1].value = long_value;
	assert_int_equal(labels_validate(l, 2, &err), 0);
	long_value[LABEL_VALUE_MAX] = 'v';
	expect_invalid(l, 2, ERR_LIMIT, "label \"k1\" has a value longer than 1024 bytes");
	l[1].value = "v";
	l[1].key = "pod.name";
	expect_invalid(
		l, 2, ERR_FORMAT,
		"label name \"pod.name\" must match [A-Za-z_][A-Za-z0-9_]* (at most 64 bytes)");
	l[1].key = "__name__";
	expect_invalid(l, 2, ERR_FORMAT, "label name \"__name__\" is reserved");
}

static void test_series_validate(void **state)
{
	struct series s = {"app", "cpu", NULL, 0};
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(series_validate(&s, &err), 0);
	s.app = "a/b";
	assert_int_equal(series_validate(&s, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "app name \"a/b\" must be 1 to 100 bytes of [A-Za-z0-9._-]");
	err = (struct error)ERROR_INIT;
	s.app = "app";
	s.type = "";
	assert_int_equal(series_validate(&s, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "profile type \"\" must be 1 to 64 bytes of [A-Za-z0-9_]");
}

static void test_key_format(void **state)
{
	static const struct series_label l[] = {{"zone", "b"}, {"region", "eu \"west\" \\ 1"}};
	struct series s = {"my.app", "cpu", l, 2};
	char buf[128];
	size_t len;

	(void)state;
	len = series_key_format(&s, buf, sizeof(buf));
	assert_int_equal(len, strlen(buf));
	assert_string_equal(buf, "my.app.cpu{region=\"eu \\\"west\\\" \\\\ 1\",zone=\"b\"}");
	assert_int_equal(series_key_format(&s, buf, 7), 46);
	assert_string_equal(buf, "my.app");
	s.nlabels = 0;
	series_key_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, "my.app.cpu{}");
}

static struct series *key_ok(const char *key)
{
	struct error err = ERROR_INIT;
	struct series *s = NULL;
	char buf[1024];

	if (series_key_parse(key, &s, &err))
		fail_msg("%s: %s", key, err.msg);
	series_key_format(s, buf, sizeof(buf));
	assert_string_equal(buf, key);
	return s;
}

static void expect_key_error(const char *key, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	struct series *s = (struct series *)1;

	assert_int_equal(series_key_parse(key, &s, &err), code);
	assert_null(s);
	assert_string_equal(err.msg, msg);
}

static void test_key_parse(void **state)
{
	struct series *s = key_ok("my.app.alloc_space{host=\"a \\\"1\\\"\",region=\"eu\"}");

	(void)state;
	assert_string_equal(s->app, "my.app");
	assert_string_equal(s->type, "alloc_space");
	assert_int_equal(s->nlabels, 2);
	assert_string_equal(s->labels[0].key, "host");
	assert_string_equal(s->labels[0].value, "a \"1\"");
	assert_string_equal(s->labels[1].key, "region");
	series_free(s);
	s = key_ok("a.cpu{}");
	assert_int_equal(s->nlabels, 0);
	series_free(s);
	series_free(NULL);
}

static void test_key_errors(void **state)
{
	(void)state;
	expect_key_error("", ERR_FORMAT, "series key: column 1: expected APP.TYPE, found the end");
	expect_key_error("app{}", ERR_FORMAT,
			 "series key: column 1: expected APP.TYPE, found \"app{}\"");
	expect_key_error("a.cpu", ERR_FORMAT, "series key: column 6: expected '{', found the end");
	expect_key_error("a.cpu{b=\"1\",a=\"2\"}", ERR_FORMAT,
			 "series key: column 1: labels are not sorted by name");
	expect_key_error("a.cpu{a=\"1\",a=\"2\"}", ERR_FORMAT,
			 "series key: column 1: label \"a\" is given twice");
	expect_key_error("a.cpu{a=\"\"}", ERR_FORMAT,
			 "series key: column 1: label \"a\" has an empty value");
	expect_key_error("a.cpu-x{}", ERR_FORMAT,
			 "series key: column 1: profile type \"cpu-x\" must be 1 to 64 bytes of "
			 "[A-Za-z0-9_]");
	expect_key_error("a.cpu{a='1'}", ERR_FORMAT,
			 "series key: column 8: expected =\", found \"='1'}\"");
	expect_key_error("a.cpu{ a=\"1\"}", ERR_FORMAT,
			 "series key: column 7: expected a label name, found \" a=\\\"1\\\"}\"");
	expect_key_error("a.cpu{a=\"1\"} ", ERR_FORMAT,
			 "series key: column 13: expected the end, found \" \"");
	expect_key_error("a.cpu{a=\"1\";b=\"2\"}", ERR_FORMAT,
			 "series key: column 12: expected ',' or '}', found \";b=\\\"2\\\"}\"");
	expect_key_error("a.cpu{a=\"\\x41\"}", ERR_FORMAT,
			 "series key: column 10: not canonical: expected \"A\\\"}\"");
	expect_key_error("a.cpu{a=\"\\n\"}", ERR_FORMAT,
			 "series key: column 1: label \"a\" has a control character in its value");
	expect_key_error("a.cpu{a=\"1}", ERR_FORMAT,
			 "series key: column 9: value of label \"a\" has no closing quote");
}

static void test_key_limits(void **state)
{
	char key[40 * 12], *p = key, *big;
	size_t i;

	(void)state;
	p += snprintf(p, 8, "a.cpu{");
	for (i = 0; i < LABELS_MAX; i++)
		p += snprintf(p, 12, "%sk%02zu=\"v\"", i ? "," : "", i);
	memcpy(p, "}", 2);
	series_free(key_ok(key));
	snprintf(p, 12, ",k%02d=\"v\"}", LABELS_MAX);
	expect_key_error(key, ERR_LIMIT, "series key: column 263: more than 32 labels");
	big = malloc(1 << 17);
	assert_non_null(big);
	memset(big, 'a', (1 << 17) - 1);
	big[(1 << 17) - 1] = '\0';
	expect_key_error(big, ERR_LIMIT, "series key: longer than 67879 bytes");
	free(big);
}

static struct series *name_ok(const char *name)
{
	struct error err = ERROR_INIT;
	struct series *s = NULL;
	size_t renamed;

	if (ingest_name_parse(name, &s, &renamed, &err))
		fail_msg("%s: %s", name, err.msg);
	assert_non_null(s);
	return s;
}

/* name parses to app, type and the canonical labels {k="v",...} (type NULL: none). */
static void expect_name(const char *name, const char *app, const char *type, const char *labels)
{
	struct series *s = name_ok(name);
	struct series view = *s;
	char buf[512];

	assert_string_equal(s->app, app);
	if (type)
		assert_string_equal(s->type, type);
	else
		assert_null(s->type);
	view.app = "a";
	view.type = "t";
	series_key_format(&view, buf, sizeof(buf));
	assert_string_equal(buf + 3, labels);
	series_free(s);
}

/* Pyroscope's own cases (segment key_test.go) and its adapter's type split. */
static void test_ingest_name_pyroscope(void **state)
{
	(void)state;
	expect_name("foo", "foo", NULL, "{}");
	expect_name("foo{bar=1,baz=2}", "foo", NULL, "{bar=\"1\",baz=\"2\"}");
	expect_name(" foo { bar = 1 , baz = 2 } ", "foo", NULL, "{bar=\"1\",baz=\"2\"}");
	expect_name("foo{baz=1,bar=2}", "foo", NULL, "{bar=\"2\",baz=\"1\"}");
	expect_name("app.name{foo=bar}", "app", "name", "{foo=\"bar\"}");
	expect_name("app.cpu{}", "app", "cpu", "{}");
	expect_name("my.app.itimer{k=v}", "my.app", "itimer", "{k=\"v\"}");
	expect_name("app.alloc_space{env=prod,}", "app", "alloc_space", "{env=\"prod\"}");
	expect_name("app.cpu{ }", "app", "cpu", "{}");
	expect_name("svc-1.wall{host=web 1}", "svc-1", "wall", "{host=\"web 1\"}");
	/* A value runs to the next ',' or '}': '=', '{', quotes and UTF-8 are its own. */
	expect_name("a.cpu{q=x=y{z\"}", "a", "cpu", "{q=\"x=y{z\\\"\"}");
	expect_name("a.cpu{city=K\xc3\xb6ln}", "a", "cpu", "{city=\"K\xc3\xb6ln\"}");
	/* An empty value is no label, as in Prometheus. */
	expect_name("a.cpu{a=,b=2,c= }", "a", "cpu", "{b=\"2\"}");
	expect_name("a.cpu{a=,a=1}", "a", "cpu", "{a=\"1\"}");
}

/* NAME parses with RENAMED label names mapped ('.' read as '_'). */
static void expect_renamed(const char *name, size_t want)
{
	struct error err = ERROR_INIT;
	struct series *s = NULL;
	size_t renamed = 99;

	if (ingest_name_parse(name, &s, &renamed, &err))
		fail_msg("%s: %s", name, err.msg);
	assert_int_equal(renamed, want);
	series_free(s);
}

/*
 * Pyroscope maps '.' to '_' in label names (SanitizeLegacyLabelName):
 * the name @pyroscope/nodejs 0.6.4 sends, and Pyroscope's own cases.
 */
static void test_ingest_name_dots(void **state)
{
	static const char node[] =
		"nodeshop{otel.scope.name=com.grafana.pyroscope/nodejs,otel.scope.version=0.6.4,"
		"process.runtime.name=nodejs,process.runtime.version=20.20.2,region=eu-west-1}";

	(void)state;
	expect_name(
		node, "nodeshop", NULL,
		"{otel_scope_name=\"com.grafana.pyroscope/nodejs\",otel_scope_version=\"0.6.4\","
		"process_runtime_name=\"nodejs\",process_runtime_version=\"20.20.2\","
		"region=\"eu-west-1\"}");
	expect_renamed(node, 4);
	expect_renamed("a.cpu{region=eu}", 0);
	expect_name("a{.a=1,b.=2,c..d=3}", "a", NULL, "{_a=\"1\",b_=\"2\",c__d=\"3\"}");
	expect_renamed("a{.a=1,b.=2,c..d=3}", 3);
	/* Mapped onto a name given as well: one label when the values agree. */
	expect_name("a{a.b=1,a_b=1}", "a", NULL, "{a_b=\"1\"}");
	expect_name("a{a_b=1,a.b=1}", "a", NULL, "{a_b=\"1\"}");
	expect_renamed("a{a_b=1,a.b=1}", 1);
	expect_name("a{k.v=,k_v=2}", "a", NULL, "{k_v=\"2\"}");
}

static void test_labels_map(void **state)
{
	char names[4][LABEL_KEY_MAX + 1], out[LABEL_KEY_MAX + 1] = "";
	struct series_label l[4] = {{"x.y", "1"}, {"a-b", "2"}, {"x_y", "1"}, {"z.z", "3"}};
	struct error err = ERROR_INIT;
	size_t n = 4, renamed = 0;

	(void)state;
	assert_true(label_key_map("service.name", out));
	assert_string_equal(out, "service_name");
	assert_true(label_key_map("..", out));
	assert_string_equal(out, "__");
	assert_false(label_key_map("plain", out));
	assert_false(label_key_map("1.a", out));
	assert_false(label_key_map("a.b-c", out));
	assert_false(label_key_map("a/b.c", out));
	assert_int_equal(labels_map(l, &n, names, &renamed, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(renamed, 2);
	assert_string_equal(l[0].key, "a-b"); /* left for labels_validate() */
	assert_string_equal(l[1].key, "x_y");
	assert_string_equal(l[2].key, "z_z");
	assert_string_equal(l[2].value, "3");
	l[0] = (struct series_label){"k_v", "1"};
	l[1] = (struct series_label){"k.v", "2"};
	n = 2;
	assert_int_equal(labels_map(l, &n, names, &renamed, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "label \"k_v\" is given twice (\"k.v\" is read as \"k_v\") "
				     "with different values");
}

static void expect_name_error(const char *name, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	struct series *s = (struct series *)1;
	size_t renamed = 1;

	assert_int_equal(ingest_name_parse(name, &s, &renamed, &err), code);
	assert_int_equal(renamed, 0);
	assert_null(s);
	assert_string_equal(err.msg, msg);
}

static void test_ingest_name_errors(void **state)
{
	(void)state;
	expect_name_error("", ERR_FORMAT,
			  "ingest name: column 1: expected an app name, found the end");
	expect_name_error("{a=1}", ERR_FORMAT,
			  "ingest name: column 1: expected an app name, found \"{a=1}\"");
	expect_name_error(".cpu", ERR_FORMAT,
			  "ingest name: column 1: expected an app name before \".cpu\"");
	expect_name_error("app.", ERR_FORMAT,
			  "ingest name: column 5: expected a profile type after \"app.\"");
	expect_name_error("app.cpu-x", ERR_FORMAT,
			  "ingest name: column 5: profile type \"cpu-x\" must be 1 to 64 bytes of "
			  "[A-Za-z0-9_]");
	expect_name_error("a/b.cpu", ERR_FORMAT,
			  "ingest name: column 2: expected '{' or the end, found \"/b.cpu\"");
	expect_name_error("foo{a}", ERR_FORMAT,
			  "ingest name: column 6: expected '=' after the label name, found \"}\"");
	expect_name_error(
		"foo{a=1", ERR_FORMAT,
		"ingest name: column 8: expected ',' or '}' after the value, found the end");
	expect_name_error("foo{a=1}x", ERR_FORMAT,
			  "ingest name: column 9: expected the end after '}', found \"x\"");
	expect_name_error("foo{a=1,,b=2}", ERR_FORMAT,
			  "ingest name: column 9: expected a label name or '}', found \",b=2}\"");
	expect_name_error("foo{a=1,a=2}", ERR_FORMAT,
			  "ingest name: column 9: label \"a\" is given twice");
	expect_name_error("foo{__name__=x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"__name__\" is reserved");
	expect_name_error("foo{1a=x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"1a\" must match "
			  "[A-Za-z_.][A-Za-z0-9_.]* with '.' read as '_' (at most 64 bytes)");
	expect_name_error("foo{1.a=x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"1.a\" must match "
			  "[A-Za-z_.][A-Za-z0-9_.]* with '.' read as '_' (at most 64 bytes)");
	expect_name_error("foo{a.b=1,a_b=2}", ERR_FORMAT,
			  "ingest name: column 11: label \"a_b\" is given twice ('.' is read as "
			  "'_') with different values");
	expect_name_error("foo{__name..=x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"__name__\" is reserved");
	expect_name_error("foo{a-b=x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"a-b\" must match "
			  "[A-Za-z_.][A-Za-z0-9_.]* with '.' read as '_' (at most 64 bytes)");
	expect_name_error("foo{a/b.c =x}", ERR_FORMAT,
			  "ingest name: column 5: label name \"a/b.c\" must match "
			  "[A-Za-z_.][A-Za-z0-9_.]* with '.' read as '_' (at most 64 bytes)");
	expect_name_error(
		"foo{a=x\ty}", ERR_FORMAT,
		"ingest name: column 7: label \"a\" has a control character in its value");
	expect_name_error("foo{a=\xff}", ERR_FORMAT,
			  "ingest name: column 7: label \"a\" has a value that is not UTF-8");
}

/* name{k0=v,k1=v,...} with n labels and each value vlen bytes long. */
static char *many_labels(size_t n, size_t vlen)
{
	char *buf = malloc(8 + n * (vlen + 8)), *p = buf;
	size_t i;

	assert_non_null(buf);
	p += snprintf(p, 8, "a.cpu{");
	for (i = 0; i < n; i++) {
		p += snprintf(p, 8, "%sk%zu=", i ? "," : "", i);
		memset(p, 'v', vlen);
		p += vlen;
	}
	memcpy(p, "}", 2);
	return buf;
}

static void test_ingest_name_limits(void **state)
{
	char *name = many_labels(LABELS_MAX, 1);
	char app[SERIES_APP_MAX + 8];
	struct series *s;

	(void)state;
	s = name_ok(name);
	assert_int_equal(s->nlabels, LABELS_MAX);
	series_free(s);
	free(name);
	name = many_labels(LABELS_MAX + 1, 1);
	expect_name_error(name, ERR_LIMIT, "ingest name: column 189: more than 32 labels");
	free(name);
	name = many_labels(1, LABEL_VALUE_MAX);
	series_free(name_ok(name));
	free(name);
	name = many_labels(1, LABEL_VALUE_MAX + 1);
	expect_name_error(
		name, ERR_LIMIT,
		"ingest name: column 10: label \"k0\" has a value longer than 1024 bytes");
	free(name);
	memset(app, 'a', SERIES_APP_MAX);
	app[SERIES_APP_MAX] = '\0';
	series_free(name_ok(app));
	memcpy(app + SERIES_APP_MAX, "a.cpu", 6);
	expect_name_error(
		app, ERR_LIMIT,
		"ingest name: column 1: app name "
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" is longer than 100 "
		"bytes");
	name = calloc(1, INGEST_NAME_MAX + 2);
	assert_non_null(name);
	memset(name, ' ', INGEST_NAME_MAX + 1);
	name[0] = 'a';
	expect_name_error(name, ERR_LIMIT, "ingest name: longer than 65536 bytes");
	name[INGEST_NAME_MAX] = '\0';
	series_free(name_ok(name));
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_sort_and_get),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_series_validate),
		cmocka_unit_test(test_key_format),
		cmocka_unit_test(test_key_parse),
		cmocka_unit_test(test_key_errors),
		cmocka_unit_test(test_key_limits),
		cmocka_unit_test(test_ingest_name_pyroscope),
		cmocka_unit_test(test_ingest_name_dots),
		cmocka_unit_test(test_labels_map),
		cmocka_unit_test(test_ingest_name_errors),
		cmocka_unit_test(test_ingest_name_limits),
	};

	return cmocka_run_group_tests_name("labels", tests, NULL, NULL);
}
