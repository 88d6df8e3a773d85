/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "server/flamebearer.h"
#include "server/flamebearer_int.h"

/*
 * The layout follows Pyroscope's own writer (pkg/model/flamegraph.go),
 * so a reply is the one Pyroscope gives for the same tree: a depth-first
 * walk from the root that visits children last name first, names
 * numbered in the order first seen ("total" for the root), each node's
 * children placed after its self value, each level listed left to right
 * with x offsets delta-encoded.
 */

struct units_rule {
	const char *type; /* NULL: any */
	const char *unit; /* NULL: any */
	const char *units;
};

/* First match wins; doc/server-json.md has the same table. */
static const struct units_rule units_rules[] = {
	{"contentions", NULL, "lock_samples"},
	{"lock-count", NULL, "lock_samples"},
	{"mutex_count", NULL, "lock_samples"},
	{"block_count", NULL, "lock_samples"},
	{"delay", NULL, "lock_nanoseconds"},
	{"lock-time", NULL, "lock_nanoseconds"},
	{"mutex_duration", NULL, "lock_nanoseconds"},
	{"block_duration", NULL, "lock_nanoseconds"},
	{"goroutine", NULL, "goroutines"},
	{"goroutines", NULL, "goroutines"},
	{"goroutineleak", NULL, "goroutines"},
	{"exception", NULL, "exceptions"},
	{"exceptions", NULL, "exceptions"},
	{NULL, "bytes", "bytes"},
	{"samples", NULL, "samples"},
	{"cpu", NULL, "samples"},
	{"wall", NULL, "samples"},
	{"offcpu", NULL, "samples"},
};

static int64_t time_unit_ticks(const char *unit)
{
	static const struct {
		const char *unit;
		int64_t ticks;
	} units[] = {
		{"nanoseconds", 1000000000},
		{"microseconds", 1000000},
		{"milliseconds", 1000},
		{"seconds", 1},
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(unit, units[i].unit))
			return units[i].ticks;
	}
	return 0;
}

const char *flamebearer_units(const char *type, const char *unit, int64_t *ticks_per_second)
{
	int64_t ticks = time_unit_ticks(unit);

	*ticks_per_second = ticks;
	for (size_t i = 0; i < ARRAY_SIZE(units_rules); i++) {
		const struct units_rule *r = &units_rules[i];

		if ((!r->type || !strcmp(r->type, type)) && (!r->unit || !strcmp(r->unit, unit)))
			return r->units;
	}
	/* Pyroscope shows "samples" as time (value / sampleRate), other units as numbers. */
	return ticks ? "samples" : "objects";
}

/* Each level: groups of 4 (single) or 7 (double) integers. */
struct fb_level {
	int64_t *v;
	size_t n, alloc;
};

struct fb_layout {
	const struct fb_tree *t;
	unsigned width; /* integers per group */
	struct fb_level *levels;
	size_t nr_levels, alloc_levels;
	uint32_t *name_index; /* tree name id -> index in names, UINT32_MAX: none yet */
	uint32_t *names;      /* names in output order (tree name ids) */
	uint32_t nr_names;
	int64_t max_self;
	/* Children of node n, by name: kids[kid_start[n] .. kid_start[n + 1]). */
	uint32_t *kids, *kid_start;
	bool nomem; /* an allocation failed: the layout is incomplete */
};

static int name_cmp(const struct fb_tree *t, uint32_t a, uint32_t b)
{
	uint32_t la = strtab_len(&t->names, a), lb = strtab_len(&t->names, b);
	int c = memcmp(strtab_str(&t->names, a), strtab_str(&t->names, b), MIN(la, lb));

	return c ? c : (la > lb) - (la < lb);
}

static int kid_cmp(const void *a, const void *b, void *arg)
{
	const struct fb_tree *t = arg;
	const struct fb_node *x = &t->nodes[*(const uint32_t *)a],
			     *y = &t->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return name_cmp(t, x->name, y->name);
}

/* Every drawn node's children sorted by name, in one sort by (parent, name). */
static void sort_children(struct fb_layout *l)
{
	const struct fb_tree *t = l->t;
	size_t n = 0, k = 0;

	l->kids = alloc_array(NULL, t->nr, sizeof(*l->kids));
	l->kid_start = alloc_array(NULL, (size_t)t->nr + 1, sizeof(*l->kid_start));
	if (!l->kids || !l->kid_start) {
		l->nomem = true;
		return;
	}
	for (uint32_t i = 1; i < t->nr; i++) {
		if (!t->drop[i])
			l->kids[n++] = i;
	}
	qsort_r(l->kids, n, sizeof(*l->kids), kid_cmp, (void *)t);
	for (uint32_t i = 0; i <= t->nr; i++) {
		while (k < n && t->nodes[l->kids[k]].parent < i)
			k++;
		l->kid_start[i] = (uint32_t)k;
	}
}

