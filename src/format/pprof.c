/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "format/pprof.h"
#include "format/pprof_decode.h"

/*
 * Reading pprof's profile.proto.  The input layer has already inflated
 * gzip; here the bytes are decoded (pprof_decode.c) under a memory
 * budget, every reference is checked, and the samples are replayed into a
 * profile.  pprof lists a location's lines innermost first and a
 * sample's locations leaf first; plateau's stacks are root first, so a
 * location becomes its lines reversed (all but the outermost flagged
 * FRAME_INLINED) and a sample its locations reversed.
 */

typedef struct pbd_profile PbProfile;
typedef struct pbd_sample PbSample;
typedef struct pbd_mapping PbMapping;
typedef struct pbd_location PbLocation;
typedef struct pbd_function PbFunction;
typedef struct pbd_value_type PbValueType;

/* protobuf's own message size limit; also keeps the decoder's counts in 32 bits. */
#define PPROF_MAX_INPUT	 ((size_t)INT32_MAX)
#define PPROF_MAX_DEPTH	 (1u << 20) /* frames in one sample's stack */
#define PB_ALLOC_FACTOR	 128	    /* decoded bytes allowed per input byte */
#define PB_ALLOC_MIN	 ((size_t)1 << 20)
#define PB_ALLOC_MAX	 ((size_t)4 << 30)
#define FRAME_BUDGET_MIN ((size_t)1 << 20)

#define LABEL_CACHE 16 /* a power of 2 */

/* An index from pprof ids (nonzero, unique uint64) to array positions. */
struct idmap {
	uint32_t *dense; /* dense[id - 1] = position + 1, when every id is small */
	struct idpair {
		uint64_t id;
		uint32_t pos;
	} * sorted;
	size_t n;
};

static int idpair_cmp(const void *a, const void *b)
{
	const struct idpair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void idmap_release(struct idmap *m)
{
	free(m->dense);
	free(m->sorted);
	memset(m, 0, sizeof(*m));
}

/* The position of id, or -1. */
static int64_t idmap_find(const struct idmap *m, uint64_t id)
{
	struct idpair key = {id, 0}, *hit;

	if (m->dense)
		return id && id <= m->n && m->dense[id - 1] ? (int64_t)m->dense[id - 1] - 1 : -1;
	hit = bsearch(&key, m->sorted, m->n, sizeof(key), idpair_cmp);
	return hit ? (int64_t)hit->pos : -1;
}

struct pprof_reader {
	const char *name;
	bool bounded_sum; /* read_options' */
	const PbProfile *pb;
	struct profile *p;
	struct error *err;
	uint32_t *strmap; /* pprof string index -> profile string id, or UINT32_MAX */
	struct idmap mappings, functions, locations;
	uint32_t *map_module, *map_flags; /* per mapping position */
	uint32_t *loc_off, *loc_frames;	  /* frames of location i, outermost first */
	size_t frame_budget;		  /* stack frames samples may still expand to */
	uint32_t *stack;
	size_t stack_alloc;
	struct label *labels;
	size_t labels_alloc;
	/*
	 * The label sets of earlier samples by their labels as decoded
	 * (string indexes and numbers): a push's samples mostly repeat a few
	 * sets (threads, endpoints), each then converted, checked and
	 * interned once.  Direct-mapped; ls NULL: empty.
	 */
	struct label_cache {
		const struct pbd_label *ls;
		uint32_t n, set;
	} lcache[LABEL_CACHE];
	uint64_t *ids; /* a packed sample's location ids, decoded */
	size_t ids_alloc;
};

/* Memory ran out (the server reports it, the CLI dies with it). */
static int nomem(const struct pprof_reader *r)
{
	return error_set(r->err, ERR_NOMEM, "%s: out of memory reading pprof data", r->name);
}

/*
 * Build m over n ids read through get(); kind names the message in
 * errors ("location").  Ids must be nonzero and unique.
 */
static int idmap_build(struct pprof_reader *r, struct idmap *m, size_t n,
		       uint64_t (*get)(const PbProfile *, size_t), const char *kind)
{
	bool dense = true;

	m->n = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = get(r->pb, i);

		if (!id)
			return error_set(r->err, ERR_FORMAT, "%s: %s[%zu]: id 0 is reserved",
					 r->name, kind, i);
		dense &= id <= n;
	}
	if (dense) {
		m->dense = calloc(n ? n : 1, sizeof(*m->dense));
		if (!m->dense)
			return nomem(r);
		for (size_t i = 0; i < n; i++) {
			uint64_t id = get(r->pb, i);

			if (m->dense[id - 1])
				return error_set(r->err, ERR_FORMAT,
						 "%s: %s[%zu]: duplicate id %" PRIu64, r->name,
						 kind, i, id);
			m->dense[id - 1] = (uint32_t)i + 1;
		}
		return 0;
	}
	m->sorted = alloc_array(NULL, n ? n : 1, sizeof(*m->sorted));
	if (!m->sorted)
		return nomem(r);
	for (size_t i = 0; i < n; i++)
		m->sorted[i] = (struct idpair){get(r->pb, i), (uint32_t)i};
	if (n > 1)
		qsort(m->sorted, n, sizeof(*m->sorted), idpair_cmp);
	for (size_t i = 1; i < n; i++) {
		if (m->sorted[i].id == m->sorted[i - 1].id)
			return error_set(r->err, ERR_FORMAT, "%s: %s[%u]: duplicate id %" PRIu64,
					 r->name, kind, MAX(m->sorted[i].pos, m->sorted[i - 1].pos),
					 m->sorted[i].id);
	}
	return 0;
}

