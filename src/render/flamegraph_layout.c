/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "format/format.h"
#include "profile/stats.h"
#include "render/flamegraph_int.h"

/*
 * Where each frame of a flame graph goes.  The call tree keys children
 * by frame id, but a flame graph shows names: children with equal names
 * are merged (and so, recursively, are their children), siblings are
 * sorted by name, and a frame's own (self) value sits left of its
 * children, as in flamegraph.pl.  The walk is depth first with an
 * explicit stack (stacks may be 100,000 frames deep) and never enters a
 * frame narrower than --minwidth.  A flame chart (--flamechart) instead
 * replays the samples in input order, merging only consecutive ones.
 */

enum { T_BASE, T_NEW, T_BASE_N, T_NEW_N };

struct values {
	int64_t *tot, *self;	    /* the drawn type */
	int64_t *cnt;		    /* a separate samples/count type, totals (or NULL) */
	int64_t *base, *bself;	    /* diff: base totals and self */
	int64_t *bn_self, *nn_self; /* diff counts: self samples of base and new */
	int64_t *nn_tot;	    /* diff counts: samples of new through the node */
	int count_type;		    /* samples/count type used for counts, or -1 */
	struct sample_counter counter;
};

struct walker {
	struct flame_layout *l;
	const struct profile *p;
	const struct flame_options *o;
	struct values v;
	double minw; /* values narrower than this are omitted */
};

/* Node totals of TYPE over the samples with a value of WHERE (PROFILE_ANY_TYPE: all). */
static int64_t *node_array_where(const struct profile *p, uint32_t type, uint32_t where,
				 int64_t **self)
{
	int64_t *tot = xmalloc(st_mult(p->nr_nodes, sizeof(int64_t)));

	if (self)
		*self = xmalloc(st_mult(p->nr_nodes, sizeof(int64_t)));
	profile_node_totals_where(p, type, where, tot, self ? *self : NULL);
	return tot;
}

static int64_t *node_array(const struct profile *p, uint32_t type, int64_t **self)
{
	return node_array_where(p, type, PROFILE_ANY_TYPE, self);
}

static void values_release(struct values *v)
{
	free(v->tot);
	free(v->self);
	free(v->cnt);
	free(v->base);
	free(v->bself);
	free(v->bn_self);
	free(v->nn_self);
	free(v->nn_tot);
}

static struct flame_frame *add_frame(struct flame_layout *l)
{
	struct flame_frame *f;

	ALLOC_GROW(l->frames, l->nr + 1, l->alloc);
	f = &l->frames[l->nr++];
	memset(f, 0, sizeof(*f));
	return f;
}

static bool name_is(const struct profile *p, uint32_t node, const char *s)
{
	uint32_t name = p->frames[p->nodes[node].frame].name;

	return strtab_len(&p->strs, name) == strlen(s) && !strcmp(profile_str(p, name), s);
}

/* Samples behind a value of the drawn type (when no count array is kept). */
static double count_of(const struct walker *w, int64_t value)
{
	return stats_count(&w->v.counter, (double)value);
}

/* Merged tree. */

/* Children with one name, merged into one frame. */
struct run {
	uint32_t off, len; /* in the kids array */
	uint32_t name;
	bool has_kids, has_self;
	struct flame_frame f;
};

/* A frame to expand: its nodes are pool[off, off + len). */
struct group {
	uint32_t off, len, depth;
	bool sep; /* under a "--" separator: children are wakers */
	int64_t start;
};

struct tree_walk {
	struct walker *w;
	uint32_t *pool, *kids;
	size_t pool_nr, pool_alloc, kids_alloc;
	struct run *runs;
	size_t runs_alloc;
	struct group *stack;
	size_t depth, stack_alloc;
};

/*
 * Sibling order is that of the sorted folded lines flamegraph.pl reads:
 * a frame with self samples sorts as "name " (its own line), one without
 * as "name;" (its children's lines), so "foo::bar" comes before "foo"
 * when foo has only children, and after it when foo has self samples.
 */