static uint32_t name_of(struct fb_layout *l, uint32_t name)
{
	if (l->name_index[name] == UINT32_MAX) {
		l->name_index[name] = l->nr_names;
		l->names[l->nr_names++] = name;
	}
	return l->name_index[name];
}

static void add_group(struct fb_layout *l, size_t depth, uint32_t node, const int64_t *x)
{
	const struct fb_node *n = &l->t->nodes[node];
	struct fb_level *lv;
	int64_t *g;

	if (depth == l->nr_levels) {
		if (ALLOC_TRY_GROW(l->levels, l->nr_levels + 1, l->alloc_levels) < 0) {
			l->nomem = true;
			return;
		}
		memset(&l->levels[l->nr_levels++], 0, sizeof(struct fb_level));
	}
	lv = &l->levels[depth];
	if (ALLOC_TRY_GROW(lv->v, lv->n + l->width, lv->alloc) < 0) {
		l->nomem = true;
		return;
	}
	g = lv->v + lv->n;
	lv->n += l->width;
	for (unsigned s = 0; s * 3 + 1 < l->width; s++) {
		g[s * 3] = x[s];
		g[s * 3 + 1] = n->total[s];
		g[s * 3 + 2] = n->self[s];
		l->max_self = MAX(l->max_self, n->self[s]);
	}
	g[l->width - 1] = name_of(l, n->name);
}

struct walk {
	uint32_t node;
	uint32_t depth;
	int64_t x[2];
};

/* The depth-first walk: children pushed by name, so visited last name first. */
static void walk_tree(struct fb_layout *l)
{
	const struct fb_tree *t = l->t;
	struct walk *stack = calloc(1, sizeof(*stack));
	size_t nr = 1, alloc = 1;

	if (!stack) {
		l->nomem = true;
		return;
	}
	while (nr && !l->nomem) {
		struct walk w = stack[--nr];
		const struct fb_node *n = &t->nodes[w.node];

		add_group(l, w.depth, w.node, w.x);
		for (unsigned s = 0; s < t->sides; s++)
			w.x[s] += n->self[s];
		for (uint32_t k = l->kid_start[w.node]; k < l->kid_start[w.node + 1]; k++) {
			uint32_t kid = l->kids[k];

			if (ALLOC_TRY_GROW(stack, nr + 1, alloc) < 0) {
				l->nomem = true;
				break;
			}
			stack[nr].node = kid;
			stack[nr].depth = w.depth + 1;
			memcpy(stack[nr].x, w.x, sizeof(w.x));
			nr++;
			for (unsigned s = 0; s < t->sides; s++)
				w.x[s] += t->nodes[kid].total[s];
		}
	}
	free(stack);
}

/* Groups were added right to left: reverse them, then delta-encode the x offsets. */
static void finish_levels(struct fb_layout *l)
{
	unsigned w = l->width;

	for (size_t d = 0; d < l->nr_levels; d++) {
		struct fb_level *lv = &l->levels[d];
		int64_t tmp[7], prev[2] = {0, 0};

		for (size_t i = 0, j = lv->n - w; i < j; i += w, j -= w) {
			memcpy(tmp, lv->v + i, w * sizeof(*tmp));
			memcpy(lv->v + i, lv->v + j, w * sizeof(*tmp));
			memcpy(lv->v + j, tmp, w * sizeof(*tmp));
		}
		for (size_t i = 0; i < lv->n; i += w) {
			for (unsigned s = 0; s * 3 + 1 < w; s++) {
				int64_t *g = lv->v + i + s * 3;

				g[0] -= prev[s];
				prev[s] += g[0] + g[1];
			}
		}
	}
}

/* ERR_NOMEM when memory runs out (layout_release() all the same). */
static int layout_build(struct fb_layout *l, struct fb_tree *t)
{
	memset(l, 0, sizeof(*l));
	l->t = t;
	l->width = t->sides == 2 ? 7 : 4;
	/* The root is "total", as in Pyroscope; a function of that name shares it. */
	if (strtab_try_intern(&t->names, "total", 5, &t->nodes[0].name) < 0)
		return ERR_NOMEM;
	l->name_index = alloc_array(NULL, t->names.nr, sizeof(*l->name_index));
	l->names = alloc_array(NULL, t->names.nr, sizeof(*l->names));
	if (!l->name_index || !l->names)
		return ERR_NOMEM;
	memset(l->name_index, 0xff, t->names.nr * sizeof(*l->name_index));
	sort_children(l);
	if (!l->nomem)
		walk_tree(l);
	if (l->nomem)
		return ERR_NOMEM;
	finish_levels(l);
	return 0;
}