static uint64_t mapping_id(const PbProfile *pb, size_t i)
{
	return pb->mapping[i].id;
}

static uint64_t function_id(const PbProfile *pb, size_t i)
{
	return pb->function[i].id;
}

static uint64_t location_id(const PbProfile *pb, size_t i)
{
	return pb->location[i].id;
}

static bool str_ok(const struct pprof_reader *r, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < r->pb->n_string_table;
}

/* The profile string for a checked index. */
static uint32_t str_id(struct pprof_reader *r, int64_t idx)
{
	uint32_t *slot = &r->strmap[idx];

	if (*slot == UINT32_MAX)
		*slot = profile_intern_str(r->p, r->pb->string_table[idx]);
	return *slot;
}

static const char *str_at(const struct pprof_reader *r, int64_t idx)
{
	return r->pb->string_table[idx];
}

static int bad_str(struct pprof_reader *r, const char *what, uint64_t id, const char *field,
		   int64_t idx)
{
	return error_set(r->err, ERR_FORMAT,
			 "%s: %s %" PRIu64 ": %s index %" PRId64 " out of range", r->name, what, id,
			 field, idx);
}

static int check_strings(struct pprof_reader *r)
{
	if (!r->pb->n_string_table)
		return error_set(
			r->err, ERR_FORMAT,
			"%s: not a pprof profile: empty string_table (entry 0 must be \"\")",
			r->name);
	if (r->pb->string_table[0][0])
		return error_set(r->err, ERR_FORMAT, "%s: string_table[0] is not the empty string",
				 r->name);
	r->strmap = alloc_array(NULL, r->pb->n_string_table, sizeof(*r->strmap));
	if (!r->strmap)
		return nomem(r);
	memset(r->strmap, 0xff, r->pb->n_string_table * sizeof(*r->strmap));
	r->strmap[0] = 0;
	return 0;
}

static int read_types(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;

	if (!pb->n_sample_type)
		return error_set(r->err, ERR_FORMAT, "%s: no sample types", r->name);
	if (pb->n_sample_type > PPROF_MAX_TYPES)
		return error_set(r->err, ERR_LIMIT, "%s: %zu sample types (at most %d supported)",
				 r->name, pb->n_sample_type, PPROF_MAX_TYPES);
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		const PbValueType *t = &pb->sample_type[i];

		if (!str_ok(r, t->type))
			return bad_str(r, "sample_type", i, "type", t->type);
		if (!str_ok(r, t->unit))
			return bad_str(r, "sample_type", i, "unit", t->unit);
		profile_add_type(r->p, str_at(r, t->type), str_at(r, t->unit));
	}
	if (!str_ok(r, pb->period_type.type))
		return bad_str(r, "period_type", 0, "type", pb->period_type.type);
	if (!str_ok(r, pb->period_type.unit))
		return bad_str(r, "period_type", 0, "unit", pb->period_type.unit);
	r->p->period_type.type = str_id(r, pb->period_type.type);
	r->p->period_type.unit = str_id(r, pb->period_type.unit);
	return 0;
}

