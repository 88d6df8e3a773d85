/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_SERVICE_TESTUTIL_H
#define PLATEAU_SERVER_SERVICE_TESTUTIL_H

/*
 * For the service's unit tests (service_test.c, service_rollup_test.c,
 * service_labels_test.c): a fixture with a service over a fresh SQLite
 * store in a temporary directory (setup, teardown), folded pushes and
 * queries as sorted folded text.  Include after <cmocka.h>.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/input.h"
#include "server/service.h"

#define SEC  INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define T0   (INT64_C(1764590400) * SEC) /* an hour boundary */

struct fixture {
	char dir[64];
	struct store *st;
	struct service *sv;
	struct service_config cfg;
};

static inline struct profile *folded(const char *text)
{
	struct input in;
	struct error err = ERROR_INIT;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "test", text, strlen(text), 1 << 20, &err), 0);
	assert_int_equal(folded_read(&in, &(struct read_options){0}, &p, &err), 0);
	input_close(&in);
	return p;
}

static inline void open_service(struct fixture *f)
{
	struct error err = ERROR_INIT;

	assert_int_equal(store_sqlite_open(f->dir, false, &f->st, &err), 0);
	assert_int_equal(service_open(f->st, &f->cfg, &f->sv, &err), 0);
}

static inline void close_service(struct fixture *f)
{
	service_close(f->sv);
	store_close(f->st);
	f->sv = NULL;
	f->st = NULL;
}

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct service_config cfg = SERVICE_CONFIG_DEFAULT;

	snprintf(f->dir, sizeof(f->dir), "/tmp/plateau-service-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->cfg = cfg;
	f->cfg.rollup_delay_ns = 0;
	open_service(f);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	int rc;

	close_service(f);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	rc = system(cmd);
	free(f);
	return rc;
}

static inline void push(struct fixture *f, const char *app, const char *type, const char *region,
			int64_t t, const char *text)
{
	struct series_label l[] = {{"region", region}, {"version", "v1"}};
	struct ingest_req req = {app, type, NULL, l, 2, t, t + 10 * SEC};
	struct error err = ERROR_INIT;
	struct profile *p = folded(text);

	assert_int_equal(service_ingest(f->sv, &req, p, &err), 0);
	profile_free(p);
}

/* The query of SEL over [from, until) as sorted folded text. */
static inline char *query_text(struct fixture *f, const char *sel_text, int64_t from, int64_t until,
			       size_t *nseries)
{
	struct selector *sel;
	struct profile *p;
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0, n;
	FILE *mem = open_memstream(&buf, &len);

	assert_int_equal(selector_parse(sel_text, &sel, &err), 0);
	assert_int_equal(service_query(f->sv, sel, from, until, &p, nseries ? nseries : &n, &err),
			 0);
	assert_int_equal(folded_write(p, 0, mem, &err), 0);
	fclose(mem);
	selector_free(sel);
	profile_free(p);
	return buf;
}

#endif
