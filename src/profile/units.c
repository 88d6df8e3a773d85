/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/units.h"

static double to_seconds(const char *unit)
{
	if (!strcmp(unit, "nanoseconds"))
		return 1e-9;
	if (!strcmp(unit, "microseconds"))
		return 1e-6;
	if (!strcmp(unit, "milliseconds"))
		return 1e-3;
	if (!strcmp(unit, "seconds"))
		return 1;
	return 0;
}

void units_format(double v, const char *unit, char *buf, size_t size)
{
	double secs = to_seconds(unit), a;

	if (secs) {
		v *= secs;
		a = fabs(v);
		if (a >= 1 || a == 0)
			snprintf(buf, size, "%.2fs", v);
		else if (a >= 1e-3)
			snprintf(buf, size, "%.2fms", v * 1e3);
		else if (a >= 1e-6)
			snprintf(buf, size, "%.2fus", v * 1e6);
		else
			snprintf(buf, size, "%.0fns", v * 1e9);
		return;
	}
	if (!strcmp(unit, "bytes")) {
		static const char *const suffix[] = {"B", "KiB", "MiB", "GiB", "TiB"};
		size_t i = 0;

		a = fabs(v);
		while (a >= 1024 && i + 1 < ARRAY_SIZE(suffix)) {
			a /= 1024;
			v /= 1024;
			i++;
		}
		snprintf(buf, size, i ? "%.2f%s" : "%.0f%s", v, suffix[i]);
		return;
	}
	if (v == floor(v) && fabs(v) < 1e18) {
		struct strbuf sb = STRBUF_INIT;

		if (v < 0)
			strbuf_addch(&sb, '-');
		strbuf_add_commas(&sb, (unsigned long long)fabs(v));
		snprintf(buf, size, "%s", sb.buf);
		strbuf_release(&sb);
		return;
	}
	snprintf(buf, size, "%.2f", v);
}
