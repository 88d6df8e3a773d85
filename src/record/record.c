/* SPDX-License-Identifier: MIT */
/*
 * The recorder: perf events in, one profile out.
 *
 * Records from all rings are copied into a queue and handled in time
 * order (perf's "finished round" rule: after each round of draining every
 * ring, what is older than the newest record of the previous round is
 * safe to handle), because a thread's switch-out and switch-in, or a
 * library's mmap and the first sample in it, may sit in different CPUs'
 * rings.  Each sample becomes a raw stack: the process name, the thread
 * name, then (mapping, address) pairs, interned as bytes so each distinct
 * stack is kept once with its values.  Symbolization waits for the end,
 * and names each distinct (mapping, address) once (record_profile.c);
 * modules are loaded early (record_warm.c).
 */
#include "util/common.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "record/record_int.h"

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct recorder *recorder_new(const struct record_opts *opts)
{
	struct recorder *r = xcalloc(1, sizeof(*r));

	r->o = *opts;
	if (!r->o.freq)
		r->o.freq = 99;
	if (!r->o.events)
		r->o.events = REC_EV_CPU;
	if (!r->o.stack_size)
		r->o.stack_size = DEFAULT_STACK;
	strtab_init(&r->strs);
	strtab_init(&r->keymap);
	strtab_init(&r->stacks);
	/* map ids 0 (none) and 1 (kernel) are reserved */
	r->nr_maps = 2;
	r->alloc_maps = 16;
	r->maps = xcalloc(r->alloc_maps, sizeof(*r->maps));
	strtab_intern(&r->keymap, "\1", 1);
	r->t_samples = r->t_cpu = r->t_offcpu = r->t_wall = -1;
	if (r->o.events & REC_EV_CPU) {
		r->t_samples = (int)r->nr_types++;
		r->t_cpu = (int)r->nr_types++;
	}
	if (r->o.events & REC_EV_OFFCPU)
		r->t_offcpu = (int)r->nr_types++;
	if (r->o.events & REC_EV_WALL)
		r->t_wall = (int)r->nr_types++;
	for (int i = 0; i < SESS_MAX; i++)
		r->sess_index[i] = -1;
	return r;
}

static void proc_release(struct rec_proc *p)
{
	free(p->maps);
	unwinder_free(p->uw);
}

void recorder_free(struct recorder *r)
{
	if (!r)
		return;
	symbolizer_free(rec_warm_stop(r));
	symbolizer_free(r->pre_sym);
	for (int i = 0; i < SESS_MAX; i++)
		if (r->sess_open[i])
			perf_session_close(&r->sess[i]);
	for (size_t i = 0; i < r->nr_procs; i++)
		proc_release(&r->procs[i]);
	for (size_t i = 0; i < r->nr_threads; i++)
		free(r->threads[i].pending);
	for (size_t i = 0; i < r->nr_queue; i++)
		free(r->queue[i]);
	if (r->vdso_fd > 0)
		close(r->vdso_fd);
	free(r->queue);
	free(r->procs);
	free(r->threads);
	free(r->maps);
	free(r->vals);
	free(r->counts);
	free(r->keybuf);
	idhash_release(&r->proc_index);
	idhash_release(&r->thread_index);
	strtab_release(&r->strs);
	strtab_release(&r->keymap);
	strtab_release(&r->stacks);
	free(r);
}

const struct record_stats *recorder_stats(const struct recorder *r)
{
	return &r->st;
}

/* ---- processes, threads and mappings ---- */

static struct rec_proc *proc_find(struct recorder *r, uint32_t pid)
{
	uint32_t h = (uint32_t)hash_u64(pid), pos = h, id;

	while ((id = idhash_probe(&r->proc_index, h, &pos)) != IDHASH_NONE)
		if (r->procs[id].pid == pid)
			return &r->procs[id];
	return NULL;
}

static struct rec_proc *proc_get(struct recorder *r, uint32_t pid)
{
	struct rec_proc *p = proc_find(r, pid);

