/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's background work (service.h service_roll,
 * service_retain): windows rolled up from the level below, with their
 * sample-type siblings when they share pushes; windows whose data cannot
 * be rolled up are marked and skipped; retention deletes old rows.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_int.h"
#include "store/blob.h"
#include "store/plan.h"
#include "util/alloc.h"
#include "util/clock.h"

struct window {
	int64_t series, t0, gen;
	int level;
};

/* Errors of the window's data (a blob that does not decode or merge), not of the store. */
static bool window_fault(int rc)
{
	return rc == ERR_FORMAT || rc == ERR_LIMIT || rc == ERR_USAGE || rc == ERR_UNSUPPORTED;
}

/* Failed windows remembered at most (then such a window is tried each step). */
#define ROLL_BAD_MAX 4096

struct windows {
	struct service *sv;
	struct window *v;
	size_t n, max;
	size_t first; /* windows listed by an earlier pass: not listed twice */
	int64_t now, delay, wall;
};

/*
 * A window is due DELAY after its end, once its series has moved on: a
 * push at least DELAY past the window's end came in, or none for DELAY
 * of wall-clock time.  Live pushes make the two the same; a backfill of
 * old data (an agent's queue draining after an outage) would otherwise
 * roll every window again after each of its pushes.
 */
/* The failed window (SERIES, LEVEL, T0), or NULL. */
static struct bad_window *bad_find(struct service *sv, int64_t series, int level, int64_t t0)
{
	for (size_t i = 0; i < sv->nbad; i++)
		if (sv->bad[i].series == series && sv->bad[i].level == level && sv->bad[i].t0 == t0)
			return &sv->bad[i];
	return NULL;
}

/*
 * Mark window W failed at its generation: 1 when that is news (to log),
 * 0 when it was known or the list is full (then it is tried again).
 */
static int bad_mark(struct service *sv, const struct window *w)
{
	struct bad_window *b = bad_find(sv, w->series, w->level, w->t0);

	if (b && b->gen == w->gen)
		return 0;
	if (!b && sv->nbad == ROLL_BAD_MAX)
		return 0;
	if (!b) {
		size_t alloc = sv->alloc_bad;
		void *v = sv->bad;

		if (sv->nbad == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			v = realloc(sv->bad, alloc * sizeof(*sv->bad));
			if (!v)
				return 0;
		}
		sv->bad = v;
		sv->alloc_bad = alloc;
		b = &sv->bad[sv->nbad++];
	}
	*b = (struct bad_window){w->series, w->t0, w->gen, w->level};
	return 1;
}

/* Window W rolled up after all: it is no longer failed. */
static void bad_forget(struct service *sv, const struct window *w)
{
	struct bad_window *b = bad_find(sv, w->series, w->level, w->t0);

	if (b)
		*b = sv->bad[--sv->nbad];
}

static int due_window(int64_t series, int level, int64_t t0, int64_t gen, void *arg)
{
	struct windows *ws = arg;
	int64_t end = t0 + store_level_ns[level] + ws->delay;
	const struct bad_window *b;
	bool moved_on = true;

	if (end > ws->now)
		return 0;
	/* Failed at this generation: skipped until a push changes it. */
	b = bad_find(ws->sv, series, level, t0);
	if (b && b->gen == gen)
		return 0;
	pthread_rwlock_rdlock(&ws->sv->mu);
	if (series > 0 && (size_t)series < ws->sv->nby_id) {
		const struct ix_id *e = &ws->sv->by_id[series];

		moved_on = end <= e->last_ns || !e->pushed || e->pushed + ws->delay <= ws->wall;
	}
	pthread_rwlock_unlock(&ws->sv->mu);
	if (!moved_on)
		return 0;
	for (size_t i = 0; i < ws->first; i++)
		if (ws->v[i].series == series && ws->v[i].t0 == t0)
			return 0;
	if (ws->n < ws->max)
		ws->v[ws->n++] = (struct window){series, t0, gen, level};
	return 0;
}

