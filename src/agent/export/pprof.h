/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_PPROF_H
#define PLATEAU_AGENT_EXPORT_PPROF_H

/*
 * The agent's profile export: aggregated samples (raw pcs) to a gzipped
 * pprof profile (proto/profile.proto) with mappings and function names
 * from a symtab (symtab.h).  Format: doc/agent-export.md.
 *
 * COLD only (the collector thread): it allocates and is not thread-safe
 * with respect to the symtab it is given.  Everything the input points to
 * is borrowed for the duration of the call only.
 */

#include <stddef.h>
#include <stdint.h>

#include "agent/stack/symtab.h"

#define AGENT_PPROF_OUT_MAX (1u << 30) /* bytes of gzipped output */

/* A sample label: a string one (STR set) or a numeric one (STR NULL, NUM_UNIT may be NULL). */
struct agent_pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

struct agent_pprof_sample {
	const uintptr_t *pcs; /* leaf first; pcs[0] exact, the callers already return address - 1 */
	uint32_t npcs;
	const int64_t *values; /* one per sample type */
	const struct agent_pprof_label *labels;
	uint32_t nlabels;
};

struct agent_pprof_input {
	const char *const *type_names;	       /* NTYPES sample types, e.g. "cpu" */
	const char *const *type_units;	       /* e.g. "nanoseconds" */
	uint32_t ntypes;		       /* >= 1 */
	const char *period_type, *period_unit; /* NULL = no period type */
	int64_t period;
	int64_t time_nanos, duration_nanos;
	uint32_t default_type; /* index of the type viewers show first, < ntypes */
	const char *const *comments;
	uint32_t ncomments;
	const struct agent_pprof_sample *samples;
	size_t nsamples;
};

/*
 * Encode IN as a gzipped pprof profile into *OUT (malloc'ed; the caller
 * frees it) of *OUTLEN bytes.  Each distinct pc becomes one location with
 * its address, its mapping (when ST knows one) and, when ST names the
 * function, one line pointing at a function (name = system name = the
 * symbol, filename = the mapping's path).  ST may be NULL: locations then
 * carry addresses only.  ST's symbols are loaded as needed (slow the first
 * time a module is seen).  Returns 0, or -EINVAL on malformed input
 * (ntypes 0, default_type out of range, a NULL name or key), -ENOMEM,
 * -EFBIG when the output would exceed AGENT_PPROF_OUT_MAX; *OUT is then
 * untouched.
 */
int agent_pprof_encode(const struct agent_pprof_input *in, struct agent_symtab *st, uint8_t **out,
		       size_t *outlen);

#endif
