/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the store's profile blobs.  Any bytes must decode or
 * give a one-line "blob: " error (ERR_FORMAT, ERR_LIMIT or
 * ERR_UNSUPPORTED).  A blob that decodes must encode again, raw and with
 * zstd, and decode to an equal profile that encodes to the same bytes; blob_merge_into must leave a
 * profile as profile_merge with the decoded profile does, into an empty
 * profile and into one that holds it already; profile_truncate must keep
 * every type's total.
 */
#include "util/common.h"
#include "store/blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__ubsan_default_options(void);

/* The fuzz build lets UBSan recover; a report must end the run as a crash. */
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static const struct blob_limits limits = {(size_t)4 << 20, 1 << 16, 1 << 16, 1 << 16};

static void check_equal(const struct profile *a, const struct profile *b, const char *what)
{
	struct strbuf why = STRBUF_INIT;

	if (!profile_equal(a, b, &why))
		BUG("%s: %s", what, why.buf);
	strbuf_release(&why);
}

/* p encodes, decodes to an equal profile, and that encodes to the same bytes. */
static void round_trip(const struct profile *p, int level)
{
	struct error err = ERROR_INIT;
	struct strbuf sb = STRBUF_INIT, again = STRBUF_INIT;
	struct profile *q;

	if (blob_encode_level(p, level, &sb, &err))
		BUG("encoding a decoded profile failed: %s", err.msg);
	if (blob_decode(sb.buf, sb.len, NULL, &q, &err))
		BUG("decoding what blob_encode wrote failed: %s", err.msg);
	check_equal(p, q, "round trip");
	if (blob_encode_level(q, level, &again, &err))
		BUG("encoding a decoded profile failed: %s", err.msg);
	if (again.len != sb.len || memcmp(again.buf, sb.buf, sb.len))
		BUG("a decoded blob encodes to other bytes (level %d)", level);
	profile_free(q);
	strbuf_release(&sb);
	strbuf_release(&again);
}

/*
 * Merged as blobs and as profiles, twice.  Only overflow may tell them
 * apart: a blob's samples that fall on one sample of the profile (equal
 * frames or strings repeated in a blob) are summed before a profile merge
 * adds them, one by one by blob_merge_into.
 */
static void merge_twice(const struct profile *p, const uint8_t *data, size_t size)
{
	struct profile *a = profile_new(), *b = profile_new();

	for (int i = 0; i < 2; i++) {
		struct error e1 = ERROR_INIT, e2 = ERROR_INIT;
		int r1 = profile_merge(a, p, &e1),
		    r2 = blob_merge_into(b, data, size, &limits, &e2);

		if (r1 != r2 && r1 != ERR_LIMIT && r2 != ERR_LIMIT)
			BUG("profile_merge gave %d (%s), blob_merge_into %d (%s)", r1, e1.msg, r2,
			    e2.msg);
		if (r1 || r2)
			break;
		check_equal(a, b, "blob_merge_into");
	}
	profile_free(a);
	profile_free(b);
}

/* A type's total without saturation, to compare sums of values in any order. */
static __int128 exact_total(const struct profile *p, uint32_t type)
{
	__int128 sum = 0;

	for (uint32_t s = 0; s < p->nr_samples; s++)
		sum += profile_sample_values(p, s)[type];
	return sum;
}

static void truncate_keeps_totals(const struct profile *p)
{
	struct error err = ERROR_INIT;
	struct profile *t;

	if (!p->nr_types)
		return;
	t = profile_truncate(p, p->default_type, 4, &err);
	if (!t) {
		if (err.code != ERR_LIMIT)
			BUG("profile_truncate failed: %s", err.msg);
		return;
	}
	for (uint32_t ty = 0; ty < p->nr_types; ty++) {
		if (exact_total(p, ty) != exact_total(t, ty))
			BUG("profile_truncate changed the total of type %u", ty);
	}
	if (t->nr_nodes > 1 + 4 * 2 + 1)
		BUG("profile_truncate kept %u nodes", t->nr_nodes);
	profile_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = ERROR_INIT;
	struct profile *p;

	if (blob_decode(data, size, &limits, &p, &err)) {
		if (strncmp(err.msg, "blob: ", 6) || strchr(err.msg, '\n') ||
		    (err.code != ERR_FORMAT && err.code != ERR_LIMIT &&
		     err.code != ERR_UNSUPPORTED))
			BUG("blob_decode failed with code %d and \"%s\"", err.code, err.msg);
		return 0;
	}
	round_trip(p, 0);
	round_trip(p, 1);
	merge_twice(p, data, size);
	truncate_keeps_totals(p);
	profile_free(p);
	return 0;
}
