/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_RECORD_INT_H
#define PLATEAU_RECORD_INT_H

/*
 * Internal to the recorder: record.c (events, processes, stacks),
 * record_warm.c (loading symbols early), record_profile.c (the profile).
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "util/strtab.h"
#include "perf/perf_event.h"
#include "record/record.h"
#include "symbol/symbolize.h"
#include "record/unwind.h"

struct warmer;

#define MAX_USER_FRAMES	  256
#define MAX_KERNEL_FRAMES 128
#define MAX_SYM_FRAMES	  32
#define DEFAULT_STACK	  16384
#define MAP_KERNEL	  1u /* map id of kernel addresses; 0 means no mapping */

/* An executable mapping; interned (path, range, offset) so processes share ids. */
struct rec_map {
	uint64_t start, end, pgoff;
	uint32_t path;	 /* in r->strs */
	uint32_t bid;	 /* hex build-id in r->strs, 0 when unknown */
	uint32_t jitpid; /* anonymous executable memory: the pid whose perf map names it */
	uint32_t delpid; /* a deleted file: the pid whose /proc/PID/map_files still opens it */
	bool del_warm;	 /* ... and the warmer loaded it from there (not part of the key) */
	struct sym_module *sm;
};

struct rec_proc {
	uint32_t pid;
	uint32_t comm;	/* in r->strs */
	uint32_t *maps; /* map ids sorted by start, not overlapping */
	size_t nr_maps, alloc_maps;
	struct unwinder *uw; /* built from maps when first needed */
	bool exited;
};

struct rec_thread {
	uint32_t tid, pid;
	uint32_t comm;
	struct qrec *pending; /* off-CPU: the switch-out sample waiting for its switch-in */
	bool pending_preempt;
	bool out_preempt; /* the last SWITCH_OUT record said "preempted" */
};

/* A record copied out of the ring: the parsed struct plus the bytes it borrowed. */
struct qrec {
	uint64_t time, seq;
	uint32_t session;
	struct perf_record rec;
	int64_t prev_state; /* sched_switch samples; -1 otherwise */
	char str[];	    /* borrowed bytes, copied */
};

enum { SESS_CPU, SESS_OFFCPU, SESS_MAX };

struct recorder {
	struct record_opts o;
	struct record_stats st;
	struct perf_session sess[SESS_MAX];
	bool sess_open[SESS_MAX];
	int sess_index[SESS_MAX]; /* perf_loop index of each open session, -1 if none */
	bool offcpu_tracepoint;
	pid_t target;

	struct strtab strs;   /* comms, paths, build-ids */
	struct strtab keymap; /* interned rec_map keys: id -> maps[id] */
	struct rec_map *maps;
	size_t nr_maps, alloc_maps;

	struct rec_proc *procs;
	size_t nr_procs, alloc_procs;
	struct idhash proc_index;
	struct rec_thread *threads;
	size_t nr_threads, alloc_threads;
	struct idhash thread_index;

	struct qrec **queue;
	size_t nr_queue, alloc_queue;
	uint64_t seq, round_max, prev_round_max, first_time, last_time;

	/* Raw stacks: interned keys, nr_types values each, plus a count of samples. */
	struct strtab stacks;
	int64_t *vals;
	uint64_t *counts;
	size_t alloc_vals;
	unsigned nr_types;
	int t_samples, t_cpu, t_offcpu, t_wall;

	uint8_t *keybuf;
	size_t keyalloc;
	uint64_t ips[MAX_USER_FRAMES];

	struct timespec t0; /* CLOCK_REALTIME at the open: the profile's time */
	uint64_t t0_ns;	    /* CLOCK_MONOTONIC then: elapsed time, -d */
	uint64_t duration_ms;
	record_status_fn status;
	void *status_arg;
	uint64_t last_status;
	char vdso_path[64];
	int vdso_fd;
	struct symbolizer *pre_sym; /* recorder_preload's, until the warmer takes it */
	struct warmer *warm;
};

/* Frame entries in a key: map id (u32) + address (u64), unaligned. */
#define KEY_HDR	  12
#define KEY_FRAME 12

static inline void key_put(uint8_t *k, uint32_t map, uint64_t addr)
{
	memcpy(k, &map, 4);
	memcpy(k + 4, &addr, 8);
}

static inline void key_get(const uint8_t *k, uint32_t *map, uint64_t *addr)
{
	memcpy(map, k, 4);
	memcpy(addr, k + 4, 8);
}

/* record.c */
bool rec_path_is_anon(const char *path);
/* The file to open for mapping m (a deleted one through /proc/PID/map_files); buf holds it. */
const char *rec_map_file(const struct recorder *r, const struct rec_map *m, char *buf, size_t size,
			 bool must_exist);

/* record_warm.c: the thread that loads modules while recording. */
void rec_warm_start(struct recorder *r);
/* Stop it and take its symbolizer (NULL when there is none to take). */
struct symbolizer *rec_warm_stop(struct recorder *r);
/* Hand it the modules of a new stack's n key entries at k. */
void rec_warm_stack(struct recorder *r, const uint8_t *k, size_t n);

#endif
