/* SPDX-License-Identifier: MIT */
#include <zlib.h>

#include "util/common.h"
#include "format/pprof.h"
#include "format/pprof_fields.h"
#include "profile.pb-c.h"

/*
 * Writing pprof's profile.proto, gzip-compressed, as a stream: each
 * repeated record is packed by protobuf-c on its own and deflated at
 * once, so memory stays proportional to the tables (strings, functions,
 * locations) and never to the samples.  Fields come in this order:
 * sample types, samples (which number the locations they use),
 * locations (which number functions and mappings), mappings, functions,
 * the string table, then the scalars; protobuf readers accept any order.
 *
 * A location is a run of frames: one frame plus the FRAME_INLINED
 * frames stacked on it, written as lines innermost first.  Runs are
 * found on the call tree: node n continues its parent's run when its
 * frame is inlined, and two nodes with equal runs share a location.
 */

typedef Perftools__Profiles__Label PbLabel;

#define KERNEL_MAPPING "[kernel.kallsyms]"

struct pw_mapping {
	uint32_t name; /* output string index */
	bool files, lines, inlines;
};

struct pprof_writer {
	ProtobufCBuffer buf; /* first: protobuf-c appends through it */
	const struct profile *p;
	FILE *f;
	z_stream zs;
	bool zerr;
	unsigned char out[1 << 16];

	struct strtab strs; /* the output string table */
	uint32_t *strmap;   /* profile string id -> output index + 1 */

	struct idhash fn_index;
	uint32_t (*fns)[2]; /* (name, file) profile string ids */
	uint32_t nr_fns, alloc_fns;

	uint32_t kernel_key;  /* module key of kernel frames */
	uint32_t *map_of_key; /* module key -> mapping id, 0 when none yet */
	struct pw_mapping *maps;
	uint32_t nr_maps, alloc_maps;

	uint32_t *head, *run_hash, *loc_of_node; /* per call tree node */
	struct idhash loc_index;
	uint32_t *loc_node; /* location id - 1 -> a node ending that run */
	uint32_t nr_locs, alloc_locs;
	bool nomem; /* an allocation failed: the output is incomplete (ERR_NOMEM) */
};

/* ALLOC_GROW for the writer's uint32_t counts; false (w->nomem) when it cannot. */
static bool grow32(struct pprof_writer *w, void *pptr, size_t elem, size_t nr, uint32_t *alloc)
{
	size_t a = *alloc;

	if (nr <= a)
		return true;
	if (nr > UINT32_MAX || alloc_grow(pptr, elem, nr, &a) < 0) {
		w->nomem = true;
		return false;
	}
	*alloc = (uint32_t)MIN(a, UINT32_MAX);
	return true;
}
#define GROW32(w, x, nr, alloc) grow32((w), &(x), sizeof(*(x)), (nr), &(alloc))

/* The id of string S in the output (0 when memory runs out: w->nomem). */
static uint32_t out_intern(struct pprof_writer *w, const char *s, size_t len)
{
	uint32_t id;

	if (strtab_try_intern(&w->strs, s, len, &id) < 0) {
		w->nomem = true;
		return 0;
	}
	return id;
}

static void zflush(struct pprof_writer *w, int mode)
{
	do {
		int rc;

		w->zs.next_out = w->out;
		w->zs.avail_out = sizeof(w->out);
		rc = deflate(&w->zs, mode);
		if (rc == Z_STREAM_ERROR) {
			w->zerr = true;
			return;
		}
		if (fwrite(w->out, 1, sizeof(w->out) - w->zs.avail_out, w->f) !=
		    sizeof(w->out) - w->zs.avail_out)
			w->zerr = true;
	} while (w->zs.avail_out == 0);
}

static void zwrite(struct pprof_writer *w, const void *data, size_t len)
{
	const unsigned char *d = data;

	while (len) {
		uInt chunk = (uInt)MIN(len, (size_t)1 << 30);

		w->zs.next_in = (Bytef *)d;
		w->zs.avail_in = chunk;
		zflush(w, Z_NO_FLUSH);
		d += chunk;
		len -= chunk;
	}
}

static void buf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	zwrite((struct pprof_writer *)(void *)b, data, len);
}

static void put_varint(struct pprof_writer *w, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	do {
		b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	zwrite(w, b, n);
}

static void put_int64(struct pprof_writer *w, unsigned field, int64_t v)
{
	if (!v)
		return;
	put_varint(w, (uint64_t)field << 3);
	put_varint(w, (uint64_t)v);
}

static void put_bytes(struct pprof_writer *w, unsigned field, const void *data, size_t len)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, len);
	zwrite(w, data, len);
}

