/* SPDX-License-Identifier: MIT */
/*
 * Tests of the push thread against a real HTTP server on loopback:
 * tests/agent/receiver.py, started per test, records every request it gets
 * to a directory (one file each) and can fail, stall or hang up on them.
 * Waits poll the receiver's files or the counters with a generous timeout;
 * nothing asserts how fast anything is (times are printed as TAP comments).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/config.h"
#include "agent/export/push.h"

#define WAIT_MS	   20000
#define DEAD_PROXY "http://127.0.0.1:9" /* nothing listens: a proxied request fails */
#define T0_NS	   UINT64_C(1700000000250000000)
#define T1_NS	   UINT64_C(1700000010750000000)

struct receiver {
	pid_t pid;
	char dir[64];
	char reqs[96];
	unsigned port;
};

static struct receiver rx;
static struct agent_config cfg;
static atomic_int push_tid;
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warnings[16][700];
static unsigned nwarnings;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define WAIT_FOR(cond)                                                                         \
	do {                                                                                   \
		uint64_t t0_ = mono_ms();                                                      \
		while (!(cond)) {                                                              \
			if (mono_ms() - t0_ > WAIT_MS)                                         \
				fail_msg("line %d: still not %s after %d ms", __LINE__, #cond, \
					 WAIT_MS);                                             \
			usleep(5000);                                                          \
		}                                                                              \
	} while (0)

/* ---- hooks given to the push ---- */

static void on_thread_init(void)
{
	atomic_store(&push_tid, (int)gettid());
}

static void on_warn(const char *msg)
{
	pthread_mutex_lock(&warn_lock);
	if (nwarnings < 16)
		snprintf(warnings[nwarnings++], sizeof(warnings[0]), "%s", msg);
	pthread_mutex_unlock(&warn_lock);
}

static unsigned count_warnings(const char *needle)
{
	unsigned i, n = 0;

	pthread_mutex_lock(&warn_lock);
	for (i = 0; i < nwarnings; i++)
		n += strstr(warnings[i], needle) != NULL;
	pthread_mutex_unlock(&warn_lock);
	return n;
}

static void print_warnings(void)
{
	unsigned i;

	for (i = 0; i < nwarnings; i++)
		printf("# warning: %s\n", warnings[i]);
}

/* ---- the receiver ---- */

static int find_receiver(char *buf, size_t size)
{
	char exe[4096];
	ssize_t n;

	if (getenv("PLATEAU_RECEIVER")) {
		snprintf(buf, size, "%s", getenv("PLATEAU_RECEIVER"));
		return access(buf, R_OK);
	}
	snprintf(buf, size, "tests/agent/receiver.py");
	if (access(buf, R_OK) == 0)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -1;
	exe[n] = '\0';
	snprintf(buf, size, "%s/../tests/agent/receiver.py", dirname(exe));
	return access(buf, R_OK);
}

