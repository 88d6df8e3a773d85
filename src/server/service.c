/* SPDX-License-Identifier: MIT */
/*
 * The server's work without HTTP (service.h, doc/plateau-serve.md).
 *
 * The series index lives in memory, loaded from the store at open and
 * kept sorted by canonical key: an ingest finds its series by binary
 * search under a read lock and takes the write lock only to add one.
 * Queries match the selector against the index, then merge, per series,
 * the rows store_plan() picks (rollups where they are fresh).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/service.h"
#include "store/blob.h"
#include "store/plan.h"
#include "util/alloc.h"
#include "util/clock.h"

struct ix_series {
	int64_t id;
	bool average; /* its aggregation (store_series) */
	char *key;
	struct series *s; /* parsed from key: app, type, sorted labels */
	int64_t first_ns, last_ns;
};

/* What the roller needs of a series, by id. */
struct ix_id {
	const struct series *s; /* parsed: app, type, labels */
	int64_t last_ns;	/* end of its latest push */
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
	/* Group commit: pushes waiting for a transaction, and whether one runs. */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct batch *queue;
	bool committing;
	bool degraded; /* read-only for a full disk (cmu) */
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

/* ---- the index ---- */

/* An allocation failed: the request fails, the server goes on. */
static int nomem(struct error *err, const char *what)
{
	return error_set(err, ERR_NOMEM, "out of memory (%s)", what);
}

/* Room for NEED entries in by_id, zeroed (caller holds mu for writing). */
static int by_id_grow(struct service *sv, size_t need, struct error *err)
{
	size_t n = need > 2 * sv->nby_id ? need : 2 * sv->nby_id;
	struct ix_id *v;

	if (need <= sv->nby_id)
		return 0;
	v = alloc_array(sv->by_id, n, sizeof(*v));
	if (!v)
		return nomem(err, "series index");
	memset(v + sv->nby_id, 0, (n - sv->nby_id) * sizeof(*v));
	sv->by_id = v;
	sv->nby_id = n;
	return 0;
}

static int key_cmp(const char *a, const struct ix_series *e)
{
	return strcmp(a, e->key);
}

/* Where KEY is or would go (caller holds mu). */
static size_t ix_find(const struct service *sv, const char *key, bool *found)
{
	size_t lo = 0, hi = sv->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(key, &sv->v[mid]);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/* Where APP is or would go in sv->apps (caller holds mu). */
static size_t app_find(const struct service *sv, const char *app, bool *found)
{
	size_t lo = 0, hi = sv->napps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(app, sv->apps[mid].app);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/*
 * One more series of APP, a string of the index (caller holds mu for
 * writing): 0, or ERR_NOMEM with nothing counted.
 */
static int app_count_add(struct service *sv, const char *app)
{
	bool found;
	size_t at = app_find(sv, app, &found);

	if (found) {
		sv->apps[at].n++;
		return 0;
	}
	if (ALLOC_TRY_GROW(sv->apps, sv->napps + 1, sv->alloc_apps) < 0)
		return ERR_NOMEM;
	memmove(&sv->apps[at + 1], &sv->apps[at], (sv->napps - at) * sizeof(*sv->apps));
	sv->apps[at] = (struct app_count){app, 1};
	sv->napps++;
	return 0;
}

/* The series of APP in the index (caller holds mu). */
static uint64_t app_series(const struct service *sv, const char *app)
{
	bool found;
	size_t at = app_find(sv, app, &found);

	return found ? sv->apps[at].n : 0;
}

/* Insert a series parsed from its key (caller holds mu for writing). */
static int ix_insert(struct service *sv, int64_t id, bool average, const char *key, int64_t first,
		     int64_t last, struct error *err)
{
	struct series *s;
	char *copy;
	bool found;
	size_t at = ix_find(sv, key, &found);

	if (found)
		return 0;
	if (series_key_parse(key, &s, err) < 0)
		return err->code;
	copy = alloc_strdup(key);
	if (!copy || ALLOC_TRY_GROW(sv->v, sv->n + 1, sv->alloc) < 0 ||
	    (id > 0 && id < INT32_MAX && by_id_grow(sv, (size_t)id + 1, err) < 0) ||
	    app_count_add(sv, s->app) < 0) {
		free(copy);
		series_free(s);
		return nomem(err, "series index");
	}
	memmove(&sv->v[at + 1], &sv->v[at], (sv->n - at) * sizeof(*sv->v));
	sv->v[at] = (struct ix_series){id, average, copy, s, first, last};
	sv->n++;
	if (id > 0 && id < INT32_MAX)
		sv->by_id[id] = (struct ix_id){s, last, 0};
	return 0;
}

static int load_series(const struct store_series *se, void *arg)
{
	struct service *sv = arg;
	struct error err = ERROR_INIT;

	/* A key this build cannot parse stays in the store, unqueried. */
	if (ix_insert(sv, se->id, se->average, se->key, se->first_ns, se->last_ns, &err) ==
	    ERR_NOMEM)
		return ERR_NOMEM;
	return 0;
}

int service_open(struct store *st, const struct service_config *cfg, struct service **out,
		 struct error *err)
{
	struct service *sv = calloc(1, sizeof(*sv));
	int rc;

	if (!sv)
		return nomem(err, "service");
	sv->st = st;
	sv->cfg = *cfg;
	pthread_rwlock_init(&sv->mu, NULL);
	pthread_mutex_init(&sv->cmu, NULL);
	pthread_mutex_init(&sv->qmu, NULL);
	pthread_cond_init(&sv->qcv, NULL);
	rc = st->be->series_each(st, load_series, sv, err);
	if (rc == ERR_NOMEM && !err->code)
		nomem(err, "series index");
	if (rc < 0) {
		service_close(sv);
		*out = NULL;
		return rc;
	}
	sv->c.series = sv->n;
	/* A full disk: start read-only, after what retention can free. */
	sv->degraded = true;
	service_maintain(sv, err);
	*err = (struct error)ERROR_INIT;
	*out = sv;
	return 0;
}

void service_close(struct service *sv)
{
	if (!sv)
		return;
	for (size_t i = 0; i < sv->n; i++) {
		free(sv->v[i].key);
		series_free(sv->v[i].s);
	}
	free(sv->v);
	free(sv->by_id);
	free(sv->wide_key);
	free(sv->bad);
	free(sv->apps);
	pthread_rwlock_destroy(&sv->mu);
	pthread_mutex_destroy(&sv->cmu);
	pthread_mutex_destroy(&sv->qmu);
	pthread_cond_destroy(&sv->qcv);
	free(sv);
}

static void count(struct service *sv, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&sv->cmu);
	*field += n;
	pthread_mutex_unlock(&sv->cmu);
}

bool service_degraded(struct service *sv)
{
	bool d;

	pthread_mutex_lock(&sv->cmu);
	d = sv->degraded;
	pthread_mutex_unlock(&sv->cmu);
	return d;
}

static void degrade(struct service *sv, bool on)
{
	pthread_mutex_lock(&sv->cmu);
	sv->degraded = on;
	pthread_mutex_unlock(&sv->cmu);
}

/* Degraded: whether the store takes writes again, after retention freed what it could. */
static void recover(struct service *sv)
{
	struct error err = ERROR_INIT;
	int64_t deleted = 0;
	int rc = sv->st->be->writable(sv->st, &err);

	if (rc == ERR_NOSPACE && (sv->cfg.retention_ns || sv->cfg.max_disk) &&
	    service_retain(sv, clock_ns(CLOCK_REALTIME), &deleted, &err) == 0 && deleted)
		rc = sv->st->be->writable(sv->st, &err);
	if (rc == 0)
		degrade(sv, false);
}

int service_maintain(struct service *sv, struct error *err)
{
	if (service_degraded(sv)) {
		recover(sv);
		return 0;
	}
	return sv->st->be->maintain(sv->st, err);
}

int service_store_stats(struct service *sv, struct store_stats *st, struct error *err)
{
	return sv->st->be->stats(sv->st, st, err);
}

int service_store_counts(struct service *sv, struct store_stats *st, struct error *err)
{
	return sv->st->be->counts(sv->st, st, err);
}

static int app_count_cmp(const void *a, const void *b)
{
	const struct app_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->app, y->app);
}

size_t service_app_series(struct service *sv, size_t max,
			  void (*fn)(const char *app, uint64_t series, void *arg), void *arg)
{
	struct app_count *v;
	size_t n;

	pthread_rwlock_rdlock(&sv->mu);
	n = sv->napps;
	v = alloc_array(NULL, n + 1, sizeof(*v));
	if (!v)
		n = 0; /* no memory: /metrics lists no app this time */
	if (n) {
		memcpy(v, sv->apps, n * sizeof(*v));
		qsort(v, n, sizeof(*v), app_count_cmp);
	}
	for (size_t i = 0; i < n && i < max; i++)
		fn(v[i].app, v[i].n, arg);
	pthread_rwlock_unlock(&sv->mu);
	free(v);
	return v ? n : sv->napps;
}

void service_counters(struct service *sv, struct service_counters *c)
{
	pthread_mutex_lock(&sv->cmu);
	*c = sv->c;
	pthread_mutex_unlock(&sv->cmu);
}

/* ---- ingest ---- */

static bool label_allowed(const struct service *sv, const char *key)
{
	const char *const *a = sv->cfg.allow_labels;

	if (!a)
		return true;
	for (; *a; a++)
		if (!strcmp(*a, key))
			return true;
	return false;
}

/* Whether labels[0..n), in any order, have KEY. */
static bool labels_get_any(const struct series_label *labels, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(labels[i].key, key))
			return true;
	return false;
}

