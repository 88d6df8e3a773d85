/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "store/blob_int.h"

/*
 * Writing a blob's body: unsigned LEB128 varints ("u"), zigzag ones for
 * signed values ("s"), in sections: strings, frames, nodes, sample types, period
 * and times, label sets, profile labels, comments, samples.  Within a
 * section fields go in columns (all frames' names, then all modules ...):
 * a column's values look alike, which is what zstd finds.
 *
 * Ids are renumbered so that most columns are runs of small numbers:
 * nodes in preorder (a parent delta of 0 means "child of the node
 * before"), frames and strings in order of first use, so a frame's name
 * and a node's frame are mostly "the next new one", written as a
 * difference from it.  Samples are sorted by node, written as deltas, and
 * each type's values divided by their greatest common divisor (CPU time
 * is a multiple of the sampling period).
 */

/* Room for n more varints in sb; returns where to write them. */
static uint8_t *room(struct strbuf *sb, size_t n)
{
	strbuf_grow(sb, st_mult(n, 10));
	return (uint8_t *)sb->buf + sb->len;
}

static void wrote(struct strbuf *sb, const uint8_t *end)
{
	strbuf_setlen(sb, (size_t)((const char *)end - sb->buf));
}

static inline uint8_t *put(uint8_t *w, uint64_t v)
{
	while (v >= 0x80) {
		*w++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*w++ = (uint8_t)v;
	return w;
}

static void put1(struct strbuf *sb, uint64_t v)
{
	wrote(sb, put(room(sb, 1), v));
}

/* A column of ids written as differences from one past the largest so far. */
static inline uint8_t *put_ref(uint8_t *w, uint32_t id, uint32_t *next)
{
	w = put(w, zigzag((int64_t)id - *next));
	if (id >= *next)
		*next = id + 1;
	return w;
}

/* Profile ids to blob ids (map, UNSET until used) and back (order). */
struct enc {
	const struct profile *p;
	struct strbuf *sb;
	uint32_t *str_map, *strs, nr_strs;
	uint32_t *frame_map, *frames, nr_frames;
	uint32_t *node_map, *nodes;
	uint32_t *set_map, *sets, nr_sets;
	uint32_t *samples;
};

static uint32_t *unset_array(size_t n)
{
	uint32_t *a = xmalloc(st_mult(n, sizeof(*a)));

	memset(a, 0xff, n * sizeof(*a));
	return a;
}

static void enc_init(struct enc *e, const struct profile *p, struct strbuf *sb)
{
	memset(e, 0, sizeof(*e));
	e->p = p;
	e->sb = sb;
	e->str_map = unset_array(p->strs.nr);
	e->strs = xmalloc(st_mult(p->strs.nr, sizeof(uint32_t)));
	e->str_map[0] = e->strs[0] = 0;
	e->nr_strs = 1;
	e->frame_map = unset_array(p->nr_frames);
	e->frames = xmalloc(st_mult(p->nr_frames, sizeof(uint32_t)));
	e->node_map = xmalloc(st_mult(p->nr_nodes, sizeof(uint32_t)));
	e->nodes = xmalloc(st_mult(p->nr_nodes, sizeof(uint32_t)));
	e->set_map = unset_array(p->nr_labelsets);
	e->sets = xmalloc(st_mult(p->nr_labelsets, sizeof(uint32_t)));
	e->samples = xmalloc(st_mult(p->nr_samples, sizeof(uint32_t)));
}

static void enc_release(struct enc *e)
{
	free(e->str_map);
	free(e->strs);
	free(e->frame_map);
	free(e->frames);
	free(e->node_map);
	free(e->nodes);
	free(e->set_map);
	free(e->sets);
	free(e->samples);
}

static uint32_t enc_str(struct enc *e, uint32_t id)
{
	if (e->str_map[id] == UNSET) {
		e->str_map[id] = e->nr_strs;
		e->strs[e->nr_strs++] = id;
	}
	return e->str_map[id];
}

/* Blob node ids in preorder, blob frame ids in order of first use by them. */
static void order_nodes(struct enc *e)
{
	const struct profile *p = e->p;
	uint32_t *stack = xmalloc(st_mult(p->nr_nodes, sizeof(uint32_t)));
	uint32_t top = 0, nr = 1;

	e->node_map[0] = e->nodes[0] = 0;
	stack[top++] = 0;
	while (top) {
		uint32_t n = stack[--top], f = p->nodes[n].frame;

		if (n) {
			e->node_map[n] = nr;
			e->nodes[nr++] = n;
			if (e->frame_map[f] == UNSET) {
				e->frame_map[f] = e->nr_frames;
				e->frames[e->nr_frames++] = f;
			}
		}
		for (uint32_t c = p->nodes[n].first_child; c; c = p->nodes[c].next_sibling)
			stack[top++] = c;
	}
	free(stack);
}

/* Sample s's sort key: its blob node, then its label set (the profile's id or the blob's). */
static uint64_t sample_key(const struct enc *e, uint32_t s, bool blob_set)
{
	const struct psample *ps = &e->p->samples[s];

	return (uint64_t)e->node_map[ps->node] << 32 |
	       (blob_set ? e->set_map[ps->labels] : ps->labels);
}

/* An insertion sort of samples already in node order: it only orders those of one node. */
static void sort_within_nodes(struct enc *e, bool blob_set)
{
	for (uint32_t i = 1; i < e->p->nr_samples; i++) {
		uint32_t s = e->samples[i], j = i;
		uint64_t key = sample_key(e, s, blob_set);

		for (; j && sample_key(e, e->samples[j - 1], blob_set) > key; j--)
			e->samples[j] = e->samples[j - 1];
		e->samples[j] = s;
	}
}

/* Samples by blob node (a counting sort), then by the profile's label set. */
static void order_samples(struct enc *e)
{
	const struct profile *p = e->p;
	uint32_t *start = xcalloc(st_add(p->nr_nodes, 1), sizeof(uint32_t));

	for (uint32_t s = 0; s < p->nr_samples; s++)
		start[e->node_map[p->samples[s].node] + 1]++;
	for (uint32_t n = 0; n < p->nr_nodes; n++)
		start[n + 1] += start[n];
	for (uint32_t s = 0; s < p->nr_samples; s++)
		e->samples[start[e->node_map[p->samples[s].node]]++] = s;
	free(start);
	sort_within_nodes(e, false);
}

static void use_set(struct enc *e, uint32_t id)
{
	if (e->set_map[id] == UNSET) {
		e->set_map[id] = e->nr_sets;
		e->sets[e->nr_sets++] = id;
	}
}

/*
 * The label sets in use, numbered by first use: the profile's own, then
 * the samples' in order; then each node's samples in the order of those
 * numbers, as the blob requires.  A decoded profile interns its sets in
 * that order, so encoding it again gives the same blob.
 */
static void order_sets(struct enc *e)
{
	e->set_map[0] = e->sets[0] = 0;
	e->nr_sets = 1;
	use_set(e, e->p->profile_labels);
	for (uint32_t i = 0; i < e->p->nr_samples; i++)
		use_set(e, e->p->samples[e->samples[i]].labels);
	sort_within_nodes(e, true);
}

static void put_frames(struct enc *e)
{
	const struct frame *fr = e->p->frames;
	uint32_t n = e->nr_frames, next = 1;
	uint64_t addr = 0;
	uint8_t *w;

	put1(e->sb, n);
	w = room(e->sb, (size_t)n * 6);
	for (uint32_t i = 0; i < n; i++)
		w = put_ref(w, enc_str(e, fr[e->frames[i]].name), &next);
	for (uint32_t i = 0; i < n; i++)
		w = put(w, enc_str(e, fr[e->frames[i]].module));
	for (uint32_t i = 0; i < n; i++)
		w = put(w, enc_str(e, fr[e->frames[i]].file));
	for (uint32_t i = 0; i < n; i++)
		w = put(w, fr[e->frames[i]].line);
	for (uint32_t i = 0; i < n; i++) {
		w = put(w, zigzag((int64_t)(fr[e->frames[i]].addr - addr)));
		addr = fr[e->frames[i]].addr;
	}
	for (uint32_t i = 0; i < n; i++)
		w = put(w, fr[e->frames[i]].flags);
	wrote(e->sb, w);
}

static void put_nodes(struct enc *e)
{
	const struct pnode *nodes = e->p->nodes;
	uint32_t n = e->p->nr_nodes, next = 0;
	uint8_t *w;

	put1(e->sb, n - 1);
	w = room(e->sb, (size_t)n * 2);
	for (uint32_t i = 1; i < n; i++)
		w = put(w, i - 1 - e->node_map[nodes[e->nodes[i]].parent]);
	for (uint32_t i = 1; i < n; i++)
		w = put_ref(w, e->frame_map[nodes[e->nodes[i]].frame], &next);
	wrote(e->sb, w);
}

static void put_types(struct enc *e)
{
	const struct profile *p = e->p;

	put1(e->sb, p->nr_types);
	/* A default past the types (no types at all) would make a blob the decoder refuses. */
	put1(e->sb, p->default_type < p->nr_types ? p->default_type : 0);
	for (uint32_t t = 0; t < p->nr_types; t++) {
		put1(e->sb, enc_str(e, p->types[t].type));
		put1(e->sb, enc_str(e, p->types[t].unit));
		put1(e->sb, p->types[t].decimals);
	}
	put1(e->sb, enc_str(e, p->period_type.type));
	put1(e->sb, enc_str(e, p->period_type.unit));
	put1(e->sb, zigzag(p->period));
	put1(e->sb, zigzag(p->time_nanos));
	put1(e->sb, zigzag(p->duration_nanos));
}

static int str_cmp(const struct strtab *t, uint32_t a, uint32_t b)
{
	uint32_t la = strtab_len(t, a), lb = strtab_len(t, b);
	int c = memcmp(strtab_str(t, a), strtab_str(t, b), MIN(la, lb));

	return c ? c : (la > lb) - (la < lb);
}

/*
 * A set's labels into buf, by key bytes: a profile keeps them in the
 * order of its key ids, which another profile of the same content need
 * not share.  Keys are unique in a set; sets are small.
 */
static void sorted_labels(const struct profile *p, uint32_t set, struct label *buf)
{
	size_t n;
	const struct label *l = profile_labels(p, set, &n);

	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		for (; j && str_cmp(&p->strs, buf[j - 1].key, l[i].key) > 0; j--)
			buf[j] = buf[j - 1];
		buf[j] = l[i];
	}
}

