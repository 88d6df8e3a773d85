/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "store/blob_int.h"
#include "util/cursor.h"

/*
 * Reading a blob's body in two steps.  First into a view: the body's
 * arrays, every count checked against the limits and the bytes left,
 * every id against what it refers to, nothing interned yet.  Then the
 * view is applied to a profile: blob ids map to the profile's lazily, as
 * profile_merge maps another profile's, so a body that fails its checks
 * has changed nothing.
 */

struct view {
	uint32_t nr_strs; /* string 0 is "" */
	size_t str_bytes;
	const char **str;
	uint32_t *str_len;
	uint32_t nr_frames;
	uint32_t *f_name, *f_module, *f_file, *f_line, *f_flags;
	uint64_t *f_addr;
	uint32_t nr_nodes; /* node 0 is the root */
	uint32_t *parent, *frame;
	uint32_t nr_types, default_type;
	struct sample_type types[BLOB_MAX_TYPES];
	struct sample_type period_type;
	int64_t period, time_nanos, duration_nanos;
	uint32_t nr_sets, max_set; /* set 0 is empty */
	uint32_t *set_off;
	struct label *labels;
	uint32_t profile_labels;
	uint32_t nr_comments;
	uint32_t *comments;
	uint32_t nr_samples;
	uint32_t *s_node, *s_set;
	int64_t *values; /* nr_samples * nr_types */
	void *allocs[24];
	int nr_allocs;
};

struct reader {
	const uint8_t *p, *end;
	const struct blob_limits *lim;
	struct view *v;
	struct error *err;
	const char *fault; /* why the last number could not be read */
};

#define NO_INDEX UINT32_MAX

#define ALWAYS_INLINE inline __attribute__((always_inline))

static int fail(struct reader *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct reader *r, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(r->err, code, "blob: %s", msg);
}

/* "frame 3: module" or "period type: unit": the field a message names. */
static const char *where(char *buf, size_t size, const char *what, uint32_t i, const char *field)
{
	if (i == NO_INDEX)
		snprintf(buf, size, "%s: %s", what, field);
	else
		snprintf(buf, size, "%s %u: %s", what, i, field);
	return buf;
}

static int bad_number(struct reader *r, const char *what, uint32_t i, const char *field)
{
	char buf[128];

	return fail(r, ERR_FORMAT, "%s: %s", where(buf, sizeof(buf), what, i, field), r->fault);
}

static int out_of_range(struct reader *r, const char *what, uint32_t i, const char *field,
			uint64_t v)
{
	char buf[128];

	return fail(r, ERR_FORMAT, "%s %" PRIu64 " out of range",
		    where(buf, sizeof(buf), what, i, field), v);
}

/*
 * Numbers.  One takes at most VARINT_MAX bytes, so k numbers with
 * VARINT_MAX * k bytes left cannot run past the end: a column is read in
 * runs of as many as the bytes left allow for certain (fast_run), each
 * without looking at the end, one check for the run instead of one a
 * byte.  Numbers take a byte or two, so the runs shrink slowly and only
 * the last few numbers of a body are read with the checks (util/cursor.h's
 * varint; the runs are the one place numbers are read without it).  Each
 * column loop keeps its position in a local, which stores to the output
 * cannot alias (the build has no strict aliasing).
 */
/*
 * A number of more than one byte at p, VARINT_MAX bytes readable; NULL
 * when over 64 bits.  Two bytes (lines, string lengths, small address
 * differences) inline.
 */
static inline const uint8_t *get_long_fast(const uint8_t *p, uint64_t *out)
{
	uint64_t v = 0;

	if (p[1] < 0x80) {
		*out = (p[0] & 0x7f) | (uint64_t)p[1] << 7;
		return p + 2;
	}
	for (unsigned shift = 0; shift < 63; shift += 7) {
		uint8_t b = *p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*out = v;
			return p;
		}
	}
	if (*p > 1)
		return NULL;
	*out = v | (uint64_t)*p << 63;
	return p + 1;
}

/*
 * The same, looking at end: NULL when the number is cut off (*cut set) or
 * over 64 bits (longer than 10 bytes, or a tenth byte over 1).
 */
static const uint8_t *get_long_checked(const uint8_t *p, const uint8_t *end, uint64_t *out,
				       bool *cut)
{
	struct cursor c = {p, end, CURSOR_OK};
	uint64_t v = cursor_varint(&c);

	if (!cursor_ok(&c)) {
		*cut = c.err == CURSOR_SHORT;
		return NULL;
	}
	if (c.p - p == CURSOR_VARINT_MAX && p[CURSOR_VARINT_MAX - 1] > 1)
		return NULL;
	*out = v;
	return c.p;
}

