/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "server/ingest_form.h"
#include "server/multipart.h"

/* A random-looking 60-hex-digit boundary, as Go's multipart.Writer makes. */
#define GO_BOUNDARY "9051914041544df3e7e63a7a8f0a2a3b8d3c1e7f5a6b4c2d0e9f8a7b6c5d"

/* One part as Go's Writer.CreateFormFile writes it (the first has no leading CRLF). */
static void go_part(struct strbuf *sb, const char *name, const char *filename, const void *data,
		    size_t len)
{
	strbuf_addstr(sb, sb->len ? "\r\n--" GO_BOUNDARY "\r\n" : "--" GO_BOUNDARY "\r\n");
	strbuf_addf(sb, "Content-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n", name,
		    filename);
	strbuf_addstr(sb, "Content-Type: application/octet-stream\r\n\r\n");
	strbuf_add(sb, data, len);
}

static void go_close(struct strbuf *sb)
{
	strbuf_addstr(sb, "\r\n--" GO_BOUNDARY "--\r\n");
}

/* pyroscope-go's heap config, as json.Marshal writes it (keys sorted). */
static const char heap_config[] =
	"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
	"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}";

/* Profile bytes with what a naive reader trips on: NUL, CRLF, dashes, a near-boundary. */
static const char pprof_bytes[] =
	"\x1f\x8b\x08\0\r\n--\r\n-" GO_BOUNDARY "\r\nx--" GO_BOUNDARY "\x00\n\r";

static void test_go_client_body(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;
	struct ingest_form f;
	const struct stc_entry *e;

	(void)state;
	go_part(&sb, "profile", "profile.pprof", pprof_bytes, sizeof(pprof_bytes) - 1);
	go_part(&sb, "sample_type_config", "sample_type_config.json", heap_config,
		sizeof(heap_config) - 1);
	go_close(&sb);
	assert_int_equal(ingest_form_parse("multipart/form-data; boundary=" GO_BOUNDARY, sb.buf,
					   sb.len, &f, &err),
			 0);
	/* The data is the body's own bytes, not a copy. */
	assert_ptr_equal(f.profile.data, (unsigned char *)strstr(sb.buf, "\r\n\r\n") + 4);
	assert_int_equal(f.profile.len, sizeof(pprof_bytes) - 1);
	assert_memory_equal(f.profile.data, pprof_bytes, f.profile.len);
	assert_string_equal(f.profile.filename, "profile.pprof");
	assert_true(f.profile.has_filename);
	assert_string_equal(f.profile.content_type, "application/octet-stream");
	assert_int_equal(f.profile.index, 1);
	assert_null(f.prev_profile.data);
	assert_int_equal(f.sample_type_config.index, 2);
	assert_true(f.has_config);
	assert_int_equal(f.config.n, 4);
	e = sample_type_config_find(&f.config, "inuse_space");
	assert_non_null(e);
	assert_string_equal(e->units, "bytes");
	assert_string_equal(e->aggregation, "average");
	assert_false(e->sampled || e->cumulative);
	assert_null(sample_type_config_find(&f.config, "cpu"));
	strbuf_release(&sb);
}

/* curl -F 'profile=@cpu.pb.gz' -F 'x=1': its boundary, a part without filename or type. */
#define CURL_BOUNDARY "------------------------d74496d66958873e"

