/* SPDX-License-Identifier: MIT */
/*
 * The collector thread (see collect.h).  It is the only consumer of the
 * rings and the only writer of the aggregates, so nothing here locks except
 * `mu`, which serialises the thread against the final flush at exit and
 * against fork.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/alloc.h"
#include "agent/collect.h"
#include "agent/cpu.h"
#include "agent/labels.h"
#include "agent/live.h"
#include "agent/pprof.h"
#include "agent/push_module.h"
#include "agent/region.h"
#include "agent/ring.h"
#include "agent/symtab.h"
#include "agent/thread.h"
#include "agent/unwind.h"
#include "agent/spinlock.h"
#include "util/banned.h"

#define DRAIN_NS   (50 * 1000000ull)	  /* rings are drained this often */
#define HELD_MAX   4096			  /* samples held per thread for a request */
#define KEY_LABELS (AGENT_MAX_LABELS + 3) /* the thread's, + thread, state, latency */
#define NAME_NS	   (10 * 1000000000ull)	  /* thread names are re-read this often */

/* ---- aggregates: (kind, labels, stack) -> two sums ---- */

#define AGENT_KIND_INUSE AGENT_KIND_COUNT /* entries of the in-use snapshot */

struct entry {
	uint64_t hash;
	uint16_t kind, nframes;
	uint8_t nlabels;
	uint32_t labels[KEY_LABELS];
	uintptr_t *pcs;
	int64_t v0, v1;
	int64_t n; /* samples behind the sums: the count the sampling error comes from */
};

struct agg {
	struct entry *e;
	size_t n, alloc;
	uint32_t *index; /* open addressing: entry + 1, 0 = empty */
	size_t index_size;
};

/* What the collector knows about one thread slot. */
struct slot_state {
	uint32_t gen;
	uint32_t name_label;
	uint64_t name_read;
	int64_t last_wall[2]; /* entry index + 1 in cum / delta, 0 = none */
	struct agent_sample **held;
	size_t nheld;
	uint32_t held_request;
};

static struct {
	struct agent_lock mu;
	pthread_t thread;
	atomic_bool on;
	bool want_file, want_push;
	struct agg cum, delta;
	struct slot_state *slots; /* AGENT_MAX_THREADS */
	struct agent_symtab *symtab;
	struct agent_push *push;
	struct agent_push_api push_api;
	uint64_t delta_start_ns; /* CLOCK_REALTIME */
	char output[AGENT_PATH_MAX];
	uint32_t state_label[2], slow_label;
} co = {.mu = AGENT_LOCK_INIT};

static uint64_t hash_key(const struct entry *k)
{
	uint64_t h = 0xcbf29ce484222325u ^ k->kind ^ ((uint64_t)k->nlabels << 16);

	for (unsigned i = 0; i < k->nlabels; i++)
		h = (h ^ k->labels[i]) * 0x100000001b3u;
	for (unsigned i = 0; i < k->nframes; i++)
		h = (h ^ k->pcs[i]) * 0x100000001b3u;
	return h ^ (h >> 29);
}

static bool same_key(const struct entry *a, const struct entry *b)
{
	return a->hash == b->hash && a->kind == b->kind && a->nframes == b->nframes &&
	       a->nlabels == b->nlabels &&
	       !memcmp(a->labels, b->labels, a->nlabels * sizeof(a->labels[0])) &&
	       !memcmp(a->pcs, b->pcs, a->nframes * sizeof(a->pcs[0]));
}

static int agg_grow_index(struct agg *a)
{
	size_t size = a->index_size ? a->index_size * 2 : 4096;
	uint32_t *idx = calloc(size, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		size_t j = a->e[i].hash & (size - 1);

		while (idx[j])
			j = (j + 1) & (size - 1);
		idx[j] = (uint32_t)i + 1;
	}
	free(a->index);
	a->index = idx;
	a->index_size = size;
	return 0;
}

/* Add K's values to its entry (created with a copy of K's pcs). Returns the entry index or -1. */
static ssize_t agg_add(struct agg *a, const struct entry *k)
{
	size_t j;

	if ((a->n + 1) * 2 > a->index_size && agg_grow_index(a) != 0)
		return -1;
	for (j = k->hash & (a->index_size - 1); a->index[j]; j = (j + 1) & (a->index_size - 1)) {
		struct entry *e = &a->e[a->index[j] - 1];

		if (same_key(e, k)) {
			e->v0 += k->v0;
			e->v1 += k->v1;
			e->n += k->n;
			return (ssize_t)(a->index[j] - 1);
		}
	}
	if (a->n == a->alloc) {
		size_t na = a->alloc ? a->alloc * 2 : 1024;
		struct entry *ne = realloc(a->e, na * sizeof(*ne));

		if (!ne)
			return -1;
		a->e = ne;
		a->alloc = na;
	}
	a->e[a->n] = *k;
	a->e[a->n].pcs = malloc(k->nframes * sizeof(uintptr_t) + 1);
	if (!a->e[a->n].pcs)
		return -1;
	memcpy(a->e[a->n].pcs, k->pcs, k->nframes * sizeof(uintptr_t));
	a->index[j] = (uint32_t)a->n + 1;
	return (ssize_t)a->n++;
}

