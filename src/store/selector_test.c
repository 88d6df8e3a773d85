/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "store/regex.h"
#include "store/selector.h"

static struct selector *parse_ok(const char *text)
{
	struct error err = ERROR_INIT;
	struct selector *s = NULL;

	if (selector_parse(text, &s, &err) != 0)
		fail_msg("%s: %s", text, err.msg);
	assert_non_null(s);
	return s;
}

/* Parse text, which must fail with code and exactly msg. */
static void expect_error(const char *text, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	struct selector *s = (struct selector *)1;

	assert_int_equal(selector_parse(text, &s, &err), code);
	assert_null(s);
	assert_int_equal(err.code, code);
	assert_string_equal(err.msg, msg);
}

/* The canonical text of text, which must parse. */
static char *canonical(const char *text)
{
	struct selector *s = parse_ok(text);
	size_t len = selector_format(s, NULL, 0);
	char *buf = malloc(len + 1);

	assert_non_null(buf);
	assert_int_equal(selector_format(s, buf, len + 1), len);
	assert_int_equal(strlen(buf), len);
	selector_free(s);
	return buf;
}

static void expect_canonical(const char *text, const char *want)
{
	char *got = canonical(text), *again;

	assert_string_equal(got, want);
	again = canonical(got);
	assert_string_equal(again, want);
	free(got);
	free(again);
}

static void test_name_and_matchers(void **state)
{
	struct selector *s = parse_ok("app.cpu{endpoint=\"/checkout\",region=~\"eu-.*\"}");
	const struct matcher *m;

	(void)state;
	assert_string_equal(selector_app(s), "app");
	assert_string_equal(selector_type(s), "cpu");
	assert_int_equal(selector_nmatchers(s), 2);
	m = selector_matcher(s, 0);
	assert_string_equal(m->key, "endpoint");
	assert_int_equal(m->op, MATCH_EQ);
	assert_string_equal(m->value, "/checkout");
	m = selector_matcher(s, 1);
	assert_string_equal(m->key, "region");
	assert_int_equal(m->op, MATCH_RE);
	assert_string_equal(m->value, "eu-.*");
	assert_null(selector_matcher(s, 2));
	selector_free(s);
}

static void test_name_splits_at_last_dot(void **state)
{
	struct selector *s = parse_ok("my.app-v2.alloc_space");

	(void)state;
	assert_string_equal(selector_app(s), "my.app-v2");
	assert_string_equal(selector_type(s), "alloc_space");
	assert_int_equal(selector_nmatchers(s), 0);
	selector_free(s);
	s = parse_ok("{region=\"eu\"}");
	assert_null(selector_app(s));
	assert_null(selector_type(s));
	assert_int_equal(selector_nmatchers(s), 1);
	selector_free(s);
	s = parse_ok("{}");
	assert_null(selector_app(s));
	assert_int_equal(selector_nmatchers(s), 0);
	selector_free(s);
	selector_free(NULL);
}

static void test_accepted_spellings(void **state)
{
	(void)state;
	expect_canonical("  app.cpu  ", "app.cpu");
	expect_canonical("app.cpu{}", "app.cpu");
	expect_canonical("app.cpu { a = \"1\" , b != '2' , } ", "app.cpu{a=\"1\",b!=\"2\"}");
	expect_canonical("\t{\n__name__ =~ 'app\\\\..*'\n}", "{__name__=~\"app\\\\..*\"}");
	expect_canonical("{}", "{}");
	expect_canonical(" { } ", "{}");
	expect_canonical("a.b{x=\"\"}", "a.b{x=\"\"}");
}

