/* SPDX-License-Identifier: MIT */
/*
 * Tests of the service's background work (service_rollup.c) over a real
 * SQLite store: rollups of sibling series together, of a backfill once,
 * in small batches, apart when their pushes differ; a window whose data
 * cannot be rolled up skipped; merges that overflow stay readable;
 * retention by age and by size.
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

	/* Without fleets: their windows would be rolled too, and counted here. */
	close_service(f);
	f->cfg.no_fleet_rollups = true;
	open_service(f);

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

static void roll_all(struct fixture *f);
static uint64_t query_rows(struct fixture *f);

/*
 * A backlog is rolled from both ends: half of each step's windows the
 * newest (what a dashboard reads), half the oldest (so that it moves).
 */
static void test_roll_newest_and_oldest(void **state)
{
	struct fixture *f = *state;
	struct error err = ERROR_INIT;
	const int64_t MIN = 60 * SEC;
	uint64_t before;
	char *q;

	for (int64_t t = T0; t < T0 + 30 * MIN; t += 10 * SEC)
		push(f, "nb", "cpu", "eu", t, "main;a 1\n");
	/* Four windows: minutes 29 and 28, 0 and 1. */
	assert_int_equal(service_roll(f->sv, T0 + 3 * HOUR, 4, &err), 4);
	for (size_t k = 0; k < 4; k++) {
		const int64_t from[] = {28 * MIN, 29 * MIN, 0, 1 * MIN};

		before = query_rows(f);
		q = query_text(f, "nb.cpu", T0 + from[k], T0 + from[k] + MIN, NULL);
		assert_string_equal(q, "main;a 6\n");
		free(q);
		assert_int_equal(query_rows(f) - before, 1); /* the minute's rollup */
	}
	before = query_rows(f);
	q = query_text(f, "nb.cpu", T0 + 14 * MIN, T0 + 15 * MIN, NULL);
	free(q);
	assert_int_equal(query_rows(f) - before, 6); /* the middle waits: its pushes */
	roll_all(f);
	q = query_text(f, "nb.cpu", T0, T0 + HOUR, NULL);
	assert_string_equal(q, "main;a 180\n");
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

/* Every stale window rolled up, step after step until none is left. */
static void roll_all(struct fixture *f)
{
	struct error err = ERROR_INIT;
	int n, steps = 0;

	while ((n = service_roll(f->sv, T0 + 3 * HOUR, 64, &err)) > 0)
		assert_true(++steps < 1000);
	assert_int_equal(n, 0);
	assert_int_equal(err.code, 0);
}

static uint64_t query_rows(struct fixture *f)
{
	struct service_counters c;

	service_counters(f->sv, &c);
	return c.query_rows;
}

/* SEL over [FROM, UNTIL) from both services: the same text; *ROWS[i] the rows each read. */
static void same_answer(struct fixture *on, struct fixture *off, const char *sel, int64_t from,
			int64_t until, uint64_t rows[2])
{
	uint64_t r0 = query_rows(on), r1 = query_rows(off);
	char *a = query_text(on, sel, from, until, NULL),
	     *b = query_text(off, sel, from, until, NULL);

	assert_string_equal(a, b);
	assert_true(strlen(a) > 0);
	rows[0] = query_rows(on) - r0;
	rows[1] = query_rows(off) - r1;
	free(a);
	free(b);
}

static void same_timeline(struct fixture *on, struct fixture *off, const char *sel_text,
			  int64_t from, int64_t until, int64_t step)
{
	struct selector *sel;
	struct error err = ERROR_INIT;
	int64_t *a, *b, sum = 0;
	size_t na, nb;

	assert_int_equal(selector_parse(sel_text, &sel, &err), 0);
	assert_int_equal(service_timeline(on->sv, sel, from, until, step, &a, &na, &err), 0);
	assert_int_equal(service_timeline(off->sv, sel, from, until, step, &b, &nb, &err), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i], b[i]);
		sum += a[i];
	}
	assert_true(sum > 0);
	free(a);
	free(b);
	selector_free(sel);
}

/*
 * Fleet rollups (doc/store.md): a query that selects every series of an
 * app and type reads the fleet's rows, and answers exactly what the
 * series one by one do (a service without fleets, the same pushes): on
 * ragged ranges, with the roller behind, after a late push, for a subset
 * of the series (no fleet), for a gauge (none either), for timelines, and
 * after a restart.
 */
