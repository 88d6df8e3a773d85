/* SPDX-License-Identifier: MIT */
/*
 * pprof_decode.c against protobuf-c: the same bytes must decode to the
 * same fields, or fail in both; wire-format corners (unpacked repeated
 * fields, unknown fields of every wire type, repeated scalars and
 * messages) built by hand; errors named by field and offset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "format/pprof_decode_check.h"

/* A hand-written protobuf message. */
struct w {
	uint8_t b[4096];
	size_t n;
};

static void w_varint(struct w *w, uint64_t v)
{
	while (v >= 0x80) {
		w->b[w->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	w->b[w->n++] = (uint8_t)v;
}

static void w_key(struct w *w, unsigned field, unsigned wt)
{
	w_varint(w, (uint64_t)field << 3 | wt);
}

static void w_int(struct w *w, unsigned field, uint64_t v)
{
	w_key(w, field, 0);
	w_varint(w, v);
}

static void w_bytes(struct w *w, unsigned field, const void *data, size_t len)
{
	w_key(w, field, 2);
	w_varint(w, len);
	memcpy(w->b + w->n, data, len);
	w->n += len;
}

static void w_msg(struct w *w, unsigned field, const struct w *sub)
{
	w_bytes(w, field, sub->b, sub->n);
}

static void w_str(struct w *w, const char *s)
{
	w_bytes(w, 6, s, strlen(s));
}

/* One unknown field of every wire type, numbered from FIELD. */
static void w_unknown(struct w *w, unsigned field)
{
	w_int(w, field, 12345);
	w_key(w, field + 1, 1);
	memcpy(w->b + w->n, "\1\2\3\4\5\6\7\x08", 8);
	w->n += 8;
	w_bytes(w, field + 2, "junk", 4);
	w_key(w, field + 3, 5);
	memcpy(w->b + w->n, "\1\2\3\4", 4);
	w->n += 4;
}

/* Decode BUF both ways: they must agree; *OK whether the decoder succeeded. */
static void agree(const void *buf, size_t len, bool *ok)
{
	char why[512];
	bool decoded;
	const char *w = pbd_check(buf, len, &decoded, why, sizeof(why));

	if (w)
		fail_msg("%s", w);
	if (ok)
		*ok = decoded;
}

/* A profile using every field, packed by protobuf-c. */
static uint8_t *rich(size_t *len)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
						PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
	Perftools__Profiles__ValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType *vts[2] = {&vt[0], &vt[1]};
	Perftools__Profiles__Label lb[2] = {PERFTOOLS__PROFILES__LABEL__INIT,
					    PERFTOOLS__PROFILES__LABEL__INIT};
	Perftools__Profiles__Label *lbs[2] = {&lb[0], &lb[1]};
	Perftools__Profiles__Sample s[2] = {PERFTOOLS__PROFILES__SAMPLE__INIT,
					    PERFTOOLS__PROFILES__SAMPLE__INIT};
	Perftools__Profiles__Sample *ss[2] = {&s[0], &s[1]};
	Perftools__Profiles__Mapping m = PERFTOOLS__PROFILES__MAPPING__INIT, *ms = &m;
	Perftools__Profiles__Line ln[2] = {PERFTOOLS__PROFILES__LINE__INIT,
					   PERFTOOLS__PROFILES__LINE__INIT};
	Perftools__Profiles__Line *lns[2] = {&ln[0], &ln[1]};
	Perftools__Profiles__Location loc[2] = {PERFTOOLS__PROFILES__LOCATION__INIT,
						PERFTOOLS__PROFILES__LOCATION__INIT};
	Perftools__Profiles__Location *locs[2] = {&loc[0], &loc[1]};
	Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT, *fns = &fn;
	static char text[][16] = {"",	   "samples",  "count",	   "cpu",    "nanoseconds",
				  "main",  "main.c",   "/bin/app", "thread", "worker",
				  "bytes", "a comment"};
	char *strings[sizeof(text) / sizeof(*text)];
	uint64_t ids0[] = {2, 1}, ids1[] = {UINT64_MAX, 1, 2};
	int64_t v0[] = {1, 10000000}, v1[] = {-5, INT64_MIN};
	int64_t comments[] = {11, 0, 11};
	uint8_t *buf;

	for (size_t i = 0; i < sizeof(text) / sizeof(*text); i++)
		strings[i] = text[i];
	vt[0].type = 1, vt[0].unit = 2, vt[1].type = 3, vt[1].unit = 4;
	pt.type = 3, pt.unit = 4;
	lb[0].key = 8, lb[0].str = 9;
	lb[1].key = 10, lb[1].num = -42, lb[1].num_unit = 10;
	s[0].n_location_id = 2, s[0].location_id = ids0, s[0].n_value = 2, s[0].value = v0;
	s[0].n_label = 2, s[0].label = lbs;
	s[1].n_location_id = 3, s[1].location_id = ids1, s[1].n_value = 2, s[1].value = v1;
	m.id = 1, m.memory_start = 0x400000, m.memory_limit = 0x500000, m.file_offset = 0x1000;
	m.filename = 7, m.build_id = 0, m.has_functions = 1, m.has_inline_frames = 1;
	ln[0].function_id = 1, ln[0].line = 12, ln[0].column = 3;
	ln[1].function_id = 1, ln[1].line = -1;
	loc[0].id = 1, loc[0].mapping_id = 1, loc[0].address = 0x401234;
	loc[0].n_line = 2, loc[0].line = lns, loc[0].is_folded = 1;
	loc[1].id = 2, loc[1].address = UINT64_MAX;
	fn.id = 1, fn.name = 5, fn.system_name = 5, fn.filename = 6, fn.start_line = 10;
	p.n_sample_type = 2, p.sample_type = vts;
	p.n_sample = 2, p.sample = ss;
	p.n_mapping = 1, p.mapping = &ms;
	p.n_location = 2, p.location = locs;
	p.n_function = 1, p.function = &fns;
	p.n_string_table = sizeof(text) / sizeof(*text), p.string_table = strings;
	p.drop_frames = 5, p.keep_frames = 6, p.time_nanos = 1700000000000000000;
	p.duration_nanos = -1, p.period_type = &pt, p.period = 10000000;
	p.n_comment = 3, p.comment = comments, p.default_sample_type = 3, p.doc_url = 11;
	*len = perftools__profiles__profile__get_packed_size(&p);
	buf = xmalloc(*len);
	perftools__profiles__profile__pack(&p, buf);
	return buf;
}

static void test_every_field(void **state)
{
	size_t len;
	uint8_t *buf = rich(&len);
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	bool ok;

	(void)state;
	agree(buf, len, &ok);
	assert_true(ok);
	assert_int_equal(pbd_decode(&d, "x", buf, len, (size_t)1 << 20, &err), 0);
	assert_int_equal(d.n_sample, 2);
	{
		uint64_t ids[3];

		assert_non_null(d.sample[1].loc_raw); /* one packed run: left packed */
		assert_int_equal(pbd_sample_ids(&d, &d.sample[1], ids)[0], UINT64_MAX);
		assert_int_equal(ids[2], 2);
	}
	assert_true(pbd_values(&d, &d.sample[1])[1] == INT64_MIN);
	assert_int_equal(pbd_labels(&d, &d.sample[0])[1].num, -42);
	assert_int_equal(d.location[0].n_line, 2);
	assert_int_equal(pbd_lines(&d, &d.location[0])[1].line, -1);
	assert_string_equal(d.string_table[7], "/bin/app");
	assert_true(d.duration_nanos == -1);
	pbd_release(&d);
	free(buf);
}

/* Repeated scalars unpacked, packed, and both in one message. */
static void test_unpacked_and_mixed(void **state)
{
	struct w top = {0}, s = {0}, packed = {0};
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	uint64_t want[] = {1, 2, 3, 4, 5};

	(void)state;
	w_int(&s, 1, 1);
	w_int(&s, 1, 2);
	w_varint(&packed, 3);
	w_varint(&packed, 4);
	w_bytes(&s, 1, packed.b, packed.n);
	w_int(&s, 2, (uint64_t)-7); /* a value between the location ids */
	w_int(&s, 1, 5);
	w_int(&s, 2, 8);
	w_str(&top, "");
	w_msg(&top, 2, &s);
	w_msg(&top, 2, &s);
	w_int(&top, 13, 0);
	w_bytes(&top, 13, "\0\0", 2);
	agree(top.b, top.n, NULL);
	assert_int_equal(pbd_decode(&d, "x", top.b, top.n, (size_t)1 << 20, &err), 0);
	assert_int_equal(d.n_sample, 2);
	assert_int_equal(d.sample[1].n_location_id, 5);
	assert_null(d.sample[1].loc_raw); /* several runs: in the array */
	assert_memory_equal(pbd_sample_ids(&d, &d.sample[1], NULL), want, sizeof(want));
	assert_int_equal(d.sample[1].n_value, 2);
	assert_true(pbd_values(&d, &d.sample[1])[0] == -7);
	assert_int_equal(d.n_comment, 3);
	pbd_release(&d);
}

/* Unknown fields of every wire type, at every level, are skipped. */
static void test_unknown_fields(void **state)
{
	struct w top = {0}, s = {0}, l = {0}, loc = {0}, line = {0}, m = {0}, f = {0}, vt = {0};
	struct error err = ERROR_INIT;
	struct pbd_profile d;

	(void)state;
	w_unknown(&l, 20);
	w_int(&l, 1, 1);
	w_int(&s, 1, 7);
	w_unknown(&s, 9);
	w_msg(&s, 3, &l);
	w_int(&line, 2, 33);
	w_unknown(&line, 4);
	w_int(&loc, 1, 7);
	w_unknown(&loc, 6);
	w_msg(&loc, 4, &line);
	w_int(&m, 1, 1);
	w_unknown(&m, 11);
	w_int(&f, 1, 1);
	w_unknown(&f, 6);
	w_int(&vt, 2, 1);
	w_unknown(&vt, 3);
	w_unknown(&top, 100);
	w_str(&top, "");
	w_msg(&top, 1, &vt);
	w_msg(&top, 2, &s);
	w_msg(&top, 3, &m);
	w_msg(&top, 4, &loc);
	w_msg(&top, 5, &f);
	w_unknown(&top, 16);
	agree(top.b, top.n, NULL);
	assert_int_equal(pbd_decode(&d, "x", top.b, top.n, (size_t)1 << 20, &err), 0);
	assert_int_equal(d.sample[0].n_label, 1);
	assert_int_equal(pbd_lines(&d, &d.location[0])[0].line, 33);
	assert_int_equal(d.sample_type[0].unit, 1);
	pbd_release(&d);
}

/* A field given twice, scalar or message: the last one counts. */
static void test_last_wins_and_merge(void **state)
{
	struct w top = {0}, a = {0}, b = {0};
	struct error err = ERROR_INIT;
	struct pbd_profile d;

	(void)state;
	w_int(&a, 1, 4);
	w_int(&b, 2, 5);
	w_str(&top, "");
	w_int(&top, 12, 100);
	w_msg(&top, 11, &a);
	w_int(&top, 12, 200);
	w_msg(&top, 11, &b);
	agree(top.b, top.n, NULL);
	assert_int_equal(pbd_decode(&d, "x", top.b, top.n, (size_t)1 << 20, &err), 0);
	assert_int_equal(d.period, 200);
	assert_int_equal(d.period_type.type, 0);
	assert_int_equal(d.period_type.unit, 5);
	pbd_release(&d);
}

static void expect_error(const struct w *top, int code, const char *msg)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;

	assert_int_equal(pbd_decode(&d, "x.pb", top->b, top->n, (size_t)1 << 20, &err), code);
	assert_string_equal(err.msg, msg);
	pbd_release(&d);
}

