/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's /metrics (Prometheus text) and /healthz (http_int.h,
 * doc/plateau-serve.md "Metrics").  The counters live in struct server
 * under its mutex; the store's numbers come from the service.
 */
#include <stdio.h>

#include "server/deadline.h"
#include "server/http_int.h"

const double latency_le[NLAT] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

static const char *const reject_names[REJ_COUNT] = {"auth",  "body_size", "inflated_size", "format",
						    "limit", "busy",	  "disk_full"};

/* Alive: "ok", or that the store is read-only for a full disk (still 200). */
enum MHD_Result on_health(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	return reply_text(s, c, rq, MHD_HTTP_OK, "text/plain",
			  service_degraded(s->sv) ? "degraded: read-only (disk full)\n" : "ok\n");
}

/* The connections' gauges and the header deadlines enforced. */
static void metrics_connections(struct server *s, struct strbuf *out)
{
	const union MHD_DaemonInfo *i =
		MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	strbuf_addf(out,
		    "# HELP plateau_http_connections Connections open.\n"
		    "# TYPE plateau_http_connections gauge\n"
		    "plateau_http_connections %u\n"
		    "# HELP plateau_http_connections_max Connections open at most "
		    "(max-connections, fitted to the open-file limit).\n"
		    "# TYPE plateau_http_connections_max gauge\n"
		    "plateau_http_connections_max %u\n"
		    "# HELP plateau_http_header_timeouts_total Connections cut for not sending "
		    "a request's headers (or a refused body) within header-timeout.\n"
		    "# TYPE plateau_http_header_timeouts_total counter\n"
		    "plateau_http_header_timeouts_total %llu\n",
		    i ? i->num_connections : 0, s->cfg.max_connections,
		    (unsigned long long)deadlines_cut(s->dl));
}

/* At most this many apps in /metrics (the help text says it too). */
#define METRICS_APPS_MAX 1000

static void add_app_series(const char *app, uint64_t series, void *arg)
{
	/* App names are [A-Za-z0-9._-]: nothing to escape in a label value. */
	strbuf_addf(arg, "plateau_app_series{app=\"%s\"} %llu\n", app, (unsigned long long)series);
}

/* Series per app, the METRICS_APPS_MAX largest, and how many apps in all. */
static void metrics_app_series(struct server *s, struct strbuf *out)
{
	size_t n;

	strbuf_addstr(out, "# HELP plateau_app_series Series of each app (the 1,000 with the "
			   "most).\n"
			   "# TYPE plateau_app_series gauge\n");
	n = service_app_series(s->sv, METRICS_APPS_MAX, add_app_series, out);
	strbuf_addf(out,
		    "# HELP plateau_apps Apps with series in the store.\n"
		    "# TYPE plateau_apps gauge\n"
		    "plateau_apps %zu\n",
		    n);
}

