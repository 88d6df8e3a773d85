/* SPDX-License-Identifier: MIT */
#include "util/common.h"

#include <signal.h>

#include "render/output.h"
#include "util/outfile.h"
#include "cmd/cmd.h"

/* The files cmd_output_open() opened and cmd_output_close() has not closed. */
static struct outfile outputs[OUTFILE_MAX];

static void on_fatal_signal(int sig)
{
	outfile_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Once: temporary outputs go at exit (die() included) and on a signal that
 * would end the process.  A command that handles a signal itself (record
 * stops and writes what it has on SIGINT) installs its own handler after.
 */
static void cleanup_once(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	static bool done;

	if (done)
		return;
	done = true;
	atexit(outfile_cleanup);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct sigaction old, sa;

		if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

FILE *cmd_output_open(const char *path)
{
	struct error err = ERROR_INIT;

	if (!path || !strcmp(path, "-"))
		return stdout;
	cleanup_once();
	for (size_t i = 0; i < ARRAY_SIZE(outputs); i++) {
		if (outputs[i].f)
			continue;
		if (outfile_open(&outputs[i], path, &err))
			die("%s", err.msg);
		return outputs[i].f;
	}
	die("cannot write %s: over %d output files open", path, OUTFILE_MAX);
}

void cmd_output_close(FILE *f, const char *path)
{
	struct error err = ERROR_INIT;
	bool failed = ferror(f) != 0;

	if (f == stdout) {
		if (fflush(f) || failed)
			die("write error on standard output: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(outputs); i++) {
		if (outputs[i].f != f)
			continue;
		if (outfile_commit(&outputs[i], &err))
			die("%s", err.msg);
		return;
	}
	BUG("%s was not opened by cmd_output_open", path);
}

static void warn_input(void *arg UNUSED, const char *msg)
{
	warning("%s", msg);
}

struct profile *cmd_read_profiles(const char **paths, int n, const struct read_options *o)
{
	struct read_options ro = *o;
	struct error err = ERROR_INIT;
	struct profile *p;

	if (!ro.warn)
		ro.warn = warn_input;
	if (profile_read_files(paths, n, &ro, &p, &err))
		die("%s", err.msg);
	return p;
}

uint32_t cmd_sample_type(const struct profile *p, const char *name)
{
	int t;

	if (!name)
		return p->default_type;
	t = profile_find_type(p, name);
	if (t < 0)
		die("the profile has no sample type '%s'", name);
	return (uint32_t)t;
}

void cmd_write_profile(const struct profile *p, enum profile_format f, uint32_t type, FILE *out,
		       const char *path)
{
	struct error err = ERROR_INIT;

	if (profile_write(p, f, type, out, &err))
		die("%s: %s", path ? path : "<stdout>", err.msg);
}
