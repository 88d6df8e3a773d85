/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"

#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/perf_event.h"
#include "lib/perf_ring.h"

#define BURN_SIZE 2048 /* generous upper bound of burn()'s code size */

struct seen {
	pid_t pid, child;
	uint64_t samples, own_samples, with_user_ips, in_burn, period_ns;
	bool mmap_found, comm_found, fork_found, exit_found;
	const char *mmap_path, *comm;
	uint64_t comms;
};

static volatile uint64_t sink;

__attribute__((noinline)) static void burn(double seconds)
{
	struct timespec t0, t;
	double el;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink = sink * 31 + (uint64_t)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
		el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
	} while (el < seconds);
}

static bool in_burn(uint64_t ip)
{
	uintptr_t b = (uintptr_t)&burn;

	return ip >= b && ip < b + BURN_SIZE;
}

static int on_record(const struct perf_record *r, void *arg)
{
	struct seen *s = arg;

	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		s->samples++;
		if (r->u.sample.pid != (uint32_t)s->pid)
			break;
		s->own_samples++;
		s->period_ns += r->u.sample.period;
		if (r->u.sample.nr_user)
			s->with_user_ips++;
		for (size_t i = 0; i < r->u.sample.nr_user; i++)
			if (in_burn(r->u.sample.user_ips[i]))
				s->in_burn++;
		break;
	case PERF_RECORD_MMAP2:
		if (s->mmap_path && !strcmp(r->u.mmap2.filename, s->mmap_path) &&
		    r->u.mmap2.pid == (uint32_t)s->pid && (r->u.mmap2.prot & PROT_EXEC))
			s->mmap_found = true;
		break;
	case PERF_RECORD_COMM:
		s->comms++;
		if (s->comm && !strcmp(r->u.comm.comm, s->comm) && !r->u.comm.exec &&
		    r->u.comm.tid == (uint32_t)s->pid)
			s->comm_found = true;
		break;
	case PERF_RECORD_FORK:
		if (r->u.task.pid == (uint32_t)s->child && r->u.task.ppid == (uint32_t)s->pid)
			s->fork_found = true;
		break;
	case PERF_RECORD_EXIT:
		if (r->u.task.pid == (uint32_t)s->child)
			s->exit_found = true;
		break;
	default: break;
	}
	return 0;
}

static struct perf_open_opts self_opts(void)
{
	struct perf_open_opts o = {0};

	o.pid = getpid();
	o.freq = 999;
	o.callchain = true;
	o.inherit = true;
	o.task_events = true;
	o.exclude_kernel = true;
	o.ring_pages = 256;
	return o;
}

static void test_self_profile(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct seen s = {0};
	char path[] = "/dev/shm/plateau-perf-XXXXXX";
	char page[4096] = {0};
	struct timespec t0, t1;
	double burned;
	int fd, status;
	void *m;

	(void)state;
	s.pid = getpid();
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(ps.nr_rings, (size_t)sysconf(_SC_NPROCESSORS_ONLN));

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	burn(0.2);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	burned = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	m = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(m != MAP_FAILED);
	s.mmap_path = path;

	s.comm = "plateau-pt1";
	assert_int_equal(prctl(PR_SET_NAME, s.comm, 0, 0, 0), 0);

	s.child = fork();
	assert_true(s.child >= 0);
	if (s.child == 0)
		_exit(0);
	assert_int_equal(waitpid(s.child, &status, 0), s.child);

	if (perf_session_drain(&ps, on_record, &s, &err))
		fail_msg("%s", err.msg);
	perf_session_close(&ps);
	munmap(m, sizeof(page));
	close(fd);
	unlink(path);

	assert_true(s.own_samples >= 50);
	assert_true(s.with_user_ips * 2 >= s.own_samples);
	assert_true(s.in_burn >= 1);
	/* cpu-clock periods are ns of CPU time: within 50% of what burn() used */
	assert_true((double)s.period_ns >= burned * 1e9 * 0.5);
	assert_true((double)s.period_ns <= burned * 1e9 * 1.5 + 50e6);
	assert_true(s.mmap_found);
	assert_true(s.comm_found);
	assert_true(s.fork_found);
	assert_true(s.exit_found);
	assert_int_equal(ps.stats.lost, 0);
	print_message("samples %" PRIu64 " (in burn %" PRIu64
		      "), periods %.1f ms for %.1f ms burned\n",
		      s.own_samples, s.in_burn, (double)s.period_ns / 1e6, burned * 1e3);
}

static int check_stack(const struct perf_record *r, void *arg)
{
	uint64_t *ok = arg;
	const struct perf_sample *s = &r->u.sample;

	if (r->type != PERF_RECORD_SAMPLE || s->pid != (uint32_t)getpid())
		return 0;
	assert_int_not_equal(s->regs_abi, 0);
#if defined(__x86_64__)
	assert_int_equal(s->nr_regs, __builtin_popcountll(0xff0fffULL));
#endif
	assert_int_equal(s->stack_size, 1024);
	assert_true(s->stack_dyn_size > 0 && s->stack_dyn_size <= 1024);
	assert_non_null(s->stack);
	(*ok)++;
	return 0;
}

