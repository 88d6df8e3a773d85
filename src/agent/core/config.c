/* SPDX-License-Identifier: MIT */
/*
 * The agent's configuration parser.  libc only: of the rest of src/ only
 * the libc-only duration grammar (util/duration.c, compiled into the
 * agent) and header-only util/banned.h; no allocation, no global state,
 * no exits (see config.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agent/core/config.h"
#include "util/duration.h"
#include "util/banned.h"

#define QUOTE_MAX  64		    /* output bytes of a value quoted in a message */
#define QUOTE_SIZE (QUOTE_MAX + 10) /* room for the last escape, "...", quotes, NUL */
#define NS_PER_US  UINT64_C(1000)
#define NS_PER_MS  UINT64_C(1000000)
#define NS_PER_S   UINT64_C(1000000000)
#define GIB	   (UINT64_C(1) << 30)

static const char *const var_names[AGENT_VAR_COUNT] = {
	"PLATEAU_MODES",
	"PLATEAU_HZ",
	"PLATEAU_OUTPUT",
	"PLATEAU_SERVER",
	"PLATEAU_APP",
	"PLATEAU_TAGS",
	"PLATEAU_UPLOAD_INTERVAL",
	"PLATEAU_ALLOC_RATE",
	"PLATEAU_LOCK_THRESHOLD",
	"PLATEAU_FORK",
	"PLATEAU_TOKEN",
	"PLATEAU_TENANT",
};

struct unit {
	const char *name;
	uint64_t scale;
};

/* The error context: where messages go and which variable is being read. */
struct ctx {
	char *err;
	size_t errsize;
	const char *var;
	const char *value; /* what is parsed */
	const char *shown; /* what a message quotes: the value, a URL's password as *** */
	bool secret;	   /* quote nothing: the value is a secret */
};

const char *agent_config_var_name(enum agent_var var)
{
	if ((unsigned)var >= AGENT_VAR_COUNT)
		return NULL;
	return var_names[var];
}

/*
 * Quote LEN bytes of S into BUF (QUOTE_SIZE bytes) as "...", escaping so the
 * result is one line, and cut after QUOTE_MAX output bytes with "...".
 */
