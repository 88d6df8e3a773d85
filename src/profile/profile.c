/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "profile/profile.h"

/*
 * Allocation failure: the command-line tools die, as x*alloc do; the
 * server (profile_set_nomem_errors()) marks the profile failed and goes
 * on, with ids that stay valid (the root, string 0, frame or type 0), and
 * whoever built it returns ERR_NOMEM.
 */
static bool nomem_errors;

void profile_set_nomem_errors(bool on)
{
	nomem_errors = on;
}

static void nomem(struct profile *p)
{
	if (!nomem_errors)
		die("out of memory building a profile");
	p->failed = true;
}

void profile_nomem(struct profile *p)
{
	nomem(p);
}

/* ALLOC_GROW for the uint32_t counts of a profile; false when P failed. */
static bool grow32(struct profile *p, void *pptr, size_t elem, size_t nr, uint32_t *alloc)
{
	size_t a = *alloc;

	if (nr <= a)
		return true;
	if (nr > UINT32_MAX || alloc_grow(pptr, elem, nr, &a) < 0) {
		nomem(p);
		return false;
	}
	*alloc = a > UINT32_MAX ? UINT32_MAX : (uint32_t)a;
	return true;
}
#define GROW32(p, x, nr, alloc) grow32((p), &(x), sizeof(*(x)), (nr), &(alloc))

/* The first frames and types: a failed profile's frame or type 0 is always there, zeroed. */
#define FIRST_FRAMES 16

struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p || strtab_try_init(&p->strs) < 0) {
		free(p);
		if (!nomem_errors)
			die("out of memory building a profile");
		return NULL;
	}
	p->nodes = calloc(1, sizeof(*p->nodes));
	p->label_off = calloc(2, sizeof(*p->label_off));
	p->frames = calloc(FIRST_FRAMES, sizeof(*p->frames));
	p->types = calloc(1, sizeof(*p->types));
	if (!p->nodes || !p->label_off || !p->frames || !p->types) {
		profile_free(p);
		if (!nomem_errors)
			die("out of memory building a profile");
		return NULL;
	}
	/* Node 0: the root, its own parent. */
	p->alloc_nodes = 1;
	p->nr_nodes = 1;
	/* Label set 0: empty. */
	p->alloc_labelsets = 2;
	p->nr_labelsets = 1;
	p->alloc_frames = FIRST_FRAMES;
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	budget_give(p->budget, p->charged);
	strtab_release(&p->strs);
	free(p->frames);
	idhash_release(&p->frame_index);
	free(p->nodes);
	free(p->child_buckets);
	free(p->types);
	free(p->samples);
	free(p->values);
	free(p->sample_slots);
	free(p->labels);
	free(p->label_off);
	idhash_release(&p->labelset_index);
	free(p->order);
	free(p->order_values);
	free(p->comments);
	free(p);
}

uint32_t profile_intern_mem(struct profile *p, const char *s, size_t len)
{
	uint32_t id;

	if (!nomem_errors)
		return strtab_intern(&p->strs, s, len);
	if (strtab_try_intern(&p->strs, s, len, &id) < 0) {
		nomem(p);
		return 0;
	}
	return id;
}

uint32_t profile_intern_str(struct profile *p, const char *s)
{
	return profile_intern_mem(p, s, strlen(s));
}

uint32_t profile_add_type(struct profile *p, const char *type, const char *unit)
{
	struct sample_type *types;

	if (p->nr_samples)
		BUG("sample type added after samples");
	types = alloc_array(p->types, (size_t)p->nr_types + 1, sizeof(*p->types));
	if (!types) {
		nomem(p);
		return 0;
	}
	p->types = types;
	p->types[p->nr_types].type = profile_intern_str(p, type);
	p->types[p->nr_types].unit = profile_intern_str(p, unit);
	p->types[p->nr_types].decimals = 0;
	return p->nr_types++;
}

int profile_find_type(const struct profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->nr_types; i++) {
		if (!strcmp(profile_str(p, p->types[i].type), name))
			return (int)i;
	}
	return -1;
}

