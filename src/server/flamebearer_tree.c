/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "server/flamebearer_int.h"

/*
 * The name-merged tree behind a flamebearer, and its truncation to
 * max_nodes.  The folding into "other" lives here, contained, until the
 * library has a profile-level truncation to share with other renderers.
 */

#define OTHER_NAME "other"

void fb_tree_init(struct fb_tree *t, unsigned sides)
{
	memset(t, 0, sizeof(*t));
	t->sides = sides;
	t->nodes = calloc(1, sizeof(*t->nodes));
	if (strtab_try_init(&t->names) < 0 || !t->nodes) {
		t->nomem = true;
		return;
	}
	t->alloc = 1;
	t->nr = 1;
}

void fb_tree_release(struct fb_tree *t)
{
	strtab_release(&t->names);
	free(t->nodes);
	idhash_release(&t->index);
	free(t->drop);
	memset(t, 0, sizeof(*t));
}

static uint32_t child_hash(uint32_t parent, uint32_t name)
{
	return (uint32_t)hash_u64(((uint64_t)parent << 32) | name);
}

static uint32_t find_child(const struct fb_tree *t, uint32_t parent, uint32_t name)
{
	uint32_t hash = child_hash(parent, name), pos = hash, id;

	while ((id = idhash_probe(&t->index, hash, &pos)) != IDHASH_NONE) {
		if (t->nodes[id].parent == parent && t->nodes[id].name == name)
			return id;
	}
	return 0;
}

/* The child of parent named name, created when missing (without memory: parent, t->nomem). */
static uint32_t tree_child(struct fb_tree *t, uint32_t parent, uint32_t name)
{
	uint32_t id = find_child(t, parent, name);
	size_t alloc = t->alloc;

	if (id)
		return id;
	if (t->nr == UINT32_MAX)
		die("flame tree over 2^32 nodes");
	if (ALLOC_TRY_GROW(t->nodes, (size_t)t->nr + 1, alloc) < 0 ||
	    idhash_try_reserve(&t->index, (size_t)t->nr + 1) < 0) {
		t->nomem = true;
		return parent;
	}
	t->alloc = (uint32_t)MIN(alloc, UINT32_MAX);
	id = t->nr++;
	memset(&t->nodes[id], 0, sizeof(t->nodes[id]));
	t->nodes[id].name = name;
	t->nodes[id].parent = parent;
	idhash_insert(&t->index, child_hash(parent, name), id); /* reserved: cannot fail */
	return id;
}

/* map[n]: the tree node of p's node n, creating the tree's nodes; NULL: no memory. */
static uint32_t *map_nodes(struct fb_tree *t, const struct profile *p)
{
	uint32_t *map = alloc_array(NULL, p->nr_nodes, sizeof(*map));
	uint32_t *names = alloc_array(NULL, p->strs.nr ? p->strs.nr : 1, sizeof(*names));

	if (!map || !names) {
		free(map);
		free(names);
		return NULL;
	}
	memset(names, 0xff, p->strs.nr * sizeof(*names));
	map[0] = 0;
	for (uint32_t n = 1; n < p->nr_nodes && !t->nomem; n++) {
		uint32_t name = p->frames[p->nodes[n].frame].name;

		if (names[name] == UINT32_MAX &&
		    strtab_try_intern(&t->names, profile_str(p, name), strtab_len(&p->strs, name),
				      &names[name]) < 0) {
			t->nomem = true;
			break;
		}
		map[n] = tree_child(t, map[p->nodes[n].parent], names[name]);
	}
	free(names);
	if (t->nomem) {
		free(map);
		return NULL;
	}
	return map;
}

/* v / 10^decimals rounded half up (v >= 0). */
static int64_t unscale(int64_t v, uint32_t decimals)
{
	int64_t div = 1;

	while (decimals--)
		div *= 10;
	return v / div + (v % div >= div - v % div ? 1 : 0);
}

int fb_tree_add(struct fb_tree *t, const struct profile *p, uint32_t type, unsigned side,
		struct error *err)
{
	uint32_t *map = t->nomem ? NULL : map_nodes(t, p), decimals = p->types[type].decimals;
	int ret = 0;

	if (!map)
		return error_set(err, ERR_NOMEM, "flamebearer: out of memory");
	for (uint32_t s = 0; s < p->nr_samples && !ret; s++) {
		int64_t v = profile_sample_values(p, s)[type];
		int64_t *self = &t->nodes[map[p->samples[s].node]].self[side];

		if (v < 0)
			ret = error_set(err, ERR_FORMAT, "flamebearer: negative %s value",
					profile_str(p, p->types[type].type));
		else if (__builtin_add_overflow(*self, v, self)) {
			*self = INT64_MAX;
			t->saturated = true;
		}
	}
	t->saturated |= p->saturated;
	free(map);
	/* Rounded once per merged node, after summing: the least error. */
	for (uint32_t n = 0; n < t->nr && decimals && !ret; n++)
		t->nodes[n].self[side] = unscale(t->nodes[n].self[side], decimals);
	return ret;
}

#define FB_TOTAL_MAX 0x1p62 /* both sides' totals together, with room to spare */

