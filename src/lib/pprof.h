/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PPROF_H
#define PLATEAU_PPROF_H

#include <stdio.h>

#include "lib/format.h"

/*
 * pprof's profile.proto (gzip-compressed or raw), through protobuf-c.
 * Reading keeps every sample type, labels, and expands a location's
 * line[] entries into frames (inlined ones flagged FRAME_INLINED).
 */
int pprof_read(const struct input *in, const struct read_options *o, struct profile **out,
	       struct error *err);

/* Write p as gzip-compressed profile.proto. */
int pprof_write(const struct profile *p, FILE *f, struct error *err);

#endif