static void test_errors(void **state)
{
	struct w top = {0}, s = {0};

	(void)state;
	/* A packed run whose last varint is cut off. */
	w_bytes(&s, 1, "\x01\x81", 2);
	w_str(&top, "");
	w_msg(&top, 2, &s);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: sample 0: location_id: varint runs past "
		     "the end (at byte 7)");
	/* A label's error names its sample. */
	top.n = s.n = 0;
	w_int(&s, 1, 3);
	w_bytes(&s, 3, "\x08", 1);
	w_str(&top, "");
	w_msg(&top, 2, &s);
	w_msg(&top, 2, &s);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: sample 0: label key: varint runs past the "
		     "end (at byte 9)");
	top.n = 0;
	w_key(&top, 0, 0);
	w_varint(&top, 1);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: field key: field number 0 (at byte 0)");
	/* Also when the key takes two bytes (which protobuf-c lets through). */
	top.n = 0;
	memcpy(top.b, "\x80\x00\x01", 3);
	top.n = 3;
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: field key: field number 0 (at byte 0)");
	top.n = 0;
	w_int(&top, 6, 1);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: string_table: wrong wire type for a "
		     "length-delimited field (at byte 1)");
	top.n = 0;
	w_bytes(&top, 12, "", 0);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: period: wrong wire type for a varint "
		     "field (at byte 1)");
	top.n = 0;
	w_key(&top, 30, 3);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: unknown field: groups are not supported "
		     "(at byte 2)");
	top.n = 0;
	w_key(&top, 9, 0);
	memcpy(top.b + top.n, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
	top.n += 11;
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: time_nanos: varint longer than 10 bytes "
		     "(at byte 1)");
	top.n = 0;
	w_key(&top, 2, 2);
	w_varint(&top, 50);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: sample: length runs past the end (at byte "
		     "1)");
	top.n = 0;
	w_key(&top, 40, 1);
	w_varint(&top, 1);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: unknown field: fixed-size value runs past "
		     "the end (at byte 2)");
	top.n = 0;
	w_key(&top, 40, 7);
	expect_error(&top, ERR_FORMAT,
		     "x.pb: not a valid pprof profile: unknown field: unknown wire type (at byte "
		     "2)");
}

