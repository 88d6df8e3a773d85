/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_LABELS_H
#define PLATEAU_STORE_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/*
 * A series of the profile store is named by an app, a profile type and a
 * set of labels: app "checkout", type "cpu", labels {region="eu-west"}.
 * Its canonical key, series_key_format(), is the text the store keys it
 * by:
 *
 *	checkout.cpu{region="eu-west",zone="b"}
 *
 * keys sorted bytewise, values double-quoted and escaped, no spaces,
 * braces always present (checkout.cpu{}).  doc/selector.md has the rules.
 */

#define SERIES_APP_MAX	100  /* bytes of an app name */
#define SERIES_TYPE_MAX 64   /* bytes of a profile type */
#define LABEL_KEY_MAX	64   /* bytes of a label name */
#define LABEL_VALUE_MAX 1024 /* bytes of a label value */
#define LABELS_MAX	32   /* labels of a series */
/* The label selectors match against "app.type"; no series may carry it. */
#define LABEL_NAME "__name__"

/* A label.  Both strings are borrowed unless the owner says otherwise. */
struct series_label {
	const char *key;
	const char *value;
};

/*
 * A series: its name and labels.  As a view, every pointer is borrowed.
 * series_key_parse() and ingest_name_parse() return one in a single
 * allocation that owns everything it points at (free it with
 * series_free()), with the labels sorted by key.
 */
struct series {
	const char *app;
	const char *type;
	const struct series_label *labels;
	size_t nlabels;
};

/* [A-Za-z_][A-Za-z0-9_]*, 1..LABEL_KEY_MAX bytes. */
bool label_key_valid(const char *key, size_t len);
/* [A-Za-z0-9._-], 1..SERIES_APP_MAX bytes. */
bool series_app_valid(const char *app, size_t len);
/* [A-Za-z0-9_], 1..SERIES_TYPE_MAX bytes. */
bool series_type_valid(const char *type, size_t len);

/*
 * 0 when one label is valid (the checks of labels_validate() that need no
 * other label), else the error with its one-line message.
 */
int label_validate(const char *key, const char *value, struct error *err);

/* Sort labels by key, bytewise (as strcmp() orders them). */
void labels_sort(struct series_label *labels, size_t n);

/* The value of key in labels sorted by key, or NULL when it has none. */
const char *labels_get(const struct series_label *labels, size_t n, const char *key);

/*
 * 0 when the labels, in any order, can name a series: at most LABELS_MAX,
 * keys valid, not LABEL_NAME and each once, values of 1..LABEL_VALUE_MAX
 * bytes of UTF-8 without control characters.  Otherwise ERR_FORMAT (or
 * ERR_LIMIT for a count or size) with a one-line message naming the label,
 * e.g. label "region" has an empty value.
 */
int labels_validate(const struct series_label *labels, size_t n, struct error *err);

/* labels_validate(), and a valid app and type. */
int series_validate(const struct series *s, struct error *err);

/*
 * Write the canonical key of a valid series (series_validate()) to
 * buf[0..size), as snprintf() does: the text is NUL-terminated when size >
 * 0 and cut to fit; the return value is its whole length.  The labels may
 * be in any order.
 */
size_t series_key_format(const struct series *s, char *buf, size_t size);

/*
 * Parse a canonical series key into *out (the caller frees it with
 * series_free()).  Only the canonical text is accepted, so a key
 * round-trips byte for byte.  Returns 0; ERR_FORMAT or ERR_LIMIT with
 * "series key: column N: ..."; ERR_NOMEM.
 */
int series_key_parse(const char *key, struct series **out, struct error *err);

/* Free a series returned by a parser; NULL is a no-op. */
void series_free(struct series *s);

#endif
