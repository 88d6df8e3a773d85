/* SPDX-License-Identifier: MIT */
/*
 * The ELF side of the agent's symbol table (symtab_elf.h): headers,
 * build-id notes, function symbols from .symtab or .dynsym, and the
 * separate debug file found by build-id or .gnu_debuglink.  Every file
 * read goes through src_read(), which bounds-checks against the size seen
 * at open and uses pread, so a file truncated under us yields an error,
 * never SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/stack/symtab_elf.h"
#include "util/banned.h"

_Static_assert(sizeof(void *) == 8 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "symtab reads native ELF64 little-endian files only");

#define DEBUG_ROOT   "/usr/lib/debug"
#define MAX_PHDRS    1024
#define MAX_SHDRS    65536
#define MAX_NOTES    (64u << 10) /* bytes of one note segment or section */
#define MAX_SHSTRTAB (1u << 20)
#define MAX_SYMS     (32u << 20)
#define MAX_SYMSIZE  ((1u << 30) - 1)
#define SYM_CHUNK    256

static int src_read(const struct src *s, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (s->mem) {
		memcpy(buf, s->mem + off, len);
		return 0;
	}
	while (len) {
		ssize_t n = pread(s->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Open a regular file; O_NONBLOCK so that a FIFO put at the path cannot hang us. */
int src_open(struct src *s, const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_size <= 0) {
		close(fd);
		return -ENOEXEC;
	}
	s->fd = fd;
	s->mem = NULL;
	s->size = (uint64_t)st->st_size;
	return 0;
}

void src_close(struct src *s)
{
	if (!s->mem && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int elf_open(struct elf *e, const struct src *s)
{
	const unsigned char *id = e->eh.e_ident;

	memset(e, 0, sizeof(*e));
	e->src = *s;
	if (src_read(s, 0, &e->eh, sizeof(e->eh)))
		return -ENOEXEC;
	if (memcmp(id, ELFMAG, SELFMAG) || id[EI_CLASS] != ELFCLASS64 ||
	    id[EI_DATA] != ELFDATA2LSB || (e->eh.e_type != ET_EXEC && e->eh.e_type != ET_DYN))
		return -ENOEXEC;
	return 0;
}

void elf_release(struct elf *e)
{
	free(e->sh);
	free(e->shstr);
	e->sh = NULL;
	e->shstr = NULL;
}

/* The program headers (caller frees), or NULL when absent or malformed. */
Elf64_Phdr *elf_phdrs(const struct elf *e, size_t *n)
{
	Elf64_Phdr *ph;

	*n = e->eh.e_phnum;
	if (!*n || *n > MAX_PHDRS || e->eh.e_phentsize != sizeof(*ph))
		return NULL;
	ph = malloc(*n * sizeof(*ph));
	if (ph && src_read(&e->src, e->eh.e_phoff, ph, *n * sizeof(*ph))) {
		free(ph);
		ph = NULL;
	}
	return ph;
}

/* Read the section headers and names; the names are optional. */
int elf_sections(struct elf *e)
{
	uint64_t n = e->eh.e_shnum, idx = e->eh.e_shstrndx;
	Elf64_Shdr s0;

	if (!e->eh.e_shoff || e->eh.e_shentsize != sizeof(s0))
		return -ENOEXEC;
	if (src_read(&e->src, e->eh.e_shoff, &s0, sizeof(s0)))
		return -ENOEXEC;
	if (!n)
		n = s0.sh_size; /* more than SHN_LORESERVE sections */
	if (!n || n > MAX_SHDRS)
		return -ENOEXEC;
	e->sh = malloc(n * sizeof(*e->sh));
	if (!e->sh)
		return -ENOMEM;
	if (src_read(&e->src, e->eh.e_shoff, e->sh, n * sizeof(*e->sh))) {
		free(e->sh);
		e->sh = NULL;
		return -ENOEXEC;
	}
	e->shnum = n;
	if (idx == SHN_XINDEX)
		idx = s0.sh_link;
	if (idx && idx < n && e->sh[idx].sh_type == SHT_STRTAB &&
	    e->sh[idx].sh_size <= MAX_SHSTRTAB) {
		e->shstr = malloc(e->sh[idx].sh_size + 1);
		if (e->shstr &&
		    src_read(&e->src, e->sh[idx].sh_offset, e->shstr, e->sh[idx].sh_size)) {
			free(e->shstr);
			e->shstr = NULL;
		}
		if (e->shstr) {
			e->shstrsize = e->sh[idx].sh_size;
			e->shstr[e->shstrsize] = '\0';
		}
	}
	return 0;
}

const Elf64_Shdr *elf_section_named(const struct elf *e, const char *name)
{
	for (size_t i = 1; e->shstr && i < e->shnum; i++) {
		if (e->sh[i].sh_name < e->shstrsize && !strcmp(e->shstr + e->sh[i].sh_name, name))
			return &e->sh[i];
	}
	return NULL;
}

char *elf_read_section(const struct elf *e, const Elf64_Shdr *sh, uint64_t max, size_t *len)
{
	char *buf;

	if (sh->sh_type == SHT_NOBITS || (sh->sh_flags & SHF_COMPRESSED) || sh->sh_size > max)
		return NULL;
	buf = malloc(sh->sh_size + 1);
	if (buf && src_read(&e->src, sh->sh_offset, buf, sh->sh_size)) {
		free(buf);
		return NULL;
	}
	if (buf) {
		buf[sh->sh_size] = '\0';
		*len = sh->sh_size;
	}
	return buf;
}

/* The NT_GNU_BUILD_ID note in LEN bytes of notes aligned to ALIGN; its length or 0. */
static size_t note_build_id(const uint8_t *p, size_t len, size_t align, uint8_t *out)
{
	size_t off = 0;

	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc;

		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		name = ((size_t)nh.n_namesz + align - 1) & ~(align - 1);
		desc = ((size_t)nh.n_descsz + align - 1) & ~(align - 1);
		if (name > len - off || nh.n_descsz > len - off - name)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + off, "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= AGENT_BUILD_ID_MAX) {
			memcpy(out, p + off + name, nh.n_descsz);
			return nh.n_descsz;
		}
		off += name + (desc < len - off - name ? desc : len - off - name);
	}
	return 0;
}

static size_t notes_at(const struct elf *e, uint64_t off, uint64_t size, uint64_t align,
		       uint8_t *out)
{
	uint8_t *buf;
	size_t n = 0;

	if (!size || size > MAX_NOTES)
		return 0;
	buf = malloc(size);
	if (buf && !src_read(&e->src, off, buf, size))
		n = note_build_id(buf, size, align == 8 ? 8 : 4, out);
	free(buf);
	return n;
}

/* The build-id from the PT_NOTE segments, else from SHT_NOTE sections (if read). */
size_t elf_build_id(const struct elf *e, const Elf64_Phdr *ph, size_t nph, uint8_t *out)
{
	size_t n = 0;

	for (size_t i = 0; i < nph && !n; i++) {
		if (ph[i].p_type == PT_NOTE)
			n = notes_at(e, ph[i].p_offset, ph[i].p_filesz, ph[i].p_align, out);
	}
	for (size_t i = 1; i < e->shnum && !n; i++) {
		if (e->sh[i].sh_type == SHT_NOTE)
			n = notes_at(e, e->sh[i].sh_offset, e->sh[i].sh_size, e->sh[i].sh_addralign,
				     out);
	}
	return n;
}

/* The build-id of a file with no headers read yet (debug files, re-opened files). */
size_t src_build_id(const struct src *s, uint8_t *out)
{
	struct elf e;
	Elf64_Phdr *ph;
	size_t nph, n;

	if (elf_open(&e, s))
		return 0;
	ph = elf_phdrs(&e, &nph);
	n = elf_build_id(&e, ph, ph ? nph : 0, out);
	if (!n && !elf_sections(&e))
		n = elf_build_id(&e, NULL, 0, out);
	free(ph);
	elf_release(&e);
	return n;
}

static int sym_rank(const Elf64_Sym *s)
{
	switch (ELF64_ST_BIND(s->st_info)) {
	case STB_GLOBAL: return 0;
	case STB_WEAK: return 1;
	default: return 2;
	}
}

static bool sym_wanted(const Elf64_Sym *s, const char *strs, size_t strsize)
{
	unsigned t = ELF64_ST_TYPE(s->st_info);

	return (t == STT_FUNC || t == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value &&
	       s->st_name < strsize && strs[s->st_name];
}

static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * By address; among aliases the best name first: global over weak over
 * local, then fewer leading underscores (qsort over __libc_qsort).
 */
static int sym_cmp(const void *pa, const void *pb, void *strs)
{
	const struct sym *a = pa, *b = pb;
	const char *na = (const char *)strs + a->name, *nb = (const char *)strs + b->name;
	size_t ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return (int)a->rank - (int)b->rank;
	ua = underscores(na);
	ub = underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(na, nb);
}

void syms_finish(struct syms *tab)
{
	size_t o = 0;
	struct sym *v;

	qsort_r(tab->v, tab->n, sizeof(*tab->v), sym_cmp, tab->strs);
	for (size_t i = 0; i < tab->n; i++) {
		if (o && tab->v[o - 1].addr == tab->v[i].addr) {
			if (!tab->v[o - 1].size)
				tab->v[o - 1].size = tab->v[i].size;
			continue;
		}
		tab->v[o++] = tab->v[i];
	}
	tab->n = o;
	v = o ? realloc(tab->v, o * sizeof(*v)) : NULL;
	if (v || !o) {
		free(o ? NULL : tab->v);
		tab->v = v;
	}
}

static int syms_push(struct syms *tab, size_t *alloc, const Elf64_Sym *s)
{
	char *name = tab->strs + s->st_name, *at = strchr(name + 1, '@');

	/* A symbol version ("memcpy@@GLIBC_2.14") is not part of the function's name. */
	if (at)
		*at = '\0';
	if (tab->n == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 1024;
		struct sym *v;

		if (n > MAX_SYMS)
			return -E2BIG;
		v = realloc(tab->v, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tab->v = v;
		*alloc = n;
	}
	tab->v[tab->n++] = (struct sym){
		.addr = s->st_value,
		.name = (uint32_t)s->st_name,
		.size = s->st_size > MAX_SYMSIZE ? MAX_SYMSIZE : (uint32_t)s->st_size,
		.rank = (uint32_t)sym_rank(s),
	};
	return 0;
}

void syms_clear(struct syms *tab)
{
	free(tab->v);
	free(tab->strs);
	tab->v = NULL;
	tab->strs = NULL;
	tab->n = tab->strsize = 0;
}

int elf_symbols(const struct elf *e, uint32_t type, struct syms *out)
{
	const Elf64_Shdr *sh = NULL;
	Elf64_Sym chunk[SYM_CHUNK];
	size_t alloc = 0, n;
	int rc = 0;

	for (size_t i = 1; i < e->shnum && !sh; i++)
		sh = e->sh[i].sh_type == type ? &e->sh[i] : NULL;
	if (!sh || sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= e->shnum ||
	    e->sh[sh->sh_link].sh_type != SHT_STRTAB || sh->sh_size > AGENT_SYMTAB_SECTION_MAX)
		return -ENOENT;
	out->strs =
		elf_read_section(e, &e->sh[sh->sh_link], AGENT_SYMTAB_SECTION_MAX, &out->strsize);
	if (!out->strs)
		return -ENOENT;
	n = sh->sh_size / sizeof(Elf64_Sym);
	for (size_t i = 0; i < n && !rc; i += SYM_CHUNK) {
		size_t k = n - i < SYM_CHUNK ? n - i : SYM_CHUNK;

		rc = src_read(&e->src, sh->sh_offset + i * sizeof(Elf64_Sym), chunk,
			      k * sizeof(Elf64_Sym));
		for (size_t j = 0; j < k && !rc; j++) {
			if (sym_wanted(&chunk[j], out->strs, out->strsize))
				rc = syms_push(out, &alloc, &chunk[j]);
		}
	}
	if (!rc && out->n)
		syms_finish(out);
	if (rc || !out->n) {
		syms_clear(out);
		return rc ? rc : -ENOENT;
	}
	return 0;
}

/* Whether the file at S is Q's debug file: same build-id, else the debuglink CRC. */
static bool debug_matches(const struct debug_query *q, const struct src *s, bool check_crc,
			  uint32_t crc)
{
	uint8_t id[AGENT_BUILD_ID_MAX], buf[1 << 16];
	uLong c = crc32(0, Z_NULL, 0);

	if (q->build_id_len)
		return src_build_id(s, id) == q->build_id_len &&
		       !memcmp(id, q->build_id, q->build_id_len);
	if (!check_crc)
		return false;
	for (uint64_t off = 0; off < s->size;) {
		size_t k = s->size - off < sizeof(buf) ? (size_t)(s->size - off) : sizeof(buf);

		if (src_read(s, off, buf, k))
			return false;
		c = crc32(c, buf, (uInt)k);
		off += k;
	}
	return (uint32_t)c == crc;
}

static int debug_try(const struct debug_query *q, const char *path, bool check_crc, uint32_t crc,
		     struct syms *out)
{
	struct src s = {.fd = -1};
	struct stat st;
	struct elf e;
	int rc;

	if (!strcmp(path, q->path) || src_open(&s, path, &st))
		return -ENOENT;
	rc = debug_matches(q, &s, check_crc, crc) ? elf_open(&e, &s) : -ENOENT;
	if (!rc) {
		rc = elf_sections(&e);
		if (!rc)
			rc = elf_symbols(&e, SHT_SYMTAB, out);
		elf_release(&e);
	}
	src_close(&s);
	return rc;
}

/* The .symtab of Q's separate debug file: by build-id, then by .gnu_debuglink. */
int debug_symbols(const struct elf *e, const struct debug_query *q, struct syms *out)
{
	char path[PATH_MAX], hex[2 * AGENT_BUILD_ID_MAX + 1], *link = NULL;
	const Elf64_Shdr *sh = elf_section_named(e, ".gnu_debuglink");
	const char *slash = strrchr(q->path, '/');
	int dirlen = slash ? (int)(slash - q->path) : 0, rc = -ENOENT;
	size_t len = 0, n;
	uint32_t crc;

	for (size_t i = 0; i < q->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", q->build_id[i]);
	if (q->build_id_len > 1 &&
	    snprintf(path, sizeof(path), DEBUG_ROOT "/.build-id/%.2s/%s.debug", hex, hex + 2) <
		    (int)sizeof(path) &&
	    !debug_try(q, path, false, 0, out))
		return 0;
	if (sh)
		link = elf_read_section(e, sh, PATH_MAX, &len);
	n = link ? strlen(link) : 0;
	if (!n || strchr(link, '/') || len < ((n + 4) & ~(size_t)3) + 4) {
		free(link);
		return -ENOENT;
	}
	memcpy(&crc, link + ((n + 4) & ~(size_t)3), sizeof(crc));
	for (int i = 0; i < 3 && rc; i++) {
		int k = i == 0	 ? snprintf(path, sizeof(path), "%.*s/%s", dirlen, q->path, link)
			: i == 1 ? snprintf(path, sizeof(path), "%.*s/.debug/%s", dirlen, q->path,
					    link)
				 : snprintf(path, sizeof(path), DEBUG_ROOT "%.*s/%s", dirlen,
					    q->path, link);

		if (k > 0 && k < (int)sizeof(path))
			rc = debug_try(q, path, true, crc, out);
	}
	free(link);
	return rc;
}
