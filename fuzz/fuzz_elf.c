/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the symbolizer on an arbitrary file.  The first
 * CFG_SIZE bytes describe one or two executable mappings and a few
 * addresses; the rest is the mapped file, written to a memfd and opened
 * as /proc/self/fd/N, so the symbol tables, .eh_frame_hdr (function starts
 * of unnamed addresses), .gnu_debugdata (MiniDebugInfo, xz), the build-id
 * note, .gnu_debuglink and DWARF are all read from fuzzed bytes.  Debug
 * files are looked for by build-id and debuglink as usual; the seeds'
 * build-ids are random, so nothing under /usr/lib/debug matches.
 * Checked: every lookup names the address or says why not; names and
 * files are readable strings; all but the outermost frame are inlined; a
 * function start is given only for an unnamed address; a repeated lookup
 * (from the cache) gives the same answer.  See fuzz/README.md.
 */
#include "util/common.h"

#include <sys/mman.h>
#include <unistd.h>

#include "symbol/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * Input layout (little-endian): byte 0 flags (CFG_*, bits 3-5: max
 * frames - 1 of the first lookup of each address); byte 1 the mapping's
 * file offset in pages, byte 2 the second mapping's; byte 3 the mapping's
 * length in pages - 1; bytes 4-7 pick words of the file to look up;
 * bytes 8-31 three ELF virtual addresses to look up.  The file follows.
 */
#define CFG_SIZE      32
#define CFG_BUILD_ID  1u /* pass bytes 24-31 as the recorded build-id (hex) */
#define CFG_DELETED   2u /* name the file "... (deleted)" */
#define CFG_SECOND    4u /* a second mapping of the same file */
#define CFG_MAX_SHIFT 3
#define MAP_BASE      0x555555554000ULL
#define PAGE	      4096u
#define MAX_FRAMES    8
#define WORDS	      4

struct cfg {
	unsigned flags;
	uint64_t pgoff[2], len;
	uint32_t pick;
	uint64_t vaddr[3];
	size_t max;
};

/* A mapping of the file under test, and its load bias when the harness could compute it. */
struct map {
	struct sym_module *m;
	uint64_t start, end, bias;
	bool has_bias;
};

static volatile size_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* libdw must not ask a debuginfod server for the fuzzed build-ids. */
	unsetenv("DEBUGINFOD_URLS");
	return 0;
}

const char *__lsan_default_suppressions(void);

/*
 * elfutils 0.188's dwarf_getscopes leaks its scope array when the
 * abstract origin of an inlined instance does not resolve (it returns
 * -1 or 0 without handing the array over).  libdw has no frame pointers,
 * so the leak's stack stops in it: suppress leaks allocated in libdw.
 */
const char *__lsan_default_suppressions(void)
{
	return "leak:libdw.so\n";
}

static uint64_t get(const uint8_t *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * (msb ? n - 1 - i : i));
	return v;
}

static void cfg_from(const uint8_t *p, struct cfg *c)
{
	c->flags = p[0];
	c->pgoff[0] = (uint64_t)p[1] * PAGE;
	c->pgoff[1] = (uint64_t)p[2] * PAGE;
	c->len = ((uint64_t)p[3] + 1) * PAGE;
	c->pick = (uint32_t)get(p + 4, 4, false);
	for (size_t i = 0; i < 3; i++)
		c->vaddr[i] = get(p + 8 + 8 * i, 8, false);
	c->max = ((c->flags >> CFG_MAX_SHIFT) & 7) + 1;
}

/*
 * The bias sym_dso_bias would find: of the PT_LOADs holding pgoff, the
 * first executable one, else the first.  Only to aim lookups at the
 * file's own addresses; false when the headers are out of reach.
 */
