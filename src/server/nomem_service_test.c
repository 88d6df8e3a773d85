/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure ("torture") tests of the server's work: the test
 * links with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, so every
 * allocation of plateau's own code (not SQLite's, zstd's or libc's
 * inside) can be made to fail in turn.  For N = 0, 1, 2, ... the Nth
 * allocation of one whole push (the body parsed, the blob encoded, the
 * rows stored) or one whole query (the rows read and merged, the answer
 * written in each format) fails, until a run in which none did.  Each
 * run must fail with ERR_NOMEM and a message saying "memory" (or succeed
 * with the right answer, where the code can do without), never abort,
 * leave nothing allocated (ASan's leak check at exit), and the service
 * must answer correctly afterwards.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "profile/diff.h"
#include "format/format.h"
#include "format/input.h"
#include "render/output.h"
#include "format/pprof.h"
#include "server/flamebearer.h"
#include "server/server.h"
#include "server/service.h"
#include "util/alloc.h"

#define SEC INT64_C(1000000000)
#define T0  (INT64_C(1764590400) * SEC)

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_realloc(void *p, size_t size);

/* Allocations left before one fails; -1: none fails. */
static int countdown = -1;
static bool failed;
/* Or: every allocation of exactly this many bytes fails (0: none), from any thread. */
static _Atomic size_t fail_size;

static bool fail_now(size_t size)
{
	if (size && size == fail_size)
		return true;
	if (countdown < 0)
		return false;
	if (countdown-- > 0)
		return false;
	failed = true;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return fail_now(size) ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t nmemb, size_t size)
{
	return fail_now(nmemb * size) ? NULL : __real_calloc(nmemb, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now(size) ? NULL : __real_realloc(p, size);
}

struct fixture {
	char dir[64];
	struct store *st;
	struct service *sv;
	char *pprof; /* a pprof body */
	size_t pprof_len;
};

#define FOLDED_BODY "main;work;a 3\nmain;work;b 1\nmain;idle 2\n"

static struct fixture fx;

/* One whole operation: 0 and its answer in OUT, or an error. */
typedef int op_fn(struct strbuf *out, struct error *err);

static int push_typed(const char *body, size_t len, enum profile_format fmt, const char *type,
		      int64_t t, struct error *err)
{
	struct series_label l[] = {{"region", "eu"}};
	struct ingest_req req = {"shop",      fmt == FMT_FOLDED ? type : NULL, NULL, l, 1, t,
				 t + 10 * SEC};
	struct read_options o = {0};
	struct profile *p = NULL;
	struct input in;
	int rc = input_from_buf(&in, "body", body, len, 1 << 20, err);

	if (rc < 0)
		return rc;
	rc = fmt == FMT_FOLDED ? folded_read(&in, &o, &p, err) : pprof_read(&in, &o, &p, err);
	input_close(&in);
	if (rc == 0)
		rc = service_ingest(fx.sv, &req, p, err);
	profile_free(p);
	return rc;
}

static int push_body(const char *body, size_t len, enum profile_format fmt, int64_t t,
		     struct error *err)
{
	return push_typed(body, len, fmt, "cpu", t, err);
}

static int op_push_folded(struct strbuf *out, struct error *err)
{
	(void)out;
	return push_body(FOLDED_BODY, strlen(FOLDED_BODY), FMT_FOLDED, T0 + 60 * SEC, err);
}

static int op_push_pprof(struct strbuf *out, struct error *err)
{
	(void)out;
	return push_body(fx.pprof, fx.pprof_len, FMT_PPROF, T0 + 120 * SEC, err);
}

static int query(const char *text, struct profile **p, struct error *err)
{
	struct selector *sel = NULL;
	size_t n;
	int rc = selector_parse(text, &sel, err);

	if (rc == 0)
		rc = service_query(fx.sv, sel, T0, T0 + 3600 * SEC, p, &n, err);
	selector_free(sel);
	return rc;
}

/* The merged profile's shape and totals: service_query alone. */
static int op_query(struct strbuf *out, struct error *err)
{
	struct profile *p = NULL;
	int rc = query("shop.cpu", &p, err);

	if (rc == 0)
		strbuf_addf(out, "%u nodes %u frames %u samples %lld", p->nr_nodes, p->nr_frames,
			    p->nr_samples, (long long)profile_total(p, 0));
	profile_free(p);
	return rc;
}

/* A gauge (in-use memory): each series' mean over its pushes, merged (profile_merge). */
static int op_query_gauge(struct strbuf *out, struct error *err)
{
	struct profile *p = NULL;
	int rc = query("shop.inuse_space", &p, err);

	if (rc == 0)
		strbuf_addf(out, "%u nodes %lld", p->nr_nodes, (long long)profile_total(p, 0));
	profile_free(p);
	return rc;
}

/* The cut a render in another format than JSON makes with maxNodes (profile_truncate). */
static int op_truncate(struct strbuf *out, struct error *err)
{
	struct profile *p = NULL, *cut = NULL;
	int rc = query("shop.cpu", &p, err);

	if (rc == 0 && !(cut = profile_truncate(p, 0, 2, err)))
		rc = err->code;
	if (rc == 0)
		strbuf_addf(out, "%u nodes %u frames %lld", cut->nr_nodes, cut->nr_frames,
			    (long long)profile_total(cut, 0));
	profile_free(cut);
	profile_free(p);
	return rc;
}

static int op_flamebearer(struct strbuf *out, struct error *err)
{
	struct fb_options o = {.type = 0, .max_nodes = 3, .name = "shop.cpu"};
	struct profile *p = NULL;
	int rc = query("shop.cpu", &p, err);

	if (rc == 0)
		rc = flamebearer_write(p, &o, out, err);
	profile_free(p);
	return rc;
}

static int op_flamebearer_diff(struct strbuf *out, struct error *err)
{
	struct fb_options o = {.type = 0};
	struct profile *l = NULL, *r = NULL;
	int rc = query("shop.cpu", &l, err);

	if (rc == 0)
		rc = query("shop.cpu{region=\"eu\"}", &r, err);
	if (rc == 0)
		rc = flamebearer_write_diff(l, r, &o, out, err);
	profile_free(l);
	profile_free(r);
	return rc;
}

/* /api/v1/diff's default answer: plateau diff's JSON (diff_build, diff_write_json). */
static int op_diff_json(struct strbuf *out, struct error *err)
{
	struct diff_options o = {.alpha = 0.05};
	struct profile *l = NULL, *r = NULL, *d = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc = query("shop.cpu", &l, err);

	if (rc == 0)
		rc = query("shop.cpu{region=\"eu\"}", &r, err);
	if (rc == 0 && !(d = diff_build(l, r, &o, err)))
		rc = err->code;
	if (rc == 0) {
		FILE *mem = open_memstream(&buf, &len);

		rc = diff_write_json(d, o.alpha, mem, err);
		fclose(mem);
	}
	if (rc == 0)
		strbuf_add(out, buf, len);
	free(buf);
	profile_free(d);
	profile_free(l);
	profile_free(r);
	return rc;
}

/* A render in FMT, cut to maxNodes as render() cuts it. */
static int render_as(enum profile_format fmt, struct strbuf *out, struct error *err)
{
	struct profile *p = NULL, *cut = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc = query("shop.cpu", &p, err);

	if (rc == 0 && !(cut = profile_truncate(p, 0, 3, err)))
		rc = err->code;
	if (rc == 0) {
		FILE *mem = open_memstream(&buf, &len);

		rc = profile_write(cut, fmt, 0, mem, err);
		fclose(mem);
	}
	if (rc == 0)
		strbuf_add(out, buf, len);
	free(buf);
	profile_free(cut);
	profile_free(p);
	return rc;
}

static int op_render_folded(struct strbuf *out, struct error *err)
{
	return render_as(FMT_FOLDED, out, err);
}

static int op_render_pprof(struct strbuf *out, struct error *err)
{
	return render_as(FMT_PPROF, out, err);
}

static int op_labels(struct strbuf *out, struct error *err)
{
	return service_label_names(fx.sv, NULL, out, err);
}

static int op_label_values(struct strbuf *out, struct error *err)
{
	return service_label_values(fx.sv, "region", NULL, out, err);
}

static int op_series(struct strbuf *out, struct error *err)
{
	struct selector *sel = NULL;
	int rc = selector_parse("{region=\"eu\"}", &sel, err);

	if (rc == 0)
		rc = service_series_json(fx.sv, sel, out, err);
	selector_free(sel);
	return rc;
}

static int op_timeline(struct strbuf *out, struct error *err)
{
	struct selector *sel = NULL;
	int64_t *v = NULL;
	size_t n = 0;
	int rc = selector_parse("shop.cpu", &sel, err);

	if (rc == 0)
		rc = service_timeline(fx.sv, sel, T0, T0 + 600 * SEC, 60 * SEC, &v, &n, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		strbuf_addf(out, "%lld,", (long long)v[i]);
	free(v);
	selector_free(sel);
	return rc;
}

/* The background rollups of everything pushed (a day later: all due). */
static int op_roll(struct strbuf *out, struct error *err)
{
	int rc = service_roll(fx.sv, T0 + 86400 * SEC, 100, err);

	(void)out;
	return rc < 0 ? rc : 0;
}

/*
 * Fail the first, second, ... allocation of OP until none is left to
 * fail; then a query (QUERY: OP can run once more first, it changes
 * nothing) answers as it did before any failed.
 */
static void torture(op_fn *op, const char *what, bool query)
{
	struct strbuf want, got, before;
	struct error err = ERROR_INIT;
	int n;

	strbuf_init_max(&want, 1 << 24);
	strbuf_init_max(&got, 1 << 24);
	strbuf_init_max(&before, 1 << 24);
	if (query)
		assert_int_equal(op(&before, &err), 0);
	for (n = 0;; n++) {
		int rc;

		err = (struct error)ERROR_INIT;
		strbuf_release(&got);
		failed = false;
		countdown = n;
		rc = op(&got, &err);
		countdown = -1;
		if (!failed) {
			if (rc != 0)
				fail_msg("%s, no allocation failed: %s", what, err.msg);
			break;
		}
		if (rc == 0 && strbuf_error(&got)) /* the answer's buffer ran out */
			continue;
		if (rc != 0) {
			if (rc != ERR_NOMEM || !strstr(err.msg, "memory"))
				fail_msg("%s, allocation %d failed: %d %s", what, n, rc, err.msg);
			continue;
		}
		/* Done without the allocation: the answer must be the full one. */
		strbuf_release(&want);
		assert_int_equal(op(&want, &err), 0);
		assert_int_equal(want.len, got.len);
		assert_memory_equal(want.buf, got.buf, got.len);
	}
	print_message("%s: %d allocations failed in turn\n", what, n);
	assert_true(n > 0);
	if (query) {
		assert_int_equal(before.len, got.len);
		assert_memory_equal(before.buf, got.buf, got.len);
	}
	strbuf_release(&want);
	strbuf_release(&got);
	strbuf_release(&before);
}

static int setup(void **state)
{
	struct service_config cfg = SERVICE_CONFIG_DEFAULT;
	struct error err = ERROR_INIT;
	struct profile *p = NULL;
	struct input in;
	FILE *mem;

	(void)state;
	profile_set_nomem_errors(true);
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/plateau-nomem-test-XXXXXX");
	assert_non_null(mkdtemp(fx.dir));
	cfg.rollup_delay_ns = 0;
	assert_int_equal(store_sqlite_open(fx.dir, false, &fx.st, &err), 0);
	assert_int_equal(service_open(fx.st, &cfg, &fx.sv, &err), 0);
	/* A pprof body with two sample types, from folded text. */
	assert_int_equal(input_from_buf(&in, "t", FOLDED_BODY, strlen(FOLDED_BODY), 1 << 20, &err),
			 0);
	assert_int_equal(folded_read(&in, &(struct read_options){0}, &p, &err), 0);
	input_close(&in);
	mem = open_memstream(&fx.pprof, &fx.pprof_len);
	assert_int_equal(profile_write(p, FMT_PPROF, 0, mem, &err), 0);
	fclose(mem);
	profile_free(p);
	/* Data for the queries. */
	assert_int_equal(push_body(FOLDED_BODY, strlen(FOLDED_BODY), FMT_FOLDED, T0, &err), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(push_typed(FOLDED_BODY, strlen(FOLDED_BODY), FMT_FOLDED,
					    "inuse_space", T0 + i * 10 * SEC, &err),
				 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	service_close(fx.sv);
	store_close(fx.st);
	free(fx.pprof);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
	return system(cmd);
}

static void test_labels(void **state)
{
	(void)state;
	torture(op_labels, "label names", true);
	torture(op_label_values, "label values", true);
	torture(op_series, "series", true);
}

static void test_push(void **state)
{
	(void)state;
	torture(op_push_folded, "push folded", false);
	torture(op_push_pprof, "push pprof", false);
}

static void test_query(void **state)
{
	(void)state;
	torture(op_query, "query", true);
	torture(op_query_gauge, "query of a gauge", true);
	torture(op_truncate, "query cut to maxNodes", true);
	torture(op_render_folded, "query as folded stacks", true);
	torture(op_render_pprof, "query as pprof", true);
	torture(op_flamebearer, "query as flamebearer JSON", true);
	torture(op_flamebearer_diff, "diff as flamebearer JSON", true);
	torture(op_diff_json, "diff as plateau diff's JSON", true);
}

static void test_timeline(void **state)
{
	(void)state;
	torture(op_timeline, "timeline", true);
}

static void test_roll(void **state)
{
	struct strbuf before = STRBUF_INIT, after = STRBUF_INIT;
	struct error err = ERROR_INIT;

	(void)state;
	assert_int_equal(op_query(&before, &err), 0);
	torture(op_roll, "rollups", false);
	/* Rolled up or not, the query answers the same. */
	assert_int_equal(op_query(&after, &err), 0);
	assert_string_equal(before.buf, after.buf);
	strbuf_release(&before);
	strbuf_release(&after);
}

/* The config file's tokens and allow-list: ERR_NOMEM at startup, nothing left allocated. */
static void test_config(void **state)
{
	char path[128];
	FILE *f;
	int n;

	(void)state;
	snprintf(path, sizeof(path), "%s/plateau.conf", fx.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("token = read:abcdefgh1\ntoken = write:abcdefgh2\nallow-labels = a,b,c\n", f);
	fclose(f);
	for (n = 0;; n++) {
		struct server_config c;
		struct error err = ERROR_INIT;
		int rc;

		server_config_init(&c);
		failed = false;
		countdown = n;
		rc = server_config_load(&c, path, &err);
		countdown = -1;
		if (!failed) {
			assert_int_equal(rc, 0);
			assert_int_equal(c.ntokens, 2);
			server_config_release(&c);
			break;
		}
		assert_int_equal(rc, ERR_NOMEM);
		assert_non_null(strstr(err.msg, "memory"));
		server_config_release(&c);
	}
	print_message("config: %d allocations failed in turn\n", n);
	assert_true(n > 0);
}

/* Send REQ (LEN bytes) to 127.0.0.1:PORT, read the answer into OUT (NUL-terminated). */
static void http_exchange(uint16_t port, const char *req, size_t len, char *out, size_t max)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	for (size_t sent = 0; sent < len; sent += (size_t)n) {
		n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
		assert_true(n > 0);
	}
	while (got + 1 < max && (n = recv(fd, out + got, max - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
}

/*
 * A request body that cannot be allocated (issue 14): the server answers
 * the static 503, then serves the next request as usual.
 */
static void test_http_body(void **state)
{
	enum { BODY = 100000 };
	struct server_config cfg;
	struct server *srv = NULL;
	struct error err = ERROR_INIT;
	char *req = malloc(BODY + 256), answer[4096];
	int hlen;

	(void)state;
	assert_non_null(req);
	server_config_init(&cfg);
	cfg.port = 0;
	assert_int_equal(server_start(&cfg, fx.sv, &srv, &err), 0);
	hlen = snprintf(req, 256,
			"POST /ingest?name=shop.cpu HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			"Content-Length: %d\r\n\r\n",
			BODY);
	memset(req + hlen, 'a', BODY);
	/* The body's one allocation: its announced length and the NUL. */
	fail_size = BODY + 1;
	http_exchange(server_port(srv), req, (size_t)hlen + BODY, answer, sizeof(answer));
	fail_size = 0;
	assert_non_null(strstr(answer, "HTTP/1.1 503"));
	assert_non_null(strstr(answer, "Retry-After: 1"));
	assert_non_null(strstr(answer, "{\"error\":\"out of memory: try again later\"}"));
	http_exchange(server_port(srv), req, (size_t)hlen + BODY, answer, sizeof(answer));
	assert_non_null(strstr(answer, "HTTP/1.1 400")); /* "aaa...": not folded stacks */
	server_stop(srv);
	server_config_release(&cfg);
	free(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push),	  cmocka_unit_test(test_query),
		cmocka_unit_test(test_labels),	  cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_roll),	  cmocka_unit_test(test_config),
		cmocka_unit_test(test_http_body),
	};

	return cmocka_run_group_tests_name("server_nomem", tests, setup, teardown);
}
