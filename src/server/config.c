/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's configuration: defaults, the config file, --listen
 * (server.h, doc/plateau-serve.md).  A token's value never appears in a
 * message: errors name the file, the line and the key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "store/timeparse.h"
#include "util/alloc.h"

#define LINE_MAX_BYTES 4096
#define TOKEN_MIN      8
#define TOKEN_MAX      256
#define TOKENS_MAX     64
#define ALLOW_MAX      256

void server_config_init(struct server_config *c)
{
	struct service_config svc = SERVICE_CONFIG_DEFAULT;

	memset(c, 0, sizeof(*c));
	strcpy(c->listen_host, "127.0.0.1");
	c->port = 4040;
	c->max_body = (size_t)16 << 20;
	c->max_inflated = (size_t)64 << 20;
	c->inflate_total = (size_t)128 << 20;
	c->max_concurrent = 32;
	c->max_connections = 4096;
	c->max_connections_per_ip = 1024;
	c->header_timeout_ns = INT64_C(10000000000);
	c->max_nodes = 8192;
	c->access_log = true;
	c->svc = svc;
}

void server_config_release(struct server_config *c)
{
	for (size_t i = 0; i < c->ntokens; i++) {
		/* Leave no copy of a secret in freed memory. */
		memset(c->tokens[i].value, 0, strlen(c->tokens[i].value));
		free(c->tokens[i].value);
	}
	free(c->tokens);
	for (char **a = c->allow_labels; a && *a; a++)
		free(*a);
	free(c->allow_labels);
	memset(c, 0, sizeof(*c));
}

static bool token_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("._~+/=-", ch);
}

/* "read:SECRET", "write:SECRET", "read,write:SECRET" or "SECRET" (both scopes). */
static int add_token(struct server_config *c, const char *v, const char *where, struct error *err)
{
	const char *colon = strchr(v, ':'), *secret = colon ? colon + 1 : v;
	unsigned scopes = colon ? 0 : SCOPE_READ | SCOPE_WRITE;
	size_t n = strlen(secret);
	struct server_token *tokens;
	char *copy;

	for (const char *p = v; colon && p < colon;) {
		size_t len = strcspn(p, ",:");

		if (len == 4 && !strncmp(p, "read", 4))
			scopes |= SCOPE_READ;
		else if (len == 5 && !strncmp(p, "write", 5))
			scopes |= SCOPE_WRITE;
		else
			return error_set(err, ERR_FORMAT,
					 "%s: token scope is not read or write (read:SECRET, "
					 "write:SECRET, read,write:SECRET)",
					 where);
		p += len + (p[len] == ',');
	}
	if (n < TOKEN_MIN || n > TOKEN_MAX)
		return error_set(err, ERR_FORMAT, "%s: a token has %d to %d characters", where,
				 TOKEN_MIN, TOKEN_MAX);
	for (size_t i = 0; i < n; i++)
		if (!token_char(secret[i]))
			return error_set(err, ERR_FORMAT,
					 "%s: a token has only letters, digits and ._~+/=-", where);
	if (c->ntokens == TOKENS_MAX)
		return error_set(err, ERR_LIMIT, "%s: more than %d tokens", where, TOKENS_MAX);
	tokens = alloc_array(c->tokens, c->ntokens + 1, sizeof(*c->tokens));
	if (tokens)
		c->tokens = tokens;
	copy = tokens ? alloc_strdup(secret) : NULL;
	if (!copy)
		return error_set(err, ERR_NOMEM, "%s: out of memory", where);
	c->tokens[c->ntokens++] = (struct server_token){copy, scopes};
	return 0;
}

static int set_allow(struct server_config *c, const char *v, const char *where, struct error *err)
{
	size_t n = 0;

	for (char **a = c->allow_labels; a && *a; a++)
		n++;
	for (const char *p = v; *p;) {
		size_t len = strcspn(p, ",");

		if (len == 0 || !label_key_valid(p, len))
			return error_set(err, ERR_FORMAT,
					 "%s: allow-labels: \"%.*s\" is not a label name", where,
					 (int)(len > 64 ? 64 : len), p);
		if (n == ALLOW_MAX)
			return error_set(err, ERR_LIMIT, "%s: more than %d allowed labels", where,
					 ALLOW_MAX);
		char **a = alloc_array(c->allow_labels, n + 2, sizeof(*c->allow_labels));
		char *name = a ? alloc_memdup(p, len) : NULL;

		if (a) {
			c->allow_labels = a;
			a[n] = NULL; /* still a list, for server_config_release() */
		}
		if (!name)
			return error_set(err, ERR_NOMEM, "%s: out of memory", where);
		c->allow_labels[n++] = name;
		c->allow_labels[n] = NULL;
		p += len + (p[len] == ',');
	}
	c->svc.allow_labels = (const char *const *)c->allow_labels;
	return 0;
}

static int set_count(const char *v, uint64_t lo, uint64_t hi, uint64_t *out, const char *where,
		     const char *key, struct error *err)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n < lo || n > hi)
		return error_set(err, ERR_FORMAT,
				 "%s: %s: \"%s\" is not a whole number from %llu to %llu", where,
				 key, v, (unsigned long long)lo, (unsigned long long)hi);
	*out = n;
	return 0;
}

static int set_size(const char *v, uint64_t lo, size_t *out, const char *where, const char *key,
		    struct error *err)
{
	struct error e = ERROR_INIT;
	uint64_t n;

	if (size_parse(v, &n, &e) < 0 || n < lo || n > SIZE_MAX)
		return error_set(err, ERR_FORMAT, "%s: %s: %s", where, key,
				 e.code ? e.msg : "too small");
	*out = (size_t)n;
	return 0;
}

