/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_HTTP_INT_H
#define PLATEAU_SERVER_HTTP_INT_H

/*
 * What the pieces of plateau serve's HTTP side share (server.h is the
 * API): http.c (libmicrohttpd's callbacks, bodies, the access log),
 * http_routes.c (the routes table), http_reply.c (answers, parameters),
 * http_push.c and http_query.c (the handlers), http_metrics.c (/metrics,
 * /healthz).  Nothing here is for use outside src/server/http*.c.
 */

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"
#include "server/workpool.h"
#include "util/strbuf.h"

#define NSEC		INT64_C(1000000000)
#define REPLY_MAX	((size_t)1 << 30) /* bytes of an answer (a checked buffer's cap) */
#define ERROR_REPLY_MAX 4096		  /* bytes of an error's JSON */
/* An answer's buffer: checked, with REPLY_MAX as its cap (strbuf.h). */
#define REPLY_INIT STRBUF_INIT_MAX(REPLY_MAX)
/* The answer when even the answer cannot be allocated: static, no allocation of ours. */
#define NOMEM_REPLY "{\"error\":\"out of memory: try again later\"}\n"
/* Bytes of the app name a request's access-log line shows. */
#define ACCESS_APP_MAX 64

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

/* Query latency buckets (seconds), Prometheus histogram (http_metrics.c). */
extern const double latency_le[];
#define NLAT 11

struct server;
struct request;

/* A route's handler: fills RQ's answer (reply() and friends); MHD_NO: close. */
typedef enum MHD_Result route_fn(struct server *s, struct MHD_Connection *c, struct request *rq);

/*
 * One row of the routes table (http_routes.c), which dispatches every
 * request and is checked against doc/plateau-serve.md (routes_test.c).
 */
struct route {
	const char *method; /* "GET" (HEAD too) or "POST" */
	/* Exact, or "PREFIX*SUFFIX": '*' is one non-empty part (the doc's NAME). */
	const char *path;
	const char *name; /* plateau_http_requests_total's route label */
	route_fn *handler;
	unsigned scope;	 /* the token scope it needs (enum token_scope); 0: none */
	size_t body_max; /* bytes of a body at most; 0: max-body (the config's) */
	bool event_loop; /* answered by the event loop: no slot, never refused (/healthz) */
};

#define ROUTES_MAX 16 /* rows of the table at most */
extern const struct route routes[];
extern const size_t nroutes; /* rows of routes[]; also the index of "other" */

/* Methods a path takes, for a 405's Allow header. */
enum route_allow {
	ALLOW_GET = 1, /* GET and HEAD */
	ALLOW_POST = 2,
};

/*
 * The row of routes[] for METHOD and URL (a path, no query string), or
 * NULL; with a wildcard, *PART and *PARTLEN its part of URL (borrowed).
 * Without a row, *ALLOWED gets the enum route_allow bits of the methods
 * the path takes (0: an unknown path, a 404).
 */
const struct route *route_find(const char *method, const char *url, const char **part,
			       size_t *partlen, unsigned *allowed);
/* The Allow header's value for enum route_allow bits (static). */
const char *route_allow_text(unsigned allowed);

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
	pthread_mutex_t mu;		      /* metrics */
	uint64_t requests[ROUTES_MAX + 1][6]; /* per route, then "other"; by status class */
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
	const struct route *rt;	  /* NULL: no route (404 or 405) */
	size_t route;		  /* index in routes[]; nroutes: none ("other") */
	const char *part;	  /* the wildcard's part of url (rt's '*') */
	size_t partlen;
	unsigned allowed; /* without rt: the methods the path takes (enum route_allow) */
	struct strbuf body;
	size_t body_max;	   /* the route's cap of the body */
	size_t expect;		   /* Content-Length, at most body_max; 0 when not given */
	size_t held;		   /* bytes of s->body_mem the body holds */
	size_t discarded;	   /* body bytes dropped after a refusal */
	struct MHD_Response *resp; /* the answer, queued by the event loop */
	unsigned status;
	size_t sent; /* bytes of the answer's body */
	bool counted, replied, handled;
	int64_t start_ns;
	char app[ACCESS_APP_MAX]; /* the app the request names, for the access log; "" */
};

/* ---- answers (http_reply.c) ---- */

/* The HTTP status of an error code (enum error_code). */
unsigned status_of(int code);
/*
 * Reply BODY (taken) as RQ's answer, kept for the event loop to queue.
 * A checked BODY that ran out of memory becomes a 503 with a static
 * message, one over its cap a 422.  MHD_NO when no answer could be made.
 */
enum MHD_Result reply(struct server *s, struct MHD_Connection *c, struct request *rq,
		      unsigned status, const char *ctype, struct strbuf *body);
enum MHD_Result reply_text(struct server *s, struct MHD_Connection *c, struct request *rq,
			   unsigned status, const char *ctype, const char *text);
/* {"error": MSG} with STATUS. */
enum MHD_Result reply_error(struct server *s, struct MHD_Connection *c, struct request *rq,
			    unsigned status, const char *msg);
/* The static 503 of a request that ran out of memory. */
enum MHD_Result reply_nomem(struct server *s, struct request *rq);
/* Count a push refused for WHY (/metrics). */
void reject(struct server *s, enum reject why);
/* An error from a push: counted by reason, then replied. */
enum MHD_Result push_error(struct server *s, struct MHD_Connection *c, struct request *rq,
			   const struct error *err);
/* A query's time since its request began, into the latency histogram. */
void note_latency(struct server *s, struct request *rq);
/* Note APP (LEN bytes, -1: a string) as the app RQ names, for the access log. */
void request_app(struct request *rq, const char *app, int len);

/* ---- parameters (http_reply.c); messages name the parameter ---- */

/* The query parameter NAME (libmicrohttpd's, valid for the request), or NULL. */
const char *arg(struct MHD_Connection *c, const char *name);
/* A time parameter, DEFAULT when absent. */
int time_arg(struct MHD_Connection *c, const char *name, int64_t def, int64_t *out,
	     struct error *err);
/* FROM and UNTIL (default: the last hour) under the parameter names given. */
int window_args(struct MHD_Connection *c, const char *fname, const char *uname, int64_t *from,
		int64_t *until, struct error *err);
/* A selector (*out the caller's to selector_free), NULL when absent and not REQUIRED. */
int selector_arg(struct MHD_Connection *c, const char *name, bool required, struct selector **out,
		 struct error *err);
int uint_arg(struct MHD_Connection *c, const char *name, uint64_t def, uint64_t max, uint64_t *out,
	     struct error *err);
/* Whether the request's Authorization grants SCOPE. */
bool authorized(const struct server *s, struct MHD_Connection *c, unsigned scope);

/* ---- handlers (http_push.c, http_query.c, http_metrics.c) ---- */

route_fn on_ingest, on_profiles;
route_fn on_query, on_render, on_diff, on_label_names, on_label_values, on_series, on_timeline;
/* http_ui.c: the web UI's page (/, /comparison, /diff). */
route_fn on_ui;
route_fn on_health, on_metrics;

#endif