static void test_matchers_sorted(void **state)
{
	struct selector *s = parse_ok("a.cpu{z=\"1\",b!~\"x\",b=\"2\",b=\"1\",b!=\"0\"}");
	static const char *const want[][3] = {
		{"b", "=", "1"},  {"b", "=", "2"}, {"b", "!=", "0"},
		{"b", "!~", "x"}, {"z", "=", "1"},
	};
	size_t i;

	(void)state;
	assert_int_equal(selector_nmatchers(s), ARRAY_SIZE(want));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		const struct matcher *m = selector_matcher(s, i);

		assert_string_equal(m->key, want[i][0]);
		assert_string_equal(matcher_op_name(m->op), want[i][1]);
		assert_string_equal(m->value, want[i][2]);
	}
	selector_free(s);
	expect_canonical("a.cpu{z=\"1\",b!~\"x\",b=\"2\",b=\"1\",b!=\"0\"}",
			 "a.cpu{b=\"1\",b=\"2\",b!=\"0\",b!~\"x\",z=\"1\"}");
	assert_string_equal(matcher_op_name(MATCH_EQ), "=");
	assert_string_equal(matcher_op_name(MATCH_NE), "!=");
	assert_string_equal(matcher_op_name(MATCH_RE), "=~");
	assert_string_equal(matcher_op_name(MATCH_NRE), "!~");
}

static const struct series_label labels_full[] = {
	{"endpoint", "/checkout"},
	{"region", "eu-west"},
};
static const struct series_label labels_no_region[] = {
	{"endpoint", "/checkout"},
};
static const struct series full = {"app", "cpu", labels_full, 2};
static const struct series no_region = {"app", "cpu", labels_no_region, 1};

static bool selects(const char *text, const struct series *series)
{
	struct selector *s = parse_ok(text);
	bool ok = selector_match(s, series);

	selector_free(s);
	return ok;
}

/* Each operator, on a series with the label and one without (Prometheus: it is ""). */
static void test_operators_and_missing_labels(void **state)
{
	static const struct {
		const char *text;
		bool full, no_region;
	} cases[] = {
		{"{region=\"eu-west\"}", true, false},
		{"{region!=\"eu-west\"}", false, true},
		{"{region=\"\"}", false, true},
		{"{region!=\"\"}", true, false},
		{"{region=~\"eu-.*\"}", true, false},
		{"{region!~\"eu-.*\"}", false, true},
		{"{region=~\".*\"}", true, true},
		{"{region=~\".+\"}", true, false},
		{"{region=~\"eu-west|\"}", true, true},
		{"{region!~\".*\"}", false, false},
		{"{other!=\"x\"}", true, true},
		{"{other=\"x\"}", false, false},
		{"{other!~\"x\"}", true, true},
		{"{other=~\"x\"}", false, false},
		{"{region=\"EU-WEST\"}", false, false},
		{"app.cpu", true, true},
		{"app.wall", false, false},
		{"other.cpu", false, false},
		{"ap.cpu", false, false},
		{"{}", true, true},
		{"app.cpu{endpoint=\"/checkout\",region=\"eu-west\"}", true, false},
		{"app.cpu{endpoint=\"/checkout\",region!=\"eu-west\"}", false, true},
		{"app.cpu{endpoint=\"/checkout\",endpoint!=\"/checkout\"}", false, false},
		{"{__name__=\"app.cpu\"}", true, true},
		{"{__name__!=\"app.cpu\"}", false, false},
		{"{__name__=~\"app\\\\..*\"}", true, true},
		{"{__name__=~\"app\"}", false, false},
		{"other.cpu{__name__=\"app.cpu\"}", false, false},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (selects(cases[i].text, &full) != cases[i].full)
			fail_msg("%s on the full series: expected %d", cases[i].text,
				 cases[i].full);
		if (selects(cases[i].text, &no_region) != cases[i].no_region)
			fail_msg("%s without region: expected %d", cases[i].text,
				 cases[i].no_region);
	}
}

static bool value_matches(const char *text, const char *value)
{
	struct selector *s = parse_ok(text);
	bool ok = matcher_match(selector_matcher(s, 0), value);

	selector_free(s);
	return ok;
}

