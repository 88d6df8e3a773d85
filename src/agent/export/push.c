/* SPDX-License-Identifier: MIT */
/*
 * The push thread (push.h, doc/agent-push.md).  One curl multi handle with
 * one easy handle, reused so the connection stays alive; the thread waits
 * in curl_multi_poll, which enqueue and stop interrupt with
 * curl_multi_wakeup, so a transfer in flight is cut off at stop's deadline
 * to the millisecond instead of at libcurl's next progress tick.
 *
 * Locking: P->lock guards the queue and the stop state and is never held
 * across a transfer or a write to stderr, so enqueue waits at most for a
 * few list operations.  Every curl_multi_wakeup is made under the lock, and
 * the thread tears curl down only after it has seen `stopping` under the
 * lock, so no wakeup can reach a freed multi handle.
 *
 * Credentials (PLATEAU_TOKEN, the URL's user:password, PLATEAU_TENANT)
 * are copied for the thread's setup, handed to libcurl and wiped; messages
 * name the server by cfg->server, whose password is already ***.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "agent/export/push.h"
#include "util/banned.h"

#define NS_PER_MS     UINT64_C(1000000)
#define NS_PER_S      UINT64_C(1000000000)
#define UNITS_MAX     32  /* bytes of a units string, with its NUL */
#define RESP_KEEP     256 /* response bytes kept for a warning */
#define MSG_MAX	      640 /* one warning line */
#define WARN_EVERY_NS (60 * NS_PER_S)
#define IDLE_POLL_MS  60000
#define QUEUE_LIMIT   1024u

struct item {
	uint8_t *gz;
	size_t len;
	uint64_t from_s, until_s;
	uint64_t enq_ns; /* monotonic */
	char units[UNITS_MAX];
};

/* Warnings are rate-limited per kind. */
enum warn_kind { WARN_RETRY, WARN_REJECT, WARN_EXPIRE, WARN_DROP, WARN_KINDS };

/* How one attempt ended. */
enum outcome { SENT, REJECTED, RETRY, CUT };

struct agent_push {
	struct agent_push_opts o;
	char *server; /* as configured (password as ***), for messages */
	/* Until setup_curl has handed them to libcurl, then wiped: NULL when unset. */
	char *auth_header;   /* "Authorization: Bearer TOKEN" */
	char *tenant_header; /* "X-Scope-OrgID: TENANT" */
	char *user, *password;
	char *base; /* "http://host:port/path/ingest?name=..." */
	unsigned hz;
	bool loopback;
	pthread_t thread;

	pthread_mutex_t lock;
	pthread_cond_t ready_cond;
	/* Under lock. */
	struct item *q; /* ring of o.queue_max */
	unsigned head, count;
	size_t bytes;
	int ready; /* 0 setting up, 1 running, negative errno: setup failed */
	bool stopping, inflight, finished, orphaned;
	uint64_t deadline_ns; /* monotonic; valid when stopping */

	/* Push thread only (multi is also woken from other threads, under lock). */
	CURLM *multi;
	CURL *easy;
	struct curl_slist *headers;
	bool curl_global;
	char resp[RESP_KEEP];
	size_t resp_len;
	char errbuf[CURL_ERROR_SIZE];
	uint64_t rng;
	bool warned[WARN_KINDS];
	uint64_t warned_ns[WARN_KINDS];
	uint64_t suppressed[WARN_KINDS];
	uint64_t drops_told;

	atomic_uint_fast64_t pushed, dropped, rejected, expired, unsent, retries, errors;
};

#define bump(p, field) atomic_fetch_add_explicit(&(p)->field, 1, memory_order_relaxed)
#define load(p, field) ((uint64_t)atomic_load_explicit(&(p)->field, memory_order_relaxed))

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Nanoseconds left before stop's deadline, UINT64_MAX when not stopping. */
static uint64_t left_locked(const struct agent_push *p, uint64_t now)
{
	if (!p->stopping)
		return UINT64_MAX;
	return p->deadline_ns > now ? p->deadline_ns - now : 0;
}

static uint64_t left_ns(struct agent_push *p)
{
	uint64_t left;

	pthread_mutex_lock(&p->lock);
	left = left_locked(p, now_ns());
	pthread_mutex_unlock(&p->lock);
	return left;
}

