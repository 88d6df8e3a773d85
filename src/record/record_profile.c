/* SPDX-License-Identifier: MIT */
/* The recorder's end: every distinct (mapping, address) symbolized once, into a profile. */
#include "util/common.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/record_int.h"
#include "symbol/symname.h"

/* ---- symbolization ---- */

/* One symbolized (map, address): frames[first .. first + n) innermost first. */
struct symres {
	uint32_t map;
	uint64_t addr;
	uint32_t first, n;
	uint8_t reason; /* 0 when named */
};

struct symctx {
	struct recorder *r;
	struct profile *p;
	struct symbolizer *s;
	struct symres *res;
	size_t nr_res, alloc_res;
	struct idhash index;
	uint32_t *frames;
	size_t nr_frames, alloc_frames;
	uint8_t *map_state; /* per map: 0 not tried, 1 module made, 2 no module (reason below) */
	uint8_t *map_reason;
	uint32_t kernel_module, unknown_module;
};

const char *record_reason_fix(unsigned i)
{
	switch (i) {
	case SYM_STRIPPED:
		return "the file has no .symtab and no debug file was found: install its debug "
		       "symbols (Debian: the -dbgsym package, under /usr/lib/debug) or keep them "
		       "when building";
	case SYM_NO_FILE:
	case SYM_DELETED:
		return "the mapped file is gone: keep it, or its debug file by build-id, until "
		       "recording ends";
	case SYM_BUILD_ID: return "the file on disk is not the one that ran: restart the program";
	case REC_REASON_JIT:
		return "code a runtime generated: have it write /tmp/perf-PID.map (node "
		       "--perf-basic-prof, python3 -X perf, Java's perf-map-agent)";
	default: return NULL;
	}
}

const char *record_reason_str(unsigned i)
{
	if (i == REC_REASON_JIT)
		return "JIT code without /tmp/perf-PID.map";
	if (i == REC_REASON_NO_MAP)
		return "no mapping known";
	return sym_reason_str((enum sym_reason)i);
}

/*
 * The vDSO is the same image in every process: copy ours once into a
 * memfd (nothing to clean up, whatever happens) and read it through
 * /proc/self/fd.
 */
static const char *vdso_file(struct recorder *r)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f;
	char line[256];
	unsigned long long start = 0, end = 0;
	int fd;

	if (r->vdso_path[0])
		return r->vdso_path[0] == '-' ? NULL : r->vdso_path;
	snprintf(r->vdso_path, sizeof(r->vdso_path), "-");
	if (!base || !(f = fopen("/proc/self/maps", "re")))
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
	fclose(f);
	if (start != base || end <= start || end - start > (64u << 20))
		return NULL;
	fd = memfd_create("plateau-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)base, end - start) != (ssize_t)(end - start)) {
		close(fd);
		return NULL;
	}
	r->vdso_fd = fd;
	snprintf(r->vdso_path, sizeof(r->vdso_path), "/proc/self/fd/%d", fd);
	return r->vdso_path;
}

static struct sym_module *map_module(struct symctx *c, uint32_t id)
{
	struct recorder *r = c->r;
	struct rec_map *m = &r->maps[id];
	const char *path = strtab_str(&r->strs, m->path);
	char buf[64];

	if (c->map_state[id] == 1)
		return m->sm;
	if (c->map_state[id] == 2)
		return NULL;
	c->map_state[id] = 2;
	if (id == MAP_KERNEL) {
		m->sm = symbolizer_module(c->s, "[kernel.kallsyms]", 0, UINT64_MAX, 0, NULL);
	} else if (m->jitpid) {
		snprintf(buf, sizeof(buf), "/tmp/perf-%u.map", m->jitpid);
		if (access(buf, R_OK)) {
			c->map_reason[id] = REC_REASON_JIT;
			return NULL;
		}
		m->sm = symbolizer_module(c->s, buf, m->start, m->end, m->pgoff, NULL);
	} else if (!strcmp(path, "[vdso]")) {
		const char *f = vdso_file(r);

		if (!f) {
			c->map_reason[id] = SYM_NO_FILE;
			return NULL;
		}
		m->sm = symbolizer_module(c->s, f, m->start, m->end, 0, NULL);
	} else {
		char file[96];

		/* a deleted file the warmer opened through map_files is in the symbolizer already */
		path = rec_map_file(r, m, file, sizeof(file), !m->del_warm);
		m->sm = symbolizer_module(c->s, path, m->start, m->end, m->pgoff,
					  m->bid ? strtab_str(&r->strs, m->bid) : NULL);
	}
	c->map_state[id] = 1;
	return m->sm;
}

