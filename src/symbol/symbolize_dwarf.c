/* SPDX-License-Identifier: MIT */
#include <dwarf.h>
#include <limits.h>
#include <elfutils/libdwfl.h>

#include "util/common.h"
#include "util/hash.h"
#include "symbol/symbolize_dwarf.h"

/*
 * DWARF lookups for the symbolizer.  The answer is defined by libdw's
 * dwarf_getscopes (the reference mode still calls it on every lookup),
 * but that walks the compile unit's DIE tree each time.  Instead, the
 * first lookup in a CU walks it once the way dwarf_getscopes does
 * (__libdw_visit_scopes: the same DIEs, in the same order, imported
 * units in place) and paints an address map: each address owned by the
 * DIE dwarf_getscopes would stop at, reduced to the innermost
 * subprogram or inlined instance above it.  A lookup is then a binary
 * search plus a walk up that function chain.  Where the walk meets
 * something it does not model (a libdw error, an import cycle), the CU
 * keeps using dwarf_getscopes, so results never differ.
 */

/* Bound the work of one unit walk (imported units can multiply it) and of its painting. */
#define WALK_MAX_STEPS	(1u << 26)
#define WALK_MAX_RANGES (1u << 27)
#define PAINT_MAX_STEPS (1u << 26)

/* ---------------------------------------------------------------- address map */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void sym_addrmap_init(struct sym_addrmap *m, const uint64_t (*ranges)[2], size_t nr)
{
	size_t n = 0, k = 0;

	memset(m, 0, sizeof(*m));
	m->start = xmalloc(st_mult(st_add(st_mult(nr, 2), 1), sizeof(*m->start)));
	for (size_t i = 0; i < nr; i++) {
		if (ranges[i][0] < ranges[i][1]) {
			m->start[n++] = ranges[i][0];
			m->start[n++] = ranges[i][1];
		}
	}
	qsort(m->start, n, sizeof(*m->start), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (!k || m->start[k - 1] != m->start[i])
			m->start[k++] = m->start[i];
	}
	m->nr = k ? k - 1 : 0;
	m->owner = xmalloc(st_mult(m->nr + 1, sizeof(*m->owner)));
	for (size_t i = 0; i < m->nr; i++)
		m->owner[i] = -1;
}

