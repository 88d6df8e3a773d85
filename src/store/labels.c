/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/utf8.h"
#include "store/build.h"
#include "store/labels.h"
#include "store/text.h"

/* Longest text series_key_parse() reads: every part at its maximum, escaped. */
#define SERIES_KEY_MAX                              \
	(SERIES_APP_MAX + 1 + SERIES_TYPE_MAX + 2 + \
	 LABELS_MAX * (LABEL_KEY_MAX + 4 + 2 * LABEL_VALUE_MAX))

/* Whether s[0..len) is 1..max bytes, all of them in set. */
static bool all_of(const char *s, size_t len, size_t max, const char *set)
{
	size_t i;

	if (len == 0 || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

bool label_key_valid(const char *key, size_t len)
{
	return all_of(key, len, LABEL_KEY_MAX, TEXT_KEY_CHARS) && !text_is_digit(key[0]);
}

bool series_app_valid(const char *app, size_t len)
{
	return all_of(app, len, SERIES_APP_MAX, TEXT_APP_CHARS);
}

bool series_type_valid(const char *type, size_t len)
{
	return all_of(type, len, SERIES_TYPE_MAX, TEXT_KEY_CHARS);
}

static int label_cmp(const void *a, const void *b)
{
	const struct series_label *x = a, *y = b;

	return strcmp(x->key, y->key);
}

void labels_sort(struct series_label *labels, size_t n)
{
	if (n > 1)
		qsort(labels, n, sizeof(*labels), label_cmp);
}

const char *labels_get(const struct series_label *labels, size_t n, const char *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(key, labels[mid].key);

		if (c == 0)
			return labels[mid].value;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

bool label_key_map(const char *key, char out[LABEL_KEY_MAX + 1])
{
	size_t len = strlen(key), i;

	if (!memchr(key, '.', len) || !all_of(key, len, LABEL_KEY_MAX, TEXT_KEY_CHARS ".") ||
	    text_is_digit(key[0]))
		return false;
	for (i = 0; i < len; i++)
		out[i] = key[i] == '.' ? '_' : key[i];
	out[len] = '\0';
	return true;
}

/* Where labels[0..n) other than skip has key, or n. */
static size_t key_at(const struct series_label *labels, size_t n, size_t skip, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (i != skip && !strcmp(labels[i].key, key))
			return i;
	return n;
}

int labels_map(struct series_label *labels, size_t *n, char (*names)[LABEL_KEY_MAX + 1],
	       size_t *renamed, struct error *err)
{
	size_t i = 0;

	while (i < *n) {
		const char *orig = labels[i].key;
		size_t j;

		if (!label_key_map(orig, names[i])) {
			i++;
			continue;
		}
		labels[i].key = names[i];
		(*renamed)++;
		j = key_at(labels, *n, i, names[i]);
		if (j == *n) {
			i++;
			continue;
		}
		if (strcmp(labels[i].value, labels[j].value))
			return error_set(
				err, ERR_FORMAT,
				"label \"%s\" is given twice (\"%.64s\" is read as \"%s\") "
				"with different values",
				names[i], orig, names[i]);
		/* The same label twice: one goes, and the names after it move down. */
		memmove(&labels[i], &labels[i + 1], (*n - i - 1) * sizeof(*labels));
		memmove(&names[i], &names[i + 1], (*n - i - 1) * sizeof(*names));
		for (size_t k = i; k + 1 < *n; k++)
			if (labels[k].key == names[k + 1])
				labels[k].key = names[k];
		(*n)--;
	}
	return 0;
}

/* Why value cannot be a label value, or NULL when it can. */
static const char *value_fault(const char *value, size_t len)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t i, n;

	if (len == 0)
		return "an empty value";
	for (i = 0; i < len; i += n) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			return "a control character in its value";
		n = utf8_len(s + i, len - i);
		if (n == 0)
			return "a value that is not UTF-8";
	}
	return NULL;
}

int label_validate(const char *key, const char *value, struct error *err)
{
	size_t klen = strlen(key), vlen = strlen(value);
	char q[QUOTE_SIZE];
	const char *fault;

	if (!label_key_valid(key, klen))
		return error_set(
			err, ERR_FORMAT,
			"label name %s must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes)",
			text_quote(q, key, klen), LABEL_KEY_MAX);
	if (strcmp(key, LABEL_NAME) == 0)
		return error_set(err, ERR_FORMAT, "label name \"%s\" is reserved", LABEL_NAME);
	if (vlen > LABEL_VALUE_MAX)
		return error_set(err, ERR_LIMIT, "label \"%s\" has a value longer than %d bytes",
				 key, LABEL_VALUE_MAX);
	fault = value_fault(value, vlen);
	if (fault)
		return error_set(err, ERR_FORMAT, "label \"%s\" has %s", key, fault);
	return 0;
}

int labels_validate(const struct series_label *labels, size_t n, struct error *err)
{
	size_t i, j;

	if (n > LABELS_MAX)
		return error_set(err, ERR_LIMIT, "more than %d labels", LABELS_MAX);
	for (i = 0; i < n; i++) {
		int rc = label_validate(labels[i].key, labels[i].value, err);

		if (rc)
			return rc;
		for (j = 0; j < i; j++)
			if (strcmp(labels[i].key, labels[j].key) == 0)
				return error_set(err, ERR_FORMAT, "label \"%s\" is given twice",
						 labels[i].key);
	}
	return 0;
}

int series_validate(const struct series *s, struct error *err)
{
	char q[QUOTE_SIZE];

	if (!series_app_valid(s->app, strlen(s->app)))
		return error_set(err, ERR_FORMAT,
				 "app name %s must be 1 to %d bytes of [A-Za-z0-9._-]",
				 text_quote(q, s->app, strlen(s->app)), SERIES_APP_MAX);
	if (!series_type_valid(s->type, strlen(s->type)))
		return error_set(err, ERR_FORMAT,
				 "profile type %s must be 1 to %d bytes of [A-Za-z0-9_]",
				 text_quote(q, s->type, strlen(s->type)), SERIES_TYPE_MAX);
	return labels_validate(s->labels, s->nlabels, err);
}

size_t series_key_format(const struct series *s, char *buf, size_t size)
{
	struct series_label sorted[LABELS_MAX];
	size_t n = MIN(s->nlabels, (size_t)LABELS_MAX), i;
	struct textout o;

	if (n)
		memcpy(sorted, s->labels, n * sizeof(sorted[0]));
	labels_sort(sorted, n);
	textout_init(&o, buf, size);
	textout_addstr(&o, s->app);
	textout_addch(&o, '.');
	textout_addstr(&o, s->type);
	textout_addch(&o, '{');
	for (i = 0; i < n; i++) {
		if (i)
			textout_addch(&o, ',');
		textout_addstr(&o, sorted[i].key);
		textout_addch(&o, '=');
		textout_add_quoted(&o, sorted[i].value);
	}
	textout_addch(&o, '}');
	return textout_finish(&o);
}

void series_free(struct series *s)
{
	free(s);
}

int series_build_init(struct series_build *b, size_t text_len)
{
	size_t size = sizeof(struct series) + LABELS_MAX * sizeof(struct series_label) + text_len +
		      2 * (LABELS_MAX + 1);

	b->s = calloc(1, size);
	if (!b->s)
		return ERR_NOMEM;
	b->labels = (struct series_label *)(b->s + 1);
	b->s->labels = b->labels;
	b->strings = (char *)(b->labels + LABELS_MAX);
	return 0;
}

char *series_build_store(struct series_build *b, const char *src, size_t n)
{
	char *dst = b->strings;

	memcpy(dst, src, n);
	dst[n] = '\0';
	b->strings += n + 1;
	return dst;
}

int series_build_done(struct series_build *b, int rc, struct series **out)
{
	if (rc) {
		series_free(b->s);
		return rc;
	}
	*out = b->s;
	return 0;
}

void series_build_add(struct series_build *b, const char *key, const char *value)
{
	b->labels[b->s->nlabels].key = key;
	b->labels[b->s->nlabels].value = value;
	b->s->nlabels++;
}

/* The parse of a series key: the text, where it is, and the result being built. */
struct key_parser {
	struct text_cursor c;
	struct series_build b;
};

static int key_parse_name(struct key_parser *kp)
{
	size_t len = strspn(kp->c.p, TEXT_APP_CHARS);
	const char *dot = memrchr(kp->c.p, '.', len);

	if (!dot || dot == kp->c.p || dot + 1 == kp->c.p + len)
		return text_expected(&kp->c, "APP.TYPE");
	kp->b.s->app = series_build_store(&kp->b, kp->c.p, (size_t)(dot - kp->c.p));
	kp->b.s->type = series_build_store(&kp->b, dot + 1, len - (size_t)(dot - kp->c.p) - 1);
	kp->c.p += len;
	return 0;
}

static int key_parse_label(struct key_parser *kp)
{
	size_t len = strspn(kp->c.p, TEXT_KEY_CHARS);
	char value[LABEL_VALUE_MAX + 1];
	enum unquote_status st;
	const char *key, *start;

	if (kp->b.s->nlabels == LABELS_MAX)
		return text_fail_at(&kp->c, kp->c.p, ERR_LIMIT, "more than %d labels", LABELS_MAX);
	if (len == 0)
		return text_expected(&kp->c, "a label name");
	key = series_build_store(&kp->b, kp->c.p, len);
	kp->c.p += len;
	if (kp->c.p[0] != '=' || kp->c.p[1] != '"')
		return text_expected(&kp->c, "=\"");
	start = ++kp->c.p;
	st = text_unquote(&kp->c.p, value, LABEL_VALUE_MAX, &len);
	if (st != UNQUOTE_OK)
		return text_fail_at(&kp->c, st == UNQUOTE_UNTERMINATED ? start : kp->c.p,
				    st == UNQUOTE_TOO_LONG ? ERR_LIMIT : ERR_FORMAT,
				    "value of label \"%s\" has %s", key, text_unquote_why(st));
	series_build_add(&kp->b, key, series_build_store(&kp->b, value, len));
	return 0;
}

static int key_parse_labels(struct key_parser *kp)
{
	if (*kp->c.p != '{')
		return text_expected(&kp->c, "'{'");
	kp->c.p++;
	if (*kp->c.p == '}') {
		kp->c.p++;
		return 0;
	}
	for (;;) {
		int rc = key_parse_label(kp);

		if (rc)
			return rc;
		if (*kp->c.p == '}') {
			kp->c.p++;
			return 0;
		}
		if (*kp->c.p != ',')
			return text_expected(&kp->c, "',' or '}'");
		kp->c.p++;
	}
}

/* The parsed key must print as the text it came from. */
static int key_compare(struct key_parser *kp)
{
	size_t len = strlen(kp->c.text), i;
	char q[QUOTE_SIZE], *again;
	int rc = 0;

	again = malloc(len + 1);
	if (!again)
		return error_set(kp->c.err, ERR_NOMEM, "series key: out of memory");
	series_key_format(kp->b.s, again, len + 1);
	for (i = 0; again[i] && again[i] == kp->c.text[i]; i++)
		;
	if (again[i] || kp->c.text[i]) {
		kp->c.p = kp->c.text + i;
		rc = text_fail_at(&kp->c, kp->c.p, ERR_FORMAT, "not canonical: expected %s",
				  again[i] ? text_quote(q, again + i, strlen(again + i))
					   : "the end");
	}
	free(again);
	return rc;
}

/* The parsed key must be valid and be its own canonical text. */
static int key_check(struct key_parser *kp)
{
	const struct series *s = kp->b.s;
	struct error verr = ERROR_INIT;
	size_t i;

	if (*kp->c.p)
		return text_expected(&kp->c, "the end");
	kp->c.p = kp->c.text;
	if (series_validate(s, &verr))
		return text_fail_at(&kp->c, kp->c.p, verr.code, "%s", verr.msg);
	for (i = 1; i < s->nlabels; i++)
		if (strcmp(s->labels[i - 1].key, s->labels[i].key) > 0)
			return text_fail_at(&kp->c, kp->c.p, ERR_FORMAT,
					    "labels are not sorted by name");
	return key_compare(kp);
}

int series_key_parse(const char *key, struct series **out, struct error *err)
{
	struct key_parser kp = {{"series key", key, key, err}, {NULL, NULL, NULL}};
	size_t len = strlen(key);
	int rc;

	*out = NULL;
	if (len > SERIES_KEY_MAX)
		return error_set(err, ERR_LIMIT, "series key: longer than %d bytes",
				 SERIES_KEY_MAX);
	if (series_build_init(&kp.b, len))
		return error_set(err, ERR_NOMEM, "series key: out of memory");
	rc = key_parse_name(&kp);
	if (!rc)
		rc = key_parse_labels(&kp);
	if (!rc)
		rc = key_check(&kp);
	return series_build_done(&kp.b, rc, out);
}
