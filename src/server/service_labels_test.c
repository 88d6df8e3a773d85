/* SPDX-License-Identifier: MIT */
/*
 * Tests of the service's labels (service_ingest.c, service_labels.c) over
 * a real SQLite store: Pyroscope's session label dropped; sample labels
 * as series labels; dotted names mapped; service_name as the app; the
 * series budget naming the widest label, per app and global; the
 * allow-list; label and series listings.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format.h"
#include "format/input.h"
#include "profile/profile_testutil.h"
#include "server/service.h"
#include "server/service_testutil.h"
#include "util/alloc.h"

/* Pyroscope clients' __session_id__ is dropped, as Pyroscope drops it by default. */
static void test_session_label_dropped(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"__session_id__", "77e425ea48b3919f"}, {"env", "test"}};
	struct ingest_req req = {"goapp", "cpu", NULL, l, 2, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	struct strbuf out = STRBUF_INIT;
	struct profile *p = folded("main;work 7\n");
	char *q;

	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
	l[0].value = "another-process";
	p = folded("main;work 3\n");
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
	assert_int_equal(service_series_json(f->sv, NULL, &out, &err), 0);
	assert_non_null(strstr(out.buf, "goapp.cpu{env=\\\"test\\\"}"));
	assert_null(strstr(out.buf, "session"));
	q = query_text(f, "goapp.cpu{env=\"test\"}", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;work 10\n");
	free(q);
	strbuf_release(&out);
}

/* A labelled sample of STACK (';'-separated) with VALUE. */
static void add_labelled(struct profile *p, const char *stack, const char *endpoint,
			 const char *thread, int64_t value)
{
	struct label l[2] = {
		{profile_intern_str(p, "endpoint"), profile_intern_str(p, endpoint), 0, 0},
		{profile_intern_str(p, "thread"), profile_intern_str(p, thread), 0, 0}};
	assert_int_equal(profile_add_sample(p, testutil_stack(p, stack),
					    profile_intern_labels(p, l, 2), &value),
			 0);
}

/*
 * Sample labels become series labels (endpoint="/pay" selects its samples),
 * except per-thread ones, which stay inside the stored profile.
 */
static void test_sample_labels(void **state)
{
	struct fixture *f = *state;
	struct profile *p = profile_new();
	struct series_label push[] = {{"region", "eu"}};
	struct ingest_req req = {"web", "cpu", NULL, push, 1, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	struct selector *sel;
	size_t n;
	char *q;

	profile_add_type(p, "cpu", "nanoseconds");
	add_labelled(p, "main;pay", "/pay", "worker-1", 5);
	add_labelled(p, "main;pay", "/pay", "worker-2", 2);
	add_labelled(p, "main;list", "/list", "worker-1", 3);
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
	q = query_text(f, "web.cpu{endpoint=\"/pay\"}", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;pay 7\n");
	assert_int_equal(n, 1);
	free(q);
	q = query_text(f, "web.cpu{region=\"eu\"}", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;list 3\nmain;pay 7\n");
	assert_int_equal(n, 2);
	free(q);
	assert_int_equal(selector_parse("web.cpu", &sel, &err), 0);
	assert_int_equal(service_label_names(f->sv, sel, &sb, &err), 0);
	assert_string_equal(sb.buf, "[\"endpoint\",\"region\",\"service_name\"]");
	strbuf_release(&sb);
	selector_free(sel);
}

/* The label names (or values of NAME) of the series SEL_TEXT selects, as JSON. */
static char *labels_text(struct fixture *f, const char *name, const char *sel_text)
{
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	struct selector *sel = NULL;

	if (sel_text)
		assert_int_equal(selector_parse(sel_text, &sel, &err), 0);
	if (name)
		assert_int_equal(service_label_values(f->sv, name, sel, &sb, &err), 0);
	else
		assert_int_equal(service_label_names(f->sv, sel, &sb, &err), 0);
	selector_free(sel);
	return strbuf_detach(&sb, NULL);
}

static void expect_labels(struct fixture *f, const char *name, const char *sel_text,
			  const char *want)
{
	char *got = labels_text(f, name, sel_text);

	assert_string_equal(got, want);
	free(got);
}

/*
 * Pyroscope's label names: '.' is read as '_' in the push's labels and in
 * the samples' (the names @pyroscope/nodejs sends), counted; a name with
 * another character refuses the push; two names made one with other
 * values too.
 */
static void test_dotted_labels(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"otel.scope.name", "com.grafana.pyroscope/nodejs"},
				   {"process.runtime.name", "nodejs"},
				   {"region", "eu-west-1"}};
	struct ingest_req req = {"nodeshop", "cpu", NULL, l, 3, T0, T0 + 10 * SEC};
	struct service_counters c;
	struct error err = ERROR_INIT;
	struct profile *p = profile_new();
	struct label sl = {profile_intern_str(p, "http.route"), profile_intern_str(p, "/pay"), 0,
			   0};
	int64_t value = 4;
	char *q;

	profile_add_type(p, "cpu", "nanoseconds");
	assert_int_equal(profile_add_sample(p, testutil_stack(p, "main;pay"),
					    profile_intern_labels(p, &sl, 1), &value),
			 0);
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	service_counters(f->sv, &c);
	assert_int_equal(c.labels_renamed, 3);
	expect_labels(f, NULL, NULL,
		      "[\"http_route\",\"otel_scope_name\",\"process_runtime_name\",\"region\","
		      "\"service_name\"]");
	q = query_text(f,
		       "nodeshop.cpu{otel_scope_name=\"com.grafana.pyroscope/nodejs\","
		       "http_route=\"/pay\"}",
		       T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;pay 4\n");
	free(q);
	/* A name that cannot be mapped refuses the push, as Pyroscope refuses it. */
	l[2].key = "region-name";
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "label name \"region-name\" must match [A-Za-z_][A-Za-z0-9_]* "
				     "(at most 64 bytes)");
	l[2] = (struct series_label){"otel_scope_name", "other"};
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg,
			    "label \"otel_scope_name\" is given twice (\"otel.scope.name\" "
			    "is read as \"otel_scope_name\") with different values");
	service_counters(f->sv, &c);
	assert_int_equal(c.labels_renamed, 3);
	profile_free(p);
}

/*
 * Pyroscope's service_name is the app: a push without it is found by
 * {service_name="shop"}; a push with it is stored under its value, the
 * push's app name kept as app_name.  A selector without APP.TYPE merges
 * series of one type and names the types when there are several.
 */
static void test_service_name(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"service_name", "checkout"}, {"region", "eu"}};
	struct ingest_req req = {"legacy", "cpu", NULL, l, 2, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded("main;pay 6\n");
	struct selector *sel;
	struct profile *out;
	size_t n;
	char *q;

	push(f, "shop", "cpu", "eu", T0, "main;a 3\n");
	q = query_text(f, "{service_name=\"shop\"}", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 3\n");
	assert_int_equal(n, 1);
	free(q);
	q = query_text(f, "shop.cpu{service_name=\"shop\"}", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 3\n");
	free(q);
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
	q = query_text(f, "checkout.cpu{app_name=\"legacy\",region=\"eu\"}", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;pay 6\n");
	assert_int_equal(n, 1);
	free(q);
	q = query_text(f, "legacy.cpu", T0, T0 + HOUR, &n);
	assert_int_equal(n, 0);
	free(q);
	expect_labels(f, "service_name", NULL, "[\"checkout\",\"shop\"]");
	expect_labels(f, NULL, "{service_name=\"checkout\"}",
		      "[\"app_name\",\"region\",\"service_name\"]");
	/* Two types under one service: the query must name one. */
	push(f, "shop", "wall", "eu", T0, "main;a 9\n");
	assert_int_equal(selector_parse("{service_name=\"shop\"}", &sel, &err), 0);
	assert_int_equal(service_query(f->sv, sel, T0, T0 + HOUR, &out, &n, &err), ERR_USAGE);
	assert_string_equal(err.msg, "{service_name=\"shop\"} selects 2 profile types (cpu, wall): "
				     "name one, as APP.cpu{service_name=\"shop\"}");
	selector_free(sel);
	/* A service name that is no app name refuses the push. */
	l[0].value = "a b";
	p = folded("main;pay 6\n");
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "label \"service_name\" names the app: \"a b\" must be 1 to "
				     "100 bytes of [A-Za-z0-9._-]");
	profile_free(p);
}

static void test_budget_and_allow(void **state)
{
	struct fixture *f = *state;
	const char *allow[] = {"region", "version", NULL};
	struct series_label bad[] = {{"tenant", "t1"}};
	struct ingest_req req = {"shop", "cpu", NULL, bad, 1, T0, T0 + SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded("main 1\n");

	close_service(f);
	f->cfg.series_budget = 2;
	open_service(f);
	push(f, "shop", "cpu", "eu", T0, "main 1\n");
	push(f, "shop", "cpu", "us", T0, "main 1\n");
	req.labels = (struct series_label[]){{"region", "ap"}, {"version", "v1"}};
	req.nlabels = 2;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_non_null(strstr(err.msg, "series budget of 2 reached (label \"region\" has 2 "
					"values; app \"shop\" has the most series, 2): refusing "));
	/* Existing series go on. */
	push(f, "shop", "cpu", "eu", T0 + SEC, "main 1\n");
	close_service(f);
	f->cfg.series_budget = 0;
	f->cfg.allow_labels = allow;
	open_service(f);
	err = (struct error)ERROR_INIT;
	req.labels = bad;
	req.nlabels = 1;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "label \"tenant\" is not in the allow-list");
	profile_free(p);
}

static void add_count(const char *app, uint64_t series, void *arg)
{
	strbuf_addf(arg, "%s=%llu ", app, (unsigned long long)series);
}

/*
 * The budget per app: a noisy app with a label of many values fills its
 * own budget, not everyone's; the 422 names the app and its widest
 * label; the global budget stays a ceiling over all apps; counts per app
 * are listed largest first, and survive a restart.
 */
static void test_budget_per_app(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"req", NULL}};
	struct ingest_req req = {"noisy", "cpu", NULL, l, 1, T0, T0 + SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded("main 1\n");
	struct strbuf sb = STRBUF_INIT;
	char v[16];

	close_service(f);
	f->cfg.series_budget = 8;
	f->cfg.series_budget_app = 3;
	open_service(f);
	for (int i = 0; i < 3; i++) {
		snprintf(v, sizeof(v), "r%d", i);
		l[0].value = v;
		assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	}
	l[0].value = "r3";
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "series budget of 3 per app reached (label \"req\" has 3 "
				     "values; app \"noisy\" has 3 series): refusing "
				     "noisy.cpu{req=\"r3\"}");
	/* Other apps still get new series, up to the global ceiling of 8. */
	push(f, "shop", "cpu", "eu", T0, "main 1\n");
	push(f, "shop", "cpu", "us", T0, "main 1\n");
	push(f, "web", "cpu", "eu", T0, "main 1\n");
	push(f, "web", "cpu", "us", T0, "main 1\n");
	push(f, "db", "cpu", "eu", T0, "main 1\n");
	req.app = "db";
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_non_null(strstr(err.msg, "series budget of 8 reached (label \"req\" has 3 values; "
					"app \"noisy\" has the most series, 3): refusing "
					"db.cpu{req=\"r3\"}"));
	assert_int_equal(service_app_series(f->sv, 10, add_count, &sb), 4);
	assert_string_equal(sb.buf, "noisy=3 shop=2 web=2 db=1 ");
	/* Loaded from the store: the same counts, the same budgets. */
	close_service(f);
	open_service(f);
	strbuf_setlen(&sb, 0);
	assert_int_equal(service_app_series(f->sv, 2, add_count, &sb), 4);
	assert_string_equal(sb.buf, "noisy=3 shop=2 ");
	req.app = "noisy";
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_non_null(strstr(err.msg, "per app reached"));
	strbuf_release(&sb);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_session_label_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotted_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_and_allow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_per_app, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
