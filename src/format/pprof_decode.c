/* SPDX-License-Identifier: MIT */
#include <pthread.h>

#include "format/pprof_decode.h"
#include "util/cursor.h"

/*
 * The protobuf wire format, as far as profile.proto needs it: a message
 * is a sequence of (key, value) with key = field << 3 | wire type; wire
 * type 0 is a varint, 2 a length-prefixed run of bytes (a string, a
 * nested message or a packed repeated scalar), 1 and 5 fixed 64 and 32
 * bits (none of pprof's fields, skipped when unknown).  Groups (3, 4)
 * are long deprecated and an error here, as in protobuf-c.
 */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Growable arrays of the profile, by index into pb->alloc. */
enum {
	A_SAMPLE_TYPE,
	A_SAMPLE,
	A_MAPPING,
	A_LOCATION,
	A_FUNCTION,
	A_STRING_OFF,
	A_COMMENT,
	A_LOCATION_IDS,
	A_VALUES,
	A_LABELS,
	A_LINES,
	A_STRINGS,
	A_STRING_TABLE,
	A_COUNT
};
_Static_assert(A_COUNT == sizeof(((struct pbd_profile *)0)->alloc) / sizeof(size_t),
	       "pbd_profile's alloc[] and room[] have a slot per array");

struct rd {
	struct pbd_profile *pb;
	const uint8_t *base;
	const char *name;
	struct error *err;
	const char *kind; /* the message being read, for errors: "sample"; NULL: the profile */
	size_t index;
	const char *field;
	size_t *str_off;  /* string i starts at pb->strings + str_off[i] */
	size_t ids_start; /* pb->n_location_ids when the current sample began */
};

static int fail(struct rd *r, const uint8_t *at, const char *why)
{
	char where[64] = "";

	if (r->kind)
		snprintf(where, sizeof(where), "%s %zu: ", r->kind, r->index);
	return error_set(r->err, ERR_FORMAT,
			 "%s: not a valid pprof profile: %s%s: %s (at byte %zu)", r->name, where,
			 r->field, why, (size_t)(at - r->base));
}

/* ARR, with *ROOM bytes, grown to at least BYTES (its contents kept); NULL: no memory, ARR kept. */
static void *room_for(void *arr, size_t *room, size_t bytes)
{
	void *p;

	if (bytes <= *room)
		return arr;
	p = realloc(arr, bytes);
	if (p)
		*room = bytes;
	return p;
}

/*
 * ARR (elements of SIZE bytes) with room for NEED of them, within the byte
 * budget: the array, moved or not; over the budget *RC is set and ARR
 * returned as it was.  The budget is charged for the doubling growth
 * from 16; the memory may be there already (pbd_release's reuse).
 */
static void *grow(struct rd *r, void *arr, int which, size_t need, size_t size, int *rc)
{
	struct pbd_profile *pb = r->pb;
	size_t *alloc = &pb->alloc[which], n;
	void *p;

	*rc = 0;
	if (need <= *alloc)
		return arr;
	n = *alloc < 16 ? 16 : *alloc;
	while (n < need)
		n = st_mult(n, 2);
	if (n - *alloc > (pb->cap - pb->used) / size) {
		*rc = error_set(r->err, ERR_LIMIT,
				"%s: pprof data needs more than %zu MiB to decode", r->name,
				pb->cap >> 20);
		return arr;
	}
	if (!budget_take(pb->budget, (n - *alloc) * size)) {
		*rc = error_set(r->err, ERR_LIMIT,
				"%s: pprof data: " INPUT_BUDGET_MSG
				" (%zu bytes for the bodies decoding at once); retry later",
				r->name, pb->budget->limit);
		return arr;
	}
	p = room_for(arr, &pb->room[which], st_mult(n, size));
	if (!p) {
		budget_give(pb->budget, (n - *alloc) * size);
		*rc = error_set(r->err, ERR_NOMEM, "%s: out of memory decoding pprof data",
				r->name);
		return arr;
	}
	pb->used += (n - *alloc) * size;
	*alloc = n;
	return p;
}

/* Grow array lvalue ARR to NEED elements; the error code into RC, and its value. */
#define GROW(r, arr, which, need, rc) \
	((arr) = grow(r, (arr), which, need, sizeof(*(arr)), &(rc)), (rc))

