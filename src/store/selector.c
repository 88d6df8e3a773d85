/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "store/regex.h"
#include "store/selector.h"
#include "store/text.h"

struct selector {
	const char *app; /* NULL when there is no name */
	const char *type;
	size_t n;
	/* order[i] is the i-th matcher in sorted order: a regex_t is not moved. */
	unsigned char order[SELECTOR_MATCHERS_MAX];
	struct matcher m[SELECTOR_MATCHERS_MAX];
	char strings[]; /* app, type, keys and values, each NUL-terminated */
};

struct parser {
	struct text_cursor c;
	struct selector *s;
	char *strings; /* the next free byte of s->strings */
	size_t budget; /* regex atoms left, see regex.h */
};

static const char *const op_names[] = {"=", "!=", "=~", "!~"};

const char *matcher_op_name(enum matcher_op op)
{
	return (unsigned)op < ARRAY_SIZE(op_names) ? op_names[op] : "?";
}

/* Copy n bytes of src to the selector's strings; the copy. */
static char *store(struct parser *ps, const char *src, size_t n)
{
	char *dst = ps->strings;

	memcpy(dst, src, n);
	dst[n] = '\0';
	ps->strings += n + 1;
	return dst;
}

/* Check the APP.TYPE at ps->c.p, len bytes of TEXT_APP_CHARS; dot is its last '.'. */
static int check_name(struct parser *ps, size_t len, const char *dot)
{
	const char *name = ps->c.p, *type = dot ? dot + 1 : NULL, *dash;
	char q[QUOTE_SIZE];

	if (!dot)
		return text_fail_at(&ps->c, name + len, ERR_FORMAT,
				    "expected '.' and a profile type after app name %s",
				    text_quote(q, name, len));
	if (dot == name)
		return text_fail_at(&ps->c, name, ERR_FORMAT, "expected an app name before %s",
				    text_quote(q, name, len));
	if (dot - name > SERIES_APP_MAX)
		return text_fail_at(&ps->c, name, ERR_LIMIT, "app name %s is longer than %d bytes",
				    text_quote(q, name, (size_t)(dot - name)), SERIES_APP_MAX);
	if (type == name + len)
		return text_fail_at(&ps->c, type, ERR_FORMAT, "expected a profile type after %s",
				    text_quote(q, name, len));
	dash = memchr(type, '-', (size_t)(name + len - type));
	if (dash)
		return text_fail_at(&ps->c, dash, ERR_FORMAT,
				    "profile type %s has a '-' (expected [A-Za-z0-9_])",
				    text_quote(q, type, (size_t)(name + len - type)));
	if (name + len - type > SERIES_TYPE_MAX)
		return text_fail_at(
			&ps->c, type, ERR_LIMIT, "profile type %s is longer than %d bytes",
			text_quote(q, type, (size_t)(name + len - type)), SERIES_TYPE_MAX);
	return 0;
}

/* The name at ps->c.p, if any: 1 when there is one, 0 when not, or an error. */
static int parse_name(struct parser *ps)
{
	size_t len = strspn(ps->c.p, TEXT_APP_CHARS);
	const char *dot = memrchr(ps->c.p, '.', len);
	int rc;

	if (len == 0)
		return 0;
	rc = check_name(ps, len, dot);
	if (rc)
		return rc;
	ps->s->app = store(ps, ps->c.p, (size_t)(dot - ps->c.p));
	ps->s->type = store(ps, dot + 1, (size_t)(ps->c.p + len - dot - 1));
	ps->c.p += len;
	return 1;
}

static int parse_key(struct parser *ps, struct matcher *m)
{
	size_t len = strspn(ps->c.p, TEXT_KEY_CHARS);
	char q[QUOTE_SIZE];

	if (len == 0)
		return text_expected(&ps->c, "a label name or '}'");
	if (text_is_digit(ps->c.p[0]))
		return text_fail_at(&ps->c, ps->c.p, ERR_FORMAT,
				    "label name %s starts with a digit",
				    text_quote(q, ps->c.p, len));
	if (len > LABEL_KEY_MAX)
		return text_fail_at(&ps->c, ps->c.p, ERR_LIMIT,
				    "label name %s is longer than %d bytes",
				    text_quote(q, ps->c.p, len), LABEL_KEY_MAX);
	m->key = store(ps, ps->c.p, len);
	ps->c.p += len;
	return 0;
}

