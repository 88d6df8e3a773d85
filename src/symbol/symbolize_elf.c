/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "symbol/symbolize_elf.h"

/*
 * ELF side of the symbolizer: open a mapped file, read its build-id and
 * .gnu_debuglink, find a separate debug file, and build one sorted table
 * of function symbols from the best symbol table available.
 */

#define DEBUG_ROOT    "/usr/lib/debug"
#define MAX_BUILD_ID  64 /* bytes; GNU build-ids are 20 */
#define MAX_DEBUGLINK 4096
#define PAGE_MASK_4K  (~(uint64_t)0xfff)

/* Whether the section and program header tables lie inside the file. */
static bool elf_headers_fit(int fd, const GElf_Ehdr *eh)
{
	struct stat st;
	uint64_t size;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 0)
		return false;
	size = (uint64_t)st.st_size;
	return eh->e_shoff <= size &&
	       (uint64_t)eh->e_shnum * eh->e_shentsize <= size - eh->e_shoff &&
	       eh->e_phoff <= size && (uint64_t)eh->e_phnum * eh->e_phentsize <= size - eh->e_phoff;
}

static Elf *elf_open_fd(const char *path, int *fd)
{
	Elf *elf;
	GElf_Ehdr eh;
	size_t n;

	struct stat st;

	/* O_NONBLOCK: opening a FIFO must not hang; only regular files are read. */
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (*fd < 0)
		return NULL;
	elf = fstat(*fd, &st) || !S_ISREG(st.st_mode) ? NULL
						      : elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	/* A truncated file fails here: its section headers are out of reach. */
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    !elf_headers_fit(*fd, &eh) || elf_getshdrnum(elf, &n) || elf_getshdrstrndx(elf, &n)) {
		elf_end(elf);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	return elf;
}

Elf_Scn *sym_elf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static Elf_Scn *elf_section_type(Elf *elf, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	}
	return NULL;
}

/* The GNU build-id note as lowercase hex (caller frees), or NULL. */
static char *elf_build_id(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			const unsigned char *p = (const unsigned char *)data->d_buf + doff;
			char *hex;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + noff, "GNU", 4) || !nh.n_descsz ||
			    nh.n_descsz > MAX_BUILD_ID)
				continue;
			hex = xmalloc(nh.n_descsz * 2 + 1);
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", p[i]);
			return hex;
		}
	}
	return NULL;
}

static bool file_crc(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	ssize_t n;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	/* Never read a FIFO or device a hostile link might name. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	close(fd);
	*crc = (uint32_t)c;
	return n == 0;
}

static bool debug_try(struct sym_dso *d, char *path)
{
	if (strcmp(path, d->path) && (d->dbg_elf = elf_open_fd(path, &d->dbg_fd))) {
		d->dbg_path = path;
		return true;
	}
	free(path);
	return false;
}

static bool debug_by_build_id(struct sym_dso *d)
{
	struct strbuf sb;

	if (!d->build_id || strlen(d->build_id) < 3)
		return false;
	strbuf_init(&sb, 0);
	strbuf_addf(&sb, "%s/.build-id/%.2s/%s.debug", DEBUG_ROOT, d->build_id, d->build_id + 2);
	return debug_try(d, strbuf_detach(&sb, NULL));
}

static bool elf_native_order(Elf *elf)
{
	const char *ident = elf_getident(elf, NULL);
	const uint16_t probe = 1;
	int host = *(const unsigned char *)&probe ? ELFDATA2LSB : ELFDATA2MSB;

	return !ident || ident[EI_DATA] == host;
}

/* .gnu_debuglink: NUL-terminated name, padding to 4, then a CRC-32 of the debug file. */
static bool debug_by_link(struct sym_dso *d)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(d->elf, ".gnu_debuglink", &sh);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	const char *name, *slash;
	size_t len, off, dirlen;
	uint32_t want, got;

	if (!data || !data->d_buf || data->d_size < 8 || data->d_size > MAX_DEBUGLINK)
		return false;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	off = (len + 4) & ~(size_t)3;
	if (!len || off + 4 > data->d_size || strchr(name, '/'))
		return false;
	memcpy(&want, (const char *)data->d_buf + off, 4);
	if (!elf_native_order(d->elf))
		want = __builtin_bswap32(want);
	slash = strrchr(d->path, '/');
	dirlen = slash ? (size_t)(slash - d->path) : 0;
	for (int i = 0; i < 3; i++) {
		struct strbuf sb;
		char *path;

		strbuf_init(&sb, 0);
		strbuf_addf(&sb, "%s%.*s%s/%s", i == 2 ? DEBUG_ROOT : "", (int)dirlen, d->path,
			    i == 1 ? "/.debug" : "", name);
		path = strbuf_detach(&sb, NULL);
		if (!file_crc(path, &got) || got != want) {
			free(path);
			continue;
		}
		if (debug_try(d, path))
			return true;
	}
	return false;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Same start: the sized one first, then by binding, so it survives the dedup. */
	if ((x->end > x->start) != (y->end > y->start))
		return x->end > x->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Among aliases at one address, the global name wins, then weak, then
 * local; among those, the name with the fewest leading underscores
 * ("clone3" over "__clone3" and libc's internal "__GI___clone3").
 */
static unsigned sym_rank(int bind, const char *name)
{
	unsigned under = (unsigned)strspn(name, "_");

	if (!strncmp(name, "__GI_", 5))
		under += 8;
	return (bind == STB_GLOBAL ? 0u : bind == STB_WEAK ? 1u : 2u) * 64 + MIN(under, 63u);
}

static size_t symtab_read(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_dso *d,
			  size_t *alloc)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = 0, count;

	if (!data || !sh->sh_entsize)
		return 0;
	count = data->d_size / sh->sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value || !(name = elf_strptr(elf, sh->sh_link, sym.st_name)) || !*name)
			continue;
		ALLOC_GROW(d->syms, d->nr_syms + 1, *alloc);
		d->syms[d->nr_syms++] =
			(struct sym_sym){sym.st_value, sym.st_value + sym.st_size, name, NULL,
					 sym_rank(GELF_ST_BIND(sym.st_info), name)};
		n++;
	}
	return n;
}

