/* SPDX-License-Identifier: MIT */
/*
 * The recorder's bookkeeping with records fed by hand: time order across
 * rings, off-CPU pairing, preemption, mappings through fork and exec.
 * Real recordings are tested by tests/cli/record*.sh.
 */
#include "util/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include "perf/perf_event.h"
#include "record/record.h"

#define PID 0x7ffffff0u /* above any pid_max: nothing in /proc */

static struct recorder *new_recorder(unsigned events)
{
	struct record_opts o = {.events = events, .cg = REC_CG_FP, .freq = 100};

	return recorder_new(&o);
}

/* A sample of tid at time t whose user stack is ips[0..n) (innermost first). */
static void feed_sample(struct recorder *r, bool offcpu, uint32_t tid, uint64_t t, uint64_t period,
			const uint64_t *ips, size_t n)
{
	struct perf_record rec = {.type = PERF_RECORD_SAMPLE, .pid = PID, .tid = tid, .time = t};

	rec.u.sample.pid = PID;
	rec.u.sample.tid = tid;
	rec.u.sample.time = t;
	rec.u.sample.period = period;
	rec.u.sample.ip = ips[0];
	rec.u.sample.user_ips = ips;
	rec.u.sample.nr_user = n;
	rec.u.sample.nr_callchain = n + 1;
	recorder_feed(r, &rec, offcpu);
}

static void feed_switch(struct recorder *r, uint32_t tid, uint64_t t, bool out, bool preempt)
{
	struct perf_record rec = {.type = PERF_RECORD_SWITCH, .pid = PID, .tid = tid, .time = t};

	rec.has_id = true;
	rec.u.sw.out = out;
	if (out)
		rec.misc = PERF_RECORD_MISC_SWITCH_OUT |
			   (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);
	recorder_feed(r, &rec, true);
}

static void feed_comm(struct recorder *r, uint32_t pid, uint32_t tid, const char *comm, bool exec,
		      uint64_t t)
{
	struct perf_record rec = {.type = PERF_RECORD_COMM, .pid = pid, .tid = tid, .time = t};

	rec.u.comm.pid = pid;
	rec.u.comm.tid = tid;
	rec.u.comm.exec = exec;
	rec.u.comm.comm = comm;
	recorder_feed(r, &rec, false);
}

static void feed_mmap(struct recorder *r, uint32_t pid, const char *path, uint64_t start,
		      uint64_t len, uint64_t t)
{
	struct perf_record rec = {.type = PERF_RECORD_MMAP2, .pid = pid, .tid = pid, .time = t};

	rec.u.mmap2.pid = pid;
	rec.u.mmap2.tid = pid;
	rec.u.mmap2.addr = start;
	rec.u.mmap2.len = len;
	rec.u.mmap2.prot = PROT_READ | PROT_EXEC;
	rec.u.mmap2.filename = path;
	recorder_feed(r, &rec, false);
}

static void feed_fork(struct recorder *r, uint32_t pid, uint32_t ppid, uint64_t t)
{
	struct perf_record rec = {.type = PERF_RECORD_FORK, .pid = pid, .tid = pid, .time = t};

	rec.u.task =
		(struct perf_task){.pid = pid, .ppid = ppid, .tid = pid, .ptid = ppid, .time = t};
	recorder_feed(r, &rec, false);
}

/* The value of type name summed over samples whose stack has a frame named frame. */
static int64_t value_under(const struct profile *p, const char *type, const char *frame)
{
	int t = profile_find_type(p, type);
	int64_t sum = 0;
	uint32_t *buf = NULL;
	size_t alloc = 0;

	assert_true(t >= 0);
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		size_t n = profile_node_stack(p, p->samples[i].node, &buf, &alloc);

		for (size_t j = 0; j < n; j++)
			if (!strcmp(profile_str(p, p->frames[buf[j]].name), frame)) {
				sum += profile_sample_values(p, i)[t];
				break;
			}
	}
	free(buf);
	return sum;
}

static bool has_root(const struct profile *p, const char *comm)
{
	for (uint32_t n = 1; n < p->nr_nodes; n++)
		if (p->nodes[n].parent == 0 &&
		    !strcmp(profile_str(p, p->frames[p->nodes[n].frame].name), comm))
			return true;
	return false;
}

/*
 * A thread switches out on CPU 0 and back in on CPU 1: the switch-in is
 * read (from CPU 1's ring) before the switch-out (CPU 0's ring is drained
 * after it).  Time order must still pair them.
 */
