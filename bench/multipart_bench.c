/* SPDX-License-Identifier: MIT */
/*
 * plateau's multipart reader (src/server/multipart.c) against
 * libmicrohttpd's post processor on the same bodies, inside a real
 * libmicrohttpd request (the post processor needs the connection: it reads
 * Content-Type from it).  The numbers are in multipart.c's header comment.
 *
 *   build/multipart_bench [PROFILE_BYTES [ITERATIONS]]
 *
 * 1. A Pyroscope-style push (a "profile" part of PROFILE_BYTES of
 *    incompressible bytes, as a gzip pprof is, and a "sample_type_config"
 *    part), parsed ITERATIONS times each way: time per parse, heap held at
 *    the peak, how many pieces the profile part arrives in, and whether
 *    those pieces are contiguous in the body (a zero-copy view).
 * 2. The malformed bodies of multipart_test.c: which each parser refuses,
 *    and what error the caller can show.
 */
#include <malloc.h>
#include <microhttpd.h>
#include <curl/curl.h>
#include <time.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "server/multipart.h"

#define BOUNDARY "9051914041544df3e7e63a7a8f0a2a3b8d3c1e7f5a6b4c2d0e9f8a7b6c5d"

static size_t profile_bytes = 64 * 1024;
static int iterations = 2000;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

/* ---- the post processor's view of a body ---- */

struct pp_result {
	const char *body;
	size_t body_len;
	unsigned parts, profile_pieces;
	bool profile_contiguous; /* every piece follows the previous one in the body */
	bool profile_in_body;	 /* the pieces point into the body (not a copy) */
	const char *last_end;
	struct strbuf profile; /* the part reassembled, as ingest needs it whole */
	size_t heap_base, heap_peak;
	char last_key[64];
	unsigned null_keys; /* values handed over without a name */
};

static enum MHD_Result pp_iter(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *filename, const char *content_type,
			       const char *transfer_encoding, const char *data, uint64_t off,
			       size_t size)
{
	struct pp_result *r = cls;
	size_t h = heap_in_use();

	(void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
	if (!key) {
		r->null_keys++;
		key = "";
	}
	if (h > r->heap_peak)
		r->heap_peak = h;
	if (strcmp(r->last_key, key) || (off == 0 && size == 0)) {
		r->parts++;
		snprintf(r->last_key, sizeof(r->last_key), "%s", key);
	}
	if (strcmp(key, "profile"))
		return MHD_YES;
	if (off == 0) {
		r->profile_contiguous = true;
		r->profile_in_body = data >= r->body && data < r->body + r->body_len;
	} else if (data != r->last_end) {
		r->profile_contiguous = false;
	}
	if (size) {
		r->profile_pieces++;
		r->last_end = data + size;
		strbuf_add(&r->profile, data, size);
	}
	return MHD_YES;
}

/* Parse body with the post processor; 0 when accepted whole. */
static int pp_parse(struct MHD_Connection *c, const char *body, size_t len, size_t buffer,
		    struct pp_result *r)
{
	struct MHD_PostProcessor *pp;
	enum MHD_Result a, b;

	memset(r, 0, sizeof(*r));
	r->body = body;
	r->body_len = len;
	strbuf_init(&r->profile, 0);
	r->heap_base = r->heap_peak = heap_in_use();
	pp = MHD_create_post_processor(c, buffer, pp_iter, r);
	if (!pp)
		return -2;
	if (heap_in_use() > r->heap_peak)
		r->heap_peak = heap_in_use();
	a = MHD_post_process(pp, body, len);
	b = MHD_destroy_post_processor(pp);
	return a == MHD_YES && b == MHD_YES ? 0 : -1;
}

/* ---- plateau's reader ---- */

static int mp_parse(const char *ctype, const char *body, size_t len, struct error *err,
		    unsigned *parts, size_t *profile_len)
{
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	struct multipart_reader r;
	struct multipart_part part;
	int ret;

	*parts = 0;
	if ((ret = multipart_boundary(ctype, boundary, err)))
		return ret;
	multipart_init(&r, boundary, body, len);
	while ((ret = multipart_next(&r, &part, err)) == 1) {
		(*parts)++;
		if (!strcmp(part.name, "profile"))
			*profile_len = part.len;
	}
	return ret;
}

/* ---- the bodies ---- */

static void push_body(struct strbuf *sb)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	strbuf_addstr(
		sb, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"profile\"; "
		    "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n");
	for (size_t i = 0; i < profile_bytes; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		strbuf_addch(sb, (char)(x >> 56));
	}
	strbuf_addstr(
		sb, "\r\n--" BOUNDARY "\r\nContent-Disposition: form-data; "
		    "name=\"sample_type_config\"; filename=\"sample_type_config.json\"\r\n"
		    "Content-Type: application/octet-stream\r\n\r\n"
		    "{\"cpu\":{\"units\":\"nanoseconds\",\"display-name\":\"cpu\"}}\r\n--" BOUNDARY
		    "--\r\n");
}

