/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_CORE_CONFIG_H
#define PLATEAU_AGENT_CORE_CONFIG_H

/*
 * The agent's configuration, read from the PLATEAU_* environment variables
 * (doc/agent-config.md).  This code runs inside arbitrary host programs: it
 * uses libc only, never allocates, never exits or prints, and keeps no
 * global state.  The environment is read through a callback so that tests
 * need no real environment.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Profile kinds: bits of agent_config.modes. */
enum agent_mode {
	AGENT_MODE_CPU = 1u << 0,
	AGENT_MODE_WALL = 1u << 1,
	AGENT_MODE_ALLOC = 1u << 2,
	AGENT_MODE_LOCK = 1u << 3,
};

#define AGENT_PATH_MAX	     4096 /* PLATEAU_OUTPUT, with its NUL */
#define AGENT_URL_MAX	     2048 /* PLATEAU_SERVER, with its NUL */
#define AGENT_HOST_MAX	     256  /* host part of the URL, with its NUL */
#define AGENT_APP_MAX	     100  /* characters of PLATEAU_APP */
#define AGENT_TAGS_MAX	     16	  /* tags in PLATEAU_TAGS */
#define AGENT_TAG_KEY_MAX    64	  /* characters of a tag key */
#define AGENT_TAG_VALUE_MAX  255  /* bytes of a tag value */
#define AGENT_ERR_MAX	     256  /* a good size for the error buffer */
#define AGENT_TOKEN_MAX	     4096 /* bytes of PLATEAU_TOKEN */
#define AGENT_USER_MAX	     256  /* bytes of the server URL's user name, decoded */
#define AGENT_TENANT_MAX     150  /* bytes of PLATEAU_TENANT (Pyroscope's limit) */
#define AGENT_DEFAULT_OUTPUT "plateau-%p.pb.gz"

/* The variables in the order agent_config_var_name() numbers them. */
enum agent_var {
	AGENT_VAR_MODES,
	AGENT_VAR_HZ,
	AGENT_VAR_OUTPUT,
	AGENT_VAR_SERVER,
	AGENT_VAR_APP,
	AGENT_VAR_TAGS,
	AGENT_VAR_UPLOAD_INTERVAL,
	AGENT_VAR_ALLOC_RATE,
	AGENT_VAR_LOCK_THRESHOLD,
	AGENT_VAR_FORK,
	AGENT_VAR_TOKEN,
	AGENT_VAR_TENANT,
	AGENT_VAR_COUNT
};

struct agent_tag {
	char key[AGENT_TAG_KEY_MAX + 1];
	char value[AGENT_TAG_VALUE_MAX + 1];
};

struct agent_config {
	/* first, with agent.running: what every hook reads on one cache line */
	unsigned modes;			  /* AGENT_MODE_* bits; default cpu */
	unsigned hz;			  /* samples per second, 1..1000; default 99 */
	uint64_t alloc_rate;		  /* bytes, 1..1 GiB; default 524288 */
	uint64_t lock_threshold_ns;	  /* 0..10 s; default 10000 */
	char output[AGENT_PATH_MAX];	  /* "" = no file; may hold %p and %% */
	bool output_default;		  /* output is AGENT_DEFAULT_OUTPUT because
					neither OUTPUT nor SERVER was set */
	char server[AGENT_URL_MAX];	  /* "" = no push; else the URL as given with
					     its password replaced by *** (for messages) */
	char server_host[AGENT_HOST_MAX]; /* IPv6 without its brackets */
	uint16_t server_port;		  /* default 80 */
	char server_path[AGENT_URL_MAX];  /* "" or starting with '/' */
	char app[AGENT_APP_MAX + 1];	  /* default: the program name */
	size_t ntags;
	struct agent_tag tags[AGENT_TAGS_MAX];
	uint64_t upload_interval_ms; /* 1000..3600000; default 10000 */
	bool fork_off;		     /* PLATEAU_FORK=off: a fork child does not profile */
	/*
	 * Credentials.  Secrets (server_password, token) never appear in a
	 * message of this parser; whoever copies them must not print them.
	 */
	char server_user[AGENT_USER_MAX + 1]; /* of http://user:password@host, decoded; "" none */
	char server_password[AGENT_URL_MAX];  /* decoded; "" when the URL has no user info */
	char token[AGENT_TOKEN_MAX + 1];      /* PLATEAU_TOKEN, sent as Bearer; "" none */
	char tenant[AGENT_TENANT_MAX + 1];    /* PLATEAU_TENANT, sent as X-Scope-OrgID; "" none */
};

/* Returns the value of variable NAME, or NULL when it is unset. */
typedef const char *(*agent_getenv_fn)(const char *name, void *arg);

/* "PLATEAU_MODES" etc. for AGENT_VAR_*; NULL out of range. */
const char *agent_config_var_name(enum agent_var var);

/*
 * Fill CFG with the defaults.  PROGNAME (may be NULL or a path: its last
 * component is used) becomes the app name, with characters outside
 * [A-Za-z0-9._-] replaced by '_' and cut to AGENT_APP_MAX; "unknown" when
 * empty.
 */
void agent_config_defaults(struct agent_config *cfg, const char *progname);

/*
 * Fill CFG from the variables GETENV_FN(name, ARG) returns, over the
 * defaults (see agent_config_defaults for PROGNAME).  An unset or empty
 * variable keeps its default, except PLATEAU_TOKEN: set but empty is an
 * error.  Returns 0, or -1 with a one-line message in ERR (ERRSIZE bytes,
 * AGENT_ERR_MAX is enough) naming the variable and quoting the value, e.g.
 *   PLATEAU_HZ: "abc" is not a number of samples per second (1..1000)
 * A secret is never quoted: PLATEAU_TOKEN's messages show no value and
 * PLATEAU_SERVER's show the URL with its password as ***.  CFG is then
 * unspecified and the agent must stay off.
 */
int agent_config_parse(struct agent_config *cfg, agent_getenv_fn getenv_fn, void *arg,
		       const char *progname, char *err, size_t errsize);

/*
 * Write cfg->output into BUF (SIZE bytes) with %p replaced by PID and %%
 * by %.  Returns 0, or -1 when there is no output file or it does not fit
 * (BUF then holds "").
 */
int agent_config_output_path(const struct agent_config *cfg, long pid, char *buf, size_t size);

#endif
