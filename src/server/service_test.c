/* SPDX-License-Identifier: MIT */
/*
 * Tests of the service (service.c) over a real SQLite store: a round
 * trip of pushes with labels at known times against the locally merged
 * profile, by selector and window, before and after rollups; one series
 * per sample type sharing the push's blob; rollups of sibling series
 * together, of a backfill once, in small batches; the series budget
 * naming the widest label; the allow-list; stack depth; timelines from
 * pushes and from rollups; retention by age and by size; labels and
 * series listings; Pyroscope's session label dropped; concurrent pushes
 * and queries (run under ASan by make test).
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
#include "util/alloc.h"

#define SEC  INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define T0   (INT64_C(1764590400) * SEC) /* an hour boundary */

struct fixture {
	char dir[64];
	struct store *st;
	struct service *sv;
	struct service_config cfg;
};

static struct profile *folded(const char *text)
{
	struct input in;
	struct error err = ERROR_INIT;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "test", text, strlen(text), 1 << 20, &err), 0);
	assert_int_equal(folded_read(&in, &(struct read_options){0}, &p, &err), 0);
	input_close(&in);
	return p;
}

static void open_service(struct fixture *f)
{
	struct error err = ERROR_INIT;

	assert_int_equal(store_sqlite_open(f->dir, false, &f->st, &err), 0);
	assert_int_equal(service_open(f->st, &f->cfg, &f->sv, &err), 0);
}

