/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "format/pprof.h"
#include "profile.pb-c.h"

/*
 * A test builder for pprof messages: fixed-capacity arrays, every
 * allocation remembered and freed by tb_free().
 */
#define CAP 64

struct tb {
	Perftools__Profiles__Profile p;
	void *mem[1024];
	size_t nmem;
};

static void *tb_alloc(struct tb *b, size_t n)
{
	void *m = xcalloc(1, n);

	assert_true(b->nmem < ARRAY_SIZE(b->mem));
	b->mem[b->nmem++] = m;
	return m;
}

static void tb_init(struct tb *b)
{
	memset(b, 0, sizeof(*b));
	perftools__profiles__profile__init(&b->p);
	b->p.string_table = tb_alloc(b, CAP * sizeof(char *));
	b->p.sample_type = tb_alloc(b, CAP * sizeof(void *));
	b->p.sample = tb_alloc(b, CAP * sizeof(void *));
	b->p.mapping = tb_alloc(b, CAP * sizeof(void *));
	b->p.location = tb_alloc(b, CAP * sizeof(void *));
	b->p.function = tb_alloc(b, CAP * sizeof(void *));
	b->p.comment = tb_alloc(b, CAP * sizeof(int64_t));
	b->p.string_table[b->p.n_string_table++] = (char *)"";
}

static void tb_free(struct tb *b)
{
	for (size_t i = 0; i < b->nmem; i++)
		free(b->mem[i]);
}

static int64_t tb_str(struct tb *b, const char *s)
{
	for (size_t i = 0; i < b->p.n_string_table; i++) {
		if (!strcmp(b->p.string_table[i], s))
			return (int64_t)i;
	}
	assert_true(b->p.n_string_table < CAP);
	b->p.string_table[b->p.n_string_table] = (char *)s;
	return (int64_t)b->p.n_string_table++;
}

static void tb_type(struct tb *b, const char *type, const char *unit)
{
	Perftools__Profiles__ValueType *t = tb_alloc(b, sizeof(*t));

	perftools__profiles__value_type__init(t);
	t->type = tb_str(b, type);
	t->unit = tb_str(b, unit);
	b->p.sample_type[b->p.n_sample_type++] = t;
}

static Perftools__Profiles__Mapping *tb_mapping(struct tb *b, uint64_t id, uint64_t start,
						uint64_t offset, const char *file)
{
	Perftools__Profiles__Mapping *m = tb_alloc(b, sizeof(*m));

	perftools__profiles__mapping__init(m);
	m->id = id;
	m->memory_start = start;
	m->memory_limit = start + 0x100000;
	m->file_offset = offset;
	m->filename = tb_str(b, file);
	b->p.mapping[b->p.n_mapping++] = m;
	return m;
}

static Perftools__Profiles__Function *tb_function(struct tb *b, uint64_t id, const char *name,
						  const char *file)
{
	Perftools__Profiles__Function *f = tb_alloc(b, sizeof(*f));

	perftools__profiles__function__init(f);
	f->id = id;
	f->name = tb_str(b, name);
	f->system_name = f->name;
	f->filename = tb_str(b, file);
	b->p.function[b->p.n_function++] = f;
	return f;
}

/* A location with n lines given as (function id, line) pairs, innermost first. */
static Perftools__Profiles__Location *tb_location(struct tb *b, uint64_t id, uint64_t mapping,
						  uint64_t addr, size_t n, ...)
{
	Perftools__Profiles__Location *l = tb_alloc(b, sizeof(*l));
	va_list ap;

	perftools__profiles__location__init(l);
	l->id = id;
	l->mapping_id = mapping;
	l->address = addr;
	l->n_line = n;
	l->line = tb_alloc(b, (n + 1) * sizeof(void *));
	va_start(ap, n);
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Line *ln = tb_alloc(b, sizeof(*ln));

		perftools__profiles__line__init(ln);
		ln->function_id = va_arg(ap, uint64_t);
		ln->line = va_arg(ap, int64_t);
		l->line[i] = ln;
	}
	va_end(ap);
	b->p.location[b->p.n_location++] = l;
	return l;
}

/* A sample: nloc location ids (leaf first), then one value per sample type. */
static Perftools__Profiles__Sample *tb_sample(struct tb *b, size_t nloc, ...)
{
	Perftools__Profiles__Sample *s = tb_alloc(b, sizeof(*s));
	va_list ap;

	perftools__profiles__sample__init(s);
	s->n_location_id = nloc;
	s->location_id = tb_alloc(b, (nloc + 1) * sizeof(uint64_t));
	s->n_value = b->p.n_sample_type;
	s->value = tb_alloc(b, (s->n_value + 1) * sizeof(int64_t));
	s->label = tb_alloc(b, 8 * sizeof(void *));
	va_start(ap, nloc);
	for (size_t i = 0; i < nloc; i++)
		s->location_id[i] = va_arg(ap, uint64_t);
	for (size_t i = 0; i < s->n_value; i++)
		s->value[i] = va_arg(ap, int64_t);
	va_end(ap);
	b->p.sample[b->p.n_sample++] = s;
	return s;
}

