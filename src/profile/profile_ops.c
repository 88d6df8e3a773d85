/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <regex.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/profile.h"

/*
 * Copying between profiles: strings, frames, labels and nodes of src get
 * ids in dst through maps filled lazily (UINT32_MAX = not yet mapped).
 */
struct idmap {
	const struct profile *src;
	struct profile *dst;
	uint32_t *strs, *frames, *nodes, *labelsets;
};

static void idmap_release(struct idmap *m)
{
	free(m->strs);
	free(m->frames);
	free(m->nodes);
	free(m->labelsets);
}

/* ERR_NOMEM (nothing to release) when memory runs out (the CLI dies). */
static int idmap_init(struct idmap *m, const struct profile *src, struct profile *dst)
{
	m->src = src;
	m->dst = dst;
	m->strs = alloc_array(NULL, src->strs.nr, sizeof(uint32_t));
	m->frames = alloc_array(NULL, (size_t)src->nr_frames + 1, sizeof(uint32_t));
	m->nodes = alloc_array(NULL, src->nr_nodes, sizeof(uint32_t));
	m->labelsets = alloc_array(NULL, src->nr_labelsets, sizeof(uint32_t));
	if (!m->strs || !m->frames || !m->nodes || !m->labelsets) {
		idmap_release(m);
		profile_nomem(dst);
		return ERR_NOMEM;
	}
	memset(m->strs, 0xff, src->strs.nr * sizeof(uint32_t));
	memset(m->frames, 0xff, (src->nr_frames + 1) * sizeof(uint32_t));
	memset(m->nodes, 0xff, src->nr_nodes * sizeof(uint32_t));
	m->nodes[0] = 0;
	memset(m->labelsets, 0xff, src->nr_labelsets * sizeof(uint32_t));
	m->labelsets[0] = 0;
	return 0;
}

static uint32_t map_str(struct idmap *m, uint32_t id)
{
	if (m->strs[id] == UINT32_MAX)
		m->strs[id] = profile_intern(m->dst, profile_str(m->src, id),
					     strtab_len(&m->src->strs, id));
	return m->strs[id];
}

static uint32_t map_frame(struct idmap *m, uint32_t id)
{
	if (m->frames[id] == UINT32_MAX) {
		struct frame f = m->src->frames[id];

		f.name = map_str(m, f.name);
		f.module = map_str(m, f.module);
		f.file = map_str(m, f.file);
		m->frames[id] = profile_intern_frame(m->dst, &f);
	}
	return m->frames[id];
}

static uint32_t map_node(struct idmap *m, uint32_t id)
{
	const struct pnode *n = &m->src->nodes[id];

	if (m->nodes[id] == UINT32_MAX)
		m->nodes[id] =
			profile_child(m->dst, map_node(m, n->parent), map_frame(m, n->frame));
	return m->nodes[id];
}

static uint32_t map_labelset(struct idmap *m, uint32_t id)
{
	if (m->labelsets[id] == UINT32_MAX) {
		size_t n;
		const struct label *l = profile_labels(m->src, id, &n);
		struct label *copy = alloc_array(NULL, n ? n : 1, sizeof(*copy));

		if (!copy) {
			profile_nomem(m->dst);
			return 0;
		}
		for (size_t i = 0; i < n; i++) {
			copy[i] = l[i];
			copy[i].key = map_str(m, l[i].key);
			copy[i].str = map_str(m, l[i].str);
			copy[i].unit = map_str(m, l[i].unit);
		}
		m->labelsets[id] = profile_intern_labels(m->dst, copy, n);
		free(copy);
	}
	return m->labelsets[id];
}

