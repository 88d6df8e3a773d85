/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_BLOB_H
#define PLATEAU_STORE_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/error.h"
#include "util/strbuf.h"

/*
 * How the profile store keeps one profile (one series, one time window):
 * a blob of a 6-byte header (magic "PLTB", version, flags) and a body of
 * varint columns, zstd-compressed.  doc/store-format.md gives the layout
 * byte by byte.
 *
 * Blobs come back from disk and may be corrupt, so decoding checks every
 * length, count and id before it uses it, never crashes, and allocates no
 * more than the limits allow; a bad blob is a one-line "blob: ..." error
 * naming the field.  What the blob keeps is everything profile_equal()
 * compares; ids are renumbered, and the input order (keep_order) is not
 * kept.  Encoding is deterministic: a decoded blob encodes to the same
 * bytes again.  Every function may be called from several threads at once (each
 * thread keeps its own zstd contexts).
 */

struct blob_limits {
	size_t max_inflated;  /* body bytes after decompression */
	uint32_t max_nodes;   /* call tree nodes besides the root; frames too */
	uint32_t max_strings; /* distinct strings; comments too */
	uint32_t max_samples; /* samples; label sets and labels too */
};

/* Far above any one series' window, far below what would hurt the server. */
#define BLOB_LIMITS_DEFAULT                                    \
	{                                                      \
		(size_t)64 << 20, 1u << 22, 1u << 21, 1u << 22 \
	}

/* zstd level of blob_encode: see doc/store-format.md for the measurements. */
#define BLOB_LEVEL_DEFAULT 1

/*
 * Append p's blob to out.  level is a zstd level (negative ones are the
 * fast levels), or 0 to store the body uncompressed; a body that zstd
 * cannot shrink is stored uncompressed whatever the level.  Returns 0, or
 * ERR_USAGE for a level zstd lacks.
 */
int blob_encode_level(const struct profile *p, int level, struct strbuf *out, struct error *err);

static inline int blob_encode(const struct profile *p, struct strbuf *out, struct error *err)
{
	return blob_encode_level(p, BLOB_LEVEL_DEFAULT, out, err);
}

/*
 * What a body holds about the call tree alone, its frames and their
 * strings, written once for several profiles that share them: the
 * service encodes one blob per group of a push's samples (split by their
 * promoted labels), each from a view of the push with its nodes and frames.  The caller owns the
 * tree and frees it with blob_tree_free() (NULL is a no-op); it borrows
 * nothing from p.
 */
struct blob_tree;

struct blob_tree *blob_tree_new(const struct profile *p);
void blob_tree_free(struct blob_tree *t);

/*
 * As blob_encode_level(), the same bytes, for a p that shares t's call
 * tree: its nodes and frames are the very arrays t was made from,
 * unchanged since, and its string table the same one or a copy with
 * strings added after them.  ERR_USAGE when p's node or frame arrays are
 * not the tree's (a different or grown profile), as for a bad level.
 */
int blob_encode_tree(const struct profile *p, const struct blob_tree *t, int level,
		     struct strbuf *out, struct error *err);

/*
 * Decode a blob into a new profile (*out, the caller's to free).  lim may
 * be NULL for BLOB_LIMITS_DEFAULT.  Returns 0, ERR_FORMAT for a corrupt
 * blob, ERR_LIMIT for one over the limits, ERR_UNSUPPORTED for a version
 * or flags this build does not know; *out is NULL then.
 */
int blob_decode(const void *data, size_t len, const struct blob_limits *lim, struct profile **out,
		struct error *err);

/*
 * Add a blob's profile into dst, leaving dst as profile_merge() would with
 * the decoded profile (but without building it: the blob's ids map
 * straight to dst's).  Errors as blob_decode, which leave dst untouched,
 * and as profile_merge: ERR_USAGE when the sample types differ, ERR_LIMIT
 * when a sum overflows (dst then holds part of the blob, as with
 * profile_merge).
 */
int blob_merge_into(struct profile *dst, const void *data, size_t len,
		    const struct blob_limits *lim, struct error *err);

/*
 * As blob_merge_into with only sample type TYPE (an index) of the blob,
 * as if the blob held that type alone and only its samples with a value
 * in it: a push's blob holds all its sample types, each read by its own
 * series.  ERR_USAGE when the blob has no such type.
 */
int blob_merge_type_into(struct profile *dst, const void *data, size_t len, uint32_t type,
			 const struct blob_limits *lim, struct error *err);

#endif
