/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STRBUF_H
#define PLATEAU_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * A growable byte buffer, always NUL-terminated (buf[len] == '\0').
 * STRBUF_INIT gives an empty buffer that owns no memory; strbuf_release()
 * frees it and leaves it reusable.  strbuf_detach() hands the memory to
 * the caller, who must free() it.
 *
 * Such a buffer dies when memory runs out (the command-line tools).  A
 * checked one (strbuf_init_max(), as curl's dynbuf) has a cap instead and
 * never dies: the first add that would pass the cap or cannot allocate
 * leaves the buffer as it was and records ERR_LIMIT or ERR_NOMEM in a
 * sticky error; later adds do nothing.  Whoever filled it checks
 * strbuf_error() once at the end (the server's buffers).
 */
struct strbuf {
	size_t alloc;
	size_t len;
	char *buf;
	size_t max; /* checked: len stays below max; 0 = unchecked (dies) */
	int error;  /* checked: 0, or ERR_NOMEM / ERR_LIMIT once an add failed */
};

extern char strbuf_slopbuf[];
#define STRBUF_INIT                        \
	{                                  \
		0, 0, strbuf_slopbuf, 0, 0 \
	}

/* A checked empty buffer of at most max - 1 bytes (max > 0), as strbuf_init_max(). */
#define STRBUF_INIT_MAX(max)                   \
	{                                      \
		0, 0, strbuf_slopbuf, (max), 0 \
	}

void strbuf_init(struct strbuf *sb, size_t hint);
/* An empty checked buffer of at most MAX - 1 bytes (MAX > 0). */
void strbuf_init_max(struct strbuf *sb, size_t max);
/* Free the memory; the buffer stays checked with its cap, error cleared. */
void strbuf_release(struct strbuf *sb);
/* Detach the memory (the caller frees it); NULL when a checked buffer cannot allocate. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
/* Room for EXTRA more bytes: 0, or (checked buffers) the sticky error. */
int strbuf_grow(struct strbuf *sb, size_t extra);
/* 0, or the sticky error of a checked buffer (ERR_NOMEM, ERR_LIMIT). */
static inline int strbuf_error(const struct strbuf *sb)
{
	return sb->error;
}

static inline void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

void strbuf_setlen(struct strbuf *sb, size_t len);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Append n with thousands separators, as flamegraph.pl prints counts. */
void strbuf_add_commas(struct strbuf *sb, unsigned long long n);
/*
 * Append s escaped for XML text and attribute values; bytes XML cannot
 * carry (control characters, invalid UTF-8) become '?', so any input
 * gives a well-formed document.
 */
void strbuf_add_xml(struct strbuf *sb, const char *s, size_t len);
/*
 * Append s as a JSON string literal, quotes included.  These two are the
 * only JSON string escapers in plateau: every JSON writer (check --json,
 * diff --format json, speedscope, the viewer's embedded data, the
 * server's answers) uses one of them, so any input gives valid UTF-8 JSON.
 * Each byte that is not part of well-formed UTF-8 (stray continuation
 * bytes, truncated sequences, overlong forms, surrogates, code points past
 * U+10FFFF) becomes \ufffd, one per byte as Go does; '"' and '\\' are
 * escaped, control characters become \b \f \n \r \t or \u00XX; valid
 * multi-byte sequences pass through unchanged.
 */
void strbuf_add_json(struct strbuf *sb, const char *s, size_t len);
/*
 * As strbuf_add_json, the way Go's encoding/json writes a string so
 * servers answering Go clients give the same bytes, and safe inside an
 * HTML <script> block: '<', '>', '&', U+2028 and U+2029 are \u-escaped
 * too.
 */
void strbuf_add_json_safe(struct strbuf *sb, const char *s, size_t len);

/* Write the whole buffer to f; returns 0 or -1 with errno set. */
int strbuf_write(const struct strbuf *sb, FILE *f);

#endif
