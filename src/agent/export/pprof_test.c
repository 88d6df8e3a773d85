/* SPDX-License-Identifier: MIT */
/*
 * Tests of the agent's pprof encoder: profiles of real pcs of this test
 * binary and of libc are gunzipped and unpacked with protobuf-c and
 * checked field by field against what the loader (dl_iterate_phdr,
 * dladdr) and readelf say; one file is read back by `go tool pprof`.
 * Encoding speed is printed, never asserted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "agent/export/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

#define NTYPES 2

static const char *const type_names[NTYPES] = {"cpu", "samples"};
static const char *const type_units[NTYPES] = {"nanoseconds", "count"};

__attribute__((noinline)) int pprof_test_leaf(int x);
__attribute__((noinline)) int pprof_test_mid(int x);
__attribute__((noinline)) int pprof_test_root(int x);

__attribute__((noinline)) int pprof_test_leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int pprof_test_mid(int x)
{
	__asm__ volatile("" ::: "memory");
	return pprof_test_leaf(x) * 2;
}

__attribute__((noinline)) int pprof_test_root(int x)
{
	__asm__ volatile("" ::: "memory");
	return pprof_test_mid(x) + 3;
}

static Profile *decode(const uint8_t *gz, size_t len)
{
	z_stream zs = {0};
	size_t alloc = 1 << 20, n = 0;
	uint8_t *raw = malloc(alloc);
	Profile *p;
	int rc;

	assert_non_null(raw);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)gz;
	zs.avail_in = (uInt)len;
	do {
		if (n == alloc) {
			alloc *= 2;
			raw = realloc(raw, alloc);
			assert_non_null(raw);
		}
		zs.next_out = raw + n;
		zs.avail_out = (uInt)(alloc - n);
		rc = inflate(&zs, Z_NO_FLUSH);
		assert_true(rc == Z_OK || rc == Z_STREAM_END);
		n = alloc - zs.avail_out;
	} while (rc != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0); /* one gzip member, nothing after it */
	inflateEnd(&zs);
	p = perftools__profiles__profile__unpack(NULL, n, raw);
	free(raw);
	assert_non_null(p);
	return p;
}

static const char *str(const Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const Perftools__Profiles__Location *loc_by_id(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_location; i++) {
		if (p->location[i]->id == id)
			return p->location[i];
	}
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Mapping *map_by_id(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_mapping; i++) {
		if (p->mapping[i]->id == id)
			return p->mapping[i];
	}
	fail_msg("no mapping %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Function *fn_by_id(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_function; i++) {
		if (p->function[i]->id == id)
			return p->function[i];
	}
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

/* The location of PC: exactly one, with that address. */
static const Perftools__Profiles__Location *loc_of_pc(const Profile *p, uintptr_t pc)
{
	const Perftools__Profiles__Location *l = NULL;

	for (size_t i = 0; i < p->n_location; i++) {
		if (p->location[i]->address == pc) {
			assert_null(l);
			l = p->location[i];
		}
	}
	assert_non_null(l);
	return l;
}

/* The function name of the location at PC, or NULL when it has no line. */
static const char *name_at(const Profile *p, uintptr_t pc)
{
	const Perftools__Profiles__Location *l = loc_of_pc(p, pc);
	const Perftools__Profiles__Function *f;

	if (!l->n_line)
		return NULL;
	assert_int_equal(l->n_line, 1);
	f = fn_by_id(p, l->line[0]->function_id);
	assert_string_equal(str(p, f->name), str(p, f->system_name));
	if (l->mapping_id)
		assert_string_equal(str(p, f->filename),
				    str(p, map_by_id(p, l->mapping_id)->filename));
	return str(p, f->name);
}

/* The GNU build-id the loader mapped for DLPI_NAME ("" = the program), in hex. */
struct note_req {
	const char *name;
	char hex[129];
};

static int note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct note_req *r = arg;

	(void)size;
	if (strcmp(info->dlpi_name, r->name))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *n = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);

		for (size_t off = 0; ph->p_type == PT_NOTE && off + 12 <= ph->p_memsz;) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(const void *)(n + off);

			off += sizeof(*nh);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4) {
				for (uint32_t k = 0; k < nh->n_descsz && k < 64; k++)
					snprintf(r->hex + 2 * k, 3, "%02x", n[off + 4 + k]);
				return 1;
			}
			off += ((nh->n_namesz + 3) & ~3u) + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

