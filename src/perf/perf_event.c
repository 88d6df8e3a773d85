/* SPDX-License-Identifier: MIT */
/* Opening perf events on the raw syscall, and parsing their records. */
#include "util/common.h"

#include <dirent.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf/perf_event.h"
#include "perf/perf_ring.h"
#include "util/cursor.h"

#define BASE_SAMPLE_TYPE \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define HANDLED_SAMPLE_TYPE                                                                        \
	(BASE_SAMPLE_TYPE | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |           \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER)

#if defined(__x86_64__)
#define DEFAULT_REGS_MASK 0xff0fffULL /* all but DS, ES, FS, GS */
#elif defined(__aarch64__)
#define DEFAULT_REGS_MASK ((1ULL << 33) - 1)
#else
#define DEFAULT_REGS_MASK 0ULL
#endif

/* ---- opening ---- */

static int sys_perf_event_open(const struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

int perf_event_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = 99;

	if (!f)
		return 99;
	if (fscanf(f, "%d", &v) != 1)
		v = 99;
	fclose(f);
	return v;
}

static const char *kind_name(enum perf_event_kind k)
{
	switch (k) {
	case PERF_EV_CPU_CLOCK: return "cpu-clock";
	case PERF_EV_CONTEXT_SWITCHES: return "context-switches";
	case PERF_EV_SCHED_SWITCH: return "sched:sched_switch";
	}
	return "?";
}

/* What was refused, and the perf_event_paranoid value that allows it. */
static const char *refused_what(const struct perf_open_opts *o, int *need)
{
	if (o->kind == PERF_EV_SCHED_SWITCH) {
		*need = -1;
		return "tracepoint sampling (raw data)";
	}
	if (o->pid < 0) {
		*need = 0;
		return "system-wide profiling";
	}
	if (o->kind == PERF_EV_CONTEXT_SWITCHES) {
		*need = 1;
		return "context-switch samples of a process (the event fires in kernel mode)";
	}
	*need = o->exclude_kernel ? 2 : 1;
	return o->exclude_kernel ? "profiling a process (user space only)"
				 : "profiling a process including kernel stacks";
}

static int open_refused(const struct perf_open_opts *o, pid_t pid, int cpu, int errnum,
			struct error *err)
{
	int need, cur = perf_event_paranoid();
	const char *what = refused_what(o, &need);
	bool hint = o->kind == PERF_EV_CPU_CLOCK && o->pid >= 0 && !o->exclude_kernel;

	return error_set(err, ERR_IO,
			 "perf_event_open(%s, pid %d, cpu %d): %s refused (%s): "
			 "kernel.perf_event_paranoid is %d, allow it with `sysctl "
			 "kernel.perf_event_paranoid=%d` or run with CAP_PERFMON "
			 "(CAP_SYS_ADMIN before Linux 5.8)%s",
			 kind_name(o->kind), (int)pid, cpu, what, strerror(errnum), cur, need,
			 hint ? " (or pass exclude_kernel)" : "");
}

/* The open failed with errno e: a one-line message for it. */
static int open_failed(const struct perf_open_opts *o, pid_t pid, int cpu, int e, struct error *err)
{
	if (e == EACCES || e == EPERM)
		return open_refused(o, pid, cpu, e, err);
	return error_set(err, ERR_IO, "perf_event_open(%s, pid %d, cpu %d): %s%s",
			 kind_name(o->kind), (int)pid, cpu, strerror(e),
			 e == EMFILE ? " (one fd per thread and CPU: raise `ulimit -n`)" : "");
}

/* type/config/period of the event kind. */
static int attr_kind(struct perf_event_attr *a, const struct perf_open_opts *o, struct error *err)
{
	int id;

	switch (o->kind) {
	case PERF_EV_CPU_CLOCK:
		if (o->freq == 0 || o->freq > 100000)
			return error_set(err, ERR_USAGE,
					 "perf: frequency %u out of range 1..100000", o->freq);
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
		a->freq = 1;
		a->sample_freq = o->freq;
		a->exclude_kernel = o->exclude_kernel;
		return 0;
	case PERF_EV_CONTEXT_SWITCHES:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a->sample_period = 1;
		return 0; /* fires in kernel mode: exclude_kernel would drop every sample */
	case PERF_EV_SCHED_SWITCH:
		id = perf_sched_switch_id(err);
		if (id < 0)
			return id;
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = (uint64_t)id;
		a->sample_period = 1;
		a->sample_type |= PERF_SAMPLE_RAW;
		return 0;
	}
	return error_set(err, ERR_USAGE, "perf: unknown event kind %d", (int)o->kind);
}

