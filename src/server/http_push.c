/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's push routes (http_int.h, doc/plateau-serve.md):
 * Pyroscope's /ingest (folded, lines, pprof, multipart) and plateau's
 * /api/v1/profiles, parsed into service_ingest() calls.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "format/format.h"
#include "format/input.h"
#include "format/pprof.h"
#include "server/http_int.h"
#include "server/ingest_form.h"
#include "store/ingest_name.h"
#include "util/clock.h"

#define PUSH_LABELS_MAX 32

static int read_body(const struct server *s, const char *name, const void *data, size_t len,
		     enum profile_format want, struct profile **out, struct error *err)
{
	struct input in;
	struct read_options o = {.bounded_sum =
					 true}; /* any merge of pushes saturates, never wraps */
	int rc = input_from_buf_budget(&in, name, data, len, s->cfg.max_inflated, s->inflate, err);

	if (rc < 0)
		return rc;
	if (want == FMT_UNKNOWN)
		want = format_detect(in.data, in.len);
	if (want == FMT_PPROF)
		rc = pprof_read(&in, &o, out, err);
	else if (want == FMT_FOLDED)
		rc = folded_read(&in, &o, out, err);
	else
		rc = error_set(err, ERR_UNSUPPORTED, "%s: not pprof or folded stacks", name);
	input_close(&in);
	return rc;
}

/*
 * A multipart push: the "profile" part (pprof), and with a
 * "sample_type_config" the types it names, each under its display name
 * (Pyroscope's clients send it; types it leaves out are not stored).
 * NAMES gets one entry per sample type, owned by P's strings, and AGGS
 * its aggregation ("sum", "average" or NULL for the type's default).
 */
static int multipart_profile(const struct server *s, struct MHD_Connection *c,
			     const struct strbuf *body, struct profile **out, const char ***names,
			     const char ***aggs, struct error *err)
{
	const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	struct ingest_form *f = calloc(1, sizeof(*f));
	int rc;

	*names = NULL;
	*aggs = NULL;
	if (!f)
		return error_set(err, ERR_NOMEM, "multipart: out of memory");
	rc = ingest_form_parse(ctype, body->buf ? body->buf : "", body->len, f, err);
	if (rc == 0 && !f->profile.data)
		rc = error_set(err, ERR_FORMAT, "multipart: no \"profile\" part");
	if (rc == 0)
		rc = read_body(s, "profile", f->profile.data, f->profile.len, FMT_PPROF, out, err);
	if (rc == 0 && f->has_config) {
		struct profile *p = *out;

		*names = calloc(p->nr_types + 1, sizeof(**names));
		*aggs = calloc(p->nr_types + 1, sizeof(**aggs));
		if (!*names || !*aggs)
			rc = error_set(err, ERR_NOMEM, "multipart: out of memory");
		for (uint32_t t = 0; rc == 0 && t < p->nr_types; t++) {
			const struct stc_entry *e = sample_type_config_find(
				&f->config, profile_str(p, p->types[t].type));

			if (!e)
				continue;
			(*names)[t] = profile_str(p, profile_intern_str(p, e->display_name[0]
										   ? e->display_name
										   : e->type));
			if (e->aggregation[0])
				(*aggs)[t] = profile_str(p, profile_intern_str(p, e->aggregation));
		}
		if (rc == 0 && profile_failed(p))
			rc = error_set(err, ERR_NOMEM, "multipart: out of memory");
	}
	free(f);
	return rc;
}

static bool is_multipart(struct MHD_Connection *c)
{
	const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");

	return t && !strncasecmp(t, "multipart/form-data", 19);
}

static int push_window(struct MHD_Connection *c, int64_t *t0, int64_t *t1, struct error *err)
{
	int64_t now = clock_ns(CLOCK_REALTIME);

	if (time_arg(c, "from", now - 10 * NSEC, t0, err) < 0 ||
	    time_arg(c, "until", now, t1, err) < 0)
		return err->code;
	if (*t1 < *t0)
		return error_set(err, ERR_FORMAT, "until is before from");
	return 0;
}

/* Pyroscope's "lines": one stack per line, each seen once. */
static void lines_to_folded(const struct strbuf *body, struct strbuf *out)
{
	const char *p = body->buf ? body->buf : "", *end = p + body->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		size_t n = (size_t)(e - p);

		if (n && p[n - 1] == '\r')
			n--;
		if (n) {
			strbuf_add(out, p, n);
			strbuf_addstr(out, " 1\n");
		}
		p = nl ? nl + 1 : end;
	}
}

/*
 * Pyroscope's units= for a folded or lines push: samples and objects are
 * counts, bytes are bytes; others as given ([a-z_], at most 32).
 */
static int set_units(struct profile *p, const char *units, struct error *err)
{
	size_t n;

	if (!units || !*units || !strcmp(units, "samples") || !strcmp(units, "objects"))
		return 0;
	n = strspn(units, "abcdefghijklmnopqrstuvwxyz_");
	if (units[n] || n > 32)
		return error_set(err, ERR_FORMAT, "units: \"%.32s\" is not a unit name ([a-z_])",
				 units);
	p->types[p->default_type].unit = profile_intern_str(p, units);
	return 0;
}

