/* SPDX-License-Identifier: MIT */
#include "util/common.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

#include "record/unwind.h"

/*
 * One libdw session (Dwfl) per unwinder, kept across samples so that each
 * module's CFI is parsed once.  The unwinder's list of mappings is the
 * truth; the Dwfl follows it lazily: new mappings are reported at the next
 * unwind, and a mapping that replaced one already reported (dlclose +
 * dlopen) makes the next unwind start a fresh Dwfl from the list.
 *
 * Modules are reported with dwfl_report_module() and handed their Elf by
 * the find_elf callback when libdw first needs it; the Elf is mapped
 * in memory with its descriptor closed, so an unwinder holds no file
 * descriptors however many processes are followed.
 */

#define UW_MAX_MAPS   65536	 /* mappings remembered per unwinder */
#define UW_MAX_PATH   4096	 /* longer paths are ignored */
#define UW_MAX_FRAMES (1u << 20) /* so that a frame count fits an int */
#define UW_VDSO_MAX   (256 * 1024)
#define UW_DWARF_SP   7 /* x86-64 DWARF register number of %rsp */

struct uw_map {
	char *path;
	uint64_t start, end, pgoff;
};

/* A file reported to the Dwfl (or found unusable). */
struct uw_mod {
	char *path;
	uint64_t low, high; /* the module's range as libdw sees it */
	Elf *elf;	    /* ours until find_elf hands it to libdw */
	bool failed;	    /* cannot be used (low, high: the mapping tried) */
};

/* The sample being unwound: borrowed for the duration of one call. */
struct uw_sample {
	const uint64_t *regs;
	uint64_t mask;
	const uint8_t *stack;
	size_t len;
	uint64_t sp, last_sp;
	uint64_t *ips;
	size_t max, n;
};

struct unwinder {
	struct uw_map *maps;
	size_t nr_maps, alloc_maps;
	size_t nr_synced; /* maps[0..nr_synced) have been reported to dwfl */
	bool rebuild;	  /* a reported mapping was replaced: start over */
	Dwfl *dwfl;
	Elf *arch_elf; /* names the architecture for dwfl_attach_state */
	Elf64_Ehdr arch_ehdr;
	struct uw_mod **mods;
	size_t nr_mods, alloc_mods;
	struct uw_sample cur;
};

/* ---- the vDSO: every 64-bit process on this kernel maps the same image ---- */

static struct {
	const unsigned char *image;
	size_t size; /* page-rounded: the length of its mapping */
} vdso;
static pthread_once_t vdso_once = PTHREAD_ONCE_INIT;

/* Length of this process's [vdso] mapping, 0 if none. */
static size_t vdso_mapping_size(uint64_t base)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long long lo, hi;
	size_t size = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2 &&
		    lo == base && hi > lo)
			size = (size_t)(hi - lo);
	fclose(f);
	return size;
}

static void vdso_init(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	size_t size = base ? vdso_mapping_size(base) : 0;
	unsigned char *copy;

	if (!size || size > UW_VDSO_MAX || size < sizeof(Elf64_Ehdr) ||
	    memcmp((const void *)(uintptr_t)base, ELFMAG, SELFMAG))
		return;
	/* A private copy: libelf may treat an image as writable. */
	copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, (const void *)(uintptr_t)base, size);
	vdso.image = copy;
	vdso.size = size;
}

/* An Elf over the vDSO image if a mapping of [start, end) can be it, or NULL. */
static Elf *vdso_elf(uint64_t start, uint64_t end)
{
	pthread_once(&vdso_once, vdso_init);
	if (!vdso.image || end - start != vdso.size)
		return NULL;
	/* libelf only reads an ELF_C_READ_MMAP_PRIVATE image of native byte order. */
	return elf_memory((char *)(uintptr_t)vdso.image, vdso.size);
}

/* ---- ELF files ---- */

static Elf *elf_open_path(const char *path)
{
	struct stat st;
	Elf *elf = NULL;
	int fd;

	/* O_NONBLOCK: a FIFO must not hang the open; only regular files are read. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		elf = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	/* FDREAD: everything is mapped (or read) now, the descriptor can go. */
	if (elf && (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD))) {
		elf_end(elf);
		elf = NULL;
	}
	close(fd);
	return elf;
}