/* Copy the header fields (types, period, times, labels) of src into empty dst. */
static void copy_header(struct idmap *m)
{
	const struct profile *src = m->src;
	struct profile *dst = m->dst;

	for (uint32_t t = 0; t < src->nr_types; t++) {
		profile_add_type(dst, profile_str(src, src->types[t].type),
				 profile_str(src, src->types[t].unit));
		if (profile_failed(dst)) /* the type is missing: the caller stops */
			return;
		dst->types[t].decimals = src->types[t].decimals;
	}
	dst->default_type = src->default_type;
	dst->period_type.type = map_str(m, src->period_type.type);
	dst->period_type.unit = map_str(m, src->period_type.unit);
	dst->period = src->period;
	dst->time_nanos = src->time_nanos;
	dst->duration_nanos = src->duration_nanos;
	dst->profile_labels = map_labelset(m, src->profile_labels);
	for (uint32_t i = 0; i < src->nr_comments; i++) {
		size_t alloc = dst->alloc_comments;

		if (ALLOC_TRY_GROW(dst->comments, (size_t)dst->nr_comments + 1, alloc) < 0) {
			profile_nomem(dst);
			return;
		}
		dst->alloc_comments = (uint32_t)MIN(alloc, UINT32_MAX);
		dst->comments[dst->nr_comments++] = map_str(m, src->comments[i]);
	}
}

static bool same_types(const struct profile *a, const struct profile *b)
{
	if (a->nr_types != b->nr_types)
		return false;
	for (uint32_t t = 0; t < a->nr_types; t++) {
		if (strcmp(profile_str(a, a->types[t].type), profile_str(b, b->types[t].type)) ||
		    strcmp(profile_str(a, a->types[t].unit), profile_str(b, b->types[t].unit)))
			return false;
	}
	return true;
}

static void describe_types(const struct profile *p, struct strbuf *sb)
{
	for (uint32_t t = 0; t < p->nr_types; t++)
		strbuf_addf(sb, "%s%s/%s", t ? "," : "", profile_str(p, p->types[t].type),
			    profile_str(p, p->types[t].unit));
}

/* V times 10^SHIFT, held at INT64_MAX or INT64_MIN (and *SATURATED set) past 64 bits. */
static int64_t scale_saturated(int64_t v, uint32_t shift, bool *saturated)
{
	int64_t r = v;

	while (shift--) {
		if (__builtin_mul_overflow(r, 10, &r)) {
			*saturated = true;
			return v > 0 ? INT64_MAX : INT64_MIN;
		}
	}
	return r;
}

int profile_merge(struct profile *dst, const struct profile *src, struct error *err)
{
	struct idmap m;
	int64_t vals[16];

	if (!dst->nr_types && !dst->nr_samples) {
		if (idmap_init(&m, src, dst) < 0)
			return error_set(err, ERR_NOMEM, "out of memory merging profiles");
		copy_header(&m);
		if (profile_failed(dst)) {
			idmap_release(&m);
			return error_set(err, ERR_NOMEM, "out of memory merging profiles");
		}
	} else {
		if (!same_types(dst, src)) {
			/* Checked: without memory the message lists no types. */
			struct strbuf a = STRBUF_INIT_MAX(4096), b = STRBUF_INIT_MAX(4096);

			describe_types(dst, &a);
			describe_types(src, &b);
			error_set(err, ERR_USAGE,
				  "cannot merge profiles of different sample types (%s and %s)",
				  a.buf, b.buf);
			strbuf_release(&a);
			strbuf_release(&b);
			return ERR_USAGE;
		}
		if (idmap_init(&m, src, dst) < 0)
			return error_set(err, ERR_NOMEM, "out of memory merging profiles");
		if (dst->duration_nanos < src->duration_nanos)
			dst->duration_nanos = src->duration_nanos;
	}
	/* Sums that overflow are saturated (dst->saturated), not refused: see profile.h. */
	for (uint32_t t = 0; t < src->nr_types; t++)
		(void)profile_set_decimals(dst, t, src->types[t].decimals);
	for (uint32_t s = 0; s < src->nr_samples; s++) {
		const int64_t *v = profile_sample_values(src, s);

		for (uint32_t t = 0; t < src->nr_types; t++)
			vals[t] = scale_saturated(v[t],
						  dst->types[t].decimals - src->types[t].decimals,
						  &dst->saturated);
		(void)profile_add_sample(dst, map_node(&m, src->samples[s].node),
					 map_labelset(&m, src->samples[s].labels), vals);
	}
	dst->saturated |= src->saturated;
	idmap_release(&m);
	if (profile_failed(dst))
		return error_set(err, ERR_NOMEM, "out of memory merging profiles");
	return 0;
}