static void exec_receiver(const char *script, const char *const *extra)
{
	const char *argv[32] = {"python3", script, "--dir", rx.reqs, "--port-file", NULL};
	char port_file[128];
	size_t n = 6;
	int fd = open("/dev/null", O_WRONLY);

	snprintf(port_file, sizeof(port_file), "%s/port", rx.dir);
	argv[5] = port_file;
	for (; extra && *extra && n < 30; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (fd >= 0)
		dup2(fd, 1); /* its "PORT n" line must not mix with TAP */
	execvp("python3", (char *const *)argv);
	_exit(127);
}

/* Start the receiver with EXTRA arguments (NULL-terminated); skips without python3. */
static void receiver_start(const char *const *extra)
{
	char script[4096], path[128];
	uint64_t t0 = mono_ms();
	int status;
	FILE *f;

	if (find_receiver(script, sizeof(script)) != 0)
		fail_msg("tests/agent/receiver.py not found (set PLATEAU_RECEIVER)");
	snprintf(rx.dir, sizeof(rx.dir), "/tmp/plateau-push-XXXXXX");
	assert_non_null(mkdtemp(rx.dir));
	snprintf(rx.reqs, sizeof(rx.reqs), "%s/reqs", rx.dir);
	fflush(stdout);
	rx.pid = fork();
	assert_true(rx.pid >= 0);
	if (rx.pid == 0)
		exec_receiver(script, extra);
	snprintf(path, sizeof(path), "%s/port", rx.dir);
	while (!(f = fopen(path, "r"))) {
		if (waitpid(rx.pid, &status, WNOHANG) == rx.pid) {
			rx.pid = 0;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
				printf("# SKIP: python3 is not installed\n");
				skip();
			}
			fail_msg("receiver.py exited with status %d", status);
		}
		if (mono_ms() - t0 > WAIT_MS)
			fail_msg("receiver.py wrote no port in %d ms", WAIT_MS);
		usleep(10000);
	}
	assert_int_equal(fscanf(f, "%u", &rx.port), 1);
	fclose(f);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	if (rx.pid > 0) {
		kill(rx.pid, SIGKILL);
		waitpid(rx.pid, NULL, 0);
	}
	if (rx.dir[0])
		nftw(rx.dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
	memset(&rx, 0, sizeof(rx));
	nwarnings = 0;
	unsetenv("http_proxy");
	unsetenv("ALL_PROXY");
	return 0;
}

/* Requests recorded so far. */
static unsigned receiver_count(void)
{
	DIR *d = opendir(rx.reqs);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "req-", 4) == 0 && !strstr(e->d_name, ".tmp");
	closedir(d);
	return n;
}

