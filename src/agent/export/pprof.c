/* SPDX-License-Identifier: MIT */
/*
 * The agent's pprof encoder (pprof.h).  The output is written as a stream
 * into one growing buffer of gzipped bytes: each repeated record is packed
 * by protobuf-c on its own and deflated at once, so memory follows the
 * tables (strings, functions, locations), never the samples.  Fields come
 * in this order: sample types, samples (which number the locations they
 * use), locations (which number functions and mappings), mappings,
 * functions, strings, then the scalars; protobuf readers accept any order.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/export/pprof.h"
#include "format/pprof_fields.h"
#include "symbol/symname.h"
#include "profile.pb-c.h"
#include "util/banned.h"

typedef Perftools__Profiles__Label PbLabel;

#define STAGE_SIZE (1u << 16) /* bytes gathered before each deflate call */
#define ZLEVEL	   1	      /* the collector shares the host's CPU: fast over small */
#define MAX_IDS	   (UINT32_MAX / 2)

/* Open addressing from a 64-bit key to a non-zero 32-bit value. */
struct u64map {
	uint64_t *keys;
	uint32_t *vals; /* 0 = empty slot */
	size_t mask, n;
};

struct str {
	const char *s;
	size_t len;
};

struct strtab {
	struct str *v;
	size_t n, alloc;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t mask;
};

struct loc {
	uintptr_t pc;
	int map;     /* symtab mapping index, or -1 */
	uint32_t fn; /* function id, 0 = unknown */
};

struct writer {
	ProtobufCBuffer buf; /* first: protobuf-c appends through it */
	int err;
	z_stream zs;
	uint8_t stage[STAGE_SIZE];
	size_t nstage;
	uint8_t *out;
	size_t alloc_out;

	struct agent_symtab *st;
	struct strtab strs;
	char **owned; /* strings made here (build-ids in hex, demangled names) */
	size_t nowned, alloc_owned;

	struct u64map loc_of_pc; /* pc -> location id */
	struct loc *locs;
	size_t nlocs, alloc_locs;

	struct u64map fn_of_key; /* name << 32 | file -> function id */
	uint64_t *fns;		 /* function id - 1 -> key */
	size_t nfns, alloc_fns;

	uint32_t *map_id; /* symtab mapping index -> mapping id, 0 = unused */
	size_t nmaps;
	uint32_t *map_order; /* mapping id - 1 -> symtab index */
	size_t nused;

	uint64_t *ids; /* one sample's location ids */
	size_t alloc_ids;
	PbLabel *labels;
	PbLabel **label_ptrs;
	size_t alloc_labels, alloc_ptrs;
};

/* Make room for N more elements of SIZE in *V (capacity *ALLOC); sets w->err on failure. */
static bool grow(struct writer *w, void **v, size_t *alloc, size_t n, size_t size)
{
	size_t want = *alloc ? *alloc : 16;
	void *p;

	if (n <= *alloc)
		return true;
	while (want < n && want <= SIZE_MAX / 2)
		want *= 2;
	if (want < n || want > SIZE_MAX / size || !(p = realloc(*v, want * size))) {
		w->err = -ENOMEM;
		return false;
	}
	*v = p;
	*alloc = want;
	return true;
}

#define GROW(w, v, alloc, n) grow(w, (void **)&(v), &(alloc), (n), sizeof(*(v)))

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	return x ^ (x >> 33);
}