static void check_mapping(const Profile *p, uintptr_t pc, const char *path, const char *dlpi_name)
{
	const Perftools__Profiles__Mapping *m = map_by_id(p, loc_of_pc(p, pc)->mapping_id);
	struct note_req r = {.name = dlpi_name};
	char real[PATH_MAX];

	assert_non_null(realpath(path, real));
	assert_string_equal(str(p, m->filename), real);
	dl_iterate_phdr(note_cb, &r);
	assert_true(strlen(r.hex) == 40);
	assert_string_equal(str(p, m->build_id), r.hex);
	assert_true(m->memory_start <= pc && pc < m->memory_limit);
	assert_true(m->has_functions);
}

/* libc's own function NAME (under ASan &qsort is the interceptor). */
static uintptr_t libc_fn(const char *name, Dl_info *dl)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uintptr_t p = h ? (uintptr_t)dlsym(h, name) : 0;

	assert_true(p != 0);
	assert_true(dladdr((void *)p, dl) && dl->dli_fname);
	dlclose(h);
	return p;
}

static int64_t label_key(const Profile *p, const Perftools__Profiles__Sample *s, const char *key,
			 const Perftools__Profiles__Label **out)
{
	int64_t found = 0;

	*out = NULL;
	for (size_t i = 0; i < s->n_label; i++) {
		if (!strcmp(str(p, s->label[i]->key), key)) {
			*out = s->label[i];
			found++;
		}
	}
	return found;
}

struct fixture {
	uintptr_t leaf, mid, root, qsort_pc, anon;
	void *anon_page;
	struct agent_pprof_label labels0[2], labels1[1];
	uintptr_t stacks[4][3];
	int64_t values[4][NTYPES];
	struct agent_pprof_sample samples[4];
	const char *comments[2];
	struct agent_pprof_input in;
};

static void fixture_init(struct fixture *f)
{
	Dl_info dl;

	memset(f, 0, sizeof(*f));
	assert_int_equal(pprof_test_root(1), 7);
	f->leaf = (uintptr_t)&pprof_test_leaf; /* exact: the interrupted pc */
	f->mid = (uintptr_t)&pprof_test_mid + 1;
	f->root = (uintptr_t)&pprof_test_root + 1;
	f->qsort_pc = libc_fn("qsort", &dl) + 1;
	f->anon_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(f->anon_page != MAP_FAILED);
	f->anon = (uintptr_t)f->anon_page + 100; /* JIT-like: no file */
	f->labels0[0] = (struct agent_pprof_label){.key = "thread", .str = "main"};
	f->labels0[1] = (struct agent_pprof_label){.key = "bytes", .num = 42, .num_unit = "bytes"};
	f->labels1[0] = (struct agent_pprof_label){.key = "thread", .str = "worker"};
	const uintptr_t stacks[4][3] = {{f->leaf, f->mid, f->root},
					{f->qsort_pc, f->mid, f->root},
					{f->anon, f->root, 0},
					{f->leaf, f->mid, f->root}};
	const int64_t values[4][NTYPES] = {{10000000, 1}, {20000000, 2}, {30000000, 3}, {-5, 0}};
	const uint32_t npcs[4] = {3, 3, 2, 3};

	memcpy(f->stacks, stacks, sizeof(stacks));
	memcpy(f->values, values, sizeof(values));
	for (int i = 0; i < 4; i++)
		f->samples[i] = (struct agent_pprof_sample){f->stacks[i], npcs[i], f->values[i]};
	f->samples[0].labels = f->labels0;
	f->samples[0].nlabels = 2;
	f->samples[1].labels = f->labels1;
	f->samples[1].nlabels = 1;
	f->comments[0] = "plateau agent: samples=6";
	f->comments[1] = "plateau agent: dropped_ring_full=0";
	f->in = (struct agent_pprof_input){
		.type_names = type_names,
		.type_units = type_units,
		.ntypes = NTYPES,
		.period_type = "cpu",
		.period_unit = "nanoseconds",
		.period = 10101010,
		.time_nanos = INT64_C(1700000000123456789),
		.duration_nanos = INT64_C(10000000000),
		.default_type = 1,
		.comments = f->comments,
		.ncomments = 2,
		.samples = f->samples,
		.nsamples = 4,
	};
}

static void check_header(const Profile *p, const struct fixture *f)
{
	assert_true(p->n_string_table > 0);
	assert_string_equal(p->string_table[0], "");
	assert_int_equal(p->n_sample_type, NTYPES);
	for (int t = 0; t < NTYPES; t++) {
		assert_string_equal(str(p, p->sample_type[t]->type), type_names[t]);
		assert_string_equal(str(p, p->sample_type[t]->unit), type_units[t]);
	}
	assert_non_null(p->period_type);
	assert_string_equal(str(p, p->period_type->type), "cpu");
	assert_string_equal(str(p, p->period_type->unit), "nanoseconds");
	assert_true(p->period == f->in.period);
	assert_true(p->time_nanos == f->in.time_nanos);
	assert_true(p->duration_nanos == f->in.duration_nanos);
	assert_string_equal(str(p, p->default_sample_type), "samples");
	assert_int_equal(p->n_comment, 2);
	assert_string_equal(str(p, p->comment[0]), f->comments[0]);
	assert_string_equal(str(p, p->comment[1]), f->comments[1]);
}

