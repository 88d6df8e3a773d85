/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "format/format.h"

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

struct warnings {
	size_t n;
	char msg[16][600];
};

static void collect(void *arg, const char *msg)
{
	struct warnings *w = arg;

	assert_true(w->n < 16);
	snprintf(w->msg[w->n++], sizeof(w->msg[0]), "%s", msg);
}

static struct profile *read_opts(const char *text, const struct read_options *o, struct error *err)
{
	struct input in;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "t.folded", text, strlen(text), 1 << 20, err), 0);
	if (folded_read(&in, o, &p, err))
		p = NULL;
	input_close(&in);
	return p;
}

/*
 * Issue 14: with bounded_sum (plateau serve's pushes) a file whose counts
 * sum past 64 bits is refused at the line that passes it, even when each
 * stack's sum fits (two stacks of 2^63-1 were stored, then no total or
 * flame graph over them could be drawn).  Without it (the CLI) such a
 * file is kept as it is.
 */
static void test_sum_past_64_bits_refused(void **state)
{
	struct read_options o = {.bounded_sum = true};
	struct error err = ERROR_INIT;
	struct profile *p;

	(void)state;
	p = read_str("a;b 9223372036854775807\na;c 9223372036854775807\n", &err);
	assert_non_null(p);
	profile_free(p);
	p = read_opts("a;b 9223372036854775807\na;c 9223372036854775807\n", &o, &err);
	assert_null(p);
	assert_int_equal(err.code, ERR_LIMIT);
	assert_string_equal(err.msg, "t.folded:2: sum of counts overflows 64 bits");
	err = (struct error)ERROR_INIT;
	p = read_opts("a 9223372036854775806\nb 1\n", &o, &err);
	assert_non_null(p);
	assert_true(profile_total(p, 0) == INT64_MAX);
	profile_free(p);
	/* More decimals multiply what was summed so far. */
	err = (struct error)ERROR_INIT;
	p = read_opts("a 922337203685477581\nb 0.1\n", &o, &err);
	assert_null(p);
	assert_string_equal(err.msg, "t.folded:2: counts overflow 64 bits");
	err = (struct error)ERROR_INIT;
	p = read_opts("a 922337203685477580\nb 0.8\n", &o, &err);
	assert_null(p);
	assert_string_equal(err.msg, "t.folded:2: sum of counts overflows 64 bits");
}

static void test_bad_lines_skipped_with_warnings(void **state)
{
	struct warnings w = {0};
	struct read_options o = {.skip_bad_lines = true, .warn = collect, .warn_arg = &w};
	struct error err = ERROR_INIT;
	struct profile *p;
	char *out;

	(void)state;
	p = read_opts("not a count\na;b 2\na;c\na;b -1\na;b 3\n", &o, &err);
	assert_non_null(p);
	out = write_str(p, false);
	assert_string_equal(out, "a;b 5\n");
	assert_int_equal(w.n, 3);
	assert_string_equal(w.msg[0], "t.folded:1: line does not end with a sample count; "
				      "line skipped");
	assert_string_equal(w.msg[1], "t.folded:3: line does not end with a sample count; "
				      "line skipped");
	assert_string_equal(w.msg[2], "t.folded:4: negative count '-1'; line skipped");
	free(out);
	profile_free(p);
}

static void test_warnings_capped(void **state)
{
	struct warnings w = {0};
	struct read_options o = {.skip_bad_lines = true, .warn = collect, .warn_arg = &w};
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	struct profile *p;

	(void)state;
	strbuf_addstr(&sb, "a 1\n");
	for (int i = 0; i < 14; i++)
		strbuf_addstr(&sb, "junk\n");
	p = read_opts(sb.buf, &o, &err);
	assert_non_null(p);
	assert_int_equal(w.n, 11);
	assert_string_equal(w.msg[9], "t.folded:11: line does not end with a sample count; "
				      "line skipped");
	assert_string_equal(w.msg[10], "t.folded: 4 more lines skipped (14 in all)");
	strbuf_release(&sb);
	profile_free(p);
}

static void test_refused_by_default(void **state)
{
	struct warnings w = {0};
	struct read_options o = {.warn = collect, .warn_arg = &w};
	struct error err = ERROR_INIT;

	(void)state;
	/* The first bad line is named, even when it comes before the first good one. */
	assert_null(read_opts("junk\na 1\nb\n", &o, &err));
	assert_string_equal(err.msg, "t.folded:1: line does not end with a sample count");
	assert_int_equal(w.n, 0);
}

static void test_unrecognised(void **state)
{
	struct read_options lenient = {.skip_bad_lines = true};
	struct error err = ERROR_INIT;

	(void)state;
	assert_null(read_str("<html>\n<body>\n", &err));
	assert_string_equal(
		err.msg, "t.folded: unrecognised format (expected folded, perf script or pprof)");
	err = (struct error)ERROR_INIT;
	assert_null(read_opts("# notes\n\nno counts here\n", &lenient, &err));
	assert_string_equal(
		err.msg, "t.folded: unrecognised format (expected folded, perf script or pprof)");
	/* A line shaped like folded, its count bad: that line is the error. */
	err = (struct error)ERROR_INIT;
	assert_null(read_opts("junk\na;b -3\n", &lenient, &err));
	assert_string_equal(err.msg, "t.folded:2: negative count '-3'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_sorted_bytewise),
		cmocka_unit_test(test_decimals),
		cmocka_unit_test(test_sum_past_64_bits_refused),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_errors_name_the_line),
		cmocka_unit_test(test_bad_lines_skipped_with_warnings),
		cmocka_unit_test(test_warnings_capped),
		cmocka_unit_test(test_refused_by_default),
		cmocka_unit_test(test_unrecognised),
	};

	return cmocka_run_group_tests_name("folded", tests, NULL, NULL);
}
