/* SPDX-License-Identifier: MIT */
/*
 * plateau push and plateau query: the command-line clients of plateau
 * serve (doc/plateau-serve.md), over libcurl.  The token comes from
 * --token, --token-file or PLATEAU_TOKEN and is sent as "Authorization:
 * Bearer"; user:password in the --server URL goes as Basic (libcurl
 * reads it from the URL); --tenant or PLATEAU_TENANT as X-Scope-OrgID.
 * No message shows a token or a password: URLs are shown with ***.
 */
#include <curl/curl.h>
#include <time.h>

#include "util/common.h"
#include "cmd/cmd.h"
#include "format/pprof.h"
#include "store/timeparse.h"
#include "util/strbuf.h"

#define RESPONSE_MAX ((size_t)1 << 30)
#define TOKEN_MAX    4096 /* bytes of a token, as the agent's PLATEAU_TOKEN */
#define TENANT_MAX   150  /* bytes of a tenant ID, as Pyroscope's */

/* How requests authenticate: the options, then what is in use. */
struct auth {
	const char *token, *token_file, *tenant; /* options, borrowed from argv */
	char *secret;				 /* the token in use (malloc'ed, wiped) or NULL */
	const char *tenant_id;			 /* the tenant in use or NULL */
};

#define AUTH_OPTIONS(a)                                                                        \
	OPT_STRING(0, "token", &(a)->token, "TOKEN",                                           \
		   "API token, sent as Bearer (default $PLATEAU_TOKEN; --token-file keeps it " \
		   "out of ps)"),                                                              \
		OPT_STRING(0, "token-file", &(a)->token_file, "FILE",                          \
			   "read the API token from FILE (one line)"),                         \
		OPT_STRING(0, "tenant", &(a)->tenant, "ID",                                    \
			   "tenant, sent as X-Scope-OrgID (default $PLATEAU_TENANT)")

static const char *const push_usage[] = {
	"plateau push --server URL --app NAME [--tag K=V]... [--from T] [--until T] "
	"[--token T | --token-file F] [--tenant ID] FILE",
	NULL,
};

static const char *const query_usage[] = {
	"plateau query --server URL 'SELECTOR' [--from T] [--until T]",
	"              [--format json|pprof|folded|svg|html] [--max-nodes N] [-o FILE]",
	"              [--token T | --token-file F] [--tenant ID]",
	NULL,
};

/*
 * The user info of URL (before the last '@' of the part after "://" up to
 * the first '/', '?' or '#'): its start, and its end in *AT; NULL when none.
 */
static const char *userinfo(const char *url, const char **at)
{
	const char *auth = strstr(url, "://"), *end;

	auth = auth ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	*at = NULL;
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			*at = p;
	return *at ? auth : NULL;
}

/* URL for messages: a password in its user info shown as ***. */
static void add_redacted(struct strbuf *sb, const char *url)
{
	const char *at, *ui = userinfo(url, &at), *colon;

	colon = ui ? memchr(ui, ':', (size_t)(at - ui)) : NULL;
	if (!colon) {
		strbuf_addstr(sb, url);
		return;
	}
	strbuf_add(sb, url, (size_t)(colon + 1 - url));
	strbuf_addf(sb, "***%s", at);
}

