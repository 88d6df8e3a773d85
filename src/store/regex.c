/* SPDX-License-Identifier: MIT */
#include <ctype.h>

#include "util/common.h"
#include "store/regex.h"

/*
 * The check walks the pattern as glibc's ERE parser does, keeping for each
 * item (an atom, or a group with what is inside it) what makes glibc slow:
 *  - its atoms: one character, escape or bracket expression is one, and a
 *    bounded repeat copies the item (x{3} is xxx), as glibc does;
 *  - of those, the optional ones (x? or the last two of x{1,3}): glibc's
 *    matcher tracks sets of them, (a?){1000} takes 0.3 s on a 1 KiB value;
 *  - whether it can match the empty string: glibc's compiler takes
 *    exponential time over loops of those, twenty copies of (a|)+ take
 *    seconds, forty take hours;
 *  - how many repeats apply to one atom in it: a+ with twenty more '+'
 *    takes 700 MiB.
 */
struct item {
	size_t atoms;
	size_t optional;
	bool nullable;
	unsigned nest;
};

struct level {
	struct item sum;  /* of the group's items so far (nullable unused) */
	bool branch_null; /* the items of the current branch so far are all nullable */
	bool any_null;	  /* an earlier branch (before a '|') is nullable */
};

struct scan {
	const char *p;
	struct level group[REGEX_DEPTH_MAX + 1]; /* [0] is the whole pattern */
	size_t depth;
	bool has_item;
	struct item item; /* the last atom or group: what a repeat applies to */
	size_t atoms;	  /* in all */
	size_t optional;  /* in all */
	size_t limit;	  /* of atoms */
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

static int check_sizes(struct scan *s)
{
	if (s->atoms > s->limit)
		return scan_fail(s, ERR_LIMIT,
				 "more than %zu atoms with its repeats expanded (x+ and x* cost "
				 "nothing)",
				 s->limit);
	if (s->optional > REGEX_OPTIONAL_MAX)
		return scan_fail(
			s, ERR_LIMIT,
			"more than %d optional atoms (as in x? or x{0,%d}; x* costs nothing)",
			REGEX_OPTIONAL_MAX, REGEX_OPTIONAL_MAX);
	return 0;
}

/* The last item is complete: fold it into its group. */
static void commit_item(struct scan *s)
{
	struct level *g = &s->group[s->depth];

	if (!s->has_item)
		return;
	g->sum.atoms += s->item.atoms;
	g->sum.optional += s->item.optional;
	g->sum.nest = MAX(g->sum.nest, s->item.nest);
	g->branch_null = g->branch_null && s->item.nullable;
	s->has_item = false;
}

static void set_item(struct scan *s, struct item item)
{
	commit_item(s);
	s->has_item = true;
	s->item = item;
}

static int scan_atom(struct scan *s, bool nullable, const char *next)
{
	set_item(s, (struct item){1, 0, nullable, 0});
	s->atoms++;
	s->p = next;
	return check_sizes(s);
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

static int scan_bracket(struct scan *s)
{
	const char *end = skip_bracket(s->p);

	if (!end)
		return scan_fail(s, ERR_FORMAT, "a '[' without its ']'");
	return scan_atom(s, false, end);
}

static int scan_escape(struct scan *s)
{
	char c = s->p[1];

	if (c == '\0')
		return scan_fail(s, ERR_FORMAT, "a trailing backslash");
	if (c >= '1' && c <= '9')
		return scan_fail(s, ERR_FORMAT, "a backreference (\\%c)", c);
	/* glibc's word and buffer boundaries match the empty string. */
	return scan_atom(s, strchr("bB<>`'", c) != NULL, s->p + 2);
}

static int scan_group(struct scan *s, char c)
{
	struct level *g;

	commit_item(s);
	if (c == '(') {
		if (s->depth == REGEX_DEPTH_MAX)
			return scan_fail(s, ERR_LIMIT, "groups nested deeper than %d",
					 REGEX_DEPTH_MAX);
		s->group[++s->depth] = (struct level){{0, 0, false, 0}, true, false};
	} else {
		if (s->depth == 0)
			return scan_fail(s, ERR_FORMAT, "a ')' without its '('");
		g = &s->group[s->depth--];
		g->sum.nullable = g->any_null || g->branch_null;
		/* (a|b|) is as costly as (a|b)? */
		if (g->sum.nullable) {
			s->optional += g->sum.atoms - g->sum.optional;
			g->sum.optional = g->sum.atoms;
		}
		set_item(s, g->sum);
	}
	s->p++;
	return 0;
}

static void scan_bar(struct scan *s)
{
	struct level *g = &s->group[s->depth];

	commit_item(s);
	g->any_null = g->any_null || g->branch_null;
	g->branch_null = true;
	s->p++;
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

/*
 * The repeat at s->p: ?, *, + or {m}, {m,}, {m,n}, {,n}.  *min is its
 * least count, *copies how many times glibc copies the item, *loops
 * whether it is unbounded.
 */
static int read_repeat(struct scan *s, size_t *min, size_t *copies, bool *loops)
{
	const char *q = s->p + 1;
	size_t m = 0, n = 0;
	bool has_m, comma, has_n = false;

	/* x? and x* are one copy; x+ is one, and a loop. */
	*copies = 1;
	*min = *s->p == '+';
	*loops = *s->p != '?';
	if (*s->p != '{')
		return 0;
	has_m = read_count(&q, &m);
	comma = *q == ',';
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
	*min = m;
	*loops = comma && !has_n;
	s->p = q;
	return 0;
}

/* The optional atoms of it repeated: what copies past the least count hold. */
static size_t optional_after(const struct item *it, size_t min, size_t copies, bool loops)
{
	size_t atoms = it->atoms * copies;

	if (loops) /* the loop itself is cheap: x* and x+ add nothing */
		return it->optional * copies;
	if (it->nullable)
		return atoms;
	return MIN(atoms, it->optional * copies + it->atoms * (copies - min));
}

static int scan_repeat(struct scan *s)
{
	struct item *it = &s->item;
	size_t min, copies, optional;
	bool loops;
	int rc = read_repeat(s, &min, &copies, &loops);

	s->p++;
	if (rc || !s->has_item)
		return rc; /* nothing to repeat: regcomp says so */
	if (loops && it->nullable)
		return scan_fail(s, ERR_FORMAT,
				 "a repeat of what can match the empty string (write (a?)+ as a*)");
	if (++it->nest > REGEX_NEST_MAX)
		return scan_fail(s, ERR_LIMIT,
				 "repeats nested more than %d deep (as in ((a+)+)+ or a++)",
				 REGEX_NEST_MAX);
	optional = optional_after(it, min, copies, loops);
	s->atoms += it->atoms * copies - it->atoms;
	s->optional += optional - it->optional;
	it->atoms *= copies;
	it->optional = optional;
	it->nullable = it->nullable || min == 0;
	return check_sizes(s);
}

static int scan_one(struct scan *s)
{
	switch (*s->p) {
	case '\\': return scan_escape(s);
	case '[': return scan_bracket(s);
	case '(':
	case ')': return scan_group(s, *s->p);
	case '|': scan_bar(s); return 0;
	case '{':
	case '*':
	case '+':
	case '?': return scan_repeat(s);
	case '^':
	case '$':
		set_item(s, (struct item){0, 0, true, 0});
		s->p++;
		return 0;
	default: return scan_atom(s, false, s->p + 1);
	}
}

static int check_pattern(const char *pattern, size_t *budget, char *why, size_t whysize)
{
	struct scan s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.p = pattern;
	s.group[0].branch_null = true;
	s.limit = MIN(*budget, (size_t)REGEX_ATOMS_MAX);
	s.why = why;
	s.whysize = whysize;
	while (*s.p && rc == 0)
		rc = scan_one(&s);
	if (rc == 0 && s.depth)
		rc = scan_fail(&s, ERR_FORMAT, "a '(' without its ')'");
	if (rc == 0)
		*budget -= s.atoms;
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