static bool elf_bias(const uint8_t *f, size_t n, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	bool is64 = n > 4 && f[4] == 2, msb = n > 5 && f[5] == 2, found = false;
	size_t ehsize = is64 ? 64 : 52, phsize = is64 ? 56 : 32, w = is64 ? 8 : 4;
	uint64_t phoff, phnum;

	if (n < ehsize || memcmp(f, "\177ELF", 4))
		return false;
	phoff = get(f + (is64 ? 32 : 28), w, msb);
	phnum = get(f + (is64 ? 56 : 44), 2, msb);
	if (get(f + (is64 ? 54 : 42), 2, msb) != phsize || phoff > n ||
	    phnum > (n - phoff) / phsize)
		return false;
	for (uint64_t i = 0; i < phnum; i++) {
		const uint8_t *ph = f + phoff + i * phsize;
		uint64_t off = get(ph + w, w, msb), vaddr = get(ph + 2 * w, w, msb);
		uint64_t filesz = get(ph + (is64 ? 32 : 16), w, msb);
		bool exec = get(ph + (is64 ? 4 : 24), 4, msb) & 1;

		if (get(ph, 4, msb) != 1 || (off & ~(uint64_t)0xfff) > pgoff ||
		    pgoff >= off + filesz)
			continue;
		if (!found || exec)
			*bias = start - (vaddr + pgoff - off);
		found = true;
		if (exec)
			break;
	}
	return found;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void check_frames(const struct sym_frame *f, int n)
{
	for (int i = 0; i < n; i++) {
		if (f[i].reason != SYM_OK ||
		    (f[i].flags & (SYM_FRAME_KERNEL | SYM_FRAME_FUNC_START)))
			BUG("frame %d of a named address has reason %d flags %#x", i, f[i].reason,
			    f[i].flags);
		if (i < n - 1 && !(f[i].flags & SYM_FRAME_INLINED))
			BUG("frame %d of %d is not marked inlined", i, n);
		sink += f[i].function ? strlen(f[i].function) : 0;
		sink += f[i].file ? strlen(f[i].file) : 0;
	}
}

static void check_unnamed(const struct sym_frame *f)
{
	enum sym_reason r = f->reason;

	if (r == SYM_OK || !*sym_reason_str(r) || !strcmp(sym_reason_str(r), "unknown"))
		BUG("unnamed address with reason %d", r);
	if ((f->flags & SYM_FRAME_FUNC_START) && r != SYM_STRIPPED && r != SYM_NO_SYMBOL)
		BUG("function start given with reason %d", r);
	if (f->flags & ~(unsigned)SYM_FRAME_FUNC_START)
		BUG("unnamed address with flags %#x", f->flags);
}

/* Look addr up with max frames, twice (the second may come from the cache): same answer. */
static void lookup(struct symbolizer *s, const struct map *mp, uint64_t addr, size_t max)
{
	struct sym_frame a[MAX_FRAMES], b[MAX_FRAMES];
	struct error err = ERROR_INIT;
	int n = symbolizer_lookup(s, mp->m, addr, a, max, &err);
	int n2 = symbolizer_lookup(s, mp->m, addr, b, max, &err);

	if (n < 0 || (size_t)n > max || n != n2)
		BUG("lookup of %#" PRIx64 " with max %zu returned %d then %d (%s)", addr, max, n,
		    n2, err.msg);
	if (!n) {
		check_unnamed(&a[0]);
		if (a[0].reason != b[0].reason || a[0].flags != b[0].flags ||
		    a[0].offset != b[0].offset)
			BUG("two lookups of %#" PRIx64 " disagree on why it is unnamed", addr);
		return;
	}
	check_frames(a, n);
	for (int i = 0; i < n; i++) {
		if (!same_str(a[i].function, b[i].function) || !same_str(a[i].file, b[i].file) ||
		    a[i].line != b[i].line || a[i].flags != b[i].flags ||
		    a[i].offset != b[i].offset)
			BUG("two lookups of %#" PRIx64 " disagree at frame %d", addr, i);
	}
}

static void lookup_vaddr(struct symbolizer *s, const struct map *mp, uint64_t vaddr,
			 const struct cfg *c)
{
	uint64_t addr = mp->has_bias ? vaddr + mp->bias : mp->start + vaddr % (mp->end - mp->start);

	lookup(s, mp, addr, c->max);
	lookup(s, mp, addr, MAX_FRAMES);
}

/* The mapping's edges, the configured addresses, the entry point and words of the file. */
static void lookups(struct symbolizer *s, const struct map *mp, const struct cfg *c,
		    const uint8_t *f, size_t n)
{
	lookup(s, mp, mp->start - 1, MAX_FRAMES);
	lookup(s, mp, mp->start, MAX_FRAMES);
	lookup(s, mp, mp->end - 1, MAX_FRAMES);
	lookup(s, mp, mp->end, MAX_FRAMES);
	for (size_t i = 0; i < ARRAY_SIZE(c->vaddr); i++)
		lookup_vaddr(s, mp, c->vaddr[i], c);
	if (n >= 32)
		lookup_vaddr(s, mp, get(f + 24, f[4] == 2 ? 8 : 4, f[5] == 2), c);
	for (uint32_t i = 0; n >= 8 && i < WORDS; i++) {
		size_t pos = (size_t)((c->pick * (uint64_t)(2 * i + 1)) % (n / 8)) * 8;

		lookup_vaddr(s, mp, get(f + pos, 8, false), c);
	}
}

static struct map map_file(struct symbolizer *s, const char *path, const struct cfg *c, size_t i,
			   const char *bid, const uint8_t *f, size_t n)
{
	struct map mp = {NULL, MAP_BASE + c->pgoff[i], MAP_BASE + c->pgoff[i] + c->len, 0, false};

	mp.has_bias = elf_bias(f, n, mp.start, c->pgoff[i], &mp.bias);
	mp.m = symbolizer_module(s, path, mp.start, mp.end, c->pgoff[i], bid);
	if (!mp.m)
		BUG("symbolizer_module returned NULL");
	return mp;
}

static int memfd_of(const uint8_t *f, size_t n)
{
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symbolizer *s;
	char path[64], bid[17];
	struct map mp;
	struct cfg c;
	int fd;

	if (size < CFG_SIZE)
		return 0;
	cfg_from(data, &c);
	data += CFG_SIZE;
	size -= CFG_SIZE;
	fd = memfd_of(data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d%s", fd,
		 c.flags & CFG_DELETED ? " (deleted)" : "");
	snprintf(bid, sizeof(bid), "%016" PRIx64, c.vaddr[2]);
	s = symbolizer_new();
	mp = map_file(s, path, &c, 0, c.flags & CFG_BUILD_ID ? bid : NULL, data, size);
	lookups(s, &mp, &c, data, size);
	if (c.flags & CFG_SECOND) {
		mp = map_file(s, path, &c, 1, c.flags & CFG_BUILD_ID ? bid : NULL, data, size);
		lookups(s, &mp, &c, data, size);
	}
	symbolizer_free(s);
	close(fd);
	return 0;
}
