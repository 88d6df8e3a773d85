/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure ("torture") tests of the store's parsers: the test
 * links with -Wl,--wrap=malloc,--wrap=calloc, so every allocation of the
 * store's code can be made to fail in turn.  Each parse must then fail
 * with ERR_NOMEM and a message, leaving nothing allocated (ASan's leak
 * check runs at exit), or succeed when no allocation failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "store/ingest_name.h"
#include "store/labels.h"
#include "store/selector.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);

/* Allocations left before one fails; -1: none fails. */
static int countdown = -1;
static bool failed;

static bool fail_now(void)
{
	if (countdown < 0)
		return false;
	if (countdown-- > 0)
		return false;
	failed = true;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t nmemb, size_t size)
{
	return fail_now() ? NULL : __real_calloc(nmemb, size);
}

typedef int parse_fn(const char *text, void **out, struct error *err);

static int parse_selector(const char *text, void **out, struct error *err)
{
	return selector_parse(text, (struct selector **)out, err);
}

static int parse_key(const char *text, void **out, struct error *err)
{
	return series_key_parse(text, (struct series **)out, err);
}

static int parse_name(const char *text, void **out, struct error *err)
{
	size_t renamed;

	return ingest_name_parse(text, (struct series **)out, &renamed, err);
}

/*
 * Fail the first, second, ... allocation of parse(text) until none is left
 * to fail; each failure gives a message that starts with prefix and says
 * "memory".
 */
static void torture(parse_fn *parse, void (*release)(void *), const char *text, const char *prefix)
{
	int n;

	for (n = 0;; n++) {
		struct error err = ERROR_INIT;
		void *out = (void *)1;
		int rc;

		failed = false;
		countdown = n;
		rc = parse(text, &out, &err);
		countdown = -1;
		if (!failed) {
			assert_int_equal(rc, 0);
			release(out);
			break;
		}
		assert_int_equal(rc, ERR_NOMEM);
		assert_null(out);
		assert_true(strncmp(err.msg, prefix, strlen(prefix)) == 0);
		assert_non_null(strstr(err.msg, "memory"));
	}
	assert_true(n > 0);
}

static void release_selector(void *s)
{
	selector_free(s);
}

static void release_series(void *s)
{
	series_free(s);
}

static void test_selector(void **state)
{
	(void)state;
	torture(parse_selector, release_selector, "app.cpu{a=\"1\",b=~\"x.*\",c!~\"y|z\"}",
		"selector: ");
}

static void test_regex_allocation(void **state)
{
	struct error err = ERROR_INIT;
	struct selector *s = NULL;

	(void)state;
	/* The selector is the first allocation, the anchored pattern the second. */
	countdown = 1;
	assert_int_equal(selector_parse("{k=~\"a+\"}", &s, &err), ERR_NOMEM);
	countdown = -1;
	assert_null(s);
	assert_string_equal(err.msg,
			    "selector: column 5: bad regex in k=~\"a+\": no memory to compile it");
}

static void test_series_key(void **state)
{
	(void)state;
	torture(parse_key, release_series, "app.cpu{a=\"1\",b=\"2\"}", "series key: ");
}

static void test_ingest_name(void **state)
{
	(void)state;
	torture(parse_name, release_series, "app.cpu{a=1,b=2}", "ingest name: ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selector),
		cmocka_unit_test(test_regex_allocation),
		cmocka_unit_test(test_series_key),
		cmocka_unit_test(test_ingest_name),
	};

	return cmocka_run_group_tests_name("store_nomem", tests, NULL, NULL);
}