/* REGS_USER + STACK_USER for DWARF unwinding. */
static void test_user_stack(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	uint64_t ok = 0;

	(void)state;
	o.stack_user = 1024;
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	burn(0.05);
	if (perf_session_drain(&ps, check_stack, &ok, &err))
		fail_msg("%s", err.msg);
	assert_true(ok >= 10);
	perf_session_close(&ps);
}

/* A one-page ring and bursts of COMM records of varying size: some must wrap. */
static void test_wraparound(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct seen s = {0};
	char name[16];

	(void)state;
	o.ring_pages = 1;
	o.callchain = false;
	s.pid = getpid();
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 20; i++) {
			snprintf(name, sizeof(name), "w%.*s", (round * 20 + i) % 14,
				 "xxxxxxxxxxxxxx");
			assert_int_equal(prctl(PR_SET_NAME, name, 0, 0, 0), 0);
		}
		if (perf_session_drain(&ps, on_record, &s, &err))
			fail_msg("%s", err.msg);
	}
	assert_true(ps.stats.wrapped > 0);
	assert_true(s.comms + ps.stats.lost >= 1000);
	perf_session_close(&ps);
}

static struct perf_layout test_layout(void)
{
	struct perf_layout l = {PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
					PERF_SAMPLE_CALLCHAIN,
				0, true};
	return l;
}

static void set_header(uint64_t *buf, uint32_t type, uint16_t misc, uint16_t size)
{
	struct perf_event_header h = {type, misc, size};

	memcpy(buf, &h, sizeof(h));
}

/* error_set keeps the first error: start each expectation with a clean one. */
static int parse_fresh(const struct perf_layout *l, const void *b, size_t len,
		       struct perf_record *r, struct error *err)
{
	err->code = 0;
	err->msg[0] = 0;
	return perf_record_parse(l, b, len, r, err);
}

static int drain_fresh(struct perf_session *ps, struct error *err)
{
	err->code = 0;
	err->msg[0] = 0;
	return perf_session_drain(ps, NULL, NULL, err);
}

static void test_parse_sample_ok_and_truncated(void **state)
{
	struct perf_layout l = test_layout();
	uint64_t b[16] = {0};
	struct perf_record r;
	struct error err = ERROR_INIT;

	(void)state;
	b[1] = 0x1000;		 /* ip */
	b[2] = 7 | (8ULL << 32); /* pid 7 tid 8 */
	b[3] = 99;		 /* time */
	b[4] = 2;		 /* cpu */
	b[5] = 1000;		 /* period */
	b[6] = 4;		 /* callchain nr */
	b[7] = (uint64_t)PERF_CONTEXT_KERNEL;
	b[8] = 0xffffffff81000000ULL;
	b[9] = (uint64_t)PERF_CONTEXT_USER;
	b[10] = 0x1000;
	set_header(b, PERF_RECORD_SAMPLE, 0, 11 * 8);
	assert_int_equal(parse_fresh(&l, b, 11 * 8, &r, &err), 0);
	assert_int_equal(r.u.sample.pid, 7);
	assert_int_equal(r.u.sample.tid, 8);
	assert_int_equal(r.u.sample.cpu, 2);
	assert_int_equal(r.u.sample.nr_kernel, 1);
	assert_int_equal(r.u.sample.nr_user, 1);
	assert_int_equal(r.u.sample.user_ips[0], 0x1000);

	/* callchain nr claims more entries than the record holds */
	b[6] = 1000;
	assert_int_equal(parse_fresh(&l, b, 11 * 8, &r, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "callchain.ips"));
	b[6] = UINT64_MAX;
	assert_int_equal(parse_fresh(&l, b, 11 * 8, &r, &err), ERR_FORMAT);
	/* truncated before period */
	set_header(b, PERF_RECORD_SAMPLE, 0, 5 * 8);
	assert_int_equal(parse_fresh(&l, b, 5 * 8, &r, &err), ERR_FORMAT);
	if (!strstr(err.msg, "period"))
		fail_msg("%s", err.msg);
	/* header size disagrees with the length */
	assert_int_equal(parse_fresh(&l, b, 6 * 8, &r, &err), ERR_FORMAT);
	/* shorter than a header */
	assert_int_equal(parse_fresh(&l, b, 4, &r, &err), ERR_FORMAT);
}

