/* SPDX-License-Identifier: MIT */
/*
 * The SQLite backend's room on disk (store_sqlite_int.h): retention
 * (delete_before, in chunks with the free pages given back), statistics
 * and sizes, WAL checkpoints, and the full disk: the reserve file, the
 * probe and writable(), which reopens the writer once there is room.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store/store_sqlite_int.h"
#include "util/alloc.h"
#include "util/log.h"

/* ---- retention and statistics ---- */

/* Bytes the vacuum gives back per transaction: the WAL grows by about that much at a time. */
#define VACUUM_CHUNK_BYTES (1 << 20)

/* The integer a PRAGMA without arguments returns, or 0. */
static int64_t pragma_int(struct conn *c, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int64_t n = 0;

	if (sqlite3_prepare_v2(c->db, sql, -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

static int64_t freelist_pages(struct conn *c)
{
	return pragma_int(c, "PRAGMA freelist_count");
}

/* The database's page size (DB_PAGE_SIZE for a new store; an older one keeps its own). */
static int64_t page_bytes(struct conn *c)
{
	int64_t n = pragma_int(c, "PRAGMA page_size");

	return n > 0 ? n : 4096;
}

/*
 * Give the freed pages back to the file system, a chunk at a time with
 * the WAL truncated after each, so that this works on a nearly full disk
 * (the writer's lock held).  Best effort: what is left stays free inside
 * the file for the next pushes.
 */
static void give_back(struct conn *c)
{
	int64_t chunk = VACUUM_CHUNK_BYTES / page_bytes(c);
	int64_t chunks = (freelist_pages(c) + chunk - 1) / chunk;
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%lld)", (long long)chunk);
	for (int64_t i = 0; i < chunks; i++)
		if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL,
					      NULL) != SQLITE_OK)
			break;
	if (!chunks)
		sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

int sq_delete_before(struct store *st, int64_t cutoff, int64_t *deleted, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	/* Marks of windows that start before the cutoff's hour: nothing to roll up there. */
	int64_t args[] = {cutoff}, marks[] = {store_window(STORE_LEVELS - 1, cutoff)};
	int rc;

	*deleted = 0;
	pthread_mutex_lock(&s->wmu);
	rc = sq_exec(c, "BEGIN IMMEDIATE", err);
	if (rc == 0)
		rc = sq_write_args(c, ST_DELETE_BEFORE, args, 1, "deleting old profiles", err);
	if (rc == 0) {
		*deleted = sqlite3_changes64(c->db);
		rc = sq_write_args(c, ST_DELETE_STALE_BEFORE, marks, 1, "deleting old rollup marks",
				   err);
	}
	rc = sq_txn_end(c, rc, err);
	if (rc == 0 && *deleted)
		give_back(c);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

static int first_int64(sqlite3_stmt *q, void *arg)
{
	*(int64_t *)arg = sqlite3_column_int64(q, 0);
	return 0;
}

int sq_oldest(struct store *st, int64_t *t, struct error *err)
{
	*t = 0;
	return sq_read_rows(sq_store(st), ST_OLDEST, NULL, 0, first_int64, t, "reading", err);
}

static int64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

int64_t sq_wal_size(const struct sqlite_store *s)
{
	char wal[PATH_MAX];

	snprintf(wal, sizeof(wal), "%s-wal", s->path);
	return file_size(wal);
}

/* The database and its WAL. */
static int64_t disk_size(const struct sqlite_store *s)
{
	return file_size(s->path) + sq_wal_size(s);
}

static int stats_row(sqlite3_stmt *q, void *arg)
{
	struct store_stats *out = arg;

	out->series = sqlite3_column_int64(q, 0);
	out->rows = sqlite3_column_int64(q, 1);
	out->bytes_blobs = sqlite3_column_int64(q, 2);
	out->oldest_ns = sqlite3_column_int64(q, 3);
	out->newest_ns = sqlite3_column_int64(q, 4);
	out->stale = sqlite3_column_int64(q, 5);
	return 0;
}

/* Statistics by statement WHICH (ST_STATS, or ST_COUNTS for the cheap part). */
static int stats_by(struct store *st, enum stmt_id which, struct store_stats *out,
		    struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sq_read_rows(s, which, NULL, 0, stats_row, out, "reading statistics", err);
	out->bytes_disk = disk_size(s);
	return rc;
}

int sq_stats(struct store *st, struct store_stats *out, struct error *err)
{
	return stats_by(st, ST_STATS, out, err);
}

int sq_counts(struct store *st, struct store_stats *out, struct error *err)
{
	return stats_by(st, ST_COUNTS, out, err);
}

int sq_disk_bytes(struct store *st, int64_t *bytes, struct error *err)
{
	(void)err;
	*bytes = disk_size(sq_store(st));
	return 0;
}

/*
 * A passive checkpoint from a connection of its own: it copies what it can
 * from the WAL into the database without blocking pushes, so that commits
 * rarely meet a full WAL and checkpoint under the writer's lock.
 */
int sq_maintain(struct store *st, struct error *err)
{
	struct sqlite_store *s = sq_store(st);

	if (!s->ckpt.db && sq_conn_open(&s->ckpt, s->path, s->fsync, true, err) < 0)
		return ERR_IO;
	if (sqlite3_wal_checkpoint_v2(s->ckpt.db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) !=
	    SQLITE_OK)
		return sq_db_error(err, s->ckpt.db, "checkpointing");
	return 0;
}

/* ---- a full disk ---- */

/* The writer's WAL bounds for the reserve: checkpoint every quarter of it. */
int sq_wal_pragmas(struct sqlite_store *s, struct error *err)
{
	int64_t r = s->reserve_bytes, page = page_bytes(&s->writer);
	char sql[128];

	snprintf(sql, sizeof(sql),
		 "PRAGMA wal_autocheckpoint=%lld; PRAGMA journal_size_limit=%lld;",
		 (long long)((r ? r / 4 : WAL_AUTOCHECKPOINT_BYTES) / page),
		 r ? (long long)(r / 4) : -1LL);
	return sq_exec(&s->writer, sql, err);
}

/* Free bytes that end a full disk episode (the reserve's comment). */
static int64_t resume_bytes(const struct sqlite_store *s)
{
	return s->reserve_bytes + s->reserve_bytes / 2 + s->reserve_bytes / 4;
}

/* Bytes free for us on the store's file system. */
static int64_t fs_free(const char *path)
{
	struct statvfs v;
	uint64_t b;

	if (statvfs(path, &v) != 0)
		return 0;
	b = (uint64_t)v.f_bavail;
	return b > (uint64_t)INT64_MAX / (v.f_frsize ? v.f_frsize : 1) ? INT64_MAX
								       : (int64_t)(b * v.f_frsize);
}

static bool reserve_present(const struct sqlite_store *s)
{
	if (!s->reserve_bytes)
		return true;
	return file_size(s->reserve) >= s->reserve_bytes;
}

/* Set the reserve aside (blocks allocated, not a sparse file); false when there is no room. */
static bool reserve_make(const struct sqlite_store *s)
{
	int fd = open(s->reserve, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc;

	if (fd < 0)
		return false;
	rc = posix_fallocate(fd, 0, s->reserve_bytes);
	if (rc == 0 && fsync(fd) != 0)
		rc = errno;
	close(fd);
	if (rc != 0)
		unlink(s->reserve);
	return rc == 0;
}

/* A small write transaction: whether a commit goes through now. */
static int probe(struct conn *c, struct error *err)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO meta(k, v) VALUES ('probe', '%lld')",
		 (long long)time(NULL));
	return sq_exec(c, sql, err) < 0 ? sq_db_error(err, c->db, "a probe write") : 0;
}

/*
 * Whether the store takes writes: its reserve is in place (made again
 * when R + R / 2 + R / 4 are free), the file system has half a reserve
 * free besides, and a probe commit goes through.
 * When not, it gives up the reserve and moves the WAL into the database,
 * so that retention has room to delete: ERR_NOSPACE.
 */
int sq_writable(struct store *st, struct error *err)
{
	struct sqlite_store *s = sq_store(st);
	struct conn *c = &s->writer;
	bool have;
	int rc = ERR_NOSPACE;

	pthread_mutex_lock(&s->wmu);
	have = reserve_present(s);
	if (s->readonly) {
		struct conn rw;
		struct error e = ERROR_INIT;

		if (sq_conn_open(&rw, s->path, s->fsync, true, &e) == 0) {
			sq_conn_close(c);
			*c = rw;
			s->readonly = false;
			sq_wal_pragmas(s, &e);
		}
	}
	if (s->readonly)
		have = false; /* nothing can be written, not even a reserve */
	sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (!have && !s->readonly && fs_free(s->path) >= resume_bytes(s))
		have = !s->reserve_bytes || reserve_make(s);
	if (have && fs_free(s->path) >= s->reserve_bytes / 2)
		rc = probe(c, err);
	if (rc == ERR_NOSPACE) {
		if (have && s->reserve_bytes)
			unlink(s->reserve);
		sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
		rc = error_set(err, ERR_NOSPACE,
			       "store: the disk is full (%lld KiB free; writes resume at %lld KiB)",
			       (long long)(fs_free(s->path) >> 10),
			       (long long)(s->reserve_bytes ? resume_bytes(s) >> 10 : 0));
	}
	pthread_mutex_unlock(&s->wmu);
	return rc;
}
