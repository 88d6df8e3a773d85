/* SPDX-License-Identifier: MIT */
/*
 * blob_bench: size and speed of the store's blob encoding (src/store/blob.c)
 * on a realistic profile, as doc/store-format.md reports them.
 *
 * The profile is what one agent pushes for one series every 10 s: 2,000
 * CPU samples (samples/count and cpu/nanoseconds at 99 Hz) over 500
 * distinct stacks 10 to 30 frames deep, drawn from a call graph of C++-like
 * functions with modules, files, lines and addresses; 30% of the samples
 * carry a thread label; 6 profile labels.  Fixed seed, so runs compare.
 *
 * Prints bytes per sample raw and at each zstd level, gzip pprof for
 * reference, then microseconds per encode (alone, and with the
 * profile's blob_tree already made, as for a push's second sample type),
 * decode, merge_into (one blob into a fresh profile, and the 100th blob
 * of one series into the merge of the first 99: the query path) and
 * decode + profile_merge.
 *
 * Each time is the best batch, then the mean of all: the mean holds what
 * other work on the machine took, and glibc's heap trimming, which makes a
 * decode fault in again the pages the previous one freed.
 *
 * With a FILE (any input format), that profile is measured instead.
 *
 *   blob_bench [SECONDS_PER_MEASUREMENT [FILE]]
 */
#include <time.h>

#include "util/common.h"
#include "format/format.h"
#include "format/pprof.h"
#include "store/blob.h"

#define NR_FUNCS   800
#define NR_STACKS  500
#define NR_SAMPLES 2000
#define PERIOD_NS  10101010

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* 0 .. n-1, small values much more often than large ones: u^k for uniform u. */
static uint32_t skewed(uint32_t n, int k)
{
	double u = (double)(rnd() >> 11) / 9007199254740992.0, x = 1;

	while (k--)
		x *= u;
	return (uint32_t)((double)n * x) % n;
}

static const char *const spaces[] = {"shop", "payments", "catalog", "http", "db", "json", "std"};
static const char *const classes[] = {"CartService", "OrderRepository", "Router",    "Connection",
				      "Parser",	     "ThreadPool",	"Allocator", "Session",
				      "Cache",	     "Encoder"};
static const char *const verbs[] = {"handle", "apply", "lookup",   "encode",   "decode",  "flush",
				    "read",   "write", "validate", "dispatch", "compute", "merge"};
static const char *const modules[] = {"/usr/bin/shop-api",
				      "/usr/lib/x86_64-linux-gnu/libc.so.6",
				      "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
				      "/usr/lib/x86_64-linux-gnu/libssl.so.3",
				      "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
				      "[kernel.kallsyms]"};

struct func {
	uint32_t name, module, file, line, flags;
	uint64_t addr;
	uint32_t callees[5];
};

static void make_funcs(struct profile *p, struct func *fn)
{
	char buf[256];

	for (uint32_t i = 0; i < NR_FUNCS; i++) {
		const char *ns = spaces[rnd() % ARRAY_SIZE(spaces)];
		const char *cls = classes[rnd() % ARRAY_SIZE(classes)];
		uint32_t mod = i < NR_FUNCS * 3 / 4
				       ? 0
				       : 1 + (uint32_t)(rnd() % (ARRAY_SIZE(modules) - 1));

		snprintf(buf, sizeof(buf), "%s::%s::%s%s_%u(std::string const&, unsigned long)", ns,
			 cls, verbs[rnd() % ARRAY_SIZE(verbs)], i % 3 ? "" : "Locked", i);
		fn[i].name = profile_intern_str(p, buf);
		fn[i].module = profile_intern_str(p, modules[mod]);
		snprintf(buf, sizeof(buf), "src/%s/%s.cc", ns, cls);
		fn[i].file = mod ? 0 : profile_intern_str(p, buf);
		fn[i].line = 20 + (uint32_t)(rnd() % 2000);
		fn[i].addr =
			(mod == 5 ? 0xffffffff81000000ULL : 0x55d4c3a00000ULL + mod * 0x1000000) +
			i * 0x340ULL;
		fn[i].flags = mod == 5 ? FRAME_KERNEL : (rnd() % 8 == 0 ? FRAME_INLINED : 0);
		for (int c = 0; c < 5; c++)
			fn[i].callees[c] = (uint32_t)(rnd() % NR_FUNCS);
	}
}

