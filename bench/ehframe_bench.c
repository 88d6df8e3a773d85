/* SPDX-License-Identifier: MIT */
/*
 * Where an unnamed function starts: plateau's .eh_frame_hdr lookup
 * (src/symbol/symbolize_ehframe.c over symbol/ehframe_hdr.h) against libdw's CFI
 * (dwarf_getcfi_elf, dwarf_cfi_addrframe, dwarf_frame_info) on one ELF
 * file.  The numbers are in symbolize_ehframe.c's header comment.
 *
 *   build/ehframe_bench [FILE [N]]     (default /usr/bin/python3, 200000)
 *
 * N addresses uniformly at random (fixed seed) in the file's .text, looked
 * up both ways: the time to set up (first lookup, or dwarf_getcfi_elf),
 * per lookup, the heap held after, and whether the two agree (found or
 * not, and the same start).
 */
#include <fcntl.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "util/common.h"
#include "symbol/symbolize_elf.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

struct pair {
	uint64_t ours, theirs;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->ours != y->ours)
		return x->ours < y->ours ? -1 : 1;
	return x->theirs < y->theirs ? -1 : x->theirs > y->theirs;
}

/* Functions (distinct plateau starts) and the distinct libdw starts within them. */
static void count_splits(const uint64_t *ours, const uint64_t *theirs, const bool *ok, size_t n,
			 size_t *funcs, size_t *offsets)
{
	struct pair *p = xcalloc(n, sizeof(*p));
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (ok[i])
			p[m++] = (struct pair){ours[i], theirs[i]};
	qsort(p, m, sizeof(*p), pair_cmp);
	*funcs = *offsets = 0;
	for (size_t i = 0; i < m; i++) {
		*funcs += !i || p[i].ours != p[i - 1].ours;
		*offsets += !i || p[i].ours != p[i - 1].ours || p[i].theirs != p[i - 1].theirs;
	}
	free(p);
}

static bool text_range(Elf *elf, uint64_t *lo, uint64_t *hi)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(elf, ".text", &sh);

	if (!scn)
		return false;
	*lo = sh.sh_addr;
	*hi = sh.sh_addr + sh.sh_size;
	return true;
}

static bool dw_func_start(Dwarf_CFI *cfi, uint64_t vaddr, uint64_t *start)
{
	Dwarf_Frame *frame;
	Dwarf_Addr s, e;
	bool ok;

	if (!cfi || dwarf_cfi_addrframe(cfi, vaddr, &frame))
		return false;
	ok = dwarf_frame_info(frame, &s, &e, NULL) >= 0; /* the return address register */
	free(frame);
	*start = s;
	return ok;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/usr/bin/python3";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000;
	struct sym_dso d = {0};
	uint64_t lo, hi, *addrs, *ours, *theirs, x = 0x9e3779b97f4a7c15ull;
	bool *ours_ok, *theirs_ok;
	size_t h0, h_ours, h_dw, found_ours = 0, found_dw = 0, same = 0, differ = 0, shown = 0;
	double t0, t_load, t_ours, t_dwload, t_dw;
	Dwarf_CFI *cfi;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	d.path = (char *)path;
	d.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!d.elf || !text_range(d.elf, &lo, &hi))
		die("%s: not an ELF file with .text", path);
	addrs = xcalloc(n, sizeof(*addrs));
	ours = xcalloc(n, sizeof(*ours));
	theirs = xcalloc(n, sizeof(*theirs));
	ours_ok = xcalloc(n, sizeof(*ours_ok));
	theirs_ok = xcalloc(n, sizeof(*theirs_ok));
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		addrs[i] = lo + x % (hi - lo);
	}

	h0 = heap_in_use();
	t0 = now_s();
	ours_ok[0] = sym_dso_func_start(&d, addrs[0], &ours[0]);
	t_load = now_s() - t0;
	t0 = now_s();
	for (size_t i = 0; i < n; i++)
		ours_ok[i] = sym_dso_func_start(&d, addrs[i], &ours[i]);
	t_ours = now_s() - t0;
	h_ours = heap_in_use() - h0;

	h0 = heap_in_use();
	t0 = now_s();
	cfi = dwarf_getcfi_elf(d.elf);
	t_dwload = now_s() - t0;
	t0 = now_s();
	for (size_t i = 0; i < n; i++)
		theirs_ok[i] = dw_func_start(cfi, addrs[i], &theirs[i]);
	t_dw = now_s() - t0;
	h_dw = heap_in_use() - h0;

	for (size_t i = 0; i < n; i++) {
		found_ours += ours_ok[i];
		found_dw += theirs_ok[i];
		if (ours_ok[i] == theirs_ok[i] && (!ours_ok[i] || ours[i] == theirs[i])) {
			same++;
			continue;
		}
		differ++;
		if (shown++ < 5)
			printf("  differ at %#" PRIx64 ": plateau %s %#" PRIx64
			       ", libdw %s %#" PRIx64 "\n",
			       addrs[i], ours_ok[i] ? "start" : "none", ours_ok[i] ? ours[i] : 0,
			       theirs_ok[i] ? "start" : "none", theirs_ok[i] ? theirs[i] : 0);
	}
	printf("%s: %zu lookups in .text [%#" PRIx64 ", %#" PRIx64 "), %zu FDEs in .eh_frame_hdr\n",
	       path, n, lo, hi, d.eh.t.nr);
	printf("  plateau: set up %.3f ms, %.3f us/lookup, %zu found, heap +%zu bytes\n",
	       t_load * 1e3, t_ours / (double)n * 1e6, found_ours, h_ours);
	printf("  libdw:   set up %.3f ms, %.3f us/lookup, %zu found, heap +%zu bytes\n",
	       t_dwload * 1e3, t_dw / (double)n * 1e6, found_dw, h_dw);
	printf("  agree on %zu of %zu, differ on %zu\n", same, n, differ);
	{
		size_t funcs, offsets;
		bool *both = xcalloc(n, sizeof(*both));

		for (size_t i = 0; i < n; i++)
			both[i] = ours_ok[i] && theirs_ok[i];
		count_splits(ours, theirs, both, n, &funcs, &offsets);
		printf("  %zu functions (FDEs) hit; libdw's start names them with %zu distinct "
		       "offsets (%.2f per function)\n",
		       funcs, offsets, funcs ? (double)offsets / (double)funcs : 0.0);
		free(both);
	}
	elf_end(d.elf);
	close(fd);
	free(addrs);
	free(ours);
	free(theirs);
	free(ours_ok);
	free(theirs_ok);
	return 0;
}