static void tb_label(struct tb *b, Perftools__Profiles__Sample *s, const char *key, const char *str,
		     int64_t num, const char *unit)
{
	Perftools__Profiles__Label *l = tb_alloc(b, sizeof(*l));

	perftools__profiles__label__init(l);
	l->key = tb_str(b, key);
	l->str = str ? tb_str(b, str) : 0;
	l->num = num;
	l->num_unit = unit ? tb_str(b, unit) : 0;
	s->label[s->n_label++] = l;
}

static const struct read_options *read_opts; /* what read_bytes passes; NULL mostly */

static struct profile *read_bytes(const void *data, size_t len, struct error *err)
{
	struct input in;
	struct profile *p = NULL;

	assert_int_equal(input_from_buf(&in, "x.pb.gz", data, len, 1 << 24, err), 0);
	if (pprof_read(&in, read_opts, &p, err))
		assert_null(p);
	input_close(&in);
	return p;
}

static struct profile *tb_read(struct tb *b, struct error *err)
{
	size_t len = perftools__profiles__profile__get_packed_size(&b->p);
	uint8_t *buf = xmalloc(len + 1);
	struct profile *p;

	perftools__profiles__profile__pack(&b->p, buf);
	*err = (struct error)ERROR_INIT;
	p = read_bytes(buf, len, err);
	free(buf);
	return p;
}

/* A sample's stack as "name[:line][+flags];..." root first (i inlined, k kernel, u unsymbolized). */
static char *stack_str(const struct profile *p, uint32_t sample)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t *buf = NULL;
	size_t alloc = 0, n = profile_node_stack(p, p->samples[sample].node, &buf, &alloc);

	for (size_t i = 0; i < n; i++) {
		const struct frame *f = &p->frames[buf[i]];

		strbuf_addstr(&sb, i ? ";" : "");
		strbuf_addstr(&sb, profile_str(p, f->name));
		if (f->line)
			strbuf_addf(&sb, ":%u", f->line);
		if (f->flags & FRAME_INLINED)
			strbuf_addstr(&sb, "+i");
		if (f->flags & FRAME_KERNEL)
			strbuf_addstr(&sb, "+k");
		if (f->flags & FRAME_UNSYMBOLIZED)
			strbuf_addstr(&sb, "+u");
	}
	free(buf);
	return strbuf_detach(&sb, NULL);
}

static void assert_stack(const struct profile *p, uint32_t sample, const char *want)
{
	char *s = stack_str(p, sample);

	assert_string_equal(s, want);
	free(s);
}

/* main -> work (inlining helper, inlining leaf) -> sample; a second sample in main. */
static void build_inline(struct tb *b)
{
	tb_init(b);
	tb_type(b, "samples", "count");
	tb_type(b, "cpu", "nanoseconds");
	tb_mapping(b, 1, 0x400000, 0, "/usr/bin/app");
	tb_function(b, 1, "main", "main.c");
	tb_function(b, 2, "work", "work.c");
	tb_function(b, 3, "helper", "work.c");
	tb_function(b, 4, "leaf", "leaf.h");
	tb_location(b, 10, 1, 0x401000, 1, (uint64_t)1, (int64_t)7);
	tb_location(b, 20, 1, 0x402000, 3, (uint64_t)4, (int64_t)3, (uint64_t)3, (int64_t)12,
		    (uint64_t)2, (int64_t)30);
	tb_sample(b, 2, (uint64_t)20, (uint64_t)10, (int64_t)3, (int64_t)30000000);
	tb_sample(b, 1, (uint64_t)10, (int64_t)1, (int64_t)10000000);
}