static int attr_stack(struct perf_event_attr *a, const struct perf_open_opts *o, struct error *err)
{
	if (o->stack_user % 8 || o->stack_user > 65528)
		return error_set(err, ERR_USAGE,
				 "perf: stack_user %u not a multiple of 8 up to 65528",
				 o->stack_user);
	a->sample_regs_user = o->regs_user_mask ? o->regs_user_mask : DEFAULT_REGS_MASK;
	if (!a->sample_regs_user)
		return error_set(err, ERR_USAGE,
				 "perf: stack_user needs regs_user_mask on this arch");
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_stack_user = o->stack_user;
	return 0;
}

static int attr_build(struct perf_event_attr *a, const struct perf_open_opts *o,
		      struct perf_layout *l, struct error *err)
{
	int ret;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_type = BASE_SAMPLE_TYPE;
	if (o->all_threads && (o->pid < 0 || o->enable_on_exec))
		return error_set(err, ERR_USAGE, "perf: all_threads needs a pid target%s",
				 o->enable_on_exec ? " without enable_on_exec" : "");
	ret = attr_kind(a, o, err);
	if (ret)
		return ret;
	if (o->callchain)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->stack_user && (ret = attr_stack(a, o, err)))
		return ret;
	a->sample_id_all = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = o->exclude_kernel;
	a->inherit = o->pid >= 0 && (o->inherit || o->all_threads);
	a->disabled = o->enable_on_exec;
	a->enable_on_exec = o->enable_on_exec;
	if (o->task_events) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->build_id = o->mmap_build_id;
	}
	/* FORK records tell which new threads were inherited (hidden unless task_events) */
	a->task |= o->all_threads;
	a->context_switch = o->context_switch;
	if (o->clock_monotonic) {
		a->use_clockid = 1;
		a->clockid = CLOCK_MONOTONIC;
	}
	a->wakeup_events = 0;
	a->watermark = 1;
	l->sample_type = a->sample_type;
	l->regs_mask = a->sample_regs_user;
	l->sample_id_all = true;
	return 0;
}

static int online_cpus(int **cpus, size_t *nr, struct error *err)
{
	const char *path = "/sys/devices/system/cpu/online";
	FILE *f = fopen(path, "r");
	size_t alloc = 0;
	int a, b;
	char sep;

	*cpus = NULL;
	*nr = 0;
	if (!f)
		return error_set(err, ERR_IO, "%s: %s", path, strerror(errno));
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = (char)fgetc(f);
		}
		if (a < 0 || b < a || b > 65535)
			break;
		for (int c = a; c <= b; c++) {
			ALLOC_GROW(*cpus, *nr + 1, alloc);
			(*cpus)[(*nr)++] = c;
		}
		if (sep != ',')
			break;
	}
	fclose(f);
	if (*nr == 0)
		return error_set(err, ERR_FORMAT, "%s: no CPU list", path);
	return 0;
}

/* What perf_session_open works from, shared by the per-CPU and per-thread openers. */
struct opener {
	struct perf_event_attr attr;
	const struct perf_open_opts *o;
	unsigned pages;
	int *cpus; /* NULL: one event with cpu -1 */
	size_t nr_cpus;
};

