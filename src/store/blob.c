/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <zstd.h>

#include "util/common.h"
#include "store/blob_int.h"

/*
 * The blob: "PLTB", a version byte, a flags byte, then the body, raw or
 * as one zstd frame that states its content size (so the decoder knows
 * what it will allocate before it inflates anything).  The body is
 * written by blob_encode.c and read by blob_decode.c.
 */

/*
 * zstd contexts cost more to set up than a profile costs to code, so each
 * thread keeps one of each; the key's destructor frees them at thread exit.
 */
struct zstd_ctx {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
};

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static bool ctx_key_ok;

static void ctx_free(void *arg)
{
	struct zstd_ctx *z = arg;

	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	free(z);
}

static void ctx_key_init(void)
{
	ctx_key_ok = !pthread_key_create(&ctx_key, ctx_free);
}

static struct zstd_ctx *ctx_get(void)
{
	struct zstd_ctx *z;

	pthread_once(&ctx_once, ctx_key_init);
	if (!ctx_key_ok)
		return NULL;
	z = pthread_getspecific(ctx_key);
	if (!z && (z = calloc(1, sizeof(*z))) && pthread_setspecific(ctx_key, z)) {
		free(z);
		z = NULL;
	}
	return z;
}

/* Compress body after out's header; 1 when zstd did not make it smaller. */
static int deflate_body(const struct strbuf *body, int level, struct strbuf *out, struct error *err)
{
	struct zstd_ctx *z = ctx_get();
	size_t bound = ZSTD_compressBound(body->len), got;

	if (z && !z->c)
		z->c = ZSTD_createCCtx();
	if (!z || !z->c)
		return error_set(err, ERR_NOMEM, "blob: out of memory for a zstd context");
	if (strbuf_grow(out, bound) < 0)
		return 1; /* stored as is: put_blob reports the buffer's error */
	ZSTD_CCtx_reset(z->c, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(z->c, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(z->c, ZSTD_c_checksumFlag, 1);
	got = ZSTD_compress2(z->c, out->buf + out->len, bound, body->buf, body->len);
	if (ZSTD_isError(got))
		return error_set(err, ERR_LIMIT, "blob: zstd: %s", ZSTD_getErrorName(got));
	if (got >= body->len)
		return 1;
	strbuf_setlen(out, out->len + got);
	return 0;
}

/* A checked buffer's sticky error (strbuf.h) as ERR. */
static int blob_buf_error(const struct strbuf *sb, struct error *err)
{
	if (strbuf_error(sb) == ERR_NOMEM)
		return error_set(err, ERR_NOMEM, "blob: out of memory encoding a profile");
	if (strbuf_error(sb))
		return error_set(err, strbuf_error(sb), "blob: the encoding is over %zu bytes",
				 sb->max - 1);
	return 0;
}

static int put_blob(const struct strbuf *body, int level, struct strbuf *out, struct error *err)
{
	size_t start = out->len;
	int rc = 1;

	strbuf_add(out, BLOB_MAGIC, 4);
	strbuf_addch(out, BLOB_VERSION);
	strbuf_addch(out, BLOB_ZSTD);
	if (level)
		rc = deflate_body(body, level, out, err);
	if (rc < 0) {
		strbuf_setlen(out, start);
		return rc;
	}
	if (rc && !strbuf_error(out)) {
		out->buf[start + 5] = 0;
		strbuf_add(out, body->buf, body->len);
	}
	return blob_buf_error(out, err);
}

static int check_level(int level, struct error *err)
{
	if (level && (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()))
		return error_set(err, ERR_USAGE, "blob: no zstd level %d (%d to %d)", level,
				 ZSTD_minCLevel(), ZSTD_maxCLevel());
	return 0;
}

int blob_encode_level(const struct profile *p, int level, struct strbuf *out, struct error *err)
{
	struct strbuf body;
	int rc = check_level(level, err);

	strbuf_init_max(&body, SIZE_MAX);
	if (rc)
		return rc;
	if (blob_write_body(p, &body) < 0)
		rc = strbuf_error(&body)
			     ? blob_buf_error(&body, err)
			     : error_set(err, ERR_NOMEM, "blob: out of memory encoding a profile");
	if (rc == 0)
		rc = put_blob(&body, level, out, err);
	strbuf_release(&body);
	return rc;
}

int blob_encode_tree(const struct profile *p, const struct blob_tree *t, int level,
		     struct strbuf *out, struct error *err)
{
	struct strbuf body;
	int rc = check_level(level, err);

	strbuf_init_max(&body, SIZE_MAX);
	if (rc)
		return rc;
	if (!blob_tree_fits(t, p))
		return error_set(err, ERR_USAGE,
				 "blob: the profile does not share the encoded call tree");
	if (blob_write_body_tree(p, t, &body) < 0)
		rc = strbuf_error(&body)
			     ? blob_buf_error(&body, err)
			     : error_set(err, ERR_NOMEM, "blob: out of memory encoding a profile");
	if (rc == 0)
		rc = put_blob(&body, level, out, err);
	strbuf_release(&body);
	return rc;
}

/* The zstd body inflated into *heap (the caller frees it), under max bytes. */
static int inflate_body(const uint8_t *src, size_t len, size_t max, void **heap, size_t *out_len,
			struct error *err)
{
	unsigned long long size = ZSTD_getFrameContentSize(src, len);
	struct zstd_ctx *z;
	size_t got;

	if (size == ZSTD_CONTENTSIZE_ERROR)
		return error_set(err, ERR_FORMAT, "blob: body is not a zstd frame");
	if (size == ZSTD_CONTENTSIZE_UNKNOWN)
		return error_set(err, ERR_FORMAT, "blob: zstd frame does not state its size");
	if (size > max)
		return error_set(err, ERR_LIMIT, "blob: body inflates to %llu bytes (limit %zu)",
				 size, max);
	got = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(got) || got != len)
		return error_set(err, ERR_FORMAT, "blob: body is not one whole zstd frame");
	z = ctx_get();
	if (z && !z->d)
		z->d = ZSTD_createDCtx();
	*heap = malloc(size ? size : 1);
	if (!z || !z->d || !*heap)
		return error_set(err, ERR_NOMEM, "blob: out of memory inflating %llu bytes", size);
	got = ZSTD_decompressDCtx(z->d, *heap, size, src, len);
	if (ZSTD_isError(got) || got != size)
		return error_set(err, ERR_FORMAT, "blob: corrupt zstd body: %s",
				 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
	*out_len = size;
	return 0;
}

static int open_body(const uint8_t *data, size_t len, const struct blob_limits *lim,
		     const uint8_t **body, size_t *body_len, void **heap, struct error *err)
{
	uint8_t flags;

	if (len < BLOB_HEADER || memcmp(data, BLOB_MAGIC, 4))
		return error_set(err, ERR_FORMAT, "blob: not a profile blob (no PLTB header)");
	if (data[4] != BLOB_VERSION)
		return error_set(err, ERR_UNSUPPORTED, "blob: version %u (this build reads %u)",
				 data[4], BLOB_VERSION);
	flags = data[5];
	if (flags & ~BLOB_ZSTD)
		return error_set(err, ERR_UNSUPPORTED, "blob: unknown flags 0x%02x", flags);
	data += BLOB_HEADER;
	len -= BLOB_HEADER;
	if (flags & BLOB_ZSTD) {
		int rc = inflate_body(data, len, lim->max_inflated, heap, body_len, err);

		*body = *heap;
		return rc;
	}
	if (len > lim->max_inflated)
		return error_set(err, ERR_LIMIT, "blob: body of %zu bytes (limit %zu)", len,
				 lim->max_inflated);
	*body = data;
	*body_len = len;
	return 0;
}

static int decode_into(struct profile *dst, const void *data, size_t len,
		       const struct blob_limits *lim, int type, bool all_nodes, struct error *err)
{
	static const struct blob_limits defaults = BLOB_LIMITS_DEFAULT;
	const uint8_t *body = NULL;
	size_t body_len = 0;
	void *heap = NULL;
	int rc;

	if (!lim)
		lim = &defaults;
	rc = open_body(data, len, lim, &body, &body_len, &heap, err);
	if (!rc)
		rc = blob_read_body(body, body_len, lim, type, dst, all_nodes, err);
	free(heap);
	return rc;
}
int blob_decode(const void *data, size_t len, const struct blob_limits *lim, struct profile **out,
		struct error *err)
{
	struct profile *p = profile_new();
	int rc = p ? decode_into(p, data, len, lim, -1, true, err)
		   : error_set(err, ERR_NOMEM, "blob: out of memory decoding a profile");

	if (rc) {
		profile_free(p);
		p = NULL;
	}
	*out = p;
	return rc;
}

int blob_merge_into(struct profile *dst, const void *data, size_t len,
		    const struct blob_limits *lim, struct error *err)
{
	return decode_into(dst, data, len, lim, -1, false, err);
}

int blob_merge_type_into(struct profile *dst, const void *data, size_t len, uint32_t type,
			 const struct blob_limits *lim, struct error *err)
{
	if (type > INT32_MAX)
		return error_set(err, ERR_USAGE, "blob: no sample type %u", type);
	return decode_into(dst, data, len, lim, (int)type, false, err);
}
