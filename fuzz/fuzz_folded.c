/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: folded stacks.  Any input must parse or be refused
 * with an error; whatever parses must write back out, and the folded
 * output must parse again to the same totals.
 */
#include "util/common.h"
#include "format/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Totals compare unscaled: "0.50" and "0.5" store 50 and 5. */
static double total_of(const struct profile *p)
{
	return profile_value_double(p, 0, profile_total(p, 0));
}

/* Unscaling divides by 10^decimals: equal up to rounding. */
static bool same_total(double a, double b)
{
	double d = a > b ? a - b : b - a, m = a > 0 ? a : -a;

	return d <= 1e-9 * (m > 1 ? m : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = ERROR_INIT;
	struct profile *p = NULL, *q = NULL;
	struct input in, again;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (input_from_buf(&in, "fuzz", data, size, 1 << 24, &err))
		return 0;
	if (folded_read(&in, NULL, &p, &err)) {
		input_close(&in);
		return 0;
	}
	input_close(&in);
	f = open_memstream(&buf, &len);
	if (profile_is_diff(p) ? folded_write_diff(p, f, &err) : folded_write(p, 0, f, &err))
		abort();
	fclose(f);
	err = (struct error)ERROR_INIT;
	/* Output that happens to start with gzip's magic is read as gzip: nothing to compare. */
	if (input_is_gzip(buf, len)) {
		profile_free(p);
		free(buf);
		return 0;
	}
	if (input_from_buf(&again, "again", buf, len, 1 << 24, &err))
		abort();
	/* An all-zero profile writes nothing, which does not read back. */
	/*
	 * A last frame ending in " 5" makes "a 5 2" read back as a
	 * differential line: an ambiguity of the format (flamegraph.pl reads
	 * it the same way), not a bug.
	 */
	if (len && folded_read(&again, NULL, &q, &err) == 0 &&
	    profile_is_diff(p) == profile_is_diff(q) && !same_total(total_of(p), total_of(q)))
		abort();
	input_close(&again);
	profile_free(p);
	profile_free(q);
	free(buf);
	return 0;
}