/* ---- warnings ---- */

static void write_stderr(const char *msg)
{
	char line[MSG_MAX + 16];
	int n = snprintf(line, sizeof(line), "plateau: %s\n", msg);
	size_t off = 0, len;

	if (n < 0)
		return;
	len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	line[len - 1] = '\n';
	while (off < len) {
		ssize_t w = write(2, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void emit(struct agent_push *p, const char *msg)
{
	int saved = errno;

	if (p->o.warn)
		p->o.warn(msg);
	else
		write_stderr(msg);
	errno = saved;
}

/* Whether a warning of KIND may go out now (at most one a minute). */
static bool warn_due(struct agent_push *p, enum warn_kind kind)
{
	uint64_t now = now_ns();

	if (p->warned[kind] && now - p->warned_ns[kind] < WARN_EVERY_NS) {
		p->suppressed[kind]++;
		return false;
	}
	p->warned[kind] = true;
	p->warned_ns[kind] = now;
	return true;
}

__attribute__((format(printf, 3, 4))) static void warn(struct agent_push *p, enum warn_kind kind,
						       const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;
	int n;

	if (!warn_due(p, kind))
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(msg) && p->suppressed[kind])
		snprintf(msg + n, sizeof(msg) - (size_t)n,
			 " (%llu more like it in the last minute)",
			 (unsigned long long)p->suppressed[kind]);
	p->suppressed[kind] = 0;
	emit(p, msg);
}

/* Tell about queue drops since the last time (enqueue itself never writes). */
static void note_drops(struct agent_push *p)
{
	uint64_t d = load(p, dropped);

	if (d > p->drops_told && warn_due(p, WARN_DROP)) {
		char msg[MSG_MAX];

		snprintf(msg, sizeof(msg), "push to %s: queue full, dropped %llu oldest profiles",
			 p->server, (unsigned long long)(d - p->drops_told));
		p->suppressed[WARN_DROP] = 0;
		p->drops_told = d;
		emit(p, msg);
	}
}

/* The first line of the response body, made printable, in BUF. */
static const char *first_line(const struct agent_push *p, char *buf, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < p->resp_len && n + 1 < size; i++) {
		unsigned char c = (unsigned char)p->resp[i];

		if (c == '\n' || c == '\r')
			break;
		buf[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	buf[n] = '\0';
	return buf;
}

/* ---- URLs ---- */

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encode S at DST (room for 3 * strlen(S) + 1); returns the end. */
static char *encode(char *dst, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (unreserved(c)) {
			*dst++ = (char)c;
		} else {
			*dst++ = '%';
			*dst++ = hex[c >> 4];
			*dst++ = hex[c & 15];
		}
	}
	*dst = '\0';
	return dst;
}

/* "APP" or "APP{k=v,k=v}", malloc'ed. */
static char *series_name(const struct agent_config *cfg)
{
	size_t size = strlen(cfg->app) + 7, i, o;
	char *name;

	for (i = 0; i < cfg->ntags; i++)
		size += strlen(cfg->tags[i].key) + strlen(cfg->tags[i].value) + 2;
	name = malloc(size);
	if (!name)
		return NULL;
	/* app.cpu as Pyroscope's clients name a pprof push (the server stores every
	 * sample type anyway): an app name with dots still parses back whole. */
	o = (size_t)snprintf(name, size, "%s.cpu", cfg->app);
	for (i = 0; i < cfg->ntags; i++)
		o += (size_t)snprintf(name + o, size - o, "%c%s=%s", i ? ',' : '{',
				      cfg->tags[i].key, cfg->tags[i].value);
	if (cfg->ntags)
		snprintf(name + o, size - o, "}");
	return name;
}

/* "http://host:port/path/ingest?name=ENCODED", malloc'ed. */
static char *base_url(const struct agent_config *cfg)
{
	const char *h = cfg->server_host;
	bool v6 = strchr(h, ':') != NULL;
	size_t plen = strlen(cfg->server_path), size;
	char *name = series_name(cfg), *url;
	int n;

	if (!name)
		return NULL;
	while (plen > 0 && cfg->server_path[plen - 1] == '/')
		plen--;
	size = strlen(h) + plen + 3 * strlen(name) + 64;
	url = malloc(size);
	if (url) {
		n = snprintf(url, size, "http://%s%s%s:%u%.*s/ingest?name=", v6 ? "[" : "", h,
			     v6 ? "]" : "", (unsigned)cfg->server_port, (int)plen,
			     cfg->server_path);
		encode(url + n, name);
	}
	free(name);
	return url;
}

/* The whole request URL of IT, malloc'ed. */
static char *item_url(const struct agent_push *p, const struct item *it)
{
	size_t size = strlen(p->base) + 160 + 3 * UNITS_MAX;
	char *url = malloc(size);
	int n;

	if (!url)
		return NULL;
	n = snprintf(url, size,
		     "%s&from=%llu&until=%llu&format=pprof&spyName=plateau&sampleRate=%u", p->base,
		     (unsigned long long)it->from_s, (unsigned long long)it->until_s, p->hz);
	if (it->units[0]) {
		memcpy(url + n, "&units=", 8);
		encode(url + n + 7, it->units);
	}
	return url;
}

/* Names that always mean this machine: never sent through a proxy. */
static bool is_loopback(const char *host)
{
	size_t len = strlen(host);

	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
		return true;
	if (len > 10 && strcasecmp(host + len - 10, ".localhost") == 0)
		return true;
	return strncmp(host, "127.", 4) == 0 && strspn(host, "0123456789.") == len;
}

/* ---- the transfer ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct agent_push *p = arg;
	size_t n = size * nmemb, room = sizeof(p->resp) - p->resp_len;

	memcpy(p->resp + p->resp_len, data, n < room ? n : room);
	p->resp_len += n < room ? n : room;
	return n;
}

/*
 * curl_global_init/cleanup are thread-safe where curl_version_info reports
 * CURL_VERSION_THREADSAFE (Debian's 7.88 does); elsewhere this lock at
 * least keeps our own pushes (a fork child's, say) from racing.
 */
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

static bool global_init(void)
{
	bool ok;

	pthread_mutex_lock(&global_lock);
	ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
	pthread_mutex_unlock(&global_lock);
	return ok;
}

static void global_cleanup(void)
{
	pthread_mutex_lock(&global_lock);
	curl_global_cleanup();
	pthread_mutex_unlock(&global_lock);
}

/* Free S after overwriting it: no copy of a secret left in freed memory. */
static void wipe_free(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

static void wipe_headers(struct curl_slist *h)
{
	for (; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
}

static void forget_credentials(struct agent_push *p)
{
	wipe_free(&p->auth_header);
	wipe_free(&p->tenant_header);
	wipe_free(&p->user);
	wipe_free(&p->password);
}

/* Headers and Basic credentials of every request; 0 or a CURLcode. */
static CURLcode setup_auth(struct agent_push *p)
{
	CURLcode rc = CURLE_OK;

	if (p->auth_header && !(p->headers = curl_slist_append(p->headers, p->auth_header)))
		return CURLE_OUT_OF_MEMORY;
	if (p->tenant_header && !(p->headers = curl_slist_append(p->headers, p->tenant_header)))
		return CURLE_OUT_OF_MEMORY;
	if (p->password) {
		rc |= curl_easy_setopt(p->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		rc |= curl_easy_setopt(p->easy, CURLOPT_USERNAME, p->user);
		rc |= curl_easy_setopt(p->easy, CURLOPT_PASSWORD, p->password);
	}
	return rc;
}

static int setup_curl(struct agent_push *p)
{
	CURLcode rc = CURLE_OK;
	CURL *e;

	if (!global_init())
		return -EIO;
	p->curl_global = true;
	p->multi = curl_multi_init();
	p->easy = e = curl_easy_init();
	p->headers = curl_slist_append(NULL, "Content-Type: application/octet-stream");
	if (p->headers) /* no 100-continue round trip before big bodies */
		p->headers = curl_slist_append(p->headers, "Expect:");
	if (!p->multi || !e || !p->headers)
		return -ENOMEM;
	rc = setup_auth(p);
	forget_credentials(p);
	if (rc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	rc |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	rc |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)p->o.connect_timeout_ms);
	rc |= curl_easy_setopt(e, CURLOPT_POST, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
	rc |= curl_easy_setopt(e, CURLOPT_USERAGENT, "plateau-agent");
	rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
	rc |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
	if (p->loopback) /* "" turns proxies off, whatever the environment says */
		rc |= curl_easy_setopt(e, CURLOPT_PROXY, "");
	return rc == CURLE_OK ? 0 : -EIO;
}

static void teardown_curl(struct agent_push *p)
{
	if (p->multi && p->easy)
		curl_multi_remove_handle(p->multi, p->easy);
	curl_easy_cleanup(p->easy);
	curl_multi_cleanup(p->multi);
	wipe_headers(p->headers);
	curl_slist_free_all(p->headers);
	if (p->curl_global)
		global_cleanup();
	p->easy = NULL;
	p->multi = NULL;
	p->headers = NULL;
	p->curl_global = false;
}

static int poll_ms(uint64_t ns)
{
	uint64_t ms = (ns + NS_PER_MS - 1) / NS_PER_MS;

	return ms > IDLE_POLL_MS ? IDLE_POLL_MS : (int)ms;
}

/* Run the easy handle to completion; *CUT when stop's deadline came first. */
static CURLcode transfer(struct agent_push *p, bool *cut)
{
	CURLcode rc = CURLE_FAILED_INIT;
	int running = 1, left;
	CURLMsg *msg;

	*cut = false;
	if (curl_multi_add_handle(p->multi, p->easy) != CURLM_OK)
		return rc;
	for (;;) {
		uint64_t ns;

		if (curl_multi_perform(p->multi, &running) != CURLM_OK || !running)
			break;
		ns = left_ns(p);
		if (ns == 0) {
			*cut = true;
			break;
		}
		curl_multi_poll(p->multi, NULL, 0, poll_ms(min_u64(ns, NS_PER_S)), NULL);
	}
	while ((msg = curl_multi_info_read(p->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	curl_multi_remove_handle(p->multi, p->easy);
	return rc;
}

/* One POST of IT; *RETRY_AFTER_MS gets the server's Retry-After. */
static enum outcome attempt(struct agent_push *p, const char *url, const struct item *it,
			    uint64_t *retry_after_ms)
{
	uint64_t timeout_ms = min_u64(p->o.timeout_ms, left_ns(p) / NS_PER_MS);
	char line[RESP_KEEP];
	curl_off_t after = 0;
	long code = 0;
	CURLcode rc;
	bool cut;

	if (timeout_ms == 0) /* 0 would mean no timeout at all */
		return CUT;
	curl_easy_setopt(p->easy, CURLOPT_URL, url);
	curl_easy_setopt(p->easy, CURLOPT_POSTFIELDS, (const char *)it->gz);
	curl_easy_setopt(p->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	curl_easy_setopt(p->easy, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	p->resp_len = 0;
	p->errbuf[0] = '\0';
	rc = transfer(p, &cut);
	if (cut || (rc != CURLE_OK && left_ns(p) == 0))
		return CUT;
	if (rc != CURLE_OK) {
		warn(p, WARN_RETRY, "push to %s: %s; retrying", p->server,
		     p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
		return RETRY;
	}
	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return SENT;
	first_line(p, line, sizeof(line));
	if (code == 408 || code == 429 || code >= 500) {
		if (curl_easy_getinfo(p->easy, CURLINFO_RETRY_AFTER, &after) == CURLE_OK &&
		    after > 0)
			*retry_after_ms = (uint64_t)min_u64((uint64_t)after, 86400) * 1000;
		warn(p, WARN_RETRY, "push to %s: HTTP %ld%s%s; retrying", p->server, code,
		     line[0] ? ": " : "", line);
		return RETRY;
	}
	warn(p, WARN_REJECT, "push to %s: HTTP %ld%s%s", p->server, code, line[0] ? ": " : "",
	     line);
	return REJECTED;
}

/* splitmix64 */
static uint64_t next_random(struct agent_push *p)
{
	uint64_t z = (p->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Delay in ns before attempt ATTEMPT + 1: doubling, capped, then drawn
 * from its upper half so that many agents do not retry in step. */
static uint64_t backoff_ns(struct agent_push *p, unsigned attempt, uint64_t retry_after_ms)
{
	uint64_t ms = p->o.backoff_min_ms;

	while (--attempt > 0 && ms < p->o.backoff_max_ms)
		ms *= 2;
	ms = min_u64(ms, p->o.backoff_max_ms);
	ms = ms / 2 + next_random(p) % (ms / 2 + 1);
	if (retry_after_ms > ms)
		ms = min_u64(retry_after_ms, p->o.backoff_max_ms);
	return ms * NS_PER_MS;
}

/* Wait NS; false when that would pass stop's deadline. */
static bool pause_ns(struct agent_push *p, uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	for (;;) {
		uint64_t now = now_ns();

		if (now >= end)
			return true;
		if (end - now > left_ns(p))
			return false;
		note_drops(p);
		curl_multi_poll(p->multi, NULL, 0, poll_ms(end - now), NULL);
	}
}

/* Whether IT must be given up after ATTEMPT failed attempts and a wait of DELAY. */
static bool give_up(struct agent_push *p, const struct item *it, unsigned attempt, uint64_t delay)
{
	uint64_t age = now_ns() - it->enq_ns + delay;

	if (attempt >= p->o.max_attempts) {
		warn(p, WARN_EXPIRE, "push to %s: dropped a profile after %u attempts", p->server,
		     attempt);
		return true;
	}
	if (age > p->o.max_age_ms * NS_PER_MS) {
		warn(p, WARN_EXPIRE, "push to %s: dropped a profile not delivered in %llu s",
		     p->server, (unsigned long long)(p->o.max_age_ms / 1000));
		return true;
	}
	return false;
}

static void deliver(struct agent_push *p, const struct item *it)
{
	char *url = item_url(p, it);
	unsigned n;

	if (!url) {
		bump(p, errors);
		bump(p, expired);
		return;
	}
	for (n = 1;; n++) {
		uint64_t after_ms = 0, delay;
		enum outcome r = attempt(p, url, it, &after_ms);

		if (r == SENT || r == REJECTED || r == CUT) {
			if (r == SENT)
				bump(p, pushed);
			else if (r == REJECTED)
				bump(p, rejected);
			else
				bump(p, unsent);
			break;
		}
		bump(p, errors);
		delay = backoff_ns(p, n, after_ms);
		if (give_up(p, it, n, delay)) {
			bump(p, expired);
			break;
		}
		if (!pause_ns(p, delay)) {
			bump(p, unsent);
			break;
		}
		bump(p, retries);
	}
	free(url);
}

/* ---- the queue and the thread ---- */

static void pop_locked(struct agent_push *p, struct item *it)
{
	*it = p->q[p->head];
	p->head = (p->head + 1) % p->o.queue_max;
	p->count--;
	p->bytes -= it->len;
}

/* Take the next profile to send; false when the thread must end. */
static bool next_item(struct agent_push *p, struct item *it)
{
	pthread_mutex_lock(&p->lock);
	for (;;) {
		uint64_t left = left_locked(p, now_ns());

		if (p->count > 0 && left > 0) {
			pop_locked(p, it);
			p->inflight = true;
			break;
		}
		if (p->stopping) {
			pthread_mutex_unlock(&p->lock);
			return false;
		}
		pthread_mutex_unlock(&p->lock);
		note_drops(p);
		curl_multi_poll(p->multi, NULL, 0, IDLE_POLL_MS, NULL);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return true;
}

static void destroy(struct agent_push *p)
{
	struct item it;

	while (p->count > 0) {
		pop_locked(p, &it);
		free(it.gz);
	}
	free(p->q);
	free(p->base);
	free(p->server);
	forget_credentials(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->ready_cond);
	free(p);
}

/* After the loop: count what is left as unsent, tell, tear down. */
static void finish(struct agent_push *p)
{
	struct item it;
	uint64_t n;
	bool orphan;

	pthread_mutex_lock(&p->lock);
	while (p->count > 0) {
		pop_locked(p, &it);
		free(it.gz);
		bump(p, unsent);
	}
	pthread_mutex_unlock(&p->lock);
	note_drops(p);
	n = load(p, unsent);
	if (n) {
		char msg[MSG_MAX];

		snprintf(msg, sizeof(msg), "push to %s: %llu profile%s not sent before exit",
			 p->server, (unsigned long long)n, n == 1 ? "" : "s");
		emit(p, msg);
	}
	teardown_curl(p);
	pthread_mutex_lock(&p->lock);
	p->finished = true;
	orphan = p->orphaned;
	pthread_mutex_unlock(&p->lock);
	if (orphan)
		destroy(p);
}

static void set_ready(struct agent_push *p, int ready)
{
	pthread_mutex_lock(&p->lock);
	p->ready = ready;
	pthread_cond_signal(&p->ready_cond);
	pthread_mutex_unlock(&p->lock);
}

static void *push_main(void *arg)
{
	struct agent_push *p = arg;
	struct item it;
	int err;

	if (p->o.thread_init)
		p->o.thread_init();
	err = setup_curl(p);
	if (err < 0) {
		teardown_curl(p);
		set_ready(p, err);
		return NULL;
	}
	set_ready(p, 1);
	while (next_item(p, &it)) {
		deliver(p, &it);
		free(it.gz);
		pthread_mutex_lock(&p->lock);
		p->inflight = false;
		pthread_mutex_unlock(&p->lock);
	}
	finish(p);
	return NULL;
}

/* ---- the API ---- */

static void fill_defaults(struct agent_push_opts *o)
{
	if (o->queue_max == 0)
		o->queue_max = 8;
	if (o->queue_max > QUEUE_LIMIT)
		o->queue_max = QUEUE_LIMIT;
	if (o->queue_bytes_max == 0)
		o->queue_bytes_max = (size_t)32 << 20;
	if (o->max_attempts == 0)
		o->max_attempts = 10;
	if (o->max_age_ms == 0)
		o->max_age_ms = 300000;
	if (o->backoff_min_ms == 0)
		o->backoff_min_ms = 500;
	if (o->backoff_max_ms == 0)
		o->backoff_max_ms = 30000;
	if (o->backoff_max_ms < o->backoff_min_ms)
		o->backoff_max_ms = o->backoff_min_ms;
	if (o->timeout_ms == 0)
		o->timeout_ms = 30000;
	if (o->connect_timeout_ms == 0)
		o->connect_timeout_ms = 5000;
}

/* PREFIX followed by VALUE, malloc'ed; NULL when VALUE is "" (and *FAILED on ENOMEM). */
static char *header_line(const char *prefix, const char *value, bool *failed)
{
	size_t size = strlen(prefix) + strlen(value) + 1;
	char *line;

	if (!value[0])
		return NULL;
	line = malloc(size);
	if (line)
		snprintf(line, size, "%s%s", prefix, value);
	*failed |= !line;
	return line;
}

/* Copies of CFG's credentials for the thread's setup; false on ENOMEM. */
static bool copy_credentials(struct agent_push *p, const struct agent_config *cfg)
{
	bool failed = false;

	p->auth_header = header_line("Authorization: Bearer ", cfg->token, &failed);
	p->tenant_header = header_line("X-Scope-OrgID: ", cfg->tenant, &failed);
	if (cfg->server_password[0]) {
		p->user = strdup(cfg->server_user);
		p->password = strdup(cfg->server_password);
		failed |= !p->user || !p->password;
	}
	return !failed;
}

static struct agent_push *alloc_push(const struct agent_config *cfg,
				     const struct agent_push_opts *opts)
{
	struct agent_push *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (opts)
		p->o = *opts;
	fill_defaults(&p->o);
	p->hz = cfg->hz;
	p->loopback = is_loopback(cfg->server_host);
	p->rng = now_ns() ^ (uintptr_t)p;
	p->server = strdup(cfg->server);
	p->base = base_url(cfg);
	p->q = calloc(p->o.queue_max, sizeof(*p->q));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->ready_cond, NULL);
	if (!copy_credentials(p, cfg) || !p->server || !p->base || !p->q) {
		destroy(p);
		return NULL;
	}
	return p;
}

/* Start the thread with every signal blocked: it inherits the mask. */
static int start_thread(struct agent_push *p)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&p->thread, NULL, push_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

struct agent_push *agent_push_new(const struct agent_config *cfg,
				  const struct agent_push_opts *opts)
{
	struct agent_push *p;
	int err;

	if (!cfg || !cfg->server[0] || !cfg->server_host[0]) {
		errno = EINVAL;
		return NULL;
	}
	p = alloc_push(cfg, opts);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	err = start_thread(p);
	if (err == 0) {
		pthread_mutex_lock(&p->lock);
		while (p->ready == 0)
			pthread_cond_wait(&p->ready_cond, &p->lock);
		err = p->ready < 0 ? p->ready : 0;
		pthread_mutex_unlock(&p->lock);
		if (err < 0)
			pthread_join(p->thread, NULL);
	}
	if (err < 0) {
		destroy(p);
		errno = -err;
		return NULL;
	}
	return p;
}

int agent_push_enqueue(struct agent_push *p, uint8_t *gz, size_t len, uint64_t from_ns,
		       uint64_t until_ns, const char *units)
{
	struct item it = {.gz = gz, .len = len};

	if (!p || !gz || (units && strlen(units) >= UNITS_MAX)) {
		free(gz);
		return -EINVAL;
	}
	if (len > p->o.queue_bytes_max) {
		free(gz);
		bump(p, dropped);
		return -E2BIG;
	}
	it.from_s = from_ns / NS_PER_S;
	it.until_s = until_ns / NS_PER_S;
	it.enq_ns = now_ns();
	if (units)
		memcpy(it.units, units, strlen(units) + 1);
	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		pthread_mutex_unlock(&p->lock);
		free(gz);
		return -EINVAL;
	}
	while (p->count == p->o.queue_max || p->bytes + len > p->o.queue_bytes_max) {
		struct item old;

		pop_locked(p, &old);
		free(old.gz);
		bump(p, dropped);
	}
	p->q[(p->head + p->count) % p->o.queue_max] = it;
	p->count++;
	p->bytes += len;
	curl_multi_wakeup(p->multi);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void snapshot_locked(struct agent_push *p, struct agent_push_counters *out)
{
	out->pushed = load(p, pushed);
	out->dropped = load(p, dropped);
	out->rejected = load(p, rejected);
	out->expired = load(p, expired);
	out->unsent = load(p, unsent);
	out->retries = load(p, retries);
	out->errors = load(p, errors);
	out->queued = p->count;
}

void agent_push_counters(struct agent_push *p, struct agent_push_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	snapshot_locked(p, out);
	pthread_mutex_unlock(&p->lock);
}

/* The thread's own deadline comes a little before stop's, to leave it
 * time to cut the transfer and tear down. */
static uint64_t margin_ns(uint64_t deadline_ms)
{
	return min_u64(100, deadline_ms / 10) * NS_PER_MS;
}

void agent_push_stop(struct agent_push *p, uint64_t deadline_ms, struct agent_push_counters *final)
{
	struct agent_push_counters c = {0};
	uint64_t start = now_ns(), end;
	struct timespec ts;
	pthread_t t;

	if (!p) {
		if (final)
			*final = c;
		return;
	}
	deadline_ms = min_u64(deadline_ms, UINT64_C(1) << 40); /* no overflow in ns */
	end = start + deadline_ms * NS_PER_MS;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->deadline_ns = end - margin_ns(deadline_ms);
	curl_multi_wakeup(p->multi);
	pthread_mutex_unlock(&p->lock);
	ts.tv_sec = (time_t)(end / NS_PER_S);
	ts.tv_nsec = (long)(end % NS_PER_S);
	if (pthread_clockjoin_np(p->thread, NULL, CLOCK_MONOTONIC, &ts) != 0) {
		pthread_mutex_lock(&p->lock);
		if (!p->finished) { /* stuck: it frees P when it ends */
			p->orphaned = true;
			snapshot_locked(p, &c);
			c.unsent += c.queued + (p->inflight ? 1 : 0);
			t = p->thread;
			pthread_mutex_unlock(&p->lock);
			pthread_detach(t);
			if (final)
				*final = c;
			return;
		}
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	snapshot_locked(p, &c);
	if (final)
		*final = c;
	destroy(p);
}
