/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "lib/profile.h"

struct profile *profile_new(void)
{
	struct profile *p = xcalloc(1, sizeof(*p));

	strtab_init(&p->strs);
	/* Node 0: the root, its own parent. */
	ALLOC_GROW(p->nodes, 1, p->alloc_nodes);
	memset(&p->nodes[0], 0, sizeof(p->nodes[0]));
	p->nr_nodes = 1;
	/* Label set 0: empty. */
	ALLOC_GROW(p->label_off, 2, p->alloc_labelsets);
	p->label_off[0] = p->label_off[1] = 0;
	p->nr_labelsets = 1;
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	strtab_release(&p->strs);
	free(p->frames);
	idhash_release(&p->frame_index);
	free(p->nodes);
	free(p->child_buckets);
	free(p->types);
	free(p->samples);
	free(p->values);
	idhash_release(&p->sample_index);
	free(p->labels);
	free(p->label_off);
	idhash_release(&p->labelset_index);
	free(p->order);
	free(p->order_values);
	free(p->comments);
	free(p);
}

uint32_t profile_intern_str(struct profile *p, const char *s)
{
	return strtab_intern(&p->strs, s, strlen(s));
}

uint32_t profile_add_type(struct profile *p, const char *type, const char *unit)
{
	if (p->nr_samples)
		BUG("sample type added after samples");
	p->types = xrealloc(p->types, st_mult(p->nr_types + 1, sizeof(*p->types)));
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
	ALLOC_GROW(p->frames, p->nr_frames + 1, p->alloc_frames);
	id = p->nr_frames++;
	p->frames[id] = *f;
	idhash_insert(&p->frame_index, hash, id);
	return id;
}

uint32_t profile_frame_named(struct profile *p, const char *name, size_t len)
{
	struct frame f = {0};

	f.name = profile_intern(p, name, len);
	return profile_intern_frame(p, &f);
}

static inline uint32_t child_hash(uint32_t parent, uint32_t frame)
{
	return (uint32_t)hash_u64(((uint64_t)parent << 32) | frame);
}

uint32_t profile_find_child(const struct profile *p, uint32_t parent, uint32_t frame)
{
	uint32_t id;

	/* A node without children (often one just created) needs no probe. */
	if (!p->child_buckets || !p->nodes[parent].first_child)
		return 0;
	id = p->child_buckets[child_hash(parent, frame) & p->child_mask];
	for (; id; id = p->nodes[id].hnext) {
		if (p->nodes[id].parent == parent && p->nodes[id].frame == frame)
			return id;
	}
	return 0;
}

/* Buckets for at least nodes nodes (load factor 1, at least doubling); relink every node. */
static void child_rehash(struct profile *p, size_t nodes)
{
	size_t size = p->child_buckets ? ((size_t)p->child_mask + 1) * 2 : 1024;

	while (size < nodes)
		size *= 2;
	if (size > ((size_t)1 << 32) - 1)
		die("call tree over 2^32 buckets");
	free(p->child_buckets);
	p->child_buckets = xcalloc(size, sizeof(uint32_t));
	p->child_mask = (uint32_t)(size - 1);
	for (uint32_t id = 1; id < p->nr_nodes; id++) {
		uint32_t b = child_hash(p->nodes[id].parent, p->nodes[id].frame) & p->child_mask;

		p->nodes[id].hnext = p->child_buckets[b];
		p->child_buckets[b] = id;
	}
}

uint32_t profile_child(struct profile *p, uint32_t parent, uint32_t frame)
{
	uint32_t id = profile_find_child(p, parent, frame), b;
	struct pnode *n;

	if (id)
		return id;
	if (p->nr_nodes == UINT32_MAX)
		die("call tree over 2^32 nodes");
	ALLOC_GROW(p->nodes, p->nr_nodes + 1, p->alloc_nodes);
	id = p->nr_nodes++;
	n = &p->nodes[id];
	n->frame = frame;
	n->parent = parent;
	n->first_child = 0;
	n->next_sibling = p->nodes[parent].first_child;
	p->nodes[parent].first_child = id;
	if (!p->child_buckets || p->nr_nodes > p->child_mask + 1) {
		child_rehash(p, p->nr_nodes);
		return id;
	}
	b = child_hash(parent, frame) & p->child_mask;
	n->hnext = p->child_buckets[b];
	p->child_buckets[b] = id;
	return id;
}

void profile_reserve(struct profile *p, const struct profile_counts *n)
{
	size_t nodes = st_add(p->nr_nodes, n->nodes), samples = st_add(p->nr_samples, n->samples);

	strtab_reserve(&p->strs, n->strings, n->string_bytes);
	ALLOC_GROW(p->frames, st_add(p->nr_frames, n->frames), p->alloc_frames);
	idhash_reserve(&p->frame_index, st_add(p->nr_frames, n->frames));
	ALLOC_GROW(p->nodes, nodes, p->alloc_nodes);
	if (n->nodes && nodes > (size_t)p->child_mask + 1)
		child_rehash(p, nodes);
	if (samples > p->alloc_samples) {
		uint32_t alloc = p->alloc_samples;

		ALLOC_GROW(p->samples, samples, alloc);
		p->values =
			xrealloc(p->values, st_mult(st_mult(alloc, p->nr_types), sizeof(int64_t)));
		p->alloc_samples = alloc;
	}
	idhash_reserve(&p->sample_index, samples);
}