	if (p)
		return p;
	ALLOC_GROW(r->procs, r->nr_procs + 1, r->alloc_procs);
	p = &r->procs[r->nr_procs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	idhash_insert(&r->proc_index, (uint32_t)hash_u64(pid), (uint32_t)r->nr_procs++);
	r->st.processes++;
	return p;
}

static struct rec_thread *thread_get(struct recorder *r, uint32_t tid, uint32_t pid)
{
	uint32_t h = (uint32_t)hash_u64(tid), pos = h, id;
	struct rec_thread *t;

	while ((id = idhash_probe(&r->thread_index, h, &pos)) != IDHASH_NONE)
		if (r->threads[id].tid == tid)
			return &r->threads[id];
	ALLOC_GROW(r->threads, r->nr_threads + 1, r->alloc_threads);
	t = &r->threads[r->nr_threads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	idhash_insert(&r->thread_index, h, (uint32_t)r->nr_threads++);
	return t;
}

bool rec_path_is_anon(const char *path)
{
	return !path[0] || !strncmp(path, "//anon", 6) || !strncmp(path, "[anon", 5) ||
	       !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6) ||
	       !strncmp(path, "/memfd:", 7);
}

static bool path_is_deleted(const char *path)
{
	size_t len = strlen(path);

	return len > 10 && !strcmp(path + len - 10, " (deleted)");
}

/*
 * The file to read for mapping m: a deleted file is still open through
 * /proc/PID/map_files while the process lives (root, or CAP_SYS_ADMIN),
 * so upgraded-while-running services keep their names.
 */
const char *rec_map_file(const struct recorder *r, const struct rec_map *m, char *buf, size_t size,
			 bool must_exist)
{
	if (m->delpid) {
		snprintf(buf, size, "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, m->delpid, m->start,
			 m->end);
		if (!must_exist || !access(buf, R_OK))
			return buf;
	}
	return strtab_str(&r->strs, m->path);
}

static uint32_t map_intern(struct recorder *r, const char *path, uint64_t start, uint64_t end,
			   uint64_t pgoff, const char *bid, uint32_t pid)
{
	struct rec_map m = {.start = start, .end = end, .pgoff = pgoff};
	uint32_t id;

	m.path = strtab_intern_str(&r->strs, path);
	m.bid = bid ? strtab_intern_str(&r->strs, bid) : 0;
	m.jitpid = rec_path_is_anon(path) ? pid : 0;
	m.delpid = path_is_deleted(path) ? pid : 0;
	id = strtab_intern(&r->keymap, (const char *)&m, offsetof(struct rec_map, del_warm));
	if (id < r->nr_maps)
		return id;
	ALLOC_GROW(r->maps, id + 1, r->alloc_maps);
	r->maps[id] = m;
	r->nr_maps = id + 1;
	return id;
}

/* Insert map id into p's sorted list, dropping whatever it overlaps (munmap is not reported). */
static void proc_add_map(struct recorder *r, struct rec_proc *p, uint32_t id)
{
	const struct rec_map *m = &r->maps[id];
	size_t lo = 0, hi = p->nr_maps, keep = 0;

	for (size_t i = 0; i < p->nr_maps; i++) {
		const struct rec_map *o = &r->maps[p->maps[i]];

		if (o->end <= m->start || o->start >= m->end)
			p->maps[keep++] = p->maps[i];
	}
	p->nr_maps = keep;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->maps[p->maps[mid]].start < m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	ALLOC_GROW(p->maps, p->nr_maps + 1, p->alloc_maps);
	memmove(p->maps + lo + 1, p->maps + lo, (p->nr_maps - lo) * sizeof(*p->maps));
	p->maps[lo] = id;
	p->nr_maps++;
	if (p->uw && !rec_path_is_anon(strtab_str(&r->strs, m->path))) {
		char buf[96];

		unwinder_add_map(p->uw, rec_map_file(r, m, buf, sizeof(buf), true), m->start,
				 m->end, m->pgoff);
	}
}

static uint32_t proc_map_of(const struct recorder *r, const struct rec_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nr_maps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct rec_map *m = &r->maps[p->maps[mid]];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return p->maps[mid];
	}
	return 0;
}

static void proc_reset(struct rec_proc *p)
{
	p->nr_maps = 0;
	unwinder_free(p->uw);
	p->uw = NULL;
}

