/* SPDX-License-Identifier: MIT */
/*
 * The COLD half of the agent's unwinder (unwind_rows.h, doc/agent-unwind.md):
 * one module's .eh_frame, reached through its .eh_frame_hdr, turned into
 * rows.  CIEs and FDEs are decoded and their CFA programs run for rsp, rbp,
 * rbx and the return address; the rows are sorted and merged.  This runs in
 * refresh (inside the dl_iterate_phdr callback, so nothing is unmapped
 * meanwhile) and in agent_unwind_parse_module(), never in a walker.  The
 * CFI may be malformed: every read is checked to stay inside the module's
 * readable PT_LOAD bytes.  Memory is mmap only (no malloc, no qsort).
 */
#include <string.h>

#include "agent/stack/unwind_rows.h"
#include "symbol/ehframe_hdr.h"
#include "util/cursor.h"
#include "util/banned.h"

/* ---- x86_64 DWARF: the rest relies only on these and unwind_rows.h's ---- */

enum { DW_RBX = 3, DW_RBP = 6, DW_RSP = 7, DW_RA = 16 }; /* DWARF register numbers */

/* DW_OP codes of the CFA expressions we recognize. */
enum {
	OP_DEREF = 0x06,
	OP_AND = 0x1a,
	OP_PLUS = 0x22,
	OP_SHL = 0x24,
	OP_GE = 0x2a,
	OP_LIT0 = 0x30,
	OP_BREG0 = 0x70,
};

/* ---- reading .eh_frame (cold; bounds are the module's mapped segments) ---- */

/* A cursor over the bytes at runtime addresses [P, END). */
static struct cursor cur_at(uintptr_t p, uintptr_t end)
{
	return cursor_span((const void *)p, (const void *)end);
}

/*
 * A pointer in encoding ENC; DATAREL is the base of datarel values (0: none).
 * An indirect pointer is returned as the address of the pointer.
 */
static bool rd_ptr(struct cursor *c, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
	uintptr_t at = (uintptr_t)c->p, v = 0;
	uint16_t u2 = 0;
	uint32_t u4 = 0;

	switch (enc & 0x0f) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8: cursor_copy(c, &v, 8); break;
	case EH_PE_ULEB: v = (uintptr_t)cursor_uleb128(c); break;
	case EH_PE_SLEB: v = (uintptr_t)cursor_sleb128(c); break;
	case EH_PE_UDATA2: cursor_copy(c, &u2, 2), v = u2; break;
	case EH_PE_SDATA2: cursor_copy(c, &u2, 2), v = (uintptr_t)(int16_t)u2; break;
	case EH_PE_UDATA4: cursor_copy(c, &u4, 4), v = u4; break;
	case EH_PE_SDATA4: cursor_copy(c, &u4, 4), v = (uintptr_t)(int32_t)u4; break;
	default: return false;
	}
	if ((enc & 0x70) == EH_PE_PCREL)
		v += at;
	else if ((enc & 0x70) == EH_PE_DATAREL && datarel)
		v += datarel;
	else if ((enc & 0x70) != 0)
		return false;
	*out = v;
	return cursor_ok(c);
}

/* ---- CFA programs ---- */

enum { REG_SAME, REG_UNDEF, REG_AT, REG_AT_RBP, REG_OTHER };

#define CFA_REG_EXPR 0xff /* the CFA comes from a recognized expression */
#define CFA_REG_NONE 0xfe /* no rule, or one we cannot evaluate */
#define REMEMBER_MAX 16

struct cfa_state {
	uint8_t cfa_reg;   /* DWARF register, or CFA_REG_* */
	uint8_t expr_kind; /* CFA_* of the expression when cfa_reg is CFA_REG_EXPR */
	uint8_t plt_k;
	uint8_t bp_how, bx_how, ra_how; /* REG_* */
	int64_t cfa_off, bp_off, bx_off, ra_off;
};

struct cie {
	uintptr_t at; /* address of the entry, for the one-entry cache */
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool aug_z, signal;
	struct cfa_state init; /* after the initial instructions */
};