static bool u64map_resize(struct u64map *m, size_t cap)
{
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	for (size_t i = 0; m->vals && i <= m->mask; i++) {
		size_t j = mix64(m->keys[i]) & (cap - 1);

		if (!m->vals[i])
			continue;
		while (vals[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->mask = cap - 1;
	return true;
}

/* The value slot of KEY; a new key gets a slot holding 0 that the caller must set. */
static uint32_t *u64map_slot(struct writer *w, struct u64map *m, uint64_t key)
{
	size_t i;

	if ((!m->vals || (m->n + 1) * 2 > m->mask + 1) &&
	    !u64map_resize(m, m->vals ? (m->mask + 1) * 2 : 1024)) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = mix64(key) & m->mask; m->vals[i]; i = (i + 1) & m->mask) {
		if (m->keys[i] == key)
			return &m->vals[i];
	}
	m->keys[i] = key;
	m->n++;
	return &m->vals[i];
}

static void u64map_release(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
}

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
	return mix64(h);
}

static bool strtab_rehash(struct strtab *t, size_t cap)
{
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t k = 0; k < t->n; k++) {
		size_t i = hash_str(t->v[k].s, t->v[k].len) & (cap - 1);

		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = (uint32_t)k + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = cap - 1;
	return true;
}

/* The string table index of S (borrowed: it must outlive the writer). */
static int64_t intern(struct writer *w, const char *s)
{
	struct strtab *t = &w->strs;
	size_t len = strlen(s), i;

	if (w->err)
		return 0;
	if ((!t->slots || (t->n + 1) * 2 > t->mask + 1) &&
	    !strtab_rehash(t, t->slots ? (t->mask + 1) * 2 : 1024)) {
		w->err = -ENOMEM;
		return 0;
	}
	for (i = hash_str(s, len) & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
		const struct str *e = &t->v[t->slots[i] - 1];

		if (e->len == len && !memcmp(e->s, s, len))
			return t->slots[i] - 1;
	}
	if (t->n >= MAX_IDS) {
		w->err = -E2BIG;
		return 0;
	}
	if (!GROW(w, t->v, t->alloc, t->n + 1))
		return 0;
	t->v[t->n] = (struct str){s, len};
	t->slots[i] = (uint32_t)++t->n;
	return (int64_t)t->n - 1;
}

/* Deflate what is staged (and finish the stream when MODE is Z_FINISH). */
static void zflush(struct writer *w, int mode)
{
	int rc;

	w->zs.next_in = w->stage;
	w->zs.avail_in = (uInt)w->nstage;
	do {
		size_t used = w->alloc_out - w->zs.avail_out;

		if (w->zs.avail_out < STAGE_SIZE) {
			size_t want = w->alloc_out ? w->alloc_out * 2 : 4 * STAGE_SIZE;
			uint8_t *p = want <= AGENT_PPROF_OUT_MAX ? realloc(w->out, want) : NULL;

			if (!p) {
				w->err = want <= AGENT_PPROF_OUT_MAX ? -ENOMEM : -EFBIG;
				return;
			}
			w->out = p;
			w->alloc_out = want;
			w->zs.avail_out = (uInt)(want - used);
		}
		w->zs.next_out = w->out + used;
		rc = deflate(&w->zs, mode);
		if (rc == Z_STREAM_ERROR) {
			w->err = -EIO;
			return;
		}
	} while (w->zs.avail_in || (mode == Z_FINISH && rc != Z_STREAM_END));
	w->nstage = 0;
}

static void zwrite(struct writer *w, const void *data, size_t len)
{
	const uint8_t *d = data;

	while (len && !w->err) {
		size_t k = STAGE_SIZE - w->nstage < len ? STAGE_SIZE - w->nstage : len;

		memcpy(w->stage + w->nstage, d, k);
		w->nstage += k;
		d += k;
		len -= k;
		if (w->nstage == STAGE_SIZE)
			zflush(w, Z_NO_FLUSH);
	}
}

static void buf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	zwrite((struct writer *)(void *)b, data, len);
}

static void put_varint(struct writer *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	zwrite(w, b, n);
}

static void put_int64(struct writer *w, unsigned field, int64_t v)
{
	if (!v)
		return;
	put_varint(w, (uint64_t)field << 3);
	put_varint(w, (uint64_t)v);
}

static void put_message(struct writer *w, unsigned field, const ProtobufCMessage *m)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, protobuf_c_message_get_packed_size(m));
	protobuf_c_message_pack_to_buffer(m, &w->buf);
}

/* The function id of NAME in FILE (string indices). */
static uint32_t function_of(struct writer *w, int64_t name, int64_t file)
{
	uint64_t key = (uint64_t)name << 32 | (uint64_t)file;
	uint32_t *slot = u64map_slot(w, &w->fn_of_key, key);

	if (!slot || *slot)
		return slot ? *slot : 0;
	if (!GROW(w, w->fns, w->alloc_fns, w->nfns + 1))
		return 0;
	w->fns[w->nfns] = key;
	return *slot = (uint32_t)++w->nfns;
}

