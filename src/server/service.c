/* SPDX-License-Identifier: MIT */
/*
 * The server's work without HTTP (service.h, doc/plateau-serve.md): this
 * file holds the series index, open and close, counters and the
 * disk-full mode; ingest, queries, labels and rollups are in
 * service_ingest.c, service_query.c, service_labels.c and
 * service_rollup.c (what they share: service_int.h).
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

#include "server/service_int.h"
#include "util/alloc.h"
#include "util/clock.h"

/* An allocation failed: the request fails, the server goes on. */
int svc_nomem(struct error *err, const char *what)
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
		return svc_nomem(err, "series index");
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
size_t ix_find(const struct service *sv, const char *key, bool *found)
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
size_t ix_app_find(const struct service *sv, const char *app, bool *found)
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
	size_t at = ix_app_find(sv, app, &found);

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
uint64_t ix_app_series(const struct service *sv, const char *app)
{
	bool found;
	size_t at = ix_app_find(sv, app, &found);

	return found ? sv->apps[at].n : 0;
}

/* Where the fleet of APP and TYPE is or would go in sv->fleets (caller holds mu). */
static size_t fleet_find(const struct service *sv, const char *app, const char *type, bool *found)
{
	size_t lo = 0, hi = sv->nfleets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(app, sv->fleets[mid]->app);

		if (c == 0)
			c = strcmp(type, sv->fleets[mid]->type);
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

/* The fleet of APP and TYPE, added to the index when new (caller holds mu for writing). */
static struct ix_fleet *fleet_get(struct service *sv, const char *app, const char *type)
{
	bool found;
	size_t at = fleet_find(sv, app, type, &found);
	struct ix_fleet *f;

	if (found)
		return sv->fleets[at];
	f = calloc(1, sizeof(*f));
	if (!f || ALLOC_TRY_GROW(sv->fleets, sv->nfleets + 1, sv->alloc_fleets) < 0) {
		free(f);
		return NULL;
	}
	f->app = alloc_strdup(app);
	f->type = alloc_strdup(type);
	if (!f->app || !f->type) {
		free(f->app);
		free(f->type);
		free(f);
		return NULL;
	}
	memmove(&sv->fleets[at + 1], &sv->fleets[at], (sv->nfleets - at) * sizeof(*sv->fleets));
	sv->fleets[at] = f;
	sv->nfleets++;
	return f;
}

/* F's key in the store: FLEET_KEY_MARK app.type (NULL: no memory; freed by the caller). */
static char *fleet_key(const struct ix_fleet *f)
{
	size_t n = strlen(f->app) + strlen(f->type) + 3;
	char *key = malloc(n);

	if (key)
		snprintf(key, n, "%c%s.%s", FLEET_KEY_MARK, f->app, f->type);
	return key;
}

int ix_fleet_store(struct service *sv, struct ix_fleet *f, struct error *err)
{
	bool created;
	char *key;
	int rc;

	if (f->id || f->members < 2 || sv->cfg.no_fleet_rollups)
		return 0;
	key = fleet_key(f);
	if (!key)
		return svc_nomem(err, "a fleet's key");
	rc = sv->st->be->series_get(sv->st, key, f->app, f->type, false, &f->id, &created, err);
	free(key);
	if (rc == 0 && f->id > 0 && f->id < INT32_MAX &&
	    by_id_grow(sv, (size_t)f->id + 1, err) == 0)
		sv->by_id[f->id] = (struct ix_id){.fleet = f};
	else if (rc == 0)
		f->id = 0; /* no room to roll it up: not used */
	return rc;
}

size_t ix_fleet_members(const struct service *sv, const struct ix_fleet *f,
			struct plan_series **out)
{
	size_t plen = strlen(f->app) + strlen(f->type) + 2, n = 0, at;
	char *prefix = malloc(plen + 1);
	bool found;

	*out = prefix ? calloc(f->members + 1, sizeof(**out)) : NULL;
	if (!*out) {
		free(prefix);
		return 0;
	}
	/* Keys sort by app.type{: the members are one run of the index. */
	snprintf(prefix, plen + 1, "%s.%s{", f->app, f->type);
	at = ix_find(sv, prefix, &found);
	for (size_t i = at; i < sv->n && !strncmp(sv->v[i].key, prefix, plen); i++)
		if (sv->v[i].fleet == f && n < f->members)
			(*out)[n++] = (struct plan_series){sv->v[i].id, sv->v[i].first_ns,
							   sv->v[i].last_ns};
	free(prefix);
	return n;
}

/* Insert a series parsed from its key (caller holds mu for writing). */
int ix_insert(struct service *sv, int64_t id, bool average, const char *key, int64_t first,
	      int64_t last, struct error *err)
{
	struct ix_fleet *fleet = NULL;
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
		return svc_nomem(err, "series index");
	}
	if (!average && !(fleet = fleet_get(sv, s->app, s->type))) {
		free(copy);
		series_free(s);
		return svc_nomem(err, "series index");
	}
	memmove(&sv->v[at + 1], &sv->v[at], (sv->n - at) * sizeof(*sv->v));
	sv->v[at] = (struct ix_series){id, average, copy, s, first, last, fleet};
	sv->n++;
	if (fleet)
		fleet->members++;
	if (id > 0 && id < INT32_MAX)
		sv->by_id[id] = (struct ix_id){s, NULL, last, 0};
	return 0;
}

