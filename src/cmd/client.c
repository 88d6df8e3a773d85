/* SPDX-License-Identifier: MIT */
/*
 * plateau push and plateau query: the command-line clients of plateau
 * serve (doc/plateau-serve.md), over libcurl.  The token comes from
 * --token or PLATEAU_TOKEN and is sent as "Authorization: Bearer".
 */
#include <curl/curl.h>
#include <time.h>

#include "util/common.h"
#include "cmd/cmd.h"
#include "lib/pprof.h"
#include "store/timeparse.h"
#include "util/strbuf.h"

#define RESPONSE_MAX ((size_t)1 << 30)

static const char *const push_usage[] = {
	"plateau push --server URL --app NAME [--tag K=V]... [--from T] [--until T] FILE",
	NULL,
};

static const char *const query_usage[] = {
	"plateau query --server URL 'SELECTOR' [--from T] [--until T]",
	"              [--format json|pprof|folded|svg|html] [--max-nodes N] [-o FILE]",
	NULL,
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct strbuf *sb = arg;

	if (sb->len + size * n > RESPONSE_MAX)
		return 0;
	strbuf_add(sb, data, size * n);
	return size * n;
}

/* Percent-encode S onto SB (RFC 3986 unreserved characters stay). */
static void add_escaped(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c))
			strbuf_addch(sb, c);
		else
			strbuf_addf(sb, "%%%02X", c);
	}
}

static void add_param(struct strbuf *url, const char *key, const char *value)
{
	strbuf_addch(url, strchr(url->buf, '?') ? '&' : '?');
	add_escaped(url, key);
	strbuf_addch(url, '=');
	add_escaped(url, value);
}

/* One request; dies on a transport error or a non-2xx reply (with its error message). */
static void request(const char *url, const char *token, const struct strbuf *body,
		    struct strbuf *resp)
{
	struct curl_slist *h = NULL;
	char auth[512], errbuf[CURL_ERROR_SIZE] = "";
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;

	if (!c)
		die("cannot start libcurl");
	if (token) {
		if (snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token) >=
		    (int)sizeof(auth))
			die("--token: too long");
		h = curl_slist_append(h, auth);
	}
	if (body)
		h = curl_slist_append(h, "Content-Type: application/octet-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->buf);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	}
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		die("%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	if (status / 100 != 2) {
		/* The server's one-line {"error":"..."}, shown as it came. */
		while (resp->len && (resp->buf[resp->len - 1] == '\n'))
			strbuf_setlen(resp, resp->len - 1);
		die("%s: HTTP %ld: %s", url, status, resp->len ? resp->buf : "(no body)");
	}
}

static const char *token_of(const char *opt)
{
	return opt ? opt : getenv("PLATEAU_TOKEN");
}

