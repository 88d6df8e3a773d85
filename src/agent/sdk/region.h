/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_SDK_REGION_H
#define PLATEAU_AGENT_SDK_REGION_H

/*
 * Regions (region.c): per-name call counts and a log-linear latency
 * histogram (32 sub-buckets per power of two: percentiles within ~3%),
 * updated with atomics so that any number of threads, and recursion, are
 * fine.  The collector reads them into the profile.
 */

#include <stddef.h>
#include <stdint.h>

#include "plateau.h"

#define AGENT_REGIONS_MAX 256

/* Number of regions so far, and region I's name and statistics (cold). */
size_t agent_region_count(void);
const char *agent_region_get(size_t i, struct plateau_region_stats *out);

#endif
