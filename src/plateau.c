/* SPDX-License-Identifier: MIT */
/*
 * plateau: one binary, one table of subcommands.
 */
#include "util/common.h"
#include "cmd/cmd.h"

#ifndef PLATEAU_VERSION
#define PLATEAU_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"check", cmd_check, "CI gate: fail when a function's share grew significantly"},
	{"collapse", cmd_collapse, "collapse `perf script` output into folded stacks"},
	{"convert", cmd_convert, "convert between profile formats"},
	{"diff", cmd_diff, "differential flame graph of two profiles"},
	{"flamegraph", cmd_flamegraph, "draw an interactive flame graph (SVG or HTML)"},
	{"push", cmd_push, "send a profile to plateau serve"},
	{"query", cmd_query, "merged profile of a selector and time window from plateau serve"},
	{"record", cmd_record, "sample a command, a process or the system (on-CPU, off-CPU, wall)"},
	{"serve", cmd_serve, "the continuous profile store: ingest, query, diff (HTTP)"},
	{"top", cmd_top, "functions by self and total, with confidence intervals"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: plateau <command> [options] [args]\n\n"
		   "plateau answers where a program's time and memory go.\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "    %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'plateau <command> --help' describes a command; see also "
		   "doc/plateau-<command>.md.\n");
}

int main(int argc, const char **argv)
{
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		if (argc > 2 && strcmp(name, "help") == 0) {
			const char *help_argv[] = {"--help", NULL};

			for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
				if (!strcmp(commands[i].name, argv[2]))
					return commands[i].fn(1, help_argv);
			}
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("plateau %s\n", PLATEAU_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcmp(commands[i].name, name)) {
			log_progname = "plateau";
			return commands[i].fn(argc - 2, argv + 2);
		}
	}
	error("unknown command '%s'", name);
	usage(stderr);
	return 2;
}
