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
 * starting them, or use enable_on_exec on a freshly forked command).
 * Without inherit it is one event with cpu = -1 (that thread only).
 * pid == -1 means system-wide: one event per online CPU.
 */

struct perf_open_opts {
	pid_t pid;		 /* >= 0: that process (0 = self); -1: system-wide */
	unsigned freq;		 /* cpu-clock samples per second (1..100000) */
	bool callchain;		 /* PERF_SAMPLE_CALLCHAIN */
	uint32_t stack_user;	 /* > 0: REGS_USER + STACK_USER of this many bytes (mult of 8) */
	uint64_t regs_user_mask; /* registers for stack_user (0: arch default for DWARF) */
	bool exclude_kernel;
	bool inherit;	     /* follow children and threads (pid targets) */
	bool enable_on_exec; /* open disabled, start at the target's next exec */
	bool task_events;    /* mmap2 + comm(+exec) + fork/exit records */
	bool mmap_build_id;  /* MMAP2 carries build-ids instead of dev/inode */
	bool context_switch; /* PERF_RECORD_SWITCH(_CPU_WIDE) */
	unsigned ring_pages; /* data pages per ring, a power of two (0: 64) */
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

struct perf_session {
	struct perf_layout layout;
	struct perf_ring *rings;
	size_t nr_rings;
	struct perf_stats stats;
};

/*
 * Open the events and map their rings.  On success *out is filled and the
 * caller owns it (perf_session_close).  On failure nothing is left open;
 * EACCES/EPERM give a message naming what was refused and the sysctl
 * value or capability that allows it.
 */
int perf_session_open(struct perf_session *out, const struct perf_open_opts *o, struct error *err);
void perf_session_close(struct perf_session *s);
/* Enable/disable all events (ioctl PERF_EVENT_IOC_ENABLE/DISABLE). */
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
 * poll() all rings (timeout_ms each round) and drain them until *stop is
 * set (e.g. by a signal handler) or every ring reports POLLHUP (the target
 * exited), then drain what remains.  Returns as perf_session_drain; EINTR
 * is not an error.
 */
int perf_session_loop(struct perf_session *s, int timeout_ms, volatile sig_atomic_t *stop,
		      perf_record_fn fn, void *arg, struct error *err);

#endif