static void read_comm(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		n = 0;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Read /proc/PID/maps: the process's executable mappings as perf would have reported them. */
static void proc_synthesize(struct recorder *r, uint32_t pid)
{
	struct rec_proc *p = proc_get(r, pid);
	char path[64], line[4352], comm[64];
	FILE *f;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	read_comm(path, comm, sizeof(comm));
	if (comm[0])
		p->comm = strtab_intern_str(&r->strs, comm);
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long start, end, off;
			char perms[8];
			int n = 0;

			if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &off,
				   &n) < 4 ||
			    perms[2] != 'x')
				continue;
			while (line[n] == ' ')
				n++;
			line[strcspn(line, "\n")] = '\0';
			proc_add_map(r, p, map_intern(r, line + n, start, end, off, NULL, pid));
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (*end || !tid || tid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%lu/comm", pid, tid);
		read_comm(path, comm, sizeof(comm));
		if (comm[0])
			thread_get(r, (uint32_t)tid, pid)->comm = strtab_intern_str(&r->strs, comm);
	}
	closedir(d);
}

static void synthesize_all(struct recorder *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!*end && pid && pid <= UINT32_MAX)
			proc_synthesize(r, (uint32_t)pid);
	}
	closedir(d);
}

/* ---- opening ---- */

static int open_session(struct recorder *r, int which, struct perf_open_opts *po, struct error *err)
{
	int ret = perf_session_open(&r->sess[which], po, err);

	if (!ret)
		r->sess_open[which] = true;
	return ret;
}

static void base_opts(const struct recorder *r, struct perf_open_opts *po, pid_t pid, bool on_exec)
{
	memset(po, 0, sizeof(*po));
	po->pid = pid;
	po->freq = r->o.freq;
	po->callchain = true;
	po->clock_monotonic = true; /* comparable with now_ns() */
	if (r->o.cg != REC_CG_FP)
		po->stack_user = r->o.stack_size;
	po->exclude_kernel = r->o.user_only;
	po->inherit = pid > 0;
	po->enable_on_exec = on_exec;
	po->all_threads = pid > 0 && !on_exec;
	/*
	 * A stack copy makes each sample ~16 KiB: give each CPU's ring 512 KiB
	 * (1 MiB at high rates), about 30 ms of samples at 999 Hz, so a
	 * descheduled recorder does not lose records.
	 */
	po->ring_pages = r->o.ring_pages  ? r->o.ring_pages
			 : po->stack_user ? (r->o.freq >= 500 ? 256 : 128)
					  : 64;
}

static int open_cpu(struct recorder *r, pid_t pid, bool on_exec, struct error *err)
{
	struct perf_open_opts po;
	int ret;

	base_opts(r, &po, pid, on_exec);
	po.kind = PERF_EV_CPU_CLOCK;
	po.task_events = true;
	po.mmap_build_id = true;
	ret = open_session(r, SESS_CPU, &po, err);
	if (ret && !po.exclude_kernel && pid >= 0) {
		/* Kernel stacks refused: keep what an unprivileged user may have. */
		struct error e2 = ERROR_INIT;

		po.exclude_kernel = true;
		if (!open_session(r, SESS_CPU, &po, &e2)) {
			snprintf(r->st.note, sizeof(r->st.note),
				 "kernel stacks refused (kernel.perf_event_paranoid is %d; allow "
				 "them "
				 "with `sysctl kernel.perf_event_paranoid=1` or CAP_PERFMON): "
				 "recording user stacks only",
				 perf_event_paranoid());
			r->o.user_only = true;
			*err = (struct error)ERROR_INIT;
			ret = 0;
		}
	}
	return ret;
}

static int open_offcpu(struct recorder *r, pid_t pid, bool on_exec, struct error *err)
{
	struct error tp = ERROR_INIT, cs = ERROR_INIT;
	struct perf_open_opts po;

	base_opts(r, &po, pid, on_exec);
	po.context_switch = true;
	po.task_events = !r->sess_open[SESS_CPU];
	po.mmap_build_id = true;
	po.kind = PERF_EV_SCHED_SWITCH;
	if (!open_session(r, SESS_OFFCPU, &po, &tp)) {
		r->offcpu_tracepoint = true;
		r->st.offcpu_source = "sched:sched_switch";
		return 0;
	}
	debug(DEBUG_RECORD, "off-CPU: sched:sched_switch refused (%s); trying context-switches",
	      tp.msg);
	po.kind = PERF_EV_CONTEXT_SWITCHES;
	if (!open_session(r, SESS_OFFCPU, &po, &cs)) {
		r->st.offcpu_source = "context-switches";
		return 0;
	}
	/* The context-switches refusal names the smaller privilege that suffices. */
	return error_set(err, cs.code, "off-CPU: %s", cs.msg);
}