struct kv {
	const char *key, *value;
};

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

/* One label key over the index: its distinct values and the series that have it. */
struct label_stat {
	const char *key; /* the index's string */
	size_t values, series;
};

/*
 * Every label key of the index (of APP's series; NULL: all), sorted, with
 * its counts (caller holds mu and frees *out): one sort of all (key,
 * value) pairs.  A series has a key at most once, so the pairs of a key
 * are its series.  *out is NULL when memory ran out.
 */
static size_t label_stats(const struct service *sv, const char *app, struct label_stat **out)
{
	struct kv *v;
	struct label_stat *st;
	size_t n = 0, ns = 0;

	for (size_t i = 0; i < sv->n; i++)
		n += sv->v[i].s->nlabels;
	v = alloc_array(NULL, n + 1, sizeof(*v));
	st = alloc_array(NULL, n + 1, sizeof(*st));
	if (!v || !st) {
		free(v);
		free(st);
		*out = NULL;
		return 0;
	}
	n = 0;
	for (size_t i = 0; i < sv->n; i++) {
		if (app && strcmp(app, sv->v[i].s->app))
			continue;
		for (size_t j = 0; j < sv->v[i].s->nlabels; j++)
			v[n++] =
				(struct kv){sv->v[i].s->labels[j].key, sv->v[i].s->labels[j].value};
	}
	if (n)
		qsort(v, n, sizeof(*v), kv_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(v[i].key, v[i - 1].key)) {
			st[ns++] = (struct label_stat){v[i].key, 1, 1};
			continue;
		}
		st[ns - 1].series++;
		st[ns - 1].values += strcmp(v[i].value, v[i - 1].value) != 0;
	}
	free(v);
	*out = st;
	return ns;
}

/*
 * The label with the most distinct values over the series of APP (the
 * index's string; NULL: all), for the budget message (caller holds mu).
 * Sorting every (key, value) pair costs a moment at 100,000 series, so
 * the answer is kept until the index changes or another app asks: while
 * the budget is full the index does not change.
 */
static const char *widest_label(struct service *sv, const char *app, size_t *nvalues)
{
	struct label_stat *st;
	size_t n, best = 0;

	if (sv->wide_at == sv->n && sv->wide_key && sv->wide_app == app) {
		*nvalues = sv->wide_n;
		return sv->wide_key;
	}
	n = label_stats(sv, app, &st);
	for (size_t i = 1; i < n; i++)
		if (st[i].values > st[best].values)
			best = i;
	free(sv->wide_key);
	/* No memory: the message names no label, the next refusal tries again. */
	sv->wide_key = n ? alloc_strdup(st[best].key) : NULL;
	sv->wide_n = sv->wide_key ? st[best].values : 0;
	sv->wide_at = sv->n;
	sv->wide_app = app;
	free(st);
	*nvalues = sv->wide_n;
	return sv->wide_key;
}

/* The app with the most series (the index's string; caller holds mu). */
static const struct app_count *largest_app(const struct service *sv)
{
	const struct app_count *best = NULL;

	for (size_t i = 0; i < sv->napps; i++)
		if (!best || sv->apps[i].n > best->n)
			best = &sv->apps[i];
	return best;
}

/*
 * Refuse KEY of app S->app: its app's budget or the global one is full
 * (caller holds mu for writing).  The message names the app and the
 * label with the most values, where the series to cut are.
 */
static int over_budget(struct service *sv, const char *key, const struct series *s,
		       struct error *err)
{
	char label[128] = "";
	const char *app, *wide;
	uint64_t budget, n;
	size_t nv = 0;
	bool per_app =
		sv->cfg.series_budget_app && app_series(sv, s->app) >= sv->cfg.series_budget_app;

