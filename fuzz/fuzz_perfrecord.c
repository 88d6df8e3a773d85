/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: perf_event ring records and the sched_switch
 * tracepoint.  The first CFG_SIZE bytes pick a struct perf_layout, the
 * rest is one record (copied to an 8-byte aligned buffer of exactly its
 * size, so ASan sees any read past it); its header size may lie.
 * Checked: a record parses or is refused with a one-line ERR_FORMAT (or
 * ERR_UNSUPPORTED for a sample_type bit the parser does not handle); a
 * header size other than the length is always refused; whatever parses
 * borrows only bytes inside the record.  The raw part of a sample and the
 * record bytes go through perf_sched_switch_decode with the real kernel
 * format, and the whole input, as text, through
 * perf_sched_switch_format_parse (a format that parses then decodes the
 * input as raw data).  See fuzz/README.md for the input layout.
 */
#include "util/common.h"

#include <linux/perf_event.h>

#include "perf/perf_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout: bytes 0-1 (little-endian) select sample_type bits, bit i
 * for sample_bits[i], bit 13 adds PERF_SAMPLE_READ (not handled); byte 2
 * picks regs_mask (regs_mask_of); byte 3 bit 0 is sample_id_all.
 */
#define CFG_SIZE 4
#define CFG_READ (1u << 13)

static const uint64_t sample_bits[] = {
	PERF_SAMPLE_IP,		PERF_SAMPLE_TID,	PERF_SAMPLE_TIME, PERF_SAMPLE_CPU,
	PERF_SAMPLE_PERIOD,	PERF_SAMPLE_CALLCHAIN,	PERF_SAMPLE_RAW,  PERF_SAMPLE_REGS_USER,
	PERF_SAMPLE_STACK_USER, PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_ID,	  PERF_SAMPLE_STREAM_ID,
	PERF_SAMPLE_ADDR,
};

/* /sys/kernel/tracing/events/sched/sched_switch/format of Linux 6.x (x86_64). */
static const char sched_switch_format[] =
	"name: sched_switch\n"
	"ID: 372\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> "
	"next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, "
	"REC->prev_prio, REC->prev_state, REC->next_comm, REC->next_pid, REC->next_prio\n";

static struct perf_sched_switch_format kernel_format;
static volatile uint8_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct error err = ERROR_INIT;

	(void)argc;
	(void)argv;
	if (perf_sched_switch_format_parse(sched_switch_format, "fuzz", &kernel_format, &err))
		BUG("the built-in sched_switch format does not parse: %s", err.msg);
	return 0;
}

/* Read every byte of p[0..n) so that ASan checks it is inside the record. */
static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t x = 0;

	for (size_t i = 0; i < n; i++)
		x ^= b[i];
	sink ^= x;
}

/* [p, p + n) lies inside [buf, buf + len). */
static bool inside(const void *buf, size_t len, const void *p, uint64_t n)
{
	uintptr_t b = (uintptr_t)buf, q = (uintptr_t)p;

	return q >= b && q - b <= len && n <= len - (q - b);
}

static void check_error(int ret, const struct error *err)
{
	if (ret != ERR_FORMAT && ret != ERR_UNSUPPORTED)
		BUG("unexpected error code %d", ret);
	if (err->code != ret || !err->msg[0] || strchr(err->msg, '\n'))
		BUG("error %d without a one-line message: '%s'", ret, err->msg);
}

static void check_string(const void *buf, size_t len, const char *s, const char *what)
{
	if (!inside(buf, len, s, 1) ||
	    !memchr(s, 0, len - (size_t)((const char *)s - (const char *)buf)))
		BUG("%s is not a NUL-terminated string inside the record", what);
	touch(s, strlen(s) + 1);
}

static void check_decoded(const struct perf_sched_switch *sw)
{
	if (!memchr(sw->prev_comm, 0, sizeof(sw->prev_comm)))
		BUG("sched_switch prev_comm not NUL-terminated");
}

/* Decode raw[0..n) with f; it must succeed exactly when every field fits. */
static void decode(const struct perf_sched_switch_format *f, const void *raw, size_t n)
{
	const struct perf_tp_field *fl[] = {&f->prev_comm, &f->prev_pid, &f->prev_state,
					    &f->next_pid};
	struct error err = ERROR_INIT;
	struct perf_sched_switch sw;
	size_t need = 0;
	int ret = perf_sched_switch_decode(f, raw, n, &sw, &err);

	for (size_t i = 0; i < ARRAY_SIZE(fl); i++)
		need = MAX(need, (size_t)fl[i]->offset + fl[i]->size);
	if (!ret != (n >= need))
		BUG("sched_switch decode of %zu bytes (fields need %zu) returned %d", n, need, ret);
	if (ret && (ret != ERR_FORMAT || !err.msg[0] || strchr(err.msg, '\n')))
		BUG("sched_switch decode failed without a one-line message: %d '%s'", ret, err.msg);
	if (!ret)
		check_decoded(&sw);
}