/* Whether a file is for the machine the unwinder handles. */
static bool elf_native(const GElf_Ehdr *eh)
{
#if defined(__x86_64__)
	return eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_machine == EM_X86_64;
#else
	(void)eh;
	return false;
#endif
}

/* The PT_LOAD that file offset pgoff falls in, preferring an executable one. */
static bool elf_segment_at(Elf *elf, size_t n, uint64_t pgoff, GElf_Phdr *out)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = ~(uint64_t)(page > 0 ? page - 1 : 4095);
	bool found = false;
	GElf_Phdr ph;

	for (size_t i = 0; i < n && i < INT_MAX; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* The kernel maps a segment from its page-aligned offset. */
		if (pgoff < (ph.p_offset & mask) ||
		    (pgoff >= ph.p_offset && pgoff - ph.p_offset >= ph.p_filesz))
			continue;
		if (!found || (!(out->p_flags & PF_X) && (ph.p_flags & PF_X)))
			*out = ph;
		found = true;
	}
	return found;
}

/*
 * The range libdw will give a module of elf mapped at start from pgoff:
 * low = bias + the first PT_LOAD's aligned p_vaddr (libdw takes
 * low_addr - that as the bias), high = bias + the end of the last one.
 * bias = start - (p_vaddr - p_offset + pgoff) for ET_DYN, 0 for ET_EXEC.
 */
static bool elf_range(Elf *elf, uint64_t start, uint64_t pgoff, struct uw_mod *m)
{
	uint64_t first = UINT64_MAX, last = 0, bias;
	GElf_Ehdr eh;
	GElf_Phdr ph, seg;
	size_t n;

	if (!gelf_getehdr(elf, &eh) || !elf_native(&eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(elf, &n) ||
	    !elf_segment_at(elf, n, pgoff, &seg))
		return false;
	for (size_t i = 0; i < n && i < INT_MAX; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (first == UINT64_MAX)
			first = ph.p_vaddr & -ph.p_align; /* exactly as libdw does */
		if (ph.p_vaddr + ph.p_memsz > last)
			last = ph.p_vaddr + ph.p_memsz;
	}
	bias = eh.e_type == ET_EXEC ? 0 : start - (seg.p_vaddr - seg.p_offset + pgoff);
	m->low = bias + first;
	m->high = bias + last;
	/* The mapping must lie in the module, or the file is not what was mapped. */
	return m->low < m->high && start >= m->low && start < m->high;
}

/* ---- modules ---- */

static struct uw_mod *mod_find(struct unwinder *u, const char *path, uint64_t start)
{
	for (size_t i = 0; i < u->nr_mods; i++) {
		struct uw_mod *m = u->mods[i];

		if (start >= m->low && start < m->high && !strcmp(m->path, path))
			return m;
	}
	return NULL;
}

static void mod_free(struct uw_mod *m)
{
	if (!m)
		return;
	elf_end(m->elf);
	free(m->path);
	free(m);
}

/* libdw asks for a module's file: hand over the Elf opened at report time. */
static int uw_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	struct uw_mod *m = *userdata;

	(void)mod, (void)name, (void)base, (void)file_name;
	if (m && m->elf) {
		*elfp = m->elf;
		m->elf = NULL;
	}
	return -1;
}

/*
 * No separate debug files: .eh_frame (and .debug_frame in the file
 * itself) is what unwinding uses, and libdw's standard search may query
 * debuginfod servers over the network.
 */