/* Regexes are anchored at both ends, whatever they hold. */
static void test_regex_anchored(void **state)
{
	(void)state;
	assert_false(value_matches("{r=~\"eu\"}", "eu-west"));
	assert_false(value_matches("{r=~\"west\"}", "eu-west"));
	assert_true(value_matches("{r=~\"eu\"}", "eu"));
	assert_false(value_matches("{r=~\"a|b\"}", "ab"));
	assert_true(value_matches("{r=~\"a|b\"}", "b"));
	assert_true(value_matches("{r=~\"(a|b)c\"}", "bc"));
	assert_false(value_matches("{r=~\"a|b\"}", "xb"));
	assert_true(value_matches("{r=~\"^eu.*$\"}", "eu-west"));
	assert_true(value_matches("{r=~\"[)]\"}", ")"));
	assert_true(value_matches("{r=~\"[[:digit:]]{2,3}\"}", "123"));
	assert_false(value_matches("{r=~\"[[:digit:]]{2,3}\"}", "1234"));
	assert_true(value_matches("{r=~\"\"}", ""));
	assert_false(value_matches("{r=~\"\"}", "x"));
	assert_true(value_matches("{r!~\"eu\"}", "eu-west"));
	assert_true(value_matches("{r=~\"a.b\"}", "a\nb"));
	/* What would escape the anchoring group is refused. */
	expect_error("{r=~\"eu)|(.*\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in r=~\"eu)|(.*\": a ')' without its '('");
}

static void test_escapes(void **state)
{
	struct selector *s = parse_ok("{k=\"a\\\"b\\\\c\\n\\t\\x41\\x7e\\'\",j='it\\'s \"x\"'}");

	(void)state;
	assert_string_equal(selector_matcher(s, 0)->value, "it's \"x\"");
	assert_string_equal(selector_matcher(s, 1)->value, "a\"b\\c\n\tA~'");
	selector_free(s);
	expect_canonical("{k=\"a\\\"b\\\\c\\n\\t\\x41\\x7e\\'\"}", "{k=\"a\\\"b\\\\c\\n\\tA~'\"}");
	expect_canonical("{k=\"\\x01\\x1f\\x7F\"}", "{k=\"\\x01\\x1f\\x7f\"}");
	/* UTF-8 and other high bytes stand as they are. */
	expect_canonical("{k=\"caf\xc3\xa9 \xff\"}", "{k=\"caf\xc3\xa9 \xff\"}");
}

