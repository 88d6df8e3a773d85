/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's queries (service.h service_query, service_timeline):
 * the selector matched against the index, then per series the rows
 * store_plan() picks (rollups where they are fresh) merged or totalled.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_int.h"
#include "store/blob.h"
#include "store/plan.h"
#include "util/alloc.h"

struct match {
	struct plan_series *ps;
	bool *average;
	int64_t *fleet;	  /* its fleet's series, 0: none */
	size_t *fleet_of; /* that fleet's members */
	size_t n;
};

static void match_free(struct match *m)
{
	free(m->ps);
	free(m->average);
	free(m->fleet);
	free(m->fleet_of);
	m->ps = NULL;
	m->average = NULL;
	m->fleet = NULL;
	m->fleet_of = NULL;
}

/* Whether SEL (NULL: everything) selects series S. */
bool svc_selected(const struct selector *sel, const struct series *s)
{
	const char *app = sel ? selector_app(sel) : NULL;

	if (app && (strcmp(s->app, app) || strcmp(s->type, selector_type(sel))))
		return false;
	return !sel || selector_match(sel, s);
}

/* At most this many types are named when a selector without APP.TYPE picks several. */
#define TYPES_SHOWN 8

/*
 * Refuse a selection of several types (their names in the message), or
 * copy its one type to TYPE (SERIES_TYPE_MAX + 1 bytes; when it selects
 * nothing, the selector's type or "samples").
 */
static int type_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int one_type(const char **types, size_t nt, const struct selector *sel, char *type,
		    struct error *err)
{
	const char *none = sel && selector_type(sel) ? selector_type(sel) : "samples";
	char text[256];
	struct strbuf sb;

	strbuf_init_max(&sb, 4096); /* without memory, the message lists no types */
	if (nt <= 1) {
		snprintf(type, SERIES_TYPE_MAX + 1, "%s", nt ? types[0] : none);
		return 0;
	}
	qsort(types, nt, sizeof(*types), type_cmp);
	for (size_t i = 0; i < nt && i < TYPES_SHOWN; i++)
		strbuf_addf(&sb, "%s%s", i ? ", " : "", types[i]);
	selector_format(sel, text, sizeof(text));
	error_set(err, ERR_USAGE, "%s selects %zu profile types (%s%s): name one, as APP.%s%s",
		  text, nt, sb.buf, nt > TYPES_SHOWN ? ", ..." : "", types[0], text);
	strbuf_release(&sb);
	return ERR_USAGE;
}

/*
 * The series SEL selects (all with SEL NULL), copied out of the index.
 * With TYPE non-NULL (SERIES_TYPE_MAX + 1 bytes) they must be of one
 * type, copied there (else m->ps is NULL and ERR holds why: also
 * ERR_NOMEM).
 */
static void select_series(struct service *sv, const struct selector *sel, struct match *m,
			  char *type, struct error *err)
{
	const char **types = NULL;
	size_t nt = 0;

	pthread_rwlock_rdlock(&sv->mu);
	m->ps = calloc(sv->n + 1, sizeof(*m->ps));
	m->average = calloc(sv->n + 1, sizeof(*m->average));
	m->fleet = calloc(sv->n + 1, sizeof(*m->fleet));
	m->fleet_of = calloc(sv->n + 1, sizeof(*m->fleet_of));
	m->n = 0;
	if (type)
		types = calloc(sv->n + 1, sizeof(*types));
	if (!m->ps || !m->average || !m->fleet || !m->fleet_of || (type && !types)) {
		svc_nomem(err, "the selected series");
		match_free(m);
		pthread_rwlock_unlock(&sv->mu);
		free(types);
		return;
	}
	for (size_t i = 0; i < sv->n; i++) {
		const struct ix_series *e = &sv->v[i];
		size_t t;

		if (!svc_selected(sel, e->s))
			continue;
		m->average[m->n] = e->average;
		m->fleet[m->n] = e->fleet ? e->fleet->id : 0;
		m->fleet_of[m->n] = e->fleet ? e->fleet->members : 0;
		m->ps[m->n++] = (struct plan_series){e->id, e->first_ns, e->last_ns};
		for (t = 0; types && t < nt && strcmp(types[t], e->s->type); t++)
			;
		if (types && t == nt)
			types[nt++] = e->s->type;
	}
	if (type && one_type(types, nt, sel, type, err))
		match_free(m);
	pthread_rwlock_unlock(&sv->mu);
	free(types);
}

