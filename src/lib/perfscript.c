/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "lib/perfscript.h"

bool perfscript_is_header(const char *s, size_t len)
{
	(void)s;
	(void)len;
	return false;
}

int perfscript_read(const struct input *in, const struct read_options *o, struct profile **out,
		    struct error *err)
{
	(void)o;
	(void)out;
	return error_set(err, ERR_UNSUPPORTED, "%s: perf script input not yet supported", in->name);
}
