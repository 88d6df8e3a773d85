/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "format/speedscope.h"

static char *write_str(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct error err = ERROR_INIT;

	assert_int_equal(speedscope_write(p, f, &err), 0);
	fclose(f);
	return buf;
}

static void assert_contains(const char *s, const char *want)
{
	if (!strstr(s, want))
		fail_msg("output lacks '%s':\n%s", want, s);
}

static uint32_t named(struct profile *p, const char *name, const char *file, uint32_t line,
		      uint64_t addr)
{
	struct frame f = {0};

	f.name = profile_intern_str(p, name);
	f.file = profile_intern_str(p, file);
	f.line = line;
	f.addr = addr;
	return profile_intern_frame(p, &f);
}

static void add(struct profile *p, const uint32_t *frames, size_t n, int64_t a, int64_t b)
{
	int64_t v[2] = {a, b};

	assert_int_equal(profile_add_sample(p, profile_stack(p, frames, n), 0, v), 0);
}

static void test_one_profile_per_type(void **state)
{
	struct profile *p = profile_new();
	uint32_t f[3];
	char *out;

	(void)state;
	profile_add_type(p, "cpu", "nanoseconds");
	profile_add_type(p, "alloc_space", "bytes");
	p->default_type = 1;
	f[0] = named(p, "main", "main.c", 3, 0);
	f[1] = named(p, "work", "work.c", 9, 0);
	f[2] = named(p, "leaf", "", 0, 0);
	add(p, f, 3, 70, 0);
	add(p, f, 2, 30, 4096);
	out = write_str(p);
	assert_contains(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"");
	assert_contains(out, "\"shared\":{\"frames\":[\n{\"name\":\"main\",\"file\":\"main.c\","
			     "\"line\":3},\n{\"name\":\"work\",\"file\":\"work.c\",\"line\":9},\n"
			     "{\"name\":\"leaf\"}]}");
	assert_contains(out,
			"{\"type\":\"sampled\",\"name\":\"cpu\",\"unit\":\"nanoseconds\","
			"\"startValue\":0,\"endValue\":100,\n\"samples\":[\n[0,1,2],\n[0,1]],\n"
			"\"weights\":[70,30]}");
	/* The zero-weight sample is left out of alloc_space. */
	assert_contains(out, "{\"type\":\"sampled\",\"name\":\"alloc_space\",\"unit\":\"bytes\","
			     "\"startValue\":0,\"endValue\":4096,\n\"samples\":[\n[0,1]],\n"
			     "\"weights\":[4096]}");
	assert_contains(out, "\"activeProfileIndex\":1,\"exporter\":\"plateau 0.1.0\"}\n");
	free(out);
	profile_free(p);
}

static void test_units(void **state)
{
	static const char *const map[][2] = {
		{"nanoseconds", "nanoseconds"},
		{"microseconds", "microseconds"},
		{"milliseconds", "milliseconds"},
		{"seconds", "seconds"},
		{"bytes", "bytes"},
		{"count", "none"},
		{"samples", "none"},
		{"", "none"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		struct profile *p = profile_new();
		char want[128], *out;

		profile_add_type(p, "t", map[i][0]);
		out = write_str(p);
		snprintf(want, sizeof(want), "\"unit\":\"%s\"", map[i][1]);
		assert_contains(out, want);
		free(out);
		profile_free(p);
	}
}

/* Frames differing only in address or line are one speedscope frame; the line is dropped. */
static void test_frames_keyed_by_function(void **state)
{
	struct profile *p = profile_new();
	uint32_t a[2], b[2];
	char *out;

	(void)state;
	profile_add_type(p, "samples", "count");
	profile_add_type(p, "other", "count");
	a[0] = named(p, "main", "m.c", 1, 0x10);
	a[1] = named(p, "f", "m.c", 5, 0x20);
	b[0] = named(p, "main", "m.c", 2, 0x11);
	b[1] = named(p, "f", "m.c", 5, 0x28);
	add(p, a, 2, 1, 1);
	add(p, b, 2, 2, 1);
	out = write_str(p);
	assert_contains(out, "\"frames\":[\n{\"name\":\"main\",\"file\":\"m.c\"},\n"
			     "{\"name\":\"f\",\"file\":\"m.c\",\"line\":5}]}");
	assert_contains(out, "\"samples\":[\n[0,1],\n[0,1]],\n\"weights\":[1,2]}");
	free(out);
	profile_free(p);
}

static void test_names_escaped_and_utf8(void **state)
{
	struct profile *p = profile_new();
	uint32_t f[3];
	char *out;

	(void)state;
	profile_add_type(p, "samples", "count");
	f[0] = named(p, "say \"hi\"\\\n", "", 0, 0);
	f[1] = named(p, "bad\xff\xfe utf8", "", 0, 0);
	f[2] = named(p, "caf\xc3\xa9", "", 0, 0);
	add(p, f, 3, 5, 0);
	out = write_str(p);
	assert_contains(out, "{\"name\":\"say \\\"hi\\\"\\\\\\n\"}");
	assert_contains(out, "{\"name\":\"bad\\ufffd\\ufffd utf8\"}");
	assert_contains(out, "{\"name\":\"caf\xc3\xa9\"}");
	free(out);
	profile_free(p);
}

static void test_decimals_and_module_as_file(void **state)
{
	struct profile *p = profile_new();
	struct frame fr = {0};
	uint32_t f;
	int64_t v = 15;
	char *out;

	(void)state;
	profile_add_type(p, "samples", "count");
	p->types[0].decimals = 1;
	fr.name = profile_intern_str(p, "x");
	fr.module = profile_intern_str(p, "/lib/libx.so");
	f = profile_intern_frame(p, &fr);
	assert_int_equal(profile_add_sample(p, profile_stack(p, &f, 1), 0, &v), 0);
	out = write_str(p);
	assert_contains(out, "{\"name\":\"x\",\"file\":\"/lib/libx.so\"}");
	assert_contains(out, "\"endValue\":1.5,");
	assert_contains(out, "\"weights\":[1.5]}");
	free(out);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_profile_per_type),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_frames_keyed_by_function),
		cmocka_unit_test(test_names_escaped_and_utf8),
		cmocka_unit_test(test_decimals_and_module_as_file),
	};

	return cmocka_run_group_tests_name("speedscope", tests, NULL, NULL);
}