/* State of one module's build. */
struct build {
	uintptr_t seg_lo, seg_hi; /* mapped bytes holding .eh_frame */
	uintptr_t lo, hi;	  /* executable range; rows are relative to lo */
	struct uw_row *rows;
	size_t nrows, cap;
	bool nomem;
	struct cie cie; /* the last CIE parsed */
	size_t bad_fdes;
};

#define MODULE_ROWS_MAX ((size_t)1 << 22) /* 32 MiB of rows per module */

static void row_add(struct build *b, uintptr_t pc, uw_rule rule)
{
	void *p = b->rows;

	if (b->nrows == b->cap &&
	    !map_grow(&p, &b->cap, b->nrows + 1, sizeof(*b->rows), MODULE_ROWS_MAX)) {
		b->nomem = true;
		return;
	}
	b->rows = p;
	b->rows[b->nrows].pc = (uint32_t)(pc - b->lo);
	b->rows[b->nrows].rule = rule;
	b->nrows++;
}

/* The BP_* rule of a callee-saved register saved as HOW at OFF (CFA-relative). */
static unsigned saved_rule(uint8_t how, int64_t off, int64_t *aux)
{
	*aux = 0;
	if (how == REG_SAME)
		return BP_SAME;
	if ((how == REG_AT || how == REG_AT_RBP) && off % WORD == 0) {
		*aux = off / WORD;
		return how == REG_AT ? BP_AT : BP_AT_RBP;
	}
	return BP_LOST;
}

/* The row a state describes. */
static uw_rule state_rule(const struct cfa_state *s, bool signal)
{
	unsigned kind, bp, bx;
	int64_t aux, bx_aux;

	if (s->ra_how == REG_UNDEF)
		return CFA_OUTERMOST;
	if (signal && s->cfa_reg == CFA_REG_EXPR)
		return CFA_SIGFRAME;
	if (s->ra_how != REG_AT || s->ra_off != RA_CFA_OFFSET)
		return CFA_NONE;
	if (s->cfa_reg == DW_RSP)
		kind = CFA_RSP;
	else if (s->cfa_reg == DW_RBP)
		kind = CFA_RBP;
	else if (s->cfa_reg == DW_RBX)
		kind = CFA_RBX;
	else if (s->cfa_reg == CFA_REG_EXPR)
		kind = s->expr_kind;
	else
		return CFA_NONE;
	bp = saved_rule(s->bp_how, s->bp_off, &aux);
	bx = saved_rule(s->bx_how, s->bx_off, &bx_aux);
	if (bx == BP_AT_RBP)
		bx = BP_LOST, bx_aux = 0;
	if (kind == CFA_PLT) {
		if (bp != BP_SAME)
			return CFA_NONE;
		aux = s->plt_k;
	}
	return kind == CFA_NONE ? CFA_NONE : rule_make(kind, bp, aux, bx, bx_aux, s->cfa_off);
}

/*
 * The CFA expressions we evaluate (doc/agent-unwind.md): "bregR N; deref"
 * (R = rsp or rbp: stack realignment), and the lazy PLT's
 * "breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus".
 */
static void cfa_expr(struct cfa_state *s, uintptr_t p, size_t len)
{
	static const uint8_t plt_mid[] = {OP_BREG0 + DW_RA, 0, OP_LIT0 + 15, OP_AND};
	static const uint8_t plt_end[] = {OP_GE, OP_LIT0 + 3, OP_SHL, OP_PLUS};
	struct cursor c = cur_at(p, p + len);
	uint8_t op = cursor_u8(&c), t[9];

	s->cfa_reg = CFA_REG_EXPR;
	s->expr_kind = CFA_NONE;
	s->cfa_off = cursor_sleb128(&c);
	if (!cursor_ok(&c) || (op != OP_BREG0 + DW_RSP && op != OP_BREG0 + DW_RBP))
		return;
	if (cursor_left(&c) == 1 && cursor_u8(&c) == OP_DEREF) {
		s->expr_kind = op == OP_BREG0 + DW_RSP ? CFA_DEREF_RSP : CFA_DEREF_RBP;
		return;
	}
	if (op != OP_BREG0 + DW_RSP || cursor_left(&c) != sizeof(t) ||
	    !cursor_copy(&c, t, sizeof(t)))
		return;
	if (memcmp(t, plt_mid, 4) || t[4] < OP_LIT0 || t[4] > OP_LIT0 + 15 ||
	    memcmp(t + 5, plt_end, 4))
		return;
	s->plt_k = (uint8_t)(t[4] - OP_LIT0);
	s->expr_kind = CFA_PLT;
}

