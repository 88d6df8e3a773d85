/* SPDX-License-Identifier: MIT */
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwfl.h>

#include "util/common.h"
#include "util/hash.h"
#include "util/strbuf.h"
#include "symbol/addr2line.h"
#include "symbol/symbolize_dwarf.h"

/*
 * What stackcollapse-perf.pl's inline() gets from addr2line, rebuilt on
 * libdw.  addr2line looks pc up in the first SHF_ALLOC section holding
 * it: in the DWARF (the innermost function, inlined or not, then each
 * function it was inlined into, up to the real one), else in the symbol
 * table (the closest function symbol at or below pc).  Nothing found
 * gives "??"; an address in no section too, and then the script retries
 * with the address `nm` gives the symbol perf named, plus perf's offset.
 */

/*
 * From libiberty's demangle.h, which cannot be included here: it brings
 * libiberty.h, whose xmemdup and ARRAY_SIZE clash with ours.
 */
extern char *cplus_demangle(const char *mangled, int options);
#define DMGL_PARAMS (1 << 0)
#define DMGL_ANSI   (1 << 1)

#define MAX_CHAIN 256	     /* inline depth kept (DWARF from a hostile file may nest deeper) */
#define MAX_PAINT (1u << 26) /* work to index a unit (ranges that all overlap cost n^2) */

struct inl_sym {
	uint64_t value, size;
	size_t shndx;
	int type;
	const char *name; /* in the ELF's string table */
};

/* Function-like symbols of one symbol table, in table order. */
struct inl_symtab {
	struct inl_sym *syms;
	size_t nr;
	bool loaded;
};

/* A function DIE of a compile unit, as bfd's function table holds it. */
struct inl_func {
	Dwarf_Die die;
	int tag;
	int32_t parent; /* the enclosing function's entry, or -1 */
	uint32_t range, nr_ranges;
};

struct inl_cu {
	Dwarf_Off offset;
	struct inl_func *funcs;
	size_t nr_funcs;
	uint64_t (*ranges)[2]; /* the functions' ranges; freed once indexed */
	size_t nr_ranges;
	struct sym_addrmap best; /* address -> cu_best_func's answer, when indexed */
	bool indexed;
};

/* A section addresses can fall in: [lo, hi) and its index. */
struct inl_sec {
	uint64_t lo, hi;
	size_t index;
};

struct inl_module {
	char *path;
	size_t path_len;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;	      /* the file itself, owned by dwfl */
	Elf *dbg_elf;	      /* a separate debug file holding the DWARF, or NULL */
	bool has_dwarf;	      /* in the file or a separate one */
	struct inl_sec *secs; /* SHF_ALLOC sections in header order */
	size_t nr_secs;
	struct inl_cu *cus; /* the compile units looked into so far */
	size_t nr_cus, alloc_cus;
	struct inl_symtab main_syms; /* addr2line's: .symtab, else .dynsym */
	struct inl_symtab dbg_syms;  /* the debug file's .symtab */
};

struct inl_entry {
	uint32_t module;
	char *pc;
	size_t pc_len;
	char *result;
	size_t len;
};

struct inline_cache {
	struct inl_module *mods;
	uint32_t nr_mods, alloc_mods;
	struct idhash mod_index;
	struct inl_entry *ents;
	uint32_t nr_ents, alloc_ents;
	struct idhash ent_index;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct inline_cache *inline_cache_new(void)
{
	return xcalloc(1, sizeof(struct inline_cache));
}

void inline_cache_free(struct inline_cache *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->nr_mods; i++) {
		free(c->mods[i].path);
		free(c->mods[i].secs);
		for (size_t j = 0; j < c->mods[i].nr_cus; j++) {
			free(c->mods[i].cus[j].funcs);
			free(c->mods[i].cus[j].ranges);
			sym_addrmap_release(&c->mods[i].cus[j].best);
		}
		free(c->mods[i].cus);
		free(c->mods[i].main_syms.syms);
		free(c->mods[i].dbg_syms.syms);
		if (c->mods[i].dwfl)
			dwfl_end(c->mods[i].dwfl);
	}
	for (uint32_t i = 0; i < c->nr_ents; i++) {
		free(c->ents[i].pc);
		free(c->ents[i].result);
	}
	free(c->mods);
	free(c->ents);
	idhash_release(&c->mod_index);
	idhash_release(&c->ent_index);
	free(c);
}

