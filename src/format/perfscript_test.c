/* SPDX-License-Identifier: MIT */
/*
 * stackcollapse-perf.pl emulation.  Every expected output here was
 * produced by the Perl script itself on the same input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "format/perfscript.h"

#define S(lit) lit, sizeof(lit) - 1

static bool span_is(const char *p, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(p, want, len);
}

struct warnings {
	struct strbuf all;
	int n;
};

static void collect_warning(void *arg, const char *msg)
{
	struct warnings *w = arg;

	strbuf_addstr(&w->all, msg);
	strbuf_addch(&w->all, '\n');
	w->n++;
}

/* Collapse texts (one input each, as one stream) and return the folded output. */
static char *collapse_n(const char *const *texts, int n, const struct collapse_options *o,
			int threads, struct warnings *w)
{
	struct perfscript_collapse *c = perfscript_collapse_new(o, w ? collect_warning : NULL, w);
	struct error err = ERROR_INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	perfscript_collapse_set_threads(c, threads);
	for (int i = 0; i < n; i++) {
		struct input in;

		assert_int_equal(
			input_from_buf(&in, "t", texts[i], strlen(texts[i]), 1 << 24, &err), 0);
		assert_int_equal(perfscript_collapse_add(c, &in, &err), 0);
		input_close(&in);
	}
	f = open_memstream(&buf, &len);
	assert_int_equal(perfscript_collapse_write(c, f, &err), 0);
	fclose(f);
	perfscript_collapse_free(c);
	return buf;
}

static char *collapse(const char *text, const struct collapse_options *o)
{
	return collapse_n(&text, 1, o, 1, NULL);
}

static void assert_collapse(const char *text, const struct collapse_options *o, const char *want)
{
	char *out = collapse(text, o);

	assert_string_equal(out, want);
	free(out);
}

static void test_header_regex(void **state)
{
	static const struct {
		const char *line, *comm, *pid, *tid;
	} ok[] = {
		/* The comm is the shortest prefix (of two bytes or more) before "\s+\d+". */
		{"mt_burn  5597 [000]   534.325846:    1001001 cpu-clock:ppp: ", "mt_burn", "5597",
		 ""},
		{"V8 WorkerThread 25607 4794564.109216: 104345 cycles:", "V8 WorkerThread", "25607",
		 ""},
		{"x 1 y 22  2668 [000] 1.0: 1 cpu-clock:", "x 1 y", "22", ""},
		{"worker 2  2665 [001] 1.0: 1 cpu-clock:", "worker", "2", ""},
		/* One-byte comms take the next byte, then whatever comes before digits. */
		{"a  3244   223.126491:    1001001 cpu-clock:ppp: ", "a ", "3244", ""},
		{"b 32440   223.126500:    1001001 cpu-clock:ppp: ", "b 32440   223.126500:",
		 "1001001", ""},
		{"java 24636/25607 [000] 1.0: 1 cycles:", "java", "24636", "25607"},
		{"swapper     0/0     [001] 1.0: 1 cpu-clock:", "swapper", "0", "0"},
		{"comm 123// x", "comm", "123", ""},
		{"comm 123//456\tx", "comm", "123", "456"},
		{"comm\v7\fx", "comm", "7", ""},
		{"Processed 1234 events and lost 5 chunks!", "Processed", "1234", ""},
	};
	static const char *const bad[] = {
		"",
		"ab",
		"a 1",		/* nothing after the digits */
		"comm 123",	/* \s+ needed after the number */
		"comm 12a x",	/* digits must end in whitespace */
		"\tcomm 1 x",	/* \S first */
		"comm 1/2/3 x", /* [/]*(\d+)* then \s+ */
		("comm \xa0"
		 "1 x"), /* no-break space is not \s */
		"comm 123:456 x",
	};
	struct perfscript_header h;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_true(perfscript_match_header(ok[i].line, strlen(ok[i].line), &h));
		assert_true(span_is(h.comm, h.comm_len, ok[i].comm));
		assert_true(span_is(h.pid, h.pid_len, ok[i].pid));
		assert_true(span_is(h.tid, h.tid_len, ok[i].tid));
		assert_true(perfscript_is_header(ok[i].line, strlen(ok[i].line)));
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(perfscript_match_header(bad[i], strlen(bad[i]), &h));
}