struct fde_run {
	const struct cie *cie;
	struct build *b;
	struct cfa_state st;
	struct cfa_state stack[REMEMBER_MAX];
	unsigned depth;
	uintptr_t loc, end; /* runtime addresses */
	bool emit;	    /* false while running a CIE's initial instructions */
};

static bool advance(struct fde_run *f, uintptr_t to)
{
	if (!f->emit || to < f->loc)
		return false;
	if (to > f->end)
		to = f->end;
	if (to > f->loc)
		row_add(f->b, f->loc, state_rule(&f->st, f->cie->signal));
	f->loc = to;
	return true;
}

static void set_reg(struct fde_run *f, uint64_t reg, uint8_t how, int64_t off)
{
	if (reg == DW_RBP) {
		f->st.bp_how = how;
		f->st.bp_off = off;
	} else if (reg == DW_RBX) {
		f->st.bx_how = how;
		f->st.bx_off = off;
	} else if (reg == DW_RA) {
		f->st.ra_how = how;
		f->st.ra_off = off;
	}
}

static void restore_reg(struct fde_run *f, uint64_t reg)
{
	if (reg == DW_RBP)
		set_reg(f, reg, f->cie->init.bp_how, f->cie->init.bp_off);
	else if (reg == DW_RBX)
		set_reg(f, reg, f->cie->init.bx_how, f->cie->init.bx_off);
	else if (reg == DW_RA)
		set_reg(f, reg, f->cie->init.ra_how, f->cie->init.ra_off);
}

static void def_cfa(struct fde_run *f, uint64_t reg, int64_t off)
{
	f->st.cfa_reg = reg < CFA_REG_NONE ? (uint8_t)reg : CFA_REG_NONE;
	f->st.cfa_off = off;
}

/* A register's expression rule: only "saved at rbp + N" (DW_OP_breg6 N) is kept. */
static void reg_expr(struct fde_run *f, uint64_t reg, bool at, uintptr_t p, size_t len)
{
	struct cursor c = cur_at(p, p + len);
	int64_t off;

	if (at && cursor_u8(&c) == OP_BREG0 + DW_RBP) {
		off = cursor_sleb128(&c);
		if (cursor_ok(&c) && !cursor_left(&c)) {
			set_reg(f, reg, REG_AT_RBP, off);
			return;
		}
	}
	set_reg(f, reg, REG_OTHER, 0);
}

static bool state_op(struct fde_run *f, uint8_t op)
{
	if (op == 0x0a) { /* DW_CFA_remember_state */
		if (f->depth == REMEMBER_MAX)
			return false;
		f->stack[f->depth++] = f->st;
		return true;
	}
	if (f->depth == 0) /* DW_CFA_restore_state */
		return false;
	f->st = f->stack[--f->depth];
	return true;
}

/*
 * An operand times the CIE's data alignment factor, wrapping: both come
 * from the module, and a product past int64_t (undefined behaviour in
 * signed arithmetic) is no usable rule anyway (rule_make refuses it).
 */
static int64_t scaled(uint64_t v, int64_t daf)
{
	return (int64_t)(v * (uint64_t)daf);
}

/* The DW_CFA_* opcodes with operands in the low 6 bits, and DW_CFA_advance_loc1..4. */
static bool packed_op(struct fde_run *f, struct cursor *c, uint8_t op)
{
	uint16_t u2;
	uint32_t u4;

	switch (op >> 6) {
	case 1: return advance(f, f->loc + (op & 0x3f) * f->cie->code_align);
	case 2:
		set_reg(f, op & 0x3f, REG_AT, scaled(cursor_uleb128(c), f->cie->data_align));
		return true;
	case 3: restore_reg(f, op & 0x3f); return true;
	}
	switch (op) {
	case 0x02: return advance(f, f->loc + cursor_u8(c) * f->cie->code_align);
	case 0x03: return cursor_copy(c, &u2, 2) && advance(f, f->loc + u2 * f->cie->code_align);
	case 0x04: return cursor_copy(c, &u4, 4) && advance(f, f->loc + u4 * f->cie->code_align);
	}
	return false;
}

