/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "profile/diff.h"

enum { T_BASE, T_NEW, T_BASE_N, T_NEW_N };

/* Copy one type of src (and its sample counts) into columns of d. */
static void add_side(struct profile *d, const struct profile *src, uint32_t type, int side,
		     double scale)
{
	struct sample_counter c;
	uint32_t *map = alloc_array(NULL, src->nr_nodes, sizeof(uint32_t));
	uint32_t *fmap = alloc_array(NULL, (size_t)src->nr_frames + 1, sizeof(uint32_t));

	if (!map || !fmap) {
		free(map);
		free(fmap);
		profile_nomem(d);
		return;
	}
	stats_counter_init(&c, src, type);
	/* Frames are matched by name, as folded files and flame graphs show them. */
	for (uint32_t f = 0; f < src->nr_frames; f++) {
		uint32_t name = src->frames[f].name;

		fmap[f] = profile_frame_named(d, profile_str(src, name),
					      strtab_len(&src->strs, name));
	}
	map[0] = 0;
	for (uint32_t n = 1; n < src->nr_nodes; n++)
		map[n] = profile_child(d, map[src->nodes[n].parent], fmap[src->nodes[n].frame]);
	for (uint32_t s = 0; s < src->nr_samples; s++) {
		const int64_t *v = profile_sample_values(src, s);
		int64_t vals[4] = {0, 0, 0, 0};
		double count = stats_sample_count(&c, v, type);

		if (!v[type] && !count)
			continue;
		vals[side] = scale == 1.0 ? v[type] : (int64_t)((double)v[type] * scale);
		vals[side + 2] = llround(count);
		profile_add_sample(d, map[src->samples[s].node], 0, vals);
	}
	free(map);
	free(fmap);
}

struct profile *diff_build(const struct profile *base, const struct profile *new,
			   const struct diff_options *o, struct error *err)
{
	struct profile *d;
	double scale = 1.0;
	int64_t t1 = profile_total(base, o->base_type), t2 = profile_total(new, o->new_type);

	if (strcmp(profile_str(base, base->types[o->base_type].unit),
		   profile_str(new, new->types[o->new_type].unit))) {
		error_set(err, ERR_USAGE, "cannot compare %s (%s) with %s (%s)",
			  profile_str(base, base->types[o->base_type].type),
			  profile_str(base, base->types[o->base_type].unit),
			  profile_str(new, new->types[o->new_type].type),
			  profile_str(new, new->types[o->new_type].unit));
		return NULL;
	}
	if (base->types[o->base_type].decimals || new->types[o->new_type].decimals) {
		error_set(err, ERR_UNSUPPORTED, "diff of fractional counts is not supported");
		return NULL;
	}
	d = profile_new();
	if (!d) {
		error_set(err, ERR_NOMEM, "diff: out of memory");
		return NULL;
	}
	profile_add_type(d, "base", profile_str(base, base->types[o->base_type].unit));
	profile_add_type(d, "new", profile_str(new, new->types[o->new_type].unit));
	profile_add_type(d, "base_samples", "count");
	profile_add_type(d, "new_samples", "count");
	d->default_type = T_NEW;
	/* difffolded.pl -n: base counts scaled so both totals match. */
	if (o->normalize && t1 && t1 != t2)
		scale = (double)t2 / (double)t1;
	if (!profile_failed(d)) /* else a type is missing */
		add_side(d, base, o->base_type, T_BASE, scale);
	if (!profile_failed(d))
		add_side(d, new, o->new_type, T_NEW, 1.0);
	if (profile_failed(d)) {
		profile_free(d);
		error_set(err, ERR_NOMEM, "diff: out of memory");
		return NULL;
	}
	return d;
}

