/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's query routes (http_int.h, doc/plateau-serve.md): the
 * merged profile in every format (/api/v1/query, /render), the diff,
 * labels, series and the timeline, over the service's calls.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/diff.h"
#include "format/format.h"
#include "render/flamegraph.h"
#include "render/output.h"
#include "server/flamebearer.h"
#include "server/http_int.h"
#include "store/timeparse.h"

/*
 * What a writer to a stream writes, into a reply's buffer: the stream
 * writers of the formats (profile_write, flamegraph_html_write,
 * diff_write_json) through one memory stream.
 */
struct stream_job {
	const struct profile *p;
	enum profile_format f;	       /* stream_format */
	const struct flame_options *o; /* stream_viewer */
	struct profile *d;	       /* stream_diff (diff_write_json's is not const) */
	double alpha;
};
typedef int stream_fn(const struct stream_job *j, FILE *f, struct error *err);

static int stream_format(const struct stream_job *j, FILE *f, struct error *err)
{
	return profile_write(j->p, j->f, 0, f, err);
}

static int stream_viewer(const struct stream_job *j, FILE *f, struct error *err)
{
	return flamegraph_html_write(j->p, j->o, f, err);
}

static int stream_diff(const struct stream_job *j, FILE *f, struct error *err)
{
	return diff_write_json(j->d, j->alpha, f, err);
}

static int stream_into(stream_fn *write, const struct stream_job *j, struct strbuf *out,
		       struct error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return error_set(err, ERR_NOMEM, "out of memory");
	rc = write(j, mem, err);
	/* A memory stream fails for want of memory only. */
	if (fclose(mem) != 0 && rc == 0)
		rc = error_set(err, ERR_NOMEM, "out of memory writing the answer");
	if (rc == 0)
		strbuf_add(out, buf, len);
	free(buf);
	return rc;
}

/*
 * The HTML viewer's JSON (doc/viewer.md) for the web UI: P cut to
 * MAX_NODES (0: whole), what the cut folded into "other" said in it.
 */
static int render_viewer(const struct profile *p, uint64_t max_nodes, const char *name,
			 struct strbuf *out, struct error *err)
{
	struct truncate_stats st = {0};
	struct profile *cut = NULL;
	struct flame_options o;
	char why[48];
	int rc;

	flame_options_init(&o);
	o.title = name;
	o.data_only = true;
	if (max_nodes && p->nr_nodes > max_nodes + 1) {
		cut = profile_truncate_stats(p, 0, (uint32_t)max_nodes, &st, err);
		if (!cut)
			return err->code;
		snprintf(why, sizeof(why), "maxNodes=%" PRIu64, max_nodes);
		o.dropped = &st;
		o.dropped_why = why;
	}
	rc = stream_into(stream_viewer, &(struct stream_job){.p = cut ? cut : p, .o = &o}, out,
			 err);
	profile_free(cut);
	return rc;
}

/* Render P (one sample type) as FORMAT into OUT; *ctype the content type. */
static int render(const struct server *s, struct MHD_Connection *c, struct profile *p,
		  const char *format, const char *name, struct strbuf *out, const char **ctype,
		  struct error *err)
{
	uint64_t max_nodes;
	enum profile_format f;
	int rc;

	if (uint_arg(c, "maxNodes", s->cfg.max_nodes, UINT32_MAX, &max_nodes, err) < 0)
		return err->code;
	if (!format || !strcmp(format, "json")) {
		struct fb_options o = {.type = 0, .max_nodes = max_nodes, .name = name};

		*ctype = "application/json";
		return flamebearer_write(p, &o, out, err);
	}
	if (!strcmp(format, "viewer")) {
		*ctype = "application/json";
		return render_viewer(p, max_nodes, name, out, err);
	}
	f = format_from_name(format);
	if (f != FMT_PPROF && f != FMT_FOLDED && f != FMT_SVG && f != FMT_HTML)
		return error_set(
			err, ERR_FORMAT,
			"format: \"%.32s\" is not json, viewer, pprof, folded, svg or html",
			format);
	*ctype = f == FMT_PPROF	 ? "application/octet-stream"
		 : f == FMT_SVG	 ? "image/svg+xml"
		 : f == FMT_HTML ? "text/html; charset=utf-8"
				 : "text/plain; charset=utf-8";
	/* The other formats are cut the same way: kept nodes, the rest in "other". */
	if (max_nodes && p->nr_nodes > max_nodes + 1) {
		struct profile *cut = profile_truncate(p, 0, (uint32_t)max_nodes, err);

		if (!cut)
			return err->code;
		rc = stream_into(stream_format, &(struct stream_job){.p = cut, .f = f}, out, err);
		profile_free(cut);
		return rc;
	}
	return stream_into(stream_format, &(struct stream_job){.p = p, .f = f}, out, err);
}