/*
 * The packed location ids of one sample: PRE one-byte ids, one varint of
 * LEN bytes (11: too long), POST one-byte ids, and CUT continuation bytes
 * at the end (a varint that runs past it).  PRE up to 16 puts the long
 * varint across each of the scanner's 8-byte steps and its tail.
 */
struct ids_case {
	unsigned pre, len, post, cut;
};

/* The message of C; *AT the offset of its long varint, *N its ids. */
static void ids_message(const struct ids_case *c, struct w *top, size_t *at, uint32_t *n)
{
	uint8_t run[64];
	size_t k = 0;
	struct w s = {0};

	for (unsigned i = 0; i < c->pre; i++)
		run[k++] = (uint8_t)(1 + i % 100);
	for (unsigned i = 1; i < c->len; i++)
		run[k++] = (uint8_t)(0x80 | i);
	run[k++] = 1;
	for (unsigned i = 0; i < c->post; i++)
		run[k++] = (uint8_t)(100 - i);
	for (unsigned i = 0; i < c->cut; i++)
		run[k++] = 0xff;
	w_bytes(&s, 1, run, k);
	top->n = 0;
	w_str(top, "");
	w_msg(top, 2, &s);
	*at = top->n - k + c->pre;
	*n = c->pre + 1 + c->post;
}

