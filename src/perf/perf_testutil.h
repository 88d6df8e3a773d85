/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERF_TESTUTIL_H
#define PLATEAU_PERF_TESTUTIL_H

/*
 * What the perf_event tests share (perf_event_test.c: sampling, rings,
 * parsing, loops; perf_kinds_test.c: the other event kinds, following
 * every thread, several sessions, raw data): a CPU burner the samples
 * must land in, a record counter, the options of a self-profile, and
 * parse helpers that start each expectation with a clean error.  Each
 * file uses only some of them, hence the unused attributes.
 */

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

#define BURN_SIZE 2048 /* generous upper bound of burn()'s code size */

struct seen {
	pid_t pid, child;
	uint64_t samples, own_samples, with_user_ips, in_burn, period_ns;
	bool mmap_found, comm_found, fork_found, exit_found;
	const char *mmap_path, *comm;
	uint64_t comms;
};

static volatile uint64_t sink;

__attribute__((noinline, unused)) static void burn(double seconds)
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

__attribute__((unused)) static bool in_burn(uint64_t ip)
{
	uintptr_t b = (uintptr_t)&burn;

	return ip >= b && ip < b + BURN_SIZE;
}

__attribute__((unused)) static int on_record(const struct perf_record *r, void *arg)
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

__attribute__((unused)) static struct perf_open_opts self_opts(void)
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

__attribute__((unused)) static struct perf_layout test_layout(void)
{
	struct perf_layout l = {PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
					PERF_SAMPLE_CALLCHAIN,
				0, true};
	return l;
}

__attribute__((unused)) static void set_header(uint64_t *buf, uint32_t type, uint16_t misc,
					       uint16_t size)
{
	struct perf_event_header h = {type, misc, size};

	memcpy(buf, &h, sizeof(h));
}

/* error_set keeps the first error: start each expectation with a clean one. */
__attribute__((unused)) static int parse_fresh(const struct perf_layout *l, const void *b,
					       size_t len, struct perf_record *r, struct error *err)
{
	err->code = 0;
	err->msg[0] = 0;
	return perf_record_parse(l, b, len, r, err);
}

__attribute__((unused)) static int drain_fresh(struct perf_session *ps, struct error *err)
{
	err->code = 0;
	err->msg[0] = 0;
	return perf_session_drain(ps, NULL, NULL, err);
}

__attribute__((unused)) static int read_paranoid_value(void)
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

static volatile sig_atomic_t stop_flag;

__attribute__((unused)) static int stop_after_samples(const struct perf_record *r, void *arg)
{
	uint64_t *n = arg;

	if (r->type == PERF_RECORD_SAMPLE && ++*n >= 10)
		stop_flag = 1;
	return 0;
}

__attribute__((unused)) static void *loop_burn(void *arg)
{
	(void)arg;
	while (!stop_flag)
		burn(0.01);
	return NULL;
}

/* The poll loop drains while a thread burns, and stops when the flag is set. */

#endif
