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
 *
 * A body is written in two parts.  The tree (struct blob_tree) depends
 * only on the call tree, its frames and their strings: the frames and
 * nodes sections, and the first strings of the strings section (frame
 * names, modules, files, numbered before any other).  The rest (types,
 * labels, samples and the strings they add) is written per profile; the
 * strings section, which comes first but is known last, is put together
 * from both at the end.
 */

/*
 * Room for n more varints in sb (a column at once); returns where to
 * write them, or NULL when there is no memory (sb, checked, says so: the
 * encoder's buffers are checked, its callers look at them at the end).
 */
static uint8_t *room(struct strbuf *sb, size_t n)
{
	if (strbuf_grow(sb, st_mult(n, VARINT_MAX)) < 0)
		return NULL;
	return (uint8_t *)sb->buf + sb->len;
}

static void wrote(struct strbuf *sb, const uint8_t *end)
{
	strbuf_setlen(sb, (size_t)((const char *)end - sb->buf));
}

/* One varint at w, which has room for VARINT_MAX bytes. */
static inline uint8_t *put(uint8_t *w, uint64_t v)
{
	if (likely(v < 0x80)) {
		*w = (uint8_t)v;
		return w + 1;
	}
	do {
		*w++ = (uint8_t)(v | 0x80);
		v >>= 7;
	} while (v >= 0x80);
	*w++ = (uint8_t)v;
	return w;
}

/*
 * The same for a column that mixes one- and two-byte numbers, where the
 * branch on the length would be mispredicted at every other number (the
 * nodes' frames: 6,615 of 8,351 take two bytes in the serve push).
 * Below 2^14 it writes two bytes whatever the length, the second one
 * overwritten by the next number when it is not part of this one.  In a
 * column of mostly one-byte numbers the branch costs less.
 */
static inline uint8_t *put_mixed(uint8_t *w, uint64_t v)
{
	if (likely(v < 0x4000)) {
		uint32_t big = v >= 0x80;

		w[0] = (uint8_t)(v | big << 7);
		w[1] = (uint8_t)(v >> 7);
		return w + 1 + big;
	}
	return put(w, v);
}

static void put1(struct strbuf *sb, uint64_t v)
{
	uint8_t *w = room(sb, 1);

	if (w)
		wrote(sb, put(w, v));
}

/* A column of ids is written as differences from one past the largest so far. */
static inline uint64_t ref(uint32_t id, uint32_t *next)
{
	uint64_t v = zigzag((int64_t)id - *next);

	if (id >= *next)
		*next = id + 1;
	return v;
}

struct blob_tree {
	/* What the tree was made from, to check that a profile shares it. */
	const struct pnode *nodes;
	const struct frame *frames;
	uint32_t nr_nodes, nr_frames;
	uint32_t *node_map;	   /* profile node -> blob node */
	uint32_t *str_map, nr_map; /* profile string (below nr_map) -> blob string, or UNSET */
	uint32_t *strs, nr_strs;   /* blob string -> profile string; 0 is "" */
	struct strbuf lens, chars; /* those strings' length column and bytes */
	struct strbuf frames_sec;  /* the frames section */
	struct strbuf nodes_sec;   /* the nodes section */
};

/* Profile ids to blob ids (map, UNSET until used) and back (order), for one body. */
struct enc {
	const struct profile *p;
	const struct blob_tree *tree;
	struct strbuf *sb; /* what follows the tree's sections */
	uint32_t *str_map, *strs, nr_strs;
	uint32_t *set_map, *sets, nr_sets;
	uint32_t *samples; /* in blob order */
	uint32_t *nodes;   /* their blob nodes */
	uint32_t *labels;  /* their label sets: the profile's ids, the blob's after order_sets */
	bool nomem;	   /* an allocation failed: the body is incomplete */
};

/* NULL when there is no memory. */
static uint32_t *unset_array(size_t n)
{
	uint32_t *a = alloc_array(NULL, n ? n : 1, sizeof(*a));

	if (a)
		memset(a, 0xff, n * sizeof(*a));
	return a;
}