/* One instruction of a CFA program (DWARF 5, 6.4.2; GNU extensions). */
static bool cfa_op(struct fde_run *f, struct cursor *c)
{
	uint8_t op = cursor_u8(c);
	int64_t daf = f->cie->data_align;
	uint64_t reg, len;
	uintptr_t to;

	switch (op) {
	case 0x00: return true; /* nop */
	case 0x01: /* set_loc */ return rd_ptr(c, f->cie->fde_enc, 0, &to) && advance(f, to);
	case 0x05:
		reg = cursor_uleb128(c);
		set_reg(f, reg, REG_AT, scaled(cursor_uleb128(c), daf));
		break;
	case 0x06: restore_reg(f, cursor_uleb128(c)); break;
	case 0x07: set_reg(f, cursor_uleb128(c), REG_UNDEF, 0); break;
	case 0x08: set_reg(f, cursor_uleb128(c), REG_SAME, 0); break;
	case 0x09: reg = cursor_uleb128(c), cursor_uleb128(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x0a:
	case 0x0b: return state_op(f, op);
	case 0x0c: reg = cursor_uleb128(c), def_cfa(f, reg, (int64_t)cursor_uleb128(c)); break;
	case 0x0d: def_cfa(f, cursor_uleb128(c), f->st.cfa_off); break;
	case 0x0e: f->st.cfa_off = (int64_t)cursor_uleb128(c); goto offset_only;
	case 0x13: f->st.cfa_off = scaled(cursor_sleb128(c), daf); goto offset_only;
	case 0x0f: /* def_cfa_expression */
		len = cursor_uleb128(c);
		if (!cursor_ok(c) || len > cursor_left(c))
			return false;
		cfa_expr(&f->st, (uintptr_t)c->p, len);
		cursor_skip(c, len);
		break;
	case 0x10:
	case 0x16: /* expression, val_expression */
		reg = cursor_uleb128(c), len = cursor_uleb128(c);
		if (!cursor_ok(c) || len > cursor_left(c))
			return false;
		reg_expr(f, reg, op == 0x10, (uintptr_t)c->p, len);
		cursor_skip(c, len);
		break;
	case 0x11:
		reg = cursor_uleb128(c), set_reg(f, reg, REG_AT, scaled(cursor_sleb128(c), daf));
		break;
	case 0x12: reg = cursor_uleb128(c), def_cfa(f, reg, scaled(cursor_sleb128(c), daf)); break;
	case 0x14: reg = cursor_uleb128(c), cursor_uleb128(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x15: reg = cursor_uleb128(c), cursor_sleb128(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x2e: cursor_uleb128(c); break; /* GNU_args_size */
	case 0x2f:
		reg = cursor_uleb128(c),
		set_reg(f, reg, REG_AT, scaled(0 - cursor_uleb128(c), daf));
		break;
	default: return packed_op(f, c, op);
	}
	return cursor_ok(c);
offset_only:
	/* def_cfa_offset only applies to a register rule. */
	if (f->st.cfa_reg == CFA_REG_EXPR)
		f->st.cfa_reg = CFA_REG_NONE;
	return cursor_ok(c);
}

static bool run_program(struct fde_run *f, uintptr_t p, uintptr_t end)
{
	struct cursor c = cur_at(p, end);

	while (cursor_left(&c))
		if (!cfa_op(f, &c))
			return false;
	return true;
}

/* ---- CIEs and FDEs ---- */

/* The .eh_frame entry at P: [*body, *end) after the length; false at a terminator. */
static bool entry_bounds(const struct build *b, uintptr_t p, uintptr_t *body, uintptr_t *end)
{
	struct cursor c = cur_at(p, b->seg_hi);
	uint32_t len32 = 0;
	uint64_t len = 0;

	if (p < b->seg_lo)
		cursor_fail(&c, CURSOR_SHORT);
	if (!cursor_copy(&c, &len32, 4) || len32 == 0)
		return false;
	len = len32;
	if (len32 == 0xffffffff && !cursor_copy(&c, &len, 8))
		return false;
	if (len < 4 || len > cursor_left(&c))
		return false;
	*body = (uintptr_t)c.p;
	*end = (uintptr_t)c.p + len;
	return true;
}

/* The augmentation string's letters we know, and their data (LSB 3.0, 10.6.1.1). */
static bool cie_aug(struct cie *cie, struct cursor *c, const char *aug)
{
	uintptr_t end, ignored;
	uint64_t len;

	if (aug[0] != 'z')
		return aug[0] == '\0';
	cie->aug_z = true;
	len = cursor_uleb128(c);
	if (!cursor_ok(c) || len > cursor_left(c))
		return false;
	end = (uintptr_t)c->p + len;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			cie->fde_enc = cursor_u8(c);
			if (cie->fde_enc & EH_PE_INDIRECT)
				return false;
			break;
		case 'P':
			if (!rd_ptr(c, cursor_u8(c), 0, &ignored))
				return false;
			break;
		case 'L': cursor_u8(c); break;
		case 'S': cie->signal = true; break;
		default: goto done; /* the rest is skipped by its length */
		}
	}
done:
	c->p = (const uint8_t *)end;
	return cursor_ok(c);
}

static bool cie_parse(struct build *b, uintptr_t at, struct cie *cie)
{
	struct fde_run f = {.cie = cie, .b = b};
	uintptr_t body, end;
	uint32_t id = 1;
	uint64_t ra;
	uint8_t version;
	char aug[8];
	size_t i;
	struct cursor c;

	if (!entry_bounds(b, at, &body, &end))
		return false;
	c = cur_at(body, end);
	memset(cie, 0, sizeof(*cie));
	cie->at = at;
	if (!cursor_copy(&c, &id, 4) || id != 0)
		return false;
	version = cursor_u8(&c);
	if (version != 1 && version != 3)
		return false;
	for (i = 0; i < sizeof(aug) && (aug[i] = (char)cursor_u8(&c)) != '\0'; i++)
		;
	if (i == sizeof(aug) || !cursor_ok(&c))
		return false;
	cie->code_align = cursor_uleb128(&c);
	cie->data_align = cursor_sleb128(&c);
	ra = version == 1 ? cursor_u8(&c) : cursor_uleb128(&c);
	if (ra != DW_RA || !cie_aug(cie, &c, aug))
		return false;
	f.st = (struct cfa_state){.cfa_reg = CFA_REG_NONE, .bp_how = REG_SAME, .ra_how = REG_OTHER};
	if (!run_program(&f, (uintptr_t)c.p, end))
		return false;
	cie->init = f.st;
	return true;
}

/* Rows of the FDE at AT (a CIE there is skipped). */
static void fde_parse(struct build *b, uintptr_t at)
{
	struct fde_run f = {.b = b, .emit = true};
	uintptr_t body, end, cie_at, begin = 0, range = 0;
	uint32_t id = 0;
	uint64_t len;
	struct cursor c;

	if (!entry_bounds(b, at, &body, &end))
		goto bad;
	c = cur_at(body, end);
	if (!cursor_copy(&c, &id, 4) || id == 0)
		return;
	if (id > body - b->seg_lo)
		goto bad;
	cie_at = body - id;
	if (b->cie.at != cie_at && !cie_parse(b, cie_at, &b->cie)) {
		b->cie.at = 0;
		goto bad;
	}
	f.cie = &b->cie;
	if (!rd_ptr(&c, b->cie.fde_enc, 0, &begin) || !rd_ptr(&c, b->cie.fde_enc & 0x0f, 0, &range))
		goto bad;
	if (b->cie.aug_z) {
		len = cursor_uleb128(&c);
		if (!cursor_ok(&c) || len > cursor_left(&c))
			goto bad;
		cursor_skip(&c, len);
	}
	/* FDEs of code outside the executable segments (discarded sections) are dropped. */
	if (range == 0 || begin < b->lo || begin >= b->hi || range > b->hi - begin)
		return;
	f.st = b->cie.init;
	f.loc = begin;
	f.end = begin + range;
	if (!run_program(&f, (uintptr_t)c.p, end)) {
		/* Keep the rows before the bad op; the rest of the FDE is unknown. */
		f.st.cfa_reg = CFA_REG_NONE;
		f.st.ra_how = REG_OTHER;
		b->bad_fdes++;
	}
	if (f.loc < f.end)
		row_add(b, f.loc, state_rule(&f.st, b->cie.signal));
	row_add(b, f.end, RULE_GAP);
	return;
bad:
	b->bad_fdes++;
}

/* The readable PT_LOAD bytes [*lo, *hi) of INFO that hold ADDR. */
bool uw_load_bounds(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	size_t i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && addr >= at &&
		    addr - at < ph->p_filesz) {
			*lo = at;
			*hi = at + ph->p_filesz;
			return true;
		}
	}
	return false;
}