/*
 * go tool pprof's rule: default_sample_type names a type; when it is unset
 * or names none of them, the last type is the default.
 */
static int read_default_type(struct pprof_reader *r)
{
	int64_t idx = r->pb->default_sample_type;

	r->p->default_type = r->p->nr_types - 1;
	if (!str_ok(r, idx))
		return bad_str(r, "profile", 0, "default_sample_type", idx);
	if (idx) {
		int t = profile_find_type(r->p, str_at(r, idx));

		if (t >= 0)
			r->p->default_type = (uint32_t)t;
	}
	return 0;
}

/* "plateau.decimals TYPE D" comments, as pprof_write records scaled values. */
static bool read_decimals_comment(struct pprof_reader *r, const char *s)
{
	unsigned t, d;
	int end = 0;

	if (sscanf(s, PPROF_DECIMALS_COMMENT " %u %u%n", &t, &d, &end) != 2 || s[end])
		return false;
	if (t >= r->p->nr_types || d > 9)
		return false;
	r->p->types[t].decimals = d;
	return true;
}

static int read_header(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	struct profile *p = r->p;

	p->period = pb->period;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	if (!str_ok(r, pb->drop_frames))
		return bad_str(r, "profile", 0, "drop_frames", pb->drop_frames);
	if (!str_ok(r, pb->keep_frames))
		return bad_str(r, "profile", 0, "keep_frames", pb->keep_frames);
	if (!str_ok(r, pb->doc_url))
		return bad_str(r, "profile", 0, "doc_url", pb->doc_url);
	for (size_t i = 0; i < pb->n_comment; i++) {
		int64_t c = (int64_t)pb->comment[i];

		if (!str_ok(r, c))
			return bad_str(r, "comment", i, "string", c);
		if (read_decimals_comment(r, str_at(r, c)))
			continue;
		size_t alloc = p->alloc_comments;

		if (ALLOC_TRY_GROW(p->comments, (size_t)p->nr_comments + 1, alloc) < 0)
			return nomem(r);
		p->alloc_comments = (uint32_t)MIN(alloc, UINT32_MAX);
		p->comments[p->nr_comments++] = str_id(r, c);
	}
	return read_default_type(r);
}

static uint32_t module_flags(const char *name)
{
	size_t len = strlen(name);

	if (!strncmp(name, "[kernel", 7) || (len >= 7 && !strcmp(name + len - 7, "vmlinux")))
		return FRAME_KERNEL;
	if (!strncmp(name, "/tmp/perf-", 10) && len > 14 && !strcmp(name + len - 4, ".map"))
		return FRAME_JIT;
	return 0;
}

static int read_mappings(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	int rc = idmap_build(r, &r->mappings, pb->n_mapping, mapping_id, "mapping");

	if (rc)
		return rc;
	r->map_module = calloc(pb->n_mapping + 1, sizeof(*r->map_module));
	r->map_flags = calloc(pb->n_mapping + 1, sizeof(*r->map_flags));
	if (!r->map_module || !r->map_flags)
		return nomem(r);
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = &pb->mapping[i];
		int64_t name = m->filename;

		if (!str_ok(r, m->filename))
			return bad_str(r, "mapping", m->id, "filename", m->filename);
		if (!str_ok(r, m->build_id))
			return bad_str(r, "mapping", m->id, "build_id", m->build_id);
		/* The build id names the module only when there is no file name. */
		if (!name)
			name = m->build_id;
		r->map_module[i] = str_id(r, name);
		r->map_flags[i] = module_flags(str_at(r, name));
	}
	return 0;
}