static uint32_t frame_hash(const struct frame *f)
{
	uint64_t h = hash_u64(((uint64_t)f->name << 32) ^ f->module);

	h = hash_u64(h ^ (((uint64_t)f->file << 32) | f->line));
	h = hash_u64(h ^ f->addr ^ ((uint64_t)f->flags << 56));
	return (uint32_t)h;
}

static bool frame_eq(const struct frame *a, const struct frame *b)
{
	return a->name == b->name && a->module == b->module && a->file == b->file &&
	       a->line == b->line && a->addr == b->addr && a->flags == b->flags;
}

static uint32_t frame_lookup(const struct profile *p, const struct frame *f, uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&p->frame_index, hash, &pos)) != IDHASH_NONE) {
		if (frame_eq(&p->frames[id], f))
			return id;
	}
	return IDHASH_NONE;
}

uint32_t profile_find_frame(const struct profile *p, const struct frame *f)
{
	return frame_lookup(p, f, frame_hash(f));
}

uint32_t profile_intern_frame(struct profile *p, const struct frame *f)
{
	uint32_t hash = frame_hash(f), id = frame_lookup(p, f, hash);

	if (id != IDHASH_NONE)
		return id;
	if (!GROW32(p, p->frames, (size_t)p->nr_frames + 1, p->alloc_frames) ||
	    idhash_try_reserve(&p->frame_index, (size_t)p->nr_frames + 1) < 0) {
		nomem(p);
		return 0;
	}
	id = p->nr_frames++;
	p->frames[id] = *f;
	idhash_insert(&p->frame_index, hash, id); /* reserved: cannot fail */
	return id;
}

uint32_t profile_frame_named(struct profile *p, const char *name, size_t len)
{
	struct frame f = {0};

	f.name = profile_intern_mem(p, name, len);
	return profile_intern_frame(p, &f);
}

/*
 * Most nodes have one or two children: their sibling list is searched.  A
 * node with CHILD_INDEX_MIN children or more has them all in the child hash
 * too, so a wide node (a dispatcher, the root of a system-wide profile)
 * costs one probe however many children it has, and the hash holds only
 * the children of wide nodes: most nodes are never hashed or rehashed.
 */
#define CHILD_INDEX_MIN	  8
#define CHILD_BUCKETS_MIN 256

static inline uint32_t child_hash(uint32_t parent, uint32_t frame)
{
	return (uint32_t)hash_u64(((uint64_t)parent << 32) | frame);
}

static inline uint32_t child_find(const struct profile *p, uint32_t parent, uint32_t frame)
{
	const struct pnode *par = &p->nodes[parent];
	uint32_t id;

	if (par->nr_children < CHILD_INDEX_MIN) {
		for (id = par->first_child; id; id = p->nodes[id].next_sibling) {
			if (p->nodes[id].frame == frame)
				return id;
		}
		return 0;
	}
	id = p->child_buckets[child_hash(parent, frame) & p->child_mask];
	for (; id; id = p->nodes[id].hnext) {
		if (p->nodes[id].parent == parent && p->nodes[id].frame == frame)
			return id;
	}
	return 0;
}

uint32_t profile_find_child(const struct profile *p, uint32_t parent, uint32_t frame)
{
	return child_find(p, parent, frame);
}

static void child_link(struct profile *p, uint32_t id)
{
	struct pnode *n = &p->nodes[id];
	uint32_t *b = &p->child_buckets[child_hash(n->parent, n->frame) & p->child_mask];

	n->hnext = *b;
	*b = id;
}

/*
 * Buckets for at least want hashed nodes (load factor 1, at least
 * doubling), relinking the hashed ones: the work is that of the hash, not
 * of the tree.  Without memory the buckets stay (chains grow longer), or
 * there are none and P failed.
 */
static bool child_rehash(struct profile *p, size_t want)
{
	size_t old = p->child_buckets ? (size_t)p->child_mask + 1 : 0;
	size_t size = old ? old * 2 : CHILD_BUCKETS_MIN;
	uint32_t *buckets = p->child_buckets, *fresh;

	while (size < want)
		size *= 2;
	if (size > ((size_t)1 << 32) - 1)
		die("call tree over 2^32 buckets");
	fresh = calloc(size, sizeof(uint32_t));
	if (!fresh) {
		if (!old)
			nomem(p);
		return old != 0;
	}
	p->child_buckets = fresh;
	p->child_mask = (uint32_t)(size - 1);
	for (size_t b = 0; b < old; b++) {
		for (uint32_t id = buckets[b], next; id; id = next) {
			next = p->nodes[id].hnext;
			child_link(p, id);
		}
	}
	free(buckets);
	return true;
}

