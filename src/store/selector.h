/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_SELECTOR_H
#define PLATEAU_STORE_SELECTOR_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/labels.h"
#include "util/error.h"

/*
 * The query selector, as Pyroscope and Prometheus write it:
 *
 *	checkout.cpu{endpoint="/pay",region=~"eu-.*"}
 *
 * an optional APP.TYPE name (split at its last '.') and optional label
 * matchers in braces, at least one of the two.  A label a series lacks has
 * the value "", so region!="eu" matches series without region and
 * region="" matches only those.  Regexes are POSIX extended, anchored at
 * both ends (region=~"eu" does not match "eu-west").  The key __name__
 * matches "APP.TYPE", the key service_name (LABEL_SERVICE) the app.  doc/selector.md has the grammar and the messages.
 */

#define SELECTOR_MATCHERS_MAX 32
/* Bytes of selector text: room for the longest canonical text (32 values of \xHH escapes). */
#define SELECTOR_TEXT_MAX 262144
/* Atoms of all of a selector's regexes, bounded repeats expanded (regex.h). */
#define SELECTOR_REGEX_BUDGET 2048

enum matcher_op {
	MATCH_EQ,  /* = */
	MATCH_NE,  /* != */
	MATCH_RE,  /* =~ */
	MATCH_NRE, /* !~ */
};

/*
 * One matcher.  key and value belong to the selector; value is the string
 * as written (unescaped), for a regex without the anchoring.  A backend
 * pushing matchers down must treat a series without the label as having
 * value "": matcher_match(m, "") says whether such series match.
 */
struct matcher {
	const char *key;
	const char *value;
	enum matcher_op op;
	regex_t re; /* private: the compiled "^(value)$" of MATCH_RE and MATCH_NRE */
};

struct selector;

/*
 * Parse text into *out (free it with selector_free()).  Returns 0, or
 * ERR_FORMAT / ERR_LIMIT with a one-line message such as
 *	selector: column 14: expected '=', '!=', '=~' or '!~' after "region", found "<\"eu\"}"
 * (the column counts bytes from 1), or ERR_NOMEM; *out is then NULL.
 */
int selector_parse(const char *text, struct selector **out, struct error *err);

/* Free a selector; NULL is a no-op. */
void selector_free(struct selector *s);

/* The app and profile type of the name, or NULL (both) when it has none. */
const char *selector_app(const struct selector *s);
const char *selector_type(const struct selector *s);

/* The matchers, sorted by key, then operator, then value; i < selector_nmatchers(). */
size_t selector_nmatchers(const struct selector *s);
const struct matcher *selector_matcher(const struct selector *s, size_t i);

/* "=", "!=", "=~" or "!~". */
const char *matcher_op_name(enum matcher_op op);

/* Whether a label value ("" for a missing label) satisfies the matcher. */
bool matcher_match(const struct matcher *m, const char *value);

/* Whether the series (its labels sorted by key: labels_sort()) is selected. */
bool selector_match(const struct selector *s, const struct series *series);

/*
 * Write the canonical text of the selector to buf[0..size), as snprintf()
 * does, and return its whole length.  It parses back to the same
 * selector: APP.TYPE, then the sorted matchers in braces when there are
 * any, values double-quoted with \" \\ \n \t and \xHH escapes; "{}" for
 * a selector without name or matchers.
 */
size_t selector_format(const struct selector *s, char *buf, size_t size);

#endif
