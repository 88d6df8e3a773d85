/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_DURATION_H
#define PLATEAU_DURATION_H

/*
 * plateau's one duration grammar (doc/durations.md), for every option,
 * variable and parameter that takes one: `plateau record --min-block`,
 * `plateau serve --retention` and its config's durations, the server's
 * `step` and `now-DURATION`, the agent's PLATEAU_UPLOAD_INTERVAL and
 * PLATEAU_LOCK_THRESHOLD.
 *
 *	duration = "0" | term { term }
 *	term     = number unit
 *	number   = digits [ "." [ digits ] ] | "." digits
 *	unit     = "y" | "w" | "d" | "h" | "m" | "s" | "ms" | "us" | "ns"
 *
 * Units largest first, each once (1h30m, 2m500ms); y is 365 d, w 7 d, d
 * 24 h.  A number may have a decimal fraction (1.5ms, .5s): the term is
 * rounded down to a whole nanosecond.  A bare number is taken only when
 * it is zero (0, 0.0).  No spaces, no sign, units case-sensitive.  At
 * most INT64_MAX ns (about 292 years).  Each caller checks its own range.
 *
 * libc only and no allocation: the in-process agent compiles this file
 * into its own library (meson.build).
 */

#include <stddef.h>
#include <stdint.h>

#define DURATION_UNITS "ns, us, ms, s, m, h, d, w or y"

/* Why duration_scan() refused its input. */
enum duration_fault {
	DURATION_OK = 0,
	DURATION_NOT_NUMBER, /* a term does not start with a number */
	DURATION_NO_UNIT,    /* a number (other than zero alone) without a unit */
	DURATION_BAD_UNIT,   /* a word that is not a unit */
	DURATION_ORDER,	     /* a unit after a smaller one or itself */
	DURATION_TOO_LONG,   /* over INT64_MAX ns */
};

/* The fault and where: pointers into the string given to duration_scan(). */
struct duration_error {
	enum duration_fault fault;
	const char *at;		 /* NO_UNIT: the number; BAD_UNIT: the word */
	size_t len;		 /* its length */
	const char *unit, *prev; /* ORDER: the unit, and the one before it (static) */
};

/*
 * Parse the whole of S as a duration into *NS (written only on success).
 * Returns 0, or -1 with *WHY (may be NULL) saying what is wrong.
 */
int duration_scan(const char *s, int64_t *ns, struct duration_error *why);

/*
 * WHY as the end of a sentence that starts with the value quoted, e.g.
 * `has unknown unit "x" (expected ns, us, ms, s, m, h, d, w or y)`, into
 * BUF (SIZE bytes, truncated to fit); returns BUF.
 */
char *duration_strerror(const struct duration_error *why, char *buf, size_t size);

#endif