static void put_message(struct pprof_writer *w, unsigned field, const ProtobufCMessage *m)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, protobuf_c_message_get_packed_size(m));
	protobuf_c_message_pack_to_buffer(m, &w->buf);
}

/* The output string index of profile string id. */
static int64_t out_str(struct pprof_writer *w, uint32_t id)
{
	if (!w->strmap[id])
		w->strmap[id] =
			1 + out_intern(w, profile_str(w->p, id), strtab_len(&w->p->strs, id));
	return w->strmap[id] - 1;
}

static int64_t out_cstr(struct pprof_writer *w, const char *s)
{
	return out_intern(w, s, strlen(s));
}

/* The function id of (name, file). */
static uint64_t function_of(struct pprof_writer *w, uint32_t name, uint32_t file)
{
	uint32_t hash = (uint32_t)hash_u64(((uint64_t)name << 32) | file), pos = hash, id;

	while ((id = idhash_probe(&w->fn_index, hash, &pos)) != IDHASH_NONE) {
		if (w->fns[id][0] == name && w->fns[id][1] == file)
			return id + 1;
	}
	if (!GROW32(w, w->fns, (size_t)w->nr_fns + 1, w->alloc_fns) ||
	    idhash_try_reserve(&w->fn_index, (size_t)w->nr_fns + 1) < 0) {
		w->nomem = true;
		return 0;
	}
	id = w->nr_fns++;
	w->fns[id][0] = name;
	w->fns[id][1] = file;
	idhash_insert(&w->fn_index, hash, id); /* reserved: cannot fail */
	return id + 1;
}

static uint32_t mapping_key(const struct pprof_writer *w, const struct frame *f)
{
	return f->flags & FRAME_KERNEL ? w->kernel_key : f->module;
}

/* The mapping of frame f (0 for none). */
static struct pw_mapping *mapping_of(struct pprof_writer *w, const struct frame *f, uint64_t *id)
{
	uint32_t key = mapping_key(w, f);

	*id = 0;
	if (!key)
		return NULL;
	if (!w->map_of_key[key]) {
		if (!GROW32(w, w->maps, (size_t)w->nr_maps + 1, w->alloc_maps))
			return NULL;
		memset(&w->maps[w->nr_maps], 0, sizeof(w->maps[0]));
		w->maps[w->nr_maps].name = key == w->kernel_key && key == w->p->strs.nr
						   ? (uint32_t)out_cstr(w, KERNEL_MAPPING)
						   : (uint32_t)out_str(w, key);
		w->map_of_key[key] = ++w->nr_maps;
	}
	*id = w->map_of_key[key];
	return &w->maps[*id - 1];
}

/* Node n continues its parent's run when its frame is inlined into the parent's. */
static void find_runs(struct pprof_writer *w)
{
	const struct profile *p = w->p;

	w->head = alloc_array(NULL, p->nr_nodes, sizeof(*w->head));
	w->run_hash = alloc_array(NULL, p->nr_nodes, sizeof(*w->run_hash));
	w->loc_of_node = calloc(p->nr_nodes, sizeof(*w->loc_of_node));
	if (!w->head || !w->run_hash || !w->loc_of_node) {
		w->nomem = true; /* pprof_write() stops here */
		return;
	}
	w->head[0] = 0;
	w->run_hash[0] = 0;
	for (uint32_t n = 1; n < p->nr_nodes; n++) {
		uint32_t parent = p->nodes[n].parent, frame = p->nodes[n].frame;
		bool cont = parent && (p->frames[frame].flags & FRAME_INLINED);
		uint64_t h = cont ? w->run_hash[parent] : 0x9e3779b9u;

		w->head[n] = cont ? w->head[parent] : n;
		w->run_hash[n] = (uint32_t)hash_u64((h << 32) ^ frame);
	}
}

static bool same_run(const struct pprof_writer *w, uint32_t a, uint32_t b)
{
	const struct pnode *nodes = w->p->nodes;

	for (;;) {
		bool ha = w->head[a] == a, hb = w->head[b] == b;

		if (nodes[a].frame != nodes[b].frame)
			return false;
		if (ha || hb)
			return ha && hb;
		a = nodes[a].parent;
		b = nodes[b].parent;
	}
}

