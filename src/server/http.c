/* SPDX-License-Identifier: MIT */
/*
 * plateau serve over HTTP: libmicrohttpd, routes, tokens, caps and
 * metrics (server.h, doc/plateau-serve.md).
 *
 * Connections: one libmicrohttpd thread holds every connection in epoll,
 * so a slow or idle client costs a socket, not a thread.  A request's
 * handler, which may wait on the store for a second, runs on a pool of
 * worker threads while its connection is suspended; the answer goes back
 * to the event loop, which sends it.  A connection must send a request's
 * headers within header-timeout (deadline.c cuts it otherwise), and a
 * request takes one of max-concurrent slots only once its body is
 * complete; /healthz takes none and is answered by the event loop.
 *
 * A request is refused as soon as it can be (a bad token, a Content-Length
 * over the cap) but its body is still read and thrown away, up to
 * DISCARD_MAX, before the answer goes: a client that is still sending
 * would otherwise see a reset instead of its 4xx.  Every error is a
 * one-line JSON object {"error": "..."} with a 4xx or 5xx status.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lib/diff.h"
#include "lib/format.h"
#include "lib/input.h"
#include "lib/output.h"
#include "lib/pprof.h"
#include "server/deadline.h"
#include "server/flamebearer.h"
#include "server/ingest_form.h"
#include "server/multipart.h"
#include "server/server.h"
#include "server/workpool.h"
#include "store/ingest_name.h"
#include "store/timeparse.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/common.h"

#define NSEC		 INT64_C(1000000000)
#define PUSH_LABELS_MAX	 32
#define BODY_RESERVE_MAX ((size_t)4 << 20)  /* bytes a body's first chunk reserves at most */
#define DISCARD_MAX	 ((size_t)64 << 20) /* body bytes of a refused request read and dropped */
#define IDLE_TIMEOUT	 60u		    /* seconds a connection may stay silent */
#define FD_RESERVE	 64		    /* descriptors kept for the store, logs, epoll */
#define DEADLINE_PERIOD	 (NSEC / 4)	    /* how often late connections are looked for */
#define LOG_PER_MINUTE	 20		    /* libmicrohttpd messages shown a minute */
#define REPLY_MAX	 ((size_t)1 << 30)  /* bytes of an answer (a checked buffer's cap) */
#define ERROR_REPLY_MAX	 4096		    /* bytes of an error's JSON */
/* An answer's buffer: checked, with REPLY_MAX as its cap (strbuf.h). */
#define REPLY_INIT STRBUF_INIT_MAX(REPLY_MAX)
/* The answer when even the answer cannot be allocated: static, no allocation of ours. */
#define NOMEM_REPLY "{\"error\":\"out of memory: try again later\"}\n"

enum route {
	R_HEALTH,
	R_METRICS,
	R_INGEST,
	R_PROFILES,
	R_QUERY,
	R_RENDER,
	R_DIFF,
	R_LABELS,
	R_LABEL_VALUES,
	R_SERIES,
	R_TIMELINE,
	R_NOT_FOUND,
	R_COUNT
};

static const char *const route_names[R_COUNT] = {
	"healthz", "metrics", "ingest", "profiles", "query",	"render",
	"diff",	   "labels",  "values", "series",   "timeline", "other",
};

/* Why pushes were refused, for /metrics. */
enum reject {
	REJ_AUTH,
	REJ_BODY,
	REJ_INFLATED,
	REJ_FORMAT,
	REJ_LIMIT,
	REJ_BUSY,
	REJ_SPACE,
	REJ_COUNT
};

static const char *const reject_names[REJ_COUNT] = {"auth",  "body_size", "inflated_size", "format",
						    "limit", "busy",	  "disk_full"};

/* Query latency buckets (seconds), Prometheus histogram. */
static const double latency_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NLAT (sizeof(latency_le) / sizeof(latency_le[0]))

struct server {
	struct MHD_Daemon *d;
	struct server_config cfg; /* tokens and labels borrowed from the caller's */
	struct service *sv;
	struct workpool *pool;	/* runs the handlers */
	struct deadlines *dl;	/* header deadlines of the connections */
	atomic_uint inflight;	/* requests past their body, not yet answered */
	atomic_size_t body_mem; /* bytes held by request bodies */
	size_t body_budget;	/* at most; max_concurrent x max_body */
	struct budget *inflate; /* every request's inflated body: inflate_budget */
	struct budget inflate_budget;
	pthread_mutex_t mu;	       /* metrics */
	uint64_t requests[R_COUNT][6]; /* by status class 1xx..5xx; [0] unused */
	uint64_t rejected[REJ_COUNT];
	uint64_t body_bytes;
	uint64_t lat_count, lat_bucket[NLAT];
	double lat_sum;
	pthread_mutex_t log_mu; /* the log's rate */
	int64_t log_minute;	/* start of the minute counted */
	unsigned log_shown, log_dropped;
};

/*
 * One request.  The event loop owns it, except while its handler runs on
 * the pool (the connection suspended): then the worker does, until it
 * resumes the connection.
 */
