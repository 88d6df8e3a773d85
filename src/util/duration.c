/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/duration.h"
#include "util/banned.h"

#define NS_PER_S UINT64_C(1000000000)

/* Largest first: a duration's units must come in this order. */
static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{"y", 365 * 86400 * NS_PER_S}, {"w", 7 * 86400 * NS_PER_S}, {"d", 86400 * NS_PER_S},
	{"h", 3600 * NS_PER_S},	       {"m", 60 * NS_PER_S},	    {"s", NS_PER_S},
	{"ms", UINT64_C(1000000)},     {"us", UINT64_C(1000)},	    {"ns", 1},
};

#define NUNITS	  (sizeof(units) / sizeof(units[0]))
#define POW10_MAX UINT64_C(10000000000000000000)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int refuse(struct duration_error *why, enum duration_fault fault, const char *at, size_t len)
{
	if (why) {
		memset(why, 0, sizeof(*why));
		why->fault = fault;
		why->at = at;
		why->len = len;
	}
	return -1;
}

/* The number at *p: whole part, and fraction as digits over 10^k; false when none or too long. */
struct number {
	uint64_t whole, frac, pow10; /* the value is whole + frac / pow10 */
	bool zero;		     /* every digit 0 */
};

static int read_number(const char **p, struct number *n, struct duration_error *why)
{
	const char *q = *p, *start = *p;

	*n = (struct number){0, 0, 1, true};
	if (!is_digit(*q) && !(*q == '.' && is_digit(q[1])))
		return refuse(why, DURATION_NOT_NUMBER, start, 0);
	for (; is_digit(*q); q++) {
		unsigned d = (unsigned)(*q - '0');

		if (n->whole > (UINT64_MAX - d) / 10)
			return refuse(why, DURATION_TOO_LONG, start, 0);
		n->whole = n->whole * 10 + d;
		n->zero &= d == 0;
	}
	if (*q == '.') {
		for (q++; is_digit(*q); q++) {
			if (n->pow10 < POW10_MAX) {
				n->frac = n->frac * 10 + (unsigned)(*q - '0');
				n->pow10 *= 10;
			}
			n->zero &= *q == '0';
		}
	}
	*p = q;
	return 0;
}

/* The number's nanoseconds in unit U, rounded down; false over UINT64_MAX. */
static bool scale(const struct number *n, size_t u, uint64_t *ns)
{
	unsigned __int128 frac = (unsigned __int128)n->frac * units[u].ns / n->pow10;

	return !__builtin_mul_overflow(n->whole, units[u].ns, ns) &&
	       !__builtin_add_overflow(*ns, (uint64_t)frac, ns);
}

/* One term at *p: its nanoseconds and unit index. */
static int term(const char **p, uint64_t *ns, size_t *u, struct duration_error *why)
{
	const char *num = *p, *name;
	struct number n;
	size_t len;

	if (read_number(p, &n, why) < 0)
		return -1;
	name = *p;
	for (len = 0; is_alpha(name[len]); len++)
		;
	if (len == 0)
		return refuse(why, DURATION_NO_UNIT, num, (size_t)(name - num));
	for (*u = 0; *u < NUNITS; (*u)++)
		if (strlen(units[*u].name) == len && !memcmp(units[*u].name, name, len))
			break;
	if (*u == NUNITS)
		return refuse(why, DURATION_BAD_UNIT, name, len);
	if (!scale(&n, *u, ns))
		return refuse(why, DURATION_TOO_LONG, num, 0);
	*p = name + len;
	return 0;
}

/* Zero alone: digits and at most one '.', all of them 0. */
static bool bare_zero(const char *s)
{
	const char *p = s;
	struct number n;

	return read_number(&p, &n, NULL) == 0 && !*p && n.zero;
}

int duration_scan(const char *s, int64_t *out, struct duration_error *why)
{
	uint64_t total = 0;
	size_t prev = NUNITS;

	if (bare_zero(s)) {
		*out = 0;
		return 0;
	}
	do {
		uint64_t ns = 0;
		size_t u = 0;

		if (term(&s, &ns, &u, why) < 0)
			return -1;
		if (prev != NUNITS && u <= prev) {
			refuse(why, DURATION_ORDER, NULL, 0);
			if (why) {
				why->unit = units[u].name;
				why->prev = units[prev].name;
			}
			return -1;
		}
		if (__builtin_add_overflow(total, ns, &total) || total > INT64_MAX)
			return refuse(why, DURATION_TOO_LONG, NULL, 0);
		prev = u;
	} while (*s);
	*out = (int64_t)total;
	return 0;
}

char *duration_strerror(const struct duration_error *why, char *buf, size_t size)
{
	switch (why->fault) {
	case DURATION_OK: snprintf(buf, size, "is a duration"); break;
	case DURATION_NOT_NUMBER:
		snprintf(buf, size,
			 "is not a duration (expected numbers with units, e.g. 30s or 1h30m)");
		break;
	case DURATION_NO_UNIT:
		snprintf(buf, size, "needs a unit after %.*s (" DURATION_UNITS ")", (int)why->len,
			 why->at);
		break;
	case DURATION_BAD_UNIT:
		snprintf(buf, size, "has unknown unit \"%.*s\" (expected " DURATION_UNITS ")",
			 (int)why->len, why->at);
		break;
	case DURATION_ORDER:
		snprintf(buf, size,
			 "has unit \"%s\" after \"%s\" (units go largest first, each once)",
			 why->unit, why->prev);
		break;
	case DURATION_TOO_LONG: snprintf(buf, size, "is too long (at most about 292 years)"); break;
	}
	return buf;
}