static const char *quote(char *buf, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (o >= QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* Set "VAR: "value" MESSAGE" and return -1. */
__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	char q[QUOTE_SIZE];
	va_list ap;
	int n;

	if (!c->err || c->errsize == 0)
		return -1;
	if (c->secret)
		n = snprintf(c->err, c->errsize, "%s: ", c->var);
	else
		n = snprintf(c->err, c->errsize, "%s: %s ", c->var,
			     quote(q, c->shown, strlen(c->shown)));
	if (n >= 0 && (size_t)n < c->errsize) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errsize - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool is_app_char(char ch)
{
	return is_alpha(ch) || is_digit(ch) || ch == '.' || ch == '_' || ch == '-';
}

/*
 * Read the decimal digits at *S into *VAL, moving *S past them.  Returns
 * false when there are none or the number exceeds LIMIT.
 */
static bool parse_digits(const char **s, uint64_t limit, uint64_t *val)
{
	const char *p = *s;
	uint64_t v = 0;

	if (!is_digit(*p))
		return false;
	for (; is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*s = p;
	*val = v;
	return true;
}

/* A whole number with an optional unit from UNITS (NULL-terminated); bare
 * numbers only when BARE_SCALE is not 0.  Returns false when malformed or
 * the result exceeds LIMIT. */
static bool parse_scaled(const char *s, const struct unit *units, uint64_t bare_scale,
			 uint64_t limit, uint64_t *val)
{
	uint64_t n;
	size_t i;

	if (!parse_digits(&s, UINT64_MAX, &n))
		return false;
	if (*s == '\0') {
		if (bare_scale == 0 || n > limit / bare_scale)
			return false;
		*val = n * bare_scale;
		return true;
	}
	for (i = 0; units[i].name; i++) {
		if (strcmp(s, units[i].name) == 0) {
			if (n > limit / units[i].scale)
				return false;
			*val = n * units[i].scale;
			return true;
		}
	}
	return false;
}

static int parse_modes(struct ctx *c, struct agent_config *cfg)
{
	static const struct {
		const char *name;
		unsigned bit;
	} modes[] = {
		{"cpu", AGENT_MODE_CPU},
		{"wall", AGENT_MODE_WALL},
		{"alloc", AGENT_MODE_ALLOC},
		{"lock", AGENT_MODE_LOCK},
	};
	const char *p = c->value;
	unsigned bits = 0;

	for (;;) {
		size_t len = strcspn(p, ","), i;
		char q[QUOTE_SIZE];

		if (len == 0)
			return fail(c, "has an empty mode (expected a comma list of cpu, wall, "
				       "alloc, lock)");
		for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			if (strlen(modes[i].name) == len && memcmp(p, modes[i].name, len) == 0)
				break;
		if (i == sizeof(modes) / sizeof(modes[0]))
			return fail(c,
				    "has unknown mode %s (expected a comma list of cpu, wall, "
				    "alloc, lock)",
				    quote(q, p, len));
		bits |= modes[i].bit;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	cfg->modes = bits;
	return 0;
}

static int parse_hz(struct ctx *c, struct agent_config *cfg)
{
	const char *p = c->value;
	uint64_t v;

	if (!parse_digits(&p, UINT64_MAX, &v) || *p != '\0' || v < 1 || v > 1000)
		return fail(c, "is not a number of samples per second (1..1000)");
	cfg->hz = (unsigned)v;
	return 0;
}

static int parse_output(struct ctx *c, struct agent_config *cfg)
{
	const char *p;
	size_t len = strlen(c->value);

	if (len >= sizeof(cfg->output))
		return fail(c, "is longer than %d bytes", AGENT_PATH_MAX - 1);
	for (p = c->value; (p = strchr(p, '%')) != NULL; p += 2)
		if (p[1] != 'p' && p[1] != '%')
			return fail(c, "has a '%%' not followed by p (the pid) or %%");
	memcpy(cfg->output, c->value, len + 1);
	return 0;
}

/* Host of an http URL: a name or IPv4 address, or [IPv6]. */
static int parse_host(struct ctx *c, const char **s, struct agent_config *cfg)
{
	const char *p = *s, *end;
	size_t len;

	if (*p == '[') {
		end = p + 1 + strspn(p + 1, "0123456789abcdefABCDEF:.");
		if (*end != ']' || end == p + 1)
			return fail(c, "has a bad IPv6 address (expected http://[addr]:port)");
		p++;
		len = (size_t)(end - p);
		*s = end + 1;
	} else {
		len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
		if (len == 0)
			return fail(c, "has no host (expected http://host[:port][/path])");
		*s = p + len;
	}
	if (len >= sizeof(cfg->server_host))
		return fail(c, "has a host longer than %d bytes", AGENT_HOST_MAX - 1);
	memcpy(cfg->server_host, p, len);
	cfg->server_host[len] = '\0';
	return 0;
}

/*
 * Write URL into BUF (SIZE bytes, cut to fit) with the password of its user
 * info replaced by ***: the user info is what comes before the last '@' of
 * the authority (after "://", or from the start when there is none, up to
 * the first '/', '?' or '#'), its password what follows its first ':'.
 * Returns the length of the whole result.
 */
static size_t redact_url(const char *url, char *buf, size_t size)
{
	const char *auth = strstr(url, "://"), *end, *at = NULL, *colon, *p;
	size_t n;

	auth = auth ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	for (p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (!colon)
		return (size_t)snprintf(buf, size, "%s", url);
	n = (size_t)(colon + 1 - url);
	return (size_t)snprintf(buf, size, "%.*s***%s", (int)n, url, at);
}

static int hex_digit(char ch)
{
	if (is_digit(ch))
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* RFC 3986 userinfo characters besides ':' and '%': unreserved and sub-delims. */
static bool is_userinfo_char(char ch)
{
	return is_alpha(ch) || is_digit(ch) || (ch && strchr("-._~!$&'()*+,;=", ch));
}

/*
 * Percent-decode the LEN bytes at S into OUT (SIZE bytes with the NUL).
 * Returns the decoded length, -1 for a bad character or escape, -2 when
 * it does not fit, -3 for a control character once decoded.
 */
static int decode_userinfo(const char *s, size_t len, char *out, size_t size)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		int ch = (unsigned char)s[i];

		if (s[i] == '%') {
			int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
			int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;

			if (lo < 0)
				return -1;
			ch = hi * 16 + lo;
			i += 2;
		} else if (!is_userinfo_char(s[i]) && s[i] != ':') {
			return -1;
		}
		if (ch < 0x20 || ch == 0x7f)
			return -3;
		if (o + 1 >= size)
			return -2;
		out[o++] = (char)ch;
	}
	out[o] = '\0';
	return (int)o;
}

/* "user:password" of LEN bytes at S, percent-decoded into cfg->server_user/password. */
static int parse_userinfo(struct ctx *c, const char *s, size_t len, struct agent_config *cfg)
{
	const char *colon = memchr(s, ':', len);
	size_t ulen;
	int n;

	if (!colon)
		return fail(c, "has a user name without a password (expected "
			       "http://user:password@host)");
	ulen = (size_t)(colon - s);
	n = decode_userinfo(s, ulen, cfg->server_user, sizeof(cfg->server_user));
	if (n >= 0 && memchr(cfg->server_user, ':', (size_t)n))
		n = -1;
	if (n == -2)
		return fail(c, "has a user name longer than %d bytes", AGENT_USER_MAX);
	if (n >= 0)
		n = decode_userinfo(colon + 1, len - ulen - 1, cfg->server_password,
				    sizeof(cfg->server_password));
	if (n == -1)
		return fail(c, "has a bad character or %% escape in its user info "
			       "(percent-encode @ : / as %%40 %%3A %%2F)");
	if (n == -3)
		return fail(c, "has a control character in its user name or password");
	if (n == 0)
		return fail(c, "has an empty password (expected http://user:password@host)");
	return 0;
}

static int parse_server(struct ctx *c, struct agent_config *cfg)
{
	const char *p = c->value, *at = NULL, *q;
	size_t len = strlen(p);
	uint64_t port = 80;

	if (len >= sizeof(cfg->server))
		return fail(c, "is longer than %d bytes", AGENT_URL_MAX - 1);
	if (strncmp(p, "http://", 7) != 0)
		return fail(c, "is not an http:// URL (expected http://host[:port][/path])");
	p += 7;
	for (q = p; *q && !strchr("/?#", *q); q++)
		if (*q == '@')
			at = q;
	if (at) {
		if (parse_userinfo(c, p, (size_t)(at - p), cfg) < 0)
			return -1;
		p = at + 1;
	}
	if (parse_host(c, &p, cfg) < 0)
		return -1;
	if (*p == ':') {
		p++;
		if (!parse_digits(&p, UINT64_MAX, &port) || port < 1 || port > 65535)
			return fail(c, "has a bad port (expected 1..65535)");
	}
	if (*p != '\0' && *p != '/')
		return fail(c, "has a bad character after the host (expected "
			       "http://[user:password@]host[:port][/path])");
	for (q = p; *q; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f || *q == '#')
			return fail(c, "has a space, control character or '#' in its path");
	if (redact_url(c->value, cfg->server, sizeof(cfg->server)) >= sizeof(cfg->server))
		return fail(c, "is longer than %d bytes", AGENT_URL_MAX - 1);
	memcpy(cfg->server_path, p, strlen(p) + 1);
	cfg->server_port = (uint16_t)port;
	return 0;
}

static int parse_app(struct ctx *c, struct agent_config *cfg)
{
	size_t len = strspn(c->value, "abcdefghijklmnopqrstuvwxyz"
				      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

	if (c->value[len] != '\0' || len > AGENT_APP_MAX)
		return fail(c, "is not an app name ([A-Za-z0-9._-], 1..%d characters)",
			    AGENT_APP_MAX);
	memcpy(cfg->app, c->value, len + 1);
	return 0;
}

static bool tag_key_ok(const char *k, size_t len)
{
	size_t i;

	if (len == 0 || len > AGENT_TAG_KEY_MAX || !(is_alpha(k[0]) || k[0] == '_'))
		return false;
	for (i = 1; i < len; i++)
		if (!(is_alpha(k[i]) || is_digit(k[i]) || k[i] == '_'))
			return false;
	return true;
}

/* One k=v of LEN bytes at P, appended to cfg->tags. */
static int parse_tag(struct ctx *c, struct agent_config *cfg, const char *p, size_t len)
{
	const char *eq = memchr(p, '=', len);
	char q[QUOTE_SIZE];
	size_t klen, vlen, i;
	struct agent_tag *t;

	if (len == 0)
		return fail(c, "has an empty tag (expected k=v,k=v)");
	if (!eq)
		return fail(c, "has tag %s without '=' (expected k=v)", quote(q, p, len));
	klen = (size_t)(eq - p);
	vlen = len - klen - 1;
	if (!tag_key_ok(p, klen))
		return fail(c, "has tag key %s (expected [A-Za-z_][A-Za-z0-9_]{0,63})",
			    quote(q, p, klen));
	if (vlen == 0 || vlen > AGENT_TAG_VALUE_MAX || memchr(eq + 1, '=', vlen))
		return fail(c, "has a bad value for tag %s (expected 1..%d bytes, no ',' or '=')",
			    quote(q, p, klen), AGENT_TAG_VALUE_MAX);
	for (i = 0; i < vlen; i++)
		if ((unsigned char)eq[1 + i] < 0x20 || eq[1 + i] == 0x7f)
			return fail(c, "has a control character in the value of tag %s",
				    quote(q, p, klen));
	for (i = 0; i < cfg->ntags; i++)
		if (strlen(cfg->tags[i].key) == klen && memcmp(cfg->tags[i].key, p, klen) == 0)
			return fail(c, "has tag key %s twice", quote(q, p, klen));
	if (cfg->ntags == AGENT_TAGS_MAX)
		return fail(c, "has more than %d tags", AGENT_TAGS_MAX);
	t = &cfg->tags[cfg->ntags++];
	memcpy(t->key, p, klen);
	t->key[klen] = '\0';
	memcpy(t->value, eq + 1, vlen);
	t->value[vlen] = '\0';
	return 0;
}

static int parse_tags(struct ctx *c, struct agent_config *cfg)
{
	const char *p = c->value;

	cfg->ntags = 0;
	for (;;) {
		size_t len = strcspn(p, ",");

		if (parse_tag(c, cfg, p, len) < 0)
			return -1;
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* util/duration.h's grammar, rounded down to whole milliseconds. */
static int parse_upload_interval(struct ctx *c, struct agent_config *cfg)
{
	int64_t ns;

	if (duration_scan(c->value, &ns, NULL) < 0 || ns < (int64_t)(1 * NS_PER_S) ||
	    ns / (int64_t)NS_PER_MS > 3600000)
		return fail(c, "is not a duration from 1s to 1h (units ms, s, m; e.g. 10s)");
	cfg->upload_interval_ms = (uint64_t)ns / NS_PER_MS;
	return 0;
}

static int parse_alloc_rate(struct ctx *c, struct agent_config *cfg)
{
	static const struct unit units[] = {{"KiB", 1024},  {"k", 1024},  {"MiB", 1 << 20},
					    {"m", 1 << 20}, {"GiB", GIB}, {"g", GIB},
					    {NULL, 0}};
	uint64_t v;

	if (!parse_scaled(c->value, units, 1, UINT64_MAX, &v) || v < 1 || v > GIB)
		return fail(c, "is not a number of bytes from 1 to 1GiB (suffixes KiB, MiB, GiB, "
			       "k, m, g; e.g. 512KiB)");
	cfg->alloc_rate = v;
	return 0;
}

static int parse_lock_threshold(struct ctx *c, struct agent_config *cfg)
{
	int64_t ns;

	if (duration_scan(c->value, &ns, NULL) < 0 || ns > (int64_t)(10 * NS_PER_S))
		return fail(c, "is not a duration from 0 to 10s (units ns, us, ms, s; e.g. 10us)");
	cfg->lock_threshold_ns = (uint64_t)ns;
	return 0;
}

/* Whether a fork child profiles itself (the default) or runs without the agent. */
static int parse_fork(struct ctx *c, struct agent_config *cfg)
{
	if (!strcmp(c->value, "profile"))
		cfg->fork_off = false;
	else if (!strcmp(c->value, "off"))
		cfg->fork_off = true;
	else
		return fail(c, "is not profile or off");
	return 0;
}

/* A bearer token: printable ASCII without spaces, so it cannot break its header line. */
static int parse_token(struct ctx *c, struct agent_config *cfg)
{
	size_t len = strlen(c->value), i;

	if (len > AGENT_TOKEN_MAX)
		return fail(c, "is longer than %d bytes", AGENT_TOKEN_MAX);
	for (i = 0; i < len; i++)
		if ((unsigned char)c->value[i] <= 0x20 || (unsigned char)c->value[i] >= 0x7f)
			return fail(c,
				    "has a space, control character or non-ASCII byte at byte %zu "
				    "(a token is printable ASCII)",
				    i + 1);
	memcpy(cfg->token, c->value, len + 1);
	return 0;
}

/* A tenant ID as Pyroscope takes it: [A-Za-z0-9!._*'()-], 1..150 bytes, not . or ..; */
static int parse_tenant(struct ctx *c, struct agent_config *cfg)
{
	size_t len = strspn(c->value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789!-_.*'()");

	if (c->value[len] != '\0' || len > AGENT_TENANT_MAX || !strcmp(c->value, ".") ||
	    !strcmp(c->value, ".."))
		return fail(c, "is not a tenant ID ([A-Za-z0-9!._*'()-], 1..%d bytes, not . or ..)",
			    AGENT_TENANT_MAX);
	memcpy(cfg->tenant, c->value, len + 1);
	return 0;
}

typedef int (*parse_fn)(struct ctx *c, struct agent_config *cfg);

static const parse_fn parsers[AGENT_VAR_COUNT] = {
	parse_modes,
	parse_hz,
	parse_output,
	parse_server,
	parse_app,
	parse_tags,
	parse_upload_interval,
	parse_alloc_rate,
	parse_lock_threshold,
	parse_fork,
	parse_token,
	parse_tenant,
};

void agent_config_defaults(struct agent_config *cfg, const char *progname)
{
	const char *base = progname ? strrchr(progname, '/') : NULL;
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->modes = AGENT_MODE_CPU;
	cfg->hz = 99;
	memcpy(cfg->output, AGENT_DEFAULT_OUTPUT, sizeof(AGENT_DEFAULT_OUTPUT));
	cfg->output_default = true;
	cfg->server_port = 80;
	cfg->upload_interval_ms = 10000;
	cfg->alloc_rate = 524288;
	cfg->lock_threshold_ns = 10 * NS_PER_US;
	base = base ? base + 1 : progname ? progname : "";
	for (i = 0; base[i] && i < AGENT_APP_MAX; i++)
		cfg->app[i] = is_app_char(base[i]) ? base[i] : '_';
	cfg->app[i] = '\0';
	if (i == 0)
		memcpy(cfg->app, "unknown", sizeof("unknown"));
}

int agent_config_parse(struct agent_config *cfg, agent_getenv_fn getenv_fn, void *arg,
		       const char *progname, char *err, size_t errsize)
{
	struct ctx c = {.err = err, .errsize = errsize};
	bool output_set = false, server_set = false;
	char shown[2 * QUOTE_MAX];
	size_t i;

	if (err && errsize)
		err[0] = '\0';
	agent_config_defaults(cfg, progname);
	for (i = 0; i < AGENT_VAR_COUNT; i++) {
		const char *v = getenv_fn(var_names[i], arg);
		size_t len;

		c.var = var_names[i];
		c.value = c.shown = v;
		c.secret = i == AGENT_VAR_TOKEN;
		if (v && !*v && i == AGENT_VAR_TOKEN) /* a secret that failed to arrive */
			return fail(&c, "is set but empty (unset it to push without a token)");
		if (!v || !*v)
			continue;
		if (i == AGENT_VAR_SERVER) {
			redact_url(v, shown, sizeof(shown));
			c.shown = shown;
		}
		len = strlen(v);
		if (is_space(v[0]) || is_space(v[len - 1]))
			return fail(&c, "has leading or trailing whitespace");
		if (parsers[i](&c, cfg) < 0)
			return -1;
		output_set |= i == AGENT_VAR_OUTPUT;
		server_set |= i == AGENT_VAR_SERVER;
	}
	if (cfg->token[0] && cfg->server_password[0]) {
		c.var = var_names[AGENT_VAR_TOKEN];
		c.secret = true;
		return fail(&c, "is set and PLATEAU_SERVER has a user:password: use one of them");
	}
	if (output_set || server_set)
		cfg->output_default = false;
	if (!output_set && server_set)
		cfg->output[0] = '\0';
	return 0;
}

int agent_config_output_path(const struct agent_config *cfg, long pid, char *buf, size_t size)
{
	const char *p;
	size_t o = 0;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	if (!cfg->output[0])
		return -1;
	for (p = cfg->output; *p; p++) {
		char num[24];
		const char *s = num;
		size_t n;

		if (p[0] == '%' && p[1] == 'p') {
			snprintf(num, sizeof(num), "%ld", pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			s = "%";
			p++;
		} else {
			num[0] = *p;
			num[1] = '\0';
		}
		n = strlen(s);
		if (n >= size - o) {
			buf[0] = '\0';
			return -1;
		}
		memcpy(buf + o, s, n + 1);
		o += n;
	}
	return 0;
}
