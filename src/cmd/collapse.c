/* SPDX-License-Identifier: MIT */
/*
 * plateau collapse: `perf script` output to folded stacks, byte for byte
 * what FlameGraph's stackcollapse-perf.pl prints with the same options,
 * except that names keep their parentheses unless --cut-paren.
 */
#include "util/common.h"
#include "format/perfscript.h"
#include "cmd/cmd.h"

static const char *const collapse_usage[] = {
	"plateau collapse [--pid] [--tid] [--inline] [--kernel] [--jit] [--all] [--addrs]",
	"                 [--event-filter EV] [--cut-paren] [-o FILE] [FILE...]",
	NULL,
};

static void collapse_warn(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "%s\n", msg);
}

/* perf script prints text: a NUL byte means a binary file, often perf.data itself. */
static void check_text(const struct input *in)
{
	if (in->len >= 8 && !memcmp(in->data, "PERFILE2", 8))
		die("%s is a perf.data file: collapse the output of 'perf script -i %s'", in->name,
		    in->name);
	if (memchr(in->data, '\0', MIN(in->len, (size_t)65536)))
		die("%s: binary data, not 'perf script' output", in->name);
}

/* Add every input (none: stdin) to c, as one stream; dies on error. */
static void collapse_inputs(struct perfscript_collapse *c, const char **paths, int n)
{
	static const char *stdin_path[] = {"-"};
	struct error err = ERROR_INIT;

	if (n == 0) {
		paths = stdin_path;
		n = 1;
	}
	for (int i = 0; i < n; i++) {
		struct input in;

		if (input_open(&in, paths[i], &err))
			die("%s", err.msg);
		check_text(&in);
		if (perfscript_collapse_add(c, &in, &err))
			die("%s", err.msg);
		input_close(&in);
	}
}

int cmd_collapse(int argc, const char **argv)
{
	struct collapse_options co = {0};
	const char *output = NULL;
	bool all = false;
	int threads = 0;
	const struct option opts[] = {
		OPT_BOOL(0, "pid", &co.pid, "append the process id to the command name"),
		OPT_BOOL(0, "tid", &co.tid, "append the process and thread ids (PID/TID)"),
		OPT_BOOL(0, "inline", &co.inline_frames,
			 "expand inlined functions from the binaries' DWARF (as addr2line -i)"),
		OPT_BOOL(0, "kernel", &co.kernel, "mark kernel functions with _[k]"),
		OPT_BOOL(0, "jit", &co.jit, "mark JIT functions (/tmp/perf-PID.map) with _[j]"),
		OPT_BOOL(0, "all", &all, "all annotations: --kernel and --jit"),
		OPT_BOOL(0, "addrs", &co.addrs, "keep the address of unknown frames: [dso <addr>]"),
		OPT_STRING(0, "event-filter", &co.event_filter, "EV",
			   "keep samples of event EV (default: the first event seen)"),
		OPT_BOOL(0, "cut-paren", &co.cut_paren,
			 "cut names at their first '(' exactly as stackcollapse-perf.pl does"),
		OPT_INT('j', "threads", &threads, "N",
			"parse with N threads (default: up to 2 for large inputs)"),
		OPT_STRING('o', "output", &output, "FILE", "write to FILE instead of stdout"),
		OPT_END(),
	};
	struct perfscript_collapse *c;
	struct error err = ERROR_INIT;
	FILE *out;

	argc = parse_options(argc, argv, opts, collapse_usage);
	if (threads < 0)
		die_usage("--threads must not be negative");
	if (all)
		co.kernel = co.jit = true;
	c = perfscript_collapse_new(&co, collapse_warn, NULL);
	perfscript_collapse_set_threads(c, threads);
	collapse_inputs(c, argv, argc);
	/* What the Perl script would print too (nothing), but say why. */
	if (!perfscript_collapse_samples(c) && perfscript_collapse_unrecognized(c))
		die("no samples found: is this 'perf script' output (with -g call chains)?");
	out = cmd_output_open(output);
	if (perfscript_collapse_write(c, out, &err))
		die("%s: %s", output ? output : "<stdout>", err.msg);
	cmd_output_close(out, output);
	perfscript_collapse_free(c);
	return 0;
}
