/* SPDX-License-Identifier: MIT */
#include "util/common.h"

const char *log_progname = "plateau";
int log_verbose;
int debug_levels[DEBUG_MODULES];

static const char *const module_names[DEBUG_MODULES] = {
	[DEBUG_FORMAT] = "format", [DEBUG_SYMBOL] = "symbol", [DEBUG_UNWIND] = "unwind",
	[DEBUG_PERF] = "perf",	   [DEBUG_RECORD] = "record", [DEBUG_STORE] = "store",
	[DEBUG_SERVER] = "server", [DEBUG_CLIENT] = "client",
};

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

void debug_print(enum debug_module mod, const char *fmt, ...)
{
	va_list ap;

	flockfile(stderr);
	fprintf(stderr, "%s: debug: %s: ", log_progname, module_names[mod]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

const char *debug_module_name(enum debug_module mod)
{
	return module_names[mod];
}

const char *debug_module_list(void)
{
	return "format, symbol, unwind, perf, record, store, server, client";
}

static int find_module(const char *name, size_t len)
{
	for (int i = 0; i < DEBUG_MODULES; i++) {
		if (strlen(module_names[i]) == len && !strncmp(module_names[i], name, len))
			return i;
	}
	return -1;
}

/* One "MOD[:LEVEL]" of len bytes into levels; -1 when it names no module or level. */
static int select_one(const char *item, size_t len, int default_level, int *levels)
{
	const char *colon = memchr(item, ':', len);
	size_t name_len = colon ? (size_t)(colon - item) : len;
	int level = default_level, mod;

	if (colon) {
		size_t digits = len - name_len - 1;

		if (digits != 1 || colon[1] < '0' || colon[1] > '9')
			return -1;
		level = colon[1] - '0';
	}
	if (name_len == 3 && !strncmp(item, "all", 3)) {
		for (int i = 0; i < DEBUG_MODULES; i++)
			levels[i] = level;
		return 0;
	}
	mod = find_module(item, name_len);
	if (mod < 0)
		return -1;
	levels[mod] = level;
	return 0;
}

int debug_select(const char *list, int default_level, char *bad, size_t bad_size)
{
	int levels[DEBUG_MODULES] = {0};

	if (!list) {
		for (int i = 0; i < DEBUG_MODULES; i++)
			debug_levels[i] = default_level;
		return 0;
	}
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");

		if (select_one(p, len, default_level, levels)) {
			snprintf(bad, bad_size, "%.*s", (int)len, p);
			return -1;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	memcpy(debug_levels, levels, sizeof(levels));
	return 0;
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
