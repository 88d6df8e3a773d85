/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PROFILE_H
#define PLATEAU_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/budget.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/strtab.h"

/*
 * The one data model every collector produces and every output consumes.
 *
 * Strings and frames are interned.  Stacks live in a prefix tree (the call
 * tree): node 0 is the root and has no frame; every other node is a frame
 * under its parent, and a node's id is always greater than its parent's,
 * so a reverse scan of the node array visits children before parents.
 *
 * A sample is a (node, label set) pair with one int64 value per sample
 * type; adding the same pair twice adds the values.  Values of one type
 * may carry decimals (folded files allow "1.5"): they are stored scaled
 * by 10^decimals and shown unscaled by the writers.
 *
 * All ids are dense uint32 indices into the profile's arrays.  Pointers
 * into those arrays are invalidated by any call that adds to them.
 */

/* A new flag must be added to BLOB_FRAME_FLAGS too (src/store/blob_int.h). */
enum frame_flags {
	FRAME_INLINED = 1 << 0,	     /* inlined into the frame below it */
	FRAME_KERNEL = 1 << 1,	     /* kernel code */
	FRAME_JIT = 1 << 2,	     /* JIT code named from a perf map */
	FRAME_UNSYMBOLIZED = 1 << 3, /* name is module+0xOFFSET or [unknown] */
};

struct frame {
	uint32_t name;	 /* function name (strtab id) */
	uint32_t module; /* binary or library path, 0 when unknown */
	uint32_t file;	 /* source file, 0 when unknown */
	uint32_t line;	 /* source line, 0 when unknown */
	uint64_t addr;	 /* instruction address, 0 when unknown */
	uint32_t flags;	 /* enum frame_flags */
};

struct pnode {
	uint32_t frame;	       /* frame id; unused for the root */
	uint32_t parent;       /* parent node; the root's is itself */
	uint32_t first_child;  /* 0 when none (the root is never a child) */
	uint32_t next_sibling; /* 0 when last */
	uint32_t hnext;	       /* next in its child-hash bucket (a wide node's child), 0 = end */
	uint32_t nr_children;  /* how many first_child's list holds */
};

struct sample_type {
	uint32_t type;	   /* e.g. "cpu", "samples", "alloc_space" */
	uint32_t unit;	   /* e.g. "nanoseconds", "count", "bytes" */
	uint32_t decimals; /* values are stored times 10^decimals */
};

/* A label is key=str or key=num (with an optional unit), as in pprof. */
struct label {
	uint32_t key;
	uint32_t str; /* 0 for a numeric label */
	int64_t num;
	uint32_t unit;
};

struct psample {
	uint32_t node;
	uint32_t labels; /* label set id; 0 is the empty set */
};

struct profile {
	struct strtab strs;

	struct frame *frames;
	uint32_t nr_frames, alloc_frames;
	struct idhash frame_index;

	struct pnode *nodes;
	uint32_t nr_nodes, alloc_nodes;
	/*
	 * Child lookup: a node's sibling list, and for the children of nodes
	 * with many (profile.c's CHILD_INDEX_MIN), buckets of (parent, frame)
	 * hashes chained through pnode.hnext.  4 bytes per bucket, and only
	 * wide nodes' children hashed: the tree costs about 25 bytes a node,
	 * and rehashing needs no second table.
	 */
	uint32_t *child_buckets; /* NULL until a node is wide */
	uint32_t child_mask;
	uint32_t nr_indexed; /* nodes in the child hash */

	struct sample_type *types;
	uint32_t nr_types;
	uint32_t default_type;

	struct psample *samples;
	int64_t *values; /* nr_samples * nr_types */
	uint32_t nr_samples, alloc_samples;
	/* (node, labels) to sample: open addressing of sample ids + 1, at most half full. */
	uint32_t *sample_slots;
	uint32_t sample_mask; /* slots - 1 */

	/* Label sets: set i is labels[label_off[i] .. label_off[i + 1]). */
	struct label *labels;
	uint32_t nr_labels, alloc_labels;
	uint32_t *label_off;
	uint32_t nr_labelsets, alloc_labelsets;
	struct idhash labelset_index;