void profile_scale(struct profile *p, double factor)
{
	size_t n = (size_t)p->nr_samples * p->nr_types;

	for (size_t i = 0; i < n; i++) {
		double v = llround((double)p->values[i] * factor);

		p->values[i] = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
	}
}

/* A new profile with src's header and the samples keep[s] selects. */
static struct profile *copy_samples(const struct profile *src, const bool *keep)
{
	struct profile *dst = profile_new();
	struct idmap m;

	idmap_init(&m, src, dst);
	copy_header(&m);
	for (uint32_t s = 0; s < src->nr_samples; s++) {
		if (keep[s])
			profile_add_sample(dst, map_node(&m, src->samples[s].node),
					   map_labelset(&m, src->samples[s].labels),
					   profile_sample_values(src, s));
	}
	idmap_release(&m);
	return dst;
}

/* match[n]: node n or one of its ancestors has a frame name matching re. */
static bool *match_nodes(const struct profile *p, const regex_t *re)
{
	bool *frame_match = xcalloc(p->nr_frames + 1, sizeof(bool));
	bool *match = xcalloc(p->nr_nodes, sizeof(bool));

	for (uint32_t f = 0; f < p->nr_frames; f++)
		frame_match[f] = !regexec(re, profile_str(p, p->frames[f].name), 0, NULL, 0);
	for (uint32_t n = 1; n < p->nr_nodes; n++)
		match[n] = match[p->nodes[n].parent] || frame_match[p->nodes[n].frame];
	free(frame_match);
	return match;
}

static int compile(regex_t *re, const char *pattern, const char *what, struct error *err)
{
	int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	char msg[128];

	if (!rc)
		return 0;
	regerror(rc, re, msg, sizeof(msg));
	return error_set(err, ERR_USAGE, "bad %s pattern '%s': %s", what, pattern, msg);
}

struct profile *profile_filter(const struct profile *p, const char *focus, const char *ignore,
			       struct error *err)
{
	bool *keep = xmalloc(st_mult(p->nr_samples + 1, sizeof(bool)));
	const char *pats[2] = {focus, ignore};
	struct profile *out = NULL;

	for (uint32_t s = 0; s < p->nr_samples; s++)
		keep[s] = true;
	for (int i = 0; i < 2; i++) {
		regex_t re;
		bool *match;

		if (!pats[i])
			continue;
		if (compile(&re, pats[i], i ? "ignore" : "focus", err))
			goto out;
		match = match_nodes(p, &re);
		for (uint32_t s = 0; s < p->nr_samples; s++) {
			if (match[p->samples[s].node] == (i == 1))
				keep[s] = false;
		}
		free(match);
		regfree(&re);
	}
	out = copy_samples(p, keep);
out:
	free(keep);
	return out;
}

struct profile *profile_prune(const struct profile *p, uint32_t type, double min_share)
{
	int64_t *total = xmalloc(st_mult(p->nr_nodes, sizeof(int64_t)));
	uint32_t *target = xmalloc(st_mult(p->nr_nodes, sizeof(uint32_t)));
	struct profile *dst = profile_new();
	uint32_t pruned_frame;
	int64_t limit;
	bool *pruned;
	struct idmap m;

	profile_node_totals(p, type, total, NULL);
	limit = (int64_t)ceil(min_share * (double)total[0]);
	idmap_init(&m, p, dst);
	copy_header(&m);
	pruned_frame = profile_frame_named(dst, "[pruned]", 8);
	/* target[n]: the dst node that n's samples go to. */
	pruned = xcalloc(p->nr_nodes, sizeof(bool));
	target[0] = 0;
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		uint32_t parent = p->nodes[n].parent;