/* The frame of function f at its call to callee c (its own line and address). */
static uint32_t call_frame(struct profile *p, const struct func *f, uint32_t c)
{
	struct frame fr = {f->name, f->module, f->file, f->line + c * 7, f->addr + 0x10 + c * 0x18,
			   f->flags};

	return profile_intern_frame(p, &fr);
}

/*
 * One stack: a fixed entry, then a walk down the call graph that mostly
 * (3 times in 4) takes a function's usual callee, so stacks share prefixes
 * as a service's do.
 */
static uint32_t make_stack(struct profile *p, const struct func *fn)
{
	uint32_t depth = 10 + (uint32_t)(rnd() % 21), node = 0, f = 0;

	for (uint32_t d = 0; d < depth; d++) {
		uint32_t c = d < 4 ? 0 : skewed(5, 6);

		node = profile_child(p, node, call_frame(p, &fn[f], c));
		f = d < 3 ? d + 1 : fn[f].callees[c];
	}
	return node;
}

static void add_labels(struct profile *p)
{
	static const char *const kv[][2] = {
		{"service_name", "shop-api"},  {"env", "production"},
		{"region", "eu-west-1"},       {"host", "ip-10-1-2-3.eu-west-1.compute.internal"},
		{"version", "1.42.0-7f3c2a1"}, {"pod", "shop-api-7d9f8c6b5-x2k4q"}};
	struct label l[ARRAY_SIZE(kv)];

	for (size_t i = 0; i < ARRAY_SIZE(kv); i++)
		l[i] = (struct label){profile_intern_str(p, kv[i][0]),
				      profile_intern_str(p, kv[i][1]), 0, 0};
	p->profile_labels = profile_intern_labels(p, l, ARRAY_SIZE(kv));
}

static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	struct func *fn = xcalloc(NR_FUNCS, sizeof(*fn));
	uint32_t stacks[NR_STACKS], threads[4];
	int64_t v[2] = {1, PERIOD_NS};

	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	p->default_type = 1;
	p->period_type = (struct sample_type){profile_intern_str(p, "cpu"),
					      profile_intern_str(p, "nanoseconds"), 0};
	p->period = PERIOD_NS;
	p->time_nanos = 1718000000000000000LL;
	p->duration_nanos = 10000000000LL;
	add_labels(p);
	make_funcs(p, fn);
	for (uint32_t i = 0; i < 4; i++) {
		char name[16];
		struct label l = {profile_intern_str(p, "thread"), 0, 0, 0};

		snprintf(name, sizeof(name), "worker-%u", i);
		l.str = profile_intern_str(p, name);
		threads[i] = profile_intern_labels(p, &l, 1);
	}
	for (uint32_t i = 0; i < NR_STACKS; i++)
		stacks[i] = make_stack(p, fn);
	for (uint32_t i = 0; i < NR_SAMPLES; i++) {
		uint32_t labels = rnd() % 10 < 3 ? threads[rnd() % 4] : 0;

		profile_add_sample(p, stacks[skewed(NR_STACKS, 3)], labels, v);
	}
	free(fn);
	return p;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

enum op { OP_ENCODE, OP_ENCODE_TREE, OP_DECODE, OP_MERGE_FRESH, OP_MERGE_SERIES, OP_DECODE_MERGE };

/* The profile's tree, made once: encoding another sample type of a push, as the service does. */
static struct blob_tree *tree;

static void die_on(int rc, const struct error *err)
{
	if (rc)
		die("%s", err->msg);
}

/* One run of op; series is the merge of 99 blobs, for OP_MERGE_SERIES. */
static void run_op(enum op op, const struct profile *p, int level, const struct strbuf *blob,
		   struct profile *series)
{
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT;
	struct profile *q = NULL, *m;

	switch (op) {
	case OP_ENCODE:
		die_on(blob_encode_level(p, level, &sb, &err), &err);
		strbuf_release(&sb);
		break;
	case OP_ENCODE_TREE:
		die_on(blob_encode_tree(p, tree, level, &sb, &err), &err);
		strbuf_release(&sb);
		break;
	case OP_DECODE: die_on(blob_decode(blob->buf, blob->len, NULL, &q, &err), &err); break;
	case OP_MERGE_FRESH:
		q = profile_new();
		die_on(blob_merge_into(q, blob->buf, blob->len, NULL, &err), &err);
		break;
	case OP_MERGE_SERIES:
		/* Merging into a copy would time the copy: merge, then scale nothing back. */
		die_on(blob_merge_into(series, blob->buf, blob->len, NULL, &err), &err);
		break;
	case OP_DECODE_MERGE:
		m = profile_new();
		die_on(blob_decode(blob->buf, blob->len, NULL, &q, &err), &err);
		die_on(profile_merge(m, q, &err), &err);
		profile_free(m);
		break;
	}
	profile_free(q);
}