/* The location id of the run ending at node n. */
static uint64_t location_of(struct pprof_writer *w, uint32_t n)
{
	uint32_t hash = w->run_hash[n], pos = hash, id;

	if (w->loc_of_node[n])
		return w->loc_of_node[n];
	while ((id = idhash_probe(&w->loc_index, hash, &pos)) != IDHASH_NONE) {
		if (same_run(w, n, w->loc_node[id]))
			return w->loc_of_node[n] = id + 1;
	}
	if (!GROW32(w, w->loc_node, (size_t)w->nr_locs + 1, w->alloc_locs) ||
	    idhash_try_reserve(&w->loc_index, (size_t)w->nr_locs + 1) < 0) {
		w->nomem = true;
		return 0;
	}
	id = w->nr_locs++;
	w->loc_node[id] = n;
	idhash_insert(&w->loc_index, hash, id); /* reserved: cannot fail */
	return w->loc_of_node[n] = id + 1;
}

struct sample_buf {
	uint64_t *locs;
	size_t alloc_locs;
	PbLabel *labels;
	PbLabel **label_ptrs;
	size_t alloc_labels;
};

/* Location ids of node's stack, leaf first. */
static size_t sample_locations(struct pprof_writer *w, uint32_t node, struct sample_buf *b)
{
	size_t n = 0;

	while (node) {
		if (ALLOC_TRY_GROW(b->locs, n + 1, b->alloc_locs) < 0) {
			w->nomem = true;
			break;
		}
		b->locs[n++] = location_of(w, node);
		node = w->p->nodes[w->head[node]].parent;
	}
	return n;
}

static void add_label(struct pprof_writer *w, struct sample_buf *b, size_t n, const struct label *l)
{
	PbLabel *out = &b->labels[n];

	perftools__profiles__label__init(out);
	out->key = out_str(w, l->key);
	if (l->str) {
		out->str = out_str(w, l->str);
	} else {
		out->num = l->num;
		out->num_unit = out_str(w, l->unit);
	}
	b->label_ptrs[n] = out;
}

/* Label set id's labels; set 0 (empty) even when the profile has no label array. */
static const struct label *labels_of(const struct profile *p, uint32_t set, size_t *n)
{
	*n = 0;
	return set ? profile_labels(p, set, n) : NULL;
}

/* The sample's labels, with the profile's labels added (the sample's win). */
static size_t sample_labels(struct pprof_writer *w, uint32_t set, struct sample_buf *b)
{
	size_t ns, np, n = 0;
	const struct label *sl = labels_of(w->p, set, &ns);
	const struct label *pl = labels_of(w->p, w->p->profile_labels, &np);

	if (b->alloc_labels < ns + np) {
		PbLabel *l = alloc_array(b->labels, ns + np, sizeof(*b->labels));
		PbLabel **ptrs = l ? alloc_array(b->label_ptrs, ns + np, sizeof(*ptrs)) : NULL;

		if (l)
			b->labels = l;
		if (!ptrs) {
			w->nomem = true;
			return 0;
		}
		b->label_ptrs = ptrs;
		b->alloc_labels = ns + np;
	}
	for (size_t i = 0; i < ns; i++)
		add_label(w, b, n++, &sl[i]);
	for (size_t i = 0; i < np; i++) {
		bool shadowed = false;

		for (size_t j = 0; j < ns && !shadowed; j++)
			shadowed = sl[j].key == pl[i].key;
		if (!shadowed)
			add_label(w, b, n++, &pl[i]);
	}
	return n;
}

static void write_samples(struct pprof_writer *w)
{
	const struct profile *p = w->p;
	struct sample_buf b = {0};

	for (uint32_t s = 0; s < p->nr_samples && !w->nomem; s++) {
		Perftools__Profiles__Sample m = PERFTOOLS__PROFILES__SAMPLE__INIT;

		m.n_location_id = sample_locations(w, p->samples[s].node, &b);
		m.location_id = b.locs;
		m.n_value = p->nr_types;
		m.value = profile_sample_values(p, s);
		m.n_label = sample_labels(w, p->samples[s].labels, &b);
		m.label = b.label_ptrs;
		put_message(w, F_SAMPLE, &m.base);
	}
	free(b.locs);
	free(b.labels);
	free(b.label_ptrs);
}