static void agg_clear(struct agg *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->e[i].pcs);
	free(a->e);
	free(a->index);
	memset(a, 0, sizeof(*a));
}

/* ---- turning ring records into keys ---- */

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The sample's labels with inner ones hiding outer ones of the same key, sorted. */
static unsigned key_labels(const struct agent_sample *s, uint32_t *out)
{
	int keys[AGENT_MAX_LABELS];
	unsigned n = 0;

	for (int i = (int)s->nlabels - 1; i >= 0; i--) {
		int k = agent_label_key(s->labels[i]);
		bool hidden = false;

		for (unsigned j = 0; j < n; j++)
			hidden |= keys[j] == k;
		if (k < 0 || hidden)
			continue;
		keys[n] = k;
		out[n++] = s->labels[i];
	}
	return n;
}

static void thread_name(struct slot_state *ss, const struct agent_thread *t)
{
	char path[64], name[32] = "";
	uint64_t now = agent_now_mono();
	ssize_t n;
	int fd;

	if (ss->name_label && now - ss->name_read < NAME_NS)
		return;
	ss->name_read = now;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, name, sizeof(name) - 1);
		close(fd);
		name[n > 0 ? n : 0] = 0;
		name[strcspn(name, "\n")] = 0;
	}
	if (!*name)
		memcpy(name, t->name, sizeof(t->name));
	name[sizeof(name) - 1] = 0;
	if (*name)
		ss->name_label = agent_label_intern("thread", name);
}

static void add_entry(struct slot_state *ss, struct entry *k, bool is_wall)
{
	struct agg *aggs[2] = {co.want_file ? &co.cum : NULL, co.want_push ? &co.delta : NULL};

	qsort(k->labels, k->nlabels, sizeof(k->labels[0]), cmp_u32);
	k->hash = hash_key(k);
	for (int i = 0; i < 2; i++) {
		ssize_t at;

		if (!aggs[i])
			continue;
		at = agg_add(aggs[i], k);
		if (is_wall && ss)
			ss->last_wall[i] = at + 1;
	}
}

