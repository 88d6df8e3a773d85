/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/suggest.h"

size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	/* Three rows of the DP table: two back for a swap, the last, this one. */
	size_t rows[3][SUGGEST_MAX_LEN + 1];

	if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
		return SIZE_MAX;
	/* Row i lives in rows[i % 3]. */
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *pp = rows[(i + 1) % 3], *prev = rows[(i + 2) % 3], *cur = rows[i % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);

			d = MIN(d, prev[j] + 1);
			d = MIN(d, cur[j - 1] + 1);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				d = MIN(d, pp[j - 2] + 1);
			cur[j] = d;
		}
	}
	return rows[la % 3][lb];
}

/* How far typed is from cand: 0 for a prefix, SIZE_MAX when not similar. */
static size_t similarity(const char *typed, const char *cand)
{
	size_t lt = strlen(typed), lc = strlen(cand), d;

	if (lt >= 2 && lt < lc && !strncmp(typed, cand, lt))
		return 0;
	d = suggest_distance(typed, cand);
	if (d == SIZE_MAX || d * 3 > MAX(lt, lc) + 2)
		return SIZE_MAX;
	return d;
}

size_t suggest_similar(const char *typed, const char *const *cands, size_t n, size_t *out)
{
	size_t best = SIZE_MAX, nr = 0;

	for (size_t i = 0; i < n; i++) {
		size_t d = cands[i] ? similarity(typed, cands[i]) : SIZE_MAX;

		if (d == SIZE_MAX || d > best)
			continue;
		if (d < best)
			nr = 0;
		best = d;
		out[nr++] = i;
	}
	return nr;
}