int diff_nodes_compute(const struct profile *d, struct diff_nodes *dn)
{
	size_t n = d->nr_nodes;
	int64_t *tmp = alloc_array(NULL, n, sizeof(int64_t));

	dn->base_total = alloc_array(NULL, n, sizeof(int64_t));
	dn->new_total = alloc_array(NULL, n, sizeof(int64_t));
	dn->base_self = alloc_array(NULL, n, sizeof(int64_t));
	dn->new_self = alloc_array(NULL, n, sizeof(int64_t));
	dn->base_count = alloc_array(NULL, n, sizeof(double));
	dn->new_count = alloc_array(NULL, n, sizeof(double));
	if (!tmp || !dn->base_total || !dn->new_total || !dn->base_self || !dn->new_self ||
	    !dn->base_count || !dn->new_count) {
		free(tmp);
		diff_nodes_release(dn);
		return ERR_NOMEM;
	}
	profile_node_totals(d, T_BASE, dn->base_total, dn->base_self);
	profile_node_totals(d, T_NEW, dn->new_total, dn->new_self);
	profile_node_totals(d, T_BASE_N, tmp, NULL);
	for (size_t i = 0; i < n; i++)
		dn->base_count[i] = (double)tmp[i];
	profile_node_totals(d, T_NEW_N, tmp, NULL);
	for (size_t i = 0; i < n; i++)
		dn->new_count[i] = (double)tmp[i];
	dn->base_n = dn->base_count[0];
	dn->new_n = dn->new_count[0];
	free(tmp);
	dn->base_eff = diff_effective_samples(d, false);
	dn->new_eff = diff_effective_samples(d, true);
	return 0;
}

void diff_nodes_release(struct diff_nodes *dn)
{
	free(dn->base_total);
	free(dn->new_total);
	free(dn->base_self);
	free(dn->new_self);
	free(dn->base_count);
	free(dn->new_count);
	memset(dn, 0, sizeof(*dn));
}

double diff_effective_samples(const struct profile *d, bool new_side)
{
	struct sample_counter c = {.count_type = new_side ? T_NEW_N : T_BASE_N, .per_sample = 0};

	return stats_effective_samples(&c, d, new_side ? T_NEW : T_BASE);
}

double diff_node_p(const struct diff_nodes *dn, uint32_t n)
{
	struct stats_share b, w;

	stats_share_of((double)dn->base_total[n], (double)dn->base_total[0], dn->base_eff, &b);
	stats_share_of((double)dn->new_total[n], (double)dn->new_total[0], dn->new_eff, &w);
	return stats_share_change_p(b.share, dn->base_eff, w.share, dn->new_eff);
}

size_t diff_functions(struct profile *d, struct diff_func **out)
{
	struct func_stat *fs[4];
	size_t nr[4], n;
	struct diff_func *res;
	int64_t totals[4];
	double base_eff = diff_effective_samples(d, false),
	       new_eff = diff_effective_samples(d, true);

	for (int t = 0; t < 4; t++) {
		nr[t] = profile_functions(d, (uint32_t)t, FUNC_BY_FUNCTION, &fs[t]);
		totals[t] = profile_total(d, (uint32_t)t);
	}
	/* Every run lists the same keys in the same order (frames are shared). */
	n = nr[0];
	res = profile_failed(d) ? NULL : calloc(n + 1, sizeof(*res));
	if (!res) { /* the CLI dies, a server's d is failed */
		profile_nomem(d);
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		res[i].key = fs[0][i].key;
		res[i].base_total = fs[T_BASE][i].total;
		res[i].new_total = fs[T_NEW][i].total;
		res[i].base_self = fs[T_BASE][i].self;
		res[i].new_self = fs[T_NEW][i].self;
		res[i].base_count = (double)fs[T_BASE_N][i].total;
		res[i].new_count = (double)fs[T_NEW_N][i].total;
		stats_share_of((double)res[i].base_total, (double)totals[T_BASE], base_eff,
			       &res[i].base_ci);
		stats_share_of((double)res[i].new_total, (double)totals[T_NEW], new_eff,
			       &res[i].new_ci);
		res[i].base_share = res[i].base_ci.share;
		res[i].new_share = res[i].new_ci.share;
		res[i].p = stats_share_change_p(res[i].base_share, base_eff, res[i].new_share,
						new_eff);
	}
	for (int t = 0; t < 4; t++)
		free(fs[t]);
	*out = res;
	return n;
}

/* False when memory ran out. */
static bool json_frame_path(struct strbuf *sb, const struct profile *d, uint32_t node,
			    uint32_t **buf, size_t *alloc)
{
	size_t depth = profile_node_stack(d, node, buf, alloc);

	if (depth == SIZE_MAX)
		return false;
	strbuf_addch(sb, '[');
	for (size_t i = 0; i < depth; i++) {
		uint32_t name = d->frames[(*buf)[i]].name;

		if (i)
			strbuf_addch(sb, ',');
		strbuf_add_json(sb, profile_str(d, name), strtab_len(&d->strs, name));
	}
	strbuf_addch(sb, ']');
	return true;
}