static void layout_release(struct fb_layout *l)
{
	for (size_t d = 0; d < l->nr_levels; d++)
		free(l->levels[d].v);
	free(l->levels);
	free(l->name_index);
	free(l->names);
	free(l->kids);
	free(l->kid_start);
}

/* Levels hold most of a reply's bytes: integers without printf. */
static void add_int(struct strbuf *out, int64_t v)
{
	char buf[24], *e = buf + sizeof(buf), *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	strbuf_add(out, p, (size_t)(e - p));
}

static void write_flamebearer(struct strbuf *out, const struct fb_layout *l, int64_t ticks)
{
	const struct strtab *names = &l->t->names;

	strbuf_addstr(out, "{\"version\":1,\"flamebearer\":{\"names\":[");
	for (uint32_t i = 0; i < l->nr_names; i++) {
		if (i)
			strbuf_addch(out, ',');
		strbuf_add_json_safe(out, strtab_str(names, l->names[i]),
				     strtab_len(names, l->names[i]));
	}
	strbuf_addstr(out, "],\"levels\":[");
	for (size_t d = 0; d < l->nr_levels; d++) {
		strbuf_addstr(out, d ? ",[" : "[");
		for (size_t i = 0; i < l->levels[d].n; i++) {
			if (i)
				strbuf_addch(out, ',');
			add_int(out, l->levels[d].v[i]);
		}
		strbuf_addch(out, ']');
	}
	strbuf_addf(out, "],\"numTicks\":%" PRId64 ",\"maxSelf\":%" PRId64 "}", ticks, l->max_self);
}

static void write_str_field(struct strbuf *out, const char *key, const char *value)
{
	strbuf_addf(out, ",\"%s\":", key);
	strbuf_add_json_safe(out, value, strlen(value));
}

struct fb_meta {
	const char *format, *spy_name, *units, *name;
	int64_t sample_rate;
	bool saturated;	 /* some value was held at 64 bits */
	int64_t divisor; /* every value divided by it to fit; 1: not */
};

static void write_metadata(struct strbuf *out, const struct fb_meta *m)
{
	strbuf_addf(out, ",\"metadata\":{\"format\":\"%s\"", m->format);
	write_str_field(out, "spyName", m->spy_name);
	strbuf_addf(out, ",\"sampleRate\":%" PRId64, m->sample_rate);
	write_str_field(out, "units", m->units);
	write_str_field(out, "name", m->name);
	/* Not exact: the values are a share of what was stored (issue 14). */
	if (m->saturated || m->divisor > 1)
		strbuf_addf(out, ",\"saturated\":true,\"divisor\":%" PRId64, m->divisor);
	strbuf_addch(out, '}');
}

static void write_timeline(struct strbuf *out, const struct fb_timeline *tl)
{
	if (!tl) {
		strbuf_addstr(out, ",\"timeline\":null");
		return;
	}
	strbuf_addf(out, ",\"timeline\":{\"startTime\":%" PRId64 ",\"samples\":[", tl->start_s);
	for (size_t i = 0; i < tl->n; i++)
		strbuf_addf(out, i ? ",%" PRId64 : "%" PRId64, tl->values[i]);
	strbuf_addf(out, "],\"durationDelta\":%" PRId64 ",\"watermarks\":null}", tl->step_s);
}

static int check_options(const struct profile *p, const struct fb_options *o, struct error *err)
{
	const struct fb_timeline *tl = o->timeline;

	if (o->type >= p->nr_types)
		return error_set(err, ERR_USAGE, "flamebearer: no sample type %" PRIu32, o->type);
	if (o->sample_rate < 0 || o->sample_rate > UINT32_MAX)
		return error_set(err, ERR_USAGE,
				 "flamebearer: sample rate %" PRId64 " out of range",
				 o->sample_rate);
	if (tl && tl->step_s < 1)
		return error_set(err, ERR_USAGE, "flamebearer: timeline step %" PRId64 " below 1 s",
				 tl->step_s);
	for (size_t i = 0; tl && i < tl->n; i++) {
		if (tl->values[i] < 0)
			return error_set(err, ERR_USAGE, "flamebearer: negative timeline value");
	}
	return 0;
}

/* Samples a second from the profile's period when it is a time, else Pyroscope's 100. */
static int64_t profile_rate(const struct profile *p)
{
	int64_t ticks = time_unit_ticks(profile_str(p, p->period_type.unit));

	if (!ticks || p->period <= 0 || p->period > ticks)
		return 100;
	return (ticks + p->period / 2) / p->period;
}

