/* SPDX-License-Identifier: MIT */
/*
 * perf_event sessions on this process: samples and their stacks, threads,
 * the ring (wraparound, corruption), record parsing, refusals, loops.
 * The other event kinds are in perf_kinds_test.c.
 */
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

#include "perf/perf_event.h"
#include "perf/perf_ring.h"
#include "perf/perf_testutil.h"

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