/*
 * Hash the new child id of a wide parent, or all of parent's children
 * when it has just become wide.
 */
static void child_index(struct profile *p, uint32_t parent, uint32_t id)
{
	uint32_t nr = p->nodes[parent].nr_children;
	uint32_t add = nr == CHILD_INDEX_MIN ? nr : 1;

	if ((!p->child_buckets || (size_t)p->nr_indexed + add > (size_t)p->child_mask + 1) &&
	    !child_rehash(p, (size_t)p->nr_indexed + add)) {
		p->nodes[parent].nr_children = CHILD_INDEX_MIN - 1; /* searched as a list */
		return;
	}
	p->nr_indexed += add;
	if (add == 1) {
		child_link(p, id);
		return;
	}
	for (uint32_t c = p->nodes[parent].first_child; c; c = p->nodes[c].next_sibling)
		child_link(p, c);
}

/* Room for n more nodes; false when P failed. */
static bool nodes_grow(struct profile *p, size_t n)
{
	if (n > UINT32_MAX - p->nr_nodes)
		die("call tree over 2^32 nodes");
	return GROW32(p, p->nodes, (size_t)p->nr_nodes + n, p->alloc_nodes);
}

/* A new child of parent for frame, in room nodes_grow() made. */
static inline uint32_t child_add(struct profile *p, uint32_t parent, uint32_t frame)
{
	uint32_t id = p->nr_nodes++;
	struct pnode *par = &p->nodes[parent];

	p->nodes[id] = (struct pnode){frame, parent, 0, par->first_child, 0, 0};
	par->first_child = id;
	if (++par->nr_children >= CHILD_INDEX_MIN)
		child_index(p, parent, id);
	return id;
}

uint32_t profile_child(struct profile *p, uint32_t parent, uint32_t frame)
{
	uint32_t id = child_find(p, parent, frame);

	if (id)
		return id;
	if (!nodes_grow(p, 1))
		return parent;
	return child_add(p, parent, frame);
}

uint32_t profile_stack(struct profile *p, const uint32_t *frames, size_t n)
{
	uint32_t node = 0, id;
	size_t i;

	for (i = 0; i < n && (id = child_find(p, node, frames[i])); i++)
		node = id;
	if (i == n)
		return node;
	/* Below a new node every node is new: no lookups, and room made once. */
	if (!nodes_grow(p, n - i))
		return node;
	for (; i < n; i++)
		node = child_add(p, node, frames[i]);
	return node;
}

/* Up to this many labels are sorted in place, on the stack. */
#define LABELS_SMALL 16

/* Two multiply-xor rounds a label, one mix at the end: a set of one label is the common case. */
static uint32_t labels_hash(const struct label *l, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++) {
		h = (h ^ (((uint64_t)l[i].key << 32) | l[i].str)) * 0x9e3779b97f4a7c15ULL;
		h = (h ^ (uint64_t)l[i].num ^ ((uint64_t)l[i].unit << 40)) * 0xc2b2ae3d27d4eb4fULL;
	}
	return (uint32_t)hash_u64(h);
}

static bool labels_eq(const struct label *a, const struct label *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i].key != b[i].key || a[i].str != b[i].str || a[i].num != b[i].num ||
		    a[i].unit != b[i].unit)
			return false;
	}
	return true;
}

/* Keys strictly ascending: the labels are a set as stored (one label always is). */
static bool labels_normal(const struct label *l, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (l[i - 1].key >= l[i].key)
			return false;
	}
	return true;
}

/* Positions into the labels of arg, by key and then by position. */
static int label_pos_cmp(const void *a, const void *b, void *arg)
{
	const struct label *l = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (l[x].key != l[y].key)
		return l[x].key < l[y].key ? -1 : 1;
	return (x > y) - (x < y);
}

/*
 * A stable sort by key: insertion for a few labels, positions through
 * qsort_r for many (without memory for them, insertion too).
 */
