/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_SERVICE_INT_H
#define PLATEAU_SERVER_SERVICE_INT_H

/*
 * What the pieces of the service share (service.h is the API):
 * service.c (the series index, open and close, counters, the disk-full
 * mode), service_ingest.c, service_query.c (queries and timelines),
 * service_labels.c (labels and series), service_rollup.c (rollups and
 * retention).  Nothing here is for use outside src/server/service*.c.
 *
 * Locks (struct service): mu, a rwlock, guards the index; cmu the
 * counters and the degraded flag; qmu the group commit's queue.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/service.h"
#include "store/plan.h"

/*
 * The fleet of an app and type: its series that add up (not gauges), and
 * the series of their rollups merged (doc/store.md, "Fleet rollups"),
 * stored under the key FLEET_KEY_MARK app.type once the fleet has two
 * members (id 0 before).
 */
struct ix_fleet {
	int64_t id;
	char *app, *type;
	size_t members;
};

/* The first byte of a fleet series' key: no series key starts with it. */
#define FLEET_KEY_MARK '@'

struct ix_series {
	int64_t id;
	bool average; /* its aggregation (store_series) */
	char *key;
	struct series *s; /* parsed from key: app, type, sorted labels */
	int64_t first_ns, last_ns;
	struct ix_fleet *fleet; /* of its app and type; NULL for a gauge */
};

/* What the roller needs of a series, by id. */
struct ix_id {
	const struct series *s; /* parsed: app, type, labels; NULL for a fleet */
	struct ix_fleet *fleet; /* the series is this fleet's own */
	int64_t last_ns;	/* end of its latest push (a fleet: of its members') */
	int64_t pushed;		/* wall clock of its latest push; 0: none since start */
};

struct service {
	struct store *st;
	struct service_config cfg;
	pthread_rwlock_t mu; /* the index */
	struct ix_series *v; /* sorted by key */
	size_t n, alloc;
	struct ix_id *by_id; /* by store id (ids are dense) */
	size_t nby_id;
	pthread_mutex_t cmu; /* counters */
	struct service_counters c;
	char *wide_key;	      /* widest_label()'s answer while the index has wide_at series */
	const char *wide_app; /* ... for this app (the index's string), NULL: all */
	size_t wide_at, wide_n;
	struct app_count *apps; /* series per app, by name */
	size_t napps, alloc_apps;
	/*
	 * Group commit: pushes waiting for a transaction, and whether one
	 * runs; on_way: the pushes being read (service_push_reading()) or in
	 * service_ingest() and not queued yet, which a push about to commit
	 * waits for (a little, on gcv, counted in gathering) to join it.
	 */
	pthread_mutex_t qmu;
	pthread_cond_t qcv, gcv;
	struct batch *queue;
	bool committing;
	_Atomic size_t on_way, gathering;
	bool degraded; /* read-only for a full disk (cmu) */
	/* Fleets by app and type (each allocated alone: series point at them). */
	struct ix_fleet **fleets;
	size_t nfleets, alloc_fleets;
	/* Rollup windows that failed, skipped until a push changes them (the roller's own). */
	struct bad_window *bad;
	size_t nbad, alloc_bad;
};

/* A rollup window that could not be rolled up, at generation GEN. */
struct bad_window {
	int64_t series, t0, gen;
	int level;
};

/* The series of one app in the index: APP is the index's string. */
struct app_count {
	const char *app;
	uint64_t n;
};

/* One push's rows waiting to commit. */
struct batch {
	const struct store_row *rows;
	size_t n;
	int rc;
	bool done;
	struct error err;
	struct batch *next;
};

/* A label key of the index and its counts (ix_label_stats). */
struct label_stat {
	const char *key; /* the index's string */
	size_t values, series;
};

/* Sample types of a push seen at once (service_ingest.c, service_rollup.c). */
#define VIEW_MAX_TYPES 16

/* A merge of stored rows into DST (svc_merge_row). */
struct merge_ctx {
	struct profile *dst;
	struct error *err;
	int64_t samples; /* pushes merged */
	uint64_t rows;	 /* rows merged */
};

/* An allocation failed: ERR_NOMEM naming WHAT; the request fails, the server goes on. */
int svc_nomem(struct error *err, const char *what);
/* Add N to a counter of sv->c (takes cmu). */
void svc_count(struct service *sv, uint64_t *field, uint64_t n);
/* Enter or leave the read-only mode of a full disk. */
void svc_degrade(struct service *sv, bool on);

/* The index (service.c); the caller holds mu (for writing to insert). */
/* Where KEY is or would go in sv->v. */
size_t ix_find(const struct service *sv, const char *key, bool *found);
/* Where APP is or would go in sv->apps. */
size_t ix_app_find(const struct service *sv, const char *app, bool *found);
/* The series of APP in the index. */
uint64_t ix_app_series(const struct service *sv, const char *app);
/* Insert a series parsed from its key (no-op when there): 0, ERR_NOMEM or its parse error. */
int ix_insert(struct service *sv, int64_t id, bool average, const char *key, int64_t first,
	      int64_t last, struct error *err);
/*
 * The fleet series of F, created in the store when F has two members and
 * none yet (caller holds mu for writing): 0, or the store's error.
 */
int ix_fleet_store(struct service *sv, struct ix_fleet *f, struct error *err);
/*
 * F's members (caller holds mu): their plan_series into *OUT (freed by the
 * caller; NULL and ERR_NOMEM when memory ran out), the number returned.
 */
size_t ix_fleet_members(const struct service *sv, const struct ix_fleet *f,
			struct plan_series **out);
/*
 * Every label key of the index (of APP's series; NULL: all), sorted, with
 * its counts (service_ingest.c; caller holds mu and frees *out; *out NULL
 * when memory ran out).  Returns the number of keys.
 */
size_t ix_label_stats(const struct service *sv, const char *app, struct label_stat **out);

/* Whether two sorted label sets are the same (service_ingest.c). */
bool svc_labels_same(const struct series_label *a, size_t na, const struct series_label *b,
		     size_t nb);
/* Whether SEL (NULL: everything) selects series S (service_query.c). */
bool svc_selected(const struct selector *sel, const struct series *s);
/* store_plan()'s callback that merges a row into a struct merge_ctx (service_query.c). */
int svc_merge_row(const struct store_row *r, void *arg);

#endif