/* Label sets (the empty set 0 is implied), then the profile's labels and comments. */
static void put_labels(struct enc *e)
{
	const struct profile *p = e->p;
	struct label *buf = xmalloc(st_mult(p->nr_labels ? p->nr_labels : 1, sizeof(*buf)));

	put1(e->sb, e->nr_sets - 1);
	for (uint32_t i = 1; i < e->nr_sets; i++)
		put1(e->sb, p->label_off[e->sets[i] + 1] - p->label_off[e->sets[i]]);
	for (uint32_t i = 1; i < e->nr_sets; i++) {
		uint32_t n = p->label_off[e->sets[i] + 1] - p->label_off[e->sets[i]];

		sorted_labels(p, e->sets[i], buf);
		for (uint32_t j = 0; j < n; j++) {
			uint8_t *w = room(e->sb, 4);

			w = put(w, enc_str(e, buf[j].key));
			w = put(w, enc_str(e, buf[j].str));
			w = put(w, zigzag(buf[j].num));
			wrote(e->sb, put(w, enc_str(e, buf[j].unit)));
		}
	}
	free(buf);
	put1(e->sb, e->set_map[p->profile_labels]);
	put1(e->sb, p->nr_comments);
	for (uint32_t i = 0; i < p->nr_comments; i++)
		put1(e->sb, enc_str(e, p->comments[i]));
}