static void check_sample(const struct perf_sample *s, const void *buf, size_t len)
{
	if (s->nr_kernel + s->nr_user > s->nr_callchain)
		BUG("callchain split into more entries than it has");
	if ((s->kernel_ips && !inside(buf, len, s->kernel_ips, s->nr_kernel * 8)) ||
	    (s->user_ips && !inside(buf, len, s->user_ips, s->nr_user * 8)) ||
	    (s->regs && !inside(buf, len, s->regs, s->nr_regs * 8)) ||
	    (s->stack && !inside(buf, len, s->stack, s->stack_size)) ||
	    (s->raw && !inside(buf, len, s->raw, s->raw_size)))
		BUG("a sample field points outside its record");
	if (s->stack_dyn_size > s->stack_size)
		BUG("stack_user dyn_size %" PRIu64 " > size %" PRIu64, s->stack_dyn_size,
		    s->stack_size);
	if (s->kernel_ips)
		touch(s->kernel_ips, s->nr_kernel * 8);
	if (s->user_ips)
		touch(s->user_ips, s->nr_user * 8);
	if (s->regs)
		touch(s->regs, s->nr_regs * 8);
	if (s->stack)
		touch(s->stack, (size_t)s->stack_size);
	if (s->raw) {
		touch(s->raw, s->raw_size);
		decode(&kernel_format, s->raw, s->raw_size);
	}
}

static void check_record(const struct perf_record *r, const void *buf, size_t len)
{
	if (r->size != len)
		BUG("record of %zu bytes parsed with header size %u", len, r->size);
	switch (r->type) {
	case PERF_RECORD_SAMPLE: check_sample(&r->u.sample, buf, len); break;
	case PERF_RECORD_MMAP2:
		if (r->u.mmap2.build_id_size > sizeof(r->u.mmap2.build_id))
			BUG("MMAP2 build-id size %u", r->u.mmap2.build_id_size);
		check_string(buf, len, r->u.mmap2.filename, "MMAP2 filename");
		break;
	case PERF_RECORD_COMM: check_string(buf, len, r->u.comm.comm, "COMM comm"); break;
	default: break;
	}
}

/* Parse rec[0..len) from a heap copy of exactly len bytes. */
static void parse_one(const struct perf_layout *l, bool unsupported, const uint8_t *rec, size_t len)
{
	struct error err = ERROR_INIT;
	struct perf_event_header h = {0};
	struct perf_record r;
	void *buf = xmalloc(len ? len : 1);
	int ret;

	memcpy(buf, rec, len);
	if (len >= sizeof(h))
		memcpy(&h, rec, sizeof(h));
	ret = perf_record_parse(l, buf, len, &r, &err);
	if (ret) {
		check_error(ret, &err);
		if (ret == ERR_UNSUPPORTED && !unsupported)
			BUG("ERR_UNSUPPORTED for a handled sample_type %#" PRIx64, l->sample_type);
	} else {
		if (len < sizeof(h) || h.size != len)
			BUG("a record of %zu bytes with header size %u parsed", len, h.size);
		if (unsupported && h.type == PERF_RECORD_SAMPLE)
			BUG("a SAMPLE parsed with an unsupported sample_type");
		check_record(&r, buf, len);
	}
	free(buf);
}

static void layout_from(const uint8_t *cfg, struct perf_layout *l, bool *unsupported)
{
	unsigned bits = cfg[0] | (unsigned)cfg[1] << 8;
	unsigned regs = cfg[2];
	static const uint64_t masks[] = {0xff0fffULL, (1ULL << 33) - 1, UINT64_MAX};

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < ARRAY_SIZE(sample_bits); i++)
		if (bits & (1u << i))
			l->sample_type |= sample_bits[i];
	*unsupported = bits & CFG_READ;
	if (*unsupported)
		l->sample_type |= PERF_SAMPLE_READ;
	l->regs_mask = (regs & 3) < 3 ? masks[regs & 3] : (1ULL << (regs >> 2)) - 1;
	l->sample_id_all = cfg[3] & 1;
}

/* The input as a format file; what parses decodes the input as raw data. */
static void format_text(const uint8_t *data, size_t size)
{
	struct perf_sched_switch_format f;
	struct error err = ERROR_INIT;
	char *text = xmalloc(size + 1);
	int ret;

	memcpy(text, data, size);
	text[size] = 0;
	ret = perf_sched_switch_format_parse(text, "fuzz", &f, &err);
	if (ret && (ret != ERR_FORMAT || !err.msg[0] || strchr(err.msg, '\n')))
		BUG("format parse failed without a one-line message: %d '%s'", ret, err.msg);
	if (!ret)
		decode(&f, data, size);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_event_header h;
	struct perf_layout l;
	bool unsupported;

	format_text(data, size);
	if (size < CFG_SIZE)
		return 0;
	layout_from(data, &l, &unsupported);
	data += CFG_SIZE;
	size -= CFG_SIZE;
	parse_one(&l, unsupported, data, size);
	/* As a ring reader would: trust the header size when it fits. */
	if (size >= sizeof(h)) {
		memcpy(&h, data, sizeof(h));
		if (h.size < size)
			parse_one(&l, unsupported, data, h.size);
	}
	decode(&kernel_format, data, size);
	return 0;
}
