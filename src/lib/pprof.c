/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "lib/pprof.h"

int pprof_read(const struct input *in, const struct read_options *o, struct profile **out,
	       struct error *err)
{
	(void)o;
	(void)out;
	return error_set(err, ERR_UNSUPPORTED, "%s: pprof input not yet supported", in->name);
}

int pprof_write(const struct profile *p, FILE *f, struct error *err)
{
	(void)p;
	(void)f;
	return error_set(err, ERR_UNSUPPORTED, "pprof output not yet supported");
}