/* The index of the last bound <= addr, or m->nr + 1 when addr is below them all. */
static size_t addrmap_slot(const struct sym_addrmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nr + 1;

	if (!m->nr || addr < m->start[0])
		return m->nr + 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->start[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t sym_addrmap_paint(struct sym_addrmap *m, uint64_t lo, uint64_t hi, int32_t id, int32_t if_lo,
			 int32_t if_hi)
{
	size_t i = lo < hi ? addrmap_slot(m, lo) : m->nr, first = i;

	for (; i < m->nr && m->start[i] < hi; i++) {
		if (m->owner[i] >= if_lo && m->owner[i] < if_hi)
			m->owner[i] = id;
	}
	return i - first;
}

void sym_addrmap_finish(struct sym_addrmap *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->nr; i++) {
		if (k && m->owner[k - 1] == m->owner[i])
			continue;
		m->start[k] = m->start[i];
		m->owner[k++] = m->owner[i];
	}
	if (k <= 1 && (!k || m->owner[0] < 0)) {
		sym_addrmap_release(m);
		return;
	}
	m->start[k] = m->start[m->nr];
	m->nr = k;
	m->start = xrealloc(m->start, st_mult(k + 1, sizeof(*m->start)));
	m->owner = xrealloc(m->owner, st_mult(k, sizeof(*m->owner)));
}

int32_t sym_addrmap_find(const struct sym_addrmap *m, uint64_t addr)
{
	size_t i = addrmap_slot(m, addr);

	return i < m->nr ? m->owner[i] : -1;
}

size_t sym_addrmap_bytes(const struct sym_addrmap *m)
{
	return m->nr ? (m->nr + 1) * sizeof(*m->start) + m->nr * sizeof(*m->owner) : 0;
}

void sym_addrmap_release(struct sym_addrmap *m)
{
	free(m->start);
	free(m->owner);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------- the file */

/* A subprogram or inlined instance of an indexed CU, named on first use. */
struct dw_func {
	Dwarf_Die die;
	int32_t parent; /* the function it is nested in (index), or -1 */
	int tag;
	bool named, called;
	const char *name;
	const char *call_file; /* an inlined instance's call site */
	unsigned call_line;
};

struct dw_cu {
	const void *key; /* the CU DIE's addr */
	bool slow;	 /* not indexed: dwarf_getscopes on every lookup */
	struct dw_func *funcs;
	size_t nr_funcs;
	struct sym_addrmap map; /* address -> innermost function */
};

/* The subprogram DIEs a unit walk visits: what dwarf_getscopes can take as an inline's origin. */
struct dw_unit_set {
	const void *key; /* the unit DIE's addr */
	const void **addrs;
	size_t nr;
	bool broken; /* the walk failed: ask libdw */
};

struct sym_dwarf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct dw_cu **cus;
	uint32_t nr_cus;
	size_t alloc_cus;
	struct idhash cu_index;
	struct dw_cu *last;
	struct dw_unit_set *units; /* other units inlines came from */
	size_t nr_units, alloc_units;
	bool origin_own_unit; /* see origin_in_own_unit() */
	/* Where .debug_aranges does not tell: the CUs' own ranges (see cu_by_ranges()). */
	Dwarf *dw;
	bool cu_ranges_built;
	Dwarf_Die *cu_dies;	   /* compile unit DIEs, in .debug_info order */
	struct sym_addrmap cu_map; /* address -> index in cu_dies */
};

static const Dwfl_Callbacks dwarf_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/*
 * Where dwarf_getscopes looks for the abstract origin of the innermost
 * inlined instance (finding none, it returns no scopes at all): up to
 * libdw 0.188, in the walk of the CU holding the address; since 0.189,
 * in the walk of the origin's own unit.
 */
static bool origin_in_own_unit(void)
{
	const char *v = dwfl_version(NULL);
	unsigned major = 0, minor = 0;

	return v && sscanf(v, "%u.%u", &major, &minor) == 2 && (major > 0 || minor >= 189);
}

struct sym_dwarf *sym_dwarf_open(const char *path)
{
	struct sym_dwarf *w = xcalloc(1, sizeof(*w));
	GElf_Addr bias = 0;

	w->dwfl = dwfl_begin(&dwarf_callbacks);
	if (w->dwfl) {
		w->mod = dwfl_report_elf(w->dwfl, path, path, -1, 0, true);
		dwfl_report_end(w->dwfl, NULL, NULL);
	}
	if (!w->mod || !(w->dw = dwfl_module_getdwarf(w->mod, &bias)) || bias) {
		sym_dwarf_free(w);
		return NULL;
	}
	w->origin_own_unit = origin_in_own_unit();
	return w;
}

static void cu_free(struct dw_cu *cu)
{
	free(cu->funcs);
	sym_addrmap_release(&cu->map);
	free(cu);
}

void sym_dwarf_free(struct sym_dwarf *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->nr_cus; i++)
		cu_free(w->cus[i]);
	for (size_t i = 0; i < w->nr_units; i++)
		free(w->units[i].addrs);
	free(w->cus);
	free(w->units);
	free(w->cu_dies);
	sym_addrmap_release(&w->cu_map);
	idhash_release(&w->cu_index);
	if (w->dwfl)
		dwfl_end(w->dwfl);
	free(w);
}

void sym_dwarf_stats(const struct sym_dwarf *w, struct sym_dwarf_stats *st)
{
	for (uint32_t i = 0; w && i < w->nr_cus; i++) {
		const struct dw_cu *cu = w->cus[i];

		if (cu->slow) {
			st->slow_cus++;
			continue;
		}
		st->cus++;
		st->funcs += cu->nr_funcs;
		st->intervals += cu->map.nr;
		st->bytes += sizeof(*cu) + cu->nr_funcs * sizeof(*cu->funcs) +
			     sym_addrmap_bytes(&cu->map);
	}
}