static int read_functions(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	int rc = idmap_build(r, &r->functions, pb->n_function, function_id, "function");

	if (rc)
		return rc;
	for (size_t i = 0; i < pb->n_function; i++) {
		const PbFunction *f = &pb->function[i];

		if (!str_ok(r, f->name))
			return bad_str(r, "function", f->id, "name", f->name);
		if (!str_ok(r, f->system_name))
			return bad_str(r, "function", f->id, "system_name", f->system_name);
		if (!str_ok(r, f->filename))
			return bad_str(r, "function", f->id, "filename", f->filename);
	}
	return 0;
}

/* The name of code with no symbol: "module+0xOFFSET", or "0xADDR" without a module. */
static uint32_t unsymbolized_name(struct pprof_reader *r, const PbLocation *l, int64_t map)
{
	char buf[4096];

	if (map >= 0 && r->map_module[map] && l->address >= r->pb->mapping[map].memory_start) {
		const PbMapping *m = &r->pb->mapping[map];
		const char *mod = profile_str(r->p, r->map_module[map]);
		const char *base = strrchr(mod, '/');

		snprintf(buf, sizeof(buf), "%.4000s+0x%" PRIx64, base && base[1] ? base + 1 : mod,
			 l->address - m->memory_start + m->file_offset);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, l->address);
	}
	return profile_intern_str(r->p, buf);
}

/* The frame for line j of location l (map: its mapping's position or -1). */
static int line_frame(struct pprof_reader *r, const PbLocation *l, int64_t map, size_t j,
		      struct frame *f)
{
	const struct pbd_line *ln = &pbd_lines(r->pb, l)[j];
	int64_t fn;

	if (ln->line < 0 || ln->line > UINT32_MAX)
		return error_set(r->err, ERR_FORMAT,
				 "%s: location %" PRIu64 ": line %zu: line number %" PRId64
				 " out of range",
				 r->name, l->id, j, ln->line);
	f->line = (uint32_t)ln->line;
	if (j + 1 < l->n_line)
		f->flags |= FRAME_INLINED;
	if (!ln->function_id) {
		f->name = unsymbolized_name(r, l, map);
		f->flags |= FRAME_UNSYMBOLIZED;
		return 0;
	}
	fn = idmap_find(&r->functions, ln->function_id);
	if (fn < 0)
		return error_set(r->err, ERR_FORMAT,
				 "%s: location %" PRIu64 ": line %zu: function_id %" PRIu64
				 " not found",
				 r->name, l->id, j, ln->function_id);
	f->name = str_id(r, r->pb->function[fn].name ? r->pb->function[fn].name
						     : r->pb->function[fn].system_name);
	f->file = str_id(r, r->pb->function[fn].filename);
	return 0;
}

/* Append location l's frames, outermost first, to r->loc_frames. */
static int read_location(struct pprof_reader *r, const PbLocation *l, size_t *nr, size_t *alloc)
{
	int64_t map = -1;
	struct frame f = {0};

	if (l->mapping_id) {
		map = idmap_find(&r->mappings, l->mapping_id);
		if (map < 0)
			return error_set(r->err, ERR_FORMAT,
					 "%s: location %" PRIu64 ": mapping_id %" PRIu64
					 " not found",
					 r->name, l->id, l->mapping_id);
		f.module = r->map_module[map];
	}
	if (ALLOC_TRY_GROW(r->loc_frames, st_add(*nr, MAX(l->n_line, 1)), *alloc) < 0)
		return nomem(r);
	if (!l->n_line) {
		f.addr = l->address;
		f.flags = (map >= 0 ? r->map_flags[map] : 0) | FRAME_UNSYMBOLIZED;
		f.name = unsymbolized_name(r, l, map);
		r->loc_frames[(*nr)++] = profile_intern_frame(r->p, &f);
		return 0;
	}
	for (size_t j = l->n_line; j-- > 0;) {
		struct frame g = f;
		int rc;

		g.addr = l->address;
		g.flags = map >= 0 ? r->map_flags[map] : 0;
		if ((rc = line_frame(r, l, map, j, &g)))
			return rc;
		r->loc_frames[(*nr)++] = profile_intern_frame(r->p, &g);
	}
	return 0;
}

