/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_CMD_H
#define PLATEAU_CMD_H

#include <stdio.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/options.h"

/*
 * Subcommands.  Each gets the arguments after its name (argv[0] is the
 * first argument, not the command) and returns the process exit status:
 * 0 ok, 1 failure (or a regression, for check), 2 usage error.
 */
int cmd_check(int argc, const char **argv);
int cmd_collapse(int argc, const char **argv);
int cmd_convert(int argc, const char **argv);
int cmd_diff(int argc, const char **argv);
int cmd_flamegraph(int argc, const char **argv);
int cmd_push(int argc, const char **argv);
int cmd_query(int argc, const char **argv);
int cmd_record(int argc, const char **argv);
int cmd_serve(int argc, const char **argv);
int cmd_top(int argc, const char **argv);

/* Shared by the commands (src/cmd/util.c). */

/*
 * Open path for writing ("-" or NULL: stdout); dies on failure.  A file is
 * written beside the target and takes its place only at cmd_output_close()
 * (util/outfile.h): a command that dies, or is killed, leaves the old file
 * as it was and no temporary file.
 */
FILE *cmd_output_open(const char *path);
/* Close an output from cmd_output_open and put it in place, dying when any write failed. */
void cmd_output_close(FILE *f, const char *path);

/*
 * --strict, for every command that reads profiles: a folded line that does
 * not parse refuses the input instead of being skipped with a warning.
 */
#define OPT_STRICT(v)                                                                        \
	OPT_BOOL(0, "strict", (v),                                                           \
		 "refuse a folded input with a line that does not parse (default: skip the " \
		 "line with a warning naming it)")

/*
 * Read and merge the inputs (none: stdin), dying with the error.  Lines
 * skipped (o->skip_bad_lines) are warned about on stderr.
 */
struct profile *cmd_read_profiles(const char **paths, int n, const struct read_options *o);

/* The sample type to use: --sample-type NAME or the profile's default; dies when absent. */
uint32_t cmd_sample_type(const struct profile *p, const char *name);

/* Write p in format f (type t for single-type formats); dies on error. */
void cmd_write_profile(const struct profile *p, enum profile_format f, uint32_t type, FILE *out,
		       const char *path);

/*
 * The table of `plateau top`: the top limit (0: all) functions, modules or
 * lines of type by self (or total) with 95% intervals (src/cmd/top.c).
 */
void cmd_top_print(FILE *out, struct profile *p, uint32_t type, int limit, bool by_total,
		   enum func_key key);

#endif