/* One type's values: their gcd g (0 when all are 0), then each divided by g. */
static void put_values(struct enc *e, uint32_t t)
{
	const struct profile *p = e->p;
	uint64_t g = 0;
	uint8_t *w;

	for (uint32_t i = 0; i < p->nr_samples && g != 1; i++)
		g = gcd_u64(magnitude(profile_sample_values(p, e->samples[i])[t]), g);
	put1(e->sb, g);
	if (!g)
		return;
	w = room(e->sb, p->nr_samples);
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		int64_t v = profile_sample_values(p, e->samples[i])[t];
		uint64_t q = magnitude(v) / g;

		w = put(w, zigzag(v < 0 ? (int64_t)(0 - q) : (int64_t)q));
	}
	wrote(e->sb, w);
}

static void put_samples(struct enc *e)
{
	const struct profile *p = e->p;
	uint32_t n = p->nr_samples, prev = 0;
	uint8_t *w;

	put1(e->sb, n);
	w = room(e->sb, (size_t)n * 2);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t node = e->node_map[p->samples[e->samples[i]].node];

		w = put(w, node - prev);
		prev = node;
	}
	for (uint32_t i = 0; i < n; i++)
		w = put(w, e->set_map[p->samples[e->samples[i]].labels]);
	wrote(e->sb, w);
	for (uint32_t t = 0; t < p->nr_types; t++)
		put_values(e, t);
}

/* The strings section: count, lengths, bytes; known only once every other section is written. */
static void put_strings(const struct enc *e, struct strbuf *sb)
{
	const struct strtab *st = &e->p->strs;
	uint8_t *w;

	put1(sb, e->nr_strs - 1);
	w = room(sb, e->nr_strs);
	for (uint32_t i = 1; i < e->nr_strs; i++)
		w = put(w, strtab_len(st, e->strs[i]));
	wrote(sb, w);
	for (uint32_t i = 1; i < e->nr_strs; i++)
		strbuf_add(sb, strtab_str(st, e->strs[i]), strtab_len(st, e->strs[i]));
}

void blob_write_body(const struct profile *p, struct strbuf *body)
{
	struct strbuf rest = STRBUF_INIT;
	struct enc e;

	enc_init(&e, p, &rest);
	order_nodes(&e);
	order_samples(&e);
	order_sets(&e);
	put_frames(&e);
	put_nodes(&e);
	put_types(&e);
	put_labels(&e);
	put_samples(&e);
	put_strings(&e, body);
	strbuf_add(body, rest.buf, rest.len);
	enc_release(&e);
	strbuf_release(&rest);
}
