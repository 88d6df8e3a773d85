/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SYMBOLIZE_TESTUTIL_H
#define PLATEAU_SYMBOLIZE_TESTUTIL_H

/*
 * What the symbolizer tests share (symbolize_test.c: ELF, DWARF, debug
 * links, perf maps, kallsyms, PLT; symbolize_ehframe_test.c: function
 * starts from .eh_frame): a scratch directory for fixtures compiled at
 * run time, a shell runner, /proc/self/maps lines, lookups.  Each file
 * uses only some of them, hence the unused attributes.
 */

#include <stdarg.h>
#include <stdlib.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "symbol/symbolize.h"

struct mapping {
	uint64_t start, end, pgoff;
	char path[4096];
};

static char tmpdir[] = "/tmp/symbolize_test.XXXXXX";

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
__attribute__((unused)) static int run(const char *fmt, ...)
{
	struct strbuf sb;
	va_list ap;
	int rc;

	strbuf_init(&sb, 0);
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	rc = system(sb.buf);
	strbuf_release(&sb);
	return rc;
}

__attribute__((unused)) static bool parse_maps_line(const char *line, struct mapping *m)
{
	unsigned long lo, hi, off;
	char perms[8];
	int pos = 0;

	if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) != 4 || !pos)
		return false;
	m->start = lo;
	m->end = hi;
	m->pgoff = off;
	snprintf(m->path, sizeof(m->path), "%s", line + pos);
	m->path[strcspn(m->path, "\n")] = '\0';
	return true;
}

__attribute__((unused)) static int write_source(const char *name, const char *src, size_t len)
{
	char path[sizeof(tmpdir) + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	if (fwrite(src, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

__attribute__((unused)) static int teardown(void **state)
{
	(void)state;
	return run("rm -rf %s", tmpdir);
}

__attribute__((unused)) static int lookup(struct symbolizer *s, struct sym_module *m, uint64_t addr,
					  struct sym_frame *f, size_t max)
{
	struct error err = ERROR_INIT;
	int n = symbolizer_lookup(s, m, addr, f, max, &err);

	assert_true(n >= 0);
	return n;
}

__attribute__((unused)) static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long size;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size > 0);
	rewind(f);
	buf = malloc((size_t)size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return buf;
}

#endif