#define CD "Content-Disposition: form-data; name=\"p\"\r\n"
static const char *const bad_bodies[] = {
	"--b\r\n" CD "\r\nx\r\n--b--\r\n", /* valid: the control */
	"--b\r\n" CD "Content-Type: a/b\r\n\r\nx\r\n--b\r\n" CD "\r\ny\r\n--b--",
	"",
	"--b--\r\n",
	"--b\r\n" CD "\r\nx",
	"--b\r\n" CD "\r\nx\r\n--b",
	"--b\r\nContent-Disposition: form-data; name=\"p\"\n\r\nx\r\n--b--",
	"--b\r\n" CD " continued\r\n\r\nx\r\n--b--",
	"--b\r\nContent-Disposition form-data\r\n\r\nx\r\n--b--",
	"--b\r\n\r\nx\r\n--b--",
	"--b\r\nContent-Disposition: attachment; name=\"p\"\r\n\r\nx\r\n--b--",
	"--b\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\ny\r\n--b--",
	"--b\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nx\r\n--b--",
	"--b\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\nx\r\n--b--",
	"--b\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--b--",
	"--b\r\n" CD CD "\r\nx\r\n--b--",
	"--b\r\n" CD "Content-Type: text\r\n\r\nx\r\n--b--",
	"--b\r\n" CD "Content-Transfer-Encoding: base64\r\n\r\neA==\r\n--b--",
	"--bx\r\n" CD "\r\nx\r\n--b--",
};

/* ---- the request ---- */

static void run_push(struct MHD_Connection *c, const char *body, size_t len)
{
	const char *ctype = "multipart/form-data; boundary=" BOUNDARY;
	size_t plen = 0, heap0;
	struct pp_result r;
	unsigned parts;
	double t0, t_mp, t_pp, t_ppz;
	int ok = 0;

	t0 = now_s();
	heap0 = heap_in_use();
	for (int i = 0; i < iterations; i++) {
		struct error err = ERROR_INIT;

		ok |= mp_parse(ctype, body, len, &err, &parts, &plen);
	}
	t_mp = (now_s() - t0) / iterations;
	heap0 = heap_in_use() - heap0;
	printf("push of %zu bytes (profile part %zu bytes), %d parses each\n", len, profile_bytes,
	       iterations);
	printf("  plateau multipart.c: %8.2f us/parse, %u parts, profile %zu bytes, "
	       "heap %zd bytes, 0 copies%s\n",
	       t_mp * 1e6, parts, plen, (ssize_t)heap0, ok ? " (FAILED)" : "");
	for (size_t buffer = 1024; buffer <= 65536; buffer *= 8) {
		t0 = now_s();
		for (int i = 0; i < iterations; i++) {
			ok = pp_parse(c, body, len, buffer, &r);
			if (i + 1 < iterations)
				strbuf_release(&r.profile);
		}
		t_pp = (now_s() - t0) / iterations;
		printf("  MHD post processor (buffer %5zu): %8.2f us/parse with the copy, %s, "
		       "%u parts, profile in %u pieces (%s, %s), %zu bytes reassembled, "
		       "heap peak +%zu bytes\n",
		       buffer, t_pp * 1e6, ok ? "REFUSED" : "accepted", r.parts, r.profile_pieces,
		       r.profile_contiguous ? "contiguous" : "not contiguous",
		       r.profile_in_body ? "pointing into the body" : "copied by MHD",
		       r.profile.len, r.heap_peak - r.heap_base);
		strbuf_release(&r.profile);
	}
	(void)t_ppz;
}

