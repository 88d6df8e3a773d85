/* SPDX-License-Identifier: MIT */
/* The collector's aggregates: an open-addressing index over a vector of entries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/export/aggregate.h"
#include "util/banned.h"

uint64_t agent_entry_hash(const struct agent_entry *k)
{
	uint64_t h = 0xcbf29ce484222325u ^ k->kind ^ ((uint64_t)k->nlabels << 16);

	for (unsigned i = 0; i < k->nlabels; i++)
		h = (h ^ k->labels[i]) * 0x100000001b3u;
	for (unsigned i = 0; i < k->nframes; i++)
		h = (h ^ k->pcs[i]) * 0x100000001b3u;
	return h ^ (h >> 29);
}

static bool same_key(const struct agent_entry *a, const struct agent_entry *b)
{
	return a->hash == b->hash && a->kind == b->kind && a->nframes == b->nframes &&
	       a->nlabels == b->nlabels &&
	       !memcmp(a->labels, b->labels, a->nlabels * sizeof(a->labels[0])) &&
	       !memcmp(a->pcs, b->pcs, a->nframes * sizeof(a->pcs[0]));
}

static int agg_grow_index(struct agent_agg *a)
{
	size_t size = a->index_size ? a->index_size * 2 : 4096;
	uint32_t *idx = calloc(size, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		size_t j = a->e[i].hash & (size - 1);

		while (idx[j])
			j = (j + 1) & (size - 1);
		idx[j] = (uint32_t)i + 1;
	}
	free(a->index);
	a->index = idx;
	a->index_size = size;
	return 0;
}

ssize_t agent_agg_add(struct agent_agg *a, const struct agent_entry *k)
{
	size_t j;

	if ((a->n + 1) * 2 > a->index_size && agg_grow_index(a) != 0)
		return -1;
	for (j = k->hash & (a->index_size - 1); a->index[j]; j = (j + 1) & (a->index_size - 1)) {
		struct agent_entry *e = &a->e[a->index[j] - 1];

		if (same_key(e, k)) {
			e->v0 += k->v0;
			e->v1 += k->v1;
			e->n += k->n;
			return (ssize_t)(a->index[j] - 1);
		}
	}
	if (a->n == a->alloc) {
		size_t na = a->alloc ? a->alloc * 2 : 1024;
		struct agent_entry *ne = realloc(a->e, na * sizeof(*ne));

		if (!ne)
			return -1;
		a->e = ne;
		a->alloc = na;
	}
	a->e[a->n] = *k;
	a->e[a->n].pcs = malloc(k->nframes * sizeof(uintptr_t) + 1);
	if (!a->e[a->n].pcs)
		return -1;
	memcpy(a->e[a->n].pcs, k->pcs, k->nframes * sizeof(uintptr_t));
	a->index[j] = (uint32_t)a->n + 1;
	return (ssize_t)a->n++;
}

void agent_agg_clear(struct agent_agg *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->e[i].pcs);
	free(a->e);
	free(a->index);
	memset(a, 0, sizeof(*a));
}

int agent_cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}
