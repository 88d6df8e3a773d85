/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

#include "util/common.h"
#include "lib/symbolize_elf.h"

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
		start, start + size,
		strtab_str(&d->text_names, strtab_intern(&d->text_names, name, len)), NULL, rank};
}

/* "ffffffff81000000 T _text [module]": text symbols only (t, T, w, W). */
static void kallsyms_line(struct sym_dso *d, size_t *alloc, const char *line)
{
	unsigned long long addr;
	char type;
	int pos = 0;

	if (sscanf(line, "%llx %c %n", &addr, &type, &pos) != 2 || !pos || !addr)
		return;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return;
	text_add(d, alloc, addr, 0, line + pos, strcspn(line + pos, " \t\n"),
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