static void test_offcpu_pairs_across_rings(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_OFFCPU);
	const uint64_t a[] = {0x1000}, b[] = {0x2000};
	struct error err = ERROR_INIT;
	struct profile *p;

	feed_comm(r, PID, PID, "app", false, 10);
	/* round 1: CPU 1's ring first (in@1000), then CPU 0's (out@400, out@1500) */
	feed_switch(r, PID, 1000, false, false);
	feed_sample(r, true, PID, 400, 1, a, 1);
	feed_switch(r, PID, 400, true, false);
	feed_sample(r, true, PID, 1500, 1, b, 1);
	feed_switch(r, PID, 1500, true, false);
	recorder_feed_round(r);
	/* round 2: the second switch-in */
	feed_switch(r, PID, 1800, false, false);
	recorder_feed_round(r);
	recorder_finish(r, 1900);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	/* 600 ns blocked in the first stack, 300 in the second; no 1000-400-1500 mixups */
	assert_int_equal(value_under(p, "offcpu", "[unknown]"), 900);
	assert_int_equal(profile_total(p, (uint32_t)profile_find_type(p, "offcpu")), 900);
	assert_true(has_root(p, "app"));
	assert_int_equal(recorder_stats(r)->offcpu_unpaired, 0);
	profile_free(p);
	recorder_free(r);
}

/* Preemption is CPU contention: wall time, not off-CPU time. */
static void test_preempted_counts_in_wall_only(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_OFFCPU | REC_EV_WALL);
	const uint64_t a[] = {0x1000};
	struct error err = ERROR_INIT;
	struct profile *p;
	int off, wall;

	feed_sample(r, true, PID, 100, 1, a, 1);
	feed_switch(r, PID, 100, true, true);
	feed_switch(r, PID, 350, false, false);
	feed_sample(r, true, PID, 400, 1, a, 1);
	feed_switch(r, PID, 400, true, false);
	feed_switch(r, PID, 1400, false, false);
	recorder_finish(r, 2000);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	off = profile_find_type(p, "offcpu");
	wall = profile_find_type(p, "wall");
	assert_int_equal(profile_total(p, (uint32_t)off), 1000);
	assert_int_equal(profile_total(p, (uint32_t)wall), 1250);
	profile_free(p);
	recorder_free(r);
}

/* A thread never switched back in is charged up to the end, and counted. */
static void test_blocked_at_end_is_charged(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_OFFCPU);
	const uint64_t a[] = {0x1000};
	struct error err = ERROR_INIT;
	struct profile *p;

	feed_sample(r, true, PID, 100, 1, a, 1);
	feed_switch(r, PID, 100, true, false);
	recorder_finish(r, 5100);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	assert_int_equal(profile_total(p, 0), 5000);
	assert_int_equal(recorder_stats(r)->offcpu_unpaired, 1);
	profile_free(p);
	recorder_free(r);
}

/* --min-block drops short blocks before anything is unwound. */
static void test_min_block(void **state UNUSED)
{
	struct record_opts o = {.events = REC_EV_OFFCPU, .cg = REC_CG_FP, .min_block_ns = 500};
	struct recorder *r = recorder_new(&o);
	const uint64_t a[] = {0x1000};
	struct error err = ERROR_INIT;
	struct profile *p;

	feed_sample(r, true, PID, 100, 1, a, 1);
	feed_switch(r, PID, 100, true, false);
	feed_switch(r, PID, 200, false, false); /* 100 ns: dropped */
	feed_sample(r, true, PID, 300, 1, a, 1);
	feed_switch(r, PID, 300, true, false);
	feed_switch(r, PID, 1300, false, false); /* 1000 ns: kept */
	recorder_finish(r, 2000);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	assert_int_equal(profile_total(p, 0), 1000);
	profile_free(p);
	recorder_free(r);
}

/*
 * CPU samples: values are periods; a forked child keeps its parent's
 * mappings and name until it execs; an exec starts an empty address space.
 */
