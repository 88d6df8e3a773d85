/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_BLOB_INT_H
#define PLATEAU_STORE_BLOB_INT_H

#include "store/blob.h"

/* What blob.c, blob_encode.c and blob_decode.c share; doc/store-format.md has the layout. */

#define BLOB_MAGIC	  "PLTB"
#define BLOB_VERSION	  1
#define BLOB_HEADER	  6
#define BLOB_ZSTD	  0x01 /* flags: the body is a zstd frame */
#define BLOB_MAX_TYPES	  16   /* as profile_add_sample supports */
#define BLOB_MAX_DECIMALS 9    /* as profile_set_decimals supports */
#define BLOB_FRAME_FLAGS  (FRAME_INLINED | FRAME_KERNEL | FRAME_JIT | FRAME_UNSYMBOLIZED)
#define UNSET		  UINT32_MAX
#define VARINT_MAX	  10 /* bytes of a 64-bit LEB128 number at most */

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63));
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)((v >> 1) ^ (0 - (v & 1)));
}

static inline uint64_t magnitude(int64_t v)
{
	return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/*
 * p's body (everything after the header, before compression), appended
 * to body.  0, or ERR_NOMEM (no memory), or body's own sticky error (a
 * checked body over its cap): body is incomplete then.
 */
int blob_write_body(const struct profile *p, struct strbuf *body);

/* The same, with the frames and nodes sections taken from t, which must fit p. */
int blob_write_body_tree(const struct profile *p, const struct blob_tree *t, struct strbuf *body);

/* Whether p has the nodes, frames and strings t was made from (see blob_tree_new). */
bool blob_tree_fits(const struct blob_tree *t, const struct profile *p);

/*
 * Check a whole body and add it to dst as profile_merge would add the
 * profile it holds; all_nodes creates even the nodes no sample is under
 * (blob_decode's exact copy).  A body that fails its checks leaves dst
 * as it was.  TYPE >= 0: only that sample type (blob_merge_type_into).
 */
int blob_read_body(const uint8_t *body, size_t len, const struct blob_limits *lim, int type,
		   struct profile *dst, bool all_nodes, struct error *err);

#endif
