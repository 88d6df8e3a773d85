/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/strbuf.h"
#include "render/flamegraph.h"
#include "render/flamegraph_int.h"
#include "format/format.h"
#include "profile/stats.h"

/*
 * The HTML viewer: one self-contained page (template viewer.html, script
 * viewer.js, both embedded at build time) with the profile inlined as
 * JSON in a <script type="application/json"> block.
 *
 * The JSON follows Pyroscope's "flamebearer" layout: a names table and,
 * per depth, one flat array of tuples [x delta, total, self, name index]
 * where x delta is the frame's x minus the end (x + total) of the
 * previous frame of the same level.  Children are merged by name, sorted
 * by name and packed from their parent's left edge, so every level is
 * sorted by x.  A differential profile adds [base total, base self,
 * significant] to each tuple; its width is the "new" side, as in
 * flamegraph.pl.  With --flamechart (and not a diff) the data also has
 * "chart": the same tuples for the frames in input order (x is time,
 * frames merged only with their neighbours), from flamegraph_layout.c.
 * See doc/viewer.md for the page itself.
 */

extern const char asset_viewer_html[];
extern const size_t asset_viewer_html_len;
extern const char asset_viewer_js[];
extern const size_t asset_viewer_js_len;

#define FLUSH_AT   (256 * 1024)
#define ROOT_NAME  UINT32_MAX /* names[] entry standing for the root, "all" */
#define NO_NAME	   UINT32_MAX
#define TYPE_BASE  0
#define TYPE_NEW   1
#define TYPE_BASEN 2
#define TYPE_NEWN  3

/* Per call-tree node values (arrays indexed by node). */
struct html_values {
	int64_t *total, *self;	 /* the drawn type (diff: "new") */
	int64_t *btotal, *bself; /* diff: "base" */
	double *bcount, *ncount; /* diff: samples through the node */
	double base_n, new_n;	 /* diff: samples of each side */
};

/* A frame of the tree merged by name: several call-tree nodes. */
struct mframe {
	int64_t x, total, self, btotal, bself;
	double bcount, ncount;
	uint32_t name;	    /* strtab id, or ROOT_NAME */
	uint32_t first, nr; /* its nodes: level members[first .. first + nr) */
};

struct level {
	struct mframe *f;
	size_t nr, alloc;
	uint32_t *members;
	size_t nr_members, alloc_members;
};

struct html_writer {
	const struct profile *p;
	const struct flame_options *o;
	FILE *f;
	struct strbuf sb;
	bool diff;
	uint32_t type;
	int64_t min_total; /* frames below this are left out (--minwidth N%) */
	double alpha;
	struct html_values v;
	/* The names table: strtab ids in index order, and their flags. */
	uint32_t *name_idx; /* strtab id -> names index, NO_NAME when absent */
	uint32_t *names, *name_flags;
	size_t nr_names, alloc_names, alloc_flags;
	uint32_t *kids; /* scratch: children of one merged frame */
	size_t alloc_kids;
	struct strbuf title; /* of the page and of the data (flame_title) */
};

static void json_add_cstr(struct strbuf *sb, const char *s)
{
	if (s)
		strbuf_add_json_safe(sb, s, strlen(s));
	else
		strbuf_addstr(sb, "null");
}

static void json_add_id(struct strbuf *sb, const struct profile *p, uint32_t id)
{
	strbuf_add_json_safe(sb, profile_str(p, id), strtab_len(&p->strs, id));
}

static int writer_flush(struct html_writer *w, size_t at)
{
	if (w->sb.len < at)
		return 0;
	if (strbuf_write(&w->sb, w->f))
		return -1;
	strbuf_reset(&w->sb);
	return 0;
}

static bool type_is(const struct profile *p, uint32_t t, const char *name)
{
	return t < p->nr_types && !strcmp(profile_str(p, p->types[t].type), name);
}

/* Samples behind the values of type t (node totals in tot), into out. */
static double count_side(const struct profile *p, uint32_t t, uint32_t count_t, const int64_t *tot,
			 double *out)
{
	struct sample_counter c;

	if (type_is(p, count_t, count_t == TYPE_BASEN ? "base_samples" : "new_samples")) {
		int64_t *tmp = xmalloc(st_mult(p->nr_nodes, sizeof(int64_t)));

		profile_node_totals(p, count_t, tmp, NULL);
		for (uint32_t n = 0; n < p->nr_nodes; n++)
			out[n] = (double)tmp[n];
		free(tmp);
		return out[0];
	}
	/* A folded "stack base new" file counts samples: its values are the counts. */
	if (!strcmp(profile_str(p, p->types[t].unit), "count") && !p->types[t].decimals) {
		for (uint32_t n = 0; n < p->nr_nodes; n++)
			out[n] = (double)tot[n];
		return out[0];
	}
	stats_counter_init(&c, p, t);
	for (uint32_t n = 0; n < p->nr_nodes; n++)
		out[n] = stats_count(&c, (double)tot[n]);
	return out[0];
}

