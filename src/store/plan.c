/* SPDX-License-Identifier: MIT */
/*
 * Which stored rows make up a series over a time range (plan.h).
 *
 * Coarsest first: the whole windows of the top level inside the range are
 * taken from their rollups when those exist and are not stale; every other
 * part — the ragged edges, windows without a rollup, stale windows — is
 * planned again one level down, and level 0 is read as pushed.  A day of
 * one series is then 24 hourly rollups plus the edges, not 8,640 pushes.
 * Runs of consecutive windows that need the level below are planned as
 * one range, so a series with a gap costs one scan per run, not one per
 * empty window.
 *
 * A fleet (the rollups of every series of an app and type, merged) is
 * planned the same way down to its minutes; below them — the edges finer
 * than a minute, its minutes that are stale or missing — each member is
 * planned on its own over that range.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store/plan.h"
#include "util/alloc.h"
#include "util/log.h"

/* The rollups of one level in one range, and its stale windows. */
struct level_rows {
	struct store_row *rows;
	void **blobs; /* copies: a scan's blobs live only during the call */
	size_t n, alloc;
	int64_t *stale;
	size_t nstale, alloc_stale;
	struct error *err;
};

static int keep_row(const struct store_row *r, void *arg)
{
	struct level_rows *lr = arg;

	size_t alloc = lr->alloc;

	if (ALLOC_TRY_GROW(lr->rows, lr->n + 1, alloc) < 0 ||
	    ALLOC_TRY_GROW(lr->blobs, lr->n + 1, lr->alloc) < 0)
		return error_set(lr->err, ERR_NOMEM, "out of memory (reading rollups)");
	lr->blobs[lr->n] = r->len ? alloc_memdup(r->blob, r->len) : NULL;
	if (r->len && !lr->blobs[lr->n])
		return error_set(lr->err, ERR_NOMEM, "out of memory (reading rollups)");
	lr->rows[lr->n] = *r;
	lr->rows[lr->n].blob = lr->blobs[lr->n];
	lr->n++;
	return 0;
}

static int keep_stale(int64_t t0, void *arg)
{
	struct level_rows *lr = arg;

	if (ALLOC_TRY_GROW(lr->stale, lr->nstale + 1, lr->alloc_stale) < 0)
		return error_set(lr->err, ERR_NOMEM, "out of memory (reading rollups)");
	lr->stale[lr->nstale++] = t0;
	return 0;
}

static void level_rows_free(struct level_rows *lr)
{
	for (size_t i = 0; i < lr->n; i++)
		free(lr->blobs[i]);
	free(lr->blobs);
	free(lr->rows);
	free(lr->stale);
}

static int64_t ceil_to(int64_t t, int64_t w)
{
	int64_t s = store_window_of(w, t);

	return s == t ? t : s + w;
}

/* One plan: where rows go, and whether they need their blobs. */
struct plan {
	struct store *s;
	const struct plan_series *ps;
	int (*fn)(const struct store_row *, void *);
	void *arg;
	bool totals;			/* rows without blobs (scan_totals) */
	const struct plan_fleet *fleet; /* ps is its fleet series: below level 1, its members */
	struct error *err;
};

static int plan_run(struct plan *pl, int max_level, int64_t from, int64_t until);

/* The range [from, until) of a fleet below its minutes: every member on its own. */
static int plan_members(const struct plan *pl, int64_t from, int64_t until)
{
	const struct plan_fleet *f = pl->fleet;
	int rc = 0;

	for (size_t i = 0; i < f->n && rc == 0; i++) {
		struct plan one = *pl;

		one.ps = &f->members[i];
		one.fleet = NULL;
		rc = plan_run(&one, f->member_max, from, until);
	}
	return rc;
}

static int plan_level(const struct plan *pl, int level, int64_t from, int64_t until);

static int scan_level(const struct plan *pl, int level, int64_t from, int64_t until,
		      int (*fn)(const struct store_row *, void *), void *arg)
{
	const struct store_backend *be = pl->s->be;

	return (pl->totals ? be->scan_totals : be->scan)(pl->s, pl->ps->id, level, from, until, fn,
							 arg, pl->err);
}

/* Holes in a fleet's minutes past which its members plan the range themselves. */
#define FLEET_HOLES_MAX 8

/* The runs of [a, b) (windows of length W) that LR's fresh rollups leave to the level below. */
static size_t holes(const struct level_rows *lr, int64_t w, int64_t a, int64_t b)
{
	int64_t gap = a;
	size_t n = 0, si = 0;

	for (size_t i = 0; i < lr->n; i++) {
		const struct store_row *r = &lr->rows[i];

		while (si < lr->nstale && lr->stale[si] < r->t0)
			si++;
		if (si < lr->nstale && lr->stale[si] == r->t0)
			continue;
		n += gap < r->t0;
		gap = r->t0 + w;
	}
	return n + (gap < b);
}