static void test_format_bounded(void **state)
{
	struct selector *s = parse_ok("app.cpu{region=\"eu\"}");
	char buf[8];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(selector_format(s, buf, sizeof(buf)), strlen("app.cpu{region=\"eu\"}"));
	assert_string_equal(buf, "app.cpu");
	assert_int_equal(selector_format(s, buf, 1), 20);
	assert_string_equal(buf, "");
	selector_free(s);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_error("", ERR_FORMAT,
		     "selector: column 1: expected an app name or '{', found the end");
	expect_error("   ", ERR_FORMAT,
		     "selector: column 4: expected an app name or '{', found the end");
	expect_error("=\"x\"", ERR_FORMAT,
		     "selector: column 1: expected an app name or '{', found \"=\\\"x\\\"\"");
	expect_error(
		"myapp", ERR_FORMAT,
		"selector: column 6: expected '.' and a profile type after app name \"myapp\"");
	expect_error(".cpu", ERR_FORMAT,
		     "selector: column 1: expected an app name before \".cpu\"");
	expect_error("app.", ERR_FORMAT,
		     "selector: column 5: expected a profile type after \"app.\"");
	expect_error(
		"app.cpu-x", ERR_FORMAT,
		"selector: column 8: profile type \"cpu-x\" has a '-' (expected [A-Za-z0-9_])");
	expect_error("app.cpu x", ERR_FORMAT,
		     "selector: column 9: expected '{' or the end, found \"x\"");
	expect_error("a/b.cpu", ERR_FORMAT,
		     "selector: column 2: expected '.' and a profile type after app name \"a\"");
	expect_error("app.cpu{} x", ERR_FORMAT,
		     "selector: column 11: expected the end, found \"x\"");
	expect_error("app.cpu{}}", ERR_FORMAT,
		     "selector: column 10: expected the end, found \"}\"");
	expect_error("{", ERR_FORMAT,
		     "selector: column 2: expected a label name or '}', found the end");
	expect_error("{,}", ERR_FORMAT,
		     "selector: column 2: expected a label name or '}', found \",}\"");
	expect_error("{a=\"1\",,}", ERR_FORMAT,
		     "selector: column 8: expected a label name or '}', found \",}\"");
	expect_error("{1a=\"x\"}", ERR_FORMAT,
		     "selector: column 2: label name \"1a\" starts with a digit");
	expect_error("{region<\"eu\"}", ERR_FORMAT,
		     "selector: column 8: expected '=', '!=', '=~' or '!~' after \"region\", "
		     "found \"<\\\"eu\\\"}\"");
	expect_error("{region!\"eu\"}", ERR_FORMAT,
		     "selector: column 8: expected '=', '!=', '=~' or '!~' after \"region\", "
		     "found \"!\\\"eu\\\"}\"");
	expect_error("{region}", ERR_FORMAT,
		     "selector: column 8: expected '=', '!=', '=~' or '!~' after \"region\", "
		     "found \"}\"");
	expect_error("{region=eu}", ERR_FORMAT,
		     "selector: column 9: expected a quoted value after region=, found \"eu}\"");
	expect_error("{region!~}", ERR_FORMAT,
		     "selector: column 10: expected a quoted value after region!~, found \"}\"");
	expect_error("{region==\"eu\"}", ERR_FORMAT,
		     "selector: column 9: expected a quoted value after region=, found "
		     "\"=\\\"eu\\\"}\"");
	expect_error("{a=\"1\" b=\"2\"}", ERR_FORMAT,
		     "selector: column 8: expected ',' or '}', found \"b=\\\"2\\\"}\"");
	expect_error("{a=\"1\"", ERR_FORMAT,
		     "selector: column 7: expected ',' or '}', found the end");
	expect_error("app.cpu{a=\"1\"}{b=\"2\"}", ERR_FORMAT,
		     "selector: column 15: expected the end, found \"{b=\\\"2\\\"}\"");
}

static void test_string_errors(void **state)
{
	(void)state;
	expect_error("{region=\"eu}", ERR_FORMAT,
		     "selector: column 9: value of \"region\" has no closing quote");
	expect_error("{region='eu\"}", ERR_FORMAT,
		     "selector: column 9: value of \"region\" has no closing quote");
	expect_error("{k=\"a\\q\"}", ERR_FORMAT,
		     "selector: column 6: value of \"k\" has an unknown escape "
		     "(expected \\\" \\' \\\\ \\n \\t or \\xHH)");
	expect_error("{k=\"\\x4\"}", ERR_FORMAT,
		     "selector: column 5: value of \"k\" has an unknown escape "
		     "(expected \\\" \\' \\\\ \\n \\t or \\xHH)");
	expect_error("{k=\"\\x\"}", ERR_FORMAT,
		     "selector: column 5: value of \"k\" has an unknown escape "
		     "(expected \\\" \\' \\\\ \\n \\t or \\xHH)");
	expect_error("{k=\"\\", ERR_FORMAT,
		     "selector: column 5: value of \"k\" has an unknown escape "
		     "(expected \\\" \\' \\\\ \\n \\t or \\xHH)");
	expect_error("{k=\"a\\x00\"}", ERR_FORMAT,
		     "selector: column 6: value of \"k\" has \\x00 (no NUL bytes)");
}

/* Text of a selector with n matchers k0="v", k1="v", ... */
static char *many_matchers(size_t n)
{
	char *buf = malloc(n * 16 + 3), *p = buf;
	size_t i;

	assert_non_null(buf);
	*p++ = '{';
	for (i = 0; i < n; i++)
		p += snprintf(p, 16, "%sk%zu=\"v\"", i ? "," : "", i);
	*p++ = '}';
	*p = '\0';
	return buf;
}