uint32_t profile_stack(struct profile *p, const uint32_t *frames, size_t n)
{
	uint32_t node = 0;

	for (size_t i = 0; i < n; i++)
		node = profile_child(p, node, frames[i]);
	return node;
}

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static uint32_t labels_hash(const struct label *l, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++) {
		h = hash_u64(h ^ (((uint64_t)l[i].key << 32) | l[i].str));
		h = hash_u64(h ^ (uint64_t)l[i].num ^ ((uint64_t)l[i].unit << 40));
	}
	return (uint32_t)h;
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

/* Sort by key keeping the last of equal keys; returns the new count. */
static size_t labels_normalize(struct label *l, size_t n)
{
	size_t out = 0;

	/* qsort is not stable: tag with the position to keep the last. */
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			if (l[j].key == l[i].key) {
				l[i].key = UINT32_MAX; /* superseded */
				break;
			}
		}
	}
	qsort(l, n, sizeof(*l), label_cmp);
	for (size_t i = 0; i < n; i++) {
		if (l[i].key != UINT32_MAX)
			l[out++] = l[i];
	}
	return out;
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
	struct label stackbuf[16], *l = n <= 16 ? stackbuf : xmalloc(st_mult(n, sizeof(*l)));
	uint32_t id = 0;

	if (n) {
		memcpy(l, in, n * sizeof(*l));
		n = labels_normalize(l, n);
		id = labels_lookup(p, l, n, labels_hash(l, n));
	}
	if (l != stackbuf)
		free(l);
	return id;
}

uint32_t profile_intern_labels(struct profile *p, const struct label *in, size_t n)
{
	struct label stackbuf[16], *l = n <= 16 ? stackbuf : xmalloc(st_mult(n, sizeof(*l)));
	uint32_t hash, id;

	if (!n)
		return 0;
	memcpy(l, in, n * sizeof(*l));
	n = labels_normalize(l, n);
	hash = labels_hash(l, n);
	id = labels_lookup(p, l, n, hash);
	if (id != IDHASH_NONE)
		goto out;
	ALLOC_GROW(p->labels, st_add(p->nr_labels, n), p->alloc_labels);
	memcpy(p->labels + p->nr_labels, l, n * sizeof(*l));
	p->nr_labels += (uint32_t)n;
	ALLOC_GROW(p->label_off, p->nr_labelsets + 2, p->alloc_labelsets);
	id = p->nr_labelsets++;
	p->label_off[id + 1] = p->nr_labels;
	idhash_insert(&p->labelset_index, hash, id);
out:
	if (l != stackbuf)
		free(l);
	return id;
}

static inline uint32_t sample_hash(uint32_t node, uint32_t labels)
{
	return (uint32_t)hash_u64(((uint64_t)labels << 32) | node);
}

static uint32_t sample_lookup(const struct profile *p, uint32_t node, uint32_t labels,
			      uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&p->sample_index, hash, &pos)) != IDHASH_NONE) {
		if (p->samples[id].node == node && p->samples[id].labels == labels)
			return id;
	}
	return IDHASH_NONE;
}

uint32_t profile_find_sample(const struct profile *p, uint32_t node, uint32_t labels)
{
	return sample_lookup(p, node, labels, sample_hash(node, labels));
}

static uint32_t sample_get(struct profile *p, uint32_t node, uint32_t labels)
{
	uint32_t hash = sample_hash(node, labels), id = sample_lookup(p, node, labels, hash);

	if (id != IDHASH_NONE)
		return id;
	if (p->nr_samples >= p->alloc_samples) {
		uint32_t alloc = p->alloc_samples;

		ALLOC_GROW(p->samples, p->nr_samples + 1, alloc);
		p->values =
			xrealloc(p->values, st_mult(st_mult(alloc, p->nr_types), sizeof(int64_t)));
		p->alloc_samples = alloc;
	}
	id = p->nr_samples++;
	p->samples[id].node = node;
	p->samples[id].labels = labels;
	memset(profile_sample_values(p, id), 0, p->nr_types * sizeof(int64_t));
	idhash_insert(&p->sample_index, hash, id);
	return id;
}

int profile_add_sample(struct profile *p, uint32_t node, uint32_t labels, const int64_t *values)
{
	uint32_t id = sample_get(p, node, labels);
	int64_t *v = profile_sample_values(p, id), sum[16];

	if (p->nr_types > ARRAY_SIZE(sum))
		BUG("more than %zu sample types", ARRAY_SIZE(sum));
	for (uint32_t t = 0; t < p->nr_types; t++) {
		if (__builtin_add_overflow(v[t], values[t], &sum[t]))
			return ERR_LIMIT;
	}
	memcpy(v, sum, p->nr_types * sizeof(*v));
	if (p->keep_order) {
		size_t alloc = p->alloc_order;

		ALLOC_GROW(p->order, p->nr_order + 1, alloc);
		if (alloc != p->alloc_order)
			p->order_values =
				xrealloc(p->order_values,
					 st_mult(st_mult(alloc, p->nr_types), sizeof(int64_t)));
		p->alloc_order = alloc;
		memcpy(p->order_values + p->nr_order * p->nr_types, values,
		       p->nr_types * sizeof(int64_t));
		p->order[p->nr_order++] = id;
	}
	return 0;
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
	int64_t mul;

	if (d <= p->types[type].decimals)
		return 0;
	if (d > 9)
		return ERR_LIMIT;
	mul = pow10i(d - p->types[type].decimals);
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t *v = &profile_sample_values(p, s)[type];

		if (__builtin_mul_overflow(*v, mul, v))
			return ERR_LIMIT;
	}
	p->types[type].decimals = d;
	return 0;
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
	memset(out, 0, p->nr_nodes * sizeof(*out));
	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t *o = &out[p->samples[s].node];

		*o = add_saturated(*o, profile_sample_values(p, s)[type]);
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
	ALLOC_GROW(*buf, depth, *alloc);
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
