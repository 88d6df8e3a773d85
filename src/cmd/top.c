/* SPDX-License-Identifier: MIT */
#include "util/common.h"

#include <math.h>

#include "lib/stats.h"
#include "lib/units.h"
#include "cmd/cmd.h"

static const char *const top_usage[] = {
	"plateau top [-n N] [--sort self|total] [--by function|module|line] [--strict] [FILE...]",
	NULL,
};

struct row {
	struct func_stat f;
	double self_n, total_n; /* samples behind self and total */
};

static int cmp_self(const void *a, const void *b)
{
	const struct func_stat *x = &((const struct row *)a)->f, *y = &((const struct row *)b)->f;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->total > y->total ? -1 : x->total < y->total;
}

static int cmp_total(const void *a, const void *b)
{
	const struct func_stat *x = &((const struct row *)a)->f, *y = &((const struct row *)b)->f;

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

/* Rows with the samples behind each stat, for the intervals. */
static struct row *make_rows(struct profile *p, uint32_t type, enum func_key by,
			     const struct sample_counter *c, size_t *nr)
{
	struct func_stat *fs, *cs = NULL;
	size_t n = profile_functions(p, type, by, &fs);
	struct row *rows = xcalloc(n + 1, sizeof(*rows));

	/*
	 * Same keys in the same order: frames are shared between the runs.  The
	 * counts of this type's samples only: one samples/count type may count
	 * another type's samples too (the agent's cpu and wall).
	 */
	if (c->count_type >= 0 && (uint32_t)c->count_type != type)
		profile_functions_where(p, (uint32_t)c->count_type, type, by, &cs);
	for (size_t i = 0; i < n; i++) {
		rows[i].f = fs[i];
		rows[i].self_n = cs ? (double)cs[i].self : stats_count(c, (double)fs[i].self);
		rows[i].total_n = cs ? (double)cs[i].total : stats_count(c, (double)fs[i].total);
	}
	free(fs);
	free(cs);
	*nr = n;
	return rows;
}

static void print_row(FILE *out, const struct profile *p, uint32_t type, const struct row *r,
		      double total, double n)
{
	const struct func_stat *f = &r->f;
	const char *unit = profile_str(p, p->types[type].unit);
	char self_s[32], total_s[32];
	double lo1, hi1, lo2, hi2;

	units_format(profile_value_double(p, type, f->self), unit, self_s, sizeof(self_s));
	units_format(profile_value_double(p, type, f->total), unit, total_s, sizeof(total_s));
	stats_wilson(r->self_n, n, STATS_Z95, &lo1, &hi1);
	stats_wilson(r->total_n, n, STATS_Z95, &lo2, &hi2);
	fprintf(out, "%12s %6.2f%% [%5.1f-%5.1f] %12s %6.2f%% [%5.1f-%5.1f]  %s\n", self_s,
		100.0 * (double)f->self / total, 100 * lo1, 100 * hi1, total_s,
		100.0 * (double)f->total / total, 100 * lo2, 100 * hi2, profile_str(p, f->key));
}

void cmd_top_print(FILE *out, struct profile *p, uint32_t type, int limit, bool by_total,
		   enum func_key key)
{
	struct sample_counter c;
	char total_s[32], n_s[32];
	size_t nf, shown;
	struct row *rows;
	int64_t total = profile_total(p, type);
	double n;

	stats_counter_init(&c, p, type);
	n = stats_total_samples(&c, p, type);
	rows = make_rows(p, type, key, &c, &nf);
	qsort(rows, nf, sizeof(*rows), by_total ? cmp_total : cmp_self);
	units_format(profile_value_double(p, type, total), profile_str(p, p->types[type].unit),
		     total_s, sizeof(total_s));
	/* Samples are whole; a count worked out from values and a period is an estimate. */
	units_format(rint(n), "count", n_s, sizeof(n_s));
	shown = limit && (size_t)limit < nf ? (size_t)limit : nf;
	fprintf(out,
		"Total %s of %s/%s from %s%s samples; showing %zu of %zu %s by %s, 95%% "
		"intervals\n",
		total_s, profile_str(p, p->types[type].type), profile_str(p, p->types[type].unit),
		c.count_type < 0 && c.per_sample != 1 ? "about " : "", n_s, shown, nf,
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
		print_row(out, p, type, &rows[i], (double)total, n);
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