	/*
	 * Input order of samples (sample ids, repeats kept), recorded only
	 * when keep_order is set before adding: --flamechart needs it.
	 */
	bool keep_order;
	uint32_t *order;
	int64_t *order_values; /* each entry's own values: nr_order * nr_types */
	size_t nr_order, alloc_order;

	struct sample_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	uint32_t profile_labels; /* label set of the whole profile */
	uint32_t *comments;
	uint32_t nr_comments, alloc_comments;
	/*
	 * An allocation failed while building it (the functions above that
	 * return ids cannot say so): it is incomplete, and whoever built it
	 * returns ERR_NOMEM instead of it.  Sticky.
	 */
	bool failed;
	/*
	 * Some value was held at INT64_MAX or INT64_MIN because a sum (or a
	 * rescale) would have overflowed: values are only ever saturated,
	 * never wrapped, and a merge carries the flag over.
	 */
	bool saturated;
	/*
	 * The budget this profile's memory is charged to (plateau serve's
	 * pushes; NULL: none): readers call profile_charge() as it grows,
	 * profile_free() gives the bytes back.
	 */
	struct budget *budget;
	size_t charged;
};

/* Whether an allocation failed while building P (the caller returns ERR_NOMEM). */
static inline bool profile_failed(const struct profile *p)
{
	return p->failed;
}

/*
 * Charge p->budget for what P holds now (about: from its counts of nodes,
 * frames, samples and strings): 0, or ERR_LIMIT when the budget has no
 * room (nothing more is charged then).  0 when P has no budget.
 */
int profile_charge(struct profile *p);

/* An empty profile with no sample types; free with profile_free(). */
struct profile *profile_new(void);
void profile_free(struct profile *p);

static inline const char *profile_str(const struct profile *p, uint32_t id)
{
	return strtab_str(&p->strs, id);
}

/*
 * Allocation failure while building a profile: the command-line tools
 * die (the default); with ON, as in the server, the profile is marked
 * failed instead (profile_failed()), its building functions return ids
 * that stay valid (string, frame, type 0, the node above) or ERR_NOMEM,
 * profile_new() returns NULL, and the library functions that build
 * profiles return ERR_NOMEM.  Set once, before any thread starts.
 */
void profile_set_nomem_errors(bool on);

/* An allocation for P's building failed elsewhere: die, or mark P failed (as above). */
void profile_nomem(struct profile *p);

uint32_t profile_intern_mem(struct profile *p, const char *s, size_t len);

static inline uint32_t profile_intern(struct profile *p, const char *s, size_t len)
{
	return profile_intern_mem(p, s, len);
}

uint32_t profile_intern_str(struct profile *p, const char *s);

/* Add a sample type; returns its index.  Types must be added first. */
uint32_t profile_add_type(struct profile *p, const char *type, const char *unit);
/* The index of the type named name, or -1. */
int profile_find_type(const struct profile *p, const char *name);

uint32_t profile_intern_frame(struct profile *p, const struct frame *f);
/* The id of a frame equal to f, or IDHASH_NONE. */
uint32_t profile_find_frame(const struct profile *p, const struct frame *f);
/* Intern a frame known only by name. */
uint32_t profile_frame_named(struct profile *p, const char *name, size_t len);

/*
 * Make room for this many more of each, so that a reader that knows its
 * counts (the store's decoder) grows no array and rehashes no index while
 * it adds them.  A count may be an upper bound (a pprof reader's samples,
 * which merge when stack and labels repeat) or 0 when unknown; nodes only
 * sizes the node array, the child hash growing with wide nodes alone.
 * The sample types must be set first.
 */
struct profile_counts {
	uint32_t strings, frames, nodes, samples;
	size_t string_bytes;
};
void profile_reserve(struct profile *p, const struct profile_counts *n);

/* The child of parent for frame, created when missing. */
uint32_t profile_child(struct profile *p, uint32_t parent, uint32_t frame);
/*
 * As profile_child, with a guess at the child's id: a right guess saves
 * the lookup.  A reader that adds the nodes of profiles with the same
 * stacks in the same order guesses one past the node it got last.
 */
