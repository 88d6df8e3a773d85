/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_H
#define PLATEAU_SERVER_H

/*
 * plateau serve's HTTP side (http.c and http_*.c, whose shared parts are
 * in http_int.h; auth.c, config.c; doc/plateau-serve.md): libmicrohttpd
 * on 127.0.0.1:4040 by default, the routes of the Pyroscope-compatible
 * push API and plateau's query API over a service (service.h), API
 * tokens, request caps, /metrics, /healthz and the access log.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/service.h"

enum token_scope {
	SCOPE_READ = 1,
	SCOPE_WRITE = 2,
};

struct server_token {
	char *value;
	unsigned scopes; /* enum token_scope bits */
};

struct server_config {
	char listen_host[64];		 /* an IPv4 address; default 127.0.0.1 */
	uint16_t port;			 /* default 4040; 0 = any free port */
	size_t max_body;		 /* bytes of a request body; default 16 MiB */
	size_t max_inflated;		 /* bytes after gunzip; default 64 MiB */
	size_t inflate_total;		 /* max-inflated-total: every body at once; 128 MiB */
	unsigned max_concurrent;	 /* requests handled at once; more get 429 */
	unsigned max_connections;	 /* connections open at once; default 4096 */
	unsigned max_connections_per_ip; /* from one address; default 1024, 0 = no cap */
	int64_t header_timeout_ns;	 /* to send a request's headers; default 10 s */
	uint32_t max_nodes;		 /* default maxNodes of a query; 0 = every node */
	bool access_log;		 /* a line per request on stderr (http.c); default on */
	struct server_token *tokens;
	size_t ntokens;
	char **allow_labels; /* NULL-terminated, or NULL */
	struct service_config svc;
};

/* Defaults for everything, before the config file and the options. */
void server_config_init(struct server_config *c);
void server_config_release(struct server_config *c);

/*
 * Read a config file: one "key value" (or "key = value") per line, '#'
 * comments; keys as in doc/plateau-serve.md (token, allow-labels,
 * series-budget, max-body, max-inflated, max-inflated-total, max-concurrent,
 * max-connections, max-connections-per-ip, header-timeout, max-stack-depth,
 * max-nodes, retention, max-disk, access-log).  Errors name the file and
 * line.
 */
int server_config_load(struct server_config *c, const char *path, struct error *err);

/*
 * Whether AUTHORIZATION (an Authorization header's value, NULL when there
 * is none) grants SCOPE (enum token_scope): always when C has no tokens;
 * else "Bearer TOKEN" or "Basic base64(USER:TOKEN)" (any user name) with a
 * token of C that has the scope (auth.c).
 */
bool server_auth_allows(const struct server_config *c, const char *authorization, unsigned scope);

/* Parse "HOST:PORT", ":PORT" or "PORT" into c. */
int server_config_listen(struct server_config *c, const char *text, struct error *err);

struct server;

/*
 * Listen and serve from internal threads; *out until server_stop.  One
 * event loop holds every connection; handlers run on a pool of
 * MIN(max_concurrent, WORKPOOL_MAX) threads.  Raises the soft
 * RLIMIT_NOFILE towards the hard one so that max_connections sockets
 * fit, and lowers max_connections to what fits.
 */
int server_start(const struct server_config *c, struct service *sv, struct server **out,
		 struct error *err);
/* The port actually bound (useful with port 0). */
uint16_t server_port(const struct server *s);
void server_stop(struct server *s);

#endif