static void check_samples(const Profile *p, const struct fixture *f)
{
	const Perftools__Profiles__Label *l;

	assert_int_equal(p->n_sample, 4);
	for (size_t s = 0; s < 4; s++) {
		const Perftools__Profiles__Sample *ps = p->sample[s];

		assert_int_equal(ps->n_value, NTYPES);
		for (int t = 0; t < NTYPES; t++)
			assert_true(ps->value[t] == f->values[s][t]);
		assert_int_equal(ps->n_location_id, f->samples[s].npcs);
		for (size_t k = 0; k < ps->n_location_id; k++)
			assert_true(loc_by_id(p, ps->location_id[k])->address == f->stacks[s][k]);
	}
	assert_int_equal(label_key(p, p->sample[0], "thread", &l), 1);
	assert_string_equal(str(p, l->str), "main");
	assert_true(l->num == 0 && l->num_unit == 0);
	assert_int_equal(label_key(p, p->sample[0], "bytes", &l), 1);
	assert_true(l->str == 0 && l->num == 42);
	assert_string_equal(str(p, l->num_unit), "bytes");
	assert_int_equal(label_key(p, p->sample[1], "thread", &l), 1);
	assert_string_equal(str(p, l->str), "worker");
	assert_int_equal(p->sample[1]->n_label, 1);
	assert_int_equal(p->sample[2]->n_label, 0);
	/* The same stack twice is two samples of the same locations. */
	for (size_t k = 0; k < 3; k++)
		assert_true(p->sample[0]->location_id[k] == p->sample[3]->location_id[k]);
}

static void test_real_pcs(void **state)
{
	struct agent_symtab *st = agent_symtab_new();
	struct fixture f;
	uint8_t *gz = NULL;
	size_t len = 0;
	Profile *p;
	Dl_info dl;

	(void)state;
	assert_non_null(st);
	fixture_init(&f);
	assert_int_equal(agent_pprof_encode(&f.in, st, &gz, &len), 0);
	assert_true(gz[0] == 0x1f && gz[1] == 0x8b);
	p = decode(gz, len);
	check_header(p, &f);
	check_samples(p, &f);
	assert_int_equal(p->n_location, 5); /* one per distinct pc */
	assert_int_equal(p->n_function, 4);
	assert_string_equal(name_at(p, f.leaf), "pprof_test_leaf");
	assert_string_equal(name_at(p, f.mid), "pprof_test_mid");
	assert_string_equal(name_at(p, f.root), "pprof_test_root");
	assert_string_equal(name_at(p, f.qsort_pc), "qsort");
	/* No file behind it: an address without mapping or line. */
	assert_null(name_at(p, f.anon));
	assert_true(loc_of_pc(p, f.anon)->mapping_id == 0);
	/* The program is mapping 1 (go tool pprof takes the first for the main binary). */
	assert_int_equal(p->n_mapping, 2);
	assert_true(loc_of_pc(p, f.leaf)->mapping_id == 1);
	check_mapping(p, f.leaf, "/proc/self/exe", "");
	libc_fn("qsort", &dl);
	check_mapping(p, f.qsort_pc, dl.dli_fname, dl.dli_fname);
	assert_true(map_by_id(p, 1)->file_offset != map_by_id(p, 2)->file_offset ||
		    map_by_id(p, 1)->memory_start != map_by_id(p, 2)->memory_start);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	munmap(f.anon_page, 4096);
	agent_symtab_free(st);
}

/* readelf's value and size of FUNC symbol NAME in FILE; 0 when absent. */
static uint64_t readelf_sym(const char *file, const char *name, uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[1024];
	uint64_t value = 0;
	FILE *pipe;

	snprintf(cmd, sizeof(cmd), "readelf -sW '%s' 2>/dev/null", file);
	pipe = popen(cmd, "r");
	while (pipe && fgets(line, sizeof(line), pipe)) {
		char type[32], sname[256], szs[32];
		unsigned long v;

		if (sscanf(line, "%*s %lx %31s %31s %*s %*s %*s %255s", &v, szs, type, sname) != 4)
			continue;
		sname[strcspn(sname, "@")] = '\0';
		if (!value && !strcmp(type, "FUNC") && !strcmp(sname, name)) {
			value = v;
			*size = strtoull(szs, NULL, 0);
		}
	}
	if (pipe)
		pclose(pipe);
	return value;
}

