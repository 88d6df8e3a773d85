/* SPDX-License-Identifier: MIT */
#include <strings.h>

#include "util/common.h"
#include "server/multipart.h"

/*
 * Why not libmicrohttpd's post processor (MHD_create_post_processor),
 * measured with build/multipart_bench (bench/multipart_bench.c: both
 * parsers on the same bodies inside a real libmicrohttpd 0.9.75 request,
 * 2 shared cores):
 *
 * - Behaviour.  Of the 17 malformed bodies of multipart_test.c it refuses
 *   3 (a body cut short, one ending in a boundary line, a boundary run
 *   on); it accepts 14, among them an empty body, LF line ends, folded
 *   headers, a part without Content-Disposition, a name-less or
 *   "attachment" part, two names, an unterminated quote, a base64
 *   Content-Transfer-Encoding (handed over undecoded).  Five of those it
 *   hands to the iterator with a NULL field name.  When it does refuse,
 *   MHD_post_process says MHD_NO and nothing more: the one-line errors
 *   naming the part and the field ("multipart: part 2: no
 *   Content-Disposition name"), which a client author reads in the 400,
 *   cannot be written.  None of the limits exists there (16 parts,
 *   2,048 bytes of headers, 255-byte values, a 1-character boundary is
 *   refused as "no post processor" instead).
 * - Copies and memory.  It copies every byte of a file part through its
 *   own buffer and hands it over in buffer-sized pieces that do not point
 *   into the body, so the pprof decoder, which needs the part whole, gets
 *   it only after a second copy: a 64 KiB push holds +80 to +131 KiB of
 *   heap at its peak (buffer 1 KiB to 64 KiB), a 1 MiB push +1.3 to
 *   +1.6 MiB; this reader allocates nothing and returns pointers into the
 *   body, which ingest already holds.
 * - Time (runs vary on the shared machine).  64 KiB push: 9-18 us per
 *   parse here, 11-57 us there (the copy included; the larger buffers
 *   are the faster); 1 MiB: 166-225 us here, 200-1480 us there.
 * - A live connection.  MHD_create_post_processor takes the
 *   MHD_Connection and reads Content-Type from it, so the parser could no
 *   longer be called on a buffer (multipart_test.c, the fuzz target, the
 *   bench) nor after the connection is gone.
 */

enum { MP_START, MP_PARTS, MP_DONE, MP_FAILED };

/* A header value being scanned: s[pos..len). */
struct cursor {
	const char *s;
	size_t len, pos;
};

/* RFC 7230 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 2046 bchars: what a boundary is made of (a space, but not last). */
static bool is_bchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("'()+_,-./:=? ", c));
}

static bool at_end(const struct cursor *c)
{
	return c->pos >= c->len;
}