/* String id in the blob, numbered by first use; map and order have room for every id. */
static inline uint32_t map_str(uint32_t *map, uint32_t *order, uint32_t *nr, uint32_t id)
{
	if (map[id] == UNSET) {
		map[id] = *nr;
		order[(*nr)++] = id;
	}
	return map[id];
}

static uint32_t enc_str(struct enc *e, uint32_t id)
{
	return map_str(e->str_map, e->strs, &e->nr_strs, id);
}

static uint32_t tree_str(struct blob_tree *t, uint32_t id)
{
	return map_str(t->str_map, t->strs, &t->nr_strs, id);
}

/*
 * Blob node ids: the call tree in preorder, a node's children in the
 * order of their profile ids, which is the order they were added in (the
 * reverse of their sibling list: profile_child() prepends).  A node's id
 * is above its parent's (profile.h), so no walk is needed: a reverse scan
 * sums the subtree sizes into next, then a forward one gives each node
 * the slot after its earlier siblings' subtrees, and its own children
 * the slots after it (next[n]: the first slot not yet given under n).
 * Per blob node it leaves the parent delta and the profile frame.
 *
 * Most nodes are the first child of the node before them (a stack's new
 * frames are added together), so both scans carry that node's number in
 * a register rather than store it and read it back at once, which would
 * make every node wait for the one before.  The reverse scan does not
 * branch on it either (the way it goes changes with every stack): it
 * adds to one of ORDER_SPARE slots past the nodes instead.
 */
#define ORDER_SPARE 8

static void order_nodes(const struct profile *p, uint32_t *map, uint32_t *next, uint32_t *delta,
			uint32_t *frame)
{
	const struct pnode *nd = p->nodes;
	uint32_t nr = p->nr_nodes, carry = 0, prev = 0;

	memset(next, 0, (nr + ORDER_SPARE) * sizeof(*next));
	for (uint32_t n = nr - 1; n > 0; n--) {
		uint32_t parent = nd[n].parent, size = next[n] + carry + 1;
		uint32_t other = 0 - (uint32_t)(parent != n - 1);

		if (unlikely(parent >= n))
			BUG("node %u under node %u", n, parent);
		next[n] = size;
		next[(parent & other) | ((nr + n % ORDER_SPARE) & ~other)] += size;
		carry = size & ~other;
	}
	map[0] = 0;
	next[0] = 1;
	for (uint32_t n = 1; n < nr; n++) {
		uint32_t parent = nd[n].parent, size = next[n];
		uint32_t at = parent == n - 1 ? prev + 1 : next[parent];

		next[parent] = at + size;
		next[n] = at + 1;
		map[n] = at;
		delta[at] = at - 1 - map[parent];
		frame[at] = nd[n].frame;
		prev = at;
	}
}

/*
 * The nodes section, numbering the frames by first use on the way (frame
 * holds profile frame ids); returns how many, their profile ids in blob
 * order in frames.  frame_map has room for every profile frame.
 */
static uint32_t put_nodes(struct blob_tree *t, const struct profile *p, const uint32_t *delta,
			  const uint32_t *frame, uint32_t *frame_map, uint32_t *frames)
{
	struct strbuf *sb = &t->nodes_sec;
	uint32_t n = p->nr_nodes, next = 0, nr = 0;
	uint8_t *w;

	memset(frame_map, 0xff, p->nr_frames * sizeof(*frame_map));
	put1(sb, n - 1);
	w = room(sb, (size_t)n * 2);
	if (!w)
		return 0;
	for (uint32_t i = 1; i < n; i++)
		w = put(w, delta[i]);
	for (uint32_t i = 1; i < n; i++) {
		uint32_t f = frame[i];

		if (frame_map[f] == UNSET) {
			frame_map[f] = nr;
			frames[nr++] = f;
		}
		w = put_mixed(w, ref(frame_map[f], &next));
	}
	wrote(sb, w);
	return nr;
}

