/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVICE_H
#define PLATEAU_SERVICE_H

/*
 * What `plateau serve` does, without HTTP (doc/plateau-serve.md): the
 * series index, ingest, queries, rollups and retention over a store
 * backend (service.c, service_ingest.c, service_query.c,
 * service_labels.c, service_rollup.c).  The HTTP layer (http_push.c,
 * http_query.c) parses requests into these calls; tests call them
 * directly.  Thread-safe: any number of ingests and queries at once; the
 * background work (service_roll, service_retain) runs from one thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "store/labels.h"
#include "store/selector.h"
#include "store/store.h"
#include "util/strbuf.h"

struct service_config {
	uint64_t series_budget;		 /* series at most; 0 = no limit */
	uint64_t series_budget_app;	 /* series of one app at most; 0 = no limit */
	const char *const *allow_labels; /* NULL-terminated; NULL = any label */
	uint32_t max_stack_depth;	 /* frames per stack at ingest */
	uint32_t max_nodes;		 /* call tree nodes of one pushed profile */
	int64_t retention_ns;		 /* 0 = keep forever */
	uint64_t max_disk;		 /* bytes; 0 = no limit */
	int64_t rollup_delay_ns;	 /* roll a window up this long after it ends */
	bool no_fleet_rollups;		 /* no rollups across the series of an app and type */
};

#define SERVICE_CONFIG_DEFAULT                                                                \
	{                                                                                     \
		.series_budget = 100000, .series_budget_app = 10000, .max_stack_depth = 1024, \
		.max_nodes = 1u << 20, .rollup_delay_ns = 10 * INT64_C(1000000000)            \
	}

/*
 * The cap of one stored blob (a push's or a rollup's): an encoding that
 * would pass it fails with ERR_LIMIT instead of taking the memory.
 */
#define SERVICE_BLOB_MAX ((size_t)1 << 30)

struct service;

int service_open(struct store *st, const struct service_config *cfg, struct service **out,
		 struct error *err);
/* Close the service (not the store). */
void service_close(struct service *sv);

/*
 * One push: the profile P of APP with LABELS (any order) over [t0, t1).
 * With TYPE set, P's default sample type is stored as series APP.TYPE
 * (Pyroscope's name=app.cpu); without it, every sample type of P becomes
 * its own series, APP.<sample type name>.  Durable when it returns 0.
 * P gains the interned type names (and mapped label names), nothing else.
 * Label names, the push's and the samples', are mapped as Pyroscope maps
 * them ('.' read as '_': labels_map()).  A service_name label is the
 * app (Pyroscope's convention): the series is stored under its value,
 * with app_name=APP when that differs and the push has no app_name.
 * Errors: ERR_FORMAT (bad labels, stack too deep), ERR_LIMIT (series
 * budget, the global one or the app's: the message names the app and the
 * label with the most values; label not allowed: the message names the
 * label), ERR_IO.
 */
struct ingest_req {
	const char *app;
	const char *type;	  /* NULL: every sample type */
	const char *const *names; /* with type NULL: per sample type, its series type, NULL
				     to leave it out (Pyroscope's sample_type_config); NULL: all */
	const struct series_label *labels;
	size_t nlabels;
	int64_t t0, t1;
	/*
	 * How a new series' values add up over time, "sum" or "average" (a
	 * gauge: in-use memory; a window's value is its pushes' mean); NULL:
	 * the type's default (average for inuse_objects, inuse_space and
	 * goroutine(s), as Pyroscope).  AGGREGATION goes with TYPE,
	 * AGGREGATIONS[t] (NULL: all default) with every sample type.
	 */
	const char *aggregation;
	const char *const *aggregations;
	/* Label names the caller already mapped (ingest_name_parse()), counted with the push. */
	size_t renamed;
};
int service_ingest(struct service *sv, const struct ingest_req *req, struct profile *p,
		   struct error *err);
/*
 * A push is being read (its body inflated and parsed) and will reach
 * service_ingest() unless it fails: from service_push_reading(sv, true)
 * to service_push_reading(sv, false), called in pairs, a push about to
 * commit waits (a little) for it to join its transaction.
 */