static void values_compute(struct html_writer *w)
{
	const struct profile *p = w->p;
	size_t n = p->nr_nodes;
	struct html_values *v = &w->v;

	v->total = xmalloc(st_mult(n, sizeof(int64_t)));
	v->self = xmalloc(st_mult(n, sizeof(int64_t)));
	profile_node_totals(p, w->type, v->total, v->self);
	if (!w->diff)
		return;
	v->btotal = xmalloc(st_mult(n, sizeof(int64_t)));
	v->bself = xmalloc(st_mult(n, sizeof(int64_t)));
	v->bcount = xmalloc(st_mult(n, sizeof(double)));
	v->ncount = xmalloc(st_mult(n, sizeof(double)));
	profile_node_totals(p, TYPE_BASE, v->btotal, v->bself);
	v->base_n = count_side(p, TYPE_BASE, TYPE_BASEN, v->btotal, v->bcount);
	v->new_n = count_side(p, TYPE_NEW, TYPE_NEWN, v->total, v->ncount);
}

static void values_release(struct html_values *v)
{
	free(v->total);
	free(v->self);
	free(v->btotal);
	free(v->bself);
	free(v->bcount);
	free(v->ncount);
}

/* Flags a name's annotations imply (stackcollapse suffixes, unsymbolized names). */
static uint32_t name_flags(const struct profile *p, uint32_t name)
{
	return flame_name_flags(profile_str(p, name), strtab_len(&p->strs, name));
}

/* The names index of strtab id name (ROOT_NAME for the root), added when new. */
static uint32_t names_get(struct html_writer *w, uint32_t name)
{
	uint32_t *slot = name == ROOT_NAME ? NULL : &w->name_idx[name];

	if (slot && *slot != NO_NAME)
		return *slot;
	if (!slot && w->nr_names && w->names[0] == ROOT_NAME)
		return 0;
	ALLOC_GROW(w->names, w->nr_names + 1, w->alloc_names);
	ALLOC_GROW(w->name_flags, w->nr_names + 1, w->alloc_flags);
	w->names[w->nr_names] = name;
	w->name_flags[w->nr_names] = slot ? name_flags(w->p, name) : 0;
	if (slot)
		*slot = (uint32_t)w->nr_names;
	return (uint32_t)w->nr_names++;
}

/* The children of every node of m, sorted by name, into w->kids. */
static size_t gather_children(struct html_writer *w, const struct level *cur,
			      const struct mframe *m)
{
	const struct profile *p = w->p;
	size_t n = 0;

	for (uint32_t i = 0; i < m->nr; i++) {
		uint32_t node = cur->members[m->first + i];

		for (uint32_t c = p->nodes[node].first_child; c; c = p->nodes[c].next_sibling) {
			ALLOC_GROW(w->kids, n + 1, w->alloc_kids);
			w->kids[n++] = c;
		}
	}
	if (n > 1)
		qsort_r(w->kids, n, sizeof(*w->kids), profile_node_name_cmp, (void *)p);
	return n;
}

static void level_push_member(struct level *l, struct mframe *m, const struct html_writer *w,
			      uint32_t node)
{
	const struct html_values *v = &w->v;

	ALLOC_GROW(l->members, l->nr_members + 1, l->alloc_members);
	l->members[l->nr_members++] = node;
	m->nr++;
	m->total += v->total[node];
	m->self += v->self[node];
	if (w->diff) {
		m->btotal += v->btotal[node];
		m->bself += v->bself[node];
		m->bcount += v->bcount[node];
		m->ncount += v->ncount[node];
	}
}

