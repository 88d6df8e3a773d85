/* SPDX-License-Identifier: MIT */
/*
 * The embedded SQLite backend of the profile store (store.h, doc/store.md);
 * retention, statistics and the full disk are in store_sqlite_space.c.
 *
 * One file, DIR/plateau.db, in WAL mode: one writer connection behind a
 * mutex (SQLite has one writer anyway) and a small pool of reader
 * connections, so that queries read a consistent snapshot while pushes
 * commit.  Statements are prepared once per connection.
 *
 * Schema (version 3):
 *   series(id, key UNIQUE, app, type, first_ns, last_ns, agg)   agg 1: average
 *   profiles(id, series, level, t0, t1, n, total, blob, type, blob_of)
 *                                                  index (series, level, t0)
 *   stale(series, level, t0, gen)                  rollup windows to redo
 *   meta(k, v)                                     schema version
 * Level-0 rows of one series may share a t0 (two pushes of one window);
 * a rollup row is unique per (series, level, t0), which put_rollup keeps.
 * The level-0 rows of one push share its blob: the first row holds it,
 * the others an empty blob and blob_of = the first's id (same t0 and t1,
 * so retention deletes them together); type is the blob's sample type the
 * row's series reads.  The rollup rows of sibling series (put_rollups)
 * share a blob held by a row of series -1, whose n counts its readers:
 * replacing one reader's rollup leaves the others' blob in place, and
 * the holder goes with its last reader (or with them all, by t1).
 * Older versions are upgraded in place: 1 (no type,
 * no blob_of) by adding the two columns, 2 (no agg) by adding agg.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_sqlite_int.h"
#include "util/alloc.h"
#include "util/log.h"

#define SCHEMA_VERSION "3"
#define BUSY_MS	       10000

const int64_t store_level_ns[STORE_LEVELS] = {0, 60000000000LL, 600000000000LL, 3600000000000LL};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_SERIES_FIND] = "SELECT id FROM series WHERE key = ?1",
	[ST_SERIES_ADD] = "INSERT INTO series(key, app, type, first_ns, last_ns, agg) "
			  "VALUES (?1, ?2, ?3, 0, 0, ?4)",
	[ST_SERIES_SPAN] = "UPDATE series SET "
			   "first_ns = CASE WHEN first_ns = 0 OR ?2 < first_ns THEN ?2 "
			   "ELSE first_ns END, "
			   "last_ns = CASE WHEN ?3 > last_ns THEN ?3 ELSE last_ns END "
			   "WHERE id = ?1",
	[ST_SERIES_ALL] =
		"SELECT id, key, app, type, first_ns, last_ns, agg FROM series ORDER BY id",
	[ST_PUT] = "INSERT INTO profiles(series, level, t0, t1, n, total, blob, type, blob_of) "
		   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	/* A push's windows at levels 1, 2 and 3 (STORE_LEVELS - 1) in one statement. */
	[ST_STALE_MARK] = "INSERT INTO stale(series, level, t0, gen) "
			  "VALUES (?1, 1, ?2, 1), (?1, 2, ?3, 1), (?1, 3, ?4, 1) "
			  "ON CONFLICT(series, level, t0) DO UPDATE SET gen = gen + 1",
	[ST_ROLLUP_DEL] = "DELETE FROM profiles WHERE series = ?1 AND level = ?2 AND t0 = ?3",
	[ST_ROLLUP_REF] =
		"SELECT blob_of FROM profiles WHERE series = ?1 AND level = ?2 AND t0 = ?3"
		" AND blob_of IS NOT NULL",
	[ST_HOLDER_UNREF] = "UPDATE profiles SET n = n - 1 WHERE id = ?1 AND series = -1",
	[ST_HOLDER_DROP] = "DELETE FROM profiles WHERE id = ?1 AND series = -1 AND n <= 0",
	[ST_STALE_CLEAR] = "DELETE FROM stale WHERE series = ?1 AND level = ?2 AND t0 = ?3 "
			   "AND gen = ?4",
	[ST_SCAN] = "SELECT p.t0, p.t1, p.n, p.total, p.type, COALESCE(p.blob_of, p.id),"
		    " CASE WHEN p.blob_of IS NULL THEN p.blob ELSE o.blob END"
		    " FROM profiles p LEFT JOIN profiles o ON o.id = p.blob_of"
		    " WHERE p.series = ?1 AND p.level = ?2 AND p.t0 >= ?3 AND p.t0 < ?4"
		    " ORDER BY p.t0",
	[ST_SCAN_TOTALS] = "SELECT t0, t1, n, total, type, COALESCE(blob_of, id) FROM profiles "
			   "WHERE series = ?1 AND level = ?2 AND t0 >= ?3 AND t0 < ?4 ORDER BY t0",
	[ST_STALE_EACH] = "SELECT series, level, t0, gen FROM stale WHERE level = ?2 ORDER BY t0 "
			  "LIMIT ?1",
	[ST_STALE_NEWEST] = "SELECT series, level, t0, gen FROM stale WHERE level = ?2 "
			    "ORDER BY t0 DESC LIMIT ?1",
	[ST_STALE_RANGE] = "SELECT t0 FROM stale WHERE series = ?1 AND level = ?2 "
			   "AND t0 >= ?3 AND t0 < ?4 ORDER BY t0",
	[ST_DELETE_BEFORE] = "DELETE FROM profiles WHERE t1 <= ?1",
	[ST_DELETE_STALE_BEFORE] = "DELETE FROM stale WHERE t0 < ?1",
	[ST_OLDEST] = "SELECT MIN(t1) FROM profiles WHERE level = 0",
	[ST_STATS] = "SELECT (SELECT COUNT(*) FROM series), COUNT(*), "
		     "COALESCE(SUM(LENGTH(blob)), 0), COALESCE(MIN(t0), 0), "
		     "COALESCE(MAX(t1), 0), (SELECT COUNT(*) FROM stale) FROM profiles",
	[ST_COUNTS] =
		"SELECT (SELECT COUNT(*) FROM series), (SELECT COUNT(*) FROM profiles), 0, 0, "
		"0, (SELECT COUNT(*) FROM stale)",
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"
	" app TEXT NOT NULL, type TEXT NOT NULL, first_ns INTEGER NOT NULL,"
	" last_ns INTEGER NOT NULL, agg INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS profiles(id INTEGER PRIMARY KEY, series INTEGER NOT NULL,"
	" level INTEGER NOT NULL, t0 INTEGER NOT NULL, t1 INTEGER NOT NULL, n INTEGER NOT NULL,"
	" total INTEGER NOT NULL, blob BLOB NOT NULL, type INTEGER NOT NULL DEFAULT 0,"
	" blob_of INTEGER);"
	"CREATE INDEX IF NOT EXISTS profiles_window ON profiles(series, level, t0);"
	"CREATE INDEX IF NOT EXISTS profiles_end ON profiles(t1);"
	"CREATE TABLE IF NOT EXISTS stale(series INTEGER NOT NULL, level INTEGER NOT NULL,"
	" t0 INTEGER NOT NULL, gen INTEGER NOT NULL, PRIMARY KEY(series, level, t0))"
	" WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS stale_age ON stale(t0);"
	"INSERT OR IGNORE INTO meta(k, v) VALUES ('schema', '" SCHEMA_VERSION "');";

