/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "lib/flamegraph.h"

int flamegraph_html_write(const struct profile *p, const struct flame_options *o, FILE *f,
			  struct error *err)
{
	(void)p;
	(void)o;
	(void)f;
	return error_set(err, ERR_UNSUPPORTED, "HTML output not yet supported");
}
