/* demo.c - plateau demo workload: a toy "ingest pipeline" whose CPU time
 * splits across clearly named functions, on 2 threads:
 *
 *   process_block
 *     parse_input     -> parse_field -> scan_digits          (~15%)
 *     compute_hashes  -> hash_chunk  -> mix_lanes            (~45%)
 *     compress_block  -> find_match  -> match_length         (~25%)
 *     write_output    -> format_record                       (~10%)
 *
 * Runs about 1 second by default; "demo 3" runs ~3x longer, "demo 0.2" less.
 * Build: cc -O2 -g -fno-omit-frame-pointer -pthread demo.c -o demo
 * Profile: perf record -g -F 999 ./demo && perf script > demo.perf.txt
 *
 * gcc gives stackless leaf functions no frame even with
 * -fno-omit-frame-pointer, which makes frame-pointer unwinding skip the
 * leaf's caller. So each innermost function ends by calling account(),
 * which keeps it a non-leaf with a proper frame. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FN __attribute__((noipa)) /* keep every stage a real, named frame */

enum { BLOCK = 16384, NBLOCKS_PER_SEC = 2500, NTHREADS = 2 };

struct ctx {
	unsigned char in[BLOCK];
	unsigned char out[BLOCK * 2];
	uint32_t fields[BLOCK / 4];
	uint64_t hashes[BLOCK / 64];
	size_t nfields, nout;
	int fd;
};

static _Thread_local uint64_t work_done; /* per thread: no cache ping-pong */
static uint64_t total_work;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

FN void account(uint64_t v)
{
	work_done += v;
}

/* ---- parse_input: ~15% ---- */
FN uint32_t scan_digits(const unsigned char *p, size_t n)
{
	uint32_t v = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			v = v * 10 + (p[i] % 10) + pass;
	account(v);
	return v + 1;
}

FN size_t parse_field(struct ctx *c, size_t off)
{
	size_t len = 24 + (c->in[off] & 7);
	if (off + len > BLOCK)
		len = BLOCK - off;
	c->fields[c->nfields++ % (BLOCK / 4)] = scan_digits(c->in + off, len);
	return off + len;
}

FN void parse_input(struct ctx *c, unsigned seed)
{
	for (size_t i = 0; i < BLOCK; i += 2) {
		seed = seed * 1103515245u + 12345u;
		c->in[i] = (unsigned char)(seed >> 16);
		c->in[i + 1] = (unsigned char)(seed >> 24);
	}
	c->nfields = 0;
	for (size_t off = 0; off < BLOCK;)
		off = parse_field(c, off);
}

/* ---- compute_hashes: ~45% ---- */
FN uint64_t mix_lanes(const unsigned char *p, uint64_t h)
{
	for (int round = 0; round < 44; round++)
		for (int i = 0; i < 64; i += 8) {
			uint64_t w;
			memcpy(&w, p + i, 8);
			h ^= w + round;
			h *= 0x9e3779b97f4a7c15ULL;
			h ^= h >> 29;
		}
	account(h);
	return h + 1;
}

FN uint64_t hash_chunk(const unsigned char *p, uint64_t seed)
{
	uint64_t h = mix_lanes(p, seed ^ 0xcbf29ce484222325ULL);
	return h ^ (h >> 31);
}

FN void compute_hashes(struct ctx *c)
{
	for (size_t i = 0; i < BLOCK / 64; i++)
		c->hashes[i] = hash_chunk(c->in + i * 64, i);
}

/* ---- compress_block: ~25% ---- */
FN size_t match_length(const unsigned char *a, const unsigned char *b, size_t max)
{
	size_t n = 0, best = 0;
	for (size_t i = 0; i < max; i++) {
		n = (a[i] & 0xf) == (b[i] & 0xf) ? n + 1 : 0;
		if (n > best)
			best = n;
	}
	account(best);
	return best + 1;
}

FN size_t find_match(const unsigned char *in, size_t pos)
{
	size_t best = 0;
	for (size_t d = 1; d <= 4 && d <= pos; d++) {
		size_t l = match_length(in + pos, in + pos - d, 68);
		if (l > best)
			best = l;
	}
	return best;
}

FN void compress_block(struct ctx *c)
{
	c->nout = 0;
	for (size_t pos = 0; pos + 68 <= BLOCK; pos += 64) {
		size_t l = find_match(c->in, pos);
		c->out[c->nout++ % sizeof c->out] = (unsigned char)l;
	}
}

/* ---- write_output: ~10% ---- */
FN size_t format_record(unsigned char *dst, uint64_t v)
{
	size_t n = 0;
	for (int rep = 0; rep < 3; rep++) {
		uint64_t x = v + rep;
		unsigned char tmp[24];
		size_t k = 0;
		do {
			tmp[k++] = (unsigned char)('0' + x % 10);
			x /= 10;
		} while (x);
		while (k)
			dst[n++] = tmp[--k];
		dst[n++] = rep == 2 ? '\n' : ',';
	}
	account(n);
	return n;
}

FN void write_output(struct ctx *c)
{
	size_t n = 0;
	for (size_t i = 0; i < BLOCK / 64; i++) {
		n += format_record(c->out + n, c->hashes[i]);
		if (n > sizeof c->out - 128) {
			if (write(c->fd, c->out, n) < 0)
				abort();
			n = 0;
		}
	}
	if (n && write(c->fd, c->out, n) < 0)
		abort();
}

FN size_t process_block(struct ctx *c, unsigned seed)
{
	parse_input(c, seed);
	compute_hashes(c);
	compress_block(c);
	write_output(c);
	return c->nout; /* work after the last call: no tail call */
}

struct job {
	int first, count;
};

static void *worker(void *arg)
{
	const struct job *j = arg;
	struct ctx *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->fd = open("/dev/null", O_WRONLY);
	size_t n = 0;
	for (int b = j->first; b < j->first + j->count; b++)
		n += process_block(c, (unsigned)b * 2654435761u);
	account(n);
	pthread_mutex_lock(&total_lock);
	total_work += work_done;
	pthread_mutex_unlock(&total_lock);
	close(c->fd);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int nblocks = (int)(NBLOCKS_PER_SEC * NTHREADS * scale);
	if (nblocks < NTHREADS)
		nblocks = NTHREADS;

	pthread_t t[NTHREADS];
	struct job jobs[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		jobs[i].first = i * nblocks / NTHREADS;
		jobs[i].count = (i + 1) * nblocks / NTHREADS - jobs[i].first;
		pthread_create(&t[i], NULL, worker, &jobs[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("demo: %d blocks, checksum %llu\n", nblocks, (unsigned long long)total_work);
	return 0;
}