static void test_fleet_rollups(void **state)
{
	struct fixture *on = *state, *off;
	const char *regions[] = {"r0", "r1", "r2", "r3", "r4"};
	const int64_t MIN = 60 * SEC;
	const int64_t ranges[][2] = {{T0 + 50 * SEC, T0 + 23 * MIN + 20 * SEC},
				     {T0, T0 + HOUR},
				     {T0 + 9 * MIN + 59 * SEC, T0 + 10 * MIN + 1 * SEC}};
	struct service_counters c;
	uint64_t rows[2];
	char text[128];

	assert_int_equal(setup((void **)&off), 0);
	close_service(off);
	off->cfg.no_fleet_rollups = true;
	open_service(off);
	for (int64_t t = T0; t < T0 + 25 * MIN; t += 10 * SEC)
		for (size_t i = 0; i < 5; i++) {
			snprintf(text, sizeof(text), "main;work;f%zu %lld\nmain;idle 1\n", i,
				 (long long)((t - T0) / SEC % 7 + 1));
			push(on, "fleet", "cpu", regions[i], t, text);
			push(off, "fleet", "cpu", regions[i], t, text);
			push(on, "gauge", "inuse_space", regions[i], t, "main;hold 100\n");
			push(off, "gauge", "inuse_space", regions[i], t, "main;hold 100\n");
		}
	/* Not rolled yet: the same, from the pushes. */
	same_answer(on, off, "fleet.cpu", ranges[0][0], ranges[0][1], rows);
	assert_int_equal(rows[0], rows[1]);

	roll_all(on);
	roll_all(off);
	service_counters(on->sv, &c);
	assert_true(c.rollups_fleet >= 25 + 3 + 1); /* its minutes, ten minutes, hour */
	service_counters(off->sv, &c);
	assert_int_equal(c.rollups_fleet, 0);
	for (size_t r = 0; r < 3; r++) {
		/* The third range is two seconds: pushes only, fleet or not. */
		same_answer(on, off, "fleet.cpu", ranges[r][0], ranges[r][1], rows);
		assert_true(r < 2 ? rows[0] < rows[1] : rows[0] == rows[1]);
		same_answer(on, off, "fleet.cpu{region=~\"r[0-4]\"}", ranges[r][0], ranges[r][1],
			    rows);
		assert_true(r < 2 ? rows[0] < rows[1] : rows[0] == rows[1]); /* every series */
		same_answer(on, off, "fleet.cpu{region=~\"r[0-3]\"}", ranges[r][0], ranges[r][1],
			    rows);
		assert_int_equal(rows[0], rows[1]); /* four of five: one by one */
		same_answer(on, off, "gauge.inuse_space", ranges[r][0], ranges[r][1], rows);
		assert_int_equal(rows[0], rows[1]);
	}
	/* Over the hour: one fleet row per ten minutes and minute, not five. */
	same_answer(on, off, "fleet.cpu", T0, T0 + HOUR, rows);
	assert_int_equal(rows[0], 1); /* the hour's rollup */
	assert_int_equal(rows[1], 5);
	same_timeline(on, off, "fleet.cpu", T0, T0 + HOUR, 60 * SEC);
	same_timeline(on, off, "fleet.cpu", T0, T0 + HOUR, 10 * SEC);
	same_timeline(on, off, "gauge.inuse_space", T0, T0 + HOUR, 60 * SEC);

	/* A late push of r2 into minute 12: the fleet reads the members there. */
	push(on, "fleet", "cpu", "r2", T0 + 12 * MIN + 5 * SEC, "main;late 1000\n");
	push(off, "fleet", "cpu", "r2", T0 + 12 * MIN + 5 * SEC, "main;late 1000\n");
	for (size_t r = 0; r < 3; r++)
		same_answer(on, off, "fleet.cpu", ranges[r][0], ranges[r][1], rows);
	same_timeline(on, off, "fleet.cpu", T0, T0 + HOUR, 60 * SEC);
	roll_all(on);
	roll_all(off);
	same_answer(on, off, "fleet.cpu", T0, T0 + HOUR, rows);
	assert_int_equal(rows[0], 1);

	/* A sixth series joins: the fleet grows, and its windows with it. */
	push(on, "fleet", "cpu", "r5", T0 + 3 * MIN, "main;new 3\n");
	push(off, "fleet", "cpu", "r5", T0 + 3 * MIN, "main;new 3\n");
	same_answer(on, off, "fleet.cpu", T0, T0 + HOUR, rows);
	roll_all(on);
	roll_all(off);
	same_answer(on, off, "fleet.cpu", T0, T0 + HOUR, rows);
	assert_int_equal(rows[0], 1);

	/*
	 * An app of one series rolled up, then a second series makes it a
	 * fleet, then a late push into an old minute of the first: the
	 * fleet's minute is made then, from both series' rows.
	 */
	for (int64_t t = T0; t < T0 + 5 * MIN; t += 10 * SEC) {
		push(on, "solo", "cpu", "r0", t, "main;a 1\n");
		push(off, "solo", "cpu", "r0", t, "main;a 1\n");
	}
	roll_all(on);
	roll_all(off);
	push(on, "solo", "cpu", "r1", T0 + 7 * MIN, "main;b 2\n");
	push(off, "solo", "cpu", "r1", T0 + 7 * MIN, "main;b 2\n");
	roll_all(on);
	roll_all(off);
	push(on, "solo", "cpu", "r0", T0 + 2 * MIN + 5 * SEC, "main;late 7\n");
	push(off, "solo", "cpu", "r0", T0 + 2 * MIN + 5 * SEC, "main;late 7\n");
	same_answer(on, off, "solo.cpu", T0, T0 + HOUR, rows);
	same_answer(on, off, "solo.cpu{region=\"r0\"}", T0 + 50 * SEC, T0 + 3 * MIN, rows);
	roll_all(on);
	roll_all(off);
	same_answer(on, off, "solo.cpu", T0, T0 + HOUR, rows);
	same_answer(on, off, "solo.cpu", T0 + 2 * MIN, T0 + 3 * MIN, rows);
	assert_int_equal(rows[0], 1); /* the fleet's minute */
	same_answer(on, off, "solo.cpu{region=\"r0\"}", T0 + 50 * SEC, T0 + 3 * MIN, rows);
	{
		char *q = query_text(on, "solo.cpu", T0, T0 + HOUR, NULL);

		assert_string_equal(q, "main;a 30\nmain;b 2\nmain;late 7\n");
		free(q);
	}

	/*
	 * Pushes of two sample types: the fleets of both types roll together,
	 * each push merged once for both (their rollups share a blob).
	 */
	{
		struct service_counters before, after;

		service_counters(on->sv, &before);
		for (int64_t t = T0; t < T0 + 12 * MIN; t += 10 * SEC)
			for (size_t i = 0; i < 3; i++) {
				snprintf(text, sizeof(text), "main;x%zu 3 5\nmain;y 1 %lld\n", i,
					 (long long)((t - T0) / SEC % 5));
				push(on, "two", NULL, regions[i], t, text);
				push(off, "two", NULL, regions[i], t, text);
			}
		roll_all(on);
		roll_all(off);
		service_counters(on->sv, &after);
		/* Both fleets' and the three members' windows, each pair together. */
		assert_int_equal(after.rollups_shared - before.rollups_shared,
				 2 * (12 + 2 + 1) + 3 * 2 * (12 + 2 + 1));
		assert_int_equal(after.rollups_fleet - before.rollups_fleet, 2 * (12 + 2 + 1));
		for (size_t r = 0; r < 3; r++) {
			same_answer(on, off, "two.base", ranges[r][0], ranges[r][1], rows);
			same_answer(on, off, "two.new", ranges[r][0], ranges[r][1], rows);
			same_answer(on, off, "two.new{region=\"r1\"}", ranges[r][0], ranges[r][1],
				    rows);
		}
		same_answer(on, off, "two.new", T0, T0 + HOUR, rows);
		assert_int_equal(rows[0], 1);
		same_timeline(on, off, "two.base", T0, T0 + HOUR, 60 * SEC);
	}

	/* After a restart, the fleet is found again, not listed as a series. */
	close_service(on);
	open_service(on);
	service_counters(on->sv, &c);
	{
		struct service_counters d;

		service_counters(off->sv, &d);
		assert_int_equal(c.series, d.series);
	}
	for (size_t r = 0; r < 3; r++)
		same_answer(on, off, "fleet.cpu", ranges[r][0], ranges[r][1], rows);
	same_answer(on, off, "fleet.cpu", T0, T0 + HOUR, rows);
	assert_int_equal(rows[0], 1);
	teardown((void **)&off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sibling_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backfill_rolls_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_window_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflowing_merge_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roll_in_small_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_siblings_rolled_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roll_newest_and_oldest, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