/* The varint at *PP, before END: *PP moves past it; false, nothing moved, when it is bad. */
static inline bool varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	struct cursor c = {*pp, end, CURSOR_OK};
	uint64_t x = cursor_varint(&c);

	if (!cursor_ok(&c))
		return false;
	*v = x;
	*pp = c.p;
	return true;
}

static int bad_varint(struct rd *r, const uint8_t *p, const uint8_t *end)
{
	return fail(r, p,
		    end - p >= 10 ? "varint longer than 10 bytes" : "varint runs past the end");
}

/* A varint field's value, or an error for any other wire type. */
static int get_varint(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt, uint64_t *v)
{
	const uint8_t *at = *p;

	if (wt != WT_VARINT)
		return fail(r, at, "wrong wire type for a varint field");
	if (!varint(p, end, v))
		return bad_varint(r, at, end);
	return 0;
}

/* A length-prefixed field's bytes [*sub, *subend); *p moves past them. */
static int get_len(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
		   const uint8_t **sub, const uint8_t **subend)
{
	const uint8_t *at = *p;
	uint64_t n;

	if (wt != WT_LEN)
		return fail(r, at, "wrong wire type for a length-delimited field");
	if (!varint(p, end, &n))
		return bad_varint(r, at, end);
	if (*p - at > 5)
		return fail(r, at, "length longer than 5 bytes");
	if (n > (uint64_t)(end - *p))
		return fail(r, at, "length runs past the end");
	*sub = *p;
	*subend = *p + n;
	*p += n;
	return 0;
}

/*
 * A repeated varint field: one value (wire type 0) or a packed run
 * (wire type 2), appended to *ARR (of 64-bit values) at *N.
 */
static int get_varints(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
		       uint64_t **arr, int which, size_t *n)
{
	const uint8_t *q, *qend;
	int rc;

	if (wt == WT_VARINT) {
		uint64_t v = 0;

		if ((rc = get_varint(r, p, end, wt, &v)) || GROW(r, *arr, which, *n + 1, rc))
			return rc;
		(*arr)[(*n)++] = v;
		return 0;
	}
	if ((rc = get_len(r, p, end, wt, &q, &qend)))
		return rc;
	/* At most one value a byte: one growth for the whole run. */
	if (GROW(r, *arr, which, st_add(*n, (size_t)(qend - q)), rc))
		return rc;
	/* Locals, not *arr and *n: stores through out could alias them. */
	uint64_t *out = *arr + *n, *start = out;

	while (q < qend) {
		const uint8_t *at = q;

		if (*q < 0x80) {
			*out++ = *q++;
			continue;
		}
		if (!varint(&q, qend, out++)) {
			*n += (size_t)(out - 1 - start);
			return bad_varint(r, at, qend);
		}
	}
	*n += (size_t)(out - start);
	return 0;
}

static int skip(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt)
{
	const uint8_t *at = *p, *sub, *subend;
	uint64_t v;

	switch (wt) {
	case WT_VARINT: return get_varint(r, p, end, wt, &v);
	case WT_LEN: return get_len(r, p, end, wt, &sub, &subend);
	case WT_I64:
	case WT_I32:
		if ((size_t)(end - at) < (wt == WT_I64 ? 8u : 4u))
			return fail(r, at, "fixed-size value runs past the end");
		*p += wt == WT_I64 ? 8 : 4;
		return 0;
	default:
		return fail(r, at,
			    wt == 3 || wt == 4 ? "groups are not supported" : "unknown wire type");
	}
}

/* The next key: its field number and wire type; an error for field 0. */
static int key(struct rd *r, const uint8_t **p, const uint8_t *end, uint64_t *field, unsigned *wt)
{
	const uint8_t *at = *p;
	uint64_t k;

	r->field = "field key";
	if (!varint(p, end, &k))
		return bad_varint(r, at, end);
	/* protobuf-c's limit: a key is at most 5 bytes, its field number 32 bits. */
	if (*p - at > 5)
		return fail(r, at, "key longer than 5 bytes");
	*field = (uint32_t)(k >> 3);
	*wt = (unsigned)(k & 7);
	if (*field == 0)
		return fail(r, at, "field number 0");
	return 0;
}