static int uw_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks uw_dwfl_callbacks = {
	.find_elf = uw_find_elf,
	.find_debuginfo = uw_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Report the file of mapping map to the Dwfl unless it already is. */
static void mod_report(struct unwinder *u, const struct uw_map *map)
{
	bool is_vdso = !strcmp(map->path, "[vdso]");
	struct uw_mod *m;
	Dwfl_Module *dm;
	void **ud;

	if (mod_find(u, map->path, map->start))
		return;
	m = xcalloc(1, sizeof(*m));
	m->path = xstrdup(map->path);
	m->elf = is_vdso ? vdso_elf(map->start, map->end) : elf_open_path(map->path);
	m->failed = !m->elf || !elf_range(m->elf, map->start, is_vdso ? 0 : map->pgoff, m);
	ALLOC_GROW(u->mods, u->nr_mods + 1, u->alloc_mods);
	u->mods[u->nr_mods++] = m;
	if (m->failed)
		debug(DEBUG_UNWIND,
		      "%s [%#" PRIx64 "-%#" PRIx64 "): %s: stacks through it stop there", m->path,
		      map->start, map->end,
		      m->elf ? "no loadable segment at this offset" : "cannot open it as ELF");
	else
		debug2(DEBUG_UNWIND, "%s [%#" PRIx64 "-%#" PRIx64 "): CFI from libdw", m->path,
		       map->start, map->end);
	if (m->failed) {
		/* Remembered for this mapping's range only: another may still work. */
		m->low = map->start;
		m->high = map->end;
		elf_end(m->elf);
		m->elf = NULL;
		return;
	}
	dm = dwfl_report_module(u->dwfl, m->path, m->low, m->high);
	if (dm && dwfl_module_info(dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		*ud = m;
}

/* ---- the Dwfl ---- */

static void uw_drop_dwfl(struct unwinder *u)
{
	dwfl_end(u->dwfl); /* frees the Elfs handed over to it */
	u->dwfl = NULL;
	elf_end(u->arch_elf);
	u->arch_elf = NULL;
	for (size_t i = 0; i < u->nr_mods; i++)
		mod_free(u->mods[i]);
	u->nr_mods = 0;
	u->nr_synced = 0;
}

static pid_t uw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0; /* dwfl_getthread_frames goes through get_thread */
}

static bool uw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = arg;
	return true;
}

/* The stack copy is the only memory there is; nothing outside it is read. */
static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct uw_sample *s = &((struct unwinder *)arg)->cur;

	(void)dwfl;
	if (addr < s->sp || s->len < sizeof(*result) || addr - s->sp > s->len - sizeof(*result))
		return false;
	memcpy(result, s->stack + (addr - s->sp), sizeof(*result));
	return true;
}

/* The value of perf register r, if the sample has it. */
static inline bool reg_get(const uint64_t *regs, uint64_t mask, unsigned r, uint64_t *val)
{
	if (r >= 64 || !(mask & (1ULL << r)))
		return false;
	*val = regs[__builtin_popcountll(mask & ((1ULL << r) - 1))];
	return true;
}

#if defined(__x86_64__)
/* perf x86-64 register -> DWARF register number 0..15 (the PC is set apart). */
static const struct {
	unsigned char perf, dwarf;
} uw_regmap[] = {
	{PERF_REG_X86_AX, 0},	{PERF_REG_X86_DX, 1},	{PERF_REG_X86_CX, 2},
	{PERF_REG_X86_BX, 3},	{PERF_REG_X86_SI, 4},	{PERF_REG_X86_DI, 5},
	{PERF_REG_X86_BP, 6},	{PERF_REG_X86_SP, 7},	{PERF_REG_X86_R8, 8},
	{PERF_REG_X86_R9, 9},	{PERF_REG_X86_R10, 10}, {PERF_REG_X86_R11, 11},
	{PERF_REG_X86_R12, 12}, {PERF_REG_X86_R13, 13}, {PERF_REG_X86_R14, 14},
	{PERF_REG_X86_R15, 15},
};
#define UW_REG_IP PERF_REG_X86_IP
#define UW_REG_SP PERF_REG_X86_SP

