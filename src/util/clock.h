/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_CLOCK_H
#define PLATEAU_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK (CLOCK_REALTIME, CLOCK_MONOTONIC...) in nanoseconds. */
static inline int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