static void test_event_regex(void **state)
{
	static const struct {
		const char *line, *period, *event;
	} ok[] = {
		{"mt 1 [000] 534.3:    1001001 cpu-clock:ppp: ", "1001001", "cpu-clock:ppp"},
		{"mt 1 [000] 534.3: cpu-clock:ppp: ", "", "cpu-clock:ppp"},
		{"mt 1 534.3:0 cycles:u:\t", "0", "cycles:u"},
		{"x: 5 ev:", "5", "ev"},
		{"a:  b:  ", "", "b"},
		{"a 1 1.0: 12 sched:sched_switch:", "12", "sched:sched_switch"},
	};
	static const char *const bad[] = {
		/* No ':' before the period: a header without a time field. */
		"app  1000/1000 [000]    5005005 cpu-clock:ppp: ",
		/* Tracepoints and uprobes print text after the event. */
		"app 1 [000] 1.0: sched:sched_switch: prev_comm=app prev_pid=1",
		"app 1 [000] 1.0: 1 probe_app:hot_func: (55d2e0c1d139)",
		"x:ev:",      /* the event token must follow whitespace */
		"a: :",	      /* and have a byte before its ':' */
		"a: 1 2 ev:", /* one run of digits at most */
		"a 1.0: 5 ev",
	};
	struct perfscript_event e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_true(perfscript_match_event(ok[i].line, strlen(ok[i].line), &e));
		assert_true(span_is(e.period, e.period_len, ok[i].period));
		assert_true(span_is(e.event, e.event_len, ok[i].event));
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(perfscript_match_event(bad[i], strlen(bad[i]), &e));
}

static void test_frame_regex(void **state)
{
	static const struct {
		const char *line, *pc, *func, *dso;
	} ok[] = {
		{"\t    55d4c3a1b2c3 main+0x12 (/usr/bin/app)", "55d4c3a1b2c3", "main+0x12",
		 "/usr/bin/app"},
		{"\t 7f0 [unknown] ([unknown])", "7f0", "[unknown]", "[unknown]"},
		/* (.+) is greedy: the last " (" with a ')' after it starts the dso. */
		{"\t 1 helper (/opt/lib/libx.so (deleted))", "1", "helper (/opt/lib/libx.so",
		 "deleted)"},
		{"\t 1 op() const (/x) tail)", "1", "op() const", "/x) tail"},
		{"x (y (z)", "x", "(y", "z"},
		{"deadbeef col0_frame+0x1 (/opt/app/bin/app)", "deadbeef", "col0_frame+0x1",
		 "/opt/app/bin/app"},
		/* Backtracking: (.+) needs a byte, taken from \s* and then from (\w+). */
		{"  abc  (x)", "abc", " ", "x"},
		{"ab (c)", "a", "b", "c"},
		{"\t a  (x)", "a", " ", "x"},
	};
	static const char *const bad[] = {
		"\t    7f1234", "  demo.c:42", "   ", "\t +x (y)", /* \w first */
		"\t a(b)",					   /* no " (" */
		"\t a (b",					   /* no ')' */
		"\t ab (",	"a (b)",			   /* (.+) cannot be empty */
	};
	struct perfscript_frame f;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_true(perfscript_match_frame(ok[i].line, strlen(ok[i].line), &f));
		assert_true(span_is(f.pc, f.pc_len, ok[i].pc));
		assert_true(span_is(f.func, f.func_len, ok[i].func));
		assert_true(span_is(f.dso, f.dso_len, ok[i].dso));
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(perfscript_match_frame(bad[i], strlen(bad[i]), &f));
}

static const char comms[] =
	"a  3244   1.0:    10 cpu-clock: \n\t 11 main+0x19 (/bin/app)\n\n"
	"b 32440   1.5:    20 cpu-clock: \n\t 11 main+0x19 (/bin/app)\n\n"
	"x 1 y 22  2668 [000]   1.6:    30 cpu-clock: \n\t 11 f (/bin/app)\n\n"
	"V8 WorkerThread 24636/25607 [000] 1.7: 40 cpu-clock:\n\t 11 g (/bin/app)\n\n"
	"swapper     0/0     [001] 1.8:    50 cpu-clock: \n\t 11 h ([kernel.kallsyms])\n\n";