/* Version 1 to 2: the columns of shared blobs. */
static const char upgrade_1_sql[] =
	"ALTER TABLE profiles ADD COLUMN type INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE profiles ADD COLUMN blob_of INTEGER;"
	"UPDATE meta SET v = '2' WHERE k = 'schema';";

/* Version 2 to 3: a series' aggregation. */
static const char upgrade_2_sql[] = "ALTER TABLE series ADD COLUMN agg INTEGER NOT NULL DEFAULT 0;"
				    "UPDATE meta SET v = '3' WHERE k = 'schema';";

/* Whether DB's last error is a full disk (or quota). */
static bool db_full(sqlite3 *db)
{
	int e = db ? sqlite3_system_errno(db) : 0;

	return db && (sqlite3_errcode(db) == SQLITE_FULL || e == ENOSPC || e == EDQUOT);
}

int sq_db_error(struct error *err, sqlite3 *db, const char *what)
{
	return error_set(err, db_full(db) ? ERR_NOSPACE : ERR_IO, "store: %s: %s", what,
			 db ? sqlite3_errmsg(db) : "no database");
}

void sq_conn_close(struct conn *c)
{
	for (size_t i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close(c->db);
	memset(c, 0, sizeof(*c));
}

/* Bring an older store up to SCHEMA_VERSION; refuse a newer one. */
static int schema_upgrade(struct conn *c, const char *path, struct error *err)
{
	sqlite3_stmt *q = NULL;
	char version[16] = "";
	char *msg = NULL;

	if (sqlite3_prepare_v2(c->db, "SELECT v FROM meta WHERE k = 'schema'", -1, &q, NULL) !=
	    SQLITE_OK)
		return sq_db_error(err, c->db, path);
	if (sqlite3_step(q) == SQLITE_ROW)
		snprintf(version, sizeof(version), "%s", (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	if (!strcmp(version, SCHEMA_VERSION))
		return 0;
	if (version[0])
		debug(DEBUG_STORE, "%s: schema version %s, upgrading to %s", path, version,
		      SCHEMA_VERSION);
	if (strcmp(version, "1") && strcmp(version, "2"))
		return error_set(err, ERR_UNSUPPORTED,
				 "store: %s: schema version %s is not one this build knows (%s)",
				 path, version, SCHEMA_VERSION);
	if ((!strcmp(version, "1") &&
	     sqlite3_exec(c->db, upgrade_1_sql, NULL, NULL, &msg) != SQLITE_OK) ||
	    sqlite3_exec(c->db, upgrade_2_sql, NULL, NULL, &msg) != SQLITE_OK) {
		error_set(err, ERR_IO, "store: %s: upgrading the schema: %s", path,
			  msg ? msg : "failed");
		sqlite3_free(msg);
		return ERR_IO;
	}
	return 0;
}

int sq_conn_open(struct conn *c, const char *path, bool fsync, bool writer, struct error *err)
{
	int flags = writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
	char *msg = NULL;
	char pragmas[400];

	memset(c, 0, sizeof(*c));
	if (sqlite3_open_v2(path, &c->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		int rc = sq_db_error(err, c->db, path);

		sq_conn_close(c);
		return rc;
	}
	sqlite3_busy_timeout(c->db, BUSY_MS);
	/*
	 * secure_delete FAST: Debian's SQLite zeroes every freed page by
	 * default, so a retention DELETE wrote as much WAL as it deleted and
	 * could not run on a full disk.
	 */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA page_size=%d; %sPRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
		 " PRAGMA foreign_keys=OFF; PRAGMA wal_autocheckpoint=%d;",
		 DB_PAGE_SIZE,
		 writer ? "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA secure_delete=FAST; " : "",
		 fsync ? "FULL" : "NORMAL", WAL_AUTOCHECKPOINT_BYTES / DB_PAGE_SIZE);
	if (writer && (sqlite3_exec(c->db, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
		       sqlite3_exec(c->db, schema_sql, NULL, NULL, &msg) != SQLITE_OK)) {
		error_set(err, db_full(c->db) ? ERR_NOSPACE : ERR_IO, "store: %s: %s", path,
			  msg ? msg : "cannot set up");
		sqlite3_free(msg);
		sq_conn_close(c);
		return err->code;
	}
	if (writer && schema_upgrade(c, path, err) < 0) {
		sq_conn_close(c);
		return err->code;
	}
	for (size_t i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(c->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i],
				       NULL) != SQLITE_OK) {
			sq_db_error(err, c->db, "preparing a statement");
			sq_conn_close(c);
			return ERR_IO;
		}
	}
	return 0;
}

struct sqlite_store *sq_store(struct store *s)
{
	return (struct sqlite_store *)s;
}

/* A reader connection from the pool, opened on demand; NULL with *err set. */
static struct conn *reader_get(struct sqlite_store *s, struct error *err)
{
	struct conn *c = NULL;

	pthread_mutex_lock(&s->rmu);
	if (s->nidle)
		c = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->rmu);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c) {
		error_set(err, ERR_NOMEM, "out of memory (a store reader)");
		return NULL;
	}
	if (sq_conn_open(c, s->path, s->fsync, false, err) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

static void reader_put(struct sqlite_store *s, struct conn *c)
{
	pthread_mutex_lock(&s->rmu);
	if (s->nidle < READERS_MAX) {
		s->idle[s->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&s->rmu);
	if (c) {
		sq_conn_close(c);
		free(c);
	}
}

static sqlite3_stmt *stmt(struct conn *c, enum stmt_id id)
{
	sqlite3_reset(c->st[id]);
	sqlite3_clear_bindings(c->st[id]);
	return c->st[id];
}

/* Run a statement that returns no rows (bound already). */
static int step_done(struct conn *c, sqlite3_stmt *st, const char *what, struct error *err)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sq_db_error(err, c->db, what);
}

int sq_exec(struct conn *c, const char *sql, struct error *err)
{
	return sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK
		       ? 0
		       : sq_db_error(err, c->db, sql);
}

/*
 * Run read statement ID on a pooled reader with ARGS bound as integers
 * (?1, ?2, ...), calling ROW on each result row; ROW returns non-zero to
 * stop (returned as is).
 */
int sq_read_rows(struct sqlite_store *s, enum stmt_id id, const int64_t *args, int nargs,
		 int (*row)(sqlite3_stmt *q, void *arg), void *arg, const char *what,
		 struct error *err)
{
	struct conn *c = reader_get(s, err);
	sqlite3_stmt *q;
	int rc;

	if (!c)
		return err && err->code == ERR_NOMEM ? ERR_NOMEM : ERR_IO;
	q = stmt(c, id);
	for (int i = 0; i < nargs; i++)
		sqlite3_bind_int64(q, i + 1, args[i]);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int r = row(q, arg);

		if (r) {
			rc = r;
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : sq_db_error(err, c->db, what);
out:
	sqlite3_reset(q);
	reader_put(s, c);
	return rc;
}

/* Run write statement ID with ARGS bound as integers (?1, ?2, ...). */
int sq_write_args(struct conn *c, enum stmt_id id, const int64_t *args, int nargs, const char *what,
		  struct error *err)
{
	sqlite3_stmt *q = stmt(c, id);

	for (int i = 0; i < nargs; i++)
		sqlite3_bind_int64(q, i + 1, args[i]);
	return step_done(c, q, what, err);
}

/* End the writer's transaction: COMMIT after success, ROLLBACK after a failure. */
int sq_txn_end(struct conn *c, int rc, struct error *err)
{
	if (rc == 0)
		rc = sq_exec(c, "COMMIT", err);
	if (rc < 0)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* ---- series ---- */

static int series_get(struct store *st, const char *key, const char *app, const char *type,
		      bool average, int64_t *id, bool *created, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	sqlite3_stmt *q;
	int rc = 0;

	*created = false;
	pthread_mutex_lock(&s->wmu);
	q = stmt(c, ST_SERIES_FIND);
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(q, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		q = stmt(c, ST_SERIES_ADD);
		sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, app, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, type, -1, SQLITE_STATIC);
		sqlite3_bind_int(q, 4, average);
		rc = step_done(c, q, "adding a series", err);
		if (rc == 0) {
			*id = sqlite3_last_insert_rowid(c->db);
			*created = true;
		}
	} else {
		rc = sq_db_error(err, c->db, "looking up a series");
	}
	sqlite3_reset(q);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

struct series_cb {
	int (*fn)(const struct store_series *, void *);
	void *arg;
};

static int series_row(sqlite3_stmt *q, void *arg)
{
	struct series_cb *cb = arg;
	struct store_series se = {
		.id = sqlite3_column_int64(q, 0),
		.key = (const char *)sqlite3_column_text(q, 1),
		.app = (const char *)sqlite3_column_text(q, 2),
		.type = (const char *)sqlite3_column_text(q, 3),
		.first_ns = sqlite3_column_int64(q, 4),
		.last_ns = sqlite3_column_int64(q, 5),
		.average = sqlite3_column_int(q, 6) != 0,
	};

	return cb->fn(&se, cb->arg);
}

static int series_each(struct store *st, int (*fn)(const struct store_series *, void *), void *arg,
		       struct error *err)
{
	struct series_cb cb = {fn, arg};

	return sq_read_rows(sq_store(st), ST_SERIES_ALL, NULL, 0, series_row, &cb, "listing series",
			    err);
}

/* ---- writes ---- */

/* Store R; with SHARED (> 0) its blob is that row's, stored once. */
static int put_one(struct conn *c, const struct store_row *r, int64_t shared, struct error *err)
{
	sqlite3_stmt *q = stmt(c, ST_PUT);
	int rc;

	sqlite3_bind_int64(q, 1, r->series);
	sqlite3_bind_int(q, 2, r->level);
	sqlite3_bind_int64(q, 3, r->t0);
	sqlite3_bind_int64(q, 4, r->t1);
	sqlite3_bind_int64(q, 5, r->samples);
	sqlite3_bind_int64(q, 6, r->total);
	sqlite3_bind_blob64(q, 7, shared ? "" : r->blob, shared ? 0 : r->len, SQLITE_STATIC);
	sqlite3_bind_int(q, 8, r->type);
	if (shared)
		sqlite3_bind_int64(q, 9, shared);
	else
		sqlite3_bind_null(q, 9);
	rc = step_done(c, q, "storing a profile", err);
	return rc;
}

static int mark_stale(struct conn *c, int64_t series, const struct store_row *r, struct error *err)
{
	int64_t args[] = {series, store_window(1, r->t0), store_window(2, r->t0),
			  store_window(3, r->t0)};

	_Static_assert(STORE_LEVELS == 4, "ST_STALE_MARK names levels 1 to 3");
	return sq_write_args(c, ST_STALE_MARK, args, 4, "marking a rollup stale", err);
}

static int span(struct conn *c, const struct store_row *r, struct error *err)
{
	int64_t args[] = {r->series, r->t0, r->t1};

	return sq_write_args(c, ST_SERIES_SPAN, args, 3, "updating a series", err);
}

/* Whether a row before I marked the same fleet's same minute (a short scan: batches are small). */
static bool fleet_marked(const struct store_row *rows, size_t i)
{
	int64_t w = store_window(1, rows[i].t0);

	for (size_t j = i < 256 ? 0 : i - 256; j < i; j++)
		if (rows[j].fleet == rows[i].fleet && store_window(1, rows[j].t0) == w)
			return true;
	return false;
}

/*
 * With a reserve, the WAL stays under half of it: past that, a blocking
 * checkpoint (the writer's lock held); when even that cannot bring it
 * back, checkpoints are failing and the push is refused for space.
 */
static int wal_bound(struct sqlite_store *s, struct error *err)
{
	int64_t max = s->reserve_bytes / 2;

	if (!max || sq_wal_size(s) <= max)
		return 0;
	sqlite3_wal_checkpoint_v2(s->writer.db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (sq_wal_size(s) <= max)
		return 0;
	return error_set(err, ERR_NOSPACE, "store: the WAL is over %lld KiB: checkpoints fail",
			 (long long)(max >> 10));
}

static int put(struct store *st, const struct store_row *rows, size_t n, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	int64_t first_id = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (rows[i].level != 0 || rows[i].t1 < rows[i].t0)
			return error_set(err, ERR_USAGE,
					 "store: put takes level-0 rows with t0 <= t1");
	pthread_mutex_lock(&s->wmu);
	rc = wal_bound(s, err);
	if (rc == 0)
		rc = sq_exec(c, "BEGIN IMMEDIATE", err);
	for (size_t i = 0, first = 0; rc == 0 && i < n; i++) {
		/* A run of rows with one blob: the first row stores it. */
		bool shares = i > 0 && rows[i].blob == rows[first].blob &&
			      rows[i].len == rows[first].len && rows[i].t0 == rows[first].t0 &&
			      rows[i].t1 == rows[first].t1;

		if (!shares)
			first = i;
		rc = put_one(c, &rows[i], shares ? first_id : 0, err);
		if (rc == 0 && !shares)
			first_id = sqlite3_last_insert_rowid(c->db);
		if (rc == 0)
			rc = mark_stale(c, rows[i].series, &rows[i], err);
		if (rc == 0)
			rc = span(c, &rows[i], err);
		/* The fleet's minute (and so its hour) once per transaction: the pushes of a fleet's instances come together. */
		if (rc == 0 && rows[i].fleet > 0 && !fleet_marked(rows, i))
			rc = mark_stale(c, rows[i].fleet, &rows[i], err);
	}
	rc = sq_txn_end(c, rc, err);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

/* Delete the rollup row (series, level, t0), and its shared blob's holder if it was the last reader. */
static int rollup_del(struct conn *c, const int64_t *args, struct error *err)
{
	sqlite3_stmt *q = stmt(c, ST_ROLLUP_REF);
	int64_t holder = 0;
	int rc;

	for (int i = 0; i < 3; i++)
		sqlite3_bind_int64(q, i + 1, args[i]);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		holder = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sq_db_error(err, c->db, "replacing a rollup");
	rc = sq_write_args(c, ST_ROLLUP_DEL, args, 3, "replacing a rollup", err);
	if (rc == 0 && holder)
		rc = sq_write_args(c, ST_HOLDER_UNREF, &holder, 1, "replacing a shared rollup",
				   err);
	if (rc == 0 && holder)
		rc = sq_write_args(c, ST_HOLDER_DROP, &holder, 1, "replacing a shared rollup", err);
	return rc;
}

static int put_rollup(struct store *st, const struct store_row *r, int64_t gen, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	int64_t args[] = {r->series, r->level, r->t0, gen};
	int rc;

	if (r->level < 1 || r->level >= STORE_LEVELS)
		return error_set(err, ERR_USAGE, "store: rollup level %d out of range", r->level);
	pthread_mutex_lock(&s->wmu);
	rc = sq_exec(c, "BEGIN IMMEDIATE", err);
	if (rc == 0)
		rc = rollup_del(c, args, err);
	if (rc == 0 && r->len)
		rc = put_one(c, r, 0, err);
	if (rc == 0)
		rc = sq_write_args(c, ST_STALE_CLEAR, args, 4, "clearing a stale rollup", err);
	rc = sq_txn_end(c, rc, err);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

static int put_rollups(struct store *st, const struct store_row *rows, const int64_t *gens,
		       size_t n, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	const struct store_row *full = NULL; /* the first row with the blob */
	int64_t holder = 0;
	size_t readers = 0;
	int rc;

	for (size_t i = 0; i < n && !full; i++)
		if (rows[i].len)
			full = &rows[i];
	for (size_t i = 0; i < n; i++) {
		if (rows[i].level < 1 || rows[i].level >= STORE_LEVELS)
			return error_set(err, ERR_USAGE, "store: rollup level %d out of range",
					 rows[i].level);
		if (rows[i].level != rows[0].level || rows[i].t0 != rows[0].t0 ||
		    rows[i].t1 != rows[0].t1 ||
		    (rows[i].len && (rows[i].blob != full->blob || rows[i].len != full->len)))
			return error_set(
				err, ERR_USAGE,
				"store: put_rollups takes rows of one window and one blob");
		readers += rows[i].len != 0;
	}
	pthread_mutex_lock(&s->wmu);
	rc = sq_exec(c, "BEGIN IMMEDIATE", err);
	for (size_t i = 0; i < n && rc == 0; i++) {
		int64_t args[] = {rows[i].series, rows[i].level, rows[i].t0};

		rc = rollup_del(c, args, err);
	}
	if (rc == 0 && readers) {
		struct store_row h = {.series = -1,
				      .level = rows[0].level,
				      .t0 = rows[0].t0,
				      .t1 = rows[0].t1,
				      .samples = (int64_t)readers,
				      .blob = full->blob,
				      .len = full->len};

		rc = put_one(c, &h, 0, err);
		holder = sqlite3_last_insert_rowid(c->db);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (rows[i].len)
			rc = put_one(c, &rows[i], holder, err);
	for (size_t i = 0; i < n && rc == 0; i++) {
		int64_t args[] = {rows[i].series, rows[i].level, rows[i].t0, gens[i]};

		rc = sq_write_args(c, ST_STALE_CLEAR, args, 4, "clearing a stale rollup", err);
	}
	rc = sq_txn_end(c, rc, err);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

/* ---- reads ---- */

struct scan_cb {
	int64_t series;
	int level;
	int (*fn)(const struct store_row *, void *);
	void *arg;
};

static int scan_row(sqlite3_stmt *q, void *arg)
{
	struct scan_cb *cb = arg;
	struct store_row r = {
		.series = cb->series,
		.level = cb->level,
		.t0 = sqlite3_column_int64(q, 0),
		.t1 = sqlite3_column_int64(q, 1),
		.samples = sqlite3_column_int64(q, 2),
		.total = sqlite3_column_int64(q, 3),
	};

	r.type = sqlite3_column_int(q, 4);
	r.blob_id = sqlite3_column_int64(q, 5);
	if (sqlite3_column_count(q) > 6) {
		r.blob = sqlite3_column_blob(q, 6);
		r.len = (size_t)sqlite3_column_bytes(q, 6);
	}
	return cb->fn(&r, cb->arg);
}

static int scan(struct store *st, int64_t series, int level, int64_t from, int64_t until,
		int (*fn)(const struct store_row *, void *), void *arg, struct error *err)
{
	struct scan_cb cb = {series, level, fn, arg};
	int64_t args[] = {series, level, from, until};

	return sq_read_rows(sq_store(st), ST_SCAN, args, 4, scan_row, &cb, "reading profiles", err);
}

static int scan_totals(struct store *st, int64_t series, int level, int64_t from, int64_t until,
		       int (*fn)(const struct store_row *, void *), void *arg, struct error *err)
{
	struct scan_cb cb = {series, level, fn, arg};
	int64_t args[] = {series, level, from, until};

	return sq_read_rows(sq_store(st), ST_SCAN_TOTALS, args, 4, scan_row, &cb, "reading totals",
			    err);
}

struct stale_cb {
	int (*each)(int64_t series, int level, int64_t t0, int64_t gen, void *);
	int (*range)(int64_t t0, void *);
	void *arg;
};

static int stale_row(sqlite3_stmt *q, void *arg)
{
	struct stale_cb *cb = arg;

	if (cb->range)
		return cb->range(sqlite3_column_int64(q, 0), cb->arg);
	return cb->each(sqlite3_column_int64(q, 0), sqlite3_column_int(q, 1),
			sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3), cb->arg);
}

static int stale_each(struct store *st, int level, size_t max, bool newest,
		      int (*fn)(int64_t series, int level, int64_t t0, int64_t gen, void *),
		      void *arg, struct error *err)
{
	struct stale_cb cb = {.each = fn, .arg = arg};
	int64_t args[] = {max > INT64_MAX ? INT64_MAX : (int64_t)max, level};

	return sq_read_rows(sq_store(st), newest ? ST_STALE_NEWEST : ST_STALE_EACH, args, 2,
			    stale_row, &cb, "listing stale rollups", err);
}

static int stale_range(struct store *st, int64_t series, int level, int64_t from, int64_t until,
		       int (*fn)(int64_t t0, void *), void *arg, struct error *err)
{
	struct stale_cb cb = {.range = fn, .arg = arg};
	int64_t args[] = {series, level, from, until};

	return sq_read_rows(sq_store(st), ST_STALE_RANGE, args, 4, stale_row, &cb,
			    "reading stale rollups", err);
}

static void sqlite_close(struct store *st)
{
	struct sqlite_store *s = sq_store(st);

	if (s->ckpt.db)
		sq_conn_close(&s->ckpt);
	sq_conn_close(&s->writer);
	for (size_t i = 0; i < s->nidle; i++) {
		sq_conn_close(s->idle[i]);
		free(s->idle[i]);
	}
	pthread_mutex_destroy(&s->wmu);
	pthread_mutex_destroy(&s->rmu);
	free(s->path);
	free(s->reserve);
	free(s);
}

static const struct store_backend sqlite_backend = {
	.name = "sqlite",
	.close = sqlite_close,
	.series_get = series_get,
	.series_each = series_each,
	.put = put,
	.put_rollup = put_rollup,
	.put_rollups = put_rollups,
	.scan = scan,
	.scan_totals = scan_totals,
	.stale_each = stale_each,
	.stale_range = stale_range,
	.delete_before = sq_delete_before,
	.oldest = sq_oldest,
	.stats = sq_stats,
	.counts = sq_counts,
	.disk_bytes = sq_disk_bytes,
	.maintain = sq_maintain,
	.writable = sq_writable,
};

int store_sqlite_reserve(struct store *st, int64_t bytes, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	int rc;

	if (bytes < 0 || (bytes && bytes < (INT64_C(1) << 20)))
		return error_set(err, ERR_USAGE, "store: a reserve is 0 or at least 1 MiB");
	pthread_mutex_lock(&s->wmu);
	s->reserve_bytes = bytes;
	rc = s->readonly ? 0 : sq_wal_pragmas(s, err);
	pthread_mutex_unlock(&s->wmu);
	if (!bytes)
		unlink(s->reserve);
	return rc;
}

int store_sqlite_open(const char *dir, bool fsync, struct store **out, struct error *err)
{
	struct sqlite_store *s;
	char path[PATH_MAX], reserve[PATH_MAX];
	struct stat sb;
	int rc;

	*out = NULL;
	if (stat(dir, &sb) != 0 && mkdir(dir, 0755) != 0 && errno != EEXIST)
		return error_set(err, ERR_IO, "store: %s: cannot create: %s", dir, strerror(errno));
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return error_set(err, ERR_IO, "store: %s: not a directory", dir);
	if ((size_t)snprintf(path, sizeof(path), "%s/plateau.db", dir) >= sizeof(path) ||
	    (size_t)snprintf(reserve, sizeof(reserve), "%s/" RESERVE_NAME, dir) >= sizeof(reserve))
		return error_set(err, ERR_USAGE, "store: %s: path too long", dir);
	s = xcalloc(1, sizeof(*s));
	s->base.be = &sqlite_backend;
	s->path = xstrdup(path);
	s->reserve = xstrdup(reserve);
	s->fsync = fsync;
	pthread_mutex_init(&s->wmu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	rc = sq_conn_open(&s->writer, path, fsync, true, err);
	/*
	 * A full disk: the reserve's room lets it open; without one, it opens
	 * to read (sq_writable() says whether it can write, and reopens it).
	 */
	if (rc == ERR_NOSPACE && unlink(reserve) == 0)
		rc = sq_conn_open(&s->writer, path, fsync, true, err);
	if (rc == ERR_NOSPACE) {
		*err = (struct error)ERROR_INIT;
		rc = sq_conn_open(&s->writer, path, fsync, false, err);
		s->readonly = rc == 0;
	}
	if (rc < 0) {
		pthread_mutex_destroy(&s->wmu);
		pthread_mutex_destroy(&s->rmu);
		free(s->path);
		free(s->reserve);
		free(s);
		return err->code;
	}
	debug(DEBUG_STORE, "%s: opened %s, synchronous=%s", path,
	      s->readonly ? "read-only (the disk is full)" : "for writing",
	      fsync ? "FULL" : "NORMAL");
	*out = &s->base;
	return 0;
}