/* Request SEQ (from 1) as recorded: malloc'ed, NUL-terminated after LEN bytes. */
static char *receiver_read(unsigned seq, size_t *len)
{
	char path[160], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/req-%04u", rx.reqs, seq);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("no request %u recorded", seq);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The value of the first "NAME value" line of REC, in BUF ("" if none). */
static const char *field(const char *rec, const char *name, char *buf, size_t size)
{
	size_t nlen = strlen(name);
	const char *p = rec;

	buf[0] = '\0';
	while (p && *p && strncmp(p, "BODY ", 5) != 0) {
		const char *nl = strchr(p, '\n');

		if (strncmp(p, name, nlen) == 0 && p[nlen] == ' ' && nl) {
			snprintf(buf, size, "%.*s", (int)(nl - p - nlen - 1), p + nlen + 1);
			break;
		}
		p = nl ? nl + 1 : NULL;
	}
	return buf;
}

/* Check that request SEQ carries exactly BODY (LEN bytes). */
static void assert_body(unsigned seq, const uint8_t *body, size_t len)
{
	size_t rlen, blen;
	char *rec = receiver_read(seq, &rlen), *p = strstr(rec, "\nBODY ");

	assert_non_null(p);
	blen = strtoul(p + 6, &p, 10);
	assert_int_equal(blen, len);
	assert_true(*p == '\n');
	assert_int_equal(rec + rlen - (p + 1), len);
	assert_memory_equal(p + 1, body, len);
	free(rec);
}

static void assert_field(unsigned seq, const char *name, const char *want)
{
	char buf[4096];
	size_t len;
	char *rec = receiver_read(seq, &len);

	assert_string_equal(field(rec, name, buf, sizeof(buf)), want);
	free(rec);
}

/* ---- helpers ---- */

static const char *test_getenv(const char *name, void *arg)
{
	const char *const *env = arg;
	size_t len = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* CFG for http://HOST:PORT PATH, app my-app, TAGS (or NULL). */
static void make_config(const char *host, unsigned port, const char *path, const char *tags)
{
	char sv[256], tg[300], err[AGENT_ERR_MAX];
	const char *env[] = {sv, "PLATEAU_APP=my-app", tags ? tg : NULL, NULL};

	snprintf(tg, sizeof(tg), "PLATEAU_TAGS=%s", tags ? tags : "");
	snprintf(sv, sizeof(sv), "PLATEAU_SERVER=http://%s:%u%s", host, port, path);
	if (agent_config_parse(&cfg, test_getenv, env, "push_test", err, sizeof(err)) != 0)
		fail_msg("config: %s", err);
}

/* LEN pseudo-random bytes (malloc'ed), the same for the same SEED. */
static uint8_t *make_body(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
	return b;
}

static struct agent_push_counters counters(struct agent_push *p)
{
	struct agent_push_counters c;

	agent_push_counters(p, &c);
	return c;
}

static struct agent_push_opts fast_opts(void)
{
	return (struct agent_push_opts){
		.thread_init = on_thread_init,
		.warn = on_warn,
		.backoff_min_ms = 10,
		.backoff_max_ms = 40,
	};
}

static struct agent_push *start_push(const struct agent_push_opts *o)
{
	struct agent_push *p = agent_push_new(&cfg, o);

	if (!p)
		fail_msg("agent_push_new: %s", strerror(errno));
	return p;
}

static void push_copy(struct agent_push *p, const uint8_t *body, size_t len, const char *units)
{
	uint8_t *gz = malloc(len ? len : 1);

	assert_non_null(gz);
	memcpy(gz, body, len);
	assert_int_equal(agent_push_enqueue(p, gz, len, T0_NS, T1_NS, units), 0);
}

/* ---- tests ---- */

/* Path, query (name with tags encoded, seconds, format, spyName,
 * sampleRate, units), headers and body arrive as sent, over one kept-alive
 * connection, and loopback bypasses a proxy set in the environment. */
static void test_request(void **state)
{
	struct agent_push_opts o = fast_opts();
	uint8_t *b1 = make_body(1000, 1), *b2 = make_body(70000, 2);
	struct agent_push_counters c;
	struct agent_push *p;
	char peer1[64], peer2[64];
	size_t len;
	char *rec;

	(void)state;
	receiver_start(NULL);
	setenv("http_proxy", DEAD_PROXY, 1);
	setenv("ALL_PROXY", DEAD_PROXY, 1);
	make_config("127.0.0.1", rx.port, "/pyro/", "env=prod,region=eu west{1}");
	p = start_push(&o);
	push_copy(p, b1, 1000, NULL);
	WAIT_FOR(counters(p).pushed == 1);
	push_copy(p, b2, 70000, "nanoseconds");
	WAIT_FOR(counters(p).pushed == 2);
	agent_push_stop(p, 5000, &c);
	assert_int_equal(c.errors + c.rejected + c.dropped + c.unsent + c.retries, 0);
	assert_int_equal(receiver_count(), 2);
	assert_field(1, "METHOD", "POST");
	assert_field(1, "PATH", "/pyro/ingest");
	assert_field(1, "QUERY",
		     "name=my-app.cpu%7Benv%3Dprod%2Cregion%3Deu%20west%7B1%7D%7D&from=1700000000"
		     "&until=1700000010&format=pprof&spyName=plateau&sampleRate=99");
	assert_field(2, "QUERY",
		     "name=my-app.cpu%7Benv%3Dprod%2Cregion%3Deu%20west%7B1%7D%7D&from=1700000000"
		     "&until=1700000010&format=pprof&spyName=plateau&sampleRate=99"
		     "&units=nanoseconds");
	rec = receiver_read(2, &len);
	assert_non_null(strstr(rec, "\nHEADER Content-Type: application/octet-stream\n"));
	assert_non_null(strstr(rec, "\nHEADER Content-Length: 70000\n"));
	assert_null(strstr(rec, "\nHEADER Expect:"));
	free(rec);
	assert_body(1, b1, 1000);
	assert_body(2, b2, 70000);
	rec = receiver_read(1, &len);
	field(rec, "PEER", peer1, sizeof(peer1));
	free(rec);
	rec = receiver_read(2, &len);
	field(rec, "PEER", peer2, sizeof(peer2));
	free(rec);
	assert_string_equal(peer1, peer2); /* the same connection */
	assert_true(atomic_load(&push_tid) != 0 && atomic_load(&push_tid) != (int)gettid());
	assert_int_equal(nwarnings, 0);
	free(b1);
	free(b2);
}

/* 503 twice, then 200: retried and delivered exactly once. */
static void test_retry_then_deliver(void **state)
{
	const char *args[] = {"--fail", "2", NULL};
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(5000, 3);
	struct agent_push_counters c;
	struct agent_push *p;

	(void)state;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 5000, NULL);
	WAIT_FOR(counters(p).pushed == 1);
	agent_push_stop(p, 5000, &c);
	assert_int_equal(c.pushed, 1);
	assert_int_equal(c.retries, 2);
	assert_int_equal(c.errors, 2);
	assert_int_equal(c.rejected + c.expired + c.unsent + c.dropped, 0);
	assert_int_equal(receiver_count(), 3);
	assert_field(1, "ANSWER", "503");
	assert_field(2, "ANSWER", "503");
	assert_field(3, "ANSWER", "200");
	assert_field(3, "QUERY",
		     "name=my-app.cpu&from=1700000000&until=1700000010&format=pprof"
		     "&spyName=plateau&sampleRate=99");
	assert_field(3, "PATH", "/ingest");
	assert_body(1, b, 5000);
	assert_body(3, b, 5000);
	print_warnings();
	assert_int_equal(count_warnings("HTTP 503: try again later; retrying"), 1);
	assert_int_equal(nwarnings, 1); /* the second 503 within the minute is not told */
	free(b);
}

/* 400: dropped and counted, not retried, one warning with the body's first line. */
static void test_rejected(void **state)
{
	const char *args[] = {"--status", "400", "--body", "bad profile: no samples\\nsecond",
			      NULL};
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(100, 4);
	struct agent_push_counters c;
	struct agent_push *p;
	char want[128];

	(void)state;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(counters(p).rejected == 1);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(counters(p).rejected == 2);
	agent_push_stop(p, 5000, &c);
	assert_int_equal(c.pushed + c.retries + c.errors + c.expired + c.unsent, 0);
	assert_int_equal(receiver_count(), 2);
	print_warnings();
	assert_int_equal(nwarnings, 1);
	snprintf(want, sizeof(want),
		 "push to http://127.0.0.1:%u: HTTP 400: bad profile: no samples", rx.port);
	assert_string_equal(warnings[0], want);
	free(b);
}

/* A server that never answers: enqueue returns at once and the queue
 * drops its oldest; stop cuts the request off and returns. */
static void test_stalled_server(void **state)
{
	const char *args[] = {"--stall", "120", NULL};
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(2000, 5);
	uint64_t t0, t, worst = 0, total;
	struct agent_push_counters c;
	struct agent_push *p;
	int i;

	(void)state;
	o.timeout_ms = 60000;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 2000, NULL);
	WAIT_FOR(receiver_count() == 1 && counters(p).queued == 0); /* in flight, stalled */
	t0 = mono_ms();
	for (i = 0; i < 100; i++) {
		t = mono_ms();
		push_copy(p, b, 2000, NULL);
		t = mono_ms() - t;
		worst = t > worst ? t : worst;
	}
	total = mono_ms() - t0;
	printf("# 100 enqueues in %llu ms, slowest %llu ms\n", (unsigned long long)total,
	       (unsigned long long)worst);
	c = counters(p);
	assert_int_equal(c.queued, 8);
	assert_int_equal(c.dropped, 92);
	assert_true(total < 10000); /* blocking on the server would take the 60 s timeout */
	t0 = mono_ms();
	agent_push_stop(p, 1000, &c);
	t = mono_ms() - t0;
	printf("# agent_push_stop(1000 ms) returned after %llu ms\n", (unsigned long long)t);
	assert_true(t < 10000);
	assert_int_equal(c.pushed, 0);
	assert_int_equal(c.unsent, 9);
	assert_int_equal(c.dropped, 92);
	print_warnings();
	assert_int_equal(count_warnings("9 profiles not sent before exit"), 1);
	free(b);
}

