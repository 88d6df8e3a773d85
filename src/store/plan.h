/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_PLAN_H
#define PLATEAU_STORE_PLAN_H

#include "store/store.h"

/* What the planner needs of a series: its id and the span of its pushes. */
struct plan_series {
	int64_t id;
	int64_t first_ns, last_ns; /* last_ns 0: unknown, scan everything */
};

/*
 * Call FN on the rows that together hold every level-0 profile of series
 * PS whose t0 lies in [from, until) exactly once: rollups of levels
 * 1..MAX_LEVEL for the whole windows inside the range that have a fresh
 * one, level-0 rows for the rest.  MAX_LEVEL 0 reads the pushes only (the
 * rollup of a window of level L plans with MAX_LEVEL L - 1).  FN returns
 * non-zero to stop; that value is returned.
 */
int store_plan(struct store *s, const struct plan_series *ps, int max_level, int64_t from,
	       int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
	       struct error *err);

/* As store_plan, with rows that carry their totals but no blobs: timelines. */
int store_plan_totals(struct store *s, const struct plan_series *ps, int max_level, int64_t from,
		      int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
		      struct error *err);

/*
 * A fleet: the rollups of every series of one app and type merged into one
 * series of their own (doc/store.md, "Fleet rollups"), and those series.
 */
struct plan_fleet {
	struct plan_series fleet; /* its span: the members' union (last_ns 0: unknown) */
	const struct plan_series *members;
	size_t n;
	int member_max; /* the members' rollup levels used, up to */
};

/*
 * As store_plan for the union of F's members: the fleet's own rollups of
 * levels 1..MAX_LEVEL where they are fresh, and for everything else (the
 * edges finer than a minute, windows that are stale or have no fleet
 * rollup) each member planned with rollups up to F->member_max.  Every
 * level-0 profile of a member that started in [from, until) is in exactly
 * one row, as when the members are planned one by one.
 */
int store_plan_fleet(struct store *s, const struct plan_fleet *f, int max_level, int64_t from,
		     int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
		     struct error *err);

/* As store_plan_fleet, with rows that carry their totals but no blobs. */
int store_plan_fleet_totals(struct store *s, const struct plan_fleet *f, int max_level,
			    int64_t from, int64_t until,
			    int (*fn)(const struct store_row *, void *), void *arg,
			    struct error *err);

#endif