static inline uint32_t profile_child_near(struct profile *p, uint32_t parent, uint32_t frame,
					  uint32_t guess)
{
	/* (parent, frame) is unique among the nodes: a match is the child.  Never the root. */
	if (guess && guess < p->nr_nodes && p->nodes[guess].parent == parent &&
	    p->nodes[guess].frame == frame)
		return guess;
	return profile_child(p, parent, frame);
}

/* The child of parent for frame, or 0 when there is none. */
uint32_t profile_find_child(const struct profile *p, uint32_t parent, uint32_t frame);
/* The node for a stack of frame ids, root first. */
uint32_t profile_stack(struct profile *p, const uint32_t *frames, size_t n);

/*
 * A label set from n labels (copied and sorted; duplicates by key keep
 * the last).  Returns its id; the empty set is 0.
 */
uint32_t profile_intern_labels(struct profile *p, const struct label *labels, size_t n);
/* The id of the set of those labels (in any order), or IDHASH_NONE. */
uint32_t profile_find_labels(const struct profile *p, const struct label *labels, size_t n);

static inline const struct label *profile_labels(const struct profile *p, uint32_t set, size_t *n)
{
	*n = p->label_off[set + 1] - p->label_off[set];
	/* labels is NULL until the first label: no pointer arithmetic on it then. */
	return *n ? p->labels + p->label_off[set] : NULL;
}

/*
 * Add values (nr_types of them) to the sample (node, labels).  Returns 0,
 * or ERR_LIMIT when a sum overflows int64: that sum is held at INT64_MAX
 * (INT64_MIN) and p->saturated set, so a reader may refuse the input and
 * a merge may go on with the saturated value; ERR_NOMEM when memory ran
 * out (profile_set_nomem_errors(): nothing is added).
 */
int profile_add_sample(struct profile *p, uint32_t node, uint32_t labels, const int64_t *values);

/*
 * As profile_add_sample, with a guess at the sample's id in *sample, which
 * is then set to the id: a right guess saves the lookup.  A reader that
 * adds the samples of profiles with the same stacks in the same order
 * guesses one past the id it got last.
 */
int profile_add_sample_near(struct profile *p, uint32_t node, uint32_t labels,
			    const int64_t *values, uint32_t *sample);

/* The id of the sample (node, labels), or IDHASH_NONE. */
uint32_t profile_find_sample(const struct profile *p, uint32_t node, uint32_t labels);

static inline int64_t *profile_sample_values(const struct profile *p, uint32_t sample)
{
	return p->values + (size_t)sample * p->nr_types;
}

/*
 * Raise type's decimals to d, rescaling stored values; ERR_LIMIT when d is
 * over 9, or when a value overflows (it is saturated, as by
 * profile_add_sample, and the rest rescaled).
 */
int profile_set_decimals(struct profile *p, uint32_t type, uint32_t d);

/* Sum of a type's values over all samples (saturating). */
int64_t profile_total(const struct profile *p, uint32_t type);

/*
 * Per-node totals of a type: out[n] = value of every sample at n or below
 * (saturating, as profile_total).  out must hold nr_nodes entries; self
 * (if not NULL) gets the values of samples at exactly n.
 */
void profile_node_totals(const struct profile *p, uint32_t type, int64_t *out, int64_t *self);

/* No type: profile_node_totals_where and profile_functions_where take every sample. */
#define PROFILE_ANY_TYPE UINT32_MAX

/*
 * As profile_node_totals, over only the samples with a value of type WHERE
 * (PROFILE_ANY_TYPE: all): the samples/count behind one type of a profile
 * whose count type is shared by several (the agent's cpu and wall samples).
 */
void profile_node_totals_where(const struct profile *p, uint32_t type, uint32_t where, int64_t *out,
			       int64_t *self);

/*
 * The frame ids of node's stack, root first; returns the depth (SIZE_MAX
 * when memory runs out in the server, profile_set_nomem_errors()).
 */
