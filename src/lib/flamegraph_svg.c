/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "lib/flamegraph.h"

void flame_options_init(struct flame_options *o)
{
	memset(o, 0, sizeof(*o));
}

int flamegraph_svg_write(const struct profile *p, const struct flame_options *o, FILE *f,
			 struct error *err)
{
	(void)p;
	(void)o;
	(void)f;
	return error_set(err, ERR_UNSUPPORTED, "SVG output not yet supported");
}