static void write_location(struct pprof_writer *w, uint32_t id, Perftools__Profiles__Line *lines,
			   Perftools__Profiles__Line **ptrs, size_t *alloc)
{
	const struct profile *p = w->p;
	Perftools__Profiles__Location m = PERFTOOLS__PROFILES__LOCATION__INIT;
	uint32_t n = w->loc_node[id - 1], head = w->head[n];
	const struct frame *hf = &p->frames[p->nodes[head].frame];
	struct pw_mapping *map = mapping_of(w, hf, &m.mapping_id);
	size_t nl = 0;

	m.id = id;
	m.address = hf->addr;
	for (;; n = p->nodes[n].parent) {
		const struct frame *f = &p->frames[p->nodes[n].frame];

		if (nl == *alloc)
			BUG("location longer than its run");
		perftools__profiles__line__init(&lines[nl]);
		lines[nl].function_id = function_of(w, f->name, f->file);
		lines[nl].line = f->line;
		ptrs[nl] = &lines[nl];
		nl++;
		if (!m.address)
			m.address = f->addr;
		if (map) {
			map->files |= f->file != 0;
			map->lines |= f->line != 0;
			map->inlines |= n != head;
		}
		if (n == head)
			break;
	}
	m.n_line = nl;
	m.line = ptrs;
	put_message(w, F_LOCATION, &m.base);
}

static void write_locations(struct pprof_writer *w)
{
	const struct profile *p = w->p;
	Perftools__Profiles__Line *lines = NULL, **ptrs = NULL;
	size_t alloc = 0;

	/*
	 * Number user-space mappings first: go tool pprof takes mapping 1
	 * for the main binary.
	 */
	for (uint32_t id = 1; id <= w->nr_locs; id++) {
		const struct frame *f = &p->frames[p->nodes[w->head[w->loc_node[id - 1]]].frame];
		uint64_t unused;

		if (mapping_key(w, f) != w->kernel_key)
			mapping_of(w, f, &unused);
	}
	for (uint32_t id = 1; id <= w->nr_locs; id++) {
		size_t len = 1;

		for (uint32_t n = w->loc_node[id - 1]; w->head[n] != n; n = p->nodes[n].parent)
			len++;
		if (len > alloc) {
			Perftools__Profiles__Line *l = alloc_array(lines, len, sizeof(*lines));
			Perftools__Profiles__Line **pt =
				l ? alloc_array(ptrs, len, sizeof(*ptrs)) : NULL;

			if (l)
				lines = l;
			if (!pt) {
				w->nomem = true;
				break;
			}
			ptrs = pt;
			alloc = len;
		}
		write_location(w, id, lines, ptrs, &alloc);
	}
	free(lines);
	free(ptrs);
}

static void write_tables(struct pprof_writer *w)
{
	for (uint32_t i = 0; i < w->nr_maps; i++) {
		Perftools__Profiles__Mapping m = PERFTOOLS__PROFILES__MAPPING__INIT;

		m.id = i + 1;
		m.filename = w->maps[i].name;
		m.has_functions = true;
		m.has_filenames = w->maps[i].files;
		m.has_line_numbers = w->maps[i].lines;
		m.has_inline_frames = w->maps[i].inlines;
		put_message(w, F_MAPPING, &m.base);
	}
	for (uint32_t i = 0; i < w->nr_fns; i++) {
		Perftools__Profiles__Function m = PERFTOOLS__PROFILES__FUNCTION__INIT;

		m.id = i + 1;
		m.name = m.system_name = out_str(w, w->fns[i][0]);
		m.filename = out_str(w, w->fns[i][1]);
		put_message(w, F_FUNCTION, &m.base);
	}
}

static void write_header(struct pprof_writer *w)
{
	const struct profile *p = w->p;

	for (uint32_t t = 0; t < p->nr_types; t++) {
		Perftools__Profiles__ValueType m = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		m.type = out_str(w, p->types[t].type);
		m.unit = out_str(w, p->types[t].unit);
		put_message(w, F_SAMPLE_TYPE, &m.base);
	}
}

/* The scalar fields; their strings must be interned before the string table is written. */
static void write_trailer(struct pprof_writer *w, const int64_t *comments, size_t nc)
{
	const struct profile *p = w->p;

	put_int64(w, F_TIME_NANOS, p->time_nanos);
	put_int64(w, F_DURATION_NANOS, p->duration_nanos);
	if (p->period_type.type || p->period_type.unit) {
		Perftools__Profiles__ValueType m = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		m.type = out_str(w, p->period_type.type);
		m.unit = out_str(w, p->period_type.unit);
		put_message(w, F_PERIOD_TYPE, &m.base);
	}
	put_int64(w, F_PERIOD, p->period);
	for (size_t i = 0; i < nc; i++)
		put_int64(w, F_COMMENT, comments[i]);
	/* Unset means the last type, as pprof readers take it. */
	if (p->default_type + 1 < p->nr_types)
		put_int64(w, F_DEFAULT_SAMPLE_TYPE, out_str(w, p->types[p->default_type].type));
}