struct timing {
	double best, mean; /* microseconds per op */
};

/* Batches of 10 ops for about seconds: the fastest batch and the mean of all. */
static struct timing time_op(enum op op, const struct profile *p, int level,
			     const struct strbuf *blob, struct profile *series, double seconds)
{
	struct timing t = {1e300, 0};
	double start;
	long runs = 0;

	run_op(op, p, level, blob, series); /* warm caches and the zstd contexts */
	start = now_us();
	do {
		double b = now_us();

		for (int i = 0; i < 10; i++)
			run_op(op, p, level, blob, series);
		runs += 10;
		t.best = MIN(t.best, (now_us() - b) / 10);
	} while (now_us() - start < seconds * 1e6);
	t.mean = (now_us() - start) / (double)runs;
	return t;
}

static void print_timing(const char *what, struct timing t)
{
	printf("  %-26s %7.1f us (mean %7.1f)\n", what, t.best, t.mean);
}

static size_t pprof_size(const struct profile *p)
{
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || pprof_write(p, f, &err))
		die("pprof_write: %s", err.msg);
	fclose(f);
	free(buf);
	return len;
}

static void print_sizes(const struct profile *p)
{
	static const int levels[] = {0, -1, 1, 3, 6, 9, 19};
	struct error err = ERROR_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		struct strbuf sb = STRBUF_INIT;

		die_on(blob_encode_level(p, levels[i], &sb, &err), &err);
		printf("level %3d: %7zu bytes, %6.2f bytes/sample, %6.2f bytes/stored sample\n",
		       levels[i], sb.len, (double)sb.len / (double)profile_total(p, 0),
		       (double)sb.len / p->nr_samples);
		strbuf_release(&sb);
	}
	printf("pprof.gz : %7zu bytes, %6.2f bytes/sample\n", pprof_size(p),
	       (double)pprof_size(p) / (double)profile_total(p, 0));
}

static void print_times(const struct profile *p, double seconds)
{
	static const int levels[] = {0, 1, 3};
	struct error err = ERROR_INIT;
	struct strbuf blob = STRBUF_INIT;
	struct profile *series = profile_new();

	tree = blob_tree_new(p);
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		printf("level %d:\n", levels[i]);
		print_timing("encode", time_op(OP_ENCODE, p, levels[i], NULL, NULL, seconds));
		print_timing("encode with its tree made",
			     time_op(OP_ENCODE_TREE, p, levels[i], NULL, NULL, seconds));
		strbuf_reset(&blob);
		die_on(blob_encode_level(p, levels[i], &blob, &err), &err);
		print_timing("decode", time_op(OP_DECODE, p, 0, &blob, NULL, seconds));
		print_timing("merge_into a new profile",
			     time_op(OP_MERGE_FRESH, p, 0, &blob, NULL, seconds));
		print_timing("decode + profile_merge",
			     time_op(OP_DECODE_MERGE, p, 0, &blob, NULL, seconds));
	}
	/* The query path: one series' blobs merged one after another. */
	strbuf_reset(&blob);
	die_on(blob_encode(p, &blob, &err), &err);
	for (int i = 0; i < 99; i++)
		die_on(blob_merge_into(series, blob.buf, blob.len, NULL, &err), &err);
	printf("level %d, the 100th blob of a series:\n", BLOB_LEVEL_DEFAULT);
	print_timing("merge_into the merge of 99",
		     time_op(OP_MERGE_SERIES, p, 0, &blob, series, seconds));
	profile_free(series);
	strbuf_release(&blob);
	blob_tree_free(tree);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.5;
	struct error err = ERROR_INIT;
	struct profile *p = NULL;

	if (argc > 2)
		die_on(profile_read_file(argv[2], NULL, &p, &err), &err);
	else
		p = make_profile();
	printf("profile: %" PRId64 " samples, %u stored samples, %u nodes, %u frames, %u strings\n",
	       profile_total(p, 0), p->nr_samples, p->nr_nodes, p->nr_frames, p->strs.nr);
	print_sizes(p);
	print_times(p, seconds);
	profile_free(p);
	return 0;
}
