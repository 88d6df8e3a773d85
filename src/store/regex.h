/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_REGEX_H
#define PLATEAU_STORE_REGEX_H

#include <regex.h>
#include <stddef.h>

#include "util/error.h"

#define REGEX_REPEAT_MAX 1000 /* the largest count of a bounded repeat, as RE2's */
#define REGEX_DEPTH_MAX	 100  /* groups nested in groups */

/*
 * Compile pattern as a fully anchored POSIX extended regex, the way
 * Prometheus anchors its label matchers: "^(" pattern ")$" with
 * REG_EXTENDED | REG_NOSUB.
 *
 * glibc's compiler copies a bounded repeat's atom once per count
 * (x{0,32767} takes 8 GiB and half a minute), and the pattern is a
 * client's, so it is checked first and refused for: a backreference (RE2,
 * and so Prometheus, has none; glibc's matcher is exponential with them),
 * a ')' without its '(' (glibc reads it as a literal, which would close the
 * anchoring group early), a bounded repeat over REGEX_REPEAT_MAX or
 * malformed, groups nested deeper than REGEX_DEPTH_MAX, an unterminated
 * bracket or a trailing backslash, and bounded repeats that would add more
 * than *budget atoms.  The atoms they add are taken from *budget, so one
 * budget bounds all the regexes of a query.
 *
 * Returns 0 with *re compiled (regfree() it), or ERR_FORMAT, ERR_LIMIT
 * (repeats, depth, budget) or ERR_NOMEM with a phrase in why[0..whysize),
 * e.g. "a backreference (\1)".
 */
int store_regex_compile(regex_t *re, const char *pattern, size_t *budget, char *why,
			size_t whysize);

#endif