/* The merged profile of the selector in parameter QNAME. */
static enum MHD_Result query_as(struct server *s, struct MHD_Connection *c, struct request *rq,
				const char *qname)
{
	struct error err = ERROR_INIT;
	struct selector *sel = NULL;
	struct profile *p = NULL;
	struct strbuf out = REPLY_INIT;
	const char *ctype = "application/json";
	int64_t from, until;
	size_t nseries;
	int rc;

	rc = selector_arg(c, qname, true, &sel, &err);
	if (rc == 0)
		request_app(rq, selector_app(sel), -1);
	if (rc == 0)
		rc = window_args(c, "from", "until", &from, &until, &err);
	if (rc == 0)
		rc = service_query(s->sv, sel, from, until, &p, &nseries, &err);
	if (rc == 0)
		rc = render(s, c, p, arg(c, "format"), arg(c, qname), &out, &ctype, &err);
	selector_free(sel);
	profile_free(p);
	note_latency(s, rq);
	if (rc < 0) {
		strbuf_release(&out);
		return reply_error(s, c, rq, status_of(rc), err.msg);
	}
	return reply(s, c, rq, MHD_HTTP_OK, ctype, &out);
}

enum MHD_Result on_query(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return query_as(s, c, rq, "query");
}

/* Pyroscope's /render: the selector in query=, or in name= without it. */
enum MHD_Result on_render(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return query_as(s, c, rq, arg(c, "query") ? "query" : "name");
}

/* One side of a diff, WHICH ("left", "right"), with its window. */
static int side(struct server *s, struct MHD_Connection *c, struct request *rq, const char *which,
		struct profile **out, struct error *err)
{
	char fname[32], uname[32];
	struct selector *sel = NULL;
	int64_t from, until;
	size_t n;
	int rc;

	snprintf(fname, sizeof(fname), "%sFrom", which);
	snprintf(uname, sizeof(uname), "%sUntil", which);
	rc = selector_arg(c, which, true, &sel, err);
	if (rc == 0 && !rq->app[0])
		request_app(rq, selector_app(sel), -1);
	if (rc == 0)
		rc = window_args(c, fname, uname, &from, &until, err);
	if (rc == 0)
		rc = service_query(s->sv, sel, from, until, out, &n, err);
	selector_free(sel);
	return rc;
}