/*
 * One number at *pp into *out, advancing *pp; fast when a run of numbers
 * fits (see above).  Most numbers take one byte: that case inline.  On
 * false, r->fault says why.
 */
static ALWAYS_INLINE bool next(struct reader *r, const uint8_t **pp, const uint8_t *end, bool fast,
			       uint64_t *out)
{
	const uint8_t *p = *pp;
	bool cut = false;

	if (likely((fast || p < end) && *p < 0x80)) {
		*out = *p;
		*pp = p + 1;
		return true;
	}
	p = fast ? get_long_fast(p, out) : get_long_checked(p, end, out, &cut);
	if (unlikely(!p)) {
		r->fault = cut ? "data ends inside it" : "number over 64 bits";
		return false;
	}
	*pp = p;
	return true;
}

/* How many of the next n numbers fit in what is left for certain. */
static inline uint32_t fast_run(const struct reader *r, uint32_t n)
{
	size_t k = (size_t)(r->end - r->p) / VARINT_MAX;

	return k < n ? (uint32_t)k : n;
}

static bool get_u64(struct reader *r, uint64_t *out)
{
	return next(r, &r->p, r->end, false, out);
}

/* One number below bound. */
static int get_id(struct reader *r, uint64_t bound, uint32_t *out, const char *what, uint32_t i,
		  const char *field)
{
	uint64_t v;

	if (!get_u64(r, &v))
		return bad_number(r, what, i, field);
	if (v >= bound)
		return out_of_range(r, what, i, field, v);
	*out = (uint32_t)v;
	return 0;
}

static int get_s64(struct reader *r, int64_t *out, const char *what, const char *field)
{
	uint64_t v;

	if (!get_u64(r, &v))
		return bad_number(r, what, NO_INDEX, field);
	*out = unzigzag(v);
	return 0;
}

/*
 * Column loops (*_column) read numbers first .. first + n - 1 of a column.
 * They are written once and inlined into their callers with fast a
 * constant, true or false: each column gets two copies, one without the
 * end checks, which the caller runs on the runs fast_run allows and the
 * other on what is left (less than VARINT_MAX bytes).
 */

/* A column of ids out[first .. first + n), each below bound. */
static ALWAYS_INLINE int ids_column(struct reader *r, bool fast, uint32_t first, uint32_t n,
				    uint64_t bound, uint32_t *out, const char *what,
				    const char *field)
{
	const uint8_t *p = r->p, *end = r->end;

	for (uint32_t i = first; i < first + n; i++) {
		uint64_t v;

		if (!next(r, &p, end, fast, &v))
			return bad_number(r, what, i, field);
		if (v >= bound)
			return out_of_range(r, what, i, field, v);
		out[i] = (uint32_t)v;
	}
	r->p = p;
	return 0;
}

static int get_ids(struct reader *r, uint32_t first, uint32_t n, uint64_t bound, uint32_t *out,
		   const char *what, const char *field)
{
	int rc = 0;

	for (uint32_t k; n && !rc; first += k, n -= k) {
		k = fast_run(r, n);
		rc = k ? ids_column(r, true, first, k, bound, out, what, field)
		       : ids_column(r, false, first, k = n, bound, out, what, field);
	}
	return rc;
}

/* A column written by put_ref: differences from one past the largest id so far. */
static ALWAYS_INLINE int refs_column(struct reader *r, bool fast, uint32_t first, uint32_t n,
				     uint32_t bound, uint32_t *next_ref, uint32_t *out,
				     const char *what, const char *field)
{
	const uint8_t *p = r->p, *end = r->end;
	uint32_t next_id = *next_ref;

	for (uint32_t i = first; i < first + n; i++) {
		uint64_t v;
		int64_t id;

		if (!next(r, &p, end, fast, &v))
			return bad_number(r, what, i, field);
		if (__builtin_add_overflow((int64_t)next_id, unzigzag(v), &id))
			id = INT64_MAX;
		if (id < 0 || id >= (int64_t)bound)
			return fail(r, ERR_FORMAT, "%s %u: %s %" PRId64 " out of range", what, i,
				    field, id);
		out[i] = (uint32_t)id;
		if (out[i] >= next_id)
			next_id = out[i] + 1;
	}
	r->p = p;
	*next_ref = next_id;
	return 0;
}

static int get_refs(struct reader *r, uint32_t first, uint32_t n, uint32_t bound, uint32_t next_id,
		    uint32_t *out, const char *what, const char *field)
{
	int rc = 0;

	for (uint32_t k; n && !rc; first += k, n -= k) {
		k = fast_run(r, n);
		rc = k ? refs_column(r, true, first, k, bound, &next_id, out, what, field)
		       : refs_column(r, false, first, k = n, bound, &next_id, out, what, field);
	}
	return rc;
}

