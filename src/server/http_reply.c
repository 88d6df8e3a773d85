/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's answers and request parameters (http_int.h): every
 * answer, an error's one line of JSON included, goes through reply(),
 * which keeps it for the event loop to queue and counts it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/input.h"
#include "server/http_int.h"
#include "store/timeparse.h"
#include "util/clock.h"
#include "util/common.h"

/* ---- replies ---- */

unsigned status_of(int code)
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

/* Keep R (NULL: no answer, the connection closes), LEN bytes, as RQ's answer with STATUS. */
static enum MHD_Result keep_reply(struct server *s, struct request *rq, unsigned status,
				  const char *ctype, struct MHD_Response *r, size_t len)
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
	rq->sent = len;
	rq->replied = true;
	count_request(s, rq, status);
	return MHD_YES;
}

enum MHD_Result reply_nomem(struct server *s, struct request *rq)
{
	return keep_reply(s, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
			  MHD_create_response_from_buffer(strlen(NOMEM_REPLY), (void *)NOMEM_REPLY,
							  MHD_RESPMEM_PERSISTENT),
			  strlen(NOMEM_REPLY));
}

enum MHD_Result reply(struct server *s, struct MHD_Connection *c, struct request *rq,
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
	return keep_reply(s, rq, status, ctype, r, len);
}

enum MHD_Result reply_text(struct server *s, struct MHD_Connection *c, struct request *rq,
			   unsigned status, const char *ctype, const char *text)
{
	struct strbuf sb;

	strbuf_init_max(&sb, ERROR_REPLY_MAX);
	strbuf_addstr(&sb, text);
	return reply(s, c, rq, status, ctype, &sb);
}

enum MHD_Result reply_error(struct server *s, struct MHD_Connection *c, struct request *rq,
			    unsigned status, const char *msg)
{
	struct strbuf sb;

	strbuf_init_max(&sb, ERROR_REPLY_MAX);
	strbuf_addstr(&sb, "{\"error\":");
	strbuf_add_json_safe(&sb, msg, strlen(msg));
	strbuf_addstr(&sb, "}\n");
	return reply(s, c, rq, status, "application/json", &sb);
}

void reject(struct server *s, enum reject why)
{
	pthread_mutex_lock(&s->mu);
	s->rejected[why]++;
	pthread_mutex_unlock(&s->mu);
}

/* An error from a push: counted by reason, then replied. */
enum MHD_Result push_error(struct server *s, struct MHD_Connection *c, struct request *rq,
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

const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* A time parameter, DEFAULT when absent; the message names the parameter. */
int time_arg(struct MHD_Connection *c, const char *name, int64_t def, int64_t *out,
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
int window_args(struct MHD_Connection *c, const char *fname, const char *uname, int64_t *from,
		int64_t *until, struct error *err)
{
	int64_t now = clock_ns(CLOCK_REALTIME);

	if (time_arg(c, fname, now - 3600 * NSEC, from, err) < 0 ||
	    time_arg(c, uname, now, until, err) < 0)
		return err->code;
	if (*until <= *from)
		return error_set(err, ERR_FORMAT, "%s is not after %s", uname, fname);
	return 0;
}

int selector_arg(struct MHD_Connection *c, const char *name, bool required, struct selector **out,
		 struct error *err)
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

int uint_arg(struct MHD_Connection *c, const char *name, uint64_t def, uint64_t max, uint64_t *out,
	     struct error *err)
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

bool authorized(const struct server *s, struct MHD_Connection *c, unsigned scope)
{
	return server_auth_allows(
		&s->cfg,
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
		scope);
}

void note_latency(struct server *s, struct request *rq)
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

void request_app(struct request *rq, const char *app, int len)
{
	if (app)
		snprintf(rq->app, sizeof(rq->app), "%.*s", len < 0 ? (int)sizeof(rq->app) : len,
			 app);
}
