/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_OPTIONS_H
#define PLATEAU_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Declarative option tables, after git's parse-options: each command
 * lists its options once, and --help is generated from the table.
 *
 *   static const struct option opts[] = {
 *           OPT_INT('n', "lines", &n, "N", "show N rows"),
 *           OPT_BOOL(0, "json", &json, "print JSON"),
 *           OPT_END(),
 *   };
 *   argc = parse_options(argc, argv, opts, usage);
 *
 * Long options take "--name=value" or "--name value"; short ones "-xV"
 * or "-x V"; "--" ends options.  Non-option arguments are kept in order
 * in argv[0..return value).  -h/--help prints help to stdout and exits 0;
 * a bad option prints one line to stderr naming it and pointing at
 * --help ("plateau top: unknown option '--line'. See 'plateau top
 * --help'.", the command taken from the first usage line), for an
 * unknown option the long options like it ("did you mean '--lines'?"),
 * and exits 2.
 */
enum option_type {
	OPTION_END,
	OPTION_BOOL,	 /* bool *: set true */
	OPTION_INT,	 /* int *: decimal integer */
	OPTION_DOUBLE,	 /* double *: decimal number */
	OPTION_STRING,	 /* const char **: the argument, borrowed from argv */
	OPTION_LIST,	 /* const char ***, appends to a NULL-terminated array */
	OPTION_CALLBACK, /* cb(opt, arg) returns 0, or -1 after printing an error */
};

struct option {
	enum option_type type;
	int short_name;
	const char *long_name;
	void *value;
	const char *argh; /* name of the argument in help, NULL for flags */
	const char *help;
	int (*cb)(const struct option *opt, const char *arg);
};

#define OPT_END()                                           \
	{                                                   \
		OPTION_END, 0, NULL, NULL, NULL, NULL, NULL \
	}
#define OPT_BOOL(s, l, v, h)                                \
	{                                                   \
		OPTION_BOOL, (s), (l), (v), NULL, (h), NULL \
	}
#define OPT_INT(s, l, v, a, h)                            \
	{                                                 \
		OPTION_INT, (s), (l), (v), (a), (h), NULL \
	}
#define OPT_DOUBLE(s, l, v, a, h)                            \
	{                                                    \
		OPTION_DOUBLE, (s), (l), (v), (a), (h), NULL \
	}
#define OPT_STRING(s, l, v, a, h)                            \
	{                                                    \
		OPTION_STRING, (s), (l), (v), (a), (h), NULL \
	}
#define OPT_LIST(s, l, v, a, h)                            \
	{                                                  \
		OPTION_LIST, (s), (l), (v), (a), (h), NULL \
	}
#define OPT_CALLBACK(s, l, v, a, h, f)                        \
	{                                                     \
		OPTION_CALLBACK, (s), (l), (v), (a), (h), (f) \
	}

int parse_options(int argc, const char **argv, const struct option *opts, const char *const *usage);
/*
 * As parse_options, but options end at the first non-option argument,
 * which with everything after it is kept as is (a command and its own
 * options, as `plateau record CMD ARGS`).
 */
int parse_options_posix(int argc, const char **argv, const struct option *opts,
			const char *const *usage);

/* Print the generated help (usage lines then the option table) to f. */
void usage_with_options(FILE *f, const char *const *usage, const struct option *opts);

#endif