/* A static libc function is named through libc6-dbg's debug file. */
static void test_libc_local_function(void **state)
{
	const char *local = "msort_with_tmp.part.0";
	struct note_req r = {0};
	struct agent_symtab *st;
	struct agent_pprof_sample s = {0};
	struct agent_pprof_input in = {.type_names = type_names,
				       .type_units = type_units,
				       .ntypes = NTYPES,
				       .samples = &s,
				       .nsamples = 1};
	const int64_t values[NTYPES] = {1, 1};
	char debug[PATH_MAX];
	uint64_t value, size = 0;
	uintptr_t pcs[2];
	uint8_t *gz;
	size_t len;
	Profile *p;
	Dl_info dl;

	(void)state;
	pcs[1] = libc_fn("qsort", &dl);
	r.name = dl.dli_fname;
	dl_iterate_phdr(note_cb, &r);
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", r.hex, r.hex + 2);
	value = readelf_sym(debug, local, &size);
	if (!value || readelf_sym(dl.dli_fname, local, &(uint64_t){0})) {
		print_message("# SKIP %s: not found in %s alone (needs libc6-dbg and readelf)\n",
			      local, debug);
		skip();
	}
	pcs[0] = (uintptr_t)dl.dli_fbase + value + size / 2;
	s = (struct agent_pprof_sample){pcs, 2, values};
	st = agent_symtab_new();
	assert_non_null(st);
	assert_int_equal(agent_pprof_encode(&in, st, &gz, &len), 0);
	p = decode(gz, len);
	assert_string_equal(name_at(p, pcs[0]), local);
	assert_string_equal(name_at(p, pcs[1]), "qsort");
	assert_int_equal(p->n_mapping, 1);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	agent_symtab_free(st);
}

/* Without a symtab: addresses only, no mappings or functions. */
static void test_no_symtab(void **state)
{
	struct fixture f;
	uint8_t *gz;
	size_t len;
	Profile *p;

	(void)state;
	fixture_init(&f);
	f.in.period_type = NULL;
	f.in.ncomments = 0;
	f.in.default_type = 0;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), 0);
	p = decode(gz, len);
	check_samples(p, &f);
	assert_int_equal(p->n_mapping, 0);
	assert_int_equal(p->n_function, 0);
	assert_int_equal(p->n_location, 5);
	for (size_t i = 0; i < p->n_location; i++)
		assert_true(p->location[i]->n_line == 0 && p->location[i]->mapping_id == 0);
	assert_null(p->period_type);
	assert_string_equal(str(p, p->default_sample_type), "cpu");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	munmap(f.anon_page, 4096);
}

static void test_bad_input(void **state)
{
	struct fixture f;
	uint8_t *gz = (uint8_t *)"untouched";
	size_t len = 7;
	struct agent_pprof_label nokey = {.str = "x"};

	(void)state;
	fixture_init(&f);
	assert_int_equal(agent_pprof_encode(NULL, NULL, &gz, &len), -EINVAL);
	f.in.ntypes = 0;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), -EINVAL);
	f.in.ntypes = NTYPES;
	f.in.default_type = NTYPES;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), -EINVAL);
	f.in.default_type = 0;
	f.samples[2].labels = &nokey;
	f.samples[2].nlabels = 1;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), -EINVAL);
	f.samples[2].nlabels = 0;
	f.samples[3].values = NULL;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), -EINVAL);
	f.samples[3].values = f.values[3];
	f.samples[1].pcs = NULL;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), -EINVAL);
	assert_string_equal((const char *)gz, "untouched");
	assert_int_equal(len, 7);
	/* No samples at all is a valid (empty) profile. */
	f.in.nsamples = 0;
	assert_int_equal(agent_pprof_encode(&f.in, NULL, &gz, &len), 0);
	free(gz);
	munmap(f.anon_page, 4096);
}