static void test_curl_body(void **state)
{
	static const char body[] = "--" CURL_BOUNDARY "\r\n"
				   "Content-Disposition: form-data; name=\"profile\"; "
				   "filename=\"cpu.pb.gz\"\r\n"
				   "Content-Type: application/octet-stream\r\n"
				   "\r\n"
				   "PPROF\r\n"
				   "--" CURL_BOUNDARY "\r\n"
				   "Content-Disposition: form-data; name=\"x\"\r\n"
				   "\r\n"
				   "1\r\n"
				   "--" CURL_BOUNDARY "--\r\n";
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	struct error err = ERROR_INIT;
	struct multipart_reader r;
	struct multipart_part part;

	(void)state;
	assert_int_equal(
		multipart_boundary("multipart/form-data; boundary=" CURL_BOUNDARY, boundary, &err),
		0);
	multipart_init(&r, boundary, body, sizeof(body) - 1);
	assert_int_equal(multipart_next(&r, &part, &err), 1);
	assert_string_equal(part.name, "profile");
	assert_int_equal(part.len, 5);
	assert_memory_equal(part.data, "PPROF", 5);
	assert_int_equal(multipart_next(&r, &part, &err), 1);
	assert_string_equal(part.name, "x");
	assert_false(part.has_filename);
	assert_string_equal(part.filename, "");
	assert_string_equal(part.content_type, "text/plain");
	assert_int_equal(part.index, 2);
	assert_memory_equal(part.data, "1", part.len);
	assert_int_equal(multipart_next(&r, &part, &err), 0);
	assert_int_equal(multipart_next(&r, &part, &err), 0);
	assert_int_equal(err.code, 0);
}

/* Read all parts of body; returns the count, or the error code. */
static int read_all(const char *boundary, const char *body, size_t len, struct multipart_part *out,
		    size_t max, struct error *err)
{
	struct multipart_reader r;
	struct multipart_part part;
	int n = 0, ret;

	multipart_init(&r, boundary, body, len);
	while ((ret = multipart_next(&r, &part, err)) == 1) {
		if ((size_t)n < max)
			out[n] = part;
		n++;
	}
	return ret ? ret : n;
}

#define CD "Content-Disposition: form-data; name=\"p\"\r\n"

#define READ(boundary, body, parts, err) \
	read_all(boundary, body, sizeof(body) - 1, parts, ARRAY_SIZE(parts), err)

/* The preamble may hold the boundary string, but not at the start of a line. */
static void test_preamble(void **state)
{
	static const char body[] = "a --b in the preamble\r\n--b\r\n" CD "\r\nx\r\n--b--";
	struct multipart_part parts[2];
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(READ("b", body, parts, &err), 1);
	assert_int_equal(parts[0].len, 1);
	assert_memory_equal(parts[0].data, "x", 1);
}

static void test_epilogue_and_padding(void **state)
{
	static const char body[] =
		"preamble\r\n--b \t\r\n"
		"content-disposition: FORM-DATA ; NAME=a ;filename=\"x\\\"y\\\\z\"\r\n"
		"X-Other: ignored\r\n"
		"Content-Type: text/plain; charset=\"utf-8\" \t\r\n"
		"\r\n"
		"\r\n"
		"\r\n"
		"--b\r\n"
		"Content-Disposition: form-data; name=\"\xc3\xa9t\xc3\xa9\"\r\n"
		"Content-Transfer-Encoding: binary\r\n"
		"\r\n"
		"\r\n"
		"--b-- \r\nThe epilogue, anything: --b\r\n--b--\r\n";
	struct multipart_part parts[4];
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(READ("b", body, parts, &err), 2);
	assert_string_equal(parts[0].name, "a");
	assert_string_equal(parts[0].filename, "x\"y\\z");
	assert_string_equal(parts[0].content_type, "text/plain; charset=\"utf-8\"");
	/* The CRLF before a delimiter is the delimiter's: this data is one CRLF. */
	assert_int_equal(parts[0].len, 2);
	assert_string_equal(parts[1].name, "\xc3\xa9t\xc3\xa9");
	assert_int_equal(parts[1].len, 0);
}

static void test_boundary_header(void **state)
{
	static const struct {
		const char *ct, *boundary;
	} ok[] = {
		{"multipart/form-data; boundary=abc", "abc"},
		{"Multipart/Form-Data;boundary=abc", "abc"},
		{" multipart/form-data ; charset=utf-8 ; BOUNDARY=\"a b:c(d)?=\" ", "a b:c(d)?="},
		{"multipart/form-data; boundary=\"x\\yz\"", "xyz"},
		{"multipart/form-data; boundary="
		 "1234567890123456789012345678901234567890123456789012345678901234567890",
		 "1234567890123456789012345678901234567890123456789012345678901234567890"},
	};
	char b[MULTIPART_BOUNDARY_MAX + 1];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		struct error err = ERROR_INIT;

		assert_int_equal(multipart_boundary(ok[i].ct, b, &err), 0);
		assert_string_equal(b, ok[i].boundary);
	}
}

