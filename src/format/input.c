/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/common.h"
#include "format/input.h"

/*
 * Inflating is libdeflate's: whole-buffer, and 1.6 times as fast as zlib's
 * streaming inflate (a pushed pprof, 27 KB to 117 KB: 75 us, was 120 us),
 * but it needs the output buffer up front.  A gzip member's trailer states
 * its size (ISIZE, mod 2^32), so the buffer is sized from the last
 * member's, grown when that was too small (several members, or a trailer
 * that lies), and never beyond max: a gzip bomb is refused having
 * allocated max bytes at most.  libdeflate only says "bad data"; zlib, on
 * that cold path, says whether it is truncated or corrupt, and where.  A
 * decompressor costs about 0.1 us to allocate and free, lost in the noise
 * of one such inflate: each call makes its own.
 */

/* Deflate codes at most 258 bytes in 2 bits: no stream inflates further. */
#define DEFLATE_MAX_RATIO 1032
#define GZIP_MIN_MEMBER	  18 /* a 10-byte header and an 8-byte trailer */
#define GUNZIP_MIN_GROW	  ((size_t)4096)

struct gunzip {
	const char *name;
	const unsigned char *in;
	size_t len, pos; /* the input, and where the member being inflated starts */
	size_t max;
	char *buf; /* cap bytes and a NUL */
	size_t cap, used;
	struct budget *budget; /* or NULL */
	size_t charged;	       /* bytes of buf taken from budget */
};

/* Make g->buf CAP bytes and a NUL, the CAP bytes charged to the budget. */
static int gunzip_resize(struct gunzip *g, size_t cap, struct error *err)
{
	char *buf;

	if (cap > g->charged && !budget_take(g->budget, cap - g->charged))
		return error_set(err, ERR_LIMIT,
				 "%s: " INPUT_BUDGET_MSG
				 " (%zu bytes for the bodies inflating at once); retry later",
				 g->name, g->budget->limit);
	buf = realloc(g->buf, st_add(cap, 1));
	if (!buf) {
		if (cap > g->charged)
			budget_give(g->budget, cap - g->charged);
		return error_set(err, ERR_NOMEM, "%s: out of memory inflating %zu bytes", g->name,
				 cap);
	}
	if (cap < g->charged)
		budget_give(g->budget, g->charged - cap);
	g->buf = buf;
	g->cap = cap;
	g->charged = cap;
	return 0;
}

/* The first buffer size: the trailer's ISIZE for gzip, a guess for zlib. */
static size_t first_cap(const unsigned char *in, size_t len, size_t max)
{
	size_t cap, bound = len > SIZE_MAX / DEFLATE_MAX_RATIO ? SIZE_MAX : len * DEFLATE_MAX_RATIO;

	if (input_is_gzip(in, len) && len >= GZIP_MIN_MEMBER)
		cap = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
		      (size_t)in[len - 1] << 24;
	else
		cap = len > SIZE_MAX / 4 ? SIZE_MAX : len * 4 + GUNZIP_MIN_GROW;
	return MIN(MIN(cap, bound), max);
}

/* Double the buffer, up to max; ERR_LIMIT when it is max already. */
static int gunzip_grow(struct gunzip *g, struct error *err)
{
	if (g->cap >= g->max)
		return error_set(err, ERR_LIMIT, "%s: inflates to more than %zu bytes", g->name,
				 g->max);
	return gunzip_resize(g, MIN(MAX(g->cap, GUNZIP_MIN_GROW / 2) * 2, g->max), err);
}