struct request {
	struct work work; /* first: the handler's turn on the pool */
	struct server *s;
	struct MHD_Connection *c;
	const char *method, *url; /* libmicrohttpd's, valid for the request */
	struct strbuf body;
	size_t expect;		   /* Content-Length, at most max_body; 0 when not given */
	size_t held;		   /* bytes of s->body_mem the body holds */
	size_t discarded;	   /* body bytes dropped after a refusal */
	struct MHD_Response *resp; /* the answer, queued by the event loop */
	unsigned status;
	bool counted, replied, handled;
	int64_t start_ns;
	enum route route;
};

/* ---- replies ---- */

static unsigned status_of(int code)
{
	switch (code) {
	case ERR_FORMAT: return MHD_HTTP_BAD_REQUEST;
	case ERR_USAGE: return MHD_HTTP_BAD_REQUEST;
	case ERR_LIMIT: return MHD_HTTP_UNPROCESSABLE_CONTENT;
	case ERR_UNSUPPORTED: return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
	case ERR_NOMEM: return MHD_HTTP_SERVICE_UNAVAILABLE;
	case ERR_NOSPACE: return MHD_HTTP_INSUFFICIENT_STORAGE;
	default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static void count_request(struct server *s, struct request *rq, unsigned status)
{
	pthread_mutex_lock(&s->mu);
	if (status / 100 >= 1 && status / 100 <= 5)
		s->requests[rq->route][status / 100]++;
	pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result reply_error(struct server *s, struct MHD_Connection *c, struct request *rq,
				   unsigned status, const char *msg);

/* Keep R (NULL: no answer, the connection closes) as RQ's answer with STATUS. */
static enum MHD_Result keep_reply(struct server *s, struct request *rq, unsigned status,
				  const char *ctype, struct MHD_Response *r)
{
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer, Basic realm=\"plateau\"");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, "Retry-After", "1");
	if (rq->resp)
		MHD_destroy_response(rq->resp);
	rq->resp = r;
	rq->status = status;
	rq->replied = true;
	count_request(s, rq, status);
	return MHD_YES;
}

/* The answer when memory ran out: a 503 from static memory. */
static enum MHD_Result reply_nomem(struct server *s, struct request *rq)
{
	return keep_reply(s, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
			  MHD_create_response_from_buffer(strlen(NOMEM_REPLY), (void *)NOMEM_REPLY,
							  MHD_RESPMEM_PERSISTENT));
}

/*
 * Reply BODY (taken).  A checked BODY that ran out of memory becomes a
 * 503 with a static message, one over its cap a 422.
 */
static enum MHD_Result reply(struct server *s, struct MHD_Connection *c, struct request *rq,
			     unsigned status, const char *ctype, struct strbuf *body)
{
	size_t len = body->len, max = body->max;
	int failed = strbuf_error(body);
	char *buf = failed ? NULL : strbuf_detach(body, NULL);
	struct MHD_Response *r;

	if (failed == ERR_LIMIT && status != MHD_HTTP_UNPROCESSABLE_CONTENT) {
		char msg[128];

		strbuf_release(body);
		snprintf(msg, sizeof(msg), "the answer is over %zu bytes: narrow the query",
			 max - 1);
		return reply_error(s, c, rq, MHD_HTTP_UNPROCESSABLE_CONTENT, msg);
	}
	if (!buf) {
		strbuf_release(body);
		return reply_nomem(s, rq);
	}
	r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r)
		free(buf);
	/* Kept for the event loop to queue (queue_reply): C may be suspended. */
	(void)c;
	return keep_reply(s, rq, status, ctype, r);
}

static enum MHD_Result reply_text(struct server *s, struct MHD_Connection *c, struct request *rq,
				  unsigned status, const char *ctype, const char *text)
{
	struct strbuf sb;

	strbuf_init_max(&sb, ERROR_REPLY_MAX);
	strbuf_addstr(&sb, text);
	return reply(s, c, rq, status, ctype, &sb);
}

static enum MHD_Result reply_error(struct server *s, struct MHD_Connection *c, struct request *rq,
				   unsigned status, const char *msg)
{
	struct strbuf sb;

	strbuf_init_max(&sb, ERROR_REPLY_MAX);
	strbuf_addstr(&sb, "{\"error\":");
	strbuf_add_json_safe(&sb, msg, strlen(msg));
	strbuf_addstr(&sb, "}\n");
	return reply(s, c, rq, status, "application/json", &sb);
}

static void reject(struct server *s, enum reject why)
{
	pthread_mutex_lock(&s->mu);
	s->rejected[why]++;
	pthread_mutex_unlock(&s->mu);
}

/* An error from a push: counted by reason, then replied. */
static enum MHD_Result push_error(struct server *s, struct MHD_Connection *c, struct request *rq,
				  const struct error *err)
{
	unsigned status = status_of(err->code);

	if (err->code == ERR_LIMIT && strstr(err->msg, INPUT_BUDGET_MSG))
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
	else if (err->code == ERR_LIMIT && strstr(err->msg, "inflate"))
		status = MHD_HTTP_CONTENT_TOO_LARGE;
	/* No memory is the server's trouble, not the push's: counted as a 5xx only. */
	if (err->code != ERR_NOMEM)
		reject(s, status == MHD_HTTP_CONTENT_TOO_LARGE	   ? REJ_INFLATED
			  : status == MHD_HTTP_SERVICE_UNAVAILABLE ? REJ_BUSY
			  : err->code == ERR_LIMIT		   ? REJ_LIMIT
			  : err->code == ERR_NOSPACE		   ? REJ_SPACE
								   : REJ_FORMAT);
	return reply_error(s, c, rq, status, err->msg);
}

