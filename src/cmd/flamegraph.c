/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "render/flamegraph.h"
#include "render/flamegraph_int.h"
#include "cmd/cmd.h"

/*
 * plateau flamegraph: any input format to an interactive SVG (or the
 * HTML viewer), with flamegraph.pl's options and defaults.
 */

static const char *const flamegraph_usage[] = {
	"plateau flamegraph [options] [--strict] [FILE...]",
	"perf script | plateau flamegraph > out.svg",
	NULL,
};

struct fg_args {
	struct flame_options fo;
	const char *out_path, *format, *minwidth, *sample_type, *focus, *ignore;
	double prune, total;
	bool strict;
};

/* --minwidth: pixels ("0.5") or a percentage of the total ("1%"), as flamegraph.pl. */
static void parse_minwidth(const char *s, struct flame_options *o)
{
	size_t len = strlen(s);
	char *end;

	if (!len || strspn(s, "0123456789.") < len - (s[len - 1] == '%'))
		die_usage("--minwidth takes pixels or a percentage (0.1, 2%%), not '%s'", s);
	o->minwidth = strtod(s, &end);
	o->minwidth_pct = *end == '%';
	if (end == s || (*end && strcmp(end, "%")) || !isfinite(o->minwidth))
		die_usage("--minwidth takes pixels or a percentage (0.1, 2%%), not '%s'", s);
}

static enum profile_format output_format(const struct fg_args *a)
{
	enum profile_format f = FMT_SVG;

	if (a->format)
		f = format_from_name(a->format);
	else if (a->out_path && strcmp(a->out_path, "-") &&
		 format_from_filename(a->out_path) == FMT_HTML)
		f = FMT_HTML;
	if (f != FMT_SVG && f != FMT_HTML)
		die_usage("flamegraph writes svg or html, not '%s'", a->format);
	return f;
}

static void check_args(struct fg_args *a)
{
	char c1[8], c2[8];
	int pal = flame_palette_parse(a->fo.colors);

	if (pal < 0)
		die_usage("unknown --colors '%s' (hot mem io wakeup chain java js perl red green "
			  "blue aqua yellow purple orange)",
			  a->fo.colors);
	if (!flame_background(pal, a->fo.bgcolors, c1, c2))
		die_usage("unknown --bgcolors '%s' (yellow blue green grey or #rrggbb)",
			  a->fo.bgcolors);
	if (a->minwidth)
		parse_minwidth(a->minwidth, &a->fo);
	if (a->fo.width <= 20 || a->fo.width > 1000000)
		die_usage("--width must be between 21 and 1000000");
	if (a->fo.height < 1 || a->fo.height > 10000)
		die_usage("--height must be between 1 and 10000");
	if (!(a->fo.fontsize > 0 && a->fo.fontsize <= 1000) ||
	    !(a->fo.fontwidth > 0 && a->fo.fontwidth <= 10))
		die_usage("--fontsize and --fontwidth must be positive");
	if (!(a->fo.factor > 0 && a->fo.factor < 1e15))
		die_usage("--factor must be positive");
	if (!(a->prune >= 0 && a->prune < 100))
		die_usage("--prune takes a percentage from 0 to 100");
	if (!(a->total >= 0 && a->total < 1e18))
		die_usage("--total must be a positive count");
	a->fo.total = a->total;
}

/* --focus, --ignore and --prune, each giving a new profile. */
static struct profile *apply_filters(struct profile *p, const struct fg_args *a)
{
	struct error err = ERROR_INIT;

	if (a->focus || a->ignore) {
		struct profile *q = profile_filter(p, a->focus, a->ignore, &err);

		if (!q)
			die_usage("%s", err.msg);
		profile_free(p);
		p = q;
	}
	if (a->prune > 0) {
		struct profile *q = profile_prune(p, a->fo.type, a->prune / 100);

		profile_free(p);
		p = q;
	}
	return p;
}

/* Countname from the unit ("nanoseconds") unless given; --total as flamegraph.pl. */
static void fit_options(struct fg_args *a, const struct profile *p, bool countname_given)
{
	const char *unit = profile_str(p, p->types[a->fo.type].unit);
	int64_t total = profile_total(p, a->fo.type);
	double scale = pow(10, p->types[a->fo.type].decimals);

	if (!countname_given && *unit && strcmp(unit, "count"))
		a->fo.countname = unit;
	if (a->total > 0 && a->total * scale < (double)total) {
		if (a->total * scale / (double)total > 0.02)
			warning("--total %g is less than the actual total %g, so ignored", a->total,
				(double)total / scale);
		a->fo.total = 0;
	}
}

