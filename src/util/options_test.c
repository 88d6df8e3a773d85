/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/options.h"
#include "util/suggest.h"

static bool flag;
static int num;
static double dbl;
static const char *str;
static const char **list;

static const struct option opts[] = {
	OPT_BOOL('f', "flag", &flag, "a flag"),
	OPT_INT('n', "num", &num, "N", "a number"),
	OPT_DOUBLE(0, "dbl", &dbl, "X", "a double"),
	OPT_STRING('s', "str", &str, "S", "a string"),
	OPT_LIST(0, "item", &list, "I", "repeatable"),
	OPT_END(),
};

static void reset(void)
{
	flag = false;
	num = 0;
	dbl = 0;
	str = NULL;
	free(list);
	list = NULL;
}

static void test_forms(void **state)
{
	const char *argv[] = {"a",	"-f", "--num=5",   "b",	 "--dbl", "2.5", "-sX",
			      "--item", "i1", "--item=i2", "--", "-n",	  NULL};
	int argc;

	(void)state;
	reset();
	argc = parse_options(12, argv, opts, NULL);
	assert_int_equal(argc, 3);
	assert_string_equal(argv[0], "a");
	assert_string_equal(argv[1], "b");
	assert_string_equal(argv[2], "-n");
	assert_true(flag);
	assert_int_equal(num, 5);
	assert_true(dbl == 2.5);
	assert_string_equal(str, "X");
	assert_string_equal(list[0], "i1");
	assert_string_equal(list[1], "i2");
	assert_null(list[2]);
}

static void test_short_with_space_and_stdin(void **state)
{
	const char *argv[] = {"-n", "7", "-", "-s", "v", NULL};
	int argc;

	(void)state;
	reset();
	argc = parse_options(5, argv, opts, NULL);
	assert_int_equal(argc, 1);
	assert_string_equal(argv[0], "-");
	assert_int_equal(num, 7);
	assert_string_equal(str, "v");
	reset();
}

static void test_help_lists_every_option(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	usage_with_options(f, (const char *const[]){"cmd [opts]", NULL}, opts);
	fclose(f);
	for (const struct option *o = opts; o->type != OPTION_END; o++) {
		char name[64];

		snprintf(name, sizeof(name), "--%s", o->long_name);
		assert_non_null(strstr(buf, name));
		assert_non_null(strstr(buf, o->help));
	}
	assert_non_null(strstr(buf, "usage: cmd [opts]"));
	free(buf);
}

static void test_suggest_distance(void **state)
{
	(void)state;
	assert_int_equal(suggest_distance("flamegraph", "flamegraph"), 0);
	assert_int_equal(suggest_distance("flamegrph", "flamegraph"), 1); /* deletion */
	assert_int_equal(suggest_distance("tpo", "top"), 1);		  /* swap */
	assert_int_equal(suggest_distance("recorx", "record"), 1);	  /* substitution */
	assert_int_equal(suggest_distance("", "top"), 3);
	assert_int_equal(suggest_distance("kitten", "sitting"), 3);
}

static void test_suggest_similar(void **state)
{
	const char *cmds[] = {"check", "collapse", "convert", "diff", "flamegraph", "top", NULL};
	const char *longs[] = {"lines", NULL, "mmap-pages", "min-block"};
	size_t out[8];

	(void)state;
	assert_int_equal(suggest_similar("flamegrph", cmds, 7, out), 1);
	assert_int_equal(out[0], 4);
	/* A prefix is closest, and every command it starts is named. */
	assert_int_equal(suggest_similar("co", cmds, 7, out), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
	assert_int_equal(suggest_similar("frobnicate", cmds, 7, out), 0);
	assert_int_equal(suggest_similar("x", cmds, 7, out), 0);
	assert_int_equal(suggest_similar("mmap-page", longs, 4, out), 1);
	assert_int_equal(out[0], 2);
	assert_int_equal(suggest_similar("line", longs, 4, out), 1);
	assert_int_equal(out[0], 0);
}

/* -v and --debug are every command's, after the command's own options. */
static void test_common_verbose_debug(void **state)
{
	const char *argv[] = {"-vf", "x", "--verbose", "--debug=perf,symbol:3", NULL};
	const char *none[] = {"y", NULL};

	(void)state;
	reset();
	log_verbose = 0;
	assert_int_equal(parse_options(4, argv, opts, NULL), 1);
	assert_true(flag);
	assert_int_equal(log_verbose, 2);
	assert_int_equal(debug_levels[DEBUG_PERF], 2);
	assert_int_equal(debug_levels[DEBUG_SYMBOL], 3);
	assert_int_equal(debug_levels[DEBUG_FORMAT], 0);
	assert_true(debug_enabled(DEBUG_SYMBOL, 3));
	assert_false(debug_enabled(DEBUG_FORMAT, 1));
	/* A parse without them leaves the levels as they are. */
	assert_int_equal(parse_options(1, none, opts, NULL), 1);
	assert_int_equal(debug_levels[DEBUG_PERF], 2);
	memset(debug_levels, 0, sizeof(debug_levels));
	log_verbose = 0;
}

static void test_debug_select(void **state)
{
	char bad[32];

	(void)state;
	assert_int_equal(debug_select(NULL, 1, bad, sizeof(bad)), 0);
	for (int i = 0; i < DEBUG_MODULES; i++)
		assert_int_equal(debug_levels[i], 1);
	assert_int_equal(debug_select("all:2,store:0", 1, bad, sizeof(bad)), 0);
	assert_int_equal(debug_levels[DEBUG_SERVER], 2);
	assert_int_equal(debug_levels[DEBUG_STORE], 0);
	assert_int_equal(debug_select("client", 1, bad, sizeof(bad)), 0);
	assert_int_equal(debug_levels[DEBUG_CLIENT], 1);
	assert_int_equal(debug_levels[DEBUG_SERVER], 0);
	/* An error names the item and leaves the levels alone. */
	assert_int_equal(debug_select("format,symbl", 1, bad, sizeof(bad)), -1);
	assert_string_equal(bad, "symbl");
	assert_int_equal(debug_levels[DEBUG_CLIENT], 1);
	assert_int_equal(debug_select("perf:12", 1, bad, sizeof(bad)), -1);
	assert_string_equal(bad, "perf:12");
	assert_int_equal(debug_select("", 1, bad, sizeof(bad)), -1);
	assert_int_equal(debug_select("perf,", 1, bad, sizeof(bad)), -1);
	assert_string_equal(debug_module_name(DEBUG_UNWIND), "unwind");
	memset(debug_levels, 0, sizeof(debug_levels));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_short_with_space_and_stdin),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_suggest_distance),
		cmocka_unit_test(test_suggest_similar),
		cmocka_unit_test(test_common_verbose_debug),
		cmocka_unit_test(test_debug_select),
	};

	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
