/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "render/flamegraph.h"
#include "render/output.h"
#include "format/pprof.h"
#include "format/speedscope.h"

int profile_write(const struct profile *p, enum profile_format f, uint32_t type, FILE *out,
		  struct error *err)
{
	struct flame_options fo;

	if (type >= p->nr_types)
		return error_set(err, ERR_USAGE, "no sample type %u", type);
	debug(DEBUG_FORMAT, "writing %s of sample type %s (%u samples)", format_name(f),
	      profile_str(p, p->types[type].type), p->nr_samples);
	switch (f) {
	case FMT_FOLDED:
		if (profile_is_diff(p))
			return folded_write_diff(p, out, err);
		return folded_write(p, type, out, err);
	case FMT_PPROF: return pprof_write(p, out, err);
	case FMT_SPEEDSCOPE: return speedscope_write(p, out, err);
	case FMT_SVG:
		flame_options_init(&fo);
		fo.type = type;
		return flamegraph_svg_write(p, &fo, out, err);
	case FMT_HTML:
		flame_options_init(&fo);
		fo.type = type;
		return flamegraph_html_write(p, &fo, out, err);
	case FMT_PERF_SCRIPT:
		return error_set(err, ERR_UNSUPPORTED, "perf script is an input format only");
	default: return error_set(err, ERR_UNSUPPORTED, "unknown output format");
	}
}
