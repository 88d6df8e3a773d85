/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "lib/speedscope.h"

int speedscope_write(const struct profile *p, FILE *f, struct error *err)
{
	(void)p;
	(void)f;
	return error_set(err, ERR_UNSUPPORTED, "speedscope output not yet supported");
}