		if (pruned[parent]) {
			pruned[n] = true;
			target[n] = target[parent];
		} else if (total[n] < limit) {
			pruned[n] = true;
			target[n] = profile_child(dst, target[parent], pruned_frame);
		} else {
			target[n] = map_node(&m, n);
		}
	}
	free(pruned);
	for (uint32_t s = 0; s < p->nr_samples; s++)
		profile_add_sample(dst, target[p->samples[s].node],
				   map_labelset(&m, p->samples[s].labels),
				   profile_sample_values(p, s));
	idmap_release(&m);
	free(total);
	free(target);
	return dst;
}

static uint32_t func_key_of(struct profile *p, uint32_t frame, enum func_key by, struct strbuf *sb)
{
	const struct frame *f = &p->frames[frame];
	const char *mod, *slash;

	switch (by) {
	case FUNC_BY_MODULE:
		if (!f->module)
			return profile_intern_str(p, "[unknown]");
		mod = profile_str(p, f->module);
		slash = strrchr(mod, '/');
		return profile_intern_str(p, slash ? slash + 1 : mod);
	case FUNC_BY_LINE:
		if (!f->file)
			return f->name;
		strbuf_reset(sb);
		strbuf_addf(sb, "%s %s:%u", profile_str(p, f->name), profile_str(p, f->file),
			    f->line);
		return profile_intern(p, sb->buf, sb->len);
	case FUNC_BY_FUNCTION:
	default: return f->name;
	}
}

size_t profile_functions(struct profile *p, uint32_t type, enum func_key by, struct func_stat **out)
{
	return profile_functions_where(p, type, PROFILE_ANY_TYPE, by, out);
}

size_t profile_functions_where(struct profile *p, uint32_t type, uint32_t where, enum func_key by,
			       struct func_stat **out)
{
	uint32_t nr_frames = p->nr_frames;
	uint32_t *key_of = alloc_array(NULL, (size_t)nr_frames + 1, sizeof(uint32_t));
	uint32_t *slot_of, *stamp, nr = 0;
	struct strbuf sb = STRBUF_INIT_MAX(SIZE_MAX);
	struct func_stat *stats;

	for (uint32_t f = 0; key_of && f < nr_frames; f++)
		key_of[f] = func_key_of(p, f, by, &sb);
	if (strbuf_error(&sb))
		profile_nomem(p); /* keys are missing */
	strbuf_release(&sb);
	/* Dense slots per distinct key. */
	slot_of = alloc_array(NULL, p->strs.nr, sizeof(uint32_t));
	stats = calloc((size_t)nr_frames + 1, sizeof(*stats));
	/* No memory: none (the CLI dies, a server's P is failed). */
	if (!key_of || !slot_of || !stats || profile_failed(p)) {
		free(key_of);
		free(slot_of);
		free(stats);
		profile_nomem(p);
		*out = NULL;
		return 0;
	}
	memset(slot_of, 0xff, p->strs.nr * sizeof(uint32_t));
	for (uint32_t f = 0; f < nr_frames; f++) {
		if (slot_of[key_of[f]] == UINT32_MAX) {
			slot_of[key_of[f]] = nr;
			stats[nr++].key = key_of[f];
		}
	}
	stamp = calloc((size_t)nr + 1, sizeof(uint32_t));
	if (!stamp) {
		free(key_of);
		free(slot_of);
		free(stats);
		profile_nomem(p);
		*out = NULL;
		return 0;
	}
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		const int64_t *vals = profile_sample_values(p, s);
		int64_t v = vals[type];
		uint32_t n = p->samples[s].node;

		if (!v || !n || (where != PROFILE_ANY_TYPE && !vals[where]))
			continue;
		stats[slot_of[key_of[p->nodes[n].frame]]].self += v;
		/* Count each key once per stack: stamp it with the sample. */
		for (; n; n = p->nodes[n].parent) {
			uint32_t k = slot_of[key_of[p->nodes[n].frame]];

			if (stamp[k] != s + 1) {
				stamp[k] = s + 1;
				stats[k].total += v;
			}
		}
	}
	free(stamp);
	free(slot_of);
	free(key_of);
	*out = stats;
	return nr;
}

