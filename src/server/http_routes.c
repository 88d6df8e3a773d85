/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's routes: one table (http_int.h) that dispatches every
 * request.  A known path with another method is a 405 with Allow, an
 * unknown path a 404.  The endpoint tables of doc/plateau-serve.md list
 * exactly these rows (routes_test.c reads the doc and fails otherwise).
 */
#include <string.h>

#include "server/http_int.h"

/*
 * In the order of plateau_http_requests_total's lines.  Every route
 * takes a body up to max-body (body_max 0), as before the table: a
 * tighter cap is one number here.
 */
const struct route routes[] = {
	{"GET", "/healthz", "healthz", on_health, 0, 0, true},
	{"GET", "/metrics", "metrics", on_metrics, SCOPE_READ, 0, false},
	{"POST", "/ingest", "ingest", on_ingest, SCOPE_WRITE, 0, false},
	{"POST", "/api/v1/profiles", "profiles", on_profiles, SCOPE_WRITE, 0, false},
	{"GET", "/api/v1/query", "query", on_query, SCOPE_READ, 0, false},
	{"GET", "/render", "render", on_render, SCOPE_READ, 0, false},
	{"GET", "/api/v1/diff", "diff", on_diff, SCOPE_READ, 0, false},
	{"GET", "/api/v1/labels", "labels", on_label_names, SCOPE_READ, 0, false},
	{"GET", "/api/v1/labels/*/values", "values", on_label_values, SCOPE_READ, 0, false},
	{"GET", "/api/v1/series", "series", on_series, SCOPE_READ, 0, false},
	{"GET", "/api/v1/timeline", "timeline", on_timeline, SCOPE_READ, 0, false},
	/* The web UI's page: no data in it, so no token (its API calls need one). */
	{"GET", "/", "ui", on_ui, 0, 0, false},
	{"GET", "/comparison", "ui_comparison", on_ui, 0, 0, false},
	{"GET", "/diff", "ui_diff", on_ui, 0, 0, false},
};

const size_t nroutes = sizeof(routes) / sizeof(routes[0]);
_Static_assert(sizeof(routes) / sizeof(routes[0]) <= ROUTES_MAX, "raise ROUTES_MAX");

/* Whether URL is PATH; with a '*' in PATH, its part of URL (non-empty) in *PART. */
static bool path_match(const char *path, const char *url, const char **part, size_t *partlen)
{
	const char *star = strchr(path, '*');
	size_t pre, suf, len;

	if (!star)
		return !strcmp(path, url);
	pre = (size_t)(star - path);
	suf = strlen(star + 1);
	len = strlen(url);
	if (len <= pre + suf || strncmp(url, path, pre) || strcmp(url + len - suf, star + 1))
		return false;
	*part = url + pre;
	*partlen = len - pre - suf;
	return true;
}

static unsigned method_bit(const char *method)
{
	return !strcmp(method, "GET") ? ALLOW_GET : ALLOW_POST;
}

const struct route *route_find(const char *method, const char *url, const char **part,
			       size_t *partlen, unsigned *allowed)
{
	unsigned want = !strcmp(method, "GET") || !strcmp(method, "HEAD") ? ALLOW_GET
			: !strcmp(method, "POST")			  ? ALLOW_POST
									  : 0;

	*part = NULL;
	*partlen = 0;
	*allowed = 0;
	for (size_t i = 0; i < nroutes; i++) {
		const char *p = NULL;
		size_t n = 0;

		if (!path_match(routes[i].path, url, &p, &n))
			continue;
		if (method_bit(routes[i].method) == want) {
			*part = p;
			*partlen = n;
			return &routes[i];
		}
		*allowed |= method_bit(routes[i].method);
	}
	return NULL;
}

const char *route_allow_text(unsigned allowed)
{
	switch (allowed) {
	case ALLOW_GET: return "GET, HEAD";
	case ALLOW_POST: return "POST";
	default: return "GET, HEAD, POST";
	}
}
