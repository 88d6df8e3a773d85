/* SPDX-License-Identifier: MIT */
/*
 * The agent's symbol table (symtab.h): a snapshot of the executable
 * mappings from /proc/self/maps, one module per mapped file, and per
 * module a sorted array of function symbols loaded on first use: which
 * file a mapping is, when to read it, and which symbol holds a pc.  The
 * files are read by symtab_elf.c, from disk, never through the mapped
 * image (but for the vDSO's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/stack/symtab.h"
#include "agent/stack/symtab_elf.h"
#include "util/banned.h"

#define MAX_LOADS 16 /* PT_LOAD headers kept per file */
#define SYM_BACK  8  /* symbols tried before the one nearest below a pc */

struct load {
	uint64_t offset, vaddr, filesz;
	uint32_t flags;
};

/* One mapped file (or the vDSO), shared by its mappings. */
struct module {
	char *path;
	uint64_t maps_dev, maps_ino; /* as /proc/self/maps shows them: the lookup key */
	dev_t dev;		     /* the file as fstat saw it at the snapshot */
	ino_t ino;
	bool ident, vdso, deleted, loaded, main;
	const uint8_t *mem; /* the vDSO image, or NULL */
	uint64_t memsize;
	uint8_t build_id[AGENT_BUILD_ID_MAX];
	size_t build_id_len;
	struct load loads[MAX_LOADS];
	size_t nloads;
	struct syms syms;
	struct fde_ranges fdes; /* loaded on the first unnamed pc */
	bool fdes_loaded;
	unsigned refs;
};

struct map {
	struct agent_mapping pub;
	struct module *mod;
	uint64_t bias; /* runtime address - file vaddr */
	bool bias_ok;
	uint64_t gen; /* the last snapshot that saw it */
};

struct agent_symtab {
	struct map *maps; /* live ones by start, then vanished ones, most recent first */
	size_t nmaps, nlive;
	struct module **mods;
	size_t nmods, allocmods;
	uint64_t gen, page;
};

/* One line of /proc/self/maps. */
struct maps_line {
	uint64_t start, limit, offset, dev, ino;
	bool exec, deleted;
	const char *path;
	size_t pathlen;
};

/* Open M's file: through /proc/self/map_files while MAP is mapped, else by path. */
static int module_open(const struct module *m, const struct map *map, struct src *s,
		       struct stat *st)
{
	char path[64];

	if (map && map->pub.live) {
		snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx",
			 (unsigned long)map->pub.start, (unsigned long)map->pub.limit);
		if (!src_open(s, path, st))
			return 0;
	}
	if (m->deleted)
		return -ENOENT;
	return src_open(s, m->path, st);
}

/* Whether the file at S is still the one seen at the snapshot. */
static bool module_same_file(const struct module *m, const struct src *s, const struct stat *st)
{
	uint8_t id[AGENT_BUILD_ID_MAX];

	if (m->ident && st->st_dev == m->dev && st->st_ino == m->ino)
		return true;
	return m->build_id_len && src_build_id(s, id) == m->build_id_len &&
	       !memcmp(id, m->build_id, m->build_id_len);
}

/* M's symbols: its .symtab, else its debug file's, else its .dynsym. */
static void module_symbols(struct module *m, const struct src *s)
{
	struct debug_query q = {m->path, m->build_id, m->build_id_len};
	struct elf e;

	if (elf_open(&e, s))
		return;
	if (!elf_sections(&e) && !elf_symbols(&e, SHT_SYMTAB, &m->syms))
		goto out;
	if (!debug_symbols(&e, &q, &m->syms))
		goto out;
	elf_symbols(&e, SHT_DYNSYM, &m->syms);
out:
	/* PLT stubs are named from the file itself, whoever gave the symbols. */
	if (e.sh)
		elf_plt_symbols(&e, &m->syms);
	elf_release(&e);
}

/* M's function ranges from its .eh_frame (symtab_code.c). */
static void module_fdes(struct module *m, const struct src *s)
{
	struct elf e;

	if (elf_open(&e, s))
		return;
	if (!elf_sections(&e))
		elf_fde_ranges(&e, &m->fdes);
	elf_release(&e);
}

