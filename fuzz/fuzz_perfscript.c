/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: `perf script` text.  Any input must collapse without
 * a crash; the first byte picks the options.  Checked: the profile
 * reader counts the samples the collapse counted and, for inputs whose
 * first byte has its top bit set (thread start-up is slow under ASan),
 * a threaded parse prints what the sequential one prints.
 */
#include "util/common.h"
#include "format/format.h"
#include "format/perfscript.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Collapse in into a malloc'd buffer with threads parse threads; returns the sample count. */
static uint64_t collapse(const struct input *in, const struct collapse_options *o, int threads,
			 char **out, size_t *len)
{
	struct perfscript_collapse *c = perfscript_collapse_new(o, NULL, NULL);
	struct error err = ERROR_INIT;
	uint64_t n = 0;
	FILE *f;

	perfscript_collapse_set_threads(c, threads);
	*out = NULL;
	*len = 0;
	f = open_memstream(out, len);
	if (!perfscript_collapse_add(c, in, &err)) {
		n = perfscript_collapse_samples(c);
		if (perfscript_collapse_write(c, f, &err))
			abort();
	}
	fclose(f);
	perfscript_collapse_free(c);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct collapse_options o = {0};
	struct read_options ro = {0};
	struct error err = ERROR_INIT;
	struct profile *p = NULL;
	char *one, *three;
	size_t len1, len3;
	uint64_t n1, n3;
	struct input in;

	if (size) {
		o.pid = data[0] & 1;
		o.tid = data[0] & 2;
		o.kernel = data[0] & 4;
		o.jit = data[0] & 8;
		o.addrs = data[0] & 16;
		o.cut_paren = data[0] & 32;
		o.event_filter = data[0] & 64 ? "cpu-clock" : NULL;
		ro.keep_order = data[size - 1] & 1;
	}
	ro.collapse = &o;
	if (input_from_buf(&in, "fuzz", data, size, 1 << 24, &err))
		return 0;
	n1 = collapse(&in, &o, 1, &one, &len1);
	if (size && (data[0] & 128)) {
		n3 = collapse(&in, &o, 3, &three, &len3);
		if (n1 != n3 || len1 != len3 || memcmp(one, three, len1))
			abort();
		free(three);
	}
	if (!perfscript_read(&in, &ro, &p, &err)) {
		if ((uint64_t)profile_total(p, 1) != n1)
			abort();
		profile_free(p);
	}
	input_close(&in);
	free(one);
	return 0;
}