	if (per_app) {
		bool found;

		app = sv->apps[app_find(sv, s->app, &found)].app;
		budget = sv->cfg.series_budget_app;
		n = app_series(sv, app);
	} else {
		const struct app_count *big = largest_app(sv);

		app = big ? big->app : s->app;
		budget = sv->cfg.series_budget;
		n = big ? big->n : 0;
	}
	wide = widest_label(sv, per_app ? app : NULL, &nv);
	if (wide)
		snprintf(label, sizeof(label), "label \"%s\" has %zu values; ", wide, nv);
	if (per_app)
		return error_set(err, ERR_LIMIT,
				 "series budget of %llu per app reached (%sapp \"%s\" has %llu "
				 "series): refusing %s",
				 (unsigned long long)budget, label, app, (unsigned long long)n,
				 key);
	return error_set(err, ERR_LIMIT,
			 "series budget of %llu reached (%sapp \"%s\" has the most series, %llu): "
			 "refusing %s",
			 (unsigned long long)budget, label, app, (unsigned long long)n, key);
}

/* Whether a new series of APP fits the budgets (caller holds mu). */
static bool within_budget(const struct service *sv, const char *app)
{
	return (!sv->cfg.series_budget || sv->n < sv->cfg.series_budget) &&
	       (!sv->cfg.series_budget_app || app_series(sv, app) < sv->cfg.series_budget_app);
}

/* The id of series KEY, created within the budget. */
static int series_id(struct service *sv, const char *key, const struct series *s, bool average,
		     int64_t *id, struct error *err)
{
	bool found, created;
	size_t at;
	int rc = 0;

	pthread_rwlock_rdlock(&sv->mu);
	at = ix_find(sv, key, &found);
	if (found)
		*id = sv->v[at].id;
	pthread_rwlock_unlock(&sv->mu);
	if (found)
		return 0;
	pthread_rwlock_wrlock(&sv->mu);
	at = ix_find(sv, key, &found);
	if (found) {
		*id = sv->v[at].id;
	} else if (!within_budget(sv, s->app)) {
		rc = over_budget(sv, key, s, err);
	} else {
		rc = sv->st->be->series_get(sv->st, key, s->app, s->type, average, id, &created,
					    err);
		if (rc == 0)
			rc = ix_insert(sv, *id, average, key, 0, 0, err);
		if (rc == 0)
			count(sv, &sv->c.series, 1);
	}
	pthread_rwlock_unlock(&sv->mu);
	return rc;
}

/*
 * A view of one group of a pushed profile for the blob encoder: the
 * push's strings, frames, tree and label sets as they are (the encoder
 * only reads them and keeps what the samples use), the value columns of
 * the stored sample types and only the samples with a value in one of
 * them.  Building a copy of the tree cost as much as the rest of a push.
 */
#define VIEW_MAX_TYPES 16

struct type_view {
	struct profile v;
	struct sample_type st[VIEW_MAX_TYPES];
	struct psample *samples;
	int64_t *values;
	bool used[VIEW_MAX_TYPES]; /* the type has a value in some sample */
};

static void view_release(struct type_view *tv)
{
	free(tv->samples);
	free(tv->values);
}

/*
 * The NT types TYPES (P's indexes), named IDS (interned in P before the
 * view copies P's string table); only the samples of group G (GROUP_OF[i],
 * see struct groups; GROUP_OF NULL: every sample).
 */
static int view_init(struct type_view *tv, const struct profile *p, const uint32_t *types,
		     const uint32_t *ids, uint32_t nt, const uint32_t *group_of, uint32_t g,
		     struct error *err)
{
	uint32_t n = 0;

	memset(tv->used, 0, sizeof(tv->used));
	tv->samples = alloc_array(NULL, (size_t)p->nr_samples + 1, sizeof(*tv->samples));
	tv->values = alloc_array(NULL, (size_t)p->nr_samples * nt + 1, sizeof(*tv->values));
	if (!tv->samples || !tv->values) {
		view_release(tv);
		return nomem(err, "a push's samples");
	}
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const int64_t *v = profile_sample_values(p, i);
		int64_t *out = tv->values + (size_t)n * nt;
		bool any = false;

		if (group_of && group_of[i] != g)
			continue;
		for (uint32_t k = 0; k < nt; k++)
			any |= (out[k] = v[types[k]]) != 0;
		if (!any)
			continue;
		for (uint32_t k = 0; k < nt; k++)
			tv->used[k] |= out[k] != 0;
		tv->samples[n++] = p->samples[i];
	}
	tv->v = *p;
	for (uint32_t k = 0; k < nt; k++) {
		tv->st[k] = p->types[types[k]];
		tv->st[k].type = ids[k];
	}
	tv->v.types = tv->st;
	tv->v.nr_types = nt;
	tv->v.default_type = 0;
	tv->v.samples = tv->samples;
	tv->v.values = tv->values;
	tv->v.nr_samples = n;
	tv->v.keep_order = false;
	tv->v.nr_order = 0;
	return 0;
}

/*
 * Sample labels that become series labels, so that a selector can pick
 * them (endpoint="/checkout", latency="slow"): every string label of the
 * samples, except the ones whose values are per thread or per request and
 * would make a series each (they stay inside the stored profile), and,
 * with an allow-list, the ones it does not name.  A push's samples are
 * split into groups by the values of those labels; each group of each
 * sample type is one row of its own series.
 */
static const char *const sample_label_kept[] = {"thread",    "thread_id", "tid",      "pid",
						"goroutine", "span_id",	  "trace_id", NULL};

#define GROUPS_MAX 1024

struct group {
	struct series_label labels[LABELS_MAX];
	size_t n;
};

struct groups {
	uint32_t *of; /* per sample */
	struct group *v;
	size_t n;
	size_t renamed; /* promoted sample label names mapped, over the groups */
};

static bool promoted(const struct service *sv, const char *key)
{
	for (const char *const *k = sample_label_kept; *k; k++)
		if (!strcmp(*k, key))
			return false;
	return label_allowed(sv, key);
}

static bool labels_same(const struct series_label *a, size_t na, const struct series_label *b,
			size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value, b[i].value))
			return false;
	return true;
}

static bool group_same(const struct group *a, const struct group *b)
{
	return labels_same(a->labels, a->n, b->labels, b->n);
}

/*
 * Add sample label KEY=VALUE (P's strings) to G when it is promoted, its
 * name mapped as Pyroscope maps it (the new name interned in P).
 */
