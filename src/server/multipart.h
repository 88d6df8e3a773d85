/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_MULTIPART_H
#define PLATEAU_SERVER_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/*
 * A strict multipart/form-data reader (RFC 7578 over RFC 2046) for
 * bodies held whole in memory, as POST /ingest receives them from
 * Pyroscope's clients.  Parts are returned in order with their name,
 * filename and content type; their data is a pointer into the body,
 * never a copy.
 *
 * Strict means: CRLF line ends only, no folded header lines, exactly
 * one Content-Disposition of type form-data with a non-empty name, no
 * encoding but 7bit/8bit/binary, a boundary that appears only as a
 * delimiter, a close delimiter at the end.  Other headers are ignored
 * (RFC 7578 4.8), as are the preamble and the epilogue.  Every error is
 * one line naming the part ("multipart: part 2: no Content-Disposition
 * name"); ERR_FORMAT for malformed input, ERR_LIMIT past a limit below,
 * ERR_UNSUPPORTED for a transfer encoding.
 */

#define MULTIPART_BOUNDARY_MAX	   70	/* RFC 2046 5.1.1 */
#define MULTIPART_CONTENT_TYPE_MAX 1024 /* the request's Content-Type value */
#define MULTIPART_MAX_PARTS	   16
#define MULTIPART_HEADER_MAX	   2048 /* one part's header block, line ends included */
#define MULTIPART_VALUE_MAX	   255	/* a name, filename or content type */

/*
 * The boundary of a Content-Type value "multipart/form-data; boundary=X"
 * (X a token or a quoted string; other parameters are ignored) into
 * boundary, NUL-terminated.  Returns 0 or ERR_FORMAT / ERR_LIMIT.
 */
int multipart_boundary(const char *content_type, char boundary[MULTIPART_BOUNDARY_MAX + 1],
		       struct error *err);

struct multipart_part {
	unsigned index;				/* 1 for the first part */
	char name[MULTIPART_VALUE_MAX + 1];	/* Content-Disposition name, unquoted */
	char filename[MULTIPART_VALUE_MAX + 1]; /* "" when has_filename is false */
	bool has_filename;
	/* The Content-Type value; "text/plain" when absent (RFC 7578 4.4). */
	char content_type[MULTIPART_VALUE_MAX + 1];
	const unsigned char *data; /* borrowed from the body */
	size_t len;
};

struct multipart_reader {
	const unsigned char *body;
	size_t len, pos;
	char delim[4 + MULTIPART_BOUNDARY_MAX + 1]; /* CRLF "--" boundary */
	size_t delim_len;
	unsigned parts;
	int state;
};

/*
 * Start reading body (borrowed, len bytes) with a boundary from
 * multipart_boundary().
 */
void multipart_init(struct multipart_reader *r, const char *boundary, const void *body, size_t len);

/*
 * The next part: 1 with *part filled, 0 after the last one (the close
 * delimiter), negative on error (and on every call after one).
 */
int multipart_next(struct multipart_reader *r, struct multipart_part *part, struct error *err);

#endif
