/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: pprof.  Any bytes (gzip or raw protobuf) must give a
 * profile or a one-line error; whatever is read must write back out, and
 * the written pprof must read again to the same types and totals.  The
 * decoder (pprof_decode.c) must agree with protobuf-c on the same bytes.
 */
#include "util/common.h"
#include "format/pprof.h"
#include "format/pprof_decode_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_same(const struct profile *p, const struct profile *q)
{
	const char *dp = profile_str(p, p->types[p->default_type].type);
	const char *dq = profile_str(q, q->types[q->default_type].type);

	/*
	 * pprof names the default type, so compare names (types may share
	 * one); a type named "" cannot be named as the default.
	 */
	if (p->nr_types != q->nr_types || (dp[0] && strcmp(dp, dq)))
		BUG("sample types changed in a pprof round trip");
	for (uint32_t t = 0; t < p->nr_types; t++) {
		if (profile_total(p, t) != profile_total(q, t))
			BUG("totals changed in a pprof round trip");
	}
}

/* Write p, read it back, compare. */
static void round_trip(const struct profile *p)
{
	struct error err = ERROR_INIT;
	struct profile *q = NULL;
	struct input in;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	if (pprof_write(p, f, &err))
		BUG("writing a profile just read failed: %s", err.msg);
	fclose(f);
	if (input_from_buf(&in, "again", buf, len, (size_t)256 << 20, &err))
		BUG("cannot inflate what pprof_write wrote: %s", err.msg);
	/* Samples that merge on the way may overflow a sum: only that may fail. */
	if (pprof_read(&in, NULL, &q, &err) && err.code != ERR_LIMIT)
		BUG("cannot read what pprof_write wrote: %s", err.msg);
	if (q)
		check_same(p, q);
	profile_free(q);
	input_close(&in);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = ERROR_INIT;
	struct profile *p = NULL;
	struct input in;
	char why[512];
	bool ok;

	if (input_from_buf(&in, "fuzz", data, size, (size_t)64 << 20, &err))
		return 0;
	if (pbd_check(in.data, in.len, &ok, why, sizeof(why)))
		BUG("%s", why);
	if (!pprof_read(&in, NULL, &p, &err)) {
		round_trip(p);
		profile_free(p);
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		BUG("pprof_read failed without a one-line message");
	}
	input_close(&in);
	return 0;
}
