/* SPDX-License-Identifier: MIT */
/*
 * The agent's stack unwinder (unwind.h, doc/agent-unwind.md).  Cold code
 * (refresh) turns every module's .eh_frame into a sorted array of compact
 * rows; hot code (the walkers) binary-searches them with no lock, no
 * allocation and no loader call.  Tables are published through one atomic
 * pointer and unmapped after a two-phase reader count has drained.
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/unwind.h"
#include "agent/spinlock.h"
#include "util/banned.h"

/* ---- x86_64 specifics: the rest of the file relies only on this block ---- */

#if !defined(__x86_64__) || !defined(__linux__)
#error "src/agent/unwind.c supports x86_64 Linux only"
#endif

enum { DW_RBX = 3, DW_RBP = 6, DW_RSP = 7, DW_RA = 16 }; /* DWARF register numbers */

#define RA_CFA_OFFSET (-8) /* a call pushes the return address just below the CFA */
#define WORD	      8

/* The registers a walk tracks. */
struct uw_regs {
	uintptr_t pc, sp, bp, bx;
	bool bp_ok; /* bp holds the frame's real rbp */
	bool bx_ok; /* bx holds the frame's real rbx (a CFA may be rbx-based) */
	bool exact; /* pc was interrupted (a signal), not a return address */
};

static void regs_from_ucontext(const void *ucontext, struct uw_regs *r)
{
	const mcontext_t *mc = &((const ucontext_t *)ucontext)->uc_mcontext;

	r->pc = (uintptr_t)mc->gregs[REG_RIP];
	r->sp = (uintptr_t)mc->gregs[REG_RSP];
	r->bp = (uintptr_t)mc->gregs[REG_RBP];
	r->bx = (uintptr_t)mc->gregs[REG_RBX];
	r->bp_ok = true;
	r->bx_ok = true;
	r->exact = true;
}

/*
 * The registers of agent_unwind_here()'s caller, just after the call returns.
 * __builtin_frame_address(0) makes the compiler give the function a frame
 * pointer, so this needs no CFI: [rbp] is the caller's rbp, [rbp + 8] the
 * return address, and the caller's rsp is rbp + 16.  The caller's rbx is
 * not known (this function may have used it): a frame whose CFA is
 * rbx-based ends such a walk.
 */
#define regs_of_caller(r)                                                             \
	do {                                                                          \
		const uintptr_t *fp_ = __builtin_frame_address(0);                    \
		*(r) = (struct uw_regs){.pc = (uintptr_t)__builtin_return_address(0), \
					.sp = (uintptr_t)fp_ + 2 * WORD,              \
					.bp = fp_[0],                                 \
					.bp_ok = true};                               \
	} while (0)

/* In the sigreturn trampoline (an 'S' CIE), rsp points at the kernel's ucontext_t. */
#define SIGFRAME_GREG(reg) offsetof(ucontext_t, uc_mcontext.gregs[reg])

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

/* ---- rows ---- */

enum cfa_kind {
	CFA_NONE,      /* no usable CFI: frame-pointer heuristic */
	CFA_RSP,       /* CFA = rsp + off */
	CFA_RBP,       /* CFA = rbp + off */
	CFA_DEREF_RSP, /* CFA = *(rsp + off) */
	CFA_DEREF_RBP, /* CFA = *(rbp + off) */
	CFA_PLT,       /* CFA = rsp + off, + 8 when (pc & 15) >= aux */
	CFA_SIGFRAME,  /* the sigreturn trampoline: registers in the ucontext at rsp */
	CFA_OUTERMOST, /* return address undefined: the walk is complete */
	CFA_RBX,       /* CFA = rbx + off (ld.so's lazy-binding resolver) */
};

/* How the caller's rbp (bp) or rbx (bx; the first three only) is found. */
enum bp_kind {
	BP_SAME,   /* unchanged */
	BP_AT,	   /* saved at CFA + aux * 8 */
	BP_LOST,   /* not recoverable */
	BP_AT_RBP, /* saved at rbp + aux * 8 (stack realignment with a DRAP) */
};

/*
 * A row holds from its pc to the next row's.  rule packs kind (4 bits),
 * bp (2), its aux (7, signed), bx (2), its aux (7, signed) and, in the high
 * half, off (32, signed, bytes); a CFA_NONE rule is always 0.
 */
typedef uint64_t uw_rule;

struct __attribute__((packed)) uw_row {
	uint32_t pc; /* offset from the module's lo */
	uw_rule rule;
};

#define RULE_KIND(r)   ((unsigned)(r)&15u)
#define RULE_BP(r)     ((unsigned)((r) >> 4) & 3u)
#define RULE_AUX(r)    ((int32_t)((uint32_t)(r) << 19) >> 25)
#define RULE_BX(r)     ((unsigned)((r) >> 13) & 3u)
#define RULE_BX_AUX(r) ((int32_t)((uint32_t)(r) << 10) >> 25)
#define RULE_OFF(r)    ((int32_t)(uint32_t)((r) >> 32))
#define RULE_GAP       ((uw_rule)1 << 22) /* build time only: the end of an FDE */

