/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

#include "util/common.h"
#include "symbol/symbolize_elf.h"

/*
 * Text symbol maps, whose addresses are absolute: the kernel's
 * /proc/kallsyms ("ADDR TYPE NAME [module]") and the JIT maps that
 * runtimes write to /tmp/perf-PID.map ("START SIZE NAME", hex).
 */

#define MAX_LINE 4096	    /* longer lines are skipped */
#define MAX_SYMS (1u << 24) /* a kernel has a few hundred thousand */

static bool is_kallsyms(const char *path)
{
	return !strcmp(path, "/proc/kallsyms") || !strcmp(path, "[kernel.kallsyms]");
}

static bool is_perf_map(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t i = 5;

	base = base ? base + 1 : path;
	if (strncmp(base, "perf-", 5) || !isdigit((unsigned char)base[5]))
		return false;
	while (isdigit((unsigned char)base[i]))
		i++;
	return !strcmp(base + i, ".map");
}

static void text_add(struct sym_dso *d, size_t *alloc, uint64_t start, uint64_t size,
		     const char *name, size_t len, unsigned rank)
{
	if (!len || d->nr_syms >= MAX_SYMS || start + size < start)
		return;
	ALLOC_GROW(d->syms, d->nr_syms + 1, *alloc);
	d->syms[d->nr_syms++] = (struct sym_sym){
		start, start + size, arena_memdup(&d->text_names, name, len), NULL, rank};
}

/* Parse hex digits at *p; returns false when there are none or too many. */
static bool parse_hex(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	for (;; s++, n++) {
		unsigned c = (unsigned char)*s, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (n == 16)
			return false;
		v = v << 4 | d;
	}
	*p = s;
	*out = v;
	return n > 0;
}

/*
 * "ffffffff81000000 T _text [module]": text symbols only (t, T, w, W).
 * Parsed by hand: a kernel has over 100,000 lines and sscanf cost more
 * than the kernel takes to produce them.
 */
static void kallsyms_line(struct sym_dso *d, size_t *alloc, const char *line)
{
	const char *p = line;
	uint64_t addr;
	char type;

	if (!parse_hex(&p, &addr) || !addr || *p != ' ')
		return;
	type = p[1];
	if ((type != 't' && type != 'T' && type != 'w' && type != 'W') || p[2] != ' ')
		return;
	p += 3;
	text_add(d, alloc, addr, 0, p, strcspn(p, " \t\n"),
		 type == 'T'		      ? 0
		 : type == 'W' || type == 'w' ? 1
					      : 2);
}

/* "7f0012340000 40 LazyCompile:foo bar.js:1": the name runs to the end of the line. */
static void perf_map_line(struct sym_dso *d, size_t *alloc, const char *line)
{
	unsigned long long start, size;
	int pos = 0;

	if (sscanf(line, "%llx %llx %n", &start, &size, &pos) != 2 || !pos)
		return;
	text_add(d, alloc, start, size, line + pos, strcspn(line + pos, "\n"), 0);
}

bool sym_text_load(struct sym_dso *d)
{
	bool kernel = is_kallsyms(d->path);
	char line[MAX_LINE];
	size_t alloc = 0;
	FILE *f;

	if (!kernel && !is_perf_map(d->path))
		return false;
	d->text = true;
	d->kernel = kernel;
	f = fopen(kernel ? "/proc/kallsyms" : d->path, "re");
	if (!f) {
		d->state = SYM_NO_FILE;
		return true;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') && !feof(f)) {
			int c;

			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (kernel)
			kallsyms_line(d, &alloc, line);
		else
			perf_map_line(d, &alloc, line);
	}
	fclose(f);
	sym_dso_finish(d);
	d->has_symtab = true;
	d->state = SYM_OK;
	return true;
}