static void put_frames(struct blob_tree *t, const struct profile *p, const uint32_t *frames,
		       uint32_t n)
{
	const struct frame *fr = p->frames;
	struct strbuf *sb = &t->frames_sec;
	uint32_t next = 1;
	uint64_t addr = 0;
	uint8_t *w;

	put1(sb, n);
	w = room(sb, (size_t)n * 6);
	if (!w)
		return;
	for (uint32_t i = 0; i < n; i++)
		w = put(w, ref(tree_str(t, fr[frames[i]].name), &next));
	for (uint32_t i = 0; i < n; i++)
		w = put(w, tree_str(t, fr[frames[i]].module));
	for (uint32_t i = 0; i < n; i++)
		w = put(w, tree_str(t, fr[frames[i]].file));
	for (uint32_t i = 0; i < n; i++)
		w = put(w, fr[frames[i]].line);
	for (uint32_t i = 0; i < n; i++) {
		w = put(w, zigzag((int64_t)(fr[frames[i]].addr - addr)));
		addr = fr[frames[i]].addr;
	}
	for (uint32_t i = 0; i < n; i++)
		w = put(w, fr[frames[i]].flags);
	wrote(sb, w);
}

/* The lengths and bytes of blob strings from .. nr-1 (profile ids in strs), appended. */
static void put_strs(const struct strtab *st, const uint32_t *strs, uint32_t from, uint32_t nr,
		     struct strbuf *lens, struct strbuf *chars)
{
	size_t bytes = 0;
	uint8_t *w = room(lens, nr - from);
	char *c;

	if (!w)
		return;
	for (uint32_t i = from; i < nr; i++) {
		w = put(w, strtab_len(st, strs[i]));
		bytes += strtab_len(st, strs[i]);
	}
	wrote(lens, w);
	if (strbuf_grow(chars, bytes) < 0)
		return;
	c = chars->buf + chars->len;
	for (uint32_t i = from; i < nr; i++) {
		memcpy(c, strtab_str(st, strs[i]), strtab_len(st, strs[i]));
		c += strtab_len(st, strs[i]);
	}
	strbuf_setlen(chars, chars->len + bytes);
}

struct blob_tree *blob_tree_new(const struct profile *p)
{
	struct blob_tree *t = calloc(1, sizeof(*t));
	size_t nodes = p->nr_nodes, frames = p->nr_frames;
	/* Scratch: next (and its spare slots), delta and frame per node; frame_map and frames. */
	uint32_t *next = alloc_array(
		NULL, st_add(st_mult(nodes, 3), st_add(st_mult(frames, 2), ORDER_SPARE)),
		sizeof(uint32_t));
	uint32_t *delta = next + nodes + ORDER_SPARE, *frame = delta + nodes;
	uint32_t *frame_map = frame + nodes, *order = frame_map + frames, nr_frames;

	if (!t || !next) {
		free(t);
		free(next);
		return NULL;
	}
	t->nodes = p->nodes;
	t->frames = p->frames;
	t->nr_nodes = p->nr_nodes;
	t->nr_frames = p->nr_frames;
	t->node_map = alloc_array(NULL, nodes, sizeof(uint32_t));
	t->nr_map = p->strs.nr;
	t->str_map = unset_array(p->strs.nr);
	t->strs = alloc_array(NULL, p->strs.nr, sizeof(uint32_t));
	strbuf_init_max(&t->lens, SIZE_MAX);
	strbuf_init_max(&t->chars, SIZE_MAX);
	strbuf_init_max(&t->frames_sec, SIZE_MAX);
	strbuf_init_max(&t->nodes_sec, SIZE_MAX);
	if (!t->node_map || !t->str_map || !t->strs) {
		free(next);
		blob_tree_free(t);
		return NULL;
	}
	t->str_map[0] = t->strs[0] = 0;
	t->nr_strs = 1;
	order_nodes(p, t->node_map, next, delta, frame);
	nr_frames = put_nodes(t, p, delta, frame, frame_map, order);
	put_frames(t, p, order, nr_frames);
	put_strs(&p->strs, t->strs, 1, t->nr_strs, &t->lens, &t->chars);
	free(next);
	if (strbuf_error(&t->lens) || strbuf_error(&t->chars) || strbuf_error(&t->frames_sec) ||
	    strbuf_error(&t->nodes_sec)) {
		blob_tree_free(t);
		return NULL;
	}
	return t;
}