static uw_rule rule_make(unsigned kind, unsigned bp, int64_t aux, unsigned bx, int64_t bx_aux,
			 int64_t off)
{
	if (off < INT32_MIN || off > INT32_MAX || aux < -64 || aux > 63)
		return CFA_NONE;
	if (bx_aux < -64 || bx_aux > 63)
		bx = BP_LOST, bx_aux = 0;
	return kind | bp << 4 | ((uw_rule)aux & 0x7f) << 6 | (uw_rule)bx << 13 |
	       ((uw_rule)bx_aux & 0x7f) << 15 | (uw_rule)(uint32_t)off << 32;
}

/* ---- memory: everything lives in private anonymous mappings ---- */

static void *map_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void map_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* Grow *P (*CAP elements of SIZE bytes) to at least N, up to MAX elements. */
static bool map_grow(void **p, size_t *cap, size_t n, size_t size, size_t max)
{
	size_t ncap = *cap ? *cap : 4096 / size;
	void *q;

	while (ncap < n)
		ncap *= 2;
	if (ncap > max)
		ncap = max;
	if (ncap < n)
		return false;
	if (!*p)
		q = map_alloc(ncap * size);
	else
		q = mremap(*p, *cap * size, ncap * size, MREMAP_MAYMOVE);
	if (!q || q == MAP_FAILED)
		return false;
	*p = q;
	*cap = ncap;
	return true;
}

/* Heapsort: qsort may allocate, and refresh keeps to mmap. */
static void swap_bytes(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

static void sift_down(char *v, size_t size, size_t i, size_t n,
		      int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && cmp(v + c * size, v + (c + 1) * size) < 0)
			c++;
		if (cmp(v + i * size, v + c * size) >= 0)
			return;
		swap_bytes(v + i * size, v + c * size, size);
		i = c;
	}
}

static void heap_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *v = base;
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(v, size, i, n, cmp);
	for (i = n; i-- > 1;) {
		swap_bytes(v, v + i * size, size);
		sift_down(v, size, 0, i, cmp);
	}
}

/* ---- reading .eh_frame (cold; bounds are the module's mapped segments) ---- */

struct cur {
	uintptr_t p, end;
	bool bad;
};

static bool cur_take(struct cur *c, size_t n, void *out)
{
	if (c->bad || c->p > c->end || c->end - c->p < n) {
		c->bad = true;
		return false;
	}
	memcpy(out, (const void *)c->p, n);
	c->p += n;
	return true;
}

static uint8_t rd_u8(struct cur *c)
{
	uint8_t v = 0;

	cur_take(c, 1, &v);
	return v;
}

/* A LEB128 number; *SHIFT and *LAST tell a signed reader where to extend from. */
static uint64_t rd_leb(struct cur *c, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		b = rd_u8(c);
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while ((b & 0x80) && !c->bad);
	*last = b;
	return v;
}

static uint64_t rd_uleb(struct cur *c)
{
	unsigned shift;
	uint8_t last;

	return rd_leb(c, &shift, &last);
}