/* ---------------------------------------------------------------- names, call sites */

static const char *die_name(struct symbolizer *s, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (n)
		return sym_demangle(s, n);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		return dwarf_formstring(&attr);
	return NULL;
}

/* Where the inlined instance die was called from: its caller's file:line. */
static void die_call_site(Dwarf_Die *cu, Dwarf_Die *die, struct sym_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word file = 0, line = 0;
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles)
		f->file = dwarf_filesrc(files, file, NULL, NULL);
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0 &&
	    line <= UINT_MAX)
		f->line = (unsigned)line;
}

/* ---------------------------------------------------------------- the reference */

/*
 * dwarf_getscopes at pc gives the innermost function; each
 * DW_TAG_inlined_subroutine is followed to its caller with
 * dwarf_getscopes_die until a real DW_TAG_subprogram.
 */
static size_t reference_frames(struct symbolizer *s, Dwarf_Die *cu, Dwarf_Addr pc, uint64_t vaddr,
			       struct sym_frame *out, size_t max)
{
	Dwarf_Die *scopes = NULL;
	int nscopes = dwarf_getscopes(cu, pc, &scopes);
	size_t n = 0;

	for (int i = 0; i < nscopes && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die inl;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		out[n].function = die_name(s, &scopes[i]);
		if (tag == DW_TAG_subprogram) {
			n++;
			break;
		}
		out[n++].flags |= SYM_FRAME_INLINED;
		if (n < max) {
			out[n] = (struct sym_frame){.offset = vaddr};
			die_call_site(cu, &scopes[i], &out[n]);
		}
		/*
		 * After an inlined instance, dwarf_getscopes goes on with its
		 * abstract origin's scopes; the caller is among the scopes that
		 * hold the instance itself.
		 */
		inl = scopes[i];
		free(scopes);
		scopes = NULL;
		nscopes = dwarf_getscopes_die(&inl, &scopes);
		i = 0;
	}
	free(scopes);
	return n;
}

/* ---------------------------------------------------------------- the unit walk */

/* One level of the walk: the siblings it is at, and what they hang from. */
struct walk_level {
	Dwarf_Die die;	    /* the current sibling */
	int32_t parent;	    /* the node they are children of, -1 for the unit */
	bool reach;	    /* dwarf_getscopes may visit them: every ancestor holds the address */
	const void *import; /* the DW_TAG_imported_unit walked in place here, or NULL */
};

/* A visit of an inlined instance: a DIE can be visited twice when imports or siblings are odd. */
struct walk_inline {
	const void *addr;
	size_t seq;   /* visit order */
	int32_t node; /* the node this visit made, or -1 */
};

/* A DIE with addresses that dwarf_getscopes can reach, in walk (pre)order. */
struct walk_node {
	Dwarf_Die die;
	int32_t parent; /* node, or -1 */
	int32_t end;	/* its subtree is [self, end) */
	uint32_t range, nr_ranges;
	int32_t func; /* its own dw_func, or its innermost enclosing one, or -1 */
	bool inline_ok;
	int tag;
};

struct walk {
	struct walk_level *stack;
	size_t depth, alloc_stack;
	bool want_nodes; /* else only the subprograms visited */
	struct walk_node *nodes;
	size_t nr_nodes, alloc_nodes;
	uint64_t (*ranges)[2];
	size_t nr_ranges, alloc_ranges;
	const void **subprograms;
	size_t nr_subprograms, alloc_subprograms;
	struct walk_inline *inlines; /* every inlined instance visited (when nodes are wanted) */
	size_t nr_inlines, alloc_inlines;
	size_t steps;
};

static void walk_release(struct walk *b)
{
	free(b->stack);
	free(b->nodes);
	free(b->ranges);
	free(b->subprograms);
	free(b->inlines);
}