static void module_sections(struct inl_module *m)
{
	Elf_Scn *scn = NULL;
	size_t alloc = 0;

	while ((scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		ALLOC_GROW(m->secs, m->nr_secs + 1, alloc);
		m->secs[m->nr_secs++] =
			(struct inl_sec){sh.sh_addr, sh.sh_addr + sh.sh_size, elf_ndxscn(scn)};
	}
}

/* Open path for DWARF lookups; a file that is not a readable ELF leaves m->elf NULL. */
static void module_open(struct inl_module *m, const char *path)
{
	struct stat st;
	GElf_Addr bias;
	Dwarf *dwarf;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (!m->dwfl)
		return;
	m->mod = dwfl_report_elf(m->dwfl, path, path, -1, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod || !(m->elf = dwfl_module_getelf(m->mod, &bias)) || bias) {
		m->elf = NULL;
		return;
	}
	module_sections(m);
	dwarf = dwfl_module_getdwarf(m->mod, &bias);
	m->has_dwarf = dwarf != NULL;
	if (dwarf && dwarf_getelf(dwarf) != m->elf)
		m->dbg_elf = dwarf_getelf(dwarf);
}

static uint32_t module_get(struct inline_cache *c, const char *dso, size_t len)
{
	uint32_t hash = (uint32_t)hash_bytes(dso, len, 0), pos = hash, id;
	char *path;

	while ((id = idhash_probe(&c->mod_index, hash, &pos)) != IDHASH_NONE) {
		if (c->mods[id].path_len == len && !memcmp(c->mods[id].path, dso, len))
			return id;
	}
	ALLOC_GROW(c->mods, c->nr_mods + 1, c->alloc_mods);
	id = c->nr_mods++;
	memset(&c->mods[id], 0, sizeof(c->mods[id]));
	path = xstrndup(dso, len);
	c->mods[id].path = path;
	c->mods[id].path_len = len;
	/* A name with a NUL byte cannot be the file perf named. */
	if (!memchr(dso, '\0', len))
		module_open(&c->mods[id], path);
	idhash_insert(&c->mod_index, hash, id);
	return id;
}

/*
 * Symbols.  addr2line reads .symtab, or .dynsym when .symtab holds
 * nothing; `nm` (the script's fallback) reads .symtab only.
 */
static Elf_Scn *find_symtab(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_entsize &&
		    sh.sh_size / sh.sh_entsize > 1)
			return scn;
	}
	return NULL;
}

/* Iterate the symbols of scn: index i (from 1) into *sym and *name; false at the end. */
static bool symtab_get(Elf *elf, Elf_Scn *scn, size_t i, GElf_Sym *sym, const char **name)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Shdr sh;

	if (!data || !gelf_getshdr(scn, &sh) || !sh.sh_entsize || i >= sh.sh_size / sh.sh_entsize ||
	    !gelf_getsym(data, (int)i, sym))
		return false;
	*name = elf_strptr(elf, sh.sh_link, sym->st_name);
	if (!*name)
		*name = "";
	return true;
}