/*
 * A count of things that take at least size bytes each: at most limit
 * (ERR_LIMIT), and no more than the bytes left can hold (ERR_FORMAT), so
 * nothing is allocated for what the blob cannot contain.
 */
static int get_count(struct reader *r, const char *what, uint32_t limit, size_t size, uint32_t *out)
{
	size_t left;
	uint64_t n;

	if (!get_u64(r, &n))
		return bad_number(r, what, NO_INDEX, "count");
	left = (size_t)(r->end - r->p);
	limit = MIN(limit, UINT32_MAX - 2); /* room for the implied entries */
	if (n > limit)
		return fail(r, ERR_LIMIT, "%" PRIu64 " %s (limit %u)", n, what, limit);
	if (n > left / size)
		return fail(r, ERR_FORMAT, "%" PRIu64 " %s cannot fit in the %zu bytes left", n,
			    what, left);
	*out = (uint32_t)n;
	return 0;
}

/* An array for the view (freed with it); NULL with an error set. */
static void *view_alloc(struct reader *r, size_t n, size_t size)
{
	struct view *v = r->v;
	void *a;

	if (v->nr_allocs == (int)ARRAY_SIZE(v->allocs))
		BUG("blob view: too many arrays");
	a = malloc(n && size ? n * size : 1); /* n is bounded by the body's bytes */
	if (!a)
		fail(r, ERR_NOMEM, "out of memory for %zu entries", n);
	else
		v->allocs[v->nr_allocs++] = a;
	return a;
}

static void view_release(struct view *v)
{
	for (int i = 0; i < v->nr_allocs; i++)
		free(v->allocs[i]);
}

#define ALLOC(r, ptr, n) ((ptr) = view_alloc((r), (n), sizeof(*(ptr))))

static int get_strings(struct reader *r)
{
	struct view *v = r->v;
	uint64_t total = 0;
	uint32_t n;
	int rc = get_count(r, "strings", r->lim->max_strings, 1, &n);

	if (rc)
		return rc;
	v->nr_strs = n + 1;
	if (!ALLOC(r, v->str, v->nr_strs) || !ALLOC(r, v->str_len, v->nr_strs))
		return ERR_NOMEM;
	v->str[0] = "";
	v->str_len[0] = 0;
	if ((rc = get_ids(r, 1, n, UINT32_MAX, v->str_len, "string", "length")))
		return rc;
	for (uint32_t i = 1; i <= n; i++) {
		total += v->str_len[i];
		if (total > (size_t)(r->end - r->p))
			return fail(r, ERR_FORMAT, "string %u: length %u past the end", i,
				    v->str_len[i]);
	}
	for (uint32_t i = 1; i <= n; i++) {
		v->str[i] = (const char *)r->p;
		r->p += v->str_len[i];
	}
	v->str_bytes = total;
	return 0;
}

/* Each address the difference from the one before, mod 2^64; out[first - 1] when first > 0. */
static ALWAYS_INLINE int addrs_column(struct reader *r, bool fast, uint32_t first, uint32_t n,
				      uint64_t *out)
{
	const uint8_t *p = r->p, *end = r->end;
	uint64_t addr = first ? out[first - 1] : 0, v;

	for (uint32_t i = first; i < first + n; i++) {
		if (!next(r, &p, end, fast, &v))
			return bad_number(r, "frame", i, "addr");
		addr += (uint64_t)unzigzag(v);
		out[i] = addr;
	}
	r->p = p;
	return 0;
}

static int get_addrs(struct reader *r, uint32_t n, uint64_t *out)
{
	int rc = 0;

	for (uint32_t first = 0, k; n && !rc; first += k, n -= k) {
		k = fast_run(r, n);
		rc = k ? addrs_column(r, true, first, k, out)
		       : addrs_column(r, false, first, k = n, out);
	}
	return rc;
}

