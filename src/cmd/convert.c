/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "cmd/cmd.h"

static const char *const convert_usage[] = {
	"plateau convert -o OUT [--format FORMAT] [--sample-type NAME] [--strict] IN...",
	NULL,
};

int cmd_convert(int argc, const char **argv)
{
	const char *out_path = NULL, *format = NULL, *sample_type = NULL;
	bool strict = false;
	const struct option opts[] = {
		OPT_STRING('o', "output", &out_path, "OUT", "write to OUT ('-' for stdout)"),
		OPT_STRING(
			0, "format", &format, "FORMAT",
			"folded, pprof, speedscope, svg or html (default: from OUT's extension)"),
		OPT_STRING(0, "sample-type", &sample_type, "NAME",
			   "sample type for single-type formats (default: the profile's default)"),
		OPT_STRICT(&strict),
		OPT_END(),
	};
	struct read_options ro = {0};
	enum profile_format f;
	struct profile *p;
	FILE *out;

	argc = parse_options(argc, argv, opts, convert_usage);
	if (!out_path)
		die_usage("convert needs -o OUT (see 'plateau convert --help')");
	if (argc < 1)
		die_usage("convert needs an input (several are merged; see 'plateau convert "
			  "--help')");
	f = format ? format_from_name(format) : format_from_filename(out_path);
	if (f == FMT_UNKNOWN || f == FMT_PERF_SCRIPT) {
		if (format)
			die_usage(
				"unknown output format '%s' (folded, pprof, speedscope, svg, html)",
				format);
		die_usage("cannot tell the output format from '%s': use --format", out_path);
	}
	ro.sample_type = sample_type;
	ro.skip_bad_lines = !strict;
	p = cmd_read_profiles(argv, argc, &ro);
	out = cmd_output_open(out_path);
	cmd_write_profile(p, f, p->default_type, out, out_path);
	cmd_output_close(out, out_path);
	profile_free(p);
	return 0;
}
