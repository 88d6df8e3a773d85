/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_FLAMEBEARER_H
#define PLATEAU_SERVER_FLAMEBEARER_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/error.h"
#include "util/strbuf.h"

/*
 * Pyroscope's JSON flame tree ("flamebearer", version 1), the body of
 * GET /render and of GET /api/v1/query?format=json: a names table plus
 * one array of integers per depth of the tree.  doc/server-json.md
 * describes the format as plateau writes it.
 *
 * Frames are merged by function name, as Pyroscope's trees are: siblings
 * of one name in different modules or lines are one node.  Children are
 * laid out by name (bytewise), each after its parent's self value.
 */

/* The timeline of a /render reply: one value per step from start_s. */
struct fb_timeline {
	int64_t start_s;       /* unix seconds of values[0] */
	int64_t step_s;	       /* seconds between values (durationDelta), > 0 */
	const int64_t *values; /* n values, borrowed */
	size_t n;
};

/* Everything an fb_options points to is borrowed for the call. */
struct fb_options {
	uint32_t type;	      /* sample type index (in the left profile of a diff) */
	size_t max_nodes;     /* 0: every node; else this many below the root, the rest "other" */
	const char *name;     /* metadata.name; NULL: the sample type's name */
	const char *units;    /* metadata.units; NULL: flamebearer_units() of the type */
	const char *spy_name; /* metadata.spyName; NULL: "" */
	/* Hz of count-valued samples; 0: from the profile's period, else Pyroscope's 100. */
	int64_t sample_rate;
	const struct fb_timeline *timeline; /* NULL: "timeline":null */
};

/*
 * Pyroscope's units for a plateau sample type ("samples", "objects",
 * "bytes", "lock_samples", "lock_nanoseconds", "goroutines",
 * "exceptions"), and in *ticks_per_second how many values make one
 * second when the values are times (1000000000 for nanoseconds), or 0
 * when they are counts.  Never NULL; the table is in doc/server-json.md.
 */
const char *flamebearer_units(const char *type, const char *unit, int64_t *ticks_per_second);

/*
 * Append to out the flamebearer of sample type o->type of p, format
 * "single", followed by a newline (as Go's json.Encoder ends a reply).
 * Values with decimals are rounded to integers (doc/server-json.md).
 * Returns 0, ERR_USAGE for a bad type index, a sample rate outside
 * 0..2^32-1 or a timeline with a step below 1 or a negative value,
 * ERR_FORMAT for a negative sample value, ERR_LIMIT when a total
 * overflows int64; out is left as it was on error.  Memory comes from
 * util/alloc.h, which dies when out of it, as struct profile's does:
 * the caller bounds the profile (nodes) it renders.
 */
int flamebearer_write(const struct profile *p, const struct fb_options *o, struct strbuf *out,
		      struct error *err);

/*
 * The same for two profiles in format "double" (Pyroscope's diff view):
 * left (the baseline) and right laid on one tree whose nodes are matched
 * by their full stack of names.  o->type is left's type; right must have
 * a type of the same name and unit (else ERR_USAGE).  max_nodes ranks a
 * node by the larger of its two totals.
 */
int flamebearer_write_diff(const struct profile *left, const struct profile *right,
			   const struct fb_options *o, struct strbuf *out, struct error *err);

#endif