static int run_cmp(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	const struct run *a = x, *b = y;
	uint32_t la = strtab_len(&p->strs, a->name), lb = strtab_len(&p->strs, b->name);
	const unsigned char *sa = (const unsigned char *)profile_str(p, a->name);
	const unsigned char *sb = (const unsigned char *)profile_str(p, b->name);
	int c = memcmp(sa, sb, MIN(la, lb));
	unsigned char ca, cb;

	if (c || la == lb)
		return c;
	ca = la < lb ? (a->has_self ? ' ' : ';') : sa[lb];
	cb = la < lb ? sb[la] : (b->has_self ? ' ' : ';');
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return la < lb ? -1 : 1;
}

static void run_add_node(const struct walker *w, struct run *r, uint32_t n)
{
	const struct values *v = &w->v;

	r->f.value += v->tot[n];
	r->has_self |= v->self[n] > 0;
	r->has_kids |= w->p->nodes[n].first_child != 0;
	if (v->cnt)
		r->f.count += (double)v->cnt[n];
	if (v->base) {
		r->f.base += v->base[n];
		r->f.delta += v->self[n] - v->bself[n];
	}
	if (v->bn_self) {
		r->f.base_self_n += (double)v->bn_self[n];
		r->f.new_self_n += (double)v->nn_self[n];
	}
}

/* Group the sorted kids[0..n) into runs of one name, in drawing order; returns their number. */
static size_t make_runs(struct tree_walk *t, size_t n)
{
	const struct profile *p = t->w->p;
	size_t nr = 0;

	for (size_t i = 0; i < n;) {
		uint32_t name = p->frames[p->nodes[t->kids[i]].frame].name;
		struct run *r;
		size_t j = i;

		ALLOC_GROW(t->runs, nr + 1, t->runs_alloc);
		r = &t->runs[nr++];
		memset(r, 0, sizeof(*r));
		r->off = (uint32_t)i;
		r->name = name;
		r->f.node = t->kids[i];
		r->f.flags = p->frames[p->nodes[t->kids[i]].frame].flags;
		for (; j < n && p->frames[p->nodes[t->kids[j]].frame].name == name; j++)
			run_add_node(t->w, r, t->kids[j]);
		r->len = (uint32_t)(j - i);
		if (!t->w->v.cnt)
			r->f.count = count_of(t->w, r->f.value);
		i = j;
	}
	if (nr > 1)
		qsort_r(t->runs, nr, sizeof(*t->runs), run_cmp, (void *)p);
	return nr;
}

/* Gather the children of a group's nodes (then drop the group from the pool). */
static size_t gather_kids(struct tree_walk *t, const struct group *g, int64_t *self)
{
	const struct profile *p = t->w->p;
	size_t n = 0;

	*self = 0;
	for (uint32_t i = 0; i < g->len; i++) {
		uint32_t node = t->pool[g->off + i];

		*self += t->w->v.self[node];
		for (uint32_t c = p->nodes[node].first_child; c; c = p->nodes[c].next_sibling) {
			if (t->w->v.tot[c] <= 0)
				continue;
			ALLOC_GROW(t->kids, n + 1, t->kids_alloc);
			t->kids[n++] = c;
		}
	}
	t->pool_nr = g->off;
	if (n > 1)
		qsort_r(t->kids, n, sizeof(*t->kids), profile_node_name_cmp, (void *)p);
	return n;
}

static void push_group(struct tree_walk *t, const struct run *r, const struct group *parent)
{
	struct group *g;

	ALLOC_GROW(t->pool, t->pool_nr + r->len, t->pool_alloc);
	memcpy(t->pool + t->pool_nr, t->kids + r->off, r->len * sizeof(uint32_t));
	ALLOC_GROW(t->stack, t->depth + 1, t->stack_alloc);
	g = &t->stack[t->depth++];
	g->off = (uint32_t)t->pool_nr;
	g->len = r->len;
	g->depth = parent->depth + 1;
	g->start = r->f.start;
	g->sep = parent->sep || name_is(t->w->p, r->f.node, "--");
	t->pool_nr += r->len;
}