/* Heaviest-first candidates of profile_truncate: a binary heap of node ids. */
struct node_heap {
	uint32_t *ids;
	size_t n;
	const int64_t *total;
};

/* Heavier first; of equal totals the lower id, so a parent before its child. */
static bool heavier(const struct node_heap *h, uint32_t a, uint32_t b)
{
	return h->total[a] != h->total[b] ? h->total[a] > h->total[b] : a < b;
}

static void heap_push(struct node_heap *h, uint32_t id)
{
	size_t i = h->n++;

	while (i && heavier(h, id, h->ids[(i - 1) / 2])) {
		h->ids[i] = h->ids[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->ids[i] = id;
}

static uint32_t heap_pop(struct node_heap *h)
{
	uint32_t top = h->ids[0], last = h->ids[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && heavier(h, h->ids[c + 1], h->ids[c]))
			c++;
		if (!heavier(h, h->ids[c], last))
			break;
		h->ids[i] = h->ids[c];
		i = c;
	}
	if (h->n)
		h->ids[i] = last;
	return top;
}

static void push_children(struct node_heap *h, const struct profile *p, uint32_t n)
{
	for (uint32_t c = p->nodes[n].first_child; c; c = p->nodes[c].next_sibling)
		heap_push(h, c);
}

/*
 * keep[n] for the max_nodes heaviest nodes that hang together from the
 * root: grown from the root, always taking the heaviest node whose parent
 * is kept.  With values that are not negative a parent is never lighter
 * than its child, so these are the max_nodes heaviest nodes outright.
 */
static bool *select_heaviest(const struct profile *p, const int64_t *total, uint32_t max_nodes)
{
	bool *keep = calloc(p->nr_nodes, sizeof(bool));
	struct node_heap h = {alloc_array(NULL, p->nr_nodes, sizeof(uint32_t)), 0, total};

	if (!keep || !h.ids) { /* NULL: no memory */
		free(keep);
		free(h.ids);
		return NULL;
	}
	keep[0] = true;
	push_children(&h, p, 0);
	for (uint32_t kept = 0; kept < max_nodes && h.n; kept++) {
		uint32_t n = heap_pop(&h);

		keep[n] = true;
		push_children(&h, p, n);
	}
	free(h.ids);
	return keep;
}

/* Add p's samples to dst, each at the node target gives (an "other" when not kept). */
static int add_truncated(struct idmap *m, const bool *keep, uint32_t type,
			 struct truncate_stats *st, struct error *err)
{
	const struct profile *p = m->src;
	uint32_t *anchor = alloc_array(NULL, p->nr_nodes, sizeof(uint32_t));
	uint32_t other = profile_frame_named(m->dst, "other", 5);
	int rc = 0;

	if (!anchor)
		return error_set(err, ERR_NOMEM, "out of memory truncating a profile");
	/* anchor[n]: n when kept, else its nearest kept ancestor. */
	anchor[0] = 0;
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		anchor[n] = keep[n] ? n : anchor[p->nodes[n].parent];
		st->nodes += !keep[n];
	}
	/* Kept nodes are kept even when nothing lands on them; in id order, parents first. */
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		if (keep[n])
			map_node(m, n);
	}
	for (uint32_t s = 0; s < p->nr_samples && !rc; s++) {
		uint32_t node = p->samples[s].node, target = map_node(m, anchor[node]);

		if (anchor[node] != node) {
			target = profile_child(m->dst, target, other);
			if (__builtin_add_overflow(st->value, profile_sample_values(p, s)[type],
						   &st->value))
				st->value = INT64_MAX;
		}
		rc = profile_add_sample(m->dst, target, map_labelset(m, p->samples[s].labels),
					profile_sample_values(p, s));
		if (rc)
			rc = error_set(err, rc == ERR_NOMEM ? ERR_NOMEM : ERR_LIMIT,
				       rc == ERR_NOMEM ? "out of memory truncating a profile"
						       : "truncated values overflow 64 bits");
	}
	free(anchor);
	if (rc == 0 && profile_failed(m->dst))
		rc = error_set(err, ERR_NOMEM, "out of memory truncating a profile");
	return rc;
}