static int get_frames(struct reader *r)
{
	struct view *v = r->v;
	uint32_t n;
	int rc = get_count(r, "frames", r->lim->max_nodes, 6, &n);

	if (rc)
		return rc;
	v->nr_frames = n;
	if (!ALLOC(r, v->f_name, n) || !ALLOC(r, v->f_module, n) || !ALLOC(r, v->f_file, n) ||
	    !ALLOC(r, v->f_line, n) || !ALLOC(r, v->f_flags, n) || !ALLOC(r, v->f_addr, n))
		return ERR_NOMEM;
	if ((rc = get_refs(r, 0, n, v->nr_strs, 1, v->f_name, "frame", "name")) ||
	    (rc = get_ids(r, 0, n, v->nr_strs, v->f_module, "frame", "module")) ||
	    (rc = get_ids(r, 0, n, v->nr_strs, v->f_file, "frame", "file")) ||
	    (rc = get_ids(r, 0, n, (uint64_t)UINT32_MAX + 1, v->f_line, "frame", "line")) ||
	    (rc = get_addrs(r, n, v->f_addr)))
		return rc;
	if ((rc = get_ids(r, 0, n, (uint64_t)UINT32_MAX + 1, v->f_flags, "frame", "flags")))
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		if (v->f_flags[i] & ~(uint32_t)BLOB_FRAME_FLAGS)
			return fail(r, ERR_FORMAT, "frame %u: unknown flags 0x%x", i,
				    v->f_flags[i]);
	}
	return 0;
}

/* A parent delta d puts node i under node i - 1 - d: never after it. */
static ALWAYS_INLINE int parents_column(struct reader *r, bool fast, uint32_t first, uint32_t n,
					uint32_t *parent)
{
	const uint8_t *p = r->p, *end = r->end;

	for (uint32_t i = first; i < first + n; i++) {
		uint64_t d;

		if (!next(r, &p, end, fast, &d))
			return bad_number(r, "node", i, "parent");
		if (d > i - 1)
			return fail(r, ERR_FORMAT,
				    "node %u: parent delta %" PRIu64 " out of range (at most %u)",
				    i, d, i - 1);
		parent[i] = i - 1 - (uint32_t)d;
	}
	r->p = p;
	return 0;
}

static int get_nodes(struct reader *r)
{
	struct view *v = r->v;
	uint32_t n;
	int rc = get_count(r, "nodes", r->lim->max_nodes, 2, &n);

	if (rc)
		return rc;
	v->nr_nodes = n + 1;
	if (!ALLOC(r, v->parent, v->nr_nodes) || !ALLOC(r, v->frame, v->nr_nodes))
		return ERR_NOMEM;
	v->parent[0] = v->frame[0] = 0;
	for (uint32_t first = 1, left = n, k; left; first += k, left -= k) {
		k = fast_run(r, left);
		rc = k ? parents_column(r, true, first, k, v->parent)
		       : parents_column(r, false, first, k = left, v->parent);
		if (rc)
			return rc;
	}
	return get_refs(r, 1, n, v->nr_frames, 0, v->frame, "node", "frame");
}

static int get_types(struct reader *r)
{
	struct view *v = r->v;
	uint64_t n;
	int rc;

	if (!get_u64(r, &n))
		return bad_number(r, "sample types", NO_INDEX, "count");
	if (n > BLOB_MAX_TYPES)
		return fail(r, ERR_LIMIT, "%" PRIu64 " sample types (at most %d supported)", n,
			    BLOB_MAX_TYPES);
	v->nr_types = (uint32_t)n;
	if ((rc = get_id(r, n ? n : 1, &v->default_type, "sample types", NO_INDEX, "default")))
		return rc;
	for (uint32_t t = 0; t < v->nr_types; t++) {
		struct sample_type *st = &v->types[t];

		if ((rc = get_id(r, v->nr_strs, &st->type, "sample type", t, "type")) ||
		    (rc = get_id(r, v->nr_strs, &st->unit, "sample type", t, "unit")) ||
		    (rc = get_id(r, BLOB_MAX_DECIMALS + 1, &st->decimals, "sample type", t,
				 "decimals")))
			return rc;
	}
	if ((rc = get_id(r, v->nr_strs, &v->period_type.type, "period type", NO_INDEX, "type")) ||
	    (rc = get_id(r, v->nr_strs, &v->period_type.unit, "period type", NO_INDEX, "unit")) ||
	    (rc = get_s64(r, &v->period, "profile", "period")) ||
	    (rc = get_s64(r, &v->time_nanos, "profile", "time")))
		return rc;
	return get_s64(r, &v->duration_nanos, "profile", "duration");
}