static void test_limits(void **state)
{
	char *text, app[SERIES_APP_MAX + 8], key[LABEL_KEY_MAX + 16];
	char value[LABEL_VALUE_MAX + 16];

	(void)state;
	text = many_matchers(SELECTOR_MATCHERS_MAX);
	selector_free(parse_ok(text));
	free(text);
	text = many_matchers(SELECTOR_MATCHERS_MAX + 1);
	expect_error(text, ERR_LIMIT, "selector: column 248: more than 32 matchers");
	free(text);

	memset(app, 'a', SERIES_APP_MAX);
	memcpy(app + SERIES_APP_MAX, ".cpu", 5);
	selector_free(parse_ok(app));
	memcpy(app + SERIES_APP_MAX, "a.cpu", 6);
	expect_error(
		app, ERR_LIMIT,
		"selector: column 1: app name "
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" is longer than 100 bytes");
	memcpy(app, "a.", 2);
	memset(app + 2, 't', SERIES_TYPE_MAX + 1);
	app[SERIES_TYPE_MAX + 3] = '\0';
	expect_error(
		app, ERR_LIMIT,
		"selector: column 3: profile type "
		"\"ttttttttttttttttttttttttttttttttttttttttttttttt...\" is longer than 64 bytes");
	app[SERIES_TYPE_MAX + 2] = '\0';
	selector_free(parse_ok(app));

	key[0] = '{';
	memset(key + 1, 'k', LABEL_KEY_MAX);
	memcpy(key + 1 + LABEL_KEY_MAX, "=\"\"}", 5);
	selector_free(parse_ok(key));
	memcpy(key + 1 + LABEL_KEY_MAX, "k=\"\"}", 6);
	expect_error(
		key, ERR_LIMIT,
		"selector: column 2: label name "
		"\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...\" is longer than 64 bytes");

	memcpy(value, "{k=\"", 4);
	memset(value + 4, 'v', LABEL_VALUE_MAX);
	memcpy(value + 4 + LABEL_VALUE_MAX, "\"}", 3);
	selector_free(parse_ok(value));
	memcpy(value + 4 + LABEL_VALUE_MAX, "v\"}", 4);
	expect_error(value, ERR_LIMIT,
		     "selector: column 1029: value of \"k\" has more than 1024 bytes");
}

static void test_text_limit(void **state)
{
	char *text = malloc(SELECTOR_TEXT_MAX + 2);

	(void)state;
	assert_non_null(text);
	memset(text, ' ', SELECTOR_TEXT_MAX + 1);
	memcpy(text, "a.cpu", 5);
	text[SELECTOR_TEXT_MAX] = '\0';
	selector_free(parse_ok(text));
	text[SELECTOR_TEXT_MAX] = ' ';
	text[SELECTOR_TEXT_MAX + 1] = '\0';
	expect_error(text, ERR_LIMIT, "selector: longer than 262144 bytes");
	free(text);
}

/* The longest canonical text (every value escaped) parses again. */
static void test_longest_canonical(void **state)
{
	size_t size = SELECTOR_MATCHERS_MAX * (LABEL_VALUE_MAX * 4 + 16) + 3, i, j;
	char *text = malloc(size), *p = text, *canon;

	(void)state;
	assert_non_null(text);
	*p++ = '{';
	for (i = 0; i < SELECTOR_MATCHERS_MAX; i++) {
		p += snprintf(p, 16, "%sk%zu=\"", i ? "," : "", i);
		for (j = 0; j < LABEL_VALUE_MAX; j++)
			*p++ = '\x01'; /* one byte in, \x01 out */
		*p++ = '"';
	}
	memcpy(p, "}", 2);
	canon = canonical(text);
	assert_true(strlen(canon) > strlen(text) * 3);
	assert_true(strlen(canon) <= SELECTOR_TEXT_MAX);
	p = canonical(canon);
	assert_string_equal(p, canon);
	free(p);
	free(canon);
	free(text);
}

