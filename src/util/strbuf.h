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
 */
struct strbuf {
	size_t alloc;
	size_t len;
	char *buf;
};

extern char strbuf_slopbuf[];
#define STRBUF_INIT                  \
	{                            \
		0, 0, strbuf_slopbuf \
	}

void strbuf_init(struct strbuf *sb, size_t hint);
void strbuf_release(struct strbuf *sb);
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_grow(struct strbuf *sb, size_t extra);

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