/* __libdw_visit_scopes descends into these only. */
static bool may_have_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type: return true;
	default: return false;
	}
}

/* Start walking the children of die; 0 also when it has none, -1 on a libdw error. */
static int walk_push(struct walk *b, Dwarf_Die *die, int32_t parent, bool reach, const void *import)
{
	Dwarf_Die child;
	int r = dwarf_child(die, &child);

	if (r)
		return r < 0 ? -1 : 0;
	ALLOC_GROW(b->stack, b->depth + 1, b->alloc_stack);
	b->stack[b->depth++] = (struct walk_level){child, parent, reach, import};
	return 0;
}

/* Move on to the next sibling, leaving the levels that are done. */
static int walk_next(struct walk *b)
{
	while (b->depth) {
		int r = dwarf_siblingof(&b->stack[b->depth - 1].die, &b->stack[b->depth - 1].die);

		if (r <= 0)
			return r;
		b->depth--;
	}
	return 0;
}

/*
 * A DW_TAG_imported_unit: its unit's children are walked in place, as if
 * they were siblings of the import.  Importing an import already being
 * walked is an error, as for libdw.
 */
static int walk_import(struct walk *b, struct walk_level l)
{
	Dwarf_Attribute attr;
	Dwarf_Die unit, child;

	/* An import libdw cannot follow (or of a whole unit, as some gcc -flto do) is skipped. */
	if (!dwarf_formref_die(dwarf_attr(&l.die, DW_AT_import, &attr), &unit) ||
	    dwarf_tag(&unit) == DW_TAG_compile_unit || dwarf_child(&unit, &child) != 0)
		return 0;
	for (size_t i = 0; i < b->depth; i++) {
		if (b->stack[i].import == l.die.addr)
			return -1;
	}
	ALLOC_GROW(b->stack, b->depth + 1, b->alloc_stack);
	b->stack[b->depth++] = (struct walk_level){child, l.parent, l.reach, l.die.addr};
	return 0;
}

/* die's ranges as a node; -1 when it has none (dwarf_getscopes never stops there), -2 on error. */
static int32_t walk_add_node(struct walk *b, Dwarf_Die *die, int tag, int32_t parent)
{
	size_t first = b->nr_ranges;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (b->nr_ranges >= WALK_MAX_RANGES)
			return -2;
		ALLOC_GROW(b->ranges, b->nr_ranges + 1, b->alloc_ranges);
		b->ranges[b->nr_ranges][0] = lo;
		b->ranges[b->nr_ranges++][1] = hi;
	}
	if (off < 0)
		return -2;
	if (b->nr_ranges == first)
		return -1;
	ALLOC_GROW(b->nodes, b->nr_nodes + 1, b->alloc_nodes);
	b->nodes[b->nr_nodes] = (struct walk_node){
		.die = *die,
		.parent = parent,
		.range = (uint32_t)first,
		.nr_ranges = (uint32_t)(b->nr_ranges - first),
		.tag = tag,
	};
	return (int32_t)b->nr_nodes++;
}

/* Visit the current DIE of level l (a copy: the stack may move); descend when libdw would. */
static int walk_visit(struct walk *b, struct walk_level l)
{
	int tag = dwarf_tag(&l.die);
	int32_t node = -1;

	if (tag == DW_TAG_subprogram) {
		ALLOC_GROW(b->subprograms, b->nr_subprograms + 1, b->alloc_subprograms);
		b->subprograms[b->nr_subprograms++] = l.die.addr;
	}
	if (b->want_nodes && l.reach && (node = walk_add_node(b, &l.die, tag, l.parent)) == -2)
		return -1;
	if (b->want_nodes && tag == DW_TAG_inlined_subroutine) {
		ALLOC_GROW(b->inlines, b->nr_inlines + 1, b->alloc_inlines);
		b->inlines[b->nr_inlines] = (struct walk_inline){l.die.addr, b->nr_inlines, node};
		b->nr_inlines++;
	}
	if (!may_have_scopes(tag) || !dwarf_haschildren(&l.die))
		return 0;
	return walk_push(b, &l.die, node, node >= 0, NULL);
}