/* The fleet whose own series is SERIES, or NULL (caller holds mu). */
static const struct ix_fleet *fleet_by_id(const struct service *sv, int64_t series)
{
	return series > 0 && (size_t)series < sv->nby_id ? sv->by_id[series].fleet : NULL;
}

/*
 * The members of the fleet whose series is SERIES into *OUT (NULL: it is
 * no fleet's; ERR_NOMEM, or the number of members).
 */
static int fleet_members(struct service *sv, int64_t series, struct plan_series **out, size_t *n,
			 struct error *err)
{
	const struct ix_fleet *f;
	int rc = 0;

	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&sv->mu);
	f = fleet_by_id(sv, series);
	if (f) {
		*n = ix_fleet_members(sv, f, out);
		if (!*out)
			rc = svc_nomem(err, "a fleet's members");
	}
	pthread_rwlock_unlock(&sv->mu);
	return rc;
}

/*
 * Merge window W's rows into MC: the series' own below W's level; for a
 * fleet, its own rollups below W's level and its members' of W's level
 * (fresh: the window waited for them) or finer where they are not.
 */
static int roll_plan(struct service *sv, const struct window *w,
		     int (*fn)(const struct store_row *, void *), void *arg, bool *fleet,
		     struct error *err)
{
	int64_t t0 = w->t0, t1 = w->t0 + store_level_ns[w->level];
	struct plan_fleet f = {.fleet = {w->series, 0, 0}, .member_max = w->level};
	struct plan_series *members;
	int rc = fleet_members(sv, w->series, &members, &f.n, err);

	*fleet = members != NULL;
	if (rc < 0)
		return rc;
	if (!members)
		return store_plan(sv->st, &f.fleet, w->level - 1, t0, t1, fn, arg, err);
	f.members = members;
	rc = store_plan_fleet(sv->st, &f, w->level - 1, t0, t1, fn, arg, err);
	free(members);
	return rc;
}

static int roll_one(struct service *sv, const struct window *w, struct error *err)
{
	struct merge_ctx mc = {profile_new(), err, 0, 0};
	bool fleet = false;
	struct store_row r = {.series = w->series,
			      .level = w->level,
			      .t0 = w->t0,
			      .t1 = w->t0 + store_level_ns[w->level]};
	struct strbuf blob;
	int rc;

	strbuf_init_max(&blob, SERVICE_BLOB_MAX);
	if (!mc.dst)
		return svc_nomem(err, "a rollup");
	rc = roll_plan(sv, w, svc_merge_row, &mc, &fleet, err);
	if (rc == 0 && profile_failed(mc.dst))
		rc = svc_nomem(err, "a rollup");
	r.samples = mc.samples;
	if (rc == 0 && mc.dst->nr_types && mc.dst->nr_samples) {
		rc = blob_encode(mc.dst, &blob, err);
		r.total = profile_total(mc.dst, 0);
		r.blob = blob.buf;
		r.len = blob.len;
	}
	if (rc == 0)
		rc = sv->st->be->put_rollup(sv->st, &r, w->gen, err);
	if (rc == 0 && fleet)
		svc_count(sv, &sv->c.rollups_fleet, 1);
	strbuf_release(&blob);
	profile_free(mc.dst);
	return rc < 0 ? rc : rc ? ERR_IO : 0;
}

/*
 * The windows of one level and t0 of the series of one app and label set
 * (one per sample type) read the same pushes: at level 0 their rows share
 * the pushes' blobs, above it their rollups share one blob of all their
 * types.  Rolled one by one, each blob would be decoded once per series;
 * rolled together it is merged once, with all its types, and the merge is
 * stored once for them all (put_rollups), each series reading its type.
 */
#define SIBLINGS_MAX 16

struct sibling {
	const struct window *w;
	int type;	 /* the blob type the series reads; -1 before its first row */
	int64_t samples; /* its pushes */
	size_t blobs;	 /* the blobs it read (each once) */
};

