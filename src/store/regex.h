/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_REGEX_H
#define PLATEAU_STORE_REGEX_H

#include <regex.h>
#include <stddef.h>

#include "util/error.h"

#define REGEX_REPEAT_MAX   1000 /* the largest count of a bounded repeat, as RE2's */
#define REGEX_DEPTH_MAX	   100	/* groups nested in groups */
#define REGEX_ATOMS_MAX	   1024 /* atoms of one regex, its bounded repeats expanded */
#define REGEX_NEST_MAX	   4	/* repeats applying to one atom, as in ((a+)+)+ */
#define REGEX_OPTIONAL_MAX 128	/* atoms that may be skipped, as in x? or x{0,9} */

/*
 * Compile pattern as a fully anchored POSIX extended regex, the way
 * Prometheus anchors its label matchers: "^(" pattern ")$" with
 * REG_EXTENDED | REG_NOSUB.
 *
 * The pattern is a client's and glibc's compiler is easily made to blow
 * up, so it is checked first and refused for:
 *  - a loop (*, +, {m,}) over what can match the empty string: (a|)+ or
 *    (a?)+ take exponential time (RE2, and so Prometheus, refuses a** too);
 *  - more than REGEX_NEST_MAX repeats on one atom: a+++ or ((a+)+)+ grow
 *    glibc's automaton twofold with each;
 *  - more than REGEX_ATOMS_MAX atoms, or more than *budget, once bounded
 *    repeats are expanded: glibc copies x{1000} a thousand times, and its
 *    memory grows with the square of the copies (x{0,32767} takes 8 GiB);
 *    a repeat count over REGEX_REPEAT_MAX, or a malformed one;
 *  - more than REGEX_OPTIONAL_MAX optional atoms (x?, x{0,n}, (x|)):
 *    glibc's matcher slows with the square of them, (a?){1000} takes 0.3 s
 *    on a 1 KiB value, and a query matches every series;
 *  - a backreference (RE2 has none; glibc's matcher is exponential with
 *    them);
 *  - a ')' without its '(' (glibc reads it as a literal, which would close
 *    the anchoring group early), an unterminated group or bracket, a
 *    trailing backslash, groups nested deeper than REGEX_DEPTH_MAX.
 * The atoms are taken from *budget, so one budget bounds all the regexes
 * of a query.
 *
 * Returns 0 with *re compiled (regfree() it), or ERR_FORMAT, ERR_LIMIT
 * (sizes) or ERR_NOMEM with a phrase in why[0..whysize), e.g.
 * "a backreference (\1)".
 */
int store_regex_compile(regex_t *re, const char *pattern, size_t *budget, char *why,
			size_t whysize);

#endif