/* Two selections: per-frame left and right with plateau diff's significance. */
enum MHD_Result on_diff(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct error err = ERROR_INIT;
	struct profile *left = NULL, *right = NULL, *d = NULL;
	struct diff_options o = {.alpha = 0.05};
	struct strbuf out = REPLY_INIT;
	const char *format = arg(c, "format");
	int rc;

	rc = side(s, c, rq, "left", &left, &err);
	if (rc == 0)
		rc = side(s, c, rq, "right", &right, &err);
	if (rc == 0 && format && !strcmp(format, "flamebearer")) {
		struct fb_options fo = {.type = 0};

		rc = flamebearer_write_diff(left, right, &fo, &out, &err);
	} else if (rc == 0 && format && !strcmp(format, "viewer")) {
		struct flame_options fo;

		flame_options_init(&fo);
		fo.base_name = arg(c, "left");
		fo.new_name = arg(c, "right");
		fo.data_only = true;
		fo.diff_significance = true;
		fo.diff_alpha = o.alpha;
		d = diff_build(left, right, &o, &err);
		rc = d ? stream_into(stream_viewer, &(struct stream_job){.p = d, .o = &fo}, &out,
				     &err)
		       : err.code;
	} else if (rc == 0 && format && strcmp(format, "json")) {
		rc = error_set(&err, ERR_FORMAT,
			       "format: \"%.32s\" is not json, viewer or flamebearer", format);
	} else if (rc == 0) {
		d = diff_build(left, right, &o, &err);
		rc = d ? stream_into(stream_diff, &(struct stream_job){.d = d, .alpha = o.alpha},
				     &out, &err)
		       : err.code;
	}
	profile_free(d);
	profile_free(left);
	profile_free(right);
	note_latency(s, rq);
	if (rc < 0) {
		strbuf_release(&out);
		return reply_error(s, c, rq, status_of(rc), err.msg);
	}
	return reply(s, c, rq, MHD_HTTP_OK, "application/json", &out);
}

/* Series (SERIES), values of label NAME, or label names, of the optional query=. */
static enum MHD_Result labels_as(struct server *s, struct MHD_Connection *c, struct request *rq,
				 bool series, const char *name)
{
	struct error err = ERROR_INIT;
	struct selector *sel = NULL;
	struct strbuf out = REPLY_INIT;
	int rc = selector_arg(c, "query", false, &sel, &err);

	if (rc == 0 && sel)
		request_app(rq, selector_app(sel), -1);
	if (rc == 0 && series)
		rc = service_series_json(s->sv, sel, &out, &err);
	else if (rc == 0 && name)
		rc = service_label_values(s->sv, name, sel, &out, &err);
	else if (rc == 0)
		rc = service_label_names(s->sv, sel, &out, &err);
	selector_free(sel);
	if (rc < 0) {
		strbuf_release(&out);
		return reply_error(s, c, rq, status_of(rc), err.msg);
	}
	strbuf_addch(&out, '\n');
	return reply(s, c, rq, MHD_HTTP_OK, "application/json", &out);
}

enum MHD_Result on_label_names(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return labels_as(s, c, rq, false, NULL);
}

/* The label's name is the route's wildcard (its first 255 bytes). */
enum MHD_Result on_label_values(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	char name[256];

	snprintf(name, sizeof(name), "%.*s", (int)rq->partlen, rq->part);
	return labels_as(s, c, rq, false, name);
}

enum MHD_Result on_series(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return labels_as(s, c, rq, true, NULL);
}

enum MHD_Result on_timeline(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct error err = ERROR_INIT, e = ERROR_INIT;
	struct selector *sel = NULL;
	struct strbuf out = REPLY_INIT;
	const char *step_s = arg(c, "step");
	int64_t from, until, step = 10 * NSEC, *values = NULL;
	size_t n = 0;
	int rc;

	rc = selector_arg(c, "query", true, &sel, &err);
	if (rc == 0)
		request_app(rq, selector_app(sel), -1);
	if (rc == 0)
		rc = window_args(c, "from", "until", &from, &until, &err);
	if (rc == 0 && step_s && duration_parse(step_s, &step, &e) < 0)
		rc = error_set(&err, ERR_FORMAT, "step: %s", e.msg);
	if (rc == 0)
		rc = service_timeline(s->sv, sel, from, until, step, &values, &n, &err);
	if (rc == 0) {
		strbuf_addf(&out, "{\"from\":%lld,\"step\":%lld,\"values\":[", (long long)from,
			    (long long)step);
		for (size_t i = 0; i < n; i++)
			strbuf_addf(&out, "%s%lld", i ? "," : "", (long long)values[i]);
		strbuf_addstr(&out, "]}\n");
	}
	free(values);
	selector_free(sel);
	note_latency(s, rq);
	if (rc < 0) {
		strbuf_release(&out);
		return reply_error(s, c, rq, status_of(rc), err.msg);
	}
	return reply(s, c, rq, MHD_HTTP_OK, "application/json", &out);
}