static void test_parse_strings_bounded(void **state)
{
	struct perf_layout l = test_layout();
	uint64_t b[16];
	struct perf_record r;
	struct error err = ERROR_INIT;

	(void)state;
	/* COMM: pid/tid, "abcdefgh" without NUL, then the 24-byte sample_id */
	memset(b, 0, sizeof(b));
	b[1] = 5 | (6ULL << 32);
	memcpy(&b[2], "abcdefgh", 8);
	set_header(b, PERF_RECORD_COMM, 0, 6 * 8);
	assert_int_equal(parse_fresh(&l, b, 6 * 8, &r, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "comm"));
	memcpy(&b[2], "abc\0\0\0\0\0", 8);
	b[3] = 5 | (6ULL << 32); /* sample_id pid/tid */
	b[4] = 1234;		 /* time */
	set_header(b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 6 * 8);
	assert_int_equal(parse_fresh(&l, b, 6 * 8, &r, &err), 0);
	assert_string_equal(r.u.comm.comm, "abc");
	assert_true(r.u.comm.exec);
	assert_int_equal(r.time, 1234);

	/* MMAP2 too short for its fixed fields */
	memset(b, 0, sizeof(b));
	set_header(b, PERF_RECORD_MMAP2, 0, 8 * 8);
	assert_int_equal(parse_fresh(&l, b, 8 * 8, &r, &err), ERR_FORMAT);
	/* FORK shorter than its sample_id */
	set_header(b, PERF_RECORD_FORK, 0, 2 * 8);
	assert_int_equal(parse_fresh(&l, b, 2 * 8, &r, &err), ERR_FORMAT);
}

static void *thread_burn(void *arg)
{
	(void)arg;
	burn(0.1);
	return NULL;
}