static void test_boundary_errors(void **state)
{
	static const struct {
		const char *ct, *msg;
		int code;
	} bad[] = {
		{"text/plain; boundary=a", "multipart: Content-Type is not multipart/form-data",
		 ERR_FORMAT},
		{"multipart/mixed; boundary=a",
		 "multipart: Content-Type is not multipart/form-data", ERR_FORMAT},
		{"multipart/form-data", "multipart: Content-Type has no boundary", ERR_FORMAT},
		{"multipart/form-data; charset=utf-8", "multipart: Content-Type has no boundary",
		 ERR_FORMAT},
		{"multipart/form-data; boundary=a; boundary=b",
		 "multipart: Content-Type: two boundaries", ERR_FORMAT},
		{"multipart/form-data; boundary=\"\"", "multipart: empty boundary", ERR_FORMAT},
		{"multipart/form-data; boundary=a!b",
		 "multipart: boundary has a character RFC 2046 forbids (0x21)", ERR_FORMAT},
		{"multipart/form-data; boundary=\"ab \"", "multipart: boundary ends with a space",
		 ERR_FORMAT},
		{"multipart/form-data; boundary=\"ab",
		 "multipart: Content-Type boundary: unterminated quoted string", ERR_FORMAT},
		{"multipart/form-data; boundary=",
		 "multipart: Content-Type boundary: parameter without a value", ERR_FORMAT},
		{"multipart/form-data boundary=a", "multipart: Content-Type: 'b' where ';' belongs",
		 ERR_FORMAT},
		{"multipart/form-data\x01", "multipart: Content-Type: 0x01 where ';' belongs",
		 ERR_FORMAT},
		{"multipart/form-data; =a", "multipart: Content-Type: parameter is not name=value",
		 ERR_FORMAT},
		{"multipart/form-data; boundary = a",
		 "multipart: Content-Type: parameter is not name=value", ERR_FORMAT},
		{"multipart/form-data; boundary="
		 "12345678901234567890123456789012345678901234567890123456789012345678901",
		 "multipart: Content-Type boundary: value over 70 bytes", ERR_LIMIT},
	};
	char b[MULTIPART_BOUNDARY_MAX + 1], big[MULTIPART_CONTENT_TYPE_MAX + 2];
	struct error err = ERROR_INIT;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err = (struct error)ERROR_INIT;
		assert_int_equal(multipart_boundary(bad[i].ct, b, &err), bad[i].code);
		assert_string_equal(err.msg, bad[i].msg);
	}
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "multipart/form-data; boundary=a", 31);
	err = (struct error)ERROR_INIT;
	assert_int_equal(multipart_boundary(big, b, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "multipart: Content-Type over 1024 bytes");
}