/* The agent's own code: frames there (the thread trampoline) are not the program's. */
static uintptr_t self_lo, self_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	const Dl_info *me = arg;

	(void)size;
	if ((void *)info->dlpi_addr != me->dli_fbase && info->dlpi_addr)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if ((uintptr_t)find_self >= lo && (uintptr_t)find_self < lo + ph->p_memsz) {
			self_lo = lo;
			self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static void find_self_text(void)
{
	Dl_info me;

	if (!self_hi && dladdr((void *)find_self, &me))
		dl_iterate_phdr(find_self, &me);
}

/*
 * S's frames without the agent's below the program's: the thread trampoline
 * between start_thread and the start routine.  Agent frames at the leaf end
 * (a sample that landed in a hook) stay: they are the agent's cost.
 */
static uint16_t own_frames_dropped(const struct agent_sample *s, uintptr_t *out)
{
	uint16_t n = 0;
	bool program = false;

	for (uint16_t i = 0; i < s->nframes; i++) {
		bool own = s->pcs[i] >= self_lo && s->pcs[i] < self_hi;

		program |= !own;
		if (!own || !program)
			out[n++] = s->pcs[i];
	}
	return n;
}

static void add_sample(struct slot_state *ss, const struct agent_sample *s, bool slow)
{
	uintptr_t pcs[AGENT_MAX_DEPTH];
	struct entry k;

	memset(&k, 0, sizeof(k));
	k.kind = s->kind;
	k.nframes = own_frames_dropped(s, pcs);
	k.pcs = pcs;
	k.v0 = s->v[0];
	k.v1 = s->v[1];
	k.n = 1;
	k.nlabels = (uint8_t)key_labels(s, k.labels);
	if (ss && ss->name_label)
		k.labels[k.nlabels++] = ss->name_label;
	if (s->kind == AGENT_KIND_WALL && co.state_label[s->state & 1])
		k.labels[k.nlabels++] = co.state_label[s->state & 1];
	if (slow && co.slow_label)
		k.labels[k.nlabels++] = co.slow_label;
	add_entry(ss, &k, s->kind == AGENT_KIND_WALL);
}

/* Charge an idle thread's wall time to its last wall stack. */
static void add_wall_repeat(struct slot_state *ss, uint64_t ns)
{
	struct agg *aggs[2] = {&co.cum, &co.delta};

	for (int i = 0; i < 2; i++) {
		struct entry *e;

		if (!ss->last_wall[i] || (size_t)ss->last_wall[i] > aggs[i]->n)
			continue;
		e = &aggs[i]->e[ss->last_wall[i] - 1];
		if (e->kind != AGENT_KIND_WALL)
			continue;
		if (co.state_label[AGENT_STATE_BLOCKED]) {
			/* The repeat is blocked time: its own entry, same stack. */
			struct entry k = *e;
			bool has = false;

			for (unsigned j = 0; j < k.nlabels; j++) {
				if (k.labels[j] == co.state_label[AGENT_STATE_RUNNING])
					k.labels[j] = co.state_label[AGENT_STATE_BLOCKED];
				has |= k.labels[j] == co.state_label[AGENT_STATE_BLOCKED];
			}
			if (!has && k.nlabels < KEY_LABELS)
				k.labels[k.nlabels++] = co.state_label[AGENT_STATE_BLOCKED];
			qsort(k.labels, k.nlabels, sizeof(k.labels[0]), cmp_u32);
			k.hash = hash_key(&k);
			k.v0 = (int64_t)ns;
			k.v1 = 0;
			/* One sample per sampler visit the repeat stands for. */
			k.n = (int64_t)((ns + agent_state.interval_ns / 2) /
					agent_state.interval_ns);
			if (k.n < 1)
				k.n = 1;
			{
				ssize_t at = agg_add(aggs[i], &k);

				ss->last_wall[i] = at + 1;
			}
		} else {
			e->v0 += (int64_t)ns;
			e->n++;
		}
	}
}

static void held_flush(struct slot_state *ss, bool slow)
{
	for (size_t i = 0; i < ss->nheld; i++) {
		add_sample(ss, ss->held[i], slow);
		free(ss->held[i]);
	}
	ss->nheld = 0;
	ss->held_request = 0;
}

static void hold(struct slot_state *ss, const struct agent_sample *s)
{
	size_t bytes = agent_sample_size(s->nframes);
	struct agent_sample *copy;

	if (ss->held_request != s->request)
		held_flush(ss, false);
	if (!ss->held) {
		ss->held = malloc(HELD_MAX * sizeof(*ss->held));
		if (!ss->held) {
			add_sample(ss, s, false);
			return;
		}
	}
	if (ss->nheld == HELD_MAX)
		held_flush(ss, false);
	copy = malloc(bytes);
	if (!copy) {
		add_sample(ss, s, false);
		return;
	}
	memcpy(copy, s, bytes);
	ss->held[ss->nheld++] = copy;
	ss->held_request = s->request;
}

static void on_record(const struct agent_sample *s, void *arg)
{
	struct slot_state *ss = arg;

	if (s->kind == AGENT_KIND_REQUEST_END) {
		if (ss->held_request == (uint32_t)s->v[0])
			held_flush(ss, s->v[1] != 0);
		return;
	}
	if (s->kind >= AGENT_KIND_COUNT)
		return;
	if (s->request)
		hold(ss, s);
	else
		add_sample(ss, s, false);
}

static void reset_slot_state(struct slot_state *ss, uint32_t gen)
{
	held_flush(ss, false);
	free(ss->held);
	memset(ss, 0, sizeof(*ss));
	ss->gen = gen;
}

/* Drain every ring once; free the slots of threads that have exited. */
static void drain_all(void)
{
	size_t n = agent_thread_count();

	for (size_t i = 0; i < n; i++) {
		struct agent_thread *t = agent_thread_at(i);
		struct slot_state *ss = &co.slots[i];
		int status = atomic_load_explicit(&t->status, memory_order_acquire);
		uint64_t rep;

		if (status != SLOT_LIVE && status != SLOT_EXITED)
			continue;
		if (ss->gen != t->gen)
			reset_slot_state(ss, t->gen);
		if (atomic_load_explicit(&t->ring->head, memory_order_acquire) !=
		    atomic_load_explicit(&t->ring->tail, memory_order_relaxed)) {
			thread_name(ss, t);
			agent_ring_drain(t->ring, on_record, ss);
		}
		rep = atomic_exchange(&t->wall_repeat_ns, 0);
		if (rep)
			add_wall_repeat(ss, rep);
		if (status == SLOT_EXITED) {
			reset_slot_state(ss, t->gen);
			agent_thread_release(t);
		}
	}
}

/* ---- export ---- */

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

static void entry_values(const struct columns *c, const struct entry *e, int64_t *v)
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
	x->labels = realloc(x->labels, na * KEY_LABELS * sizeof(*x->labels));
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
	struct agent_pprof_label *l = &x->labels[x->n * KEY_LABELS];

	memset(s, 0, sizeof(*s));
	s->pcs = pcs;
	s->npcs = (uint32_t)npcs;
	memcpy(&x->values[x->n * COL_COUNT], v, x->cols.n * sizeof(*v));
	for (unsigned i = 0; i < nlabels && s->nlabels < KEY_LABELS; i++) {
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
		x->samples[i].labels = &x->labels[i * KEY_LABELS];
	}
}

