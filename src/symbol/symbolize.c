/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/strtab.h"
#include "symbol/symbolize.h"
#include "symbol/symbolize_dwarf.h"
#include "symbol/symbolize_elf.h"

/*
 * The symbolizer: files are loaded once per (path, build-id) into a
 * struct sym_dso (symbolize_elf.c); each mapping is a struct sym_module
 * with its load bias.  Names come from the ELF symbol table; the DWARF
 * (main file or separate debug file) adds inline frames and file:line
 * (symbolize_dwarf.c).
 */

/* From libiberty's demangle.h, which clashes with our headers (see addr2line.c). */
extern char *cplus_demangle(const char *mangled, int options);
#define DMGL_PARAMS (1 << 0)
#define DMGL_ANSI   (1 << 1)

struct sym_module {
	struct sym_dso *dso;
	uint64_t start, end, bias;
	bool bias_ok;
};

#define SYM_CACHE_BITS	 9 /* direct-mapped, by (file, address) */
#define SYM_CACHE_SIZE	 (1u << SYM_CACHE_BITS)
#define SYM_CACHE_FRAMES 8

/* A lookup's result, kept: DWARF scope walks cost tens of microseconds. */
struct sym_cache_ent {
	struct sym_dso *dso;
	uint64_t vaddr;
	int n;
	struct sym_frame frames[SYM_CACHE_FRAMES];
};

struct symbolizer {
	struct sym_dso **dsos;
	size_t nr_dsos, alloc_dsos;
	struct sym_module **mods;
	size_t nr_mods, alloc_mods;
	struct strtab names; /* demangled names */
	struct sym_cache_ent *cache;
	enum sym_dwarf_mode dwarf_mode;
};

static const char *const reason_str[] = {
	[SYM_OK] = "ok",
	[SYM_NO_SYMBOL] = "no symbol",
	[SYM_STRIPPED] = "stripped",
	[SYM_NO_FILE] = "file not found",
	[SYM_DELETED] = "file deleted",
	[SYM_NOT_ELF] = "not an ELF file",
	[SYM_BUILD_ID] = "build-id mismatch",
	[SYM_OUT_OF_RANGE] = "address outside the mapping",
};

const char *sym_reason_str(enum sym_reason reason)
{
	if ((size_t)reason >= ARRAY_SIZE(reason_str) || !reason_str[reason])
		return "unknown";
	return reason_str[reason];
}

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	elf_version(EV_CURRENT);
	strtab_init(&s->names);
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_dsos; i++) {
		sym_dwarf_free(s->dsos[i]->dwarf);
		sym_dso_release(s->dsos[i]);
		free(s->dsos[i]);
	}
	for (size_t i = 0; i < s->nr_mods; i++)
		free(s->mods[i]);
	free(s->dsos);
	free(s->mods);
	free(s->cache);
	strtab_release(&s->names);
	free(s);
}

void symbolizer_set_dwarf_mode(struct symbolizer *s, enum sym_dwarf_mode mode)
{
	s->dwarf_mode = mode;
}

enum sym_dwarf_mode symbolizer_dwarf_mode(const struct symbolizer *s)
{
	return s->dwarf_mode;
}

void symbolizer_dwarf_stats(const struct symbolizer *s, struct sym_dwarf_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < s->nr_dsos; i++)
		sym_dwarf_stats(s->dsos[i]->dwarf, st);
}

/*
 * One dso per (path, build-id as given): a NULL build-id is its own key.
 * Linear: a process maps tens of files, and modules are made once per mapping.
 */
static struct sym_dso *symbolizer_dso(struct symbolizer *s, const char *path, const char *bid)
{
	struct sym_dso *d;

	for (size_t i = 0; i < s->nr_dsos; i++) {
		d = s->dsos[i];
		if (!strcmp(d->path, path) && !bid == !d->key_bid &&
		    (!bid || !strcmp(d->key_bid, bid)))
			return d;
	}
	d = xcalloc(1, sizeof(*d));
	d->path = xstrdup(path);
	d->key_bid = bid ? xstrdup(bid) : NULL;
	sym_dso_load(d, bid);
	ALLOC_GROW(s->dsos, s->nr_dsos + 1, s->alloc_dsos);
	s->dsos[s->nr_dsos++] = d;
	return d;
}

struct sym_module *symbolizer_module(struct symbolizer *s, const char *path, uint64_t start,
				     uint64_t end, uint64_t pgoff, const char *build_id_hex)
{
	struct sym_module *m = xcalloc(1, sizeof(*m));

	m->dso = symbolizer_dso(s, path, build_id_hex);
	m->start = start;
	m->end = end;
	m->bias_ok = m->dso->state == SYM_OK && !sym_dso_bias(m->dso, start, pgoff, &m->bias);
	ALLOC_GROW(s->mods, s->nr_mods + 1, s->alloc_mods);
	s->mods[s->nr_mods++] = m;
	return m;
}

/*
 * Demangled with parameters, as addr2line -C and gdb print (perf drops
 * them): overloads stay apart.  Names that are not mangled come back as is.
 */
