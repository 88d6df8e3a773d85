/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_EXPORT_H
#define PLATEAU_AGENT_EXPORT_EXPORT_H

/*
 * From aggregates to profiles (export.c): the sample types of the enabled
 * modes, one pprof sample per aggregate entry plus the in-use snapshot of
 * the live table, labels resolved, the agent's counters and the regions as
 * comments.  Cold (the collector thread, or the exiting thread).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/export/aggregate.h"
#include "agent/stack/symtab.h"

/*
 * Encode A (plus the live table's in-use memory when INUSE) covering
 * [START_NS, END_NS) realtime as gzipped pprof in *OUT (malloc'ed, caller
 * frees).  *ST is the symtab to reuse, created when NULL and refreshed.
 * Returns 0 or -errno.
 */
int agent_export_encode(const struct agent_agg *a, bool inuse, uint64_t start_ns, uint64_t end_ns,
			struct agent_symtab **st, uint8_t **out, size_t *outlen);

/* Write DATA to PATH atomically (a temporary file renamed over it).  Returns 0 or -errno. */
int agent_export_write_file(const char *path, const uint8_t *data, size_t len);

#endif