static void test_body_errors(void **state)
{
	static const struct {
		const char *body, *msg;
		int code;
	} bad[] = {
		{"", "multipart: no boundary delimiter in the body", ERR_FORMAT},
		{"--a\r\n" CD "\r\nx\r\n--a--", "multipart: no boundary delimiter in the body",
		 ERR_FORMAT},
		{"--b--\r\n", "multipart: no part before the close delimiter", ERR_FORMAT},
		{"--bx\r\n" CD "\r\nx\r\n--b--", "multipart: boundary followed by 0x78, not CRLF",
		 ERR_FORMAT},
		{"--b", "multipart: body ends inside a boundary line", ERR_FORMAT},
		{"--b\r\n" CD "\r\nx\r\n--b--x",
		 "multipart: part 1: boundary followed by 0x78, not CRLF", ERR_FORMAT},
		{"--b\r\n" CD "\r\nx\r\n--bb\r\n" CD "\r\ny\r\n--b--",
		 "multipart: part 1: boundary followed by 0x62, not CRLF", ERR_FORMAT},
		{"--b\r\n" CD "\r\nx",
		 "multipart: part 1: no boundary after the data (body cut short?)", ERR_FORMAT},
		{"--b\r\n" CD "\r\nx\r\n--b", "multipart: part 1: body ends inside a boundary line",
		 ERR_FORMAT},
		{"--b\r\n" CD, "multipart: part 1: body ends inside the headers", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=\"p\"\n\r\nx\r\n--b--",
		 "multipart: part 1: header line not ended by CRLF", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data;\r name=\"p\"\r\n\r\nx\r\n--b--",
		 "multipart: part 1: header line not ended by CRLF", ERR_FORMAT},
		{"--b\r\n" CD " continued\r\n\r\nx\r\n--b--",
		 "multipart: part 1: folded header line", ERR_FORMAT},
		{"--b\r\nContent-Disposition form-data\r\n\r\nx\r\n--b--",
		 "multipart: part 1: header line is not Name: value", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=\"\x01\"\r\n\r\nx\r\n--b--",
		 "multipart: part 1: control character 0x01 in header Content-Disposition",
		 ERR_FORMAT},
		{"--b\r\n\r\nx\r\n--b--", "multipart: part 1: no Content-Disposition", ERR_FORMAT},
		{"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--",
		 "multipart: part 1: no Content-Disposition", ERR_FORMAT},
		{"--b\r\nContent-Disposition: attachment; name=\"p\"\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition is not form-data", ERR_FORMAT},
		{"--b\r\n" CD "\r\nx\r\n--b\r\nContent-Disposition: form-data; filename=\"f\"\r\n"
		 "\r\ny\r\n--b--",
		 "multipart: part 2: no Content-Disposition name", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nx\r\n--b--",
		 "multipart: part 1: empty Content-Disposition name", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition has two name parameters", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=a; filename=x; "
		 "filename=y\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition has two filename parameters", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition: unterminated quoted string", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=a b\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition: 'b' where ';' belongs", ERR_FORMAT},
		{"--b\r\n" CD CD "\r\nx\r\n--b--",
		 "multipart: part 1: two Content-Disposition headers", ERR_FORMAT},
		{"--b\r\n" CD "Content-Type: a/b\r\ncontent-type: a/b\r\n\r\nx\r\n--b--",
		 "multipart: part 1: two content-type headers", ERR_FORMAT},
		{"--b\r\n" CD "Content-Type: text\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Type is not type/subtype", ERR_FORMAT},
		{"--b\r\n" CD "Content-Type: a/b; c\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Type: parameter is not name=value", ERR_FORMAT},
		{"--b\r\nContent-Disposition: form-data; name=\"a\\\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Disposition: unterminated quoted string", ERR_FORMAT},
		{"--b\r\n" CD "Content-Type: a/\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Type is not type/subtype", ERR_FORMAT},
		{"--b\r\n" CD "Content-Type: a/b; c=\"x\r\n\r\nx\r\n--b--",
		 "multipart: part 1: Content-Type: unterminated quoted string", ERR_FORMAT},
		{"--b\r\n" CD "Content-Transfer-Encoding: base64\r\n\r\neA==\r\n--b--",
		 "multipart: part 1: Content-Transfer-Encoding base64 is not supported",
		 ERR_UNSUPPORTED},
		{"--b\r\n" CD "Content-Transfer-Encoding: 8bit x\r\n\r\nx\r\n--b--",
		 "multipart: part 1: malformed Content-Transfer-Encoding", ERR_FORMAT},
	};
	struct multipart_part parts[2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct error err = ERROR_INIT;

		assert_int_equal(read_all("b", bad[i].body, strlen(bad[i].body), parts, 2, &err),
				 bad[i].code);
		assert_string_equal(err.msg, bad[i].msg);
		assert_null(strchr(err.msg, '\n'));
	}
}