static void test_regex_errors(void **state)
{
	(void)state;
	expect_error("{k=~\"(\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"(\": a '(' without its ')'");
	expect_error("{k=~\"a)\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"a)\": a ')' without its '('");
	expect_error("{k!~\"[a\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k!~\"[a\": a '[' without its ']'");
	expect_error("{k=~\"(a)\\\\1\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"(a)\\\\1\": a backreference (\\1)");
	expect_error("{k=~\"a\\\\\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"a\\\\\": a trailing backslash");
	expect_error("{k=~\"a{2,1}\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"a{2,1}\": a malformed repeat "
		     "(expected {m}, {m,} or {m,n})");
	expect_error("{k=~\"a{x}\"}", ERR_FORMAT,
		     "selector: column 5: bad regex in k=~\"a{x}\": a malformed repeat "
		     "(expected {m}, {m,} or {m,n})");
	expect_error(
		"{k=~\"*a\"}", ERR_FORMAT,
		"selector: column 5: bad regex in k=~\"*a\": invalid preceding regular expression");
	expect_error(
		"{k=~\"[[.nope.]]\"}", ERR_FORMAT,
		"selector: column 5: bad regex in k=~\"[[.nope.]]\": invalid collation character");
	expect_error(
		"{k=~\"x{0,32767}\"}", ERR_LIMIT,
		"selector: column 5: bad regex in k=~\"x{0,32767}\": a repeat count over 1000");
	expect_error("{k=~\"x{1001}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"x{1001}\": a repeat count over 1000");
	selector_free(parse_ok("{k=~\"x{1000}\"}"));
	selector_free(parse_ok("{k=~\"a{,5}b{2,}c{0,0}\"}"));
}

#define TOO_MANY(n) "more than " #n " atoms with its repeats expanded (x+ and x* cost nothing)"

/* Bounded repeats count as the copies glibc makes; a selector's regexes share one budget. */
static void test_regex_atoms(void **state)
{
	char text[LABEL_VALUE_MAX + 16];

	(void)state;
	selector_free(parse_ok("{k=~\"x{1000}y{24}\"}"));
	expect_error("{k=~\"x{1000}y{25}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"x{1000}y{25}\": " TOO_MANY(1024));
	/* Nested repeats multiply: 8 x 8 x 16 = 1024. */
	selector_free(parse_ok("{k=~\"((x{8}){8}){16}\"}"));
	expect_error("{k=~\"((x{8}){8}){17}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"((x{8}){8}){17}\": " TOO_MANY(1024));
	/* Stars and pluses cost nothing. */
	selector_free(parse_ok("{k=~\"(a*b+c){300}\"}"));
	selector_free(parse_ok("{j=~\"a{1000}\",k=~\"b{1000}\",l=~\"c{48}\"}"));
	expect_error("{j=~\"a{1000}\",k=~\"b{1000}\",l=~\"c{49}\"}", ERR_LIMIT,
		     "selector: column 31: bad regex in l=~\"c{49}\": " TOO_MANY(48));
	/* The longest value is a regex of 1024 atoms. */
	memcpy(text, "{k=~\"", 5);
	memset(text + 5, 'a', LABEL_VALUE_MAX);
	memcpy(text + 5 + LABEL_VALUE_MAX, "\"}", 3);
	selector_free(parse_ok(text));
}

#define OPTIONAL "more than 128 optional atoms (as in x? or x{0,128}; x* costs nothing)"

/* glibc's matcher slows with the square of the atoms it may skip. */
static void test_regex_optional_atoms(void **state)
{
	char text[512], *p = text;
	int i;

	(void)state;
	selector_free(parse_ok("{k=~\"x{0,128}\",j=~\"(a?b){128}\",l=~\"(a|b|){64}\"}"));
	selector_free(parse_ok("{k=~\"[0-9]{1,3}(\\\\.[0-9]{1,3}){3}\"}"));
	selector_free(parse_ok("{k=~\"([a-z]*){128}\"}"));
	expect_error("{k=~\"x{0,129}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"x{0,129}\": " OPTIONAL);
	expect_error("{k=~\"(a?b){129}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"(a?b){129}\": " OPTIONAL);
	expect_error("{k=~\"(a|b|){65}\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"(a|b|){65}\": " OPTIONAL);
	p += snprintf(p, 8, "{k=~\"");
	for (i = 0; i < 129; i++)
		p += snprintf(p, 3, "a?");
	memcpy(p, "\"}", 3);
	expect_error(text, ERR_LIMIT,
		     "selector: column 5: bad regex in "
		     "k=~\"a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a?a...\": " OPTIONAL);
}