/* Set sizes, then each label's key, string, number and unit. */
static int get_sets(struct reader *r)
{
	struct view *v = r->v;
	uint64_t total = 0;
	uint32_t n;
	int rc = get_count(r, "label sets", r->lim->max_samples, 1, &n);

	if (rc)
		return rc;
	v->nr_sets = n + 1;
	if (!ALLOC(r, v->set_off, (size_t)n + 2))
		return ERR_NOMEM;
	v->set_off[0] = v->set_off[1] = 0;
	for (uint32_t i = 1; i <= n; i++) {
		uint64_t size;

		if (!get_u64(r, &size))
			return bad_number(r, "label set", i, "size");
		total += size;
		if (total > r->lim->max_samples)
			return fail(r, ERR_LIMIT, "label set %u: over %u labels in all", i,
				    r->lim->max_samples);
		if (total > (size_t)(r->end - r->p) / 4)
			return fail(r, ERR_FORMAT, "label set %u: %" PRIu64 " labels past the end",
				    i, size);
		v->set_off[i + 1] = (uint32_t)total;
		v->max_set = MAX(v->max_set, (uint32_t)size);
	}
	if (!ALLOC(r, v->labels, total))
		return ERR_NOMEM;
	for (uint32_t i = 0; i < total; i++) {
		struct label *l = &v->labels[i];
		uint64_t num;

		if ((rc = get_id(r, v->nr_strs, &l->key, "label", i, "key")) ||
		    (rc = get_id(r, v->nr_strs, &l->str, "label", i, "string")))
			return rc;
		if (!get_u64(r, &num))
			return bad_number(r, "label", i, "number");
		l->num = unzigzag(num);
		if ((rc = get_id(r, v->nr_strs, &l->unit, "label", i, "unit")))
			return rc;
	}
	return 0;
}

static int get_profile_labels(struct reader *r)
{
	struct view *v = r->v;
	int rc = get_id(r, v->nr_sets, &v->profile_labels, "profile", NO_INDEX, "labels");

	if (!rc)
		rc = get_count(r, "comments", r->lim->max_strings, 1, &v->nr_comments);
	if (!rc && !ALLOC(r, v->comments, v->nr_comments))
		rc = ERR_NOMEM;
	if (!rc)
		rc = get_ids(r, 0, v->nr_comments, v->nr_strs, v->comments, "comment", "string");
	return rc;
}

/* Each node the one before plus a delta; out[first - 1] when first > 0. */
static ALWAYS_INLINE int sample_nodes_column(struct reader *r, bool fast, uint32_t first,
					     uint32_t n, struct view *v)
{
	const uint8_t *p = r->p, *end = r->end;
	uint32_t *out = v->s_node, nr_nodes = v->nr_nodes;
	uint64_t node = first ? out[first - 1] : 0, d;

	for (uint32_t i = first; i < first + n; i++) {
		if (!next(r, &p, end, fast, &d))
			return bad_number(r, "sample", i, "node");
		if (d >= nr_nodes - node)
			return fail(r, ERR_FORMAT, "sample %u: node delta %" PRIu64 " out of range",
				    i, d);
		node += d;
		out[i] = (uint32_t)node;
	}
	r->p = p;
	return 0;
}

/* Nodes as deltas (so sorted by node), then label sets, strictly increasing together. */
static int get_sample_keys(struct reader *r)
{
	struct view *v = r->v;
	int rc = 0;

	for (uint32_t first = 0, left = v->nr_samples, k; left; first += k, left -= k) {
		k = fast_run(r, left);
		rc = k ? sample_nodes_column(r, true, first, k, v)
		       : sample_nodes_column(r, false, first, k = left, v);
		if (rc)
			return rc;
	}
	if ((rc = get_ids(r, 0, v->nr_samples, v->nr_sets, v->s_set, "sample", "labels")))
		return rc;
	for (uint32_t i = 1; i < v->nr_samples; i++) {
		if (v->s_node[i] == v->s_node[i - 1] && v->s_set[i] <= v->s_set[i - 1])
			return fail(r, ERR_FORMAT, "sample %u: not after sample %u (node %u)", i,
				    i - 1, v->s_node[i]);
	}
	return 0;
}

/* q * g as an int64, or false when it does not fit. */
static bool unscale(int64_t q, uint64_t g, int64_t *out)
{
	uint64_t m;

	if (__builtin_mul_overflow(magnitude(q), g, &m))
		return false;
	if (q < 0 ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX)
		return false;
	*out = q < 0 ? (int64_t)(0 - m) : (int64_t)m;
	return true;
}

static ALWAYS_INLINE int values_column(struct reader *r, bool fast, uint32_t first, uint32_t n,
				       uint32_t t, uint64_t g)
{
	const uint8_t *p = r->p, *end = r->end;
	const struct view *v = r->v;
	uint32_t stride = v->nr_types;
	int64_t *out = v->values + t;
	uint64_t q;

	for (uint32_t i = first; i < first + n; i++) {
		if (!next(r, &p, end, fast, &q))
			return bad_number(r, "sample", i, "value");
		if (!unscale(unzigzag(q), g, &out[(size_t)i * stride]))
			return fail(r, ERR_FORMAT, "sample %u: value of type %u over 64 bits", i,
				    t);
	}
	r->p = p;
	return 0;
}