/* A reader that failed stays failed. */
static void test_sticky_error(void **state)
{
	static const char body[] = "--b\r\n\r\nx\r\n--b\r\n" CD "\r\ny\r\n--b--";
	struct error err = ERROR_INIT;
	struct multipart_reader r;
	struct multipart_part part;

	(void)state;
	multipart_init(&r, "b", body, sizeof(body) - 1);
	assert_int_equal(multipart_next(&r, &part, &err), ERR_FORMAT);
	err = (struct error)ERROR_INIT;
	assert_int_equal(multipart_next(&r, &part, &err), ERR_USAGE);
	assert_string_equal(err.msg, "multipart: read past an error");
}

static void test_limits(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct multipart_part parts[MULTIPART_MAX_PARTS + 1];
	struct error err = ERROR_INIT;
	char pad[MULTIPART_HEADER_MAX];

	(void)state;
	for (int i = 0; i < MULTIPART_MAX_PARTS; i++)
		strbuf_addf(&sb, "--b\r\nContent-Disposition: form-data; name=\"p%d\"\r\n\r\nx\r\n",
			    i);
	strbuf_addstr(&sb, "--b--");
	assert_int_equal(read_all("b", sb.buf, sb.len, parts, ARRAY_SIZE(parts), &err),
			 MULTIPART_MAX_PARTS);
	strbuf_setlen(&sb, sb.len - 5);
	strbuf_addstr(&sb, "--b\r\n" CD "\r\nx\r\n--b--");
	assert_int_equal(read_all("b", sb.buf, sb.len, parts, ARRAY_SIZE(parts), &err), ERR_LIMIT);
	assert_string_equal(err.msg, "multipart: more than 16 parts");

	/* A header block of exactly the limit passes; one byte more does not. */
	for (int extra = 0; extra < 2; extra++) {
		size_t fixed = strlen(CD "X: \r\n\r\n");

		strbuf_reset(&sb);
		memset(pad, 'v', sizeof(pad));
		strbuf_addstr(&sb, "--b\r\n" CD "X: ");
		strbuf_add(&sb, pad, MULTIPART_HEADER_MAX - fixed + (size_t)extra);
		strbuf_addstr(&sb, "\r\n\r\nx\r\n--b--");
		err = (struct error)ERROR_INIT;
		assert_int_equal(read_all("b", sb.buf, sb.len, parts, 1, &err),
				 extra ? ERR_LIMIT : 1);
		if (extra)
			assert_string_equal(err.msg, "multipart: part 1: headers over 2048 bytes");
	}
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "--b\r\n" CD "Content-Type: a/b; c=");
	strbuf_add(&sb, pad, MULTIPART_VALUE_MAX - 6); /* "a/b; c=" + 249: 256 */
	strbuf_addstr(&sb, "\r\n\r\nx\r\n--b--");
	err = (struct error)ERROR_INIT;
	assert_int_equal(read_all("b", sb.buf, sb.len, parts, 1, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "multipart: part 1: Content-Type over 255 bytes");
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "--b\r\nContent-Disposition: form-data; name=\"");
	strbuf_add(&sb, pad, MULTIPART_VALUE_MAX + 1);
	strbuf_addstr(&sb, "\"\r\n\r\nx\r\n--b--");
	err = (struct error)ERROR_INIT;
	assert_int_equal(read_all("b", sb.buf, sb.len, parts, 1, &err), ERR_LIMIT);
	assert_string_equal(err.msg,
			    "multipart: part 1: Content-Disposition: value over 255 bytes");
	strbuf_release(&sb);
}