static void test_inline_lines_become_frames_root_first(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;
	const struct frame *f;
	uint32_t *buf = NULL;
	size_t alloc = 0;

	(void)state;
	build_inline(&b);
	p = tb_read(&b, &err);
	assert_non_null(p);
	assert_int_equal(p->nr_types, 2);
	assert_int_equal(p->nr_samples, 2);
	assert_stack(p, 0, "main:7;work:30;helper:12+i;leaf:3+i");
	assert_stack(p, 1, "main:7");
	assert_int_equal(profile_sample_values(p, 0)[0], 3);
	assert_int_equal(profile_sample_values(p, 0)[1], 30000000);
	assert_int_equal(profile_node_stack(p, p->samples[0].node, &buf, &alloc), 4);
	f = &p->frames[buf[3]];
	assert_string_equal(profile_str(p, f->file), "leaf.h");
	assert_string_equal(profile_str(p, f->module), "/usr/bin/app");
	assert_int_equal(f->addr, 0x402000);
	f = &p->frames[buf[1]];
	assert_int_equal(f->addr, 0x402000);
	assert_string_equal(profile_str(p, f->file), "work.c");
	free(buf);
	profile_free(p);
	tb_free(&b);
}

static void test_labels_kept(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;
	const struct label *l;
	size_t n;

	(void)state;
	build_inline(&b);
	tb_label(&b, b.p.sample[0], "endpoint", "/checkout", 0, NULL);
	tb_label(&b, b.p.sample[0], "bytes", NULL, 4096, "bytes");
	p = tb_read(&b, &err);
	assert_non_null(p);
	l = profile_labels(p, p->samples[0].labels, &n);
	assert_int_equal(n, 2);
	/* Sorted by key id: "endpoint" was interned first. */
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(profile_str(p, l[i].key), "endpoint")) {
			assert_string_equal(profile_str(p, l[i].str), "/checkout");
		} else {
			assert_string_equal(profile_str(p, l[i].key), "bytes");
			assert_int_equal(l[i].str, 0);
			assert_int_equal(l[i].num, 4096);
			assert_string_equal(profile_str(p, l[i].unit), "bytes");
		}
	}
	assert_int_equal(p->samples[1].labels, 0);
	profile_free(p);
	tb_free(&b);
}

static void test_default_sample_type(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;

	(void)state;
	/* Unset: the last type, as go tool pprof does. */
	build_inline(&b);
	p = tb_read(&b, &err);
	assert_int_equal(p->default_type, 1);
	profile_free(p);
	/* Named. */
	b.p.default_sample_type = tb_str(&b, "samples");
	p = tb_read(&b, &err);
	assert_int_equal(p->default_type, 0);
	profile_free(p);
	/* Naming no type: the last again. */
	b.p.default_sample_type = tb_str(&b, "main");
	p = tb_read(&b, &err);
	assert_int_equal(p->default_type, 1);
	profile_free(p);
	tb_free(&b);
}

static void test_header_fields(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;
	Perftools__Profiles__ValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

	(void)state;
	build_inline(&b);
	pt.type = tb_str(&b, "cpu");
	pt.unit = tb_str(&b, "nanoseconds");
	b.p.period_type = &pt;
	b.p.period = 10000000;
	b.p.time_nanos = 1700000000000000000;
	b.p.duration_nanos = 2500000000;
	b.p.comment[b.p.n_comment++] = tb_str(&b, "recorded by a test");
	p = tb_read(&b, &err);
	assert_non_null(p);
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->time_nanos, 1700000000000000000);
	assert_int_equal(p->duration_nanos, 2500000000);
	assert_string_equal(profile_str(p, p->period_type.type), "cpu");
	assert_string_equal(profile_str(p, p->period_type.unit), "nanoseconds");
	assert_int_equal(p->nr_comments, 1);
	assert_string_equal(profile_str(p, p->comments[0]), "recorded by a test");
	assert_string_equal(profile_str(p, p->types[1].type), "cpu");
	assert_string_equal(profile_str(p, p->types[1].unit), "nanoseconds");
	profile_free(p);
	tb_free(&b);
}

