/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "lib/format.h"

static struct profile *read_str(const char *text, struct error *err)
{
	struct input in;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "t.folded", text, strlen(text), 1 << 20, err), 0);
	if (folded_read(&in, NULL, &p, err))
		p = NULL;
	input_close(&in);
	return p;
}

static char *write_str(const struct profile *p, bool diff)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct error err = ERROR_INIT;

	assert_int_equal(diff ? folded_write_diff(p, f, &err) : folded_write(p, 0, f, &err), 0);
	fclose(f);
	return buf;
}

static void test_round_trip_sorted_bytewise(void **state)
{
	/* "foo.cold" sorts between "foo" and "foo;bar", as sort(1) with LC_ALL=C does. */
	const char *in = "a;foo;bar 2\na;foo 5\na;foo.cold 3\nb 1\na;foo 1\n\n";
	struct error err = ERROR_INIT;
	struct profile *p = read_str(in, &err);
	char *out;

	(void)state;
	assert_non_null(p);
	out = write_str(p, false);
	assert_string_equal(out, "a;foo 6\na;foo.cold 3\na;foo;bar 2\nb 1\n");
	free(out);
	profile_free(p);
}

static void test_decimals(void **state)
{
	struct error err = ERROR_INIT;
	struct profile *p = read_str("a 1\na 1.5\nb 0.25\n", &err);
	char *out;

	(void)state;
	assert_non_null(p);
	out = write_str(p, false);
	assert_string_equal(out, "a 2.5\nb 0.25\n");
	free(out);
	profile_free(p);
}

static void test_differential(void **state)
{
	struct error err = ERROR_INIT;
	struct profile *p = read_str("a;b 3 5\na;c 0 2\n", &err);
	char *out;

	(void)state;
	assert_non_null(p);
	assert_true(profile_is_diff(p));
	out = write_str(p, true);
	assert_string_equal(out, "a;b 3 5\na;c 0 2\n");
	free(out);
	profile_free(p);
}

static void test_errors_name_the_line(void **state)
{
	struct error err = ERROR_INIT;

	(void)state;
	assert_null(read_str("a;b 1\na;b\n", &err));
	assert_string_equal(err.msg, "t.folded:2: line does not end with a sample count");
	err = (struct error)ERROR_INIT;
	assert_null(read_str("a;b -3\n", &err));
	assert_string_equal(err.msg, "t.folded:1: negative count '-3'");
	err = (struct error)ERROR_INIT;
	assert_null(read_str("a 99999999999999999999\n", &err));
	assert_non_null(strstr(err.msg, "t.folded:1: count '99999999999999999999' overflows"));
	err = (struct error)ERROR_INIT;
	assert_null(read_str("a 9223372036854775807\na 1\n", &err));
	assert_non_null(strstr(err.msg, "t.folded:2: sum of counts overflows"));
	err = (struct error)ERROR_INIT;
	assert_null(read_str("\n\n", &err));
	assert_string_equal(err.msg, "t.folded: no samples");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_sorted_bytewise),
		cmocka_unit_test(test_decimals),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_errors_name_the_line),
	};

	return cmocka_run_group_tests_name("folded", tests, NULL, NULL);
}
