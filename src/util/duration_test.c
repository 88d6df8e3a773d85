/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/duration.h"

static int64_t ns_of(const char *s)
{
	int64_t ns = -1;

	assert_int_equal(duration_scan(s, &ns, NULL), 0);
	return ns;
}

/* The message for S, which must be refused with FAULT. */
static const char *refused(const char *s, enum duration_fault fault)
{
	static char msg[200];
	struct duration_error why;
	int64_t ns = 42;

	assert_int_equal(duration_scan(s, &ns, &why), -1);
	assert_int_equal(ns, 42);
	assert_int_equal(why.fault, fault);
	return duration_strerror(&why, msg, sizeof(msg));
}

static void test_units(void **state)
{
	(void)state;
	assert_true(ns_of("7ns") == 7);
	assert_true(ns_of("7us") == 7000);
	assert_true(ns_of("7ms") == 7000000);
	assert_true(ns_of("7s") == INT64_C(7000000000));
	assert_true(ns_of("1m") == INT64_C(60000000000));
	assert_true(ns_of("1h") == INT64_C(3600000000000));
	assert_true(ns_of("1d") == INT64_C(86400000000000));
	assert_true(ns_of("1w") == 7 * INT64_C(86400000000000));
	assert_true(ns_of("1y") == 365 * INT64_C(86400000000000));
	assert_true(ns_of("1h30m") == INT64_C(5400000000000));
	assert_true(ns_of("2m500ms") == INT64_C(120500000000));
}

/* Zero alone needs no unit; any other number does. */
static void test_zero(void **state)
{
	(void)state;
	assert_true(ns_of("0") == 0);
	assert_true(ns_of("00") == 0);
	assert_true(ns_of("0.0") == 0);
	assert_true(ns_of("0s") == 0);
	assert_string_equal(refused("10", DURATION_NO_UNIT),
			    "needs a unit after 10 (ns, us, ms, s, m, h, d, w or y)");
	assert_string_equal(refused("1.5", DURATION_NO_UNIT),
			    "needs a unit after 1.5 (ns, us, ms, s, m, h, d, w or y)");
}

/* Fractions, each term rounded down to a whole nanosecond. */
static void test_fractions(void **state)
{
	(void)state;
	assert_true(ns_of("1.5ms") == 1500000);
	assert_true(ns_of(".5s") == 500000000);
	assert_true(ns_of("2.s") == INT64_C(2000000000));
	assert_true(ns_of("1.5ns") == 1);
	assert_true(ns_of("0.29us") == 290);
	assert_true(ns_of("0.1h") == INT64_C(360000000000));
	assert_true(ns_of("1.999999999999999999999999s") == INT64_C(1999999999));
	assert_true(ns_of("1h0.5m") == INT64_C(3630000000000));
	refused(".s", DURATION_NOT_NUMBER);
	refused("1..5s", DURATION_NO_UNIT);
}

static void test_refused(void **state)
{
	(void)state;
	assert_string_equal(refused("", DURATION_NOT_NUMBER),
			    "is not a duration (expected numbers with units, e.g. 30s or 1h30m)");
	refused("s", DURATION_NOT_NUMBER);
	refused("-1s", DURATION_NOT_NUMBER);
	refused("+1s", DURATION_NOT_NUMBER);
	refused(" 1s", DURATION_NOT_NUMBER);
	refused("1s ", DURATION_NOT_NUMBER);
	refused("1 s", DURATION_NO_UNIT);
	assert_string_equal(refused("1x", DURATION_BAD_UNIT),
			    "has unknown unit \"x\" (expected ns, us, ms, s, m, h, d, w or y)");
	refused("1S", DURATION_BAD_UNIT);
	assert_string_equal(refused("1m1h", DURATION_ORDER),
			    "has unit \"h\" after \"m\" (units go largest first, each once)");
	refused("1s1s", DURATION_ORDER);
}

static void test_limits(void **state)
{
	(void)state;
	assert_true(ns_of("9223372036854775807ns") == INT64_MAX);
	assert_string_equal(refused("9223372036854775808ns", DURATION_TOO_LONG),
			    "is too long (at most about 292 years)");
	refused("293y", DURATION_TOO_LONG);
	refused("99999999999999999999s", DURATION_TOO_LONG);
	refused("18446744073709551615m", DURATION_TOO_LONG);
	refused("292y1000w", DURATION_TOO_LONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),	  cmocka_unit_test(test_zero),
		cmocka_unit_test(test_fractions), cmocka_unit_test(test_refused),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