/* Read M's file (or the vDSO's image) with READ, if it is still the file of the snapshot. */
static void module_read(struct module *m, const struct map *map,
			void (*read)(struct module *, const struct src *))
{
	struct src s = {.fd = -1};
	struct stat sb;

	if (m->vdso) {
		s = (struct src){.fd = -1, .mem = m->mem, .size = m->memsize};
		if (m->mem)
			read(m, &s);
	} else if (!module_open(m, map, &s, &sb)) {
		if (module_same_file(m, &s, &sb))
			read(m, &s);
		src_close(&s);
	}
}

static void module_load(struct agent_symtab *st, struct module *m, const struct map *map)
{
	m->loaded = true;
	module_read(m, map, module_symbols);
	for (size_t i = 0; i < st->nmaps; i++) {
		if (st->maps[i].mod == m)
			st->maps[i].pub.has_functions = m->syms.n != 0;
	}
}

/* Read the headers M's mappings need: PT_LOADs (for the bias) and the build-id. */
static void module_scan(struct module *m, const struct src *s)
{
	struct elf e;
	Elf64_Phdr *ph;
	size_t nph;

	if (elf_open(&e, s))
		return;
	ph = elf_phdrs(&e, &nph);
	for (size_t i = 0; ph && i < nph && m->nloads < MAX_LOADS; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_filesz <= UINT64_MAX - ph[i].p_offset)
			m->loads[m->nloads++] = (struct load){ph[i].p_offset, ph[i].p_vaddr,
							      ph[i].p_filesz, ph[i].p_flags};
	}
	m->build_id_len = elf_build_id(&e, ph, ph ? nph : 0, m->build_id);
	if (!m->build_id_len && !elf_sections(&e))
		m->build_id_len = elf_build_id(&e, NULL, 0, m->build_id);
	free(ph);
	elf_release(&e);
}

static struct module *module_new(const struct maps_line *l)
{
	struct module *m = calloc(1, sizeof(*m));
	char path[64];
	struct src s = {.fd = -1};
	struct stat st;

	if (!m || !(m->path = strndup(l->path, l->pathlen))) {
		free(m);
		return NULL;
	}
	m->maps_dev = l->dev;
	m->maps_ino = l->ino;
	m->deleted = l->deleted;
	m->vdso = !strcmp(m->path, "[vdso]");
	if (m->vdso) {
		if (l->start && l->start == getauxval(AT_SYSINFO_EHDR)) {
			m->mem = (const uint8_t *)(uintptr_t)l->start;
			m->memsize = l->limit - l->start;
			module_scan(m, &(struct src){.fd = -1, .mem = m->mem, .size = m->memsize});
		}
		return m;
	}
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)l->start,
		 (unsigned long)l->limit);
	if (src_open(&s, path, &st) && (l->deleted || src_open(&s, m->path, &st)))
		return m;
	m->ident = true;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	module_scan(m, &s);
	src_close(&s);
	return m;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	syms_clear(&m->syms);
	fde_ranges_clear(&m->fdes);
	free(m->path);
	free(m);
}

/* The file vaddr of MAP's start is that of its segment moved by the offset difference. */
static void map_set_bias(struct map *map, uint64_t page)
{
	const struct module *m = map->mod;
	const struct load *best = NULL;
	uint64_t off = map->pub.file_offset;

	for (size_t i = 0; i < m->nloads; i++) {
		const struct load *l = &m->loads[i];

		if ((l->offset & ~(page - 1)) > off || off >= l->offset + l->filesz)
			continue;
		if (!best || ((l->flags & PF_X) && !(best->flags & PF_X)))
			best = l;
	}
	map->bias_ok = best != NULL;
	if (best)
		map->bias = map->pub.start - (best->vaddr - best->offset + off);
}

static bool module_is(const struct module *m, const struct maps_line *l)
{
	return m->maps_ino == l->ino && m->maps_dev == l->dev && m->deleted == l->deleted &&
	       !strncmp(m->path, l->path, l->pathlen) && !m->path[l->pathlen];
}

static struct module *module_find(struct agent_symtab *st, const struct maps_line *l)
{
	struct module *m, **v;