int recorder_open(struct recorder *r, pid_t pid, bool start_on_exec, struct error *err)
{
	int ret = 0;

	if (pid == 0 || pid < -1)
		return error_set(err, ERR_USAGE, "record: bad target pid %d", (int)pid);
	r->target = pid;
	if (r->o.events & (REC_EV_CPU | REC_EV_WALL))
		ret = open_cpu(r, pid, start_on_exec, err);
	if (!ret && r->o.events & (REC_EV_OFFCPU | REC_EV_WALL))
		ret = open_offcpu(r, pid, start_on_exec, err);
	if (ret) {
		for (int i = 0; i < SESS_MAX; i++)
			if (r->sess_open[i]) {
				perf_session_close(&r->sess[i]);
				r->sess_open[i] = false;
			}
		return ret;
	}
	r->st.kernel_stacks = !r->o.user_only;
	if (pid > 0 && !start_on_exec)
		proc_synthesize(r, (uint32_t)pid);
	else if (pid < 0)
		synthesize_all(r);
	clock_gettime(CLOCK_REALTIME, &r->t0);
	r->t0_ns = now_ns();
	debug(DEBUG_RECORD, "recording %s %d%s: on-CPU %s, off-CPU %s, %zu processes known",
	      pid < 0 ? "every CPU, pid" : "pid", (int)pid, start_on_exec ? " from its exec" : "",
	      r->sess_open[SESS_CPU] ? "on" : "off",
	      r->st.offcpu_source ? r->st.offcpu_source : "off", r->nr_procs);
	return 0;
}

/* ---- the queue ---- */

static size_t arr_bytes(size_t n)
{
	return n * sizeof(uint64_t);
}

/* Copy r (and what it borrows) into one allocation. */
static struct qrec *qrec_copy(const struct perf_record *rec, uint32_t session)
{
	const struct perf_sample *s = &rec->u.sample;
	size_t extra = 0;
	struct qrec *q;
	char *p;

	if (rec->type == PERF_RECORD_SAMPLE) {
		extra = arr_bytes(s->nr_kernel) + arr_bytes(s->nr_user) + arr_bytes(s->nr_regs) +
			(size_t)s->stack_dyn_size + s->raw_size + 16;
	} else if (rec->type == PERF_RECORD_MMAP2) {
		extra = strlen(rec->u.mmap2.filename) + 1;
	} else if (rec->type == PERF_RECORD_COMM) {
		extra = strlen(rec->u.comm.comm) + 1;
	}
	q = xmalloc(st_add(sizeof(*q), extra));
	q->rec = *rec;
	q->session = session;
	q->time = rec->type == PERF_RECORD_SAMPLE ? s->time : rec->time;
	q->prev_state = -1;
	p = q->str;
#define COPY_ARR(field, n)                                                   \
	do {                                                                 \
		if (n) {                                                     \
			memcpy(p, s->field, arr_bytes(n));                   \
			q->rec.u.sample.field = (const uint64_t *)(void *)p; \
			p += arr_bytes(n);                                   \
		}                                                            \
	} while (0)
	if (rec->type == PERF_RECORD_SAMPLE) {
		COPY_ARR(kernel_ips, s->nr_kernel);
		COPY_ARR(user_ips, s->nr_user);
		COPY_ARR(regs, s->nr_regs);
		if (s->stack_dyn_size) {
			memcpy(p, s->stack, (size_t)s->stack_dyn_size);
			q->rec.u.sample.stack = (const uint8_t *)p;
			q->rec.u.sample.stack_size = s->stack_dyn_size;
			p += s->stack_dyn_size;
		} else {
			q->rec.u.sample.stack = NULL;
			q->rec.u.sample.stack_size = 0;
		}
		if (s->raw_size) {
			memcpy(p, s->raw, s->raw_size);
			q->rec.u.sample.raw = p;
		}
	} else if (rec->type == PERF_RECORD_MMAP2) {
		memcpy(p, rec->u.mmap2.filename, extra);
		q->rec.u.mmap2.filename = p;
	} else if (rec->type == PERF_RECORD_COMM) {
		memcpy(p, rec->u.comm.comm, extra);
		q->rec.u.comm.comm = p;
	}
#undef COPY_ARR
	return q;
}