/* What bfd's maybe_function_sym accepts: code-like symbols defined in a section. */
static bool function_like(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	if (type == STT_SECTION || type == STT_FILE || type == STT_OBJECT || type == STT_TLS ||
	    sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return false;
	/* annobin's hidden local labels are not functions. */
	return !(sym->st_size == 0 && GELF_ST_BIND(sym->st_info) == STB_LOCAL &&
		 type == STT_NOTYPE && GELF_ST_VISIBILITY(sym->st_other) == STV_HIDDEN);
}

static void symtab_load(struct inl_symtab *t, Elf *elf, bool dynsym_fallback)
{
	Elf_Scn *scn = find_symtab(elf, SHT_SYMTAB);
	size_t alloc = 0;
	GElf_Sym sym;
	const char *name;

	t->loaded = true;
	if (!scn && dynsym_fallback)
		scn = find_symtab(elf, SHT_DYNSYM);
	if (!scn)
		return;
	for (size_t i = 1; symtab_get(elf, scn, i, &sym, &name); i++) {
		if (!function_like(&sym))
			continue;
		ALLOC_GROW(t->syms, t->nr + 1, alloc);
		t->syms[t->nr++] = (struct inl_sym){sym.st_value, sym.st_size ? sym.st_size : 1,
						    sym.st_shndx, GELF_ST_TYPE(sym.st_info), name};
	}
}

static bool is_func_type(int type)
{
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/* bfd's better_fit, for two symbols at the same address. */
static bool better_at_same_address(const struct inl_sym *best, const struct inl_sym *s, uint64_t pc)
{
	if (best->value + best->size <= pc)
		return s->size > best->size;
	if (s->value + s->size <= pc)
		return false;
	if (is_func_type(best->type) != is_func_type(s->type))
		return is_func_type(s->type);
	if ((best->type == STT_NOTYPE) != (s->type == STT_NOTYPE))
		return best->type == STT_NOTYPE;
	return s->size < best->size;
}

/*
 * bfd's _bfd_elf_find_function: the symbol of section shndx closest
 * below pc, whatever its size, ties settled as better_fit does.
 */
static const char *symtab_function(const struct inl_symtab *t, uint64_t pc, size_t shndx)
{
	const struct inl_sym *best = NULL;

	for (size_t i = 0; i < t->nr; i++) {
		const struct inl_sym *s = &t->syms[i];

		if (s->shndx != shndx || s->value > pc || (best && s->value < best->value))
			continue;
		if (!best || s->value > best->value || better_at_same_address(best, s, pc))
			best = s;
	}
	return best ? best->name : NULL;
}

static const char *section_name(Elf *elf, size_t index)
{
	Elf_Scn *scn = elf_getscn(elf, index);
	size_t shstrndx;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	return elf_strptr(elf, shstrndx, sh.sh_name);
}

/* The file's own symbols: .symtab, or .dynsym when there is no .symtab. */
static const char *main_function(struct inl_module *m, uint64_t pc, size_t shndx)
{
	if (!m->main_syms.loaded)
		symtab_load(&m->main_syms, m->elf, true);
	return symtab_function(&m->main_syms, pc, shndx);
}

/*
 * The symbols bfd's DWARF reader consults: those of the separate debug
 * file when it has a section like the file's (same place, same name),
 * else the file's own.
 */
static const char *dwarf_function(struct inl_module *m, uint64_t pc, size_t shndx)
{
	const char *a, *b;

	if (m->dbg_elf && (a = section_name(m->elf, shndx)) &&
	    (b = section_name(m->dbg_elf, shndx)) && !strcmp(a, b)) {
		if (!m->dbg_syms.loaded)
			symtab_load(&m->dbg_syms, m->dbg_elf, false);
		return symtab_function(&m->dbg_syms, pc, shndx);
	}
	return main_function(m, pc, shndx);
}

/* `nm MOD` and /^([0-9a-f]+) . \Qfunc\E$/m: the value of the first .symtab symbol named func. */
static bool nm_lookup(struct inl_module *m, const char *func, size_t len, uint64_t *value)
{
	Elf_Scn *scn = find_symtab(m->elf, SHT_SYMTAB);
	GElf_Sym sym;
	const char *name;

	if (!scn)
		return false;
	for (size_t i = 1; symtab_get(m->elf, scn, i, &sym, &name); i++) {
		int type = GELF_ST_TYPE(sym.st_info);

		if (type == STT_SECTION || type == STT_FILE || sym.st_shndx == SHN_UNDEF)
			continue;
		if (strlen(name) == len && !memcmp(name, func, len)) {
			*value = sym.st_value;
			return true;
		}
	}
	return false;
}

/* bfd's mangle_style() == 0: languages whose DW_AT_name is the symbol name. */
static bool lang_names_are_linkage(int lang)
{
	switch (lang) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_Cobol74:
	case DW_LANG_Cobol85:
	case DW_LANG_Fortran77:
	case DW_LANG_Pascal83:
	case DW_LANG_PLI:
	case DW_LANG_C99:
	case DW_LANG_UPC:
	case DW_LANG_C11:
	case DW_LANG_Mips_Assembler:
	case 0x8765: /* DW_LANG_Upc */
	case 0x8e57: /* DW_LANG_HP_Basic91 */
	case 0x8e5b: /* DW_LANG_HP_IMacro */
	case 0x8e5c: /* DW_LANG_HP_Assembler */ return true;
	default: return false;
	}
}

/*
 * A function's name as bfd reads it: the linkage name (following
 * DW_AT_abstract_origin and DW_AT_specification) before DW_AT_name.
 * *linkage tells whether bfd takes it for the symbol's name.
 */
static const char *die_function_name(Dwarf_Die *die, bool *linkage)
{
	Dwarf_Attribute attr;
	Dwarf_Die cu;
	const char *name = NULL;

	*linkage = true;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr)) {
		name = dwarf_formstring(&attr);
		*linkage = dwarf_diecu(die, &cu, NULL, NULL) &&
			   lang_names_are_linkage(dwarf_srclang(&cu));
	}
	return name;
}

