/* SPDX-License-Identifier: MIT */
/*
 * plateau serve: the continuous profile store (doc/plateau-serve.md).
 * The main thread rolls up and applies retention every few seconds; the
 * HTTP threads serve pushes and queries; SIGINT or SIGTERM stops it
 * after the requests in flight.
 */
#include <malloc.h>
#include <signal.h>
#include <time.h>

#include "util/common.h"
#include "cmd/cmd.h"
#include "server/server.h"
#include "store/timeparse.h"
#include "util/clock.h"

#define TICK_NS	   (INT64_C(1000000000))
#define ROLL_BATCH 256

static const char *const serve_usage[] = {
	"plateau serve [--listen HOST:PORT] [--data DIR] [--config FILE] [--retention AGE]",
	"              [--max-disk SIZE] [--disk-reserve SIZE] [--fsync] [-q]",
	"plateau serve --check-labels [--data DIR]",
	NULL,
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Say when the store turns read-only for a full disk, and when it takes pushes again. */
static void note_degraded(struct service *sv, bool *was)
{
	bool now = service_degraded(sv);

	if (now && !*was)
		warning("%s: pushes get 507, queries work; retrying every second",
			SERVICE_DISK_FULL);
	else if (!now && *was)
		warning("the store takes pushes again (space was freed)");
	*was = now;
}

/*
 * Give free heap memory back to the kernel.  M_TRIM_THRESHOLD (below)
 * keeps what pushes free for the next push, so a burst of heavy queries
 * left its peak resident (313 MiB, 272 after).  Once resident memory is
 * TRIM_SLACK over what malloc has in use, trim: the main arena's top and
 * the free pages inside every arena go back.  Not again until resident
 * memory has grown by a quarter of that since (what a trim cannot give
 * back, the other arenas' tops, stays: M_ARENA_MAX bounds them).
 */
#define TRIM_SLACK (32UL << 20)

static void memory_give_back(void)
{
	static unsigned long after; /* resident bytes after the last trim */
	struct mallinfo2 mi = mallinfo2();
	unsigned long size, resident, page = (unsigned long)sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "r");
	int n = f ? fscanf(f, "%lu %lu", &size, &resident) : 0;

	if (f)
		fclose(f);
	if (n != 2)
		return;
	resident *= page;
	if (resident > mi.uordblks + mi.hblkhd + TRIM_SLACK && resident > after + TRIM_SLACK / 4) {
		malloc_trim(0);
		f = fopen("/proc/self/statm", "r");
		n = f ? fscanf(f, "%lu %lu", &size, &after) : 0;
		if (f)
			fclose(f);
		after = n == 2 ? after * page : resident;
	}
}

/* Background work until a signal: rollups, then retention once a minute. */
static void run(struct service *sv)
{
	struct timespec tick = {TICK_NS / 1000000000, TICK_NS % 1000000000};
	int64_t last_retain = 0;
	bool degraded = false;

	while (!stopping) {
		struct error err = ERROR_INIT;
		int64_t now = clock_ns(CLOCK_REALTIME), deleted;
		int done;

		done = service_roll(sv, now, ROLL_BATCH, &err);
		/* A window that cannot be rolled up is told once, then skipped. */
		if (done < 0 || err.code)
			warning("rollup: %s", err.msg);
		err = (struct error)ERROR_INIT;
		note_degraded(sv, &degraded);
		if (service_maintain(sv, &err) < 0)
			warning("store: %s", err.msg);
		note_degraded(sv, &degraded);
		memory_give_back();
		/* Degraded, service_maintain() runs retention itself, every second. */
		if (now - last_retain >= 60 * INT64_C(1000000000) && !service_degraded(sv)) {
			err = (struct error)ERROR_INIT;
			if (service_retain(sv, now, &deleted, &err) < 0)
				warning("retention: %s", err.msg);
			last_retain = now;
		}
		/*
		 * Windows rolled: more may be due (their parents, which waited
		 * for them; a backlog past the batch), go on at once; a second
		 * when nothing was.
		 */
		if (done <= 0)
			nanosleep(&tick, NULL);
	}
}