static int group_add(const struct service *sv, struct profile *p, struct group *g, const char *key,
		     const char *value, size_t *renamed, struct error *err)
{
	char mapped[LABEL_KEY_MAX + 1];
	bool was_mapped = label_key_map(key, mapped);

	if (was_mapped)
		key = profile_str(p, profile_intern_str(p, mapped));
	if (!promoted(sv, key) || g->n == LABELS_MAX)
		return 0;
	for (size_t j = 0; j < g->n; j++) {
		if (strcmp(g->labels[j].key, key))
			continue;
		if (strcmp(g->labels[j].value, value))
			return error_set(err, ERR_FORMAT,
					 "sample label \"%s\" is given twice with different values",
					 key);
		return 0;
	}
	*renamed += was_mapped;
	g->labels[g->n++] = (struct series_label){key, value};
	return 0;
}

/* Split P's samples by their promoted labels (their strings are P's). */
static int groups_build(const struct service *sv, struct profile *p, struct groups *gs,
			struct error *err)
{
	uint32_t *set_group = alloc_array(NULL, (size_t)p->nr_labelsets + 1, sizeof(*set_group));
	int rc = 0;

	gs->of = alloc_array(NULL, (size_t)p->nr_samples + 1, sizeof(*gs->of));
	gs->v = NULL;
	gs->n = 0;
	gs->renamed = 0;
	if (!set_group || !gs->of)
		rc = nomem(err, "sample label sets");
	/* A label set maps to one group: work per set, not per sample. */
	for (uint32_t set = 0; set < p->nr_labelsets && rc == 0; set++) {
		struct group g = {.n = 0};
		size_t nl, k, renamed = 0;
		const struct label *l = profile_labels(p, set, &nl);

		for (size_t i = 0; i < nl && rc == 0; i++)
			if (l[i].str)
				rc = group_add(sv, p, &g, profile_str(p, l[i].key),
					       profile_str(p, l[i].str), &renamed, err);
		if (rc)
			break;
		labels_sort(g.labels, g.n);
		for (k = 0; k < gs->n && !group_same(&gs->v[k], &g); k++)
			;
		if (k == gs->n) {
			if (gs->n == GROUPS_MAX) {
				rc = error_set(
					err, ERR_LIMIT,
					"more than %d distinct sample label sets in one push",
					GROUPS_MAX);
				break;
			}
			struct group *v = alloc_array(gs->v, gs->n + 1, sizeof(*gs->v));

			if (!v) {
				rc = nomem(err, "sample label sets");
				break;
			}
			gs->v = v;
			gs->v[gs->n++] = g;
			gs->renamed += renamed;
		}
		set_group[set] = (uint32_t)k;
	}
	for (uint32_t i = 0; i < p->nr_samples && rc == 0; i++)
		gs->of[i] = set_group[p->samples[i].labels];
	free(set_group);
	return rc;
}

static void groups_release(struct groups *gs)
{
	free(gs->of);
	free(gs->v);
}

/* The deepest stack of P, in frames (a node's id is above its parent's); UINT32_MAX: no memory. */
static uint32_t max_depth(const struct profile *p)
{
	uint32_t *depth = alloc_array(NULL, (size_t)p->nr_nodes + 1, sizeof(*depth)), max = 0;

	if (!depth)
		return UINT32_MAX;
	depth[0] = 0;
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		depth[n] = depth[p->nodes[n].parent] + 1;
		if (depth[n] > max)
			max = depth[n];
	}
	free(depth);
	return max;
}

#define SESSION_LABEL "__session_id__"

/*
 * Pyroscope's service_name is the app: with one among LABELS[0..*N), the
 * series is its value's, the label goes and app_name keeps the push's
 * own app name when that differs (as Pyroscope's ingest adapter does;
 * not when the allow-list leaves app_name out).
 */
static int service_name_app(const struct service *sv, const struct ingest_req *req,
			    struct series_label *labels, size_t *n, const char **app,
			    struct error *err)
{
	size_t i;

	*app = req->app;
	for (i = 0; i < *n && strcmp(labels[i].key, LABEL_SERVICE); i++)
		;
	if (i == *n)
		return 0;
	*app = labels[i].value;
	if (!series_app_valid(*app, strlen(*app)))
		return error_set(err, ERR_FORMAT,
				 "label \"%s\" names the app: \"%.100s\" must be 1 to %d bytes "
				 "of [A-Za-z0-9._-]",
				 LABEL_SERVICE, *app, SERIES_APP_MAX);
	labels[i] = labels[--*n];
	if (strcmp(*app, req->app) && !labels_get_any(labels, *n, LABEL_APP_NAME) &&
	    label_allowed(sv, LABEL_APP_NAME))
		labels[(*n)++] = (struct series_label){LABEL_APP_NAME, req->app};
	return 0;
}

/*
 * Validate the push's labels and the group's and build the series of type
 * TYPE into S (labels in LABELS); KEY gets its key.  A label of the push
 * wins over a sample label of the same name.
 */
static int push_series(struct service *sv, const struct ingest_req *req, const char *type,
		       const struct group *g, struct series *s, struct series_label *labels,
		       char *key, size_t keysize, struct error *err)
{
	size_t n = 0, need;
	const char *app;

	for (size_t i = 0; i < req->nlabels; i++) {
		/*
		 * Pyroscope's clients tag every push with the process's session;
		 * as Pyroscope does by default, it is not a label (a series per
		 * process start would be).
		 */
		if (!strcmp(req->labels[i].key, SESSION_LABEL))
			continue;
		if (!label_allowed(sv, req->labels[i].key) &&
		    strcmp(req->labels[i].key, LABEL_SERVICE))
			return error_set(err, ERR_LIMIT, "label \"%s\" is not in the allow-list",
					 req->labels[i].key);
		if (n == LABELS_MAX)
			return error_set(err, ERR_LIMIT, "more than %d labels", LABELS_MAX);
		labels[n++] = req->labels[i];
	}
	for (size_t i = 0; i < g->n; i++) {
		if (labels_get_any(req->labels, req->nlabels, g->labels[i].key))
			continue;
		if (n == LABELS_MAX)
			return error_set(err, ERR_LIMIT,
					 "more than %d labels with the samples' own", LABELS_MAX);
		labels[n++] = g->labels[i];
	}
	if (service_name_app(sv, req, labels, &n, &app, err) < 0)
		return err->code;
	*s = (struct series){app, type, labels, n};
	if (series_validate(s, err) < 0)
		return err->code;
	need = series_key_format(s, key, keysize);
	if (need >= keysize)
		return error_set(err, ERR_LIMIT, "series key of %zu bytes is too long", need);
	return 0;
}

struct pending {
	struct store_row *rows; /* n, with keys */
	char **keys;
	size_t n;
	struct strbuf *blobs; /* nblobs: one per group */
	size_t nblobs;
};

/*
 * The rows of group G: one blob of the stored types (NT of them, P's
 * TYPES named NAMES), and a row per type with a value in the group, each
 * in its own series, sharing the blob.
 */
