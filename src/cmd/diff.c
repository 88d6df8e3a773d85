/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "profile/diff.h"
#include "render/flamegraph.h"
#include "cmd/cmd.h"

static const char *const diff_usage[] = {
	"plateau diff [-n] [--format svg|html|folded|json] [-o OUT] [flame graph options] "
	"[--strict] BASE NEW",
	NULL,
};

/* How the title names an input: its file name, or the whole path when both are alike. */
static const char *side_name(const char *path, const char *other)
{
	const char *b = strrchr(path, '/'), *o = strrchr(other, '/');

	b = b && b[1] ? b + 1 : path;
	o = o && o[1] ? o + 1 : other;
	return strcmp(b, o) ? b : path;
}

int cmd_diff(int argc, const char **argv)
{
	const char *format = NULL, *out_path = NULL, *sample_type = NULL;
	bool normalize = false, negate = false, strict = false;
	double alpha = 0.05;
	struct flame_options fo;
	const struct option opts[] = {
		OPT_BOOL('n', "normalize", &normalize,
			 "scale BASE so both totals match (difffolded.pl -n)"),
		OPT_STRING(0, "format", &format, "FMT",
			   "svg (default), html, folded (3 columns) or json"),
		OPT_STRING('o', "output", &out_path, "OUT", "write to OUT instead of stdout"),
		OPT_STRING(0, "sample-type", &sample_type, "NAME", "sample type to compare"),
		OPT_DOUBLE(0, "alpha", &alpha, "A",
			   "significance level of the noise test (default 0.05)"),
		OPT_STRING(0, "title", &fo.title, "TEXT", "flame graph title"),
		OPT_BOOL(0, "negate", &negate, "swap red and blue"),
		OPT_INT(0, "width", &fo.width, "PX", "image width (default 1200)"),
		OPT_STRICT(&strict),
		OPT_END(),
	};
	struct read_options ro = {0};
	struct error err = ERROR_INIT;
	struct diff_options dopt = {0};
	struct profile *base, *new, *d;
	enum profile_format f;
	FILE *out;
	int rc = 0;

	flame_options_init(&fo);
	argc = parse_options(argc, argv, opts, diff_usage);
	if (argc != 2)
		die_usage("diff takes two profiles, BASE and NEW (see 'plateau diff --help')");
	if (alpha <= 0 || alpha >= 1)
		die_usage("--alpha must be between 0 and 1");
	/* JSON here is the diff report, not speedscope: -o x.json means it too. */
	if (format)
		f = strcmp(format, "json") ? format_from_name(format) : FMT_UNKNOWN;
	else if (out_path && strlen(out_path) > 5 &&
		 !strcmp(out_path + strlen(out_path) - 5, ".json"))
		f = FMT_UNKNOWN;
	else if (out_path && format_from_filename(out_path) != FMT_UNKNOWN)
		f = format_from_filename(out_path);
	else
		f = FMT_SVG;
	if (f != FMT_UNKNOWN && f != FMT_SVG && f != FMT_HTML && f != FMT_FOLDED)
		die_usage("diff writes svg, html, folded or json");
	ro.sample_type = sample_type;
	ro.skip_bad_lines = !strict;
	base = cmd_read_profiles(&argv[0], 1, &ro);
	new = cmd_read_profiles(&argv[1], 1, &ro);
	dopt.base_type = base->default_type;
	dopt.new_type = new->default_type;
	dopt.normalize = normalize;
	dopt.alpha = alpha;
	d = diff_build(base, new, &dopt, &err);
	if (!d)
		die("%s", err.msg);
	out = cmd_output_open(out_path);
	fo.type = 1;
	fo.base_name = side_name(argv[0], argv[1]);
	fo.new_name = side_name(argv[1], argv[0]);
	fo.negate = negate;
	fo.diff_significance = true;
	fo.diff_alpha = alpha;
	if (f == FMT_UNKNOWN)
		rc = diff_write_json(d, alpha, out, &err);
	else if (f == FMT_FOLDED)
		rc = folded_write_diff(d, out, &err);
	else if (f == FMT_SVG)
		rc = flamegraph_svg_write(d, &fo, out, &err);
	else
		rc = flamegraph_html_write(d, &fo, out, &err);
	if (rc)
		die("%s", err.msg);
	cmd_output_close(out, out_path);
	profile_free(d);
	profile_free(base);
	profile_free(new);
	return 0;
}