/* One "key value" setting; WHERE is "FILE:LINE" for messages. */
static int set_key(struct server_config *c, const char *key, const char *v, const char *where,
		   struct error *err)
{
	struct error e = ERROR_INIT;
	uint64_t n;
	int rc;

	if (!strcmp(key, "token"))
		return add_token(c, v, where, err);
	if (!strcmp(key, "allow-labels"))
		return set_allow(c, v, where, err);
	if (!strcmp(key, "series-budget"))
		return set_count(v, 0, UINT64_MAX, &c->svc.series_budget, where, key, err);
	if (!strcmp(key, "series-budget-per-app"))
		return set_count(v, 0, UINT64_MAX, &c->svc.series_budget_app, where, key, err);
	if (!strcmp(key, "max-body"))
		return set_size(v, 1024, &c->max_body, where, key, err);
	if (!strcmp(key, "max-inflated"))
		return set_size(v, 1024, &c->max_inflated, where, key, err);
	if (!strcmp(key, "max-inflated-total"))
		return set_size(v, 1024, &c->inflate_total, where, key, err);
	if (!strcmp(key, "max-disk")) {
		size_t sz;

		rc = set_size(v, 0, &sz, where, key, err);
		c->svc.max_disk = sz;
		return rc;
	}
	if (!strcmp(key, "retention")) {
		if (duration_parse(v, &c->svc.retention_ns, &e) < 0)
			return error_set(err, ERR_FORMAT, "%s: retention: %s", where, e.msg);
		return 0;
	}
	if (!strcmp(key, "header-timeout")) {
		if (duration_parse(v, &c->header_timeout_ns, &e) < 0)
			return error_set(err, ERR_FORMAT, "%s: header-timeout: %s", where, e.msg);
		if (c->header_timeout_ns < INT64_C(1000000000) ||
		    c->header_timeout_ns > INT64_C(3600000000000))
			return error_set(err, ERR_FORMAT,
					 "%s: header-timeout: \"%s\" is not from 1s to 1h", where,
					 v);
		return 0;
	}
	if (!strcmp(key, "access-log")) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return error_set(err, ERR_FORMAT,
					 "%s: access-log: \"%.64s\" is not on or off", where, v);
		c->access_log = !strcmp(v, "on");
		return 0;
	}
	if (!strcmp(key, "fleet-rollups")) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return error_set(err, ERR_FORMAT,
					 "%s: fleet-rollups: \"%.64s\" is not on or off", where, v);
		c->svc.no_fleet_rollups = !strcmp(v, "off");
		return 0;
	}
	if (!strcmp(key, "max-connections") || !strcmp(key, "max-connections-per-ip")) {
		rc = set_count(v, !strcmp(key, "max-connections") ? 16 : 0, 1u << 20, &n, where,
			       key, err);
		if (rc == 0 && !strcmp(key, "max-connections"))
			c->max_connections = (unsigned)n;
		else if (rc == 0)
			c->max_connections_per_ip = (unsigned)n;
		return rc;
	}
	if (!strcmp(key, "max-concurrent") || !strcmp(key, "max-stack-depth") ||
	    !strcmp(key, "max-nodes")) {
		rc = set_count(v, !strcmp(key, "max-nodes") ? 0 : 1, 1u << 24, &n, where, key, err);
		if (rc < 0)
			return rc;
		if (!strcmp(key, "max-concurrent"))
			c->max_concurrent = (unsigned)n;
		else if (!strcmp(key, "max-stack-depth"))
			c->svc.max_stack_depth = (uint32_t)n;
		else
			c->max_nodes = (uint32_t)n;
		return 0;
	}
	return error_set(err, ERR_FORMAT, "%s: unknown key \"%.64s\"", where, key);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

int server_config_load(struct server_config *c, const char *path, struct error *err)
{
	char line[LINE_MAX_BYTES + 2], where[512];
	FILE *f = fopen(path, "r");
	int rc = 0, lineno = 0;

	if (!f)
		return error_set(err, ERR_IO, "%s: %s", path, strerror(errno));
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *key, *v;

		snprintf(where, sizeof(where), "%s:%d", path, ++lineno);
		if (strlen(line) > LINE_MAX_BYTES) {
			rc = error_set(err, ERR_FORMAT, "%s: line longer than %d bytes", where,
				       LINE_MAX_BYTES);
			break;
		}
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		v = key + strcspn(key, " \t=");
		if (*v)
			*v++ = '\0';
		v = trim(v);
		if (*v == '=')
			v = trim(v + 1);
		if (!*v)
			rc = error_set(err, ERR_FORMAT, "%s: %s has no value", where, key);
		else
			rc = set_key(c, key, v, where, err);
	}
	if (rc == 0 && ferror(f))
		rc = error_set(err, ERR_IO, "%s: %s", path, strerror(errno));
	fclose(f);
	return rc;
}

int server_config_listen(struct server_config *c, const char *text, struct error *err)
{
	const char *colon = strrchr(text, ':'), *port = colon ? colon + 1 : text;
	size_t hostlen = colon ? (size_t)(colon - text) : 0;
	char *end;
	long p;

	errno = 0;
	p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535)
		return error_set(err, ERR_USAGE,
				 "--listen: \"%s\" is not HOST:PORT (port 0..65535)", text);
	if (hostlen >= sizeof(c->listen_host))
		return error_set(err, ERR_USAGE, "--listen: host too long");
	if (hostlen) {
		memcpy(c->listen_host, text, hostlen);
		c->listen_host[hostlen] = '\0';
	}
	c->port = (uint16_t)p;
	return 0;
}
