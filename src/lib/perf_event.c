/* SPDX-License-Identifier: MIT */
/* Opening perf events on the raw syscall, and parsing their records. */
#include "util/common.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/perf_event.h"
#include "lib/perf_ring.h"

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

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

static int read_paranoid(void)
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

static int open_refused(const struct perf_open_opts *o, int cpu, int errnum, struct error *err)
{
	int cur = read_paranoid();
	int need = o->pid < 0 ? 0 : o->exclude_kernel ? 2 : 1;
	const char *what = o->pid < 0	       ? "system-wide profiling"
			   : o->exclude_kernel ? "profiling a process (user space only)"
					       : "profiling a process including kernel stacks";

	return error_set(err, ERR_IO,
			 "perf_event_open(cpu-clock, pid %d, cpu %d): %s refused (%s): "
			 "kernel.perf_event_paranoid is %d, allow it with `sysctl "
			 "kernel.perf_event_paranoid=%d` or run with CAP_PERFMON "
			 "(CAP_SYS_ADMIN before Linux 5.8)%s",
			 (int)o->pid, cpu, what, strerror(errnum), cur, need,
			 o->pid < 0 || o->exclude_kernel ? "" : " (or pass exclude_kernel)");
}

static int attr_build(struct perf_event_attr *a, const struct perf_open_opts *o,
		      struct perf_layout *l, struct error *err)
{
	memset(a, 0, sizeof(*a));
	if (o->freq == 0 || o->freq > 100000)
		return error_set(err, ERR_USAGE, "perf: frequency %u out of range 1..100000",
				 o->freq);
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = o->freq;
	a->sample_type = BASE_SAMPLE_TYPE;
	if (o->callchain)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->stack_user) {
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
	}
	a->sample_id_all = 1;
	a->exclude_kernel = o->exclude_kernel;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = o->exclude_kernel;
	a->inherit = o->pid >= 0 && o->inherit;
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
	a->context_switch = o->context_switch;
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

