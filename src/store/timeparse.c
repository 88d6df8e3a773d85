/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "store/text.h"
#include "store/timeparse.h"
#include "util/duration.h"

#define NS_PER_S    INT64_C(1000000000)
#define S_PER_DAY   INT64_C(86400)
#define TIME_FORMS  "unix seconds, ms, us or ns, RFC 3339, now or now-DURATION"
#define SIZE_UNITS  "B, kB, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB or PiB"
#define RFC3339	    "YYYY-MM-DDTHH:MM:SS[.fraction] and Z, +HH:MM or -HH:MM"
#define TIME_BOUNDS "1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z"

struct unit {
	const char *name;
	uint64_t scale;
};

static const struct unit size_units[] = {
	{"B", 1},
	{"kB", UINT64_C(1000)},
	{"KB", UINT64_C(1000)},
	{"MB", UINT64_C(1000000)},
	{"GB", UINT64_C(1000000000)},
	{"TB", UINT64_C(1000000000000)},
	{"PB", UINT64_C(1000000000000000)},
	{"KiB", UINT64_C(1) << 10},
	{"MiB", UINT64_C(1) << 20},
	{"GiB", UINT64_C(1) << 30},
	{"TiB", UINT64_C(1) << 40},
	{"PiB", UINT64_C(1) << 50},
};