/* Why libdeflate refused the member at g->pos, in zlib's words. */
static int gunzip_bad_data(const struct gunzip *g, struct error *err)
{
	const unsigned char *end = g->in + g->len;
	unsigned char *scratch;
	z_stream zs;
	int rc = Z_OK;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return error_set(err, ERR_FORMAT, "%s: corrupt gzip data at byte %zu", g->name,
				 g->pos);
	scratch = malloc(1 << 16);
	if (!scratch) {
		inflateEnd(&zs);
		return error_set(err, ERR_NOMEM, "%s: out of memory reading corrupt gzip data",
				 g->name);
	}
	zs.next_in = (Bytef *)(g->in + g->pos);
	while (rc == Z_OK) {
		zs.avail_in = (uInt)MIN((size_t)(end - zs.next_in), (size_t)UINT32_MAX);
		zs.next_out = scratch;
		zs.avail_out = 1 << 16;
		rc = inflate(&zs, Z_NO_FLUSH);
	}
	inflateEnd(&zs);
	free(scratch);
	/* With room for output, Z_BUF_ERROR means the input ran out. */
	return error_set(err, ERR_FORMAT, "%s: %s gzip data at byte %zu", g->name,
			 rc == Z_BUF_ERROR ? "truncated" : "corrupt", (size_t)(zs.next_in - g->in));
}

/* Inflate the member (gzip) or stream (zlib) at g->pos after the output so far. */
static int gunzip_member(struct gunzip *g, struct libdeflate_decompressor *d, struct error *err)
{
	const unsigned char *in = g->in + g->pos;
	size_t in_len = g->len - g->pos;

	for (;;) {
		size_t in_used = 0, out_len = 0;
		enum libdeflate_result r;
		int rc;

		if (input_is_gzip(in, in_len))
			r = libdeflate_gzip_decompress_ex(d, in, in_len, g->buf + g->used,
							  g->cap - g->used, &in_used, &out_len);
		else
			r = libdeflate_zlib_decompress_ex(d, in, in_len, g->buf + g->used,
							  g->cap - g->used, &in_used, &out_len);
		if (r == LIBDEFLATE_SUCCESS) {
			g->pos += in_used;
			g->used += out_len;
			return 0;
		}
		if (r != LIBDEFLATE_INSUFFICIENT_SPACE)
			return gunzip_bad_data(g, err);
		rc = gunzip_grow(g, err);
		if (rc)
			return rc;
	}
}

/* Inflate into g->buf; on error nothing is left allocated or charged. */
static int gunzip_run(struct gunzip *g, struct error *err)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	int rc;

	if (!d)
		return error_set(err, ERR_NOMEM, "%s: out of memory for a decompressor", g->name);
	rc = gunzip_resize(g, first_cap(g->in, g->len, g->max), err);
	/* Concatenated gzip members are one stream, as gunzip treats them. */
	while (!rc) {
		rc = gunzip_member(g, d, err);
		if (!input_is_gzip(g->in + g->pos, g->len - g->pos))
			break;
	}
	libdeflate_free_decompressor(d);
	/* A trailer that promised more than came: give the rest back. */
	if (!rc && g->cap - g->used > GUNZIP_MIN_GROW && g->cap - g->used > g->used / 4)
		rc = gunzip_resize(g, g->used, err);
	if (rc) {
		free(g->buf);
		budget_give(g->budget, g->charged);
		return rc;
	}
	g->buf[g->used] = '\0';
	return 0;
}

int input_gunzip(const char *name, const void *data, size_t len, size_t max, char **out,
		 size_t *out_len, struct error *err)
{
	struct gunzip g = {.name = name, .in = data, .len = len, .max = max};
	int rc = gunzip_run(&g, err);

	if (rc)
		return rc;
	*out = g.buf;
	*out_len = g.used;
	return 0;
}