static void skip_ows(struct cursor *c)
{
	while (!at_end(c) && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t'))
		c->pos++;
}

/* The token at the cursor (length 0 when there is none). */
static size_t scan_token(struct cursor *c, const char **tok)
{
	size_t start = c->pos;

	while (!at_end(c) && is_tchar((unsigned char)c->s[c->pos]))
		c->pos++;
	*tok = c->s + start;
	return c->pos - start;
}

static bool token_is(const char *tok, size_t len, const char *word)
{
	return len == strlen(word) && !strncasecmp(tok, word, len);
}

/* Append byte ch to out (max bytes with the NUL); false when full. */
static bool put(char *out, size_t max, size_t *n, char ch)
{
	if (*n + 1 >= max)
		return false;
	if (out)
		out[(*n)++] = ch;
	else
		(*n)++;
	return true;
}

/* A quoted-string (RFC 7230 3.2.6) at the cursor, unescaped into out. */
static int scan_quoted(struct cursor *c, char *out, size_t max, const char *what, struct error *err)
{
	size_t n = 0;

	for (c->pos++; !at_end(c); c->pos++) {
		char ch = c->s[c->pos];

		if (ch == '"') {
			c->pos++;
			if (out)
				out[n] = '\0';
			return 0;
		}
		if (ch == '\\' && ++c->pos >= c->len)
			break;
		if (!put(out, max, &n, c->s[c->pos]))
			return error_set(err, ERR_LIMIT, "multipart: %s: value over %zu bytes",
					 what, max - 1);
	}
	return error_set(err, ERR_FORMAT, "multipart: %s: unterminated quoted string", what);
}

/* A parameter value, token or quoted-string, into out (NULL: skipped). */
static int scan_value(struct cursor *c, char *out, size_t max, const char *what, struct error *err)
{
	const char *tok;
	size_t len;

	if (!at_end(c) && c->s[c->pos] == '"')
		return scan_quoted(c, out, max, what, err);
	len = scan_token(c, &tok);
	if (!len)
		return error_set(err, ERR_FORMAT, "multipart: %s: parameter without a value", what);
	if (len >= max)
		return error_set(err, ERR_LIMIT, "multipart: %s: value over %zu bytes", what,
				 max - 1);
	if (out) {
		memcpy(out, tok, len);
		out[len] = '\0';
	}
	return 0;
}

/* A byte for a one-line message: 'c' when printable, else 0xNN. */
static const char *byte_str(unsigned char c, char buf[8])
{
	snprintf(buf, 8, c > 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
	return buf;
}

/*
 * The next `; name=value` of a header: 1 with *name and *name_len set,
 * the cursor on the value; 0 at the end of the header, or an error.
 */
static int next_param(struct cursor *c, const char **name, size_t *name_len, const char *what,
		      struct error *err)
{
	char buf[8];

	skip_ows(c);
	if (at_end(c))
		return 0;
	if (c->s[c->pos] != ';')
		return error_set(err, ERR_FORMAT, "multipart: %s: %s where ';' belongs", what,
				 byte_str((unsigned char)c->s[c->pos], buf));
	c->pos++;
	skip_ows(c);
	*name_len = scan_token(c, name);
	if (!*name_len || at_end(c) || c->s[c->pos] != '=')
		return error_set(err, ERR_FORMAT, "multipart: %s: parameter is not name=value",
				 what);
	c->pos++;
	return 1;
}

/* "type/subtype" at the cursor; true when it is there. */
static bool scan_media_type(struct cursor *c, const char **type, size_t *len)
{
	const char *sub;
	size_t start = c->pos;

	*type = c->s + start;
	if (!scan_token(c, &sub) || at_end(c) || c->s[c->pos] != '/')
		return false;
	c->pos++;
	if (!scan_token(c, &sub))
		return false;
	*len = c->pos - start;
	return true;
}

static int check_boundary(const char *b, struct error *err)
{
	size_t len = strlen(b);

	if (!len)
		return error_set(err, ERR_FORMAT, "multipart: empty boundary");
	for (size_t i = 0; i < len; i++) {
		if (!is_bchar((unsigned char)b[i]))
			return error_set(
				err, ERR_FORMAT,
				"multipart: boundary has a character RFC 2046 forbids (0x%02x)",
				(unsigned char)b[i]);
	}
	if (b[len - 1] == ' ')
		return error_set(err, ERR_FORMAT, "multipart: boundary ends with a space");
	return 0;
}

int multipart_boundary(const char *content_type, char boundary[MULTIPART_BOUNDARY_MAX + 1],
		       struct error *err)
{
	struct cursor c = {content_type, strnlen(content_type, MULTIPART_CONTENT_TYPE_MAX + 1), 0};
	const char *what = "Content-Type", *type, *name;
	size_t len, name_len;
	bool found = false;
	int ret;

	if (c.len > MULTIPART_CONTENT_TYPE_MAX)
		return error_set(err, ERR_LIMIT, "multipart: Content-Type over %d bytes",
				 MULTIPART_CONTENT_TYPE_MAX);
	skip_ows(&c);
	if (!scan_media_type(&c, &type, &len) || !token_is(type, len, "multipart/form-data"))
		return error_set(err, ERR_FORMAT,
				 "multipart: Content-Type is not multipart/form-data");
	while ((ret = next_param(&c, &name, &name_len, what, err)) == 1) {
		bool is_boundary = token_is(name, name_len, "boundary");

		if (is_boundary && found)
			return error_set(err, ERR_FORMAT,
					 "multipart: Content-Type: two boundaries");
		ret = scan_value(&c, is_boundary ? boundary : NULL, MULTIPART_BOUNDARY_MAX + 1,
				 "Content-Type boundary", err);
		if (ret)
			return ret;
		found |= is_boundary;
	}
	if (ret)
		return ret;
	if (!found)
		return error_set(err, ERR_FORMAT, "multipart: Content-Type has no boundary");
	return check_boundary(boundary, err);
}

void multipart_init(struct multipart_reader *r, const char *boundary, const void *body, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->body = body;
	r->len = len;
	r->delim_len = (size_t)snprintf(r->delim, sizeof(r->delim), "\r\n--%.*s",
					MULTIPART_BOUNDARY_MAX, boundary);
	r->state = MP_START;
}

static int fail(struct multipart_reader *r, struct error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct multipart_reader *r, struct error *err, int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->state = MP_FAILED;
	if (r->parts)
		return error_set(err, code, "multipart: part %u: %s", r->parts, msg);
	return error_set(err, code, "multipart: %s", msg);
}

/* Bytes of LWSP (transport padding) at pos. */
static size_t padding(const struct multipart_reader *r, size_t pos)
{
	size_t n = 0;

	while (pos + n < r->len && (r->body[pos + n] == ' ' || r->body[pos + n] == '\t'))
		n++;
	return n;
}

static bool crlf_at(const struct multipart_reader *r, size_t pos)
{
	return pos + 1 < r->len && r->body[pos] == '\r' && r->body[pos + 1] == '\n';
}

/*
 * After a boundary at pos: "--" (the close delimiter, then padding and
 * the end or CRLF and an epilogue) or padding and CRLF (a part follows).
 */
static int after_boundary(struct multipart_reader *r, size_t pos, struct error *err)
{
	bool close = pos + 1 < r->len && r->body[pos] == '-' && r->body[pos + 1] == '-';

	if (close)
		pos += 2;
	pos += padding(r, pos);
	if (close && (pos == r->len || crlf_at(r, pos))) {
		r->state = MP_DONE;
		r->pos = r->len;
		return 0;
	}
	if (!close && crlf_at(r, pos)) {
		r->pos = pos + 2;
		return 1;
	}
	if (pos == r->len)
		return fail(r, err, ERR_FORMAT, "body ends inside a boundary line");
	return fail(r, err, ERR_FORMAT, "boundary followed by 0x%02x, not CRLF", r->body[pos]);
}

/* The first boundary: at the start of the body or after a preamble line. */
static int find_first(struct multipart_reader *r, struct error *err)
{
	const char *dash = r->delim + 2;
	size_t dash_len = r->delim_len - 2;
	const unsigned char *at;

	if (r->len >= dash_len && !memcmp(r->body, dash, dash_len))
		return after_boundary(r, dash_len, err);
	at = memmem(r->body, r->len, r->delim, r->delim_len);
	if (!at)
		return fail(r, err, ERR_FORMAT, "no boundary delimiter in the body");
	return after_boundary(r, (size_t)(at - r->body) + r->delim_len, err);
}

/* The parameters of a part's Content-Disposition: form-data; name=...; filename=... */
static int parse_disposition(struct multipart_reader *r, struct cursor *c,
			     struct multipart_part *part, struct error *err)
{
	const char *tok;
	size_t len = scan_token(c, &tok);
	bool have_name = false;
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "part %u: Content-Disposition", r->parts);
	if (!token_is(tok, len, "form-data"))
		return fail(r, err, ERR_FORMAT, "Content-Disposition is not form-data");
	while ((ret = next_param(c, &tok, &len, what, err)) == 1) {
		bool is_name = token_is(tok, len, "name"), is_file = token_is(tok, len, "filename");
		char *out = is_name ? part->name : is_file ? part->filename : NULL;

		if ((is_name && have_name) || (is_file && part->has_filename))
			return fail(r, err, ERR_FORMAT, "Content-Disposition has two %s parameters",
				    is_name ? "name" : "filename");
		ret = scan_value(c, out, MULTIPART_VALUE_MAX + 1, what, err);
		if (ret)
			return ret;
		have_name |= is_name;
		part->has_filename |= is_file;
	}
	if (ret)
		return ret;
	if (!have_name)
		return fail(r, err, ERR_FORMAT, "no Content-Disposition name");
	if (!part->name[0])
		return fail(r, err, ERR_FORMAT, "empty Content-Disposition name");
	return 0;
}

/* A part's Content-Type: type/subtype and parameters, kept whole. */
static int parse_part_type(struct multipart_reader *r, struct cursor *c,
			   struct multipart_part *part, struct error *err)
{
	const char *type, *name;
	size_t len, name_len;
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "part %u: Content-Type", r->parts);
	if (!scan_media_type(c, &type, &len))
		return fail(r, err, ERR_FORMAT, "Content-Type is not type/subtype");
	while ((ret = next_param(c, &name, &name_len, what, err)) == 1) {
		ret = scan_value(c, NULL, MULTIPART_VALUE_MAX + 1, what, err);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	if (c->len > MULTIPART_VALUE_MAX)
		return fail(r, err, ERR_LIMIT, "Content-Type over %d bytes", MULTIPART_VALUE_MAX);
	memcpy(part->content_type, c->s, c->len);
	part->content_type[c->len] = '\0';
	return 0;
}

/* RFC 7578 4.7: no encoding but the identity ones. */
static int check_encoding(struct multipart_reader *r, struct cursor *c, struct error *err)
{
	const char *tok;
	size_t len = scan_token(c, &tok);

	skip_ows(c);
	if (!len || !at_end(c))
		return fail(r, err, ERR_FORMAT, "malformed Content-Transfer-Encoding");
	if (token_is(tok, len, "7bit") || token_is(tok, len, "8bit") ||
	    token_is(tok, len, "binary"))
		return 0;
	return fail(r, err, ERR_UNSUPPORTED, "Content-Transfer-Encoding %.*s is not supported",
		    (int)len, tok);
}

/* One header line (without its CRLF); *seen tracks Content-Disposition (1) and -Type (2). */
static int parse_header(struct multipart_reader *r, const char *line, size_t len,
			struct multipart_part *part, unsigned *seen, struct error *err)
{
	struct cursor c = {line, len, 0};
	const char *name;
	size_t name_len = scan_token(&c, &name);
	unsigned bit;

	if (line[0] == ' ' || line[0] == '\t')
		return fail(r, err, ERR_FORMAT, "folded header line");
	if (!name_len || at_end(&c) || line[c.pos] != ':')
		return fail(r, err, ERR_FORMAT, "header line is not Name: value");
	for (size_t i = c.pos; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return fail(r, err, ERR_FORMAT, "control character 0x%02x in header %.*s",
				    ch, (int)name_len, name);
	}
	c.pos++;
	skip_ows(&c);
	while (c.len > c.pos && (line[c.len - 1] == ' ' || line[c.len - 1] == '\t'))
		c.len--;
	/* Value-only cursor: parameters are parsed from its start. */
	c.s += c.pos;
	c.len -= c.pos;
	c.pos = 0;
	if (token_is(name, name_len, "Content-Transfer-Encoding"))
		return check_encoding(r, &c, err);
	bit = token_is(name, name_len, "Content-Disposition") ? 1
	      : token_is(name, name_len, "Content-Type")      ? 2
							      : 0;
	if (!bit)
		return 0; /* RFC 7578 4.8: other headers are ignored */
	if (*seen & bit)
		return fail(r, err, ERR_FORMAT, "two %.*s headers", (int)name_len, name);
	*seen |= bit;
	return bit == 1 ? parse_disposition(r, &c, part, err) : parse_part_type(r, &c, part, err);
}

/* The end of the header line at pos (the CR of its CRLF), or an error. */
static int line_end(struct multipart_reader *r, size_t start, size_t pos, size_t *eol,
		    struct error *err)
{
	for (; pos < r->len; pos++) {
		unsigned char ch = r->body[pos];

		/* pos + 2 - start: the block's size were pos the CR ending it. */
		if (pos + 2 - start > MULTIPART_HEADER_MAX)
			return fail(r, err, ERR_LIMIT, "headers over %d bytes",
				    MULTIPART_HEADER_MAX);
		if (ch != '\r' && ch != '\n')
			continue;
		if (ch == '\n' || !crlf_at(r, pos))
			return fail(r, err, ERR_FORMAT, "header line not ended by CRLF");
		*eol = pos;
		return 0;
	}
	return fail(r, err, ERR_FORMAT, "body ends inside the headers");
}

static int parse_headers(struct multipart_reader *r, struct multipart_part *part, struct error *err)
{
	size_t start = r->pos, eol = 0;
	unsigned seen = 0;
	int ret;

	while (!(ret = line_end(r, start, r->pos, &eol, err)) && eol > r->pos) {
		ret = parse_header(r, (const char *)r->body + r->pos, eol - r->pos, part, &seen,
				   err);
		if (ret)
			return ret;
		r->pos = eol + 2;
	}
	if (ret)
		return ret;
	r->pos = eol + 2; /* the empty line */
	if (!(seen & 1))
		return fail(r, err, ERR_FORMAT, "no Content-Disposition");
	if (!(seen & 2))
		memcpy(part->content_type, "text/plain", sizeof("text/plain"));
	return 0;
}

/* The part's data runs to the next delimiter, which must be there. */
static int read_body(struct multipart_reader *r, struct multipart_part *part, struct error *err)
{
	const unsigned char *from = r->body + r->pos;
	const unsigned char *at = memmem(from, r->len - r->pos, r->delim, r->delim_len);

	if (!at)
		return fail(r, err, ERR_FORMAT, "no boundary after the data (body cut short?)");
	part->data = from;
	part->len = (size_t)(at - from);
	return after_boundary(r, (size_t)(at - r->body) + r->delim_len, err);
}

int multipart_next(struct multipart_reader *r, struct multipart_part *part, struct error *err)
{
	int ret;

	if (r->state == MP_FAILED)
		return error_set(err, ERR_USAGE, "multipart: read past an error");
	if (r->state == MP_DONE)
		return 0;
	if (r->state == MP_START) {
		ret = find_first(r, err);
		if (ret <= 0)
			return ret ? ret
				   : fail(r, err, ERR_FORMAT, "no part before the close delimiter");
		r->state = MP_PARTS;
	}
	if (r->parts == MULTIPART_MAX_PARTS) {
		r->state = MP_FAILED;
		return error_set(err, ERR_LIMIT, "multipart: more than %d parts",
				 MULTIPART_MAX_PARTS);
	}
	memset(part, 0, sizeof(*part));
	part->index = ++r->parts;
	ret = parse_headers(r, part, err);
	if (!ret)
		ret = read_body(r, part, err);
	if (ret < 0) {
		r->state = MP_FAILED;
		return ret;
	}
	return 1;
}
