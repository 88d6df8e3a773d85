/* SPDX-License-Identifier: MIT */
/*
 * The agent's configuration parser: the input is split at NUL or newline
 * bytes into the values of the PLATEAU_* variables, in the order of enum
 * agent_var (missing ones are unset).  Parsing must not crash; a refusal
 * gives a non-empty one-line message naming the variable; what parses is
 * in range and expands its output path.
 *
 * Secrets: the input is parsed a second time with the letters and digits
 * of PLATEAU_TOKEN and of the password in PLATEAU_SERVER's user info
 * rotated (a-f among a-f, g-z among g-z, likewise upper case, 0-9; the two
 * hex digits of a %XX escape kept), which keeps every character's class.
 * Both parses must end alike with byte-identical messages and the same
 * cfg->server: no message and no printable field depends on a secret.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/config.h"

struct fuzz_env {
	const char *values[AGENT_VAR_COUNT];
};

static char rotate(char ch)
{
	if (ch >= 'a' && ch <= 'f')
		return ch == 'f' ? 'a' : (char)(ch + 1);
	if (ch >= 'g' && ch <= 'z')
		return ch == 'z' ? 'g' : (char)(ch + 1);
	if (ch >= 'A' && ch <= 'F')
		return ch == 'F' ? 'A' : (char)(ch + 1);
	if (ch >= 'G' && ch <= 'Z')
		return ch == 'Z' ? 'G' : (char)(ch + 1);
	if (ch >= '0' && ch <= '9')
		return ch == '9' ? '0' : (char)(ch + 1);
	return ch;
}

/* Rotate [S, END), keeping the two characters after each '%'. */
static void rotate_span(char *s, const char *end)
{
	for (; s < end; s++) {
		if (*s == '%') {
			s += end - s > 2 ? 2 : end - s - 1;
			continue;
		}
		*s = rotate(*s);
	}
}

/* The password of an http:// URL's user info: after the first ':' before
 * the last '@' of the authority (up to the first '/', '?' or '#'). */
static void rotate_password(char *url)
{
	char *p, *end, *at = NULL, *colon;

	if (strncmp(url, "http://", 7) != 0)
		return;
	p = url + 7;
	end = p + strcspn(p, "/?#");
	for (char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
	if (colon)
		rotate_span(colon + 1, at);
}

static const char *fuzz_getenv(const char *name, void *arg)
{
	struct fuzz_env *env = arg;
	size_t i;

	for (i = 0; i < AGENT_VAR_COUNT; i++)
		if (strcmp(name, agent_config_var_name((enum agent_var)i)) == 0)
			return env->values[i];
	abort(); /* the parser asked for a variable it does not document */
}

static void check_config(const struct agent_config *cfg)
{
	static char path[AGENT_PATH_MAX + 64];
	size_t i;

	if (cfg->modes == 0 || cfg->modes > 15 || cfg->hz < 1 || cfg->hz > 1000 ||
	    cfg->upload_interval_ms < 1000 || cfg->upload_interval_ms > 3600000 ||
	    cfg->alloc_rate < 1 || cfg->alloc_rate > (UINT64_C(1) << 30) ||
	    cfg->lock_threshold_ns > UINT64_C(10000000000) || cfg->ntags > AGENT_TAGS_MAX ||
	    !cfg->app[0] || (cfg->server[0] && cfg->server_port == 0))
		abort();
	for (i = 0; i < cfg->ntags; i++)
		if (!cfg->tags[i].key[0] || !cfg->tags[i].value[0])
			abort();
	/* Secrets and the tenant go into header lines: no control characters. */
	for (i = 0; cfg->token[i]; i++)
		if ((unsigned char)cfg->token[i] <= 0x20 || (unsigned char)cfg->token[i] >= 0x7f)
			abort();
	for (i = 0; cfg->tenant[i]; i++)
		if ((unsigned char)cfg->tenant[i] < 0x21 || cfg->tenant[i] == 0x7f ||
		    cfg->tenant[i] == ',' || cfg->tenant[i] == ':')
			abort();
	if ((cfg->token[0] && cfg->server_password[0]) ||
	    (cfg->server_password[0] && !strstr(cfg->server, ":***@")) ||
	    strchr(cfg->server_user, ':'))
		abort();
	for (i = 0; cfg->server_password[i]; i++)
		if ((unsigned char)cfg->server_password[i] < 0x20 ||
		    cfg->server_password[i] == 0x7f)
			abort();
	if (cfg->output[0] && agent_config_output_path(cfg, 2147483647L, path, sizeof(path)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Split COPY (SIZE bytes and a NUL) at NUL or newline into ENV's values. */
static void split(char *copy, size_t size, struct fuzz_env *env)
{
	size_t i, start = 0, n = 0;

	for (i = 0; i <= size && n < AGENT_VAR_COUNT; i++) {
		if (i == size || copy[i] == '\0' || copy[i] == '\n') {
			copy[i] = '\0';
			env->values[n++] = copy + start;
			start = i + 1;
		}
	}
}

/* Parse ENV into CFG and ERR and check the result; returns the parse's result. */
static int parse_and_check(struct fuzz_env *env, struct agent_config *cfg, char *err)
{
	int rc;

	memset(err, 'X', AGENT_ERR_MAX);
	rc = agent_config_parse(cfg, fuzz_getenv, env, "fuzz", err, AGENT_ERR_MAX);
	if (rc == 0) {
		if (err[0] != '\0')
			abort();
		check_config(cfg);
	} else {
		size_t len = strnlen(err, AGENT_ERR_MAX);

		/* Only the token's messages quote nothing. */
		if (len == 0 || len == AGENT_ERR_MAX || strchr(err, '\n') ||
		    strncmp(err, "PLATEAU_", 8) != 0 ||
		    (strncmp(err, "PLATEAU_TOKEN: ", 15) != 0 && !strstr(err, ": \"")))
			abort();
	}
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct agent_config cfg, twin_cfg;
	struct fuzz_env env = {{NULL}}, twin = {{NULL}};
	char err[AGENT_ERR_MAX], twin_err[AGENT_ERR_MAX];
	char *copy = malloc(size + 1), *twin_copy = malloc(size + 1);
	const char *tok;
	int rc;

	if (!copy || !twin_copy) {
		free(copy);
		free(twin_copy);
		return 0;
	}
	memcpy(copy, data, size);
	copy[size] = '\0';
	memcpy(twin_copy, copy, size + 1);
	split(copy, size, &env);
	split(twin_copy, size, &twin);
	tok = twin.values[AGENT_VAR_TOKEN];
	if (tok)
		rotate_span((char *)tok, tok + strlen(tok));
	if (twin.values[AGENT_VAR_SERVER])
		rotate_password((char *)twin.values[AGENT_VAR_SERVER]);
	rc = parse_and_check(&env, &cfg, err);
	if (parse_and_check(&twin, &twin_cfg, twin_err) != rc)
		abort();
	if (rc != 0 && strcmp(err, twin_err) != 0)
		abort(); /* a message shows a secret */
	if (rc == 0 &&
	    (strcmp(cfg.server, twin_cfg.server) != 0 || (tok && strcmp(twin_cfg.token, tok) != 0)))
		abort();
	free(copy);
	free(twin_copy);
	return 0;
}