static int parse_op(struct parser *ps, struct matcher *m)
{
	char what[LABEL_KEY_MAX + 64];
	const char *p = ps->c.p;

	if (p[0] == '=')
		m->op = p[1] == '~' ? MATCH_RE : MATCH_EQ;
	else if (p[0] == '!' && (p[1] == '=' || p[1] == '~'))
		m->op = p[1] == '=' ? MATCH_NE : MATCH_NRE;
	else {
		snprintf(what, sizeof(what), "'=', '!=', '=~' or '!~' after \"%s\"", m->key);
		return text_expected(&ps->c, what);
	}
	ps->c.p += strlen(op_names[m->op]);
	return 0;
}

static int parse_value(struct parser *ps, struct matcher *m)
{
	const char *start = ps->c.p;
	char what[LABEL_KEY_MAX + 32], *value = ps->strings;
	enum unquote_status st;
	size_t len;

	if (*start != '"' && *start != '\'') {
		snprintf(what, sizeof(what), "a quoted value after %s%s", m->key, op_names[m->op]);
		return text_expected(&ps->c, what);
	}
	st = text_unquote(&ps->c.p, value, LABEL_VALUE_MAX, &len);
	if (st != UNQUOTE_OK)
		return text_fail_at(&ps->c, st == UNQUOTE_UNTERMINATED ? start : ps->c.p,
				    st == UNQUOTE_TOO_LONG ? ERR_LIMIT : ERR_FORMAT,
				    "value of \"%s\" has %s", m->key, text_unquote_why(st));
	m->value = value;
	ps->strings += len + 1;
	return 0;
}

static int compile_regex(struct parser *ps, struct matcher *m, const char *at)
{
	char why[160], q[QUOTE_SIZE];
	int rc;

	if (m->op != MATCH_RE && m->op != MATCH_NRE)
		return 0;
	rc = store_regex_compile(&m->re, m->value, &ps->budget, why, sizeof(why));
	if (rc)
		return text_fail_at(&ps->c, at, rc, "bad regex in %s%s%s: %s", m->key,
				    op_names[m->op], text_quote(q, m->value, strlen(m->value)),
				    why);
	return 0;
}

static int parse_matcher(struct parser *ps)
{
	struct matcher *m = &ps->s->m[ps->s->n];
	const char *value_at;
	int rc;

	if (ps->s->n == SELECTOR_MATCHERS_MAX)
		return text_fail_at(&ps->c, ps->c.p, ERR_LIMIT, "more than %d matchers",
				    SELECTOR_MATCHERS_MAX);
	rc = parse_key(ps, m);
	if (rc)
		return rc;
	text_skip_space(&ps->c);
	rc = parse_op(ps, m);
	if (rc)
		return rc;
	text_skip_space(&ps->c);
	value_at = ps->c.p;
	rc = parse_value(ps, m);
	if (!rc)
		rc = compile_regex(ps, m, value_at);
	if (!rc)
		ps->s->n++; /* only now: selector_free() frees the regexes of the first n */
	return rc;
}

/* The matchers in braces at ps->c.p, its '{'. */
static int parse_matchers(struct parser *ps)
{
	ps->c.p++;
	for (;;) {
		int rc;

		text_skip_space(&ps->c);
		if (*ps->c.p == '}')
			break;
		rc = parse_matcher(ps);
		if (rc)
			return rc;
		text_skip_space(&ps->c);
		if (*ps->c.p == '}')
			break;
		if (*ps->c.p != ',')
			return text_expected(&ps->c, "',' or '}'");
		ps->c.p++;
	}
	ps->c.p++;
	return 0;
}

static int parse(struct parser *ps)
{
	int has_name, rc = 0;

	text_skip_space(&ps->c);
	has_name = parse_name(ps);
	if (has_name < 0)
		return has_name;
	text_skip_space(&ps->c);
	if (*ps->c.p == '{')
		rc = parse_matchers(ps);
	else if (!has_name)
		return text_expected(&ps->c, "an app name or '{'");
	else if (*ps->c.p)
		return text_expected(&ps->c, "'{' or the end");
	if (rc)
		return rc;
	text_skip_space(&ps->c);
	return *ps->c.p ? text_expected(&ps->c, "the end") : 0;
}

