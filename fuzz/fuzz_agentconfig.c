/* SPDX-License-Identifier: MIT */
/*
 * The agent's configuration parser: the input is split at NUL or newline
 * bytes into the values of the nine PLATEAU_* variables, in the order of
 * enum agent_var (missing ones are unset).  Parsing must not crash; a
 * refusal gives a non-empty one-line message naming the variable; what
 * parses is in range and expands its output path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"

struct fuzz_env {
	const char *values[AGENT_VAR_COUNT];
};

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
	if (cfg->output[0] && agent_config_output_path(cfg, 2147483647L, path, sizeof(path)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct agent_config cfg;
	struct fuzz_env env = {{NULL}};
	char err[AGENT_ERR_MAX];
	char *copy = malloc(size + 1);
	size_t i, start = 0, n = 0;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (i = 0; i <= size && n < AGENT_VAR_COUNT; i++) {
		if (i == size || copy[i] == '\0' || copy[i] == '\n') {
			copy[i] = '\0';
			env.values[n++] = copy + start;
			start = i + 1;
		}
	}
	memset(err, 'X', sizeof(err));
	if (agent_config_parse(&cfg, fuzz_getenv, &env, "fuzz", err, sizeof(err)) == 0) {
		if (err[0] != '\0')
			abort();
		check_config(&cfg);
	} else {
		size_t len = strnlen(err, sizeof(err));

		if (len == 0 || len == sizeof(err) || strchr(err, '\n') ||
		    strncmp(err, "PLATEAU_", 8) != 0 || !strstr(err, ": \""))
			abort();
	}
	free(copy);
	return 0;
}
