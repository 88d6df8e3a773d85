/* burn.c - CPU-heavy multi-threaded workload for plateau benchmarks.
 *
 * Four threads ("burn-0".."burn-3") each cycle through four workloads so
 * that `perf record -g` sees many distinct, deep-ish stacks:
 *   - tree:  recursive BST insert/lookup/sum (stack depth follows tree depth)
 *   - sort:  recursive quicksort + mergesort with different comparators
 *   - hash:  several named hash functions over variable-length records
 *   - graph: 32 generated functions step_00..step_31 calling each other
 *            along data-dependent, skewed paths 4..11 frames deep
 * Together these give thousands of distinct folded stacks with a
 * heavy-tailed distribution, like a real application.
 *
 * Build: cc -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
 *        burn.c -o burn   (no tail calls: keeps the recursion visible)
 * Usage: burn [seconds]   (default 10)
 *
 * Every function that does real work also makes a call, so gcc gives it
 * a frame (gcc omits the frame of stackless leaf functions even with
 * -fno-omit-frame-pointer, hiding the leaf's caller from FP unwinding). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FN	 __attribute__((noipa))
#define NTHREADS 4

static _Thread_local uint64_t tl_sink;
FN void consume(uint64_t v)
{
	tl_sink += v;
}

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ tree */
struct node {
	uint64_t key;
	struct node *l, *r;
};

FN struct node *tree_insert(struct node *t, struct node *n)
{
	if (!t)
		return n;
	if (n->key < t->key)
		t->l = tree_insert(t->l, n);
	else
		t->r = tree_insert(t->r, n);
	return t;
}

FN int tree_lookup(const struct node *t, uint64_t key)
{
	if (!t)
		return 0;
	if (key == t->key)
		return 1;
	return tree_lookup(key < t->key ? t->l : t->r, key);
}

FN uint64_t tree_sum(const struct node *t)
{
	if (!t)
		return 0;
	return t->key + tree_sum(t->l) + tree_sum(t->r);
}

FN void run_tree(uint64_t *seed)
{
	enum { N = 20000 };
	struct node *nodes = malloc(N * sizeof *nodes), *root = NULL;
	if (!nodes)
		abort();
	for (int i = 0; i < N; i++) {
		nodes[i] = (struct node){rnd(seed) % 1000000, NULL, NULL};
		root = tree_insert(root, &nodes[i]);
	}
	int hits = 0;
	for (int i = 0; i < N; i++)
		hits += tree_lookup(root, rnd(seed) % 1000000);
	consume(tree_sum(root) + hits);
	free(nodes);
}

/* ------------------------------------------------------------ sort */
typedef int (*cmp_fn)(uint32_t, uint32_t);
FN int cmp_plain(uint32_t a, uint32_t b)
{
	return a < b;
}
FN int cmp_low_bits(uint32_t a, uint32_t b)
{
	return (a & 0xffff) < (b & 0xffff);
}
FN int cmp_popcount(uint32_t a, uint32_t b)
{
	return __builtin_popcount(a) < __builtin_popcount(b) ||
	       (__builtin_popcount(a) == __builtin_popcount(b) && a < b);
}

FN size_t qs_partition(uint32_t *v, size_t n, cmp_fn less)
{
	uint32_t pivot = v[(n - 1) / 2]; /* lower middle: keeps j < n - 1 */
	size_t i = 0, j = n - 1;
	for (;;) {
		while (less(v[i], pivot))
			i++;
		while (less(pivot, v[j]))
			j--;
		if (i >= j)
			return j;
		uint32_t t = v[i];
		v[i++] = v[j];
		v[j--] = t;
	}
}

FN void quick_sort(uint32_t *v, size_t n, cmp_fn less)
{
	if (n < 2)
		return;
	size_t p = qs_partition(v, n, less);
	quick_sort(v, p + 1, less);
	quick_sort(v + p + 1, n - p - 1, less);
}

FN void merge_runs(uint32_t *v, uint32_t *tmp, size_t mid, size_t n, cmp_fn less)
{
	size_t i = 0, j = mid, k = 0;
	while (i < mid && j < n)
		tmp[k++] = less(v[j], v[i]) ? v[j++] : v[i++];
	while (i < mid)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof *v);
}

FN void merge_sort(uint32_t *v, uint32_t *tmp, size_t n, cmp_fn less)
{
	if (n < 2)
		return;
	size_t mid = n / 2;
	merge_sort(v, tmp, mid, less);
	merge_sort(v + mid, tmp, n - mid, less);
	merge_runs(v, tmp, mid, n, less);
}

FN void run_sort(uint64_t *seed)
{
	enum { N = 16000 };
	static const cmp_fn cmps[] = {cmp_plain, cmp_low_bits, cmp_popcount};
	uint32_t *v = malloc(N * sizeof *v), *tmp = malloc(N * sizeof *tmp);
	if (!v || !tmp)
		abort();
	for (int round = 0; round < 2; round++) {
		cmp_fn less = cmps[rnd(seed) % 3];
		for (int i = 0; i < N; i++)
			v[i] = (uint32_t)rnd(seed);
		if (round & 1)
			merge_sort(v, tmp, N, less);
		else
			quick_sort(v, N, less);
		consume(v[0] + v[N - 1]);
	}
	free(v);
	free(tmp);
}

