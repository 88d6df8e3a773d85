/* SPDX-License-Identifier: MIT */
/* The agent's profiles: sample types, samples, labels and comments (see export.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/export/export.h"
#include "agent/sdk/labels.h"
#include "agent/core/live.h"
#include "agent/export/pprof.h"
#include "agent/export/push_module.h"
#include "agent/sdk/region.h"
#include "util/banned.h"

enum col {
	COL_SAMPLES,
	COL_CPU,
	COL_WALL,
	COL_ALLOC_OBJECTS,
	COL_ALLOC_SPACE,
	COL_INUSE_OBJECTS,
	COL_INUSE_SPACE,
	COL_CONTENTIONS,
	COL_DELAY,
	COL_COUNT
};

static const char *const col_name[COL_COUNT] = {
	"samples",	 "cpu",		"wall",	       "alloc_objects", "alloc_space",
	"inuse_objects", "inuse_space", "contentions", "delay",
};
static const char *const col_unit[COL_COUNT] = {
	"count", "nanoseconds", "nanoseconds", "count",	      "bytes",
	"count", "bytes",	"count",       "nanoseconds",
};

struct columns {
	int of[COL_COUNT]; /* output column, -1 when off */
	const char *names[COL_COUNT], *units[COL_COUNT];
	uint32_t n;
};

static void columns_init(struct columns *c, unsigned modes)
{
	static const unsigned mode_of[COL_COUNT] = {
		AGENT_MODE_CPU | AGENT_MODE_WALL | AGENT_MODE_ALLOC | AGENT_MODE_LOCK,
		AGENT_MODE_CPU,
		AGENT_MODE_WALL,
		AGENT_MODE_ALLOC,
		AGENT_MODE_ALLOC,
		AGENT_MODE_ALLOC,
		AGENT_MODE_ALLOC,
		AGENT_MODE_LOCK,
		AGENT_MODE_LOCK,
	};

	c->n = 0;
	for (int i = 0; i < COL_COUNT; i++) {
		c->of[i] = -1;
		if (!(modes & mode_of[i]))
			continue;
		c->of[i] = (int)c->n;
		c->names[c->n] = col_name[i];
		c->units[c->n++] = col_unit[i];
	}
}

static int64_t unweight(int64_t fixed)
{
	return (int64_t)llround((double)fixed / AGENT_WEIGHT_ONE);
}

static void entry_values(const struct columns *c, const struct agent_entry *e, int64_t *v)
{
	memset(v, 0, c->n * sizeof(*v));
	v[c->of[COL_SAMPLES]] = e->n;
	switch (e->kind) {
	case AGENT_KIND_CPU:
		if (c->of[COL_CPU] >= 0)
			v[c->of[COL_CPU]] = e->v0;
		break;
	case AGENT_KIND_WALL:
		if (c->of[COL_WALL] >= 0)
			v[c->of[COL_WALL]] = e->v0;
		break;
	case AGENT_KIND_ALLOC:
		if (c->of[COL_ALLOC_OBJECTS] >= 0) {
			v[c->of[COL_ALLOC_OBJECTS]] = unweight(e->v0);
			v[c->of[COL_ALLOC_SPACE]] = e->v1;
		}
		break;
	case AGENT_KIND_INUSE:
		if (c->of[COL_INUSE_OBJECTS] >= 0) {
			v[c->of[COL_INUSE_OBJECTS]] = unweight(e->v0);
			v[c->of[COL_INUSE_SPACE]] = e->v1;
		}
		break;
	case AGENT_KIND_LOCK:
		if (c->of[COL_CONTENTIONS] >= 0) {
			v[c->of[COL_CONTENTIONS]] = unweight(e->v0);
			v[c->of[COL_DELAY]] = e->v1;
		}
		break;
	}
}

/* Samples, values and labels laid out for the encoder, all owned here. */
struct export
{
	struct agent_pprof_sample *samples;
	int64_t *values;
	struct agent_pprof_label *labels;
	size_t n, alloc;
	struct columns cols;
};

static int export_reserve(struct export *x, size_t more)
{
	size_t want = x->n + more, na;

	if (want <= x->alloc)
		return 0;
	na = x->alloc ? x->alloc : 1024;
	while (na < want)
		na *= 2;
	x->samples = realloc(x->samples, na * sizeof(*x->samples));
	x->values = realloc(x->values, na * COL_COUNT * sizeof(*x->values));
	x->labels = realloc(x->labels, na * AGENT_KEY_LABELS * sizeof(*x->labels));
	if (!x->samples || !x->values || !x->labels)
		return -ENOMEM;
	x->alloc = na;
	return 0;
}

