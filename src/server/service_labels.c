/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's label and series listings (service.h
 * service_label_names ... service_check_labels): JSON answers built from
 * the index alone, no store reads.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_int.h"
#include "util/alloc.h"

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
		return svc_nomem(err, "the answer");
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
		if (svc_selected(sel, sv->v[i].s))
			rc = series_labels_into(sv->v[i].s, name, &v, &n, &alloc);
	if (rc == 0)
		json_set(v, n, out);
	pthread_rwlock_unlock(&sv->mu);
	free(v);
	return rc < 0 ? svc_nomem(err, "label names") : out_error(out, err);
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

		if (!svc_selected(sel, e->s))
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
	n = ix_label_stats(sv, NULL, &st);
	if (!st) {
		pthread_rwlock_unlock(&sv->mu);
		return svc_nomem(err, "label statistics");
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
