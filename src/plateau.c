/* SPDX-License-Identifier: MIT */
/*
 * plateau: one binary, one table of subcommands.
 */
#include "util/common.h"
#include "cmd/cmd.h"
#include "util/suggest.h"

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

/* git's way: one line, then the commands like the one typed, never the whole list. */
static int unknown_command(const char *name)
{
	const char *names[ARRAY_SIZE(commands)];
	size_t picked[ARRAY_SIZE(commands)], n;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		names[i] = commands[i].name;
	n = suggest_similar(name, names, ARRAY_SIZE(commands), picked);
	fprintf(stderr, "plateau: '%s' is not a plateau command. See 'plateau --help'.\n", name);
	if (n)
		fprintf(stderr, "The most similar command%s\n", n > 1 ? "s are" : " is");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "\t%s\n", names[picked[i]]);
	return 2;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	return NULL;
}

int main(int argc, const char **argv)
{
	const struct command *cmd;
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		if (argc > 2 && strcmp(name, "help") == 0) {
			const char *help_argv[] = {"--help", NULL};

			cmd = find_command(argv[2]);
			return cmd ? cmd->fn(1, help_argv) : unknown_command(argv[2]);
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("plateau %s\n", PLATEAU_VERSION);
		return 0;
	}
	cmd = find_command(name);
	if (!cmd && name[0] == '-') {
		fprintf(stderr, "plateau: unknown option '%s'. See 'plateau --help'.\n", name);
		return 2;
	}
	if (!cmd)
		return unknown_command(name);
	log_progname = "plateau";
	return cmd->fn(argc - 2, argv + 2);
}