/* One event per CPU (or one with cpu -1) for o->pid. */
static int open_per_cpu(struct perf_session *s, struct opener *op, struct error *err)
{
	size_t nr = op->cpus ? op->nr_cpus : 1;
	int ret = 0;

	s->rings = xcalloc(nr, sizeof(*s->rings));
	for (size_t i = 0; i < nr; i++) {
		int cpu = op->cpus ? op->cpus[i] : -1;
		int fd = sys_perf_event_open(&op->attr, op->o->pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return open_failed(op->o, op->o->pid, cpu, errno, err);
		debug2(DEBUG_PERF, "perf_event_open(%s, pid %d, cpu %d): fd %d",
		       kind_name(op->o->kind), (int)op->o->pid, cpu, fd);
		ret = perf_ring_map(&s->rings[i], fd, cpu, op->pages, err);
		if (ret)
			return ret;
		s->nr_rings++;
	}
	return 0;
}

/* ---- all_threads: one event per (thread, CPU), one ring per CPU ---- */

struct tidset {
	pid_t *v; /* sorted when used as "seen" */
	size_t nr, alloc;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static bool tidset_has(const struct tidset *t, pid_t tid)
{
	return t->nr && bsearch(&tid, t->v, t->nr, sizeof(*t->v), cmp_pid);
}

static void tidset_add(struct tidset *t, pid_t tid)
{
	ALLOC_GROW(t->v, t->nr + 1, t->alloc);
	t->v[t->nr++] = tid;
}

static void tidset_sort(struct tidset *t)
{
	if (t->nr)
		qsort(t->v, t->nr, sizeof(*t->v), cmp_pid);
}

/*
 * Append the tids of /proc/pid/task that are not in seen to out.  Returns
 * 0, or 1 (err untouched) when the process is gone.
 */
static int tasks_new(pid_t pid, const struct tidset *seen, struct tidset *out)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 1;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);

		if (end != de->d_name && !*end && v > 0 && v <= INT_MAX &&
		    !tidset_has(seen, (pid_t)v))
			tidset_add(out, (pid_t)v);
	}
	closedir(d);
	return 0;
}

/*
 * Open tid on every CPU: the first event of a CPU maps its ring, the
 * others are redirected into it.  Returns 0, 1 when the thread is gone
 * (ESRCH: skip it), or an error.
 */
static int open_thread(struct perf_session *s, const struct opener *op, pid_t tid,
		       struct error *err)
{
	for (size_t i = 0; i < op->nr_cpus; i++) {
		struct perf_ring *r = &s->rings[i];
		int cpu = op->cpus[i], ret;
		int fd = sys_perf_event_open(&op->attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return errno == ESRCH ? 1 : open_failed(op->o, tid, cpu, errno, err);
		debug2(DEBUG_PERF, "perf_event_open(%s, tid %d, cpu %d): fd %d",
		       kind_name(op->o->kind), (int)tid, cpu, fd);
		if (r->base)
			ret = perf_ring_redirect(r, fd, err);
		else
			ret = perf_ring_map(r, fd, cpu, op->pages, err);
		if (ret)
			return ret;
	}
	return 0;
}

static void mark_inherited(uint32_t tid, void *arg)
{
	struct tidset *inherited = arg;

	if (tid <= INT_MAX)
		tidset_add(inherited, (pid_t)tid);
}

/*
 * The threads in fresh that an already opened thread created after its
 * events were opened carry inherited copies of them (their FORK record is
 * in our rings): opening them again would count them twice.
 */
static void drop_inherited(const struct perf_session *s, struct tidset *fresh)
{
	struct tidset inherited = {0};
	size_t n = 0;

	for (size_t i = 0; i < s->nr_rings; i++)
		if (s->rings[i].base)
			perf_ring_peek_forks(&s->rings[i], mark_inherited, &inherited);
	tidset_sort(&inherited);
	for (size_t i = 0; i < fresh->nr; i++)
		if (!tidset_has(&inherited, fresh->v[i]))
			fresh->v[n++] = fresh->v[i];
	fresh->nr = n;
	free(inherited.v);
}

/* Open the threads of one scan; counts those opened.  Returns 0 or an error. */
static int open_scan(struct perf_session *s, const struct opener *op, const struct tidset *fresh,
		     size_t *opened, struct error *err)
{
	for (size_t i = 0; i < fresh->nr; i++) {
		int ret = open_thread(s, op, fresh->v[i], err);

		if (ret < 0)
			return ret;
		*opened += ret == 0;
	}
	return 0;
}

/* Drop the rings no thread could be opened on (their threads vanished). */
static void rings_compact(struct perf_session *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_rings; i++)
		if (s->rings[i].base)
			s->rings[n++] = s->rings[i];
	s->nr_rings = n;
}