static void export_free(struct export *x)
{
	free(x->samples);
	free(x->values);
	free(x->labels);
}

/* Append one sample; pointers are fixed up after the last realloc (export_finish). */
static void export_add(struct export *x, const uintptr_t *pcs, size_t npcs, const int64_t *v,
		       const uint32_t *labels, unsigned nlabels)
{
	struct agent_pprof_sample *s = &x->samples[x->n];
	struct agent_pprof_label *l = &x->labels[x->n * AGENT_KEY_LABELS];

	memset(s, 0, sizeof(*s));
	s->pcs = pcs;
	s->npcs = (uint32_t)npcs;
	memcpy(&x->values[x->n * COL_COUNT], v, x->cols.n * sizeof(*v));
	for (unsigned i = 0; i < nlabels && s->nlabels < AGENT_KEY_LABELS; i++) {
		const char *k, *val;

		if (!agent_label_get(labels[i], &k, &val))
			continue;
		memset(&l[s->nlabels], 0, sizeof(*l));
		l[s->nlabels].key = k;
		l[s->nlabels++].str = val;
	}
	x->n++;
}

static void export_finish(struct export *x)
{
	for (size_t i = 0; i < x->n; i++) {
		x->samples[i].values = &x->values[i * COL_COUNT];
		x->samples[i].labels = &x->labels[i * AGENT_KEY_LABELS];
	}
}

/* One live sampled block: summed per (stack, labels) in fixed point, rounded once. */
static void add_live(const struct agent_live_entry *le, void *arg)
{
	struct agent_agg *inuse = arg;
	struct agent_entry k;

	memset(&k, 0, sizeof(k));
	k.kind = AGENT_KIND_INUSE;
	k.nframes = le->nframes;
	k.pcs = (uintptr_t *)le->pcs;
	k.nlabels = le->nlabels < AGENT_MAX_LABELS ? le->nlabels : AGENT_MAX_LABELS;
	memcpy(k.labels, le->labels, k.nlabels * sizeof(k.labels[0]));
	qsort(k.labels, k.nlabels, sizeof(k.labels[0]), agent_cmp_u32);
	k.v0 = (int64_t)llround(le->weight * AGENT_WEIGHT_ONE);
	k.v1 = (int64_t)llround(le->weight * (double)le->size);
	k.n = 1;
	k.hash = agent_entry_hash(&k);
	agent_agg_add(inuse, &k);
}

#define COUNTER_COMMENTS 10 /* the counters below */

static void counters_comments(char (*buf)[96], const char **out, uint32_t *n)
{
	const struct agent_counters *c = &agent_state.counters;
	struct {
		const char *name;
		uint64_t v;
	} rows[] = {
		{"samples", atomic_load(&c->samples)},
		{"dropped_ring_full", atomic_load(&c->dropped_full)},
		{"dropped_nested", atomic_load(&c->dropped_busy)},
		{"dropped_no_thread_slot", atomic_load(&c->dropped_nothread)},
		{"inuse_table_full", atomic_load(&c->live_full)},
		{"label_overflow", atomic_load(&c->label_overflow)},
		{"profiles_pushed", atomic_load(&c->profiles_pushed)},
		{"profiles_dropped", atomic_load(&c->profiles_dropped)},
		{"wall_clock_reads", atomic_load(&c->wall_reads)},
		{"wall_signals", atomic_load(&c->wall_signals)},
	};

	_Static_assert(sizeof(rows) / sizeof(rows[0]) == COUNTER_COMMENTS, "cbuf's size");

	*n = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(buf[i], sizeof(buf[i]), "plateau agent: %s=%llu", rows[i].name,
			 (unsigned long long)rows[i].v);
		out[(*n)++] = buf[i];
	}
}

static void region_comments(char (*buf)[320], const char **out, uint32_t *n, uint32_t max)
{
	size_t nr = agent_region_count();

	for (size_t i = 0; i < nr && *n < max; i++) {
		struct plateau_region_stats st;
		const char *name = agent_region_get(i, &st);

		snprintf(buf[*n], sizeof(buf[0]),
			 "plateau region: %.200s calls=%llu measured=%llu p50_ns=%llu p95_ns=%llu "
			 "p99_ns=%llu max_ns=%llu",
			 name, (unsigned long long)st.calls, (unsigned long long)st.measured,
			 (unsigned long long)st.p50_ns, (unsigned long long)st.p95_ns,
			 (unsigned long long)st.p99_ns, (unsigned long long)st.max_ns);
		out[*n] = buf[*n];
		(*n)++;
	}
}

