/* SPDX-License-Identifier: MIT */
#include "util/common.h"

#include <math.h>

#include "profile/stats.h"
#include "profile/units.h"
#include "cmd/cmd.h"

static const char *const top_usage[] = {
	"plateau top [-n N] [--sort self|total] [--by function|module|line] [--strict] [FILE...]",
	NULL,
};

static int cmp_self(const void *a, const void *b)
{
	const struct func_stat *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->total > y->total ? -1 : x->total < y->total;
}

static int cmp_total(const void *a, const void *b)
{
	const struct func_stat *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->self > y->self ? -1 : x->self < y->self;
}

static enum func_key parse_by(const char *by)
{
	if (!by || !strcmp(by, "function"))
		return FUNC_BY_FUNCTION;
	if (!strcmp(by, "module"))
		return FUNC_BY_MODULE;
	if (!strcmp(by, "line"))
		return FUNC_BY_LINE;
	die_usage("--by takes function, module or line, not '%s'", by);
}

/* "  6.84% [  6.2-  7.5]": a share and its interval, bounds rounded outward. */
static void print_share(FILE *out, double part, double whole, double n_eff)
{
	struct stats_share sh;

	stats_share_of(part, whole, n_eff, &sh);
	fprintf(out, " %6.2f%% [%5.1f-%5.1f]", 100 * sh.share, stats_pct_floor(sh.lo, 1),
		stats_pct_ceil(sh.hi, 1));
}

/*
 * One row: every share and interval from the values of one type over its
 * total, with the effective samples of that type (stats_share_of).
 */
static void print_row(FILE *out, const struct profile *p, uint32_t type, const struct func_stat *f,
		      double total, double n_eff)
{
	const char *unit = profile_str(p, p->types[type].unit);
	char self_s[32], total_s[32];

	units_format(profile_value_double(p, type, f->self), unit, self_s, sizeof(self_s));
	units_format(profile_value_double(p, type, f->total), unit, total_s, sizeof(total_s));
	fprintf(out, "%12s", self_s);
	print_share(out, (double)f->self, total, n_eff);
	fprintf(out, " %12s", total_s);
	print_share(out, (double)f->total, total, n_eff);
	fprintf(out, "  %s\n", profile_str(p, f->key));
}

void cmd_top_print(FILE *out, struct profile *p, uint32_t type, int limit, bool by_total,
		   enum func_key key)
{
	struct sample_counter c;
	char total_s[32], n_s[32], eff_s[48] = "";
	size_t nf, shown;
	struct func_stat *rows;
	int64_t total = profile_total(p, type);
	double n, n_eff;

	stats_counter_init(&c, p, type);
	n = stats_total_samples(&c, p, type);
	n_eff = stats_effective_samples(&c, p, type);
	nf = profile_functions(p, type, key, &rows);
	qsort(rows, nf, sizeof(*rows), by_total ? cmp_total : cmp_self);
	units_format(profile_value_double(p, type, total), profile_str(p, p->types[type].unit),
		     total_s, sizeof(total_s));
	/* Samples are whole; a count worked out from values and a period is an estimate. */
	units_format(rint(n), "count", n_s, sizeof(n_s));
	/* Weighted samples count for fewer (stats.h); say so when they do. */
	if (round(n_eff) != round(n)) {
		char e[32];

		units_format(round(n_eff), "count", e, sizeof(e));
		snprintf(eff_s, sizeof(eff_s), " (%s effective)", e);
	}
	shown = limit && (size_t)limit < nf ? (size_t)limit : nf;
	fprintf(out,
		"Total %s of %s/%s from %s%s samples%s; showing %zu of %zu %s by %s, "
		"95%% intervals\n",
		total_s, profile_str(p, p->types[type].type), profile_str(p, p->types[type].unit),
		c.count_type < 0 && c.per_sample != 1 ? "about " : "", n_s, eff_s, shown, nf,
		key == FUNC_BY_MODULE ? "modules"
		: key == FUNC_BY_LINE ? "lines"
				      : "functions",
		by_total ? "total" : "self");
	fprintf(out, "%12s %7s %13s %12s %7s %13s  %s\n", "self", "self%", "(95% CI)", "total",
		"total%", "(95% CI)",
		key == FUNC_BY_MODULE ? "module"
		: key == FUNC_BY_LINE ? "line"
				      : "function");
	for (size_t i = 0; i < shown; i++)
		print_row(out, p, type, &rows[i], (double)total, n_eff);
	free(rows);
}

int cmd_top(int argc, const char **argv)
{
	const char *sort = "self", *by = NULL, *sample_type = NULL;
	int limit = 20;
	bool strict = false;
	const struct option opts[] = {
		OPT_INT('n', "lines", &limit, "N", "show the top N rows (default 20; 0 for all)"),
		OPT_STRING(0, "sort", &sort, "KEY", "sort by self or total (default self)"),
		OPT_STRING(0, "by", &by, "KEY", "aggregate by function, module or line"),
		OPT_STRING(0, "sample-type", &sample_type, "NAME", "sample type to rank"),
		OPT_STRICT(&strict),
		OPT_END(),
	};
	struct read_options ro = {0};
	struct profile *p;
	enum func_key key;
	uint32_t type;

	argc = parse_options(argc, argv, opts, top_usage);
	if (strcmp(sort, "self") && strcmp(sort, "total"))
		die_usage("--sort takes self or total, not '%s'", sort);
	if (limit < 0)
		die_usage("-n must not be negative");
	key = parse_by(by);
	ro.sample_type = sample_type;
	ro.skip_bad_lines = !strict;
	p = cmd_read_profiles(argv, argc, &ro);
	type = p->default_type;
	if (profile_total(p, type) <= 0)
		die("%s%s: the profile has no samples of type %s", argc ? argv[0] : "<stdin>",
		    argc > 1 ? " and the others" : "", profile_str(p, p->types[type].type));
	cmd_top_print(stdout, p, type, limit, strcmp(sort, "self") != 0, key);
	profile_free(p);
	cmd_output_close(stdout, NULL);
	return 0;
}