/*
 * A message's fields, indexed by field number - 1 (pprof numbers them
 * densely from 1): a scalar stored at an offset of the message's struct,
 * or a field read by a function of its own (nested and repeated fields).
 */
enum kind { K_U64, K_I64, K_BOOL, K_CALL };

struct msg;

typedef int call_fn(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt, void *out);

struct field {
	enum kind kind;
	size_t offset;
	const char *name;
	call_fn *call;
};

struct msg {
	const char *kind; /* for errors: "sample"; NULL: the profile */
	const struct field *fields;
	size_t n;
	/* A reader for the message's common shape, tried first: false to use the table. */
	bool (*fast)(struct rd *r, const uint8_t *p, const uint8_t *end, void *out);
};

#define SCALAR(k, type, member, name)                 \
	{                                             \
		k, offsetof(type, member), name, NULL \
	}
#define CALL(fn, name)              \
	{                           \
		K_CALL, 0, name, fn \
	}

static int read_message(struct rd *r, const uint8_t *p, const uint8_t *end, const struct msg *m,
			void *out)
{
	uint64_t f = 0;
	unsigned wt = 0;
	int rc = 0;

	while (p < end && rc == 0) {
		const struct field *fd;
		uint64_t v = 0;

		if ((rc = key(r, &p, end, &f, &wt)))
			break;
		if (f > m->n) {
			r->field = "unknown field";
			rc = skip(r, &p, end, wt);
			continue;
		}
		fd = &m->fields[f - 1];
		r->field = fd->name;
		if (fd->kind == K_CALL) {
			rc = fd->call(r, &p, end, wt, out);
			continue;
		}
		if ((rc = get_varint(r, &p, end, wt, &v)))
			break;
		if (fd->kind == K_BOOL)
			*(bool *)((char *)out + fd->offset) = v != 0;
		else if (fd->kind == K_I64)
			*(int64_t *)((char *)out + fd->offset) = (int64_t)v;
		else
			*(uint64_t *)((char *)out + fd->offset) = v;
	}
	return rc;
}

/*
 * One element of a repeated message field: room for it in ARR (elements
 * of SIZE bytes) at *N, zeroed, and its bytes read as message M; errors
 * name it M->kind and its index.  Returns the array, moved or not.
 * Inline, so that each caller zeroes a constant SIZE with a few stores:
 * out of line the memset was a rep stos, dear for a 32-byte label.
 */
static inline void *read_elem(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			      void *arr, int which, size_t size, size_t *n, const struct msg *m,
			      int *rc)
{
	const uint8_t *sub, *subend;
	const char *kind = r->kind;
	size_t index = r->index;
	char *elem;

	if ((*rc = get_len(r, p, end, wt, &sub, &subend)))
		return arr;
	arr = grow(r, arr, which, *n + 1, size, rc);
	if (*rc)
		return arr;
	elem = (char *)arr + *n * size;
	memset(elem, 0, size);
	/* A sample's labels keep the sample's name in errors. */
	if (!r->kind) {
		r->kind = m->kind;
		r->index = *n;
	}
	(*n)++;
	if (m->fast && m->fast(r, sub, subend, elem))
		*rc = 0;
	else
		*rc = read_message(r, sub, subend, m, elem);
	r->kind = kind;
	r->index = index;
	return arr;
}

#define READ_ELEM(r, p, end, wt, arr, which, n, m, rc) \
	((arr) = read_elem(r, p, end, wt, (arr), which, sizeof(*(arr)), &(n), m, &(rc)))

static const struct field value_type_fields[] = {
	SCALAR(K_I64, struct pbd_value_type, type, "type"),
	SCALAR(K_I64, struct pbd_value_type, unit, "unit"),
};
static const struct msg value_type_msg = {"sample_type", value_type_fields, 2};

static const struct field label_fields[] = {
	SCALAR(K_I64, struct pbd_label, key, "label key"),
	SCALAR(K_I64, struct pbd_label, str, "label str"),
	SCALAR(K_I64, struct pbd_label, num, "label num"),
	SCALAR(K_I64, struct pbd_label, num_unit, "label num_unit"),
};
static const struct msg label_msg = {"label", label_fields, 4};

