/* SPDX-License-Identifier: MIT */
/*
 * Names the agent's symbol table (symtab.h) takes from a file's own
 * tables when symbols do not name code: PLT stubs from the PLT's code and
 * relocations, and the start of unnamed functions from .eh_frame.  The
 * rules are `plateau record`'s (doc/symbolize.md), so that both collectors
 * name the same code alike (symbol/symname.h).  COLD: read from the file at
 * S with bounds-checked reads; every count and offset is checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/stack/symtab_elf.h"
#include "symbol/ehframe_hdr.h"
#include "symbol/symname.h"
#include "util/banned.h"

#define MAX_PLT_ENTS (1u << 20)
#define PLT_RANK     3 /* loses to a real symbol at the same address */

/* ---- PLT stubs ---- */

struct plt {
	const struct elf *e;
	Elf64_Sym *dynsym;
	size_t ndynsym;
	char *dynstr;
	size_t dynstrsize;
	Elf64_Rela *jmprel; /* .rela.plt */
	size_t njmprel;
	struct symname_slot *slots; /* sorted by got */
	size_t nslots;
	char *names; /* "x@plt\0" strings to append to the table's */
	size_t nnames, allocnames;
	struct sym *syms;
	size_t nsyms, allocsyms;
};

static void *read_named(const struct elf *e, const char *name, uint32_t type, size_t entsize,
			size_t *n)
{
	const Elf64_Shdr *sh = elf_section_named(e, name);
	size_t len = 0;
	void *p;

	*n = 0;
	if (!sh || sh->sh_type != type || (entsize && sh->sh_entsize != entsize))
		return NULL;
	p = elf_read_section(e, sh, AGENT_SYMTAB_SECTION_MAX, &len);
	*n = p ? (entsize ? len / entsize : len) : 0;
	return p;
}

/* Every relocation of .rela.plt and .rela.dyn that names a symbol, by GOT slot. */
static int plt_slots(struct plt *p, const Elf64_Rela *dyn, size_t ndyn)
{
	size_t k = 0;

	if (p->njmprel + ndyn == 0)
		return 0;
	p->slots = calloc(p->njmprel + ndyn, sizeof(*p->slots));
	if (!p->slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->njmprel + ndyn; i++) {
		const Elf64_Rela *r = i < p->njmprel ? &p->jmprel[i] : &dyn[i - p->njmprel];

		if (ELF64_R_SYM(r->r_info))
			p->slots[k++] = (struct symname_slot){
				.got = r->r_offset, .sym = (uint32_t)ELF64_R_SYM(r->r_info)};
	}
	p->nslots = k;
	qsort(p->slots, k, sizeof(*p->slots), symname_slot_cmp);
	return 0;
}

/* The name of dynamic symbol I, or NULL. */
static const char *dyn_name(const struct plt *p, uint64_t i)
{
	uint32_t off;

	if (i == 0 || i >= p->ndynsym || !p->dynstr)
		return NULL;
	off = p->dynsym[i].st_name;
	return off && off < p->dynstrsize && p->dynstr[off] ? p->dynstr + off : NULL;
}

static const char *slot_name(const struct plt *p, uint64_t got)
{
	const struct symname_slot *s = symname_slot_find(p->slots, p->nslots, got);

	return s ? dyn_name(p, s->sym) : NULL;
}

static const char *entry_target(const struct plt *p, const uint8_t *code, size_t len, uint64_t addr)
{
	uint64_t v;

	switch (symname_plt_stub(code, len, addr, &v)) {
	case SYMNAME_PLT_GOT: return slot_name(p, v);
	case SYMNAME_PLT_INDEX:
		return v < p->njmprel ? dyn_name(p, ELF64_R_SYM(p->jmprel[v].r_info)) : NULL;
	default: return NULL;
	}
}

