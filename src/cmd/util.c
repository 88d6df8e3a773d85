/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "lib/output.h"
#include "cmd/cmd.h"

FILE *cmd_output_open(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

void cmd_output_close(FILE *f, const char *path)
{
	bool failed = ferror(f) != 0;

	if (f == stdout) {
		if (fflush(f) || failed)
			die("write error on standard output: %s", strerror(errno));
		return;
	}
	if (fclose(f) || failed)
		die("write error on %s: %s", path, strerror(errno));
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
