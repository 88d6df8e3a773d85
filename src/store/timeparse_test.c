/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "store/timeparse.h"

#define S  INT64_C(1000000000)
#define MS INT64_C(1000000)
/* 2020-01-01T00:00:00Z, Pyroscope's tests' "now". */
#define NOW (INT64_C(1577836800) * S)

static int64_t time_ok(const char *s)
{
	struct error err = ERROR_INIT;
	int64_t ns = 0;

	if (time_parse(s, NOW, &ns, &err))
		fail_msg("%s: %s", s, err.msg);
	return ns;
}

static void expect_time_error(const char *s, int64_t now, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	int64_t ns = 42;

	assert_int_equal(time_parse(s, now, &ns, &err), code);
	assert_int_equal(ns, 42);
	assert_string_equal(err.msg, msg);
}

/* Pyroscope's attime tests, and the digit-count boundaries. */
static void test_unix(void **state)
{
	(void)state;
	assert_int_equal(time_ok("1577836800"), NOW);
	assert_int_equal(time_ok("1577836800001"), NOW + MS);
	assert_int_equal(time_ok("1577836800000001"), NOW + 1000);
	assert_int_equal(time_ok("1577836800000000001"), NOW + 1);
	assert_int_equal(time_ok("0"), 0);
	assert_int_equal(time_ok("1"), S);
	assert_int_equal(time_ok("0000000001"), S);   /* 10 digits: seconds */
	assert_int_equal(time_ok("00000000001"), MS); /* 11: milliseconds */
	assert_int_equal(time_ok("10000000000"), INT64_C(10000000000) * MS);
	assert_int_equal(time_ok("0000000000001"), MS);	     /* 13 */
	assert_int_equal(time_ok("00000000000001"), 1000);   /* 14: microseconds */
	assert_int_equal(time_ok("0000000000000001"), 1000); /* 16 */
	assert_int_equal(time_ok("00000000000000001"), 1);   /* 17: nanoseconds */
	assert_int_equal(time_ok("9223372036"), INT64_C(9223372036) * S);
	assert_int_equal(time_ok("9223372036854"), INT64_C(9223372036854) * MS);
	assert_int_equal(time_ok("9223372036854775"), INT64_C(9223372036854775) * 1000);
	assert_int_equal(time_ok("9223372036854775807"), INT64_MAX);
}

static void test_unix_errors(void **state)
{
	(void)state;
	expect_time_error(
		"9223372037", NOW, ERR_LIMIT,
		"\"9223372037\" is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)");
	expect_time_error(
		"9999999999", NOW, ERR_LIMIT,
		"\"9999999999\" is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)");
	expect_time_error("9223372036855", NOW, ERR_LIMIT,
			  "\"9223372036855\" is out of range (1677-09-21T00:12:44Z to "
			  "2262-04-11T23:47:16Z)");
	expect_time_error("9223372036854776", NOW, ERR_LIMIT,
			  "\"9223372036854776\" is out of range (1677-09-21T00:12:44Z to "
			  "2262-04-11T23:47:16Z)");
	expect_time_error("9223372036854775808", NOW, ERR_LIMIT,
			  "\"9223372036854775808\" is out of range (1677-09-21T00:12:44Z to "
			  "2262-04-11T23:47:16Z)");
	expect_time_error("15778368000000000000", NOW, ERR_FORMAT,
			  "\"15778368000000000000\" has 20 digits: too many for a unix timestamp "
			  "(at most 19, nanoseconds)");
}