/*
 * The function of code no symbol names, as `plateau record` names it:
 * "module+0xVADDR" (symbol/symname.h), VADDR its function's start from the
 * unwind tables when they cover it; 0 when PC's mapping is unknown.
 */
static uint32_t unnamed_function(struct writer *w, uintptr_t pc)
{
	const struct agent_mapping *m;
	uint64_t vaddr;
	char *s;
	int map = agent_symtab_unnamed(w->st, pc, &vaddr);
	int len;

	if (map < 0 || !(m = agent_symtab_mapping(w->st, (size_t)map)))
		return 0;
	len = symname_unnamed(NULL, 0, m->path, vaddr);
	if (len < 0 || !GROW(w, w->owned, w->alloc_owned, w->nowned + 1))
		return 0;
	if (!(s = malloc((size_t)len + 1))) {
		w->err = -ENOMEM;
		return 0;
	}
	symname_unnamed(s, (size_t)len + 1, m->path, vaddr);
	w->owned[w->nowned++] = s;
	/* No file: record's unnamed frames have none. */
	return function_of(w, intern(w, s), 0);
}

/* A new location for PC, resolved through the symtab. */
static uint32_t location_new(struct writer *w, uintptr_t pc)
{
	const char *name = NULL;
	struct loc *l;
	int map;

	if (w->nlocs >= MAX_IDS) {
		w->err = -E2BIG;
		return 0;
	}
	if (!GROW(w, w->locs, w->alloc_locs, w->nlocs + 1))
		return 0;
	map = agent_symtab_lookup(w->st, pc, &name, NULL);
	l = &w->locs[w->nlocs];
	*l = (struct loc){.pc = pc, .map = map};
	if (name) {
		const struct agent_mapping *m = agent_symtab_mapping(w->st, (size_t)map);

		l->fn = function_of(w, intern(w, name), m ? intern(w, m->path) : 0);
	} else if (map >= 0) {
		l->fn = unnamed_function(w, pc);
	}
	return (uint32_t)++w->nlocs;
}

static uint64_t location_of(struct writer *w, uintptr_t pc)
{
	uint32_t *slot = u64map_slot(w, &w->loc_of_pc, pc);

	if (slot && !*slot)
		*slot = location_new(w, pc);
	return slot ? *slot : 0;
}

static void fill_label(struct writer *w, PbLabel *out, const struct agent_pprof_label *l)
{
	perftools__profiles__label__init(out);
	if (!l->key) {
		w->err = -EINVAL;
		return;
	}
	out->key = intern(w, l->key);
	if (l->str) {
		out->str = intern(w, l->str);
	} else {
		out->num = l->num;
		out->num_unit = l->num_unit ? intern(w, l->num_unit) : 0;
	}
}

static void write_sample(struct writer *w, const struct agent_pprof_sample *s, uint32_t ntypes)
{
	Perftools__Profiles__Sample m = PERFTOOLS__PROFILES__SAMPLE__INIT;

	if (!s->values || (s->npcs && !s->pcs) || (s->nlabels && !s->labels)) {
		w->err = -EINVAL;
		return;
	}
	if (!GROW(w, w->ids, w->alloc_ids, s->npcs) ||
	    !GROW(w, w->labels, w->alloc_labels, s->nlabels) ||
	    !GROW(w, w->label_ptrs, w->alloc_ptrs, s->nlabels))
		return;
	for (uint32_t i = 0; i < s->npcs && !w->err; i++)
		w->ids[i] = location_of(w, s->pcs[i]);
	for (uint32_t i = 0; i < s->nlabels && !w->err; i++) {
		fill_label(w, &w->labels[i], &s->labels[i]);
		w->label_ptrs[i] = &w->labels[i];
	}
	m.n_location_id = s->npcs;
	m.location_id = w->ids;
	m.n_value = ntypes;
	m.value = (int64_t *)(uintptr_t)s->values;
	m.n_label = s->nlabels;
	m.label = w->label_ptrs;
	if (!w->err)
		put_message(w, F_SAMPLE, &m.base);
}