static void labels_sort(struct label *l, size_t n)
{
	struct label *copy;
	uint32_t *pos;

	pos = n > LABELS_SMALL ? alloc_array(NULL, n, sizeof(*pos)) : NULL;
	copy = pos ? alloc_array(NULL, n, sizeof(*copy)) : NULL;
	if (!copy) {
		free(pos);
		for (size_t i = 1; i < n; i++) {
			struct label t = l[i];
			size_t j = i;

			for (; j && l[j - 1].key > t.key; j--)
				l[j] = l[j - 1];
			l[j] = t;
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
		pos[i] = (uint32_t)i;
	qsort_r(pos, n, sizeof(*pos), label_pos_cmp, l);
	for (size_t i = 0; i < n; i++)
		copy[i] = l[pos[i]];
	memcpy(l, copy, n * sizeof(*l));
	free(copy);
	free(pos);
}

/* Sort by key keeping the last of equal keys; returns the new count. */
static size_t labels_normalize(struct label *l, size_t n)
{
	size_t out = 0;

	labels_sort(l, n);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 == n || l[i + 1].key != l[i].key)
			l[out++] = l[i];
	}
	return out;
}

/*
 * The n labels in as a set: in itself when it is one already, else a
 * normalized copy in buf (LABELS_SMALL entries) or in *copy, which the
 * caller frees.  *n becomes the size of the set.  NULL: no memory (the
 * CLI dies).
 */
static const struct label *labels_prepare(const struct label *in, size_t *n, struct label *buf,
					  struct label **copy)
{
	struct label *l = buf;

	*copy = NULL;
	if (labels_normal(in, *n))
		return in;
	if (*n > LABELS_SMALL) {
		l = *copy = alloc_array(NULL, *n, sizeof(*l));
		if (!l && !nomem_errors)
			die("out of memory: a set of %zu labels", *n);
		if (!l)
			return NULL;
	}
	memcpy(l, in, *n * sizeof(*l));
	*n = labels_normalize(l, *n);
	return l;
}

/* The set of the n normalized labels l with that hash, or IDHASH_NONE. */
static uint32_t labels_lookup(const struct profile *p, const struct label *l, size_t n,
			      uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&p->labelset_index, hash, &pos)) != IDHASH_NONE) {
		size_t m;
		const struct label *have = profile_labels(p, id, &m);

		if (m == n && labels_eq(have, l, n))
			return id;
	}
	return IDHASH_NONE;
}

uint32_t profile_find_labels(const struct profile *p, const struct label *in, size_t n)
{
	struct label buf[LABELS_SMALL], *copy;
	const struct label *l;
	uint32_t id;

	if (!n)
		return 0;
	l = labels_prepare(in, &n, buf, &copy);
	if (!l)
		return IDHASH_NONE;
	id = labels_lookup(p, l, n, labels_hash(l, n));
	free(copy);
	return id;
}

static bool labels_inside(const struct profile *p, const struct label *l)
{
	uintptr_t at = (uintptr_t)l, start = (uintptr_t)p->labels;

	return p->labels && at >= start && at < (uintptr_t)(p->labels + p->nr_labels);
}

uint32_t profile_intern_labels(struct profile *p, const struct label *in, size_t n)
{
	struct label buf[LABELS_SMALL], *copy;
	const struct label *l;
	uint32_t hash, id;

	if (!n)
		return 0;
	l = labels_prepare(in, &n, buf, &copy);
	if (!l) {
		nomem(p);
		return 0;
	}
	hash = labels_hash(l, n);
	id = labels_lookup(p, l, n, hash);
	if (id != IDHASH_NONE)
		goto out;
	id = 0; /* the empty set, when memory runs out */
	/* Labels used in place may be a slice of this profile's, which growing moves. */
	if (l == in && labels_inside(p, in)) {
		size_t off = (size_t)(in - p->labels);

		if (!GROW32(p, p->labels, (size_t)p->nr_labels + n, p->alloc_labels))
			goto out;
		l = p->labels + off;
	}
	if (!GROW32(p, p->labels, (size_t)p->nr_labels + n, p->alloc_labels) ||
	    !GROW32(p, p->label_off, (size_t)p->nr_labelsets + 2, p->alloc_labelsets))
		goto out;
	if (idhash_try_reserve(&p->labelset_index, (size_t)p->nr_labelsets + 1) < 0) {
		nomem(p);
		goto out;
	}
	memcpy(p->labels + p->nr_labels, l, n * sizeof(*l));
	p->nr_labels += (uint32_t)n;
	id = p->nr_labelsets++;
	p->label_off[id + 1] = p->nr_labels;
	idhash_insert(&p->labelset_index, hash, id); /* reserved: cannot fail */
out:
	free(copy);
	return id;
}

