/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_H
#define PLATEAU_STORE_H

/*
 * The profile store behind `plateau serve` (doc/store.md).
 *
 * A series is one (app, profile type, label set), named by its canonical
 * key `app.type{k="v",...}`.  A series holds profiles, one per time window,
 * each a blob (blob.h): as pushed (level 0; one blob of all the push's
 * sample types, shared by their series), plus single-type rollups made
 * from them at coarser resolutions (levels 1.. STORE_LEVELS-1: 1 min,
 * 10 min, 1 h), so that a query over a day reads a few dozen blobs.
 *
 * This file is the backend interface: a backend stores series and rows
 * and answers scans; everything above it (ingest, rollups, retention,
 * queries) is backend-independent, so that ClickHouse can sit behind the
 * same calls as the embedded SQLite.
 *
 * Times are unix nanoseconds.  Every function returns 0 or a negative
 * error code with a one-line message in *err.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Rollup levels: 0 = as pushed; then windows of these lengths. */
#define STORE_LEVELS 4
extern const int64_t store_level_ns[STORE_LEVELS]; /* 0, 60 s, 600 s, 3600 s */

/*
 * Stored times lie in [0, STORE_TIME_MAX] (1970-01-01 to 2262-01-01): the
 * service refuses pushes outside, and plans clamp their ranges to
 * [-STORE_TIME_MAX, STORE_TIME_MAX], so that a window's end plus the
 * rollup delay (INT64_MAX is 2262-04-11T23:47:16Z) never overflows.
 */
#define STORE_TIME_MAX INT64_C(9214646400000000000)

struct store;

struct store_series {
	int64_t id;
	const char *key; /* canonical app.type{...} */
	const char *app, *type;
	int64_t first_ns, last_ns; /* span of its level-0 rows (0, 0 when none) */
	bool average; /* a gauge (in-use memory): a window's value is its pushes' mean */
};

/* One stored profile of one series. */
struct store_row {
	int64_t series;
	int level;
	int64_t t0, t1;	 /* [t0, t1) */
	int64_t samples; /* number of level-0 profiles merged in (1 at level 0) */
	int64_t total;	 /* the total of the series' sample type: timelines read only this */
	int type;	 /* the blob's sample type (index) the series reads: 0 but at level 0 */
	int64_t blob_id; /* scans: the stored blob's identity, the same for rows sharing it */
	int64_t fleet;	 /* put: the fleet series of the row's app and type, 0: none */
	const void *blob;
	size_t len;
};

struct store_stats {
	int64_t series, rows, bytes_blobs, bytes_disk;
	int64_t stale; /* rollup windows waiting */
	int64_t oldest_ns, newest_ns;
};

struct store_backend {
	const char *name;
	void (*close)(struct store *s);

	/*
	 * Find or create the series KEY (app and type are its parts; AVERAGE
	 * its aggregation when created); *id.
	 */
	int (*series_get)(struct store *s, const char *key, const char *app, const char *type,
			  bool average, int64_t *id, bool *created, struct error *err);
	/* Every series, in id order, for the in-memory index. */
	int (*series_each)(struct store *s, int (*fn)(const struct store_series *, void *),
			   void *arg, struct error *err);

	/*
	 * Write level-0 rows in one durable transaction: when it returns 0 they
	 * survive a crash of the process.  Each row also marks the rollup
	 * window holding its t0 stale at every level (bumping the window's
	 * generation), and so the windows of its fleet series (row.fleet, when
	 * not 0; once per transaction).  A row belongs to the windows of its t0.  A push is one
	 * blob of all its sample types, read by the series of each (row.type
	 * says which): consecutive rows with the same blob pointer, length, t0
	 * and t1 share it, stored once.
	 */
	int (*put)(struct store *s, const struct store_row *rows, size_t n, struct error *err);

	/*
	 * Replace the rollup row (ROW->series, ROW->level, ROW->t0) — or delete
	 * it when ROW->len is 0 — and, in the same transaction, clear the
	 * window's stale mark if its generation is still GEN (a push that came
	 * in meanwhile keeps it stale, so the window is rolled up again).
	 */
	int (*put_rollup)(struct store *s, const struct store_row *row, int64_t gen,
			  struct error *err);

