/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/error.h"
#include "util/strbuf.h"
#include "util/utf8.h"

char strbuf_slopbuf[1];

void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->alloc = sb->len = sb->max = 0;
	sb->error = 0;
	sb->buf = strbuf_slopbuf;
	if (hint)
		strbuf_grow(sb, hint);
}

void strbuf_init_max(struct strbuf *sb, size_t max)
{
	strbuf_init(sb, 0);
	sb->max = max ? max : 1;
}

void strbuf_release(struct strbuf *sb)
{
	size_t max = sb->max;

	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, 0);
	sb->max = max;
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	size_t max = sb->max;
	char *res;

	if (strbuf_grow(sb, 0) < 0)
		return NULL;
	res = sb->buf;
	if (len)
		*len = sb->len;
	strbuf_init(sb, 0);
	sb->max = max;
	return res;
}

/* A checked buffer's growth: to WANT bytes within its cap, or the sticky error. */
static int grow_checked(struct strbuf *sb, size_t extra)
{
	size_t want, alloc;
	char *p;

	if (sb->error)
		return sb->error;
	if (__builtin_add_overflow(sb->len, extra, &want) || want >= sb->max)
		return sb->error = ERR_LIMIT;
	want++;
	if (want <= sb->alloc)
		return 0;
	alloc = sb->alloc < 16 ? 16 : sb->alloc + sb->alloc / 2;
	if (alloc < want)
		alloc = want;
	if (alloc > sb->max)
		alloc = sb->max; /* still >= want: want <= max */
	p = realloc(sb->alloc ? sb->buf : NULL, alloc);
	if (!p)
		return sb->error = ERR_NOMEM;
	if (!sb->alloc)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want;
	bool fresh = !sb->alloc;

	if (sb->max)
		return grow_checked(sb, extra);
	want = st_add(st_add(sb->len, extra), 1);
	if (want <= sb->alloc)
		return 0;
	if (fresh)
		sb->buf = NULL;
	ALLOC_GROW(sb->buf, want, sb->alloc);
	if (fresh)
		sb->buf[0] = '\0';
	return 0;
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (len > (sb->alloc ? sb->alloc - 1 : 0))
		BUG("strbuf_setlen beyond allocation");
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (strbuf_grow(sb, len) < 0)
		return;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	if (strbuf_grow(sb, 1) < 0)
		return;
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	/* A guess at the room it takes; within a checked buffer's cap. */
	if (strbuf_grow(sb, sb->max && sb->max - 1 - sb->len < 64 ? sb->max - 1 - sb->len : 64) < 0)
		return;
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		BUG("vsnprintf failed for format '%s'", fmt);
	if ((size_t)n >= sb->alloc - sb->len) {
		if (strbuf_grow(sb, (size_t)n) < 0) {
			sb->buf[sb->len] = '\0';
			return;
		}
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void strbuf_add_commas(struct strbuf *sb, unsigned long long n)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu", n);

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			strbuf_addch(sb, ',');
		strbuf_addch(sb, digits[i]);
	}
}

void strbuf_add_xml(struct strbuf *sb, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = 0, i = 0;

	while (i < len) {
		const char *rep;
		size_t n = 1;

		switch (u[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		default:
			n = utf8_xml_len(u + i, len - i);
			if (n) {
				i += n;
				continue;
			}
			/* Not XML or not UTF-8: one '?' per byte. */
			rep = "?";
			n = 1;
		}
		strbuf_add(sb, s + start, i - start);
		strbuf_addstr(sb, rep);
		i += n;
		start = i;
	}
	strbuf_add(sb, s + start, len - start);
}

int strbuf_write(const struct strbuf *sb, FILE *f)
{
	if (sb->len && fwrite(sb->buf, 1, sb->len, f) != sb->len)
		return -1;
	return 0;
}

/*
 * The escape for ASCII byte c in a JSON string, or NULL when it stands as
 * is.  With html, '<', '>' and '&' are escaped too.
 */
static const char *json_ascii_escape(unsigned char c, bool html, char *buf, size_t size)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\b': return "\\b";
	case '\f': return "\\f";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	case '<':
	case '>':
	case '&':
		if (!html)
			return NULL;
		break;
	default:
		if (c >= 0x20)
			return NULL;
	}
	snprintf(buf, size, "\\u%04x", c);
	return buf;
}

/* The one JSON string escaper: every JSON plateau writes goes through it. */
static void json_escape(struct strbuf *sb, const char *s, size_t len, bool html)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = 0, i = 0;
	char buf[8];

	strbuf_addch(sb, '"');
	while (i < len) {
		size_t n = utf8_len(u + i, len - i);
		const char *rep = NULL;

		if (!n) {
			rep = "\\ufffd"; /* one per bad byte, as Go does */
			n = 1;
		} else if (n == 1) {
			rep = json_ascii_escape(u[i], html, buf, sizeof(buf));
		} else if (html && n == 3 && u[i] == 0xe2 && u[i + 1] == 0x80 &&
			   (u[i + 2] | 1) == 0xa9) {
			rep = u[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
		}
		if (rep) {
			strbuf_add(sb, s + start, i - start);
			strbuf_addstr(sb, rep);
			start = i + n;
		}
		i += n;
	}
	strbuf_add(sb, s + start, len - start);
	strbuf_addch(sb, '"');
}

void strbuf_add_json(struct strbuf *sb, const char *s, size_t len)
{
	json_escape(sb, s, len, false);
}

void strbuf_add_json_safe(struct strbuf *sb, const char *s, size_t len)
{
	json_escape(sb, s, len, true);
}