/* Encode AGG (plus the in-use table when INUSE) into gzipped pprof. */
int agent_export_encode(const struct agent_agg *a, bool inuse, uint64_t start_ns, uint64_t end_ns,
			struct agent_symtab **st, uint8_t **out, size_t *outlen)
{
	static char cbuf[COUNTER_COMMENTS][96], rbuf[64][320];
	const char *comments[COUNTER_COMMENTS + 64];
	struct agent_pprof_input in;
	struct export x;
	struct agent_agg live;
	int64_t v[COL_COUNT];
	int rc = -ENOMEM;

	memset(&x, 0, sizeof(x));
	memset(&live, 0, sizeof(live));
	columns_init(&x.cols, agent_state.cfg.modes);
	if (inuse && (agent_state.cfg.modes & AGENT_MODE_ALLOC))
		agent_live_foreach(add_live, &live);
	if (x.cols.n == 0 || export_reserve(&x, a->n + live.n + 1) != 0)
		goto out;
	for (size_t i = 0; i < a->n + live.n; i++) {
		const struct agent_entry *e = i < a->n ? &a->e[i] : &live.e[i - a->n];

		entry_values(&x.cols, e, v);
		export_add(&x, e->pcs, e->nframes, v, e->labels, e->nlabels);
	}
	export_finish(&x);
	memset(&in, 0, sizeof(in));
	in.type_names = x.cols.names;
	in.type_units = x.cols.units;
	in.ntypes = x.cols.n;
	if (agent_state.cfg.modes & (AGENT_MODE_CPU | AGENT_MODE_WALL)) {
		in.period_type = (agent_state.cfg.modes & AGENT_MODE_CPU) ? "cpu" : "wall";
		in.period_unit = "nanoseconds";
		in.period = (int64_t)agent_state.interval_ns;
	} else if (agent_state.cfg.modes & AGENT_MODE_ALLOC) {
		in.period_type = "space";
		in.period_unit = "bytes";
		in.period = (int64_t)agent_state.cfg.alloc_rate;
	} else {
		in.period_type = "delay";
		in.period_unit = "nanoseconds";
		in.period = (int64_t)agent_state.cfg.lock_threshold_ns;
	}
	/* What a viewer shows first: CPU time, else wall time, else bytes, else delay. */
	for (int c = 0, pick[] = {COL_CPU, COL_WALL, COL_ALLOC_SPACE, COL_DELAY}; c < 4; c++)
		if (x.cols.of[pick[c]] >= 0) {
			in.default_type = (uint32_t)x.cols.of[pick[c]];
			break;
		}
	in.time_nanos = (int64_t)start_ns;
	in.duration_nanos = (int64_t)(end_ns - start_ns);
	counters_comments(cbuf, comments, &in.ncomments);
	region_comments(rbuf, comments, &in.ncomments, COUNTER_COMMENTS + 64);
	in.comments = comments;
	in.samples = x.samples;
	in.nsamples = x.n;
	if (!*st)
		*st = agent_symtab_new();
	if (*st)
		agent_symtab_refresh(*st);
	rc = agent_pprof_encode(&in, *st, out, outlen);
out:
	export_free(&x);
	agent_agg_clear(&live);
	return rc;
}

int agent_export_write_file(const char *path, const uint8_t *data, size_t len)
{
	char tmp[AGENT_PATH_MAX + 32];
	size_t off = 0;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int agent_push_module_load(struct agent_push_api *api)
{
	char path[AGENT_PATH_MAX];
	const char *slash;
	Dl_info info;
	void *h;

	/* Beside this library, wherever it was loaded from. */
	if (!dladdr((void *)agent_push_module_load, &info) || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/')) ||
	    snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
		     AGENT_PUSH_MODULE) >= (int)sizeof(path))
		snprintf(path, sizeof(path), "%s", AGENT_PUSH_MODULE);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h) {
		api->create = (struct agent_push *
			       (*)(const struct agent_config *, const struct agent_push_opts *))
			dlsym(h, "agent_push_new");
		api->enqueue = (int (*)(struct agent_push *, uint8_t *, size_t, uint64_t, uint64_t,
					const char *))dlsym(h, "agent_push_enqueue");
		api->stop = (void (*)(struct agent_push *, uint64_t,
				      struct agent_push_counters *))dlsym(h, "agent_push_stop");
	}
	if (!h || !api->create || !api->enqueue || !api->stop) {
		agent_warn("cannot load %s: profiles are not pushed to %s", path,
			   agent_state.cfg.server);
		memset(api, 0, sizeof(*api));
		return -1;
	}
	return 0;
}