/* Records the kernel dropped, by kind and by ring (the remedy differs). */
static void count_lost(struct recorder *r, const struct perf_record *rec, uint32_t session)
{
	if (rec->type == PERF_RECORD_LOST)
		r->st.lost += rec->u.lost;
	else
		r->st.lost_samples += rec->u.lost;
	if (session == SESS_OFFCPU)
		r->st.lost_offcpu += rec->u.lost;
}

static int on_record(const struct perf_record *rec, void *arg)
{
	struct recorder *r = arg;
	uint32_t session = SESS_CPU;
	struct qrec *q;

	for (int i = 0; i < SESS_MAX; i++)
		if (r->sess_index[i] == (int)rec->session)
			session = (uint32_t)i;
	switch (rec->type) {
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: count_lost(r, rec, session); return 0;
	case PERF_RECORD_THROTTLE: r->st.throttled++; return 0;
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: break;
	default: return 0;
	}
	q = qrec_copy(rec, session);
	q->seq = r->seq++;
	if (q->time > r->round_max)
		r->round_max = q->time;
	ALLOC_GROW(r->queue, r->nr_queue + 1, r->alloc_queue);
	r->queue[r->nr_queue++] = q;
	return 0;
}

static int qrec_cmp(const void *a, const void *b)
{
	const struct qrec *x = *(const struct qrec *const *)a, *y = *(const struct qrec *const *)b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- stacks ---- */

static void key_reserve(struct recorder *r, size_t n)
{
	if (n > r->keyalloc) {
		r->keyalloc = n * 2;
		r->keybuf = xrealloc(r->keybuf, r->keyalloc);
	}
}

static struct unwinder *proc_unwinder(struct recorder *r, struct rec_proc *p)
{
	if (p->uw)
		return p->uw;
	p->uw = unwinder_new();
	for (size_t i = 0; i < p->nr_maps; i++) {
		const struct rec_map *m = &r->maps[p->maps[i]];
		char buf[96];

		if (!rec_path_is_anon(strtab_str(&r->strs, m->path)))
			unwinder_add_map(p->uw, rec_map_file(r, m, buf, sizeof(buf), true),
					 m->start, m->end, m->pgoff);
	}
	return p->uw;
}

/*
 * The kernel's frame-pointer chain into r->ips, cut before the first
 * return address in no mapping of the process: past code without frame
 * pointers (clone3, most of Debian's libc) the kernel follows whatever rbp
 * held, and a sample in clone3 carried 118 such [unknown] frames.  The
 * sampled IP itself is kept, and nothing is cut when no mapping is known.
 */
static size_t fp_chain(struct recorder *r, const struct rec_proc *p, const uint64_t *ips, size_t n)
{
	size_t i = 1;

	if (p->nr_maps)
		while (i < n && proc_map_of(r, p, ips[i]))
			i++;
	else
		i = n;
	n = MIN(i, n);
	memcpy(r->ips, ips, n * sizeof(*r->ips));
	return n;
}

/* The user frames of a sample into r->ips; returns how many. */
static size_t user_stack(struct recorder *r, struct rec_proc *p, const struct perf_sample *s)
{
	size_t n = 0;

	if (r->o.cg != REC_CG_FP && s->regs_abi && s->nr_regs && s->stack) {
		struct error e = {0};
		int got = unwinder_unwind(
			proc_unwinder(r, p), s->tid, s->regs,
			r->sess[SESS_CPU].layout.regs_mask ? r->sess[SESS_CPU].layout.regs_mask
							   : r->sess[SESS_OFFCPU].layout.regs_mask,
			s->stack, (size_t)s->stack_size, r->ips, MAX_USER_FRAMES, &e);

		n = got > 0 ? (size_t)got : 0;
		if (n <= 1)
			r->st.unwind_failed++;
	}
	if (n <= 1 && r->o.cg != REC_CG_DWARF && s->nr_user > n) {
		if (r->o.cg == REC_CG_AUTO)
			r->st.fp_fallback++;
		n = fp_chain(r, p, s->user_ips, MIN(s->nr_user, (size_t)MAX_USER_FRAMES));
	}
	if (!n && s->nr_kernel == 0 && s->ip) {
		r->ips[0] = s->ip;
		n = 1;
	}
	return n;
}

static int64_t *stack_values(struct recorder *r, uint32_t id)
{
	if (id >= r->alloc_vals) {
		size_t old = r->alloc_vals, n = MAX((size_t)id + 1, old * 2);

		r->vals = xrealloc(r->vals, st_mult(n, r->nr_types * sizeof(*r->vals)));
		r->counts = xrealloc(r->counts, st_mult(n, sizeof(*r->counts)));
		memset(r->vals + old * r->nr_types, 0, (n - old) * r->nr_types * sizeof(*r->vals));
		memset(r->counts + old, 0, (n - old) * sizeof(*r->counts));
		r->alloc_vals = n;
	}
	return r->vals + (size_t)id * r->nr_types;
}

static void add_value(int64_t *v, int type, uint64_t x)
{
	if (type >= 0 && (uint64_t)INT64_MAX - (uint64_t)v[type] >= x)
		v[type] += (int64_t)x;
}

/*
 * Intern the sample's stack and return its values.  The key: process
 * comm, thread comm, number of kernel frames, then kernel frames and user
 * frames, each innermost first.
 */
static int64_t *sample_stack(struct recorder *r, const struct perf_sample *s, uint32_t *idp)
{
	struct rec_proc *p = proc_get(r, s->pid);
	struct rec_thread *t = thread_get(r, s->tid, s->pid);
	size_t nk = MIN(s->nr_kernel, (size_t)MAX_KERNEL_FRAMES), nu, len;
	uint32_t hdr[3], id, nr;
	uint8_t *k;

	if (!p->nr_maps && !p->exited && !p->comm)
		proc_synthesize(r, s->pid); /* a process we have not heard of */
	nu = user_stack(r, p, s);
	len = KEY_HDR + (nk + nu) * KEY_FRAME;
	key_reserve(r, len);
	k = r->keybuf;
	hdr[0] = p->comm;
	hdr[1] = t->comm;
	hdr[2] = (uint32_t)nk;
	memcpy(k, hdr, sizeof(hdr));
	k += KEY_HDR;
	for (size_t i = 0; i < nk; i++, k += KEY_FRAME)
		key_put(k, MAP_KERNEL, s->kernel_ips[i]);
	for (size_t i = 0; i < nu; i++, k += KEY_FRAME)
		key_put(k, proc_map_of(r, p, r->ips[i]), r->ips[i]);
	nr = r->stacks.nr;
	id = strtab_intern(&r->stacks, (const char *)r->keybuf, len);
	if (r->stacks.nr != nr)
		rec_warm_stack(r, r->keybuf + KEY_HDR, nk + nu); /* a new stack: new modules? */
	*idp = id;
	return stack_values(r, id);
}

static void handle_cpu_sample(struct recorder *r, const struct perf_sample *s)
{
	uint32_t id;
	int64_t *v = sample_stack(r, s, &id);

	r->counts[id]++;
	add_value(v, r->t_samples, 1);
	add_value(v, r->t_cpu, s->period);
	add_value(v, r->t_wall, s->period);
}

/* A switch-out sample of t is paired with its switch-in at time t_in. */
static void offcpu_charge(struct recorder *r, struct rec_thread *t, uint64_t t_in)
{
	struct qrec *q = t->pending;
	uint64_t dur;
	/* state R (0, or TASK_REPORT_MAX when preempted) is runnable: CPU contention */
	bool preempt = q->prev_state >= 0 ? (q->prev_state & 0xff) == 0 : t->pending_preempt;
	uint32_t id;
	int64_t *v;

	t->pending = NULL;
	if (t_in <= q->time)
		goto out;
	dur = t_in - q->time;
	if (dur < r->o.min_block_ns || (preempt && r->t_wall < 0))
		goto out;
	v = sample_stack(r, &q->rec.u.sample, &id);
	r->counts[id]++;
	if (!preempt)
		add_value(v, r->t_offcpu, dur);
	add_value(v, r->t_wall, dur);
out:
	free(q);
}

/* Takes ownership of q. */
static void handle_offcpu_sample(struct recorder *r, struct qrec *q)
{
	const struct perf_sample *s = &q->rec.u.sample;
	struct rec_thread *t;

	if (r->offcpu_tracepoint && s->raw) {
		struct perf_sched_switch ss;
		struct error e = {0};

		if (perf_sched_switch_parse(s->raw, s->raw_size, &ss, &e)) {
			r->st.bad_records++;
			free(q);
			return;
		}
		q->prev_state = ss.prev_state;
		/* Exit states (X, Z): the thread is gone, it will not come back. */
		if (ss.prev_state & 0x30) {
			free(q);
			return;
		}
	}
	t = thread_get(r, s->tid, s->pid);
	free(t->pending);
	t->pending = q;
	t->pending_preempt = t->out_preempt;
}

static void handle_switch(struct recorder *r, const struct perf_record *rec)
{
	struct rec_thread *t;

	if (!rec->has_id || !rec->tid)
		return;
	t = thread_get(r, rec->tid, rec->pid);
	if (rec->u.sw.out) {
		t->out_preempt = rec->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		if (t->pending && t->pending->time <= rec->time)
			t->pending_preempt = t->out_preempt;
	} else if (t->pending) {
		offcpu_charge(r, t, rec->time);
	}
}

static void handle_mmap2(struct recorder *r, const struct perf_record *rec)
{
	const struct perf_mmap2 *m = &rec->u.mmap2;
	char bid[41];

	if (!(m->prot & PROT_EXEC) || m->len == 0 || m->addr + m->len < m->addr)
		return;
	if (m->has_build_id) {
		for (unsigned i = 0; i < m->build_id_size && i < 20; i++)
			snprintf(bid + 2 * i, 3, "%02x", m->build_id[i]);
		bid[2 * MIN(m->build_id_size, 20)] = '\0';
	}
	proc_add_map(r, proc_get(r, m->pid),
		     map_intern(r, m->filename, m->addr, m->addr + m->len, m->pgoff,
				m->has_build_id && m->build_id_size ? bid : NULL, m->pid));
}

static void handle_comm(struct recorder *r, const struct perf_record *rec)
{
	const struct perf_comm *c = &rec->u.comm;
	uint32_t id = strtab_intern_str(&r->strs, c->comm);

	thread_get(r, c->tid, c->pid)->comm = id;
	if (c->pid == c->tid || c->exec) {
		struct rec_proc *p = proc_get(r, c->pid);

		if (c->exec)
			proc_reset(p);
		p->comm = id;
	}
}

static void handle_fork(struct recorder *r, const struct perf_record *rec)
{
	const struct perf_task *t = &rec->u.task;
	struct rec_proc *parent, *child;
	uint32_t comm;

	/* Read before the next thread_get: adding the child may move the table. */
	comm = thread_get(r, t->ptid, t->ppid)->comm;
	thread_get(r, t->tid, t->pid)->comm = comm;
	if (t->pid == t->ppid)
		return; /* a new thread */
	child = proc_get(r, t->pid);
	parent = proc_find(r, t->ppid);
	proc_reset(child);
	child->exited = false;
	if (!parent)
		return;
	child->comm = parent->comm;
	ALLOC_GROW(child->maps, parent->nr_maps, child->alloc_maps);
	if (parent->nr_maps)
		memcpy(child->maps, parent->maps, parent->nr_maps * sizeof(*child->maps));
	child->nr_maps = parent->nr_maps;
}

static void handle_exit(struct recorder *r, const struct perf_record *rec)
{
	const struct perf_task *t = &rec->u.task;
	struct rec_thread *th = thread_get(r, t->tid, t->pid);

	free(th->pending);
	th->pending = NULL;
	if (t->pid == t->tid) {
		struct rec_proc *p = proc_get(r, t->pid);

		p->exited = true;
		unwinder_free(p->uw);
		p->uw = NULL;
	}
}

/* Handle one queued record; takes ownership of q. */
static void handle(struct recorder *r, struct qrec *q)
{
	const struct perf_record *rec = &q->rec;

	if (q->time > r->last_time)
		r->last_time = q->time;
	if (!r->first_time || q->time < r->first_time)
		r->first_time = q->time;
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		r->st.samples++;
		if (q->session == SESS_OFFCPU) {
			handle_offcpu_sample(r, q);
			return;
		}
		handle_cpu_sample(r, &rec->u.sample);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: handle_switch(r, rec); break;
	case PERF_RECORD_MMAP2: handle_mmap2(r, rec); break;
	case PERF_RECORD_COMM: handle_comm(r, rec); break;
	case PERF_RECORD_FORK: handle_fork(r, rec); break;
	case PERF_RECORD_EXIT: handle_exit(r, rec); break;
	}
	free(q);
}

