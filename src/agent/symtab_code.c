/* SPDX-License-Identifier: MIT */
/*
 * Names the agent's symbol table (symtab.h) takes from a file's own
 * tables when symbols do not name code: PLT stubs from the PLT's code and
 * relocations, and the start of unnamed functions from .eh_frame.  The
 * rules are `plateau record`'s (doc/symbolize.md), so that both collectors
 * name the same code alike (lib/symname.h).  COLD: read from the file at
 * S with bounds-checked reads; every count and offset is checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symtab_elf.h"
#include "lib/symname.h"
#include "util/banned.h"

#define MAX_PLT_ENTS (1u << 20)
#define PLT_RANK     3 /* loses to a real symbol at the same address */

/* ---- PLT stubs ---- */

/* A relocation with a symbol: the GOT slot it fills, and the symbol's index. */
struct slot {
	uint64_t got;
	uint32_t sym;
};

struct plt {
	const struct elf *e;
	Elf64_Sym *dynsym;
	size_t ndynsym;
	char *dynstr;
	size_t dynstrsize;
	Elf64_Rela *jmprel; /* .rela.plt */
	size_t njmprel;
	struct slot *slots; /* sorted by got */
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

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
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
			p->slots[k++] =
				(struct slot){r->r_offset, (uint32_t)ELF64_R_SYM(r->r_info)};
	}
	p->nslots = k;
	qsort(p->slots, k, sizeof(*p->slots), slot_cmp);
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
	size_t lo = 0, hi = p->nslots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->slots[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nslots && p->slots[lo].got == got ? dyn_name(p, p->slots[lo].sym) : NULL;
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

/* ---- function starts from .eh_frame ---- */

enum {
	PE_ABSPTR = 0x00,
	PE_ULEB = 0x01,
	PE_UDATA2 = 0x02,
	PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04,
	PE_SIGNED = 0x08,
	PE_SLEB = 0x09,
	PE_SDATA2 = 0x0a,
	PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10,
	PE_DATAREL = 0x30,
	PE_ALIGNED = 0x50,
	PE_INDIRECT = 0x80,
};

#define TABLE_ENC (PE_DATAREL | PE_SDATA4)
#define LEN_64	  0xffffffffu

/* A bounded reader over bytes that sit at file vaddr base_addr. */
struct cur {
	const uint8_t *p, *end, *base;
	uint64_t base_addr;
};

static bool cur_uint(struct cur *c, size_t n, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return true;
}

static bool cur_leb(struct cur *c, bool sign, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (c->p == c->end || shift >= 64)
			return false;
		b = *c->p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = r;
	return true;
}

static uint64_t sign_extend(uint64_t v, size_t bytes)
{
	uint64_t bit = (uint64_t)1 << (8 * bytes - 1);

	return bytes >= 8 ? v : (v ^ bit) - bit;
}

/* A value of encoding ENC's format, its base not applied. */
static bool cur_raw(struct cur *c, unsigned enc, uint64_t *v)
{
	size_t n;

	switch (enc & 0x0f) {
	case PE_ABSPTR: n = 8; break;
	case PE_ULEB: return cur_leb(c, false, v);
	case PE_SLEB: return cur_leb(c, true, v);
	case PE_UDATA2:
	case PE_SDATA2: n = 2; break;
	case PE_UDATA4:
	case PE_SDATA4: n = 4; break;
	case PE_UDATA8:
	case PE_SDATA8: n = 8; break;
	default: return false;
	}
	if (!cur_uint(c, n, v))
		return false;
	if (enc & PE_SIGNED)
		*v = sign_extend(*v, n);
	return true;
}

static uint64_t cur_addr(const struct cur *c)
{
	return c->base_addr + (uint64_t)(c->p - c->base);
}

/* An address, absolute or pc-relative; other bases and indirection are refused. */
static bool cur_pointer(struct cur *c, unsigned enc, uint64_t *v)
{
	uint64_t field = cur_addr(c);

	if ((enc & PE_INDIRECT) || !cur_raw(c, enc, v))
		return false;
	if ((enc & 0x70) == PE_PCREL)
		*v += field;
	else if ((enc & 0x70) != PE_ABSPTR)
		return false;
	return true;
}

/* Limit C to a CIE's or FDE's length (32-bit form only). */
static bool cur_record(struct cur *c)
{
	uint64_t len;

	if (!cur_uint(c, 4, &len) || !len || len == LEN_64 || len > (size_t)(c->end - c->p))
		return false;
	c->end = c->p + len;
	return true;
}

/* The .eh_frame bytes, at their file vaddr. */
struct frame {
	const uint8_t *v;
	size_t size;
	uint64_t addr;
};

static bool frame_cursor(const struct frame *f, uint64_t addr, struct cur *c)
{
	if (addr < f->addr || addr - f->addr >= f->size)
		return false;
	*c = (struct cur){f->v + (addr - f->addr), f->v + f->size, f->v, f->addr};
	return true;
}

/* Walk a "z" augmentation's data up to 'R', the FDE pointer encoding. */
static bool cie_aug_enc(struct cur *c, const char *aug, unsigned *enc)
{
	uint64_t x;

	for (; *aug; aug++) {
		switch (*aug) {
		case 'R':
			if (!cur_uint(c, 1, &x))
				return false;
			*enc = (unsigned)x;
			return true;
		case 'L':
			if (!cur_uint(c, 1, &x))
				return false;
			break;
		case 'P':
			if (!cur_uint(c, 1, &x) || (x & 0x70) == PE_ALIGNED ||
			    !cur_raw(c, (unsigned)x, &x))
				return false;
			break;
		case 'S':
		case 'B':
		case 'G': break;
		default: return false;
		}
	}
	return true;
}

/* The FDE pointer encoding of the CIE at ADDR (absptr without 'R'). */
static bool cie_fde_enc(const struct frame *f, uint64_t addr, unsigned *enc)
{
	struct cur c;
	uint64_t id, version, x, len;
	const char *aug;
	size_t n;

	if (!frame_cursor(f, addr, &c) || !cur_record(&c) || !cur_uint(&c, 4, &id) || id ||
	    !cur_uint(&c, 1, &version) || (version != 1 && version != 3))
		return false;
	aug = (const char *)c.p;
	n = strnlen(aug, (size_t)(c.end - c.p));
	if (n == (size_t)(c.end - c.p))
		return false;
	c.p += n + 1;
	*enc = PE_ABSPTR;
	if (aug[0] != 'z')
		return !aug[0];
	if (!cur_leb(&c, false, &x) || !cur_leb(&c, true, &x) ||
	    !(version == 1 ? cur_uint(&c, 1, &x) : cur_leb(&c, false, &x)) ||
	    !cur_leb(&c, false, &len) || len > (size_t)(c.end - c.p))
		return false;
	c.end = c.p + len;
	return cie_aug_enc(&c, aug + 1, enc);
}

/* [*begin, *begin + *range) of the FDE at ADDR. */
static bool fde_range(const struct frame *f, uint64_t addr, uint64_t *begin, uint64_t *range)
{
	struct cur c;
	uint64_t field, delta;
	unsigned enc;

	if (!frame_cursor(f, addr, &c) || !cur_record(&c))
		return false;
	field = cur_addr(&c);
	if (!cur_uint(&c, 4, &delta) || !delta || delta > field - f->addr ||
	    !cie_fde_enc(f, field - delta, &enc))
		return false;
	return cur_pointer(&c, enc, begin) && cur_raw(&c, enc & ~(unsigned)PE_SIGNED, range);
}

/* Check .eh_frame_hdr's header; its table and entry count, or false. */
static bool hdr_table(struct cur *c, uint64_t *count)
{
	uint64_t version, ptr_enc, count_enc, table_enc, x;

	return cur_uint(c, 1, &version) && version == 1 && cur_uint(c, 1, &ptr_enc) &&
	       cur_uint(c, 1, &count_enc) && cur_uint(c, 1, &table_enc) && count_enc == PE_UDATA4 &&
	       table_enc == TABLE_ENC && cur_raw(c, (unsigned)ptr_enc, &x) &&
	       cur_uint(c, 4, count) && *count <= (size_t)(c->end - c->p) / 8;
}

/* Each table entry's start and its FDE's range; false when the table is not sorted. */
static bool fill_ranges(struct cur *c, const struct frame *f, struct fde_ranges *out)
{
	for (size_t i = 0; i < out->n; i++) {
		uint64_t s = 0, a = 0, begin, range;

		/* hdr_table() checked that the entries are there. */
		cur_uint(c, 4, &s);
		cur_uint(c, 4, &a);
		s = c->base_addr + sign_extend(s, 4);
		a = c->base_addr + sign_extend(a, 4);
		if (i && s < out->start[i - 1])
			return false;
		out->start[i] = s;
		out->len[i] = fde_range(f, a, &begin, &range) && begin == s ? range : 0;
	}
	return true;
}

int elf_fde_ranges(const struct elf *e, struct fde_ranges *out)
{
	const Elf64_Shdr *hs = elf_section_named(e, ".eh_frame_hdr");
	const Elf64_Shdr *fs = elf_section_named(e, ".eh_frame");
	size_t hlen = 0, flen = 0;
	uint8_t *hdr = NULL, *fr = NULL;
	uint64_t count;
	struct cur c;
	int rc = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (!hs || !fs || hs->sh_type != SHT_PROGBITS || fs->sh_type != SHT_PROGBITS ||
	    !(hdr = (uint8_t *)elf_read_section(e, hs, AGENT_SYMTAB_SECTION_MAX, &hlen)) ||
	    !(fr = (uint8_t *)elf_read_section(e, fs, AGENT_SYMTAB_SECTION_MAX, &flen)) || !flen)
		goto out;
	c = (struct cur){hdr, hdr + hlen, hdr, hs->sh_addr};
	if (!hdr_table(&c, &count) || !count)
		goto out;
	out->start = calloc(count, sizeof(*out->start));
	out->len = calloc(count, sizeof(*out->len));
	out->n = count;
	rc = -ENOMEM;
	if (out->start && out->len)
		rc = fill_ranges(&c, &(struct frame){fr, flen, fs->sh_addr}, out) ? 0 : -ENOENT;
	if (rc)
		fde_ranges_clear(out);
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
