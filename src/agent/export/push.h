/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_AGENT_EXPORT_PUSH_H
#define PLATEAU_AGENT_EXPORT_PUSH_H

/*
 * Push of finished profiles to PLATEAU_SERVER (doc/agent-push.md): one
 * agent thread posts each gzipped pprof body to
 *   {server}{path}/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof
 *     &spyName=plateau&sampleRate=HZ[&units=U]
 * with libcurl, retrying with backoff, from a bounded queue that drops its
 * oldest profile rather than block the caller.  cfg->token goes as
 * "Authorization: Bearer", cfg->server_user/server_password as HTTP Basic,
 * cfg->tenant as "X-Scope-OrgID"; warnings name the server by cfg->server
 * (its password as ***), never a secret.
 *
 * Everything here is cold code.  agent_push_new and agent_push_stop are
 * called from the agent's start and exit paths, agent_push_enqueue and
 * agent_push_counters from any thread (typically the collector).  All
 * libcurl work, including curl_global_init, happens in the push thread,
 * which starts with every signal blocked (the host's signals never land
 * there) and calls opts->thread_init first, before it allocates anything.
 * libcurl runs with CURLOPT_NOSIGNAL: no host signal handler is touched.
 *
 * Not fork-safe: a fork child must not call any function here on the
 * parent's push (its thread does not exist in the child); leak it and make
 * a new one.
 */

#include <stddef.h>
#include <stdint.h>

#include "agent/core/config.h"

struct agent_push;

/* Tuning; zero fields take the default in brackets. */
struct agent_push_opts {
	/* Called first in the push thread, e.g. agent_thread_set_internal. */
	void (*thread_init)(void);
	/* One warning line without "plateau: " or newline [write(2) to fd 2,
	 * prefixed].  Called on the push thread only, rate-limited. */
	void (*warn)(const char *msg);
	unsigned queue_max;	     /* queued profiles, at most 1024 [8] */
	size_t queue_bytes_max;	     /* bytes of queued bodies [32 MiB] */
	unsigned max_attempts;	     /* attempts per profile [10] */
	uint64_t max_age_ms;	     /* give up on a profile this long after enqueue [300000] */
	uint64_t backoff_min_ms;     /* first retry delay [500] */
	uint64_t backoff_max_ms;     /* cap of the doubling delay [30000] */
	uint64_t timeout_ms;	     /* whole request, connect included [30000] */
	uint64_t connect_timeout_ms; /* TCP connect [5000] */
};

/* Snapshot of the counters (monotonic except queued). */
struct agent_push_counters {
	uint64_t pushed;   /* delivered: the server answered 2xx */
	uint64_t dropped;  /* oldest queued profile dropped for a new one, or too big to queue */
	uint64_t rejected; /* answered 3xx or 4xx other than 408 and 429: not retried */
	uint64_t expired;  /* given up after max_attempts or max_age_ms */
	uint64_t unsent;   /* still queued or in flight when stop's deadline passed */
	uint64_t retries;  /* attempts after a profile's first */
	uint64_t errors;   /* failed attempts: connect/transport errors, timeouts, 5xx, 408, 429 */
	uint64_t queued;   /* profiles in the queue now (not counting one in flight) */
};

/*
 * Start pushing to CFG's server (cfg->server must be set; CFG is copied).
 * OPTS may be NULL for the defaults.  Waits until the thread has set up
 * libcurl.  Returns the push (free with agent_push_stop) or NULL with errno
 * set (EINVAL: no server; ENOMEM; EIO: libcurl failed to initialise).
 */
struct agent_push *agent_push_new(const struct agent_config *cfg,
				  const struct agent_push_opts *opts);

/*
 * Queue one profile: GZ (LEN bytes, malloc'ed gzipped pprof) becomes the
 * push's in every case, also on error.  FROM_NS/UNTIL_NS are the profile's
 * realtime window (sent as whole seconds, rounded down); UNITS (may be
 * NULL, at most 31 bytes, copied) is sent as &units=.  Never waits for the
 * network: when the queue is full its oldest profile is dropped and
 * counted.  Returns 0, -E2BIG when LEN alone exceeds queue_bytes_max (the
 * profile is dropped and counted), -EINVAL on NULL arguments or after
 * agent_push_stop has begun.
 */
int agent_push_enqueue(struct agent_push *p, uint8_t *gz, size_t len, uint64_t from_ns,
		       uint64_t until_ns, const char *units);

/* Copy the counters into OUT (any thread). */
void agent_push_counters(struct agent_push *p, struct agent_push_counters *out);

/*
 * Send what is queued until DEADLINE_MS milliseconds from now, then drop
 * the rest (counted as unsent), stop the thread and free P.  Returns by
 * the deadline even when the server hangs: a request in flight is cut off.
 * Should the thread still be stuck (a hung resolver or stderr), it is left
 * to free P itself when it ends.  FINAL (may be NULL) receives the last
 * counters.  NULL P is a no-op.  The caller must make sure no other
 * function runs on P during or after this call.
 */
void agent_push_stop(struct agent_push *p, uint64_t deadline_ms, struct agent_push_counters *final);

#endif
