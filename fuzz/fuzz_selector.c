/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the query selector.  Any input parses or is refused
 * with a one-line "selector: column N: ..." message.  What parses writes a
 * canonical text that parses to the same selector and writes the same
 * text again; the two select the same of a fixed set of series; a series
 * without labels is selected exactly when every matcher takes "" (the
 * Prometheus rule for a missing label).
 */
#include "util/common.h"
#include "store/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct series_label labels_a[] = {
	{"endpoint", "/checkout"},
	{"k", "v"},
	{"region", "eu-west"},
	{"zone", ""},
};
static const struct series_label labels_b[] = {
	{"a", "\"\\\n"},
	{"region", "us"},
};
/* Values of the longest length, to catch regexes slow to match (set up once). */
static char long_a[LABEL_VALUE_MAX + 1], long_mixed[LABEL_VALUE_MAX + 1];
static const struct series_label labels_long[] = {
	{"k", long_a},
	{"r", long_mixed},
	{"region", long_a},
};
static const struct series series[] = {
	{"app", "cpu", NULL, 0}, /* check_missing_labels() takes this one */
	{"app", "cpu", labels_a, ARRAY_SIZE(labels_a)},
	{"app", "cpu", labels_b, ARRAY_SIZE(labels_b)},
	{"my.app-2", "alloc_space", labels_a, 2},
	{"app", "cpu", labels_long, ARRAY_SIZE(labels_long)},
};

static void init_values(void)
{
	size_t i;

	memset(long_a, 'a', LABEL_VALUE_MAX);
	for (i = 0; i < LABEL_VALUE_MAX; i++)
		long_mixed[i] = "ab-.0_"[i % 6];
}

static void check_error(const struct error *err, int rc)
{
	if (rc != ERR_FORMAT && rc != ERR_LIMIT && rc != ERR_NOMEM)
		abort();
	if (err->code != rc || strncmp(err->msg, "selector: ", 10) != 0 || strchr(err->msg, '\n'))
		abort();
}

static char *format(const struct selector *s)
{
	size_t len = selector_format(s, NULL, 0);
	char *buf = malloc(len + 1);

	if (!buf || selector_format(s, buf, len + 1) != len || strlen(buf) != len)
		abort();
	return buf;
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const struct selector *s, const struct selector *t)
{
	size_t i;

	if (!same_string(selector_app(s), selector_app(t)) ||
	    !same_string(selector_type(s), selector_type(t)) ||
	    selector_nmatchers(s) != selector_nmatchers(t))
		abort();
	for (i = 0; i < selector_nmatchers(s); i++) {
		const struct matcher *a = selector_matcher(s, i), *b = selector_matcher(t, i);

		if (strcmp(a->key, b->key) || a->op != b->op || strcmp(a->value, b->value))
			abort();
	}
	for (i = 0; i < ARRAY_SIZE(series); i++)
		if (selector_match(s, &series[i]) != selector_match(t, &series[i]))
			abort();
}

/* The series "app.cpu" without labels: selected when every matcher takes "". */
static void check_missing_labels(const struct selector *s)
{
	const struct series *bare = &series[0];
	bool all = true;
	size_t i;

	if (selector_app(s) && (strcmp(selector_app(s), "app") || strcmp(selector_type(s), "cpu")))
		all = false;
	for (i = 0; i < selector_nmatchers(s); i++) {
		const struct matcher *m = selector_matcher(s, i);

		all = all && matcher_match(m, strcmp(m->key, "__name__") ? "" : "app.cpu");
	}
	if (selector_match(s, bare) != all)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = ERROR_INIT;
	struct selector *s = NULL, *t = NULL;
	char *text = malloc(size + 1), *canon, *again;
	int rc;

	if (!text)
		return 0;
	if (!long_a[0])
		init_values();
	memcpy(text, data, size);
	text[size] = '\0';
	rc = selector_parse(text, &s, &err);
	free(text);
	if (rc) {
		if (s)
			abort();
		check_error(&err, rc);
		return 0;
	}
	canon = format(s);
	if (selector_parse(canon, &t, &err))
		abort();
	again = format(t);
	if (strcmp(canon, again))
		abort();
	check_same(s, t);
	check_missing_labels(s);
	free(canon);
	free(again);
	selector_free(s);
	selector_free(t);
	return 0;
}