/* glibc takes exponential time over loops of what can match nothing. */
static void test_regex_nullable_loops(void **state)
{
	static const char *const refused[] = {
		"(a?)+",    "(a|)+", "(a|b?)*",	 "a**", "a?+",	       "a{0,5}+",
		"(x*){2,}", "(^)+",  "(\\\\b)*", "()+", "((a?)(b*))+", "(a|(b|))*",
	};
	static const char *const taken[] = {
		"a+*", "(a|b)+", "(a?b)+", "(a*)?", "(a?){3}", "a*?", "(a|b?c)+", "((a|)b)*",
	};
	char text[64], msg[256];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		snprintf(text, sizeof(text), "{k=~\"%s\"}", refused[i]);
		snprintf(msg, sizeof(msg),
			 "selector: column 5: bad regex in k=~\"%s\": a repeat of what can match "
			 "the empty string (write (a?)+ as a*)",
			 refused[i]);
		expect_error(text, ERR_FORMAT, msg);
	}
	for (i = 0; i < ARRAY_SIZE(taken); i++) {
		snprintf(text, sizeof(text), "{k=~\"%s\"}", taken[i]);
		selector_free(parse_ok(text));
	}
}

/* Each repeat on an atom doubles glibc's automaton: a+ and twenty '+' take 700 MiB. */
static void test_regex_nested_repeats(void **state)
{
	(void)state;
	selector_free(parse_ok("{k=~\"a++++\"}"));
	selector_free(parse_ok("{k=~\"((((a+)+)+)+)x+\"}"));
	selector_free(parse_ok("{k=~\"(((a{2}){2}b+){2})+\"}"));
	expect_error("{k=~\"a+++++\"}", ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"a+++++\": repeats nested more than 4 "
		     "deep (as in ((a+)+)+ or a++)");
	expect_error(
		"{k=~\"x(((([ab]+c){2})+d)*)?\"}", ERR_LIMIT,
		"selector: column 5: bad regex in k=~\"x(((([ab]+c){2})+d)*)?\": repeats nested "
		"more than 4 deep (as in ((a+)+)+ or a++)");
}

/* {k=~"((...))"}: a regex of n nested groups. */
static char *nested_groups(int n)
{
	char *text = malloc((size_t)n * 2 + 16), *p = text;
	int i;

	assert_non_null(text);
	p += snprintf(p, 8, "{k=~\"");
	for (i = 0; i < n; i++)
		*p++ = '(';
	for (i = 0; i < n; i++)
		*p++ = ')';
	memcpy(p, "\"}", 3);
	return text;
}

static void test_regex_depth(void **state)
{
	char *text = nested_groups(REGEX_DEPTH_MAX);

	(void)state;
	selector_free(parse_ok(text));
	free(text);
	text = nested_groups(REGEX_DEPTH_MAX + 1);
	expect_error(text, ERR_LIMIT,
		     "selector: column 5: bad regex in k=~\"((((((((((((((((((((((((((((((((((((((("
		     "((((((((...\": groups nested deeper than 100");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_and_matchers),
		cmocka_unit_test(test_name_splits_at_last_dot),
		cmocka_unit_test(test_accepted_spellings),
		cmocka_unit_test(test_matchers_sorted),
		cmocka_unit_test(test_operators_and_missing_labels),
		cmocka_unit_test(test_regex_anchored),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_format_bounded),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_string_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_text_limit),
		cmocka_unit_test(test_longest_canonical),
		cmocka_unit_test(test_regex_errors),
		cmocka_unit_test(test_regex_atoms),
		cmocka_unit_test(test_regex_optional_atoms),
		cmocka_unit_test(test_regex_nullable_loops),
		cmocka_unit_test(test_regex_nested_repeats),
		cmocka_unit_test(test_regex_depth),
	};

	return cmocka_run_group_tests_name("selector", tests, NULL, NULL);
}