struct profile *profile_truncate(const struct profile *p, uint32_t type, uint32_t max_nodes,
				 struct error *err)
{
	struct truncate_stats st;

	return profile_truncate_stats(p, type, max_nodes, &st, err);
}

struct profile *profile_truncate_stats(const struct profile *p, uint32_t type, uint32_t max_nodes,
				       struct truncate_stats *st, struct error *err)
{
	struct profile *dst;
	struct idmap m;
	int64_t *total;
	bool *keep;
	int rc;

	*st = (struct truncate_stats){0};
	if (type >= p->nr_types) {
		error_set(err, ERR_USAGE, "cannot truncate by sample type %u of %u", type,
			  p->nr_types);
		return NULL;
	}
	total = alloc_array(NULL, p->nr_nodes, sizeof(int64_t));
	if (total)
		profile_node_totals(p, type, total, NULL);
	keep = total ? select_heaviest(p, total, max_nodes) : NULL;
	free(total);
	dst = keep ? profile_new() : NULL;
	if (!dst || idmap_init(&m, p, dst) < 0) {
		free(keep);
		profile_free(dst);
		error_set(err, ERR_NOMEM, "out of memory truncating a profile");
		return NULL;
	}
	copy_header(&m);
	rc = profile_failed(dst) ? error_set(err, ERR_NOMEM, "out of memory truncating a profile")
				 : add_truncated(&m, keep, type, st, err);
	idmap_release(&m);
	free(keep);
	if (rc) {
		profile_free(dst);
		return NULL;
	}
	return dst;
}

/* Content comparison (profile_equal): ids of one profile looked up in the other. */

static bool differ(struct strbuf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool differ(struct strbuf *why, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		strbuf_vaddf(why, fmt, ap);
		va_end(ap);
	}
	return false;
}

static bool str_same(const struct profile *a, uint32_t x, const struct profile *b, uint32_t y)
{
	uint32_t len = strtab_len(&a->strs, x);

	return len == strtab_len(&b->strs, y) && !memcmp(profile_str(a, x), profile_str(b, y), len);
}

/* a's string x as an id of b, or IDHASH_NONE. */
static uint32_t str_in(const struct profile *a, const struct profile *b, uint32_t x)
{
	return strtab_find(&b->strs, profile_str(a, x), strtab_len(&a->strs, x));
}

/* a's label set as a set of b, or IDHASH_NONE. */
static uint32_t labels_in(const struct profile *a, const struct profile *b, uint32_t set)
{
	size_t n;
	const struct label *l = profile_labels(a, set, &n);
	struct label *t = xmalloc(st_mult(n ? n : 1, sizeof(*t)));
	uint32_t id = IDHASH_NONE;
	size_t i;

	for (i = 0; i < n; i++) {
		t[i] = l[i];
		t[i].key = str_in(a, b, l[i].key);
		t[i].str = str_in(a, b, l[i].str);
		t[i].unit = str_in(a, b, l[i].unit);
		if (t[i].key == IDHASH_NONE || t[i].str == IDHASH_NONE || t[i].unit == IDHASH_NONE)
			break;
	}
	if (i == n)
		id = profile_find_labels(b, t, n);
	free(t);
	return id;
}

