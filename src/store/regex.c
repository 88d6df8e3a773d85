/* SPDX-License-Identifier: MIT */
#include <ctype.h>

#include "util/common.h"
#include "store/regex.h"

/*
 * The check walks the pattern as glibc's ERE parser does, counting atoms:
 * an atom is one character, escape or bracket expression; a group weighs
 * the atoms inside it; a bounded repeat multiplies the weight of what it
 * follows (x{3} is xxx).  What the repeats add is what glibc would copy.
 */
struct scan {
	const char *p;
	size_t weight[REGEX_DEPTH_MAX + 1]; /* atoms of each open group */
	size_t depth;
	size_t last;  /* atoms of the atom or group a repeat would apply to */
	size_t added; /* atoms the repeats added */
	size_t budget;
	char *why;
	size_t whysize;
};

__attribute__((format(printf, 3, 4))) static int scan_fail(struct scan *s, int code,
							   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, s->whysize, fmt, ap);
	va_end(ap);
	return code;
}

static void scan_atom(struct scan *s, size_t atoms)
{
	s->weight[s->depth] += atoms;
	s->last = atoms;
}

/* Past the bracket expression at p (its '['), or NULL when it has no end. */
static const char *skip_bracket(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']')
		p++;
	for (; *p && *p != ']'; p++) {
		/* [:class:], [.coll.] and [=equiv=] may hold a ']'. */
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			char close[3] = {p[1], ']', '\0'};
			const char *end = strstr(p + 2, close);

			if (!end)
				return NULL;
			p = end + 1;
		}
	}
	return *p ? p + 1 : NULL;
}

/* Read up to REGEX_REPEAT_MAX + 1 of the digits at *p (more saturate). */
static bool read_count(const char **p, size_t *n)
{
	const char *q = *p;

	*n = 0;
	for (; *q >= '0' && *q <= '9'; q++)
		*n = MIN(*n * 10 + (size_t)(*q - '0'), (size_t)REGEX_REPEAT_MAX + 1);
	if (q == *p)
		return false;
	*p = q;
	return true;
}

/* The repeat {m}, {m,}, {m,n} or {,n} at s->p: how many copies glibc makes. */
static int scan_bound(struct scan *s, size_t *copies)
{
	const char *q = s->p + 1;
	size_t m = 0, n = 0;
	bool has_m = read_count(&q, &m), comma = *q == ',', has_n = false;

	if (comma) {
		q++;
		has_n = read_count(&q, &n);
	}
	if (*q != '}' || (!has_m && !comma) || (has_n && n < m))
		return scan_fail(s, ERR_FORMAT, "a malformed repeat (expected {m}, {m,} or {m,n})");
	if (m > REGEX_REPEAT_MAX || n > REGEX_REPEAT_MAX)
		return scan_fail(s, ERR_LIMIT, "a repeat count over %d", REGEX_REPEAT_MAX);
	/* x{m,} is m copies and a star. */
	*copies = has_n ? n : comma ? m + 1 : m;
	s->p = q + 1;
	return 0;
}

static int scan_repeat(struct scan *s)
{
	size_t copies = 0, more;
	int rc = scan_bound(s, &copies);

	if (rc)
		return rc;
	more = s->last * (copies ? copies - 1 : 0);
	s->added += more;
	s->weight[s->depth] += more;
	s->last += more;
	if (s->added > s->budget)
		return scan_fail(s, ERR_LIMIT,
				 "bounded repeats that add over %zu atoms, the budget left to the "
				 "selector's regexes (x+ and x* cost nothing)",
				 s->budget);
	return 0;
}

static int scan_group(struct scan *s, char c)
{
	if (c == '(') {
		if (s->depth == REGEX_DEPTH_MAX)
			return scan_fail(s, ERR_LIMIT, "groups nested deeper than %d",
					 REGEX_DEPTH_MAX);
		s->weight[++s->depth] = 0;
		s->last = 0;
	} else {
		if (s->depth == 0)
			return scan_fail(s, ERR_FORMAT, "a ')' without its '('");
		s->depth--;
		scan_atom(s, s->weight[s->depth + 1]);
	}
	s->p++;
	return 0;
}

static int scan_escape(struct scan *s)
{
	char c = s->p[1];

	if (c == '\0')
		return scan_fail(s, ERR_FORMAT, "a trailing backslash");
	if (c >= '1' && c <= '9')
		return scan_fail(s, ERR_FORMAT, "a backreference (\\%c)", c);
	scan_atom(s, 1);
	s->p += 2;
	return 0;
}

static int scan_bracket(struct scan *s)
{
	const char *end = skip_bracket(s->p);

	if (!end)
		return scan_fail(s, ERR_FORMAT, "a '[' without its ']'");
	scan_atom(s, 1);
	s->p = end;
	return 0;
}

static int scan_one(struct scan *s)
{
	switch (*s->p) {
	case '\\': return scan_escape(s);
	case '[': return scan_bracket(s);
	case '(':
	case ')': return scan_group(s, *s->p);
	case '{': return scan_repeat(s);
	case '|': s->last = 0; break;
	case '*':
	case '+':
	case '?':
	case '^':
	case '$': break;
	default: scan_atom(s, 1); break;
	}
	s->p++;
	return 0;
}

static int check_pattern(const char *pattern, size_t *budget, char *why, size_t whysize)
{
	struct scan s;
	int rc = 0;

	s.p = pattern;
	s.weight[0] = 0;
	s.depth = 0;
	s.last = 0;
	s.added = 0;
	s.budget = *budget;
	s.why = why;
	s.whysize = whysize;
	while (*s.p && rc == 0)
		rc = scan_one(&s);
	if (rc == 0 && s.depth)
		rc = scan_fail(&s, ERR_FORMAT, "a '(' without its ')'");
	if (rc == 0)
		*budget -= s.added;
	return rc;
}

int store_regex_compile(regex_t *re, const char *pattern, size_t *budget, char *why, size_t whysize)
{
	size_t len = strlen(pattern);
	char *anchored;
	int rc;

	rc = check_pattern(pattern, budget, why, whysize);
	if (rc)
		return rc;
	anchored = malloc(len + 5);
	if (!anchored) {
		snprintf(why, whysize, "no memory to compile it");
		return ERR_NOMEM;
	}
	memcpy(anchored, "^(", 2);
	memcpy(anchored + 2, pattern, len);
	memcpy(anchored + 2 + len, ")$", 3);
	rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc == 0)
		return 0;
	/* glibc's messages are capitalised sentences; they follow a colon here. */
	if (regerror(rc, re, why, whysize) > 1 && whysize)
		why[0] = (char)tolower((unsigned char)why[0]);
	return rc == REG_ESPACE ? ERR_NOMEM : ERR_FORMAT;
}