static int add_group(struct service *sv, const struct ingest_req *req, struct profile *p,
		     const uint32_t *types, const char *const *names, const bool *averages,
		     uint32_t nt, const struct groups *gs, uint32_t g, struct blob_tree **tree,
		     struct pending *pd, struct error *err)
{
	struct series_label labels[LABELS_MAX];
	uint32_t ids[VIEW_MAX_TYPES] = {0};
	struct type_view tv;
	struct strbuf *blob = &pd->blobs[pd->nblobs];
	int rc = 0;

	for (uint32_t k = 0; k < nt; k++)
		ids[k] = profile_intern_str(p, names[k]);
	if (profile_failed(p))
		return nomem(err, "a push's type names");
	if (view_init(&tv, p, types, ids, nt, gs->of, g, err) < 0)
		return err->code;
	if (tv.v.nr_samples == 0) { /* nothing in this group: no series */
		view_release(&tv);
		return 0;
	}
	strbuf_init_max(blob, SERVICE_BLOB_MAX);
	pd->nblobs++;
	/* The groups' views share the push's tree: encoded once (the same bytes). */
	if (!*tree)
		*tree = blob_tree_new(&tv.v);
	rc = !*tree ? nomem(err, "a push's call tree")
		    : blob_encode_tree(&tv.v, *tree, BLOB_LEVEL_DEFAULT, blob, err);
	for (uint32_t k = 0; k < nt && rc == 0; k++) {
		int64_t total = profile_total(&tv.v, k);
		struct series s;
		char key[8192];
		int64_t id;

		/* A type with no value in the group has no series here. */
		if (!tv.used[k])
			continue;
		rc = push_series(sv, req, names[k], &gs->v[g], &s, labels, key, sizeof(key), err);
		if (rc == 0)
			rc = series_id(sv, key, &s, averages[k], &id, err);
		if (rc < 0)
			break;
		pd->rows[pd->n] = (struct store_row){
			.series = id,
			.t0 = req->t0,
			.t1 = req->t1,
			.samples = 1,
			.total = total,
			.type = (int)k,
			.blob = blob->buf,
			.len = blob->len,
		};
		pd->keys[pd->n] = alloc_strdup(key);
		if (!pd->keys[pd->n]) {
			rc = nomem(err, "a push's series keys");
			break;
		}
		pd->n++;
	}
	view_release(&tv);
	return rc;
}

/* Commit the waiting batches (taken off the queue) in one transaction. */
static void commit_batches(struct service *sv, struct batch *list)
{
	struct error err = ERROR_INIT;
	struct store_row *all;
	size_t n = 0;
	int rc;

	for (struct batch *b = list; b; b = b->next)
		n += b->n;
	all = alloc_array(NULL, n + 1, sizeof(*all));
	n = 0;
	for (struct batch *b = list; all && b; b = b->next) {
		memcpy(all + n, b->rows, b->n * sizeof(*all));
		n += b->n;
	}
	rc = all ? sv->st->be->put(sv->st, all, n, &err) : nomem(&err, "a commit's rows");
	free(all);
	pthread_mutex_lock(&sv->qmu);
	for (struct batch *b = list, *next; b; b = next) {
		next = b->next;
		b->rc = rc;
		b->err = err;
		b->done = true; /* b belongs to its pusher again from here */
	}
	sv->committing = false;
	pthread_cond_broadcast(&sv->qcv);
	pthread_mutex_unlock(&sv->qmu);
}

/*
 * Group commit: a push joins the queue; whoever finds no transaction
 * running takes the whole queue into one.  Under load one commit carries
 * many pushes, and each push still returns only once its rows are durable.
 */
static int commit(struct service *sv, const struct store_row *rows, size_t n, struct error *err)
{
	struct batch b = {.rows = rows, .n = n};

	pthread_mutex_lock(&sv->qmu);
	b.next = sv->queue;
	sv->queue = &b;
	while (!b.done) {
		if (sv->committing) {
			pthread_cond_wait(&sv->qcv, &sv->qmu);
			continue;
		}
		struct batch *list = sv->queue;

		sv->queue = NULL;
		sv->committing = true;
		pthread_mutex_unlock(&sv->qmu);
		commit_batches(sv, list);
		pthread_mutex_lock(&sv->qmu);
	}
	pthread_mutex_unlock(&sv->qmu);
	if (b.rc < 0)
		*err = b.err;
	return b.rc;
}

/* After a commit: widen the spans of the series pushed to. */
static void note_spans(struct service *sv, const struct pending *pd)
{
	int64_t now = clock_ns(CLOCK_REALTIME);

	pthread_rwlock_wrlock(&sv->mu);
	for (size_t i = 0; i < pd->n; i++) {
		bool found;
		struct ix_series *e = &sv->v[ix_find(sv, pd->keys[i], &found)];

		if (!found)
			continue;
		if (!e->first_ns || pd->rows[i].t0 < e->first_ns)
			e->first_ns = pd->rows[i].t0;
		if (pd->rows[i].t1 > e->last_ns)
			e->last_ns = pd->rows[i].t1;
		if ((size_t)e->id < sv->nby_id) {
			sv->by_id[e->id].last_ns = e->last_ns;
			sv->by_id[e->id].pushed = now;
		}
	}
	pthread_rwlock_unlock(&sv->mu);
}

/*
 * Whether series type TYPE is averaged over time: AGG ("sum", "average")
 * when given, else Pyroscope's defaults (its gauges: in-use memory and
 * goroutines).
 */
static int aggregation(const char *type, const char *agg, bool *average, struct error *err)
{
	static const char *const gauges[] = {"inuse_objects", "inuse_space", "goroutine",
					     "goroutines", NULL};

	if (agg && *agg) {
		if (strcmp(agg, "sum") && strcmp(agg, "average"))
			return error_set(err, ERR_FORMAT,
					 "aggregationType \"%s\" is not sum or average", agg);
		*average = !strcmp(agg, "average");
		return 0;
	}
	*average = false;
	for (const char *const *g = gauges; *g; g++)
		*average |= !strcmp(type, *g);
	return 0;
}

/* service_ingest() once the push's label names are mapped (RENAMED of them). */
static int ingest_mapped(struct service *sv, const struct ingest_req *req, size_t renamed,
			 struct profile *p, struct error *err)
{
	struct pending pd = {0};
	struct blob_tree *tree = NULL;
	struct groups gs;
	size_t ntypes = req->type ? 1 : p->nr_types, bytes = 0, configured = 0;
	uint32_t types[VIEW_MAX_TYPES];
	const char *names[VIEW_MAX_TYPES];
	bool averages[VIEW_MAX_TYPES];
	uint32_t depth;
	size_t gs_renamed;
	int rc = 0;