/*
 * Every FDE of the module: through .eh_frame_hdr's sorted table when it has
 * one (it needs no end of .eh_frame), else linearly from eh_frame_ptr to the
 * terminator.
 */
static bool parse_hdr(struct build *b, const struct dl_phdr_info *info, uintptr_t hdr,
		      uintptr_t hdr_end)
{
	struct cursor c = cur_at(hdr, hdr_end);
	uint8_t version = cursor_u8(&c), ptr_enc = cursor_u8(&c);
	uint8_t count_enc = cursor_u8(&c), table_enc = cursor_u8(&c);
	uintptr_t eh_frame = 0, count = 0, p, body, end;
	int32_t e[2];
	size_t i;

	if (version != 1 || !rd_ptr(&c, ptr_enc, hdr, &eh_frame))
		return false;
	if (!uw_load_bounds(info, eh_frame, &b->seg_lo, &b->seg_hi))
		return false;
	if (count_enc != EH_PE_OMIT && table_enc == EHFRAME_TABLE_ENC &&
	    rd_ptr(&c, count_enc, hdr, &count) && count <= (cursor_left(&c)) / sizeof(e)) {
		for (i = 0; i < count && !b->nomem && cursor_copy(&c, e, sizeof(e)); i++)
			fde_parse(b, hdr + (uintptr_t)(intptr_t)e[1]);
		return true;
	}
	for (p = eh_frame; !b->nomem && entry_bounds(b, p, &body, &end); p = end)
		fde_parse(b, p);
	return true;
}

