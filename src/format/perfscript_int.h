/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PERFSCRIPT_INT_H
#define PLATEAU_PERFSCRIPT_INT_H

/*
 * Internals shared by perfscript.c (the line parser) and
 * perfscript_collapse.c (threads, merging, output).  Not an API.
 */
#include "util/arena.h"
#include "util/hash.h"
#include "util/strbuf.h"
#include "util/strtab.h"
#include "format/perfscript.h"

/*
 * Counts as Perl keeps them: exact unsigned integers until a sum passes
 * 2^64 (or a period does), then doubles, printed with %.15g.
 */
struct ps_count {
	uint64_t u;
	double nv;
	bool is_nv;
};

/* Collapsed stacks: each distinct stack string with its summed period and sample count. */
struct ps_table {
	struct strtab keys;
	struct ps_count *sums;
	uint64_t *samples;
	uint32_t alloc;
	uint64_t total; /* sum of every period, saturating */
	bool inexact;	/* a period or the total passed 2^64 */
};

/*
 * The parser's state between lines: the Perl script's $pname, $m_period
 * and @stack.  Frames come leaf first; each frame line gives one group
 * (its names joined by ';'), so a stack is the comm then the groups in
 * reverse.  Inside a chunk the comm and groups are ids in its names.
 */
struct ps_state {
	bool have_pname;
	bool java; /* the comm starts with "java" */
	uint32_t pname;
	struct ps_count period;
	uint32_t *groups;
	size_t nr_groups, alloc_groups;
	size_t key_len; /* length of the stack string so far */
};

/* The same state as strings, carried from one input to the next. */
struct ps_carry {
	bool have_pname;
	bool java;
	struct ps_count period;
	struct strbuf pname;
	struct strbuf groups;
	size_t *gend; /* end offset of each group in groups */
	size_t nr_groups, alloc_groups;
};

/* A chunk's stacks: id sequences [comm, leaf group, ..., root group]. */
struct ps_stack {
	size_t off; /* into ids */
	uint32_t len;
	uint64_t samples;
	struct ps_count sum;
};

struct ps_stacks {
	struct ps_stack *v;
	uint32_t nr, alloc;
	uint32_t *ids;
	size_t nr_ids, alloc_ids;
	struct idhash index;
	uint64_t total; /* sum of every period, saturating */
	bool inexact;	/* a period or the total passed 2^64 */
};

/*
 * Frame lines seen before, with the group they gave: a line repeats
 * whenever its address does, and is then not parsed again.  Lines point
 * into the input.
 */
struct ps_line {
	const char *s;
	uint32_t len;
	uint32_t group_plus1; /* 0: the line adds no frame */
	bool java;
};

struct ps_lines {
	struct ps_line *v;
	uint32_t nr, alloc;
	struct idhash index;
	/* Copies of the lines: pointers into the input would keep it resident. */
	struct arena text;
};

/* A diagnostic kept for the caller: a line number within the chunk and the line, shortened. */
struct ps_msg {
	size_t line;
	char *text;
};

/* A sample in input order (keep_order): its stack and period. */
struct ps_order {
	uint32_t id;
	struct ps_count period;
};

struct perfscript_collapse {
	struct collapse_options o;
	char *event_filter;	/* o.event_filter, owned */
	struct strbuf filter;	/* the event kept; empty until known */
	bool defaulted, warned; /* filter taken from the input; its note printed */
	perfscript_warn_fn *warn;
	void *warn_arg;
	int threads;
	bool keep_order;
	struct inline_cache *inl;
	struct ps_carry carry; /* state at the end of the last input */
	struct ps_table tab;
	uint64_t nr_samples, nr_unrecognized;
	bool has_first;
	struct ps_count first_period;
	struct ps_order *order;
	size_t nr_order, alloc_order;
	/*
	 * For the profile view (perfscript_read): each frame name's module,
	 * the dso of its first frame line.  mod_dso[name id] is an id in
	 * mod_dsos, 0 when unknown.
	 */
	bool modules;
	struct strtab mod_names, mod_dsos;
	uint32_t *mod_dso;
	size_t alloc_mod_dso;
};

/* One stretch of an input, parsed on its own thread; it starts at a sample boundary. */
struct ps_chunk {
	const struct perfscript_collapse *c;
	const struct input *in;	  /* the whole input, for input_discard() */
	struct inline_cache *inl; /* NULL unless --inline */
	const char *data;
	size_t len, lines;
	struct ps_state st;
	struct strtab names; /* comms and frame groups */
	struct ps_stacks stacks;
	struct ps_lines seen;
	struct strbuf grp, tmp;
	uint32_t *key;
	size_t alloc_key;
	struct ps_msg *msgs;
	size_t nr_msgs, alloc_msgs, nr_unrecognized;
	char *mismatch; /* the first event dropped by a defaulted filter */
	size_t mismatch_line;
	bool has_first;
	struct ps_count first_period;
	size_t err_line; /* a sample too large to store, or 0 */
	uint64_t nr_samples;
	bool keep_order;
	struct ps_order *order;
	size_t nr_order, alloc_order;
	/* With c->modules: group_dso[group id] is a dsos id + 1, 0 when none yet. */
	struct strtab dsos;
	uint32_t *group_dso;
	size_t alloc_group_dso;
};

/* The Perl script's kernel test for a dso: "[...]" or ".../vmlinux", not [unknown]. */
bool ps_dso_is_kernel(const char *s, size_t n);

void ps_count_add(struct ps_count *acc, const struct ps_count *v);
/* Perl's rendering of a count: the integer, or %.15g once it is a double. */
void ps_count_format(const struct ps_count *c, char *buf, size_t size);

void ps_table_init(struct ps_table *t);
void ps_table_release(struct ps_table *t);
/* Add v (and nsamples samples) to the stack key; returns its id. */
uint32_t ps_table_add(struct ps_table *t, const char *key, size_t len, const struct ps_count *v,
		      uint64_t nsamples);

void ps_carry_init(struct ps_carry *cs);
void ps_carry_release(struct ps_carry *cs);

/* A chunk over data[0..len) of c's current input, with its own tables. */
void ps_chunk_init(struct ps_chunk *k, struct perfscript_collapse *c, const char *data, size_t len);
void ps_chunk_release(struct ps_chunk *k);
/* Start from a carried state (the first chunk of an input). */
void ps_chunk_resume(struct ps_chunk *k, const struct ps_carry *cs);
/* Parse the chunk (a pthread start routine); returns NULL. */
void *ps_chunk_run(void *arg);
/* The state after the chunk's last line, as strings. */
void ps_chunk_suspend(const struct ps_chunk *k, struct ps_carry *cs);
/* The collapsed string of stack i ("comm;root;...;leaf") into sb. */
void ps_chunk_stack_string(const struct ps_chunk *k, uint32_t i, struct strbuf *sb);

/* The first event named by a header, which the Perl script keeps by default, into out. */
bool ps_find_first_event(const char *s, size_t len, struct strbuf *out);

#endif