static int64_t rd_sleb(struct cur *c)
{
	unsigned shift;
	uint8_t last;
	uint64_t v = rd_leb(c, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

enum {
	PE_ABSPTR = 0x00,
	PE_ULEB = 0x01,
	PE_UDATA2 = 0x02,
	PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04,
	PE_SLEB = 0x09,
	PE_SDATA2 = 0x0a,
	PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10,
	PE_DATAREL = 0x30,
	PE_INDIRECT = 0x80,
	PE_OMIT = 0xff,
};

/*
 * A pointer in encoding ENC; DATAREL is the base of datarel values (0: none).
 * An indirect pointer is returned as the address of the pointer.
 */
static bool rd_ptr(struct cur *c, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
	uintptr_t at = c->p, v = 0;
	uint16_t u2 = 0;
	uint32_t u4 = 0;

	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8: cur_take(c, 8, &v); break;
	case PE_ULEB: v = (uintptr_t)rd_uleb(c); break;
	case PE_SLEB: v = (uintptr_t)rd_sleb(c); break;
	case PE_UDATA2: cur_take(c, 2, &u2), v = u2; break;
	case PE_SDATA2: cur_take(c, 2, &u2), v = (uintptr_t)(int16_t)u2; break;
	case PE_UDATA4: cur_take(c, 4, &u4), v = u4; break;
	case PE_SDATA4: cur_take(c, 4, &u4), v = (uintptr_t)(int32_t)u4; break;
	default: return false;
	}
	if ((enc & 0x70) == PE_PCREL)
		v += at;
	else if ((enc & 0x70) == PE_DATAREL && datarel)
		v += datarel;
	else if ((enc & 0x70) != 0)
		return false;
	*out = v;
	return !c->bad;
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
	struct cur c = {p, p + len, false};
	uint8_t op = rd_u8(&c), t[9];

	s->cfa_reg = CFA_REG_EXPR;
	s->expr_kind = CFA_NONE;
	s->cfa_off = rd_sleb(&c);
	if (c.bad || (op != OP_BREG0 + DW_RSP && op != OP_BREG0 + DW_RBP))
		return;
	if (c.end - c.p == 1 && rd_u8(&c) == OP_DEREF) {
		s->expr_kind = op == OP_BREG0 + DW_RSP ? CFA_DEREF_RSP : CFA_DEREF_RBP;
		return;
	}
	if (op != OP_BREG0 + DW_RSP || c.end - c.p != sizeof(t) || !cur_take(&c, sizeof(t), t))
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
	struct cur c = {p, p + len, false};
	int64_t off;

	if (at && rd_u8(&c) == OP_BREG0 + DW_RBP) {
		off = rd_sleb(&c);
		if (!c.bad && c.p == c.end) {
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
static bool packed_op(struct fde_run *f, struct cur *c, uint8_t op)
{
	uint16_t u2;
	uint32_t u4;

	switch (op >> 6) {
	case 1: return advance(f, f->loc + (op & 0x3f) * f->cie->code_align);
	case 2: set_reg(f, op & 0x3f, REG_AT, scaled(rd_uleb(c), f->cie->data_align)); return true;
	case 3: restore_reg(f, op & 0x3f); return true;
	}
	switch (op) {
	case 0x02: return advance(f, f->loc + rd_u8(c) * f->cie->code_align);
	case 0x03: return cur_take(c, 2, &u2) && advance(f, f->loc + u2 * f->cie->code_align);
	case 0x04: return cur_take(c, 4, &u4) && advance(f, f->loc + u4 * f->cie->code_align);
	}
	return false;
}

/* One instruction of a CFA program (DWARF 5, 6.4.2; GNU extensions). */
static bool cfa_op(struct fde_run *f, struct cur *c)
{
	uint8_t op = rd_u8(c);
	int64_t daf = f->cie->data_align;
	uint64_t reg, len;
	uintptr_t to;

	switch (op) {
	case 0x00: return true; /* nop */
	case 0x01: /* set_loc */ return rd_ptr(c, f->cie->fde_enc, 0, &to) && advance(f, to);
	case 0x05:
		reg = rd_uleb(c);
		set_reg(f, reg, REG_AT, scaled(rd_uleb(c), daf));
		break;
	case 0x06: restore_reg(f, rd_uleb(c)); break;
	case 0x07: set_reg(f, rd_uleb(c), REG_UNDEF, 0); break;
	case 0x08: set_reg(f, rd_uleb(c), REG_SAME, 0); break;
	case 0x09: reg = rd_uleb(c), rd_uleb(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x0a:
	case 0x0b: return state_op(f, op);
	case 0x0c: reg = rd_uleb(c), def_cfa(f, reg, (int64_t)rd_uleb(c)); break;
	case 0x0d: def_cfa(f, rd_uleb(c), f->st.cfa_off); break;
	case 0x0e: f->st.cfa_off = (int64_t)rd_uleb(c); goto offset_only;
	case 0x13: f->st.cfa_off = scaled(rd_sleb(c), daf); goto offset_only;
	case 0x0f: /* def_cfa_expression */
		len = rd_uleb(c);
		if (c->bad || len > c->end - c->p)
			return false;
		cfa_expr(&f->st, c->p, len);
		c->p += len;
		break;
	case 0x10:
	case 0x16: /* expression, val_expression */
		reg = rd_uleb(c), len = rd_uleb(c);
		if (c->bad || len > c->end - c->p)
			return false;
		reg_expr(f, reg, op == 0x10, c->p, len);
		c->p += len;
		break;
	case 0x11: reg = rd_uleb(c), set_reg(f, reg, REG_AT, scaled(rd_sleb(c), daf)); break;
	case 0x12: reg = rd_uleb(c), def_cfa(f, reg, scaled(rd_sleb(c), daf)); break;
	case 0x14: reg = rd_uleb(c), rd_uleb(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x15: reg = rd_uleb(c), rd_sleb(c), set_reg(f, reg, REG_OTHER, 0); break;
	case 0x2e: rd_uleb(c); break; /* GNU_args_size */
	case 0x2f: reg = rd_uleb(c), set_reg(f, reg, REG_AT, scaled(0 - rd_uleb(c), daf)); break;
	default: return packed_op(f, c, op);
	}
	return !c->bad;
offset_only:
	/* def_cfa_offset only applies to a register rule. */
	if (f->st.cfa_reg == CFA_REG_EXPR)
		f->st.cfa_reg = CFA_REG_NONE;
	return !c->bad;
}

static bool run_program(struct fde_run *f, uintptr_t p, uintptr_t end)
{
	struct cur c = {p, end, false};

	while (c.p < c.end)
		if (!cfa_op(f, &c))
			return false;
	return true;
}

/* ---- CIEs and FDEs ---- */

/* The .eh_frame entry at P: [*body, *end) after the length; false at a terminator. */
static bool entry_bounds(const struct build *b, uintptr_t p, uintptr_t *body, uintptr_t *end)
{
	struct cur c = {p, b->seg_hi, p < b->seg_lo};
	uint32_t len32 = 0;
	uint64_t len = 0;

	if (!cur_take(&c, 4, &len32) || len32 == 0)
		return false;
	len = len32;
	if (len32 == 0xffffffff && !cur_take(&c, 8, &len))
		return false;
	if (len < 4 || len > c.end - c.p)
		return false;
	*body = c.p;
	*end = c.p + len;
	return true;
}

/* The augmentation string's letters we know, and their data (LSB 3.0, 10.6.1.1). */
static bool cie_aug(struct cie *cie, struct cur *c, const char *aug)
{
	uintptr_t end, ignored;
	uint64_t len;

	if (aug[0] != 'z')
		return aug[0] == '\0';
	cie->aug_z = true;
	len = rd_uleb(c);
	if (c->bad || len > c->end - c->p)
		return false;
	end = c->p + len;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			cie->fde_enc = rd_u8(c);
			if (cie->fde_enc & PE_INDIRECT)
				return false;
			break;
		case 'P':
			if (!rd_ptr(c, rd_u8(c), 0, &ignored))
				return false;
			break;
		case 'L': rd_u8(c); break;
		case 'S': cie->signal = true; break;
		default: goto done; /* the rest is skipped by its length */
		}
	}
done:
	c->p = end;
	return !c->bad;
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
	struct cur c;

	if (!entry_bounds(b, at, &body, &end))
		return false;
	c = (struct cur){body, end, false};
	memset(cie, 0, sizeof(*cie));
	cie->at = at;
	if (!cur_take(&c, 4, &id) || id != 0)
		return false;
	version = rd_u8(&c);
	if (version != 1 && version != 3)
		return false;
	for (i = 0; i < sizeof(aug) && (aug[i] = (char)rd_u8(&c)) != '\0'; i++)
		;
	if (i == sizeof(aug) || c.bad)
		return false;
	cie->code_align = rd_uleb(&c);
	cie->data_align = rd_sleb(&c);
	ra = version == 1 ? rd_u8(&c) : rd_uleb(&c);
	if (ra != DW_RA || !cie_aug(cie, &c, aug))
		return false;
	f.st = (struct cfa_state){.cfa_reg = CFA_REG_NONE, .bp_how = REG_SAME, .ra_how = REG_OTHER};
	if (!run_program(&f, c.p, end))
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
	struct cur c;

	if (!entry_bounds(b, at, &body, &end))
		goto bad;
	c = (struct cur){body, end, false};
	if (!cur_take(&c, 4, &id) || id == 0)
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
		len = rd_uleb(&c);
		if (c.bad || len > c.end - c.p)
			goto bad;
		c.p += len;
	}
	/* FDEs of code outside the executable segments (discarded sections) are dropped. */
	if (range == 0 || begin < b->lo || begin >= b->hi || range > b->hi - begin)
		return;
	f.st = b->cie.init;
	f.loc = begin;
	f.end = begin + range;
	if (!run_program(&f, c.p, end)) {
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
static bool load_bounds(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t *lo,
			uintptr_t *hi)
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
	struct cur c = {hdr, hdr_end, false};
	uint8_t version = rd_u8(&c), ptr_enc = rd_u8(&c);
	uint8_t count_enc = rd_u8(&c), table_enc = rd_u8(&c);
	uintptr_t eh_frame = 0, count = 0, p, body, end;
	int32_t e[2];
	size_t i;

	if (version != 1 || !rd_ptr(&c, ptr_enc, hdr, &eh_frame))
		return false;
	if (!load_bounds(info, eh_frame, &b->seg_lo, &b->seg_hi))
		return false;
	if (count_enc != PE_OMIT && table_enc == (PE_DATAREL | PE_SDATA4) &&
	    rd_ptr(&c, count_enc, hdr, &count) && count <= (c.end - c.p) / sizeof(e)) {
		for (i = 0; i < count && !b->nomem && cur_take(&c, sizeof(e), e); i++)
			fde_parse(b, hdr + (uintptr_t)(intptr_t)e[1]);
		return true;
	}
	for (p = eh_frame; !b->nomem && entry_bounds(b, p, &body, &end); p = end)
		fde_parse(b, p);
	return true;
}

/* ---- modules ---- */

struct uw_module {
	uintptr_t lo, hi; /* executable segments [lo, hi) */
	uintptr_t base;	  /* load bias */
	uint64_t key;	  /* hash of the name, program headers and notes */
	size_t map_size;
	size_t nrows;
	size_t bad_fdes; /* FDEs skipped or cut short as malformed */
	bool bad;	 /* no usable CFI: walked with frame pointers */
	struct uw_row rows[];
};

/* What identifies a loaded module, from its dl_phdr_info. */
struct modinfo {
	const struct dl_phdr_info *info;
	uintptr_t lo, hi, hdr, hdr_end;
	uint64_t key;
};

#define NOTE_HASH_MAX 1024 /* bytes of each PT_NOTE hashed (the build id is there) */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static bool modinfo_get(const struct dl_phdr_info *info, struct modinfo *mi)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	uint64_t h = fnv(0xcbf29ce484222325ULL, name, strlen(name) + 1);
	uintptr_t seg_lo, seg_hi;
	size_t i;

	memset(mi, 0, sizeof(*mi));
	mi->info = info;
	mi->lo = UINTPTR_MAX;
	h = fnv(h, info->dlpi_phdr, info->dlpi_phnum * sizeof(ElfW(Phdr)));
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz) {
			mi->lo = at < mi->lo ? at : mi->lo;
			mi->hi = at + ph->p_memsz > mi->hi ? at + ph->p_memsz : mi->hi;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			mi->hdr = at;
			mi->hdr_end = at + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && load_bounds(info, at, &seg_lo, &seg_hi)) {
			size_t n = ph->p_filesz < seg_hi - at ? ph->p_filesz : seg_hi - at;

			h = fnv(h, (const void *)at, n < NOTE_HASH_MAX ? n : NOTE_HASH_MAX);
		}
	}
	mi->key = h;
	return mi->lo < mi->hi;
}

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

static struct uw_module *module_new(const struct modinfo *mi, const struct uw_row *rows,
				    size_t nrows)
{
	size_t size = sizeof(struct uw_module) + nrows * sizeof(*rows);
	struct uw_module *m = map_alloc(size);

	if (!m)
		return NULL;
	m->lo = mi->lo;
	m->hi = mi->hi;
	m->base = mi->info->dlpi_addr;
	m->key = mi->key;
	m->map_size = size;
	m->nrows = nrows;
	m->bad = nrows == 0;
	if (nrows)
		memcpy(m->rows, rows, nrows * sizeof(*rows));
	return m;
}

/* Parse a module's CFI into a new module (NULL: out of memory). */
static struct uw_module *module_build(const struct modinfo *mi)
{
	struct build b = {.lo = mi->lo, .hi = mi->hi};
	struct uw_module *m;
	uintptr_t lo, hi;
	size_t n = 0;

	if (mi->hdr && mi->hi - mi->lo <= UINT32_MAX && load_bounds(mi->info, mi->hdr, &lo, &hi) &&
	    mi->hdr_end <= hi && parse_hdr(&b, mi->info, mi->hdr, mi->hdr_end) && !b.nomem)
		n = rows_compact(b.rows, b.nrows);
	m = module_new(mi, b.rows, n);
	if (m)
		m->bad_fdes = b.bad_fdes;
	map_free(b.rows, b.cap * sizeof(*b.rows));
	return m;
}

/* ---- tables, published to the walkers ---- */

struct uw_table {
	size_t map_size;
	size_t nmods, nrows, bytes, bad, bad_fdes;
	struct uw_module *mods[]; /* sorted by lo, disjoint */
};

/* The module holding PC (HOT). */
static const struct uw_module *table_lookup(const struct uw_table *t, uintptr_t pc)
{
	size_t lo = 0, hi = t ? t->nmods : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->mods[mid]->lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= t->mods[lo - 1]->hi)
		return NULL;
	return t->mods[lo - 1];
}

