/* SPDX-License-Identifier: MIT */
/*
 * plateau serve over HTTP: libmicrohttpd's callbacks, request bodies,
 * caps, the access log and the server's life (server.h,
 * doc/plateau-serve.md).  The routes table is in http_routes.c, the
 * handlers in http_push.c, http_query.c and http_metrics.c, answers and
 * parameters in http_reply.c (what they share: http_int.h).
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
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include "format/input.h"
#include "server/deadline.h"
#include "server/http_int.h"
#include "server/workpool.h"
#include "util/clock.h"
#include "util/common.h"

#define BODY_RESERVE_MAX ((size_t)4 << 20)  /* bytes a body's first chunk reserves at most */
#define DISCARD_MAX	 ((size_t)64 << 20) /* body bytes of a refused request read and dropped */
#define IDLE_TIMEOUT	 60u		    /* seconds a connection may stay silent */
#define FD_RESERVE	 64		    /* descriptors kept for the store, logs, epoll */
#define DEADLINE_PERIOD	 (NSEC / 4)	    /* how often late connections are looked for */
#define LOG_PER_MINUTE	 20		    /* libmicrohttpd messages shown a minute */

/* ---- routing ---- */

/* Whether RQ is a push (its refusals are counted by reason). */
static bool writes(const struct request *rq)
{
	return rq->rt && rq->rt->scope == SCOPE_WRITE;
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

/* The first call for a request: its route; refuse it before its body when we can. */
static void on_headers(struct server *s, struct MHD_Connection *c, struct request *rq,
		       unsigned long long *expect)
{
	const char *cl;

	rq->rt = route_find(rq->method, rq->url, &rq->part, &rq->partlen, &rq->allowed);
	rq->route = rq->rt ? (size_t)(rq->rt - routes) : nroutes;
	rq->body_max = rq->rt && rq->rt->body_max ? MIN(rq->rt->body_max, s->cfg.max_body)
						  : s->cfg.max_body;
	strbuf_init_max(&rq->body, rq->body_max + 1);
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	*expect = cl ? strtoull(cl, NULL, 10) : 0;
	/* No route: a 404 or 405, told to readers only. */
	if (!(rq->rt && rq->rt->event_loop) &&
	    !authorized(s, c, rq->rt ? rq->rt->scope : SCOPE_READ)) {
		if (writes(rq))
			reject(s, REJ_AUTH);
		refuse(s, c, rq, MHD_HTTP_UNAUTHORIZED,
		       "missing or invalid API token (Authorization: Bearer TOKEN)");
		return;
	}
	if (*expect > rq->body_max) {
		reject(s, REJ_BODY);
		refuse(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, "request body over max-body");
		return;
	}
	rq->expect = (size_t)*expect;
}

/* Run RQ's route, or answer 405 (with Allow) or 404 without one. */
static enum MHD_Result dispatch(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *allow = route_allow_text(rq->allowed);
	enum MHD_Result ok;
	char msg[64];

	debug2(DEBUG_SERVER, "dispatch %s %s", rq->method, rq->url);
	if (rq->rt)
		return rq->rt->handler(s, c, rq);
	if (!rq->allowed)
		return reply_error(s, c, rq, MHD_HTTP_NOT_FOUND, "no such endpoint");
	snprintf(msg, sizeof(msg), "method not allowed (Allow: %s)", allow);
	ok = reply_error(s, c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, msg);
	if (rq->resp && rq->status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(rq->resp, MHD_HTTP_HEADER_ALLOW, allow);
	return ok;
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
 * Append N bytes to RQ's body (its length plus N is at most body_max)
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
		grow = MAX(MIN(grow, rq->body_max + 1), want);
		extra = grow - rq->body.alloc;
		if (extra > s->body_budget ||
		    atomic_fetch_add(&s->body_mem, extra) > s->body_budget - extra) {
			atomic_fetch_sub(&s->body_mem, extra);
			return ERR_LIMIT;
		}
		/* The checked buffer (cap body_max + 1) grows to GROW, or to its
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
	if (n > rq->body_max - rq->body.len) {
		reject(s, REJ_BODY);
		refuse(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, "request body over max-body");
	} else if ((rc = body_append(s, rq, data, n)) == ERR_NOMEM) {
		refuse_nomem(s, c, rq); /* the server's trouble, not the push's: a 5xx only */
	} else if (rc < 0) {
		if (writes(rq))
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

	dispatch(s, rq->c, rq);
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
	if (rq->rt && rq->rt->event_loop) {
		rq->rt->handler(s, c, rq);
		return queue_reply(c, rq);
	}
	if (atomic_fetch_add(&s->inflight, 1) >= s->cfg.max_concurrent) {
		atomic_fetch_sub(&s->inflight, 1);
		if (writes(rq))
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
				       .start_ns = clock_ns(CLOCK_MONOTONIC)};
		*con_cls = rq;
		deadline_set(conn_deadline(c), 0); /* the headers are in */
		on_headers(s, c, rq, &expect);
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

/* TEXT's first MAX - 1 bytes into BUF; what is not a letter, digit or one of . _ / * - is '?'. */
static const char *log_safe(const char *text, char *buf, size_t max)
{
	size_t i;

	for (i = 0; text[i] && i + 1 < max; i++) {
		unsigned char ch = (unsigned char)text[i];

		buf[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
					 (ch >= '0' && ch <= '9') || strchr("._/*-", ch)
				 ? (char)ch
				 : '?';
	}
	buf[i] = '\0';
	return buf;
}

/*
 * RQ's access-log line on stderr, once it is done: method, route (the
 * table's path; the path itself, cut at 64 bytes, when no route has it),
 * status ("-": none could be sent), bytes of the answer's body, time
 * since its headers arrived, and the app it names.  Never a header, a
 * token or the query string.  One write, so lines from the event loop and
 * the server's other messages do not mix.
 */
static void access_log(const struct request *rq, bool aborted)
{
	char line[512], method[17], path[65], app[ACCESS_APP_MAX], status[12] = "-";
	double ms = (double)(clock_ns(CLOCK_MONOTONIC) - rq->start_ns) / 1e6;

	if (rq->status)
		snprintf(status, sizeof(status), "%u", rq->status);
	snprintf(line, sizeof(line), "plateau serve: access: %s %s %s bytes=%zu ms=%.1f%s%s%s\n",
		 log_safe(rq->method, method, sizeof(method)),
		 rq->rt ? rq->rt->path : log_safe(rq->url, path, sizeof(path)), status, rq->sent,
		 ms, rq->app[0] ? " app=" : "", log_safe(rq->app, app, sizeof(app)),
		 aborted ? " aborted" : "");
	fputs(line, stderr);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	if (!rq)
		return;
	if (s->cfg.access_log)
		access_log(rq, why != MHD_REQUEST_TERMINATED_COMPLETED_OK);
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
	debug(DEBUG_SERVER,
	      "listening on %s:%u: %zu tokens, body up to %zu bytes (%zu inflated), %u requests "
	      "at once, %u connections (%u per address)",
	      cfg->listen_host, (unsigned)server_port(s), cfg->ntokens, s->cfg.max_body,
	      cfg->max_inflated, cfg->max_concurrent, cfg->max_connections,
	      cfg->max_connections_per_ip);
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