static int run(const char *cmd, const char *out)
{
	char buf[8192];
	int rc;

	snprintf(buf, sizeof(buf), "%s >'%s' 2>&1", cmd, out);
	rc = system(buf);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool file_has(const char *path, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* go tool pprof reads the file and shows the names. */
static void test_go_pprof(void **state)
{
	char dir[] = "/tmp/pprof-test-XXXXXX", file[64], out[64], cmd[512];
	struct agent_symtab *st;
	struct fixture f;
	uint8_t *gz;
	size_t len;
	FILE *fp;

	(void)state;
	if (system("command -v go >/dev/null 2>&1") != 0) {
		print_message("# SKIP go is not installed: go tool pprof not run\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/p.pb.gz", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	st = agent_symtab_new();
	fixture_init(&f);
	assert_int_equal(agent_pprof_encode(&f.in, st, &gz, &len), 0);
	fp = fopen(file, "w");
	assert_non_null(fp);
	assert_true(fwrite(gz, 1, len, fp) == len);
	fclose(fp);
	/* HOME and GOCACHE for go itself; pprof must not try to symbolize over the network. */
	snprintf(cmd, sizeof(cmd),
		 "HOME=%s GOCACHE=%s/cache PPROF_TMPDIR=%s go tool pprof -top -sample_index=1 '%s'",
		 dir, dir, dir, file);
	assert_int_equal(run(cmd, out), 0);
	assert_true(file_has(out, "pprof_test_leaf"));
	assert_true(file_has(out, "pprof_test_mid"));
	assert_true(file_has(out, "pprof_test_root"));
	assert_true(file_has(out, "qsort"));
	snprintf(cmd, sizeof(cmd), "HOME=%s GOCACHE=%s/cache go tool pprof -raw '%s'", dir, dir,
		 file);
	assert_int_equal(run(cmd, out), 0);
	assert_true(file_has(out, "pprof_test_root"));
	assert_true(file_has(out, "thread:[main]"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(gz);
	munmap(f.anon_page, 4096);
	agent_symtab_free(st);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 100k samples of 30 frames over 4000 distinct pcs in libc and this binary. */
static void test_speed(void **state)
{
	enum { NS = 100000, DEPTH = 30, NPC = 4000 };
	struct agent_symtab *st = agent_symtab_new();
	struct agent_pprof_sample *s = calloc(NS, sizeof(*s));
	uintptr_t *pcs = malloc(sizeof(uintptr_t) * NS * DEPTH), pool[NPC];
	int64_t *values = malloc(sizeof(int64_t) * NS * NTYPES);
	struct agent_pprof_label lab = {.key = "thread", .str = "worker"};
	struct agent_pprof_input in = {.type_names = type_names,
				       .type_units = type_units,
				       .ntypes = NTYPES,
				       .samples = s,
				       .nsamples = NS};
	const struct agent_mapping *libc;
	uint64_t x = 88172645463325252u;
	double t0, t1, t2;
	uint8_t *gz;
	size_t len;
	Profile *p;
	Dl_info dl;

	(void)state;
	assert_true(st && s && pcs && values);
	libc = agent_symtab_mapping(
		st, (size_t)agent_symtab_lookup(st, libc_fn("qsort", &dl), NULL, NULL));
	for (size_t i = 0; i < NPC; i++)
		pool[i] = i % 8 ? libc->start + (libc->limit - libc->start) / NPC * i
				: (uintptr_t)&pprof_test_mid + 1 + i / 8 % 16;
	for (size_t i = 0; i < NS; i++) {
		for (size_t k = 0; k < DEPTH; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			pcs[i * DEPTH + k] = pool[x % NPC];
		}
		values[i * NTYPES] = (int64_t)(x % 1000) * 1000000;
		values[i * NTYPES + 1] = 1;
		s[i] = (struct agent_pprof_sample){&pcs[i * DEPTH], DEPTH, &values[i * NTYPES],
						   i % 2 ? &lab : NULL, i % 2};
	}
	t0 = now_ms();
	assert_int_equal(agent_pprof_encode(&in, st, &gz, &len), 0);
	t1 = now_ms();
	free(gz);
	assert_int_equal(agent_pprof_encode(&in, st, &gz, &len), 0);
	t2 = now_ms();
	print_message("# encode %d samples x %d frames: %.1f ms first (symbols loaded), %.1f ms "
		      "again, %zu bytes gzipped\n",
		      NS, DEPTH, t1 - t0, t2 - t1, len);
	p = decode(gz, len);
	assert_int_equal(p->n_sample, NS);
	assert_true(p->n_location <= NPC);
	for (size_t k = 0; k < DEPTH; k++)
		assert_true(loc_by_id(p, p->sample[NS - 1]->location_id[k])->address ==
			    pcs[(NS - 1) * DEPTH + k]);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	free(s);
	free(pcs);
	free(values);
	agent_symtab_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_pcs),  cmocka_unit_test(test_libc_local_function),
		cmocka_unit_test(test_no_symtab), cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_go_pprof),  cmocka_unit_test(test_speed),
	};

	return cmocka_run_group_tests_name("agent_pprof", tests, NULL, NULL);
}
