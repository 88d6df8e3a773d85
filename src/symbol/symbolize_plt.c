/* SPDX-License-Identifier: MIT */
#include <limits.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "symbol/symbolize_elf.h"
#include "symbol/symname.h"

/*
 * PLT stubs have no symbols.  Each entry of .plt, .plt.sec and .plt.got is
 * named "target@plt" (symname.h), as perf names them: the entry's code
 * gives its GOT slot (or, in an IBT .plt, its relocation index), the slot's
 * relocation (.rela.plt or .rela.dyn) gives the dynamic symbol.  An
 * entry that tells nothing (the lazy-binding header) is "[plt]", and so is
 * a section-wide symbol under the entries (cut down to what they leave),
 * so a sizeless _init before the PLT never swallows it.
 */

#define PLT_RANK     255 /* the section-wide "[plt]" loses to any other symbol */
#define PLT_STUB     254 /* a stub loses to a real symbol at its address */
#define MAX_PLT_ENTS (1u << 20)

struct plt_ctx {
	struct sym_dso *d;
	size_t *alloc;
	Elf_Data *jmprel; /* .rela.plt */
	GElf_Shdr jmprel_sh;
	struct symname_slot *slots; /* sorted by got */
	size_t nr_slots;
};

/* The dynamic symbol name of relocation i of REL (a section with header SH), or NULL. */
static const char *rela_name(Elf *elf, Elf_Data *rel, const GElf_Shdr *sh, size_t i)
{
	Elf_Scn *scn = elf_getscn(elf, sh->sh_link);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr ssh;
	GElf_Rela r;
	GElf_Sym sym;
	const char *name;

	if (!data || !gelf_getshdr(scn, &ssh) || !gelf_getrela(rel, (int)i, &r) ||
	    !GELF_R_SYM(r.r_info) || GELF_R_SYM(r.r_info) > INT_MAX ||
	    !gelf_getsym(data, (int)GELF_R_SYM(r.r_info), &sym) || !sym.st_name)
		return NULL;
	name = elf_strptr(elf, ssh.sh_link, sym.st_name);
	return name && *name ? name : NULL;
}

static size_t rela_count(const Elf_Data *rel, const GElf_Shdr *sh)
{
	return rel && sh->sh_entsize ? MIN(rel->d_size / sh->sh_entsize, (size_t)INT_MAX) : 0;
}

static void slots_add(struct plt_ctx *c, const char *section, size_t *alloc)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(c->d->elf, section, &sh);
	Elf_Data *rel = scn && sh.sh_type == SHT_RELA ? elf_getdata(scn, NULL) : NULL;
	size_t n = rela_count(rel, &sh);

	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		const char *name = rela_name(c->d->elf, rel, &sh, i);

		if (!name || !gelf_getrela(rel, (int)i, &r))
			continue;
		ALLOC_GROW(c->slots, c->nr_slots + 1, *alloc);
		c->slots[c->nr_slots++] = (struct symname_slot){.got = r.r_offset, .name = name};
	}
	if (!strcmp(section, ".rela.plt") && rel) {
		c->jmprel = rel;
		c->jmprel_sh = sh;
	}
}

static const char *slot_name(const struct plt_ctx *c, uint64_t got)
{
	const struct symname_slot *s = symname_slot_find(c->slots, c->nr_slots, got);

	return s ? s->name : NULL;
}

static void sym_add(struct plt_ctx *c, uint64_t start, uint64_t end, const char *name,
		    unsigned rank)
{
	struct sym_dso *d = c->d;

	ALLOC_GROW(d->syms, d->nr_syms + 1, *c->alloc);
	/* pretty is set: "x@plt" must not lose its suffix as a symbol version would. */
	d->syms[d->nr_syms++] = (struct sym_sym){start, end, name, name, rank};
}

/* The target of the entry at vaddr (its bytes code[0..len)), or NULL. */
static const char *entry_target(const struct plt_ctx *c, const uint8_t *code, size_t len,
				uint64_t vaddr)
{
	uint64_t v;

	switch (symname_plt_stub(code, len, vaddr, &v)) {
	case SYMNAME_PLT_GOT: return slot_name(c, v);
	case SYMNAME_PLT_INDEX:
		return v < rela_count(c->jmprel, &c->jmprel_sh)
			       ? rela_name(c->d->elf, c->jmprel, &c->jmprel_sh, (size_t)v)
			       : NULL;
	default: return NULL;
	}
}

static void section_stubs(struct plt_ctx *c, const char *section)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(c->d->elf, section, &sh);
	Elf_Data *data = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
	size_t ent = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;

	if (!scn || !sh.sh_addr || !sh.sh_size || sh.sh_addr + sh.sh_size < sh.sh_addr)
		return;
	sym_add(c, sh.sh_addr, sh.sh_addr + sh.sh_size, SYMNAME_PLT_ANON, PLT_RANK);
	if (!data || !data->d_buf || data->d_size != sh.sh_size)
		return;
	for (size_t off = 0; off + ent <= data->d_size && off / ent < MAX_PLT_ENTS; off += ent) {
		const char *t =
			entry_target(c, (const uint8_t *)data->d_buf + off, ent, sh.sh_addr + off);
		struct strbuf sb = STRBUF_INIT;
		const char *name = SYMNAME_PLT_ANON;

		if (t) {
			strbuf_addf(&sb, "%s%s", t, SYMNAME_PLT_SUFFIX);
			name = arena_memdup(&c->d->text_names, sb.buf, sb.len);
			strbuf_release(&sb);
		}
		sym_add(c, sh.sh_addr + off, sh.sh_addr + off + ent, name, PLT_STUB);
	}
}

void sym_plt_read(struct sym_dso *d, size_t *alloc)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	struct plt_ctx c = {.d = d, .alloc = alloc};
	size_t slots_alloc = 0;

	slots_add(&c, ".rela.plt", &slots_alloc);
	slots_add(&c, ".rela.dyn", &slots_alloc);
	if (c.nr_slots)
		qsort(c.slots, c.nr_slots, sizeof(*c.slots), symname_slot_cmp);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		section_stubs(&c, names[i]);
	free(c.slots);
}
