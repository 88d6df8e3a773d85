/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PPROF_DECODE_CHECK_H
#define PLATEAU_PPROF_DECODE_CHECK_H

/*
 * For tests and the fuzz target: compare what pprof_decode.c decoded with
 * what protobuf-c unpacks from the same bytes.
 */
#include "format/pprof_decode.h"
#include "profile.pb-c.h"

#define PBD_SAME(cond, what)         \
	do {                         \
		if (!(cond))         \
			return what; \
	} while (0)

static inline const char *pbd_diff_vt(const struct pbd_value_type *a,
				      const Perftools__Profiles__ValueType *b)
{
	PBD_SAME(a->type == (b ? b->type : 0), "value type type");
	PBD_SAME(a->unit == (b ? b->unit : 0), "value type unit");
	return NULL;
}

/* NULL when D and C hold the same profile, else the first field that differs. */
static inline const char *pbd_diff(const struct pbd_profile *d,
				   const Perftools__Profiles__Profile *c)
{
	const char *w;

	PBD_SAME(d->n_sample_type == c->n_sample_type, "n_sample_type");
	for (size_t i = 0; i < d->n_sample_type; i++) {
		if ((w = pbd_diff_vt(&d->sample_type[i], c->sample_type[i])))
			return w;
	}
	PBD_SAME(d->n_sample == c->n_sample, "n_sample");
	for (size_t i = 0; i < d->n_sample; i++) {
		const struct pbd_sample *s = &d->sample[i];
		const Perftools__Profiles__Sample *t = c->sample[i];

		PBD_SAME(s->n_location_id == t->n_location_id, "sample n_location_id");
		if (s->n_location_id) {
			uint64_t *ids = malloc(s->n_location_id * sizeof(*ids));
			bool same = ids && !memcmp(pbd_sample_ids(d, s, ids), t->location_id,
						   s->n_location_id * sizeof(uint64_t));

			free(ids);
			PBD_SAME(same, "sample location_id");
		}
		PBD_SAME(s->n_value == t->n_value, "sample n_value");
		PBD_SAME(!s->n_value ||
				 !memcmp(pbd_values(d, s), t->value, s->n_value * sizeof(int64_t)),
			 "sample value");
		PBD_SAME(s->n_label == t->n_label, "sample n_label");
		for (size_t j = 0; j < s->n_label; j++) {
			const struct pbd_label *l = &pbd_labels(d, s)[j];
			const Perftools__Profiles__Label *m = t->label[j];

			PBD_SAME(l->key == m->key && l->str == m->str && l->num == m->num &&
					 l->num_unit == m->num_unit,
				 "sample label");
		}
	}
	PBD_SAME(d->n_mapping == c->n_mapping, "n_mapping");
	for (size_t i = 0; i < d->n_mapping; i++) {
		const struct pbd_mapping *m = &d->mapping[i];
		const Perftools__Profiles__Mapping *n = c->mapping[i];

		PBD_SAME(m->id == n->id && m->memory_start == n->memory_start &&
				 m->memory_limit == n->memory_limit &&
				 m->file_offset == n->file_offset && m->filename == n->filename &&
				 m->build_id == n->build_id,
			 "mapping");
		PBD_SAME(m->has_functions == !!n->has_functions &&
				 m->has_filenames == !!n->has_filenames &&
				 m->has_line_numbers == !!n->has_line_numbers &&
				 m->has_inline_frames == !!n->has_inline_frames,
			 "mapping flags");
	}
	PBD_SAME(d->n_location == c->n_location, "n_location");
	for (size_t i = 0; i < d->n_location; i++) {
		const struct pbd_location *l = &d->location[i];
		const Perftools__Profiles__Location *m = c->location[i];

		PBD_SAME(l->id == m->id && l->mapping_id == m->mapping_id &&
				 l->address == m->address && l->is_folded == !!m->is_folded,
			 "location");
		PBD_SAME(l->n_line == m->n_line, "location n_line");
		for (size_t j = 0; j < l->n_line; j++) {
			const struct pbd_line *a = &pbd_lines(d, l)[j];
			const Perftools__Profiles__Line *b = m->line[j];

			PBD_SAME(a->function_id == b->function_id && a->line == b->line &&
					 a->column == b->column,
				 "location line");
		}
	}
	PBD_SAME(d->n_function == c->n_function, "n_function");
	for (size_t i = 0; i < d->n_function; i++) {
		const struct pbd_function *f = &d->function[i];
		const Perftools__Profiles__Function *g = c->function[i];

		PBD_SAME(f->id == g->id && f->name == g->name && f->system_name == g->system_name &&
				 f->filename == g->filename && f->start_line == g->start_line,
			 "function");
	}
	PBD_SAME(d->n_string_table == c->n_string_table, "n_string_table");
	for (size_t i = 0; i < d->n_string_table; i++)
		PBD_SAME(!strcmp(d->string_table[i], c->string_table[i]), "string_table");
	PBD_SAME(d->n_comment == c->n_comment, "n_comment");
	for (size_t i = 0; i < d->n_comment; i++)
		PBD_SAME((int64_t)d->comment[i] == c->comment[i], "comment");
	if ((w = pbd_diff_vt(&d->period_type, c->period_type)))
		return w;
	PBD_SAME(d->drop_frames == c->drop_frames && d->keep_frames == c->keep_frames &&
			 d->time_nanos == c->time_nanos && d->duration_nanos == c->duration_nanos &&
			 d->period == c->period &&
			 d->default_sample_type == c->default_sample_type &&
			 d->doc_url == c->doc_url,
		 "profile scalars");
	return NULL;
}

#undef PBD_SAME

/*
 * Decode BUF with both: NULL when they agree (both fail, or both succeed
 * with the same fields), else what differs, in WHY (of SIZE bytes).  *OK:
 * whether pbd_decode succeeded.
 */
static inline const char *pbd_check(const void *buf, size_t len, bool *ok, char *why, size_t size)
{
	struct error err = ERROR_INIT;
	struct pbd_profile d;
	Perftools__Profiles__Profile *c;
	int rc = pbd_decode(&d, "x", buf, len, (size_t)64 << 20, &err);
	const char *w = NULL;

	c = perftools__profiles__profile__unpack(NULL, len, buf);
	*ok = rc == 0;
	/*
	 * The known differences, where protobuf-c is more lenient than
	 * protobuf: it reads a bool of any wire type (and makes up a value),
	 * where pbd_decode, like Go's pprof, wants a varint; and it skips
	 * field number 0 when its key is written in more than one byte.
	 */
	if (rc && c && strstr(err.msg, "wrong wire type for a varint") &&
	    (strstr(err.msg, ": is_folded:") || strstr(err.msg, ": has_"))) {
		;
	} else if (rc && c && strstr(err.msg, ": field number 0 (")) {
		;
	} else if ((rc == 0) != (c != NULL)) {
		snprintf(why, size, "pbd_decode %s (%s), protobuf-c %s", rc ? "fails" : "succeeds",
			 err.msg, c ? "succeeds" : "fails");
		w = why;
	} else if (c && (w = pbd_diff(&d, c))) {
		snprintf(why, size, "the decoders differ in %s", w);
		w = why;
	} else if (rc && !err.msg[0]) {
		w = "pbd_decode failed without a message";
	}
	if (c)
		protobuf_c_message_free_unpacked(&c->base, NULL);
	pbd_release(&d);
	return w;
}

#endif