/*
 * addr2line -C demangles as bfd_demangle(DMGL_PARAMS | DMGL_ANSI) does:
 * leading dots and an "@suffix" are set aside, then put back.
 */
static void add_demangled(struct strbuf *out, const char *name)
{
	const char *core = name, *at;
	char *plain, *dem;

	if (!name || !*name) {
		strbuf_addstr(out, "??");
		return;
	}
	while (*core == '.' || *core == '$')
		core++;
	at = strchr(core, '@');
	plain = xstrndup(core, at ? (size_t)(at - core) : strlen(core));
	dem = cplus_demangle(plain, DMGL_PARAMS | DMGL_ANSI);
	if (dem) {
		strbuf_add(out, name, (size_t)(core - name));
		strbuf_addstr(out, dem);
		if (at)
			strbuf_addstr(out, at);
	} else {
		strbuf_addstr(out, name);
	}
	free(dem);
	free(plain);
}

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

static void cu_add_func(struct inl_cu *cu, size_t *alloc, size_t *alloc_ranges, Dwarf_Die *die,
			int tag, int32_t parent)
{
	Dwarf_Addr base, lo, hi;
	struct inl_func *f;
	ptrdiff_t off = 0;

	ALLOC_GROW(cu->funcs, cu->nr_funcs + 1, *alloc);
	f = &cu->funcs[cu->nr_funcs++];
	f->die = *die;
	f->tag = tag;
	f->parent = parent;
	f->range = (uint32_t)cu->nr_ranges;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 && cu->nr_ranges < UINT32_MAX) {
		ALLOC_GROW(cu->ranges, cu->nr_ranges + 1, *alloc_ranges);
		cu->ranges[cu->nr_ranges][0] = lo;
		cu->ranges[cu->nr_ranges++][1] = hi;
	}
	f->nr_ranges = (uint32_t)cu->nr_ranges - f->range;
}