	/*
	 * As put_rollup for the N rollups of one window (level, t0, t1) of
	 * sibling series — the sample types of one app and label set — that
	 * read one blob of all their types (ROWS[i].type each; ROWS[i].len 0:
	 * that series has nothing in the window, its row is deleted), with
	 * their generations GENS.  The blob is stored once.
	 */
	int (*put_rollups)(struct store *s, const struct store_row *rows, const int64_t *gens,
			   size_t n, struct error *err);

	/*
	 * Call FN on the rows of SERIES at LEVEL whose t0 is in [from, until),
	 * in t0 order.  The row's blob is valid during the call only.  FN
	 * returns non-zero to stop (that value is returned).
	 */
	int (*scan)(struct store *s, int64_t series, int level, int64_t from, int64_t until,
		    int (*fn)(const struct store_row *, void *), void *arg, struct error *err);

	/* As scan, without reading the blobs (blob NULL, len 0): timelines. */
	int (*scan_totals)(struct store *s, int64_t series, int level, int64_t from, int64_t until,
			   int (*fn)(const struct store_row *, void *), void *arg,
			   struct error *err);

	/*
	 * Stale rollup windows of LEVEL, oldest t0 first (NEWEST: newest
	 * first), up to MAX; FN non-zero stops.
	 */
	int (*stale_each)(struct store *s, int level, size_t max, bool newest,
			  int (*fn)(int64_t series, int level, int64_t t0, int64_t gen, void *),
			  void *arg, struct error *err);
	/* The stale windows of SERIES at LEVEL with t0 in [from, until), in order. */
	int (*stale_range)(struct store *s, int64_t series, int level, int64_t from, int64_t until,
			   int (*fn)(int64_t t0, void *), void *arg, struct error *err);

	/* Delete every row (all levels) that ends at or before CUTOFF; *deleted. */
	int (*delete_before)(struct store *s, int64_t cutoff, int64_t *deleted, struct error *err);
	/* The t1 of the oldest level-0 row; 0 when there is none. */
	int (*oldest)(struct store *s, int64_t *t, struct error *err);
	int (*stats)(struct store *s, struct store_stats *st, struct error *err);
	/*
	 * The cheap part of stats, for every /metrics scrape: series, rows,
	 * stale and bytes_disk (from indexes and the file size; the rest 0),
	 * where stats reads every row.
	 */
	int (*counts)(struct store *s, struct store_stats *st, struct error *err);
	/* Bytes the store takes on disk, without scanning it (retention by size). */
	int (*disk_bytes)(struct store *s, int64_t *bytes, struct error *err);
	/* Housekeeping off the push path (SQLite: a WAL checkpoint); any thread but one at a time. */
	int (*maintain)(struct store *s, struct error *err);
	/*
	 * Whether the store can take writes now (a full disk: ERR_NOSPACE);
	 * when it cannot, it makes what room it can for retention to delete
	 * (SQLite: gives up its reserve file and moves the WAL into the
	 * database).  At open, and then from the background thread until it
	 * returns 0.
	 */
	int (*writable)(struct store *s, struct error *err);
};

/* What every backend's handle starts with. */
struct store {
	const struct store_backend *be;
};

/*
 * The SQLite backend: DIR/plateau.db (created with DIR when missing), WAL,
 * synchronous=NORMAL (a committed transaction survives kill -9; FULL
 * when FSYNC is set: survives power loss too).
 */
int store_sqlite_open(const char *dir, bool fsync, struct store **out, struct error *err);

/*
 * Hold BYTES (0: none, the default; else at least 1 MiB) back in
 * DIR/plateau.reserve for a full disk, and keep the WAL under half of it
 * (doc/plateau-serve.md, "A full disk"); before service_open().
 */
int store_sqlite_reserve(struct store *s, int64_t bytes, struct error *err);

static inline void store_close(struct store *s)
{
	if (s)
		s->be->close(s);
}

/* The start of the window of length W (> 0) that holds time T. */
static inline int64_t store_window_of(int64_t w, int64_t t)
{
	int64_t r = t % w;

	return t - (r < 0 ? r + w : r);
}

/* The start of the rollup window of LEVEL (>= 1) that holds time T. */
static inline int64_t store_window(int level, int64_t t)
{
	return store_window_of(store_level_ns[level], t);
}

#endif