static int cmp_ptr(const void *a, const void *b)
{
	const void *const *x = a, *const *y = b;

	return (uintptr_t)*x < (uintptr_t)*y ? -1 : (uintptr_t)*x > (uintptr_t)*y;
}

/*
 * Every DIE __libdw_visit_scopes visits from unit, in its order: nodes
 * (when wanted) and the subprograms seen (sorted at the end).  -1 on a
 * libdw error or an import cycle (where libdw fails too), -2 after too
 * much work (imports nested to multiply it: libdw would take as long).
 */
static int walk_unit(struct walk *b, Dwarf_Die *unit)
{
	int r = walk_push(b, unit, -1, true, NULL);

	while (!r && b->depth) {
		struct walk_level l = b->stack[b->depth - 1];
		size_t depth = b->depth;

		if (++b->steps > WALK_MAX_STEPS)
			return -2;
		r = dwarf_tag(&l.die) == DW_TAG_imported_unit ? walk_import(b, l)
							      : walk_visit(b, l);
		if (!r && b->depth == depth)
			r = walk_next(b);
	}
	if (r)
		return r;
	if (b->nr_subprograms)
		qsort(b->subprograms, b->nr_subprograms, sizeof(*b->subprograms), cmp_ptr);
	return 0;
}

static bool addrs_have(const void *const *addrs, size_t nr, const void *addr)
{
	return nr && bsearch(&addr, addrs, nr, sizeof(*addrs), cmp_ptr);
}