/* Every function DIE of the unit in DIE order, each with its enclosing function. */
static void cu_build(struct inl_cu *cu, Dwarf_Die *cudie)
{
	struct walk {
		Dwarf_Die die;
		int32_t func;
	} *stack = NULL;
	size_t depth = 0, alloc = 0, alloc_funcs = 0, alloc_ranges = 0;
	Dwarf_Die die, child;

	if (dwarf_child(cudie, &child) != 0)
		return;
	ALLOC_GROW(stack, 1, alloc);
	stack[depth++] = (struct walk){child, -1};
	while (depth) {
		int32_t self = stack[depth - 1].func;
		int tag;

		die = stack[depth - 1].die;
		tag = dwarf_tag(&die);
		if (is_function_tag(tag) && cu->nr_funcs < INT32_MAX) {
			cu_add_func(cu, &alloc_funcs, &alloc_ranges, &die, tag, self);
			self = (int32_t)cu->nr_funcs - 1;
		}
		if (dwarf_siblingof(&die, &stack[depth - 1].die) != 0)
			depth--;
		if (dwarf_haschildren(&die) > 0 && dwarf_child(&die, &child) == 0) {
			ALLOC_GROW(stack, depth + 1, alloc);
			stack[depth++] = (struct walk){child, self};
		}
	}
	free(stack);
}

/* A range of a unit's function table, in the order bfd's lookup prefers it. */
struct inl_rank {
	uint64_t len;
	uint32_t range;
};

/* Longest first; on a tie, earlier in function table (and DIE) order first. */
static int cmp_rank(const void *a, const void *b)
{
	const struct inl_rank *x = a, *y = b;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->range < y->range ? -1 : x->range > y->range;
}

/*
 * bfd's lookup_address_in_function_table, for every address at once: the
 * function whose range holding pc is the shortest, the later one in DIE
 * order on a tie.  Painting the ranges longest first, in table order on a
 * tie, leaves each address to that function.  A unit that would take too
 * long is left to cu_best_func's scan.
 */
static void cu_index(struct inl_cu *cu)
{
	struct inl_rank *rank = xmalloc(st_mult(cu->nr_ranges + 1, sizeof(*rank)));
	int32_t *func = xmalloc(st_mult(cu->nr_ranges + 1, sizeof(*func)));
	size_t steps = 0;

	for (size_t i = 0; i < cu->nr_funcs; i++) {
		for (uint32_t r = 0; r < cu->funcs[i].nr_ranges; r++)
			func[cu->funcs[i].range + r] = (int32_t)i;
	}
	for (size_t r = 0; r < cu->nr_ranges; r++) {
		uint64_t lo = cu->ranges[r][0], hi = cu->ranges[r][1];

		rank[r] = (struct inl_rank){lo < hi ? hi - lo : 0, (uint32_t)r};
	}
	qsort(rank, cu->nr_ranges, sizeof(*rank), cmp_rank);
	sym_addrmap_init(&cu->best, (const uint64_t(*)[2])cu->ranges, cu->nr_ranges);
	for (size_t i = 0; i < cu->nr_ranges && steps <= MAX_PAINT; i++) {
		const uint64_t *r = cu->ranges[rank[i].range];

		steps += sym_addrmap_paint(&cu->best, r[0], r[1], func[rank[i].range], -1,
					   INT32_MAX);
	}
	free(rank);
	free(func);
	if (steps > MAX_PAINT) {
		sym_addrmap_release(&cu->best);
		return;
	}
	sym_addrmap_finish(&cu->best);
	cu->indexed = true;
	free(cu->ranges);
	cu->ranges = NULL;
}

/*
 * bfd's lookup_address_in_function_table: the function whose range
 * holding pc is the shortest, the later one in DIE order on a tie.
 */
