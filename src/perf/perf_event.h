/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERF_EVENT_H
#define PLATEAU_PERF_EVENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/*
 * The lowest layer of `plateau record`: perf_event_open(2) on the raw
 * syscall, the mmap'ed ring buffers and the records they carry, parsed into
 * plain structs.  See doc/perf-events.md for what is opened and why.
 *
 * Targets: one process (pid >= 0; 0 = the caller).  With inherit it is
 * opened as one event per online CPU for that pid (the kernel refuses to
 * mmap an inherited event with cpu == -1), so every thread and child
 * created after the open is followed and each CPU's ring carries them;
 * threads that already exist at open time are NOT followed (open before
 * starting them, use enable_on_exec on a freshly forked command, or set
 * all_threads).  Without inherit it is one event with cpu = -1 (that thread
 * only).  pid == -1 means system-wide: one event per online CPU.
 *
 * all_threads (pid targets): one inherited event per (thread listed in
 * /proc/PID/task, online CPU); the events of a CPU all write into that
 * CPU's one ring (PERF_EVENT_IOC_SET_OUTPUT).  The task list is rescanned
 * after opening until no new thread appears (at most PERF_MAX_RESCANS
 * times); threads that exit in between are skipped.
 */

/* What is counted and sampled. */
enum perf_event_kind {
	/* software cpu-clock in frequency mode (opts.freq); period = CPU ns */
	PERF_EV_CPU_CLOCK = 0,
	/* software context-switches, every switch (sample_period 1, period = 1).
	 * The event fires in kernel mode, so it is opened with exclude_kernel = 0
	 * whatever opts.exclude_kernel says (that only drops kernel callchains):
	 * needs kernel.perf_event_paranoid <= 1 or CAP_PERFMON. */
	PERF_EV_CONTEXT_SWITCHES,
	/* tracepoint sched:sched_switch, every switch, with PERF_SAMPLE_RAW
	 * (decode with perf_sched_switch_parse); needs tracefs, and
	 * kernel.perf_event_paranoid = -1 or CAP_PERFMON. */
	PERF_EV_SCHED_SWITCH,
};

#define PERF_MAX_RESCANS 16 /* all_threads: rescans of /proc/PID/task */

struct perf_open_opts {
	pid_t pid;		   /* >= 0: that process (0 = self); -1: system-wide */
	enum perf_event_kind kind; /* 0: PERF_EV_CPU_CLOCK */
	unsigned freq;	     /* cpu-clock samples per second (1..100000); other kinds ignore it */
	bool callchain;	     /* PERF_SAMPLE_CALLCHAIN */
	uint32_t stack_user; /* > 0: REGS_USER + STACK_USER of this many bytes (mult of 8) */
	uint64_t regs_user_mask; /* registers for stack_user (0: arch default for DWARF) */
	bool exclude_kernel;
	bool inherit;	      /* follow children and threads (pid targets) */
	bool all_threads;     /* pid > 0 (or 0 = self): also the threads that exist already;
				implies inherit */
	bool enable_on_exec;  /* open disabled, start at the target's next exec */
	bool task_events;     /* mmap2 + comm(+exec) + fork/exit records */
	bool mmap_build_id;   /* MMAP2 carries build-ids instead of dev/inode */
	bool context_switch;  /* PERF_RECORD_SWITCH(_CPU_WIDE) */
	bool clock_monotonic; /* timestamps from CLOCK_MONOTONIC (use_clockid) */
	unsigned ring_pages;  /* data pages per ring, a power of two (0: 64) */
};

/* How the sample records of a session are laid out (from the opened attr). */
struct perf_layout {
	uint64_t sample_type;
	uint64_t regs_mask;
	bool sample_id_all;
};

struct perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period; /* ns for cpu-clock */
	/* Borrowed from the record: valid only during the callback. */
	const uint64_t *kernel_ips; /* callchain after PERF_CONTEXT_KERNEL, innermost first */
	size_t nr_kernel;
	const uint64_t *user_ips; /* callchain after PERF_CONTEXT_USER, innermost first */
	size_t nr_user;
	size_t nr_callchain; /* all entries, markers included */
	uint64_t regs_abi;   /* 0: no user registers */
	const uint64_t *regs;
	size_t nr_regs;
	const uint8_t *stack; /* stack_size bytes copied from the user stack */
	uint64_t stack_size;
	uint64_t stack_dyn_size; /* how many of them are valid */
	const void *raw;	 /* PERF_SAMPLE_RAW bytes (tracepoints), NULL if none */
	uint32_t raw_size;	 /* as the kernel wrote it (may include padding) */
};

struct perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	bool has_build_id;
	uint8_t build_id_size;
	uint8_t build_id[20];
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	const char *filename; /* borrowed, NUL-terminated */
};

struct perf_comm {
	uint32_t pid, tid;
	bool exec; /* PERF_RECORD_MISC_COMM_EXEC */
	const char *comm;
};

struct perf_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct perf_switch {
	bool out;		/* PERF_RECORD_MISC_SWITCH_OUT */
	uint32_t next_prev_pid; /* SWITCH_CPU_WIDE only */
	uint32_t next_prev_tid;
};

/*
 * One parsed record.  type is the PERF_RECORD_* value; the union member
 * for it is filled; unknown types are delivered with only the header and
 * sample_id fields.  Pointers borrow the record bytes.
 */
struct perf_record {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	bool has_id; /* the sample_id fields below are valid */
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	size_t session; /* perf_loop: index of the session it came from (else 0) */
	union {
		struct perf_sample sample;
		struct perf_mmap2 mmap2;
		struct perf_comm comm;
		struct perf_task task;
		struct perf_switch sw;
		uint64_t lost; /* LOST and LOST_SAMPLES: how many were dropped */
	} u;
};