static int cmp_inline(const void *a, const void *b)
{
	const struct walk_inline *x = a, *y = b;
	int c = cmp_ptr(&x->addr, &y->addr);

	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Whether the index can follow each inlined node to its caller as the
 * reference does, with dwarf_getscopes_die: that walks the DIE's own
 * unit and stops at its first visit there, so the node must be the
 * first visit of its DIE and lie in the CU itself (not in a unit it
 * imports).
 */
static bool walk_inlines_ok(struct walk *b, Dwarf_Die *cudie)
{
	if (b->nr_inlines)
		qsort(b->inlines, b->nr_inlines, sizeof(*b->inlines), cmp_inline);
	for (size_t i = 0; i < b->nr_inlines; i++) {
		int32_t node = b->inlines[i].node;

		if (node >= 0 && ((i && b->inlines[i].addr == b->inlines[i - 1].addr) ||
				  b->nodes[node].die.cu != cudie->cu))
			return false;
	}
	return true;
}

/* The subprograms a walk of unit visits (kept per file: inlines of an LTO unit come from others). */
static const struct dw_unit_set *unit_set(struct sym_dwarf *w, Dwarf_Die *unit)
{
	struct walk b = {0};
	struct dw_unit_set *u;

	for (size_t i = 0; i < w->nr_units; i++) {
		if (w->units[i].key == unit->addr)
			return &w->units[i];
	}
	ALLOC_GROW(w->units, w->nr_units + 1, w->alloc_units);
	u = &w->units[w->nr_units++];
	*u = (struct dw_unit_set){.key = unit->addr};
	u->broken = walk_unit(&b, unit) != 0;
	if (!u->broken) {
		u->addrs = b.subprograms;
		u->nr = b.nr_subprograms;
		b.subprograms = NULL;
	}
	walk_release(&b);
	return u;
}

/*
 * Whether dwarf_getscopes succeeds when inl is the innermost inlined
 * instance holding the address: 1 yes, 0 no, -1 when its origin is not
 * a subprogram (not modelled: the CU is left to libdw).
 */
static int origin_ok(struct sym_dwarf *w, const struct walk *b, Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Die origin, unit, *scopes = NULL;
	const struct dw_unit_set *u;
	Dwarf_Attribute attr;
	int n;

	if (!dwarf_formref_die(dwarf_attr(inl, DW_AT_abstract_origin, &attr), &origin))
		return 0;
	if (dwarf_tag(&origin) != DW_TAG_subprogram)
		return -1;
	if (!w->origin_own_unit || origin.cu == cu->cu)
		return addrs_have(b->subprograms, b->nr_subprograms, origin.addr);
	if (!dwarf_diecu(&origin, &unit, NULL, NULL))
		return -1;
	if (!(u = unit_set(w, &unit))->broken)
		return addrs_have(u->addrs, u->nr, origin.addr);
	/* The same walk, which stops at the origin (and fails if it fails first). */
	n = dwarf_getscopes_die(&origin, &scopes);
	free(scopes);
	return n > 0;
}

/* ---------------------------------------------------------------- the index */

/*
 * Each node's function chain head, and whether dwarf_getscopes succeeds
 * in it; false when that cannot be told.
 */
static bool index_funcs(struct sym_dwarf *w, struct walk *b, Dwarf_Die *cudie, struct dw_cu *cu)
{
	size_t alloc = 0;

	for (size_t i = b->nr_nodes; i-- > 0;) {
		struct walk_node *nd = &b->nodes[i];

		if (!nd->end)
			nd->end = (int32_t)i + 1;
		if (nd->parent >= 0 && b->nodes[nd->parent].end < nd->end)
			b->nodes[nd->parent].end = nd->end;
	}
	for (size_t i = 0; i < b->nr_nodes; i++) {
		struct walk_node *nd = &b->nodes[i];
		const struct walk_node *up = nd->parent >= 0 ? &b->nodes[nd->parent] : NULL;

		nd->func = up ? up->func : -1;
		nd->inline_ok = up ? up->inline_ok : true;
		if (nd->tag == DW_TAG_inlined_subroutine) {
			int ok = origin_ok(w, b, cudie, &nd->die);

			if (ok < 0)
				return false;
			nd->inline_ok = ok;
		}
		if (nd->tag != DW_TAG_subprogram && nd->tag != DW_TAG_inlined_subroutine)
			continue;
		ALLOC_GROW(cu->funcs, cu->nr_funcs + 1, alloc);
		cu->funcs[cu->nr_funcs] = (struct dw_func){
			.die = nd->die,
			.parent = nd->func,
			.tag = nd->tag,
		};
		nd->func = (int32_t)cu->nr_funcs++;
	}
	if (cu->nr_funcs)
		cu->funcs = xrealloc(cu->funcs, st_mult(cu->nr_funcs, sizeof(*cu->funcs)));
	return true;
}

/*
 * dwarf_getscopes stops at the first sibling holding pc, then looks
 * among its children: so a node owns its ranges within its parent's,
 * and earlier siblings win over later ones.  Painting each node inside
 * what its parent's subtree owns, parents before children and the last
 * sibling's subtree first, leaves each address to that innermost node.
 */
static bool index_paint(struct walk *b, struct sym_addrmap *map)
{
	int32_t *todo = xmalloc(st_mult(b->nr_nodes + 1, sizeof(*todo)));
	size_t nr = 0, steps = 0;

	sym_addrmap_init(map, (const uint64_t(*)[2])b->ranges, b->nr_ranges);
	for (int32_t i = 0; (size_t)i < b->nr_nodes; i = b->nodes[i].end)
		todo[nr++] = i;
	/* Nested ranges cost their depth each; ranges that all overlap (damage) would cost n^2. */
	while (nr && steps <= PAINT_MAX_STEPS) {
		int32_t i = todo[--nr];
		const struct walk_node *nd = &b->nodes[i];
		int32_t lo = nd->parent,
			hi = nd->parent >= 0 ? b->nodes[nd->parent].end : INT32_MAX;

		for (uint32_t r = nd->range; r < nd->range + nd->nr_ranges; r++)
			steps +=
				sym_addrmap_paint(map, b->ranges[r][0], b->ranges[r][1], i, lo, hi);
		for (int32_t c = i + 1; c < nd->end; c = b->nodes[c].end)
			todo[nr++] = c;
	}
	free(todo);
	if (nr)
		return false;
	for (size_t i = 0; i < map->nr; i++) {
		const struct walk_node *nd = map->owner[i] >= 0 ? &b->nodes[map->owner[i]] : NULL;

		map->owner[i] = nd && nd->inline_ok ? nd->func : -1;
	}
	sym_addrmap_finish(map);
	return true;
}

/*
 * Index the CU.  Where the walk fails as dwarf_getscopes would (for some
 * addresses at least) or meets what it does not model, or painting
 * takes too long, the CU is left to dwarf_getscopes; where the walk
 * takes too long, the CU gets no DWARF frames.
 */
static void cu_build(struct sym_dwarf *w, Dwarf_Die *cudie, struct dw_cu *cu)
{
	struct walk b = {.want_nodes = true};
	int r = walk_unit(&b, cudie);

	if (!r && (!walk_inlines_ok(&b, cudie) || !index_funcs(w, &b, cudie, cu) ||
		   !index_paint(&b, &cu->map)))
		r = -1;
	if (r) {
		free(cu->funcs);
		cu->funcs = NULL;
		cu->nr_funcs = 0;
		sym_addrmap_release(&cu->map);
	}
	cu->slow = r == -1;
	walk_release(&b);
}

static struct dw_cu *cu_get(struct sym_dwarf *w, Dwarf_Die *cudie)
{
	uint32_t hash = (uint32_t)hash_u64((uintptr_t)cudie->addr), pos = hash, id;
	struct dw_cu *cu;

	if (w->last && w->last->key == cudie->addr)
		return w->last;
	while ((id = idhash_probe(&w->cu_index, hash, &pos)) != IDHASH_NONE) {
		if (w->cus[id]->key == cudie->addr)
			return w->last = w->cus[id];
	}
	cu = xcalloc(1, sizeof(*cu));
	cu->key = cudie->addr;
	cu_build(w, cudie, cu);
	ALLOC_GROW(w->cus, (size_t)w->nr_cus + 1, w->alloc_cus);
	idhash_insert(&w->cu_index, hash, w->nr_cus);
	w->cus[w->nr_cus++] = cu;
	return w->last = cu;
}

static const char *func_name(struct symbolizer *s, struct dw_func *f)
{
	if (!f->named) {
		f->name = die_name(s, &f->die);
		f->named = true;
	}
	return f->name;
}

static void func_call_site(Dwarf_Die *cudie, struct dw_func *f, struct sym_frame *out)
{
	if (!f->called) {
		struct sym_frame tmp = {0};

		die_call_site(cudie, &f->die, &tmp);
		f->call_file = tmp.file;
		f->call_line = tmp.line;
		f->called = true;
	}
	out->file = f->call_file;
	out->line = f->call_line;
}

/* What reference_frames gives, from the index. */
static size_t index_frames(struct symbolizer *s, struct dw_cu *cu, Dwarf_Die *cudie, Dwarf_Addr pc,
			   uint64_t vaddr, struct sym_frame *out, size_t max)
{
	int32_t f = sym_addrmap_find(&cu->map, pc);
	size_t n = 0;

	while (f >= 0 && n < max) {
		struct dw_func *fn = &cu->funcs[f];

		out[n].function = func_name(s, fn);
		if (fn->tag == DW_TAG_subprogram)
			return n + 1;
		out[n++].flags |= SYM_FRAME_INLINED;
		if (n < max) {
			out[n] = (struct sym_frame){.offset = vaddr};
			func_call_site(cudie, fn, &out[n]);
		}
		f = fn->parent;
	}
	return n;
}

/* ---------------------------------------------------------------- CUs without aranges */

/* Bound the CU range table of a damaged or huge file. */
#define CU_MAX_RANGES (1u << 24)

/* The ranges of every compile unit, each CU an id in w->cu_dies; false on a libdw error. */
static bool cu_ranges_collect(struct sym_dwarf *w, uint64_t (**ranges)[2], size_t *nr,
			      size_t *alloc, int32_t **ids)
{
	size_t alloc_dies = 0, alloc_ids = 0, nr_dies = 0;
	Dwarf_CU *unit = NULL;
	Dwarf_Die cudie;
	int r;

	while ((r = dwarf_get_units(w->dw, unit, &unit, NULL, NULL, &cudie, NULL)) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&cudie) != DW_TAG_compile_unit || nr_dies >= INT32_MAX)
			continue;
		ALLOC_GROW(w->cu_dies, nr_dies + 1, alloc_dies);
		w->cu_dies[nr_dies] = cudie;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (*nr >= CU_MAX_RANGES)
				return false;
			ALLOC_GROW(*ranges, *nr + 1, *alloc);
			ALLOC_GROW(*ids, *nr + 1, alloc_ids);
			(*ranges)[*nr][0] = lo;
			(*ranges)[*nr][1] = hi;
			(*ids)[(*nr)++] = (int32_t)nr_dies;
		}
		nr_dies++;
	}
	return r > 0;
}