	for (size_t i = 0; i < st->nmods; i++) {
		if (module_is(st->mods[i], l))
			return st->mods[i];
	}
	if (st->nmods == st->allocmods) {
		size_t n = st->allocmods ? st->allocmods * 2 : 64;

		v = realloc(st->mods, n * sizeof(*v));
		if (!v)
			return NULL;
		st->mods = v;
		st->allocmods = n;
	}
	m = module_new(l);
	if (m)
		st->mods[st->nmods++] = m;
	return m;
}

static bool parse_hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++) {
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)(*s <= '9' ? *s - '0' : *s - 'a' + 10);
	}
	if (s == *p)
		return false;
	*p = s;
	*v = x;
	return true;
}

/* "start-limit perms offset major:minor inode   path"; the path may hold spaces. */
static bool parse_line(const char *s, const char *end, struct maps_line *l)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	uint64_t major, minor;

	if (!parse_hex(&s, &l->start) || *s++ != '-' || !parse_hex(&s, &l->limit) || *s++ != ' ')
		return false;
	if (end - s < 5 || s[4] != ' ')
		return false;
	l->exec = s[2] == 'x';
	s += 5;
	if (!parse_hex(&s, &l->offset) || *s++ != ' ' || !parse_hex(&s, &major) || *s++ != ':' ||
	    !parse_hex(&s, &minor) || *s++ != ' ')
		return false;
	l->dev = major << 32 | minor;
	for (l->ino = 0; *s >= '0' && *s <= '9'; s++)
		l->ino = l->ino * 10 + (uint64_t)(*s - '0');
	while (s < end && *s == ' ')
		s++;
	l->path = s;
	l->pathlen = (size_t)(end - s);
	l->deleted = l->pathlen > dlen && !memcmp(end - dlen, deleted, dlen);
	if (l->deleted)
		l->pathlen -= dlen;
	return l->start < l->limit;
}

/* The whole of /proc/self/maps, NUL-terminated (caller frees). */
static int read_maps(char **out, size_t *len)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t n = 0, alloc = 0;
	char *buf = NULL;
	int rc = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (alloc - n < 4096) {
			size_t a = alloc ? alloc * 2 : 65536;
			char *v = a <= AGENT_SYMTAB_MAPS_MAX ? realloc(buf, a) : NULL;

			if (!v) {
				rc = a <= AGENT_SYMTAB_MAPS_MAX ? -ENOMEM : -EFBIG;
				break;
			}
			buf = v;
			alloc = a;
		}
		r = read(fd, buf + n, alloc - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : 0;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static bool map_is(const struct map *m, const struct maps_line *l)
{
	return m->pub.start == l->start && m->pub.limit == l->limit &&
	       m->pub.file_offset == l->offset && module_is(m->mod, l);
}

/* The index of the mapping L describes, or -1. */
static ssize_t map_find_same(const struct agent_symtab *st, const struct maps_line *l)
{
	size_t lo = 0, hi = st->nlive;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->maps[mid].pub.start < l->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < st->nlive && map_is(&st->maps[lo], l))
		return (ssize_t)lo;
	for (size_t i = st->nlive; i < st->nmaps; i++) {
		if (map_is(&st->maps[i], l))
			return (ssize_t)i;
	}
	return -1;
}

/* Whether line L is a mapping we keep: executable, of a file or the vDSO. */
static bool line_wanted(const struct maps_line *l)
{
	return l->exec && l->pathlen &&
	       (l->path[0] == '/' || (l->pathlen == 6 && !memcmp(l->path, "[vdso]", 6)));
}

/* Move the mappings of the new snapshot in BUF into NEXT; returns how many. */
static size_t take_live(struct agent_symtab *st, const char *buf, struct map *next, bool *taken)
{
	size_t n = 0;

	for (const char *s = buf, *e; *s && n < AGENT_SYMTAB_MAX_LIVE; s = *e ? e + 1 : e) {
		struct maps_line l;
		ssize_t old;

		e = strchr(s, '\n');
		e = e ? e : s + strlen(s);
		if (!parse_line(s, e, &l) || !line_wanted(&l))
			continue;
		old = map_find_same(st, &l);
		if (old >= 0 && !taken[old]) {
			next[n] = st->maps[old];
			taken[old] = true;
		} else {
			struct module *m = module_find(st, &l);

			if (!m)
				continue;
			next[n] = (struct map){.mod = m};
			next[n].pub.start = l.start;
			next[n].pub.limit = l.limit;
			next[n].pub.file_offset = l.offset;
			m->refs++;
			map_set_bias(&next[n], st->page);
		}
		next[n].gen = st->gen;
		next[n++].pub.live = true;
	}
	return n;
}