/*
 * Check a packed run of varints [P, END) byte by byte; *N its values.
 * The authority on errors: scan_varints hands a run it finds bad to this
 * for the message and the offset of the varint at fault.
 */
static int scan_varints_bytes(struct rd *r, const uint8_t *p, const uint8_t *end, uint32_t *n)
{
	const uint8_t *start = p;
	uint32_t count = 0;
	unsigned run = 0;

	for (; p < end; p++) {
		if (*p & 0x80) {
			if (++run == 10)
				return fail(r, start, "varint longer than 10 bytes");
			continue;
		}
		run = 0;
		count++;
		start = p + 1;
	}
	if (run)
		return fail(r, start, "varint runs past the end");
	*n = count;
	return 0;
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* 0x80 in each byte of W (bytes little-endian) that ends a varint. */
static inline uint64_t varint_stops(uint64_t w)
{
	return ~w & 0x8080808080808080ULL;
}

/* The bytes set in a varint_stops() mask: one multiply, no popcount instruction needed. */
static inline unsigned count_stops(uint64_t stops)
{
	return (unsigned)(((stops >> 7) * 0x0101010101010101ULL) >> 56);
}

/*
 * Count the varints of a packed run [P, END) without storing them: *N,
 * and true when they are sound; false (and *N untouched) when a varint
 * is longer than 10 bytes or runs past the end, or when the run is in the
 * first 8 bytes of the input (BASE).  Every varint ends in the one byte of
 * it whose top bit is clear, so eight bytes a step: the values are the
 * clear top bits, and RUN carries the continuation bytes since the last
 * of them from word to word, to catch a varint longer than 10 bytes.
 * (Between two stops in one word a run is at most 6 bytes.)
 */
static inline bool count_varints(const uint8_t *base, const uint8_t *p, const uint8_t *end,
				 uint32_t *n)
{
	uint32_t count = 0;
	unsigned run = 0;
	uint64_t stops;

	if (p < end && (end[-1] & 0x80))
		return false;
	for (; end - p >= 8; p += 8) {
		stops = varint_stops(load_le64(p));
		if (!stops) {
			if ((run += 8) >= 10)
				return false;
			continue;
		}
		if (run + (unsigned)__builtin_ctzll(stops) / 8 >= 10)
			return false;
		run = (unsigned)__builtin_clzll(stops) / 8;
		count += count_stops(stops);
	}
	if (p < end) {
		/*
		 * The last K bytes: the word that ends at END, less the bytes
		 * before P (a copy to a buffer would stall the load on store
		 * forwarding).  The last byte is a stop, so STOPS is not 0.
		 */
		size_t k = (size_t)(end - p);

		if (end - base < 8)
			return false;
		stops = varint_stops(load_le64(end - 8) >> (64 - 8 * k)) & (~0ULL >> (64 - 8 * k));
		if (run + (unsigned)__builtin_ctzll(stops) / 8 >= 10)
			return false;
		count += count_stops(stops);
	}
	*n = count;
	return true;
}

/*
 * Check a packed run of varints [P, END) without storing it; *N its
 * values.  A run count_varints does not take is checked again by
 * scan_varints_bytes, for its error.
 */
static int scan_varints(struct rd *r, const uint8_t *p, const uint8_t *end, uint32_t *n)
{
	if (count_varints(r->base, p, end, n))
		return 0;
	return scan_varints_bytes(r, p, end, n);
}

/*
 * A sample's location ids: the first packed run stays in the input
 * (checked, counted); anything more (another run, unpacked ids) and the
 * sample's ids go to the array like any repeated field.
 */
static int sample_location_ids(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			       void *out)
{
	struct pbd_sample *s = out;
	struct pbd_profile *pb = r->pb;
	const uint8_t *q, *qend;
	int rc;

	if (wt == WT_LEN && !s->loc_raw && pb->n_location_ids == r->ids_start) {
		if ((rc = get_len(r, p, end, wt, &q, &qend)) ||
		    (rc = scan_varints(r, q, qend, &s->n_location_id)))
			return rc;
		s->loc_raw = q;
		s->loc_raw_len = (uint32_t)(qend - q);
		return 0;
	}
	if (s->loc_raw) {
		if (GROW(r, pb->location_ids, A_LOCATION_IDS,
			 st_add(pb->n_location_ids, s->n_location_id), rc))
			return rc;
		pbd_sample_ids(pb, s, pb->location_ids + pb->n_location_ids);
		pb->n_location_ids += s->n_location_id;
		s->loc_raw = NULL;
	}
	return get_varints(r, p, end, wt, &pb->location_ids, A_LOCATION_IDS, &pb->n_location_ids);
}

static int sample_values(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			 void *out)
{
	(void)out;
	return get_varints(r, p, end, wt, &r->pb->values, A_VALUES, &r->pb->n_values);
}

static int sample_label(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt, void *out)
{
	int rc;

	(void)out;
	READ_ELEM(r, p, end, wt, r->pb->labels, A_LABELS, r->pb->n_labels, &label_msg, rc);
	return rc;
}

/* A length of at most 5 bytes at *P and its bytes up to *SUBEND, inside END; else false. */
static inline bool fast_len(const uint8_t **p, const uint8_t *end, const uint8_t **subend)
{
	const uint8_t *q = *p;
	uint64_t n;

	if (!varint(&q, end, &n) || q - *p > 5 || n > (uint64_t)(end - q))
		return false;
	*p = q;
	*subend = q + n;
	return true;
}

/* A label of varint fields under one-byte keys into L, zeroed first; else false. */
static inline bool label_fast(const uint8_t *p, const uint8_t *end, struct pbd_label *l)
{
	*l = (struct pbd_label){0};
	while (p < end) {
		uint8_t k = *p++;
		uint64_t v;

		if ((k & 7) != WT_VARINT || k < (1 << 3) || k > (4 << 3) || !varint(&p, end, &v))
			return false;
		switch (k >> 3) {
		case 1: l->key = (int64_t)v; break;
		case 2: l->str = (int64_t)v; break;
		case 3: l->num = (int64_t)v; break;
		default: l->num_unit = (int64_t)v; break;
		}
	}
	return true;
}

/*
 * A sample as pprof's writers lay it out (Go's, protobuf-c's, plateau's
 * own): one-byte keys; the location ids in one packed run, or unpacked
 * (Go writes one or two so); the values packed or unpacked (Go writes
 * two so); labels of varints; all in room the arrays already have.  Read
 * straight, without the field table: the table's cost per field was a
 * good part of a push's decoding.  Anything else, and false, with S
 * zeroed again: the table then reads the sample from its start as if
 * this had not run, for it moved no count and grew no array (ids,
 * values and labels past the counts are scratch).
 */
static bool sample_fast(struct rd *r, const uint8_t *p, const uint8_t *end, void *out)
{
	struct pbd_sample *s = out;
	struct pbd_profile *pb = r->pb;
	size_t nid = pb->n_location_ids, nv = pb->n_values, nl = pb->n_labels;
	const uint8_t *q, *qend;

	while (p < end) {
		uint8_t k = *p++;

		if (k == (1 << 3 | WT_VARINT)) {
			if (s->loc_raw || nid >= pb->alloc[A_LOCATION_IDS] ||
			    !varint(&p, end, &pb->location_ids[nid]))
				goto other;
			nid++;
			continue;
		}
		if (k == (2 << 3 | WT_VARINT)) {
			if (nv >= pb->alloc[A_VALUES] || !varint(&p, end, &pb->values[nv]))
				goto other;
			nv++;
			continue;
		}
		if (k >> 3 < 1 || k >> 3 > 3 || (k & 7) != WT_LEN || !fast_len(&p, end, &qend))
			goto other;
		q = p;
		p = qend;
		if (k >> 3 == 1) {
			if (s->loc_raw || nid != pb->n_location_ids ||
			    !count_varints(r->base, q, qend, &s->n_location_id))
				goto other;
			s->loc_raw = q;
			s->loc_raw_len = (uint32_t)(qend - q);
		} else if (k >> 3 == 2) {
			if ((size_t)(qend - q) > pb->alloc[A_VALUES] - nv)
				goto other;
			for (; q < qend; nv++) {
				if (!varint(&q, qend, &pb->values[nv]))
					goto other;
			}
		} else {
			if (nl >= pb->alloc[A_LABELS] || !label_fast(q, qend, &pb->labels[nl]))
				goto other;
			nl++;
		}
	}
	pb->n_location_ids = nid;
	pb->n_values = nv;
	pb->n_labels = nl;
	return true;
other:
	memset(s, 0, sizeof(*s));
	return false;
}

static const struct field sample_fields[] = {
	CALL(sample_location_ids, "location_id"),
	CALL(sample_values, "value"),
	CALL(sample_label, "label"),
};
static const struct msg sample_msg = {"sample", sample_fields, 3, sample_fast};

static const struct field mapping_fields[] = {
	SCALAR(K_U64, struct pbd_mapping, id, "id"),
	SCALAR(K_U64, struct pbd_mapping, memory_start, "memory_start"),
	SCALAR(K_U64, struct pbd_mapping, memory_limit, "memory_limit"),
	SCALAR(K_U64, struct pbd_mapping, file_offset, "file_offset"),
	SCALAR(K_I64, struct pbd_mapping, filename, "filename"),
	SCALAR(K_I64, struct pbd_mapping, build_id, "build_id"),
	SCALAR(K_BOOL, struct pbd_mapping, has_functions, "has_functions"),
	SCALAR(K_BOOL, struct pbd_mapping, has_filenames, "has_filenames"),
	SCALAR(K_BOOL, struct pbd_mapping, has_line_numbers, "has_line_numbers"),
	SCALAR(K_BOOL, struct pbd_mapping, has_inline_frames, "has_inline_frames"),
};
static const struct msg mapping_msg = {"mapping", mapping_fields, 10};

static const struct field line_fields[] = {
	SCALAR(K_U64, struct pbd_line, function_id, "line function_id"),
	SCALAR(K_I64, struct pbd_line, line, "line line"),
	SCALAR(K_I64, struct pbd_line, column, "line column"),
};
static const struct msg line_msg = {"line", line_fields, 3};

static int location_line(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			 void *out)
{
	int rc;

	(void)out;
	READ_ELEM(r, p, end, wt, r->pb->lines, A_LINES, r->pb->n_lines, &line_msg, rc);
	return rc;
}

static const struct field location_fields[] = {
	SCALAR(K_U64, struct pbd_location, id, "id"),
	SCALAR(K_U64, struct pbd_location, mapping_id, "mapping_id"),
	SCALAR(K_U64, struct pbd_location, address, "address"),
	CALL(location_line, "line"),
	SCALAR(K_BOOL, struct pbd_location, is_folded, "is_folded"),
};
static const struct msg location_msg = {"location", location_fields, 5};

static const struct field function_fields[] = {
	SCALAR(K_U64, struct pbd_function, id, "id"),
	SCALAR(K_I64, struct pbd_function, name, "name"),
	SCALAR(K_I64, struct pbd_function, system_name, "system_name"),
	SCALAR(K_I64, struct pbd_function, filename, "filename"),
	SCALAR(K_I64, struct pbd_function, start_line, "start_line"),
};
static const struct msg function_msg = {"function", function_fields, 5};

static int profile_sample_type(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			       void *out)
{
	struct pbd_profile *pb = out;
	int rc;

	READ_ELEM(r, p, end, wt, pb->sample_type, A_SAMPLE_TYPE, pb->n_sample_type, &value_type_msg,
		  rc);
	return rc;
}

/* The samples, the bulk of a profile: each sample's repeated fields are ranges. */
static int profile_sample(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			  void *out)
{
	struct pbd_profile *pb = out;
	size_t ids = pb->n_location_ids, values = pb->n_values, labels = pb->n_labels;
	struct pbd_sample *s;
	int rc;

	r->ids_start = ids;
	READ_ELEM(r, p, end, wt, pb->sample, A_SAMPLE, pb->n_sample, &sample_msg, rc);
	if (rc == 0) {
		s = &pb->sample[pb->n_sample - 1];
		if (!s->loc_raw) {
			s->loc_off = (uint32_t)ids;
			s->n_location_id = (uint32_t)(pb->n_location_ids - ids);
		}
		s->value_off = (uint32_t)values;
		s->n_value = (uint32_t)(pb->n_values - values);
		s->label_off = (uint32_t)labels;
		s->n_label = (uint32_t)(pb->n_labels - labels);
	}
	return rc;
}

static int profile_mapping(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			   void *out)
{
	struct pbd_profile *pb = out;
	int rc;

	READ_ELEM(r, p, end, wt, pb->mapping, A_MAPPING, pb->n_mapping, &mapping_msg, rc);
	return rc;
}

static int profile_location(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			    void *out)
{
	struct pbd_profile *pb = out;
	size_t lines = pb->n_lines;
	struct pbd_location *l;
	int rc;

	READ_ELEM(r, p, end, wt, pb->location, A_LOCATION, pb->n_location, &location_msg, rc);
	if (rc == 0) {
		l = &pb->location[pb->n_location - 1];
		l->line_off = (uint32_t)lines;
		l->n_line = (uint32_t)(pb->n_lines - lines);
	}
	return rc;
}

static int profile_function(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			    void *out)
{
	struct pbd_profile *pb = out;
	int rc;

	READ_ELEM(r, p, end, wt, pb->function, A_FUNCTION, pb->n_function, &function_msg, rc);
	return rc;
}

static int profile_string(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			  void *out)
{
	struct pbd_profile *pb = out;
	const uint8_t *sub, *subend;
	size_t n;
	int rc;

	if ((rc = get_len(r, p, end, wt, &sub, &subend)))
		return rc;
	n = (size_t)(subend - sub);
	if (GROW(r, r->str_off, A_STRING_OFF, pb->n_string_table + 1, rc) ||
	    GROW(r, pb->strings, A_STRINGS, st_add(pb->n_strings, st_add(n, 1)), rc))
		return rc;
	r->str_off[pb->n_string_table++] = pb->n_strings;
	memcpy(pb->strings + pb->n_strings, sub, n);
	pb->strings[pb->n_strings + n] = '\0';
	pb->n_strings += n + 1;
	return 0;
}

/* Given twice, the last period_type counts, as in protobuf-c and Go's pprof. */
static int profile_period_type(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			       void *out)
{
	struct pbd_profile *pb = out;
	const uint8_t *sub, *subend;
	int rc;

	if ((rc = get_len(r, p, end, wt, &sub, &subend)))
		return rc;
	pb->period_type = (struct pbd_value_type){0};
	r->kind = "period_type";
	r->index = 0;
	rc = read_message(r, sub, subend, &value_type_msg, &pb->period_type);
	r->kind = NULL;
	return rc;
}

static int profile_comment(struct rd *r, const uint8_t **p, const uint8_t *end, unsigned wt,
			   void *out)
{
	struct pbd_profile *pb = out;

	return get_varints(r, p, end, wt, &pb->comment, A_COMMENT, &pb->n_comment);
}

static const struct field profile_fields[] = {
	CALL(profile_sample_type, "sample_type"),
	CALL(profile_sample, "sample"),
	CALL(profile_mapping, "mapping"),
	CALL(profile_location, "location"),
	CALL(profile_function, "function"),
	CALL(profile_string, "string_table"),
	SCALAR(K_I64, struct pbd_profile, drop_frames, "drop_frames"),
	SCALAR(K_I64, struct pbd_profile, keep_frames, "keep_frames"),
	SCALAR(K_I64, struct pbd_profile, time_nanos, "time_nanos"),
	SCALAR(K_I64, struct pbd_profile, duration_nanos, "duration_nanos"),
	CALL(profile_period_type, "period_type"),
	SCALAR(K_I64, struct pbd_profile, period, "period"),
	CALL(profile_comment, "comment"),
	SCALAR(K_I64, struct pbd_profile, default_sample_type, "default_sample_type"),
	SCALAR(K_I64, struct pbd_profile, doc_url, "doc_url"),
};
static const struct msg profile_msg = {NULL, profile_fields, 15};

/* The arrays a thread kept from the last profile it released, by A_*. */
struct keep {
	void *arr[A_COUNT];
	size_t room[A_COUNT];
};

static _Thread_local struct keep kept;
static pthread_key_t keep_key;
static pthread_once_t keep_once = PTHREAD_ONCE_INIT;
static bool keep_ok;

static void keep_free(struct keep *k)
{
	for (int i = 0; i < A_COUNT; i++)
		free(k->arr[i]);
	memset(k, 0, sizeof(*k));
}

/* At thread exit: the key's value is only a flag that something is kept. */
static void keep_exit(void *unused)
{
	(void)unused;
	keep_free(&kept);
}

static void keep_init(void)
{
	keep_ok = pthread_key_create(&keep_key, keep_exit) == 0;
}

/* The thread's kept arrays into PB (zeroed) and *STR_OFF; it keeps none then. */
static void take_kept(struct pbd_profile *pb, size_t **str_off)
{
	void **a = kept.arr;

#define TAKE(field, which) (pb->field = a[which], pb->room[which] = kept.room[which])
	TAKE(sample_type, A_SAMPLE_TYPE);
	TAKE(sample, A_SAMPLE);
	TAKE(mapping, A_MAPPING);
	TAKE(location, A_LOCATION);
	TAKE(function, A_FUNCTION);
	TAKE(comment, A_COMMENT);
	TAKE(location_ids, A_LOCATION_IDS);
	TAKE(values, A_VALUES);
	TAKE(labels, A_LABELS);
	TAKE(lines, A_LINES);
	TAKE(strings, A_STRINGS);
	TAKE(string_table, A_STRING_TABLE);
#undef TAKE
	*str_off = a[A_STRING_OFF];
	pb->room[A_STRING_OFF] = kept.room[A_STRING_OFF];
	memset(&kept, 0, sizeof(kept));
}

int pbd_decode(struct pbd_profile *pb, const char *name, const void *data, size_t len, size_t cap,
	       struct error *err)
{
	return pbd_decode_budget(pb, name, data, len, cap, NULL, err);
}

int pbd_decode_budget(struct pbd_profile *pb, const char *name, const void *data, size_t len,
		      size_t cap, struct budget *budget, struct error *err)
{
	struct rd r = {pb, data, name, err, NULL, 0, "", NULL, 0};
	int rc;

	memset(pb, 0, sizeof(*pb));
	take_kept(pb, &r.str_off);
	pb->cap = cap;
	pb->budget = budget;
	rc = read_message(&r, data, (const uint8_t *)data + len, &profile_msg, pb);
	if (rc == 0 && pb->n_string_table) {
		const char **t = room_for(pb->string_table, &pb->room[A_STRING_TABLE],
					  st_mult(pb->n_string_table, sizeof(*pb->string_table)));

		if (!t)
			rc = error_set(err, ERR_NOMEM, "%s: out of memory decoding pprof data",
				       name);
		else
			pb->string_table = t;
		for (size_t i = 0; t && i < pb->n_string_table; i++)
			pb->string_table[i] = pb->strings + r.str_off[i];
	}
	/* The offsets go with the arrays, to the next decode or to pbd_release. */
	pb->str_off = r.str_off;
	return rc;
}

void pbd_release(struct pbd_profile *pb)
{
	struct keep k = {0};
	size_t bytes = 0;
	bool busy = false;

#define GIVE(field, which) (k.arr[which] = pb->field, k.room[which] = pb->room[which])
	GIVE(sample_type, A_SAMPLE_TYPE);
	GIVE(sample, A_SAMPLE);
	GIVE(mapping, A_MAPPING);
	GIVE(location, A_LOCATION);
	GIVE(function, A_FUNCTION);
	GIVE(comment, A_COMMENT);
	GIVE(location_ids, A_LOCATION_IDS);
	GIVE(values, A_VALUES);
	GIVE(labels, A_LABELS);
	GIVE(lines, A_LINES);
	GIVE(strings, A_STRINGS);
	GIVE(string_table, A_STRING_TABLE);
	GIVE(str_off, A_STRING_OFF);
#undef GIVE
	budget_give(pb->budget, pb->used);
	memset(pb, 0, sizeof(*pb));
	for (int i = 0; i < A_COUNT; i++) {
		bytes += k.room[i];
		busy |= kept.arr[i] != NULL;
	}
	pthread_once(&keep_once, keep_init);
	/* Kept already (two profiles alive at once), or too big to keep: freed. */
	if (!keep_ok || busy || bytes > PBD_KEEP_MAX || pthread_setspecific(keep_key, &kept) != 0) {
		keep_free(&k);
		return;
	}
	kept = k;
}
