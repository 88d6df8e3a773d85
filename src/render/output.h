/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_OUTPUT_H
#define PLATEAU_OUTPUT_H

#include <stdio.h>

#include "format/format.h"
#include "profile/profile.h"

/*
 * Write p in format f with default rendering options.  Single-type
 * formats (folded, SVG, HTML) draw sample type `type`; pprof and
 * speedscope keep every type.  A differential profile is written as
 * three-column folded lines.
 */
int profile_write(const struct profile *p, enum profile_format f, uint32_t type, FILE *out,
		  struct error *err);

#endif