/* Registers absent from the sample stay undefined for libdw; runs of present ones go at once. */
static bool uw_set_initial_registers(Dwfl_Thread *th, void *arg)
{
	const struct uw_sample *s = &((struct unwinder *)arg)->cur;
	Dwarf_Word w[ARRAY_SIZE(uw_regmap)];
	bool known[ARRAY_SIZE(uw_regmap)] = {false};
	size_t first = 0;
	uint64_t v;

	for (size_t i = 0; i < ARRAY_SIZE(uw_regmap); i++)
		if (reg_get(s->regs, s->mask, uw_regmap[i].perf, &v)) {
			w[uw_regmap[i].dwarf] = v;
			known[uw_regmap[i].dwarf] = true;
		}
	for (size_t i = 0; i <= ARRAY_SIZE(w); i++) {
		if (i < ARRAY_SIZE(w) && known[i])
			continue;
		if (i > first &&
		    !dwfl_thread_state_registers(th, (int)first, (unsigned)(i - first), w + first))
			return false;
		first = i + 1;
	}
	if (!reg_get(s->regs, s->mask, UW_REG_IP, &v))
		return false;
	dwfl_thread_state_register_pc(th, v);
	return true;
}
#else
static bool uw_set_initial_registers(Dwfl_Thread *th, void *arg)
{
	(void)th, (void)arg;
	return false;
}
#endif

static const Dwfl_Thread_Callbacks uw_thread_callbacks = {
	.next_thread = uw_next_thread,
	.get_thread = uw_get_thread,
	.memory_read = uw_memory_read,
	.set_initial_registers = uw_set_initial_registers,
};

/* A minimal ELF header naming this machine, for dwfl_attach_state's backend. */
static void arch_ehdr_init(Elf64_Ehdr *eh)
{
	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
#if defined(__x86_64__)
	eh->e_machine = EM_X86_64;
#endif
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
}

/* A fresh Dwfl, attached, with no modules yet.  False if libdw refuses. */
static bool uw_start(struct unwinder *u)
{
	uw_drop_dwfl(u);
	u->rebuild = false;
	u->dwfl = dwfl_begin(&uw_dwfl_callbacks);
	u->arch_elf = elf_memory((char *)&u->arch_ehdr, sizeof(u->arch_ehdr));
	if (u->dwfl && u->arch_elf &&
	    dwfl_attach_state(u->dwfl, u->arch_elf, 1, &uw_thread_callbacks, u))
		return true;
	uw_drop_dwfl(u);
	return false;
}

/* Bring the Dwfl up to date with the mapping list. */
static bool uw_sync(struct unwinder *u)
{
	if ((u->rebuild || !u->dwfl) && !uw_start(u))
		return false;
	if (u->nr_synced == u->nr_maps)
		return true;
	dwfl_report_begin_add(u->dwfl);
	for (; u->nr_synced < u->nr_maps; u->nr_synced++)
		mod_report(u, &u->maps[u->nr_synced]);
	dwfl_report_end(u->dwfl, NULL, NULL);
	return true;
}

/* ---- the API ---- */

struct unwinder *unwinder_new(void)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	elf_version(EV_CURRENT);
	arch_ehdr_init(&u->arch_ehdr);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	uw_drop_dwfl(u);
	free(u->mods);
	for (size_t i = 0; i < u->nr_maps; i++)
		free(u->maps[i].path);
	free(u->maps);
	free(u);
}

static bool map_path_usable(const char *path)
{
	size_t len = strnlen(path, UW_MAX_PATH);
	static const char deleted[] = " (deleted)";

	if (len == UW_MAX_PATH)
		return false;
	if (!strcmp(path, "[vdso]"))
		return true;
	if (path[0] != '/' || path[1] == '/') /* "//anon" and the like */
		return false;
	return len < sizeof(deleted) || strcmp(path + len - (sizeof(deleted) - 1), deleted);
}

/* Forget the mappings that [start, end) replaces. */
static void maps_remove_overlaps(struct unwinder *u, const char *path, uint64_t start, uint64_t end,
				 uint64_t pgoff)
{
	size_t i = 0;

	while (i < u->nr_maps) {
		struct uw_map *m = &u->maps[i];

		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		/* The same file at the same bias keeps its module valid. */
		if (i < u->nr_synced) {
			if (strcmp(m->path, path) || m->start - m->pgoff != start - pgoff)
				u->rebuild = true;
			u->nr_synced--;
		}
		free(m->path);
		memmove(m, m + 1, (u->nr_maps - i - 1) * sizeof(*m));
		u->nr_maps--;
	}
}