static int dead_cmp(const void *pa, const void *pb)
{
	const struct map *a = pa, *b = pb;

	if (a->gen != b->gen)
		return a->gen > b->gen ? -1 : 1;
	return a->pub.start < b->pub.start ? -1 : a->pub.start > b->pub.start;
}

/* Append the vanished mappings, most recently seen first, dropping the oldest. */
static size_t take_dead(struct agent_symtab *st, struct map *next, size_t n, const bool *taken)
{
	size_t first = n;

	for (size_t i = 0; i < st->nmaps; i++) {
		if (!taken[i]) {
			next[n] = st->maps[i];
			next[n++].pub.live = false;
		}
	}
	qsort(next + first, n - first, sizeof(*next), dead_cmp);
	while (n - first > AGENT_SYMTAB_MAX_DEAD)
		next[--n].mod->refs--;
	return n;
}

static void drop_unused_modules(struct agent_symtab *st)
{
	size_t o = 0;

	for (size_t i = 0; i < st->nmods; i++) {
		if (st->mods[i]->refs)
			st->mods[o++] = st->mods[i];
		else
			module_free(st->mods[i]);
	}
	st->nmods = o;
}

/* Fill the public fields that come from the module, and load what may vanish. */
static void finish_maps(struct agent_symtab *st, uint64_t died_gen)
{
	uintptr_t entry = getauxval(AT_ENTRY);

	for (size_t i = 0; i < st->nlive; i++) {
		if (entry >= st->maps[i].pub.start && entry < st->maps[i].pub.limit)
			st->maps[i].mod->main = true;
	}
	for (size_t i = 0; i < st->nmaps; i++) {
		struct map *m = &st->maps[i];

		m->pub.path = m->mod->path;
		m->pub.build_id = m->mod->build_id_len ? m->mod->build_id : NULL;
		m->pub.build_id_len = m->mod->build_id_len;
		m->pub.deleted = m->mod->deleted;
		m->pub.is_main = m->mod->main;
		m->pub.has_functions = m->mod->syms.n != 0;
	}
	/*
	 * A deleted file can only be read while it is mapped, and a module
	 * that just went away (dlclose) may be deleted next: load both now.
	 */
	for (size_t i = 0; i < st->nmaps; i++) {
		struct map *m = &st->maps[i];

		if (!m->mod->loaded && (m->pub.live ? m->mod->deleted : m->gen == died_gen))
			module_load(st, m->mod, m);
	}
}

int agent_symtab_refresh(struct agent_symtab *st)
{
	size_t len = 0, nlines = 1, cap;
	struct map *next;
	bool *taken;
	char *buf = NULL;
	int rc = read_maps(&buf, &len);

	if (rc)
		return rc;
	for (size_t i = 0; i < len; i++)
		nlines += buf[i] == '\n';
	cap = st->nmaps + (nlines < AGENT_SYMTAB_MAX_LIVE ? nlines : AGENT_SYMTAB_MAX_LIVE);
	next = calloc(cap, sizeof(*next));
	taken = calloc(st->nmaps + 1, sizeof(*taken));
	if (!next || !taken) {
		free(next);
		free(taken);
		free(buf);
		return -ENOMEM;
	}
	st->gen++;
	st->nlive = take_live(st, buf, next, taken);
	st->nmaps = take_dead(st, next, st->nlive, taken);
	free(st->maps);
	st->maps = next;
	drop_unused_modules(st);
	finish_maps(st, st->gen - 1);
	free(taken);
	free(buf);
	return 0;
}

struct agent_symtab *agent_symtab_new(void)
{
	struct agent_symtab *st = calloc(1, sizeof(*st));
	long page = sysconf(_SC_PAGESIZE);
	int rc;

	if (!st)
		return NULL;
	st->page = page > 0 ? (uint64_t)page : 4096;
	rc = agent_symtab_refresh(st);
	if (rc) {
		agent_symtab_free(st);
		errno = -rc;
		return NULL;
	}
	return st;
}