static bool table_has(const struct uw_table *t, const struct uw_module *m)
{
	return table_lookup(t, m->lo) == m;
}

/* A module of T that is the same load of the same file as MI. */
static struct uw_module *table_find_same(const struct uw_table *t, const struct modinfo *mi)
{
	const struct uw_module *m = table_lookup(t, mi->lo);

	if (!m || m->lo != mi->lo || m->hi != mi->hi || m->base != mi->info->dlpi_addr ||
	    m->key != mi->key)
		return NULL;
	return (struct uw_module *)m;
}

/* The modules found by one refresh. */
struct refresh {
	const struct uw_table *old;
	struct slot {
		struct uw_module *mod;
		bool fresh; /* built by this refresh, not yet seen by any walker */
	} * v;
	size_t n, cap;
	int err;
};

#define MODULES_MAX 65536

static int on_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct refresh *r = arg;
	struct modinfo mi;
	struct uw_module *m;
	void *p = r->v;

	(void)size;
	if (!modinfo_get(info, &mi))
		return 0;
	if (r->n == r->cap && !map_grow(&p, &r->cap, r->n + 1, sizeof(*r->v), MODULES_MAX)) {
		r->err = -ENOMEM;
		return 1;
	}
	r->v = p;
	m = table_find_same(r->old, &mi);
	r->v[r->n].fresh = m == NULL;
	if (!m && !(m = module_build(&mi))) {
		r->err = -ENOMEM;
		return 1;
	}
	r->v[r->n++].mod = m;
	return 0;
}

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->mod->lo < y->mod->lo ? -1 : x->mod->lo > y->mod->lo;
}