/* Handle queued records up to time limit (all when limit is UINT64_MAX). */
static void flush(struct recorder *r, uint64_t limit)
{
	size_t i, n = r->nr_queue;

	if (!n)
		return;
	qsort(r->queue, n, sizeof(*r->queue), qrec_cmp);
	for (i = 0; i < n && r->queue[i]->time <= limit; i++)
		handle(r, r->queue[i]);
	memmove(r->queue, r->queue + i, (n - i) * sizeof(*r->queue));
	r->nr_queue = n - i;
}

static int on_round(void *arg)
{
	struct recorder *r = arg;
	uint64_t elapsed = now_ns() - r->last_status;

	flush(r, r->prev_round_max);
	r->prev_round_max = r->round_max;
	if (r->status && elapsed >= 250000000u) {
		r->last_status = now_ns();
		r->status(&r->st, r->last_status - r->t0_ns, r->status_arg);
	}
	if (r->duration_ms && now_ns() - r->t0_ns >= r->duration_ms * 1000000u)
		return 1;
	if (r->target > 0 && kill(r->target, 0) && errno == ESRCH)
		return 1;
	return 0;
}

int recorder_run(struct recorder *r, volatile sig_atomic_t *stop, uint64_t duration_ms,
		 record_status_fn status, void *arg, struct error *err)
{
	struct perf_session *list[SESS_MAX];
	size_t n = 0;
	int ret;

	for (int i = 0; i < SESS_MAX; i++)
		if (r->sess_open[i]) {
			r->sess_index[i] = (int)n;
			list[n++] = &r->sess[i];
		}
	if (!n)
		return error_set(err, ERR_USAGE, "record: no events open");
	rec_warm_start(r);
	r->duration_ms = duration_ms;
	r->status = status;
	r->status_arg = arg;
	r->last_status = now_ns();
	ret = perf_loop(list, n, 100, stop, on_record, on_round, r, err);
	recorder_finish(r, now_ns());
	return ret < 0 ? ret : 0;
}