static int get_values(struct reader *r, uint32_t t)
{
	struct view *v = r->v;
	uint64_t g;
	int rc;

	if (!get_u64(r, &g))
		return bad_number(r, "sample type", t, "divisor");
	if (!g) {
		for (uint32_t i = 0; i < v->nr_samples; i++)
			v->values[(size_t)i * v->nr_types + t] = 0;
		return 0;
	}
	for (uint32_t first = 0, left = v->nr_samples, k; left; first += k, left -= k) {
		k = fast_run(r, left);
		rc = k ? values_column(r, true, first, k, t, g)
		       : values_column(r, false, first, k = left, t, g);
		if (rc)
			return rc;
	}
	return 0;
}

static int get_samples(struct reader *r)
{
	struct view *v = r->v;
	int rc = get_count(r, "samples", r->lim->max_samples, 2, &v->nr_samples);

	if (rc)
		return rc;
	if (!ALLOC(r, v->s_node, v->nr_samples) || !ALLOC(r, v->s_set, v->nr_samples) ||
	    !ALLOC(r, v->values, (size_t)v->nr_samples * MAX(v->nr_types, 1)))
		return ERR_NOMEM;
	if ((rc = get_sample_keys(r)))
		return rc;
	for (uint32_t t = 0; t < v->nr_types && !rc; t++)
		rc = get_values(r, t);
	return rc;
}

static int parse_body(struct reader *r)
{
	int rc;

	if ((rc = get_strings(r)) || (rc = get_frames(r)) || (rc = get_nodes(r)) ||
	    (rc = get_types(r)) || (rc = get_sets(r)) || (rc = get_profile_labels(r)) ||
	    (rc = get_samples(r)))
		return rc;
	if (r->p != r->end)
		return fail(r, ERR_FORMAT, "%zu bytes after the samples", (size_t)(r->end - r->p));
	return 0;
}

struct apply {
	const struct view *v;
	struct profile *dst;
	uint32_t *strs, *frames, *nodes, *sets; /* UNSET until mapped */
	uint8_t *need;				/* nodes to create */
	struct label *tmp;
};

static uint32_t map_str(struct apply *a, uint32_t id)
{
	if (a->strs[id] == UNSET)
		a->strs[id] = profile_intern(a->dst, a->v->str[id], a->v->str_len[id]);
	return a->strs[id];
}

static uint32_t map_frame(struct apply *a, uint32_t id)
{
	const struct view *v = a->v;

	if (a->frames[id] == UNSET) {
		struct frame f = {
			.name = map_str(a, v->f_name[id]),
			.module = map_str(a, v->f_module[id]),
			.file = map_str(a, v->f_file[id]),
			.line = v->f_line[id],
			.addr = v->f_addr[id],
			.flags = v->f_flags[id],
		};

		a->frames[id] = profile_intern_frame(a->dst, &f);
	}
	return a->frames[id];
}

static uint32_t map_set(struct apply *a, uint32_t id)
{
	const struct view *v = a->v;

	if (a->sets[id] == UNSET) {
		uint32_t off = v->set_off[id], n = v->set_off[id + 1] - off;

		for (uint32_t i = 0; i < n; i++) {
			a->tmp[i] = v->labels[off + i];
			a->tmp[i].key = map_str(a, a->tmp[i].key);
			a->tmp[i].str = map_str(a, a->tmp[i].str);
			a->tmp[i].unit = map_str(a, a->tmp[i].unit);
		}
		a->sets[id] = profile_intern_labels(a->dst, a->tmp, n);
	}
	return a->sets[id];
}

/*
 * Mark in need the nodes on a sample's path; true when that is all of
 * them, as it is when every leaf holds a sample (a blob of one push; not
 * one type of several, nor blob_decode's empty nodes).  Whether it is
 * takes two passes without a chain from one node to the next: the sweep
 * that marks the paths has one, each node's mark waiting for its child's.
 */
static bool mark_needed(const struct view *v, uint8_t *need)
{
	uint32_t n;

	memset(need, 0, v->nr_nodes);
	for (uint32_t s = 0; s < v->nr_samples; s++)
		need[v->s_node[s]] = 1;
	for (n = 1; n < v->nr_nodes; n++)
		need[v->parent[n]] |= 2;
	for (n = 1; n < v->nr_nodes && need[n]; n++)
		;
	if (n == v->nr_nodes)
		return true;
	for (n = 0; n < v->nr_nodes; n++)
		need[n] &= 1;
	/* A parent comes before its node: one sweep back marks every node on a sample's path. */
	for (n = v->nr_nodes - 1; n; n--)
		need[v->parent[n]] |= need[n];
	return false;
}

