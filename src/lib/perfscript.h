/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERFSCRIPT_H
#define PLATEAU_PERFSCRIPT_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/format.h"

/*
 * `perf script` text, read the way FlameGraph's stackcollapse-perf.pl
 * reads it (see doc/plateau-collapse.md for the one deliberate
 * difference: names are not cut at their first '(' unless cut_paren).
 */

/* Whether line s[0..len) is a perf script sample header ("comm pid ... event:"). */
bool perfscript_is_header(const char *s, size_t len);

/*
 * Collapse into a profile whose frames are the collapsed names (with the
 * comm as the root frame, as the Perl script does) and one sample type
 * ("samples"/"count", or the event's period when perf printed one).
 * o->collapse may be NULL for the defaults.
 */
int perfscript_read(const struct input *in, const struct read_options *o, struct profile **out,
		    struct error *err);

#endif