/*
 * The table: the CUs' ranges painted in .debug_info order, each address
 * to the first CU claiming it.  Built on the first address .debug_aranges
 * does not place; empty when libdw fails reading the units.
 */
static void cu_ranges_build(struct sym_dwarf *w)
{
	uint64_t(*ranges)[2] = NULL;
	int32_t *ids = NULL;
	size_t nr = 0, alloc = 0, steps = 0;

	w->cu_ranges_built = true;
	if (cu_ranges_collect(w, &ranges, &nr, &alloc, &ids)) {
		sym_addrmap_init(&w->cu_map, (const uint64_t(*)[2])ranges, nr);
		for (size_t i = 0; i < nr && steps <= PAINT_MAX_STEPS; i++)
			steps += sym_addrmap_paint(&w->cu_map, ranges[i][0], ranges[i][1], ids[i],
						   -1, 0);
		if (steps > PAINT_MAX_STEPS)
			sym_addrmap_release(&w->cu_map);
		sym_addrmap_finish(&w->cu_map);
	}
	free(ranges);
	free(ids);
}

/* The compile unit whose own ranges hold pc, or NULL. */
static Dwarf_Die *cu_by_ranges(struct sym_dwarf *w, Dwarf_Addr pc)
{
	int32_t id;

	if (!w->cu_ranges_built)
		cu_ranges_build(w);
	id = sym_addrmap_find(&w->cu_map, pc);
	return id >= 0 ? &w->cu_dies[id] : NULL;
}

size_t sym_dwarf_frames(struct symbolizer *s, struct sym_dwarf *w, uint64_t vaddr,
			struct sym_frame *out, size_t max)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(w->mod, vaddr, &bias);
	Dwarf_Line *line;
	struct dw_cu *cu;
	int lineno;

	/* No .debug_aranges (clang's, rustc's default), or not this address there: the CUs' ranges. */
	if (!cudie && (cudie = cu_by_ranges(w, vaddr)))
		bias = 0;
	line = cudie ? dwarf_getsrc_die(cudie, vaddr - bias) : NULL;
	if (line && (out[0].file = dwarf_linesrc(line, NULL, NULL)) && !dwarf_lineno(line, &lineno))
		out[0].line = lineno > 0 ? (unsigned)lineno : 0;
	if (!cudie)
		return 0;
	if (symbolizer_dwarf_mode(s) == SYM_DWARF_REFERENCE)
		return reference_frames(s, cudie, vaddr - bias, vaddr, out, max);
	cu = cu_get(w, cudie);
	if (cu->slow)
		return reference_frames(s, cudie, vaddr - bias, vaddr, out, max);
	return index_frames(s, cu, cudie, vaddr - bias, vaddr, out, max);
}