static void test_unsymbolized_and_modules(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;
	Perftools__Profiles__Function *f;
	Perftools__Profiles__Mapping *m;

	(void)state;
	tb_init(&b);
	tb_type(&b, "samples", "count");
	tb_mapping(&b, 1, 0x400000, 0x1000, "/usr/lib/libfoo.so");
	tb_mapping(&b, 2, 0xffffffff81000000, 0, "[kernel.kallsyms]");
	m = tb_mapping(&b, 3, 0x7f0000000000, 0, "");
	m->build_id = tb_str(&b, "abcdef0123");
	tb_mapping(&b, 4, 0x10000, 0, "/tmp/perf-42.map");
	f = tb_function(&b, 1, "", "");
	f->system_name = tb_str(&b, "_ZN3foo3barEv");
	tb_function(&b, 2, "do_syscall_64", "");
	tb_function(&b, 3, "jitted", "");
	tb_location(&b, 1, 1, 0x401234, 0);			     /* libfoo.so+0x2234 */
	tb_location(&b, 2, 0, 0xdead, 0);			     /* 0xdead */
	tb_location(&b, 3, 1, 0x400010, 1, (uint64_t)1, (int64_t)0); /* system_name */
	tb_location(&b, 4, 2, 0xffffffff81001000, 1, (uint64_t)2, (int64_t)0);
	tb_location(&b, 5, 3, 0x7f0000000100, 1, (uint64_t)0, (int64_t)0); /* no function */
	tb_location(&b, 6, 4, 0x10010, 1, (uint64_t)3, (int64_t)0);
	tb_sample(&b, 3, (uint64_t)4, (uint64_t)1, (uint64_t)2, (int64_t)1);
	tb_sample(&b, 3, (uint64_t)6, (uint64_t)5, (uint64_t)3, (int64_t)2);
	p = tb_read(&b, &err);
	assert_non_null(p);
	assert_stack(p, 0, "0xdead+u;libfoo.so+0x2234+u;do_syscall_64+k");
	assert_stack(p, 1, "_ZN3foo3barEv;abcdef0123+0x100+u;jitted");
	{
		uint32_t *buf = NULL;
		size_t alloc = 0, n = profile_node_stack(p, p->samples[1].node, &buf, &alloc);

		assert_int_equal(n, 3);
		assert_string_equal(profile_str(p, p->frames[buf[1]].module), "abcdef0123");
		assert_true(p->frames[buf[2]].flags & FRAME_JIT);
		free(buf);
	}
	profile_free(p);
	tb_free(&b);
}

/* Each malformed message is refused with a one-line error naming the field. */
static void expect_error(struct tb *b, const char *want)
{
	struct error err;
	struct profile *p = tb_read(b, &err);

	assert_null(p);
	if (!strstr(err.msg, want))
		fail_msg("error '%s' does not contain '%s'", err.msg, want);
	assert_null(strchr(err.msg, '\n'));
	assert_int_equal(strncmp(err.msg, "x.pb.gz: ", 9), 0);
	tb_free(b);
}

static void test_string_errors(void **state)
{
	struct tb b;

	(void)state;
	build_inline(&b);
	b.p.n_string_table = 0;
	expect_error(&b, "x.pb.gz: not a pprof profile: empty string_table");
	build_inline(&b);
	b.p.string_table[0] = (char *)"x";
	expect_error(&b, "string_table[0] is not the empty string");
	build_inline(&b);
	b.p.function[1]->name = 500;
	expect_error(&b, "x.pb.gz: function 2: name index 500 out of range");
	build_inline(&b);
	b.p.function[1]->filename = -1;
	expect_error(&b, "function 2: filename index -1 out of range");
	build_inline(&b);
	b.p.function[0]->system_name = 99;
	expect_error(&b, "function 1: system_name index 99 out of range");
	build_inline(&b);
	b.p.mapping[0]->filename = 99;
	expect_error(&b, "mapping 1: filename index 99 out of range");
	build_inline(&b);
	b.p.mapping[0]->build_id = 99;
	expect_error(&b, "mapping 1: build_id index 99 out of range");
	build_inline(&b);
	b.p.sample_type[1]->unit = 77;
	expect_error(&b, "sample_type 1: unit index 77 out of range");
	build_inline(&b);
	b.p.sample_type[0]->type = 77;
	expect_error(&b, "sample_type 0: type index 77 out of range");
	build_inline(&b);
	b.p.default_sample_type = 1000;
	expect_error(&b, "default_sample_type index 1000 out of range");
	build_inline(&b);
	b.p.comment[b.p.n_comment++] = 1000;
	expect_error(&b, "comment 0: string index 1000 out of range");
	build_inline(&b);
	b.p.drop_frames = 1000;
	expect_error(&b, "drop_frames index 1000 out of range");
	build_inline(&b);
	tb_label(&b, b.p.sample[1], "k", "v", 0, NULL);
	b.p.sample[1]->label[0]->key = 1000;
	expect_error(&b, "sample 1: label key index 1000 out of range");
	build_inline(&b);
	tb_label(&b, b.p.sample[0], "k", "v", 0, NULL);
	b.p.sample[0]->label[0]->str = 1000;
	expect_error(&b, "sample 0: label str index 1000 out of range");
	build_inline(&b);
	tb_label(&b, b.p.sample[0], "k", NULL, 3, "bytes");
	b.p.sample[0]->label[0]->num_unit = -5;
	expect_error(&b, "sample 0: label num_unit index -5 out of range");
}