static int read_locations(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	size_t nr = 0, alloc = 0;
	int rc = idmap_build(r, &r->locations, pb->n_location, location_id, "location");

	if (rc)
		return rc;
	r->loc_off = alloc_array(NULL, pb->n_location + 1, sizeof(*r->loc_off));
	/* A location has its lines' frames or one: room for all at once. */
	if (!r->loc_off ||
	    ALLOC_TRY_GROW(r->loc_frames, st_add(pb->n_lines, pb->n_location), alloc) < 0)
		return nomem(r);
	for (size_t i = 0; i < pb->n_location; i++) {
		r->loc_off[i] = (uint32_t)nr;
		if ((rc = read_location(r, &pb->location[i], &nr, &alloc)))
			return rc;
		if (nr > UINT32_MAX / 2)
			return error_set(r->err, ERR_LIMIT, "%s: too many location lines", r->name);
	}
	r->loc_off[pb->n_location] = (uint32_t)nr;
	return 0;
}

/* The stack of sample i, root first, into r->stack and its depth into *depth. */
static int sample_stack(struct pprof_reader *r, size_t i, size_t *depth)
{
	const PbSample *s = &r->pb->sample[i];
	const uint64_t *ids;
	size_t d = 0;

	if (ALLOC_TRY_GROW(r->ids, s->n_location_id, r->ids_alloc) < 0)
		return nomem(r);
	ids = pbd_sample_ids(r->pb, s, r->ids);

	for (size_t k = s->n_location_id; k-- > 0;) {
		int64_t loc = idmap_find(&r->locations, ids[k]);
		uint32_t off, n;

		if (loc < 0)
			return error_set(r->err, ERR_FORMAT,
					 "%s: sample %zu: location_id %" PRIu64 " not found",
					 r->name, i, ids[k]);
		off = r->loc_off[loc];
		n = r->loc_off[loc + 1] - off;
		if (d + n > PPROF_MAX_DEPTH)
			return error_set(r->err, ERR_LIMIT,
					 "%s: sample %zu: stack deeper than %u frames", r->name, i,
					 PPROF_MAX_DEPTH);
		if (n > r->frame_budget)
			return error_set(
				r->err, ERR_LIMIT,
				"%s: sample %zu: stacks expand to too many frames in total",
				r->name, i);
		r->frame_budget -= n;
		if (ALLOC_TRY_GROW(r->stack, d + n, r->stack_alloc) < 0)
			return nomem(r);
		/* Mostly one frame (no inlining): a store, not a call to memcpy. */
		if (n == 1)
			r->stack[d] = r->loc_frames[off];
		else
			memcpy(r->stack + d, r->loc_frames + off, n * sizeof(*r->stack));
		d += n;
	}
	*depth = d;
	return 0;
}

/* The slot of labels LS[0..N) in the reader's label cache. */
static struct label_cache *label_slot(struct pprof_reader *r, const struct pbd_label *ls, size_t n)
{
	uint64_t h = n;

	for (size_t j = 0; j < n; j++)
		h = (h ^ (uint64_t)ls[j].key) * 0xff51afd7ed558ccdULL ^ (uint64_t)ls[j].str ^
		    (uint64_t)ls[j].num << 17 ^ (uint64_t)ls[j].num_unit << 41;
	return &r->lcache[hash_u64(h) & (LABEL_CACHE - 1)];
}