/*
 * Create the nodes needed (all, or those on a sample's path), parents
 * first.  Each is guessed to follow the one made before it in dst, as it
 * does when dst holds blobs of the same stacks (a series' pushes, a
 * query's rollups), and when dst is empty the guess is never tried.
 */
static void map_nodes(struct apply *a, bool all)
{
	const struct view *v = a->v;
	uint32_t last = 0;

	if (!all)
		all = mark_needed(v, a->need);
	a->nodes[0] = 0;
	for (uint32_t n = 1; n < v->nr_nodes; n++) {
		if (all || a->need[n])
			a->nodes[n] = last =
				profile_child_near(a->dst, a->nodes[v->parent[n]],
						   map_frame(a, v->frame[n]), last + 1);
	}
}

/* As profile_merge's copy_header, into a profile with no types and no samples. */
static void copy_header(struct apply *a)
{
	const struct view *v = a->v;
	struct profile *dst = a->dst;

	for (uint32_t t = 0; t < v->nr_types; t++) {
		/* By C string, as profile_add_type takes them. */
		const char *type = profile_str(dst, map_str(a, v->types[t].type));

		profile_add_type(dst, type, profile_str(dst, map_str(a, v->types[t].unit)));
		if (profile_failed(dst)) /* the type is missing: apply_view stops */
			return;
		dst->types[t].decimals = v->types[t].decimals;
	}
	dst->default_type = v->default_type;
	dst->period_type.type = map_str(a, v->period_type.type);
	dst->period_type.unit = map_str(a, v->period_type.unit);
	dst->period = v->period;
	dst->time_nanos = v->time_nanos;
	dst->duration_nanos = v->duration_nanos;
	dst->profile_labels = map_set(a, v->profile_labels);
	for (uint32_t i = 0; i < v->nr_comments; i++) {
		size_t alloc = dst->alloc_comments;

		if (ALLOC_TRY_GROW(dst->comments, (size_t)dst->nr_comments + 1, alloc) < 0) {
			profile_nomem(dst);
			return;
		}
		dst->alloc_comments = (uint32_t)MIN(alloc, UINT32_MAX);
		dst->comments[dst->nr_comments++] = map_str(a, v->comments[i]);
	}
}

/* "cpu/nanoseconds,samples/count" for n types whose ids are p's. */
static void describe_types(const struct profile *p, const struct sample_type *types, uint32_t n,
			   struct strbuf *sb)
{
	for (uint32_t t = 0; t < n; t++)
		strbuf_addf(sb, "%s%s/%s", t ? "," : "", profile_str(p, types[t].type),
			    profile_str(p, types[t].unit));
}

/* As profile_merge's check: types equal by name and unit (as C strings). */
static int check_types(struct apply *a, struct error *err)
{
	struct profile *dst = a->dst;
	struct strbuf x, y;
	struct sample_type types[BLOB_MAX_TYPES];
	bool same = dst->nr_types == a->v->nr_types;

	/* Without memory for them the message lists no types. */
	strbuf_init_max(&x, 4096);
	strbuf_init_max(&y, 4096);
	for (uint32_t t = 0; t < a->v->nr_types; t++) {
		types[t].type = map_str(a, a->v->types[t].type);
		types[t].unit = map_str(a, a->v->types[t].unit);
	}
	for (uint32_t t = 0; t < dst->nr_types && same; t++)
		same = !strcmp(profile_str(dst, dst->types[t].type),
			       profile_str(dst, types[t].type)) &&
		       !strcmp(profile_str(dst, dst->types[t].unit),
			       profile_str(dst, types[t].unit));
	if (same)
		return 0;
	describe_types(dst, dst->types, dst->nr_types, &x);
	describe_types(dst, types, a->v->nr_types, &y);
	error_set(err, ERR_USAGE,
		  "blob: cannot merge profiles of different sample types (%s and %s)", x.buf,
		  y.buf);
	strbuf_release(&x);
	strbuf_release(&y);
	return ERR_USAGE;
}