static void test_reference_errors(void **state)
{
	struct tb b;

	(void)state;
	build_inline(&b);
	b.p.sample[0]->location_id[1] = 99;
	expect_error(&b, "x.pb.gz: sample 0: location_id 99 not found");
	build_inline(&b);
	b.p.location[0]->mapping_id = 7;
	expect_error(&b, "location 10: mapping_id 7 not found");
	build_inline(&b);
	b.p.location[1]->line[1]->function_id = 42;
	expect_error(&b, "location 20: line 1: function_id 42 not found");
	build_inline(&b);
	b.p.location[1]->line[0]->line = -4;
	expect_error(&b, "location 20: line 0: line number -4 out of range");
	build_inline(&b);
	b.p.location[1]->line[0]->line = (int64_t)1 << 40;
	expect_error(&b, "line number 1099511627776 out of range");
}

static void test_id_errors(void **state)
{
	struct tb b;

	(void)state;
	build_inline(&b);
	b.p.function[2]->id = 0;
	expect_error(&b, "function[2]: id 0 is reserved");
	build_inline(&b);
	b.p.function[3]->id = 2;
	expect_error(&b, "function[3]: duplicate id 2");
	build_inline(&b);
	b.p.location[1]->id = 10;
	expect_error(&b, "location[1]: duplicate id 10");
	/* Large, sparse ids take the sorted path. */
	build_inline(&b);
	b.p.location[0]->id = 1ull << 60;
	b.p.location[1]->id = 1ull << 60;
	expect_error(&b, "location[1]: duplicate id 1152921504606846976");
	build_inline(&b);
	b.p.location[0]->id = 0;
	expect_error(&b, "location[0]: id 0 is reserved");
	build_inline(&b);
	tb_mapping(&b, 1, 0, 0, "/lib/b.so");
	expect_error(&b, "mapping[1]: duplicate id 1");
}

static void test_sparse_ids_resolve(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;

	(void)state;
	build_inline(&b);
	b.p.location[0]->id = 1ull << 40;
	b.p.sample[0]->location_id[1] = 1ull << 40;
	b.p.sample[1]->location_id[0] = 1ull << 40;
	b.p.function[3]->id = 123456789;
	b.p.location[1]->line[0]->function_id = 123456789;
	p = tb_read(&b, &err);
	assert_non_null(p);
	assert_stack(p, 0, "main:7;work:30;helper:12+i;leaf:3+i");
	profile_free(p);
	tb_free(&b);
}

static void test_sample_errors(void **state)
{
	struct tb b;

	(void)state;
	build_inline(&b);
	b.p.sample[1]->n_value = 1;
	expect_error(&b, "x.pb.gz: sample 1: 1 values for 2 sample types");
	build_inline(&b);
	b.p.sample[0]->value[1] = INT64_MAX;
	tb_sample(&b, 2, (uint64_t)20, (uint64_t)10, (int64_t)1, (int64_t)1);
	expect_error(&b, "x.pb.gz: sample 2: sum of values overflows 64 bits");
	/*
	 * Issue 14: with bounded_sum (plateau serve's pushes), two stacks
	 * that each fit, whose sum does not; sample 1 (another stack)
	 * passes the sum above already.
	 */
	read_opts = &(struct read_options){.bounded_sum = true};
	build_inline(&b);
	b.p.sample[0]->value[1] = INT64_MAX;
	tb_sample(&b, 2, (uint64_t)20, (uint64_t)10, (int64_t)1, (int64_t)1);
	expect_error(&b, "x.pb.gz: sample 1: sum of values overflows 64 bits");
	build_inline(&b);
	b.p.sample[0]->value[0] = INT64_MIN + 1;
	b.p.sample[1]->value[0] = -1;
	expect_error(&b, "x.pb.gz: sample 1: sum of values overflows 64 bits");
	read_opts = NULL;
	build_inline(&b);
	b.p.n_sample_type = 0;
	expect_error(&b, "x.pb.gz: no sample types");
	build_inline(&b);
	while (b.p.n_sample_type <= PPROF_MAX_TYPES)
		tb_type(&b, "more", "count");
	expect_error(&b, "x.pb.gz: 17 sample types (at most 16 supported)");
}

/* A location with n lines of function 1, and samples of nref references to it. */
static void build_deep(struct tb *b, size_t n, size_t nref, size_t nsamples)
{
	Perftools__Profiles__Location *l;
	Perftools__Profiles__Line *lines;

	tb_init(b);
	tb_type(b, "samples", "count");
	tb_function(b, 1, "f", "f.c");
	l = tb_location(b, 1, 0, 0, 0);
	lines = tb_alloc(b, n * sizeof(*lines));
	l->line = tb_alloc(b, n * sizeof(void *));
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = 1;
		l->line[i] = &lines[i];
	}
	l->n_line = n;
	/* Stacks of different depths: identical ones would share one walk. */
	for (size_t k = 0; k < nsamples; k++) {
		Perftools__Profiles__Sample *s = tb_sample(b, 0, (int64_t)1);

		s->location_id = tb_alloc(b, (nref - k) * sizeof(uint64_t));
		for (size_t i = 0; i < nref - k; i++)
			s->location_id[i] = 1;
		s->n_location_id = nref - k;
	}
}