static int sample_labels(struct pprof_reader *r, size_t i, uint32_t *set)
{
	const PbSample *s = &r->pb->sample[i];
	const struct pbd_label *ls = pbd_labels(r->pb, s);
	struct label_cache *c = s->n_label ? label_slot(r, ls, s->n_label) : NULL;

	if (c && c->ls && c->n == s->n_label && !memcmp(c->ls, ls, s->n_label * sizeof(*ls))) {
		*set = c->set;
		return 0;
	}
	if (ALLOC_TRY_GROW(r->labels, s->n_label, r->labels_alloc) < 0)
		return nomem(r);
	for (size_t j = 0; j < s->n_label; j++) {
		const struct pbd_label *l = &ls[j];
		struct label *out = &r->labels[j];

		if (!str_ok(r, l->key))
			return bad_str(r, "sample", i, "label key", l->key);
		if (!str_ok(r, l->str))
			return bad_str(r, "sample", i, "label str", l->str);
		if (!str_ok(r, l->num_unit))
			return bad_str(r, "sample", i, "label num_unit", l->num_unit);
		out->key = str_id(r, l->key);
		out->str = str_id(r, l->str);
		out->num = l->str ? 0 : l->num;
		out->unit = l->str ? 0 : str_id(r, l->num_unit);
	}
	*set = profile_intern_labels(r->p, r->labels, s->n_label);
	if (c && !profile_failed(r->p))
		*c = (struct label_cache){ls, (uint32_t)s->n_label, *set};
	return 0;
}

/*
 * Samples that share a stack (the same one under other labels: threads,
 * endpoints) share its node: a table from location-id arrays to nodes
 * saves walking the tree once per sample.  Open addressing over twice the
 * samples, keyed by the array's hash and checked against the array.
 */
struct stack_slot {
	uint64_t hash;
	uint32_t sample; /* the first sample with this stack, + 1; 0 = empty */
	uint32_t node;
};

/*
 * Whether samples A and B have one stack by its bytes: the packed ids
 * when both are still packed (nearly always), else the id arrays.  Two
 * spellings of one stack (packed and not) count as two: the tree gives
 * them the same node anyway.
 */
static bool same_stack(const PbProfile *pb, const PbSample *a, const PbSample *b)
{
	if (a->n_location_id != b->n_location_id || !a->loc_raw != !b->loc_raw)
		return false;
	if (a->loc_raw)
		return a->loc_raw_len == b->loc_raw_len &&
		       !memcmp(a->loc_raw, b->loc_raw, a->loc_raw_len);
	return !memcmp(pb->location_ids + a->loc_off, pb->location_ids + b->loc_off,
		       a->n_location_id * sizeof(uint64_t));
}

/* The slot of sample i's stack (hash h), or NULL and the empty slot for it in *empty. */
static struct stack_slot *stack_slot_find(struct stack_slot *t, size_t mask, const PbProfile *pb,
					  size_t i, uint64_t h, struct stack_slot **empty)
{
	const PbSample *s = &pb->sample[i];

	for (size_t k = h & mask;; k = (k + 1) & mask) {
		struct stack_slot *e = &t[k];
		const PbSample *o;

		if (!e->sample) {
			*empty = e;
			return NULL;
		}
		o = &pb->sample[e->sample - 1];
		if (e->hash == h && same_stack(pb, o, s))
			return e;
	}
}

/*
 * A stack's hash, for the table above: the location ids of every sample
 * pass through here (40,000 of them in a push of 2,000 samples), so two
 * lanes of one multiply each rather than hash_bytes' full mix per id;
 * the table compares the arrays anyway.
 */
static uint64_t hash_ids(const uint64_t *ids, size_t n)
{
	uint64_t a = n, b = 0x9e3779b97f4a7c15ULL;
	size_t i = 0;

	for (; i + 1 < n; i += 2) {
		a = (a ^ ids[i]) * 0xff51afd7ed558ccdULL;
		b = (b ^ ids[i + 1]) * 0xc4ceb9fe1a85ec53ULL;
	}
	if (i < n)
		a = (a ^ ids[i]) * 0xff51afd7ed558ccdULL;
	return hash_u64(a ^ (b >> 29 | b << 35));
}

/* The hash of sample i's stack, for the table above. */
static uint64_t stack_hash(const PbProfile *pb, const PbSample *s)
{
	return s->loc_raw ? hash_bytes(s->loc_raw, s->loc_raw_len, 1)
			  : hash_ids(pbd_sample_ids(pb, s, NULL), s->n_location_id);
}

/*
 * First pass over the samples: each one's slot in the table (its stack's
 * first sample holds the slot), and the location ids of the distinct
 * stacks, in *ids: the tree has about that many nodes (fewer where stacks
 * share a prefix, more where locations are inlined), so that room is made
 * once, not by doubling and copying as the stacks come.
 */
