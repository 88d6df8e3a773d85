/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <unistd.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "format/perfscript.h"
#include "symbol/addr2line.h"
#include "format/perfscript_int.h"

/*
 * The collapse engine: inputs split across threads, their stacks merged
 * in input order, written as folded lines or turned into a profile.
 */

struct perfscript_collapse *perfscript_collapse_new(const struct collapse_options *o,
						    perfscript_warn_fn *warn, void *warn_arg)
{
	struct perfscript_collapse *c = xcalloc(1, sizeof(*c));

	if (o)
		c->o = *o;
	if (c->o.event_filter) {
		c->event_filter = xstrdup(c->o.event_filter);
		c->o.event_filter = c->event_filter;
	}
	strbuf_init(&c->filter, 32);
	/* An empty --event-filter is no filter, as in the Perl script. */
	if (c->event_filter)
		strbuf_addstr(&c->filter, c->event_filter);
	c->warn = warn;
	c->warn_arg = warn_arg;
	if (c->o.inline_frames)
		c->inl = inline_cache_new();
	ps_carry_init(&c->carry);
	ps_table_init(&c->tab);
	strtab_init(&c->mod_names);
	strtab_init(&c->mod_dsos);
	return c;
}

void perfscript_collapse_free(struct perfscript_collapse *c)
{
	if (!c)
		return;
	free(c->event_filter);
	strbuf_release(&c->filter);
	inline_cache_free(c->inl);
	ps_carry_release(&c->carry);
	ps_table_release(&c->tab);
	strtab_release(&c->mod_names);
	strtab_release(&c->mod_dsos);
	free(c->mod_dso);
	free(c->order);
	free(c);
}

void perfscript_collapse_set_threads(struct perfscript_collapse *c, int threads)
{
	c->threads = threads < 0 ? 0 : threads;
}

uint64_t perfscript_collapse_samples(const struct perfscript_collapse *c)
{
	return c->nr_samples;
}

uint64_t perfscript_collapse_unrecognized(const struct perfscript_collapse *c)
{
	return c->nr_unrecognized;
}

/*
 * Parallel parsing.  A blank line ends every sample and leaves no state
 * behind but the event filter (found before parsing starts), so an input
 * splits after blank lines into chunks that parse independently; their
 * tables are merged in input order.
 */
#define PS_MAX_THREADS 8
#define PS_SPLIT_MIN   ((size_t)8 << 20)

static int choose_threads(const struct perfscript_collapse *c, size_t len)
{
	long cpus;

	if (c->inl || c->keep_order)
		return 1;
	if (c->threads)
		return MIN(c->threads, PS_MAX_THREADS);
	if (len < PS_SPLIT_MIN)
		return 1;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus >= 2 ? 2 : 1;
}

/* Chunk starts: 0, then the line after a blank line near each i/n of the input. */
static int split_input(const char *d, size_t len, int n, size_t *starts)
{
	int k = 1;

	starts[0] = 0;
	for (int i = 1; i < n; i++) {
		size_t target = MAX(len / (size_t)n * (size_t)i, starts[k - 1]);
		const char *p = memmem(d + target, len - target, "\n\n", 2);

		if (!p || (size_t)(p - d) + 2 >= len)
			break;
		starts[k++] = (size_t)(p - d) + 2;
	}
	starts[k] = len;
	return k;
}

static void chunks_run(struct ps_chunk *k, int n)
{
	pthread_t tid[PS_MAX_THREADS];
	bool started[PS_MAX_THREADS] = {false};

	for (int i = 1; i < n; i++)
		started[i] = pthread_create(&tid[i], NULL, ps_chunk_run, &k[i]) == 0;
	ps_chunk_run(&k[0]);
	for (int i = 1; i < n; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			ps_chunk_run(&k[i]);
	}
}

/*
 * Whether merging could pass 2^64 somewhere: Perl would then add in
 * floating point in input order, which only a sequential pass repeats.
 */
static bool chunks_inexact(const struct perfscript_collapse *c, const struct ps_chunk *k, int n)
{
	uint64_t total = c->tab.total;

	if (c->tab.inexact)
		return true;
	for (int i = 0; i < n; i++) {
		if (k[i].stacks.inexact || __builtin_add_overflow(total, k[i].stacks.total, &total))
			return true;
	}
	return false;
}

