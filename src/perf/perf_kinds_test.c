/* SPDX-License-Identifier: MIT */
/*
 * perf_event beyond CPU samples: context switches and sched_switch,
 * refused kinds, following every thread of a process, perf_loop over
 * several sessions, raw data and the sched_switch format (malformed).
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
		cmocka_unit_test(test_context_switches), cmocka_unit_test(test_sched_switch),
		cmocka_unit_test(test_refused_kinds),	 cmocka_unit_test(test_all_threads),
		cmocka_unit_test(test_all_threads_gone), cmocka_unit_test(test_loop_two_sessions),
		cmocka_unit_test(test_sched_format_bad), cmocka_unit_test(test_parse_raw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