static void stack_slots(const PbProfile *pb, struct stack_slot *t, size_t mask, uint32_t *slot_of,
			size_t *ids)
{
	for (size_t i = 0; i < pb->n_sample; i++) {
		const PbSample *s = &pb->sample[i];
		uint64_t h = stack_hash(pb, s);
		struct stack_slot *empty = NULL;
		struct stack_slot *known = stack_slot_find(t, mask, pb, i, h, &empty);

		if (known) {
			slot_of[i] = (uint32_t)(known - t);
			continue;
		}
		*empty = (struct stack_slot){h, (uint32_t)i + 1, 0};
		slot_of[i] = (uint32_t)(empty - t);
		*ids += s->n_location_id;
	}
}

/* The node of sample i: its stack's, built at the stack's first sample. */
static int sample_node(struct pprof_reader *r, struct stack_slot *e, size_t i, uint32_t *node)
{
	size_t depth = 0;
	int rc;

	if (e->sample != i + 1) {
		*node = e->node;
		return 0;
	}
	if ((rc = sample_stack(r, i, &depth)))
		return rc;
	*node = e->node = profile_stack(r->p, r->stack, depth);
	return 0;
}

/*
 * Add the magnitudes of V (one per type) to SUM; false when one passes
 * 64 bits: a profile whose values cannot all be summed (two samples of
 * 2^63-1) is refused, so no total, node or merge of it wraps.
 */
static bool sum_magnitudes(int64_t *sum, const int64_t *v, uint32_t n)
{
	for (uint32_t t = 0; t < n; t++) {
		int64_t m = v[t] < 0 ? -(v[t] + 1) : v[t]; /* |v| - (v < 0): no overflow */

		if (__builtin_add_overflow(sum[t], m, &sum[t]) ||
		    (v[t] < 0 && __builtin_add_overflow(sum[t], 1, &sum[t])))
			return false;
	}
	return true;
}

static int read_samples(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	size_t size = 16, mask, ids = 0;
	struct stack_slot *t;
	uint32_t *slot_of;
	struct profile_counts n = {0};
	int64_t sum[PPROF_MAX_TYPES] = {0};
	int rc = 0;

	while (size < 2 * pb->n_sample)
		size <<= 1;
	mask = size - 1;
	t = calloc(size, sizeof(*t));
	slot_of = alloc_array(NULL, pb->n_sample + 1, sizeof(*slot_of));
	if (!t || !slot_of) {
		free(t);
		free(slot_of);
		return nomem(r);
	}
	stack_slots(pb, t, mask, slot_of, &ids);
	n.nodes = (uint32_t)MIN(ids, UINT32_MAX / 2);
	profile_reserve(r->p, &n);
	for (size_t i = 0; i < pb->n_sample && rc == 0; i++) {
		const PbSample *s = &pb->sample[i];
		uint32_t labels = 0, node;

		if (i % PROFILE_CHARGE_STEP == 0 && profile_charge(r->p)) {
			rc = error_set(r->err, ERR_LIMIT,
				       "%s: sample %zu: " INPUT_BUDGET_MSG
				       " (%zu bytes for the profiles being read); retry later",
				       r->name, i, r->p->budget->limit);
			break;
		}
		if (profile_failed(r->p))
			rc = nomem(r);
		else if (s->n_value != r->p->nr_types)
			rc = error_set(r->err, ERR_FORMAT,
				       "%s: sample %zu: %u values for %u sample types", r->name, i,
				       s->n_value, r->p->nr_types);
		else if (r->bounded_sum && !sum_magnitudes(sum, pbd_values(pb, s), s->n_value))
			rc = error_set(r->err, ERR_LIMIT,
				       "%s: sample %zu: sum of values overflows 64 bits", r->name,
				       i);
		else if ((rc = sample_node(r, &t[slot_of[i]], i, &node)) == 0 &&
			 (rc = sample_labels(r, i, &labels)) == 0 &&
			 (rc = profile_add_sample(r->p, node, labels, pbd_values(pb, s))))
			rc = rc == ERR_NOMEM
				     ? nomem(r)
				     : error_set(r->err, ERR_LIMIT,
						 "%s: sample %zu: sum of values overflows 64 bits",
						 r->name, i);
	}
	free(t);
	free(slot_of);
	return rc;
}