static void test_stack_limits(void **state)
{
	struct tb b;
	struct error err;
	struct profile *p;

	(void)state;
	/* 1,000 inlined lines times 500 references: deep but allowed. */
	build_deep(&b, 1000, 500, 1);
	p = tb_read(&b, &err);
	assert_non_null(p);
	assert_int_equal(p->nr_nodes, 500001);
	profile_free(p);
	tb_free(&b);
	/* One stack over 2^20 frames. */
	build_deep(&b, 1000, 1100, 1);
	expect_error(&b, "x.pb.gz: sample 0: stack deeper than 1048576 frames");
	/* Small stacks, but too many frames in all for the input's size. */
	build_deep(&b, 1000, 900, 4);
	expect_error(&b, "x.pb.gz: sample 1: stacks expand to too many frames in total");
}

static void test_garbage_and_truncation(void **state)
{
	static const char garbage[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x02";
	static const char text[] = "main;work;leaf 12\nmain 3\n";
	struct error err = ERROR_INIT;
	struct tb b;
	size_t len;
	uint8_t *buf;

	(void)state;
	assert_null(read_bytes(garbage, sizeof(garbage) - 1, &err));
	assert_string_equal(err.msg,
			    "x.pb.gz: not a valid pprof profile: field key: varint longer than 10 "
			    "bytes (at byte 0)");
	err = (struct error)ERROR_INIT;
	assert_null(read_bytes(text, strlen(text), &err));
	assert_int_equal(strncmp(err.msg, "x.pb.gz: ", 9), 0);
	err = (struct error)ERROR_INIT;
	assert_null(read_bytes("", 0, &err));
	assert_non_null(strstr(err.msg, "empty string_table"));
	/* Every proper prefix of a valid message is refused or read, never a crash. */
	build_inline(&b);
	len = perftools__profiles__profile__get_packed_size(&b.p);
	buf = xmalloc(len);
	perftools__profiles__profile__pack(&b.p, buf);
	for (size_t cut = 0; cut < len; cut++) {
		struct profile *p;

		err = (struct error)ERROR_INIT;
		p = read_bytes(buf, cut, &err);
		assert_true(p || err.msg[0]);
		profile_free(p);
	}
	free(buf);
	tb_free(&b);
}

/* Binary that cannot start a protobuf is no format at all, not a broken pprof. */
static void test_detect_unrecognised_binary(void **state)
{
	static const char elf[] = "\x7f"
				  "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0";
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	struct error err = ERROR_INIT;
	struct profile *p = NULL;
	struct input in;
	struct tb b;
	size_t len;
	uint8_t *buf;

	(void)state;
	assert_int_equal(format_detect(elf, sizeof(elf) - 1), FMT_UNKNOWN);
	assert_int_equal(format_detect(png, sizeof(png) - 1), FMT_UNKNOWN);
	build_inline(&b);
	len = perftools__profiles__profile__get_packed_size(&b.p);
	buf = xmalloc(len);
	perftools__profiles__profile__pack(&b.p, buf);
	assert_int_equal(format_detect((const char *)buf, len), FMT_PPROF);
	assert_int_equal(input_from_buf(&in, "a.out", elf, sizeof(elf) - 1, 1 << 20, &err), 0);
	assert_int_equal(profile_read_input(&in, NULL, &p, &err), ERR_FORMAT);
	assert_string_equal(err.msg,
			    "a.out: unrecognised format (expected folded, perf script or pprof)");
	input_close(&in);
	free(buf);
	tb_free(&b);
}

/* Writing. */

static char *write_pprof(const struct profile *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct error err = ERROR_INIT;

	assert_int_equal(pprof_write(p, f, &err), 0);
	fclose(f);
	return buf;
}

static struct profile *round_trip(const struct profile *p)
{
	size_t len;
	char *buf = write_pprof(p, &len);
	struct error err = ERROR_INIT;
	struct profile *q;

	assert_true(input_is_gzip(buf, len));
	q = read_bytes(buf, len, &err);
	if (!q)
		fail_msg("%s", err.msg);
	free(buf);
	return q;
}

/* Decode what pprof_write wrote with protobuf-c directly. */
static Perftools__Profiles__Profile *decode(const struct profile *p)
{
	size_t len, raw_len;
	char *buf = write_pprof(p, &len), *raw;
	struct error err = ERROR_INIT;
	Perftools__Profiles__Profile *pb;

	assert_int_equal(input_gunzip("t", buf, len, 1 << 24, &raw, &raw_len, &err), 0);
	pb = perftools__profiles__profile__unpack(NULL, raw_len, (uint8_t *)raw);
	assert_non_null(pb);
	free(raw);
	free(buf);
	return pb;
}

static uint32_t frame(struct profile *p, const char *name, const char *module, uint32_t line,
		      uint64_t addr, uint32_t flags)
{
	struct frame f = {0};

	f.name = profile_intern_str(p, name);
	f.module = profile_intern_str(p, module);
	f.file = line ? profile_intern_str(p, "src.c") : 0;
	f.line = line;
	f.addr = addr;
	f.flags = flags;
	return profile_intern_frame(p, &f);
}

/* Two callers of work(), which inlines helper(); a kernel leaf; labels; decimals. */
static struct profile *build_profile(void)
{
	struct profile *p = profile_new();
	uint32_t st[6], n;
	struct label l[2];
	int64_t v[2];

	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_type(p, "weight", "count");
	p->default_type = 0;
	st[0] = frame(p, "main", "/bin/app", 10, 0x1000, 0);
	st[1] = frame(p, "a", "/bin/app", 20, 0x2000, 0);
	st[2] = frame(p, "work", "/bin/app", 30, 0x3000, 0);
	st[3] = frame(p, "helper", "/bin/app", 40, 0x3000, FRAME_INLINED);
	st[4] = frame(p, "sys_read", "", 0, 0xffff0000, FRAME_KERNEL);
	l[0] = (struct label){profile_intern_str(p, "thread"), profile_intern_str(p, "io"), 0, 0};
	l[1] = (struct label){profile_intern_str(p, "size"), 0, -512,
			      profile_intern_str(p, "bytes")};
	n = profile_stack(p, st, 5);
	v[0] = 100;
	v[1] = 15; /* 1.5 with one decimal */
	assert_int_equal(profile_add_sample(p, n, profile_intern_labels(p, l, 2), v), 0);
	st[1] = frame(p, "b", "/bin/app", 21, 0x2100, 0);
	n = profile_stack(p, st, 4);
	v[0] = 50;
	v[1] = 5;
	assert_int_equal(profile_add_sample(p, n, 0, v), 0);
	p->types[1].decimals = 1;
	p->period_type = p->types[0];
	p->period = 1000;
	p->time_nanos = 42;
	p->duration_nanos = 7;
	ALLOC_GROW(p->comments, 1, p->alloc_comments);
	p->comments[p->nr_comments++] = profile_intern_str(p, "hello");
	l[0] = (struct label){profile_intern_str(p, "host"), profile_intern_str(p, "h1"), 0, 0};
	p->profile_labels = profile_intern_labels(p, l, 1);
	return p;
}

static const char *label_str(const struct profile *p, uint32_t set, const char *key)
{
	size_t n;
	const struct label *l = profile_labels(p, set, &n);

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(profile_str(p, l[i].key), key))
			return l[i].str ? profile_str(p, l[i].str) : "(num)";
	}
	return NULL;
}