int cmd_push(int argc, const char **argv)
{
	const char *server = NULL, *app = NULL, *from = NULL, *until = NULL, *token = NULL;
	const char **tags = NULL;
	const struct option opts[] = {
		OPT_STRING(0, "server", &server, "URL",
			   "plateau serve's address (http://127.0.0.1:4040)"),
		OPT_STRING(0, "app", &app, "NAME", "the application the profile belongs to"),
		OPT_LIST(0, "tag", &tags, "K=V", "a label of the series (repeatable)"),
		OPT_STRING(0, "from", &from, "T",
			   "start of the profile's window (default: its own, or now)"),
		OPT_STRING(0, "until", &until, "T", "end of the window"),
		OPT_STRING(0, "token", &token, "TOKEN", "API token (default $PLATEAU_TOKEN)"),
		OPT_END(),
	};
	struct strbuf url = STRBUF_INIT, body = STRBUF_INIT, resp = STRBUF_INIT;
	struct profile *p;
	char *buf = NULL, stamp[32];
	size_t len = 0;
	struct error err = ERROR_INIT;
	FILE *mem;

	argc = parse_options(argc, argv, opts, push_usage);
	if (!server || !app || argc != 1)
		die_usage("push needs --server, --app and one FILE");
	p = cmd_read_profiles(argv, 1, &(struct read_options){0});
	mem = open_memstream(&buf, &len);
	if (!mem || pprof_write(p, mem, &err) < 0 || fclose(mem) != 0)
		die("%s: cannot encode as pprof: %s", argv[0],
		    err.msg[0] ? err.msg : "out of memory");
	strbuf_add(&body, buf, len);
	free(buf);
	strbuf_addstr(&url, server);
	strbuf_addstr(&url, "/api/v1/profiles");
	add_param(&url, "app", app);
	if (!from && p->time_nanos > 0) {
		snprintf(stamp, sizeof(stamp), "%lld", (long long)p->time_nanos);
		add_param(&url, "from", stamp);
		if (!until && p->duration_nanos > 0) {
			snprintf(stamp, sizeof(stamp), "%lld",
				 (long long)(p->time_nanos + p->duration_nanos));
			add_param(&url, "until", stamp);
		}
	}
	if (from)
		add_param(&url, "from", from);
	if (until)
		add_param(&url, "until", until);
	for (const char **t = tags; t && *t; t++) {
		const char *eq = strchr(*t, '=');
		char key[128];

		if (!eq || eq == *t || (size_t)(eq - *t) >= sizeof(key))
			die_usage("--tag takes K=V, not '%s'", *t);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *t), *t);
		if (!strcmp(key, "app") || !strcmp(key, "from") || !strcmp(key, "until"))
			die_usage("--tag: '%s' is a parameter name, not a label", key);
		add_param(&url, key, eq + 1);
	}
	request(url.buf, token_of(token), &body, &resp);
	profile_free(p);
	free(tags);
	strbuf_release(&url);
	strbuf_release(&body);
	strbuf_release(&resp);
	return 0;
}

int cmd_query(int argc, const char **argv)
{
	const char *server = NULL, *from = NULL, *until = NULL, *format = NULL, *out = NULL,
		   *token = NULL;
	int max_nodes = -1;
	const struct option opts[] = {
		OPT_STRING(0, "server", &server, "URL",
			   "plateau serve's address (http://127.0.0.1:4040)"),
		OPT_STRING(0, "from", &from, "T",
			   "window start: unix time, RFC 3339 or now-1h (now-1h)"),
		OPT_STRING(0, "until", &until, "T", "window end (now)"),
		OPT_STRING(0, "format", &format, "FMT",
			   "json, pprof, folded, svg or html (folded)"),
		OPT_INT(0, "max-nodes", &max_nodes, "N",
			"cut the tree at N nodes, the rest in 'other'"),
		OPT_STRING('o', "output", &out, "FILE", "write here (default stdout)"),
		OPT_STRING(0, "token", &token, "TOKEN", "API token (default $PLATEAU_TOKEN)"),
		OPT_END(),
	};
	struct strbuf url = STRBUF_INIT, resp = STRBUF_INIT;
	char num[24];
	FILE *f;

	argc = parse_options(argc, argv, opts, query_usage);
	if (!server || argc != 1)
		die_usage("query needs --server and one SELECTOR");
	strbuf_addstr(&url, server);
	strbuf_addstr(&url, "/api/v1/query");
	add_param(&url, "query", argv[0]);
	add_param(&url, "format", format ? format : "folded");
	if (from)
		add_param(&url, "from", from);
	if (until)
		add_param(&url, "until", until);
	if (max_nodes >= 0) {
		snprintf(num, sizeof(num), "%d", max_nodes);
		add_param(&url, "maxNodes", num);
	}
	request(url.buf, token_of(token), NULL, &resp);
	f = cmd_output_open(out);
	if (resp.len)
		fwrite(resp.buf, 1, resp.len, f);
	cmd_output_close(f, out);
	strbuf_release(&url);
	strbuf_release(&resp);
	return 0;
}