static void test_ingest_form_errors(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = ERROR_INIT;
	struct ingest_form f;

	(void)state;
	go_part(&sb, "profile", "profile.pprof", "a", 1);
	go_part(&sb, "other", "x", "b", 1);
	go_part(&sb, "prev_profile", "profile.pprof", "", 0);
	go_part(&sb, "profile", "profile.pprof", "c", 1);
	go_close(&sb);
	assert_int_equal(ingest_form_parse("multipart/form-data; boundary=" GO_BOUNDARY, sb.buf,
					   sb.len, &f, &err),
			 ERR_FORMAT);
	assert_string_equal(err.msg, "multipart: part 4: second profile part");
	assert_null(f.profile.data);

	strbuf_reset(&sb);
	go_part(&sb, "prev_profile", "profile.pprof", "p", 1);
	go_close(&sb);
	err = (struct error)ERROR_INIT;
	assert_int_equal(ingest_form_parse("multipart/form-data; boundary=" GO_BOUNDARY, sb.buf,
					   sb.len, &f, &err),
			 ERR_UNSUPPORTED);
	assert_string_equal(err.msg, "multipart: prev_profile is not supported: update the client "
				     "(Pyroscope refuses it too)");

	/* An empty prev_profile and an empty config are none; no profile is the caller's call. */
	strbuf_reset(&sb);
	go_part(&sb, "prev_profile", "profile.pprof", "", 0);
	go_part(&sb, "sample_type_config", "sample_type_config.json", "", 0);
	go_close(&sb);
	err = (struct error)ERROR_INIT;
	assert_int_equal(ingest_form_parse("multipart/form-data; boundary=" GO_BOUNDARY, sb.buf,
					   sb.len, &f, &err),
			 0);
	assert_null(f.profile.data);
	assert_false(f.has_config);

	strbuf_reset(&sb);
	go_part(&sb, "sample_type_config", "sample_type_config.json", "[]", 2);
	go_close(&sb);
	assert_int_equal(ingest_form_parse("multipart/form-data; boundary=" GO_BOUNDARY, sb.buf,
					   sb.len, &f, &err),
			 ERR_FORMAT);
	assert_string_equal(err.msg, "sample_type_config: not a JSON object");
	err = (struct error)ERROR_INIT;
	assert_int_equal(ingest_form_parse("application/octet-stream", sb.buf, sb.len, &f, &err),
			 ERR_FORMAT);
	strbuf_release(&sb);
}

/* The config a .NET client sends: dashed names, display names, sampled types. */
static void test_sample_type_config(void **state)
{
	static const char json[] =
		"{\n  \"alloc-samples\": {\"units\": \"objects\", \"display-name\": "
		"\"alloc_objects\"},\n"
		"  \"cpu\": {\"units\": \"samples\", \"sampled\": true},\n"
		"  \"lock-time\": {\"Units\": \"lock_nanoseconds\", \"cumulative\": false, "
		"\"future\": [1, {\"x\": 2}]},\n"
		"  \"inuse-space\": {\"units\": \"bytes\", \"aggregation\": \"average\"},\n"
		"  \"gone\": null,\n  \"empty\": {}\n}\n";
	struct sample_type_config c;
	struct error err = ERROR_INIT;
	const struct stc_entry *e;

	(void)state;
	assert_int_equal(sample_type_config_parse(json, sizeof(json) - 1, &c, &err), 0);
	assert_int_equal(c.n, 5);
	e = sample_type_config_find(&c, "alloc-samples");
	assert_string_equal(e->display_name, "alloc_objects");
	assert_string_equal(e->units, "objects");
	assert_true(sample_type_config_find(&c, "cpu")->sampled);
	assert_string_equal(sample_type_config_find(&c, "lock-time")->units, "lock_nanoseconds");
	assert_string_equal(sample_type_config_find(&c, "inuse-space")->aggregation, "average");
	assert_null(sample_type_config_find(&c, "gone"));
	assert_string_equal(sample_type_config_find(&c, "empty")->units, "");
}