enum MHD_Result on_metrics(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct strbuf out = REPLY_INIT;
	struct service_counters sc;
	struct store_stats st = {0};
	struct error err = ERROR_INIT;

	service_counters(s->sv, &sc);
	service_store_counts(s->sv, &st, &err);
	pthread_mutex_lock(&s->mu);
	strbuf_addstr(
		&out,
		"# HELP plateau_http_requests_total HTTP requests by route and status class.\n"
		"# TYPE plateau_http_requests_total counter\n");
	for (size_t r = 0; r <= nroutes; r++)
		for (int k = 1; k <= 5; k++)
			if (s->requests[r][k])
				strbuf_addf(&out,
					    "plateau_http_requests_total{route=\"%s\",code=\"%"
					    "dxx\"} %llu\n",
					    r < nroutes ? routes[r].name : "other", k,
					    (unsigned long long)s->requests[r][k]);
	strbuf_addstr(&out, "# HELP plateau_pushes_rejected_total Pushes refused, by reason.\n"
			    "# TYPE plateau_pushes_rejected_total counter\n");
	for (int i = 0; i < REJ_COUNT; i++)
		strbuf_addf(&out, "plateau_pushes_rejected_total{reason=\"%s\"} %llu\n",
			    reject_names[i], (unsigned long long)s->rejected[i]);
	strbuf_addf(
		&out,
		"# HELP plateau_ingest_body_bytes_total Bytes of push bodies received.\n"
		"# TYPE plateau_ingest_body_bytes_total counter\n"
		"plateau_ingest_body_bytes_total %llu\n"
		"# HELP plateau_ingest_profiles_total Profiles stored (one per series a push "
		"fed).\n"
		"# TYPE plateau_ingest_profiles_total counter\n"
		"plateau_ingest_profiles_total %llu\n"
		"# HELP plateau_ingest_blob_bytes_total Bytes of stored profile blobs.\n"
		"# TYPE plateau_ingest_blob_bytes_total counter\n"
		"plateau_ingest_blob_bytes_total %llu\n"
		"# HELP plateau_ingest_labels_renamed_total Label names of stored pushes mapped "
		"as Pyroscope maps them ('.' to '_').\n"
		"# TYPE plateau_ingest_labels_renamed_total counter\n"
		"plateau_ingest_labels_renamed_total %llu\n"
		"# HELP plateau_series Series in the store.\n"
		"# TYPE plateau_series gauge\n"
		"plateau_series %llu\n"
		"# HELP plateau_store_bytes Bytes of the store on disk.\n"
		"# TYPE plateau_store_bytes gauge\n"
		"plateau_store_bytes %lld\n"
		"# HELP plateau_store_rows Stored profiles, rollups included.\n"
		"# TYPE plateau_store_rows gauge\n"
		"plateau_store_rows %lld\n"
		"# HELP plateau_rollups_pending Rollup windows waiting to be written.\n"
		"# TYPE plateau_rollups_pending gauge\n"
		"plateau_rollups_pending %lld\n"
		"# HELP plateau_rollups_total Rollup windows written.\n"
		"# TYPE plateau_rollups_total counter\n"
		"plateau_rollups_total %llu\n"
		"# HELP plateau_rollups_shared_total Rollup windows written with their sample-type "
		"siblings (their pushes merged once).\n"
		"# TYPE plateau_rollups_shared_total counter\n"
		"plateau_rollups_shared_total %llu\n"
		"# HELP plateau_retention_deleted_total Rows deleted by retention.\n"
		"# TYPE plateau_retention_deleted_total counter\n"
		"plateau_retention_deleted_total %llu\n"
		"# HELP plateau_store_degraded 1 while the store is read-only for a full disk "
		"(pushes get 507).\n"
		"# TYPE plateau_store_degraded gauge\n"
		"plateau_store_degraded %d\n",
		(unsigned long long)s->body_bytes, (unsigned long long)sc.ingested,
		(unsigned long long)sc.ingest_bytes, (unsigned long long)sc.labels_renamed,
		(unsigned long long)sc.series, (long long)st.bytes_disk, (long long)st.rows,
		(long long)st.stale, (unsigned long long)sc.rollups,
		(unsigned long long)sc.rollups_shared, (unsigned long long)sc.deleted,
		service_degraded(s->sv));
	strbuf_addf(&out,
		    "# HELP plateau_rollups_failed_total Rollup windows whose data could not be "
		    "rolled up, skipped until a push changes them.\n"
		    "# TYPE plateau_rollups_failed_total counter\n"
		    "plateau_rollups_failed_total %llu\n"
		    "# HELP plateau_rollups_fleet_total Rollup windows written for fleets (every "
		    "series of an app and type merged).\n"
		    "# TYPE plateau_rollups_fleet_total counter\n"
		    "plateau_rollups_fleet_total %llu\n"

		    "# HELP plateau_query_rows_total Stored rows (pushes and rollups) merged by "
		    "queries.\n"
		    "# TYPE plateau_query_rows_total counter\n"
		    "plateau_query_rows_total %llu\n"
		    "# HELP plateau_query_duration_seconds Query latency.\n"
		    "# TYPE plateau_query_duration_seconds histogram\n",
		    (unsigned long long)sc.rollups_failed, (unsigned long long)sc.rollups_fleet,
		    (unsigned long long)sc.query_rows);
	for (size_t i = 0; i < NLAT; i++)
		strbuf_addf(&out, "plateau_query_duration_seconds_bucket{le=\"%g\"} %llu\n",
			    latency_le[i], (unsigned long long)s->lat_bucket[i]);
	strbuf_addf(&out,
		    "plateau_query_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		    "plateau_query_duration_seconds_sum %.6f\n"
		    "plateau_query_duration_seconds_count %llu\n",
		    (unsigned long long)s->lat_count, s->lat_sum, (unsigned long long)s->lat_count);
	pthread_mutex_unlock(&s->mu);
	metrics_connections(s, &out);
	metrics_app_series(s, &out);
	return reply(s, c, rq, MHD_HTTP_OK, "text/plain; version=0.0.4", &out);
}