static void run_bad(struct MHD_Connection *c)
{
	unsigned pp_refused = 0, mp_refused = 0;

	printf("bodies of multipart_test.c (the first two valid), boundary \"bb\":\n");
	for (size_t i = 0; i < ARRAY_SIZE(bad_bodies); i++) {
		struct error err = ERROR_INIT;
		struct strbuf b = STRBUF_INIT;
		struct pp_result r;
		unsigned parts;
		size_t plen;
		int mp, pp;

		/* The post processor wants a boundary of 2 bytes or more: "b" becomes "bb". */
		for (const char *p = bad_bodies[i]; *p; p++) {
			strbuf_addch(&b, *p);
			if (!strncmp(p, "--b", 3)) {
				strbuf_addstr(&b, "-bb");
				p += 2;
			}
		}
		mp = mp_parse("multipart/form-data; boundary=bb", b.buf, b.len, &err, &parts,
			      &plen);
		pp = pp_parse(c, b.buf, b.len, 1024, &r);
		strbuf_release(&b);

		strbuf_release(&r.profile);
		mp_refused += mp != 0;
		pp_refused += pp != 0;
		printf("  %-2zu plateau: %-75s MHD: %s (%u values)\n", i + 1,
		       mp ? err.msg : "accepted",
		       pp == -2 ? "no post processor"
		       : pp	? "refused, no reason given"
				: "accepted",
		       r.parts);
		if (r.null_keys)
			printf("     MHD handed %u value(s) over with no name (key NULL)\n",
			       r.null_keys);
	}
	printf("refused: plateau %u of %zu, MHD post processor %u of %zu\n", mp_refused,
	       ARRAY_SIZE(bad_bodies), pp_refused, ARRAY_SIZE(bad_bodies));
}

struct upload {
	struct strbuf body;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	struct upload *u = *con_cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	(void)cls, (void)method, (void)version;
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		strbuf_init(&u->body, 0);
		*con_cls = u;
		return MHD_YES;
	}
	if (*size) {
		strbuf_add(&u->body, data, *size);
		*size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/push"))
		run_push(c, u->body.buf, u->body.len);
	else
		run_bad(c);
	strbuf_release(&u->body);
	free(u);
	*con_cls = NULL;
	resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void post(uint16_t port, const char *path, const char *ctype, const struct strbuf *body)
{
	CURL *curl = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[128], hdr[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
	h = curl_slist_append(h, hdr);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->buf);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	if (curl_easy_perform(curl) != CURLE_OK)
		die("POST %s failed", url);
	curl_slist_free_all(h);
	curl_easy_cleanup(curl);
}

int main(int argc, char **argv)
{
	struct strbuf body = STRBUF_INIT, empty = STRBUF_INIT;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;

	if (argc > 1)
		profile_bytes = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		iterations = (int)strtol(argv[2], NULL, 10);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, NULL,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)1 << 20, MHD_OPTION_END);
	if (!d)
		die("cannot start libmicrohttpd");
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	push_body(&body);
	post(info->port, "/push", "multipart/form-data; boundary=" BOUNDARY, &body);
	strbuf_addstr(&empty, "x");
	post(info->port, "/bad", "multipart/form-data; boundary=bb", &empty);
	MHD_stop_daemon(d);
	strbuf_release(&body);
	strbuf_release(&empty);
	return 0;
}