static void close_service(struct fixture *f)
{
	service_close(f->sv);
	store_close(f->st);
	f->sv = NULL;
	f->st = NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct service_config cfg = SERVICE_CONFIG_DEFAULT;

	snprintf(f->dir, sizeof(f->dir), "/tmp/plateau-service-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->cfg = cfg;
	f->cfg.rollup_delay_ns = 0;
	open_service(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	int rc;

	close_service(f);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	rc = system(cmd);
	free(f);
	return rc;
}

static void push(struct fixture *f, const char *app, const char *type, const char *region,
		 int64_t t, const char *text)
{
	struct series_label l[] = {{"region", region}, {"version", "v1"}};
	struct ingest_req req = {app, type, NULL, l, 2, t, t + 10 * SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded(text);

	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
}

/* The query of SEL over [from, until) as sorted folded text. */
static char *query_text(struct fixture *f, const char *sel_text, int64_t from, int64_t until,
			size_t *nseries)
{
	struct selector *sel;
	struct profile *p;
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0, n;
	FILE *mem = open_memstream(&buf, &len);

	assert_int_equal(selector_parse(sel_text, &sel, &err), 0);
	assert_int_equal(service_query(f->sv, sel, from, until, &p, nseries ? nseries : &n, &err),
			 0);
	assert_int_equal(folded_write(p, 0, mem, &err), 0);
	fclose(mem);
	selector_free(sel);
	profile_free(p);
	return buf;
}

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

/*
 * The series of one push's sample types roll up together (each push
 * merged once); a push of one type alone under the same labels makes the
 * window roll series by series.  Either way a query sees the same.
 */
static void test_sibling_rollups(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	struct service_counters c;
	char *before[3], *q;
	const char *sels[] = {"duo.base", "duo.new", "duo.base{region=\"us\"}"};

	for (int i = 0; i < 12; i++) {
		push(f, "duo", NULL, "eu", T0 + i * 10 * SEC, "main;x 3 5\nmain;y 1 0\n");
		push(f, "duo", NULL, "us", T0 + i * 10 * SEC, "main;z 2 7\n");
	}
	/* The second minute of eu also gets a push of one type alone. */
	push(f, "duo", "base", "eu", T0 + 70 * SEC, "main;w 4\n");
	for (size_t i = 0; i < 3; i++)
		before[i] = query_text(f, sels[i], T0, T0 + HOUR, NULL);
	assert_string_equal(before[0], "main;w 4\nmain;x 36\nmain;y 12\nmain;z 24\n");
	assert_string_equal(before[1], "main;x 60\nmain;z 84\n");
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	service_counters(f->sv, &c);
	/*
	 * Minutes: eu and us in the first, us in the second (3 pairs); then
	 * us's ten minutes and hour (2 more).  eu's second minute, rolled
	 * series by series, makes its windows above it go one by one too.
	 */
	assert_int_equal(c.rollups_shared, 10);
	for (size_t i = 0; i < 3; i++) {
		q = query_text(f, sels[i], T0, T0 + HOUR, NULL);
		assert_string_equal(q, before[i]);
		free(q);
		free(before[i]);
	}
	/* One minute alone: its level-1 rollup. */
	q = query_text(f, "duo.base", T0, T0 + 60 * SEC, NULL);
	assert_string_equal(q, "main;x 18\nmain;y 6\nmain;z 12\n");
	free(q);
	q = query_text(f, "duo.new{region=\"eu\"}", T0 + 60 * SEC, T0 + 120 * SEC, NULL);
	assert_string_equal(q, "main;x 30\n");
	free(q);
}

/*
 * Old data pushed fast (a backfill): a window is rolled once its series
 * has moved past it, not after each of its pushes.
 */
static void test_backfill_rolls_once(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	char *q;

	close_service(f);
	f->cfg.rollup_delay_ns = 10 * SEC;
	open_service(f);
	for (int i = 0; i < 6; i++)
		push(f, "bf", "cpu", "eu", T0 + i * 10 * SEC, "main;a 1\n");
	/* The minute is over by the clock, but its series has not moved on. */
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
	push(f, "bf", "cpu", "eu", T0 + 70 * SEC, "main;a 1\n");
	/* Now it has: the first minute rolls, the second waits. */
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 1);
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
	q = query_text(f, "bf.cpu", T0, T0 + 60 * SEC, NULL);
	assert_string_equal(q, "main;a 6\n");
	free(q);
	/* After a restart nothing is known of the pushes' clock: everything due rolls. */
	close_service(f);
	open_service(f);
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	q = query_text(f, "bf.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 7\n");
	free(q);
}

/*
 * A small batch at a time, as under a backlog: every window still gets
 * rolled, each once, the ten-minute and hourly ones after their children.
 */
static void test_roll_in_small_batches(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	struct service_counters c;
	struct store_stats st;
	int n, total = 0;
	char *q;

	for (int i = 0; i < 60; i++)
		push(f, "sb", "cpu", "eu", T0 + i * 10 * SEC, "main;a 1\n");
	while ((n = service_roll(f->sv, T0 + 3 * HOUR, 2, &err)) > 0)
		total += n;
	assert_int_equal(n, 0);
	assert_int_equal(total, 10 + 1 + 1);
	service_counters(f->sv, &c);
	assert_int_equal(c.rollups, 12);
	assert_int_equal(service_store_stats(f->sv, &st, &err), 0);
	assert_int_equal(st.stale, 0);
	q = query_text(f, "sb.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 60\n");
	free(q);
}

/*
 * Four sample types rolled two windows at a time: each minute's rollup is
 * made for two siblings, then the other two, each pair's blob holding all
 * four types; the last minute for all four at once.  The ten minutes
 * above must not merge the pairs' blobs with all their types (that counts
 * every value twice): they roll series by series, and a query sees each
 * push once.
 */
static void test_siblings_rolled_apart(void **state)
{
	struct fixture *f = *state;
	struct series_label l[] = {{"region", "eu"}};
	const char *types[] = {"t0", "t1", "t2", "t3"};
	struct error err = ERROR_INIT;
	char sel[32], *q;
	int n;

	for (int i = 0; i < 60; i++) {
		struct profile *p = profile_new();
		struct ingest_req req = {
			"quad", NULL, NULL, l, 1, T0 + i * 10 * SEC, T0 + (i + 1) * 10 * SEC};
		uint32_t frames[2];
		int64_t v[4] = {1, 2, 3, 4};

		for (int k = 0; k < 4; k++)
			profile_add_type(p, types[k], "count");
		frames[0] = profile_frame_named(p, "main", 4);
		frames[1] = profile_frame_named(p, "work", 4);
		assert_int_equal(profile_add_sample(p, profile_stack(p, frames, 2), 0, v), 0);
		assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
		profile_free(p);
	}
	/* Minutes 0-8 two at a time (pairs), then minute 9 and what is above, all together. */
	while ((n = service_roll(f->sv, T0 + 9 * 60 * SEC + 30 * SEC, 2, &err)) > 0)
		;
	assert_int_equal(n, 0);
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	for (int k = 0; k < 4; k++) {
		char want[32];

		snprintf(sel, sizeof(sel), "quad.%s", types[k]);
		snprintf(want, sizeof(want), "main;work %d\n", 60 * (k + 1));
		q = query_text(f, sel, T0, T0 + 10 * 60 * SEC, NULL); /* the ten-minute rollup */
		assert_string_equal(q, want);
		free(q);
		q = query_text(f, sel, T0, T0 + HOUR, NULL); /* the hour's */
		assert_string_equal(q, want);
		free(q);
	}
}

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

static void test_retention(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	int64_t deleted;
	char *q;

	push(f, "r", "cpu", "eu", T0, "old 1\n");
	push(f, "r", "cpu", "eu", T0 + 10 * 86400 * SEC, "new 1\n");
	close_service(f);
	f->cfg.retention_ns = 5 * 86400 * SEC;
	open_service(f);
	assert_int_equal(service_retain(f->sv, T0 + 10 * 86400 * SEC, &deleted, &err), 0);
	assert_int_equal(deleted, 1);
	q = query_text(f, "r.cpu", T0 - HOUR, T0 + 11 * 86400 * SEC, NULL);
	assert_string_equal(q, "new 1\n");
	free(q);
}

/* Over --max-disk, the oldest pushes go first, ten minutes at a time, until it fits. */
static void test_retention_size(void **state)
{
	struct fixture *f = *state;
	struct store_stats st;
	struct error err = ERROR_INIT;
	struct strbuf text = STRBUF_INIT;
	int64_t deleted;
	char *q;

	/* Distinct frames per push, so that each blob takes a few KiB. */
	for (int i = 0; i < 60; i++) {
		strbuf_setlen(&text, 0);
		for (int k = 0; k < 200; k++)
			strbuf_addf(&text, "main;push%d_function_with_a_long_name_%d 1\n", i, k);
		push(f, "big", "cpu", "eu", T0 + i * 60 * SEC, text.buf);
	}
	strbuf_release(&text);
	/* Reopened, its WAL is checkpointed away: the store's size is the data's, not WAL slack. */
	close_service(f);
	open_service(f);
	assert_int_equal(f->st->be->stats(f->st, &st, &err), 0);
	close_service(f);
	f->cfg.max_disk = (uint64_t)st.bytes_disk / 2;
	open_service(f);
	assert_int_equal(service_retain(f->sv, T0 + HOUR, &deleted, &err), 0);
	assert_true(deleted > 0 && deleted < 60);
	assert_int_equal(f->st->be->stats(f->st, &st, &err), 0);
	assert_true((uint64_t)st.bytes_disk <= f->cfg.max_disk);
	/* What is left is the newest. */
	q = query_text(f, "big.cpu", T0, T0 + 10 * 60 * SEC, NULL);
	assert_string_equal(q, "");
	free(q);
	q = query_text(f, "big.cpu", T0 + 59 * 60 * SEC, T0 + HOUR, NULL);
	assert_non_null(strstr(q, "push59_"));
	free(q);
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

static int first_series(const struct store_series *se, void *arg)
{
	*(int64_t *)arg = se->id;
	return 1;
}

static uint64_t rollups_failed(struct fixture *f)
{
	struct service_counters c;

	service_counters(f->sv, &c);
	return c.rollups_failed;
}

/*
 * Issue 14: a window whose data cannot be rolled up (here a blob that does
 * not decode) is marked and skipped, counted and told once, not retried
 * each step; the other windows roll; a push into it makes it try again.
 */
static void test_bad_window_skipped(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	int64_t id = 0;
	struct store_row r;

	push(f, "bad", "cpu", "eu", T0, "main;a 1\n");
	push(f, "bad", "cpu", "eu", T0 + 2 * 60 * SEC, "main;b 1\n");
	f->st->be->series_each(f->st, first_series, &id, &err);
	assert_true(id > 0);
	r = (struct store_row){.series = id,
			       .t0 = T0 + 5 * SEC,
			       .t1 = T0 + 6 * SEC,
			       .samples = 1,
			       .total = 1,
			       .blob = "not a blob",
			       .len = 10};
	assert_int_equal(f->st->be->put(f->st, &r, 1, &err), 0);
	/* The minute at T0 fails, and the 10 minutes and the hour over it; T0+2m rolls. */
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 1);
	assert_int_equal(err.code, ERR_FORMAT);
	assert_non_null(strstr(err.msg, "skipped until a push changes it"));
	assert_int_equal(rollups_failed(f), 3);
	for (int i = 0; i < 3; i++) {
		err = (struct error)ERROR_INIT;
		assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
		assert_int_equal(err.code, 0);
	}
	assert_int_equal(rollups_failed(f), 3);
	/* A push changes the windows: tried once more, still failing, told again. */
	push(f, "bad", "cpu", "eu", T0 + 10 * SEC, "main;c 1\n");
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
	assert_int_equal(err.code, ERR_FORMAT);
	assert_int_equal(rollups_failed(f), 6);
	err = (struct error)ERROR_INIT;
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
	assert_int_equal(err.code, 0);
	/* The bad row gone (retention), a push rolls the windows again: they recover. */
	assert_int_equal(f->st->be->delete_before(f->st, T0 + 7 * SEC, &(int64_t){0}, &err), 0);
	push(f, "bad", "cpu", "eu", T0 + 20 * SEC, "main;d 1\n");
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 3);
	assert_int_equal(err.code, 0);
	assert_int_equal(rollups_failed(f), 6);
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 256, &err), 0);
}

/*
 * Issue 14: pushes that each fit but whose sum does not leave their window
 * readable: merged values saturate (flagged), in a query and in the
 * rollup, which is written rather than retried.
 */
static void test_overflowing_merge_readable(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	char *q;

	push(f, "big", "cpu", "eu", T0, "a;b 9223372036854775807\n");
	push(f, "big", "cpu", "eu", T0 + 10 * SEC, "a;b 9223372036854775000\na;c 5\n");
	q = query_text(f, "big.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "a;b 9223372036854775807\na;c 5\n");
	free(q);
	assert_true(service_roll(f->sv, T0 + 3 * HOUR, 256, &err) > 0);
	assert_int_equal(err.code, 0);
	assert_int_equal(rollups_failed(f), 0);
	q = query_text(f, "big.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "a;b 9223372036854775807\na;c 5\n");
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
		cmocka_unit_test_setup_teardown(test_sibling_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backfill_rolls_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_window_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflowing_merge_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_value_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roll_in_small_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_siblings_rolled_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_label_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gauge_average, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aggregation_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_type_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotted_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_service_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_and_allow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_per_app, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extreme_times, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