static int read_all(struct input *in, int fd, struct error *err)
{
	size_t alloc = 1 << 16, used = 0;
	char *buf = xmalloc(alloc + 1);

	for (;;) {
		ssize_t n;

		if (used == alloc) {
			if (alloc >= INPUT_MAX_FILE) {
				free(buf);
				return error_set(err, ERR_LIMIT, "%s: larger than %zu bytes",
						 in->name, INPUT_MAX_FILE);
			}
			alloc = st_mult(alloc, 2);
			buf = xrealloc(buf, alloc + 1);
		}
		n = read(fd, buf + used, alloc - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			return error_set(err, ERR_IO, "%s: %s", in->name, strerror(e));
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	in->heap = buf;
	in->data = buf;
	in->len = used;
	return 0;
}

/* Map a regular file with one extra zero page-tail byte guaranteed. */
static int map_file(struct input *in, int fd, size_t size, struct error *err)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	/* A size that is a page multiple has no zero tail: read instead. */
	if (size == 0 || size % (size_t)page == 0)
		return read_all(in, fd, err);
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return read_all(in, fd, err);
	madvise(p, size, MADV_SEQUENTIAL);
	in->map = p;
	in->map_len = size;
	in->data = p;
	in->len = size;
	return 0;
}

static int maybe_inflate(struct input *in, size_t max, struct budget *budget, struct error *err)
{
	struct gunzip g = {.name = in->name,
			   .in = (const void *)in->data,
			   .len = in->len,
			   .max = max,
			   .budget = budget};
	int rc;

	if (!input_is_gzip(in->data, in->len))
		return 0;
	rc = gunzip_run(&g, err);
	if (rc)
		return rc;
	debug(DEBUG_FORMAT, "%s: gzip, %zu bytes inflated to %zu", in->name, in->len, g.used);
	if (in->map)
		munmap(in->map, in->map_len);
	free(in->heap);
	in->map = NULL;
	in->heap = g.buf;
	in->data = g.buf;
	in->len = g.used;
	in->budget = budget;
	in->charged = budget ? g.charged : 0;
	return 0;
}

int input_open(struct input *in, const char *path, struct error *err)
{
	struct stat st;
	int fd, rc;

	memset(in, 0, sizeof(*in));
	in->name = strcmp(path, "-") ? path : "<stdin>";
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return error_set(err, ERR_IO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		rc = error_set(err, ERR_IO, "%s: is a directory", path);
	else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > INPUT_MAX_FILE)
		rc = error_set(err, ERR_LIMIT, "%s: larger than %zu bytes", path, INPUT_MAX_FILE);
	else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		rc = map_file(in, fd, (size_t)st.st_size, err);
	else
		rc = read_all(in, fd, err);
	if (fd > 0)
		close(fd);
	if (!rc)
		debug(DEBUG_FORMAT, "%s: opened, %zu bytes %s", in->name, in->len,
		      in->map ? "mapped" : "read");
	if (!rc)
		rc = maybe_inflate(in, INPUT_MAX_INFLATED, NULL, err);
	if (rc)
		input_close(in);
	return rc;
}

int input_from_buf_budget(struct input *in, const char *name, const void *data, size_t len,
			  size_t max_inflated, struct budget *budget, struct error *err)
{
	int rc;

	memset(in, 0, sizeof(*in));
	in->name = name;
	if (!input_is_gzip(data, len)) {
		/* Copy so the NUL-terminator promise holds. */
		in->heap = alloc_memdup(data, len);
		if (!in->heap)
			return error_set(err, ERR_NOMEM, "%s: out of memory for %zu bytes", name,
					 len);
		in->data = in->heap;
		in->len = len;
		in->budget = budget; /* for the decoders (pprof's); the copy is not charged */
		return 0;
	}
	in->data = data;
	in->len = len;
	rc = maybe_inflate(in, max_inflated, budget, err);
	if (rc)
		memset(in, 0, sizeof(*in));
	return rc;
}

int input_from_buf(struct input *in, const char *name, const void *data, size_t len,
		   size_t max_inflated, struct error *err)
{
	return input_from_buf_budget(in, name, data, len, max_inflated, NULL, err);
}

void input_close(struct input *in)
{
	if (in->map)
		munmap(in->map, in->map_len);
	free(in->heap);
	budget_give(in->budget, in->charged);
	memset(in, 0, sizeof(*in));
}

const char *input_discard(const struct input *in, const char *from, const char *to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)from + page - 1) & ~(page - 1);
	uintptr_t end = (uintptr_t)to & ~(page - 1);

	if (in->map && end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
	return to;
}