/* Append "NAME SUFFIX\0" to p->names; its offset there, or -1. */
static int64_t name_add(struct plt *p, const char *name, const char *suffix)
{
	size_t a = strlen(name), b = strlen(suffix), off = p->nnames;

	if (a + b + 1 > p->allocnames - p->nnames) {
		size_t want = p->allocnames ? p->allocnames * 2 : 4096;
		char *v;

		while (want < p->nnames + a + b + 1)
			want *= 2;
		if (want > AGENT_SYMTAB_SECTION_MAX || !(v = realloc(p->names, want)))
			return -1;
		p->names = v;
		p->allocnames = want;
	}
	memcpy(p->names + off, name, a);
	memcpy(p->names + off + a, suffix, b + 1);
	p->nnames += a + b + 1;
	return (int64_t)off;
}

static int sym_add(struct plt *p, uint64_t addr, uint64_t size, const char *name,
		   const char *suffix)
{
	int64_t off = name_add(p, name, suffix);

	if (off < 0)
		return -ENOMEM;
	if (p->nsyms == p->allocsyms) {
		size_t n = p->allocsyms ? p->allocsyms * 2 : 256;
		struct sym *v = realloc(p->syms, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->syms = v;
		p->allocsyms = n;
	}
	/* name is relative to the appended names; moved past the table's strings later. */
	p->syms[p->nsyms++] = (struct sym){addr, (uint32_t)off, (uint32_t)size, PLT_RANK};
	return 0;
}

/* One symbol per entry of the PLT section NAME; the whole section when its bytes are unread. */
static int plt_section(struct plt *p, const char *name)
{
	const Elf64_Shdr *sh = elf_section_named(p->e, name);
	size_t ent, len = 0;
	uint8_t *code;
	int rc = 0;

	if (!sh || sh->sh_type != SHT_PROGBITS || !sh->sh_addr || !sh->sh_size ||
	    sh->sh_addr + sh->sh_size < sh->sh_addr)
		return 0;
	ent = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;
	code = (uint8_t *)elf_read_section(p->e, sh, AGENT_SYMTAB_SECTION_MAX, &len);
	if (!code)
		return sh->sh_size <= UINT32_MAX / 4
			       ? sym_add(p, sh->sh_addr, sh->sh_size, SYMNAME_PLT_ANON, "")
			       : 0;
	for (size_t off = 0; off + ent <= len && off / ent < MAX_PLT_ENTS && !rc; off += ent) {
		const char *t = entry_target(p, code + off, ent, sh->sh_addr + off);

		rc = sym_add(p, sh->sh_addr + off, ent, t ? t : SYMNAME_PLT_ANON,
			     t ? SYMNAME_PLT_SUFFIX : "");
	}
	free(code);
	return rc;
}

/* Move P's symbols and names into TAB, and sort it again. */
static int plt_merge(struct plt *p, struct syms *tab)
{
	size_t base = tab->strs ? tab->strsize + 1 : 0;
	struct sym *v;
	char *s;

	if (!p->nsyms)
		return 0;
	if (base + p->nnames > UINT32_MAX || tab->n + p->nsyms > SIZE_MAX / sizeof(*v))
		return -E2BIG;
	s = realloc(tab->strs, base + p->nnames + 1);
	if (!s)
		return -ENOMEM;
	tab->strs = s;
	v = realloc(tab->v, (tab->n + p->nsyms) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	tab->v = v;
	memcpy(s + base, p->names, p->nnames);
	s[base + p->nnames] = '\0';
	tab->strsize = base + p->nnames;
	for (size_t i = 0; i < p->nsyms; i++) {
		v[tab->n] = p->syms[i];
		v[tab->n++].name += (uint32_t)base;
	}
	syms_finish(tab);
	return 0;
}

int elf_plt_symbols(const struct elf *e, struct syms *tab)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	const Elf64_Shdr *ds = NULL;
	struct plt p = {.e = e};
	Elf64_Rela *dyn;
	size_t ndyn;
	int rc;

	for (size_t i = 1; i < e->shnum && !ds; i++)
		ds = e->sh[i].sh_type == SHT_DYNSYM ? &e->sh[i] : NULL;
	if (ds && ds->sh_entsize == sizeof(Elf64_Sym) && ds->sh_link < e->shnum) {
		p.dynsym = (Elf64_Sym *)(void *)elf_read_section(e, ds, AGENT_SYMTAB_SECTION_MAX,
								 &p.ndynsym);
		p.ndynsym /= sizeof(Elf64_Sym);
		p.dynstr = elf_read_section(e, &e->sh[ds->sh_link], AGENT_SYMTAB_SECTION_MAX,
					    &p.dynstrsize);
	}
	p.jmprel = read_named(e, ".rela.plt", SHT_RELA, sizeof(Elf64_Rela), &p.njmprel);
	dyn = read_named(e, ".rela.dyn", SHT_RELA, sizeof(Elf64_Rela), &ndyn);
	rc = plt_slots(&p, dyn, ndyn);
	free(dyn);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !rc; i++)
		rc = plt_section(&p, names[i]);
	if (!rc)
		rc = plt_merge(&p, tab);
	free(p.dynsym);
	free(p.dynstr);
	free(p.jmprel);
	free(p.slots);
	free(p.names);
	free(p.syms);
	return rc;
}