#define SAMPLE_SLOTS_MIN 64

static inline uint32_t sample_hash(uint32_t node, uint32_t labels)
{
	return (uint32_t)hash_u64(((uint64_t)labels << 32) | node);
}

/* The slot holding the sample (node, labels), or the empty one where it would go. */
static inline uint32_t *sample_slot(const struct profile *p, uint32_t node, uint32_t labels)
{
	for (uint32_t pos = sample_hash(node, labels);; pos++) {
		uint32_t *slot = &p->sample_slots[pos & p->sample_mask];
		const struct psample *s;

		if (!*slot)
			return slot;
		s = &p->samples[*slot - 1];
		if (s->node == node && s->labels == labels)
			return slot;
	}
}

/* Slots for n samples at half load (at least doubling); put every sample back.  False: P failed. */
static bool sample_rehash(struct profile *p, size_t n)
{
	size_t size = p->sample_slots ? ((size_t)p->sample_mask + 1) * 2 : SAMPLE_SLOTS_MIN;
	uint32_t *slots;

	while (size < st_mult(n, 2))
		size *= 2;
	if (size > ((size_t)1 << 31))
		die("hash table over 2^31 slots");
	slots = calloc(size, sizeof(*p->sample_slots));
	if (!slots) {
		nomem(p);
		return false;
	}
	free(p->sample_slots);
	p->sample_slots = slots;
	p->sample_mask = (uint32_t)(size - 1);
	for (uint32_t id = 0; id < p->nr_samples; id++)
		*sample_slot(p, p->samples[id].node, p->samples[id].labels) = id + 1;
	return true;
}

uint32_t profile_find_sample(const struct profile *p, uint32_t node, uint32_t labels)
{
	const uint32_t *slot = p->sample_slots ? sample_slot(p, node, labels) : NULL;

	return slot && *slot ? *slot - 1 : IDHASH_NONE;
}

/* Room for N samples; false when P failed. */
static bool samples_grow(struct profile *p, size_t n)
{
	uint32_t alloc = p->alloc_samples;
	int64_t *values;

	if (!GROW32(p, p->samples, n, alloc))
		return false;
	values = alloc_array(p->values, (size_t)alloc * p->nr_types, sizeof(int64_t));
	if (!values) {
		nomem(p); /* samples may have grown: alloc_samples, the smaller, bounds both */
		return false;
	}
	p->values = values;
	p->alloc_samples = alloc;
	return true;
}

/* The id of the sample (node, labels), added with zero values when missing; IDHASH_NONE: P failed. */
static uint32_t sample_get(struct profile *p, uint32_t node, uint32_t labels)
{
	uint32_t *slot = p->sample_slots ? sample_slot(p, node, labels) : NULL, id;

	if (slot && *slot)
		return *slot - 1;
	if (p->nr_samples >= p->alloc_samples && !samples_grow(p, (size_t)p->nr_samples + 1))
		return IDHASH_NONE;
	if (!slot || ((size_t)p->nr_samples + 1) * 2 > (size_t)p->sample_mask + 1) {
		if (!sample_rehash(p, (size_t)p->nr_samples + 1))
			return IDHASH_NONE;
		slot = sample_slot(p, node, labels);
	}
	id = p->nr_samples++;
	p->samples[id].node = node;
	p->samples[id].labels = labels;
	/* Loops, not memset and memcpy: a call costs more than copying two or three values. */
	for (uint32_t t = 0; t < p->nr_types; t++)
		profile_sample_values(p, id)[t] = 0;
	*slot = id + 1;
	return id;
}