static void test_sample_type_config_errors(void **state)
{
	static const struct {
		const char *json, *msg;
		int code;
	} bad[] = {
		{"", "sample_type_config: not JSON (at byte 0)", ERR_FORMAT},
		{"{\"a\": {\"units\": }", "sample_type_config: not JSON (at byte 16)", ERR_FORMAT},
		{"{} x", "sample_type_config: not JSON (at byte 2)", ERR_FORMAT},
		{"[]", "sample_type_config: not a JSON object", ERR_FORMAT},
		{"{\"a\": 1}", "sample_type_config: a is not an object", ERR_FORMAT},
		{"{\"\": {}}", "sample_type_config: empty sample type name", ERR_FORMAT},
		{"{\"a\": {}, \"a\": {}}", "sample_type_config: a given twice", ERR_FORMAT},
		{"{\"a\": {\"units\": 1}}", "sample_type_config: a: units is not a string",
		 ERR_FORMAT},
		{"{\"a\": {\"sampled\": \"true\"}}",
		 "sample_type_config: a: sampled is not true or false", ERR_FORMAT},
		{"{\"a\": {\"cumulative\": 0}}",
		 "sample_type_config: a: cumulative is not true or false", ERR_FORMAT},
		{"{\"a\": {\"aggregation\": \"max\"}}",
		 "sample_type_config: a: aggregation is not sum or average", ERR_FORMAT},
		{"{\"a\": {\"units\": \"x\", \"UNITS\": \"y\"}}",
		 "sample_type_config: a: UNITS given twice", ERR_FORMAT},
		{"{\"a\": {\"units\": \"0123456789012345678901234567890123\"}}",
		 "sample_type_config: a: units over 31 bytes", ERR_LIMIT},
		{"{\"0123456789012345678901234567890123456789012345678901234567890123\": {}}",
		 "sample_type_config: a type name over 63 bytes", ERR_LIMIT},
		{"{\"a\": {\"display-name\": 5}}",
		 "sample_type_config: a: display-name is not a string", ERR_FORMAT},
		/* Found by fuzz_multipart: names were quoted into messages raw. */
		{"{\"a\\nb\": {}}", "sample_type_config: a type name has a control character",
		 ERR_FORMAT},
		{"{\"a\": {\"units\": \"x\\u0001\"}}",
		 "sample_type_config: a: units has a control character", ERR_FORMAT},
		{"{\"a\": {\"x\\n\": 1, \"X\\n\": 2}}", "sample_type_config: a: X? given twice",
		 ERR_FORMAT},
	};
	struct sample_type_config c;
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct error err = ERROR_INIT;

		assert_int_equal(
			sample_type_config_parse(bad[i].json, strlen(bad[i].json), &c, &err),
			bad[i].code);
		assert_string_equal(err.msg, bad[i].msg);
		assert_int_equal(c.n, 0);
	}
	strbuf_addch(&sb, '{');
	for (int i = 0; i <= STC_MAX_TYPES; i++)
		strbuf_addf(&sb, "%s\"t%d\":{}", i ? "," : "", i);
	strbuf_addch(&sb, '}');
	{
		struct error err = ERROR_INIT;

		assert_int_equal(sample_type_config_parse(sb.buf, sb.len, &c, &err), ERR_LIMIT);
		assert_string_equal(err.msg, "sample_type_config: more than 32 types");
		err = (struct error)ERROR_INIT;
		assert_int_equal(sample_type_config_parse(sb.buf, STC_JSON_MAX + 1, &c, &err),
				 ERR_LIMIT);
		assert_string_equal(err.msg, "sample_type_config: over 65536 bytes");
	}
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go_client_body),
		cmocka_unit_test(test_curl_body),
		cmocka_unit_test(test_preamble),
		cmocka_unit_test(test_epilogue_and_padding),
		cmocka_unit_test(test_boundary_header),
		cmocka_unit_test(test_boundary_errors),
		cmocka_unit_test(test_body_errors),
		cmocka_unit_test(test_sticky_error),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_ingest_form_errors),
		cmocka_unit_test(test_sample_type_config),
		cmocka_unit_test(test_sample_type_config_errors),
	};

	return cmocka_run_group_tests_name("multipart", tests, NULL, NULL);
}