/* Dies unless T (from WHAT) is a token: 1..TOKEN_MAX bytes of printable ASCII. */
static void check_token(const char *what, const char *t)
{
	size_t len = strlen(t);

	if (len == 0)
		die_usage("%s: the token is empty", what);
	if (len > TOKEN_MAX)
		die_usage("%s: the token is longer than %d bytes", what, TOKEN_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			die_usage("%s: the token has a space, control character or non-ASCII byte "
				  "at byte %zu (a token is printable ASCII)",
				  what, i + 1);
}

/* The token in PATH's first line (its newline dropped), malloc'ed. */
static char *read_token_file(const char *path)
{
	char buf[TOKEN_MAX + 3], what[64];
	FILE *f = fopen(path, "r");
	size_t n;
	char *t;

	if (!f)
		die("--token-file %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	if (ferror(f))
		die("--token-file %s: %s", path, strerror(errno));
	fclose(f);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	snprintf(what, sizeof(what), "--token-file %.40s", path);
	if (strlen(buf) != n)
		die_usage("%s: the token has a NUL byte", what);
	check_token(what, buf);
	t = xstrdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return t;
}

static bool tenant_ok(const char *t)
{
	size_t len = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789!-_.*'()");

	return len > 0 && !t[len] && len <= TENANT_MAX && strcmp(t, ".") && strcmp(t, "..");
}

/* The token and tenant in use from A's options and the environment; dies on a bad one. */
static void auth_resolve(struct auth *a, const char *server)
{
	const char *env = getenv("PLATEAU_TOKEN"), *at;

	if (a->token && a->token_file)
		die_usage("--token and --token-file: give one");
	if (a->token) {
		check_token("--token", a->token);
		a->secret = xstrdup(a->token);
	} else if (a->token_file) {
		a->secret = read_token_file(a->token_file);
	} else if (env) {
		check_token("PLATEAU_TOKEN", env);
		a->secret = xstrdup(env);
	}
	if (a->secret && userinfo(server, &at))
		die_usage("--server has user info (user:password@) and a token is given "
			  "(--token, --token-file or PLATEAU_TOKEN): give one");
	a->tenant_id = a->tenant ? a->tenant : getenv("PLATEAU_TENANT");
	if (a->tenant_id && !a->tenant && !a->tenant_id[0])
		a->tenant_id = NULL; /* an empty variable is unset */
	if (a->tenant_id && !tenant_ok(a->tenant_id))
		die_usage("%s: \"%.64s\" is not a tenant ID ([A-Za-z0-9!._*'()-], 1..%d bytes, "
			  "not . or ..)",
			  a->tenant ? "--tenant" : "PLATEAU_TENANT", a->tenant_id, TENANT_MAX);
}

static void auth_release(struct auth *a)
{
	if (a->secret) {
		explicit_bzero(a->secret, strlen(a->secret));
		free(a->secret);
		a->secret = NULL;
	}
}

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

/* The request's headers: the token, the tenant, the body's type. */
static struct curl_slist *request_headers(const struct auth *a, bool body)
{
	struct curl_slist *h = NULL;
	struct strbuf line = STRBUF_INIT;

	if (a->secret) {
		strbuf_addf(&line, "Authorization: Bearer %s", a->secret);
		h = curl_slist_append(h, line.buf);
		explicit_bzero(line.buf, line.len);
		strbuf_release(&line);
	}
	if (a->tenant_id) {
		strbuf_addf(&line, "X-Scope-OrgID: %s", a->tenant_id);
		h = curl_slist_append(h, line.buf);
		strbuf_release(&line);
	}
	if (body)
		h = curl_slist_append(h, "Content-Type: application/octet-stream");
	return h;
}

static void headers_free(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* One request; dies on a transport error or a non-2xx reply (with its error message). */
static void request(const char *url, const struct auth *a, const struct strbuf *body,
		    struct strbuf *resp)
{
	struct curl_slist *h = request_headers(a, body != NULL);
	struct strbuf shown = STRBUF_INIT;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;

	if (!c)
		die("cannot start libcurl");
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
	headers_free(h);
	curl_easy_cleanup(c);
	add_redacted(&shown, url);
	if (rc == CURLE_OK)
		debug(DEBUG_CLIENT, "%s %s: %zu bytes sent, HTTP %ld, %zu bytes back",
		      body ? "POST" : "GET", shown.buf, body ? body->len : 0, status, resp->len);
	if (rc != CURLE_OK)
		die("%s: %s", shown.buf, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	if (status / 100 != 2) {
		/* The server's one-line {"error":"..."}, shown as it came. */
		while (resp->len && (resp->buf[resp->len - 1] == '\n'))
			strbuf_setlen(resp, resp->len - 1);
		die("%s: HTTP %ld: %s", shown.buf, status, resp->len ? resp->buf : "(no body)");
	}
	strbuf_release(&shown);
}

int cmd_push(int argc, const char **argv)
{
	const char *server = NULL, *app = NULL, *from = NULL, *until = NULL;
	const char **tags = NULL;
	struct auth auth = {0};
	const struct option opts[] = {
		OPT_STRING(0, "server", &server, "URL",
			   "plateau serve's address (http://127.0.0.1:4040)"),
		OPT_STRING(0, "app", &app, "NAME", "the application the profile belongs to"),
		OPT_LIST(0, "tag", &tags, "K=V", "a label of the series (repeatable)"),
		OPT_STRING(0, "from", &from, "T",
			   "start of the profile's window (default: its own, or now)"),
		OPT_STRING(0, "until", &until, "T", "end of the window"),
		AUTH_OPTIONS(&auth),
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
	auth_resolve(&auth, server);
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
	request(url.buf, &auth, &body, &resp);
	auth_release(&auth);
	profile_free(p);
	free(tags);
	strbuf_release(&url);
	strbuf_release(&body);
	strbuf_release(&resp);
	return 0;
}

int cmd_query(int argc, const char **argv)
{
	const char *server = NULL, *from = NULL, *until = NULL, *format = NULL, *out = NULL;
	struct auth auth = {0};
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
		AUTH_OPTIONS(&auth),
		OPT_END(),
	};
	struct strbuf url = STRBUF_INIT, resp = STRBUF_INIT;
	char num[24];
	FILE *f;

	argc = parse_options(argc, argv, opts, query_usage);
	if (!server || argc != 1)
		die_usage("query needs --server and one SELECTOR");
	auth_resolve(&auth, server);
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
	request(url.buf, &auth, NULL, &resp);
	auth_release(&auth);
	f = cmd_output_open(out);
	if (resp.len)
		fwrite(resp.buf, 1, resp.len, f);
	cmd_output_close(f, out);
	strbuf_release(&url);
	strbuf_release(&resp);
	return 0;
}