static void expand(struct tree_walk *t, struct group g)
{
	struct flame_layout *l = t->w->l;
	int64_t self, x;
	size_t n = gather_kids(t, &g, &self), nr = make_runs(t, n);

	x = g.start + self;
	for (size_t i = 0; i < nr; i++) {
		struct run *r = &t->runs[i];

		r->f.start = x;
		r->f.depth = g.depth + 1;
		if (g.sep)
			r->f.flags |= FLAME_WAKER;
		x += r->f.value;
		if ((double)r->f.value < t->w->minw || r->f.value <= 0) {
			r->has_kids = false;
			continue;
		}
		*add_frame(l) = r->f;
		if (r->f.depth > l->max_depth)
			l->max_depth = r->f.depth;
	}
	/* Push in reverse so the leftmost is expanded first. */
	for (size_t i = nr; i-- > 0;) {
		if (t->runs[i].has_kids)
			push_group(t, &t->runs[i], &g);
	}
}

static void layout_tree(struct walker *w)
{
	struct tree_walk t = {.w = w};
	struct group root = {0, 1, 0, false, 0};

	ALLOC_GROW(t.pool, 1, t.pool_alloc);
	t.pool[0] = 0;
	t.pool_nr = 1;
	ALLOC_GROW(t.stack, 1, t.stack_alloc);
	t.stack[t.depth++] = root;
	while (t.depth) {
		struct group g = t.stack[--t.depth];

		expand(&t, g);
	}
	free(t.pool);
	free(t.kids);
	free(t.runs);
	free(t.stack);
}

/* Flame chart: samples in input order. */

struct open_frame {
	uint32_t name, node, flags;
	bool sep;
	int64_t start, base0;
	double cnt0;
	struct flame_frame acc; /* delta and self counts */
};

struct chart {
	struct walker *w;
	struct open_frame *open;
	size_t nr_open, open_alloc;
	int64_t time, base_time;
	double cnt_time;
	int64_t *rem;	/* values not yet handed out, per sample and type */
	uint32_t *occ;	/* occurrences left per sample */
	uint32_t *path; /* the current sample's nodes, root first */
	size_t path_alloc;
	size_t pos; /* index of the current entry in the input order */
};

static void chart_close(struct chart *c, size_t keep)
{
	struct flame_layout *l = c->w->l;

	while (c->nr_open > keep) {
		struct open_frame *o = &c->open[--c->nr_open];
		struct flame_frame f = o->acc;

		f.node = o->node;
		f.depth = (uint32_t)c->nr_open + 1;
		f.flags = o->flags;
		f.start = o->start;
		f.value = c->time - o->start;
		f.count = c->cnt_time - o->cnt0;
		f.base = c->base_time - o->base0;
		if (f.value <= 0 || (double)f.value < c->w->minw)
			continue;
		*add_frame(l) = f;
		if (f.depth > l->max_depth)
			l->max_depth = f.depth;
	}
}

static void chart_open(struct chart *c, uint32_t node)
{
	const struct profile *p = c->w->p;
	struct open_frame *o;
	bool parent_sep = c->nr_open && c->open[c->nr_open - 1].sep;

	ALLOC_GROW(c->open, c->nr_open + 1, c->open_alloc);
	o = &c->open[c->nr_open++];
	memset(o, 0, sizeof(*o));
	o->node = node;
	o->name = p->frames[p->nodes[node].frame].name;
	o->flags = p->frames[p->nodes[node].frame].flags | (parent_sep ? FLAME_WAKER : 0);
	o->sep = parent_sep || name_is(p, node, "--");
	o->start = c->time;
	o->base0 = c->base_time;
	o->cnt0 = c->cnt_time;
}