static int open_threads(struct perf_session *s, const struct opener *op, struct error *err)
{
	pid_t pid = op->o->pid ? op->o->pid : getpid();
	struct tidset seen = {0}, fresh = {0};
	size_t opened = 0;
	int ret = 0;

	s->rings = xcalloc(op->nr_cpus, sizeof(*s->rings));
	s->nr_rings = op->nr_cpus;
	for (size_t i = 0; i < op->nr_cpus; i++)
		s->rings[i].fd = -1;
	for (int scan = 0; !ret && scan <= PERF_MAX_RESCANS; scan++) {
		fresh.nr = 0;
		if (tasks_new(pid, &seen, &fresh) || !fresh.nr)
			break;
		for (size_t i = 0; i < fresh.nr; i++)
			tidset_add(&seen, fresh.v[i]);
		tidset_sort(&seen);
		if (scan) {
			usleep(200); /* a new thread is listed a moment before its FORK record */
			drop_inherited(s, &fresh);
		}
		ret = open_scan(s, op, &fresh, &opened, err);
	}
	free(seen.v);
	free(fresh.v);
	rings_compact(s);
	if (!ret && !opened)
		ret = error_set(err, ERR_IO, "perf_event_open(%s, pid %d): %s (/proc/%d/task)",
				kind_name(op->o->kind), (int)pid, strerror(ESRCH), (int)pid);
	return ret;
}

int perf_session_open(struct perf_session *s, const struct perf_open_opts *o, struct error *err)
{
	struct opener op = {.o = o};
	unsigned pages = o->ring_pages ? o->ring_pages : 64;
	int ret;

	memset(s, 0, sizeof(*s));
	if (pages & (pages - 1) || pages > (1u << 16))
		return error_set(err, ERR_USAGE, "perf: ring_pages %u not a power of two", pages);
	op.pages = pages;
	ret = attr_build(&op.attr, o, &s->layout, err);
	if (ret)
		return ret;
	/* poll() wakes when a quarter of the ring is filled (the loop's timeout drains the rest) */
	op.attr.wakeup_watermark = (uint32_t)(pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	if ((o->pid < 0 || op.attr.inherit) && (ret = online_cpus(&op.cpus, &op.nr_cpus, err)))
		return ret;
	if (o->all_threads)
		ret = open_threads(s, &op, err);
	else
		ret = open_per_cpu(s, &op, err);
	s->hide_task = o->all_threads && !o->task_events;
	free(op.cpus);
	if (ret)
		perf_session_close(s);
	else
		debug(DEBUG_PERF,
		      "%s opened for %s %d: %zu rings of %u pages, %u Hz, callchain %s, user "
		      "stack %u bytes, kernel %s, perf_event_paranoid %d",
		      kind_name(o->kind), o->pid < 0 ? "cpus, pid" : "pid", (int)o->pid,
		      s->nr_rings, pages, o->freq, o->callchain ? "on" : "off", o->stack_user,
		      o->exclude_kernel ? "excluded" : "included", perf_event_paranoid());
	return ret;
}

void perf_session_close(struct perf_session *s)
{
	for (size_t i = 0; i < s->nr_rings; i++)
		perf_ring_unmap(&s->rings[i]);
	free(s->rings);
	s->rings = NULL;
	s->nr_rings = 0;
}

/* ---- parsing ---- */

/*
 * A record's fields, read by util/cursor.h's cursor (in host byte order,
 * as the kernel writes them); each read is checked first, so that a
 * field that runs past the record is named with its offset.
 */
struct rec_cur {
	struct cursor c;      /* the fields left; end is the record's (or its trailer's) */
	const uint8_t *start; /* the record's first byte: offsets count from it */
	const char *rec;
	struct error *err;
};

/* Offset of the next field, and of the end, from the record's start. */
static size_t cur_off(const struct rec_cur *c)
{
	return (size_t)(c->c.p - c->start);
}

static size_t cur_len(const struct rec_cur *c)
{
	return (size_t)(c->c.end - c->start);
}

static int cur_fail(struct rec_cur *c, const char *field)
{
	return error_set(c->err, ERR_FORMAT,
			 "perf record %s: field %s at byte %zu runs past its size %zu", c->rec,
			 field, cur_off(c), cur_len(c));
}

static int cur_u64(struct rec_cur *c, uint64_t *v, const char *field)
{
	if (cursor_left(&c->c) < 8)
		return cur_fail(c, field);
	cursor_copy(&c->c, v, 8);
	return 0;
}

static int cur_u32x2(struct rec_cur *c, uint32_t *a, uint32_t *b, const char *field)
{
	if (cursor_left(&c->c) < 8)
		return cur_fail(c, field);
	cursor_copy(&c->c, a, 4);
	cursor_copy(&c->c, b, 4);
	return 0;
}

/* n u64s, returned as a pointer into the record (8-byte aligned). */
static int cur_array(struct rec_cur *c, uint64_t n, const uint64_t **out, const char *field)
{
	if (n > cursor_left(&c->c) / 8)
		return cur_fail(c, field);
	*out = (const uint64_t *)(const void *)cursor_bytes(&c->c, n * 8);
	return 0;
}

static int cur_skip(struct rec_cur *c, uint64_t n, const char *field)
{
	if (n > cursor_left(&c->c))
		return cur_fail(c, field);
	cursor_skip(&c->c, n);
	return 0;
}

static size_t id_trailer_size(const struct perf_layout *l)
{
	uint64_t t = l->sample_type;

	if (!l->sample_id_all)
		return 0;
	return 8 * (!!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME) + !!(t & PERF_SAMPLE_ID) +
		    !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_CPU) +
		    !!(t & PERF_SAMPLE_IDENTIFIER));
}