	if (p->nr_types == 0 || ntypes == 0)
		return error_set(err, ERR_FORMAT, "the profile has no sample types");
	if (req->t1 < req->t0)
		return error_set(err, ERR_FORMAT, "until is before from");
	if (req->t0 < 0 || req->t1 > STORE_TIME_MAX)
		return error_set(err, ERR_FORMAT,
				 "%s is out of range (a push lies in 1970-01-01T00:00:00Z to "
				 "2262-01-01T00:00:00Z)",
				 req->t0 < 0 ? "from" : "until");
	if (p->nr_nodes > sv->cfg.max_nodes)
		return error_set(err, ERR_LIMIT,
				 "profile of %u call tree nodes is over the limit of %u",
				 p->nr_nodes, sv->cfg.max_nodes);
	depth = max_depth(p);
	if (depth == UINT32_MAX)
		return nomem(err, "stack depths");
	if (depth > sv->cfg.max_stack_depth)
		return error_set(err, ERR_LIMIT, "a stack of %u frames is over the limit of %u",
				 depth, sv->cfg.max_stack_depth);
	rc = groups_build(sv, p, &gs, err);
	if (rc < 0) {
		groups_release(&gs);
		return rc;
	}
	for (size_t i = 0; i < ntypes; i++) {
		uint32_t t = req->type ? p->default_type : (uint32_t)i;
		const char *type = req->type	? req->type
				   : req->names ? req->names[t]
						: profile_str(p, p->types[t].type);

		if (!type)
			continue;
		if (configured == VIEW_MAX_TYPES) {
			rc = error_set(err, ERR_LIMIT, "more than %d sample types", VIEW_MAX_TYPES);
			break;
		}
		rc = aggregation(type,
				 req->type	     ? req->aggregation
				 : req->aggregations ? req->aggregations[t]
						     : NULL,
				 &averages[configured], err);
		if (rc)
			break;
		types[configured] = t;
		names[configured++] = type;
	}
	pd.rows = calloc(configured * gs.n + 1, sizeof(*pd.rows));
	pd.keys = calloc(configured * gs.n + 1, sizeof(*pd.keys));
	pd.blobs = calloc(gs.n + 1, sizeof(*pd.blobs));
	if (rc == 0 && (!pd.rows || !pd.keys || !pd.blobs))
		rc = nomem(err, "a push's rows");
	for (uint32_t g = 0; configured && g < gs.n && rc == 0; g++)
		rc = add_group(sv, req, p, types, names, averages, (uint32_t)configured, &gs, g,
			       &tree, &pd, err);
	blob_tree_free(tree);
	gs_renamed = gs.renamed;
	groups_release(&gs);
	if (rc == 0 && configured == 0)
		rc = error_set(err, ERR_FORMAT, "none of the profile's sample types is configured");
	/* An idle interval: no sample, nothing to store, nothing to wait for. */
	if (rc == 0 && pd.n == 0)
		goto out;
	if (rc == 0)
		rc = commit(sv, pd.rows, pd.n, err);
	if (rc == ERR_NOSPACE) {
		/* The same message as the pushes refused after it. */
		degrade(sv, true);
		*err = (struct error)ERROR_INIT;
		rc = error_set(err, ERR_NOSPACE, "%s", SERVICE_DISK_FULL);
	}
	if (rc == 0) {
		note_spans(sv, &pd);
		for (size_t i = 0; i < pd.nblobs; i++)
			bytes += pd.blobs[i].len;
		pthread_mutex_lock(&sv->cmu);
		sv->c.ingested += pd.n;
		sv->c.ingest_bytes += bytes;
		sv->c.labels_renamed += renamed + gs_renamed;
		pthread_mutex_unlock(&sv->cmu);
	}
out:
	for (size_t i = 0; pd.keys && i < pd.n; i++)
		free(pd.keys[i]);
	for (size_t i = 0; pd.blobs && i < pd.nblobs; i++)
		strbuf_release(&pd.blobs[i]);
	free(pd.keys);
	free(pd.blobs);
	free(pd.rows);
	return rc;
}

/*
 * A stored value is a count, at least 0: a flame graph cannot draw less
 * (pprof allows negative values; folded refuses them already), and a push
 * with one would make every JSON query over its window fail.
 */
static int check_values(const struct profile *p, struct error *err)
{
	for (uint32_t s = 0; s < p->nr_samples; s++)
		for (uint32_t t = 0; t < p->nr_types; t++)
			if (profile_sample_values(p, s)[t] < 0)
				return error_set(err, ERR_FORMAT,
						 "body: a sample has a negative %s value (%" PRId64
						 "); plateau serve stores counts",
						 profile_str(p, p->types[t].type),
						 profile_sample_values(p, s)[t]);
	return 0;
}

int service_ingest(struct service *sv, const struct ingest_req *req, struct profile *p,
		   struct error *err)
{
	struct series_label labels[LABELS_MAX + 1];
	char names[LABELS_MAX + 1][LABEL_KEY_MAX + 1];
	struct ingest_req mapped = *req;
	size_t renamed = req->renamed;
	int rc;

	if (service_degraded(sv))
		return error_set(err, ERR_NOSPACE, "%s", SERVICE_DISK_FULL);
	/* One more than LABELS_MAX: the session label is not stored. */
	if (req->nlabels > LABELS_MAX + 1)
		return error_set(err, ERR_LIMIT, "more than %d labels", LABELS_MAX);
	if (req->nlabels)
		memcpy(labels, req->labels, req->nlabels * sizeof(*labels));
	mapped.labels = labels;
	rc = check_values(p, err);
	if (rc == 0)
		rc = labels_map(labels, &mapped.nlabels, names, &renamed, err);
	if (rc == 0)
		rc = ingest_mapped(sv, &mapped, renamed, p, err);
	return rc;
}

/* ---- queries ---- */

struct match {
	struct plan_series *ps;
	bool *average;
	size_t n;
};

/* Whether SEL (NULL: everything) selects series S. */
static bool selected(const struct selector *sel, const struct series *s)
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
	m->n = 0;
	if (type)
		types = calloc(sv->n + 1, sizeof(*types));
	if (!m->ps || !m->average || (type && !types)) {
		nomem(err, "the selected series");
		free(m->ps);
		free(m->average);
		m->ps = NULL;
		m->average = NULL;
		pthread_rwlock_unlock(&sv->mu);
		free(types);
		return;
	}
	for (size_t i = 0; i < sv->n; i++) {
		const struct ix_series *e = &sv->v[i];
		size_t t;

		if (!selected(sel, e->s))
			continue;
		m->average[m->n] = e->average;
		m->ps[m->n++] = (struct plan_series){e->id, e->first_ns, e->last_ns};
		for (t = 0; types && t < nt && strcmp(types[t], e->s->type); t++)
			;
		if (types && t == nt)
			types[nt++] = e->s->type;
	}
	if (type && one_type(types, nt, sel, type, err)) {
		free(m->ps);
		free(m->average);
		m->ps = NULL;
	}
	pthread_rwlock_unlock(&sv->mu);
	free(types);
}

