/* SPDX-License-Identifier: MIT */
/*
 * Pyroscope reads this name one character at a time (ParseKey in its
 * pkg/og/storage/segment): the name to the first '{', then key '=' value
 * pairs ending at ',' or '}', each part trimmed, and it stops at the '}'.
 * This reads the same texts the same way, and refuses what Pyroscope
 * would silently drop (see ingest_name.h).
 */
#include "util/common.h"
#include "store/build.h"
#include "store/ingest_name.h"
#include "store/text.h"

/* Pyroscope's label names: '.' is read as '_', a leading digit is read, then refused. */
#define PYROSCOPE_KEY_CHARS TEXT_KEY_CHARS "."

struct name_parser {
	struct text_cursor c;
	struct series_build b;
	uint64_t mapped; /* bit i: label i's name had a '.' */
	size_t renamed;	 /* labels whose name had a '.' */
};

/* The type after the last '.' of the len-byte name at np->c.p; NULL without one. */
static int parse_type(struct name_parser *np, size_t len, const char *dot)
{
	const char *type = dot + 1, *end = np->c.p + len;
	char q[QUOTE_SIZE];

	if (type == end)
		return text_fail_at(&np->c, type, ERR_FORMAT, "expected a profile type after %s",
				    text_quote(q, np->c.p, len));
	if (!series_type_valid(type, (size_t)(end - type)))
		return text_fail_at(&np->c, type, ERR_FORMAT,
				    "profile type %s must be 1 to %d bytes of [A-Za-z0-9_]",
				    text_quote(q, type, (size_t)(end - type)), SERIES_TYPE_MAX);
	np->b.s->type = series_build_store(&np->b, type, (size_t)(end - type));
	return 0;
}

static int parse_name(struct name_parser *np)
{
	size_t len = strspn(np->c.p, TEXT_APP_CHARS);
	const char *dot = memrchr(np->c.p, '.', len);
	size_t applen = dot ? (size_t)(dot - np->c.p) : len;
	char q[QUOTE_SIZE];
	int rc;

	if (len == 0)
		return text_expected(&np->c, "an app name");
	if (applen == 0)
		return text_fail_at(&np->c, np->c.p, ERR_FORMAT, "expected an app name before %s",
				    text_quote(q, np->c.p, len));
	if (applen > SERIES_APP_MAX)
		return text_fail_at(&np->c, np->c.p, ERR_LIMIT,
				    "app name %s is longer than %d bytes",
				    text_quote(q, np->c.p, applen), SERIES_APP_MAX);
	np->b.s->app = series_build_store(&np->b, np->c.p, applen);
	rc = dot ? parse_type(np, len, dot) : 0;
	np->c.p += len;
	return rc;
}

/* The label name at np->c.p, '.' read as '_' (label_key_map()); *mapped says so. */
static int parse_key(struct name_parser *np, const char **key, bool *mapped)
{
	size_t len = strspn(np->c.p, PYROSCOPE_KEY_CHARS), upto = strcspn(np->c.p, "=,}");
	char raw[LABEL_KEY_MAX + 2], name[LABEL_KEY_MAX + 1], q[QUOTE_SIZE];

	/* The whole name up to its '=', for the message when a byte is not ours. */
	while (upto > len && text_is_space(np->c.p[upto - 1]))
		upto--;
	if (len == 0 && upto == 0)
		return text_expected(&np->c, "a label name or '}'");
	memcpy(raw, np->c.p, MIN(len, sizeof(raw) - 1));
	raw[MIN(len, sizeof(raw) - 1)] = '\0';
	*mapped = len == upto && len <= LABEL_KEY_MAX && label_key_map(raw, name);
	if (upto > len)
		len = upto;
	if (!*mapped && !label_key_valid(np->c.p, len))
		return text_fail_at(&np->c, np->c.p, len > LABEL_KEY_MAX ? ERR_LIMIT : ERR_FORMAT,
				    "label name %s must match [A-Za-z_.][A-Za-z0-9_.]* with '.' "
				    "read as '_' (at most %d bytes)",
				    text_quote(q, np->c.p, len), LABEL_KEY_MAX);
	*key = *mapped ? series_build_store(&np->b, name, len)
		       : series_build_store(&np->b, np->c.p, len);
	if (strcmp(*key, LABEL_NAME) == 0)
		return text_fail_at(&np->c, np->c.p, ERR_FORMAT, "label name \"%s\" is reserved",
				    LABEL_NAME);
	return 0;
}