/* Intern the trailer's strings; returns the comment indices (caller frees). */
static int64_t *trailer_strings(struct pprof_writer *w, size_t *nc)
{
	const struct profile *p = w->p;
	int64_t *c = alloc_array(NULL, (size_t)p->nr_comments + p->nr_types + 1, sizeof(*c));
	size_t n = 0;
	char buf[64];

	*nc = 0;
	if (!c) {
		w->nomem = true;
		return NULL;
	}
	if (p->period_type.type || p->period_type.unit) {
		out_str(w, p->period_type.type);
		out_str(w, p->period_type.unit);
	}
	for (uint32_t i = 0; i < p->nr_comments; i++)
		c[n++] = out_str(w, p->comments[i]);
	for (uint32_t t = 0; t < p->nr_types; t++) {
		if (!p->types[t].decimals)
			continue;
		snprintf(buf, sizeof(buf), PPROF_DECIMALS_COMMENT " %u %u", t,
			 p->types[t].decimals);
		c[n++] = out_cstr(w, buf);
	}
	*nc = n;
	return c;
}

static void write_strings(struct pprof_writer *w)
{
	for (uint32_t i = 0; i < w->strs.nr; i++)
		put_bytes(w, F_STRING_TABLE, strtab_str(&w->strs, i), strtab_len(&w->strs, i));
}

static void writer_init(struct pprof_writer *w, const struct profile *p, FILE *f)
{
	uint32_t k = strtab_find(&p->strs, KERNEL_MAPPING, strlen(KERNEL_MAPPING));

	memset(w, 0, sizeof(*w));
	w->buf.append = buf_append;
	w->p = p;
	w->f = f;
	w->nomem = strtab_try_init(&w->strs) < 0;
	w->strmap = calloc(p->strs.nr ? p->strs.nr : 1, sizeof(*w->strmap));
	/* Kernel frames share the mapping named KERNEL_MAPPING; key nr is a free slot. */
	w->kernel_key = k == IDHASH_NONE ? p->strs.nr : k;
	w->map_of_key = calloc((size_t)p->strs.nr + 1, sizeof(*w->map_of_key));
	w->nomem |= !w->strmap || !w->map_of_key;
}

static void writer_release(struct pprof_writer *w)
{
	strtab_release(&w->strs);
	free(w->strmap);
	idhash_release(&w->fn_index);
	free(w->fns);
	free(w->map_of_key);
	free(w->maps);
	free(w->head);
	free(w->run_hash);
	free(w->loc_of_node);
	idhash_release(&w->loc_index);
	free(w->loc_node);
}

int pprof_write(const struct profile *p, FILE *f, struct error *err)
{
	struct pprof_writer *w = malloc(sizeof(*w));
	int64_t *comments = NULL;
	size_t nc = 0;
	bool failed;

	if (!w)
		return error_set(err, ERR_NOMEM, "pprof: out of memory");
	writer_init(w, p, f);
	if (w->nomem) {
		writer_release(w);
		free(w);
		return error_set(err, ERR_NOMEM, "pprof: out of memory");
	}
	if (deflateInit2(&w->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		writer_release(w);
		free(w);
		return error_set(err, ERR_IO, "cannot initialise zlib");
	}
	find_runs(w);
	/* Without memory the output stops; each step is safe after a failure in it. */
	if (!w->nomem)
		write_header(w);
	if (!w->nomem)
		write_samples(w);
	if (!w->nomem)
		write_locations(w);
	if (!w->nomem)
		comments = trailer_strings(w, &nc);
	if (!w->nomem && p->nr_types)
		out_str(w, p->types[p->default_type].type);
	if (!w->nomem)
		write_tables(w);
	if (!w->nomem)
		write_strings(w);
	if (!w->nomem)
		write_trailer(w, comments, nc);
	w->zs.avail_in = 0;
	zflush(w, Z_FINISH);
	deflateEnd(&w->zs);
	failed = w->zerr || ferror(f);
	free(comments);
	writer_release(w);
	if (w->nomem) {
		free(w);
		return error_set(err, ERR_NOMEM, "pprof: out of memory");
	}
	free(w);
	if (failed)
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}