struct merge_ctx {
	struct profile *dst;
	struct error *err;
	int64_t samples; /* pushes merged */
};

static int merge_row(const struct store_row *r, void *arg)
{
	struct merge_ctx *mc = arg;

	mc->samples += r->samples;
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
	struct merge_ctx mc = {NULL, err, 0};
	char type[SERIES_TYPE_MAX + 1];
	int rc = 0;

	*out = NULL;
	select_series(sv, sel, &m, type, err);
	if (!m.ps) /* several types and no APP.TYPE to pick one, or no memory */
		return err->code;
	mc.dst = profile_new();
	if (!mc.dst)
		rc = nomem(err, "a query's profile");
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct merge_ctx one = {NULL, err, 0};

		if (!m.average[i]) {
			rc = store_plan(sv->st, &m.ps[i], STORE_LEVELS - 1, from, until, merge_row,
					&mc, err);
			continue;
		}
		/* A gauge: the series' mean over its pushes in the window, then the sum. */
		one.dst = profile_new();
		if (!one.dst) {
			rc = nomem(err, "a query's profile");
			break;
		}
		rc = store_plan(sv->st, &m.ps[i], STORE_LEVELS - 1, from, until, merge_row, &one,
				err);
		if (rc == 0 && one.samples > 0)
			rc = add_mean(mc.dst, one.dst, one.samples, err);
		profile_free(one.dst);
	}
	*nseries = m.n;
	free(m.ps);
	free(m.average);
	if (rc != 0) {
		profile_free(mc.dst);
		return rc < 0 ? rc : ERR_IO;
	}
	if (mc.dst->nr_types == 0)
		profile_add_type(mc.dst, type, "count");
	if (profile_failed(mc.dst)) {
		profile_free(mc.dst);
		return nomem(err, "a query's profile");
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

/* Totals per step of series PS at LEVEL into TC. */
static int timeline_series(struct service *sv, const struct plan_series *ps, int level,
			   int64_t from, int64_t until, struct timeline_ctx *tc, struct error *err)
{
	/* Totals only: one scan per level-0 range, rollups when they tile the steps. */
	if (level == 0)
		return sv->st->be->scan_totals(sv->st, ps->id, 0, from, until, add_total, tc, err);
	return store_plan_totals(sv->st, ps, level, from, until, add_total, tc, err);
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
		return nomem(err, "a timeline");
	level = timeline_level(from, step);
	select_series(sv, sel, &m, NULL, err);
	if (!m.ps) {
		free(tc.values);
		return err->code;
	}
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct timeline_ctx one = tc;

		if (!m.average[i]) {
			rc = timeline_series(sv, &m.ps[i], level, from, until, &tc, err);
			continue;
		}
		/* A gauge: per step, the series' mean over its pushes in the step. */
		one.values = calloc(tc.n, sizeof(*one.values));
		one.pushes = calloc(tc.n, sizeof(*one.pushes));
		rc = !one.values || !one.pushes
			     ? nomem(err, "a timeline")
			     : timeline_series(sv, &m.ps[i], level, from, until, &one, err);
		for (size_t k = 0; k < tc.n && rc == 0; k++)
			if (one.pushes[k])
				tc.values[k] += (one.values[k] + one.pushes[k] / 2) / one.pushes[k];
		free(one.values);
		free(one.pushes);
	}
	free(m.ps);
	free(m.average);
	if (rc != 0) {
		free(tc.values);
		return rc < 0 ? rc : ERR_IO;
	}
	*values = tc.values;
	*n = tc.n;
	return 0;
}

/* ---- labels and series ---- */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sort, drop duplicates, write as a JSON array. */
static void json_set(const char **v, size_t n, struct strbuf *out)
{
	if (n)
		qsort(v, n, sizeof(*v), str_cmp);
	strbuf_addch(out, '[');
	for (size_t i = 0, w = 0; i < n; i++) {
		if (i && !strcmp(v[i], v[i - 1]))
			continue;
		if (w++)
			strbuf_addch(out, ',');
		strbuf_add_json(out, v[i], strlen(v[i]));
	}
	strbuf_addch(out, ']');
}

/* Add S's names (NAME NULL) or its values of NAME to *v; service_name is its app.  ERR_NOMEM. */
static int series_labels_into(const struct series *s, const char *name, const char ***v, size_t *n,
			      size_t *alloc)
{
	for (size_t j = 0; j <= s->nlabels; j++) {
		const char *key = j < s->nlabels ? s->labels[j].key : LABEL_SERVICE;
		const char *value = j < s->nlabels ? s->labels[j].value : s->app;

		if (name && strcmp(key, name))
			continue;
		if (ALLOC_TRY_GROW(*v, *n + 1, *alloc) < 0)
			return ERR_NOMEM;
		(*v)[(*n)++] = name ? value : key;
	}
	return 0;
}

/* OUT's sticky error (a checked buffer, service.h) as ERR. */
static int out_error(const struct strbuf *out, struct error *err)
{
	if (strbuf_error(out) == ERR_NOMEM)
		return nomem(err, "the answer");
	if (strbuf_error(out))
		return error_set(err, strbuf_error(out), "the answer is over %zu bytes",
				 out->max - 1);
	return 0;
}

static int label_list(struct service *sv, const char *name, const struct selector *sel,
		      struct strbuf *out, struct error *err)
{
	const char **v = NULL;
	size_t n = 0, alloc = 0;
	int rc = 0;

	pthread_rwlock_rdlock(&sv->mu);
	for (size_t i = 0; i < sv->n && rc == 0; i++)
		if (selected(sel, sv->v[i].s))
			rc = series_labels_into(sv->v[i].s, name, &v, &n, &alloc);
	if (rc == 0)
		json_set(v, n, out);
	pthread_rwlock_unlock(&sv->mu);
	free(v);
	return rc < 0 ? nomem(err, "label names") : out_error(out, err);
}

int service_label_names(struct service *sv, const struct selector *sel, struct strbuf *out,
			struct error *err)
{
	return label_list(sv, NULL, sel, out, err);
}

int service_label_values(struct service *sv, const char *name, const struct selector *sel,
			 struct strbuf *out, struct error *err)
{
	return label_list(sv, name, sel, out, err);
}

int service_series_json(struct service *sv, const struct selector *sel, struct strbuf *out,
			struct error *err)
{
	size_t w = 0;