static int parse_id_trailer(const struct perf_layout *l, struct rec_cur *c, struct perf_record *r)
{
	uint64_t t = l->sample_type, v;
	struct rec_cur tc = *c;
	int ret = 0;

	tc.c.p = c->c.end - id_trailer_size(l);
	if (t & PERF_SAMPLE_TID)
		ret = ret ? ret : cur_u32x2(&tc, &r->pid, &r->tid, "sample_id.tid");
	if (t & PERF_SAMPLE_TIME)
		ret = ret ? ret : cur_u64(&tc, &r->time, "sample_id.time");
	if (t & PERF_SAMPLE_ID)
		ret = ret ? ret : cur_u64(&tc, &v, "sample_id.id");
	if (t & PERF_SAMPLE_STREAM_ID)
		ret = ret ? ret : cur_u64(&tc, &v, "sample_id.stream_id");
	if (t & PERF_SAMPLE_CPU) {
		uint32_t res;

		ret = ret ? ret : cur_u32x2(&tc, &r->cpu, &res, "sample_id.cpu");
	}
	r->has_id = !ret;
	return ret;
}

static bool is_context_marker(uint64_t ip)
{
	return ip >= (uint64_t)PERF_CONTEXT_MAX;
}

static void split_callchain(struct perf_sample *s, const uint64_t *ips, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (!is_context_marker(ips[i]))
			continue;
		for (j = i + 1; j < n && !is_context_marker(ips[j]); j++)
			;
		if (ips[i] == (uint64_t)PERF_CONTEXT_KERNEL && !s->kernel_ips) {
			s->kernel_ips = ips + i + 1;
			s->nr_kernel = j - i - 1;
		} else if (ips[i] == (uint64_t)PERF_CONTEXT_USER && !s->user_ips) {
			s->user_ips = ips + i + 1;
			s->nr_user = j - i - 1;
		}
		i = j - 1;
	}
}

static int parse_sample_regs_stack(const struct perf_layout *l, struct rec_cur *c,
				   struct perf_sample *s)
{
	uint64_t t = l->sample_type;
	int ret = 0;

	if (t & PERF_SAMPLE_REGS_USER) {
		ret = cur_u64(c, &s->regs_abi, "regs_user.abi");
		if (!ret && s->regs_abi) {
			s->nr_regs = (size_t)__builtin_popcountll(l->regs_mask);
			ret = cur_array(c, s->nr_regs, &s->regs, "regs_user.regs");
		}
	}
	if (!ret && (t & PERF_SAMPLE_STACK_USER)) {
		ret = cur_u64(c, &s->stack_size, "stack_user.size");
		if (!ret && s->stack_size) {
			s->stack = c->c.p;
			ret = cur_skip(c, s->stack_size, "stack_user.data");
			ret = ret ? ret : cur_u64(c, &s->stack_dyn_size, "stack_user.dyn_size");
			if (!ret && s->stack_dyn_size > s->stack_size)
				ret = error_set(c->err, ERR_FORMAT,
						"perf record SAMPLE: stack_user.dyn_size %" PRIu64
						" > size %" PRIu64,
						s->stack_dyn_size, s->stack_size);
		}
	}
	return ret;
}

