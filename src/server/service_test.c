/* SPDX-License-Identifier: MIT */
/*
 * Tests of the service's ingest and queries (service_ingest.c,
 * service_query.c) over a real SQLite store: a round trip of pushes with
 * labels at known times against the locally merged profile, by selector
 * and window, before and after rollups; one series per sample type
 * sharing the push's blob; gauges and aggregation types; type names;
 * stack depth; extreme times; timelines; negative values refused;
 * concurrent pushes and queries (run under ASan by make test).  Rollups
 * and retention: service_rollup_test.c; labels, series and budgets:
 * service_labels_test.c.
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

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	size_t n;
	char *q;

	push(f, "shop", "cpu", "eu", T0, "main;a 3\nmain;b 1\n");
	push(f, "shop", "cpu", "us", T0 + 5 * SEC, "main;a 2\n");
	push(f, "shop", "cpu", "eu", T0 + 20 * SEC, "main;c 4\n");
	q = query_text(f, "shop.cpu", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 5\nmain;b 1\nmain;c 4\n");
	assert_int_equal(n, 2);
	free(q);
	q = query_text(f, "shop.cpu{region=\"eu\"}", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 3\nmain;b 1\nmain;c 4\n");
	assert_int_equal(n, 1);
	free(q);
	q = query_text(f, "shop.cpu{region!~\"e.*\"}", T0, T0 + 10 * SEC, NULL);
	assert_string_equal(q, "main;a 2\n");
	free(q);
	/* A window that starts after the first pushes. */
	q = query_text(f, "shop.cpu", T0 + 10 * SEC, T0 + HOUR, NULL);
	assert_string_equal(q, "main;c 4\n");
	free(q);
	/* Reopened: the index is loaded from the store. */
	close_service(f);
	open_service(f);
	q = query_text(f, "shop.cpu", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 5\nmain;b 1\nmain;c 4\n");
	free(q);
	/* Rollups change nothing a query sees. */
	struct error err = ERROR_INIT;
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	q = query_text(f, "shop.cpu", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 5\nmain;b 1\nmain;c 4\n");
	free(q);
}

/* Without a type, every sample type of the profile becomes a series. */
/* The level-0 rows of every series, in the store. */
struct rows_seen {
	struct store *st;
	void *blob[4];
	size_t len[4];
	int type[4];
	size_t n;
};

static int keep_row(const struct store_row *r, void *arg)
{
	struct rows_seen *seen = arg;

	if (seen->n < 4) {
		seen->blob[seen->n] = xmemdup(r->blob, r->len);
		seen->len[seen->n] = r->len;
		seen->type[seen->n++] = r->type;
	}
	return 0;
}

static int scan_series(const struct store_series *se, void *arg)
{
	struct rows_seen *seen = arg;
	struct error err = ERROR_INIT;

	return seen->st->be->scan(seen->st, se->id, 0, 0, INT64_MAX, keep_row, seen, &err);
}

static void test_every_type(void **state)
{
	struct fixture *f = *state;
	struct profile *p = folded("main;x 3 5\nmain;y 1 0\n"); /* two columns: base, new */
	struct ingest_req req = {"diffy", NULL, NULL, NULL, 0, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	char *q;

	assert_int_equal(p->nr_types, 2);
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
	q = query_text(f, "diffy.base", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;x 3\nmain;y 1\n");
	free(q);
	q = query_text(f, "diffy.new", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;x 5\n");
	free(q);
	/* One blob for the push, read by both series, each with its type. */
	{
		struct rows_seen seen = {.st = f->st};

		assert_int_equal(f->st->be->series_each(f->st, scan_series, &seen, &err), 0);
		assert_int_equal(seen.n, 2);
		assert_int_equal(seen.len[0], seen.len[1]);
		assert_memory_equal(seen.blob[0], seen.blob[1], seen.len[0]);
		assert_int_not_equal(seen.type[0], seen.type[1]);
		free(seen.blob[0]);
		free(seen.blob[1]);
	}
}

/* Gauges (in-use memory) are a mean over time, per series, summed across series. */
static void test_gauge_average(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	struct selector *sel;
	int64_t *values;
	size_t n;
	char *q;

	for (int i = 0; i < 3; i++) {
		char text[32];

		snprintf(text, sizeof(text), "main;a %d\n", 100 * (i + 1));
		push(f, "heap", "inuse_space", "eu", T0 + i * 10 * SEC, text);
		push(f, "heap", "inuse_space", "us", T0 + i * 10 * SEC, "main;b 50\n");
		push(f, "heap", "alloc_space", "eu", T0 + i * 10 * SEC, text);
	}
	q = query_text(f, "heap.inuse_space", T0, T0 + HOUR, &n);
	assert_string_equal(q, "main;a 200\nmain;b 50\n");
	assert_int_equal(n, 2);
	free(q);
	/* Only the second push: its own value. */
	q = query_text(f, "heap.inuse_space{region=\"eu\"}", T0 + 10 * SEC, T0 + 20 * SEC, NULL);
	assert_string_equal(q, "main;a 200\n");
	free(q);
	/* A sum type sums. */
	q = query_text(f, "heap.alloc_space", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 600\n");
	free(q);
	/* Rollups keep the mean. */
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	q = query_text(f, "heap.inuse_space", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 200\nmain;b 50\n");
	free(q);
	/* The timeline: per step, each series' mean, summed. */
	assert_int_equal(selector_parse("heap.inuse_space", &sel, &err), 0);
	assert_int_equal(
		service_timeline(f->sv, sel, T0, T0 + 30 * SEC, 10 * SEC, &values, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(values[0], 150);
	assert_int_equal(values[2], 350);
	free(values);
	assert_int_equal(
		service_timeline(f->sv, sel, T0, T0 + 60 * SEC, 60 * SEC, &values, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(values[0], 250);
	free(values);
	/* Centuries apart (from=0&until=2^63-1, and from 1677 to 2262) in
	 * years: no overflow, the pushes in their year's step (the first
	 * GET crashed the server: (until - from + step - 1) overflowed). */
	assert_int_equal(
		service_timeline(f->sv, sel, 0, INT64_MAX, 365 * 24 * HOUR, &values, &n, &err), 0);
	assert_int_equal(n, (size_t)(INT64_MAX / (365 * 24 * HOUR)) + 1);
	assert_int_equal(values[T0 / (365 * 24 * HOUR)], 250);
	free(values);
	assert_int_equal(service_timeline(f->sv, sel, INT64_MIN + 1, INT64_MAX, 365 * 24 * HOUR,
					  &values, &n, &err),
			 0);
	assert_int_equal(values[((uint64_t)T0 - (uint64_t)(INT64_MIN + 1)) / (365 * 24 * HOUR)],
			 250);
	free(values);
	/* A step of 1 ns over that range: refused, not allocated. */
	assert_int_equal(service_timeline(f->sv, sel, 0, INT64_MAX, 1, &values, &n, &err),
			 ERR_LIMIT);
	selector_free(sel);
}

/* aggregationType overrides the type's default; a bad one is refused. */
static void test_aggregation_type(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"env", "x"}};
	struct ingest_req req = {"app", "inuse_space", NULL, l, 1, T0, T0 + 10 * SEC, "sum", NULL};
	struct error err = ERROR_INIT;
	struct profile *p = folded("main;a 10\n");
	char *q;

	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	req.t0 += 10 * SEC;
	req.t1 += 10 * SEC;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	q = query_text(f, "app.inuse_space", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 20\n");
	free(q);
	req.type = "cpu";
	req.aggregation = "average";
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	req.t0 += 10 * SEC;
	req.t1 += 10 * SEC;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	q = query_text(f, "app.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 10\n");
	free(q);
	req.aggregation = "max";
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "aggregationType \"max\" is not sum or average");
	profile_free(p);
}

/* Pyroscope's sample_type_config: named types only, under their display names. */
static void test_type_names(void **state)
{
	struct fixture *f = *state;
	struct profile *p = folded("main;x 3 5\nmain;y 1 0\n");
	const char *names[] = {NULL, "cpu"};
	struct ingest_req req = {"named", NULL, names, NULL, 0, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	struct selector *sel;
	struct profile *q;
	size_t n;
	char *text;

	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	text = query_text(f, "named.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(text, "main;x 5\n");
	free(text);
	assert_int_equal(selector_parse("named.base", &sel, &err), 0);
	assert_int_equal(service_query(f->sv, sel, T0, T0 + HOUR, &q, &n, &err), 0);
	assert_int_equal(n, 0);
	profile_free(q);
	selector_free(sel);
	names[1] = NULL;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "none of the profile's sample types is configured");
	profile_free(p);
}

static void test_depth(void **state)
{
	struct fixture *f = *state;
	struct ingest_req req = {"deep", "cpu", NULL, NULL, 0, T0, T0 + SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded("a;b;c;d;e 1\n");

	close_service(f);
	f->cfg.max_stack_depth = 4;
	open_service(f);
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "a stack of 5 frames is over the limit of 4");
	profile_free(p);
}

/*
 * Pushes outside 1970..2262-01-01 are refused naming the parameter (a
 * row at 2262-04-11 overflowed its rollup window's end), and queries,
 * timelines and retention over the whole int64_t range answer with the
 * data, before and after rollups.
 */
static void test_extreme_times(void **state)
{
	struct fixture *f = *state;
	struct ingest_req req = {"x", "cpu", NULL, NULL, 0, -SEC, 0};
	struct error err = ERROR_INIT;
	struct profile *p = folded("main 1\n");
	struct selector *sel;
	int64_t *v, deleted;
	size_t n;
	char *q;

	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "from is out of range"));
	req.t0 = INT64_C(9223372035) * SEC;
	req.t1 = req.t0 + SEC;
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "until is out of range (a push lies in "
				     "1970-01-01T00:00:00Z to 2262-01-01T00:00:00Z)");
	profile_free(p);
	push(f, "x", "cpu", "eu", T0, "main;a 3\n");
	push(f, "x", "cpu", "eu", T0 + 2 * HOUR, "main;b 4\n");
	assert_int_equal(selector_parse("x.cpu", &sel, &err), 0);
	for (int rolled = 0; rolled < 2; rolled++) {
		q = query_text(f, "x.cpu", INT64_MIN, INT64_MAX, NULL);
		assert_string_equal(q, "main;a 3\nmain;b 4\n");
		free(q);
		q = query_text(f, "x.cpu", INT64_MAX - HOUR, INT64_MAX, NULL);
		assert_string_equal(q, "");
		free(q);
		assert_int_equal(service_timeline(f->sv, sel, INT64_MIN, INT64_MAX,
						  INT64_C(1) << 61, &v, &n, &err),
				 0);
		assert_int_equal(n, 8);
		assert_int_equal(v[4], 7);
		free(v);
		if (!rolled)
			assert_true(service_roll(f->sv, T0 + 5 * HOUR, 1024, &err) > 0);
	}
	selector_free(sel);
	close_service(f);
	f->cfg.retention_ns = INT64_MAX;
	open_service(f);
	assert_int_equal(service_retain(f->sv, T0, &deleted, &err), 0);
	assert_int_equal(deleted, 0);
	assert_int_equal(service_retain(f->sv, INT64_MIN, &deleted, &err), 0);
	assert_int_equal(deleted, 0);
}

static void test_timeline_labels(void **state)
{
	struct fixture *f = *state;
	struct selector *sel;
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	int64_t *v;
	size_t n;

	for (int i = 0; i < 360; i++)
		push(f, "tl", "cpu", i % 2 ? "eu" : "us", T0 + i * 10 * SEC, "main 2\n");
	assert_int_equal(selector_parse("tl.cpu", &sel, &err), 0);
	assert_int_equal(service_timeline(f->sv, sel, T0, T0 + HOUR, 10 * 60 * SEC, &v, &n, &err),
			 0);
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], 120);
	free(v);
	/* From rollups (the steps tile ten-minute windows): the same. */
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 1024, &err) > 0);
	assert_int_equal(service_timeline(f->sv, sel, T0, T0 + HOUR, 10 * 60 * SEC, &v, &n, &err),
			 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], 120);
	free(v);
	assert_int_equal(service_label_values(f->sv, "region", sel, &sb, &err), 0);
	assert_string_equal(sb.buf, "[\"eu\",\"us\"]");
	strbuf_setlen(&sb, 0);
	assert_int_equal(service_label_names(f->sv, NULL, &sb, &err), 0);
	assert_string_equal(sb.buf, "[\"region\",\"service_name\",\"version\"]");
	strbuf_setlen(&sb, 0);
	assert_int_equal(service_check_labels(f->sv, &sb, &err), 0);
	assert_non_null(strstr(sb.buf, "region\t2\t2\n"));
	strbuf_release(&sb);
	selector_free(sel);
}

/* Pushes and queries from several threads at once (ASan and TSan-friendly). */
struct worker {
	struct fixture *f;
	int id;
};

static void *pusher(void *arg)
{
	struct worker *w = arg;
	char region[16];

	snprintf(region, sizeof(region), "r%d", w->id);
	for (int i = 0; i < 50; i++)
		push(w->f, "cc", "cpu", region, T0 + i * SEC, "main;work 1\n");
	return NULL;
}

static void *querier(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++)
		free(query_text(w->f, "cc.cpu", T0, T0 + HOUR, NULL));
	return NULL;
}

static void test_concurrent(void **state)
{
	struct fixture *f = *state;
	pthread_t th[6];
	struct worker w[6];
	char *q;

	for (int i = 0; i < 6; i++) {
		w[i] = (struct worker){f, i};
		assert_int_equal(pthread_create(&th[i], NULL, i < 4 ? pusher : querier, &w[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	q = query_text(f, "cc.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;work 200\n");
	free(q);
}

/* A push with a negative value is refused: no JSON query could draw it. */
static void test_negative_value_refused(void **state)
{
	struct fixture *f = *state;
	struct ingest_req req = {"neg", "cpu", NULL, NULL, 0, T0, T0 + 10 * SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded("a;b 5\n");

	profile_sample_values(p, 0)[0] = -5;
	assert_int_equal(service_ingest(f->sv, &req, p, &err), ERR_FORMAT);
	assert_string_equal(err.msg, "body: a sample has a negative samples value (-5); "
				     "plateau serve stores counts");
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_value_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gauge_average, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aggregation_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_type_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extreme_times, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