	pthread_rwlock_rdlock(&sv->mu);
	strbuf_addch(out, '[');
	for (size_t i = 0; i < sv->n; i++) {
		const struct ix_series *e = &sv->v[i];

		if (!selected(sel, e->s))
			continue;
		strbuf_addstr(out, w++ ? ",{\"key\":" : "{\"key\":");
		strbuf_add_json(out, e->key, strlen(e->key));
		strbuf_addstr(out, ",\"app\":");
		strbuf_add_json(out, e->s->app, strlen(e->s->app));
		strbuf_addstr(out, ",\"type\":");
		strbuf_add_json(out, e->s->type, strlen(e->s->type));
		strbuf_addstr(out, ",\"labels\":{");
		for (size_t j = 0; j < e->s->nlabels; j++) {
			const struct series_label *l = &e->s->labels[j];

			if (j)
				strbuf_addch(out, ',');
			strbuf_add_json(out, l->key, strlen(l->key));
			strbuf_addch(out, ':');
			strbuf_add_json(out, l->value, strlen(l->value));
		}
		strbuf_addf(out, "},\"from\":%lld,\"until\":%lld}", (long long)e->first_ns,
			    (long long)e->last_ns);
	}
	strbuf_addch(out, ']');
	pthread_rwlock_unlock(&sv->mu);
	return out_error(out, err);
}

int service_check_labels(struct service *sv, struct strbuf *out, struct error *err)
{
	struct label_stat *st;
	size_t n;

	pthread_rwlock_rdlock(&sv->mu);
	n = label_stats(sv, NULL, &st);
	if (!st) {
		pthread_rwlock_unlock(&sv->mu);
		return nomem(err, "label statistics");
	}
	strbuf_addf(out, "%zu series", sv->n);
	if (sv->cfg.series_budget)
		strbuf_addf(out, " (budget %llu)", (unsigned long long)sv->cfg.series_budget);
	strbuf_addstr(out, "\nlabel\tvalues\tseries\n");
	for (size_t i = 0; i < n; i++)
		strbuf_addf(out, "%s\t%zu\t%zu\n", st[i].key, st[i].values, st[i].series);
	pthread_rwlock_unlock(&sv->mu);
	free(st);
	return out_error(out, err);
}

/* ---- background work ---- */

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
	if (ws->n < ws->max)
		ws->v[ws->n++] = (struct window){series, t0, gen, level};
	return 0;
}

static int roll_one(struct service *sv, const struct window *w, struct error *err)
{
	struct plan_series ps = {w->series, 0, 0};
	struct merge_ctx mc = {profile_new(), err, 0};
	struct store_row r = {.series = w->series,
			      .level = w->level,
			      .t0 = w->t0,
			      .t1 = w->t0 + store_level_ns[w->level]};
	struct strbuf blob;
	int rc;

	strbuf_init_max(&blob, SERVICE_BLOB_MAX);
	if (!mc.dst)
		return nomem(err, "a rollup");
	rc = store_plan(sv->st, &ps, w->level - 1, r.t0, r.t1, merge_row, &mc, err);
	if (rc == 0 && profile_failed(mc.dst))
		rc = nomem(err, "a rollup");
	r.samples = mc.samples;
	if (rc == 0 && mc.dst->nr_types && mc.dst->nr_samples) {
		rc = blob_encode(mc.dst, &blob, err);
		r.total = profile_total(mc.dst, 0);
		r.blob = blob.buf;
		r.len = blob.len;
	}
	if (rc == 0)
		rc = sv->st->be->put_rollup(sv->st, &r, w->gen, err);
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
	int64_t *seen; /* blob ids merged */
	size_t nseen, alloc;
	bool mixed; /* rows unlike a shared push: roll one by one */
	struct error *err;
};

static int merge_sibling_row(const struct store_row *r, void *arg)
{
	struct siblings_ctx *c = arg;
	struct error err = ERROR_INIT;

	if (c->sib->type >= 0 && c->sib->type != r->type) {
		c->mixed = true;
		return 1;
	}
	c->sib->type = r->type;
	c->sib->samples += r->samples;
	c->sib->blobs++;
	for (size_t i = 0; i < c->nseen; i++)
		if (c->seen[i] == r->blob_id)
			return 0;
	/* A blob the first sibling did not read: not one shared push (below). */
	if (c->sib != c->first) {
		c->mixed = true;
		return 1;
	}
	if (ALLOC_TRY_GROW(c->seen, c->nseen + 1, c->alloc) < 0)
		return nomem(c->err, "a rollup");
	c->seen[c->nseen++] = r->blob_id;
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
	return !strcmp(a->app, b->app) && labels_same(a->labels, a->nlabels, b->labels, b->nlabels);
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
		return nomem(err, "a rollup");
	for (size_t i = 0; i < n && rc == 0 && !c.mixed; i++) {
		struct plan_series ps = {sib[i].w->series, 0, 0};

		c.sib = &sib[i];
		rc = store_plan(sv->st, &ps, level - 1, t0, t1, merge_sibling_row, &c, err);
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
		rc = nomem(err, "a rollup");
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
	int rc;

	if (w->level < 2)
		return 0;
	rc = sv->st->be->stale_range(sv->st, w->series, w->level - 1, w->t0,
				     w->t0 + store_level_ns[w->level], count_stale, &c, err);
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
	const struct series *s = NULL;
	size_t n = 0, kept = 1;
	bool mixed = true;
	int rc = 0;

	pthread_rwlock_rdlock(&sv->mu);
	if ((size_t)ws->v[i].series < sv->nby_id)
		s = sv->by_id[ws->v[i].series].s;
	for (size_t j = i; s && j < ws->n && n < SIBLINGS_MAX; j++) {
		const struct window *w = &ws->v[j];
		const struct series *o =
			(size_t)w->series < sv->nby_id ? sv->by_id[w->series].s : NULL;

		if (!done[j] && w->level == ws->v[i].level && w->t0 == ws->v[i].t0 && o &&
		    same_set(s, o))
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
			count(sv, &sv->c.rollups_shared, n);
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
		count(sv, &sv->c.rollups_failed, 1);
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
		rc = nomem(err, "the rollup windows");
	/*
	 * Level by level, lower levels first: a window above builds on the
	 * fresh ones below, and one whose children are still stale waits.
	 */
	for (int level = 1; rc == 0 && level < STORE_LEVELS; level++) {
		ws.n = 0;
		memset(rolled, 0, max * sizeof(*rolled));
		/* Failed windows are listed too, and skipped: they take no room. */
		rc = sv->st->be->stale_each(sv->st, level, 4 * max + sv->nbad, due_window, &ws,
					    err);
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
		count(sv, &sv->c.rollups, (uint64_t)done);
	if (rc == ERR_NOSPACE)
		degrade(sv, true);
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
		count(sv, &sv->c.deleted, (uint64_t)*deleted);
	if (rc == ERR_NOSPACE)
		degrade(sv, true);
	return rc;
}
