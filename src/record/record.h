/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_RECORD_H
#define PLATEAU_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "util/error.h"

/*
 * The recorder behind `plateau record`: opens perf events on a target,
 * reads their rings, keeps the processes' mappings, unwinds user stacks,
 * counts each distinct raw stack once, and at the end symbolizes every
 * distinct address once into a struct profile.  See doc/plateau-record.md.
 *
 * Not thread-safe; one recorder per recording.
 */

enum record_event {
	REC_EV_CPU = 1 << 0,	/* on-CPU time: cpu-clock samples */
	REC_EV_OFFCPU = 1 << 1, /* blocked time charged to the stack at switch-out */
	REC_EV_WALL = 1 << 2,	/* on-CPU + off-CPU (preemption included) per thread */
};

enum record_callgraph {
	REC_CG_AUTO,  /* frame-pointer chain and a stack copy; DWARF unwinding, FP when it fails */
	REC_CG_FP,    /* kernel frame-pointer chain only */
	REC_CG_DWARF, /* user registers + stack copy, unwound with libdw */
};

struct record_opts {
	unsigned freq;		  /* cpu-clock samples per second (default 99) */
	unsigned events;	  /* enum record_event bits (0: REC_EV_CPU) */
	enum record_callgraph cg; /* default REC_CG_AUTO */
	uint32_t stack_size;	  /* bytes of user stack per sample (0: 16384) */
	uint64_t min_block_ns;	  /* off-CPU: shorter blocks are dropped (0: keep all) */
	bool user_only;		  /* do not ask for kernel stacks */
	unsigned ring_pages;	  /* per-CPU ring size (0: default) */
};

/* Why a frame has no name: enum sym_reason values, then these. */
enum {
	REC_REASON_JIT = 8,    /* anonymous executable memory without /tmp/perf-PID.map */
	REC_REASON_NO_MAP = 9, /* the address is in no known mapping */
	REC_NR_REASONS = 10,
};
/* A fixed phrase for reason i ("stripped", "JIT without perf map", ...). */
const char *record_reason_str(unsigned i);
/* Why reason i happens and what names such frames ("... install the -dbgsym package"), or NULL. */
const char *record_reason_fix(unsigned i);

/* What a recording saw; nothing is dropped without being counted here. */
struct record_stats {
	uint64_t samples;	   /* cpu-clock and switch samples read */
	uint64_t lost;		   /* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t lost_samples;	   /* PERF_RECORD_LOST_SAMPLES */
	uint64_t lost_offcpu;	   /* of lost + lost_samples, from the off-CPU (switch) rings */
	uint64_t bad_records;	   /* records that did not parse (skipped) */
	uint64_t throttled;	   /* times the kernel throttled sampling (PERF_RECORD_THROTTLE) */
	uint64_t unwind_failed;	   /* user stacks DWARF could not walk past the first frame */
	uint64_t fp_fallback;	   /* ... of which the frame-pointer chain was used */
	uint64_t offcpu_unpaired;  /* switch-outs never switched back in (charged to the end) */
	uint64_t processes;	   /* processes seen */
	bool kernel_stacks;	   /* kernel frames were recorded */
	const char *offcpu_source; /* "sched:sched_switch" or "context-switches", or NULL */
	char note[512];		   /* a degradation worth telling the user ("" when none) */
	/* After recorder_profile(): share of samples (by count) with an unnamed frame, per reason. */
	uint64_t stacks_total;			    /* samples in the profile (count) */
	uint64_t unnamed_samples;		    /* samples with at least one unnamed frame */
	uint64_t unnamed_by_reason[REC_NR_REASONS]; /* by enum sym_reason, then REC_REASON_* */
	/* The same by frame: every frame of every sample (the comm root aside), times its count. */
	uint64_t frames_total;
	uint64_t frames_unnamed;
	uint64_t frames_unnamed_by_reason[REC_NR_REASONS];
	uint64_t truncated_samples; /* user stacks that do not reach a thread entry point */
	uint64_t duration_ns;
};

struct recorder;

/* A recorder for opts (copied).  Never NULL; free with recorder_free(). */
struct recorder *recorder_new(const struct record_opts *opts);
void recorder_free(struct recorder *r);

/*
 * Open the events on a target.  pid > 0 and start_on_exec: a forked
 * child that has not exec'd yet (counting starts at its exec; the caller
 * then lets it exec).  pid > 0 otherwise: a running process with all its
 * threads, its mappings read from /proc.  pid == -1: every process on
 * every online CPU.  Errors name what was refused and what allows it.
 */
int recorder_open(struct recorder *r, pid_t pid, bool start_on_exec, struct error *err);

/*
 * For a command target, before letting it exec: load /proc/kallsyms (when
 * kernel stacks are recorded) and the symbols and DWARF of the program at
 * exe and of the libraries it needs (DT_NEEDED, searched as the dynamic
 * loader would), so that little is left to load when it exits.  Blocks
 * until done; what cannot be loaded now is loaded, or reported, at the end.
 */
void recorder_preload(struct recorder *r, const char *exe);

/*
 * Read events until *stop is set, the target is gone (all rings hung up,
 * or pid no longer exists), or duration_ms passes (0: no limit).  status,
 * when not NULL, is called about every status_ms with the stats so far.
 */
typedef void (*record_status_fn)(const struct record_stats *st, uint64_t elapsed_ns, void *arg);
int recorder_run(struct recorder *r, volatile sig_atomic_t *stop, uint64_t duration_ms,
		 record_status_fn status, void *arg, struct error *err);

/*
 * Symbolize and build the profile (caller owns it).  Fills the unnamed
 * and truncated counts of the stats.  The recorder may not run again.
 */
struct profile *recorder_profile(struct recorder *r, struct error *err);

const struct record_stats *recorder_stats(const struct recorder *r);

/*
 * Below: recorder_run's parts, for tests that feed records by hand.
 * recorder_feed queues one record as read from the cpu-clock (or the
 * off-CPU) session; recorder_feed_round ends a round of draining (what is
 * older than the previous round's newest record is handled);
 * recorder_finish handles the rest and charges threads still blocked up to
 * end_ns (perf clock: CLOCK_MONOTONIC).
 */
struct perf_record;
void recorder_feed(struct recorder *r, const struct perf_record *rec, bool offcpu);
void recorder_feed_round(struct recorder *r);
void recorder_finish(struct recorder *r, uint64_t end_ns);

#endif
