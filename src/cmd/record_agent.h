/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_CMD_RECORD_AGENT_H
#define PLATEAU_CMD_RECORD_AGENT_H

#include <stdbool.h>
#include <stdio.h>

#include "format/format.h"

struct record_agent_opts {
	const char *modes; /* PLATEAU_MODES: "cpu", "cpu,wall", "alloc" ... */
	unsigned freq;
	double duration; /* seconds, 0 = until the command exits */
	enum profile_format fmt;
	FILE *out; /* opened by the caller; closed here */
	const char *out_path;
	bool quiet;
};

/* Run ARGV under libplateau.so and write its merged profile; dies on failure. */
int record_agent(const struct record_agent_opts *o, const char **argv);

#endif