/* Sort, drop aliases, and give size-0 symbols the room up to the next one. */
void sym_dso_finish(struct sym_dso *d)
{
	size_t out = 0;

	if (!d->nr_syms)
		return;
	qsort(d->syms, d->nr_syms, sizeof(*d->syms), sym_cmp);
	for (size_t i = 0; i < d->nr_syms; i++) {
		if (out && d->syms[out - 1].start == d->syms[i].start)
			continue;
		d->syms[out++] = d->syms[i];
	}
	d->nr_syms = out;
	for (size_t i = 0; i < out; i++) {
		uint64_t next = i + 1 < out ? d->syms[i + 1].start : UINT64_MAX;

		/* Size 0, or overlapping the next: the range ends where the next starts. */
		if (d->syms[i].end <= d->syms[i].start || d->syms[i].end > next)
			d->syms[i].end = next;
	}
}

static bool minidebug_open(struct sym_dso *d)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(d->elf, ".gnu_debugdata", &sh);
	Elf_Data *data = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;

	if (data && data->d_buf && data->d_size)
		d->mini_elf = sym_minidebug_open(data->d_buf, data->d_size, &d->mini_buf);
	return d->mini_elf != NULL;
}

static void syms_load(struct sym_dso *d)
{
	size_t alloc = 0;
	GElf_Shdr sh;
	Elf_Scn *scn;

	if ((scn = elf_section_type(d->elf, SHT_SYMTAB, &sh)) &&
	    symtab_read(d->elf, scn, &sh, d, &alloc))
		d->has_symtab = true;
	else if (d->dbg_elf && (scn = elf_section_type(d->dbg_elf, SHT_SYMTAB, &sh)) &&
		 symtab_read(d->dbg_elf, scn, &sh, d, &alloc))
		d->has_symtab = true;
	else {
		/* MiniDebugInfo's .symtab holds only what .dynsym lacks: read both. */
		if (minidebug_open(d) && (scn = elf_section_type(d->mini_elf, SHT_SYMTAB, &sh)) &&
		    symtab_read(d->mini_elf, scn, &sh, d, &alloc))
			d->has_symtab = true;
		if ((scn = elf_section_type(d->elf, SHT_DYNSYM, &sh)))
			symtab_read(d->elf, scn, &sh, d, &alloc);
	}
	sym_plt_read(d, &alloc);
	sym_dso_finish(d);
}

static bool build_id_valid(const char *hex)
{
	size_t len = strlen(hex);

	if (len < 3 || len > 2 * MAX_BUILD_ID)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)hex[i]))
			return false;
	}
	return true;
}

/*
 * The file that ran is gone or replaced: its debug file, found by the
 * recorded build-id, stands in (it keeps the program headers and .symtab).
 */
static enum sym_reason dso_from_debug(struct sym_dso *d, const char *hex, enum sym_reason why)
{
	elf_end(d->elf);
	d->elf = NULL;
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	free(d->build_id);
	d->build_id = xstrdup(hex);
	for (char *p = d->build_id; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (!debug_by_build_id(d))
		return why;
	d->elf = d->dbg_elf;
	d->fd = d->dbg_fd;
	d->dbg_elf = NULL;
	d->dbg_fd = -1;
	d->from_debug = true;
	syms_load(d);
	return SYM_OK;
}

static enum sym_reason dso_open(struct sym_dso *d, const char *build_id_hex)
{
	size_t len = strlen(d->path);
	struct stat st;