void agent_symtab_free(struct agent_symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nmods; i++)
		module_free(st->mods[i]);
	free(st->mods);
	free(st->maps);
	free(st);
}

/* Live mappings first: their address ranges are current. */
static ssize_t map_of_pc(const struct agent_symtab *st, uintptr_t pc)
{
	size_t lo = 0, hi = st->nlive;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->maps[mid].pub.start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < st->maps[lo - 1].pub.limit)
		return (ssize_t)lo - 1;
	for (size_t i = st->nlive; i < st->nmaps; i++) {
		if (pc >= st->maps[i].pub.start && pc < st->maps[i].pub.limit)
			return (ssize_t)i;
	}
	return -1;
}

/*
 * The symbol holding file vaddr ADDR.  One without a size extends to the
 * next symbol; a few symbols back are tried because small ones may sit
 * inside a bigger function (entry points of hand-written assembly).
 */
static const struct sym *sym_of(const struct module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->syms.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms.v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k > 0 && lo - k < SYM_BACK; k--) {
		const struct sym *s = &m->syms.v[k - 1];

		if (s->size ? addr - s->addr < s->size : k == lo)
			return s;
	}
	return NULL;
}

int agent_symtab_lookup(struct agent_symtab *st, uintptr_t pc, const char **name, uintptr_t *start)
{
	ssize_t i = st ? map_of_pc(st, pc) : -1;
	const struct sym *s = NULL;
	struct map *m;

	if (i >= 0) {
		m = &st->maps[i];
		if (!m->mod->loaded)
			module_load(st, m->mod, m);
		if (m->bias_ok)
			s = sym_of(m->mod, pc - m->bias);
	}
	if (name)
		*name = s ? m->mod->syms.strs + s->name : NULL;
	if (start)
		*start = s ? (uintptr_t)(s->addr + m->bias) : 0;
	return (int)i;
}

int agent_symtab_unnamed(struct agent_symtab *st, uintptr_t pc, uint64_t *vaddr)
{
	ssize_t i = st ? map_of_pc(st, pc) : -1;
	struct map *m;
	uint64_t start;

	if (i < 0 || !st->maps[i].bias_ok)
		return -1;
	m = &st->maps[i];
	if (!m->mod->fdes_loaded) {
		m->mod->fdes_loaded = true;
		module_read(m->mod, m, module_fdes);
	}
	*vaddr = pc - m->bias;
	if (fde_ranges_find(&m->mod->fdes, *vaddr, &start))
		*vaddr = start;
	return (int)i;
}

size_t agent_symtab_nmappings(const struct agent_symtab *st)
{
	return st ? st->nmaps : 0;
}

const struct agent_mapping *agent_symtab_mapping(const struct agent_symtab *st, size_t i)
{
	return st && i < st->nmaps ? &st->maps[i].pub : NULL;
}

/* ---- a symtab of one file, for the fuzz target and tests (COLD) ---- */

struct agent_symtab *agent_symtab_new_file(const char *path, uintptr_t start, uintptr_t limit,
					   uint64_t file_offset)
{
	struct maps_line l = {.start = start, .limit = limit, .offset = file_offset, .exec = true};
	long page = sysconf(_SC_PAGESIZE);
	struct agent_symtab *st;
	struct module *m = NULL;

	if (!path || path[0] != '/' || start >= limit) {
		errno = EINVAL;
		return NULL;
	}
	l.path = path;
	l.pathlen = strlen(path);
	st = calloc(1, sizeof(*st));
	if (st && (st->maps = calloc(1, sizeof(*st->maps)))) {
		st->page = page > 0 ? (uint64_t)page : 4096;
		st->gen = 1;
		m = module_find(st, &l);
	}
	if (!m) {
		agent_symtab_free(st);
		errno = ENOMEM;
		return NULL;
	}
	/* What take_live does for a new mapping. */
	st->maps[0] = (struct map){.mod = m, .gen = st->gen};
	st->maps[0].pub.start = start;
	st->maps[0].pub.limit = limit;
	st->maps[0].pub.file_offset = file_offset;
	st->maps[0].pub.live = true;
	m->refs++;
	map_set_bias(&st->maps[0], st->page);
	st->nmaps = st->nlive = 1;
	finish_maps(st, 0);
	return st;
}