/* u32 size, then size bytes, padded so the next field is 8-byte aligned. */
static int parse_raw(struct rec_cur *c, struct perf_sample *s)
{
	uint32_t sz;

	if (cursor_left(&c->c) < 4)
		return cur_fail(c, "raw.size");
	memcpy(&sz, c->c.p, 4);
	if ((4 + (uint64_t)sz + 7) / 8 * 8 > cursor_left(&c->c))
		return cur_fail(c, "raw.data");
	s->raw = c->c.p + 4;
	s->raw_size = sz;
	cursor_skip(&c->c, (size_t)(4 + (uint64_t)sz + 7) / 8 * 8);
	return 0;
}

static int parse_sample(const struct perf_layout *l, struct rec_cur *c, struct perf_record *r)
{
	struct perf_sample *s = &r->u.sample;
	uint64_t t = l->sample_type, v;
	int ret = 0;

	if (t & ~(uint64_t)HANDLED_SAMPLE_TYPE)
		return error_set(c->err, ERR_UNSUPPORTED,
				 "perf: sample_type %#" PRIx64 " not supported",
				 t & ~(uint64_t)HANDLED_SAMPLE_TYPE);
	if (t & PERF_SAMPLE_IDENTIFIER)
		ret = cur_u64(c, &v, "identifier");
	if (!ret && (t & PERF_SAMPLE_IP))
		ret = cur_u64(c, &s->ip, "ip");
	if (!ret && (t & PERF_SAMPLE_TID))
		ret = cur_u32x2(c, &s->pid, &s->tid, "pid/tid");
	if (!ret && (t & PERF_SAMPLE_TIME))
		ret = cur_u64(c, &s->time, "time");
	if (!ret && (t & PERF_SAMPLE_ADDR))
		ret = cur_u64(c, &v, "addr");
	if (!ret && (t & PERF_SAMPLE_ID))
		ret = cur_u64(c, &v, "id");
	if (!ret && (t & PERF_SAMPLE_STREAM_ID))
		ret = cur_u64(c, &v, "stream_id");
	if (!ret && (t & PERF_SAMPLE_CPU)) {
		uint32_t res;

		ret = cur_u32x2(c, &s->cpu, &res, "cpu");
	}
	if (!ret && (t & PERF_SAMPLE_PERIOD))
		ret = cur_u64(c, &s->period, "period");
	if (!ret && (t & PERF_SAMPLE_CALLCHAIN)) {
		const uint64_t *ips = NULL;

		ret = cur_u64(c, &v, "callchain.nr");
		ret = ret ? ret : cur_array(c, v, &ips, "callchain.ips");
		if (!ret) {
			s->nr_callchain = (size_t)v;
			split_callchain(s, ips, s->nr_callchain);
		}
	}
	if (!ret && (t & PERF_SAMPLE_RAW))
		ret = parse_raw(c, s);
	ret = ret ? ret : parse_sample_regs_stack(l, c, s);
	r->pid = s->pid;
	r->tid = s->tid;
	r->time = s->time;
	r->cpu = s->cpu;
	r->has_id = !ret;
	return ret;
}

static int parse_string(struct rec_cur *c, size_t end, const char **out, const char *field)
{
	const char *p = (const char *)c->c.p;

	if (cur_off(c) >= end || !memchr(p, 0, end - cur_off(c)))
		return cur_fail(c, field);
	*out = p;
	c->c.p = c->start + end;
	return 0;
}

static int parse_mmap2(struct rec_cur *c, size_t end, struct perf_record *r)
{
	struct perf_mmap2 *m = &r->u.mmap2;
	int ret;

	ret = cur_u32x2(c, &m->pid, &m->tid, "pid/tid");
	ret = ret ? ret : cur_u64(c, &m->addr, "addr");
	ret = ret ? ret : cur_u64(c, &m->len, "len");
	ret = ret ? ret : cur_u64(c, &m->pgoff, "pgoff");
	if (ret || cursor_left(&c->c) < 32 || end < cur_off(c) + 32)
		return ret ? ret : cur_fail(c, "maj/min/ino");
	if (r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		m->has_build_id = true;
		m->build_id_size = MIN(c->c.p[0], (uint8_t)20);
		memcpy(m->build_id, c->c.p + 4, 20);
	} else {
		memcpy(&m->maj, c->c.p, 4);
		memcpy(&m->min, c->c.p + 4, 4);
		memcpy(&m->ino, c->c.p + 8, 8);
		memcpy(&m->ino_generation, c->c.p + 16, 8);
	}
	cursor_skip(&c->c, 24);
	ret = cur_u32x2(c, &m->prot, &m->flags, "prot/flags");
	return ret ? ret : parse_string(c, end, &m->filename, "filename");
}