	if (len > 10 && !strcmp(d->path + len - 10, " (deleted)"))
		return SYM_DELETED;
	if (stat(d->path, &st) || !S_ISREG(st.st_mode))
		return SYM_NO_FILE;
	if (!(d->elf = elf_open_fd(d->path, &d->fd)))
		return access(d->path, R_OK) ? SYM_NO_FILE : SYM_NOT_ELF;
	d->build_id = elf_build_id(d->elf);
	if (build_id_hex && (!d->build_id || strcasecmp(build_id_hex, d->build_id)))
		return SYM_BUILD_ID;
	if (!debug_by_build_id(d))
		debug_by_link(d);
	syms_load(d);
	return SYM_OK;
}

/* What a user debugging "why is this frame unnamed" wants: where the names came from. */
static void dso_debug_line(const struct sym_dso *d)
{
	if (d->state != SYM_OK) {
		debug(DEBUG_SYMBOL, "%s: %s", d->path, sym_reason_str(d->state));
		return;
	}
	if (d->text) {
		debug(DEBUG_SYMBOL, "%s: %zu symbols from a text map", d->path, d->nr_syms);
		return;
	}
	debug(DEBUG_SYMBOL, "%s: %zu symbols from %s%s, build-id %s, %s%s", d->path, d->nr_syms,
	      d->has_symtab ? ".symtab" : ".dynsym", d->mini_elf ? " and MiniDebugInfo" : "",
	      d->build_id ? d->build_id : "none",
	      d->from_debug ? "file gone, read from its debug file "
	      : d->dbg_path ? "debug file "
			    : "no debug file",
	      d->from_debug || d->dbg_path ? d->dbg_path : "");
}

void sym_dso_load(struct sym_dso *d, const char *build_id_hex)
{
	d->fd = d->dbg_fd = -1;
	d->text_names = (struct arena)ARENA_INIT;
	if (sym_text_load(d)) {
		dso_debug_line(d);
		return;
	}
	if (build_id_hex && !build_id_valid(build_id_hex)) {
		d->state = SYM_BUILD_ID;
		dso_debug_line(d);
		return;
	}
	d->state = dso_open(d, build_id_hex);
	if (d->state != SYM_OK && d->state != SYM_NOT_ELF && build_id_hex)
		d->state = dso_from_debug(d, build_id_hex, d->state);
	dso_debug_line(d);
}

void sym_dso_release(struct sym_dso *d)
{
	elf_end(d->mini_elf);
	free(d->mini_buf);
	elf_end(d->dbg_elf);
	elf_end(d->elf);
	if (d->dbg_fd >= 0)
		close(d->dbg_fd);
	if (d->fd >= 0)
		close(d->fd);
	free(d->dbg_path);
	free(d->build_id);
	free(d->key_bid);
	free(d->syms);
	free(d->path);
	arena_release(&d->text_names);
}

struct sym_sym *sym_dso_find(struct sym_dso *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->nr_syms;

	if (d->last && vaddr >= d->last->start && vaddr < d->last->end)
		return d->last;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= d->syms[lo - 1].end)
		return NULL;
	d->last = &d->syms[lo - 1];
	return d->last;
}

/*
 * A debug file standing in for the file keeps p_vaddr but not p_offset or
 * p_filesz.  Assume the usual layout, vaddr - offset constant from the
 * first PT_LOAD (true of GNU ld and lld output for text), and accept it
 * only if the mapping then lands in an executable PT_LOAD.
 */
static int debug_bias(struct sym_dso *d, size_t n, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	uint64_t base = UINT64_MAX, vaddr;
	GElf_Phdr ph;

	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(d->elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			base = ph.p_vaddr & PAGE_MASK_4K;
			break;
		}
	}
	if (base == UINT64_MAX)
		return -1;
	vaddr = base + pgoff;
	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(d->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) && (ph.p_vaddr & PAGE_MASK_4K) <= vaddr &&
		    vaddr < ph.p_vaddr + ph.p_memsz) {
			*bias = start - vaddr;
			return 0;
		}
	}
	return -1;
}

int sym_dso_bias(struct sym_dso *d, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	bool found = false;
	size_t n;

	if (d->text) {
		*bias = 0;
		return 0;
	}
	if (!d->elf || elf_getphdrnum(d->elf, &n))
		return -1;
	if (d->from_debug)
		return debug_bias(d, n, start, pgoff, bias);
	/*
	 * lld lets segments share a file page (text starts in the page that
	 * ends the read-only segment): of the PT_LOADs holding pgoff, the
	 * executable one is the mapping's.
	 */
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(d->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_offset & PAGE_MASK_4K) > pgoff || pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		if (!found || (ph.p_flags & PF_X))
			*bias = start - (ph.p_vaddr + pgoff - ph.p_offset);
		found = true;
		if (ph.p_flags & PF_X)
			break;
	}
	return found ? 0 : -1;
}
