/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/error.h"

int error_set(struct error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	/* Keep the first error: it is the cause, later ones are fallout. */
	if (err->code)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}