static const char *record_name(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_SAMPLE: return "SAMPLE";
	case PERF_RECORD_MMAP2: return "MMAP2";
	case PERF_RECORD_COMM: return "COMM";
	case PERF_RECORD_FORK: return "FORK";
	case PERF_RECORD_EXIT: return "EXIT";
	case PERF_RECORD_LOST: return "LOST";
	case PERF_RECORD_LOST_SAMPLES: return "LOST_SAMPLES";
	case PERF_RECORD_SWITCH: return "SWITCH";
	case PERF_RECORD_SWITCH_CPU_WIDE: return "SWITCH_CPU_WIDE";
	case PERF_RECORD_THROTTLE: return "THROTTLE";
	case PERF_RECORD_UNTHROTTLE: return "UNTHROTTLE";
	default: return "(other)";
	}
}

static int parse_body(struct rec_cur *c, size_t end, struct perf_record *r)
{
	uint64_t v;
	int ret;

	switch (r->type) {
	case PERF_RECORD_MMAP2: return parse_mmap2(c, end, r);
	case PERF_RECORD_COMM:
		r->u.comm.exec = r->misc & PERF_RECORD_MISC_COMM_EXEC;
		ret = cur_u32x2(c, &r->u.comm.pid, &r->u.comm.tid, "pid/tid");
		return ret ? ret : parse_string(c, end, &r->u.comm.comm, "comm");
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		ret = cur_u32x2(c, &r->u.task.pid, &r->u.task.ppid, "pid/ppid");
		ret = ret ? ret : cur_u32x2(c, &r->u.task.tid, &r->u.task.ptid, "tid/ptid");
		return ret ? ret : cur_u64(c, &r->u.task.time, "time");
	case PERF_RECORD_LOST:
		ret = cur_u64(c, &v, "id");
		return ret ? ret : cur_u64(c, &r->u.lost, "lost");
	case PERF_RECORD_LOST_SAMPLES: return cur_u64(c, &r->u.lost, "lost");
	case PERF_RECORD_SWITCH: r->u.sw.out = r->misc & PERF_RECORD_MISC_SWITCH_OUT; return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		r->u.sw.out = r->misc & PERF_RECORD_MISC_SWITCH_OUT;
		return cur_u32x2(c, &r->u.sw.next_prev_pid, &r->u.sw.next_prev_tid,
				 "next_prev_pid/tid");
	default: return 0;
	}
}

int perf_record_parse(const struct perf_layout *l, const void *buf, size_t len,
		      struct perf_record *r, struct error *err)
{
	struct perf_event_header h;
	struct rec_cur c = {cursor_make(buf, len), buf, "", err};
	size_t trailer;
	int ret;

	memset(r, 0, sizeof(*r));
	if (len < sizeof(h) || ((uintptr_t)buf & 7))
		return error_set(err, ERR_FORMAT, "perf record: %zu bytes%s", len,
				 len < sizeof(h) ? " is shorter than a header"
						 : " not 8-byte aligned");
	cursor_copy(&c.c, &h, sizeof(h));
	r->type = h.type;
	r->misc = h.misc;
	r->size = h.size;
	c.rec = record_name(h.type);
	if (h.size != len)
		return error_set(err, ERR_FORMAT, "perf record %s: header size %u != %zu bytes",
				 c.rec, h.size, len);
	if (h.type == PERF_RECORD_SAMPLE)
		return parse_sample(l, &c, r);
	trailer = id_trailer_size(l);
	if (h.type < PERF_RECORD_MAX && trailer) {
		if (len < sizeof(h) + trailer)
			return cur_fail(&c, "sample_id");
		ret = parse_id_trailer(l, &c, r);
		if (ret)
			return ret;
	}
	c.c.end = c.start + len - (h.type < PERF_RECORD_MAX ? trailer : 0);
	return parse_body(&c, cur_len(&c), r);
}
