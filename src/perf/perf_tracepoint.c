/* SPDX-License-Identifier: MIT */
/* The sched:sched_switch tracepoint: its id and raw-record layout from tracefs. */
#include "util/common.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "perf/perf_event.h"

#define TP_DIR	     "events/sched/sched_switch/"
#define FORMAT_MAX   65536 /* a format file is a few KiB */
#define LINE_MAX_LEN 512

static const char *const tracefs_roots[] = {"/sys/kernel/tracing/", "/sys/kernel/debug/tracing/"};

/*
 * Read TP_DIR file from the first tracefs root that has it into buf
 * (NUL-terminated, at most cap - 1 bytes); path receives its path.
 */
static int tp_read(const char *file, char *buf, size_t cap, char *path, size_t path_cap,
		   struct error *err)
{
	size_t len = 0;
	ssize_t n;
	int fd = -1, e = ENOENT;

	for (size_t i = 0; i < ARRAY_SIZE(tracefs_roots) && fd < 0; i++) {
		snprintf(path, path_cap, "%s%s%s", tracefs_roots[i], TP_DIR, file);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		e = fd < 0 ? errno : 0;
		if (fd < 0 && e != ENOENT)
			break;
	}
	if (fd < 0 && e == ENOENT)
		return error_set(
			err, ERR_IO,
			"sched:sched_switch: %s%s%s not found: tracefs is not mounted "
			"(mount -t tracefs nodev /sys/kernel/tracing) or the kernel has no "
			"sched tracepoints",
			tracefs_roots[0], TP_DIR, file);
	if (fd < 0)
		return error_set(
			err, ERR_IO,
			"sched:sched_switch: %s: %s (tracefs is readable by root only; "
			"tracepoints also need kernel.perf_event_paranoid=-1 or CAP_PERFMON)",
			path, strerror(e));
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			return error_set(err, ERR_IO, "%s: %s", path, strerror(e));
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	if (len + 1 >= cap)
		return error_set(err, ERR_LIMIT, "%s: longer than %zu bytes", path, cap - 1);
	return 0;
}

int perf_sched_switch_id(struct error *err)
{
	char buf[64], path[256], *end;
	long id;
	int ret = tp_read("id", buf, sizeof(buf), path, sizeof(path), err);

	if (ret)
		return ret;
	errno = 0;
	id = strtol(buf, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (end == buf || *end || errno || id < 0 || id > INT_MAX)
		return error_set(err, ERR_FORMAT, "%s: not a tracepoint id: %.20s", path, buf);
	return (int)id;
}

/* ---- the format file ---- */

/* "\tfield:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:G;" -> NAME (without [N]). */
static bool field_name(const char *decl, size_t len, char *name, size_t cap)
{
	size_t end = len, start;

	while (end && decl[end - 1] == ' ')
		end--;
	if (end && decl[end - 1] == ']')
		while (end && decl[end - 1] != '[')
			end--;
	if (end && decl[end - 1] == '[')
		end--;
	start = end;
	while (start && (decl[start - 1] == '_' || isalnum((unsigned char)decl[start - 1])))
		start--;
	if (start == end || end - start >= cap)
		return false;
	memcpy(name, decl + start, end - start);
	name[end - start] = 0;
	return true;
}

static bool attr_value(const char *line, const char *key, unsigned long *v)
{
	const char *p = strstr(line, key);
	char *end;

	if (!p || !isdigit((unsigned char)p[strlen(key)]))
		return false;
	errno = 0;
	*v = strtoul(p + strlen(key), &end, 10);
	return !errno && *end == ';';
}

static struct perf_tp_field *format_slot(struct perf_sched_switch_format *f, const char *name)
{
	if (!strcmp(name, "prev_comm"))
		return &f->prev_comm;
	if (!strcmp(name, "prev_pid"))
		return &f->prev_pid;
	if (!strcmp(name, "prev_state"))
		return &f->prev_state;
	if (!strcmp(name, "next_pid"))
		return &f->next_pid;
	return NULL;
}

/* One "field:" line (NUL-terminated copy).  Fields we do not use are checked too. */
static int format_line(const char *line, const char *name, unsigned lineno,
		       struct perf_sched_switch_format *f, struct error *err)
{
	const char *decl = strstr(line, "field:") + 6, *semi = strchr(decl, ';');
	unsigned long off, size, sign = 0;
	struct perf_tp_field *slot;
	char fname[64];

	if (!semi || !field_name(decl, (size_t)(semi - decl), fname, sizeof(fname)))
		return error_set(err, ERR_FORMAT, "%s:%u: no field name", name, lineno);
	if (!attr_value(semi, "offset:", &off) || !attr_value(semi, "size:", &size))
		return error_set(err, ERR_FORMAT, "%s:%u: field %s without offset/size", name,
				 lineno, fname);
	if (off > UINT16_MAX || size == 0 || size > UINT16_MAX || off + size > UINT16_MAX)
		return error_set(err, ERR_FORMAT,
				 "%s:%u: field %s offset %lu size %lu out of range", name, lineno,
				 fname, off, size);
	attr_value(semi, "signed:", &sign);
	slot = format_slot(f, fname);
	if (!slot)
		return 0;
	slot->offset = (uint16_t)off;
	slot->size = (uint16_t)size;
	slot->is_signed = sign != 0;
	return 0;
}

static int format_check(const struct perf_sched_switch_format *f, const char *name,
			struct error *err)
{
	static const struct {
		const char *field;
		size_t off;
		bool integer;
	} need[] = {
		{"prev_comm", offsetof(struct perf_sched_switch_format, prev_comm), false},
		{"prev_pid", offsetof(struct perf_sched_switch_format, prev_pid), true},
		{"prev_state", offsetof(struct perf_sched_switch_format, prev_state), true},
		{"next_pid", offsetof(struct perf_sched_switch_format, next_pid), true},
	};

	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		const struct perf_tp_field *fl = (const void *)((const char *)f + need[i].off);

		if (!fl->size)
			return error_set(err, ERR_FORMAT, "%s: field %s missing", name,
					 need[i].field);
		if (need[i].integer && fl->size != 1 && fl->size != 2 && fl->size != 4 &&
		    fl->size != 8)
			return error_set(err, ERR_FORMAT, "%s: field %s has size %u", name,
					 need[i].field, fl->size);
	}
	return 0;
}