static struct uw_table *table_build(struct refresh *r)
{
	size_t size = sizeof(struct uw_table) + r->n * sizeof(struct uw_module *), i;
	struct uw_table *t = map_alloc(size);

	if (!t)
		return NULL;
	heap_sort(r->v, r->n, sizeof(*r->v), slot_cmp);
	t->map_size = size;
	t->bytes = size;
	for (i = 0; i < r->n; i++) {
		struct uw_module *m = r->v[i].mod;

		/* Loaded modules never overlap; if they seem to, keep the first. */
		if (t->nmods && m->lo < t->mods[t->nmods - 1]->hi)
			continue;
		t->mods[t->nmods++] = m;
		t->nrows += m->nrows;
		t->bytes += m->map_size;
		t->bad += m->bad;
		t->bad_fdes += m->bad_fdes;
	}
	return t;
}

/* ---- publication: one pointer, two reader counts ---- */

/*
 * A walker registers in uw_readers[phase], re-checks the phase, then loads
 * uw_current.  Refresh swaps uw_current, flips the phase and waits for the
 * old phase's count to drain: every walker that could hold the old table is
 * counted there, and walkers arriving later use the other count, so a busy
 * process cannot starve the refresher.
 */
static struct agent_lock uw_lock = AGENT_LOCK_INIT;
static _Atomic(struct uw_table *) uw_current;
static atomic_uint uw_phase;
static atomic_uint uw_readers[2];
static struct agent_unwind_stats uw_counts; /* counters, under uw_lock */

