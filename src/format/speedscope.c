/* SPDX-License-Identifier: MIT */
#include <strings.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "format/speedscope.h"

/*
 * speedscope's file format: frames shared by every profile, then one
 * "sampled" profile per sample type whose samples are stacks of frame
 * indices (root first) with one weight each.  Frames are keyed by name
 * and file (the module when there is no source file), as pprof's
 * function granularity does, so addresses, lines and flags do not split
 * a function into several boxes; a frame's line is given only when all
 * its occurrences agree.
 */

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define EXPORTER	  "plateau 0.1.0"
#define FLUSH_AT	  (1 << 16)

struct ss_writer {
	const struct profile *p;
	FILE *f;
	struct strbuf sb;
	uint32_t *index; /* frame id -> speedscope frame index, or UINT32_MAX */
	uint32_t *first; /* speedscope frame index -> a frame id */
	uint32_t *line;	 /* speedscope frame index -> line, 0 when unknown or mixed */
	uint32_t nr;
	struct idhash by_key;
	uint32_t *stack;
	size_t stack_alloc;
};

static void flush(struct ss_writer *w, bool force)
{
	if (w->sb.len >= FLUSH_AT || (force && w->sb.len)) {
		strbuf_write(&w->sb, w->f);
		strbuf_reset(&w->sb);
	}
}

static uint32_t frame_file(const struct frame *f)
{
	return f->file ? f->file : f->module;
}

static uint32_t key_hash(const struct frame *f)
{
	return (uint32_t)hash_u64((uint64_t)f->name << 32 | frame_file(f));
}

/* The speedscope index of frame id, assigned on first use. */
static uint32_t frame_index(struct ss_writer *w, uint32_t id)
{
	const struct frame *f = &w->p->frames[id];
	uint32_t hash, pos, i;

	if (w->index[id] != UINT32_MAX)
		return w->index[id];
	hash = pos = key_hash(f);
	while ((i = idhash_probe(&w->by_key, hash, &pos)) != IDHASH_NONE) {
		const struct frame *g = &w->p->frames[w->first[i]];

		if (g->name == f->name && frame_file(g) == frame_file(f)) {
			if (w->line[i] != f->line)
				w->line[i] = 0;
			return w->index[id] = i;
		}
	}
	i = w->nr++;
	w->first[i] = id;
	w->line[i] = f->line;
	idhash_insert(&w->by_key, hash, i);
	return w->index[id] = i;
}

/* Number every frame on a sampled stack, in call tree order. */
static void number_frames(struct ss_writer *w)
{
	const struct profile *p = w->p;
	bool *used = xcalloc(p->nr_nodes, sizeof(*used));

	for (uint32_t s = 0; s < p->nr_samples; s++)
		used[p->samples[s].node] = true;
	for (uint32_t n = p->nr_nodes - 1; n > 0; n--) {
		if (used[n])
			used[p->nodes[n].parent] = true;
	}
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		if (used[n])
			frame_index(w, p->nodes[n].frame);
	}
	free(used);
}

static void write_frames(struct ss_writer *w)
{
	const struct profile *p = w->p;

	strbuf_addf(&w->sb, "{\"$schema\":\"%s\",\n\"shared\":{\"frames\":[", SPEEDSCOPE_SCHEMA);
	for (uint32_t i = 0; i < w->nr; i++) {
		const struct frame *f = &p->frames[w->first[i]];
		uint32_t file = frame_file(f);

		strbuf_addstr(&w->sb, i ? ",\n{\"name\":" : "\n{\"name\":");
		strbuf_add_json(&w->sb, profile_str(p, f->name), strtab_len(&p->strs, f->name));
		if (file) {
			strbuf_addstr(&w->sb, ",\"file\":");
			strbuf_add_json(&w->sb, profile_str(p, file), strtab_len(&p->strs, file));
		}
		if (w->line[i])
			strbuf_addf(&w->sb, ",\"line\":%" PRIu32, w->line[i]);
		strbuf_addch(&w->sb, '}');
		flush(w, false);
	}
	strbuf_addstr(&w->sb, "]},\n");
}