static void test_fork_exec_mappings(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_CPU);
	const uint64_t lib[] = {0x7f0000001234};
	struct error err = ERROR_INIT;
	struct perf_record rec = {0};
	struct profile *p;
	int64_t v;

	feed_comm(r, PID, PID, "parent", false, 1);
	feed_mmap(r, PID, "/nonexistent/libfake.so", 0x7f0000000000, 0x10000, 2);
	feed_fork(r, PID + 1, PID, 3);
	/* the child samples in the inherited mapping */
	rec.type = PERF_RECORD_SAMPLE;
	rec.u.sample = (struct perf_sample){.pid = PID + 1,
					    .tid = PID + 1,
					    .time = 4,
					    .period = 7,
					    .ip = lib[0],
					    .user_ips = lib,
					    .nr_user = 1};
	recorder_feed(r, &rec, false);
	/* after exec the same address is in no mapping */
	feed_comm(r, PID + 1, PID + 1, "child", true, 5);
	rec.u.sample.time = 6;
	rec.u.sample.period = 11;
	recorder_feed(r, &rec, false);
	recorder_finish(r, 10);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	assert_int_equal(profile_total(p, (uint32_t)profile_find_type(p, "cpu")), 18);
	assert_int_equal(profile_total(p, (uint32_t)profile_find_type(p, "samples")), 2);
	/* before exec: named after the parent, in libfake.so (unreadable: module+offset) */
	assert_true(has_root(p, "parent"));
	v = value_under(p, "cpu", "libfake.so+0x1234");
	assert_int_equal(v, 7);
	/* after exec: the child's name, no mapping */
	assert_true(has_root(p, "child"));
	assert_int_equal(value_under(p, "cpu", "[unknown]"), 11);
	assert_int_equal(recorder_stats(r)->unnamed_by_reason[REC_REASON_NO_MAP], 1);
	assert_int_equal(recorder_stats(r)->unnamed_samples, 2);
	/* one frame per sample, both unnamed: by frame too, with the reason */
	assert_int_equal(recorder_stats(r)->frames_total, 2);
	assert_int_equal(recorder_stats(r)->frames_unnamed, 2);
	assert_int_equal(recorder_stats(r)->frames_unnamed_by_reason[REC_REASON_NO_MAP], 1);
	profile_free(p);
	recorder_free(r);
}

/*
 * The kernel's frame-pointer chain ends at the first return address in no
 * mapping: past code without frame pointers it follows a stale rbp (a
 * sample in clone3 carried 118 [unknown] frames).  The sampled IP stays.
 */
static void test_fp_chain_cut_at_unmapped(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_CPU);
	const uint64_t good[] = {0x7f0000001234, 0x7f0000002345};
	const uint64_t bad[] = {0x7f0000001234, 0x7f0000002345, 0x55, 0x7f0000003456, 0x66};
	const uint64_t lone[] = {0x99};
	struct error err = ERROR_INIT;
	struct profile *p;

	feed_comm(r, PID, PID, "prog", false, 1);
	feed_mmap(r, PID, "/nonexistent/libfake.so", 0x7f0000000000, 0x10000, 2);
	feed_sample(r, false, PID, 3, 5, good, 2);
	feed_sample(r, false, PID, 4, 7, bad, 5);
	feed_sample(r, false, PID, 5, 11, lone, 1);
	recorder_finish(r, 10);
	p = recorder_profile(r, &err);
	assert_non_null(p);
	/* both chains end at the caller libfake.so+0x2344 (a return address - 1) */
	assert_int_equal(value_under(p, "cpu", "libfake.so+0x2344"), 12);
	/* nothing past the unmapped 0x55, and only the unmapped lone IP is [unknown] */
	assert_int_equal(value_under(p, "cpu", "libfake.so+0x3455"), 0);
	assert_int_equal(value_under(p, "cpu", "[unknown]"), 11);
	assert_int_equal(recorder_stats(r)->frames_total, 2 + 2 + 1);
	profile_free(p);
	recorder_free(r);
}

/* LOST records are counted, never hidden. */
static void test_lost_counted(void **state UNUSED)
{
	struct recorder *r = new_recorder(REC_EV_CPU);
	struct perf_record rec = {.type = PERF_RECORD_LOST};

	rec.u.lost = 17;
	recorder_feed(r, &rec, false);
	rec.type = PERF_RECORD_LOST_SAMPLES;
	rec.u.lost = 3;
	recorder_feed(r, &rec, false);
	/* 5 more from the off-CPU (context switch) rings, told apart for the remedy */
	rec.type = PERF_RECORD_LOST;
	rec.u.lost = 5;
	recorder_feed(r, &rec, true);
	recorder_finish(r, 1);
	assert_int_equal(recorder_stats(r)->lost, 22);
	assert_int_equal(recorder_stats(r)->lost_samples, 3);
	assert_int_equal(recorder_stats(r)->lost_offcpu, 5);
	recorder_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offcpu_pairs_across_rings),
		cmocka_unit_test(test_preempted_counts_in_wall_only),
		cmocka_unit_test(test_blocked_at_end_is_charged),
		cmocka_unit_test(test_min_block),
		cmocka_unit_test(test_fork_exec_mappings),
		cmocka_unit_test(test_fp_chain_cut_at_unmapped),
		cmocka_unit_test(test_lost_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
