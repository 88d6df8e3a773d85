/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PPROF_DECODE_H
#define PLATEAU_PPROF_DECODE_H

#include "format/input.h"
#include "util/common.h"
#include "util/error.h"
#include "util/cursor.h"

/*
 * pprof's profile.proto (proto/profile.proto) decoded straight from the
 * wire into flat arrays: one pass, no message objects.  pprof_read's hot
 * path: protobuf-c's descriptor-driven unpacking of a message per sample
 * and per label cost more than everything else a push to plateau serve
 * does.  protobuf-c still writes pprof and checks this decoder in the
 * tests.  Semantics are those of protobuf-c and of Go's pprof reader:
 * fields in any order, unknown fields skipped, repeated scalars packed or
 * not, the last value of a field given twice wins (a message too: not
 * merged).  Unlike protobuf-c, a bool field must be a varint (as in Go).
 *
 * Repeated fields inside a message are ranges of the profile's shared
 * arrays (location_ids, values, labels, lines), so the arrays can grow
 * while decoding; a sample's packed location ids stay in the input (which
 * must outlive PB then).  Every string is NUL-terminated.
 */

struct pbd_value_type {
	int64_t type, unit;
};

struct pbd_label {
	int64_t key, str, num, num_unit;
};

struct pbd_sample {
	/*
	 * The location ids: still packed in the input (LOC_RAW, LOC_RAW_LEN
	 * bytes, checked) when they came as one packed run, as they nearly
	 * always do, else location_ids[loc_off..].  Most samples repeat a
	 * stack another sample has: pprof_read compares the packed bytes and
	 * decodes only new stacks.  Read them with pbd_sample_ids().
	 */
	const uint8_t *loc_raw;
	uint32_t loc_raw_len;
	uint32_t loc_off, n_location_id;
	uint32_t value_off, n_value; /* values[value_off..] */
	uint32_t label_off, n_label; /* labels[label_off..] */
};

struct pbd_mapping {
	uint64_t id, memory_start, memory_limit, file_offset;
	int64_t filename, build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pbd_line {
	uint64_t function_id;
	int64_t line, column;
};

struct pbd_location {
	uint64_t id, mapping_id, address;
	uint32_t line_off, n_line; /* lines[line_off..] */
	bool is_folded;
};

struct pbd_function {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

struct pbd_profile {
	struct pbd_value_type *sample_type;
	struct pbd_sample *sample;
	struct pbd_mapping *mapping;
	struct pbd_location *location;
	struct pbd_function *function;
	const char **string_table;
	uint64_t *comment; /* int64 values */
	size_t n_sample_type, n_sample, n_mapping, n_location, n_function, n_string_table,
		n_comment;
	struct pbd_value_type period_type;
	int64_t drop_frames, keep_frames, time_nanos, duration_nanos, period;
	int64_t default_sample_type, doc_url;

	uint64_t *location_ids;
	uint64_t *values; /* int64 values: read through pbd_values() */
	struct pbd_label *labels;
	struct pbd_line *lines;
	char *strings;	 /* the string table's bytes, each string NUL-terminated */
	size_t *str_off; /* private: where each string starts in strings */
	/*
	 * alloc: the elements each array is charged for against cap (its
	 * growth, doubling from 16, as if it started empty); room: the bytes
	 * it really has, maybe more when reused from an earlier profile.
	 */
	size_t alloc[13], room[13];
	size_t n_location_ids, n_values, n_labels, n_lines, n_strings;
	size_t used, cap;      /* bytes the arrays hold, and their limit */
	struct budget *budget; /* charged for used too, or NULL */
};

/*
 * Sample S's location ids: in the profile's array, or decoded into
 * SCRATCH (room for s->n_location_id) when still packed.
 */
static inline const uint64_t *pbd_sample_ids(const struct pbd_profile *pb,
					     const struct pbd_sample *s, uint64_t *scratch)
{
	const uint8_t *p = s->loc_raw, *end = p + s->loc_raw_len;
	uint64_t *out = scratch;

	/* (No offset on a NULL array: a profile without ids has none yet.) */
	if (!p)
		return pb->location_ids ? pb->location_ids + s->loc_off : NULL;
	/*
	 * Checked when decoded: every varint ends inside the run, in at most
	 * 10 bytes (shifts up to 63), so no bounds or length checks here.
	 */
	while (p < end) {
		uint64_t b = *p++, v;

		if (b < 0x80) {
			*out++ = b;
			continue;
		}
		v = b & 0x7f;
		for (unsigned shift = 7;; shift += 7) {
			b = *p++;
			v |= (b & 0x7f) << shift;
			if (b < 0x80)
				break;
		}
		*out++ = v;
	}
	return scratch;
}

static inline const int64_t *pbd_values(const struct pbd_profile *pb, const struct pbd_sample *s)
{
	return pb->values ? (const int64_t *)pb->values + s->value_off : NULL;
}

static inline const struct pbd_label *pbd_labels(const struct pbd_profile *pb,
						 const struct pbd_sample *s)
{
	return pb->labels ? pb->labels + s->label_off : NULL;
}

static inline const struct pbd_line *pbd_lines(const struct pbd_profile *pb,
					       const struct pbd_location *l)
{
	return pb->lines ? pb->lines + l->line_off : NULL;
}

/*
 * Decode LEN bytes of a serialized Profile into PB (zeroed first),
 * holding at most CAP bytes of arrays.  NAME is for messages.  Errors:
 * ERR_FORMAT naming the field and the byte offset ("x.pb: not a valid
 * pprof profile: sample 3: location_id: varint runs past the end (at
 * byte 120)"); ERR_LIMIT over CAP.  PB is released either way by
 * pbd_release.
 *
 * pbd_release hands the arrays (PBD_KEEP_MAX bytes in all at most) to
 * the calling thread, whose next pbd_decode starts with them: a server
 * worker decodes push after push of much the same shape, and growing
 * fresh arrays cost a realloc and a copy per doubling of each.  What the
 * cap allows does not change: arrays are charged for their growth as if
 * they started empty.  A thread frees what it keeps when it exits.
 */
#define PBD_KEEP_MAX ((size_t)4 << 20)
int pbd_decode(struct pbd_profile *pb, const char *name, const void *data, size_t len, size_t cap,
	       struct error *err);
/*
 * As pbd_decode, the arrays' growth also charged to BUDGET (shared with
 * other decodes and inflates; NULL: none) until pbd_release: ERR_LIMIT
 * with INPUT_BUDGET_MSG when the budget is used up.
 */
int pbd_decode_budget(struct pbd_profile *pb, const char *name, const void *data, size_t len,
		      size_t cap, struct budget *budget, struct error *err);
void pbd_release(struct pbd_profile *pb);

#endif