static void expect_ids(const struct ids_case *c)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	struct w top;
	size_t at, bad;
	uint32_t n;
	char msg[256];
	int rc;

	ids_message(c, &top, &at, &n);
	agree(top.b, top.n, NULL);
	rc = pbd_decode(&d, "x.pb", top.b, top.n, (size_t)1 << 20, &err);
	if (c->len <= 10 && !c->cut) {
		assert_int_equal(rc, 0);
		assert_non_null(d.sample[0].loc_raw);
		assert_int_equal(d.sample[0].n_location_id, n);
	} else {
		/* The first bad varint: the long one, else the cut one at the end. */
		bad = c->len > 10 ? at : at + c->len + c->post;
		snprintf(msg, sizeof(msg),
			 "x.pb: not a valid pprof profile: sample 0: location_id: %s (at byte %zu)",
			 c->len > 10 || c->cut >= 10 ? "varint longer than 10 bytes"
						     : "varint runs past the end",
			 bad);
		assert_int_equal(rc, ERR_FORMAT);
		assert_string_equal(err.msg, msg);
	}
	pbd_release(&d);
}

/* Packed ids: the word-at-a-time scan counts and fails as a byte scan would. */
static void test_packed_ids_scan(void **state)
{
	static const unsigned cuts[] = {0, 1, 7, 8, 9, 10, 12};

	(void)state;
	for (unsigned pre = 0; pre <= 16; pre++) {
		for (unsigned len = 1; len <= 11; len++) {
			for (unsigned post = 0; post <= 9; post++) {
				for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
					struct ids_case c = {pre, len, post, cuts[i]};

					expect_ids(&c);
				}
			}
		}
	}
}

