/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/common.h"
#include "lib/input.h"

int input_gunzip(const char *name, const void *data, size_t len, size_t max, char **out,
		 size_t *out_len, struct error *err)
{
	size_t alloc = len * 4 + 4096, used = 0;
	char *buf;
	z_stream zs;
	int rc;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 32: zlib or gzip, detected from the header. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return error_set(err, ERR_IO, "%s: cannot initialise zlib", name);
	if (alloc > max + 1)
		alloc = max + 1;
	buf = xmalloc(alloc + 1);
	zs.next_in = (Bytef *)data;
	do {
		size_t chunk = len - (size_t)((const char *)zs.next_in - (const char *)data);

		zs.avail_in = chunk > UINT32_MAX ? UINT32_MAX : (uInt)chunk;
		if (used == alloc) {
			if (alloc > max) {
				inflateEnd(&zs);
				free(buf);
				return error_set(err, ERR_LIMIT,
						 "%s: inflates to more than %zu bytes", name, max);
			}
			alloc = st_mult(alloc, 2);
			if (alloc > max + 1)
				alloc = max + 1;
			buf = xrealloc(buf, alloc + 1);
		}
		zs.next_out = (Bytef *)buf + used;
		zs.avail_out = (uInt)MIN(alloc - used, (size_t)UINT32_MAX);
		rc = inflate(&zs, Z_NO_FLUSH);
		used = (size_t)((char *)zs.next_out - buf);
		/* Concatenated gzip members are one stream, as gunzip treats them. */
		if (rc == Z_STREAM_END && (const char *)zs.next_in < (const char *)data + len &&
		    input_is_gzip(zs.next_in,
				  len - (size_t)((const char *)zs.next_in - (const char *)data))) {
			inflateReset(&zs);
			rc = Z_OK;
		}
	} while (rc == Z_OK || (rc == Z_BUF_ERROR && used == alloc));
	inflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(buf);
		return error_set(err, ERR_FORMAT, "%s: %s gzip data at byte %zu", name,
				 rc == Z_BUF_ERROR ? "truncated" : "corrupt",
				 (size_t)((const char *)zs.next_in - (const char *)data));
	}
	if (used > max) {
		free(buf);
		return error_set(err, ERR_LIMIT, "%s: inflates to more than %zu bytes", name, max);
	}
	buf[used] = '\0';
	*out = buf;
	*out_len = used;
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

static int maybe_inflate(struct input *in, size_t max, struct error *err)
{
	char *out;
	size_t out_len;
	int rc;

	if (!input_is_gzip(in->data, in->len))
		return 0;
	rc = input_gunzip(in->name, in->data, in->len, max, &out, &out_len, err);
	if (rc)
		return rc;
	if (in->map)
		munmap(in->map, in->map_len);
	free(in->heap);
	in->map = NULL;
	in->heap = out;
	in->data = out;
	in->len = out_len;
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
		rc = maybe_inflate(in, INPUT_MAX_INFLATED, err);
	if (rc)
		input_close(in);
	return rc;
}

int input_from_buf(struct input *in, const char *name, const void *data, size_t len,
		   size_t max_inflated, struct error *err)
{
	int rc;

	memset(in, 0, sizeof(*in));
	in->name = name;
	if (!input_is_gzip(data, len)) {
		/* Copy so the NUL-terminator promise holds. */
		in->heap = xmemdup(data, len);
		in->data = in->heap;
		in->len = len;
		return 0;
	}
	in->data = data;
	in->len = len;
	rc = maybe_inflate(in, max_inflated, err);
	if (rc)
		memset(in, 0, sizeof(*in));
	return rc;
}

void input_close(struct input *in)
{
	if (in->map)
		munmap(in->map, in->map_len);
	free(in->heap);
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