void service_push_reading(struct service *sv, bool reading);

/*
 * The merged profile of every series SEL selects over [from, until)
 * (pushes by start time), one sample type, in *out.  A SEL without
 * APP.TYPE ({service_name="shop"}) must select series of one type
 * (ERR_USAGE names the types otherwise).  *nseries gets how many series
 * matched.
 */
int service_query(struct service *sv, const struct selector *sel, int64_t from, int64_t until,
		  struct profile **out, size_t *nseries, struct error *err);

/*
 * The total of the selected series per STEP over [from, until): values[i]
 * for [from + i * step, from + (i + 1) * step), n = ceil((until - from) /
 * step) (at most SERVICE_TIMELINE_MAX).
 */
#define SERVICE_TIMELINE_MAX 10000
int service_timeline(struct service *sv, const struct selector *sel, int64_t from, int64_t until,
		     int64_t step, int64_t **values, size_t *n, struct error *err);

/* Label names of the selected series (SEL may be NULL: all), JSON array text. */
int service_label_names(struct service *sv, const struct selector *sel, struct strbuf *out,
			struct error *err);
/* Values of label NAME over the selected series, JSON array text. */
int service_label_values(struct service *sv, const char *name, const struct selector *sel,
			 struct strbuf *out, struct error *err);
/* The selected series as a JSON array of {"key", "app", "type", "labels", ...}. */
int service_series_json(struct service *sv, const struct selector *sel, struct strbuf *out,
			struct error *err);
/* Series per label (distinct values, and series that have it): "--check-labels". */
int service_check_labels(struct service *sv, struct strbuf *out, struct error *err);

/*
 * Background work, one step each; return the number of windows/rows done.
 * service_roll: a window whose data cannot be rolled up (a blob that does
 * not decode) is skipped until a push changes it, counted in
 * rollups_failed, and told once in ERR (err->code set, the return value
 * still the count): the caller logs it; a negative return is the store's
 * own error (tried again next step).  One thread calls it.
 */
int service_roll(struct service *sv, int64_t now_ns, size_t max, struct error *err);
int service_retain(struct service *sv, int64_t now_ns, int64_t *deleted, struct error *err);
/*
 * The store's housekeeping (a WAL checkpoint), from the background thread.
 * Degraded, it checks whether the store takes writes again instead (after
 * retention and --max-disk freed what they can) and leaves degraded mode
 * when it does.
 */
int service_maintain(struct service *sv, struct error *err);

/*
 * Whether the store is read-only for a full disk: from open when it cannot
 * write, or from a write that failed for space, until service_maintain()
 * finds it writable again.  Degraded, queries work, pushes fail with
 * ERR_NOSPACE and SERVICE_DISK_FULL without touching the store, rollups
 * wait.
 */
bool service_degraded(struct service *sv);
#define SERVICE_DISK_FULL "the disk is full: the store is read-only until space is freed"

/* The store's statistics (/metrics). */
int service_store_stats(struct service *sv, struct store_stats *st, struct error *err);
/* Its cheap part (store.h counts): for /metrics. */
int service_store_counts(struct service *sv, struct store_stats *st, struct error *err);

struct service_counters {
	uint64_t series, ingested, ingest_bytes, rollups, deleted;
	uint64_t rollups_shared; /* of the rollups, written with their sample-type siblings */
	uint64_t labels_renamed; /* label names of stored pushes mapped ('.' to '_') */
	uint64_t rollups_failed; /* windows whose data could not be rolled up (skipped) */
	uint64_t rollups_fleet;	 /* of the rollups, of fleets (every series of an app and type) */
	uint64_t query_rows;	 /* stored rows merged by queries */
};
void service_counters(struct service *sv, struct service_counters *c);

/*
 * The series count of each app, largest first (ties by name), at most MAX
 * of them: FN(app, series, arg) each, under the index's read lock (FN
 * must not call the service).  Returns the number of apps in all.
 */
size_t service_app_series(struct service *sv, size_t max,
			  void (*fn)(const char *app, uint64_t series, void *arg), void *arg);

#endif
