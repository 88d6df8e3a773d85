/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's API tokens (server.h, doc/plateau-serve.md): a request
 * carries a configured token as "Authorization: Bearer TOKEN", or as the
 * password of "Authorization: Basic base64(user:TOKEN)" (the user name is
 * not checked), which is how Pyroscope SDKs and Grafana Cloud clients send
 * basicAuthUser/basicAuthPassword.  Nothing here logs or keeps a secret.
 */
#include <string.h>
#include <strings.h>

#include "server/server.h"

#define BASIC_MAX 1024 /* decoded bytes of a Basic credential we look at */

/* Constant-time comparison: no timing tells how much of a token matched. */
static bool same_secret(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
	return d == 0;
}

static bool token_allows(const struct server_config *c, const char *secret, size_t len,
			 unsigned scope)
{
	bool ok = false;

	/* Every token is compared: the time does not tell which one matched. */
	for (size_t i = 0; i < c->ntokens; i++)
		ok |= (c->tokens[i].scopes & scope) && same_secret(secret, len, c->tokens[i].value);
	return ok;
}

static int base64_value(char ch)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = ch ? strchr(alphabet, ch) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

/*
 * Decode the standard base64 S (N bytes, padded or not) into OUT (SIZE
 * bytes).  Returns the decoded length, or -1 when malformed or too long.
 */
static long base64_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t len = n, o = 0, i;
	unsigned acc = 0, bits = 0;

	while (len > 0 && s[len - 1] == '=')
		len--;
	if (n - len > 2 || len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		int v = base64_value(s[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == size)
				return -1;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	return (long)o;
}

/* "Basic base64(user:password)": whether the password is a token with SCOPE. */
static bool basic_allows(const struct server_config *c, const char *cred, size_t len,
			 unsigned scope)
{
	char buf[BASIC_MAX];
	long n = base64_decode(cred, len, buf, sizeof(buf));
	const char *colon = n > 0 ? memchr(buf, ':', (size_t)n) : NULL;
	bool ok = false;

	if (colon)
		ok = token_allows(c, colon + 1, (size_t)(buf + n - colon - 1), scope);
	explicit_bzero(buf, sizeof(buf));
	return ok;
}

/*
 * Whether P starts with the auth scheme NAME (any case) followed by
 * spaces or tabs; *REST is then the credentials without the white space
 * around them and *LEN their length (RFC 9110 11.4: the scheme is
 * case-insensitive; header values come with optional white space).
 */
static bool scheme_is(const char *p, const char *name, const char **rest, size_t *len)
{
	size_t n = strlen(name), end;

	if (strncasecmp(p, name, n) != 0 || (p[n] != ' ' && p[n] != '\t'))
		return false;
	p += n + strspn(p + n, " \t");
	end = strlen(p);
	while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
		end--;
	*rest = p;
	*len = end;
	return true;
}

bool server_auth_allows(const struct server_config *c, const char *authorization, unsigned scope)
{
	const char *cred;
	size_t len;

	if (c->ntokens == 0)
		return true;
	if (!authorization)
		return false;
	if (scheme_is(authorization, "Bearer", &cred, &len))
		return token_allows(c, cred, len, scope);
	if (scheme_is(authorization, "Basic", &cred, &len))
		return basic_allows(c, cred, len, scope);
	return false;
}
