/* SPDX-License-Identifier: MIT */
/*
 * The agent's stack unwinder (unwind.h, doc/agent-unwind.md): the modules,
 * their tables and the walkers.  Cold code (refresh) lists the loaded
 * modules and has each new one's .eh_frame turned into a sorted array of
 * compact rows (unwind_cfi.c, through unwind_rows.h); hot code (the walkers)
 * binary-searches them with no lock, no allocation and no loader call.
 * Tables are published through one atomic pointer and unmapped after a
 * two-phase reader count has drained.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/stack/unwind.h"
#include "agent/stack/unwind_rows.h"
#include "agent/core/spinlock.h"
#include "util/banned.h"

/* ---- x86_64 specifics of the walk: the rest relies only on these and unwind_rows.h's ---- */

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

/* ---- modules ---- */

struct uw_module {
	uintptr_t lo, hi; /* executable segments [lo, hi) */
	uintptr_t base;	  /* load bias */
	uint64_t key;	  /* hash of the name, program headers and notes */
	size_t map_size;
	size_t nrows;
	size_t bad_fdes; /* FDEs skipped or cut short as malformed */
	bool bad;	 /* no usable CFI: walked with frame pointers */
	/*
	 * The rows of the pcs in block i (offsets [i << shift, (i + 1) << shift))
	 * lie between rows[block[i] - 1] and rows[block[i + 1] - 1]: a lookup
	 * searches a few neighbouring rows, not the whole array (NULL: none).
	 */
	const uint32_t *block;
	size_t nblocks;
	unsigned block_shift;
	struct uw_row rows[];
};

#define BLOCK_SHIFT_MIN 8		  /* 256 bytes of code per block: ~4 rows of libc's */
#define BLOCKS_MAX	((size_t)1 << 22) /* at most 16 MiB of index per module */

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
		} else if (ph->p_type == PT_NOTE && uw_load_bounds(info, at, &seg_lo, &seg_hi)) {
			size_t n = ph->p_filesz < seg_hi - at ? ph->p_filesz : seg_hi - at;

			h = fnv(h, (const void *)at, n < NOTE_HASH_MAX ? n : NOTE_HASH_MAX);
		}
	}
	mi->key = h;
	return mi->lo < mi->hi;
}

/* block[i]: the rows below block i's first pc. */
static void blocks_build(struct uw_module *m, uint32_t *block)
{
	size_t j = 0;

	for (size_t i = 0; i <= m->nblocks; i++) {
		uint64_t start = (uint64_t)i << m->block_shift;

		while (j < m->nrows && m->rows[j].pc < start)
			j++;
		block[i] = (uint32_t)j;
	}
	m->block = block;
}

static struct uw_module *module_new(const struct modinfo *mi, const struct uw_row *rows,
				    size_t nrows)
{
	size_t at = sizeof(struct uw_module) + nrows * sizeof(*rows), nblocks = 0, size;
	unsigned shift = BLOCK_SHIFT_MIN;
	struct uw_module *m;

	at = (at + 7) & ~(size_t)7;
	if (nrows) {
		while (((mi->hi - mi->lo - 1) >> shift) + 1 > BLOCKS_MAX)
			shift++;
		nblocks = ((mi->hi - mi->lo - 1) >> shift) + 1;
	}
	size = at + (nblocks ? (nblocks + 1) * sizeof(uint32_t) : 0);
	m = map_alloc(size);
	if (!m)
		return NULL;
	m->lo = mi->lo;
	m->hi = mi->hi;
	m->base = mi->info->dlpi_addr;
	m->key = mi->key;
	m->map_size = size;
	m->nrows = nrows;
	m->bad = nrows == 0;
	m->nblocks = nblocks;
	m->block_shift = shift;
	if (nrows) {
		memcpy(m->rows, rows, nrows * sizeof(*rows));
		blocks_build(m, (uint32_t *)((char *)m + at));
	}
	return m;
}

/* Parse a module's CFI into a new module (NULL: out of memory). */
static struct uw_module *module_build(const struct modinfo *mi)
{
	struct uw_rows rows;
	struct uw_module *m;

	uw_cfi_build(mi, &rows);
	m = module_new(mi, rows.v, rows.n);
	if (m)
		m->bad_fdes = rows.bad_fdes;
	map_free(rows.v, rows.map_size);
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
	size_t lo = 0, hi = m->nrows, b = off >> m->block_shift;

	if (b < m->nblocks) { /* none: no rows */
		lo = m->block[b];
		hi = m->block[b + 1];
	}

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