void blob_tree_free(struct blob_tree *t)
{
	if (!t)
		return;
	free(t->node_map);
	free(t->str_map);
	free(t->strs);
	strbuf_release(&t->lens);
	strbuf_release(&t->chars);
	strbuf_release(&t->frames_sec);
	strbuf_release(&t->nodes_sec);
	free(t);
}

bool blob_tree_fits(const struct blob_tree *t, const struct profile *p)
{
	return t->nodes == p->nodes && t->nr_nodes == p->nr_nodes && t->frames == p->frames &&
	       t->nr_frames == p->nr_frames && t->nr_map <= p->strs.nr;
}

static void enc_release(struct enc *e);

/* ERR_NOMEM (everything released) when there is no memory. */
static int enc_init(struct enc *e, const struct profile *p, const struct blob_tree *t,
		    struct strbuf *sb)
{
	memset(e, 0, sizeof(*e));
	e->p = p;
	e->tree = t;
	e->sb = sb;
	/* The tree's strings keep their numbers; the profile's others come after them. */
	e->str_map = alloc_array(NULL, p->strs.nr, sizeof(uint32_t));
	e->strs = alloc_array(NULL, p->strs.nr, sizeof(uint32_t));
	e->set_map = unset_array(p->nr_labelsets);
	e->sets = alloc_array(NULL, p->nr_labelsets ? p->nr_labelsets : 1, sizeof(uint32_t));
	e->samples = alloc_array(NULL, p->nr_samples ? p->nr_samples : 1, sizeof(uint32_t));
	e->nodes = alloc_array(NULL, p->nr_samples ? p->nr_samples : 1, sizeof(uint32_t));
	e->labels = alloc_array(NULL, p->nr_samples ? p->nr_samples : 1, sizeof(uint32_t));
	if (!e->str_map || !e->strs || !e->set_map || !e->sets || !e->samples || !e->nodes ||
	    !e->labels) {
		enc_release(e);
		return ERR_NOMEM;
	}
	memcpy(e->str_map, t->str_map, t->nr_map * sizeof(uint32_t));
	memset(e->str_map + t->nr_map, 0xff, (p->strs.nr - t->nr_map) * sizeof(uint32_t));
	memcpy(e->strs, t->strs, t->nr_strs * sizeof(uint32_t));
	e->nr_strs = t->nr_strs;
	return 0;
}

static void enc_release(struct enc *e)
{
	free(e->str_map);
	free(e->strs);
	free(e->set_map);
	free(e->sets);
	free(e->samples);
	free(e->nodes);
	free(e->labels);
}

/*
 * Each node's samples (a run of e->samples at one blob node) in the order
 * of their label sets, e->labels.  A node has few samples (one per label
 * set under it), often in order already: an insertion sort.
 */
static void sort_within_nodes(struct enc *e)
{
	const uint32_t *node = e->nodes;
	uint32_t *s = e->samples, *set = e->labels, n = e->p->nr_samples;

	for (uint32_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && node[j] == node[i]; j++) {
			uint32_t sj = s[j], key = set[j], k = j;

			for (; k > i && set[k - 1] > key; k--) {
				s[k] = s[k - 1];
				set[k] = set[k - 1];
			}
			s[k] = sj;
			set[k] = key;
		}
	}
}

/*
 * Samples by blob node (a counting sort, which keeps the profile's order
 * among a node's samples), with their nodes and label sets, then by the
 * profile's label set.  Returns whether a node has more than one sample
 * (otherwise there is nothing to sort within nodes).
 */