/* Merge the children of kids[*j..] that share one name into a frame of next. */
static void level_merge_run(struct html_writer *w, struct level *next, size_t nk, size_t *j,
			    int64_t *x)
{
	const struct profile *p = w->p;
	struct mframe m = {0};
	uint32_t idx;

	m.name = p->frames[p->nodes[w->kids[*j]].frame].name;
	m.first = (uint32_t)next->nr_members;
	while (*j < nk && p->frames[p->nodes[w->kids[*j]].frame].name == m.name)
		level_push_member(next, &m, w, w->kids[(*j)++]);
	if (m.total <= 0) {
		next->nr_members = m.first;
		return;
	}
	m.x = *x;
	*x += m.total;
	/* Too narrow: leave a gap, as flamegraph.pl does with --minwidth. */
	if (m.total < w->min_total) {
		next->nr_members = m.first;
		return;
	}
	idx = names_get(w, m.name);
	for (uint32_t i = 0; i < m.nr; i++)
		w->name_flags[idx] |= p->frames[p->nodes[next->members[m.first + i]].frame].flags;
	ALLOC_GROW(next->f, next->nr + 1, next->alloc);
	next->f[next->nr++] = m;
}

/* The level below cur: children merged by name, sorted, packed left. */
static void level_next(struct html_writer *w, const struct level *cur, struct level *next)
{
	next->nr = next->nr_members = 0;
	for (size_t i = 0; i < cur->nr; i++) {
		size_t nk = gather_children(w, cur, &cur->f[i]), j = 0;
		int64_t x = cur->f[i].x;

		while (j < nk)
			level_merge_run(w, next, nk, &j, &x);
	}
}

static void level_release(struct level *l)
{
	free(l->f);
	free(l->members);
}

static void level_write(struct html_writer *w, const struct level *l)
{
	int64_t end = 0;

	strbuf_addch(&w->sb, '[');
	for (size_t i = 0; i < l->nr; i++) {
		const struct mframe *m = &l->f[i];

		strbuf_addf(&w->sb, "%s%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu32, i ? "," : "",
			    m->x - end, m->total, m->self, names_get(w, m->name));
		if (w->diff) {
			double pv = stats_two_prop_p(m->bcount, w->v.base_n, m->ncount, w->v.new_n);

			strbuf_addf(&w->sb, ",%" PRId64 ",%" PRId64 ",%d", m->btotal, m->bself,
				    pv < w->alpha);
		}
		end = m->x + m->total;
		/* A write error shows in ferror() at the end. */
		writer_flush(w, FLUSH_AT);
	}
	strbuf_addch(&w->sb, ']');
}

static int levels_write(struct html_writer *w)
{
	struct level a = {0}, b = {0}, *cur = &a, *next = &b, *t;
	struct mframe root = {0};
	int rc = 0;

	root.name = ROOT_NAME;
	ALLOC_GROW(a.f, 1, a.alloc);
	a.f[a.nr++] = root;
	level_push_member(&a, &a.f[0], w, 0);
	strbuf_addstr(&w->sb, ",\"levels\":[");
	for (size_t d = 0; cur->nr; d++) {
		strbuf_addstr(&w->sb, d ? ",\n" : "\n");
		level_write(w, cur);
		if ((rc = writer_flush(w, FLUSH_AT)))
			break;
		level_next(w, cur, next);
		t = cur;
		cur = next;
		next = t;
	}
	strbuf_addstr(&w->sb, "]");
	level_release(&a);
	level_release(&b);
	return rc;
}