/* Number the mappings the locations use: the main executable first (go tool pprof's rule). */
static void number_mappings(struct writer *w)
{
	w->nmaps = agent_symtab_nmappings(w->st);
	w->map_id = calloc(w->nmaps + 1, sizeof(*w->map_id));
	w->map_order = calloc(w->nmaps + 1, sizeof(*w->map_order));
	if (!w->map_id || !w->map_order) {
		w->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < w->nlocs; i++) {
		if (w->locs[i].map >= 0)
			w->map_id[w->locs[i].map] = 1;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < w->nmaps; i++) {
			const struct agent_mapping *m = agent_symtab_mapping(w->st, i);

			if (w->map_id[i] == 1 && m->is_main == !pass)
				w->map_order[w->nused++] = (uint32_t)i;
		}
	}
	for (size_t k = 0; k < w->nused; k++)
		w->map_id[w->map_order[k]] = (uint32_t)k + 1;
}

static void write_locations(struct writer *w)
{
	for (size_t i = 0; i < w->nlocs && !w->err; i++) {
		Perftools__Profiles__Location m = PERFTOOLS__PROFILES__LOCATION__INIT;
		Perftools__Profiles__Line line = PERFTOOLS__PROFILES__LINE__INIT, *lp = &line;
		const struct loc *l = &w->locs[i];

		m.id = i + 1;
		m.address = l->pc;
		m.mapping_id = l->map >= 0 ? w->map_id[l->map] : 0;
		if (l->fn) {
			line.function_id = l->fn;
			m.n_line = 1;
			m.line = &lp;
		}
		put_message(w, F_LOCATION, &m.base);
	}
}

/* The build-id in lower-case hex, as pprof readers expect, owned by the writer. */
static int64_t build_id_str(struct writer *w, const struct agent_mapping *m)
{
	static const char hex[] = "0123456789abcdef";
	char *s;

	if (!m->build_id_len || !GROW(w, w->owned, w->alloc_owned, w->nowned + 1))
		return 0;
	s = malloc(2 * m->build_id_len + 1);
	if (!s) {
		w->err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < m->build_id_len; i++) {
		s[2 * i] = hex[m->build_id[i] >> 4];
		s[2 * i + 1] = hex[m->build_id[i] & 15];
	}
	s[2 * m->build_id_len] = '\0';
	w->owned[w->nowned++] = s;
	return intern(w, s);
}

static void write_mappings(struct writer *w)
{
	for (size_t k = 0; k < w->nused && !w->err; k++) {
		Perftools__Profiles__Mapping m = PERFTOOLS__PROFILES__MAPPING__INIT;
		const struct agent_mapping *am = agent_symtab_mapping(w->st, w->map_order[k]);

		m.id = k + 1;
		m.memory_start = am->start;
		m.memory_limit = am->limit;
		m.file_offset = am->file_offset;
		m.filename = intern(w, am->path);
		m.build_id = build_id_str(w, am);
		m.has_functions = am->has_functions;
		put_message(w, F_MAPPING, &m.base);
	}
}

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/*
 * libstdc++'s demangler when the program has it loaded (every C++ program
 * does): pprof's function name is then the readable one, system_name the
 * symbol.  Looked up once, at export (cold), never in a hot path.
 */
static cxa_demangle_fn demangler(void)
{
	static cxa_demangle_fn fn;
	static bool looked;

	if (!looked) {
		fn = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		looked = true;
	}
	return fn;
}

static int64_t demangled(struct writer *w, int64_t sys)
{
	const char *name = w->strs.v[sys].s;
	cxa_demangle_fn fn = demangler();
	char *d;
	int status = -1;
	int64_t id;

	if (!fn || strncmp(name, "_Z", 2))
		return sys;
	d = fn(name, NULL, NULL, &status);
	if (status != 0 || !d || !GROW(w, w->owned, w->alloc_owned, w->nowned + 1)) {
		free(d);
		return sys;
	}
	w->owned[w->nowned++] = d;
	id = intern(w, d);
	return id ? id : sys;
}

static void write_functions(struct writer *w)
{
	for (size_t i = 0; i < w->nfns && !w->err; i++) {
		Perftools__Profiles__Function m = PERFTOOLS__PROFILES__FUNCTION__INIT;

		m.id = i + 1;
		m.system_name = (int64_t)(w->fns[i] >> 32);
		m.name = demangled(w, m.system_name);
		m.filename = (int64_t)(w->fns[i] & UINT32_MAX);
		put_message(w, F_FUNCTION, &m.base);
	}
}