/* The value after the '=' at np->c.p: to the next ',' or '}', trimmed; it may be empty. */
static int parse_value(struct name_parser *np, const char *key, const char **value)
{
	const char *start, *end;
	struct error verr = ERROR_INIT;

	np->c.p++;
	text_skip_space(&np->c);
	start = np->c.p;
	end = start + strcspn(start, ",}");
	np->c.p = end;
	if (!*end)
		return text_expected(&np->c, "',' or '}' after the value");
	while (end > start && text_is_space(end[-1]))
		end--;
	*value = series_build_store(&np->b, start, (size_t)(end - start));
	if (**value && label_validate(key, *value, &verr))
		return text_fail_at(&np->c, start, verr.code, "%s", verr.msg);
	return 0;
}

/*
 * Whether KEY=VALUE (MAPPED: its name had a '.') is new.  A name given
 * twice is an error, unless mapping made it so and the values are equal:
 * Pyroscope then keeps one.
 */
static int check_twice(struct name_parser *np, const char *key_at, const char *key,
		       const char *value, bool mapped, bool *dup)
{
	const struct series *s = np->b.s;

	*dup = false;
	for (size_t i = 0; i < s->nlabels; i++) {
		bool either = mapped || (np->mapped >> i & 1);

		if (strcmp(s->labels[i].key, key))
			continue;
		if (either && !strcmp(s->labels[i].value, value)) {
			*dup = true;
			return 0;
		}
		return either ? text_fail_at(&np->c, key_at, ERR_FORMAT,
					     "label \"%s\" is given twice ('.' is read as '_') "
					     "with different values",
					     key)
			      : text_fail_at(&np->c, key_at, ERR_FORMAT,
					     "label \"%s\" is given twice", key);
	}
	return 0;
}

static int parse_label(struct name_parser *np)
{
	const char *key_at = np->c.p, *key = NULL, *value = NULL;
	bool mapped = false, dup = false;
	int rc;

	rc = parse_key(np, &key, &mapped);
	if (rc)
		return rc;
	np->c.p += strlen(key);
	text_skip_space(&np->c);
	if (*np->c.p != '=')
		return text_expected(&np->c, "'=' after the label name");
	rc = parse_value(np, key, &value);
	if (rc == 0)
		rc = check_twice(np, key_at, key, value, mapped, &dup);
	if (rc || !*value)
		return rc;
	np->renamed += mapped;
	if (dup)
		return 0;
	if (np->b.s->nlabels == LABELS_MAX)
		return text_fail_at(&np->c, key_at, ERR_LIMIT, "more than %d labels", LABELS_MAX);
	np->mapped |= (uint64_t)mapped << np->b.s->nlabels;
	series_build_add(&np->b, key, value);
	return 0;
}

static int parse_labels(struct name_parser *np)
{
	np->c.p++;
	for (;;) {
		int rc;

		text_skip_space(&np->c);
		if (*np->c.p == '}')
			break;
		rc = parse_label(np);
		if (rc)
			return rc;
		if (*np->c.p == '}')
			break;
		np->c.p++; /* the ',' that ended the value */
	}
	np->c.p++;
	return 0;
}

static int parse(struct name_parser *np)
{
	int rc;

	text_skip_space(&np->c);
	rc = parse_name(np);
	if (rc)
		return rc;
	text_skip_space(&np->c);
	if (*np->c.p == '{') {
		rc = parse_labels(np);
		if (rc)
			return rc;
		text_skip_space(&np->c);
		return *np->c.p ? text_expected(&np->c, "the end after '}'") : 0;
	}
	return *np->c.p ? text_expected(&np->c, "'{' or the end") : 0;
}

int ingest_name_parse(const char *name, struct series **out, size_t *renamed, struct error *err)
{
	struct name_parser np = {{"ingest name", name, name, err}, {NULL, NULL, NULL}, 0, 0};
	size_t len = strlen(name);
	int rc;

	*out = NULL;
	*renamed = 0;
	if (len > INGEST_NAME_MAX)
		return error_set(err, ERR_LIMIT, "ingest name: longer than %d bytes",
				 INGEST_NAME_MAX);
	if (series_build_init(&np.b, len))
		return error_set(err, ERR_NOMEM, "ingest name: out of memory");
	rc = parse(&np);
	if (!rc)
		labels_sort(np.b.labels, np.b.s->nlabels);
	*renamed = rc ? 0 : np.renamed;
	return series_build_done(&np.b, rc, out);
}