/*
 * What a query plans: a fleet whose members it selects all of (its
 * rollups hold them merged: one row per window instead of one per
 * series), or one series.
 */
struct unit {
	struct plan_fleet f; /* f.n 0: one series, f.members[0] */
	bool average;
};

struct units {
	struct unit *v;
	size_t n;
	struct plan_series *members; /* the selected series by fleet: the units point here */
};

static void units_free(struct units *u)
{
	free(u->v);
	free(u->members);
	u->v = NULL;
	u->members = NULL;
}

struct by_fleet {
	int64_t fleet;
	size_t i;
};

static int by_fleet_cmp(const void *a, const void *b)
{
	const struct by_fleet *x = a, *y = b;

	if (x->fleet != y->fleet)
		return x->fleet < y->fleet ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* M's series as units: the runs of one fleet that hold all its members, planned as one. */
static int plan_units(const struct match *m, struct units *u, struct error *err)
{
	struct by_fleet *o = calloc(m->n + 1, sizeof(*o));

	u->v = calloc(m->n + 1, sizeof(*u->v));
	u->members = calloc(m->n + 1, sizeof(*u->members));
	u->n = 0;
	if (!o || !u->v || !u->members) {
		free(o);
		units_free(u);
		return svc_nomem(err, "the selected series");
	}
	for (size_t i = 0; i < m->n; i++)
		o[i] = (struct by_fleet){m->average[i] ? 0 : m->fleet[i], i};
	qsort(o, m->n, sizeof(*o), by_fleet_cmp);
	for (size_t i = 0; i < m->n; i++)
		u->members[i] = m->ps[o[i].i];
	for (size_t i = 0, j; i < m->n; i = j) {
		struct unit *un = &u->v[u->n];

		for (j = i + 1; j < m->n && o[j].fleet == o[i].fleet; j++)
			;
		if (!o[i].fleet || j - i < 2 || j - i != m->fleet_of[o[i].i]) {
			/* Series one by one: no fleet, or not all of it. */
			j = i + 1;
			*un = (struct unit){.f = {.members = &u->members[i]},
					    .average = m->average[o[i].i]};
			u->n++;
			continue;
		}
		*un = (struct unit){.f = {.fleet = {o[i].fleet, INT64_MAX, 0},
					  .members = &u->members[i],
					  .n = j - i,
					  .member_max = STORE_LEVELS - 1}};
		/* The fleet's span: its members' (one unknown: unknown). */
		for (size_t k = i; k < j; k++) {
			const struct plan_series *ps = &u->members[k];

			if (ps->first_ns < un->f.fleet.first_ns)
				un->f.fleet.first_ns = ps->first_ns;
			if (ps->last_ns > un->f.fleet.last_ns)
				un->f.fleet.last_ns = ps->last_ns;
		}
		for (size_t k = i; k < j; k++)
			if (!u->members[k].last_ns)
				un->f.fleet.last_ns = 0;
		u->n++;
	}
	free(o);
	return 0;
}

/* Plan unit U at rollup levels up to LEVEL, rows or totals (TOTALS) into FN. */
static int plan_unit(struct service *sv, const struct unit *un, int level, bool totals,
		     int64_t from, int64_t until, int (*fn)(const struct store_row *, void *),
		     void *arg, struct error *err)
{
	if (un->f.n) {
		struct plan_fleet f = un->f;

		f.member_max = level;
		return (totals ? store_plan_fleet_totals
			       : store_plan_fleet)(sv->st, &f, level, from, until, fn, arg, err);
	}
	return (totals ? store_plan_totals : store_plan)(sv->st, &un->f.members[0], level, from,
							 until, fn, arg, err);
}

int svc_merge_row(const struct store_row *r, void *arg)
{
	struct merge_ctx *mc = arg;

	mc->samples += r->samples;
	mc->rows++;
	return blob_merge_type_into(mc->dst, r->blob, r->len, (uint32_t)r->type, NULL, mc->err);
}

/* Decimals a mean keeps (0.01 of an object or byte). */
#define MEAN_DECIMALS 2

/* Add P's values divided by N (its pushes) into DST: a gauge's mean. */
static int add_mean(struct profile *dst, struct profile *p, int64_t n, struct error *err)
{
	/* Values past 64 bits saturate (p->saturated), as in every merge. */
	for (uint32_t t = 0; t < p->nr_types; t++) {
		uint32_t d = p->types[t].decimals + MEAN_DECIMALS;

		(void)profile_set_decimals(p, t, d > 9 ? 9 : d);
	}
	/* Rounded half away from zero, with no sum that could overflow. */
	for (size_t i = 0; i < (size_t)p->nr_samples * p->nr_types; i++) {
		int64_t v = p->values[i], q = v / n, rem = v % n;

		if (rem > 0 && rem >= n - rem)
			q++;
		else if (rem < 0 && -rem >= n + rem)
			q--;
		p->values[i] = q;
	}
	return profile_merge(dst, p, err);
}

int service_query(struct service *sv, const struct selector *sel, int64_t from, int64_t until,
		  struct profile **out, size_t *nseries, struct error *err)
{
	struct match m;
	struct units u = {0};
	struct merge_ctx mc = {NULL, err, 0, 0};
	char type[SERIES_TYPE_MAX + 1];
	int rc = 0;

	*out = NULL;
	select_series(sv, sel, &m, type, err);
	if (!m.ps) /* several types and no APP.TYPE to pick one, or no memory */
		return err->code;
	rc = plan_units(&m, &u, err);
	mc.dst = profile_new();
	if (rc == 0 && !mc.dst)
		rc = svc_nomem(err, "a query's profile");
	for (size_t i = 0; i < u.n && rc == 0; i++) {
		struct merge_ctx one = {NULL, err, 0, 0};

		if (!u.v[i].average) {
			rc = plan_unit(sv, &u.v[i], STORE_LEVELS - 1, false, from, until,
				       svc_merge_row, &mc, err);
			continue;
		}
		/* A gauge: the series' mean over its pushes in the window, then the sum. */
		one.dst = profile_new();
		if (!one.dst) {
			rc = svc_nomem(err, "a query's profile");
			break;
		}
		rc = plan_unit(sv, &u.v[i], STORE_LEVELS - 1, false, from, until, svc_merge_row,
			       &one, err);
		if (rc == 0 && one.samples > 0)
			rc = add_mean(mc.dst, one.dst, one.samples, err);
		mc.rows += one.rows;
		profile_free(one.dst);
	}
	svc_count(sv, &sv->c.query_rows, mc.rows);
	*nseries = m.n;
	units_free(&u);
	match_free(&m);
	if (rc != 0) {
		profile_free(mc.dst);
		return rc < 0 ? rc : ERR_IO;
	}
	if (mc.dst->nr_types == 0)
		profile_add_type(mc.dst, type, "count");
	if (profile_failed(mc.dst)) {
		profile_free(mc.dst);
		return svc_nomem(err, "a query's profile");
	}
	*out = mc.dst;
	return 0;
}

struct timeline_ctx {
	int64_t from, step, *values;
	int64_t *pushes; /* per step, for a gauge's mean; NULL for a sum */
	size_t n;
};

static int add_total(const struct store_row *r, void *arg)
{
	struct timeline_ctx *tc = arg;
	/* Unsigned: t0 - from overflows int64 when they lie centuries apart. */
	uint64_t i = r->t0 < tc->from ? UINT64_MAX
				      : ((uint64_t)r->t0 - (uint64_t)tc->from) / (uint64_t)tc->step;

	if (i < tc->n) {
		/* Saturated, as merges are (profile.h): a step over 64 bits is held. */
		if (__builtin_add_overflow(tc->values[i], r->total, &tc->values[i]))
			tc->values[i] = r->total > 0 ? INT64_MAX : INT64_MIN;
		if (tc->pushes)
			tc->pushes[i] += r->samples;
	}
	return 0;
}

/* Totals per step of unit UN at LEVEL into TC. */
static int timeline_unit(struct service *sv, const struct unit *un, int level, int64_t from,
			 int64_t until, struct timeline_ctx *tc, struct error *err)
{
	int rc = 0;

	/* Totals only: one scan per level-0 range, rollups when they tile the steps. */
	if (level > 0)
		return plan_unit(sv, un, level, true, from, until, add_total, tc, err);
	for (size_t i = 0; i < (un->f.n ? un->f.n : 1) && rc == 0; i++)
		rc = sv->st->be->scan_totals(sv->st, un->f.members[i].id, 0, from, until, add_total,
					     tc, err);
	return rc;
}

/* The coarsest rollup level whose windows tile STEP buckets starting at FROM. */
static int timeline_level(int64_t from, int64_t step)
{
	int level = 0;

	for (int l = 1; l < STORE_LEVELS; l++)
		if (step % store_level_ns[l] == 0 && from % store_level_ns[l] == 0)
			level = l;
	return level;
}

int service_timeline(struct service *sv, const struct selector *sel, int64_t from, int64_t until,
		     int64_t step, int64_t **values, size_t *n, struct error *err)
{
	struct timeline_ctx tc = {.from = from, .step = step};
	struct match m;
	struct units u = {0};
	uint64_t span, steps;
	int level, rc = 0;

	*values = NULL;
	*n = 0;
	if (step <= 0)
		return error_set(err, ERR_USAGE, "step: must be positive");
	if (until <= from)
		return error_set(err, ERR_USAGE, "until is not after from");
	/* until - from fits in uint64 (it is positive); + step - 1 may not. */
	span = (uint64_t)until - (uint64_t)from;
	steps = span / (uint64_t)step + (span % (uint64_t)step != 0);
	if (steps > SERVICE_TIMELINE_MAX)
		return error_set(err, ERR_LIMIT,
				 "step: %" PRId64 " ns makes %" PRIu64
				 " steps of the window, over the limit of %d (a longer step or a "
				 "shorter window)",
				 step, steps, SERVICE_TIMELINE_MAX);
	tc.n = (size_t)steps;
	tc.values = calloc(tc.n, sizeof(*tc.values));
	if (!tc.values)
		return svc_nomem(err, "a timeline");
	level = timeline_level(from, step);
	select_series(sv, sel, &m, NULL, err);
	if (!m.ps) {
		free(tc.values);
		return err->code;
	}
	rc = plan_units(&m, &u, err);
	for (size_t i = 0; i < u.n && rc == 0; i++) {
		struct timeline_ctx one = tc;

		if (!u.v[i].average) {
			rc = timeline_unit(sv, &u.v[i], level, from, until, &tc, err);
			continue;
		}
		/* A gauge: per step, the series' mean over its pushes in the step. */
		one.values = calloc(tc.n, sizeof(*one.values));
		one.pushes = calloc(tc.n, sizeof(*one.pushes));
		rc = !one.values || !one.pushes
			     ? svc_nomem(err, "a timeline")
			     : timeline_unit(sv, &u.v[i], level, from, until, &one, err);
		for (size_t k = 0; k < tc.n && rc == 0; k++)
			if (one.pushes[k])
				tc.values[k] += (one.values[k] + one.pushes[k] / 2) / one.pushes[k];
		free(one.values);
		free(one.pushes);
	}
	units_free(&u);
	match_free(&m);
	if (rc != 0) {
		free(tc.values);
		return rc < 0 ? rc : ERR_IO;
	}
	*values = tc.values;
	*n = tc.n;
	return 0;
}