/*
 * This occurrence's value of type t: its own, as recorded in input order,
 * or (without a recorded order) sample s's value shared by its occurrences.
 */
static int64_t take(struct chart *c, uint32_t s, uint32_t t)
{
	const struct profile *p = c->w->p;
	int64_t *r, v;

	if (p->nr_order && p->order_values)
		return p->order_values[c->pos * p->nr_types + t];
	r = &c->rem[(size_t)s * p->nr_types + t];
	v = *r / (int64_t)c->occ[s];
	*r -= v;
	return v;
}

static void chart_sample(struct chart *c, uint32_t s)
{
	const struct profile *p = c->w->p;
	const struct values *v = &c->w->v;
	uint32_t node = p->samples[s].node, type = c->w->l->type;
	int64_t val = take(c, s, type), base = v->base ? take(c, s, T_BASE) : 0;
	double cnt = v->count_type < 0 ? count_of(c->w, val)
		     : (uint32_t)v->count_type == type
			     ? (double)val
			     : (double)take(c, s, (uint32_t)v->count_type);
	int64_t bn = v->bn_self ? take(c, s, T_BASE_N) : 0;
	size_t depth = 0, common = 0;

	c->occ[s]--;
	if (val <= 0 && !base)
		return;
	for (uint32_t n = node; n; n = p->nodes[n].parent)
		depth++;
	ALLOC_GROW(c->path, depth, c->path_alloc);
	for (size_t i = depth; node; node = p->nodes[node].parent)
		c->path[--i] = node;
	while (common < depth && common < c->nr_open &&
	       c->open[common].name == p->frames[p->nodes[c->path[common]].frame].name)
		common++;
	chart_close(c, common);
	for (size_t i = common; i < depth; i++)
		chart_open(c, c->path[i]);
	if (depth) {
		struct flame_frame *leaf = &c->open[depth - 1].acc;

		leaf->delta += val - base;
		leaf->base_self_n += (double)bn;
		leaf->new_self_n += v->nn_self ? cnt : 0;
	} else {
		c->w->l->frames[0].delta += val - base;
	}
	c->time += val;
	c->base_time += base;
	c->cnt_time += cnt;
}

static void layout_chart(struct walker *w)
{
	const struct profile *p = w->p;
	struct chart c = {.w = w};
	size_t nvals = st_mult(p->nr_samples, p->nr_types);
	size_t n = p->nr_order ? p->nr_order : p->nr_samples;

	c.rem = xmalloc(st_mult(nvals + 1, sizeof(int64_t)));
	memcpy(c.rem, p->values, nvals * sizeof(int64_t));
	c.occ = xcalloc(p->nr_samples + 1, sizeof(uint32_t));
	for (size_t i = 0; i < n; i++)
		c.occ[p->nr_order ? p->order[i] : i]++;
	/* Without a recorded order, samples come in order of first appearance. */
	for (size_t i = 0; i < n; i++) {
		c.pos = i;
		chart_sample(&c, p->nr_order ? p->order[i] : (uint32_t)i);
	}
	chart_close(&c, 0);
	free(c.rem);
	free(c.occ);
	free(c.path);
	free(c.open);
}

/* --reverse: the same samples with every stack upside down. */
static struct profile *reverse_profile(const struct profile *p, uint32_t **smap_out)
{
	struct profile *r = profile_new();
	uint32_t *fmap = xmalloc(st_mult(p->nr_frames + 1, sizeof(uint32_t)));
	uint32_t *smap = xmalloc(st_mult(p->nr_samples + 1, sizeof(uint32_t)));
	uint32_t *node_sample = NULL, *buf = NULL;
	size_t ns_alloc = 0, alloc = 0;