void diff_json_interval(struct strbuf *sb, const char *side, const struct stats_share *sh)
{
	/* Six decimals as the share, rounded outward so the printed bounds hold it. */
	strbuf_addf(sb, "\"%s_lo\":%.6f,\"%s_hi\":%.6f,", side, floor(sh->lo * 1e6) / 1e6, side,
		    ceil(sh->hi * 1e6) / 1e6);
}

int diff_write_json(struct profile *d, double alpha, FILE *f, struct error *err)
{
	struct strbuf sb = STRBUF_INIT_MAX(SIZE_MAX); /* checked: ERR_NOMEM below */
	struct diff_nodes dn;
	struct diff_func *fn;
	size_t nf = diff_functions(d, &fn);
	uint32_t *buf = NULL;
	size_t alloc = 0;
	bool nomem = profile_failed(d);

	if (nomem || diff_nodes_compute(d, &dn) < 0) {
		free(fn);
		return error_set(err, ERR_NOMEM, "diff: out of memory");
	}
	strbuf_addf(&sb, "{\"version\":1,\"unit\":");
	strbuf_add_json(&sb, profile_str(d, d->types[0].unit),
			strtab_len(&d->strs, d->types[0].unit));
	strbuf_addf(&sb,
		    ",\"alpha\":%g,\"base\":{\"total\":%" PRId64 ",\"samples\":%.0f,"
		    "\"effective_samples\":%.3f},\"new\":{\"total\":%" PRId64
		    ",\"samples\":%.0f,\"effective_samples\":%.3f},\"functions\":[",
		    alpha, dn.base_total[0], dn.base_n, dn.base_eff, dn.new_total[0], dn.new_n,
		    dn.new_eff);
	for (size_t i = 0; i < nf; i++) {
		strbuf_addstr(&sb, i ? ",\n{\"name\":" : "\n{\"name\":");
		strbuf_add_json(&sb, profile_str(d, fn[i].key), strtab_len(&d->strs, fn[i].key));
		strbuf_addf(&sb,
			    ",\"base_total\":%" PRId64 ",\"new_total\":%" PRId64
			    ",\"base_self\":%" PRId64 ",\"new_self\":%" PRId64
			    ",\"base_share\":%.6f,\"new_share\":%.6f,",
			    fn[i].base_total, fn[i].new_total, fn[i].base_self, fn[i].new_self,
			    fn[i].base_share, fn[i].new_share);
		diff_json_interval(&sb, "base", &fn[i].base_ci);
		diff_json_interval(&sb, "new", &fn[i].new_ci);
		strbuf_addf(&sb, "\"delta_pp\":%.4f,\"p\":%.6g,\"significant\":%s}",
			    100 * (fn[i].new_share - fn[i].base_share), fn[i].p,
			    fn[i].p < alpha ? "true" : "false");
	}
	strbuf_addstr(&sb, "],\n\"stacks\":[");
	for (uint32_t n = 1; n < d->nr_nodes; n++) {
		double p = diff_node_p(&dn, n);

		strbuf_addstr(&sb, n > 1 ? ",\n{\"stack\":" : "\n{\"stack\":");
		if (!json_frame_path(&sb, d, n, &buf, &alloc)) {
			nomem = true;
			break;
		}
		strbuf_addf(&sb,
			    ",\"base_total\":%" PRId64 ",\"new_total\":%" PRId64
			    ",\"base_self\":%" PRId64 ",\"new_self\":%" PRId64 ",\"p\":%.6g,"
			    "\"significant\":%s}",
			    dn.base_total[n], dn.new_total[n], dn.base_self[n], dn.new_self[n], p,
			    p < alpha ? "true" : "false");
		if (sb.len > (1 << 20) && !strbuf_error(&sb)) {
			strbuf_write(&sb, f);
			strbuf_reset(&sb);
		}
	}
	strbuf_addstr(&sb, "]}\n");
	nomem |= strbuf_error(&sb) != 0;
	if (!nomem)
		strbuf_write(&sb, f);
	strbuf_release(&sb);
	free(buf);
	free(fn);
	diff_nodes_release(&dn);
	if (nomem)
		return error_set(err, ERR_NOMEM, "diff: out of memory");
	if (ferror(f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}