/* The byte bound of the queue, and what enqueue refuses. */
static void test_queue_bytes(void **state)
{
	const char *args[] = {"--stall", "120", NULL};
	struct agent_push_opts o = fast_opts();
	struct agent_push_counters c;
	struct agent_push *p;
	uint8_t *b = make_body(20000, 6);

	(void)state;
	o.queue_bytes_max = 10000;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 4000, NULL);
	WAIT_FOR(receiver_count() == 1 && counters(p).queued == 0);
	push_copy(p, b, 4000, NULL);
	push_copy(p, b, 4000, NULL);
	c = counters(p);
	assert_int_equal(c.queued, 2);
	assert_int_equal(c.dropped, 0);
	push_copy(p, b, 4000, NULL); /* 12000 > 10000: the oldest goes */
	c = counters(p);
	assert_int_equal(c.queued, 2);
	assert_int_equal(c.dropped, 1);
	assert_int_equal(agent_push_enqueue(p, make_body(10001, 7), 10001, T0_NS, T1_NS, NULL),
			 -E2BIG);
	assert_int_equal(agent_push_enqueue(p, make_body(10, 8), 10, T0_NS, T1_NS,
					    "a-units-string-of-32-characters!"),
			 -EINVAL);
	assert_int_equal(agent_push_enqueue(p, NULL, 10, T0_NS, T1_NS, NULL), -EINVAL);
	c = counters(p);
	assert_int_equal(c.queued, 2);
	assert_int_equal(c.dropped, 2);
	agent_push_stop(p, 200, &c);
	assert_int_equal(c.unsent, 3);
	free(b);
}