static uint32_t unnamed_frame(struct symctx *c, uint32_t map, uint64_t addr, uint64_t offset,
			      bool have_offset)
{
	struct recorder *r = c->r;
	struct frame f = {0};
	char buf[4200];

	f.addr = addr;
	f.flags = FRAME_UNSYMBOLIZED;
	if (map == 0) {
		snprintf(buf, sizeof(buf), "[unknown]");
	} else if (map == MAP_KERNEL) {
		snprintf(buf, sizeof(buf), "[kernel.kallsyms]+0x%" PRIx64, addr);
		f.flags |= FRAME_KERNEL;
		f.module = c->kernel_module;
	} else {
		const struct rec_map *m = &r->maps[map];
		const char *path = strtab_str(&r->strs, m->path);

		if (!have_offset)
			offset = addr - m->start + m->pgoff;
		/* The agent names such code the same way (symbol/symname.h). */
		symname_unnamed(buf, sizeof(buf), rec_path_is_anon(path) ? "[anon]" : path, offset);
		f.module = profile_intern_str(c->p, path);
		if (m->jitpid)
			f.flags |= FRAME_JIT;
	}
	f.name = profile_intern_str(c->p, buf);
	return profile_intern_frame(c->p, &f);
}

static void push_frame(struct symctx *c, uint32_t id)
{
	ALLOC_GROW(c->frames, c->nr_frames + 1, c->alloc_frames);
	c->frames[c->nr_frames++] = id;
}

/* Symbolize (map, addr) into c->res[...]; lookup_addr is addr or addr - 1 for return addresses. */
static const struct symres *symbolize_one(struct symctx *c, uint32_t map, uint64_t lookup)
{
	uint32_t h = (uint32_t)hash_u64(lookup * 31 + map), pos = h, id;
	struct sym_frame out[MAX_SYM_FRAMES];
	struct symres *res;
	struct sym_module *sm;
	struct error e = {0};
	int n = 0;

	while ((id = idhash_probe(&c->index, h, &pos)) != IDHASH_NONE)
		if (c->res[id].map == map && c->res[id].addr == lookup)
			return &c->res[id];
	ALLOC_GROW(c->res, c->nr_res + 1, c->alloc_res);
	res = &c->res[c->nr_res];
	memset(res, 0, sizeof(*res));
	res->map = map;
	res->addr = lookup;
	res->first = (uint32_t)c->nr_frames;
	idhash_insert(&c->index, h, (uint32_t)c->nr_res++);
	sm = map ? map_module(c, map) : NULL;
	out[0].reason = map ? (enum sym_reason)c->map_reason[map] : SYM_OK;
	out[0].offset = 0;
	if (sm)
		n = symbolizer_lookup(c->s, sm, lookup, out, ARRAY_SIZE(out), &e);
	if (n <= 0) {
		res->reason = map == 0 ? REC_REASON_NO_MAP : (uint8_t)out[0].reason;
		if (!res->reason)
			res->reason = SYM_NO_SYMBOL;
		push_frame(c, unnamed_frame(c, map, lookup, out[0].offset, sm && out[0].offset));
		res->n = 1;
		return res;
	}
	for (int i = 0; i < n; i++) {
		struct frame f = {0};

		f.name = profile_intern_str(c->p, out[i].function);
		f.file = out[i].file ? profile_intern_str(c->p, out[i].file) : 0;
		f.line = out[i].line;
		f.addr = lookup;
		if (out[i].flags & SYM_FRAME_INLINED)
			f.flags |= FRAME_INLINED;
		if (map == MAP_KERNEL) {
			f.flags |= FRAME_KERNEL;
			f.module = c->kernel_module;
		} else {
			const struct rec_map *m = &c->r->maps[map];
			char jit[64];

			/* JIT frames come from the perf map: their module says so (pprof keeps it). */
			if (m->jitpid)
				snprintf(jit, sizeof(jit), "/tmp/perf-%u.map", m->jitpid);
			f.module = profile_intern_str(
				c->p, m->jitpid ? jit : strtab_str(&c->r->strs, m->path));
			if (m->jitpid)
				f.flags |= FRAME_JIT;
		}
		push_frame(c, profile_intern_frame(c->p, &f));
	}
	res->n = (uint32_t)n;
	return res;
}

static bool is_thread_root(const char *name)
{
	static const char *const roots[] = {
		"_start",
		"__libc_start_main",
		"__libc_start_call_main",
		"start_thread",
		"clone",
		"clone3",
		"__clone",
		"__clone3",
		"_dl_start_user",
		"__GI___clone3",
		"__GI___clone",
	};

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(name, roots[i]))
			return true;
	return false;
}

/*
 * Does a user stack whose outermost frame is s reach a thread's entry
 * point?  An outermost frame in no mapping is a walk gone astray; one in
 * a stripped or deleted file cannot be told, and is not held against it.
 */
static bool stack_rooted(struct symctx *c, const struct symres *s)
{
	if (s->reason)
		return s->reason != REC_REASON_NO_MAP;
	return is_thread_root(profile_str(c->p, c->p->frames[c->frames[s->first + s->n - 1]].name));
}