size_t profile_node_stack(const struct profile *p, uint32_t node, uint32_t **buf, size_t *alloc);

/*
 * Sibling order of flame graphs: node ids a and b by frame name (bytewise),
 * then by id, for qsort_r with the profile as arg.  Frames of one name in
 * different modules sort together so renderers can merge them.
 */
int profile_node_name_cmp(const void *a, const void *b, void *profile);

/* Operations, in profile_ops.c. */

/*
 * Add every sample of src into dst.  The sample types must match by name
 * and unit (dst may also have none yet, and then takes src's); otherwise
 * ERR_USAGE naming the types.  A sum past 64 bits is saturated and
 * dst->saturated set (so is it when src->saturated): never an error.
 */
int profile_merge(struct profile *dst, const struct profile *src, struct error *err);

/* Multiply every value of every type by factor, rounding to nearest. */
void profile_scale(struct profile *p, double factor);

/*
 * A new profile holding only samples whose stack has a frame name
 * matching focus (if set) and none matching ignore (if set).  Patterns
 * are POSIX extended regular expressions; a bad one is ERR_USAGE.
 */
struct profile *profile_filter(const struct profile *p, const char *focus, const char *ignore,
			       struct error *err);

/*
 * A new profile without nodes whose total of type is below min_share
 * (0..1) of the profile's total; what they held is charged to a frame
 * named "[pruned]" under their parent, so totals are kept.
 */
struct profile *profile_prune(const struct profile *p, uint32_t type, double min_share);

/*
 * A new profile keeping at most max_nodes nodes of p's call tree besides
 * the root: the heaviest by total of type, a node only with its parent
 * (as Pyroscope's and Parca's max_nodes).  Each kept node's dropped
 * children fold, subtrees and all, into one child of it named "other", so
 * every type's total is kept exactly and the result has at most max_nodes
 * plus one "other" per kept node.  Sample labels are kept.  NULL with
 * ERR_USAGE for a type p lacks, ERR_LIMIT when folding overflows a sum.
 */
struct profile *profile_truncate(const struct profile *p, uint32_t type, uint32_t max_nodes,
				 struct error *err);

/* What profile_truncate folded into "other": nodes of p and their value of type. */
struct truncate_stats {
	uint32_t nodes;
	int64_t value;
};

/* profile_truncate, and what it folded into *st (not NULL). */
struct profile *profile_truncate_stats(const struct profile *p, uint32_t type, uint32_t max_nodes,
				       struct truncate_stats *st, struct error *err);

/*
 * True when a and b hold the same content whatever their ids: types,
 * period, times, profile labels, comments, frames and tree shape, samples
 * with their labels and values.  Otherwise false, and why (if not NULL)
 * gets what differs first.  The input order (keep_order) is not compared.
 */
struct strbuf;
bool profile_equal(const struct profile *a, const struct profile *b, struct strbuf *why);

enum func_key {
	FUNC_BY_FUNCTION, /* function name */
	FUNC_BY_MODULE,	  /* module basename */
	FUNC_BY_LINE,	  /* function file:line */
};

struct func_stat {
	uint32_t key; /* strtab id of the function, module or "file:line" */
	int64_t self;
	int64_t total; /* counted once per stack, even when recursive */
};

/*
 * Self and total of type per key; returns the number of entries written
 * to *out (allocated, caller frees), unsorted.
 */
size_t profile_functions(struct profile *p, uint32_t type, enum func_key by,
			 struct func_stat **out);

/*
 * As profile_functions, over only the samples with a value of type WHERE
 * (PROFILE_ANY_TYPE: all); the same keys in the same order as
 * profile_functions of any type.
 */
size_t profile_functions_where(struct profile *p, uint32_t type, uint32_t where, enum func_key by,
			       struct func_stat **out);

/* Format a stored value of type for humans ("1.5", "42"). */
void profile_format_value(const struct profile *p, uint32_t type, int64_t v, char *buf,
			  size_t size);
/* A stored value as a double in the type's unit. */
double profile_value_double(const struct profile *p, uint32_t type, int64_t v);

#endif