static bool order_samples(struct enc *e)
{
	const struct profile *p = e->p;
	const uint32_t *node_map = e->tree->node_map;
	uint32_t nr = p->nr_nodes, *start = calloc(nr ? nr : 1, sizeof(uint32_t)), shared = 0,
		 at = 0;

	if (!start) {
		e->nomem = true;
		return false;
	}
	for (uint32_t s = 0; s < p->nr_samples; s++)
		shared |= start[node_map[p->samples[s].node]]++;
	for (uint32_t n = 0; n < nr; n++) {
		uint32_t count = start[n];

		start[n] = at;
		at += count;
	}
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		uint32_t node = node_map[p->samples[s].node], i = start[node]++;

		e->samples[i] = s;
		e->nodes[i] = node;
		e->labels[i] = p->samples[s].labels;
	}
	free(start);
	if (shared)
		sort_within_nodes(e);
	return shared != 0;
}

/* Number set id by first use; returns whether it was new. */
static bool use_set(struct enc *e, uint32_t id)
{
	if (e->set_map[id] != UNSET)
		return false;
	e->set_map[id] = e->nr_sets;
	e->sets[e->nr_sets++] = id;
	return true;
}

/*
 * The label sets in use, numbered by first use: the profile's own, then
 * the samples' in order; then each node's samples in the order of those
 * numbers, as the blob requires.  A decoded profile interns its sets in
 * that order, so encoding it again gives the same blob.  When the sets
 * come first in the order of their profile ids (a profile with one label
 * set, a decoded one), that order is the one they are in already.
 */
