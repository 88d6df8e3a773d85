/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STATS_H
#define PLATEAU_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

/*
 * What the samples can and cannot say.  A share p = k/n estimated from n
 * samples has standard error sqrt(p(1-p)/n); intervals use Wilson's
 * score method, which stays inside [0, 1] and is honest for small k.
 * A change of share between two profiles is tested with the
 * two-proportion z-test (pooled).
 */

#define STATS_Z95 1.959963984540054

/* Wilson score interval for k successes out of n at critical value z. */
void stats_wilson(double k, double n, double z, double *lo, double *hi);

/* Two-sided p-value of the pooled two-proportion z-test of k1/n1 vs k2/n2. */
double stats_two_prop_p(double k1, double n1, double k2, double n2);

/* Standard normal upper tail, P(Z > z). */
double stats_normal_sf(double z);

/*
 * How many samples a value of type stands for.  Tests need sample counts,
 * not nanoseconds or bytes.  When the profile has a samples/count type
 * beside the one asked about (perf script and pprof input), its values
 * are the counts (count_type).  Otherwise a value is divided by the
 * sampling period: the profile's period when its type matches, else the
 * greatest common divisor of the values, else the smallest value (one
 * sample's weight when periods vary slightly).  A folded file of raw
 * counts has divisor 1; one of perf event periods, the period.
 */
struct sample_counter {
	int count_type;	   /* index of a samples/count type, or -1 */
	double per_sample; /* value of type per sample otherwise */
};

void stats_counter_init(struct sample_counter *c, const struct profile *p, uint32_t type);

/* The number of samples behind value v of the counter's type (or of sample s's counts). */
static inline double stats_count(const struct sample_counter *c, double v)
{
	return c->per_sample > 0 ? v / c->per_sample : v;
}

/*
 * The samples behind one sample's values (v holds every type) of type.  A
 * sample without a value of type has none behind it, whatever its count
 * says: in a profile of several kinds (cpu and alloc samples side by side)
 * the count column counts each row's own kind.
 */
static inline double stats_sample_count(const struct sample_counter *c, const int64_t *v,
					uint32_t type)
{
	if (c->count_type >= 0)
		return v[type] ? (double)v[c->count_type] : 0;
	return stats_count(c, (double)v[type]);
}

/* The samples behind the whole profile's values of type (those with a value of type). */
double stats_total_samples(const struct sample_counter *c, const struct profile *p, uint32_t type);

/*
 * Value-weighted shares and their intervals (doc/statistics.md has the
 * math).  A share is a ratio of values (nanoseconds, bytes), each sample
 * weighted by its value, so its interval rests on the effective number of
 * samples (Kish): n_eff = (sum w)^2 / sum w^2 over the samples with a
 * value of the type.  A profile row standing for c samples of total value
 * v counts as c samples of v/c each.  Equal weights give n_eff = n.
 */
struct stats_weights {
	double sum, sum_sq;
};

/* Add count samples (at least one) that carry value between them. */
void stats_weights_add(struct stats_weights *w, double value, double count);

/* (sum w)^2 / sum w^2; 0 when nothing was added. */
double stats_weights_n(const struct stats_weights *w);

/*
 * The effective samples behind the values of type in p (c from
 * stats_counter_init), at most the samples stats_sample_count counts.
 */
double stats_effective_samples(const struct sample_counter *c, const struct profile *p,
			       uint32_t type);

/*
 * The one definition of every share plateau prints with an interval: share
 * = part / whole, and its 95% Wilson interval [lo, hi] from n_eff effective
 * samples.  Wilson's interval always holds its own estimate, and the bounds
 * are widened to the share where rounding (or a share outside 0..1, from
 * negative values) would leave it out, so lo <= share <= hi always.
 */
struct stats_share {
	double share, lo, hi;
};

void stats_share_of(double part, double whole, double n_eff, struct stats_share *out);

/* Two-sided p-value that shares s1 (of n1 effective samples) and s2 differ. */
double stats_share_change_p(double s1, double n1, double s2, double n2);

/*
 * A percentage bound rounded outward to `digits` decimals (down for lo, up
 * for hi), so a printed interval still holds the printed estimate.
 */
double stats_pct_floor(double share, int digits);
double stats_pct_ceil(double share, int digits);

#endif
