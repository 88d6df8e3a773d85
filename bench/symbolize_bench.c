/* SPDX-License-Identifier: MIT */
/*
 * symbolize_bench: symbolization throughput of src/symbol/symbolize.c on one
 * ELF file, for bench/record-bench.py.
 *
 * Picks N addresses uniformly at random (fixed seed) inside the file's
 * .text, maps the file's executable PT_LOAD at a made-up load address,
 * and times symbolizer_lookup() on all of them twice: pass 1 is cold
 * (each address seen for the first time, DWARF indexes built on demand),
 * pass 2 warm (file and indexes loaded; the direct-mapped result cache
 * holds only 512 entries, so most lookups are still done again).
 *
 * --addrs writes the addresses as ELF virtual addresses, one hex number a
 * line (what addr2line reads), --names the innermost function name of
 * each (or "??"), for the driver to feed the same addresses to a peer and
 * compare.  The last line on stdout is machine-readable:
 *   result n=N named=N load_s=S cold_s=S warm_s=S frames=N
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <gelf.h>

#include "util/common.h"
#include "util/options.h"
#include "symbol/symbolize.h"

#define BENCH_BIAS   0x7f1200000000ULL
#define BENCH_FRAMES 16

struct text_map {
	uint64_t text_lo, text_hi;  /* .text, ELF vaddrs */
	uint64_t start, end, pgoff; /* the executable PT_LOAD, as mapped at BENCH_BIAS */
};

struct pass_stats {
	double seconds;
	size_t named, frames;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool find_text(Elf *elf, struct text_map *t)
{
	size_t shstrndx, nph;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getphdrnum(elf, &nph))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n =
			gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (n && !strcmp(n, ".text") && sh.sh_size) {
			t->text_lo = sh.sh_addr;
			t->text_hi = sh.sh_addr + sh.sh_size;
		}
	}
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || t->text_lo < ph.p_vaddr ||
		    t->text_hi > ph.p_vaddr + ph.p_memsz)
			continue;
		t->start = BENCH_BIAS + (ph.p_vaddr & ~0xfffULL);
		t->end = BENCH_BIAS + ph.p_vaddr + ph.p_memsz;
		t->pgoff = ph.p_offset & ~0xfffULL;
		return true;
	}
	return false;
}

static void read_text_map(const char *path, struct text_map *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	bool ok;

	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ok = elf && find_text(elf, t);
	elf_end(elf);
	close(fd);
	if (!ok)
		die("%s: no .text inside an executable PT_LOAD", path);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n ELF vaddrs uniform in .text; caller frees. */
static uint64_t *random_addrs(const struct text_map *t, size_t n, uint64_t seed)
{
	uint64_t *a = xmalloc(st_mult(n, sizeof(*a)));
	uint64_t s = seed ? seed : 1;

	for (size_t i = 0; i < n; i++)
		a[i] = t->text_lo + xorshift(&s) % (t->text_hi - t->text_lo);
	return a;
}

static void write_addrs(const char *path, const uint64_t *a, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%" PRIx64 "\n", a[i]);
	if (fclose(f))
		die("%s: write failed", path);
}

/* One pass over all addresses; names[i] gets the innermost name (borrowed) when names != NULL. */
static struct pass_stats run_pass(struct symbolizer *s, struct sym_module *m, const uint64_t *a,
				  size_t n, const char **names)
{
	struct sym_frame out[BENCH_FRAMES];
	struct pass_stats st = {0};
	struct error err = {0};
	double t0 = now_s();

	for (size_t i = 0; i < n; i++) {
		int k = symbolizer_lookup(s, m, BENCH_BIAS + a[i], out, BENCH_FRAMES, &err);

		if (k < 0)
			die("lookup: %s", err.msg);
		if (k > 0 && out[0].function) {
			st.named++;
			st.frames += (size_t)k;
		}
		if (names)
			names[i] = k > 0 && out[0].function ? out[0].function : "??";
	}
	st.seconds = now_s() - t0;
	return st;
}

static void write_names(const char *path, const char **names, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", names[i]);
	if (fclose(f))
		die("%s: write failed", path);
}

static void print_pass(const char *what, const struct pass_stats *p, size_t n)
{
	printf("%-14s %zu addresses in %.3f s: %.0f addresses/s (%.2f us each), named %.1f%%\n",
	       what, n, p->seconds, p->seconds > 0 ? (double)n / p->seconds : 0.0,
	       1e6 * p->seconds / (double)n, 100.0 * (double)p->named / (double)n);
}

static const char *const usage[] = {
	"symbolize_bench [-n N] [--seed S] [--addrs FILE] [--names FILE] ELF",
	NULL,
};

int main(int argc, const char **argv)
{
	const char *addrs_out = NULL, *names_out = NULL, **names;
	int n = 100000, seed = 42;
	const struct option opts[] = {
		OPT_INT('n', "count", &n, "N", "number of random addresses (default 100000)"),
		OPT_INT(0, "seed", &seed, "S", "random seed (default 42)"),
		OPT_STRING(0, "addrs", &addrs_out, "FILE", "write the addresses (ELF vaddrs, hex)"),
		OPT_STRING(0, "names", &names_out, "FILE", "write the innermost name of each"),
		OPT_END(),
	};
	struct pass_stats cold, warm;
	struct symbolizer *s;
	struct sym_module *m;
	struct text_map t = {0};
	uint64_t *a;
	double t0, load;

	log_progname = "symbolize_bench";
	argc = parse_options(argc - 1, argv + 1, opts, usage);
	argv++;
	if (argc != 1 || n < 1)
		die_usage("expected one ELF file and N >= 1");
	read_text_map(argv[0], &t);
	a = random_addrs(&t, (size_t)n, (uint64_t)seed);
	if (addrs_out)
		write_addrs(addrs_out, a, (size_t)n);
	names = xcalloc((size_t)n, sizeof(*names));

	t0 = now_s();
	s = symbolizer_new();
	m = symbolizer_module(s, argv[0], t.start, t.end, t.pgoff, NULL);
	load = now_s() - t0;
	cold = run_pass(s, m, a, (size_t)n, names);
	warm = run_pass(s, m, a, (size_t)n, NULL);

	printf("file           %s (.text %.1f MB)\n", argv[0],
	       (double)(t.text_hi - t.text_lo) / 1e6);
	printf("load           %.3f s (open, symbol table)\n", load);
	print_pass("pass 1 (cold)", &cold, (size_t)n);
	print_pass("pass 2 (warm)", &warm, (size_t)n);
	if (names_out)
		write_names(names_out, names, (size_t)n);
	printf("result n=%d named=%zu load_s=%.6f cold_s=%.6f warm_s=%.6f frames=%zu\n", n,
	       cold.named, load, cold.seconds, warm.seconds, cold.frames);
	free(names);
	free(a);
	symbolizer_free(s);
	return 0;
}
