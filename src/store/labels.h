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
/*
 * Pyroscope's name for the app: a matcher on service_name matches the
 * series' app, and a push labelled service_name=X is stored as app X
 * (doc/selector.md).  No stored series carries it.
 */
#define LABEL_SERVICE "service_name"
/* The push's own app name, kept when service_name replaced it (Pyroscope's). */
#define LABEL_APP_NAME "app_name"

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
 * Pyroscope's label name mapping (SanitizeLegacyLabelName in its
 * pkg/validation, since v1.6): a name of [A-Za-z0-9_.] that does not
 * start with a digit has each '.' replaced by '_', so "otel.scope.name"
 * is stored as "otel_scope_name"; nothing else is mapped.  Returns true
 * and writes the new name to out when key has a '.' and maps to a valid
 * name; false (out untouched) when key needs no change or cannot be
 * mapped, which label_validate() then says.
 */
bool label_key_map(const char *key, char out[LABEL_KEY_MAX + 1]);

/*
 * label_key_map() over labels[0..*n), in place: a mapped name is written
 * to names[i] (room for *n names) and labels[i].key points at it;
 * *renamed counts them.  A name that mapping makes equal to another
 * label's is one label when the values are equal (the later one goes,
 * *n shrinks) and ERR_FORMAT when they differ, as Pyroscope does:
 *	label "a_b" is given twice ("a.b" is read as "a_b") with different values
 * Names that cannot be mapped are left for labels_validate().
 */
int labels_map(struct series_label *labels, size_t *n, char (*names)[LABEL_KEY_MAX + 1],
	       size_t *renamed, struct error *err);

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