/* Nothing listening: errors counted, the profile given up, stop returns. */
static void test_server_down(void **state)
{
	struct agent_push_opts o = fast_opts();
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t slen = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct agent_push_counters c;
	struct agent_push *p;
	uint8_t *b = make_body(100, 9);
	uint64_t t0;
	char want[128];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &slen), 0);
	rx.port = ntohs(sa.sin_port);
	close(fd); /* the port is now (almost certainly) closed */
	o.max_attempts = 3;
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(counters(p).expired == 1);
	c = counters(p);
	assert_int_equal(c.errors, 3);
	assert_int_equal(c.retries, 2);
	assert_int_equal(c.pushed, 0);
	push_copy(p, b, 100, NULL);
	t0 = mono_ms();
	agent_push_stop(p, 300, &c);
	printf("# agent_push_stop(300 ms) returned after %llu ms\n",
	       (unsigned long long)(mono_ms() - t0));
	assert_int_equal(c.expired + c.unsent, 2);
	assert_true(c.errors >= 4);
	assert_int_equal(c.pushed + c.rejected, 0);
	print_warnings();
	snprintf(want, sizeof(want), "push to http://127.0.0.1:%u: ", rx.port);
	assert_int_equal(count_warnings("; retrying"), 1);
	assert_int_equal(count_warnings("dropped a profile after 3 attempts"), 1);
	assert_int_equal(count_warnings(want), nwarnings);
	free(b);
}

/* The server hangs up before reading a 4 MiB body: retried, delivered. */
static void test_connection_closed(void **state)
{
	const char *args[] = {"--close", "1", NULL};
	struct agent_push_opts o = fast_opts();
	size_t len = 4 << 20;
	uint8_t *b = make_body(len, 10);
	struct agent_push_counters c;
	struct agent_push *p;

	(void)state;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, len, NULL);
	WAIT_FOR(counters(p).pushed == 1);
	agent_push_stop(p, 5000, &c);
	assert_int_equal(c.errors, 1);
	assert_int_equal(c.retries, 1);
	assert_int_equal(receiver_count(), 2);
	assert_field(1, "ANSWER", "close");
	assert_field(2, "ANSWER", "200");
	assert_body(2, b, len);
	print_warnings();
	free(b);
}