/* Remember the module of each frame name in chunk k's groups (the first seen wins). */
static void chunk_modules(struct perfscript_collapse *c, const struct ps_chunk *k)
{
	for (uint32_t g = 0; g < k->alloc_group_dso && g < k->names.nr; g++) {
		const char *s = strtab_str(&k->names, g);
		size_t len = strtab_len(&k->names, g);
		uint32_t dso;

		if (!k->group_dso[g])
			continue;
		dso = strtab_intern(&c->mod_dsos, strtab_str(&k->dsos, k->group_dso[g] - 1),
				    strtab_len(&k->dsos, k->group_dso[g] - 1));
		/* An inline group "a;b_[i]" is several frames of one dso. */
		for (;;) {
			const char *semi = memchr(s, ';', len);
			size_t n = semi ? (size_t)(semi - s) : len;
			uint32_t id = strtab_intern(&c->mod_names, s, n);

			if (id >= c->alloc_mod_dso) {
				size_t old = c->alloc_mod_dso;

				ALLOC_GROW(c->mod_dso, (size_t)id + 1, c->alloc_mod_dso);
				memset(c->mod_dso + old, 0,
				       (c->alloc_mod_dso - old) * sizeof(uint32_t));
			}
			if (!c->mod_dso[id])
				c->mod_dso[id] = dso;
			if (!semi)
				break;
			s += n + 1;
			len -= n + 1;
		}
	}
}

/* Add each chunk's stacks to c's table, as strings; keep_order samples follow. */
static void chunks_merge(struct perfscript_collapse *c, struct ps_chunk *k, int n)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t *global = NULL;

	for (int i = 0; i < n; i++) {
		const struct ps_stacks *t = &k[i].stacks;

		if (c->modules)
			chunk_modules(c, &k[i]);

		if (k[i].nr_order)
			global = xrealloc(global, st_mult(t->nr, sizeof(*global)));
		for (uint32_t id = 0; id < t->nr; id++) {
			uint32_t g;

			ps_chunk_stack_string(&k[i], id, &sb);
			g = ps_table_add(&c->tab, sb.buf, sb.len, &t->v[id].sum, t->v[id].samples);
			if (global)
				global[id] = g;
		}
		if (!k[i].nr_order)
			continue;
		ALLOC_GROW(c->order, c->nr_order + k[i].nr_order, c->alloc_order);
		for (size_t j = 0; j < k[i].nr_order; j++) {
			c->order[c->nr_order] = k[i].order[j];
			c->order[c->nr_order++].id = global[k[i].order[j].id];
		}
	}
	free(global);
	strbuf_release(&sb);
}