/* One live sampled block: summed per (stack, labels) in fixed point, rounded once. */
static void add_live(const struct agent_live_entry *le, void *arg)
{
	struct agg *inuse = arg;
	struct entry k;

	memset(&k, 0, sizeof(k));
	k.kind = AGENT_KIND_INUSE;
	k.nframes = le->nframes;
	k.pcs = (uintptr_t *)le->pcs;
	k.nlabels = le->nlabels < AGENT_MAX_LABELS ? le->nlabels : AGENT_MAX_LABELS;
	memcpy(k.labels, le->labels, k.nlabels * sizeof(k.labels[0]));
	qsort(k.labels, k.nlabels, sizeof(k.labels[0]), cmp_u32);
	k.v0 = (int64_t)llround(le->weight * AGENT_WEIGHT_ONE);
	k.v1 = (int64_t)llround(le->weight * (double)le->size);
	k.n = 1;
	k.hash = hash_key(&k);
	agg_add(inuse, &k);
}

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
	};

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
static int encode(const struct agg *a, bool inuse, uint64_t start_ns, uint64_t end_ns,
		  uint8_t **out, size_t *outlen)
{
	static char cbuf[8][96], rbuf[64][320];
	const char *comments[8 + 64];
	struct agent_pprof_input in;
	struct export x;
	struct agg live;
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
		const struct entry *e = i < a->n ? &a->e[i] : &live.e[i - a->n];

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
	region_comments(rbuf, comments, &in.ncomments, 8 + 64);
	in.comments = comments;
	in.samples = x.samples;
	in.nsamples = x.n;
	if (!co.symtab)
		co.symtab = agent_symtab_new();
	if (co.symtab)
		agent_symtab_refresh(co.symtab);
	rc = agent_pprof_encode(&in, co.symtab, out, outlen);
out:
	export_free(&x);
	agg_clear(&live);
	return rc;
}

static int write_file(const uint8_t *data, size_t len)
{
	char tmp[AGENT_PATH_MAX + 32];
	size_t off = 0;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", co.output, (int)getpid()) >= (int)sizeof(tmp))
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
	if (!rc && rename(tmp, co.output) != 0)
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

/* Write the file and push the interval (cold, with mu held). */
static int export_now(bool final)
{
	uint64_t now = agent_now_real();
	uint8_t *data;
	size_t len;
	int rc = 0;

	if (co.want_file) {
		rc = encode(&co.cum, true, agent_state.start_ns, now, &data, &len);
		if (rc == 0) {
			rc = write_file(data, len);
			free(data);
		}
		if (rc == 0)
			atomic_fetch_add(&agent_state.counters.profiles_written, 1);
		else if (final)
			agent_warn("cannot write %s: %s", co.output, strerror(-rc));
	}
	if (co.want_push && co.push) {
		if (encode(&co.delta, true, co.delta_start_ns, now, &data, &len) == 0)
			co.push_api.enqueue(co.push, data, len, co.delta_start_ns, now, NULL);
		agg_clear(&co.delta);
		for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
			co.slots[i].last_wall[1] = 0;
		co.delta_start_ns = now;
	}
	return rc;
}

static int dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1;
}

/* Rebuild the unwind tables when a module was loaded or unloaded since the last look. */
static void refresh_modules(void)
{
	static unsigned long long last[2];
	unsigned long long now[2] = {0, 0};

	dl_iterate_phdr(dl_counts, now);
	if (now[0] == last[0] && now[1] == last[1])
		return;
	agent_unwind_refresh();
	agent_alloc_refresh(); /* a library may have brought operator new */
	last[0] = now[0];
	last[1] = now[1];
}