/* Divide every self value so that their sum is under FB_TOTAL_MAX / 2. */
static void fb_tree_divide(struct fb_tree *t, double sum)
{
	double d = ceil(sum / (FB_TOTAL_MAX / 2));

	t->divisor = d >= 0x1p62 ? INT64_C(1) << 62 : (int64_t)d;
	for (uint32_t n = 0; n < t->nr; n++)
		for (unsigned s = 0; s < t->sides; s++)
			t->nodes[n].self[s] /= t->divisor;
}

int fb_tree_totals(struct fb_tree *t, struct error *err)
{
	double sum = 0;

	(void)err;
	t->divisor = 1;
	for (uint32_t n = 0; n < t->nr; n++)
		for (unsigned s = 0; s < t->sides; s++)
			sum += (double)t->nodes[n].self[s];
	if (sum >= FB_TOTAL_MAX)
		fb_tree_divide(t, sum);
	for (uint32_t n = 0; n < t->nr; n++)
		memcpy(t->nodes[n].total, t->nodes[n].self, sizeof(t->nodes[n].total));
	/* No sum overflows now; saturating all the same. */
	for (uint32_t n = t->nr - 1; n > 0; n--) {
		struct fb_node *x = &t->nodes[n], *parent = &t->nodes[x->parent];

		for (unsigned s = 0; s < t->sides; s++)
			if (__builtin_add_overflow(parent->total[s], x->total[s],
						   &parent->total[s]))
				parent->total[s] = INT64_MAX;
	}
	return 0;
}

/* Larger key first, then lower id: a parent always ranks before its children. */
static int rank_cmp(const void *a, const void *b, void *arg)
{
	const struct fb_tree *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int64_t kx = fb_node_key(t, x), ky = fb_node_key(t, y);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	return (x > y) - (x < y);
}

/* Drop all but the max_nodes largest nodes; returns whether any was dropped. */
static bool drop_smallest(struct fb_tree *t, size_t max_nodes)
{
	uint32_t *ids = alloc_array(NULL, t->nr, sizeof(*ids));
	size_t n = 0;

	if (!ids) {
		t->nomem = true;
		return false;
	}
	for (uint32_t i = 1; i < t->nr; i++) {
		if (!t->drop[i])
			ids[n++] = i;
	}
	if (n <= max_nodes) {
		free(ids);
		return false;
	}
	qsort_r(ids, n, sizeof(*ids), rank_cmp, t);
	for (size_t i = max_nodes; i < n; i++)
		t->drop[ids[i]] = true;
	free(ids);
	return true;
}

/*
 * Charge to the "other" child of parent what its dropped children held.
 * A real "other" among them becomes a leaf holding the lot, itself
 * included; a kept one takes it as self.  drop has room for new nodes.
 */
static void add_other(struct fb_tree *t, uint32_t parent, const int64_t *value, uint32_t other_name)
{
	uint32_t before = t->nr, id = tree_child(t, parent, other_name);
	struct fb_node *o = &t->nodes[id];

	if (id == before || t->drop[id]) {
		memset(o->self, 0, sizeof(o->self));
		memset(o->total, 0, sizeof(o->total));
	}
	t->drop[id] = false;
	for (unsigned s = 0; s < t->sides; s++) {
		o->self[s] += value[s];
		o->total[s] += value[s];
	}
}

static void fold_dropped(struct fb_tree *t)
{
	uint32_t nr = t->nr, other;
	int64_t *fold = calloc((size_t)nr * 2, sizeof(*fold));
	size_t others = 0;
	bool *drop;

	if (!fold || strtab_try_intern(&t->names, OTHER_NAME, strlen(OTHER_NAME), &other) < 0) {
		free(fold);
		t->nomem = true;
		return;
	}
	for (uint32_t n = 1; n < nr; n++) {
		uint32_t parent = t->nodes[n].parent;

		if (!t->drop[n] || t->drop[parent])
			continue;
		for (unsigned s = 0; s < t->sides; s++)
			fold[(size_t)parent * 2 + s] += t->nodes[n].total[s];
	}
	/* Room in drop for an "other" under every node that folds. */
	for (uint32_t n = 0; n < nr; n++)
		others += fold[(size_t)n * 2] || fold[(size_t)n * 2 + 1];
	drop = alloc_array(t->drop, (size_t)nr + others, sizeof(*t->drop));
	if (!drop) {
		free(fold);
		t->nomem = true;
		return;
	}
	t->drop = drop;
	for (uint32_t n = 0; n < nr; n++) {
		if (fold[(size_t)n * 2] || fold[(size_t)n * 2 + 1])
			add_other(t, n, &fold[(size_t)n * 2], other);
	}
	free(fold);
}

void fb_tree_prune(struct fb_tree *t, size_t max_nodes)
{
	free(t->drop);
	t->drop = calloc(t->nr, sizeof(*t->drop));
	if (!t->drop) {
		t->nomem = true;
		return;
	}
	for (uint32_t n = 1; n < t->nr; n++)
		t->drop[n] = t->drop[t->nodes[n].parent] || fb_node_key(t, n) == 0;
	if (max_nodes && drop_smallest(t, max_nodes))
		fold_dropped(t);
}