static int32_t cu_best_func(const struct inl_cu *cu, uint64_t pc)
{
	uint64_t best_len = UINT64_MAX;
	int32_t best = -1;

	if (cu->indexed)
		return sym_addrmap_find(&cu->best, pc);
	for (size_t i = 0; i < cu->nr_funcs; i++) {
		const struct inl_func *f = &cu->funcs[i];

		for (uint32_t r = f->range; r < f->range + f->nr_ranges; r++) {
			uint64_t lo = cu->ranges[r][0], hi = cu->ranges[r][1];

			if (pc < lo || pc >= hi || hi - lo > best_len)
				continue;
			best_len = hi - lo;
			best = (int32_t)i;
		}
	}
	return best;
}

static struct inl_cu *module_cu(struct inl_module *m, Dwarf_Die *cudie)
{
	Dwarf_Off off = dwarf_dieoffset(cudie);
	struct inl_cu *cu;

	for (size_t i = 0; i < m->nr_cus; i++) {
		if (m->cus[i].offset == off)
			return &m->cus[i];
	}
	ALLOC_GROW(m->cus, m->nr_cus + 1, m->alloc_cus);
	cu = &m->cus[m->nr_cus++];
	memset(cu, 0, sizeof(*cu));
	cu->offset = off;
	cu_build(cu, cudie);
	cu_index(cu);
	return cu;
}

/*
 * The functions at pc from the DWARF, innermost first: the best fit and,
 * when it is an inlined instance, each function it was inlined into up
 * to a real one.  Returns their count, or 0.  *linkage is
 * die_function_name's for the innermost, *line whether the line table
 * knows pc (which alone counts as found).
 */
static int dwarf_chain(struct inl_module *m, uint64_t pc, const char **names, bool *linkage,
		       bool *line)
{
	Dwarf_Addr bias;
	Dwarf_Die *cudie = dwfl_module_addrdie(m->mod, pc, &bias);
	struct inl_cu *cu;
	int32_t f;
	int n = 0;
	bool l;

	*line = dwfl_module_getsrc(m->mod, pc) != NULL;
	if (!cudie)
		return 0;
	cu = module_cu(m, cudie);
	f = cu_best_func(cu, pc - bias);
	while (f >= 0 && n < MAX_CHAIN) {
		struct inl_func *fn = &cu->funcs[f];

		names[n] = die_function_name(&fn->die, n ? &l : linkage);
		n++;
		if (fn->tag != DW_TAG_inlined_subroutine)
			break;
		f = fn->parent;
	}
	return n;
}

/*
 * bfd's DWARF lookup: the innermost function's name, unless it is not a
 * linkage name (C++ DW_AT_name), when the closest symbol wins; with no
 * function, the closest symbol, or just a line.  0 when nothing is found.
 */
static int dwarf_lookup(struct inl_module *m, uint64_t pc, size_t shndx, const char **names)
{
	bool linkage = true, line;
	const char *sym;
	int n = dwarf_chain(m, pc, names, &linkage, &line);

	if (n && !linkage && (sym = dwarf_function(m, pc, shndx)))
		names[0] = sym;
	if (!n) {
		names[0] = dwarf_function(m, pc, shndx);
		if (names[0] || line)
			n = 1;
	}
	if (n && !names[0])
		names[0] = main_function(m, pc, shndx);
	return n;
}

enum a2l_status {
	A2L_NOFILE,   /* addr2line prints nothing */
	A2L_NOTFOUND, /* "??\n??:0" */
	A2L_FOUND,
};

/* addr2line's answer for pc: the names outermost first, joined by ';', into out. */
static enum a2l_status a2l(struct inl_module *m, uint64_t pc, struct strbuf *out)
{
	const char *names[MAX_CHAIN];
	int n;

	if (!m->elf)
		return A2L_NOFILE;
	for (size_t i = 0; i < m->nr_secs; i++) {
		if (pc < m->secs[i].lo || pc >= m->secs[i].hi)
			continue;
		n = m->has_dwarf ? dwarf_lookup(m, pc, m->secs[i].index, names) : 0;
		if (!n && (names[0] = main_function(m, pc, m->secs[i].index)))
			n = 1;
		if (!n)
			continue;
		for (int j = n; j-- > 0;) {
			add_demangled(out, names[j]);
			if (j)
				strbuf_addch(out, ';');
		}
		return A2L_FOUND;
	}
	return A2L_NOTFOUND;
}

