/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the agent's symbol table (src/agent/stack/symtab.c and
 * symtab_elf.c) on an arbitrary file.  The first HDR bytes place one
 * executable mapping and pick addresses; the rest is the file, written to
 * a memfd and given to agent_symtab_new_file() as /proc/self/fd/N, so the
 * ELF header, program headers (the bias), build-id notes (PT_NOTE, then
 * SHT_NOTE), section headers and names, .symtab, .gnu_debuglink and
 * .dynsym are all read from fuzzed bytes, and so is a debug file the input
 * may carry, which a .gnu_debuglink "200" finds as /proc/self/fd/200
 * (other debug files are looked for as usual; the seeds' build-ids are
 * random).
 * Checked: the mapping is the one asked for, and a build-id is bytes of
 * the file; a pc inside the mapping resolves to it and one outside to
 * nothing; a name is a non-empty string without a version suffix; a
 * repeated lookup, and one at the function's start, give the same answer;
 * has_functions agrees with the lookups.  See fuzz/README.md.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/stack/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__ubsan_default_options(void);

/* The fuzz build lets UBSan recover; a report must end the run as a crash. */
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/*
 * Input layout (little-endian): byte 0 the mapping's file offset in pages,
 * byte 1 its length in pages - 1, byte 2 flags (F_DEBUG), byte 3 picks
 * words of the file to look up, bytes 4-11 a file vaddr to look up, bytes
 * 12-15 the file's length when F_DEBUG is set.  The file follows, then
 * with F_DEBUG (and a length that fits) the debug file.
 */
#define HDR	 16
#define F_DEBUG	 1u
#define DEBUG_FD 200
#define PAGE	 4096u
#define MAP_BASE 0x200000000000ULL /* nothing is mapped there: map_files never names it */
#define WORDS	 4

#define BUG(...)                                                   \
	do {                                                       \
		fprintf(stderr, "fuzz_agentsymtab: " __VA_ARGS__); \
		fputc('\n', stderr);                               \
		abort();                                           \
	} while (0)

struct probe {
	struct agent_symtab *st;
	uintptr_t start, limit;
	uint64_t bias;
	bool has_bias, named;
};