/* Pyroscope's legacy push: name=app.type{k=v}, format, from, until. */
enum MHD_Result on_ingest(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *name = arg(c, "name"), *format = arg(c, "format");
	struct error err = ERROR_INIT;
	struct series *se = NULL;
	struct profile *p = NULL;
	struct ingest_req req;
	enum profile_format f = FMT_FOLDED;
	const char **names = NULL, **aggs = NULL;
	const char *agg = arg(c, "aggregationType");
	size_t renamed = 0;
	int rc;

	if (!name)
		return push_error(s, c, rq,
				  &(struct error){ERR_FORMAT, "name: missing (app.cpu{k=v})"});
	service_push_reading(s->sv, true);
	rc = ingest_name_parse(name, &se, &renamed, &err);
	if (rc == 0)
		request_app(rq, se->app, -1);
	if (rc == 0)
		rc = push_window(c, &req.t0, &req.t1, &err);
	if (rc == 0 && format && strcmp(format, "folded") && strcmp(format, "pprof") &&
	    strcmp(format, "lines"))
		rc = error_set(&err, ERR_UNSUPPORTED,
			       "format: \"%.32s\" is not supported (folded, lines or pprof)",
			       format);
	if (rc == 0 && (is_multipart(c) || (format && !strcmp(format, "pprof"))))
		f = FMT_PPROF;
	if (rc == 0 && is_multipart(c)) {
		rc = multipart_profile(s, c, &rq->body, &p, &names, &aggs, &err);
	} else if (rc == 0 && format && !strcmp(format, "lines")) {
		struct strbuf folded;

		strbuf_init_max(&folded, s->cfg.max_inflated + 1);
		lines_to_folded(&rq->body, &folded);
		if (strbuf_error(&folded) == ERR_NOMEM)
			rc = error_set(&err, ERR_NOMEM, "lines: out of memory");
		else if (strbuf_error(&folded))
			rc = error_set(&err, ERR_LIMIT,
				       "lines: more than %zu bytes as folded stacks (max-inflated)",
				       s->cfg.max_inflated);
		else
			rc = read_body(s, "body", folded.buf ? folded.buf : "", folded.len,
				       FMT_FOLDED, &p, &err);
		strbuf_release(&folded);
	} else if (rc == 0) {
		rc = read_body(s, "body", rq->body.buf ? rq->body.buf : "", rq->body.len, f, &p,
			       &err);
	}
	if (rc == 0 && f != FMT_PPROF)
		rc = set_units(p, arg(c, "units"), &err);
	if (rc == 0 && profile_failed(p))
		rc = error_set(&err, ERR_NOMEM, "units: out of memory");
	service_push_reading(s->sv, false);
	if (rc == 0) {
		req = (struct ingest_req){se->app,     f == FMT_PPROF ? NULL : se->type,
					  names,       se->labels,
					  se->nlabels, req.t0,
					  req.t1};
		if (!req.type && f != FMT_PPROF)
			req.type = INGEST_DEFAULT_TYPE;
		/* aggregationType: the push's type, or every type of a pprof push without a config. */
		req.aggregation = agg;
		if (!aggs && agg && !req.type) {
			aggs = calloc(p->nr_types + 1, sizeof(*aggs));
			for (uint32_t t = 0; aggs && t < p->nr_types; t++)
				aggs[t] = agg;
		}
		req.aggregations = aggs;
		req.renamed = renamed;
		rc = !aggs && agg && !req.type ? error_set(&err, ERR_NOMEM, "out of memory")
					       : service_ingest(s->sv, &req, p, &err);
	}
	free(names);
	free(aggs);
	profile_free(p);
	series_free(se);
	if (rc < 0)
		return push_error(s, c, rq, &err);
	return reply_text(s, c, rq, MHD_HTTP_OK, "application/json", "{}\n");
}

struct label_args {
	struct series_label v[PUSH_LABELS_MAX + 1];
	size_t n;
	bool too_many;
};

static enum MHD_Result collect_label(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct label_args *la = cls;

	(void)kind;
	if (!strcmp(key, "app") || !strcmp(key, "from") || !strcmp(key, "until") ||
	    !strcmp(key, "format"))
		return MHD_YES;
	if (la->n == PUSH_LABELS_MAX) {
		la->too_many = true;
		return MHD_NO;
	}
	la->v[la->n++] = (struct series_label){key, value ? value : ""};
	return MHD_YES;
}

/* plateau's push: a pprof body, app and labels as query parameters, every sample type. */
enum MHD_Result on_profiles(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *app = arg(c, "app");
	struct error err = ERROR_INIT;
	struct label_args la = {0};
	struct profile *p = NULL;
	struct ingest_req req = {0};
	int rc = 0;

	service_push_reading(s->sv, true);
	if (!app || !*app)
		rc = error_set(&err, ERR_FORMAT, "app: missing");
	request_app(rq, app, -1);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_label, &la);
	if (rc == 0 && la.too_many)
		rc = error_set(&err, ERR_LIMIT, "more than %d labels", PUSH_LABELS_MAX);
	if (rc == 0)
		rc = push_window(c, &req.t0, &req.t1, &err);
	if (rc == 0)
		rc = read_body(s, "body", rq->body.buf ? rq->body.buf : "", rq->body.len, FMT_PPROF,
			       &p, &err);
	service_push_reading(s->sv, false);
	if (rc == 0) {
		req.app = app;
		req.labels = la.v;
		req.nlabels = la.n;
		rc = service_ingest(s->sv, &req, p, &err);
	}
	profile_free(p);
	if (rc < 0)
		return push_error(s, c, rq, &err);
	return reply_text(s, c, rq, MHD_HTTP_OK, "application/json", "{}\n");
}
