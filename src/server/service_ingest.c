/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's ingest (service.h service_ingest, doc/plateau-serve.md
 * "Pushing"): a push's labels checked against the allow-list and the
 * series budgets, its sample types and sample-label sets split into
 * series, found or added in the index, encoded and committed in groups.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_int.h"
#include "store/blob.h"
#include "util/alloc.h"
#include "util/clock.h"

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
/*
 * Every label key of the index (of APP's series; NULL: all), sorted, with
 * its counts (caller holds mu and frees *out): one sort of all (key,
 * value) pairs.  A series has a key at most once, so the pairs of a key
 * are its series.  *out is NULL when memory ran out.
 */
size_t ix_label_stats(const struct service *sv, const char *app, struct label_stat **out)
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
	n = ix_label_stats(sv, app, &st);
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
		sv->cfg.series_budget_app && ix_app_series(sv, s->app) >= sv->cfg.series_budget_app;

	if (per_app) {
		bool found;

		app = sv->apps[ix_app_find(sv, s->app, &found)].app;
		budget = sv->cfg.series_budget_app;
		n = ix_app_series(sv, app);
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
	       (!sv->cfg.series_budget_app || ix_app_series(sv, app) < sv->cfg.series_budget_app);
}

/* The fleet series of index entry E, 0: none (caller holds mu). */
static int64_t fleet_of(const struct ix_series *e)
{
	return e->fleet ? e->fleet->id : 0;
}

/* The id of series KEY, created within the budget, and its fleet's series (0: none). */
static int series_id(struct service *sv, const char *key, const struct series *s, bool average,
		     int64_t *id, int64_t *fleet, struct error *err)
{
	bool found, created;
	size_t at;
	int rc = 0;

	pthread_rwlock_rdlock(&sv->mu);
	at = ix_find(sv, key, &found);
	if (found) {
		*id = sv->v[at].id;
		*fleet = fleet_of(&sv->v[at]);
	}
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
			svc_count(sv, &sv->c.series, 1);
		at = ix_find(sv, key, &found);
		/* Its second member: the fleet gets its series. */
		if (rc == 0 && found && sv->v[at].fleet)
			rc = ix_fleet_store(sv, sv->v[at].fleet, err);
	}
	*fleet = rc == 0 && found ? fleet_of(&sv->v[at]) : 0;
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
		return svc_nomem(err, "a push's samples");
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

bool svc_labels_same(const struct series_label *a, size_t na, const struct series_label *b,
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
	return svc_labels_same(a->labels, a->n, b->labels, b->n);
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
		rc = svc_nomem(err, "sample label sets");
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
				rc = svc_nomem(err, "sample label sets");
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
		return svc_nomem(err, "a push's type names");
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
	rc = !*tree ? svc_nomem(err, "a push's call tree")
		    : blob_encode_tree(&tv.v, *tree, BLOB_LEVEL_DEFAULT, blob, err);
	for (uint32_t k = 0; k < nt && rc == 0; k++) {
		int64_t total = profile_total(&tv.v, k);
		struct series s;
		char key[8192];
		int64_t id, fleet = 0;

		/* A type with no value in the group has no series here. */
		if (!tv.used[k])
			continue;
		rc = push_series(sv, req, names[k], &gs->v[g], &s, labels, key, sizeof(key), err);
		if (rc == 0)
			rc = series_id(sv, key, &s, averages[k], &id, &fleet, err);
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
			.fleet = fleet,
		};
		pd->keys[pd->n] = alloc_strdup(key);
		if (!pd->keys[pd->n]) {
			rc = svc_nomem(err, "a push's series keys");
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
	rc = all ? sv->st->be->put(sv->st, all, n, &err) : svc_nomem(&err, "a commit's rows");
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
 * How long a push about to commit waits for the pushes still being read
 * or encoded to join its transaction.  A commit's cost is mostly per
 * transaction (BEGIN, the B-tree leaves it dirties, written whole to the
 * WAL and again at the checkpoint, COMMIT): at 4 connections a commit
 * carried 1.17 pushes without the wait, 2.2 with it, and a push wrote
 * 75 KB instead of 85 (bench/README.md, issue 16).
 */
#define GATHER_NS 1000000

/*
 * One push fewer on its way to the queue: when it was the last, the
 * pushes waiting to commit go on (LOCKED: qmu held).  The counters are
 * atomic so that a push's way costs no lock; a waiter counts itself in
 * gathering before it looks at on_way, and this looks at gathering after
 * its decrement, so one of the two sees the other's change.
 */
static void on_way_done(struct service *sv, bool locked)
{
	if (atomic_fetch_sub(&sv->on_way, 1) != 1 || !atomic_load(&sv->gathering))
		return;
	if (!locked)
		pthread_mutex_lock(&sv->qmu);
	pthread_cond_broadcast(&sv->gcv);
	if (!locked)
		pthread_mutex_unlock(&sv->qmu);
}

void service_push_reading(struct service *sv, bool reading)
{
	if (reading)
		atomic_fetch_add(&sv->on_way, 1);
	else
		on_way_done(sv, false);
}

/*
 * Group commit: a push joins the queue; whoever finds no transaction
 * running takes the whole queue into one, once the pushes being read or
 * encoded have joined (or GATHER_NS has passed).  Under load one commit carries
 * many pushes, and each push still returns only once its rows are
 * durable.
 */
static int commit(struct service *sv, const struct store_row *rows, size_t n, bool *pushing,
		  struct error *err)
{
	struct batch b = {.rows = rows, .n = n};
	struct timespec until = {0};
	bool gathered = false;

	pthread_mutex_lock(&sv->qmu);
	b.next = sv->queue;
	sv->queue = &b;
	if (*pushing) {
		*pushing = false;
		on_way_done(sv, true);
	}
	while (!b.done) {
		if (sv->committing) {
			pthread_cond_wait(&sv->qcv, &sv->qmu);
			continue;
		}
		if (!gathered && atomic_load(&sv->on_way)) {
			if (!until.tv_sec) {
				int64_t t = clock_ns(CLOCK_REALTIME) + GATHER_NS;

				until = (struct timespec){t / 1000000000, t % 1000000000};
			}
			atomic_fetch_add(&sv->gathering, 1);
			if (atomic_load(&sv->on_way))
				gathered = pthread_cond_timedwait(&sv->gcv, &sv->qmu, &until) != 0;
			atomic_fetch_sub(&sv->gathering, 1);
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
		/* The fleet has moved on when any member has. */
		if (e->fleet && e->fleet->id && (size_t)e->fleet->id < sv->nby_id) {
			struct ix_id *f = &sv->by_id[e->fleet->id];

			if (f->last_ns < e->last_ns)
				f->last_ns = e->last_ns;
			f->pushed = now;
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

/*
 * service_ingest() once the push's label names are mapped (RENAMED of
 * them); *PUSHING as commit() takes it.
 */
static int ingest_mapped(struct service *sv, const struct ingest_req *req, size_t renamed,
			 struct profile *p, bool *pushing, struct error *err)
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
		return svc_nomem(err, "stack depths");
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
		rc = svc_nomem(err, "a push's rows");
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
		rc = commit(sv, pd.rows, pd.n, pushing, err);
	if (rc == ERR_NOSPACE) {
		/* The same message as the pushes refused after it. */
		svc_degrade(sv, true);
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
	if (rc == 0) {
		bool pushing = true;

		atomic_fetch_add(&sv->on_way, 1);
		rc = ingest_mapped(sv, &mapped, renamed, p, &pushing, err);
		if (pushing) /* it did not reach the commit */
			on_way_done(sv, false);
	}
	return rc;
}