struct siblings_ctx {
	struct profile *dst;
	struct sibling *sib, *first;
	int64_t *seen; /* blob ids merged: a set, open addressing (0: empty; ids are > 0) */
	size_t nseen, size;
	bool mixed; /* rows unlike a shared push: roll one by one */
	struct error *err;
};

static size_t seen_slot(const struct siblings_ctx *c, int64_t id)
{
	size_t i = (size_t)((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (c->size - 1);

	while (c->seen[i] && c->seen[i] != id)
		i = (i + 1) & (c->size - 1);
	return i;
}

/* Add blob ID to the set: 1 when it was new, 0 when seen, ERR_NOMEM. */
static int seen_add(struct siblings_ctx *c, int64_t id, bool add)
{
	size_t i;

	if (c->size && c->seen[seen_slot(c, id)] == id)
		return 0;
	if (!add)
		return 1;
	if (2 * (c->nseen + 1) > c->size) {
		struct siblings_ctx bigger = *c;

		bigger.size = c->size ? 2 * c->size : 64;
		bigger.seen = calloc(bigger.size, sizeof(*bigger.seen));
		if (!bigger.seen)
			return ERR_NOMEM;
		for (size_t k = 0; k < c->size; k++)
			if (c->seen[k])
				bigger.seen[seen_slot(&bigger, c->seen[k])] = c->seen[k];
		free(c->seen);
		c->seen = bigger.seen;
		c->size = bigger.size;
	}
	i = seen_slot(c, id);
	c->seen[i] = id;
	c->nseen++;
	return 1;
}

static int merge_sibling_row(const struct store_row *r, void *arg)
{
	struct siblings_ctx *c = arg;
	struct error err = ERROR_INIT;
	int rc;

	if (c->sib->type >= 0 && c->sib->type != r->type) {
		c->mixed = true;
		return 1;
	}
	c->sib->type = r->type;
	c->sib->samples += r->samples;
	c->sib->blobs++;
	rc = r->blob_id > 0 ? seen_add(c, r->blob_id, c->sib == c->first) : 1;
	if (rc == ERR_NOMEM)
		return svc_nomem(c->err, "a rollup");
	if (rc == 0)
		return 0;
	/* A blob the first sibling did not read: not one shared push (below). */
	if (c->sib != c->first || r->blob_id <= 0) {
		c->mixed = true;
		return 1;
	}
	if (blob_merge_into(c->dst, r->blob, r->len, NULL, &err) == 0)
		return 0;
	/* Blobs of other type lists (a changed configuration): one by one. */
	if (err.code == ERR_USAGE) {
		c->mixed = true;
		return 1;
	}
	*c->err = err;
	return err.code;
}

/* Series of one app and label set: the sample types of the same pushes. */
static bool same_set(const struct series *a, const struct series *b)
{
	return !strcmp(a->app, b->app) &&
	       svc_labels_same(a->labels, a->nlabels, b->labels, b->nlabels);
}

/*
 * Whether the windows of series A and B roll together (caller holds mu):
 * the sample types of one app and label set, or the fleets of one app's
 * types (their members read the same pushes).
 */
static bool roll_together(const struct service *sv, int64_t a, int64_t b)
{
	const struct ix_id *x, *y;

	if (a <= 0 || b <= 0 || (size_t)a >= sv->nby_id || (size_t)b >= sv->nby_id)
		return false;
	x = &sv->by_id[a];
	y = &sv->by_id[b];
	if (x->fleet || y->fleet)
		return x->fleet && y->fleet && !strcmp(x->fleet->app, y->fleet->app);
	return x->s && y->s && same_set(x->s, y->s);
}

/* USED[k]: whether some sample of P has a value of type k (P has at most VIEW_MAX_TYPES). */
static void types_used(const struct profile *p, bool *used)
{
	memset(used, 0, VIEW_MAX_TYPES * sizeof(*used));
	for (uint32_t i = 0; i < p->nr_samples; i++)
		for (uint32_t k = 0; k < p->nr_types && k < VIEW_MAX_TYPES; k++)
			used[k] |= profile_sample_values(p, i)[k] != 0;
}

/* Roll the N windows of SIB (one level and t0) together; *MIXED when they must go one by one. */
static int roll_siblings(struct service *sv, struct sibling *sib, size_t n, bool *mixed,
			 struct error *err)
{
	struct siblings_ctx c = {.dst = profile_new(), .first = sib, .err = err};
	int level = sib[0].w->level;
	int64_t t0 = sib[0].w->t0, t1 = t0 + store_level_ns[level], gens[SIBLINGS_MAX];
	struct store_row rows[SIBLINGS_MAX];
	struct strbuf blob;
	bool used[VIEW_MAX_TYPES];
	int rc = 0;

	strbuf_init_max(&blob, SERVICE_BLOB_MAX);
	if (!c.dst)
		return svc_nomem(err, "a rollup");
	for (size_t i = 0; i < n && rc == 0 && !c.mixed; i++) {
		bool fleet;

		c.sib = &sib[i];
		rc = roll_plan(sv, sib[i].w, merge_sibling_row, &c, &fleet, err);
	}
	/*
	 * Merged with all their types, the blobs stand for every sibling only
	 * when every sibling read them all: a series that read a blob of its
	 * own instead (a push of its type alone, a rollup made apart) would
	 * count the others' values twice.  A blob beyond the first sibling's
	 * stopped the merge already; here, a sibling that read fewer.
	 */
	for (size_t i = 0; i < n && rc == 0; i++)
		c.mixed |= sib[i].blobs != c.nseen;
	if (rc == 0 && profile_failed(c.dst))
		rc = svc_nomem(err, "a rollup");
	*mixed = c.mixed;
	if (rc == 0 && !c.mixed && c.dst->nr_types && c.dst->nr_samples)
		rc = blob_encode(c.dst, &blob, err);
	types_used(c.dst, used);
	for (size_t i = 0; i < n && rc == 0 && !c.mixed; i++) {
		uint32_t k = (uint32_t)(sib[i].type < 0 ? 0 : sib[i].type);
		bool has = sib[i].type >= 0 && k < c.dst->nr_types && k < VIEW_MAX_TYPES && used[k];

		rows[i] = (struct store_row){.series = sib[i].w->series,
					     .level = level,
					     .t0 = t0,
					     .t1 = t1,
					     .samples = sib[i].samples,
					     .total = has ? profile_total(c.dst, k) : 0,
					     .type = (int)k,
					     .blob = has ? blob.buf : NULL,
					     .len = has ? blob.len : 0};
		gens[i] = sib[i].w->gen;
	}
	if (rc == 0 && !c.mixed)
		rc = sv->st->be->put_rollups(sv->st, rows, gens, n, err);
	strbuf_release(&blob);
	free(c.seen);
	profile_free(c.dst);
	if (c.mixed)
		return 0;
	return rc < 0 ? rc : rc ? ERR_IO : 0;
}

struct stale_children {
	struct service *sv;
	int64_t series;
	int level;
	size_t n;
};

/* A stale child counts unless it failed (it would never be fresh). */
static int count_stale(int64_t t0, void *arg)
{
	struct stale_children *c = arg;

	if (!bad_find(c->sv, c->series, c->level, t0))
		c->n++;
	return 0;
}

/*
 * Whether window W (level >= 2) still has stale windows of the level
 * below: then it waits, to be built from their rollups rather than from
 * the pushes under them (a backlog hands the roller a parent before its
 * children).  A child that failed does not hold it back.  1 or 0, or an
 * error.
 */
static int children_stale(struct service *sv, const struct window *w, struct error *err)
{
	struct stale_children c = {sv, w->series, w->level - 1, 0};
	struct plan_series *members;
	size_t n;
	int rc = 0;

	if (w->level >= 2)
		rc = sv->st->be->stale_range(sv->st, w->series, w->level - 1, w->t0,
					     w->t0 + store_level_ns[w->level], count_stale, &c,
					     err);
	if (rc < 0 || c.n > 0)
		return rc < 0 ? rc : 1;
	/* A fleet's window also waits for its members' of the same level. */
	rc = fleet_members(sv, w->series, &members, &n, err);
	for (size_t i = 0; rc == 0 && i < n && c.n == 0; i++) {
		c.series = members[i].id;
		c.level = w->level;
		rc = sv->st->be->stale_range(sv->st, members[i].id, w->level, w->t0, w->t0 + 1,
					     count_stale, &c, err);
	}
	free(members);
	return rc < 0 ? rc : c.n > 0;
}

/*
 * Roll window I of WS with the other windows of its level, t0, app and
 * label set (marked done in DONE) whose children are ready; *ROLLED
 * counts.  Window I's own children are ready.
 */
static int roll_group(struct service *sv, struct windows *ws, size_t i, bool *done, int *rolled,
		      struct error *err)
{
	struct sibling sib[SIBLINGS_MAX];
	size_t n = 0, kept = 1;
	bool mixed = true, fleet;
	int rc = 0;

	pthread_rwlock_rdlock(&sv->mu);
	fleet = fleet_by_id(sv, ws->v[i].series) != NULL;
	for (size_t j = i; j < ws->n && n < SIBLINGS_MAX; j++) {
		const struct window *w = &ws->v[j];

		if (!done[j] && w->level == ws->v[i].level && w->t0 == ws->v[i].t0 &&
		    roll_together(sv, ws->v[i].series, w->series))
			sib[n++] = (struct sibling){w, -1, 0, 0};
	}
	pthread_rwlock_unlock(&sv->mu);
	for (size_t k = 1; k < n && rc >= 0; k++)
		if ((rc = children_stale(sv, sib[k].w, err)) == 0)
			sib[kept++] = sib[k];
	n = n ? kept : 0;
	if (rc > 0)
		rc = 0;
	/* A window alone: a blob of its own type (roll_one) is smaller. */
	if (rc == 0 && n > 1)
		rc = roll_siblings(sv, sib, n, &mixed, err);
	/* A blob that does not merge: one by one, so only its windows fail. */
	if (window_fault(rc)) {
		rc = 0;
		mixed = true;
	}
	if (rc == 0 && !mixed) {
		for (size_t k = 0; k < n; k++)
			done[sib[k].w - ws->v] = true;
		*rolled += (int)n;
		if (n > 1)
			svc_count(sv, &sv->c.rollups_shared, n);
		if (fleet)
			svc_count(sv, &sv->c.rollups_fleet, n);
		return 0;
	}
	if (rc == 0 && (rc = roll_one(sv, &ws->v[i], err)) == 0) {
		done[i] = true;
		(*rolled)++;
	}
	return rc;
}

/*
 * Window W failed with RC: a fault of its data marks it (skipped until a
 * push changes it, counted) and lets the others roll, told in ERR once;
 * the store's own errors (I/O) stop this step, tried again next time.
 */
static int roll_failed(struct service *sv, const struct window *w, int rc, struct error *why,
		       struct error *err)
{
	if (!window_fault(rc))
		return rc;
	if (bad_mark(sv, w)) {
		svc_count(sv, &sv->c.rollups_failed, 1);
		if (!err->code)
			error_set(err, rc,
				  "window of series %" PRId64 " at level %d from %" PRId64
				  " ns: %s (skipped until a push changes it)",
				  w->series, w->level, w->t0, why->msg);
	}
	return 0;
}

int service_roll(struct service *sv, int64_t now_ns, size_t max, struct error *err)
{
	struct windows ws = {.sv = sv,
			     .max = max,
			     .now = now_ns,
			     .delay = sv->cfg.rollup_delay_ns,
			     .wall = clock_ns(CLOCK_REALTIME)};
	bool *rolled;
	int rc = 0, done = 0;

	if (service_degraded(sv))
		return 0; /* nothing can be written */
	ws.v = calloc(max ? max : 1, sizeof(*ws.v));
	rolled = calloc(max ? max : 1, sizeof(*rolled));
	if (!ws.v || !rolled)
		rc = svc_nomem(err, "the rollup windows");
	/*
	 * Level by level, lower levels first: a window above builds on the
	 * fresh ones below, and one whose children are still stale waits.
	 */
	for (int level = 1; rc == 0 && level < STORE_LEVELS; level++) {
		ws.n = 0;
		ws.first = 0;
		memset(rolled, 0, max * sizeof(*rolled));
		/*
		 * Half the batch newest first, what dashboards read (a backfill
		 * in time order leaves its last hour rolled up when it ends),
		 * the rest oldest first, so that a backlog always moves.
		 * Failed windows are listed too, and skipped: they take no room.
		 */
		ws.max = max / 2;
		rc = sv->st->be->stale_each(sv->st, level, 4 * max + sv->nbad, true, due_window,
					    &ws, err);
		ws.first = ws.n;
		ws.max = max;
		if (rc == 0)
			rc = sv->st->be->stale_each(sv->st, level, 4 * max + sv->nbad, false,
						    due_window, &ws, err);
		for (size_t i = 0; rc == 0 && i < ws.n; i++) {
			struct error why = ERROR_INIT;

			if (rolled[i])
				continue;
			if ((rc = children_stale(sv, &ws.v[i], &why)) > 0)
				rc = 0; /* later, from its children's rollups */
			else if (rc == 0)
				rc = roll_group(sv, &ws, i, rolled, &done, &why);
			if (rc == 0 && rolled[i])
				bad_forget(sv, &ws.v[i]);
			if (rc < 0)
				rc = roll_failed(sv, &ws.v[i], rc, &why, err);
			if (rc < 0 && !err->code)
				*err = why;
		}
	}
	free(rolled);
	free(ws.v);
	if (done)
		svc_count(sv, &sv->c.rollups, (uint64_t)done);
	if (rc == ERR_NOSPACE)
		svc_degrade(sv, true);
	return rc < 0 ? rc : done;
}

int service_retain(struct service *sv, int64_t now_ns, int64_t *deleted, struct error *err)
{
	int64_t n = 0, oldest, bytes;
	int rc = 0;

	*deleted = 0;
	if (sv->cfg.retention_ns) {
		int64_t cutoff;

		/* Reaching back past what can be stored: nothing to delete there. */
		if (__builtin_sub_overflow(now_ns, sv->cfg.retention_ns, &cutoff) ||
		    cutoff < -STORE_TIME_MAX)
			cutoff = -STORE_TIME_MAX;
		rc = sv->st->be->delete_before(sv->st, cutoff, &n, err);
		*deleted += n;
	}
	/* Over the size cap: drop the oldest ten minutes at a time until it fits. */
	for (int rounds = 0; rc == 0 && sv->cfg.max_disk && rounds < 1000; rounds++) {
		rc = sv->st->be->disk_bytes(sv->st, &bytes, err);
		if (rc < 0 || (uint64_t)bytes <= sv->cfg.max_disk)
			break;
		rc = sv->st->be->oldest(sv->st, &oldest, err);
		if (rc < 0 || oldest == 0)
			break;
		rc = sv->st->be->delete_before(sv->st, oldest + store_level_ns[2], &n, err);
		*deleted += n;
		if (n == 0)
			break;
	}
	if (*deleted)
		svc_count(sv, &sv->c.deleted, (uint64_t)*deleted);
	if (rc == ERR_NOSPACE)
		svc_degrade(sv, true);
	return rc;
}