/* A fatal signal at its default action: write the profile, then die of it. */
static void flush_and_die(int signo)
{
	atomic_store(&agent_state.running, false);
	agent_cpu_stop_all();
	drain_all();
	for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
		if (co.slots[i].nheld)
			held_flush(&co.slots[i], false);
	export_now(true);
	if (co.push)
		co.push_api.stop(co.push, 1000, NULL);
	co.push = NULL;
	agent_signal_die(signo);
}

static void *collector_main(void *arg)
{
	uint64_t next_export = agent_now_mono() + agent_state.cfg.upload_interval_ms * 1000000u;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)DRAIN_NS};

	(void)arg;
	while (atomic_load(&co.on)) {
		nanosleep(&ts, NULL);
		/* Outside mu: fork's prepare handlers take the unwinder's lock, then mu. */
		refresh_modules();
		agent_lock(&co.mu);
		if (atomic_load(&agent_state.fatal_signal)) {
			flush_and_die(atomic_load(&agent_state.fatal_signal));
			atomic_store(&co.on, false);
		} else if (atomic_load(&co.on)) {
			drain_all();
			if (agent_now_mono() >= next_export) {
				export_now(false);
				next_export += agent_state.cfg.upload_interval_ms * 1000000u;
			}
		}
		agent_unlock(&co.mu);
	}
	return NULL;
}

static int output_path(void)
{
	const struct agent_config *cfg = &agent_state.cfg;

	co.output[0] = 0;
	if (!cfg->output[0])
		return 0;
	return agent_config_output_path(cfg, getpid(), co.output, sizeof(co.output));
}

const char *agent_collect_output(void)
{
	return co.output;
}

int agent_collect_start(void)
{
	int rc;

	if (atomic_load(&co.on))
		return 0;
	if (!co.slots) {
		co.slots = calloc(AGENT_MAX_THREADS, sizeof(*co.slots));
		if (!co.slots)
			return -ENOMEM;
	}
	if (output_path() != 0)
		return -ENAMETOOLONG;
	co.want_file = co.output[0] != 0;
	co.want_push = agent_state.cfg.server[0] != 0;
	co.state_label[AGENT_STATE_RUNNING] = agent_label_intern("thread_state", "running");
	co.state_label[AGENT_STATE_BLOCKED] = agent_label_intern("thread_state", "blocked");
	co.slow_label = agent_label_intern("latency", "slow");
	co.delta_start_ns = agent_now_real();
	find_self_text();
	if (co.want_push && !co.push) {
		struct agent_push_opts opts;

		memset(&opts, 0, sizeof(opts));
		opts.thread_init = agent_thread_set_internal;
		if (agent_push_module_load(&co.push_api) == 0)
			co.push = co.push_api.create(&agent_state.cfg, &opts);
	}
	atomic_store(&co.on, true);
	rc = agent_thread_spawn(&co.thread, collector_main, NULL);
	if (rc != 0) {
		atomic_store(&co.on, false);
		return -rc;
	}
	return 0;
}

int agent_collect_stop(uint64_t push_deadline_ms)
{
	int rc;

	if (atomic_exchange(&co.on, false))
		pthread_join(co.thread, NULL);
	agent_lock(&co.mu);
	if (!co.slots) {
		agent_unlock(&co.mu);
		return 0;
	}
	drain_all();
	for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
		if (co.slots[i].nheld)
			held_flush(&co.slots[i], false);
	rc = export_now(true);
	agent_unlock(&co.mu);
	if (co.push) {
		struct agent_push_counters pc;

		co.push_api.stop(co.push, push_deadline_ms, &pc);
		atomic_store(&agent_state.counters.profiles_pushed, pc.pushed);
		atomic_store(&agent_state.counters.profiles_dropped,
			     pc.dropped + pc.expired + pc.unsent);
		co.push = NULL;
	}
	return rc;
}

void agent_collect_atfork_prepare(void)
{
	agent_lock(&co.mu);
}

void agent_collect_atfork_parent(void)
{
	agent_unlock(&co.mu);
}

void agent_collect_atfork_child(void)
{
	/*
	 * The parent's collector and push threads are gone and their memory may
	 * be mid-update: forget it (leaked, shared copy-on-write) and start over.
	 */
	memset(&co.cum, 0, sizeof(co.cum));
	memset(&co.delta, 0, sizeof(co.delta));
	co.slots = NULL;
	co.symtab = NULL;
	co.push = NULL;
	atomic_store(&co.on, false);
	agent_lock_reset(&co.mu);
}
