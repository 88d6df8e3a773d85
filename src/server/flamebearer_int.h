/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_FLAMEBEARER_INT_H
#define PLATEAU_SERVER_FLAMEBEARER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/strtab.h"

/*
 * The tree a flamebearer is drawn from: a profile's call tree merged by
 * function name, with one (self, total) pair per side (one side for a
 * single flame graph, left and right for a diff).  Node 0 is the root;
 * a node's id is greater than its parent's, as in struct profile.
 */
struct fb_node {
	uint32_t name; /* id in fb_tree.names */
	uint32_t parent;
	int64_t self[2], total[2];
};

struct fb_tree {
	struct strtab names;
	struct fb_node *nodes;
	uint32_t nr, alloc;
	struct idhash index; /* (parent, name) -> node */
	unsigned sides;
	bool *drop; /* after fb_tree_prune: nodes not drawn */
	bool nomem; /* an allocation failed: the tree is incomplete (ERR_NOMEM) */
	/*
	 * Values past 64 bits: a self sum held at INT64_MAX (saturated), and
	 * every self value divided by divisor (1: not) so that the totals,
	 * numTicks and offsets fit.  The JSON says so in its metadata.
	 */
	bool saturated;
	int64_t divisor;
};

void fb_tree_init(struct fb_tree *t, unsigned sides);
void fb_tree_release(struct fb_tree *t);

/*
 * Add the self values of p's type into side (0 or 1), rounded to
 * integers when the type has decimals.  ERR_FORMAT for a negative
 * value; a sum over int64 is held at INT64_MAX and t->saturated set.
 */
int fb_tree_add(struct fb_tree *t, const struct profile *p, uint32_t type, unsigned side,
		struct error *err);

/*
 * Totals from the self values.  When they would pass 2^62 (numTicks adds
 * the two sides), every self value is first divided by the smallest
 * t->divisor that brings them under: proportions are kept, no sum
 * overflows.  Returns 0.
 */
int fb_tree_totals(struct fb_tree *t, struct error *err);

/*
 * Mark what is not drawn: nodes with nothing on any side and, past
 * max_nodes (0: no limit) nodes ranked by their larger total, the
 * smallest, whose totals go to an "other" child of their parent.
 */
void fb_tree_prune(struct fb_tree *t, size_t max_nodes);
/* fb_tree_init() and fb_tree_prune() set t->nomem when memory runs out; fb_tree_add() returns ERR_NOMEM. */

static inline int64_t fb_node_key(const struct fb_tree *t, uint32_t n)
{
	const struct fb_node *x = &t->nodes[n];

	return t->sides == 2 && x->total[1] > x->total[0] ? x->total[1] : x->total[0];
}

#endif