	for (uint32_t t = 0; t < p->nr_types; t++) {
		profile_add_type(r, profile_str(p, p->types[t].type),
				 profile_str(p, p->types[t].unit));
		r->types[t].decimals = p->types[t].decimals;
	}
	r->default_type = p->default_type;
	r->period = p->period;
	for (uint32_t f = 0; f < p->nr_frames; f++) {
		struct frame fr = p->frames[f];

		fr.name = profile_intern(r, profile_str(p, fr.name), strtab_len(&p->strs, fr.name));
		fr.module = profile_intern(r, profile_str(p, fr.module),
					   strtab_len(&p->strs, fr.module));
		fr.file = profile_intern(r, profile_str(p, fr.file), strtab_len(&p->strs, fr.file));
		fmap[f] = profile_intern_frame(r, &fr);
	}
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		size_t depth = profile_node_stack(p, p->samples[s].node, &buf, &alloc);
		uint32_t node, before = r->nr_samples;

		for (size_t i = 0; i < depth / 2; i++) {
			uint32_t tmp = buf[i];

			buf[i] = buf[depth - 1 - i];
			buf[depth - 1 - i] = tmp;
		}
		for (size_t i = 0; i < depth; i++)
			buf[i] = fmap[buf[i]];
		node = profile_stack(r, buf, depth);
		if (node >= ns_alloc) {
			size_t old = ns_alloc;

			ALLOC_GROW(node_sample, (size_t)node + 1, ns_alloc);
			memset(node_sample + old, 0xff, (ns_alloc - old) * sizeof(uint32_t));
		}
		/* Only samples differing in labels merge here; a sum over 2^63 is dropped. */
		(void)profile_add_sample(r, node, 0, profile_sample_values(p, s));
		if (r->nr_samples != before)
			node_sample[node] = r->nr_samples - 1;
		smap[s] = node_sample[node];
	}
	free(buf);
	free(node_sample);
	free(fmap);
	*smap_out = smap;
	return r;
}

/* A flame chart of a reversed profile replays the original order. */
static void remap_order(struct profile *r, const struct profile *p, const uint32_t *smap)
{
	if (!p->nr_order)
		return;
	r->order = xmalloc(st_mult(p->nr_order, sizeof(uint32_t)));
	r->order_values = xmalloc(st_mult(st_mult(p->nr_order, p->nr_types), sizeof(int64_t)));
	r->alloc_order = p->nr_order;
	for (size_t i = 0; i < p->nr_order; i++) {
		if (smap[p->order[i]] == UINT32_MAX) /* a dropped sample */
			continue;
		memcpy(r->order_values + r->nr_order * p->nr_types,
		       p->order_values + i * p->nr_types, p->nr_types * sizeof(int64_t));
		r->order[r->nr_order++] = smap[p->order[i]];
	}
}

static bool is_type(const struct profile *p, uint32_t t, const char *name)
{
	return t < p->nr_types && !strcmp(profile_str(p, p->types[t].type), name);
}

static void values_init(struct walker *w)
{
	const struct profile *p = w->p;
	struct flame_layout *l = w->l;
	struct values *v = &w->v;

	memset(v, 0, sizeof(*v));
	v->tot = node_array(p, l->type, &v->self);
	stats_counter_init(&v->counter, p, l->type);
	v->count_type = -1;
	if (l->diff_counts) {
		v->count_type = T_NEW_N;
		v->nn_tot = node_array(p, T_NEW_N, &v->nn_self);
		v->cnt = v->nn_tot;
		free(node_array(p, T_BASE_N, &v->bn_self));
	} else if (v->counter.count_type >= 0) {
		/* The counts of this type's samples only (the agent counts cpu and
		 * wall samples in one samples/count type). */
		v->count_type = v->counter.count_type;
		if ((uint32_t)v->count_type != l->type)
			v->cnt = node_array_where(p, (uint32_t)v->count_type, l->type, NULL);
	}
	if (l->diff)
		v->base = node_array(p, T_BASE, &v->bself);
	if (v->cnt == v->nn_tot)
		v->nn_tot = NULL; /* owned through cnt */
}

