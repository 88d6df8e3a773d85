/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_PUSH_MODULE_H
#define PLATEAU_AGENT_EXPORT_PUSH_MODULE_H

/*
 * The push (push.c, with libcurl and its TLS stack) is a module of its own,
 * libplateau-push.so beside libplateau.so, loaded only when PLATEAU_SERVER
 * is set: a program profiled to a file never maps libcurl and the dozens of
 * libraries it brings, nor runs their constructors.
 */

#include "agent/export/push.h"

struct agent_push_api {
	struct agent_push *(*create)(const struct agent_config *, const struct agent_push_opts *);
	int (*enqueue)(struct agent_push *, uint8_t *, size_t, uint64_t, uint64_t, const char *);
	void (*stop)(struct agent_push *, uint64_t, struct agent_push_counters *);
};

#define AGENT_PUSH_MODULE "libplateau-push.so"

/* Load the module (cold) into API.  Returns 0, or -1 with a warning on stderr. */
int agent_push_module_load(struct agent_push_api *api);

#endif
