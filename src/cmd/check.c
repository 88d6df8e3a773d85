/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/diff.h"
#include "cmd/cmd.h"

/*
 * The CI gate: compare NEW against a baseline and fail when a function's
 * total share grew by more than --max-growth percentage points and the
 * growth is statistically significant (two-proportion test at 95%).
 * Exit 0 pass, 1 regression (or unreadable input), 2 bad usage.
 */
static const char *const check_usage[] = {
	"plateau check --baseline BASE [--max-growth PP] [--min-share PCT] [--json] [--strict] NEW",
	NULL,
};

struct check_options {
	double max_growth; /* percentage points */
	double min_share;  /* percent of NEW's total */
	double alpha;
};

static int cmp_growth(const void *a, const void *b)
{
	const struct diff_func *x = a, *y = b;
	double gx = x->new_share - x->base_share, gy = y->new_share - y->base_share;

	return gx > gy ? -1 : gx < gy;
}

static bool is_regression(const struct diff_func *f, const struct check_options *o)
{
	return 100 * (f->new_share - f->base_share) > o->max_growth &&
	       100 * f->new_share >= o->min_share && f->p < o->alpha;
}

/* " 15.00% [ 12.1- 18.3]": a share and its interval, bounds rounded outward. */
static void print_share(const struct stats_share *sh)
{
	printf(" %7.2f%% [%5.1f-%5.1f]", 100 * sh->share, stats_pct_floor(sh->lo, 1),
	       stats_pct_ceil(sh->hi, 1));
}

static void report_text(const struct profile *d, struct diff_func *fn, size_t n, size_t nreg,
			const struct check_options *o)
{
	if (!nreg) {
		printf("plateau check: OK: no function's total share grew by more than %.1f pp "
		       "with significance at %.0f%%\n",
		       o->max_growth, 100 * (1 - o->alpha));
	} else {
		printf("plateau check: REGRESSION: %zu function%s grew by more than %.1f pp "
		       "(significant at %.0f%%)\n",
		       nreg, nreg == 1 ? "" : "s", o->max_growth, 100 * (1 - o->alpha));
	}
	printf("  %-8s %8s %13s %8s %13s %9s %10s  %s\n", "verdict", "base%", "(95% CI)", "new%",
	       "(95% CI)", "change", "p-value", "function");
	for (size_t i = 0, shown = 0; i < n && shown < 10; i++) {
		double growth = 100 * (fn[i].new_share - fn[i].base_share);
		const char *verdict = is_regression(&fn[i], o) ? "FAIL"
				      : growth > o->max_growth ? "noise"
							       : "ok";

		if (growth <= 0)
			break;
		if (100 * fn[i].new_share < o->min_share)
			continue;
		printf("  %-8s", verdict);
		print_share(&fn[i].base_ci);
		print_share(&fn[i].new_ci);
		printf(" %+8.2fpp %10.3g  %s\n", growth, fn[i].p, profile_str(d, fn[i].key));
		shown++;
	}
}

static void report_json(const struct profile *d, struct diff_func *fn, size_t n, size_t nreg,
			const struct check_options *o)
{
	struct strbuf sb = STRBUF_INIT;
	bool first = true;

	strbuf_addf(&sb,
		    "{\"verdict\":\"%s\",\"max_growth_pp\":%g,\"min_share_pct\":%g,"
		    "\"alpha\":%g,\"regressions\":%zu,\"functions\":[",
		    nreg ? "regression" : "ok", o->max_growth, o->min_share, o->alpha, nreg);
	for (size_t i = 0; i < n; i++) {
		double growth = 100 * (fn[i].new_share - fn[i].base_share);

		if (growth <= 0 || 100 * fn[i].new_share < o->min_share)
			continue;
		strbuf_addstr(&sb, first ? "\n{\"name\":" : ",\n{\"name\":");
		first = false;
		strbuf_add_json(&sb, profile_str(d, fn[i].key), strtab_len(&d->strs, fn[i].key));
		strbuf_addf(&sb, ",\"base_share\":%.6f,\"new_share\":%.6f,", fn[i].base_share,
			    fn[i].new_share);
		diff_json_interval(&sb, "base", &fn[i].base_ci);
		diff_json_interval(&sb, "new", &fn[i].new_ci);
		strbuf_addf(&sb,
			    "\"growth_pp\":%.4f,\"p\":%.6g,\"significant\":%s,\"regression\":%s}",
			    growth, fn[i].p, fn[i].p < o->alpha ? "true" : "false",
			    is_regression(&fn[i], o) ? "true" : "false");
	}
	strbuf_addstr(&sb, "]}\n");
	fputs(sb.buf, stdout);
	strbuf_release(&sb);
}

int cmd_check(int argc, const char **argv)
{
	const char *baseline = NULL, *sample_type = NULL;
	struct check_options co = {5.0, 1.0, 0.05};
	bool json = false, strict = false;
	const struct option opts[] = {
		OPT_STRING(0, "baseline", &baseline, "BASE",
			   "the profile to compare against (required)"),
		OPT_DOUBLE(0, "max-growth", &co.max_growth, "PP",
			   "fail when a share grew by more than PP percentage points (default 5)"),
		OPT_DOUBLE(0, "min-share", &co.min_share, "PCT",
			   "ignore functions under PCT% of NEW's total (default 1)"),
		OPT_DOUBLE(0, "alpha", &co.alpha, "A", "significance level (default 0.05: 95%)"),
		OPT_STRING(0, "sample-type", &sample_type, "NAME", "sample type to compare"),
		OPT_BOOL(0, "json", &json, "print the verdict as JSON"),
		OPT_STRICT(&strict),
		OPT_END(),
	};
	struct read_options ro = {.sample_type = sample_type};
	struct error err = ERROR_INIT;
	struct diff_options dopt = {0};
	struct profile *base, *new, *d;
	struct diff_func *fn;
	size_t n, nreg = 0;

	argc = parse_options(argc, argv, opts, check_usage);
	if (!baseline || argc != 1)
		die_usage("%s (see 'plateau check --help')",
			  !baseline ? "check needs --baseline BASE"
				    : "check takes exactly one NEW profile");
	if (co.max_growth < 0 || co.min_share < 0 || co.min_share > 100 || co.alpha <= 0 ||
	    co.alpha >= 1)
		die_usage("--max-growth and --min-share must be >= 0 (min-share <= 100), --alpha "
			  "in (0, 1)");
	ro.sample_type = sample_type;
	ro.skip_bad_lines = !strict;
	base = cmd_read_profiles(&baseline, 1, &ro);
	new = cmd_read_profiles(argv, 1, &ro);
	dopt.base_type = base->default_type;
	dopt.new_type = new->default_type;
	dopt.alpha = co.alpha;
	d = diff_build(base, new, &dopt, &err);
	if (!d)
		die("%s", err.msg);
	n = diff_functions(d, &fn);
	qsort(fn, n, sizeof(*fn), cmp_growth);
	for (size_t i = 0; i < n; i++)
		nreg += is_regression(&fn[i], &co);
	if (json)
		report_json(d, fn, n, nreg, &co);
	else
		report_text(d, fn, n, nreg, &co);
	free(fn);
	profile_free(d);
	profile_free(base);
	profile_free(new);
	cmd_output_close(stdout, NULL);
	return nreg ? 1 : 0;
}