int perf_session_open(struct perf_session *s, const struct perf_open_opts *o, struct error *err)
{
	struct perf_event_attr attr;
	int *cpus = NULL;
	size_t nr = 1;
	unsigned pages = o->ring_pages ? o->ring_pages : 64;
	int ret;

	memset(s, 0, sizeof(*s));
	if (pages & (pages - 1) || pages > (1u << 16))
		return error_set(err, ERR_USAGE, "perf: ring_pages %u not a power of two", pages);
	ret = attr_build(&attr, o, &s->layout, err);
	if (ret)
		return ret;
	/* poll() wakes when a quarter of the ring is filled (the loop's timeout drains the rest) */
	attr.wakeup_watermark = (uint32_t)(pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	if ((o->pid < 0 || attr.inherit) && (ret = online_cpus(&cpus, &nr, err)))
		return ret;
	s->rings = xcalloc(nr, sizeof(*s->rings));
	for (size_t i = 0; i < nr; i++) {
		int cpu = cpus ? cpus[i] : -1;
		int fd = sys_perf_event_open(&attr, o->pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			int e = errno;

			if (e == EACCES || e == EPERM)
				ret = open_refused(o, cpu, e, err);
			else
				ret = error_set(err, ERR_IO,
						"perf_event_open(cpu-clock, pid %d, cpu %d): %s",
						(int)o->pid, cpu, strerror(e));
			break;
		}
		ret = perf_ring_map(&s->rings[i], fd, cpu, pages, err);
		if (ret)
			break;
		s->nr_rings++;
	}
	free(cpus);
	if (ret)
		perf_session_close(s);
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

struct cursor {
	const uint8_t *p;
	size_t len, off;
	const char *rec;
	struct error *err;
};

static int cur_fail(struct cursor *c, const char *field)
{
	return error_set(c->err, ERR_FORMAT,
			 "perf record %s: field %s at byte %zu runs past its size %zu", c->rec,
			 field, c->off, c->len);
}

static int cur_u64(struct cursor *c, uint64_t *v, const char *field)
{
	if (c->len - c->off < 8)
		return cur_fail(c, field);
	memcpy(v, c->p + c->off, 8);
	c->off += 8;
	return 0;
}

static int cur_u32x2(struct cursor *c, uint32_t *a, uint32_t *b, const char *field)
{
	if (c->len - c->off < 8)
		return cur_fail(c, field);
	memcpy(a, c->p + c->off, 4);
	memcpy(b, c->p + c->off + 4, 4);
	c->off += 8;
	return 0;
}

/* n u64s, returned as a pointer into the record (8-byte aligned). */
static int cur_array(struct cursor *c, uint64_t n, const uint64_t **out, const char *field)
{
	if (n > (c->len - c->off) / 8)
		return cur_fail(c, field);
	*out = (const uint64_t *)(const void *)(c->p + c->off);
	c->off += n * 8;
	return 0;
}

static int cur_skip(struct cursor *c, uint64_t n, const char *field)
{
	if (n > c->len - c->off)
		return cur_fail(c, field);
	c->off += n;
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

static int parse_id_trailer(const struct perf_layout *l, struct cursor *c, struct perf_record *r)
{
	uint64_t t = l->sample_type, v;
	struct cursor tc = *c;
	int ret = 0;

	tc.off = c->len - id_trailer_size(l);
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

static int parse_sample_regs_stack(const struct perf_layout *l, struct cursor *c,
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
			s->stack = c->p + c->off;
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

static int parse_sample(const struct perf_layout *l, struct cursor *c, struct perf_record *r)
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
	if (!ret && (t & PERF_SAMPLE_RAW)) {
		uint32_t sz;

		if (c->len - c->off < 4)
			return cur_fail(c, "raw.size");
		memcpy(&sz, c->p + c->off, 4);
		ret = cur_skip(c, 4 + (uint64_t)sz, "raw.data");
	}
	ret = ret ? ret : parse_sample_regs_stack(l, c, s);
	r->pid = s->pid;
	r->tid = s->tid;
	r->time = s->time;
	r->cpu = s->cpu;
	r->has_id = !ret;
	return ret;
}

static int parse_string(struct cursor *c, size_t end, const char **out, const char *field)
{
	const char *p = (const char *)c->p + c->off;

	if (c->off >= end || !memchr(p, 0, end - c->off))
		return cur_fail(c, field);
	*out = p;
	c->off = end;
	return 0;
}

static int parse_mmap2(struct cursor *c, size_t end, struct perf_record *r)
{
	struct perf_mmap2 *m = &r->u.mmap2;
	int ret;

	ret = cur_u32x2(c, &m->pid, &m->tid, "pid/tid");
	ret = ret ? ret : cur_u64(c, &m->addr, "addr");
	ret = ret ? ret : cur_u64(c, &m->len, "len");
	ret = ret ? ret : cur_u64(c, &m->pgoff, "pgoff");
	if (ret || c->len - c->off < 32 || end < c->off + 32)
		return ret ? ret : cur_fail(c, "maj/min/ino");
	if (r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		m->has_build_id = true;
		m->build_id_size = MIN(c->p[c->off], (uint8_t)20);
		memcpy(m->build_id, c->p + c->off + 4, 20);
	} else {
		memcpy(&m->maj, c->p + c->off, 4);
		memcpy(&m->min, c->p + c->off + 4, 4);
		memcpy(&m->ino, c->p + c->off + 8, 8);
		memcpy(&m->ino_generation, c->p + c->off + 16, 8);
	}
	c->off += 24;
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

static int parse_body(struct cursor *c, size_t end, struct perf_record *r)
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
	struct cursor c = {buf, len, sizeof(h), "", err};
	size_t trailer;
	int ret;

	memset(r, 0, sizeof(*r));
	if (len < sizeof(h) || ((uintptr_t)buf & 7))
		return error_set(err, ERR_FORMAT, "perf record: %zu bytes%s", len,
				 len < sizeof(h) ? " is shorter than a header"
						 : " not 8-byte aligned");
	memcpy(&h, buf, sizeof(h));
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
	c.len = len - (h.type < PERF_RECORD_MAX ? trailer : 0);
	return parse_body(&c, c.len, r);
}
