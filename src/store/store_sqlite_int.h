/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_SQLITE_INT_H
#define PLATEAU_STORE_SQLITE_INT_H

/*
 * What the two files of the SQLite backend share: store_sqlite.c (the
 * schema, connections, series, writes and reads, open and close) and
 * store_sqlite_space.c (retention, statistics, checkpoints and the full
 * disk).  Nothing outside src/store/store_sqlite*.c includes this.
 */

#include <pthread.h>
#include <sqlite3.h>

#include "store/store.h"

#define READERS_MAX 8

/*
 * The page size of a new store (an existing one keeps its own; build with
 * -DDB_PAGE_SIZE=N to try another).  A push's blob (9-18 KiB after zstd)
 * sits on a chain of overflow pages, each a WAL frame of two pwrite calls
 * at the commit and copied again at the checkpoint.  Measured (issue 16,
 * bench/README.md): 8 and 16 KiB pages halve those calls (46 to 37 and
 * 22 per push) but every commit also writes its dirty index and table
 * leaves whole, 1.4x and 2.2x the bytes written per push, and the
 * server's CPU per push did not move beyond the noise of interleaved
 * runs (0.9-1.1x): SQLite's 4 KiB stays.
 */
#ifndef DB_PAGE_SIZE
#define DB_PAGE_SIZE 4096
#endif

/* Bytes of WAL before a commit checkpoints by itself: sq_maintain() normally does it first. */
#define WAL_AUTOCHECKPOINT_BYTES (64 << 20)

/*
 * DIR/plateau.reserve (store_sqlite_reserve()): room held back for a full
 * disk.  When the disk fills, the store gives it up so that retention can
 * delete, the WAL can be checkpointed and the file shrunk.  With a reserve
 * R, the WAL is checkpointed every R / 4 and never grows past R / 2 (so
 * that R is always enough to move it into the database), and the store
 * takes writes again once the file system has R + R / 2 + R / 4 free: the
 * reserve, half as much again, and the WAL's own size (truncating the WAL
 * alone does not end the episode).
 */
#define RESERVE_NAME "plateau.reserve"

enum stmt_id {
	ST_SERIES_FIND,
	ST_SERIES_ADD,
	ST_SERIES_SPAN,
	ST_SERIES_ALL,
	ST_PUT,
	ST_STALE_MARK,
	ST_ROLLUP_DEL,
	ST_ROLLUP_REF,
	ST_HOLDER_UNREF,
	ST_HOLDER_DROP,
	ST_STALE_CLEAR,
	ST_SCAN,
	ST_SCAN_TOTALS,
	ST_STALE_EACH,
	ST_STALE_NEWEST,
	ST_STALE_RANGE,
	ST_DELETE_BEFORE,
	ST_DELETE_STALE_BEFORE,
	ST_OLDEST,
	ST_STATS,
	ST_COUNTS,
	ST_COUNT
};

struct conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
};

struct sqlite_store {
	struct store base;
	char *path;
	char *reserve;	       /* DIR/plateau.reserve */
	int64_t reserve_bytes; /* its size; 0: none */
	bool fsync;
	pthread_mutex_t wmu; /* the writer connection */
	struct conn writer;
	bool readonly; /* the writer could not open for a full disk: a reader until sq_writable() */
	struct conn ckpt;    /* sq_maintain()'s own connection, opened on first use */
	pthread_mutex_t rmu; /* the reader pool */
	struct conn *idle[READERS_MAX];
	size_t nidle;
};

int sq_conn_open(struct conn *c, const char *path, bool fsync, bool writer, struct error *err);
int sq_counts(struct store *st, struct store_stats *out, struct error *err);
int sq_db_error(struct error *err, sqlite3 *db, const char *what);
int sq_delete_before(struct store *st, int64_t cutoff, int64_t *deleted, struct error *err);
int sq_disk_bytes(struct store *st, int64_t *bytes, struct error *err);
int sq_exec(struct conn *c, const char *sql, struct error *err);
int sq_maintain(struct store *st, struct error *err);
int sq_oldest(struct store *st, int64_t *t, struct error *err);
int sq_read_rows(struct sqlite_store *s, enum stmt_id id, const int64_t *args, int nargs,
		 int (*row)(sqlite3_stmt *q, void *arg), void *arg, const char *what,
		 struct error *err);
int sq_stats(struct store *st, struct store_stats *out, struct error *err);
int sq_txn_end(struct conn *c, int rc, struct error *err);
int sq_wal_pragmas(struct sqlite_store *s, struct error *err);
int sq_writable(struct store *st, struct error *err);
int sq_write_args(struct conn *c, enum stmt_id id, const int64_t *args, int nargs, const char *what,
		  struct error *err);
int64_t sq_wal_size(const struct sqlite_store *s);
struct sqlite_store *sq_store(struct store *s);
void sq_conn_close(struct conn *c);

#endif