/* speedscope's unit for a pprof-style unit name. */
static const char *ss_unit(const char *unit)
{
	static const struct {
		const char *from, *to;
	} units[] = {
		{"nanoseconds", "nanoseconds"},
		{"nanosecond", "nanoseconds"},
		{"ns", "nanoseconds"},
		{"microseconds", "microseconds"},
		{"microsecond", "microseconds"},
		{"us", "microseconds"},
		{"milliseconds", "milliseconds"},
		{"millisecond", "milliseconds"},
		{"ms", "milliseconds"},
		{"seconds", "seconds"},
		{"second", "seconds"},
		{"s", "seconds"},
		{"bytes", "bytes"},
		{"byte", "bytes"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcasecmp(unit, units[i].from))
			return units[i].to;
	}
	return "none";
}

static void write_stacks(struct ss_writer *w, uint32_t t)
{
	const struct profile *p = w->p;
	bool first = true;

	for (uint32_t s = 0; s < p->nr_samples; s++) {
		size_t depth;

		if (!profile_sample_values(p, s)[t])
			continue;
		depth = profile_node_stack(p, p->samples[s].node, &w->stack, &w->stack_alloc);
		strbuf_addstr(&w->sb, first ? "\n[" : ",\n[");
		first = false;
		for (size_t i = 0; i < depth; i++)
			strbuf_addf(&w->sb, i ? ",%" PRIu32 : "%" PRIu32, w->index[w->stack[i]]);
		strbuf_addch(&w->sb, ']');
		flush(w, false);
	}
}

static void write_weights(struct ss_writer *w, uint32_t t)
{
	const struct profile *p = w->p;
	bool first = true;
	char num[64];

	for (uint32_t s = 0; s < p->nr_samples; s++) {
		int64_t v = profile_sample_values(p, s)[t];

		if (!v)
			continue;
		profile_format_value(p, t, v, num, sizeof(num));
		strbuf_addstr(&w->sb, first ? "" : ",");
		strbuf_addstr(&w->sb, num);
		first = false;
		flush(w, false);
	}
}

static void write_profile(struct ss_writer *w, uint32_t t)
{
	const struct profile *p = w->p;
	const struct sample_type *st = &p->types[t];
	char total[64];

	profile_format_value(p, t, profile_total(p, t), total, sizeof(total));
	strbuf_addstr(&w->sb, t ? ",\n{\"type\":\"sampled\",\"name\":"
				: "\n{\"type\":\"sampled\",\"name\":");
	strbuf_add_json(&w->sb, profile_str(p, st->type), strtab_len(&p->strs, st->type));
	strbuf_addf(&w->sb, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%s,\n\"samples\":[",
		    ss_unit(profile_str(p, st->unit)), total);
	write_stacks(w, t);
	strbuf_addstr(&w->sb, "],\n\"weights\":[");
	write_weights(w, t);
	strbuf_addstr(&w->sb, "]}");
	flush(w, false);
}

int speedscope_write(const struct profile *p, FILE *f, struct error *err)
{
	struct ss_writer w = {.p = p, .f = f};

	strbuf_init(&w.sb, FLUSH_AT + 4096);
	w.index = xmalloc(st_mult(p->nr_frames ? p->nr_frames : 1, sizeof(*w.index)));
	memset(w.index, 0xff, p->nr_frames * sizeof(*w.index));
	w.first = xmalloc(st_mult(p->nr_frames ? p->nr_frames : 1, sizeof(*w.first)));
	w.line = xmalloc(st_mult(p->nr_frames ? p->nr_frames : 1, sizeof(*w.line)));
	number_frames(&w);
	write_frames(&w);
	strbuf_addstr(&w.sb, "\"profiles\":[");
	for (uint32_t t = 0; t < p->nr_types; t++)
		write_profile(&w, t);
	strbuf_addf(&w.sb,
		    "],\n\"name\":\"plateau profile\",\"activeProfileIndex\":%" PRIu32
		    ",\"exporter\":\"" EXPORTER "\"}\n",
		    p->nr_types ? p->default_type : 0);
	flush(&w, true);
	strbuf_release(&w.sb);
	free(w.index);
	free(w.first);
	free(w.line);
	free(w.stack);
	idhash_release(&w.by_key);
	if (ferror(f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}