/* Size the profile for what the message holds (upper bounds): nothing grows twice. */
static void reserve(struct pprof_reader *r)
{
	const PbProfile *pb = r->pb;
	struct profile_counts n = {
		.strings = (uint32_t)MIN(pb->n_string_table, UINT32_MAX),
		.frames = (uint32_t)MIN(pb->n_lines + pb->n_location, UINT32_MAX),
		.samples = (uint32_t)MIN(pb->n_sample, UINT32_MAX),
		.string_bytes = pb->n_strings,
	};

	profile_reserve(r->p, &n);
}

static int read_profile(struct pprof_reader *r)
{
	int rc;

	if ((rc = check_strings(r)) || (rc = read_types(r)))
		return rc;
	if (profile_failed(r->p)) /* a type is missing */
		return nomem(r);
	reserve(r);
	if ((rc = read_header(r)) || (rc = read_mappings(r)) || (rc = read_functions(r)) ||
	    (rc = read_locations(r)))
		return rc;
	return read_samples(r);
}

static void reader_release(struct pprof_reader *r)
{
	free(r->strmap);
	idmap_release(&r->mappings);
	idmap_release(&r->functions);
	idmap_release(&r->locations);
	free(r->map_module);
	free(r->map_flags);
	free(r->loc_off);
	free(r->loc_frames);
	free(r->stack);
	free(r->labels);
	free(r->ids);
}

/* Decode under a budget that follows the input's size. */
static int pprof_unpack(PbProfile *pb, const char *name, const char *data, size_t len,
			struct budget *budget, struct error *err)
{
	size_t cap = len > (PB_ALLOC_MAX - PB_ALLOC_MIN) / PB_ALLOC_FACTOR
			     ? PB_ALLOC_MAX
			     : PB_ALLOC_MIN + len * PB_ALLOC_FACTOR;

	if (len > PPROF_MAX_INPUT)
		return error_set(err, ERR_LIMIT, "%s: pprof data larger than %zu bytes", name,
				 PPROF_MAX_INPUT);
	return pbd_decode_budget(pb, name, data, len, cap, budget, err);
}

int pprof_read(const struct input *in, const struct read_options *o, struct profile **out,
	       struct error *err)
{
	struct pprof_reader r = {.name = in->name, .err = err, .bounded_sum = o && o->bounded_sum};
	const char *data = in->data;
	size_t len = in->len;
	char *inflated = NULL;
	PbProfile pb = {0};
	int rc;

	*out = NULL;
	/* Callers normally hand over inflated data; accept gzip anyway. */
	if (input_is_gzip(data, len)) {
		rc = input_gunzip(in->name, data, len, PPROF_MAX_INPUT, &inflated, &len, err);
		if (rc)
			return rc;
		data = inflated;
	}
	rc = pprof_unpack(&pb, in->name, data, len, in->budget, err);
	if (rc) {
		free(inflated);
		pbd_release(&pb);
		return rc;
	}
	r.pb = &pb;
	r.p = profile_new();
	if (r.p) {
		r.p->budget = in->budget;
		r.p->keep_order = o && o->keep_order;
		r.frame_budget = st_add(FRAME_BUDGET_MIN, st_mult(len, 64));
		rc = read_profile(&r);
	}
	if (!r.p || (rc == 0 && profile_failed(r.p)))
		rc = nomem(&r);
	if (!rc && profile_charge(r.p))
		rc = error_set(err, ERR_LIMIT,
			       "%s: " INPUT_BUDGET_MSG
			       " (%zu bytes for the profiles being read); retry later",
			       in->name, r.p->budget->limit);
	reader_release(&r);
	pbd_release(&pb);
	free(inflated); /* after the samples: their packed ids point into it */
	if (rc) {
		profile_free(r.p);
		return rc;
	}
	*out = r.p;
	return 0;
}
