/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/error.h"
#include "util/strbuf.h"
#include "util/strtab.h"

static void test_addf_grows(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	assert_string_equal(sb.buf, "");
	for (int i = 0; i < 1000; i++)
		strbuf_addf(&sb, "%d,", i);
	assert_int_equal(sb.len, strlen(sb.buf));
	assert_memory_equal(sb.buf, "0,1,2,", 6);
	strbuf_release(&sb);
	assert_int_equal(sb.len, 0);
}

static void test_commas(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	strbuf_add_commas(&sb, 0);
	strbuf_addch(&sb, ' ');
	strbuf_add_commas(&sb, 999);
	strbuf_addch(&sb, ' ');
	strbuf_add_commas(&sb, 1234567);
	assert_string_equal(sb.buf, "0 999 1,234,567");
	strbuf_release(&sb);
}

static void test_xml_escape(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	const char in[] = "a<b>&\"c'\x01";

	(void)state;
	strbuf_add_xml(&sb, in, sizeof(in) - 1);
	assert_string_equal(sb.buf, "a&lt;b&gt;&amp;&quot;c&apos;?");
	/* Valid UTF-8 passes; a stray byte, a surrogate and U+FFFF do not. */
	strbuf_reset(&sb);
	strbuf_add_xml(&sb, "\xc3\xa9\xff\xed\xa0\x80\xef\xbf\xbf", 9);
	assert_string_equal(sb.buf, "\xc3\xa9???????");
	strbuf_release(&sb);
}

static void test_json_escape(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	strbuf_add_json(&sb, "a\"b\\c\nd\x02", 8);
	assert_string_equal(sb.buf, "\"a\\\"b\\\\c\\nd\\u0002\"");
	strbuf_release(&sb);
}

/* Tricky UTF-8: what passes, what becomes one U+FFFD per byte. */
static void test_json_escape_utf8(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5"},
		{"\xef\xbf\xbf\xf4\x8f\xbf\xbf",
		 "\xef\xbf\xbf\xf4\x8f\xbf\xbf"}, /* U+FFFF, U+10FFFF */
		{"<&>\x7f", "<&>\x7f"},
		{"\xff\xfe", "\\ufffd\\ufffd"},
		{"\x80x", "\\ufffdx"},		  /* a stray continuation byte */
		{"a\xe2\x82", "a\\ufffd\\ufffd"}, /* truncated at the end */
		{"\xe2\x82z", "\\ufffd\\ufffdz"}, /* truncated before ASCII */
		{"\xc0\xaf\xc1\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* overlong 2-byte */
		{"\xe0\x80\xaf", "\\ufffd\\ufffd\\ufffd"},	      /* overlong 3-byte */
		{"\xf0\x8f\xbf\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* overlong 4-byte */
		{"\xed\xa0\x80\xed\xbf\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"},
		{"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* past U+10FFFF */
		{"\xf5\xf8\xfc", "\\ufffd\\ufffd\\ufffd"},
		{"\x01\x1b\x1f\b\f\r\t", "\\u0001\\u001b\\u001f\\b\\f\\r\\t"},
	};
	struct strbuf sb = STRBUF_INIT;
	char want[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		strbuf_reset(&sb);
		strbuf_add_json(&sb, cases[i].in, strlen(cases[i].in));
		snprintf(want, sizeof(want), "\"%s\"", cases[i].want);
		assert_string_equal(sb.buf, want);
	}
	strbuf_reset(&sb);
	strbuf_add_json(&sb, "\0\xc3", 2);
	assert_string_equal(sb.buf, "\"\\u0000\\ufffd\"");
	strbuf_release(&sb);
}

static void test_json_safe_escape(void **state)
{
	/* As Go's encoding/json: bad bytes one U+FFFD each, HTML characters and U+2028 escaped. */
	static const char in[] =
		"a\"\\<b>&\r\b\f\x7f\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9\xff\xe2\x82\xed\xa0\x80";
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	strbuf_add_json_safe(&sb, in, sizeof(in) - 1);
	assert_string_equal(sb.buf, "\"a\\\"\\\\\\u003cb\\u003e\\u0026\\r\\b\\f\x7f\\u2028\\u2029"
				    "\xc3\xa9\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	strbuf_reset(&sb);
	strbuf_add_json_safe(&sb, "\0x", 2);
	assert_string_equal(sb.buf, "\"\\u0000x\"");
	strbuf_release(&sb);
}

/* A checked buffer (curl's dynbuf): a cap, a sticky error, nothing past the cap. */
static void test_checked_cap(void **state)
{
	struct strbuf sb;

	(void)state;
	strbuf_init_max(&sb, 8);
	strbuf_addstr(&sb, "1234567");
	assert_int_equal(strbuf_error(&sb), 0);
	assert_string_equal(sb.buf, "1234567");
	strbuf_addch(&sb, '8'); /* 8 bytes and the NUL: over the cap */
	assert_int_equal(strbuf_error(&sb), ERR_LIMIT);
	assert_string_equal(sb.buf, "1234567");
	strbuf_release(&sb);
	/* Sticky until released: even a byte that would fit is refused. */
	strbuf_addstr(&sb, "123456789");
	assert_int_equal(strbuf_error(&sb), ERR_LIMIT);
	strbuf_addch(&sb, 'a');
	assert_int_equal(sb.len, 0);
	strbuf_release(&sb);
	/* The cap stays with the buffer; the error does not. */
	strbuf_addf(&sb, "%d", 42);
	assert_int_equal(strbuf_error(&sb), 0);
	assert_string_equal(sb.buf, "42");
	assert_int_equal(sb.max, 8);
	strbuf_release(&sb);
}

static void test_strtab(void **state)
{
	struct strtab t;
	char big[300000];
	uint32_t a, b, c;

	(void)state;
	strtab_init(&t);
	assert_int_equal(strtab_intern(&t, "", 0), 0);
	a = strtab_intern_str(&t, "main");
	b = strtab_intern_str(&t, "foo");
	assert_int_not_equal(a, b);
	assert_int_equal(strtab_intern_str(&t, "main"), a);
	memset(big, 'x', sizeof(big));
	c = strtab_intern(&t, big, sizeof(big));
	assert_int_equal(strtab_len(&t, c), sizeof(big));
	assert_string_equal(strtab_str(&t, a), "main");
	for (int i = 0; i < 100000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		strtab_intern_str(&t, name);
	}
	assert_int_equal(strtab_find(&t, "f99999", 6), t.nr - 1);
	assert_int_equal(strtab_find(&t, "nope", 4), IDHASH_NONE);
	assert_string_equal(strtab_str(&t, b), "foo");
	strtab_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addf_grows),	 cmocka_unit_test(test_commas),
		cmocka_unit_test(test_xml_escape),	 cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_json_escape_utf8), cmocka_unit_test(test_json_safe_escape),
		cmocka_unit_test(test_strtab),		 cmocka_unit_test(test_checked_cap),
	};

	return cmocka_run_group_tests_name("strbuf", tests, NULL, NULL);
}