/* ---- function starts from .eh_frame (symbol/ehframe_hdr.h) ---- */

/* Each table entry's start and its FDE's range (0 when the FDE does not start there). */
static void fill_ranges(const struct ehframe *eh, struct fde_ranges *out)
{
	for (size_t i = 0; i < out->n; i++) {
		uint64_t s = ehframe_table_addr(eh, i, 0), begin, range;
		bool ok = ehframe_fde_range(eh, ehframe_table_addr(eh, i, 1), &begin, &range);

		out->start[i] = s;
		out->len[i] = ok && begin == s ? range : 0;
	}
}

int elf_fde_ranges(const struct elf *e, struct fde_ranges *out)
{
	const Elf64_Shdr *hs = elf_section_named(e, ".eh_frame_hdr");
	const Elf64_Shdr *fs = elf_section_named(e, ".eh_frame");
	size_t hlen = 0, flen = 0;
	uint8_t *hdr = NULL, *fr = NULL;
	struct ehframe eh;
	int rc = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (!hs || !fs || hs->sh_type != SHT_PROGBITS || fs->sh_type != SHT_PROGBITS ||
	    !(hdr = (uint8_t *)elf_read_section(e, hs, AGENT_SYMTAB_SECTION_MAX, &hlen)) ||
	    !(fr = (uint8_t *)elf_read_section(e, fs, AGENT_SYMTAB_SECTION_MAX, &flen)) || !flen)
		goto out;
	/* The agent reads only little-endian ELF64 files (symtab_elf.c). */
	eh = (struct ehframe){.hdr_addr = hs->sh_addr,
			      .frame = fr,
			      .frame_size = flen,
			      .frame_addr = fs->sh_addr,
			      .addr_mask = UINT64_MAX,
			      .addr_size = 8};
	ehframe_table(&eh, hdr, hlen);
	if (!eh.nr)
		goto out;
	out->start = calloc(eh.nr, sizeof(*out->start));
	out->len = calloc(eh.nr, sizeof(*out->len));
	out->n = eh.nr;
	if (!out->start || !out->len) {
		fde_ranges_clear(out);
		rc = -ENOMEM;
		goto out;
	}
	fill_ranges(&eh, out);
	rc = 0;
out:
	free(hdr);
	free(fr);
	return rc;
}

bool fde_ranges_find(const struct fde_ranges *r, uint64_t addr, uint64_t *start)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->start[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - r->start[lo - 1] >= r->len[lo - 1])
		return false;
	*start = r->start[lo - 1];
	return true;
}

void fde_ranges_clear(struct fde_ranges *r)
{
	free(r->start);
	free(r->len);
	memset(r, 0, sizeof(*r));
}
