/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "store/labels.h"
#include "store/text.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

static const char hex_digits[] = "0123456789abcdef";

void textout_init(struct textout *o, char *buf, size_t size)
{
	o->buf = buf;
	o->size = size;
	o->len = 0;
	if (size)
		buf[0] = '\0';
}

void textout_add(struct textout *o, const char *s, size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - 1 - o->len;

		memcpy(o->buf + o->len, s, MIN(n, room));
	}
	o->len += n;
}

void textout_addstr(struct textout *o, const char *s)
{
	textout_add(o, s, strlen(s));
}

void textout_addch(struct textout *o, char c)
{
	textout_add(o, &c, 1);
}

/* The escape of byte c (into esc, 5 bytes), or NULL when it stands as it is. */
static const char *escape_byte(unsigned char c, bool ascii_only, char *esc)
{
	if (c == '"' || c == '\\') {
		esc[0] = '\\';
		esc[1] = (char)c;
		esc[2] = '\0';
	} else if (c == '\n' || c == '\t') {
		esc[0] = '\\';
		esc[1] = c == '\n' ? 'n' : 't';
		esc[2] = '\0';
	} else if (c < 0x20 || c == 0x7f || (ascii_only && c >= 0x80)) {
		esc[0] = '\\';
		esc[1] = 'x';
		esc[2] = hex_digits[c >> 4];
		esc[3] = hex_digits[c & 15];
		esc[4] = '\0';
	} else {
		return NULL;
	}
	return esc;
}

void textout_add_quoted(struct textout *o, const char *s)
{
	char esc[5];

	textout_addch(o, '"');
	for (; *s; s++) {
		const char *e = escape_byte((unsigned char)*s, false, esc);

		if (e)
			textout_addstr(o, e);
		else
			textout_addch(o, *s);
	}
	textout_addch(o, '"');
}

size_t textout_finish(struct textout *o)
{
	if (o->size)
		o->buf[MIN(o->len, o->size - 1)] = '\0';
	return o->len;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte the escape at p (a backslash) stands for, and its length; -1 if bad. */
static int unescape(const char *p, size_t *skip)
{
	int hi, lo;

	*skip = 2;
	switch (p[1]) {
	case '"':
	case '\'':
	case '\\': return (unsigned char)p[1];
	case 'n': return '\n';
	case 't': return '\t';
	case 'x':
		hi = hex_value(p[2]);
		lo = hi < 0 ? -1 : hex_value(p[3]);
		*skip = 4;
		return lo < 0 ? -1 : hi * 16 + lo;
	default: return -1;
	}
}

enum unquote_status text_unquote(const char **p, char *out, size_t max, size_t *len)
{
	const char *s = *p;
	char quote = *s++;
	size_t n = 0;

	for (;;) {
		int c = (unsigned char)*s;
		size_t skip = 1;

		if (c == '\0') {
			*p = s;
			return UNQUOTE_UNTERMINATED;
		}
		if (c == quote)
			break;
		if (c == '\\' && (c = unescape(s, &skip)) <= 0) {
			*p = s;
			return c == 0 ? UNQUOTE_NUL : UNQUOTE_BAD_ESCAPE;
		}
		if (n == max) {
			*p = s;
			return UNQUOTE_TOO_LONG;
		}
		out[n++] = (char)c;
		s += skip;
	}
	out[n] = '\0';
	*len = n;
	*p = s + 1;
	return UNQUOTE_OK;
}

const char *text_unquote_why(enum unquote_status st)
{
	switch (st) {
	case UNQUOTE_OK: break;
	case UNQUOTE_UNTERMINATED: return "no closing quote";
	case UNQUOTE_BAD_ESCAPE:
		return "an unknown escape (expected \\\" \\' \\\\ \\n \\t or \\xHH)";
	case UNQUOTE_NUL: return "\\x00 (no NUL bytes)";
	case UNQUOTE_TOO_LONG: return "more than " STR(LABEL_VALUE_MAX) " bytes";
	}
	return "no fault";
}

const char *text_quote(char *buf, const char *s, size_t len)
{
	size_t o = 0, i;
	char esc[5];

	buf[o++] = '"';
	for (i = 0; i < len; i++) {
		const char *e;

		if (o >= QUOTE_MAX) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		e = escape_byte((unsigned char)s[i], true, esc);
		if (e) {
			memcpy(buf + o, e, strlen(e));
			o += strlen(e);
		} else {
			buf[o++] = s[i];
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

int text_fail_at(struct text_cursor *c, const char *at, int code, const char *fmt, ...)
{
	char msg[sizeof(c->err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(c->err, code, "%s: column %zu: %s", c->what, (size_t)(at - c->text) + 1,
			 msg);
}

int text_expected(struct text_cursor *c, const char *what)
{
	char q[QUOTE_SIZE];

	return text_fail_at(c, c->p, ERR_FORMAT, "expected %s, found %s", what,
			    *c->p ? text_quote(q, c->p, strlen(c->p)) : "the end");
}

void text_skip_space(struct text_cursor *c)
{
	while (text_is_space(*c->p))
		c->p++;
}