static void test_comms(void **state)
{
	struct collapse_options pid = {.pid = true}, tid = {.tid = true, .pid = true};

	(void)state;
	assert_collapse(comms, NULL,
			"V8_WorkerThread;g 40\na_;main 10\nb_32440___1.5:;main 20\nswapper;h 50\n"
			"x_1_y;f 30\n");
	assert_collapse(comms, &pid,
			"V8_WorkerThread-24636;g 40\na_-?;main 10\nb_32440___1.5:-?;main 20\n"
			"swapper-?;h 50\nx_1_y-?;f 30\n");
	assert_collapse(comms, &tid,
			"V8_WorkerThread-24636/25607;g 40\na_-?/3244;main 10\n"
			"b_32440___1.5:-?/20;main 20\nswapper-?/0;h 50\nx_1_y-?/22;f 30\n");
}

static void test_periods(void **state)
{
	(void)state;
	assert_collapse("app 1 1.0: 0 cpu-clock:\n\t 1 zero (/x)\n\n"
			"app 1 1.0: 00 cpu-clock:\n\t 1 dzero (/x)\n\n"
			"app 1 1.0: cpu-clock:\n\t 1 none (/x)\n\n"
			"app 1 1.0: 18446744073709551615 cpu-clock:\n\t 1 big (/x)\n\n"
			"app 1 1.0: 1 cpu-clock:\n\t 1 big (/x)\n\n"
			"app 1 1.0: 99999999999999999999999 cpu-clock:\n\t 1 huge (/x)\n\n"
			"app 1 1.0: 007 cpu-clock:\n\t 1 seven (/x)\n\n"
			"app 1 1.0: 18446744073709551615 cpu-clock:\n\t 1 max (/x)\n\n"
			"app 1 [000] 1.0: sched:sched_switch: prev_comm=x\n\t 1 trace (/x)\n\n",
			NULL,
			"app;big 1.84467440737096e+19\napp;dzero 0\napp;huge 1e+23\napp;max "
			"18446744073709551615\napp;none 1\napp;seven 7\napp;trace 1\napp;zero 1\n");
}

static const char frames[] = "app 1 1.0: 1 cpu-clock:\n"
			     "\t1 off+0x1a (/x)\n"
			     "\t2 upper+0xAB (/x)\n"
			     "\t3 twice+0x1+0x2 (/x)\n"
			     "\t4 bare+0x (/x)\n"
			     "\t5 semi;colon\"quote'd (/x)\n"
			     "\t6 [unknown] (/usr/lib/libfoo.so.1)\n"
			     "\t7 [unknown] ([unknown])\n"
			     "\t8 [unknown] ([kernel.kallsyms])\n"
			     "\t9 net/http.(*Client).Do+0x45 (/go)\n"
			     "\ta foo::(anonymous namespace)::bar(int)+0x3 (/x)\n"
			     "\tb (anonymous namespace)::skipped+0x10 (/x)\n"
			     "\tc main::{lambda(int, int)#1}::operator()+0x5 (/x)\n"
			     "\td std::vector<std::pair<int, int> >::push_back(std::pair<int, int> "
			     "const&) (/x)\n"
			     "\te outer->middle->inner+0x3 (/x)\n"
			     "\tf a->->b (/x)\n"
			     "\t10 trail-> (/x)\n"
			     "\t11 ->lead (/x)\n"
			     "\t12 -> (/x)\n"
			     "\t13 x_[i]->y_[i] (/x)\n"
			     "\t14 k_fn ([kernel.kallsyms])\n"
			     "\t15 v_fn (/boot/vmlinux)\n"
			     "\t16 u_fn ([unknown_mod])\n"
			     "\t17 j_fn (/tmp/perf-123.map)\n"
			     "\t18 jj_[j] (/tmp/perf-9.map)\n"
			     "\t19 helper (/opt/lib/libx.so (deleted))\n"
			     "\t1a spaced  name (/x)\n"
			     "\n";

/* The Perl output's frames below "app", root first; shared by every option. */
#define FRAMES_ROOT "app;spaced  name;"
#define FRAMES_MID                                                                              \
	";x_[i];y_[i];;lead_[i];trail;a;_[i];b_[i];outer;middle_[i];inner_[i];std::vector<std:" \
	":pair<int, int> >::push_back"
#define FRAMES_LEAF "semi:colonquoted;bare+0x;twice+0x1;upper+0xAB;off 1\n"