const char *sym_demangle(struct symbolizer *s, const char *name)
{
	const char *at = name ? strchr(name, '@') : NULL;
	char *dem, *bare = NULL;
	const char *r;

	if (!name)
		return NULL;
	/* A versioned symbol ("memcpy@@GLIBC_2.14") is named without its version. */
	if (at && at != name)
		name = bare = xstrndup(name, (size_t)(at - name));
	dem = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	r = strtab_str(&s->names, strtab_intern_str(&s->names, dem ? dem : name));
	free(dem);
	free(bare);
	return r;
}

static bool elf_has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n =
			gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (n && !strcmp(n, ".debug_info") && sh.sh_type != SHT_NOBITS)
			return true;
	}
	return false;
}

/* The DWARF of d, from the file itself or its debug file; NULL when neither has any. */
static struct sym_dwarf *dso_dwarf(struct sym_dso *d)
{
	const char *self = d->from_debug ? d->dbg_path : d->path, *path;

	/* Before any section scan: this runs on every lookup. */
	if (d->dwarf_tried)
		return d->dwarf;
	d->dwarf_tried = true;
	path = elf_has_dwarf(d->elf) ? self : elf_has_dwarf(d->dbg_elf) ? d->dbg_path : NULL;
	if (path)
		d->dwarf = sym_dwarf_open(path);
	debug(DEBUG_SYMBOL, "%s: %s", d->path,
	      !path	 ? "no DWARF: no line numbers or inlined frames"
	      : d->dwarf ? "DWARF read for lines and inlined frames"
			 : "DWARF unreadable");
	return d->dwarf;
}

static int lookup_fail(struct sym_frame *out, enum sym_reason reason)
{
	out[0].reason = reason;
	return 0;
}

/*
 * No name for vaddr: say so, and where its function starts when an
 * .eh_frame FDE covers it, so that all addresses of one unnamed function
 * share one offset.
 */
static int unnamed_fail(struct sym_dso *d, uint64_t vaddr, struct sym_frame *out)
{
	uint64_t start;

	if (sym_dso_func_start(d, vaddr, &start)) {
		out[0].offset = start;
		out[0].flags |= SYM_FRAME_FUNC_START;
	}
	return lookup_fail(out, d->has_symtab ? SYM_NO_SYMBOL : SYM_STRIPPED);
}

/* Name vaddr of d: the symbol table, then the DWARF; n, or 0 with out[0].reason. */
static int dso_lookup(struct symbolizer *s, struct sym_dso *d, uint64_t vaddr,
		      struct sym_frame *out, size_t max)
{
	struct sym_sym *sym = sym_dso_find(d, vaddr);
	struct sym_dwarf *w = dso_dwarf(d);
	size_t n = w ? sym_dwarf_frames(s, w, vaddr, out, max) : 0;

	if (!sym && !n)
		return unnamed_fail(d, vaddr, out);
	if (!n)
		n = 1;
	/* The outermost frame is the real function: the symbol table names it. */
	if (sym && !(out[n - 1].flags & SYM_FRAME_INLINED)) {
		if (!sym->pretty)
			sym->pretty = sym_demangle(s, sym->name);
		out[n - 1].function = sym->pretty;
	}
	if (d->kernel)
		out[0].flags |= SYM_FRAME_KERNEL;
	return (int)n;
}

static struct sym_cache_ent *cache_slot(struct symbolizer *s, struct sym_dso *d, uint64_t vaddr)
{
	uint64_t h = (vaddr ^ ((uintptr_t)d >> 4)) * 0x9e3779b97f4a7c15ULL;

	if (!s->cache)
		s->cache = xcalloc(SYM_CACHE_SIZE, sizeof(*s->cache));
	return &s->cache[h >> (64 - SYM_CACHE_BITS)];
}

int symbolizer_lookup(struct symbolizer *s, struct sym_module *m, uint64_t addr,
		      struct sym_frame *out, size_t max, struct error *err)
{
	struct sym_cache_ent *e;
	struct sym_dso *d;
	uint64_t vaddr;
	int n;

	if (!s || !m || !out || !max)
		return error_set(err, ERR_USAGE, "symbolizer_lookup: bad arguments");
	d = m->dso;
	memset(&out[0], 0, sizeof(out[0]));
	if (d->state != SYM_OK)
		return lookup_fail(out, d->state);
	if (addr < m->start || addr >= m->end || !m->bias_ok)
		return lookup_fail(out, SYM_OUT_OF_RANGE);
	vaddr = out[0].offset = addr - m->bias;
	e = cache_slot(s, d, vaddr);
	if (e->dso == d && e->vaddr == vaddr && (size_t)e->n <= max) {
		memcpy(out, e->frames, (e->n ? (size_t)e->n : 1) * sizeof(*out));
		return e->n;
	}
	n = dso_lookup(s, d, vaddr, out, max);
	/* A result cut short by max is not cached: a larger max would get more. */
	if ((size_t)n < max && n <= SYM_CACHE_FRAMES) {
		e->dso = d;
		e->vaddr = vaddr;
		e->n = n;
		memcpy(e->frames, out, (n ? (size_t)n : 1) * sizeof(*out));
	}
	return n;
}