static void test_write_round_trip(void **state)
{
	struct profile *p = build_profile(), *q;
	char v[64];

	(void)state;
	q = round_trip(p);
	assert_int_equal(q->nr_types, 2);
	assert_string_equal(profile_str(q, q->types[1].type), "weight");
	assert_int_equal(q->types[1].decimals, 1);
	assert_int_equal(q->default_type, 0);
	assert_int_equal(q->period, 1000);
	assert_int_equal(q->time_nanos, 42);
	assert_int_equal(q->duration_nanos, 7);
	assert_string_equal(profile_str(q, q->period_type.type), "cpu");
	assert_int_equal(q->nr_comments, 1);
	assert_string_equal(profile_str(q, q->comments[0]), "hello");
	assert_int_equal(q->nr_samples, 2);
	assert_stack(q, 0, "main:10;a:20;work:30;helper:40+i;sys_read+k");
	assert_stack(q, 1, "main:10;b:21;work:30;helper:40+i");
	profile_format_value(q, 1, profile_sample_values(q, 0)[1], v, sizeof(v));
	assert_string_equal(v, "1.5");
	assert_int_equal(profile_sample_values(q, 1)[0], 50);
	assert_string_equal(label_str(q, q->samples[0].labels, "thread"), "io");
	assert_string_equal(label_str(q, q->samples[0].labels, "size"), "(num)");
	/* Profile labels travel on every sample. */
	assert_string_equal(label_str(q, q->samples[0].labels, "host"), "h1");
	assert_string_equal(label_str(q, q->samples[1].labels, "host"), "h1");
	{
		uint32_t *buf = NULL;
		size_t alloc = 0, n = profile_node_stack(q, q->samples[0].node, &buf, &alloc);
		const struct frame *k = &q->frames[buf[n - 1]];
		size_t nl;
		const struct label *l = profile_labels(q, q->samples[0].labels, &nl);

		assert_string_equal(profile_str(q, k->module), "[kernel.kallsyms]");
		assert_int_equal(k->addr, 0xffff0000);
		assert_int_equal(q->frames[buf[3]].addr, 0x3000);
		for (size_t i = 0; i < nl; i++) {
			if (!l[i].str) {
				assert_int_equal(l[i].num, -512);
				assert_string_equal(profile_str(q, l[i].unit), "bytes");
			}
		}
		free(buf);
	}
	profile_free(q);
	profile_free(p);
}