static int chart_frame_cmp(const void *a, const void *b)
{
	const struct flame_frame *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* One frame of the chart: its name (the root's is "all") into the names table. */
static uint32_t chart_name(struct html_writer *w, const struct flame_frame *f)
{
	const struct profile *p = w->p;

	if (!f->depth)
		return names_get(w, ROOT_NAME);
	return names_get(w, p->frames[p->nodes[f->node].frame].name);
}

/*
 * --flamechart: "chart", the time-ordered layout's frames per depth in x
 * order.  The layout's self value of a frame is its delta (no base).
 */
static int chart_write(struct html_writer *w, struct error *err)
{
	struct flame_options o = *w->o;
	struct flame_layout l;
	size_t i = 0;
	int rc;

	o.reverse = false; /* the layout must keep w->p's string ids */
	o.total = 0;
	if (!o.minwidth_pct)
		o.minwidth = 0;
	if ((rc = flame_layout_build(&l, w->p, &o, err)))
		return rc;
	qsort(l.frames, l.nr, sizeof(*l.frames), chart_frame_cmp);
	strbuf_addstr(&w->sb, ",\"chart\":[");
	for (uint32_t d = 0; i < l.nr; d++) {
		int64_t end = 0;

		strbuf_addstr(&w->sb, d ? ",\n[" : "\n[");
		for (size_t first = i; i < l.nr && l.frames[i].depth == d; i++) {
			const struct flame_frame *f = &l.frames[i];
			uint32_t idx = chart_name(w, f);

			w->name_flags[idx] |= f->flags & ~FLAME_WAKER;
			strbuf_addf(&w->sb, "%s%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu32,
				    i > first ? "," : "", f->start - end, f->value, f->delta, idx);
			end = f->start + f->value;
			writer_flush(w, FLUSH_AT);
		}
		strbuf_addch(&w->sb, ']');
	}
	strbuf_addch(&w->sb, ']');
	flame_layout_release(&l);
	return writer_flush(w, FLUSH_AT);
}

/* The per-function table: [name, self, total] (+ [base self, base total]). */
static int functions_write(struct html_writer *w)
{
	struct profile *p = (struct profile *)w->p;
	struct func_stat *fs, *bs = NULL;
	size_t n, first = 1;

	/* By function, profile_functions interns nothing: p is not modified. */
	n = profile_functions(p, w->type, FUNC_BY_FUNCTION, &fs);
	if (w->diff)
		profile_functions(p, TYPE_BASE, FUNC_BY_FUNCTION, &bs);
	strbuf_addstr(&w->sb, ",\n\"functions\":[");
	for (size_t i = 0; i < n; i++) {
		if (fs[i].total <= 0 && (!bs || bs[i].total <= 0))
			continue;
		strbuf_addf(&w->sb, "%s[%" PRIu32 ",%" PRId64 ",%" PRId64, first ? "" : ",",
			    names_get(w, fs[i].key), fs[i].self, fs[i].total);
		if (bs)
			strbuf_addf(&w->sb, ",%" PRId64 ",%" PRId64, bs[i].self, bs[i].total);
		strbuf_addch(&w->sb, ']');
		first = 0;
		if (writer_flush(w, FLUSH_AT))
			break;
	}
	strbuf_addch(&w->sb, ']');
	free(fs);
	free(bs);
	return ferror(w->f) ? -1 : 0;
}

static int names_write(struct html_writer *w)
{
	strbuf_addstr(&w->sb, ",\n\"names\":[");
	for (size_t i = 0; i < w->nr_names; i++) {
		if (i)
			strbuf_addch(&w->sb, ',');
		if (w->names[i] == ROOT_NAME)
			strbuf_addstr(&w->sb, "\"all\"");
		else
			json_add_id(&w->sb, w->p, w->names[i]);
		if (writer_flush(w, FLUSH_AT))
			return -1;
	}
	strbuf_addstr(&w->sb, "],\n\"nameFlags\":[");
	for (size_t i = 0; i < w->nr_names; i++)
		strbuf_addf(&w->sb, "%s%" PRIu32, i ? "," : "", w->name_flags[i]);
	strbuf_addch(&w->sb, ']');
	return 0;
}

static void header_write(struct html_writer *w)
{
	const struct profile *p = w->p;
	const struct flame_options *o = w->o;
	const struct sample_type *st = &p->types[w->type];
	struct sample_counter c;
	int64_t total = w->v.total[0];
	double n, n_eff;

	stats_counter_init(&c, p, w->type);
	n = stats_total_samples(&c, p, w->type);
	if (w->diff) {
		n = w->v.new_n;
		/* plateau diff's new_samples count the new side's rows. */
		if (type_is(p, TYPE_NEWN, "new_samples"))
			c = (struct sample_counter){.count_type = TYPE_NEWN, .per_sample = 0};
	}
	n_eff = stats_effective_samples(&c, p, w->type);
	strbuf_addf(&w->sb, "{\"version\":1,\"title\":");
	json_add_cstr(&w->sb, w->title.buf);
	strbuf_addstr(&w->sb, ",\"subtitle\":");
	json_add_cstr(&w->sb, o->subtitle);
	strbuf_addstr(&w->sb, ",\"type\":");
	json_add_id(&w->sb, p, st->type);
	strbuf_addstr(&w->sb, ",\"unit\":");
	json_add_id(&w->sb, p, st->unit);
	strbuf_addf(&w->sb,
		    ",\"decimals\":%" PRIu32 ",\"total\":%" PRId64 ",\"samples\":%.0f,"
		    "\"effSamples\":%.3f,\"inverted\":%s,\"diff\":",
		    st->decimals, total, n, n_eff, o->inverted ? "true" : "false");
	if (!w->diff)
		strbuf_addstr(&w->sb, "null");
	else
		strbuf_addf(&w->sb,
			    "{\"baseTotal\":%" PRId64 ",\"baseSamples\":%.0f,\"newSamples\":%.0f,"
			    "\"alpha\":%g,\"significance\":%s,\"negate\":%s}",
			    w->v.btotal[0], w->v.base_n, w->v.new_n, w->alpha,
			    o->diff_significance ? "true" : "false", o->negate ? "true" : "false");
	if (o->dropped && o->dropped->nodes) {
		strbuf_addf(&w->sb,
			    ",\"dropped\":{\"frames\":%" PRIu32 ",\"value\":%" PRId64 ",\"why\":",
			    o->dropped->nodes, o->dropped->value);
		json_add_cstr(&w->sb, o->dropped_why ? o->dropped_why : "");
		strbuf_addch(&w->sb, '}');
	}
}

static int data_write(struct html_writer *w, struct error *err)
{
	header_write(w);
	if (levels_write(w))
		return -1;
	if (w->o->flamechart && !w->diff && chart_write(w, err))
		return -1;
	if (functions_write(w) || names_write(w))
		return -1;
	strbuf_addstr(&w->sb, "}");
	return writer_flush(w, 0);
}

static int chunk_write(struct html_writer *w, const char *s, size_t len)
{
	strbuf_add(&w->sb, s, len);
	return writer_flush(w, 0);
}

/* Fill the template's markers in order: title, data, script. */
static int page_write(struct html_writer *w, struct error *err)
{
	static const char *const markers[] = {"@PLATEAU_TITLE@", "@PLATEAU_DATA@",
					      "@PLATEAU_SCRIPT@"};
	const char *pos = asset_viewer_html, *end = pos + asset_viewer_html_len;

	for (size_t i = 0; i < ARRAY_SIZE(markers); i++) {
		const char *m = memmem(pos, (size_t)(end - pos), markers[i], strlen(markers[i]));
		int rc;

		if (!m)
			return error_set(err, ERR_UNSUPPORTED, "viewer template lacks %s",
					 markers[i]);
		if (chunk_write(w, pos, (size_t)(m - pos)))
			break;
		pos = m + strlen(markers[i]);
		if (i == 0) {
			strbuf_add_xml(&w->sb, w->title.buf, w->title.len);
			rc = writer_flush(w, 0);
		} else {
			rc = i == 1 ? data_write(w, err)
				    : chunk_write(w, asset_viewer_js, asset_viewer_js_len);
		}
		if (rc)
			break;
	}
	if (!ferror(w->f))
		chunk_write(w, pos, (size_t)(end - pos));
	if (ferror(w->f) || fflush(w->f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}

static int writer_init(struct html_writer *w, const struct profile *p,
		       const struct flame_options *o, FILE *f, struct error *err)
{
	double total;

	memset(w, 0, sizeof(*w));
	w->p = p;
	w->o = o;
	strbuf_init(&w->title, 64);
	flame_title(p, o, &w->title);
	w->f = f;
	w->diff = profile_is_diff(p);
	w->type = w->diff ? TYPE_NEW : o->type;
	if (w->type >= p->nr_types)
		return error_set(err, ERR_USAGE, "no sample type %u", w->type);
	w->alpha = o->diff_alpha > 0 && o->diff_alpha < 1 ? o->diff_alpha : 0.05;
	w->name_idx = xmalloc(st_mult(p->strs.nr, sizeof(uint32_t)));
	memset(w->name_idx, 0xff, (size_t)p->strs.nr * sizeof(uint32_t));
	names_get(w, ROOT_NAME);
	values_compute(w);
	total = (double)w->v.total[0];
	if (total <= 0)
		return error_set(err, ERR_FORMAT, "the profile has no samples of type %s",
				 profile_str(p, p->types[w->type].type));
	if (o->minwidth_pct && o->minwidth > 0)
		w->min_total = (int64_t)(total * o->minwidth / 100.0);
	return 0;
}

static void writer_release(struct html_writer *w)
{
	values_release(&w->v);
	strbuf_release(&w->sb);
	strbuf_release(&w->title);
	free(w->name_idx);
	free(w->names);
	free(w->name_flags);
	free(w->kids);
}

int flamegraph_html_write(const struct profile *p, const struct flame_options *o, FILE *f,
			  struct error *err)
{
	struct html_writer w;
	int rc;

	if (p->nr_types == 0)
		return error_set(err, ERR_USAGE, "the profile has no sample types");
	rc = writer_init(&w, p, o, f, err);
	if (!rc && o->data_only) {
		if (data_write(&w, err) || ferror(f) || fflush(f))
			rc = err->code ? err->code
				       : error_set(err, ERR_IO, "write error: %s", strerror(errno));
	} else if (!rc) {
		rc = page_write(&w, err);
	}
	writer_release(&w);
	return rc;
}