/* stop sends what is queued when the server is up (by name, through no proxy). */
static void test_flush_at_stop(void **state)
{
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(3000, 11);
	struct agent_push_counters c;
	struct agent_push *p;
	int i;

	(void)state;
	receiver_start(NULL);
	setenv("http_proxy", DEAD_PROXY, 1);
	make_config("localhost", rx.port, "", NULL);
	p = start_push(&o);
	for (i = 0; i < 5; i++)
		push_copy(p, b, 3000, NULL);
	agent_push_stop(p, 10000, &c);
	assert_int_equal(c.pushed, 5);
	assert_int_equal(c.unsent + c.dropped + c.errors, 0);
	assert_int_equal(receiver_count(), 5);
	assert_field(5, "PATH", "/ingest");
	assert_body(5, b, 3000);
	free(b);
}

static pthread_key_t exit_key;
static atomic_int push_exited;

static void on_push_exit(void *arg)
{
	(void)arg;
	atomic_store(&push_exited, 1);
}

static void on_thread_init_watched(void)
{
	pthread_setspecific(exit_key, &exit_key); /* on_push_exit runs when the thread ends */
}

/* A warning sink that hangs (as a full stderr pipe would). */
static void slow_warn(const char *msg)
{
	on_warn(msg);
	usleep(4000 * 1000);
}

/* The thread is stuck past the deadline: stop returns anyway and the
 * thread frees everything itself when it ends. */
static void test_stuck_thread(void **state)
{
	const char *args[] = {"--stall", "120", NULL};
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(100, 12);
	struct agent_push_counters c;
	struct agent_push *p;
	uint64_t t0, t;

	(void)state;
	assert_int_equal(pthread_key_create(&exit_key, on_push_exit), 0);
	o.thread_init = on_thread_init_watched;
	o.warn = slow_warn;
	receiver_start(args);
	make_config("127.0.0.1", rx.port, "", NULL);
	p = start_push(&o);
	push_copy(p, b, 100, NULL);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(receiver_count() == 1 && counters(p).queued == 1);
	t0 = mono_ms();
	agent_push_stop(p, 500, &c);
	t = mono_ms() - t0;
	printf("# agent_push_stop(500 ms) with a hanging warning returned after %llu ms\n",
	       (unsigned long long)t);
	assert_true(t < 3500); /* it did not wait for the 4 s warning */
	assert_int_equal(c.unsent, 2);
	assert_int_equal(c.pushed, 0);
	WAIT_FOR(atomic_load(&push_exited) == 1);
	assert_int_equal(count_warnings("2 profiles not sent before exit"), 1);
	pthread_key_delete(exit_key);
	free(b);
}

/* CFG from the NULL-terminated ENV with PLATEAU_SERVER=http://AUTH127.0.0.1:PORT. */
static void make_auth_config(const char *auth, const char **env)
{
	char sv[256], err[AGENT_ERR_MAX];

	snprintf(sv, sizeof(sv), "PLATEAU_SERVER=http://%s127.0.0.1:%u", auth, rx.port);
	env[0] = sv;
	if (agent_config_parse(&cfg, test_getenv, env, "push_test", err, sizeof(err)) != 0)
		fail_msg("config: %s", err);
}

/* Whether any warning holds NEEDLE. */
static bool warned_with(const char *needle)
{
	for (unsigned i = 0; i < nwarnings && i < 16; i++)
		if (strstr(warnings[i], needle))
			return true;
	return false;
}

/* PLATEAU_TOKEN goes out as Bearer, PLATEAU_TENANT as X-Scope-OrgID, the
 * URL's user:password as Basic; a refusal's warning names the server with
 * its password as *** and shows no secret. */