static void test_frame_names(void **state)
{
	struct collapse_options cut = {.cut_paren = true}, kernel = cut, jit = cut, addrs = cut;

	(void)state;
	kernel.kernel = true;
	jit.jit = true;
	addrs.addrs = true;
	assert_collapse(frames, &cut,
			FRAMES_ROOT "helper ;jj_[j];j_fn;u_fn;v_fn;k_fn" FRAMES_MID
				    ";main::{lambda;foo::(anonymous namespace)::bar;net/"
				    "http.(*Client).Do;[[kernel.kallsyms]];[unknown];[libfoo.so.1];"
				    "" FRAMES_LEAF);
	assert_collapse(frames, &kernel,
			FRAMES_ROOT
			"helper ;jj_[j];j_fn;u_fn;v_fn_[k];k_fn_[k]" FRAMES_MID
			";main::{lambda;foo::(anonymous namespace)::bar;net/"
			"http.(*Client).Do;[[kernel.kallsyms]]_[k];[unknown];[libfoo.so.1];"
			"" FRAMES_LEAF);
	assert_collapse(frames, &jit,
			FRAMES_ROOT "helper ;jj_[j];j_fn_[j];u_fn;v_fn;k_fn" FRAMES_MID
				    ";main::{lambda;foo::(anonymous namespace)::bar;net/"
				    "http.(*Client).Do;[[kernel.kallsyms]];[unknown];[libfoo.so.1];"
				    "" FRAMES_LEAF);
	assert_collapse(frames, &addrs,
			FRAMES_ROOT "helper ;jj_[j];j_fn;u_fn;v_fn;k_fn" FRAMES_MID
				    ";main::{lambda;foo::(anonymous namespace)::bar;net/"
				    "http.(*Client).Do;[[kernel.kallsyms] <8>];[unknown <7>];"
				    "[libfoo.so.1 <6>];" FRAMES_LEAF);
	/* The documented difference: without cut_paren names keep their parentheses. */
	assert_collapse(frames, NULL,
			FRAMES_ROOT
			"helper (/opt/lib/libx.so;jj_[j];j_fn;u_fn;v_fn;k_fn" FRAMES_MID
			"(std::pair<int, int> const&);main::{lambda(int, int)#1}::operator("
			");foo::(anonymous namespace)::bar(int);net/http.(*Client).Do;[["
			"kernel.kallsyms]];[unknown];[libfoo.so.1];" FRAMES_LEAF);
}

static void test_java(void **state)
{
	(void)state;
	assert_collapse("java 5 1.0: 1 cpu-clock:\n\t 1 Lorg/Foo;.bar(I)V (/tmp/perf-5.map)\n"
			"\t 2 LNoSlash;.x (/x)\n\t 3 Interpreter (/tmp/perf-5.map)\n\n",
			&(struct collapse_options){.cut_paren = true},
			"java;Interpreter;LNoSlash:.x;org/Foo:.bar 1\n");
	/* Only comms starting with "java". */
	assert_collapse("jav 5 1.0: 1 cpu-clock:\n\t 1 Lorg/Foo;.bar (/x)\n\n", NULL,
			"jav;Lorg/Foo:.bar 1\n");
}

static void test_event_filter(void **state)
{
	const char *text = "ev 1 1.0: 5 page-faults:\n\t 1 a (/x)\n\n"
			   "ev 1 1.0: 7 cpu-clock:\n\t 1 b (/x)\n\n"
			   "ev 1 1.0: 9 page-faults:\n\t 1 c (/x)\n\n"
			   "ev 1 1.0: 3 task-clock:\n\t 1 d (/x)\n\n";
	struct warnings w = {STRBUF_INIT, 0};
	struct collapse_options o = {.event_filter = "cpu-clock"};
	char *out;

	(void)state;
	/* The first event wins; the note names the first one dropped, once. */
	out = collapse_n(&text, 1, NULL, 1, &w);
	assert_string_equal(out, "ev;a 5\nev;c 9\n");
	assert_string_equal(w.all.buf, "Filtering for events of type: cpu-clock\n");
	free(out);
	strbuf_reset(&w.all);
	w.n = 0;
	out = collapse_n(&text, 1, &o, 1, &w);
	assert_string_equal(out, "ev;b 7\n");
	assert_int_equal(w.n, 0);
	free(out);
	strbuf_release(&w.all);
}

