/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "profile/stats.h"

void stats_wilson(double k, double n, double z, double *lo, double *hi)
{
	double p, z2, denom, centre, half;

	if (n <= 0) {
		*lo = 0;
		*hi = 1;
		return;
	}
	if (k < 0)
		k = 0;
	if (k > n)
		k = n;
	p = k / n;
	z2 = z * z;
	denom = 1 + z2 / n;
	centre = (p + z2 / (2 * n)) / denom;
	half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom;
	*lo = fmax(0, centre - half);
	*hi = fmin(1, centre + half);
}

double stats_normal_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

double stats_two_prop_p(double k1, double n1, double k2, double n2)
{
	double p1, p2, pool, se;

	if (n1 <= 0 || n2 <= 0)
		return 1.0;
	p1 = k1 / n1;
	p2 = k2 / n2;
	pool = (k1 + k2) / (n1 + n2);
	se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2));
	if (se == 0)
		return p1 == p2 ? 1.0 : 0.0;
	return 2 * stats_normal_sf(fabs(p1 - p2) / se);
}

static bool is_count_type(const struct profile *p, uint32_t t)
{
	return !strcmp(profile_str(p, p->types[t].type), "samples") &&
	       !strcmp(profile_str(p, p->types[t].unit), "count") && !p->types[t].decimals;
}

/*
 * The value of one sample, from the values themselves: their greatest
 * common divisor when it is large, or the smallest value when periods
 * vary slightly and the divisor is meaningless.  Raw counts give 1.
 */
static double inferred_period(const struct profile *p, uint32_t type)
{
	uint64_t g = 0, min = 0;

	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t v = profile_sample_values(p, s)[type];
		uint64_t a = v < 0 ? (uint64_t)-v : (uint64_t)v;

		if (!a)
			continue;
		g = gcd_u64(g, a);
		if (!min || a < min)
			min = a;
	}
	/*
	 * Sample counts rarely share a divisor of 100 across every stack,
	 * nor have every stack seen 10,000 times; event periods (a million
	 * nanoseconds for cpu-clock at 999 Hz) do.
	 */
	if (g >= 100)
		return (double)g;
	if (min >= 10000)
		return (double)min;
	return 1;
}

void stats_counter_init(struct sample_counter *c, const struct profile *p, uint32_t type)
{
	c->count_type = -1;
	c->per_sample = 1;
	/*
	 * A folded file's only type is called samples/count even when its
	 * values are event periods (stackcollapse-perf.pl sums periods), so
	 * the type itself is never trusted to be a count.  A separate
	 * samples/count type next to a value type (perf script and pprof
	 * input) is.
	 */
	if (!is_count_type(p, type)) {
		bool is_period = p->period_type.type == p->types[type].type &&
				 p->period_type.unit == p->types[type].unit;
		bool same_unit = p->period_type.unit == p->types[type].unit;

		/*
		 * The count belongs to the period type (cpu next to samples), or
		 * to the one value type of a two-type profile.  Other types of
		 * the period's unit (off-CPU and wall time next to cpu time in a
		 * recording) are read as if sampled at that period.
		 */
		for (uint32_t t = 0; t < p->nr_types; t++) {
			if (is_count_type(p, t) &&
			    (is_period || p->nr_types == 2 || p->period <= 0 || !same_unit)) {
				c->count_type = (int)t;
				return;
			}
		}
		if (p->period > 0 && same_unit) {
			c->per_sample = (double)p->period;
			return;
		}
	}
	c->per_sample = inferred_period(p, type);
}

double stats_total_samples(const struct sample_counter *c, const struct profile *p, uint32_t type)
{
	double n = 0;

	if (c->count_type < 0)
		return stats_count(c, (double)profile_total(p, type));
	for (uint32_t s = 0; s < p->nr_samples; s++)
		n += stats_sample_count(c, profile_sample_values(p, s), type);
	return n;
}

void stats_weights_add(struct stats_weights *w, double value, double count)
{
	double v = fabs(value);

	if (!(count >= 1))
		count = 1;
	w->sum += v;
	w->sum_sq += v * v / count;
}

double stats_weights_n(const struct stats_weights *w)
{
	return w->sum_sq > 0 ? w->sum * w->sum / w->sum_sq : 0;
}

double stats_effective_samples(const struct sample_counter *c, const struct profile *p,
			       uint32_t type)
{
	struct stats_weights w = {0, 0};
	double n = 0;

	for (uint32_t s = 0; s < p->nr_samples; s++) {
		const int64_t *v = profile_sample_values(p, s);
		double k = stats_sample_count(c, v, type);

		if (v[type]) {
			stats_weights_add(&w, (double)v[type], k);
			n += k;
		}
	}
	/* Never more than the samples counted (values below one period read as less than one). */
	return fmin(stats_weights_n(&w), n);
}

void stats_share_of(double part, double whole, double n_eff, struct stats_share *out)
{
	out->share = whole > 0 ? part / whole : 0;
	out->lo = 0;
	out->hi = 1;
	/* stats_wilson clamps a share outside 0..1 (negative values) to its range. */
	if (n_eff > 0)
		stats_wilson(out->share * n_eff, n_eff, STATS_Z95, &out->lo, &out->hi);
	/* Rounding must not push a bound past the estimate it holds. */
	out->lo = fmin(out->lo, out->share);
	out->hi = fmax(out->hi, out->share);
}

double stats_share_change_p(double s1, double n1, double s2, double n2)
{
	return stats_two_prop_p(s1 * n1, n1, s2 * n2, n2);
}

double stats_pct_floor(double share, int digits)
{
	double scale = 100 * pow(10, digits);

	return floor(share * scale) / pow(10, digits);
}

double stats_pct_ceil(double share, int digits)
{
	double scale = 100 * pow(10, digits);

	return ceil(share * scale) / pow(10, digits);
}