int cmd_flamegraph(int argc, const char **argv)
{
	struct fg_args a = {0};
	struct flame_options *fo = &a.fo;
	const struct option opts[] = {
		OPT_STRING('o', "output", &a.out_path, "FILE", "write to FILE instead of stdout"),
		OPT_STRING(0, "format", &a.format, "FMT",
			   "svg (default, or from -o's extension) or html"),
		OPT_STRING(0, "title", &fo->title, "TEXT", "change title text"),
		OPT_STRING(0, "subtitle", &fo->subtitle, "TEXT", "second level title (optional)"),
		OPT_INT(0, "width", &fo->width, "NUM", "width of image (default 1200)"),
		OPT_INT(0, "height", &fo->height, "NUM", "height of each frame (default 16)"),
		OPT_STRING(0, "minwidth", &a.minwidth, "NUM",
			   "omit smaller functions: pixels, or N% of the total (default 0.1)"),
		OPT_STRING(0, "fonttype", &fo->fonttype, "FONT", "font type (default \"Verdana\")"),
		OPT_DOUBLE(0, "fontsize", &fo->fontsize, "NUM", "font size (default 12)"),
		OPT_DOUBLE(0, "fontwidth", &fo->fontwidth, "NUM",
			   "average font width relative to fontsize (default 0.59)"),
		OPT_STRING(0, "countname", &fo->countname, "TEXT",
			   "count type label (default \"samples\", or the unit)"),
		OPT_STRING(0, "nametype", &fo->nametype, "TEXT",
			   "name type label (default \"Function:\")"),
		OPT_STRING(0, "colors", &fo->colors, "PALETTE",
			   "hot (default), mem, io, wakeup, chain, java, js, perl, red, green, "
			   "blue, aqua, yellow, purple, orange"),
		OPT_STRING(0, "bgcolors", &fo->bgcolors, "COLOR",
			   "background: yellow, blue, green, grey or #rrggbb"),
		OPT_BOOL(0, "hash", &fo->hash, "colors are keyed by function name hash"),
		OPT_BOOL(0, "random", &fo->random, "colors are randomly generated"),
		OPT_BOOL(0, "cp", &fo->cp, "use consistent palette (palette.map)"),
		OPT_BOOL(0, "reverse", &fo->reverse, "generate stack-reversed flame graph"),
		OPT_BOOL(0, "inverted", &fo->inverted, "icicle graph"),
		OPT_BOOL(0, "flamechart", &fo->flamechart,
			 "produce a flame chart (input order, do not merge stacks)"),
		OPT_BOOL(0, "negate", &fo->negate, "switch differential hues (blue<->red)"),
		OPT_DOUBLE(0, "factor", &fo->factor, "NUM", "factor to scale counts by"),
		OPT_STRING(0, "notes", &fo->notes, "TEXT", "add notes comment in SVG"),
		OPT_DOUBLE(0, "total", &a.total, "NUM", "width of the graph in counts (if larger)"),
		OPT_STRING(0, "sample-type", &a.sample_type, "NAME",
			   "sample type to draw (default: the profile's)"),
		OPT_STRING(0, "focus", &a.focus, "REGEX", "keep only stacks with a matching frame"),
		OPT_STRING(0, "ignore", &a.ignore, "REGEX", "drop stacks with a matching frame"),
		OPT_DOUBLE(0, "prune", &a.prune, "PCT",
			   "merge frames under PCT% of the total into [pruned]"),
		OPT_STRICT(&a.strict),
		OPT_END(),
	};
	struct read_options ro = {0};
	struct error err = ERROR_INIT;
	enum profile_format f;
	struct profile *p;
	bool countname_given;
	FILE *out;
	int rc;

	flame_options_init(fo);
	fo->countname = NULL;
	argc = parse_options(argc, argv, opts, flamegraph_usage);
	countname_given = fo->countname != NULL;
	if (!countname_given)
		fo->countname = "samples";
	f = output_format(&a);
	check_args(&a);
	ro.sample_type = a.sample_type;
	ro.keep_order = fo->flamechart;
	ro.skip_bad_lines = !a.strict;
	p = cmd_read_profiles(argv, argc, &ro);
	fo->type = profile_is_diff(p) ? 1 : cmd_sample_type(p, a.sample_type);
	p = apply_filters(p, &a);
	fit_options(&a, p, countname_given);
	out = cmd_output_open(a.out_path);
	if (f == FMT_HTML)
		rc = flamegraph_html_write(p, fo, out, &err);
	else
		rc = flamegraph_svg_write(p, fo, out, &err);
	if (rc)
		die("%s", err.msg);
	cmd_output_close(out, a.out_path);
	profile_free(p);
	return 0;
}
