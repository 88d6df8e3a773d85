/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_TEXT_H
#define PLATEAU_STORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/*
 * Text helpers shared by the store's parsers and formatters (internal to
 * src/store/).  Nothing here allocates: the server must survive
 * allocation failure, and these run on every query and push.
 */

/*
 * A bounded writer with snprintf's contract: it keeps what fits in
 * buf[0..size) (NUL-terminated when size > 0) and counts everything, so
 * textout_finish() returns the length the whole text needs.
 */
struct textout {
	char *buf;
	size_t size;
	size_t len;
};

void textout_init(struct textout *o, char *buf, size_t size);
void textout_add(struct textout *o, const char *s, size_t n);
void textout_addstr(struct textout *o, const char *s);
void textout_addch(struct textout *o, char c);
/*
 * Append s as a double-quoted string: '"' and '\' escaped with '\', tab and
 * newline as \t and \n, other control bytes (and DEL) as \xHH; other bytes,
 * UTF-8 included, as they are.  text_unquote() reads it back.
 */
void textout_add_quoted(struct textout *o, const char *s);
size_t textout_finish(struct textout *o);

/*
 * Decode the quoted string at *p, which starts with '"' or '\''.  Escapes:
 * \" \' \\ \n \t \xHH.  At most max bytes are written to out (which has
 * room for max + 1: a NUL is added).  On success *p moves past the closing
 * quote and *len is the decoded length; on failure *p points at the fault.
 */
enum unquote_status {
	UNQUOTE_OK,
	UNQUOTE_UNTERMINATED, /* *p is the end of the text */
	UNQUOTE_BAD_ESCAPE,   /* *p is the backslash */
	UNQUOTE_NUL,	      /* \x00: *p is the backslash */
	UNQUOTE_TOO_LONG,     /* *p is the byte that would be max + 1 */
};
enum unquote_status text_unquote(const char **p, char *out, size_t max, size_t *len);
/* What went wrong, for "value of X has ...": e.g. "an unknown escape". */
const char *text_unquote_why(enum unquote_status st);

/*
 * Quote len bytes of s for an error message into buf (QUOTE_SIZE bytes):
 * "..." on one line, escaped as textout_add_quoted() does but with every
 * byte outside printable ASCII as \xHH, cut with "..." after QUOTE_MAX
 * bytes.  Returns buf.
 */
#define QUOTE_MAX  48
#define QUOTE_SIZE (QUOTE_MAX + 10)
const char *text_quote(char *buf, const char *s, size_t len);

/*
 * A parser's place in its text, for one-line messages that say where:
 * "WHAT: column N: MESSAGE", N the 1-based byte column.
 */
struct text_cursor {
	const char *what; /* "selector", "ingest name", ... */
	const char *text;
	const char *p;
	struct error *err;
};

/* Set the message for the fault at at (in c->text) and return code. */
int text_fail_at(struct text_cursor *c, const char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "expected WHAT, found ..." at c->p: the quoted rest of the text, or "the end". */
int text_expected(struct text_cursor *c, const char *what);

void text_skip_space(struct text_cursor *c);

/* For strspn(): the bytes of app names (and APP.TYPE), and of label names. */
#define TEXT_APP_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define TEXT_KEY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

static inline bool text_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline bool text_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool text_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

#endif
