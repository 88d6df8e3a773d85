/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_FORMAT_H
#define PLATEAU_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "format/input.h"
#include "profile/profile.h"
#include "util/error.h"

/*
 * Reading any supported input into a profile (format detected from the
 * content, never from the file name) and writing a profile in a format.
 */
enum profile_format {
	FMT_UNKNOWN = 0,
	FMT_FOLDED,
	FMT_PERF_SCRIPT,
	FMT_PPROF,
	FMT_SPEEDSCOPE,
	FMT_SVG,
	FMT_HTML,
};

/* Options of `perf script` collapsing; the field names follow stackcollapse-perf.pl. */
struct collapse_options {
	bool pid, tid;
	bool kernel, jit;   /* annotate _[k] and _[j] */
	bool inline_frames; /* expand inlined frames through libdw */
	bool addrs;	    /* keep addresses of unknown frames */
	bool cut_paren;	    /* cut names at their first '(' as the Perl script does */
	const char *event_filter;
};

struct read_options {
	const char
		*sample_type; /* pprof: which type to keep as default; NULL = profile's default */
	bool keep_order;      /* record input order (flame charts) */
	const struct collapse_options *collapse;
	/*
	 * Folded input: skip a line that does not parse, passing warn (when
	 * set) a message naming the file and line, at most 10 per file and
	 * then their count, as flamegraph.pl skips them.  Else (the default)
	 * such a line refuses the input, naming the first one.  Either way an
	 * input none of whose lines parse is "unrecognised format".
	 */
	bool skip_bad_lines;
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
	/*
	 * Folded and pprof: refuse an input whose values of one type sum (in
	 * magnitude) past 64 bits, naming the line or sample that passes it,
	 * so that any total, node or merge of it fits (plateau serve's
	 * pushes).  Else only a stack's own sum must fit.
	 */
	bool bounded_sum;
};

/* The format of data, from its first bytes. */
enum profile_format format_detect(const char *data, size_t len);
const char *format_name(enum profile_format f);
/* Parse a --format value; FMT_UNKNOWN when not a known name. */
enum profile_format format_from_name(const char *name);
/* Guess an output format from a file name's extension; FMT_UNKNOWN if none. */
enum profile_format format_from_filename(const char *path);

/* Read one input (already open); *out is a new profile. */
int profile_read_input(const struct input *in, const struct read_options *o, struct profile **out,
		       struct error *err);
/* Open and read path ("-" for stdin). */
int profile_read_file(const char *path, const struct read_options *o, struct profile **out,
		      struct error *err);
/*
 * Read and merge several files (none: stdin).  Files of different sample
 * types do not merge: ERR_USAGE naming the first file and the one that
 * differs, and their types.
 */
int profile_read_files(const char **paths, int n, const struct read_options *o,
		       struct profile **out, struct error *err);

/*
 * Folded stacks (folded.c).  The reader accepts "stack count" and the
 * differential "stack before after" form, which becomes a profile with
 * the two types "base" and "new".
 */
int folded_read(const struct input *in, const struct read_options *o, struct profile **out,
		struct error *err);
/* Write type as folded lines, sorted bytewise like stackcollapse output. */
int folded_write(const struct profile *p, uint32_t type, FILE *f, struct error *err);
/* Write a two-type profile as "stack a b" lines. */
int folded_write_diff(const struct profile *p, FILE *f, struct error *err);

/* True when p is a differential profile (first types "base" and "new"). */
bool profile_is_diff(const struct profile *p);

#endif