static void test_rfc3339(void **state)
{
	(void)state;
	assert_int_equal(time_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(time_ok("2020-01-01T00:00:00Z"), NOW);
	assert_int_equal(time_ok("2026-12-01T14:00:00Z"), INT64_C(1796133600) * S);
	assert_int_equal(time_ok("2026-12-01t14:00:00z"), INT64_C(1796133600) * S);
	assert_int_equal(time_ok("2026-12-01 14:00:00Z"), INT64_C(1796133600) * S);
	assert_int_equal(time_ok("2026-12-01T14:00:00+02:00"), INT64_C(1796126400) * S);
	assert_int_equal(time_ok("2026-12-01T14:00:00 02:00"), INT64_C(1796126400) * S);
	assert_int_equal(time_ok("2026-12-01T14:00:00-05:30"), INT64_C(1796153400) * S);
	assert_int_equal(time_ok("2026-12-01T14:00:00-00:00"), INT64_C(1796133600) * S);
	assert_int_equal(time_ok("2026-12-01T14:00:00.5Z"), INT64_C(1796133600) * S + 500 * MS);
	assert_int_equal(time_ok("2026-12-01T14:00:00.123456789+00:00"),
			 INT64_C(1796133600) * S + 123456789);
	assert_int_equal(time_ok("1969-12-31T23:59:59Z"), -S);
	assert_int_equal(time_ok("1969-12-31T23:59:59.9Z"), -S / 10);
	/* Leap years: every 4th, not every 100th, every 400th. */
	assert_int_equal(time_ok("2024-02-29T00:00:00Z"), INT64_C(1709164800) * S);
	assert_int_equal(time_ok("2000-02-29T12:00:00Z"), INT64_C(951825600) * S);
	assert_int_equal(time_ok("2000-03-01T00:00:00Z"), INT64_C(951868800) * S);
	assert_int_equal(time_ok("2100-03-01T00:00:00Z"), INT64_C(4107542400) * S);
	/* The ends of int64_t nanoseconds. */
	assert_int_equal(time_ok("2262-04-11T23:47:16.854775807Z"), INT64_MAX);
	assert_int_equal(time_ok("1677-09-21T00:12:44Z"), INT64_C(-9223372036) * S);
}

#define BOUNDS "is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)"
#define SYNTAX                                                                               \
	"is not an RFC 3339 time (expected YYYY-MM-DDTHH:MM:SS[.fraction] and Z, +HH:MM or " \
	"-HH:MM)"

static void test_rfc3339_errors(void **state)
{
	static const struct {
		const char *s;
		const char *msg; /* after the quoted value */
	} cases[] = {
		{"2023-02-29T00:00:00Z", "has day 29 (expected 01 to 28 in 2023-02)"},
		{"1900-02-29T00:00:00Z", "has day 29 (expected 01 to 28 in 1900-02)"},
		{"2026-04-31T00:00:00Z", "has day 31 (expected 01 to 30 in 2026-04)"},
		{"2026-01-00T00:00:00Z", "has day 00 (expected 01 to 31 in 2026-01)"},
		{"2026-13-01T00:00:00Z", "has month 13 (expected 01 to 12)"},
		{"2026-00-01T00:00:00Z", "has month 00 (expected 01 to 12)"},
		{"2026-12-01T24:00:00Z", "has hour 24 (expected 00 to 23)"},
		{"2026-12-01T23:60:00Z", "has minute 60 (expected 00 to 59)"},
		{"2026-12-31T23:59:60Z", "has second 60 (expected 00 to 59)"},
		{"2026-12-01T14:00:00+24:00",
		 "has offset +24:00 (expected hours 00 to 23, minutes 00 "
		 "to 59)"},
		{"2026-12-01T14:00:00-02:60",
		 "has offset -02:60 (expected hours 00 to 23, minutes 00 "
		 "to 59)"},
		{"2026-12-01T14:00:00.1234567891Z", "has more than 9 fractional digits"},
		{"2026-12-01T14:00:00", SYNTAX},
		{"2026-12-01T14:00Z", SYNTAX},
		{"2026-12-01", SYNTAX},
		{"2026-12-01T14:00:00.Z", SYNTAX},
		{"2026-12-01T14:00:00+0200", SYNTAX},
		{"2026-12-01T14:00:00Z ", SYNTAX},
		{"2026-1-01T14:00:00Z", SYNTAX},
		{"2026-12-01X14:00:00Z", SYNTAX},
		{"1677-09-21T00:12:43Z", BOUNDS},
		{"2262-04-11T23:47:16.854775808Z", BOUNDS},
		{"0000-01-01T00:00:00Z", BOUNDS},
		{"9999-12-31T23:59:59Z", BOUNDS},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char msg[256];

		snprintf(msg, sizeof(msg), "\"%s\" %s", cases[i].s, cases[i].msg);
		expect_time_error(cases[i].s, NOW,
				  strcmp(cases[i].msg, BOUNDS) == 0 ? ERR_LIMIT : ERR_FORMAT, msg);
	}
}

static void test_now(void **state)
{
	(void)state;
	assert_int_equal(time_ok("now"), NOW);
	assert_int_equal(time_ok("now-1s"), NOW - S);
	assert_int_equal(time_ok("now+1s"), NOW + S);
	assert_int_equal(time_ok("now-90s"), NOW - 90 * S);
	assert_int_equal(time_ok("now-15m"), NOW - 900 * S);
	assert_int_equal(time_ok("now-1h"), NOW - 3600 * S);
	assert_int_equal(time_ok("now-1h30m"), NOW - 5400 * S);
	assert_int_equal(time_ok("now-7d"), NOW - 7 * 86400 * S);
	assert_int_equal(time_ok("now-2w"), NOW - 14 * 86400 * S);
	assert_int_equal(time_ok("now-1y"), NOW - 365 * 86400 * S);
	assert_int_equal(time_ok("now-500ms"), NOW - 500 * MS);
	assert_int_equal(time_ok("now-0"), NOW);
}

static void test_time_errors(void **state)
{
	(void)state;
	expect_time_error(
		"", NOW, ERR_FORMAT,
		"\"\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, now or "
		"now-DURATION)");
	expect_time_error(
		"yesterday", NOW, ERR_FORMAT,
		"\"yesterday\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, "
		"now or now-DURATION)");
	expect_time_error(
		"nowish", NOW, ERR_FORMAT,
		"\"nowish\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, now "
		"or now-DURATION)");
	expect_time_error(
		"-5", NOW, ERR_FORMAT,
		"\"-5\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, now or "
		"now-DURATION)");
	expect_time_error(
		"1.5", NOW, ERR_FORMAT,
		"\"1.5\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, now or "
		"now-DURATION)");
	expect_time_error(
		" 1", NOW, ERR_FORMAT,
		"\" 1\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, now or "
		"now-DURATION)");
	expect_time_error(
		"now-", NOW, ERR_FORMAT,
		"\"now-\" is not a duration (expected numbers with units, e.g. 30s or 1h30m)");
	expect_time_error(
		"now-1x", NOW, ERR_FORMAT,
		"\"now-1x\" has unknown unit \"x\" (expected ns, us, ms, s, m, h, d, w or y)");
	expect_time_error("now-1", NOW, ERR_FORMAT,
			  "\"now-1\" needs a unit after 1 (ns, us, ms, s, m, h, d, w or y)");
	expect_time_error(
		"now-30m1h", NOW, ERR_FORMAT,
		"\"now-30m1h\" has unit \"h\" after \"m\" (units go largest first, each once)");
	expect_time_error(
		"now-1s", INT64_MIN + 1, ERR_LIMIT,
		"\"now-1s\" is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)");
	expect_time_error(
		"now+1ns", INT64_MAX, ERR_LIMIT,
		"\"now+1ns\" is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)");
	expect_time_error("now-300y", NOW, ERR_LIMIT,
			  "\"now-300y\" is too long (at most about 292 years)");
	expect_time_error("now-1000000y", NOW, ERR_LIMIT,
			  "\"now-1000000y\" is too long (at most about 292 years)");
	expect_time_error("now-99999999999999999999s", NOW, ERR_LIMIT,
			  "\"now-99999999999999999999s\" is too long (at most about 292 years)");
	expect_time_error("1e30", NOW, ERR_FORMAT,
			  "\"1e30\" is not a time (expected unix seconds, ms, us or ns, RFC 3339, "
			  "now or now-DURATION)");
}

static int64_t duration_ok(const char *s)
{
	struct error err = ERROR_INIT;
	int64_t ns = -1;

	if (duration_parse(s, &ns, &err))
		fail_msg("%s: %s", s, err.msg);
	return ns;
}

static void expect_duration_error(const char *s, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	int64_t ns = 42;

	assert_int_equal(duration_parse(s, &ns, &err), code);
	assert_int_equal(ns, 42);
	assert_string_equal(err.msg, msg);
}

static void test_duration(void **state)
{
	(void)state;
	assert_int_equal(duration_ok("30d"), 30 * 86400 * S);
	assert_int_equal(duration_ok("10s"), 10 * S);
	assert_int_equal(duration_ok("1h30m"), 5400 * S);
	assert_int_equal(duration_ok("500ms"), 500 * MS);
	assert_int_equal(duration_ok("1m5s"), 65 * S);
	assert_int_equal(duration_ok("1ms"), MS);
	assert_int_equal(duration_ok("7us"), 7000);
	assert_int_equal(duration_ok("7ns"), 7);
	assert_int_equal(duration_ok("2w"), 14 * 86400 * S);
	assert_int_equal(duration_ok("1y2w3d4h5m6s7ms8us9ns"),
			 ((((365 + 14 + 3) * INT64_C(24) + 4) * 60 + 5) * 60 + 6) * S + 7 * MS +
				 8009);
	assert_int_equal(duration_ok("0"), 0);
	assert_int_equal(duration_ok("0s"), 0);
	/* The one grammar (util/duration.h) takes zero written any way and fractions. */
	assert_int_equal(duration_ok("00"), 0);
	assert_int_equal(duration_ok("1.5h"), 5400 * S);
	assert_int_equal(duration_ok("292y"), INT64_C(292) * 365 * 86400 * S);
	assert_int_equal(duration_ok("9223372036854775807ns"), INT64_MAX);
}

static void test_duration_errors(void **state)
{
	(void)state;
	expect_duration_error(
		"", ERR_FORMAT,
		"\"\" is not a duration (expected numbers with units, e.g. 30s or 1h30m)");
	expect_duration_error(
		"h", ERR_FORMAT,
		"\"h\" is not a duration (expected numbers with units, e.g. 30s or 1h30m)");
	expect_duration_error("-1s", ERR_FORMAT,
			      "\"-1s\" is not a duration (expected numbers with units, e.g. 30s or "
			      "1h30m)");
	expect_duration_error("1h ", ERR_FORMAT,
			      "\"1h \" is not a duration (expected numbers with units, e.g. 30s or "
			      "1h30m)");
	expect_duration_error("10", ERR_FORMAT,
			      "\"10\" needs a unit after 10 (ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error("1h30", ERR_FORMAT,
			      "\"1h30\" needs a unit after 30 (ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error("1.5", ERR_FORMAT,
			      "\"1.5\" needs a unit after 1.5 (ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error(
		"10x", ERR_FORMAT,
		"\"10x\" has unknown unit \"x\" (expected ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error(
		"10S", ERR_FORMAT,
		"\"10S\" has unknown unit \"S\" (expected ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error(
		"1mo", ERR_FORMAT,
		"\"1mo\" has unknown unit \"mo\" (expected ns, us, ms, s, m, h, d, w or y)");
	expect_duration_error(
		"1h1h", ERR_FORMAT,
		"\"1h1h\" has unit \"h\" after \"h\" (units go largest first, each once)");
	expect_duration_error(
		"1s1m", ERR_FORMAT,
		"\"1s1m\" has unit \"m\" after \"s\" (units go largest first, each once)");
	expect_duration_error("300y", ERR_LIMIT, "\"300y\" is too long (at most about 292 years)");
	expect_duration_error("292y1000w", ERR_LIMIT,
			      "\"292y1000w\" is too long (at most about 292 years)");
	expect_duration_error("9223372036854775808ns", ERR_LIMIT,
			      "\"9223372036854775808ns\" is too long (at most about 292 years)");
	expect_duration_error("99999999999999999999s", ERR_LIMIT,
			      "\"99999999999999999999s\" is too long (at most about 292 years)");
}

static uint64_t size_ok(const char *s)
{
	struct error err = ERROR_INIT;
	uint64_t n = 1;

	if (size_parse(s, &n, &err))
		fail_msg("%s: %s", s, err.msg);
	return n;
}

static void expect_size_error(const char *s, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	uint64_t n = 42;

	assert_int_equal(size_parse(s, &n, &err), code);
	assert_int_equal(n, 42);
	assert_string_equal(err.msg, msg);
}

static void test_size(void **state)
{
	(void)state;
	assert_int_equal(size_ok("10GiB"), UINT64_C(10) << 30);
	assert_int_equal(size_ok("512MiB"), UINT64_C(512) << 20);
	assert_int_equal(size_ok("1KB"), 1000);
	assert_int_equal(size_ok("1kB"), 1000);
	assert_int_equal(size_ok("3MB"), 3000000);
	assert_int_equal(size_ok("2GB"), UINT64_C(2000000000));
	assert_int_equal(size_ok("1TB"), UINT64_C(1000000000000));
	assert_int_equal(size_ok("1PB"), UINT64_C(1000000000000000));
	assert_int_equal(size_ok("1KiB"), 1024);
	assert_int_equal(size_ok("1TiB"), UINT64_C(1) << 40);
	assert_int_equal(size_ok("16383PiB"), UINT64_C(16383) << 50);
	assert_int_equal(size_ok("1048576"), 1048576);
	assert_int_equal(size_ok("7B"), 7);
	assert_int_equal(size_ok("0"), 0);
	assert_int_equal(size_ok("18446744073709551615"), UINT64_MAX);
}

static void test_size_errors(void **state)
{
	(void)state;
	expect_size_error("", ERR_FORMAT,
			  "\"\" is not a size (expected bytes, e.g. 512MiB or 1GB)");
	expect_size_error("GiB", ERR_FORMAT,
			  "\"GiB\" is not a size (expected bytes, e.g. 512MiB or 1GB)");
	expect_size_error("-1", ERR_FORMAT,
			  "\"-1\" is not a size (expected bytes, e.g. 512MiB or 1GB)");
	expect_size_error(
		"10gib", ERR_FORMAT,
		"\"10gib\" has unknown unit \"gib\" (expected B, kB, KB, MB, GB, TB, PB, KiB, "
		"MiB, GiB, TiB or PiB)");
	expect_size_error(
		"10 GiB", ERR_FORMAT,
		"\"10 GiB\" has unknown unit \" GiB\" (expected B, kB, KB, MB, GB, TB, PB, "
		"KiB, MiB, GiB, TiB or PiB)");
	expect_size_error(
		"1.5GiB", ERR_FORMAT,
		"\"1.5GiB\" has unknown unit \".5GiB\" (expected B, kB, KB, MB, GB, TB, PB, "
		"KiB, MiB, GiB, TiB or PiB)");
	expect_size_error("18446744073709551616", ERR_LIMIT,
			  "\"18446744073709551616\" is too big (at most 16 EiB)");
	expect_size_error("16384PiB", ERR_LIMIT, "\"16384PiB\" is too big (at most 16 EiB)");
	expect_size_error("17179869184GiB", ERR_LIMIT,
			  "\"17179869184GiB\" is too big (at most 16 EiB)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix),	 cmocka_unit_test(test_unix_errors),
		cmocka_unit_test(test_rfc3339),	 cmocka_unit_test(test_rfc3339_errors),
		cmocka_unit_test(test_now),	 cmocka_unit_test(test_time_errors),
		cmocka_unit_test(test_duration), cmocka_unit_test(test_duration_errors),
		cmocka_unit_test(test_size),	 cmocka_unit_test(test_size_errors),
	};

	return cmocka_run_group_tests_name("timeparse", tests, NULL, NULL);
}