#define PHASE_NONE	 2u
#define DRAIN_TIMEOUT_NS UINT64_C(1000000000)

static unsigned reader_enter(void)
{
	int tries;

	for (tries = 0; tries < 4; tries++) {
		unsigned ph = atomic_load(&uw_phase) & 1;

		atomic_fetch_add(&uw_readers[ph], 1);
		if ((atomic_load(&uw_phase) & 1) == ph)
			return ph;
		atomic_fetch_sub(&uw_readers[ph], 1);
	}
	return PHASE_NONE;
}

static void reader_exit(unsigned ph)
{
	if (ph != PHASE_NONE)
		atomic_fetch_sub(&uw_readers[ph], 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Flip the phase and wait for the walkers of the old one; false after the timeout. */
static bool wait_readers(void)
{
	unsigned old = atomic_fetch_xor(&uw_phase, 1) & 1;
	uint64_t start = now_ns();
	unsigned spins = 0;

	while (atomic_load(&uw_readers[old]) != 0) {
		struct timespec nap = {0, 50000};

		if (now_ns() - start > DRAIN_TIMEOUT_NS)
			return false;
		if (++spins < 64)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
	return true;
}

/* Unmap OLD and its modules CUR no longer lists (or leak them if walkers may remain). */
static void table_retire(struct uw_table *old, const struct uw_table *cur, bool drained)
{
	size_t i;

	if (!old)
		return;
	for (i = 0; i < old->nmods; i++) {
		struct uw_module *m = old->mods[i];

		if (table_has(cur, m))
			continue;
		uw_counts.retired++;
		if (drained)
			map_free(m, m->map_size);
		else
			uw_counts.leaked++;
	}
	if (drained)
		map_free(old, old->map_size);
	else
		uw_counts.leaked++;
}

/* Unmap the modules this refresh built but did not publish; returns those it published. */
static size_t drop_unpublished(struct refresh *r, const struct uw_table *t)
{
	size_t i, published = 0;

	for (i = 0; i < r->n; i++) {
		if (!r->v[i].fresh)
			continue;
		if (t && table_has(t, r->v[i].mod))
			published++;
		else
			map_free(r->v[i].mod, r->v[i].mod->map_size);
	}
	map_free(r->v, r->cap * sizeof(*r->v));
	return published;
}

/* In a forked child only the forking thread exists, and it was not walking. */
void agent_unwind_atfork_prepare(void)
{
	agent_lock(&uw_lock);
}

void agent_unwind_atfork_parent(void)
{
	agent_unlock(&uw_lock);
}

void agent_unwind_atfork_child(void)
{
	atomic_store(&uw_readers[0], 0);
	atomic_store(&uw_readers[1], 0);
	/* The only thread left holds it: a fresh lock (a sanitizer's fork reset may not know it is held). */
	agent_lock_reset(&uw_lock);
}

/*
 * Bind now the library calls the walkers make, so that a walk never enters
 * the loader's lazy binding (which may take its lock); memcpy is bound by
 * the parser, before any table exists.
 */
static void prebind(void)
{
	int saved_errno = errno;
	struct iovec none = {NULL, 0};

	process_vm_readv(getpid(), &none, 0, &none, 0, 0);
	errno = saved_errno;
}

int agent_unwind_refresh(void)
{
	struct refresh r = {0};
	struct uw_table *t, *old;
	uint64_t start = now_ns();
	size_t parsed;

	prebind();
	agent_lock(&uw_lock);
	r.old = atomic_load(&uw_current);
	dl_iterate_phdr(on_module, &r);
	t = r.err ? NULL : table_build(&r);
	parsed = drop_unpublished(&r, t);
	if (!t) {
		agent_unlock(&uw_lock);
		return r.err ? r.err : -ENOMEM;
	}
	old = atomic_exchange(&uw_current, t);
	table_retire(old, t, wait_readers());
	uw_counts.refreshes++;
	uw_counts.parsed += parsed;
	uw_counts.reused += t->nmods - parsed;
	uw_counts.last_refresh_ns = now_ns() - start;
	agent_unlock(&uw_lock);
	return 0;
}

/* ---- walking (HOT) ---- */

#define LINE	    256			 /* bytes fetched per process_vm_readv */
#define FP_SPAN_MAX ((uintptr_t)1 << 28) /* rbp - rsp beyond this is not a frame pointer */

struct walk {
	const struct uw_table *table;
	uintptr_t lo, hi; /* stack bounds; both 0: read through process_vm_readv */
	pid_t pid;
	uintptr_t line; /* address of buf's copy, 1 when empty */
	uintptr_t *pcs;
	size_t max, n;
	unsigned skip;
	bool truncated;
	unsigned char buf[LINE];
};

enum { STEP_NEXT, STEP_END, STEP_STOP };

/* A load the sanitizers must not check: other frames' bytes include their redzones. */
__attribute__((no_sanitize("address", "undefined"))) static uintptr_t load_word(uintptr_t addr)
{
	struct __attribute__((packed, may_alias)) word {
		uintptr_t v;
	};

	return ((const volatile struct word *)addr)->v;
}

static bool read_remote(struct walk *w, uintptr_t addr, uintptr_t *out)
{
	uintptr_t line = addr & ~(uintptr_t)(LINE - 1);
	struct iovec local, remote;

	if (!w->pid)
		w->pid = getpid();
	if (addr - line > LINE - WORD) { /* straddles two lines */
		local = (struct iovec){out, WORD};
		remote = (struct iovec){(void *)addr, WORD};
		return process_vm_readv(w->pid, &local, 1, &remote, 1, 0) == WORD;
	}
	if (w->line != line) {
		/* An aligned line never crosses a page: it is all there or not at all. */
		local = (struct iovec){w->buf, LINE};
		remote = (struct iovec){(void *)line, LINE};
		if (process_vm_readv(w->pid, &local, 1, &remote, 1, 0) != LINE) {
			w->line = 1;
			return false;
		}
		w->line = line;
	}
	memcpy(out, w->buf + (addr - line), WORD);
	return true;
}

static bool read_word(struct walk *w, uintptr_t addr, uintptr_t *out)
{
	if (w->lo || w->hi) {
		if (addr < w->lo || addr >= w->hi || w->hi - addr < WORD)
			return false;
		*out = load_word(addr);
		return true;
	}
	if (addr < 4096 || addr > UINTPTR_MAX - WORD)
		return false;
	return read_remote(w, addr, out);
}

/* The row covering PC, CFA_NONE when there is none. */
static uw_rule module_rule(const struct uw_module *m, uintptr_t pc)
{
	uint32_t off = (uint32_t)(pc - m->lo);
	size_t lo = 0, hi = m->nrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->rows[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? m->rows[lo - 1].rule : (uw_rule)CFA_NONE;
}

/* Move R to the caller of a frame whose CFA is known. */
/*
 * The caller's rbx: unlike rbp's, a slot that cannot be read only loses it
 * (few frames need it), and does not stop the walk.
 */
static void step_rbx(struct walk *w, const struct uw_regs *r, uintptr_t cfa, uw_rule rule,
		     uintptr_t *bx, bool *bx_ok)
{
	uintptr_t slot = cfa + (uintptr_t)((intptr_t)RULE_BX_AUX(rule) * WORD);

	switch (RULE_BX(rule)) {
	case BP_AT:
		/* Below sp: popped already, rbx holds it (as for rbp below). */
		if (slot >= r->sp)
			*bx_ok = read_word(w, slot, bx);
		break;
	case BP_LOST: *bx_ok = false; break;
	}
}

static int step_cfa(struct walk *w, struct uw_regs *r, uintptr_t cfa, uw_rule rule)
{
	uintptr_t ra, bp = r->bp, bx = r->bx, slot = cfa;
	bool bp_ok = r->bp_ok, bx_ok = r->bx_ok;

	if (cfa <= r->sp || !read_word(w, cfa + RA_CFA_OFFSET, &ra))
		return STEP_STOP;
	switch (RULE_BP(rule)) {
	case BP_AT_RBP:
		if (!r->bp_ok)
			return STEP_STOP;
		slot = r->bp;
		/* fall through */
	case BP_AT:
		slot += (intptr_t)RULE_AUX(rule) * WORD;
		/* In an epilogue the CFI still names the slot after `pop %rbp`:
		 * a slot below sp was popped, and rbp already holds its value. */
		if (slot >= r->sp && !read_word(w, slot, &bp))
			return STEP_STOP;
		bp_ok = true;
		break;
	case BP_LOST: bp_ok = false; break;
	}
	step_rbx(w, r, cfa, rule, &bx, &bx_ok);
	*r = (struct uw_regs){
		.pc = ra, .sp = cfa, .bp = bp, .bx = bx, .bp_ok = bp_ok, .bx_ok = bx_ok};
	return ra ? STEP_NEXT : STEP_END;
}

/* No CFI: follow rbp if it looks like a frame pointer (at a call without
 * locals it equals sp).  Whether the frame kept rbx is unknown. */
static int step_fp(struct walk *w, struct uw_regs *r)
{
	uintptr_t saved_bp, ra;

	if (!r->bp_ok || r->bp < r->sp || (r->bp & (WORD - 1)) || r->bp - r->sp > FP_SPAN_MAX)
		return STEP_STOP;
	if (!read_word(w, r->bp, &saved_bp) || !read_word(w, r->bp + WORD, &ra))
		return STEP_STOP;
	*r = (struct uw_regs){.pc = ra, .sp = r->bp + 2 * WORD, .bp = saved_bp, .bp_ok = true};
	return ra ? STEP_NEXT : STEP_END;
}

/* The sigreturn trampoline: continue at the interrupted context. */
static int step_sigframe(struct walk *w, struct uw_regs *r)
{
	uintptr_t uc = r->sp, pc, sp, bp, bx = 0;
	bool bx_ok;

	if (!read_word(w, uc + SIGFRAME_GREG(REG_RIP), &pc) ||
	    !read_word(w, uc + SIGFRAME_GREG(REG_RSP), &sp) ||
	    !read_word(w, uc + SIGFRAME_GREG(REG_RBP), &bp))
		return STEP_STOP;
	bx_ok = read_word(w, uc + SIGFRAME_GREG(REG_RBX), &bx);
	*r = (struct uw_regs){.pc = pc,
			      .sp = sp,
			      .bp = bp,
			      .bx = bx,
			      .bp_ok = true,
			      .bx_ok = bx_ok,
			      .exact = true};
	return STEP_NEXT;
}

static int step(struct walk *w, struct uw_regs *r, const struct uw_module *m, uintptr_t pc)
{
	uw_rule rule = module_rule(m, pc);
	intptr_t off = RULE_OFF(rule);
	uintptr_t cfa;

	switch (RULE_KIND(rule)) {
	case CFA_OUTERMOST: return STEP_END;
	case CFA_SIGFRAME: return step_sigframe(w, r);
	case CFA_RSP: return step_cfa(w, r, r->sp + off, rule);
	case CFA_RBP: return r->bp_ok ? step_cfa(w, r, r->bp + off, rule) : STEP_STOP;
	case CFA_RBX: return r->bx_ok ? step_cfa(w, r, r->bx + off, rule) : STEP_STOP;
	case CFA_PLT:
		cfa = r->sp + off + ((pc & 15) >= (uintptr_t)RULE_AUX(rule) ? WORD : 0);
		return step_cfa(w, r, cfa, rule);
	case CFA_DEREF_RSP:
		return read_word(w, r->sp + off, &cfa) ? step_cfa(w, r, cfa, rule) : STEP_STOP;
	case CFA_DEREF_RBP:
		if (!r->bp_ok || !read_word(w, r->bp + off, &cfa))
			return STEP_STOP;
		return step_cfa(w, r, cfa, rule);
	}
	return step_fp(w, r);
}

static void walk(struct walk *w, struct uw_regs r)
{
	for (;;) {
		/* A return address minus 1 lies in the call, inside the caller's FDE. */
		uintptr_t pc = r.exact ? r.pc : r.pc - 1;
		const struct uw_module *m;
		int s;

		if (w->n == w->max) {
			w->truncated = true;
			return;
		}
		if (w->skip)
			w->skip--;
		else
			w->pcs[w->n++] = pc;
		m = table_lookup(w->table, pc);
		s = m ? step(w, &r, m, pc) : STEP_STOP;
		if (s != STEP_NEXT) {
			w->truncated = s == STEP_STOP;
			return;
		}
	}
}

static size_t run(struct uw_regs r, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max,
		  unsigned skip, bool *truncated)
{
	int saved_errno = errno;
	unsigned ph = reader_enter();
	struct walk w;

	w.table = ph == PHASE_NONE ? NULL : atomic_load(&uw_current);
	/* Every frame's CFI reads lie at or above its sp: skip the part of the
	 * bounds below the first sp, which may not be mapped yet (the main
	 * thread's stack grows on demand), and all of them when sp is above. */
	w.lo = (lo || hi) && r.sp > lo ? (r.sp < hi ? r.sp : hi) : lo;
	w.hi = hi;
	w.pid = 0;
	w.line = 1;
	w.pcs = pcs;
	w.max = pcs ? max : 0;
	w.n = 0;
	w.skip = skip;
	w.truncated = false;
	walk(&w, r);
	reader_exit(ph);
	if (truncated)
		*truncated = w.truncated;
	errno = saved_errno;
	return w.n;
}

size_t agent_unwind_signal(const void *ucontext, uintptr_t stack_lo, uintptr_t stack_hi,
			   uintptr_t *pcs, size_t max, bool *truncated)
{
	struct uw_regs r;

	if (!ucontext) {
		if (truncated)
			*truncated = true;
		return 0;
	}
	regs_from_ucontext(ucontext, &r);
	return run(r, stack_lo, stack_hi, pcs, max, 0, truncated);
}

__attribute__((noinline)) size_t agent_unwind_here(uintptr_t stack_lo, uintptr_t stack_hi,
						   uintptr_t *pcs, size_t max, unsigned skip,
						   bool *truncated)
{
	struct uw_regs r;

	regs_of_caller(&r);
	return run(r, stack_lo, stack_hi, pcs, max, skip, truncated);
}

void agent_unwind_stats(struct agent_unwind_stats *out)
{
	const struct uw_table *t;

	agent_lock(&uw_lock);
	*out = uw_counts;
	t = atomic_load(&uw_current);
	if (t) {
		out->modules = t->nmods;
		out->rows = t->nrows;
		out->bytes = t->bytes;
		out->bad_modules = t->bad;
		out->bad_fdes = t->bad_fdes;
	}
	agent_unlock(&uw_lock);
}

/* ---- one module's rows, for the fuzz target and tests (cold) ---- */

int agent_unwind_parse_module(const struct dl_phdr_info *info, struct agent_unwind_stats *out)
{
	struct modinfo mi;
	struct uw_module *m;

	memset(out, 0, sizeof(*out));
	if (!modinfo_get(info, &mi))
		return 0; /* no executable PT_LOAD: refresh skips it too */
	m = module_build(&mi);
	if (!m)
		return -ENOMEM;
	out->modules = 1;
	out->rows = m->nrows;
	out->bytes = m->map_size;
	out->bad_modules = m->bad;
	out->bad_fdes = m->bad_fdes;
	out->parsed = 1;
	map_free(m, m->map_size);
	return 0;
}
