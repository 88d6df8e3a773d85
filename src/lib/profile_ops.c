/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <regex.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "lib/profile.h"

/*
 * Copying between profiles: strings, frames, labels and nodes of src get
 * ids in dst through maps filled lazily (UINT32_MAX = not yet mapped).
 */
struct idmap {
	const struct profile *src;
	struct profile *dst;
	uint32_t *strs, *frames, *nodes, *labelsets;
};

static void idmap_init(struct idmap *m, const struct profile *src, struct profile *dst)
{
	m->src = src;
	m->dst = dst;
	m->strs = xmalloc(st_mult(src->strs.nr, sizeof(uint32_t)));
	memset(m->strs, 0xff, src->strs.nr * sizeof(uint32_t));
	m->frames = xmalloc(st_mult(src->nr_frames + 1, sizeof(uint32_t)));
	memset(m->frames, 0xff, (src->nr_frames + 1) * sizeof(uint32_t));
	m->nodes = xmalloc(st_mult(src->nr_nodes, sizeof(uint32_t)));
	memset(m->nodes, 0xff, src->nr_nodes * sizeof(uint32_t));
	m->nodes[0] = 0;
	m->labelsets = xmalloc(st_mult(src->nr_labelsets, sizeof(uint32_t)));
	memset(m->labelsets, 0xff, src->nr_labelsets * sizeof(uint32_t));
	m->labelsets[0] = 0;
}

static void idmap_release(struct idmap *m)
{
	free(m->strs);
	free(m->frames);
	free(m->nodes);
	free(m->labelsets);
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
		struct label *copy = xmalloc(st_mult(n, sizeof(*copy)));

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
		ALLOC_GROW(dst->comments, dst->nr_comments + 1, dst->alloc_comments);
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

int profile_merge(struct profile *dst, const struct profile *src, struct error *err)
{
	struct idmap m;
	int64_t vals[16];
	int ret = 0;

	if (!dst->nr_types && !dst->nr_samples) {
		idmap_init(&m, src, dst);
		copy_header(&m);
	} else {
		if (!same_types(dst, src)) {
			struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;

			describe_types(dst, &a);
			describe_types(src, &b);
			error_set(err, ERR_USAGE,
				  "cannot merge profiles of different sample types (%s and %s)",
				  a.buf, b.buf);
			strbuf_release(&a);
			strbuf_release(&b);
			return ERR_USAGE;
		}
		idmap_init(&m, src, dst);
		if (dst->duration_nanos < src->duration_nanos)
			dst->duration_nanos = src->duration_nanos;
	}
	for (uint32_t t = 0; t < src->nr_types && !ret; t++)
		ret = profile_set_decimals(dst, t, src->types[t].decimals);
	for (uint32_t s = 0; s < src->nr_samples && !ret; s++) {
		const int64_t *v = profile_sample_values(src, s);

		for (uint32_t t = 0; t < src->nr_types; t++) {
			uint32_t shift = dst->types[t].decimals - src->types[t].decimals;
			int64_t mul = 1;

			while (shift--)
				mul *= 10;
			if (__builtin_mul_overflow(v[t], mul, &vals[t]))
				ret = ERR_LIMIT;
		}
		if (!ret)
			ret = profile_add_sample(dst, map_node(&m, src->samples[s].node),
						 map_labelset(&m, src->samples[s].labels), vals);
	}
	idmap_release(&m);
	if (ret)
		return error_set(err, ERR_LIMIT, "merged values overflow 64 bits");
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
	uint32_t nr_frames = p->nr_frames;
	uint32_t *key_of = xmalloc(st_mult(nr_frames + 1, sizeof(uint32_t)));
	uint32_t *slot_of, *stamp, nr = 0;
	struct strbuf sb = STRBUF_INIT;
	struct func_stat *stats;

	for (uint32_t f = 0; f < nr_frames; f++)
		key_of[f] = func_key_of(p, f, by, &sb);
	strbuf_release(&sb);
	/* Dense slots per distinct key. */
	slot_of = xmalloc(st_mult(p->strs.nr, sizeof(uint32_t)));
	memset(slot_of, 0xff, p->strs.nr * sizeof(uint32_t));
	stats = xcalloc(nr_frames + 1, sizeof(*stats));
	for (uint32_t f = 0; f < nr_frames; f++) {
		if (slot_of[key_of[f]] == UINT32_MAX) {
			slot_of[key_of[f]] = nr;
			stats[nr++].key = key_of[f];
		}
	}
	stamp = xcalloc(nr + 1, sizeof(uint32_t));
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t v = profile_sample_values(p, s)[type];
		uint32_t n = p->samples[s].node;

		if (!v || !n)
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
