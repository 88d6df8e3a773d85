/* SPDX-License-Identifier: MIT */
/*
 * Tests of the SQLite backend (store_sqlite.c) and the planner (plan.c):
 * series, durable puts across reopening, scans, stale marks and their
 * generations, rollups replacing pushes in a plan (and pushes taking over
 * again when a late push makes a rollup stale), retention, statistics.
 * Blobs here are short strings naming the push, so a plan can be checked
 * for exactly which rows it chose: every push once, nothing twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "store/plan.h"
#include "store/store.h"

#define SEC  INT64_C(1000000000)
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define T0   (INT64_C(1764590400) * SEC) /* 2025-12-01T12:00:00Z, an hour boundary */

static char dir[64];

static int setup(void **state)
{
	struct store *s;
	struct error err = ERROR_INIT;

	snprintf(dir, sizeof(dir), "/tmp/plateau-store-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_sqlite_open(dir, false, &s, &err), 0);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	store_close(*state);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static int64_t series(struct store *s, const char *key)
{
	struct error err = ERROR_INIT;
	bool created;
	int64_t id;

	assert_int_equal(s->be->series_get(s, key, "app", "cpu", false, &id, &created, &err), 0);
	return id;
}

/* Push one level-0 row of series ID at T (10 s long) whose blob is NAME. */
static void push(struct store *s, int64_t id, int64_t t, const char *name)
{
	struct error err = ERROR_INIT;
	struct store_row r = {.series = id,
			      .t0 = t,
			      .t1 = t + 10 * SEC,
			      .samples = 1,
			      .blob = name,
			      .len = strlen(name)};

	assert_int_equal(s->be->put(s, &r, 1, &err), 0);
}

/* What a plan delivered: the blobs, ';'-joined in order, and the levels. */
struct got {
	char text[8192];
	int levels[STORE_LEVELS];
	int64_t samples;
};

static int collect(const struct store_row *r, void *arg)
{
	struct got *g = arg;
	size_t n = strlen(g->text);

	snprintf(g->text + n, sizeof(g->text) - n, "%s%.*s", n ? ";" : "", (int)r->len,
		 (const char *)r->blob);
	g->levels[r->level]++;
	g->samples += r->samples;
	return 0;
}

static void plan(struct store *s, int64_t id, int max_level, int64_t from, int64_t until,
		 struct got *g)
{
	struct plan_series ps = {.id = id};
	struct error err = ERROR_INIT;

	memset(g, 0, sizeof(*g));
	assert_int_equal(store_plan(s, &ps, max_level, from, until, collect, g, &err), 0);
}

/* Roll up every stale window, level by level, as the server's roller does. */
struct stale_list {
	int64_t series[256], t0[256], gen[256];
	int level[256];
	size_t n;
};

static int add_stale(int64_t series, int level, int64_t t0, int64_t gen, void *arg)
{
	struct stale_list *l = arg;

	if (l->n < 256) {
		l->series[l->n] = series;
		l->level[l->n] = level;
		l->t0[l->n] = t0;
		l->gen[l->n] = gen;
		l->n++;
	}
	return 0;
}

/* Roll the stale windows of LEVEL of series ID (0: every series) as the server's roller does. */
static void roll_level_of(struct store *s, int64_t id, int level)
{
	struct stale_list *l = calloc(1, sizeof(*l));
	struct error err = ERROR_INIT;

	assert_non_null(l);
	assert_int_equal(s->be->stale_each(s, level, 256, false, add_stale, l, &err), 0);
	for (size_t i = 0; i < l->n; i++) {
		struct got g;
		struct store_row r;

		if (l->level[i] != level || (id && l->series[i] != id))
			continue;
		plan(s, l->series[i], level - 1, l->t0[i], l->t0[i] + store_level_ns[level], &g);
		r = (struct store_row){.series = l->series[i],
				       .level = level,
				       .t0 = l->t0[i],
				       .t1 = l->t0[i] + store_level_ns[level],
				       .samples = g.samples,
				       .blob = g.text,
				       .len = strlen(g.text)};
		assert_int_equal(s->be->put_rollup(s, &r, l->gen[i], &err), 0);
	}
	free(l);
}

static void roll_level(struct store *s, int level)
{
	roll_level_of(s, 0, level);
}

static size_t count_stale(struct store *s)
{
	struct stale_list *l = calloc(1, sizeof(*l));
	struct error err = ERROR_INIT;
	size_t n;

	assert_non_null(l);
	for (int level = 1; level < STORE_LEVELS; level++)
		assert_int_equal(s->be->stale_each(s, level, 256, false, add_stale, l, &err), 0);
	n = l->n;
	free(l);
	return n;
}

static int series_avg(const struct store_series *se, void *arg)
{
	int *avg = arg;

	if (se->id >= 0 && se->id < 3)
		avg[se->id] = se->average;
	return 0;
}

static void test_series(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	bool created;
	int64_t a, b, again;

	assert_int_equal(
		s->be->series_get(s, "shop.cpu{}", "shop", "cpu", false, &a, &created, &err), 0);
	assert_true(created);
	assert_int_equal(s->be->series_get(s, "shop.cpu{region=\"eu\"}", "shop", "cpu", true, &b,
					   &created, &err),
			 0);
	assert_true(created);
	assert_int_not_equal(a, b);
	assert_int_equal(
		s->be->series_get(s, "shop.cpu{}", "shop", "cpu", true, &again, &created, &err), 0);
	assert_false(created);
	assert_int_equal(again, a);
	/* The aggregation is the creating call's. */
	{
		int avg[3] = {-1, -1, -1};

		assert_int_equal(s->be->series_each(s, series_avg, avg, &err), 0);
		assert_int_equal(avg[a], 0);
		assert_int_equal(avg[b], 1);
	}
}

/* Pushes are durable: closing and reopening the store finds them all. */
static void test_reopen(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t id = series(s, "a.cpu{}");
	struct got g;

	push(s, id, T0, "p0");
	push(s, id, T0, "p0b"); /* two pushes of one window are both kept */
	push(s, id, T0 + 10 * SEC, "p1");
	store_close(s);
	assert_int_equal(store_sqlite_open(dir, false, &s, &err), 0);
	*state = s;
	plan(s, id, 0, T0, T0 + MIN, &g);
	assert_string_equal(g.text, "p0;p0b;p1");
	/* The range is by start time, half open. */
	plan(s, id, 0, T0 + 10 * SEC, T0 + 20 * SEC, &g);
	assert_string_equal(g.text, "p1");
	plan(s, id, 0, T0, T0 + 10 * SEC, &g);
	assert_string_equal(g.text, "p0;p0b");
}

/* Rollups stand in for their pushes; a late push makes its windows stale. */
static void test_rollups(void **state)
{
	struct store *s = *state;
	int64_t id = series(s, "a.cpu{}");
	char name[32];
	struct got g;

	/* Two hours and five minutes of pushes every 10 s. */
	for (int64_t t = T0; t < T0 + 2 * HOUR + 5 * MIN; t += 10 * SEC) {
		snprintf(name, sizeof(name), "%lld", (long long)((t - T0) / SEC));
		push(s, id, t, name);
	}
	plan(s, id, 3, T0, T0 + 3 * HOUR, &g);
	assert_int_equal(g.levels[0], 750);
	assert_int_equal(g.samples, 750);
	for (int level = 1; level < STORE_LEVELS; level++)
		roll_level(s, level);
	assert_int_equal(count_stale(s), 0);

	/* Whole hours from their rollups, the five minutes from minute rollups. */
	plan(s, id, 3, T0, T0 + 3 * HOUR, &g);
	assert_int_equal(g.levels[3], 3); /* the third hour holds only 5 minutes, rolled too */
	assert_int_equal(g.levels[0] + g.levels[1] + g.levels[2], 0);
	assert_int_equal(g.samples, 750);
	/* A ragged range: pushes, minutes and ten-minute windows at the edges. */
	plan(s, id, 3, T0 + 50 * SEC, T0 + HOUR + 11 * MIN + 20 * SEC, &g);
	assert_int_equal(g.samples, (HOUR + 11 * MIN + 20 * SEC - 50 * SEC) / (10 * SEC));
	assert_int_equal(g.levels[3], 0);
	assert_true(g.levels[2] >= 5 && g.levels[1] >= 1 && g.levels[0] >= 1);
	assert_non_null(strstr(g.text, "50;60;70;80;90;100;110;120")); /* the first minute's end */

	/* A late push into the first minute: every window above it is stale. */
	push(s, id, T0 + 5 * SEC, "late");
	assert_int_equal(count_stale(s), 3);
	plan(s, id, 3, T0, T0 + HOUR, &g);
	assert_int_equal(g.samples, 361);
	assert_non_null(strstr(g.text, "late"));
	for (int level = 1; level < STORE_LEVELS; level++)
		roll_level(s, level);
	plan(s, id, 3, T0, T0 + HOUR, &g);
	assert_int_equal(g.levels[3], 1);
	assert_int_equal(g.samples, 361);
	assert_non_null(strstr(g.text, "late"));
}

/* A rollup built while a push came in does not clear the newer stale mark. */
static void test_stale_generation(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t id = series(s, "a.cpu{}");
	struct stale_list *l = calloc(1, sizeof(*l));
	struct store_row r = {.series = id,
			      .level = 1,
			      .t0 = T0,
			      .t1 = T0 + MIN,
			      .samples = 1,
			      .blob = "old",
			      .len = 3};
	struct got g;

	assert_non_null(l);
	push(s, id, T0, "a");
	for (int level = 1; level < STORE_LEVELS; level++)
		assert_int_equal(s->be->stale_each(s, level, 256, false, add_stale, l, &err), 0);
	assert_int_equal(l->n, 3);
	assert_int_equal(l->level[0], 1);
	push(s, id, T0 + 10 * SEC, "b"); /* after the roller read the window */
	assert_int_equal(s->be->put_rollup(s, &r, l->gen[0], &err), 0);
	/* Still stale: the plan ignores the outdated rollup and reads both pushes. */
	plan(s, id, 1, T0, T0 + MIN, &g);
	assert_string_equal(g.text, "a;b");
	free(l);
}

static void test_retention_stats(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t id = series(s, "a.cpu{}"), deleted, oldest;
	struct store_stats st;
	struct got g;

	for (int i = 0; i < 12; i++)
		push(s, id, T0 + i * 10 * SEC, "x");
	roll_level(s, 1);
	assert_int_equal(s->be->stats(s, &st, &err), 0);
	assert_int_equal(st.series, 1);
	assert_int_equal(st.rows, 12 + 2);
	assert_true(st.bytes_disk > 0);
	assert_int_equal(st.oldest_ns, T0);
	/* The cheap counts agree with the statistics. */
	{
		struct store_stats ct;

		assert_int_equal(s->be->counts(s, &ct, &err), 0);
		assert_int_equal(ct.series, st.series);
		assert_int_equal(ct.rows, st.rows);
		assert_int_equal(ct.stale, st.stale);
		assert_true(ct.bytes_disk > 0);
	}
	assert_int_equal(s->be->oldest(s, &oldest, &err), 0);
	assert_int_equal(oldest, T0 + 10 * SEC);
	/* Rows that end at or before the cutoff go, rollups included. */
	assert_int_equal(s->be->delete_before(s, T0 + 60 * SEC, &deleted, &err), 0);
	assert_int_equal(deleted, 6 + 1);
	plan(s, id, 3, T0, T0 + HOUR, &g);
	assert_int_equal(g.samples, 6);
	assert_int_equal(s->be->oldest(s, &oldest, &err), 0);
	assert_int_equal(oldest, T0 + 70 * SEC);
}

struct typed {
	char text[256];
	int type[8];
	int64_t blob_id[8];
	size_t n;
};

static int collect_typed(const struct store_row *r, void *arg)
{
	struct typed *t = arg;
	size_t n = strlen(t->text);

	snprintf(t->text + n, sizeof(t->text) - n, "%s%.*s", n ? ";" : "", (int)r->len,
		 (const char *)r->blob);
	if (t->n < 8) {
		t->blob_id[t->n] = r->blob_id;
		t->type[t->n++] = r->type;
	}
	return 0;
}

/* The rows of one push share its blob: stored once, read by each series with its type. */
static void test_shared_blobs(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t a = series(s, "a.samples{}"), b = series(s, "a.cpu{}"), c = series(s, "b.cpu{}");
	const char *blob = "two-type-blob";
	struct store_row rows[] = {
		{.series = a, .t0 = T0, .t1 = T0 + 10 * SEC, .samples = 1, .total = 5, .type = 0},
		{.series = b, .t0 = T0, .t1 = T0 + 10 * SEC, .samples = 1, .total = 7, .type = 1},
		{.series = c, .t0 = T0, .t1 = T0 + 10 * SEC, .samples = 1, .total = 9, .type = 0},
	};
	struct store_stats st;
	struct typed t;
	int64_t deleted, ids[3];

	rows[0].blob = rows[1].blob = blob;
	rows[0].len = rows[1].len = strlen(blob);
	rows[2].blob = "other";
	rows[2].len = 5;
	assert_int_equal(s->be->put(s, rows, 3, &err), 0);
	for (size_t i = 0; i < 3; i++) {
		memset(&t, 0, sizeof(t));
		assert_int_equal(
			s->be->scan(s, rows[i].series, 0, T0, T0 + HOUR, collect_typed, &t, &err),
			0);
		assert_string_equal(t.text, i < 2 ? blob : "other");
		assert_int_equal(t.n, 1);
		assert_int_equal(t.type[0], rows[i].type);
		ids[i] = t.blob_id[0];
	}
	assert_true(ids[0] > 0 && ids[0] == ids[1] && ids[2] != ids[0]);
	assert_int_equal(s->be->stats(s, &st, &err), 0);
	assert_int_equal(st.rows, 3);
	assert_int_equal(st.bytes_blobs, (int64_t)strlen(blob) + 5); /* the shared one once */
	assert_int_equal(s->be->delete_before(s, T0 + 10 * SEC, &deleted, &err), 0);
	assert_int_equal(deleted, 3);
}

/* Level-1 rows of series ID in the first minute, into T. */
static void rollups_of(struct store *s, int64_t id, struct typed *t)
{
	struct error err = ERROR_INIT;

	memset(t, 0, sizeof(*t));
	assert_int_equal(s->be->scan(s, id, 1, T0, T0 + HOUR, collect_typed, t, &err), 0);
}

/*
 * The rollups of sibling series share one blob: stored once, each series
 * reading its type; replacing one sibling's rollup keeps the other's, and
 * the blob goes with its last reader.
 */
static void test_shared_rollups(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t a = series(s, "a.samples{}"), b = series(s, "a.cpu{}"), c = series(s, "a.x{}");
	const char *blob = "two-type-rollup";
	struct store_row rows[] = {
		{.series = a,
		 .level = 1,
		 .t0 = T0,
		 .t1 = T0 + MIN,
		 .samples = 6,
		 .total = 5,
		 .type = 0},
		{.series = b,
		 .level = 1,
		 .t0 = T0,
		 .t1 = T0 + MIN,
		 .samples = 6,
		 .total = 7,
		 .type = 1},
		{.series = c, .level = 1, .t0 = T0, .t1 = T0 + MIN, .samples = 6}, /* nothing */
	};
	int64_t gens[] = {1, 1, 1}, deleted;
	struct store_row alone = rows[0];
	struct store_stats st;
	struct typed t;

	push(s, c, T0, "x"); /* c has a row that the empty rollup replaces */
	rows[0].blob = rows[1].blob = blob;
	rows[0].len = rows[1].len = strlen(blob);
	assert_int_equal(s->be->put_rollups(s, rows, gens, 3, &err), 0);
	rollups_of(s, a, &t);
	assert_string_equal(t.text, blob);
	assert_int_equal(t.type[0], 0);
	rollups_of(s, b, &t);
	assert_string_equal(t.text, blob);
	assert_int_equal(t.type[0], 1);
	rollups_of(s, c, &t);
	assert_int_equal(t.n, 0);
	assert_int_equal(s->be->stats(s, &st, &err), 0);
	assert_int_equal(st.bytes_blobs, (int64_t)strlen(blob) + 1); /* once, and c's push */
	assert_int_equal(st.stale, 2); /* c's ten minutes and hour: its minute is done */
	/* a alone again: b still reads the shared blob. */
	alone.blob = "a-alone";
	alone.len = 7;
	assert_int_equal(s->be->put_rollup(s, &alone, 0, &err), 0);
	rollups_of(s, a, &t);
	assert_string_equal(t.text, "a-alone");
	rollups_of(s, b, &t);
	assert_string_equal(t.text, blob);
	/* b's rollup emptied: the shared blob has no reader left and goes. */
	rows[1].blob = NULL;
	rows[1].len = 0;
	assert_int_equal(s->be->put_rollups(s, &rows[1], gens, 1, &err), 0);
	rollups_of(s, b, &t);
	assert_int_equal(t.n, 0);
	assert_int_equal(s->be->stats(s, &st, &err), 0);
	assert_int_equal(st.bytes_blobs, 7 + 1);
	assert_int_equal(st.rows, 2);
	/* Retention takes a shared blob with its readers. */
	rows[1].blob = blob;
	rows[1].len = strlen(blob);
	assert_int_equal(s->be->put_rollups(s, rows, gens, 2, &err), 0);
	assert_int_equal(s->be->delete_before(s, T0 + MIN, &deleted, &err), 0);
	assert_int_equal(s->be->stats(s, &st, &err), 0);
	assert_int_equal(st.rows, 0);
	/* The first sibling with nothing, the second with the blob: stored for the second. */
	rows[0].blob = NULL;
	rows[0].len = 0;
	assert_int_equal(s->be->put_rollups(s, rows, gens, 2, &err), 0);
	rollups_of(s, a, &t);
	assert_int_equal(t.n, 0);
	rollups_of(s, b, &t);
	assert_string_equal(t.text, blob);
	assert_int_equal(s->be->delete_before(s, T0 + MIN, &deleted, &err), 0);
	rows[0].blob = blob;
	rows[0].len = strlen(blob);
	/* Rows of different windows or blobs are refused. */
	rows[1].t0 += MIN;
	assert_int_equal(s->be->put_rollups(s, rows, gens, 2, &err), ERR_USAGE);
	rows[1].t0 -= MIN;
	rows[1].blob = "other";
	assert_int_equal(s->be->put_rollups(s, rows, gens, 2, &err), ERR_USAGE);
}

/* Run SQL on the test store's file, behind the backend's back. */
static void sql(const char *text)
{
	char path[128];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/plateau.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, text, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A version-1 store (before shared blobs and aggregations) opens, upgraded, its rows intact. */
static void test_schema_upgrade(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t id = series(s, "a.cpu{}");
	struct typed t = {0};

	push(s, id, T0, "old");
	store_close(s);
	*state = NULL;
	sql("CREATE TABLE p1 AS SELECT id, series, level, t0, t1, n, total, blob FROM profiles;"
	    "DROP TABLE profiles; ALTER TABLE p1 RENAME TO profiles;"
	    "CREATE TABLE s1 AS SELECT id, key, app, type, first_ns, last_ns FROM series;"
	    "DROP TABLE series; ALTER TABLE s1 RENAME TO series;"
	    "UPDATE meta SET v = '1' WHERE k = 'schema';");
	assert_int_equal(store_sqlite_open(dir, false, &s, &err), 0);
	*state = s;
	push(s, id, T0 + 10 * SEC, "new");
	assert_int_equal(s->be->scan(s, id, 0, T0, T0 + HOUR, collect_typed, &t, &err), 0);
	assert_string_equal(t.text, "old;new");
	/* A newer store than this build knows is refused. */
	store_close(s);
	*state = NULL;
	sql("UPDATE meta SET v = '9' WHERE k = 'schema';");
	assert_int_equal(store_sqlite_open(dir, false, &s, &err), ERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "schema version 9"));
}

static void test_bad_calls(void **state)
{
	struct store *s = *state, *t;
	struct error err = ERROR_INIT;
	struct store_row r = {.series = 1, .level = 1, .t0 = 0, .t1 = 1, .blob = "x", .len = 1};

	assert_int_equal(s->be->put(s, &r, 1, &err), ERR_USAGE);
	r.level = 9;
	assert_int_equal(s->be->put_rollup(s, &r, 1, &err), ERR_USAGE);
	err = (struct error)ERROR_INIT;
	assert_int_equal(store_sqlite_open("/proc/version", false, &t, &err), ERR_IO);
	assert_non_null(strstr(err.msg, "/proc/version"));
	assert_null(t);
}

/* The reserve for a full disk: made by writable() when there is room, gone with 0. */
static void test_reserve(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	char path[128];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/plateau.reserve", dir);
	assert_int_equal(store_sqlite_reserve(s, 1000, &err), ERR_USAGE);
	err = (struct error)ERROR_INIT;
	assert_int_equal(store_sqlite_reserve(s, INT64_C(1) << 20, &err), 0);
	assert_int_equal(s->be->writable(s, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 1 << 20);
	assert_true(sb.st_blocks * 512 >= 1 << 20); /* allocated, not sparse */
	assert_int_equal(store_sqlite_reserve(s, 0, &err), 0);
	assert_int_not_equal(stat(path, &sb), 0);
	assert_int_equal(s->be->writable(s, &err), 0);
	assert_int_not_equal(stat(path, &sb), 0);
}

/* A fleet's plan: its members' pushes in [from, until), each once, whatever rows it took. */
static void plan_fleet(struct store *s, const struct plan_fleet *f, int max_level, int64_t from,
		       int64_t until, struct got *g)
{
	struct error err = ERROR_INIT;

	memset(g, 0, sizeof(*g));
	assert_int_equal(store_plan_fleet(s, f, max_level, from, until, collect, g, &err), 0);
}

/* Roll the fleet F's stale windows of LEVEL as the server does: its minutes below, its members' of LEVEL. */
static void roll_fleet_level(struct store *s, const struct plan_fleet *f, int level)
{
	struct stale_list *l = calloc(1, sizeof(*l));
	struct error err = ERROR_INIT;

	assert_non_null(l);
	assert_int_equal(s->be->stale_each(s, level, 256, false, add_stale, l, &err), 0);
	for (size_t i = 0; i < l->n; i++) {
		struct plan_fleet one = *f;
		struct got g;
		struct store_row r;

		if (l->level[i] != level || l->series[i] != f->fleet.id)
			continue;
		one.member_max = level;
		plan_fleet(s, &one, level - 1, l->t0[i], l->t0[i] + store_level_ns[level], &g);
		r = (struct store_row){.series = f->fleet.id,
				       .level = level,
				       .t0 = l->t0[i],
				       .t1 = l->t0[i] + store_level_ns[level],
				       .samples = g.samples,
				       .blob = g.text,
				       .len = strlen(g.text)};
		assert_int_equal(s->be->put_rollup(s, &r, l->gen[i], &err), 0);
	}
	free(l);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ';'-joined names of TEXT sorted, into OUT. */
static void sorted_names(const char *text, char *out, size_t size)
{
	char *copy = strdup(text), *names[4096], *save = NULL;
	size_t n = 0, len = 0;

	assert_non_null(copy);
	for (char *t = strtok_r(copy, ";", &save); t && n < 4096; t = strtok_r(NULL, ";", &save))
		names[n++] = t;
	qsort(names, n, sizeof(*names), name_cmp);
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ";" : "", names[i]);
	free(copy);
}

/* Push one row of member ID at T (10 s) named NAME that marks fleet FLEET's windows. */
static void push_member(struct store *s, int64_t id, int64_t fleet, int64_t t, const char *name)
{
	struct error err = ERROR_INIT;
	struct store_row r = {.series = id,
			      .t0 = t,
			      .t1 = t + 10 * SEC,
			      .samples = 1,
			      .blob = name,
			      .len = strlen(name),
			      .fleet = fleet};

	assert_int_equal(s->be->put(s, &r, 1, &err), 0);
}

/*
 * A fleet's rollups stand in for its members' rows: a plan of the fleet
 * holds every member push of the range once, from the fleet's minutes
 * and ten-minute windows where they are fresh; a late push of a member
 * makes the fleet's windows stale and the plan reads the members there.
 */
static void test_fleet(void **state)
{
	struct store *s = *state;
	struct error err = ERROR_INIT;
	int64_t a = series(s, "app.cpu{i=\"a\"}"), b = series(s, "app.cpu{i=\"b\"}");
	int64_t f = series(s, "@app.cpu");
	struct plan_series members[2] = {{a, 0, 0}, {b, 0, 0}};
	struct plan_fleet fl = {.fleet = {f, 0, 0}, .members = members, .n = 2, .member_max = 3};
	static char want[16384], have[16384];
	int64_t from = T0 + 50 * SEC, until = T0 + 23 * MIN + 20 * SEC;
	size_t len = 0;
	struct got g;

	/* 25 minutes of both members every 10 s, a's and b's pushes of a window in one put. */
	for (int64_t t = T0; t < T0 + 25 * MIN; t += 10 * SEC) {
		char na[32], nb[32];
		struct store_row rows[2] = {
			{.series = a, .t0 = t, .t1 = t + 10 * SEC, .samples = 1, .fleet = f},
			{.series = b, .t0 = t, .t1 = t + 10 * SEC, .samples = 1, .fleet = f}};

		snprintf(na, sizeof(na), "a%lld", (long long)((t - T0) / SEC));
		snprintf(nb, sizeof(nb), "b%lld", (long long)((t - T0) / SEC));
		rows[0].blob = na;
		rows[0].len = strlen(na);
		rows[1].blob = nb;
		rows[1].len = strlen(nb);
		assert_int_equal(s->be->put(s, rows, 2, &err), 0);
		if (t >= from && t < until)
			len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s;%s",
						len ? ";" : "", na, nb);
	}
	sorted_names(want, want, sizeof(want));
	/* Nothing rolled: the members' pushes. */
	plan_fleet(s, &fl, 3, from, until, &g);
	sorted_names(g.text, have, sizeof(have));
	assert_string_equal(have, want);
	assert_int_equal(g.levels[0], g.samples);
	/* Each member's and the fleet's windows are stale: 25 minutes, 3 ten-minute, 1 hour each. */
	assert_int_equal(count_stale(s), 3 * (25 + 3 + 1));

	for (int level = 1; level < STORE_LEVELS; level++) {
		roll_level_of(s, a, level);
		roll_level_of(s, b, level);
		roll_fleet_level(s, &fl, level);
	}
	assert_int_equal(count_stale(s), 0);
	plan_fleet(s, &fl, 3, from, until, &g);
	sorted_names(g.text, have, sizeof(have));
	assert_string_equal(have, want);
	/* The fleet's rows in the middle (one per window for both members), the members' at the edges. */
	assert_int_equal(g.levels[2], 1);  /* [T0+10m, T0+20m) */
	assert_int_equal(g.levels[1], 12); /* 9 minutes before, 3 after */
	assert_int_equal(g.levels[0], 2 * (1 + 2));
	assert_int_equal(g.samples, 2 * ((until - from) / (10 * SEC)));

	/* A late push of b into minute 12: the fleet's minute, ten minutes and hour are stale. */
	push_member(s, b, f, T0 + 12 * MIN + 5 * SEC, "late");
	len = strlen(want);
	assert_true(len + 6 < sizeof(want));
	memcpy(want + len, ";late", 6);
	sorted_names(want, want, sizeof(want));
	assert_int_equal(count_stale(s), 2 * 3);
	plan_fleet(s, &fl, 3, from, until, &g);
	sorted_names(g.text, have, sizeof(have));
	assert_string_equal(have, want);
	assert_int_equal(g.levels[2], 0); /* its ten minutes from the fleet's nine fresh minutes */
	assert_int_equal(g.levels[1], 12 + 9 + 1); /* minute 12: a's rollup and b's pushes */
	assert_int_equal(g.levels[0], 2 * (1 + 2) + 7);
	/*
	 * Late pushes into ten minutes of the first twenty: past eight holes
	 * in the fleet's minutes the members plan the range themselves.
	 */
	len = 0;
	for (int64_t t = T0; t < until; t += 10 * SEC)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%sa%lld;b%lld",
					len ? ";" : "", (long long)((t - T0) / SEC),
					(long long)((t - T0) / SEC));
	len += (size_t)snprintf(want + len, sizeof(want) - len, ";late");
	for (int m = 1; m < 20; m += 2) {
		char late[16];

		snprintf(late, sizeof(late), "L%d", m);
		push_member(s, b, f, T0 + m * MIN + 7 * SEC, late);
		len += (size_t)snprintf(want + len, sizeof(want) - len, ";%s", late);
	}
	assert_true(len < sizeof(want));
	sorted_names(want, want, sizeof(want));
	plan_fleet(s, &fl, 3, T0, until, &g);
	sorted_names(g.text, have, sizeof(have));
	assert_string_equal(have, want);
	/*
	 * The twenty minutes from the members' own rows: a's two ten-minute
	 * rollups, b's nine fresh minutes and the pushes of its eleven stale
	 * ones (10 L, "late" and 6 each); then the fleet's minutes 20 to 22
	 * and 20 s of pushes.  Hole by hole, the fleet's nine fresh minutes
	 * and a's eleven would have been read instead of a's ten minutes.
	 */
	assert_int_equal(g.levels[3], 0);
	assert_int_equal(g.levels[2], 2);
	assert_int_equal(g.levels[1], 9 + 3);
	assert_int_equal(g.levels[0], 11 * 6 + 1 + 10 + 2 * 2);
	from = T0;

	/* Planned one by one, the members give the same pushes. */
	{
		struct got ga, gb;

		plan(s, a, 3, from, until, &ga);
		plan(s, b, 3, from, until, &gb);
		assert_int_equal(ga.samples + gb.samples, g.samples);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_series, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_blobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_upgrade, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