static void layout_totals(struct walker *w, const struct flame_options *o)
{
	const struct profile *p = w->p;
	struct flame_layout *l = w->l;
	const struct values *v = &w->v;
	double scale = 1;

	for (uint32_t d = 0; d < p->types[l->type].decimals; d++)
		scale *= 10;
	l->total = v->tot[0];
	l->timemax = l->total;
	if (o->total > 0 && o->total * scale > (double)l->total && o->total * scale < 9e18)
		l->timemax = (int64_t)(o->total * scale);
	if (v->count_type >= 0) {
		l->samples = v->cnt ? (double)v->cnt[0]
				    : (double)profile_total(p, (uint32_t)v->count_type);
		l->samples_exact = true;
	} else {
		l->samples = count_of(w, l->total);
		l->samples_exact = w->v.counter.per_sample == 1 &&
				   !strcmp(profile_str(p, p->types[l->type].unit), "count") &&
				   !p->types[l->type].decimals;
	}
	l->eff_samples = stats_effective_samples(&w->v.counter, p, l->type);
	if (l->diff) {
		l->base_all = v->base[0];
		l->base_samples = l->diff_counts ? (double)profile_total(p, T_BASE_N) : 0;
		l->max_delta = 1;
		for (uint32_t n = 0; n < p->nr_nodes; n++) {
			int64_t d = v->self[n] - v->bself[n];

			if (d < 0)
				d = -d;
			if (d > l->max_delta)
				l->max_delta = d;
		}
	}
	/* Pixels or a percentage of the whole width. */
	if (o->minwidth_pct)
		w->minw = (double)l->timemax * o->minwidth / 100;
	else
		w->minw = o->minwidth * (double)l->timemax / (double)(o->width - 20);
}

static void add_root(struct walker *w)
{
	struct flame_layout *l = w->l;
	struct flame_frame *root = add_frame(l);

	root->value = l->timemax;
	root->count = l->samples;
	if (l->diff) {
		root->base = l->base_all;
		root->delta = w->v.self[0] - w->v.bself[0];
		root->base_self_n = w->v.bn_self ? (double)w->v.bn_self[0] : 0;
		root->new_self_n = w->v.nn_self ? (double)w->v.nn_self[0] : 0;
	}
}

static int choose_type(struct flame_layout *l, const struct profile *p,
		       const struct flame_options *o, struct error *err)
{
	l->diff = profile_is_diff(p);
	l->diff_counts = l->diff && is_type(p, T_BASE_N, "base_samples") &&
			 is_type(p, T_NEW_N, "new_samples");
	l->type = l->diff ? T_NEW : o->type;
	if (l->type >= p->nr_types)
		return error_set(err, ERR_USAGE, "the profile has no sample type %u", l->type);
	if (o->width <= 20)
		return error_set(err, ERR_USAGE, "width %d is too small", o->width);
	return 0;
}

int flame_layout_build(struct flame_layout *l, const struct profile *p,
		       const struct flame_options *o, struct error *err)
{
	struct walker w = {.l = l, .o = o};
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = choose_type(l, p, o, err)))
		return rc;
	if (o->reverse) {
		uint32_t *smap;

		l->owned = reverse_profile(p, &smap);
		remap_order(l->owned, p, smap);
		free(smap);
		p = l->owned;
	}
	l->p = w.p = p;
	values_init(&w);
	layout_totals(&w, o);
	if (l->total <= 0) {
		values_release(&w.v);
		flame_layout_release(l);
		return error_set(err, ERR_FORMAT,
				 "no samples to draw (the %s total is %" PRId64 ")",
				 profile_str(p, p->types[l->type].type), l->total);
	}
	add_root(&w);
	if (o->flamechart)
		layout_chart(&w);
	else
		layout_tree(&w);
	values_release(&w.v);
	return 0;
}

void flame_layout_release(struct flame_layout *l)
{
	free(l->frames);
	profile_free(l->owned);
	memset(l, 0, sizeof(*l));
}