void profile_reserve(struct profile *p, const struct profile_counts *n)
{
	size_t nodes = st_add(p->nr_nodes, n->nodes), samples = st_add(p->nr_samples, n->samples);
	size_t frames = st_add(p->nr_frames, n->frames);

	if (!nomem_errors) {
		strtab_reserve(&p->strs, n->strings, n->string_bytes);
		idhash_reserve(&p->frame_index, frames);
	} else if (strtab_try_reserve(&p->strs, n->strings, n->string_bytes) < 0 ||
		   idhash_try_reserve(&p->frame_index, frames) < 0) {
		nomem(p);
		return;
	}
	if (!GROW32(p, p->frames, frames, p->alloc_frames) ||
	    !GROW32(p, p->nodes, nodes, p->alloc_nodes))
		return;
	if (samples > p->alloc_samples && !samples_grow(p, samples))
		return;
	if (n->samples && (!p->sample_slots || samples * 2 > (size_t)p->sample_mask + 1))
		sample_rehash(p, samples);
}

/* Add values to sample id (as profile_add_sample). */
static int sample_add(struct profile *p, uint32_t id, const int64_t *values)
{
	int64_t *v = profile_sample_values(p, id);
	bool over = false;

	for (uint32_t t = 0; t < p->nr_types; t++) {
		if (__builtin_add_overflow(v[t], values[t], &v[t])) {
			v[t] = values[t] > 0 ? INT64_MAX : INT64_MIN;
			over = true;
		}
	}
	p->saturated |= over;
	if (p->keep_order) {
		size_t alloc = p->alloc_order;

		if (ALLOC_TRY_GROW(p->order, p->nr_order + 1, alloc) < 0) {
			nomem(p);
			return ERR_NOMEM;
		}
		if (alloc != p->alloc_order) {
			int64_t *ov =
				alloc_array(p->order_values, alloc * p->nr_types, sizeof(int64_t));

			if (!ov) {
				nomem(p); /* order may have grown: alloc_order, the smaller, bounds both */
				return ERR_NOMEM;
			}
			p->order_values = ov;
		}
		p->alloc_order = alloc;
		memcpy(p->order_values + p->nr_order * p->nr_types, values,
		       p->nr_types * sizeof(int64_t));
		p->order[p->nr_order++] = id;
	}
	return over ? ERR_LIMIT : 0;
}

int profile_add_sample(struct profile *p, uint32_t node, uint32_t labels, const int64_t *values)
{
	uint32_t id = sample_get(p, node, labels);

	return id == IDHASH_NONE ? ERR_NOMEM : sample_add(p, id, values);
}

int profile_add_sample_near(struct profile *p, uint32_t node, uint32_t labels,
			    const int64_t *values, uint32_t *sample)
{
	uint32_t id = *sample;

	if (id >= p->nr_samples || p->samples[id].node != node || p->samples[id].labels != labels)
		id = sample_get(p, node, labels);
	*sample = id;
	return id == IDHASH_NONE ? ERR_NOMEM : sample_add(p, id, values);
}

static int64_t pow10i(uint32_t d)
{
	int64_t r = 1;

	while (d--)
		r *= 10;
	return r;
}

int profile_set_decimals(struct profile *p, uint32_t type, uint32_t d)
{
	bool over = false;
	int64_t mul;

	if (d <= p->types[type].decimals)
		return 0;
	if (d > 9)
		return ERR_LIMIT;
	mul = pow10i(d - p->types[type].decimals);
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t *v = &profile_sample_values(p, s)[type], x;

		if (__builtin_mul_overflow(*v, mul, &x)) {
			x = *v > 0 ? INT64_MAX : INT64_MIN;
			over = true;
		}
		*v = x;
	}
	p->types[type].decimals = d;
	p->saturated |= over;
	return over ? ERR_LIMIT : 0;
}

int64_t profile_total(const struct profile *p, uint32_t type)
{
	int64_t total = 0;

	for (uint32_t s = 0; s < p->nr_samples; s++) {
		if (__builtin_add_overflow(total, profile_sample_values(p, s)[type], &total))
			return INT64_MAX;
	}
	return total;
}