static int matcher_cmp(const struct matcher *a, const struct matcher *b)
{
	int c = strcmp(a->key, b->key);

	if (c == 0)
		c = (int)a->op - (int)b->op;
	if (c == 0)
		c = strcmp(a->value, b->value);
	return c;
}

/* Insertion sort of the order: at most SELECTOR_MATCHERS_MAX entries. */
static void sort_matchers(struct selector *s)
{
	size_t i, j;

	for (i = 0; i < s->n; i++) {
		unsigned char x = (unsigned char)i;

		for (j = i; j > 0 && matcher_cmp(&s->m[s->order[j - 1]], &s->m[x]) > 0; j--)
			s->order[j] = s->order[j - 1];
		s->order[j] = x;
	}
}

int selector_parse(const char *text, struct selector **out, struct error *err)
{
	size_t len = strlen(text);
	struct parser ps = {{"selector", text, text, err}, NULL, NULL, SELECTOR_REGEX_BUDGET};
	int rc;

	*out = NULL;
	if (len > SELECTOR_TEXT_MAX)
		return error_set(err, ERR_LIMIT, "selector: longer than %d bytes",
				 SELECTOR_TEXT_MAX);
	/* Decoded strings are no longer than their text; each adds a NUL. */
	ps.s = calloc(1, sizeof(*ps.s) + len + 2 * (SELECTOR_MATCHERS_MAX + 1));
	if (!ps.s)
		return error_set(err, ERR_NOMEM, "selector: out of memory");
	ps.strings = ps.s->strings;
	rc = parse(&ps);
	if (rc) {
		selector_free(ps.s);
		return rc;
	}
	sort_matchers(ps.s);
	*out = ps.s;
	return 0;
}

void selector_free(struct selector *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		if (s->m[i].op == MATCH_RE || s->m[i].op == MATCH_NRE)
			regfree(&s->m[i].re);
	free(s);
}

const char *selector_app(const struct selector *s)
{
	return s->app;
}

const char *selector_type(const struct selector *s)
{
	return s->type;
}

size_t selector_nmatchers(const struct selector *s)
{
	return s->n;
}

const struct matcher *selector_matcher(const struct selector *s, size_t i)
{
	return i < s->n ? &s->m[s->order[i]] : NULL;
}

bool matcher_match(const struct matcher *m, const char *value)
{
	switch (m->op) {
	case MATCH_EQ: return strcmp(m->value, value) == 0;
	case MATCH_NE: return strcmp(m->value, value) != 0;
	case MATCH_RE: return regexec(&m->re, value, 0, NULL, 0) == 0;
	case MATCH_NRE: return regexec(&m->re, value, 0, NULL, 0) != 0;
	}
	return false;
}

bool selector_match(const struct selector *s, const struct series *series)
{
	char name[SERIES_APP_MAX + SERIES_TYPE_MAX + 2];
	size_t i;

	if (s->app && (strcmp(s->app, series->app) != 0 || strcmp(s->type, series->type) != 0))
		return false;
	for (i = 0; i < s->n; i++) {
		const struct matcher *m = &s->m[i];
		const char *value;

		if (strcmp(m->key, LABEL_NAME) == 0) {
			snprintf(name, sizeof(name), "%s.%s", series->app, series->type);
			value = name;
		} else if (strcmp(m->key, LABEL_SERVICE) == 0) {
			value = series->app; /* Pyroscope's name for the app */
		} else {
			value = labels_get(series->labels, series->nlabels, m->key);
		}
		if (!matcher_match(m, value ? value : ""))
			return false;
	}
	return true;
}

size_t selector_format(const struct selector *s, char *buf, size_t size)
{
	struct textout o;
	size_t i;

	textout_init(&o, buf, size);
	if (s->app) {
		textout_addstr(&o, s->app);
		textout_addch(&o, '.');
		textout_addstr(&o, s->type);
	}
	if (s->n || !s->app)
		textout_addch(&o, '{');
	for (i = 0; i < s->n; i++) {
		const struct matcher *m = selector_matcher(s, i);

		if (i)
			textout_addch(&o, ',');
		textout_addstr(&o, m->key);
		textout_addstr(&o, op_names[m->op]);
		textout_add_quoted(&o, m->value);
	}
	if (s->n || !s->app)
		textout_addch(&o, '}');
	return textout_finish(&o);
}