static void profile_setup(struct recorder *r, struct profile *p)
{
	if (r->t_samples >= 0) {
		profile_add_type(p, "samples", "count");
		profile_add_type(p, "cpu", "nanoseconds");
	}
	if (r->t_offcpu >= 0)
		profile_add_type(p, "offcpu", "nanoseconds");
	if (r->t_wall >= 0)
		profile_add_type(p, "wall", "nanoseconds");
	p->default_type = (uint32_t)(r->t_cpu >= 0	? r->t_cpu
				     : r->t_offcpu >= 0 ? r->t_offcpu
							: r->t_wall);
	/*
	 * Off-CPU and wall values are durations, not counts: their intervals
	 * treat them as if sampled at the cpu-clock period (see stats.c).
	 */
	p->period_type.type = profile_intern_str(p, r->t_cpu >= 0 ? "cpu" : "wall");
	p->period_type.unit = profile_intern_str(p, "nanoseconds");
	p->period = (int64_t)(1000000000u / r->o.freq);
	p->time_nanos = (int64_t)r->t0.tv_sec * 1000000000 + r->t0.tv_nsec;
	p->duration_nanos = (int64_t)r->st.duration_ns;
}

/* The frames of one address of a stack seen count times, named or not. */
static void count_frames(struct recorder *r, const struct symres *s, uint64_t count)
{
	r->st.frames_total += (uint64_t)s->n * count;
	if (!s->reason)
		return;
	r->st.frames_unnamed += count;
	if (s->reason < REC_NR_REASONS)
		r->st.frames_unnamed_by_reason[s->reason] += count;
}

/* Add stack id's values to the profile; returns ERR_LIMIT on overflow. */
static int add_stack(struct symctx *c, uint32_t id, uint32_t **buf, size_t *alloc)
{
	struct recorder *r = c->r;
	const uint8_t *k = (const uint8_t *)strtab_str(&r->stacks, id);
	size_t len = strtab_len(&r->stacks, id), nf = (len - KEY_HDR) / KEY_FRAME, n = 0;
	uint32_t hdr[3], labels = 0;
	int reason = -1;
	bool user = false, rooted = false;

	memcpy(hdr, k, sizeof(hdr));
	ALLOC_GROW(*buf, 1, *alloc);
	(*buf)[n++] = hdr[0] ? profile_frame_named(c->p, strtab_str(&r->strs, hdr[0]),
						   strtab_len(&r->strs, hdr[0]))
			     : profile_frame_named(c->p, "[unknown]", 9);
	/* user frames outermost first, then kernel frames outermost first */
	for (size_t pass = 0; pass < 2; pass++) {
		size_t lo = pass == 0 ? hdr[2] : 0, hi = pass == 0 ? nf : hdr[2];

		for (size_t i = hi; i-- > lo;) {
			uint32_t map;
			uint64_t addr;
			const struct symres *s;

			key_get(k + KEY_HDR + i * KEY_FRAME, &map, &addr);
			s = symbolize_one(c, map, i == lo || !addr ? addr : addr - 1);
			if (s->reason && reason < 0)
				reason = s->reason;
			count_frames(r, s, r->counts[id]);
			if (pass == 0) {
				if (!user)
					rooted = stack_rooted(c, s);
				user = true;
			}
			ALLOC_GROW(*buf, n + s->n, *alloc);
			for (uint32_t j = s->n; j-- > 0;)
				(*buf)[n++] = c->frames[s->first + j];
		}
	}
	if (hdr[1]) {
		struct label l = {.key = profile_intern_str(c->p, "thread"),
				  .str = profile_intern_str(c->p, strtab_str(&r->strs, hdr[1]))};

		labels = profile_intern_labels(c->p, &l, 1);
	}
	r->st.stacks_total += r->counts[id];
	if (reason >= 0) {
		r->st.unnamed_samples += r->counts[id];
		if (reason < REC_NR_REASONS)
			r->st.unnamed_by_reason[reason] += r->counts[id];
	}
	if (user && !rooted)
		r->st.truncated_samples += r->counts[id];
	return profile_add_sample(c->p, profile_stack(c->p, *buf, n), labels,
				  r->vals + (size_t)id * r->nr_types);
}

struct profile *recorder_profile(struct recorder *r, struct error *err)
{
	struct symctx c = {.r = r};
	struct profile *p = profile_new();
	uint32_t *buf = NULL;
	size_t alloc = 0;
	int ret = 0;

	profile_setup(r, p);
	c.p = p;
	c.s = rec_warm_stop(r);
	if (!c.s && r->pre_sym) {
		c.s = r->pre_sym;
		r->pre_sym = NULL;
	}
	if (!c.s)
		c.s = symbolizer_new();
	c.map_state = xcalloc(r->nr_maps + 1, 1);
	c.map_reason = xcalloc(r->nr_maps + 1, 1);
	c.kernel_module = profile_intern_str(p, "[kernel.kallsyms]");
	for (uint32_t id = 1; id < r->stacks.nr && !ret; id++)
		ret = add_stack(&c, id, &buf, &alloc);
	free(buf);
	free(c.res);
	free(c.frames);
	free(c.map_state);
	free(c.map_reason);
	idhash_release(&c.index);
	symbolizer_free(c.s);
	if (ret) {
		profile_free(p);
		error_set(err, ERR_LIMIT, "record: a value overflows 64 bits");
		return NULL;
	}
	return p;
}