static void write_types(struct writer *w, const struct agent_pprof_input *in)
{
	for (uint32_t t = 0; t < in->ntypes && !w->err; t++) {
		Perftools__Profiles__ValueType m = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		if (!in->type_names[t] || !in->type_units[t]) {
			w->err = -EINVAL;
			return;
		}
		m.type = intern(w, in->type_names[t]);
		m.unit = intern(w, in->type_units[t]);
		put_message(w, F_SAMPLE_TYPE, &m.base);
	}
}

/* The scalars; every string they use is interned before the string table goes out. */
static void write_trailer(struct writer *w, const struct agent_pprof_input *in,
			  const int64_t *comments)
{
	put_int64(w, F_TIME_NANOS, in->time_nanos);
	put_int64(w, F_DURATION_NANOS, in->duration_nanos);
	if (in->period_type) {
		Perftools__Profiles__ValueType m = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		m.type = intern(w, in->period_type);
		m.unit = in->period_unit ? intern(w, in->period_unit) : 0;
		put_message(w, F_PERIOD_TYPE, &m.base);
	}
	put_int64(w, F_PERIOD, in->period);
	for (uint32_t i = 0; i < in->ncomments; i++)
		put_int64(w, F_COMMENT, comments[i]);
	put_int64(w, F_DEFAULT_SAMPLE_TYPE, intern(w, in->type_names[in->default_type]));
}

static int64_t *intern_trailer(struct writer *w, const struct agent_pprof_input *in)
{
	int64_t *c = calloc(in->ncomments + 1, sizeof(*c));

	if (!c) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < in->ncomments && !w->err; i++) {
		if (!in->comments[i])
			w->err = -EINVAL;
		else
			c[i] = intern(w, in->comments[i]);
	}
	if (in->period_type) {
		intern(w, in->period_type);
		if (in->period_unit)
			intern(w, in->period_unit);
	}
	return c;
}

static void write_strings(struct writer *w)
{
	for (size_t i = 0; i < w->strs.n && !w->err; i++) {
		put_varint(w, (uint64_t)F_STRING_TABLE << 3 | 2);
		put_varint(w, w->strs.v[i].len);
		zwrite(w, w->strs.v[i].s, w->strs.v[i].len);
	}
}

static void writer_release(struct writer *w)
{
	deflateEnd(&w->zs);
	free(w->out);
	free(w->strs.v);
	free(w->strs.slots);
	for (size_t i = 0; i < w->nowned; i++)
		free(w->owned[i]);
	free(w->owned);
	u64map_release(&w->loc_of_pc);
	free(w->locs);
	u64map_release(&w->fn_of_key);
	free(w->fns);
	free(w->map_id);
	free(w->map_order);
	free(w->ids);
	free(w->labels);
	free(w->label_ptrs);
	free(w);
}

static bool input_ok(const struct agent_pprof_input *in)
{
	return in && in->ntypes && in->type_names && in->type_units &&
	       in->default_type < in->ntypes && (!in->ncomments || in->comments) &&
	       (!in->nsamples || in->samples);
}

static void encode(struct writer *w, const struct agent_pprof_input *in)
{
	int64_t *comments;

	intern(w, "");
	write_types(w, in);
	for (size_t i = 0; i < in->nsamples && !w->err; i++)
		write_sample(w, &in->samples[i], in->ntypes);
	if (w->err)
		return;
	number_mappings(w);
	write_locations(w);
	write_mappings(w);
	write_functions(w);
	comments = intern_trailer(w, in);
	if (comments)
		intern(w, in->type_names[in->default_type]);
	write_strings(w);
	if (comments)
		write_trailer(w, in, comments);
	free(comments);
	if (!w->err)
		zflush(w, Z_FINISH);
}

int agent_pprof_encode(const struct agent_pprof_input *in, struct agent_symtab *st, uint8_t **out,
		       size_t *outlen)
{
	struct writer *w;
	int rc;

	if (!input_ok(in) || !out || !outlen)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->buf.append = buf_append;
	w->st = st;
	if (deflateInit2(&w->zs, ZLEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(w);
		return -ENOMEM;
	}
	encode(w, in);
	rc = w->err;
	if (!rc) {
		*outlen = w->alloc_out - w->zs.avail_out;
		*out = w->out;
		w->out = NULL;
	}
	writer_release(w);
	return rc;
}