static void emit(const struct perfscript_collapse *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void emit(const struct perfscript_collapse *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!c->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->warn(c->warn_arg, msg);
}

/* Pass the chunks' diagnostics on in input order, the event note where it arose. */
static void chunks_report(struct perfscript_collapse *c, const char *name, struct ps_chunk *k,
			  int n)
{
	size_t base = 0, shown = 0, total = 0;

	for (int i = 0; i < n; i++) {
		for (size_t m = 0;; m++) {
			if (k[i].mismatch && c->defaulted && !c->warned &&
			    (m == k[i].nr_msgs || k[i].mismatch_line < k[i].msgs[m].line)) {
				emit(c, "Filtering for events of type: %s", k[i].mismatch);
				c->warned = true;
			}
			if (m == k[i].nr_msgs)
				break;
			if (shown++ < PERFSCRIPT_MAX_WARNINGS)
				emit(c, "%s:%zu: Unrecognized line: %s", name,
				     base + k[i].msgs[m].line, k[i].msgs[m].text);
		}
		total += k[i].nr_unrecognized;
		base += k[i].lines;
	}
	if (total > PERFSCRIPT_MAX_WARNINGS)
		emit(c, "%s: %zu more unrecognized lines not shown", name,
		     total - PERFSCRIPT_MAX_WARNINGS);
}

/* Parse in n chunks; false when the result is unusable (see chunks_inexact). */
static bool chunks_parse(struct perfscript_collapse *c, const struct input *in,
			 const size_t *starts, int n, struct ps_chunk *k)
{
	for (int i = 0; i < n; i++) {
		ps_chunk_init(&k[i], c, in->data + starts[i], starts[i + 1] - starts[i]);
		k[i].in = in;
	}
	ps_chunk_resume(&k[0], &c->carry);
	chunks_run(k, n);
	if (n > 1 && chunks_inexact(c, k, n))
		return false;
	chunks_merge(c, k, n);
	return true;
}

static void chunks_finish(struct perfscript_collapse *c, struct ps_chunk *k, int n)
{
	ps_chunk_suspend(&k[n - 1], &c->carry);
	for (int i = 0; i < n; i++) {
		if (k[i].has_first && !c->has_first) {
			c->has_first = true;
			c->first_period = k[i].first_period;
		}
	}
}

int perfscript_collapse_add(struct perfscript_collapse *c, const struct input *in,
			    struct error *err)
{
	size_t starts[PS_MAX_THREADS + 1] = {0, in->len}, base = 0, err_line = 0;
	struct ps_chunk k[PS_MAX_THREADS];
	int n;

	if (!c->filter.len && ps_find_first_event(in->data, in->len, &c->filter))
		c->defaulted = true;
	n = choose_threads(c, in->len);
	if (n > 1)
		n = split_input(in->data, in->len, n, starts);
	if (!chunks_parse(c, in, starts, n, k)) {
		for (int i = 0; i < n; i++)
			ps_chunk_release(&k[i]);
		starts[1] = in->len;
		n = 1;
		chunks_parse(c, in, starts, n, k);
	}
	chunks_report(c, in->name, k, n);
	chunks_finish(c, k, n);
	for (int i = 0; i < n; i++) {
		c->nr_samples += k[i].nr_samples;
		c->nr_unrecognized += k[i].nr_unrecognized;
		if (k[i].err_line && !err_line)
			err_line = base + k[i].err_line;
		base += k[i].lines;
		ps_chunk_release(&k[i]);
	}
	if (err_line)
		return error_set(err, ERR_LIMIT, "%s:%zu: a sample of 4 GiB or more", in->name,
				 err_line);
	return 0;
}

struct sorted_key {
	const char *s;
	uint32_t len, id;
};

static int sorted_key_cmp(const void *x, const void *y)
{
	const struct sorted_key *a = x, *b = y;
	int r = memcmp(a->s, b->s, MIN(a->len, b->len));

	if (r)
		return r;
	return a->len < b->len ? -1 : a->len > b->len;
}

int perfscript_collapse_write(struct perfscript_collapse *c, FILE *f, struct error *err)
{
	const struct ps_table *t = &c->tab;
	struct sorted_key *keys = xmalloc(st_mult(t->keys.nr, sizeof(*keys)));
	struct strbuf out = STRBUF_INIT;
	size_t n = 0;
	char num[64];

	for (uint32_t id = 1; id < t->keys.nr; id++) {
		if (t->samples[id])
			keys[n++] = (struct sorted_key){strtab_str(&t->keys, id),
							strtab_len(&t->keys, id), id};
	}
	qsort(keys, n, sizeof(*keys), sorted_key_cmp);
	strbuf_init(&out, 1 << 20);
	for (size_t i = 0; i < n; i++) {
		ps_count_format(&t->sums[keys[i].id], num, sizeof(num));
		strbuf_add(&out, keys[i].s, keys[i].len);
		strbuf_addch(&out, ' ');
		strbuf_addstr(&out, num);
		strbuf_addch(&out, '\n');
		if (out.len >= (1 << 20)) {
			fwrite(out.buf, 1, out.len, f);
			strbuf_reset(&out);
		}
	}
	fwrite(out.buf, 1, out.len, f);
	strbuf_release(&out);
	free(keys);
	if (ferror(f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}

/*
 * The profile view: the collapsed stack strings split at ';' into frames,
 * so writing it as folded lines gives the collapse output again.
 */
static uint32_t frame_of(struct profile *p, const struct perfscript_collapse *c, const char *s,
			 size_t n)
{
	uint32_t id = c->modules ? strtab_find(&c->mod_names, s, n) : IDHASH_NONE;
	struct frame f = {0};

	if (id != IDHASH_NONE && id < c->alloc_mod_dso && c->mod_dso[id]) {
		const char *dso = strtab_str(&c->mod_dsos, c->mod_dso[id]);
		size_t len = strtab_len(&c->mod_dsos, c->mod_dso[id]);

		f.module = profile_intern(p, dso, len);
		/* As the Perl script tells kernel code, except that [vdso] runs in user space. */
		if (ps_dso_is_kernel(dso, len) && strcmp(dso, "[vdso]"))
			f.flags |= FRAME_KERNEL;
	}

	f.name = profile_intern(p, s, n);
	if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']') {
		if (s[n - 2] == 'k')
			f.flags |= FRAME_KERNEL;
		else if (s[n - 2] == 'j')
			f.flags |= FRAME_JIT;
		else if (s[n - 2] == 'i')
			f.flags |= FRAME_INLINED;
	}
	return profile_intern_frame(p, &f);
}

static uint32_t node_of(struct profile *p, const struct perfscript_collapse *c, const char *s,
			size_t len)
{
	uint32_t node = 0;

	for (;;) {
		const char *semi = memchr(s, ';', len);
		size_t n = semi ? (size_t)(semi - s) : len;

		node = profile_child(p, node, frame_of(p, c, s, n));
		if (!semi)
			return node;
		s += n + 1;
		len -= n + 1;
	}
}

static bool count_int64(const struct ps_count *c, int64_t *out)
{
	if (c->is_nv || c->u > INT64_MAX)
		return false;
	*out = (int64_t)c->u;
	return true;
}

static void profile_types(struct profile *p, const struct strbuf *event)
{
	size_t base = event->len;
	const char *colon = memchr(event->buf, ':', event->len);

	if (colon)
		base = (size_t)(colon - event->buf);
	if ((base == 9 && !memcmp(event->buf, "cpu-clock", 9)) ||
	    (base == 10 && !memcmp(event->buf, "task-clock", 10))) {
		char name[16];

		memcpy(name, event->buf, base);
		name[base] = '\0';
		profile_add_type(p, name, "nanoseconds");
	} else {
		profile_add_type(p, "events", "count");
	}
	profile_add_type(p, "samples", "count");
}

static int add_samples(struct profile *p, const struct perfscript_collapse *c, const char *name,
		       struct error *err)
{
	const struct ps_table *t = &c->tab;
	uint32_t *nodes = xcalloc(t->keys.nr, sizeof(*nodes));
	int64_t v[2];
	int rc = 0;

	for (uint32_t id = 1; id < t->keys.nr && !rc; id++) {
		if (!t->samples[id])
			continue;
		nodes[id] = node_of(p, c, strtab_str(&t->keys, id), strtab_len(&t->keys, id));
		if (c->keep_order)
			continue;
		v[1] = (int64_t)MIN(t->samples[id], (uint64_t)INT64_MAX);
		if (!count_int64(&t->sums[id], &v[0]) || profile_add_sample(p, nodes[id], 0, v))
			rc = -1;
	}
	for (size_t i = 0; i < c->nr_order && !rc; i++) {
		v[1] = 1;
		if (!count_int64(&c->order[i].period, &v[0]) ||
		    profile_add_sample(p, nodes[c->order[i].id], 0, v))
			rc = -1;
	}
	free(nodes);
	if (rc)
		return error_set(err, ERR_LIMIT, "%s: the periods of a stack add up beyond 2^63",
				 name);
	return 0;
}

static int collapse_profile(const struct perfscript_collapse *c, const char *name,
			    struct profile **out, struct error *err)
{
	struct profile *p;
	int64_t period;

	if (!c->nr_samples)
		return error_set(err, ERR_FORMAT,
				 "%s: no perf script samples (a header line, frames, a blank line)",
				 name);
	p = profile_new();
	p->keep_order = c->keep_order;
	profile_types(p, &c->filter);
	if (add_samples(p, c, name, err)) {
		profile_free(p);
		return err->code;
	}
	p->default_type = 0;
	p->period_type = p->types[0];
	p->period = count_int64(&c->first_period, &period) ? period : 1;
	*out = p;
	return 0;
}

int perfscript_read(const struct input *in, const struct read_options *o, struct profile **out,
		    struct error *err)
{
	struct perfscript_collapse *c = perfscript_collapse_new(o ? o->collapse : NULL, NULL, NULL);
	int rc;

	*out = NULL;
	c->keep_order = o && o->keep_order;
	c->modules = true;
	rc = perfscript_collapse_add(c, in, err);
	if (!rc)
		rc = collapse_profile(c, in->name, out, err);
	perfscript_collapse_free(c);
	return rc;
}