/* inherit: a thread started after the open is sampled with its own tid. */
static void test_thread_samples(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct seen s = {0};
	pthread_t th;

	(void)state;
	s.pid = getpid();
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(pthread_create(&th, NULL, thread_burn, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (perf_session_drain(&ps, on_record, &s, &err))
		fail_msg("%s", err.msg);
	assert_true(s.own_samples >= 20);
	perf_session_close(&ps);
}

static int count_tids(const struct perf_record *r, void *arg)
{
	uint64_t *other = arg;

	if (r->type == PERF_RECORD_SAMPLE && r->u.sample.tid != (uint32_t)getpid())
		(*other)++;
	return 0;
}

static void test_thread_tids(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	uint64_t other = 0;
	pthread_t th;

	(void)state;
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(pthread_create(&th, NULL, thread_burn, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (perf_session_drain(&ps, count_tids, &other, &err))
		fail_msg("%s", err.msg);
	assert_true(other >= 20);
	perf_session_close(&ps);
}

/* A corrupt ring (header size 0, or larger than the data) is an error, not a hang. */
static void test_ring_corrupt(void **state)
{
	static uint64_t mem[(4096 + 4096) / 8];
	struct perf_event_mmap_page *mp = (void *)mem;
	struct perf_ring ring;
	struct perf_session ps;
	struct error err = ERROR_INIT;

	(void)state;
	memset(mem, 0, sizeof(mem));
	memset(&ps, 0, sizeof(ps));
	ps.layout = test_layout();
	ps.rings = &ring;
	ps.nr_rings = 1;
	memset(&ring, 0, sizeof(ring));
	ring.fd = -1;
	ring.base = mem;
	ring.data = (uint8_t *)mem + 4096;
	ring.data_size = 4096;
	ring.bounce = xmalloc(4096);
	mp->data_head = 64; /* 64 bytes of zeros: header size 0 */
	assert_int_equal(drain_fresh(&ps, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "header size 0"));
	set_header(&mem[512], PERF_RECORD_COMM, 0, 4000); /* past data_head */
	assert_int_equal(drain_fresh(&ps, &err), ERR_FORMAT);
	mp->data_head = 1u << 20; /* head more than a buffer ahead */
	assert_int_equal(drain_fresh(&ps, &err), ERR_FORMAT);
	/* a LOST record is counted */
	mp->data_head = 72;
	memset(&mem[512], 0, 72);
	set_header(&mem[512], PERF_RECORD_LOST, 0, 6 * 8);
	mem[514] = 17;
	set_header(&mem[518], PERF_RECORD_LOST_SAMPLES, 0, 3 * 8); /* shorter than its sample_id */
	assert_int_equal(drain_fresh(&ps, &err), ERR_FORMAT);
	assert_int_equal(ps.stats.lost, 17);
	assert_int_equal(ps.stats.lost_records, 1);
	free(ring.bounce);
}

static int read_paranoid_value(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int par = -9;

	if (!f)
		return -9;
	if (fscanf(f, "%d", &par) != 1)
		par = -9;
	fclose(f);
	return par;
}

/* As an unprivileged user (paranoid >= 1), system-wide is refused with a useful message. */
static void test_refused_message(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct perf_open_opts o = self_opts();
		struct perf_session ps;
		struct error err = ERROR_INIT;
		char want[64];
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		int par = -9;

		if (!f || fscanf(f, "%d", &par) != 1)
			_exit(10);
		fclose(f);
		if (par < 1)
			_exit(11); /* cannot be refused on this machine */
		if (setgid(65534) || setuid(65534))
			_exit(12);
		o.pid = -1;
		if (perf_session_open(&ps, &o, &err) == 0)
			_exit(13);
		snprintf(want, sizeof(want), "kernel.perf_event_paranoid is %d", par);
		if (!strstr(err.msg, want) || !strstr(err.msg, "CAP_PERFMON") ||
		    !strstr(err.msg, "kernel.perf_event_paranoid=0") ||
		    !strstr(err.msg, "system-wide"))
			_exit(14);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static volatile sig_atomic_t stop_flag;

static int stop_after_samples(const struct perf_record *r, void *arg)
{
	uint64_t *n = arg;

	if (r->type == PERF_RECORD_SAMPLE && ++*n >= 10)
		stop_flag = 1;
	return 0;
}

static void *loop_burn(void *arg)
{
	(void)arg;
	while (!stop_flag)
		burn(0.01);
	return NULL;
}

/* The poll loop drains while a thread burns, and stops when the flag is set. */
static void test_loop_stops(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	uint64_t n = 0;
	pthread_t th;

	(void)state;
	stop_flag = 0;
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(pthread_create(&th, NULL, loop_burn, NULL), 0);
	if (perf_session_loop(&ps, 100, &stop_flag, stop_after_samples, &n, &err))
		fail_msg("%s", err.msg);
	assert_true(stop_flag);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(n >= 10);
	perf_session_close(&ps);
}

static void on_alarm(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int count_samples(const struct perf_record *r, void *arg)
{
	*(uint64_t *)arg += r->type == PERF_RECORD_SAMPLE;
	return 0;
}

/* A signal handler sets the flag; the loop returns and flushes what remains. */
static void test_loop_signal(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct itimerval it = {{0, 0}, {0, 150000}};
	struct sigaction sa, old;
	uint64_t n = 0;
	pthread_t th;

	(void)state;
	stop_flag = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(pthread_create(&th, NULL, loop_burn, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	if (perf_session_loop(&ps, 1000, &stop_flag, count_samples, &n, &err))
		fail_msg("%s", err.msg);
	assert_true(stop_flag);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(n >= 10);
	assert_int_equal(n, ps.stats.samples);
	perf_session_close(&ps);
	sigaction(SIGALRM, &old, NULL);
}

static void test_system_wide(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct seen s = {0};

	(void)state;
	o.pid = -1;
	o.ring_pages = 16;
	o.context_switch = true;
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_true(ps.nr_rings >= 1);
	assert_int_equal(ps.nr_rings, (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	s.pid = getpid();
	burn(0.05);
	if (perf_session_drain(&ps, on_record, &s, &err))
		fail_msg("%s", err.msg);
	assert_true(s.own_samples >= 10);
	perf_session_close(&ps);
}

/* ---- event kinds ---- */

static pid_t own_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * Open, or skip loudly when the machine refuses (EACCES/EPERM) or lacks
 * (ENOENT: no tracefs) what is needed.  Any other failure fails the test.
 */
static bool open_or_skip(struct perf_session *ps, const struct perf_open_opts *o)
{
	struct error err = ERROR_INIT;

	if (perf_session_open(ps, o, &err) == 0)
		return true;
	if (strstr(err.msg, strerror(EACCES)) || strstr(err.msg, strerror(EPERM)) ||
	    strstr(err.msg, strerror(ENOENT)) || strstr(err.msg, "not found")) {
		print_message("SKIP (not allowed or not available here): %s\n", err.msg);
		return false;
	}
	fail_msg("%s", err.msg);
	return false;
}

static void sleep_loop(int n)
{
	for (int i = 0; i < n; i++)
		usleep(1000);
}

struct switches {
	pid_t tid;
	uint64_t samples, period_not_1, with_user_ips, out, in, other_sessions;
	uint64_t raw, parsed, prev_is_self, sleeping, comm_ok;
	char comm[16];
};

static int on_switch(const struct perf_record *r, void *arg)
{
	struct switches *w = arg;

	w->other_sessions += r->session != 0;
	if (r->tid != (uint32_t)w->tid)
		return 0;
	if (r->type == PERF_RECORD_SWITCH) {
		w->out += r->u.sw.out;
		w->in += !r->u.sw.out;
	} else if (r->type == PERF_RECORD_SAMPLE) {
		w->samples++;
		w->period_not_1 += r->u.sample.period != 1;
		w->with_user_ips += r->u.sample.nr_user > 0;
		w->raw += r->u.sample.raw != NULL;
	}
	return 0;
}

/* The context-switch software event: a sample per switch, plus SWITCH out/in records. */
static void test_context_switches(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct switches w = {0};

	(void)state;
	o.kind = PERF_EV_CONTEXT_SWITCHES;
	o.freq = 0; /* ignored by this kind */
	o.context_switch = true;
	if (!open_or_skip(&ps, &o))
		skip();
	w.tid = own_tid();
	sleep_loop(50);
	if (perf_session_drain(&ps, on_switch, &w, &err))
		fail_msg("%s", err.msg);
	perf_session_close(&ps);
	print_message("context-switches: %" PRIu64 " samples, %" PRIu64 " out, %" PRIu64 " in\n",
		      w.samples, w.out, w.in);
	assert_true(w.samples >= 40);
	assert_int_equal(w.period_not_1, 0);
	assert_true(w.with_user_ips * 2 >= w.samples);
	assert_true(w.out >= 40);
	assert_true(w.in >= 40);
	assert_int_equal(w.raw, 0);
	assert_int_equal(w.other_sessions, 0);
}

static int on_sched_switch(const struct perf_record *r, void *arg)
{
	struct switches *w = arg;
	struct perf_sched_switch sw;
	struct error err = ERROR_INIT;

	if (r->type != PERF_RECORD_SAMPLE || r->tid != (uint32_t)w->tid)
		return 0;
	w->samples++;
	if (!r->u.sample.raw)
		return 0;
	w->raw++;
	if (perf_sched_switch_parse(r->u.sample.raw, r->u.sample.raw_size, &sw, &err))
		fail_msg("%s", err.msg);
	w->parsed++;
	w->prev_is_self += sw.prev_pid == (uint32_t)w->tid && sw.next_pid != sw.prev_pid;
	w->sleeping += sw.prev_state == 1; /* S: TASK_INTERRUPTIBLE */
	w->comm_ok += !strcmp(sw.prev_comm, w->comm);
	return 0;
}

/* The sched_switch tracepoint: raw data decoded with the format from tracefs. */
static void test_sched_switch(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct switches w = {0};
	char path[] = "/sys/kernel/tracing/events/sched/sched_switch/id";
	FILE *f;
	int id = -1;

	(void)state;
	o.kind = PERF_EV_SCHED_SWITCH;
	assert_int_equal(prctl(PR_SET_NAME, "plateau-sw", 0, 0, 0), 0);
	snprintf(w.comm, sizeof(w.comm), "plateau-sw");
	if (!open_or_skip(&ps, &o))
		skip();
	f = fopen(path, "r");
	if (f) {
		assert_int_equal(fscanf(f, "%d", &id), 1);
		fclose(f);
		assert_int_equal(perf_sched_switch_id(&err), id);
	}
	w.tid = own_tid();
	sleep_loop(50);
	if (perf_session_drain(&ps, on_sched_switch, &w, &err))
		fail_msg("%s", err.msg);
	perf_session_close(&ps);
	print_message("sched_switch: %" PRIu64 " samples, %" PRIu64 " parsed, %" PRIu64
		      " sleeping\n",
		      w.samples, w.parsed, w.sleeping);
	assert_true(w.samples >= 40);
	assert_int_equal(w.raw, w.samples);
	assert_int_equal(w.prev_is_self, w.parsed);
	assert_int_equal(w.comm_ok, w.parsed);
	assert_true(w.sleeping >= 40);
}

/* Unprivileged: what is refused is named with the sysctl value that allows it. */
static int refused_child(void)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;

	if (setgid(65534) || setuid(65534))
		return 12;
	o.kind = PERF_EV_CONTEXT_SWITCHES;
	if (perf_session_open(&ps, &o, &err) == 0)
		return 13;
	if (!strstr(err.msg, "perf_event_open(context-switches") ||
	    !strstr(err.msg, "kernel.perf_event_paranoid=1") || !strstr(err.msg, "CAP_PERFMON"))
		return 14;
	memset(&err, 0, sizeof(err));
	o.kind = PERF_EV_SCHED_SWITCH;
	if (perf_session_open(&ps, &o, &err) == 0)
		return 15;
	if (!strstr(err.msg, "sched:sched_switch") ||
	    !strstr(err.msg, "kernel.perf_event_paranoid=-1") || !strstr(err.msg, "CAP_PERFMON"))
		return 16;
	return 0;
}

static void test_refused_kinds(void **state)
{
	int status, par = read_paranoid_value();
	pid_t pid;

	(void)state;
	if (par < 2) {
		print_message("SKIP: kernel.perf_event_paranoid is %d: nothing is refused\n", par);
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(refused_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- all_threads ---- */

static int ready_fd = -1;

static void *child_thread(void *arg)
{
	pid_t tid = own_tid();

	(void)arg;
	if (write(ready_fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(3);
	for (;;)
		burn(1.0);
	return NULL;
}

/* A process whose 4 threads burn CPU; their tids are written to fd. */
static pid_t spawn_burners(pid_t tids[4])
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t th;

		alarm(30); /* never outlive a broken test */
		close(fds[0]);
		ready_fd = fds[1];
		for (int i = 0; i < 3; i++)
			if (pthread_create(&th, NULL, child_thread, NULL))
				_exit(2);
		child_thread(NULL);
	}
	close(fds[1]);
	for (int i = 0; i < 4; i++)
		assert_int_equal(read(fds[0], &tids[i], sizeof(tids[i])), (ssize_t)sizeof(tids[i]));
	close(fds[0]);
	return pid;
}

struct per_tid {
	pid_t pid, tids[4];
	uint64_t n[4], other, period_ns, task_records;
};

static int on_tid(const struct perf_record *r, void *arg)
{
	struct per_tid *t = arg;
	int i;

	t->task_records += r->type == PERF_RECORD_FORK || r->type == PERF_RECORD_EXIT;
	if (r->type != PERF_RECORD_SAMPLE)
		return 0;
	for (i = 0; i < 4 && r->u.sample.tid != (uint32_t)t->tids[i]; i++)
		;
	if (i < 4 && r->u.sample.pid == (uint32_t)t->pid) {
		t->n[i]++;
		t->period_ns += r->u.sample.period;
	} else
		t->other++;
	return 0;
}

static uint64_t drain_tids(struct perf_session *ps, struct per_tid *t, uint64_t min_each)
{
	struct error err = ERROR_INIT;
	uint64_t total = 0, low = UINT64_MAX;

	memset(t->n, 0, sizeof(t->n));
	if (perf_session_drain(ps, on_tid, t, &err))
		fail_msg("%s", err.msg);
	for (int i = 0; i < 4; i++) {
		total += t->n[i];
		low = MIN(low, t->n[i]);
	}
	if (min_each)
		assert_true(low >= min_each);
	return total;
}

/* CPU ns the threads ran so far (first field of /proc/PID/task/TID/schedstat). */
static uint64_t tids_cpu_ns(const struct per_tid *t)
{
	uint64_t sum = 0;

	for (int i = 0; i < 4; i++) {
		char path[64];
		unsigned long long ns = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)t->pid,
			 (int)t->tids[i]);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "%llu", &ns), 1);
		fclose(f);
		sum += ns;
	}
	return sum;
}

static volatile sig_atomic_t hup_timeout;

static void on_hup_alarm(int sig)
{
	(void)sig;
	hup_timeout = 1;
}

/* Threads that exist before the open are all sampled; disable/enable reach every fd. */
static void test_all_threads(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	struct per_tid t = {0};
	struct sigaction sa = {0}, old;
	size_t redirected = 0;
	uint64_t cpu0;
	double cpu;

	(void)state;
	t.pid = spawn_burners(t.tids);
	o.pid = t.pid;
	o.inherit = false;
	o.all_threads = true;
	o.callchain = false;
	o.task_events = false; /* all_threads uses FORK records itself; the caller sees none */
	if (perf_session_open(&ps, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(ps.nr_rings, (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	for (size_t i = 0; i < ps.nr_rings; i++)
		redirected += ps.rings[i].nr_redirected;
	assert_int_equal(redirected, 3 * ps.nr_rings);
	cpu0 = tids_cpu_ns(&t);
	usleep(300000);
	t.period_ns = 0;
	drain_tids(&ps, &t, 10);
	cpu = (double)(tids_cpu_ns(&t) - cpu0);
	print_message("all_threads: samples per tid %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		      ", periods %.1f ms for %.1f ms of CPU\n",
		      t.n[0], t.n[1], t.n[2], t.n[3], (double)t.period_ns / 1e6, cpu / 1e6);
	/* each thread counted once: cpu-clock periods add up to the CPU time they used */
	assert_true((double)t.period_ns >= cpu * 0.5);
	assert_true((double)t.period_ns <= cpu * 1.5 + 20e6);

	/* disabled: no thread is sampled any more (the redirected events too) */
	if (perf_session_enable(&ps, false, &err))
		fail_msg("%s", err.msg);
	drain_tids(&ps, &t, 0);
	usleep(100000);
	assert_int_equal(drain_tids(&ps, &t, 0), 0);
	if (perf_session_enable(&ps, true, &err))
		fail_msg("%s", err.msg);
	usleep(200000);
	drain_tids(&ps, &t, 5);

	/* the target exits: every fd of every ring hangs up and the loop ends by itself */
	hup_timeout = 0;
	sa.sa_handler = on_hup_alarm;
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarm(10);
	kill(t.pid, SIGKILL);
	if (perf_loop((struct perf_session *const[]){&ps}, 1, 100, &hup_timeout, on_tid, NULL, &t,
		      &err))
		fail_msg("%s", err.msg);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	assert_false(hup_timeout);
	assert_int_equal(waitpid(t.pid, NULL, 0), t.pid);
	assert_int_equal(t.other, 0);
	assert_int_equal(t.task_records, 0);
	perf_session_close(&ps);
}

/* all_threads on a pid that does not exist: a clear error. */
static void test_all_threads_gone(void **state)
{
	struct perf_open_opts o = self_opts();
	struct perf_session ps;
	struct error err = ERROR_INIT;
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	o.pid = pid;
	o.all_threads = true;
	assert_int_equal(perf_session_open(&ps, &o, &err), ERR_IO);
	assert_non_null(strstr(err.msg, "No such process"));
	memset(&err, 0, sizeof(err));
	o.pid = -1;
	assert_int_equal(perf_session_open(&ps, &o, &err), ERR_USAGE);
}

/* ---- perf_loop over several sessions ---- */

struct two {
	uint64_t by_session[2], bad_period, rounds;
	int stop_after, round_ret;
};

static int on_two(const struct perf_record *r, void *arg)
{
	struct two *t = arg;

	assert_true(r->session < 2);
	if (r->type != PERF_RECORD_SAMPLE || r->pid != (uint32_t)getpid())
		return 0;
	t->by_session[r->session]++;
	/* session 0 is cpu-clock (period in ns), session 1 context-switches (period 1) */
	t->bad_period += r->session == 0 ? r->u.sample.period <= 1 : r->u.sample.period != 1;
	return 0;
}

static int two_round(void *arg)
{
	struct two *t = arg;

	t->rounds++;
	if (t->stop_after && t->rounds >= (uint64_t)t->stop_after && t->by_session[0] &&
	    t->by_session[1])
		return t->round_ret;
	return 0;
}

static void test_loop_two_sessions(void **state)
{
	struct perf_open_opts a = self_opts(), b = self_opts();
	struct perf_session sa, sb;
	struct perf_session *const both[] = {&sa, &sb};
	struct error err = ERROR_INIT;
	struct two t = {.stop_after = 3, .round_ret = 1};
	uint64_t rounds;
	pthread_t th;

	(void)state;
	b.kind = PERF_EV_CONTEXT_SWITCHES;
	if (perf_session_open(&sa, &a, &err))
		fail_msg("%s", err.msg);
	if (!open_or_skip(&sb, &b)) {
		perf_session_close(&sa);
		skip();
	}
	stop_flag = 0;
	assert_int_equal(pthread_create(&th, NULL, loop_burn, NULL), 0);
	/* round > 0: stop cleanly, drain, one more round, return 0 */
	assert_int_equal(perf_loop(both, 2, 20, NULL, on_two, two_round, &t, &err), 0);
	rounds = t.rounds;
	print_message("two sessions: %" PRIu64 " + %" PRIu64 " samples in %" PRIu64 " rounds\n",
		      t.by_session[0], t.by_session[1], rounds);
	assert_true(rounds >= 4);
	assert_true(t.by_session[0] > 0);
	assert_true(t.by_session[1] > 0);
	assert_int_equal(t.bad_period, 0);
	assert_true(t.by_session[0] <= sa.stats.samples);
	assert_true(t.by_session[1] <= sb.stats.samples);

	/* round < 0: returned as is, no further round */
	t.round_ret = -42;
	t.rounds = 0;
	assert_int_equal(perf_loop(both, 2, 20, NULL, on_two, two_round, &t, &err), -42);
	assert_int_equal(t.rounds, 3);

	/* *stop set: a last drain and round, then 0 */
	t.rounds = 0;
	t.stop_after = 0;
	stop_flag = 1;
	assert_int_equal(perf_loop(both, 2, 20, &stop_flag, on_two, two_round, &t, &err), 0);
	assert_int_equal(t.rounds, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	perf_session_close(&sa);
	perf_session_close(&sb);
}

/* ---- raw data and the sched_switch format, malformed ---- */

static const char sched_format[] =
	"name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

static int format_fresh(const char *text, struct perf_sched_switch_format *f, struct error *err)
{
	memset(err, 0, sizeof(*err));
	return perf_sched_switch_format_parse(text, "fmt", f, err);
}

static void test_sched_format_bad(void **state)
{
	struct perf_sched_switch_format f;
	struct perf_sched_switch sw;
	struct error err = ERROR_INIT;
	uint8_t raw[68] = {0};
	uint32_t pid = 1234, next = 99;
	int64_t st = 1;
	char *text = xstrdup(sched_format), *cut;

	(void)state;
	assert_int_equal(format_fresh(text, &f, &err), 0);
	assert_int_equal(f.prev_state.offset, 32);
	assert_int_equal(f.prev_state.size, 8);
	memcpy(raw + 8, "sleeper", 8);
	memcpy(raw + 24, &pid, 4);
	memcpy(raw + 32, &st, 8);
	memcpy(raw + 56, &next, 4);
	assert_int_equal(perf_sched_switch_decode(&f, raw, sizeof(raw), &sw, &err), 0);
	assert_string_equal(sw.prev_comm, "sleeper");
	assert_int_equal(sw.prev_pid, 1234);
	assert_int_equal(sw.next_pid, 99);
	assert_int_equal(sw.prev_state, 1);
	/* data shorter than the fields: error, no read past it */
	assert_int_equal(perf_sched_switch_decode(&f, raw, 40, &sw, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "next_pid"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(perf_sched_switch_decode(&f, raw, 0, &sw, &err), ERR_FORMAT);
	memset(&err, 0, sizeof(err));
	assert_int_equal(perf_sched_switch_parse(raw, 12, &sw, &err), ERR_FORMAT);

	/* offsets come from the text: move prev_pid */
	cut = strstr(text, "offset:24;");
	memcpy(cut, "offset:44;", 10);
	assert_int_equal(format_fresh(text, &f, &err), 0);
	memcpy(raw + 44, &next, 4);
	assert_int_equal(perf_sched_switch_decode(&f, raw, sizeof(raw), &sw, &err), 0);
	assert_int_equal(sw.prev_pid, 99);

	/* truncated inside the prev_state line, and before next_pid */
	cut = strstr(text, "prev_state;") + 14;
	*cut = 0;
	assert_int_equal(format_fresh(text, &f, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "prev_state"));
	free(text);
	text = xstrndup(sched_format,
			(size_t)(strstr(sched_format, "\tfield:pid_t next_pid") - sched_format));
	assert_int_equal(format_fresh(text, &f, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "next_pid missing"));
	assert_int_equal(format_fresh("", &f, &err), ERR_FORMAT);
	assert_int_equal(format_fresh("\tfield:;\n", &f, &err), ERR_FORMAT);
	assert_int_equal(
		format_fresh("\tfield:int x;\toffset:99999999999999999999;\tsize:4;\n", &f, &err),
		ERR_FORMAT);
	assert_int_equal(format_fresh("\tfield:int x;\toffset:65535;\tsize:4;\n", &f, &err),
			 ERR_FORMAT);
	free(text);
}

/* PERF_SAMPLE_RAW in a sample: exposed, padded, bounds-checked. */
static void test_parse_raw(void **state)
{
	struct perf_layout l = {PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW |
					PERF_SAMPLE_REGS_USER,
				0x3, true};
	uint64_t b[16] = {0};
	uint32_t sz = 12;
	struct perf_record r;
	struct error err = ERROR_INIT;

	(void)state;
	b[1] = 0x1000;
	b[2] = 7 | (8ULL << 32);
	memcpy(&b[3], &sz, 4); /* raw: 4 + 12 bytes = 2 words */
	memcpy((uint8_t *)&b[3] + 4, "abcdefghijkl", 12);
	b[5] = 1; /* regs abi */
	b[6] = 11;
	b[7] = 22;
	set_header(b, PERF_RECORD_SAMPLE, 0, 8 * 8);
	assert_int_equal(parse_fresh(&l, b, 8 * 8, &r, &err), 0);
	assert_int_equal(r.u.sample.raw_size, 12);
	assert_memory_equal(r.u.sample.raw, "abcdefghijkl", 12);
	assert_int_equal(r.u.sample.nr_regs, 2);
	assert_int_equal(r.u.sample.regs[1], 22);
	/* an unaligned raw size is padded to the next 8 bytes */
	sz = 9;
	memcpy(&b[3], &sz, 4);
	assert_int_equal(parse_fresh(&l, b, 8 * 8, &r, &err), 0);
	assert_int_equal(r.u.sample.regs[0], 11);
	/* raw size past the record */
	sz = 1000;
	memcpy(&b[3], &sz, 4);
	assert_int_equal(parse_fresh(&l, b, 8 * 8, &r, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "raw.data"));
	sz = UINT32_MAX;
	memcpy(&b[3], &sz, 4);
	assert_int_equal(parse_fresh(&l, b, 8 * 8, &r, &err), ERR_FORMAT);
	/* record ends inside the size */
	set_header(b, PERF_RECORD_SAMPLE, 0, 3 * 8);
	assert_int_equal(parse_fresh(&l, b, 3 * 8, &r, &err), ERR_FORMAT);
	assert_non_null(strstr(err.msg, "raw.size"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_profile),
		cmocka_unit_test(test_user_stack),
		cmocka_unit_test(test_thread_samples),
		cmocka_unit_test(test_thread_tids),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_parse_sample_ok_and_truncated),
		cmocka_unit_test(test_parse_strings_bounded),
		cmocka_unit_test(test_ring_corrupt),
		cmocka_unit_test(test_refused_message),
		cmocka_unit_test(test_loop_stops),
		cmocka_unit_test(test_loop_signal),
		cmocka_unit_test(test_system_wide),
		cmocka_unit_test(test_context_switches),
		cmocka_unit_test(test_sched_switch),
		cmocka_unit_test(test_refused_kinds),
		cmocka_unit_test(test_all_threads),
		cmocka_unit_test(test_all_threads_gone),
		cmocka_unit_test(test_loop_two_sessions),
		cmocka_unit_test(test_sched_format_bad),
		cmocka_unit_test(test_parse_raw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