int perf_sched_switch_format_parse(const char *text, const char *name,
				   struct perf_sched_switch_format *f, struct error *err)
{
	char line[LINE_MAX_LEN];
	unsigned lineno = 0;

	memset(f, 0, sizeof(*f));
	name = name ? name : "sched_switch format";
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		int ret;

		lineno++;
		if (!strncmp(p + strspn(p, " \t"), "field:", 6)) {
			if (len >= sizeof(line))
				return error_set(err, ERR_FORMAT, "%s:%u: line longer than %zu",
						 name, lineno, sizeof(line) - 1);
			memcpy(line, p, len);
			line[len] = 0;
			ret = format_line(line, name, lineno, f, err);
			if (ret)
				return ret;
		}
		p += len + (nl != NULL);
	}
	return format_check(f, name, err);
}

/* ---- decoding ---- */

static int64_t field_int(const struct perf_tp_field *fl, const uint8_t *p)
{
	switch (fl->size) {
	case 1: return fl->is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
	case 2: {
		uint16_t v;

		memcpy(&v, p, 2);
		return fl->is_signed ? (int64_t)(int16_t)v : (int64_t)v;
	}
	case 4: {
		uint32_t v;

		memcpy(&v, p, 4);
		return fl->is_signed ? (int64_t)(int32_t)v : (int64_t)v;
	}
	default: {
		int64_t v;

		memcpy(&v, p, 8);
		return v;
	}
	}
}

static int field_fits(const struct perf_tp_field *fl, const char *what, size_t size,
		      struct error *err)
{
	if (!fl->size || (size_t)fl->offset + fl->size > size)
		return error_set(err, ERR_FORMAT,
				 "sched_switch raw data: field %s at bytes %u..%u runs past its "
				 "size %zu",
				 what, fl->offset, fl->offset + fl->size, size);
	return 0;
}

int perf_sched_switch_decode(const struct perf_sched_switch_format *f, const void *raw, size_t size,
			     struct perf_sched_switch *out, struct error *err)
{
	const uint8_t *p = raw;
	size_t n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!raw && size)
		return error_set(err, ERR_USAGE, "sched_switch raw data: NULL");
	ret = field_fits(&f->prev_comm, "prev_comm", size, err);
	ret = ret ? ret : field_fits(&f->prev_pid, "prev_pid", size, err);
	ret = ret ? ret : field_fits(&f->prev_state, "prev_state", size, err);
	ret = ret ? ret : field_fits(&f->next_pid, "next_pid", size, err);
	if (ret)
		return ret;
	n = MIN((size_t)f->prev_comm.size, sizeof(out->prev_comm) - 1);
	memcpy(out->prev_comm, p + f->prev_comm.offset, n);
	out->prev_comm[n] = 0;
	out->prev_pid = (uint32_t)field_int(&f->prev_pid, p + f->prev_pid.offset);
	out->next_pid = (uint32_t)field_int(&f->next_pid, p + f->next_pid.offset);
	out->prev_state = field_int(&f->prev_state, p + f->prev_state.offset);
	return 0;
}

/* ---- the running kernel's format, read once ---- */

static struct {
	pthread_once_t once;
	struct perf_sched_switch_format fmt;
	struct error err;
} sys_format = {PTHREAD_ONCE_INIT, {{0}}, ERROR_INIT};

static void sys_format_load(void)
{
	char *text = xmalloc(FORMAT_MAX), path[256];

	if (!tp_read("format", text, FORMAT_MAX, path, sizeof(path), &sys_format.err))
		perf_sched_switch_format_parse(text, path, &sys_format.fmt, &sys_format.err);
	free(text);
}

int perf_sched_switch_parse(const void *raw, size_t size, struct perf_sched_switch *out,
			    struct error *err)
{
	pthread_once(&sys_format.once, sys_format_load);
	if (sys_format.err.code) {
		memset(out, 0, sizeof(*out));
		return error_set(err, sys_format.err.code, "%s", sys_format.err.msg);
	}
	return perf_sched_switch_decode(&sys_format.fmt, raw, size, out, err);
}
