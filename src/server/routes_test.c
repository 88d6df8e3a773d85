/* SPDX-License-Identifier: MIT */
/*
 * The routes table (http_routes.c) against the endpoint tables of
 * doc/plateau-serve.md: every "`METHOD /path" in the first cell of a
 * table row of the doc is a route and every route is in the doc ('*' in
 * a route is the doc's NAME), so the two cannot drift apart.  Then route_find(): a route, a
 * 405's methods, a 404.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "server/http_int.h"

#define SERVE_DOC SOURCE_ROOT "/doc/plateau-serve.md" /* SOURCE_ROOT: meson.build */

#define DOC_ENDPOINTS_MAX 64

struct endpoint {
	char method[8];
	char path[128];
	bool seen;
};

/* The endpoint at P ("`GET /a/b?x=..." or "`POST /a[?...]"), in the routes' spelling. */
static bool endpoint_parse(const char *p, struct endpoint *e)
{
	size_t m = strcspn(p + 1, " `"), n;
	char *name;

	if (p[0] != '`' || m >= sizeof(e->method) || p[1 + m] != ' ' || p[2 + m] != '/')
		return false;
	memcpy(e->method, p + 1, m);
	e->method[m] = '\0';
	if (strcmp(e->method, "GET") && strcmp(e->method, "POST"))
		return false;
	p += 2 + m;
	n = strcspn(p, "?[` ");
	assert_true(n < sizeof(e->path));
	memcpy(e->path, p, n);
	e->path[n] = '\0';
	name = strstr(e->path, "NAME");
	if (name) { /* the doc's NAME is the route's '*' */
		*name = '*';
		memmove(name + 1, name + 4, strlen(name + 4) + 1);
	}
	e->seen = false;
	return true;
}

/* The endpoints named in the first cells of the doc's table rows. */
static size_t doc_endpoints(struct endpoint *v, size_t max)
{
	FILE *f = fopen(SERVE_DOC, "r");
	char line[4096];
	size_t n = 0;

	if (!f)
		fail_msg("cannot read %s", SERVE_DOC);
	while (fgets(line, sizeof(line), f)) {
		char *end = strchr(line + 1, '|');

		/* An endpoint row: its first cell is "`METHOD /path...`[, ...]". */
		if (strncmp(line, "| `", 3) || !end)
			continue;
		*end = '\0';
		for (const char *p = strchr(line, '`'); p; p = strchr(p + 1, '`'))
			if (n < max && endpoint_parse(p, &v[n]))
				n++;
	}
	fclose(f);
	return n;
}

static void test_doc_lists_every_route(void **state)
{
	struct endpoint doc[DOC_ENDPOINTS_MAX];
	size_t n = doc_endpoints(doc, DOC_ENDPOINTS_MAX);

	(void)state;
	assert_true(n > 0);
	for (size_t r = 0; r < nroutes; r++) {
		bool found = false;

		for (size_t i = 0; i < n; i++)
			if (!strcmp(doc[i].method, routes[r].method) &&
			    !strcmp(doc[i].path, routes[r].path))
				found = doc[i].seen = true;
		if (!found)
			fail_msg("route %s %s is not in %s's endpoint tables", routes[r].method,
				 routes[r].path, SERVE_DOC);
	}
	for (size_t i = 0; i < n; i++)
		if (!doc[i].seen)
			fail_msg("%s %s in %s is not a route (http_routes.c)", doc[i].method,
				 doc[i].path, SERVE_DOC);
}

/* Names for /metrics are unique, paths with their method too; push routes need write. */
static void test_table_is_consistent(void **state)
{
	(void)state;
	for (size_t r = 0; r < nroutes; r++) {
		assert_non_null(routes[r].handler);
		assert_true(!strcmp(routes[r].method, "GET") || !strcmp(routes[r].method, "POST"));
		assert_int_equal(routes[r].scope == SCOPE_WRITE, !strcmp(routes[r].method, "POST"));
		for (size_t q = 0; q < r; q++) {
			assert_string_not_equal(routes[r].name, routes[q].name);
			assert_false(!strcmp(routes[r].path, routes[q].path) &&
				     !strcmp(routes[r].method, routes[q].method));
		}
	}
}

static void test_route_find(void **state)
{
	const struct route *rt;
	const char *part;
	size_t len;
	unsigned allowed;

	(void)state;
	rt = route_find("HEAD", "/api/v1/query", &part, &len, &allowed);
	assert_non_null(rt);
	assert_string_equal(rt->name, "query");
	rt = route_find("GET", "/api/v1/labels/region/values", &part, &len, &allowed);
	assert_non_null(rt);
	assert_string_equal(rt->name, "values");
	assert_int_equal(len, 6);
	assert_memory_equal(part, "region", 6);
	/* A known path, another method: no route, the methods it takes. */
	assert_null(route_find("GET", "/ingest", &part, &len, &allowed));
	assert_int_equal(allowed, ALLOW_POST);
	assert_string_equal(route_allow_text(allowed), "POST");
	assert_null(route_find("POST", "/api/v1/query", &part, &len, &allowed));
	assert_int_equal(allowed, ALLOW_GET);
	assert_string_equal(route_allow_text(allowed), "GET, HEAD");
	assert_null(route_find("DELETE", "/api/v1/labels/x/values", &part, &len, &allowed));
	assert_int_equal(allowed, ALLOW_GET);
	/* Unknown paths: a 404. */
	assert_null(route_find("GET", "/api/v1/nothing", &part, &len, &allowed));
	assert_int_equal(allowed, 0);
	assert_null(route_find("GET", "/api/v1/labels//values", &part, &len, &allowed));
	assert_int_equal(allowed, 0);
	assert_null(route_find("GET", "/api/v1/labels/values", &part, &len, &allowed));
	assert_int_equal(allowed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_lists_every_route),
		cmocka_unit_test(test_table_is_consistent),
		cmocka_unit_test(test_route_find),
	};

	return cmocka_run_group_tests_name("routes", tests, NULL, NULL);
}
