/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_TIMEPARSE_H
#define PLATEAU_STORE_TIMEPARSE_H

#include <stdint.h>

#include "util/error.h"

/*
 * The times, durations and sizes of the server's parameters (from, until,
 * retention, body caps).  Each takes the whole string: no spaces around
 * it, units case-sensitive.  On error each returns ERR_FORMAT (ERR_LIMIT
 * when the value is well-formed but does not fit) with a one-line message
 * that starts with the quoted value, e.g.
 *	"now-1x" has unknown unit "x" (expected ns, us, ms, s, m, h, d, w or y)
 * so a caller can put the parameter's name before it.  The result is
 * written only on success.  doc/selector.md has
 * the formats.
 */

/*
 * A point in time as nanoseconds since the epoch:
 *  - a unix timestamp, its unit told by its digit count as Pyroscope does:
 *    up to 10 digits seconds, 11-13 milliseconds, 14-16 microseconds,
 *    17-19 nanoseconds (leading zeros count);
 *  - an RFC 3339 time, 2026-12-01T14:00:00Z, with up to 9 fractional
 *    digits and an offset Z, +HH:MM or -HH:MM ('t', 'z' and a space for
 *    the 'T' are taken too, and a space for the offset's '+': what an
 *    unescaped '+' becomes in a query string);
 *  - now, now-DURATION or now+DURATION (duration_parse()), from now_ns.
 * The result lies within int64_t: 1677-09-21 to 2262-04-11.
 */
int time_parse(const char *s, int64_t now_ns, int64_t *out_ns, struct error *err);

/*
 * A duration in nanoseconds, in plateau's one grammar (util/duration.h,
 * doc/durations.md): numbers with units, largest first, each unit once
 * (1h30m, 500ms, 1.5s, 30d, 2w); units ns, us, ms, s, m, h, d (24 h),
 * w (7 d), y (365 d).  Zero alone is 0; any other number needs its unit.
 * At most INT64_MAX ns (about 292 years).
 */
int duration_parse(const char *s, int64_t *out_ns, struct error *err);

/*
 * A size in bytes: a whole number, bare or with a unit: B; kB or KB, MB,
 * GB, TB, PB (powers of 1000); KiB, MiB, GiB, TiB, PiB (powers of 1024).
 */
int size_parse(const char *s, uint64_t *out, struct error *err);

#endif