/* addr2line's reading of its address argument: strtoul in base 16. */
static uint64_t parse_pc(const char *pc, size_t len)
{
	char buf[64];

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, pc, len);
	buf[len] = '\0';
	return strtoull(buf, NULL, 16);
}

/* /^(.+)\+0x([0-9a-f]+)$/ on perf's symbol: the name and the offset. */
static bool split_symoff(const char *s, size_t n, size_t *name_len, uint64_t *off)
{
	size_t i = n;

	while (i > 0 &&
	       ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] >= 'a' && s[i - 1] <= 'f')))
		i--;
	if (i == n || i < 4 || memcmp(s + i - 3, "+0x", 3))
		return false;
	*name_len = i - 3;
	*off = 0;
	for (; i < n; i++)
		*off = *off * 16 + (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	return true;
}

static uint32_t entry_find(struct inline_cache *c, uint32_t module, const char *pc, size_t len,
			   uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&c->ent_index, hash, &pos)) != IDHASH_NONE) {
		const struct inl_entry *e = &c->ents[id];

		if (e->module == module && e->pc_len == len && !memcmp(e->pc, pc, len))
			return id;
	}
	return IDHASH_NONE;
}

static uint32_t entry_hash(uint32_t module, const char *pc, size_t len)
{
	return (uint32_t)hash_bytes(pc, len, module);
}

static const struct inl_entry *entry_add(struct inline_cache *c, uint32_t module, const char *pc,
					 size_t len, struct strbuf *result)
{
	struct inl_entry *e;

	ALLOC_GROW(c->ents, (size_t)c->nr_ents + 1, c->alloc_ents);
	e = &c->ents[c->nr_ents];
	e->module = module;
	e->pc = xmemdup(pc, len);
	e->pc_len = len;
	e->len = result->len;
	e->result = strbuf_detach(result, NULL);
	idhash_insert(&c->ent_index, entry_hash(module, pc, len), c->nr_ents);
	return &c->ents[c->nr_ents++];
}

/* The script's inline($pc, $rawfunc, $mod), cached per (mod, pc). */
static const struct inl_entry *inline_resolve(struct inline_cache *c, uint32_t module,
					      const char *pc, size_t pc_len, const char *raw,
					      size_t raw_len)
{
	struct inl_module *m = &c->mods[module];
	uint32_t id = entry_find(c, module, pc, pc_len, entry_hash(module, pc, pc_len));
	struct strbuf out = STRBUF_INIT;
	size_t name_len;
	uint64_t off, base;

	if (id != IDHASH_NONE)
		return &c->ents[id];
	switch (a2l(m, parse_pc(pc, pc_len), &out)) {
	case A2L_NOFILE: break;
	case A2L_FOUND: break;
	case A2L_NOTFOUND:
		if (split_symoff(raw, raw_len, &name_len, &off) &&
		    nm_lookup(m, raw, name_len, &base)) {
			char newpc[32];
			const struct inl_entry *e;

			snprintf(newpc, sizeof(newpc), "0x%" PRIx64, base + off);
			e = inline_resolve(c, module, newpc, strlen(newpc), "", 0);
			strbuf_add(&out, e->result, e->len);
		} else {
			strbuf_addstr(&out, "??");
		}
		break;
	}
	return entry_add(c, module, pc, pc_len, &out);
}

const char *inline_cache_lookup(struct inline_cache *c, const char *pc, size_t pc_len,
				const char *rawfunc, size_t raw_len, const char *dso,
				size_t dso_len, size_t *len)
{
	const struct inl_entry *e =
		inline_resolve(c, module_get(c, dso, dso_len), pc, pc_len, rawfunc, raw_len);

	*len = e->len;
	return e->result;
}