static void test_stream(void **state)
{
	const char *two[] = {"one 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\n",
			     "two 2 1.0: 7 cpu-clock:\n\t 1 b (/x)\n\n"};
	char *out;

	(void)state;
	/* A sample with no blank line after it is dropped... */
	assert_collapse("one 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\n\nlast 1 1.0: 5 cpu-clock:\n"
			"\t 1 a (/x)\n",
			NULL, "one;a 5\n");
	/* ...but continues into the next input, as with Perl's <>. */
	out = collapse_n(two, 2, NULL, 1, NULL);
	assert_string_equal(out, "two;b;a 7\n");
	free(out);
	/* Two headers without a blank line: the frames pile up under the last. */
	assert_collapse(
		"aa 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\nbb 2 1.0: 6 cpu-clock:\n\t 1 b (/x)\n\n",
		NULL, "bb;b;a 6\n");
	/* A filtered header leaves the open sample to collect its frames. */
	assert_collapse("aa 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\n\nbb 1 1.0: 5 cpu-clock:\n\t 1 b "
			"(/x)\ncc 2 1.0: 6 faults:\n\t 1 c (/x)\n\n",
			NULL, "aa;a 5\nbb;c;b 5\n");
	/* Frames before any header, comments and a lone header. */
	assert_collapse("\t 1 orphan (/x)\n# comment\n#aa 1 1.0: 5 cpu-clock:\n\naa 1 1.0: 5 "
			"cpu-clock:\n\n",
			NULL, "aa 5\n");
}

static void test_unrecognized(void **state)
{
	struct strbuf text = STRBUF_INIT;
	struct warnings w = {STRBUF_INIT, 0};
	const char *t;
	char *out;

	(void)state;
	strbuf_addstr(&text, "aa 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\nno frame here\n\t7f12\n\n");
	for (int i = 0; i < 150; i++)
		strbuf_addstr(&text, "junk\x01\n");
	t = text.buf;
	out = collapse_n(&t, 1, NULL, 1, &w);
	assert_string_equal(out, "aa;a 5\n");
	assert_int_equal(w.n, PERFSCRIPT_MAX_WARNINGS + 1);
	assert_non_null(strstr(w.all.buf, "t:3: Unrecognized line: no frame here\n"
					  "t:4: Unrecognized line: \t7f12\n"
					  "t:6: Unrecognized line: junk\\x01\n"));
	assert_non_null(strstr(w.all.buf, "t: 132 more unrecognized lines not shown\n"));
	free(out);
	strbuf_release(&w.all);
	strbuf_release(&text);
}

/* A synthetic input of many samples, for the threaded parse. */
static void make_samples(struct strbuf *sb, int n)
{
	for (int i = 0; i < n; i++) {
		strbuf_addf(sb, "th%d %d [000] %d.0: %d cpu-clock:\n", i % 7, i, i, 1000 + i % 13);
		for (int d = 0; d < 1 + i % 9; d++)
			strbuf_addf(sb, "\t%x f%d_%d+0x%x (/bin/x%d)\n", d, d, i % (d + 3), d,
				    d % 2);
		strbuf_addstr(sb, i % 50 ? "\n" : "bad line\n\n");
	}
}

static void test_threads_agree(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct warnings w1 = {STRBUF_INIT, 0}, w4 = {STRBUF_INIT, 0};
	const char *t;
	char *one, *four;

	(void)state;
	make_samples(&sb, 5000);
	strbuf_addstr(&sb, "tail 1 1.0: 5 faults:\n\t 1 x (/x)\n\n");
	t = sb.buf;
	one = collapse_n(&t, 1, NULL, 1, &w1);
	four = collapse_n(&t, 1, NULL, 4, &w4);
	assert_string_equal(one, four);
	assert_string_equal(w1.all.buf, w4.all.buf);
	/* The warnings, the count of those not shown and the event note. */
	assert_int_equal(w1.n, PERFSCRIPT_MAX_WARNINGS + 2);
	assert_non_null(strstr(w4.all.buf, "Filtering for events of type: faults\n"));
	assert_non_null(strstr(w4.all.buf, "t: 80 more unrecognized lines not shown\n"));
	free(one);
	free(four);
	strbuf_release(&w1.all);
	strbuf_release(&w4.all);
	strbuf_release(&sb);
}

static struct profile *read_profile(const char *text, bool keep_order, struct error *err)
{
	struct read_options ro = {.keep_order = keep_order};
	struct profile *p = NULL;
	struct input in;

	assert_int_equal(input_from_buf(&in, "t.perf", text, strlen(text), 1 << 24, err), 0);
	if (perfscript_read(&in, &ro, &p, err))
		p = NULL;
	input_close(&in);
	return p;
}

