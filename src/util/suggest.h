/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SUGGEST_H
#define PLATEAU_SUGGEST_H

#include <stddef.h>

/*
 * "Did you mean" for a mistyped command or option name, after git's
 * help.c: the candidates closest to what was typed, when close enough.
 */

/*
 * Edit distance between a and b counting an insertion, a deletion, a
 * substitution or a swap of two adjacent characters as one edit
 * (optimal string alignment).  Names longer than SUGGEST_MAX_LEN bytes
 * compare as SIZE_MAX.
 */
#define SUGGEST_MAX_LEN 64
size_t suggest_distance(const char *a, const char *b);

/*
 * The candidates similar to typed: cands[0..n) (NULL entries are
 * skipped).  A candidate is similar when typed is a prefix of it (two
 * characters at least), or when its distance is at most a third of the
 * longer name's length, rounded up.  Only the closest ones are
 * kept (a prefix counts as closest).  Writes their indices to out[],
 * in table order, and returns how many (at most n).
 */
size_t suggest_similar(const char *typed, const char *const *cands, size_t n, size_t *out);

#endif