/* ---- parameters ---- */

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* A time parameter, DEFAULT when absent; the message names the parameter. */
static int time_arg(struct MHD_Connection *c, const char *name, int64_t def, int64_t *out,
		    struct error *err)
{
	const char *v = arg(c, name);
	struct error e = ERROR_INIT;

	*out = def;
	if (!v || !*v)
		return 0;
	if (time_parse(v, clock_ns(CLOCK_REALTIME), out, &e) < 0)
		return error_set(err, ERR_FORMAT, "%s: %s", name, e.msg);
	return 0;
}

/* FROM and UNTIL (default: the last hour) under the parameter names given. */
static int window_args(struct MHD_Connection *c, const char *fname, const char *uname,
		       int64_t *from, int64_t *until, struct error *err)
{
	int64_t now = clock_ns(CLOCK_REALTIME);

	if (time_arg(c, fname, now - 3600 * NSEC, from, err) < 0 ||
	    time_arg(c, uname, now, until, err) < 0)
		return err->code;
	if (*until <= *from)
		return error_set(err, ERR_FORMAT, "%s is not after %s", uname, fname);
	return 0;
}

static int selector_arg(struct MHD_Connection *c, const char *name, bool required,
			struct selector **out, struct error *err)
{
	const char *v = arg(c, name);
	struct error e = ERROR_INIT;

	*out = NULL;
	if (!v || !*v)
		return required ? error_set(err, ERR_FORMAT,
					    "%s: missing (a selector such as "
					    "app.cpu{region=\"eu\"})",
					    name)
				: 0;
	if (selector_parse(v, out, &e) < 0)
		return error_set(err, e.code, "%s: %s", name, e.msg);
	return 0;
}

static int uint_arg(struct MHD_Connection *c, const char *name, uint64_t def, uint64_t max,
		    uint64_t *out, struct error *err)
{
	const char *v = arg(c, name);
	char *end;

	*out = def;
	if (!v || !*v)
		return 0;
	*out = strtoull(v, &end, 10);
	if (*end || v[0] == '-' || *out > max)
		return error_set(err, ERR_FORMAT, "%s: \"%.64s\" is not a whole number up to %llu",
				 name, v, (unsigned long long)max);
	return 0;
}

/* ---- auth ---- */

static bool authorized(const struct server *s, struct MHD_Connection *c, unsigned scope)
{
	return server_auth_allows(
		&s->cfg,
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
		scope);
}

/* ---- push ---- */

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
static enum MHD_Result on_ingest(struct server *s, struct MHD_Connection *c, struct request *rq)
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
	rc = ingest_name_parse(name, &se, &renamed, &err);
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
static enum MHD_Result on_profiles(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *app = arg(c, "app");
	struct error err = ERROR_INIT;
	struct label_args la = {0};
	struct profile *p = NULL;
	struct ingest_req req = {0};
	int rc = 0;

	if (!app || !*app)
		rc = error_set(&err, ERR_FORMAT, "app: missing");
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_label, &la);
	if (rc == 0 && la.too_many)
		rc = error_set(&err, ERR_LIMIT, "more than %d labels", PUSH_LABELS_MAX);
	if (rc == 0)
		rc = push_window(c, &req.t0, &req.t1, &err);
	if (rc == 0)
		rc = read_body(s, "body", rq->body.buf ? rq->body.buf : "", rq->body.len, FMT_PPROF,
			       &p, &err);
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

/* ---- queries ---- */

static void note_latency(struct server *s, struct request *rq)
{
	double sec = (double)(clock_ns(CLOCK_MONOTONIC) - rq->start_ns) / 1e9;

	pthread_mutex_lock(&s->mu);
	s->lat_count++;
	s->lat_sum += sec;
	for (size_t i = 0; i < NLAT; i++)
		if (sec <= latency_le[i])
			s->lat_bucket[i]++;
	pthread_mutex_unlock(&s->mu);
}

static int render_cut(const struct profile *p, enum profile_format f, struct strbuf *out,
		      struct error *err);

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
	f = format_from_name(format);
	if (f != FMT_PPROF && f != FMT_FOLDED && f != FMT_SVG && f != FMT_HTML)
		return error_set(err, ERR_FORMAT,
				 "format: \"%.32s\" is not json, pprof, folded, svg or html",
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
		rc = render_cut(cut, f, out, err);
		profile_free(cut);
		return rc;
	}
	return render_cut(p, f, out, err);
}

/* Write P in format F (not json) into OUT. */
static int render_cut(const struct profile *p, enum profile_format f, struct strbuf *out,
		      struct error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return error_set(err, ERR_NOMEM, "out of memory");
	rc = profile_write(p, f, 0, mem, err);
	/* A memory stream fails for want of memory only. */
	if (fclose(mem) != 0 && rc == 0)
		rc = error_set(err, ERR_NOMEM, "out of memory writing the answer");
	if (rc == 0)
		strbuf_add(out, buf, len);
	free(buf);
	return rc;
}