static void order_sets(struct enc *e, bool shared)
{
	uint32_t last = e->p->profile_labels, *set = e->labels;
	bool in_order = true;

	e->set_map[0] = e->sets[0] = 0;
	e->nr_sets = 1;
	use_set(e, last);
	for (uint32_t i = 0; i < e->p->nr_samples; i++) {
		if (use_set(e, set[i])) {
			in_order &= set[i] > last;
			last = set[i];
		}
	}
	for (uint32_t i = 0; i < e->p->nr_samples; i++)
		set[i] = e->set_map[set[i]];
	if (shared && !in_order)
		sort_within_nodes(e);
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
	struct label *buf = alloc_array(NULL, p->nr_labels ? p->nr_labels : 1, sizeof(*buf));

	if (!buf) {
		e->nomem = true;
		return;
	}
	put1(e->sb, e->nr_sets - 1);
	for (uint32_t i = 1; i < e->nr_sets; i++)
		put1(e->sb, p->label_off[e->sets[i] + 1] - p->label_off[e->sets[i]]);
	for (uint32_t i = 1; i < e->nr_sets; i++) {
		uint32_t n = p->label_off[e->sets[i] + 1] - p->label_off[e->sets[i]];

		sorted_labels(p, e->sets[i], buf);
		for (uint32_t j = 0; j < n; j++) {
			uint8_t *w = room(e->sb, 4);

			if (!w)
				break;
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

/*
 * Division by g where g is known to divide: a shift by g's trailing zeros
 * and a multiply by the inverse of its odd part mod 2^64 (Granlund and
 * Montgomery, "Division by invariant integers using multiplication"),
 * and the test of whether it divides, the shifted-out bits being 0 and the
 * product at most max.  A 64-bit division costs tens of cycles, and a type
 * of values needs two per value: its gcd, then its quotients.
 */
struct exact_div {
	uint64_t inv, max, low;
	unsigned shift;
};

static void exact_div_init(struct exact_div *d, uint64_t g)
{
	uint64_t odd, x;

	d->shift = (unsigned)__builtin_ctzll(g);
	d->low = ((uint64_t)1 << d->shift) - 1;
	odd = g >> d->shift;
	/* Newton's iteration doubles the bits that are right; odd * odd = 1 mod 8 gives 3. */
	x = odd;
	for (int i = 0; i < 5; i++)
		x *= 2 - odd * x;
	d->inv = x;
	d->max = UINT64_MAX / odd;
}

static inline bool exact_div_divides(const struct exact_div *d, uint64_t m)
{
	return !(m & d->low) && (m >> d->shift) * d->inv <= d->max;
}

static inline uint64_t exact_div_quot(const struct exact_div *d, uint64_t m)
{
	return (m >> d->shift) * d->inv;
}

/*
 * One type's values: their gcd g (0 when all are 0), then each divided by
 * g.  The gcd changes only at a value it does not divide, and is then
 * taken afresh.
 */
static void put_values(struct enc *e, uint32_t t)
{
	const struct profile *p = e->p;
	struct exact_div d;
	uint64_t g = 0;
	uint8_t *w;

	for (uint32_t i = 0; i < p->nr_samples && g != 1; i++) {
		uint64_t m = magnitude(profile_sample_values(p, e->samples[i])[t]);

		if (!m || (g && exact_div_divides(&d, m)))
			continue;
		g = gcd_u64(m, g);
		exact_div_init(&d, g);
	}
	put1(e->sb, g);
	if (!g)
		return;
	w = room(e->sb, p->nr_samples);
	if (!w)
		return;
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		int64_t v = profile_sample_values(p, e->samples[i])[t];
		uint64_t q = exact_div_quot(&d, magnitude(v));

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
	if (!w)
		return;
	for (uint32_t i = 0; i < n; i++) {
		w = put(w, e->nodes[i] - prev);
		prev = e->nodes[i];
	}
	for (uint32_t i = 0; i < n; i++)
		w = put(w, e->labels[i]);
	wrote(e->sb, w);
	for (uint32_t t = 0; t < p->nr_types; t++)
		put_values(e, t);
}

/*
 * The body: the strings section (the tree's strings, then the ones the
 * rest added), the tree's sections, the rest.
 */
static void put_body(const struct enc *e, struct strbuf *body)
{
	const struct blob_tree *t = e->tree;
	struct strbuf lens, chars;

	strbuf_init_max(&lens, SIZE_MAX);
	strbuf_init_max(&chars, SIZE_MAX);
	put_strs(&e->p->strs, e->strs, t->nr_strs, e->nr_strs, &lens, &chars);
	if (strbuf_error(&lens) || strbuf_error(&chars)) {
		strbuf_release(&lens);
		strbuf_release(&chars);
		body->error = body->error ? body->error : ERR_NOMEM;
		return;
	}
	strbuf_grow(body, VARINT_MAX + t->lens.len + lens.len + t->chars.len + chars.len +
				  t->frames_sec.len + t->nodes_sec.len + e->sb->len);
	put1(body, e->nr_strs - 1);
	strbuf_add(body, t->lens.buf, t->lens.len);
	strbuf_add(body, lens.buf, lens.len);
	strbuf_add(body, t->chars.buf, t->chars.len);
	strbuf_add(body, chars.buf, chars.len);
	strbuf_add(body, t->frames_sec.buf, t->frames_sec.len);
	strbuf_add(body, t->nodes_sec.buf, t->nodes_sec.len);
	strbuf_add(body, e->sb->buf, e->sb->len);
	strbuf_release(&lens);
	strbuf_release(&chars);
}

int blob_write_body_tree(const struct profile *p, const struct blob_tree *t, struct strbuf *body)
{
	struct strbuf rest;
	struct enc e;
	bool shared;
	int rc = 0;

	strbuf_init_max(&rest, SIZE_MAX);
	if (enc_init(&e, p, t, &rest) < 0)
		return ERR_NOMEM;
	shared = order_samples(&e);
	if (!e.nomem) { /* else e.labels is unset */
		order_sets(&e, shared);
		put_types(&e);
		put_labels(&e);
		put_samples(&e);
	}
	if (e.nomem || strbuf_error(&rest))
		rc = ERR_NOMEM;
	else
		put_body(&e, body);
	enc_release(&e);
	strbuf_release(&rest);
	return rc ? rc : strbuf_error(body);
}

int blob_write_body(const struct profile *p, struct strbuf *body)
{
	struct blob_tree *t = blob_tree_new(p);
	int rc;

	if (!t)
		return ERR_NOMEM;
	rc = blob_write_body_tree(p, t, body);
	blob_tree_free(t);
	return rc;
}