static void test_write_structure(void **state)
{
	struct profile *p = build_profile();
	Perftools__Profiles__Profile *pb = decode(p);
	size_t with_two_lines = 0;
	uint64_t kernel_map = 0;

	(void)state;
	assert_string_equal(pb->string_table[0], "");
	assert_int_equal(pb->n_sample_type, 2);
	assert_string_equal(pb->string_table[pb->default_sample_type], "cpu");
	/* main, a, b, work+helper (shared by both stacks), sys_read. */
	assert_int_equal(pb->n_location, 5);
	for (size_t i = 0; i < pb->n_location; i++) {
		if (pb->location[i]->n_line == 2) {
			with_two_lines++;
			/* Innermost first. */
			assert_int_equal(pb->location[i]->line[0]->line, 40);
			assert_int_equal(pb->location[i]->line[1]->line, 30);
			assert_int_equal(pb->location[i]->address, 0x3000);
		}
	}
	assert_int_equal(with_two_lines, 1);
	assert_int_equal(pb->n_function, 6);
	assert_int_equal(pb->n_mapping, 2);
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const char *name = pb->string_table[pb->mapping[i]->filename];

		if (!strcmp(name, "[kernel.kallsyms]")) {
			kernel_map = pb->mapping[i]->id;
		} else {
			assert_string_equal(name, "/bin/app");
			assert_true(pb->mapping[i]->has_inline_frames);
			assert_true(pb->mapping[i]->has_functions);
		}
	}
	assert_int_not_equal(kernel_map, 0);
	/* Location ids leaf first: the kernel frame comes first. */
	assert_int_equal(pb->sample[0]->n_location_id, 4);
	for (size_t i = 0; i < pb->n_location; i++) {
		if (pb->location[i]->id == pb->sample[0]->location_id[0])
			assert_int_equal(pb->location[i]->mapping_id, kernel_map);
	}
	protobuf_c_message_free_unpacked(&pb->base, NULL);
	profile_free(p);
}

static void test_write_empty_and_root_samples(void **state)
{
	struct profile *p = profile_new(), *q;
	int64_t v = 4;

	(void)state;
	profile_add_type(p, "samples", "count");
	q = round_trip(p);
	assert_int_equal(q->nr_samples, 0);
	assert_int_equal(q->nr_types, 1);
	profile_free(q);
	assert_int_equal(profile_add_sample(p, 0, 0, &v), 0);
	q = round_trip(p);
	assert_int_equal(q->nr_samples, 1);
	assert_int_equal(q->samples[0].node, 0);
	assert_int_equal(profile_sample_values(q, 0)[0], 4);
	profile_free(q);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_lines_become_frames_root_first),
		cmocka_unit_test(test_labels_kept),
		cmocka_unit_test(test_default_sample_type),
		cmocka_unit_test(test_header_fields),
		cmocka_unit_test(test_unsymbolized_and_modules),
		cmocka_unit_test(test_string_errors),
		cmocka_unit_test(test_reference_errors),
		cmocka_unit_test(test_id_errors),
		cmocka_unit_test(test_sparse_ids_resolve),
		cmocka_unit_test(test_sample_errors),
		cmocka_unit_test(test_stack_limits),
		cmocka_unit_test(test_garbage_and_truncation),
		cmocka_unit_test(test_detect_unrecognised_binary),
		cmocka_unit_test(test_write_round_trip),
		cmocka_unit_test(test_write_structure),
		cmocka_unit_test(test_write_empty_and_root_samples),
	};

	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