static enum MHD_Result on_query(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *qname = rq->route == R_RENDER && !arg(c, "query") ? "name" : "query";
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

static int side(struct server *s, struct MHD_Connection *c, const char *which, struct profile **out,
		struct error *err)
{
	char fname[32], uname[32];
	struct selector *sel = NULL;
	int64_t from, until;
	size_t n;
	int rc;

	snprintf(fname, sizeof(fname), "%sFrom", which);
	snprintf(uname, sizeof(uname), "%sUntil", which);
	rc = selector_arg(c, which, true, &sel, err);
	if (rc == 0)
		rc = window_args(c, fname, uname, &from, &until, err);
	if (rc == 0)
		rc = service_query(s->sv, sel, from, until, out, &n, err);
	selector_free(sel);
	return rc;
}

/* Two selections: per-frame left and right with plateau diff's significance. */
static enum MHD_Result on_diff(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct error err = ERROR_INIT;
	struct profile *left = NULL, *right = NULL, *d = NULL;
	struct diff_options o = {.alpha = 0.05};
	struct strbuf out = REPLY_INIT;
	const char *format = arg(c, "format");
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = side(s, c, "left", &left, &err);
	if (rc == 0)
		rc = side(s, c, "right", &right, &err);
	if (rc == 0 && format && !strcmp(format, "flamebearer")) {
		struct fb_options fo = {.type = 0};

		rc = flamebearer_write_diff(left, right, &fo, &out, &err);
	} else if (rc == 0) {
		FILE *mem = open_memstream(&buf, &len);

		d = mem ? diff_build(left, right, &o, &err) : NULL;
		rc = !mem ? error_set(&err, ERR_NOMEM, "out of memory") : !d ? err.code : 0;
		if (rc == 0)
			rc = diff_write_json(d, o.alpha, mem, &err);
		/* A memory stream fails for want of memory only. */
		if (mem && fclose(mem) != 0 && rc == 0)
			rc = error_set(&err, ERR_NOMEM, "out of memory writing the answer");
		if (rc == 0)
			strbuf_add(&out, buf, len);
		free(buf);
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

static enum MHD_Result on_labels(struct server *s, struct MHD_Connection *c, struct request *rq,
				 const char *name)
{
	struct error err = ERROR_INIT;
	struct selector *sel = NULL;
	struct strbuf out = REPLY_INIT;
	int rc = selector_arg(c, "query", false, &sel, &err);

	if (rc == 0 && rq->route == R_SERIES)
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

static enum MHD_Result on_timeline(struct server *s, struct MHD_Connection *c, struct request *rq)
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

/* ---- health and metrics ---- */

/* Alive: "ok", or that the store is read-only for a full disk (still 200). */
static enum MHD_Result on_health(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return reply_text(s, c, rq, MHD_HTTP_OK, "text/plain",
			  service_degraded(s->sv) ? "degraded: read-only (disk full)\n" : "ok\n");
}

/* The connections' gauges and the header deadlines enforced. */
static void metrics_connections(struct server *s, struct strbuf *out)
{
	const union MHD_DaemonInfo *i =
		MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	strbuf_addf(out,
		    "# HELP plateau_http_connections Connections open.\n"
		    "# TYPE plateau_http_connections gauge\n"
		    "plateau_http_connections %u\n"
		    "# HELP plateau_http_connections_max Connections open at most "
		    "(max-connections, fitted to the open-file limit).\n"
		    "# TYPE plateau_http_connections_max gauge\n"
		    "plateau_http_connections_max %u\n"
		    "# HELP plateau_http_header_timeouts_total Connections cut for not sending "
		    "a request's headers (or a refused body) within header-timeout.\n"
		    "# TYPE plateau_http_header_timeouts_total counter\n"
		    "plateau_http_header_timeouts_total %llu\n",
		    i ? i->num_connections : 0, s->cfg.max_connections,
		    (unsigned long long)deadlines_cut(s->dl));
}

/* At most this many apps in /metrics (the help text says it too). */
#define METRICS_APPS_MAX 1000

static void add_app_series(const char *app, uint64_t series, void *arg)
{
	/* App names are [A-Za-z0-9._-]: nothing to escape in a label value. */
	strbuf_addf(arg, "plateau_app_series{app=\"%s\"} %llu\n", app, (unsigned long long)series);
}

/* Series per app, the METRICS_APPS_MAX largest, and how many apps in all. */
static void metrics_app_series(struct server *s, struct strbuf *out)
{
	size_t n;

	strbuf_addstr(out, "# HELP plateau_app_series Series of each app (the 1,000 with the "
			   "most).\n"
			   "# TYPE plateau_app_series gauge\n");
	n = service_app_series(s->sv, METRICS_APPS_MAX, add_app_series, out);
	strbuf_addf(out,
		    "# HELP plateau_apps Apps with series in the store.\n"
		    "# TYPE plateau_apps gauge\n"
		    "plateau_apps %zu\n",
		    n);
}

static enum MHD_Result on_metrics(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct strbuf out = REPLY_INIT;
	struct service_counters sc;
	struct store_stats st = {0};
	struct error err = ERROR_INIT;

	service_counters(s->sv, &sc);
	service_store_counts(s->sv, &st, &err);
	pthread_mutex_lock(&s->mu);
	strbuf_addstr(
		&out,
		"# HELP plateau_http_requests_total HTTP requests by route and status class.\n"
		"# TYPE plateau_http_requests_total counter\n");
	for (int r = 0; r < R_COUNT; r++)
		for (int k = 1; k <= 5; k++)
			if (s->requests[r][k])
				strbuf_addf(&out,
					    "plateau_http_requests_total{route=\"%s\",code=\"%"
					    "dxx\"} %llu\n",
					    route_names[r], k,
					    (unsigned long long)s->requests[r][k]);
	strbuf_addstr(&out, "# HELP plateau_pushes_rejected_total Pushes refused, by reason.\n"
			    "# TYPE plateau_pushes_rejected_total counter\n");
	for (int i = 0; i < REJ_COUNT; i++)
		strbuf_addf(&out, "plateau_pushes_rejected_total{reason=\"%s\"} %llu\n",
			    reject_names[i], (unsigned long long)s->rejected[i]);
	strbuf_addf(
		&out,
		"# HELP plateau_ingest_body_bytes_total Bytes of push bodies received.\n"
		"# TYPE plateau_ingest_body_bytes_total counter\n"
		"plateau_ingest_body_bytes_total %llu\n"
		"# HELP plateau_ingest_profiles_total Profiles stored (one per series a push "
		"fed).\n"
		"# TYPE plateau_ingest_profiles_total counter\n"
		"plateau_ingest_profiles_total %llu\n"
		"# HELP plateau_ingest_blob_bytes_total Bytes of stored profile blobs.\n"
		"# TYPE plateau_ingest_blob_bytes_total counter\n"
		"plateau_ingest_blob_bytes_total %llu\n"
		"# HELP plateau_ingest_labels_renamed_total Label names of stored pushes mapped "
		"as Pyroscope maps them ('.' to '_').\n"
		"# TYPE plateau_ingest_labels_renamed_total counter\n"
		"plateau_ingest_labels_renamed_total %llu\n"
		"# HELP plateau_series Series in the store.\n"
		"# TYPE plateau_series gauge\n"
		"plateau_series %llu\n"
		"# HELP plateau_store_bytes Bytes of the store on disk.\n"
		"# TYPE plateau_store_bytes gauge\n"
		"plateau_store_bytes %lld\n"
		"# HELP plateau_store_rows Stored profiles, rollups included.\n"
		"# TYPE plateau_store_rows gauge\n"
		"plateau_store_rows %lld\n"
		"# HELP plateau_rollups_pending Rollup windows waiting to be written.\n"
		"# TYPE plateau_rollups_pending gauge\n"
		"plateau_rollups_pending %lld\n"
		"# HELP plateau_rollups_total Rollup windows written.\n"
		"# TYPE plateau_rollups_total counter\n"
		"plateau_rollups_total %llu\n"
		"# HELP plateau_rollups_shared_total Rollup windows written with their sample-type "
		"siblings (their pushes merged once).\n"
		"# TYPE plateau_rollups_shared_total counter\n"
		"plateau_rollups_shared_total %llu\n"
		"# HELP plateau_retention_deleted_total Rows deleted by retention.\n"
		"# TYPE plateau_retention_deleted_total counter\n"
		"plateau_retention_deleted_total %llu\n"
		"# HELP plateau_store_degraded 1 while the store is read-only for a full disk "
		"(pushes get 507).\n"
		"# TYPE plateau_store_degraded gauge\n"
		"plateau_store_degraded %d\n"
		"# HELP plateau_query_duration_seconds Query latency.\n"
		"# TYPE plateau_query_duration_seconds histogram\n",
		(unsigned long long)s->body_bytes, (unsigned long long)sc.ingested,
		(unsigned long long)sc.ingest_bytes, (unsigned long long)sc.labels_renamed,
		(unsigned long long)sc.series, (long long)st.bytes_disk, (long long)st.rows,
		(long long)st.stale, (unsigned long long)sc.rollups,
		(unsigned long long)sc.rollups_shared, (unsigned long long)sc.deleted,
		service_degraded(s->sv));
	strbuf_addf(&out,
		    "# HELP plateau_rollups_failed_total Rollup windows whose data could not be "
		    "rolled up, skipped until a push changes them.\n"
		    "# TYPE plateau_rollups_failed_total counter\n"
		    "plateau_rollups_failed_total %llu\n",
		    (unsigned long long)sc.rollups_failed);
	for (size_t i = 0; i < NLAT; i++)
		strbuf_addf(&out, "plateau_query_duration_seconds_bucket{le=\"%g\"} %llu\n",
			    latency_le[i], (unsigned long long)s->lat_bucket[i]);
	strbuf_addf(&out,
		    "plateau_query_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		    "plateau_query_duration_seconds_sum %.6f\n"
		    "plateau_query_duration_seconds_count %llu\n",
		    (unsigned long long)s->lat_count, s->lat_sum, (unsigned long long)s->lat_count);
	pthread_mutex_unlock(&s->mu);
	metrics_connections(s, &out);
	metrics_app_series(s, &out);
	return reply(s, c, rq, MHD_HTTP_OK, "text/plain; version=0.0.4", &out);
}

/* ---- routing ---- */

static enum route route_of(const char *method, const char *url, const char **label)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"),
	     post = !strcmp(method, "POST");
	static const char values_prefix[] = "/api/v1/labels/";

	*label = NULL;
	if (get && !strcmp(url, "/healthz"))
		return R_HEALTH;
	if (get && !strcmp(url, "/metrics"))
		return R_METRICS;
	if (post && !strcmp(url, "/ingest"))
		return R_INGEST;
	if (post && !strcmp(url, "/api/v1/profiles"))
		return R_PROFILES;
	if (get && !strcmp(url, "/api/v1/query"))
		return R_QUERY;
	if (get && !strcmp(url, "/render"))
		return R_RENDER;
	if (get && !strcmp(url, "/api/v1/diff"))
		return R_DIFF;
	if (get && !strcmp(url, "/api/v1/labels"))
		return R_LABELS;
	if (get && !strcmp(url, "/api/v1/series"))
		return R_SERIES;
	if (get && !strcmp(url, "/api/v1/timeline"))
		return R_TIMELINE;
	if (get && !strncmp(url, values_prefix, sizeof(values_prefix) - 1)) {
		const char *name = url + sizeof(values_prefix) - 1;
		size_t len = strlen(name);

		if (len > 7 && !strcmp(name + len - 7, "/values")) {
			*label = name;
			return R_LABEL_VALUES;
		}
	}
	return R_NOT_FOUND;
}

static bool writes(enum route r)
{
	return r == R_INGEST || r == R_PROFILES;
}

/* The deadline libmicrohttpd's connection C carries (deadline.c), or NULL. */
static struct deadline *conn_deadline(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/*
 * Refuse RQ with STATUS: the answer waits until the body has been read
 * and dropped, which must happen within header-timeout.
 */
static void refuse(struct server *s, struct MHD_Connection *c, struct request *rq, unsigned status,
		   const char *msg)
{
	reply_error(s, c, rq, status, msg);
	rq->replied = true; /* even without an answer (no memory): then closed */
	deadline_set(conn_deadline(c), clock_ns(CLOCK_MONOTONIC) + s->cfg.header_timeout_ns);
}

/* Refuse RQ for want of memory: the static 503 (no allocation of ours), as refuse(). */
static void refuse_nomem(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	reply_nomem(s, rq);
	rq->replied = true;
	deadline_set(conn_deadline(c), clock_ns(CLOCK_MONOTONIC) + s->cfg.header_timeout_ns);
}

/*
 * Whether a refusal goes out before the body: when the client waits for
 * "100 Continue" (it sends nothing more and reads the answer), or the
 * body announced is more than we would read to drop it.
 */
static bool answer_before_body(struct MHD_Connection *c, unsigned long long expect)
{
	const char *e = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);

	return (e && !strcasecmp(e, "100-continue")) || expect > DISCARD_MAX;
}

/* The first call for a request: refuse it before its body when we can. */
static void on_headers(struct server *s, struct MHD_Connection *c, struct request *rq,
		       const char *method, const char *url, unsigned long long *expect)
{
	const char *label, *cl;

	rq->route = route_of(method, url, &label);
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	*expect = cl ? strtoull(cl, NULL, 10) : 0;
	if (rq->route != R_HEALTH &&
	    !authorized(s, c, writes(rq->route) ? SCOPE_WRITE : SCOPE_READ)) {
		if (writes(rq->route))
			reject(s, REJ_AUTH);
		refuse(s, c, rq, MHD_HTTP_UNAUTHORIZED,
		       "missing or invalid API token (Authorization: Bearer TOKEN)");
		return;
	}
	if (*expect > s->cfg.max_body) {
		reject(s, REJ_BODY);
		refuse(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, "request body over max-body");
		return;
	}
	rq->expect = (size_t)*expect;
}

static enum MHD_Result dispatch(struct server *s, struct MHD_Connection *c, struct request *rq,
				const char *method, const char *url)
{
	const char *label;
	char name[256];

	switch (route_of(method, url, &label)) {
	case R_HEALTH: return on_health(s, c, rq);
	case R_METRICS: return on_metrics(s, c, rq);
	case R_INGEST: return on_ingest(s, c, rq);
	case R_PROFILES: return on_profiles(s, c, rq);
	case R_QUERY:
	case R_RENDER: return on_query(s, c, rq);
	case R_DIFF: return on_diff(s, c, rq);
	case R_LABELS:
	case R_SERIES: return on_labels(s, c, rq, NULL);
	case R_LABEL_VALUES:
		snprintf(name, sizeof(name), "%.*s", (int)(strlen(label) - 7), label);
		return on_labels(s, c, rq, name);
	case R_TIMELINE: return on_timeline(s, c, rq);
	default: return reply_error(s, c, rq, MHD_HTTP_NOT_FOUND, "no such endpoint or method");
	}
}

/* Queue the answer RQ holds (from the event loop's thread only). */
static enum MHD_Result queue_reply(struct MHD_Connection *c, struct request *rq)
{
	enum MHD_Result ok;

	if (!rq->resp)
		return MHD_NO; /* no answer could be made: close */
	ok = MHD_queue_response(c, rq->status, rq->resp);
	MHD_destroy_response(rq->resp);
	rq->resp = NULL;
	return ok;
}

/* Give back the memory of RQ's body. */
static void body_drop(struct server *s, struct request *rq)
{
	strbuf_release(&rq->body);
	atomic_fetch_sub(&s->body_mem, rq->held);
	rq->held = 0;
}

/*
 * Append N bytes to RQ's body (its length plus N is at most max_body)
 * within the servers's body budget.  Returns 0, ERR_LIMIT over the
 * budget, or ERR_NOMEM (the body's sticky error): nothing appended.
 */
static int body_append(struct server *s, struct request *rq, const char *data, size_t n)
{
	size_t want = rq->body.len + n + 1, grow, extra, had = rq->body.alloc;

	if (want > rq->body.alloc) {
		/* One allocation for the body, not a doubling per few chunks (a
		 * claimed length past BODY_RESERVE_MAX is not taken on trust). */
		grow = rq->body.alloc ? rq->body.alloc + rq->body.alloc / 2
				      : MIN(rq->expect, BODY_RESERVE_MAX) + 1;
		grow = MAX(MIN(grow, s->cfg.max_body + 1), want);
		extra = grow - rq->body.alloc;
		if (extra > s->body_budget ||
		    atomic_fetch_add(&s->body_mem, extra) > s->body_budget - extra) {
			atomic_fetch_sub(&s->body_mem, extra);
			return ERR_LIMIT;
		}
		/* The checked buffer (cap max_body + 1) grows to GROW, or to its
		 * 16-byte minimum: the budget holds what it took. */
		if (strbuf_grow(&rq->body, grow - 1 - rq->body.len) < 0) {
			atomic_fetch_sub(&s->body_mem, extra);
			return strbuf_error(&rq->body);
		}
		if (rq->body.alloc - had != extra)
			atomic_fetch_add(&s->body_mem, rq->body.alloc - had - extra);
		rq->held += rq->body.alloc - had;
	}
	strbuf_add(&rq->body, data, n);
	return 0;
}

/* A piece of RQ's body: kept, or dropped after a refusal (MHD_NO past DISCARD_MAX: close). */
static enum MHD_Result on_upload(struct server *s, struct MHD_Connection *c, struct request *rq,
				 const char *data, size_t n)
{
	int rc;

	if (rq->replied) {
		rq->discarded += n;
		return rq->discarded <= DISCARD_MAX ? MHD_YES : MHD_NO;
	}
	if (n > s->cfg.max_body - rq->body.len) {
		reject(s, REJ_BODY);
		refuse(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, "request body over max-body");
	} else if ((rc = body_append(s, rq, data, n)) == ERR_NOMEM) {
		refuse_nomem(s, c, rq); /* the server's trouble, not the push's: a 5xx only */
	} else if (rc < 0) {
		if (writes(rq->route))
			reject(s, REJ_BUSY);
		refuse(s, c, rq, MHD_HTTP_TOO_MANY_REQUESTS,
		       "request bodies being received are over the server's memory budget; "
		       "retry later");
	} else {
		return MHD_YES;
	}
	rq->discarded = n;
	body_drop(s, rq);
	return MHD_YES;
}

/* A worker's turn: run the handler, then hand the answer to the event loop. */
static void run_request(struct work *w)
{
	struct request *rq = (struct request *)w;
	struct server *s = rq->s;

	dispatch(s, rq->c, rq, rq->method, rq->url);
	body_drop(s, rq);
	atomic_fetch_sub(&s->inflight, 1);
	rq->counted = false;
	rq->handled = true;
	MHD_resume_connection(rq->c); /* the event loop calls on_request again */
}

/*
 * RQ's body is complete: /healthz is answered here; anything else takes a
 * slot (or gets 429) and goes to a worker, its connection suspended.
 */
static enum MHD_Result on_body_done(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	pthread_mutex_lock(&s->mu);
	s->body_bytes += rq->body.len;
	pthread_mutex_unlock(&s->mu);
	if (rq->route == R_HEALTH) {
		on_health(s, c, rq);
		return queue_reply(c, rq);
	}
	if (atomic_fetch_add(&s->inflight, 1) >= s->cfg.max_concurrent) {
		atomic_fetch_sub(&s->inflight, 1);
		if (writes(rq->route))
			reject(s, REJ_BUSY);
		reply_error(s, c, rq, MHD_HTTP_TOO_MANY_REQUESTS,
			    "too many requests in flight; retry later");
		return queue_reply(c, rq);
	}
	rq->counted = true;
	MHD_suspend_connection(c);
	if (workpool_submit(s->pool, &rq->work) < 0) {
		atomic_fetch_sub(&s->inflight, 1);
		rq->counted = false;
		rq->handled = true;
		reply_error(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is stopping");
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct request *rq = *con_cls;
	unsigned long long expect;
	size_t n;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*rq = (struct request){.work = {run_request, NULL},
				       .s = s,
				       .c = c,
				       .method = method,
				       .url = url,
				       .body = STRBUF_INIT_MAX(s->cfg.max_body + 1),
				       .start_ns = clock_ns(CLOCK_MONOTONIC)};
		*con_cls = rq;
		deadline_set(conn_deadline(c), 0); /* the headers are in */
		on_headers(s, c, rq, method, url, &expect);
		if (rq->replied && answer_before_body(c, expect))
			return queue_reply(c, rq);
		return MHD_YES;
	}
	if (*upload_size) {
		n = *upload_size;
		*upload_size = 0;
		return on_upload(s, c, rq, upload_data, n);
	}
	if (rq->replied || rq->handled)
		return queue_reply(c, rq);
	return on_body_done(s, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	(void)why;
	if (!rq)
		return;
	if (rq->counted)
		atomic_fetch_sub(&s->inflight, 1);
	body_drop(s, rq);
	if (rq->resp)
		MHD_destroy_response(rq->resp);
	free(rq);
	*con_cls = NULL;
	/* The next request on this connection: its headers in time, once idle is over. */
	deadline_set(conn_deadline(c),
		     clock_ns(CLOCK_MONOTONIC) + IDLE_TIMEOUT * NSEC + s->cfg.header_timeout_ns);
}

/* A connection opens (its header deadline starts) or closes. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	const union MHD_ConnectionInfo *i;
	struct deadline *e;

	if (code != MHD_CONNECTION_NOTIFY_STARTED) {
		deadlines_remove(s->dl, *socket_context);
		*socket_context = NULL;
		return;
	}
	i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	e = i ? deadlines_add(s->dl, i->connect_fd) : NULL;
	deadline_set(e, clock_ns(CLOCK_MONOTONIC) + s->cfg.header_timeout_ns);
	*socket_context = e;
}

/*
 * libmicrohttpd's messages (one per connection a client drops or the cap
 * refuses) at most LOG_PER_MINUTE a minute: a crowd of clients must not
 * fill the log.
 */
static void on_log(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	unsigned dropped = 0;
	bool show;

	pthread_mutex_lock(&s->log_mu);
	if (now - s->log_minute >= 60 * NSEC) {
		dropped = s->log_dropped;
		s->log_minute = now;
		s->log_shown = s->log_dropped = 0;
	}
	show = s->log_shown < LOG_PER_MINUTE;
	s->log_shown += show;
	s->log_dropped += !show;
	pthread_mutex_unlock(&s->log_mu);
	if (dropped)
		fprintf(stderr,
			"plateau serve: http: %u more messages in the last minute not shown\n",
			dropped);
	if (!show)
		return;
	fputs("plateau serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* WANT connections, or fewer so that they fit the open-file limit (raised if it can be). */
static unsigned fit_connections(unsigned want)
{
	rlim_t need = (rlim_t)want + FD_RESERVE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= need)
		return want;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		struct rlimit up = {rl.rlim_max != RLIM_INFINITY ? MIN(need, rl.rlim_max) : need,
				    rl.rlim_max};

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl.rlim_cur = up.rlim_cur;
	}
	if (rl.rlim_cur >= need)
		return want;
	return rl.rlim_cur > FD_RESERVE + 16 ? (unsigned)(rl.rlim_cur - FD_RESERVE) : 16;
}

/* The event loop, its connection caps and the handlers' pool. */
static int server_listen(struct server *s, const struct sockaddr_in *addr, struct error *err)
{
	int rc = workpool_start(MIN(s->cfg.max_concurrent, WORKPOOL_MAX), &s->pool, err);

	if (rc == 0)
		rc = deadlines_start(DEADLINE_PERIOD, &s->dl, err);
	if (rc < 0)
		return rc;
	s->cfg.max_connections = fit_connections(s->cfg.max_connections);
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
				s->cfg.port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
				on_log, s, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED,
				on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->cfg.max_connections_per_ip,
				MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT, MHD_OPTION_END);
	if (!s->d)
		return error_set(err, ERR_IO, "cannot listen on %s:%u (in use?)",
				 s->cfg.listen_host, s->cfg.port);
	return 0;
}

static void server_free(struct server *s)
{
	if (s->pool)
		workpool_stop(s->pool); /* handlers in flight finish; later ones get 503 */
	if (s->d)
		MHD_stop_daemon(s->d);
	deadlines_stop(s->dl);
	workpool_free(s->pool);
	if (s->log_dropped)
		fprintf(stderr,
			"plateau serve: http: %u more messages in the last minute not shown\n",
			s->log_dropped);
	pthread_mutex_destroy(&s->log_mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int server_start(const struct server_config *cfg, struct service *sv, struct server **out,
		 struct error *err)
{
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(cfg->port)};

	*out = NULL;
	if (!s)
		return error_set(err, ERR_NOMEM, "out of memory");
	if (inet_pton(AF_INET, cfg->listen_host, &addr.sin_addr) != 1) {
		free(s);
		return error_set(err, ERR_USAGE, "--listen: \"%s\" is not an IPv4 address",
				 cfg->listen_host);
	}
	s->cfg = *cfg;
	s->cfg.max_body = MIN(cfg->max_body, SIZE_MAX / 4); /* room for the sums below */
	s->sv = sv;
	s->body_budget = cfg->max_body > SIZE_MAX / MAX(cfg->max_concurrent, 1u)
				 ? SIZE_MAX
				 : cfg->max_body * MAX(cfg->max_concurrent, 1u);
	/* A body of max-inflated always inflates when it is alone. */
	s->inflate_budget.limit = MAX(cfg->inflate_total, cfg->max_inflated);
	s->inflate = &s->inflate_budget;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->log_mu, NULL);
	s->log_minute = clock_ns(CLOCK_MONOTONIC);
	if (server_listen(s, &addr, err) < 0) {
		server_free(s);
		return err->code;
	}
	*out = s;
	return 0;
}

uint16_t server_port(const struct server *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

void server_stop(struct server *s)
{
	if (s)
		server_free(s);
}