static void test_credentials(void **state)
{
	const char *args[] = {"--status", "401", "--body", "{\"error\":\"no\"}", NULL};
	const char *tok[] = {NULL, "PLATEAU_TOKEN=tok-S3CRET.42", "PLATEAU_TENANT=team-a", NULL};
	const char *basic[] = {NULL, NULL};
	struct agent_push_opts o = fast_opts();
	uint8_t *b = make_body(100, 9);
	struct agent_push *p;
	char want[128];
	size_t len;
	char *rec;

	(void)state;
	receiver_start(args);
	make_auth_config("", tok);
	p = start_push(&o);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(counters(p).rejected == 1);
	agent_push_stop(p, 5000, NULL);
	/* user "a@b" (escaped), password "p:w S3CRET" (escaped space) */
	make_auth_config("a%40b:p:w%20S3CRET@", basic);
	assert_string_equal(cfg.server_password, "p:w S3CRET");
	p = start_push(&o);
	push_copy(p, b, 100, NULL);
	WAIT_FOR(counters(p).rejected == 1);
	agent_push_stop(p, 5000, NULL);
	rec = receiver_read(1, &len);
	assert_non_null(strstr(rec, "\nHEADER Authorization: Bearer tok-S3CRET.42\n"));
	assert_non_null(strstr(rec, "\nHEADER X-Scope-OrgID: team-a\n"));
	free(rec);
	rec = receiver_read(2, &len);
	/* base64("a@b:p:w S3CRET") */
	assert_non_null(strstr(rec, "\nHEADER Authorization: Basic YUBiOnA6dyBTM0NSRVQ=\n"));
	assert_null(strstr(rec, "X-Scope-OrgID"));
	free(rec);
	print_warnings();
	assert_int_equal(nwarnings, 2);
	snprintf(want, sizeof(want), "push to http://a%%40b:***@127.0.0.1:%u: HTTP 401", rx.port);
	assert_true(warned_with(want));
	assert_false(warned_with("S3CRET"));
	assert_false(warned_with("YUBi"));
	free(b);
}

static void test_edges(void **state)
{
	struct agent_push_counters c;
	struct agent_push *p;
	uint64_t t0;

	(void)state;
	agent_config_defaults(&cfg, "x");
	errno = 0;
	assert_null(agent_push_new(&cfg, NULL)); /* no server */
	assert_int_equal(errno, EINVAL);
	assert_null(agent_push_new(NULL, NULL));
	agent_push_stop(NULL, 0, &c);
	assert_int_equal(c.pushed, 0);
	assert_int_equal(agent_push_enqueue(NULL, make_body(1, 1), 1, 0, 0, NULL), -EINVAL);
	make_config("127.0.0.1", 1, "", NULL);
	p = start_push(NULL);
	t0 = mono_ms();
	agent_push_stop(p, 3000, &c); /* idle: nothing to wait for */
	printf("# idle agent_push_stop returned after %llu ms\n",
	       (unsigned long long)(mono_ms() - t0));
	assert_int_equal(c.pushed + c.dropped + c.errors + c.unsent, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_request, teardown),
		cmocka_unit_test_teardown(test_retry_then_deliver, teardown),
		cmocka_unit_test_teardown(test_rejected, teardown),
		cmocka_unit_test_teardown(test_stalled_server, teardown),
		cmocka_unit_test_teardown(test_queue_bytes, teardown),
		cmocka_unit_test_teardown(test_server_down, teardown),
		cmocka_unit_test_teardown(test_connection_closed, teardown),
		cmocka_unit_test_teardown(test_flush_at_stop, teardown),
		cmocka_unit_test_teardown(test_stuck_thread, teardown),
		cmocka_unit_test_teardown(test_credentials, teardown),
		cmocka_unit_test_teardown(test_edges, teardown),
	};

	return cmocka_run_group_tests_name("push", tests, NULL, NULL);
}