static void test_profile(void **state)
{
	const char *text = "app 1 1.0: 1000 cpu-clock:ppp:\n\t 1 leaf+0x1 (/x)\n\t 2 main (/x)\n\n"
			   "app 1 1.0: 2000 cpu-clock:ppp:\n\t 1 leaf+0x2 (/x)\n\t 2 main (/x)\n\n"
			   "app 1 1.0: 500 cpu-clock:ppp:\n\t 2 main (/x)\n\n";
	struct error err = ERROR_INIT;
	struct profile *p = read_profile(text, false, &err);
	uint32_t main_node, leaf_node, fr[3];

	(void)state;
	assert_non_null(p);
	assert_int_equal(p->nr_types, 2);
	assert_string_equal(profile_str(p, p->types[0].type), "cpu-clock");
	assert_string_equal(profile_str(p, p->types[0].unit), "nanoseconds");
	assert_string_equal(profile_str(p, p->types[1].type), "samples");
	assert_int_equal(p->default_type, 0);
	assert_int_equal(profile_total(p, 0), 3500);
	assert_int_equal(profile_total(p, 1), 3);
	/* The comm has no module; frames carry their dso as the module. */
	fr[0] = profile_frame_named(p, S("app"));
	fr[1] = profile_intern_frame(p, &(struct frame){.name = profile_intern(p, S("main")),
							.module = profile_intern(p, S("/x"))});
	fr[2] = profile_intern_frame(p, &(struct frame){.name = profile_intern(p, S("leaf")),
							.module = profile_intern(p, S("/x"))});
	main_node = profile_find_child(p, profile_find_child(p, 0, fr[0]), fr[1]);
	leaf_node = profile_find_child(p, main_node, fr[2]);
	assert_true(main_node && leaf_node);
	profile_free(p);

	/* keep_order: one sample per input sample, in order. */
	p = read_profile(text, true, &err);
	assert_non_null(p);
	assert_int_equal(p->nr_order, 3);
	assert_int_equal(profile_total(p, 0), 3500);
	profile_free(p);

	/* Other events count; no sample at all is an error. */
	p = read_profile("ab 1 1.0: 3 page-faults:\n\t 1 f (/x)\n\n", false, &err);
	assert_non_null(p);
	assert_string_equal(profile_str(p, p->types[0].type), "events");
	assert_string_equal(profile_str(p, p->types[0].unit), "count");
	profile_free(p);
	assert_null(read_profile("\t 1 f (/x)\n\n", false, &err));
	assert_int_equal(err.code, ERR_FORMAT);
	assert_non_null(strstr(err.msg, "t.perf: no perf script samples"));
	err = (struct error)ERROR_INIT;
	assert_null(read_profile("ab 1 1.0: 18446744073709551615 cpu-clock:\n\t 1 f (/x)\n\n",
				 false, &err));
	assert_int_equal(err.code, ERR_LIMIT);
}

static void test_large(void **state)
{
	struct strbuf sb = STRBUF_INIT, want = STRBUF_INIT;
	const char *t;
	char *out;

	(void)state;
	/* A 1 MiB frame name and a 100,000-frame stack. */
	strbuf_addstr(&sb, "big 1 1.0: 3 cpu-clock:\n\t 1 ");
	for (int i = 0; i < (1 << 20); i++)
		strbuf_addch(&sb, 'a' + i % 26);
	strbuf_addstr(&sb, " (/x)\n\ndeep 2 1.0: 4 cpu-clock:\n");
	for (int i = 0; i < 100000; i++)
		strbuf_addf(&sb, "\t %x f%d (/x)\n", i, i % 10);
	strbuf_addstr(&sb, "\n");
	t = sb.buf;
	out = collapse_n(&t, 1, NULL, 1, NULL);
	strbuf_addstr(&want, "big;");
	for (int i = 0; i < (1 << 20); i++)
		strbuf_addch(&want, 'a' + i % 26);
	strbuf_addstr(&want, " 3\ndeep");
	for (int i = 100000; i-- > 0;)
		strbuf_addf(&want, ";f%d", i % 10);
	strbuf_addstr(&want, " 4\n");
	assert_string_equal(out, want.buf);
	free(out);
	strbuf_release(&sb);
	strbuf_release(&want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_regex),  cmocka_unit_test(test_event_regex),
		cmocka_unit_test(test_frame_regex),   cmocka_unit_test(test_comms),
		cmocka_unit_test(test_periods),	      cmocka_unit_test(test_frame_names),
		cmocka_unit_test(test_java),	      cmocka_unit_test(test_event_filter),
		cmocka_unit_test(test_stream),	      cmocka_unit_test(test_unrecognized),
		cmocka_unit_test(test_threads_agree), cmocka_unit_test(test_profile),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