static void meta_init(struct fb_meta *m, const struct profile *p, const struct fb_options *o,
		      const char *format)
{
	const struct sample_type *st = &p->types[o->type];
	int64_t ticks;
	const char *units =
		flamebearer_units(profile_str(p, st->type), profile_str(p, st->unit), &ticks);

	m->format = format;
	m->spy_name = o->spy_name ? o->spy_name : "";
	m->units = o->units ? o->units : units;
	m->name = o->name ? o->name : profile_str(p, st->type);
	/* Times are shown as value / sampleRate seconds: the rate is the unit's. */
	m->sample_rate = ticks ? ticks : o->sample_rate ? o->sample_rate : profile_rate(p);
}

/*
 * Prune, lay out and write t; the tree's sides are already totalled.
 * ERR_NOMEM, or OUT's sticky error (a checked buffer over its cap).
 */
static int write_tree(struct strbuf *out, struct fb_tree *t, const struct fb_options *o,
		      struct fb_meta *m, struct error *err)
{
	int64_t left = t->nodes[0].total[0], right = t->sides == 2 ? t->nodes[0].total[1] : 0;
	struct fb_layout l;

	fb_tree_prune(t, o->max_nodes);
	m->saturated = t->saturated;
	m->divisor = t->divisor;
	if (t->nomem || layout_build(&l, t) < 0) {
		if (!t->nomem)
			layout_release(&l);
		return error_set(err, ERR_NOMEM, "flamebearer: out of memory");
	}
	write_flamebearer(out, &l, left + right);
	write_metadata(out, m);
	write_timeline(out, o->timeline);
	strbuf_addstr(out, ",\"groups\":null,\"heatmap\":null");
	if (t->sides == 2)
		strbuf_addf(out, ",\"leftTicks\":%" PRId64 ",\"rightTicks\":%" PRId64, left, right);
	strbuf_addstr(out, "}\n");
	layout_release(&l);
	if (strbuf_error(out) == ERR_NOMEM)
		return error_set(err, ERR_NOMEM, "flamebearer: out of memory");
	if (strbuf_error(out))
		return error_set(err, strbuf_error(out),
				 "flamebearer: the answer is over %zu bytes (use maxNodes)",
				 out->max - 1);
	return 0;
}

int flamebearer_write(const struct profile *p, const struct fb_options *o, struct strbuf *out,
		      struct error *err)
{
	struct fb_tree t;
	struct fb_meta m;
	int ret = check_options(p, o, err);

	if (ret)
		return ret;
	fb_tree_init(&t, 1);
	ret = fb_tree_add(&t, p, o->type, 0, err);
	if (!ret)
		ret = fb_tree_totals(&t, err);
	if (!ret) {
		meta_init(&m, p, o, "single");
		ret = write_tree(out, &t, o, &m, err);
	}
	fb_tree_release(&t);
	return ret;
}

/* The type of right that matches left's type o->type, or -1 with err set. */
static int right_type(const struct profile *left, const struct profile *right,
		      const struct fb_options *o, struct error *err)
{
	const struct sample_type *lt = &left->types[o->type];
	const char *name = profile_str(left, lt->type), *unit = profile_str(left, lt->unit);
	int r = profile_find_type(right, name);

	if (r < 0) {
		error_set(err, ERR_USAGE, "flamebearer: right profile has no sample type %s", name);
		return -1;
	}
	if (strcmp(profile_str(right, right->types[r].unit), unit)) {
		error_set(err, ERR_USAGE, "flamebearer: cannot compare %s in %s with %s in %s",
			  name, unit, name, profile_str(right, right->types[r].unit));
		return -1;
	}
	return r;
}

int flamebearer_write_diff(const struct profile *left, const struct profile *right,
			   const struct fb_options *o, struct strbuf *out, struct error *err)
{
	struct fb_tree t;
	struct fb_meta m;
	int64_t sum;
	int ret = check_options(left, o, err), rtype;

	if (ret)
		return ret;
	rtype = right_type(left, right, o, err);
	if (rtype < 0)
		return ERR_USAGE;
	fb_tree_init(&t, 2);
	ret = fb_tree_add(&t, left, o->type, 0, err);
	if (!ret)
		ret = fb_tree_add(&t, right, (uint32_t)rtype, 1, err);
	if (!ret)
		ret = fb_tree_totals(&t, err);
	/* numTicks is the sum of both sides: fb_tree_totals keeps it in 64 bits. */
	if (!ret && __builtin_add_overflow(t.nodes[0].total[0], t.nodes[0].total[1], &sum))
		BUG("flamebearer: numTicks past 64 bits");
	if (!ret) {
		meta_init(&m, left, o, "double");
		ret = write_tree(out, &t, o, &m, err);
	}
	fb_tree_release(&t);
	return ret;
}
