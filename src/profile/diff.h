/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_DIFF_H
#define PLATEAU_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "profile/stats.h"
#include "util/error.h"

/*
 * Comparing two profiles.  diff_build() lays both on one call tree as a
 * differential profile with types "base" and "new" (what difffolded.pl
 * prints as its two columns) plus "base_samples" and "new_samples", the
 * sample counts that significance tests need.
 */
struct diff_options {
	uint32_t base_type, new_type; /* the sample types compared */
	bool normalize;		      /* -n: scale base to new's total, as difffolded.pl -n */
	double alpha;		      /* significance level, 0.05 */
};

struct profile *diff_build(const struct profile *base, const struct profile *new,
			   const struct diff_options *o, struct error *err);

/* Per-node statistics of a diff profile (arrays indexed by node). */
struct diff_nodes {
	int64_t *base_total, *new_total, *base_self, *new_self;
	double *base_count, *new_count; /* samples through the node */
	double base_n, new_n;		/* samples in each profile */
	double base_eff, new_eff;	/* effective samples of each side (stats.h) */
};

/* 0, or ERR_NOMEM (nothing to release). */
int diff_nodes_compute(const struct profile *d, struct diff_nodes *dn);
void diff_nodes_release(struct diff_nodes *dn);

/*
 * The effective samples of one side (T_BASE with T_BASE_N, or T_NEW with
 * T_NEW_N) of a profile from diff_build: each row's value over its count.
 */
double diff_effective_samples(const struct profile *d, bool new_side);

/* Two-sided p-value of the change of node n's share (of values, n_eff each side). */
double diff_node_p(const struct diff_nodes *dn, uint32_t n);

struct diff_func {
	uint32_t key;
	double base_share, new_share;	    /* of total, 0..1 */
	struct stats_share base_ci, new_ci; /* each share with its 95% interval */
	double base_count, new_count;
	double p; /* two-sided p-value of the change */
	int64_t base_total, new_total, base_self, new_self;
};

/*
 * Per-function totals of a diff profile (counted once per stack): the
 * shares of values, their intervals and the p-value of the change all from
 * stats_share_of with each side's effective samples.
 */
size_t diff_functions(struct profile *d, struct diff_func **out);

/*
 * "SIDE_lo":L,"SIDE_hi":H, (trailing comma) for a share's interval, six
 * decimals rounded outward so the printed bounds hold the printed share.
 */
struct strbuf;
void diff_json_interval(struct strbuf *sb, const char *side, const struct stats_share *sh);

/* Write the JSON report of plateau diff --format json. */
int diff_write_json(struct profile *d, double alpha, FILE *f, struct error *err);

#endif