/* a + b, held at INT64_MAX or INT64_MIN where it would overflow. */
static inline int64_t add_saturated(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

void profile_node_totals(const struct profile *p, uint32_t type, int64_t *out, int64_t *self)
{
	profile_node_totals_where(p, type, PROFILE_ANY_TYPE, out, self);
}

void profile_node_totals_where(const struct profile *p, uint32_t type, uint32_t where, int64_t *out,
			       int64_t *self)
{
	memset(out, 0, p->nr_nodes * sizeof(*out));
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		const int64_t *v = profile_sample_values(p, s);
		int64_t *o = &out[p->samples[s].node];

		if (where == PROFILE_ANY_TYPE || v[where])
			*o = add_saturated(*o, v[type]);
	}
	if (self)
		memcpy(self, out, p->nr_nodes * sizeof(*out));
	for (uint32_t n = p->nr_nodes - 1; n > 0; n--)
		out[p->nodes[n].parent] = add_saturated(out[p->nodes[n].parent], out[n]);
}

size_t profile_node_stack(const struct profile *p, uint32_t node, uint32_t **buf, size_t *alloc)
{
	size_t depth = 0;

	for (uint32_t n = node; n; n = p->nodes[n].parent)
		depth++;
	if (ALLOC_TRY_GROW(*buf, depth, *alloc) < 0) {
		if (!nomem_errors)
			die("out of memory for a stack of %zu frames", depth);
		return SIZE_MAX;
	}
	for (size_t i = depth; node; node = p->nodes[node].parent)
		(*buf)[--i] = p->nodes[node].frame;
	return depth;
}

static int name_cmp(const struct profile *p, uint32_t a, uint32_t b)
{
	uint32_t la = strtab_len(&p->strs, a), lb = strtab_len(&p->strs, b);
	int c;

	if (a == b)
		return 0;
	c = memcmp(profile_str(p, a), profile_str(p, b), MIN(la, lb));
	return c ? c : (la > lb) - (la < lb);
}

int profile_node_name_cmp(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = name_cmp(p, p->frames[p->nodes[a].frame].name, p->frames[p->nodes[b].frame].name);

	return c ? c : (a > b) - (a < b);
}

void profile_format_value(const struct profile *p, uint32_t type, int64_t v, char *buf, size_t size)
{
	uint32_t d = p->types[type].decimals;
	int64_t div, ip, fp;
	int len;

	if (!d) {
		snprintf(buf, size, "%" PRId64, v);
		return;
	}
	div = pow10i(d);
	ip = v / div;
	fp = v % div;
	if (fp < 0)
		fp = -fp;
	len = snprintf(buf, size, "%s%" PRId64 ".%0*" PRId64, (v < 0 && ip == 0) ? "-" : "", ip,
		       (int)d, fp);
	/* Trim trailing zeros and a bare point, as Perl prints numbers. */
	while (len > 0 && (size_t)len < size && buf[len - 1] == '0')
		buf[--len] = '\0';
	if (len > 0 && (size_t)len < size && buf[len - 1] == '.')
		buf[--len] = '\0';
}

double profile_value_double(const struct profile *p, uint32_t type, int64_t v)
{
	return (double)v / (double)pow10i(p->types[type].decimals);
}

/* About the bytes P's arrays and tables hold, from its counts (what RSS it costs). */
static size_t profile_footprint(const struct profile *p)
{
	size_t node = sizeof(struct pnode) + sizeof(uint32_t);
	size_t frame = sizeof(struct frame) + 2 * sizeof(uint32_t);
	size_t sample =
		sizeof(struct psample) + 2 * sizeof(uint32_t) + sizeof(int64_t) * p->nr_types;
	size_t str = 2 * sizeof(uint32_t) + sizeof(char *) + 16; /* the bytes: 16 on average */

	return (size_t)p->nr_nodes * node + (size_t)p->nr_frames * frame +
	       (size_t)p->nr_samples * sample + (size_t)p->strs.nr * str;
}

int profile_charge(struct profile *p)
{
	size_t now;

	if (!p->budget)
		return 0;
	now = profile_footprint(p);
	if (now <= p->charged)
		return 0;
	if (!budget_take(p->budget, now - p->charged))
		return ERR_LIMIT;
	p->charged = now;
	return 0;
}