void recorder_finish(struct recorder *r, uint64_t end_ns)
{
	flush(r, UINT64_MAX);
	r->st.duration_ns = r->t0_ns ? now_ns() - r->t0_ns : 0;
	/* Threads still blocked at the end: charged up to the end. */
	for (size_t i = 0; i < r->nr_threads; i++)
		if (r->threads[i].pending) {
			r->st.offcpu_unpaired++;
			offcpu_charge(r, &r->threads[i], MAX(end_ns, r->last_time));
		}
	debug(DEBUG_RECORD,
	      "done: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64 " bad records, %" PRIu64
	      " throttled, %" PRIu64 " processes, %" PRIu64 " stacks DWARF could not walk (%" PRIu64
	      " by frame pointers)",
	      r->st.samples, r->st.lost + r->st.lost_samples, r->st.bad_records, r->st.throttled,
	      r->st.processes, r->st.unwind_failed, r->st.fp_fallback);
}

void recorder_feed(struct recorder *r, const struct perf_record *rec, bool offcpu)
{
	struct perf_record copy = *rec;

	r->sess_index[SESS_CPU] = 0;
	r->sess_index[SESS_OFFCPU] = 1;
	copy.session = offcpu ? 1 : 0;
	on_record(&copy, r);
}

void recorder_feed_round(struct recorder *r)
{
	flush(r, r->prev_round_max);
	r->prev_round_max = r->round_max;
}