static uint64_t get(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The bias map_set_bias would find (of the PT_LOADs holding the mapping's
 * offset, the first executable one, else the first), from ELF64 headers
 * within the file; only to aim lookups at the file's own addresses.
 */
static bool elf_bias(const uint8_t *f, size_t n, uint64_t start, uint64_t off, uint64_t *bias)
{
	uint64_t phoff, phnum;
	bool found = false;

	if (n < sizeof(Elf64_Ehdr) || memcmp(f, ELFMAG, SELFMAG) || f[EI_CLASS] != ELFCLASS64)
		return false;
	phoff = get(f + 32, 8);
	phnum = get(f + 56, 2);
	if (get(f + 54, 2) != sizeof(Elf64_Phdr) || phoff > n ||
	    phnum > (n - phoff) / sizeof(Elf64_Phdr))
		return false;
	for (uint64_t i = 0; i < phnum; i++) {
		const uint8_t *ph = f + phoff + i * sizeof(Elf64_Phdr);
		uint64_t poff = get(ph + 8, 8), vaddr = get(ph + 16, 8), filesz = get(ph + 32, 8);
		bool exec = get(ph + 4, 4) & PF_X;

		if (get(ph, 4) != PT_LOAD || (poff & ~(uint64_t)(PAGE - 1)) > off ||
		    filesz > UINT64_MAX - poff || off >= poff + filesz)
			continue;
		if (!found || exec)
			*bias = start - (vaddr - poff + off);
		found = true;
		if (exec)
			break;
	}
	return found;
}

static void check_name(const char *name, uintptr_t pc)
{
	if (!*name)
		BUG("empty name at %#lx", (unsigned long)pc);
	const char *at = strchr(name + 1, '@');

	/* "x@plt" names a PLT stub (symbol/symname.h); any other '@' is a version. */
	if (at && strcmp(at, "@plt"))
		BUG("name \"%s\" keeps its version suffix", name);
}

/* Look PC up twice, then at its function's start: the same answers. */
static void lookup(struct probe *p, uintptr_t pc)
{
	const char *name, *name2, *name3;
	uintptr_t start, start2, start3;
	int i = agent_symtab_lookup(p->st, pc, &name, &start);
	int i2 = agent_symtab_lookup(p->st, pc, &name2, &start2);
	bool inside = pc >= p->start && pc < p->limit;

	if (i != (inside ? 0 : -1) || i2 != i)
		BUG("pc %#lx %s the mapping resolved to %d then %d", (unsigned long)pc,
		    inside ? "inside" : "outside", i, i2);
	if (name != name2 || start != start2)
		BUG("two lookups of %#lx disagree", (unsigned long)pc);
	if (!name) {
		uint64_t va, va2;

		if (start)
			BUG("no name at %#lx but a start %#lx", (unsigned long)pc,
			    (unsigned long)start);
		/* An unnamed function's start is at or below pc, and its own start. */
		if (i >= 0 && agent_symtab_unnamed(p->st, pc, &va) == i) {
			if (va > pc - (p->has_bias ? p->bias : 0) && p->has_bias)
				BUG("%#lx's function starts above it, at %#lx", (unsigned long)pc,
				    (unsigned long)va);
			if (p->has_bias && va + p->bias >= p->start && va + p->bias < p->limit &&
			    agent_symtab_lookup(p->st, (uintptr_t)(va + p->bias), NULL, NULL) ==
				    i &&
			    agent_symtab_unnamed(p->st, (uintptr_t)(va + p->bias), &va2) == i &&
			    va2 != va)
				BUG("the function of %#lx starts at %#lx, which starts at %#lx",
				    (unsigned long)pc, (unsigned long)va, (unsigned long)va2);
		}
		return;
	}
	check_name(name, pc);
	p->named = true;
	if (start < p->start || start >= p->limit)
		return;
	if (agent_symtab_lookup(p->st, start, &name3, &start3) != 0 || name3 != name ||
	    start3 != start)
		BUG("%#lx is in %s at %#lx, but that start is in %s", (unsigned long)pc, name,
		    (unsigned long)start, name3 ? name3 : "nothing");
}

static void lookup_vaddr(struct probe *p, uint64_t vaddr)
{
	lookup(p, p->has_bias ? (uintptr_t)(vaddr + p->bias)
			      : p->start + (uintptr_t)(vaddr % (p->limit - p->start)));
}

static void check_mapping(const struct probe *p, const char *path, uint64_t off, const uint8_t *f,
			  size_t n)
{
	const struct agent_mapping *m = agent_symtab_mapping(p->st, 0);

	if (agent_symtab_nmappings(p->st) != 1 || !m || agent_symtab_mapping(p->st, 1))
		BUG("%zu mappings", agent_symtab_nmappings(p->st));
	if (m->start != p->start || m->limit != p->limit || m->file_offset != off ||
	    strcmp(m->path, path) || !m->live || m->deleted)
		BUG("the mapping is not the one asked for");
	if (m->build_id_len > AGENT_BUILD_ID_MAX || !m->build_id != !m->build_id_len)
		BUG("build-id of %zu bytes at %p", m->build_id_len, (const void *)m->build_id);
	if (m->build_id && !memmem(f, n, m->build_id, m->build_id_len))
		BUG("the build-id is not in the file");
}

static int memfd_of(const uint8_t *f, size_t n)
{
	int fd = memfd_create("fuzz-agentsymtab", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		BUG("memfd_create: %s", strerror(errno));
	while (off < n) {
		ssize_t w = write(fd, f + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			BUG("writing the memfd: %s", strerror(errno));
		off += (size_t)w;
	}
	return fd;
}

/* The debug file as /proc/self/fd/DEBUG_FD; -1 when that fd is taken. */
static int debug_fd(const uint8_t *f, size_t n)
{
	int fd;

	if (fcntl(DEBUG_FD, F_GETFD) != -1 || errno != EBADF)
		return -1;
	fd = memfd_of(f, n);
	if (dup2(fd, DEBUG_FD) != DEBUG_FD)
		BUG("dup2: %s", strerror(errno));
	close(fd);
	return DEBUG_FD;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t off, vaddr, split;
	unsigned pick, flags;
	struct probe p = {0};
	char path[64];
	int fd, dfd = -1;

	if (size < HDR)
		return 0;
	off = (uint64_t)data[0] * PAGE;
	p.start = (uintptr_t)(MAP_BASE + off);
	p.limit = p.start + ((uintptr_t)data[1] + 1) * PAGE;
	flags = data[2];
	pick = data[3];
	vaddr = get(data + 4, 8);
	split = get(data + 12, 4);
	data += HDR;
	size -= HDR;
	if ((flags & F_DEBUG) && split <= size) {
		dfd = debug_fd(data + split, size - split);
		size = split;
	}
	fd = memfd_of(data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	p.has_bias = elf_bias(data, size, p.start, off, &p.bias);
	p.st = agent_symtab_new_file(path, p.start, p.limit, off);
	if (!p.st)
		BUG("agent_symtab_new_file: %s", strerror(errno));
	check_mapping(&p, path, off, data, size);
	lookup(&p, p.start - 1);
	lookup(&p, p.start);
	lookup(&p, p.limit - 1);
	lookup(&p, p.limit);
	lookup_vaddr(&p, vaddr);
	if (size >= sizeof(Elf64_Ehdr))
		lookup_vaddr(&p, get(data + 24, 8)); /* e_entry */
	for (unsigned i = 0; size >= 8 && i < WORDS; i++)
		lookup_vaddr(&p, get(data + (pick * (2 * i + 1) % (size / 8)) * 8, 8));
	if (p.named && !agent_symtab_mapping(p.st, 0)->has_functions)
		BUG("names found but has_functions is false");
	agent_symtab_free(p.st);
	close(fd);
	if (dfd >= 0)
		close(dfd);
	return 0;
}
