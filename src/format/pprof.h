/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PPROF_H
#define PLATEAU_PPROF_H

#include <stdio.h>

#include "format/format.h"

/*
 * pprof's profile.proto (gzip-compressed or raw): written through
 * protobuf-c, read by pprof_decode.c.
 * See doc/formats.md for how pprof's records map onto plateau's model.
 */

/* At most this many sample types per profile (the data model's limit). */
#define PPROF_MAX_TYPES 16

/*
 * Values of a type with decimals are written scaled by 10^decimals, with
 * a comment "plateau.decimals TYPE D" so that reading restores them.
 */
#define PPROF_DECIMALS_COMMENT "plateau.decimals"

/*
 * Read in (raw protobuf, or gzip) into a new profile *out.  Every sample
 * type is kept, the default one is default_sample_type or else the last
 * (as go tool pprof does); a location's line[] entries become frames,
 * the inlined ones flagged FRAME_INLINED; sample labels are kept.
 * Returns 0, or ERR_FORMAT / ERR_LIMIT with a one-line message naming
 * in->name and the record at fault; *out is then NULL.
 */
int pprof_read(const struct input *in, const struct read_options *o, struct profile **out,
	       struct error *err);

/*
 * Write p to f as gzip-compressed profile.proto with every sample type.
 * A frame run whose upper frames are FRAME_INLINED becomes one location
 * with several lines; kernel frames go to a "[kernel.kallsyms]" mapping;
 * profile labels are added to every sample's labels.  Returns 0 or
 * ERR_IO.
 */
int pprof_write(const struct profile *p, FILE *f, struct error *err);

#endif