/* The CPUs, at most 4: more arenas than CPUs only hold memory. */
static int arena_max(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 4 ? 4 : (int)n;
}

int cmd_serve(int argc, const char **argv)
{
	const char *listen = NULL, *data = "plateau-data", *config = NULL, *retention = NULL,
		   *max_disk = NULL, *reserve = "128MiB";
	bool fsync = false, check = false, quiet = false;
	const struct option opts[] = {
		OPT_STRING(0, "listen", &listen, "HOST:PORT", "where to listen (127.0.0.1:4040)"),
		OPT_STRING(0, "data", &data, "DIR",
			   "the embedded store's directory (plateau-data)"),
		OPT_STRING(0, "config", &config, "FILE",
			   "tokens, caps and label rules (doc/plateau-serve.md)"),
		OPT_STRING(0, "retention", &retention, "AGE",
			   "delete profiles older than AGE (30d)"),
		OPT_STRING(0, "max-disk", &max_disk, "SIZE",
			   "keep the store under SIZE (10GiB), oldest out first"),
		OPT_STRING(0, "disk-reserve", &reserve, "SIZE",
			   "room held back for a full disk, 0 for none (128MiB)"),
		OPT_BOOL(0, "fsync", &fsync,
			 "survive power loss too, not only a crash (slower pushes)"),
		OPT_BOOL(0, "check-labels", &check, "print the series count per label and exit"),
		OPT_BOOL('q', "quiet", &quiet, "no access log (a line per request on stderr)"),
		OPT_END(),
	};
	struct server_config cfg;
	struct error err = ERROR_INIT;
	struct store *st = NULL;
	struct service *sv = NULL;
	struct server *srv = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	uint64_t reserve_bytes;

	argc = parse_options(argc, argv, opts, serve_usage);
	if (argc > 0)
		die_usage("serve takes no arguments, not '%s'", argv[0]);
	server_config_init(&cfg);
	if (config && server_config_load(&cfg, config, &err) < 0)
		die("%s", err.msg);
	if (quiet)
		cfg.access_log = false;
	if (listen && server_config_listen(&cfg, listen, &err) < 0)
		die_usage("%s", err.msg);
	if (retention && duration_parse(retention, &cfg.svc.retention_ns, &err) < 0)
		die_usage("--retention: %s", err.msg);
	if (max_disk && size_parse(max_disk, &cfg.svc.max_disk, &err) < 0)
		die_usage("--max-disk: %s", err.msg);
	if (size_parse(reserve, &reserve_bytes, &err) < 0 ||
	    (reserve_bytes && reserve_bytes < (1u << 20)) || reserve_bytes > INT64_MAX)
		die_usage("--disk-reserve: %s", err.code ? err.msg : "0 or at least 1MiB");
	/* From here on, running out of memory fails a request, not the server. */
	profile_set_nomem_errors(true);
	if (store_sqlite_open(data, fsync, &st, &err) < 0 ||
	    store_sqlite_reserve(st, (int64_t)reserve_bytes, &err) < 0 ||
	    service_open(st, &cfg.svc, &sv, &err) < 0)
		die("%s", err.msg);
	if (check) {
		struct strbuf out = STRBUF_INIT;

		service_check_labels(sv, &out, &err);
		fputs(out.buf ? out.buf : "", stdout);
		strbuf_release(&out);
		service_close(sv);
		store_close(st);
		server_config_release(&cfg);
		return 0;
	}
	/* Every push allocates and frees a few MiB: keep those pages instead of
	 * giving them back and faulting them in again on the next one. */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	/* An arena's top is not trimmed while under the threshold, so each
	 * arena keeps what its share of a query burst used (8 arenas of 16
	 * MiB after 8 parallel queries): few arenas, few such tops. */
	mallopt(M_ARENA_MAX, arena_max());
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (server_start(&cfg, sv, &srv, &err) < 0)
		die("%s", err.msg);
	fprintf(stderr, "plateau serve: listening on http://%s:%u, store %s\n", cfg.listen_host,
		server_port(srv), data);
	run(sv);
	server_stop(srv);
	service_close(sv);
	store_close(st);
	server_config_release(&cfg);
	return 0;
}