/* ---- the rows of a module ---- */

static int row_cmp(const void *a, const void *b)
{
	const struct uw_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return (x->rule == RULE_GAP) - (y->rule == RULE_GAP);
}

/* Sort; at one pc a real row beats an FDE's end; merge rows equal to their predecessor. */
static size_t rows_compact(struct uw_row *v, size_t n)
{
	size_t i, out = 0;
	uint32_t prev_pc = 0;

	heap_sort(v, n, sizeof(*v), row_cmp);
	for (i = 0; i < n; i++) {
		uw_rule rule = v[i].rule == RULE_GAP ? (uw_rule)CFA_NONE : v[i].rule;
		uint32_t pc = v[i].pc;

		if (i > 0 && pc == prev_pc)
			continue;
		prev_pc = pc;
		if (out > 0 ? v[out - 1].rule == rule : rule == CFA_NONE)
			continue;
		v[out].pc = pc;
		v[out++].rule = rule;
	}
	return out;
}

/* The rows of the module MI describes, sorted and merged (unwind_rows.h). */
void uw_cfi_build(const struct modinfo *mi, struct uw_rows *out)
{
	struct build b = {.lo = mi->lo, .hi = mi->hi};
	uintptr_t lo, hi;
	size_t n = 0;

	if (mi->hdr && mi->hi - mi->lo <= UINT32_MAX &&
	    uw_load_bounds(mi->info, mi->hdr, &lo, &hi) && mi->hdr_end <= hi &&
	    parse_hdr(&b, mi->info, mi->hdr, mi->hdr_end) && !b.nomem)
		n = rows_compact(b.rows, b.nrows);
	out->v = b.rows;
	out->n = n;
	out->map_size = b.cap * sizeof(*b.rows);
	out->bad_fdes = b.bad_fdes;
}