/* ------------------------------------------------------------ hash */
FN uint64_t hash_fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	consume(h & 1);
	return h;
}

FN uint64_t hash_murmurish(const unsigned char *p, size_t n)
{
	uint64_t h = 0x9368e53c2f6af274ULL ^ n;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t k;
		memcpy(&k, p + i, 8);
		k *= 0xff51afd7ed558ccdULL;
		k ^= k >> 33;
		h = (h ^ k) * 0xc4ceb9fe1a85ec53ULL;
	}
	consume(h & 1);
	return h ^ (h >> 29);
}

static uint32_t crc_table[256];

FN void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

FN uint64_t hash_crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	consume(c & 1);
	return c ^ 0xffffffffu;
}

FN uint64_t hash_record(const unsigned char *p, size_t n, unsigned kind)
{
	switch (kind % 3) {
	case 0: return hash_fnv1a(p, n) + 1;
	case 1: return hash_murmurish(p, n) + 2;
	default: return hash_crc32(p, n) + 3;
	}
}

FN uint64_t hash_table_build(const unsigned char *buf, size_t len, uint64_t *seed)
{
	uint64_t acc = 0;
	for (size_t off = 0; off + 512 < len;) {
		size_t n = 16 + rnd(seed) % 480;
		acc += hash_record(buf + off, n, (unsigned)(rnd(seed) >> 5));
		off += n;
	}
	return acc;
}

FN void run_hash(uint64_t *seed)
{
	enum { LEN = 1 << 21 };
	unsigned char *buf = malloc(LEN);
	if (!buf)
		abort();
	for (size_t i = 0; i < LEN; i += 8) {
		uint64_t r = rnd(seed);
		memcpy(buf + i, &r, 8);
	}
	consume(hash_table_build(buf, LEN, seed));
	free(buf);
}

/* ------------------------------------------------------------ graph */
typedef uint64_t (*step_fn)(uint64_t x, int depth);
static step_fn steps[32];

/* Each step burns a little, then (while depth remains) calls a successor:
 * usually the "preferred" one (n+1), sometimes one picked by the data. */
// clang-format off
#define STEP(id, n)                                                              \
	FN uint64_t step_##id(uint64_t x, int depth)                             \
	{                                                                        \
		for (int i = 0; i < 200 + 37 * ((n) % 5); i++)                   \
			x = x * 0x9e3779b97f4a7c15ULL + (n);                     \
		if (depth > 0) {                                                 \
			unsigned next = (x >> 60) < 12 ? ((n) + 1) % 32          \
						       : (unsigned)(x >> 27) % 32; \
			x = steps[next](x, depth - 1);                           \
		} else {                                                         \
			consume(x);                                              \
		}                                                                \
		return x + (n);                                                  \
	}
STEP(00, 0)  STEP(01, 1)  STEP(02, 2)  STEP(03, 3)  STEP(04, 4)  STEP(05, 5)  STEP(06, 6)  STEP(07, 7)
STEP(08, 8)  STEP(09, 9)  STEP(10, 10) STEP(11, 11) STEP(12, 12) STEP(13, 13) STEP(14, 14) STEP(15, 15)
STEP(16, 16) STEP(17, 17) STEP(18, 18) STEP(19, 19) STEP(20, 20) STEP(21, 21) STEP(22, 22) STEP(23, 23)
STEP(24, 24) STEP(25, 25) STEP(26, 26) STEP(27, 27) STEP(28, 28) STEP(29, 29) STEP(30, 30) STEP(31, 31)

static step_fn steps[32] = {
	step_00, step_01, step_02, step_03, step_04, step_05, step_06, step_07,
	step_08, step_09, step_10, step_11, step_12, step_13, step_14, step_15,
	step_16, step_17, step_18, step_19, step_20, step_21, step_22, step_23,
	step_24, step_25, step_26, step_27, step_28, step_29, step_30, step_31,
};
// clang-format on

FN void run_graph(uint64_t *seed)
{
	uint64_t acc = 0;
	for (int i = 0; i < 1600; i++) {
		uint64_t r = rnd(seed);
		acc += steps[r % 8](r, 3 + (int)((r >> 8) % 9));
	}
	consume(acc);
}

/* ------------------------------------------------------------ driver */
static double deadline;

static void *burn_thread(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof name, "burn-%d", id);
	pthread_setname_np(pthread_self(), name);
	uint64_t seed = 0x243f6a8885a308d3ULL * (uint64_t)(id + 1);
	for (int iter = id; now() < deadline; iter++) {
		switch (iter % 4) {
		case 0: run_tree(&seed); break;
		case 1: run_sort(&seed); break;
		case 2: run_hash(&seed); break;
		default: run_graph(&seed); break;
		}
	}
	return (void *)(uintptr_t)tl_sink;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10.0;
	pthread_t t[NTHREADS];
	uint64_t total = 0;

	crc_init();
	deadline = now() + secs;
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, burn_thread, (void *)(intptr_t)i);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (uintptr_t)r;
	}
	printf("burn: %.1fs, checksum %llu\n", secs, (unsigned long long)total);
	return 0;
}