static bool types_equal(const struct profile *a, const struct profile *b, struct strbuf *why)
{
	if (a->nr_types != b->nr_types)
		return differ(why, "%u sample types and %u", a->nr_types, b->nr_types);
	for (uint32_t t = 0; t < a->nr_types; t++) {
		const struct sample_type *x = &a->types[t], *y = &b->types[t];

		if (!str_same(a, x->type, b, y->type) || !str_same(a, x->unit, b, y->unit) ||
		    x->decimals != y->decimals)
			return differ(why, "sample type %u differs", t);
	}
	if (a->default_type != b->default_type)
		return differ(why, "default type %u and %u", a->default_type, b->default_type);
	return true;
}

static bool same_header(const struct profile *a, const struct profile *b, struct strbuf *why)
{
	if (!types_equal(a, b, why))
		return false;
	if (!str_same(a, a->period_type.type, b, b->period_type.type) ||
	    !str_same(a, a->period_type.unit, b, b->period_type.unit) || a->period != b->period)
		return differ(why, "periods differ");
	if (a->time_nanos != b->time_nanos || a->duration_nanos != b->duration_nanos)
		return differ(why, "times differ");
	if (labels_in(a, b, a->profile_labels) != b->profile_labels)
		return differ(why, "profile labels differ");
	if (a->nr_comments != b->nr_comments)
		return differ(why, "%u comments and %u", a->nr_comments, b->nr_comments);
	for (uint32_t i = 0; i < a->nr_comments; i++) {
		if (!str_same(a, a->comments[i], b, b->comments[i]))
			return differ(why, "comment %u differs", i);
	}
	return true;
}

/* a's frame f as a frame of b, or IDHASH_NONE. */
static uint32_t frame_in(const struct profile *a, const struct profile *b, uint32_t f)
{
	struct frame t = a->frames[f];

	t.name = str_in(a, b, t.name);
	t.module = str_in(a, b, t.module);
	t.file = str_in(a, b, t.file);
	if (t.name == IDHASH_NONE || t.module == IDHASH_NONE || t.file == IDHASH_NONE)
		return IDHASH_NONE;
	return profile_find_frame(b, &t);
}

/* map[n]: b's node for a's node n; equal counts make the map a bijection. */
static bool same_tree(const struct profile *a, const struct profile *b, uint32_t *map,
		      struct strbuf *why)
{
	if (a->nr_nodes != b->nr_nodes)
		return differ(why, "%u nodes and %u", a->nr_nodes, b->nr_nodes);
	map[0] = 0;
	for (uint32_t n = 1; n < a->nr_nodes; n++) {
		const struct pnode *node = &a->nodes[n];
		uint32_t f = frame_in(a, b, node->frame);

		map[n] = f == IDHASH_NONE ? 0 : profile_find_child(b, map[node->parent], f);
		if (!map[n])
			return differ(why, "node %u (%s) has no match", n,
				      profile_str(a, a->frames[node->frame].name));
	}
	return true;
}

static bool same_samples(const struct profile *a, const struct profile *b, const uint32_t *map,
			 struct strbuf *why)
{
	if (a->nr_samples != b->nr_samples)
		return differ(why, "%u samples and %u", a->nr_samples, b->nr_samples);
	for (uint32_t s = 0; s < a->nr_samples; s++) {
		uint32_t set = labels_in(a, b, a->samples[s].labels), t = IDHASH_NONE;

		if (set != IDHASH_NONE)
			t = profile_find_sample(b, map[a->samples[s].node], set);
		if (t == IDHASH_NONE)
			return differ(why, "sample %u (node %u) has no match", s,
				      a->samples[s].node);
		if (memcmp(profile_sample_values(a, s), profile_sample_values(b, t),
			   a->nr_types * sizeof(int64_t)))
			return differ(why, "sample %u (node %u) has other values", s,
				      a->samples[s].node);
	}
	return true;
}

bool profile_equal(const struct profile *a, const struct profile *b, struct strbuf *why)
{
	uint32_t *map;
	bool same;

	if (!same_header(a, b, why))
		return false;
	map = xmalloc(st_mult(a->nr_nodes, sizeof(uint32_t)));
	same = same_tree(a, b, map, why) && same_samples(a, b, map, why);
	free(map);
	return same;
}