/* Runs of 10-byte varints (the longest allowed) back to back, of any count. */
static void test_packed_ids_longest(void **state)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	uint64_t ids[40];

	(void)state;
	for (size_t n = 1; n <= ARRAY_SIZE(ids); n++) {
		struct w top = {0}, s = {0}, packed = {0};

		for (size_t i = 0; i < n; i++)
			w_varint(&packed, UINT64_MAX - i);
		w_bytes(&s, 1, packed.b, packed.n);
		w_str(&top, "");
		w_msg(&top, 2, &s);
		agree(top.b, top.n, NULL);
		assert_int_equal(pbd_decode(&d, "x", top.b, top.n, (size_t)1 << 20, &err), 0);
		assert_int_equal(d.sample[0].n_location_id, n);
		pbd_sample_ids(&d, &d.sample[0], ids);
		for (size_t i = 0; i < n; i++)
			assert_true(ids[i] == UINT64_MAX - i);
		pbd_release(&d);
	}
}

/* Sample I of test_sample_shapes: its message into S, its ids into IDS (*N). */
static void shaped_sample(size_t i, struct w *s, uint64_t *ids, size_t *n, size_t *values,
			  size_t *labels)
{
	struct w packed = {0}, label = {0};
	size_t k;

	*n = 0;
	s->n = 0;
	if (i % 9 == 6) { /* Go's two values: unpacked, before the ids */
		w_int(s, 2, i);
		w_int(s, 2, (uint64_t)i << 30);
	}
	if (i % 9 == 7) { /* Go's one or two ids: unpacked */
		for (k = 0; k < 1 + i % 2; k++)
			w_int(s, 1, ids[(*n)++] = 1 + (i * 37 + k * 101) % 300);
	} else {
		if (i % 9 == 8) /* an unpacked id, then a packed run */
			w_int(s, 1, ids[(*n)++] = 5);
		for (k = 0; k < 1 + i % 5; k++)
			w_varint(&packed, ids[(*n)++] = 1 + (i * 37 + k * 101) % 300);
		w_bytes(s, 1, packed.b, packed.n);
	}
	if (i % 9 != 6) {
		packed.n = 0;
		w_varint(&packed, i);
		w_varint(&packed, (uint64_t)i << 30);
		w_bytes(s, 2, packed.b, packed.n);
	}
	*values += 2;
	w_int(&label, 1, 1 + i % 3);
	w_int(&label, 2, 2);
	w_msg(s, 3, &label);
	(*labels)++;
	switch (i % 9) {
	case 1: w_int(s, 9, 1); break;		     /* an unknown field */
	case 2: w_int(s, 2, 5), (*values)++; break;  /* one more value, unpacked */
	case 3: w_int(s, 1, ids[(*n)++] = 7); break; /* an unpacked id after the run */
	case 4:
		w_int(&label, 5, 1); /* a label with an unknown field */
		w_msg(s, 3, &label);
		(*labels)++;
		break;
	case 5: w_bytes(s, 1, "\x01", 1), ids[(*n)++] = 1; break; /* a second run of ids */
	}
}

/*
 * Samples of the shapes read without the field table (Go's among them)
 * between samples that leave those shapes at their last field, after
 * ids, values and labels were read: those are read again by the table,
 * and nothing may count twice.  Enough samples that the arrays grow on
 * the way, at every phase of the pattern.
 */
