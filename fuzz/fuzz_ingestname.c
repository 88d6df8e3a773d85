/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the names, keys and parameters a client sends the
 * store.  The input is read as a Pyroscope ingest name, as a canonical
 * series key, and as a time, a duration and a size.  Each parses or is
 * refused with a one-line message (ERR_FORMAT or ERR_LIMIT) and leaves
 * its result alone.  An ingest name that parses is a valid series whose
 * canonical key parses back to the same text; a series key that parses
 * is its own canonical text.
 */
#include "util/common.h"
#include "store/ingest_name.h"
#include "store/labels.h"
#include "store/timeparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW INT64_C(1577836800000000000)

static void check_error(const struct error *err, int rc, const char *prefix)
{
	if ((rc != ERR_FORMAT && rc != ERR_LIMIT && rc != ERR_NOMEM) || err->code != rc ||
	    strncmp(err->msg, prefix, strlen(prefix)) != 0 || strchr(err->msg, '\n'))
		abort();
}

/* The canonical key of s, which must parse back to itself. */
static void check_key(const struct series *s)
{
	struct error err = ERROR_INIT;
	struct series *back = NULL;
	size_t len = series_key_format(s, NULL, 0);
	char *key = malloc(len + 1), *again;

	if (!key)
		return;
	series_key_format(s, key, len + 1);
	if (series_key_parse(key, &back, &err))
		abort();
	again = malloc(len + 1);
	if (!again || series_key_format(back, again, len + 1) != len || strcmp(key, again))
		abort();
	free(again);
	free(key);
	series_free(back);
}

static void check_ingest_name(const char *text)
{
	struct error err = ERROR_INIT;
	struct series *s = NULL, view;
	size_t i, renamed;
	int rc = ingest_name_parse(text, &s, &renamed, &err);

	if (rc) {
		check_error(&err, rc, "ingest name: ");
		if (s)
			abort();
		return;
	}
	view = *s;
	if (!view.type)
		view.type = INGEST_DEFAULT_TYPE;
	if (series_validate(&view, &err))
		abort();
	for (i = 1; i < s->nlabels; i++)
		if (strcmp(s->labels[i - 1].key, s->labels[i].key) >= 0)
			abort();
	check_key(&view);
	series_free(s);
}

static void check_series_key(const char *text)
{
	struct error err = ERROR_INIT;
	struct series *s = NULL;
	size_t len = strlen(text);
	char *again;
	int rc = series_key_parse(text, &s, &err);

	if (rc) {
		check_error(&err, rc, "series key: ");
		if (s)
			abort();
		return;
	}
	again = malloc(len + 1);
	if (!again || series_key_format(s, again, len + 1) != len || strcmp(again, text))
		abort();
	free(again);
	series_free(s);
}

/* A refusal leaves the result as it was and names the value first. */
static void check_refusal(const struct error *err, int rc, bool untouched)
{
	if (!untouched)
		abort();
	check_error(err, rc, "\"");
}

/* "now-D" is D before now, when D parses and nothing overflows. */
static void check_now_minus(const char *text, int64_t d)
{
	struct error err = ERROR_INIT;
	char *now = malloc(strlen(text) + 5);
	int64_t t = 0;

	if (!now)
		return;
	memcpy(now, "now-", 4);
	memcpy(now + 4, text, strlen(text) + 1);
	if (time_parse(now, NOW, &t, &err) || t != NOW - d)
		abort();
	free(now);
}

static void check_params(const char *text)
{
	struct error err = ERROR_INIT;
	int64_t t = 42, d = 42;
	uint64_t n = 42;
	int rc;

	rc = time_parse(text, NOW, &t, &err);
	if (rc)
		check_refusal(&err, rc, t == 42);
	err = (struct error)ERROR_INIT;
	rc = duration_parse(text, &d, &err);
	if (rc)
		check_refusal(&err, rc, d == 42);
	else if (d < 0)
		abort();
	else if (d <= NOW)
		check_now_minus(text, d);
	err = (struct error)ERROR_INIT;
	rc = size_parse(text, &n, &err);
	if (rc)
		check_refusal(&err, rc, n == 42);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	check_ingest_name(text);
	check_series_key(text);
	check_params(text);
	free(text);
	return 0;
}