/* A fleet's own series, from the store (caller holds mu for writing). */
static int load_fleet(struct service *sv, const struct store_series *se, struct error *err)
{
	struct ix_fleet *f = fleet_get(sv, se->app, se->type);

	if (!f)
		return svc_nomem(err, "series index");
	f->id = se->id;
	if (se->id <= 0 || se->id >= INT32_MAX)
		f->id = 0;
	else if (by_id_grow(sv, (size_t)se->id + 1, err) < 0)
		return ERR_NOMEM;
	else
		sv->by_id[se->id] = (struct ix_id){.fleet = f};
	return 0;
}

/*
 * After the load: fleets of two members or more get their series (a store
 * written before fleet rollups; they cover the windows pushed from now
 * on), and every fleet the end of its members' latest push.
 */
static int fleets_ready(struct service *sv, struct error *err)
{
	int rc = 0;

	for (size_t i = 0; i < sv->nfleets && rc == 0; i++)
		rc = ix_fleet_store(sv, sv->fleets[i], err);
	for (size_t i = 0; i < sv->n && rc == 0; i++) {
		const struct ix_fleet *f = sv->v[i].fleet;

		if (f && f->id && sv->by_id[f->id].last_ns < sv->v[i].last_ns)
			sv->by_id[f->id].last_ns = sv->v[i].last_ns;
	}
	return rc;
}

static int load_series(const struct store_series *se, void *arg)
{
	struct service *sv = arg;
	struct error err = ERROR_INIT;

	if (se->key[0] == FLEET_KEY_MARK)
		return load_fleet(sv, se, &err);
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
		return svc_nomem(err, "service");
	sv->st = st;
	sv->cfg = *cfg;
	pthread_rwlock_init(&sv->mu, NULL);
	pthread_mutex_init(&sv->cmu, NULL);
	pthread_mutex_init(&sv->qmu, NULL);
	pthread_cond_init(&sv->qcv, NULL);
	pthread_cond_init(&sv->gcv, NULL);
	rc = st->be->series_each(st, load_series, sv, err);
	if (rc == ERR_NOMEM && !err->code)
		svc_nomem(err, "series index");
	if (rc == 0)
		rc = fleets_ready(sv, err);
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
	for (size_t i = 0; i < sv->nfleets; i++) {
		free(sv->fleets[i]->app);
		free(sv->fleets[i]->type);
		free(sv->fleets[i]);
	}
	free(sv->fleets);
	free(sv->by_id);
	free(sv->wide_key);
	free(sv->bad);
	free(sv->apps);
	pthread_rwlock_destroy(&sv->mu);
	pthread_mutex_destroy(&sv->cmu);
	pthread_mutex_destroy(&sv->qmu);
	pthread_cond_destroy(&sv->qcv);
	pthread_cond_destroy(&sv->gcv);
	free(sv);
}

void svc_count(struct service *sv, uint64_t *field, uint64_t n)
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

void svc_degrade(struct service *sv, bool on)
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
		svc_degrade(sv, false);
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