/* Set "\"VALUE\" MESSAGE" and return code. */
__attribute__((format(printf, 4, 5))) static int fail(struct error *err, int code,
						      const char *value, const char *fmt, ...)
{
	char msg[sizeof(err->msg)], q[QUOTE_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(err, code, "%s %s", text_quote(q, value, strlen(value)), msg);
}

/*
 * Read the digits at *p into *v and their count into *ndigits; false when
 * there are none or the number is over UINT64_MAX.
 */
static bool read_number(const char **p, uint64_t *v, size_t *ndigits)
{
	const char *q = *p;
	uint64_t n = 0;

	for (; text_is_digit(*q); q++) {
		unsigned d = (unsigned)(*q - '0');

		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*ndigits = (size_t)(q - *p);
	*v = n;
	*p = q;
	return *ndigits > 0;
}

/* The index of the unit named by s[0..len) in units, or -1. */
static int find_unit(const struct unit *units, size_t nunits, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < nunits; i++)
		if (strlen(units[i].name) == len && memcmp(units[i].name, s, len) == 0)
			return (int)i;
	return -1;
}

/* The duration at s (util/duration.h), quoting whole (which holds s) in messages. */
static int parse_duration(const char *whole, const char *s, int64_t *out_ns, struct error *err)
{
	struct duration_error why;
	char msg[sizeof(err->msg)];

	if (duration_scan(s, out_ns, &why) == 0)
		return 0;
	return fail(err, why.fault == DURATION_TOO_LONG ? ERR_LIMIT : ERR_FORMAT, whole, "%s",
		    duration_strerror(&why, msg, sizeof(msg)));
}

int duration_parse(const char *s, int64_t *out_ns, struct error *err)
{
	return parse_duration(s, s, out_ns, err);
}

int size_parse(const char *s, uint64_t *out, struct error *err)
{
	const char *p = s;
	uint64_t n, bytes;
	size_t digits;
	int unit = 0;

	if (!text_is_digit(*p))
		return fail(err, ERR_FORMAT, s,
			    "is not a size (expected bytes, e.g. 512MiB or 1GB)");
	if (!read_number(&p, &n, &digits))
		return fail(err, ERR_LIMIT, s, "is too big (at most 16 EiB)");
	if (*p) {
		char q[QUOTE_SIZE];

		unit = find_unit(size_units, ARRAY_SIZE(size_units), p, strlen(p));
		if (unit < 0)
			return fail(err, ERR_FORMAT, s,
				    "has unknown unit %s (expected " SIZE_UNITS ")",
				    text_quote(q, p, strlen(p)));
	}
	if (__builtin_mul_overflow(n, size_units[unit].scale, &bytes))
		return fail(err, ERR_LIMIT, s, "is too big (at most 16 EiB)");
	*out = bytes;
	return 0;
}

/* Nanoseconds per unit of a unix timestamp of this many digits (1..19). */
static int64_t unix_scale(size_t digits)
{
	if (digits <= 10)
		return NS_PER_S;
	if (digits <= 13)
		return INT64_C(1000000);
	if (digits <= 16)
		return INT64_C(1000);
	return 1;
}

/* A unix timestamp: all digits, in the unit their count tells. */
static int parse_unix(const char *s, int64_t *out_ns, struct error *err)
{
	const char *p = s;
	size_t digits = strlen(s);
	uint64_t v = 0;

	if (digits > 19)
		return fail(
			err, ERR_FORMAT, s,
			"has %zu digits: too many for a unix timestamp (at most 19, nanoseconds)",
			digits);
	read_number(&p, &v, &digits); /* 19 digits fit in 64 bits */
	if (v > (uint64_t)(INT64_MAX / unix_scale(digits)))
		return fail(err, ERR_LIMIT, s, "is out of range (" TIME_BOUNDS ")");
	*out_ns = (int64_t)v * unix_scale(digits);
	return 0;
}

/* The fields of an RFC 3339 time. */
struct civil {
	int year, month, day, hour, minute, second;
	int64_t nanos;	 /* the fraction */
	int offset_sign; /* +1: east of UTC */
	int offset_h, offset_m;
	size_t fraction; /* fractional digits read */
};

/* Exactly n digits at *p into *v. */
static bool fixed(const char **p, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (!text_is_digit((*p)[i]))
			return false;
		*v = *v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return true;
}

/* Whether *p is one of the bytes of set; if so, move past it. */
static bool sep(const char **p, const char *set)
{
	if (**p == '\0' || !strchr(set, **p))
		return false;
	(*p)++;
	return true;
}

/* The fraction after a '.': its digits as nanoseconds. */
static void read_fraction(const char **p, struct civil *c)
{
	int64_t scale = NS_PER_S;

	c->nanos = 0;
	for (c->fraction = 0; text_is_digit(**p); c->fraction++, (*p)++) {
		scale /= 10;
		c->nanos += (**p - '0') * scale;
	}
}

static bool read_offset(const char **p, struct civil *c)
{
	c->offset_sign = 1;
	c->offset_h = c->offset_m = 0;
	if (sep(p, "Zz"))
		return true;
	/* A query string's unescaped '+' arrives as a space. */
	c->offset_sign = **p == '-' ? -1 : 1;
	return sep(p, "+- ") && fixed(p, 2, &c->offset_h) && sep(p, ":") &&
	       fixed(p, 2, &c->offset_m);
}

/* The syntax of an RFC 3339 time; ranges are checked after. */
static bool read_civil(const char *s, struct civil *c)
{
	const char *p = s;

	if (!fixed(&p, 4, &c->year) || !sep(&p, "-") || !fixed(&p, 2, &c->month) || !sep(&p, "-") ||
	    !fixed(&p, 2, &c->day) || !sep(&p, "Tt ") || !fixed(&p, 2, &c->hour) || !sep(&p, ":") ||
	    !fixed(&p, 2, &c->minute) || !sep(&p, ":") || !fixed(&p, 2, &c->second))
		return false;
	c->fraction = 0;
	c->nanos = 0;
	if (sep(&p, ".")) {
		read_fraction(&p, c);
		if (c->fraction == 0)
			return false;
	}
	return read_offset(&p, c) && *p == '\0';
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/*
 * Days from 1970-01-01 to y-m-d, proleptic Gregorian.  Years are counted
 * from March, so a leap day is the last day of its year, and in eras of
 * 400 years (146097 days), which repeat exactly.
 */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t year = m <= 2 ? y - 1 : y;
	int64_t era = (year >= 0 ? year : year - 399) / 400;
	int64_t year_of_era = year - era * 400;
	int64_t day_of_year = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;

	return era * 146097 + day_of_era - 719468; /* 719468: 0000-03-01 to 1970-01-01 */
}

static int check_civil(const char *s, const struct civil *c, struct error *err)
{
	if (c->fraction > 9)
		return fail(err, ERR_FORMAT, s, "has more than 9 fractional digits");
	if (c->month < 1 || c->month > 12)
		return fail(err, ERR_FORMAT, s, "has month %02d (expected 01 to 12)", c->month);
	if (c->day < 1 || c->day > days_in_month(c->year, c->month))
		return fail(err, ERR_FORMAT, s, "has day %02d (expected 01 to %d in %04d-%02d)",
			    c->day, days_in_month(c->year, c->month), c->year, c->month);
	if (c->hour > 23)
		return fail(err, ERR_FORMAT, s, "has hour %02d (expected 00 to 23)", c->hour);
	if (c->minute > 59)
		return fail(err, ERR_FORMAT, s, "has minute %02d (expected 00 to 59)", c->minute);
	if (c->second > 59)
		return fail(err, ERR_FORMAT, s, "has second %02d (expected 00 to 59)", c->second);
	if (c->offset_h > 23 || c->offset_m > 59)
		return fail(err, ERR_FORMAT, s,
			    "has offset %c%02d:%02d (expected hours 00 to 23, minutes 00 to 59)",
			    c->offset_sign < 0 ? '-' : '+', c->offset_h, c->offset_m);
	return 0;
}

static int parse_rfc3339(const char *s, int64_t *out_ns, struct error *err)
{
	struct civil c;
	int64_t secs, ns;
	int rc;

	if (!read_civil(s, &c))
		return fail(err, ERR_FORMAT, s, "is not an RFC 3339 time (expected " RFC3339 ")");
	rc = check_civil(s, &c, err);
	if (rc)
		return rc;
	secs = days_from_civil(c.year, c.month, c.day) * S_PER_DAY + c.hour * 3600 + c.minute * 60 +
	       c.second - c.offset_sign * (c.offset_h * 3600 + c.offset_m * 60);
	if (__builtin_mul_overflow(secs, NS_PER_S, &ns) || __builtin_add_overflow(ns, c.nanos, &ns))
		return fail(err, ERR_LIMIT, s, "is out of range (" TIME_BOUNDS ")");
	*out_ns = ns;
	return 0;
}

/* now, now-DURATION or now+DURATION. */
static int parse_now(const char *s, int64_t now_ns, int64_t *out_ns, struct error *err)
{
	int64_t d, t;
	int rc;

	if (s[3] == '\0') {
		*out_ns = now_ns;
		return 0;
	}
	if (s[3] != '-' && s[3] != '+')
		return fail(err, ERR_FORMAT, s, "is not a time (expected " TIME_FORMS ")");
	rc = parse_duration(s, s + 4, &d, err);
	if (rc)
		return rc;
	if (s[3] == '-' ? __builtin_sub_overflow(now_ns, d, &t)
			: __builtin_add_overflow(now_ns, d, &t))
		return fail(err, ERR_LIMIT, s, "is out of range (" TIME_BOUNDS ")");
	*out_ns = t;
	return 0;
}

int time_parse(const char *s, int64_t now_ns, int64_t *out_ns, struct error *err)
{
	if (*s && strspn(s, "0123456789") == strlen(s))
		return parse_unix(s, out_ns, err);
	if (strncmp(s, "now", 3) == 0)
		return parse_now(s, now_ns, out_ns, err);
	if (strspn(s, "0123456789") == 4 && s[4] == '-')
		return parse_rfc3339(s, out_ns, err);
	return fail(err, ERR_FORMAT, s, "is not a time (expected " TIME_FORMS ")");
}