static int add_samples(struct apply *a, struct error *err)
{
	const struct view *v = a->v;
	struct profile *dst = a->dst;
	int64_t mul[BLOB_MAX_TYPES], vals[BLOB_MAX_TYPES];

	/*
	 * Sums past 64 bits saturate (dst->saturated), as profile_merge's do:
	 * no stored data can make a window unreadable (issue 14).
	 */
	for (uint32_t t = 0; t < v->nr_types; t++) {
		(void)profile_set_decimals(dst, t, v->types[t].decimals);
		mul[t] = 1;
		for (uint32_t d = v->types[t].decimals; d < dst->types[t].decimals; d++)
			mul[t] *= 10;
	}
	/* Guessed as nodes are (map_nodes), one past the sample added last. */
	for (uint32_t s = 0, id = 0; s < v->nr_samples; s++, id++) {
		const int64_t *val = &v->values[(size_t)s * v->nr_types];

		for (uint32_t t = 0; t < v->nr_types; t++) {
			if (__builtin_mul_overflow(val[t], mul[t], &vals[t])) {
				vals[t] = val[t] > 0 ? INT64_MAX : INT64_MIN;
				dst->saturated = true;
			}
		}
		/* ERR_LIMIT: saturated, which dst->saturated says. */
		if (profile_add_sample_near(dst, a->nodes[v->s_node[s]], map_set(a, v->s_set[s]),
					    vals, &id) == ERR_NOMEM)
			return error_set(err, ERR_NOMEM, "blob: out of memory merging a profile");
	}
	return 0;
}

/* A new profile takes the blob's counts at once: nothing grows twice, nothing rehashes. */
static void reserve(const struct view *v, struct profile *dst)
{
	struct profile_counts n = {v->nr_strs, v->nr_frames, v->nr_nodes - 1, v->nr_samples,
				   v->str_bytes};

	if (dst->nr_nodes == 1 && !dst->nr_frames)
		profile_reserve(dst, &n);
}

/* Add the view to dst as profile_merge adds a profile; all: create every node, even empty ones. */
static int apply_view(const struct view *v, struct profile *dst, bool all, struct error *err)
{
	size_t nr = (size_t)v->nr_strs + v->nr_frames + v->nr_nodes + v->nr_sets;
	struct apply a = {v, dst, NULL, NULL, NULL, NULL, NULL, NULL};
	int rc = 0;

	a.strs = malloc(nr * sizeof(uint32_t));
	a.need = malloc(v->nr_nodes);
	a.tmp = malloc(MAX(v->max_set, 1) * sizeof(struct label));
	if (!a.strs || !a.need || !a.tmp) {
		rc = error_set(err, ERR_NOMEM, "blob: out of memory mapping %zu ids", nr);
		goto out;
	}
	memset(a.strs, 0xff, nr * sizeof(uint32_t));
	a.frames = a.strs + v->nr_strs;
	a.nodes = a.frames + v->nr_frames;
	a.sets = a.nodes + v->nr_nodes;
	a.sets[0] = 0;
	if (!dst->nr_types && !dst->nr_samples) {
		copy_header(&a);
		reserve(v, dst);
	} else {
		if ((rc = check_types(&a, err)))
			goto out;
		if (dst->duration_nanos < v->duration_nanos)
			dst->duration_nanos = v->duration_nanos;
	}
	if (!profile_failed(dst)) {
		map_nodes(&a, all);
		rc = add_samples(&a, err);
	}
	if (rc == 0 && profile_failed(dst))
		rc = error_set(err, ERR_NOMEM, "blob: out of memory merging a profile");
out:
	free(a.strs);
	free(a.need);
	free(a.tmp);
	return rc;
}

/*
 * Keep only sample type T of the view, and the samples with a value in
 * it, compacted in place: the view of a single-type profile.
 */
static int select_type(struct view *v, int t, struct error *err)
{
	uint32_t n = 0;

	if ((uint32_t)t >= v->nr_types)
		return error_set(err, ERR_USAGE, "blob: no sample type %d (the blob has %u)", t,
				 v->nr_types);
	for (uint32_t s = 0; s < v->nr_samples; s++) {
		int64_t val = v->values[(size_t)s * v->nr_types + (uint32_t)t];

		if (!val)
			continue;
		v->s_node[n] = v->s_node[s];
		v->s_set[n] = v->s_set[s];
		v->values[n++] = val;
	}
	v->nr_samples = n;
	v->types[0] = v->types[t];
	v->nr_types = 1;
	v->default_type = 0;
	return 0;
}

int blob_read_body(const uint8_t *body, size_t len, const struct blob_limits *lim, int type,
		   struct profile *dst, bool all_nodes, struct error *err)
{
	struct view v = {0};
	struct reader r = {body, body + len, lim, &v, err, NULL};
	int rc = parse_body(&r);

	if (!rc && type >= 0)
		rc = select_type(&v, type, err);
	if (!rc)
		rc = apply_view(&v, dst, all_nodes, err);
	view_release(&v);
	return rc;
}