void unwinder_add_map(struct unwinder *u, const char *path, uint64_t start, uint64_t end,
		      uint64_t pgoff)
{
	struct uw_map *m;

	if (!u || !path || start >= end)
		return;
	for (size_t i = 0; i < u->nr_maps; i++) {
		m = &u->maps[i];
		if (m->start == start && m->end == end && m->pgoff == pgoff &&
		    !strcmp(m->path, path))
			return; /* reported twice (MMAP2 and /proc, say) */
	}
	maps_remove_overlaps(u, path, start, end, pgoff);
	/* Anonymous code still replaced what was mapped there, but is not kept. */
	if (!map_path_usable(path) || u->nr_maps >= UW_MAX_MAPS)
		return;
	ALLOC_GROW(u->maps, u->nr_maps + 1, u->alloc_maps);
	m = &u->maps[u->nr_maps++];
	m->path = xstrdup(path);
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
}

struct unwinder *unwinder_clone(const struct unwinder *u)
{
	struct unwinder *c;

	if (!u)
		return NULL;
	c = unwinder_new();
	if (u->nr_maps) {
		c->maps = xmalloc(st_mult(u->nr_maps, sizeof(*c->maps)));
		c->alloc_maps = u->nr_maps;
	}
	for (size_t i = 0; i < u->nr_maps; i++) {
		c->maps[i] = u->maps[i];
		c->maps[i].path = xstrdup(u->maps[i].path);
	}
	c->nr_maps = u->nr_maps;
	return c;
}

/* One frame from libdw: keep its PC unless the walk has gone wrong. */
static int uw_frame(Dwfl_Frame *f, void *arg)
{
	struct uw_sample *s = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(f, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	if (s->n > 0) {
		/* A caller's frame lies above its callee's: anything else is a loop. */
		if (dwfl_frame_reg(f, UW_DWARF_SP, &sp) == 0) {
			if (sp <= s->last_sp)
				return DWARF_CB_ABORT;
			s->last_sp = sp;
		}
		/* An exact PC (interrupted by a signal): +1 undoes the caller's -1. */
		if (activation)
			pc++;
	}
	s->ips[s->n++] = pc;
	return s->n < s->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int check_args(struct unwinder *u, const uint64_t *regs, uint64_t regs_mask,
		      const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max,
		      struct error *err)
{
	if (!u || !ips)
		return error_set(err, ERR_USAGE, "unwind: %s is NULL", !u ? "unwinder" : "ips");
	if (regs_mask && !regs)
		return error_set(err, ERR_USAGE, "unwind: regs is NULL with regs_mask %#" PRIx64,
				 regs_mask);
	if (stack_len && !stack)
		return error_set(err, ERR_USAGE, "unwind: stack is NULL with stack_len %zu",
				 stack_len);
	if (!max)
		return error_set(err, ERR_USAGE, "unwind: no room for frames (max 0)");
	return 0;
}

int unwinder_unwind(struct unwinder *u, uint32_t tid, const uint64_t *regs, uint64_t regs_mask,
		    const uint8_t *stack, size_t stack_len, uint64_t *ips, size_t max,
		    struct error *err)
{
	int ret = check_args(u, regs, regs_mask, stack, stack_len, ips, max, err);
#if defined(__x86_64__)
	uint64_t ip, sp;

	if (ret)
		return ret;
	if (!reg_get(regs, regs_mask, UW_REG_IP, &ip))
		return 0;
	ips[0] = ip;
	if (max == 1 || !reg_get(regs, regs_mask, UW_REG_SP, &sp) || !uw_sync(u))
		return 1;
	u->cur = (struct uw_sample){
		regs, regs_mask, stack, stack_len, sp, sp, ips, MIN(max, UW_MAX_FRAMES), 0};
	dwfl_getthread_frames(u->dwfl, tid && tid <= INT32_MAX ? (pid_t)tid : 1, uw_frame, &u->cur);
	ret = u->cur.n ? (int)u->cur.n : 1;
	memset(&u->cur, 0, sizeof(u->cur));
	return ret;
#else
	(void)tid;
	return ret ? ret
		   : error_set(err, ERR_UNSUPPORTED,
			       "unwind: DWARF unwinding of perf samples "
			       "is only implemented for x86-64");
#endif
}
