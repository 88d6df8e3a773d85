/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERFSCRIPT_H
#define PLATEAU_PERFSCRIPT_H

#include <stdbool.h>
#include <stdio.h>

#include "format/format.h"

/*
 * `perf script` text, read the way FlameGraph's stackcollapse-perf.pl
 * reads it (see doc/plateau-collapse.md for the one deliberate
 * difference: names are not cut at their first '(' unless cut_paren).
 *
 * The script's three regular expressions are emulated by hand, including
 * how Perl's backtracking resolves them on odd lines; Perl's \s is the
 * six bytes " \t\n\v\f\r", \d is 0-9 and \w is [A-Za-z0-9_].
 */

/* Whether line s[0..len) is a perf script sample header ("comm pid ... event:"). */
bool perfscript_is_header(const char *s, size_t len);

/*
 * The captures of the header regex ^(\S.+?)\s+(\d+)[/]*(\d+)*\s+ on a line
 * (no newline).  Pointers point into the line; tid_len is 0 when the
 * third group did not take part ($3 undefined).
 */
struct perfscript_header {
	const char *comm, *pid, *tid;
	size_t comm_len, pid_len, tid_len;
};
bool perfscript_match_header(const char *s, size_t len, struct perfscript_header *h);

/*
 * The captures of :\s*(\d+)*\s+(\S+):\s*$ on a header line: the period
 * (period_len 0 when perf printed none) and the event name.
 */
struct perfscript_event {
	const char *period, *event;
	size_t period_len, event_len;
};
bool perfscript_match_event(const char *s, size_t len, struct perfscript_event *e);

/* The captures of ^\s*(\w+)\s*(.+) \((.*)\) on a frame line: address, symbol, dso. */
struct perfscript_frame {
	const char *pc, *func, *dso;
	size_t pc_len, func_len, dso_len;
};
bool perfscript_match_frame(const char *s, size_t len, struct perfscript_frame *f);

/*
 * Collapsing a stream of inputs.  As with the Perl script's `<>`, several
 * inputs are one stream: a sample left open at the end of one continues
 * in the next, and the first event seen anywhere is the default filter.
 *
 *   c = perfscript_collapse_new(&opts, warn_fn, stderr);
 *   for each input: perfscript_collapse_add(c, &in, &err);
 *   perfscript_collapse_write(c, stdout, &err);
 *   perfscript_collapse_free(c);
 *
 * warn (may be NULL) receives each diagnostic the Perl script prints on
 * stderr ("Unrecognized line: ...", "Filtering for events of type: X"),
 * without a newline; after PERFSCRIPT_MAX_WARNINGS unrecognized lines
 * per input the rest are counted in one last message.
 */
#define PERFSCRIPT_MAX_WARNINGS 20

struct perfscript_collapse;
typedef void perfscript_warn_fn(void *arg, const char *msg);

/* o may be NULL for the defaults; it is copied (event_filter too). */
struct perfscript_collapse *perfscript_collapse_new(const struct collapse_options *o,
						    perfscript_warn_fn *warn, void *warn_arg);
void perfscript_collapse_free(struct perfscript_collapse *c);

/*
 * Parse threads for large inputs: 0 picks from the CPUs online (at most
 * 2), 1 is single-threaded.  --inline always runs on one thread.
 */
void perfscript_collapse_set_threads(struct perfscript_collapse *c, int threads);

/* Add an input (nothing of it is kept); 0, or ERR_LIMIT for a sample over 4 GiB. */
int perfscript_collapse_add(struct perfscript_collapse *c, const struct input *in,
			    struct error *err);

/* Samples collapsed so far (stacks stored, before merging equal stacks). */
uint64_t perfscript_collapse_samples(const struct perfscript_collapse *c);
/* Lines so far that the script would warn about ("Unrecognized line"). */
uint64_t perfscript_collapse_unrecognized(const struct perfscript_collapse *c);

/* Write "stack count" lines sorted bytewise, byte for byte as the Perl script prints them. */
int perfscript_collapse_write(struct perfscript_collapse *c, FILE *f, struct error *err);

/*
 * Collapse one input into a profile whose frames are the collapsed names
 * (the comm is the root frame) with two sample types: 0 is the event's
 * period summed as the Perl script sums it ("cpu-clock" or "task-clock"
 * in nanoseconds, otherwise "events"/"count"), 1 is "samples"/"count".
 * o->collapse may be NULL for the defaults.  ERR_FORMAT when the input
 * holds no sample; ERR_LIMIT when a sum overflows int64.
 */
int perfscript_read(const struct input *in, const struct read_options *o, struct profile **out,
		    struct error *err);

#endif