/* Windows [a, b) of LEVEL: rollups where usable, the level below for the runs between. */
static int plan_windows(const struct plan *pl, int level, int64_t a, int64_t b)
{
	struct level_rows lr = {.err = pl->err};
	int64_t w = store_level_ns[level], gap = a; /* start of the run still to plan below */
	size_t si = 0;
	int rc;

	rc = scan_level(pl, level, a, b, keep_row, &lr);
	if (rc == 0)
		rc = pl->s->be->stale_range(pl->s, pl->ps->id, level, a, b, keep_stale, &lr,
					    pl->err);
	/*
	 * A fleet's minutes with many holes (the roller catching up): each
	 * hole costs every member a plan of its own, a few scans each, so past
	 * FLEET_HOLES_MAX the members take the whole range in one plan each.
	 */
	if (rc == 0 && pl->fleet && level == 1 && holes(&lr, w, a, b) > FLEET_HOLES_MAX) {
		level_rows_free(&lr);
		return plan_members(pl, a, b);
	}
	for (size_t i = 0; rc == 0 && i < lr.n; i++) {
		const struct store_row *r = &lr.rows[i];

		while (si < lr.nstale && lr.stale[si] < r->t0)
			si++;
		if (si < lr.nstale && lr.stale[si] == r->t0)
			continue; /* stale: planned below with its neighbours */
		if (gap < r->t0)
			rc = plan_level(pl, level - 1, gap, r->t0);
		if (rc == 0)
			rc = pl->fn(r, pl->arg);
		gap = r->t0 + w;
	}
	if (rc == 0 && gap < b)
		rc = plan_level(pl, level - 1, gap, b);
	level_rows_free(&lr);
	return rc;
}

static int plan_level(const struct plan *pl, int level, int64_t from, int64_t until)
{
	const struct plan_series *ps = pl->ps;
	int64_t a, b, w;
	int rc = 0;

	/* Nothing of this series here: no scan at all. */
	if (from >= until || (ps->last_ns && (until <= ps->first_ns || from > ps->last_ns)))
		return 0;
	if (level == 0 && pl->fleet)
		return plan_members(pl, from, until);
	if (level == 0)
		return scan_level(pl, 0, from, until, pl->fn, pl->arg);
	w = store_level_ns[level];
	a = ceil_to(from, w);
	b = store_window_of(w, until);
	if (a >= b)
		return plan_level(pl, level - 1, from, until);
	rc = plan_level(pl, level - 1, from, a);
	if (rc == 0)
		rc = plan_windows(pl, level, a, b);
	if (rc == 0)
		rc = plan_level(pl, level - 1, b, until);
	return rc;
}

static int plan_run(struct plan *pl, int max_level, int64_t from, int64_t until)
{
	if (max_level < 0 || max_level >= STORE_LEVELS)
		return error_set(pl->err, ERR_USAGE, "store: plan level %d out of range",
				 max_level);
	/* Nothing is stored outside: the clamp keeps window arithmetic in range. */
	if (from < -STORE_TIME_MAX)
		from = -STORE_TIME_MAX;
	if (until > STORE_TIME_MAX + 1)
		until = STORE_TIME_MAX + 1;
	debug2(DEBUG_STORE, "plan%s: rollup levels up to %d, [%" PRId64 ", %" PRId64 ")",
	       pl->totals ? " of totals" : "", max_level, from, until);
	return plan_level(pl, max_level, from, until);
}

int store_plan(struct store *s, const struct plan_series *ps, int max_level, int64_t from,
	       int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
	       struct error *err)
{
	struct plan pl = {s, ps, fn, arg, false, NULL, err};

	return plan_run(&pl, max_level, from, until);
}

int store_plan_totals(struct store *s, const struct plan_series *ps, int max_level, int64_t from,
		      int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
		      struct error *err)
{
	struct plan pl = {s, ps, fn, arg, true, NULL, err};

	return plan_run(&pl, max_level, from, until);
}

static int fleet_run(struct plan *pl, int max_level, int64_t from, int64_t until)
{
	const struct plan_fleet *f = pl->fleet;

	if (f->member_max < 0 || f->member_max >= STORE_LEVELS)
		return error_set(pl->err, ERR_USAGE, "store: plan level %d out of range",
				 f->member_max);
	debug2(DEBUG_STORE, "plan of fleet %" PRId64 ": %zu members, their levels up to %d",
	       f->fleet.id, f->n, f->member_max);
	return plan_run(pl, max_level, from, until);
}

int store_plan_fleet(struct store *s, const struct plan_fleet *f, int max_level, int64_t from,
		     int64_t until, int (*fn)(const struct store_row *, void *), void *arg,
		     struct error *err)
{
	struct plan pl = {s, &f->fleet, fn, arg, false, f, err};

	return fleet_run(&pl, max_level, from, until);
}

int store_plan_fleet_totals(struct store *s, const struct plan_fleet *f, int max_level,
			    int64_t from, int64_t until,
			    int (*fn)(const struct store_row *, void *), void *arg,
			    struct error *err)
{
	struct plan pl = {s, &f->fleet, fn, arg, true, f, err};

	return fleet_run(&pl, max_level, from, until);
}