static void test_sample_shapes(void **state)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	struct w top = {0}, s; /* 150 samples: 3.8 KB of top's 4 */
	size_t n_samples = 150, labels = 0, values = 0, n;
	uint64_t want[8], ids[8];

	(void)state;
	w_str(&top, "");
	for (size_t i = 0; i < n_samples; i++) {
		shaped_sample(i, &s, want, &n, &values, &labels);
		assert_true(top.n + s.n + 3 <= sizeof(top.b));
		w_msg(&top, 2, &s);
	}
	agree(top.b, top.n, NULL);
	assert_int_equal(pbd_decode(&d, "x", top.b, top.n, (size_t)1 << 20, &err), 0);
	assert_int_equal(d.n_sample, n_samples);
	assert_int_equal(d.n_values, values);
	assert_int_equal(d.n_labels, labels);
	for (size_t i = 0; i < n_samples; i++) {
		const struct pbd_sample *sm = &d.sample[i];
		size_t v = 0, l = 0;

		shaped_sample(i, &s, want, &n, &v, &l);
		assert_int_equal(sm->n_location_id, n);
		assert_memory_equal(pbd_sample_ids(&d, sm, ids), want, n * sizeof(*want));
		assert_int_equal(sm->n_value, v);
		assert_true(pbd_values(&d, sm)[1] == (int64_t)i << 30);
		assert_int_equal(sm->n_label, l);
		assert_int_equal(pbd_labels(&d, sm)[0].key, 1 + i % 3);
	}
	pbd_release(&d);
}

static void test_budget(void **state)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	size_t len;
	uint8_t *buf = rich(&len);

	(void)state;
	assert_int_equal(pbd_decode(&d, "x.pb", buf, len, 64, &err), ERR_LIMIT);
	assert_string_equal(err.msg, "x.pb: pprof data needs more than 0 MiB to decode");
	pbd_release(&d);
	free(buf);
}

/* A shared budget is charged for the arrays while decoded, given back on release. */
static void test_shared_budget(void **state)
{
	struct budget b = {.limit = 1 << 20};
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	size_t len;
	uint8_t *buf = rich(&len);

	(void)state;
	assert_int_equal(pbd_decode_budget(&d, "x.pb", buf, len, 1 << 20, &b, &err), 0);
	assert_true(atomic_load(&b.used) == d.used && d.used > 0);
	b.limit = d.used - 1;
	pbd_release(&d);
	assert_int_equal(atomic_load(&b.used), 0);
	assert_int_equal(pbd_decode_budget(&d, "x.pb", buf, len, 1 << 20, &b, &err), ERR_LIMIT);
	assert_non_null(strstr(err.msg, INPUT_BUDGET_MSG));
	pbd_release(&d);
	assert_int_equal(atomic_load(&b.used), 0);
	free(buf);
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

/* Every prefix and thousands of mutations: the decoders agree on each. */
static void test_prefixes_and_mutations_agree(void **state)
{
	size_t len, accepted = 0;
	uint8_t *buf = rich(&len), *m = xmalloc(len + 8);
	uint64_t seed = 1;
	bool ok;

	(void)state;
	for (size_t cut = 0; cut <= len; cut++) {
		agree(buf, cut, &ok);
		accepted += ok;
	}
	assert_true(accepted > 0);
	for (int i = 0; i < 20000; i++) {
		size_t n = len;

		memcpy(m, buf, len);
		for (int k = 1 + (int)(rnd(&seed) % 3); k > 0; k--) {
			size_t at = rnd(&seed) % n;

			switch (rnd(&seed) % 3) {
			case 0: m[at] = (uint8_t)rnd(&seed); break;
			case 1: m[at] ^= (uint8_t)(1u << rnd(&seed) % 8); break;
			default:
				if (n > 1) {
					memmove(m + at, m + at + 1, n - at - 1);
					n--;
				}
			}
		}
		agree(m, n, NULL);
	}
	free(m);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_field),
		cmocka_unit_test(test_unpacked_and_mixed),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_last_wins_and_merge),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_packed_ids_scan),
		cmocka_unit_test(test_packed_ids_longest),
		cmocka_unit_test(test_sample_shapes),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_shared_budget),
		cmocka_unit_test(test_prefixes_and_mutations_agree),
	};

	return cmocka_run_group_tests_name("pprof_decode", tests, NULL, NULL);
}
