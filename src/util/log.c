/* SPDX-License-Identifier: MIT */
#include "util/common.h"

const char *log_progname = "plateau";
int log_verbose;

__attribute__((format(printf, 2, 0))) static void vreport(const char *prefix, const char *fmt,
							  va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", log_progname, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define REPORT(prefix)                    \
	do {                              \
		va_list ap;               \
		va_start(ap, fmt);        \
		vreport(prefix, fmt, ap); \
		va_end(ap);               \
	} while (0)

void error(const char *fmt, ...)
{
	REPORT("error: ");
}

void warning(const char *fmt, ...)
{
	REPORT("warning: ");
}

void note(const char *fmt, ...)
{
	REPORT("");
}

void debug(const char *fmt, ...)
{
	if (!log_verbose)
		return;
	REPORT("debug: ");
}

void die(const char *fmt, ...)
{
	REPORT("error: ");
	exit(1);
}

void die_usage(const char *fmt, ...)
{
	REPORT("error: ");
	exit(2);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: BUG at %s:%d: ", log_progname, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