/*
 * Parse the record at buf[0..len) (len == its header size; buf 8-byte
 * aligned).  Returns 0, or ERR_FORMAT naming the record type and field
 * that does not fit, or ERR_UNSUPPORTED for a sample_type bit not handled.
 */
int perf_record_parse(const struct perf_layout *l, const void *buf, size_t len,
		      struct perf_record *out, struct error *err);

/* Counters of a session; nothing is dropped silently. */
struct perf_stats {
	uint64_t records, samples;
	uint64_t lost;	       /* sum of PERF_RECORD_LOST.lost */
	uint64_t lost_records; /* number of PERF_RECORD_LOST records */
	uint64_t lost_samples; /* sum of PERF_RECORD_LOST_SAMPLES.lost */
	uint64_t throttle, unthrottle;
	uint64_t wrapped; /* records copied through the bounce buffer */
};

struct perf_ring;

/* Owns rings (one per CPU, or one) and, inside them, the fds redirected into them. */
struct perf_session {
	struct perf_layout layout;
	struct perf_ring *rings;
	size_t nr_rings;
	struct perf_stats stats;
	bool hide_task; /* all_threads without task_events: FORK/EXIT are not passed on */
};

/*
 * Open the events and map their rings.  On success *out is filled and the
 * caller owns it (perf_session_close).  On failure nothing is left open;
 * EACCES/EPERM give a message naming what was refused and the sysctl
 * value or capability that allows it.
 */
/* kernel.perf_event_paranoid, or 99 when it cannot be read. */
int perf_event_paranoid(void);

int perf_session_open(struct perf_session *out, const struct perf_open_opts *o, struct error *err);
void perf_session_close(struct perf_session *s);
/* Enable/disable all events, redirected ones included (PERF_EVENT_IOC_ENABLE/DISABLE). */
int perf_session_enable(struct perf_session *s, bool on, struct error *err);

/* Called once per record; a nonzero return stops draining and is returned. */
typedef int (*perf_record_fn)(const struct perf_record *r, void *arg);

/*
 * Read every complete record currently in all rings, parse it and call fn.
 * Returns 0, fn's nonzero return, or ERR_FORMAT for a corrupt ring (bad
 * header size) or record.  No allocation per record.
 */
int perf_session_drain(struct perf_session *s, perf_record_fn fn, void *arg, struct error *err);

/*
 * Called by perf_loop after each round in which every ring was drained
 * once.  Returns 0 to continue, > 0 to stop cleanly, < 0 an error code
 * (perf_loop returns it as is; err is not set by the loop for it).
 */
typedef int (*perf_round_fn)(void *arg);

/*
 * One loop over n sessions: poll() every ring (and every fd redirected
 * into it) of all of them at once with timeout_ms, then drain all rings
 * (records carry perf_record.session = the index into s), then call round
 * (may be NULL).  A ring is done when all of its fds reported POLLHUP (their
 * threads exited); done fds leave the poll set.  The loop ends when *stop is
 * set (stop may be NULL), round returns > 0, or every ring is done; it then
 * drains once more, calls round once more and returns 0 (or that round's
 * negative return).  Returns fn's nonzero return or a drain error (no final
 * drain then), round's negative return, or ERR_IO if poll fails.  EINTR is
 * not an error.
 */
int perf_loop(struct perf_session *const *s, size_t n, int timeout_ms, volatile sig_atomic_t *stop,
	      perf_record_fn fn, perf_round_fn round, void *arg, struct error *err);

/* perf_loop over one session without a round callback. */
int perf_session_loop(struct perf_session *s, int timeout_ms, volatile sig_atomic_t *stop,
		      perf_record_fn fn, void *arg, struct error *err);

/* ---- sched:sched_switch (src/perf/perf_tracepoint.c) ---- */

/*
 * The tracepoint id of sched:sched_switch, read from
 * /sys/kernel/tracing/events/sched/sched_switch/id (then
 * /sys/kernel/debug/tracing/...).  Returns it (>= 0), or ERR_IO saying
 * tracefs is not mounted (file missing) or readable only by root, or
 * ERR_FORMAT.
 */
int perf_sched_switch_id(struct error *err);

struct perf_sched_switch {
	char prev_comm[16]; /* NUL-terminated */
	uint32_t prev_pid, next_pid;
	int64_t prev_state; /* 0 runnable (preempted, maybe | 0x100), 1 S, 2 D, ... */
};

/* Where a field sits in the tracepoint's raw record (from the format file). */
struct perf_tp_field {
	uint16_t offset, size;
	bool is_signed;
};

struct perf_sched_switch_format {
	struct perf_tp_field prev_comm, prev_pid, prev_state, next_pid;
};

/*
 * Parse the text of a tracefs `format` file of sched_switch (NUL-terminated;
 * name is used in messages, e.g. its path).  Returns 0, or ERR_FORMAT naming
 * the line or the missing field.
 */
int perf_sched_switch_format_parse(const char *text, const char *name,
				   struct perf_sched_switch_format *f, struct error *err);

/* Decode raw[0..size) with format f.  ERR_FORMAT when a field runs past size. */
int perf_sched_switch_decode(const struct perf_sched_switch_format *f, const void *raw, size_t size,
			     struct perf_sched_switch *out, struct error *err);

/*
 * Decode a sched_switch sample's raw data (perf_sample.raw/raw_size) with
 * the running kernel's format, read from tracefs on the first call and kept
 * (thread-safe).  Returns 0, ERR_FORMAT for data too short, or the error of
 * reading the format (kept too).
 */
int perf_sched_switch_parse(const void *raw, size_t size, struct perf_sched_switch *out,
			    struct error *err);

#endif
