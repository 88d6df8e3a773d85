/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/strbuf.h"
#include "format/perfscript.h"
#include "symbol/addr2line.h"
#include "format/perfscript_int.h"

/*
 * Line matching: stackcollapse-perf.pl's regular expressions, emulated.
 * Each function states the regex and how backtracking settles it; the
 * unit tests (perfscript_test.c) pin the corner cases down.
 */

enum {
	CL_SPACE = 1,	/* Perl \s: space \t \n \v \f \r */
	CL_DIGIT = 2,	/* \d */
	CL_WORD = 4,	/* \w */
	CL_SPECIAL = 8, /* ; " ' : changed by the name tidying */
};

static const unsigned char cls[256] = {
	['\t'] = CL_SPACE,
	['\n'] = CL_SPACE,
	['\v'] = CL_SPACE,
	['\f'] = CL_SPACE,
	['\r'] = CL_SPACE,
	[' '] = CL_SPACE,
	['0' ... '9'] = CL_DIGIT | CL_WORD,
	['A' ... 'Z'] = CL_WORD,
	['a' ... 'z'] = CL_WORD,
	['_'] = CL_WORD,
	[';'] = CL_SPECIAL,
	['"'] = CL_SPECIAL,
	['\''] = CL_SPECIAL,
};

static inline bool is_space(char c)
{
	return cls[(unsigned char)c] & CL_SPACE;
}

static inline bool is_digit(char c)
{
	return cls[(unsigned char)c] & CL_DIGIT;
}

static inline bool is_word(char c)
{
	return cls[(unsigned char)c] & CL_WORD;
}

static size_t skip_space(const char *s, size_t i, size_t len)
{
	while (i < len && is_space(s[i]))
		i++;
	return i;
}

static size_t skip_digits(const char *s, size_t i, size_t len)
{
	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

/*
 * ^(\S.+?)\s+(\d+)[/]*(\d+)*\s+ : the comm is the shortest prefix of at
 * least two bytes followed by whitespace, digits, optional slashes and
 * digits, and whitespace.  For a given comm end e the greedy quantifiers
 * can only succeed with the maximal runs, so the tail is checked once
 * per whitespace run: every e inside one run sees the same tail.
 */
bool perfscript_match_header(const char *s, size_t len, struct perfscript_header *h)
{
	size_t e = 2;

	if (len < 2 || is_space(s[0]))
		return false;
	while (e < len) {
		size_t w, d1, sl, d2;

		if (!is_space(s[e])) {
			e++;
			continue;
		}
		w = skip_space(s, e, len);
		d1 = skip_digits(s, w, len);
		if (d1 > w) {
			sl = d1;
			while (sl < len && s[sl] == '/')
				sl++;
			d2 = skip_digits(s, sl, len);
			if (d2 < len && is_space(s[d2])) {
				*h = (struct perfscript_header){s, s + w,  s + sl,
								e, d1 - w, d2 - sl};
				return true;
			}
		}
		e = w;
	}
	return false;
}

bool perfscript_is_header(const char *s, size_t len)
{
	struct perfscript_header h;

	return perfscript_match_header(s, len, &h);
}

/*
 * :\s*(\d+)*\s+(\S+):\s*$ : (\S+): is the last whitespace-separated
 * token, which must end in ':' after at least one byte; between it and
 * the ':' that starts the match there may only be whitespace, one run of
 * digits, and whitespace.  Scanning back from the token finds the one
 * ':' that can start a match.
 */
bool perfscript_match_event(const char *s, size_t len, struct perfscript_event *e)
{
	size_t end = len, ts, i, dend;

	while (end > 0 && is_space(s[end - 1]))
		end--;
	if (end < 2 || s[end - 1] != ':')
		return false;
	ts = end - 1;
	while (ts > 0 && !is_space(s[ts - 1]))
		ts--;
	if (ts == 0 || end - ts < 2)
		return false;
	i = ts;
	while (i > 0 && is_space(s[i - 1]))
		i--;
	dend = i;
	while (i > 0 && is_digit(s[i - 1]))
		i--;
	e->period = s + i;
	e->period_len = dend - i;
	while (i > 0 && is_space(s[i - 1]))
		i--;
	if (i == 0 || s[i - 1] != ':')
		return false;
	e->event = s + ts;
	e->event_len = end - 1 - ts;
	return true;
}

/*
 * ^\s*(\w+)\s*(.+) \((.*)\) : (.+) is greedy, so " (" is the last one
 * with a ')' somewhere after it, and (.*) runs to the last ')'.  When
 * that " (" comes too early for (.+) to be non-empty after the greedy
 * \s* and (\w+), they give back one byte at a time: first the spaces,
 * then the word.
 */
bool perfscript_match_frame(const char *s, size_t len, struct perfscript_frame *f)
{
	size_t lead = skip_space(s, 0, len), wend = lead, pos, q, rpar, hi;
	const char *p;

	while (wend < len && is_word(s[wend]))
		wend++;
	if (wend == lead)
		return false;
	p = memrchr(s, ')', len);
	if (!p)
		return false;
	rpar = (size_t)(p - s);
	/*
	 * The last " (" whose '(' lies before rpar; (.+) needs a byte and
	 * (\w+) another, so the '(' is at lead + 3 or later.
	 */
	for (hi = rpar;;) {
		if (hi <= lead + 3)
			return false;
		p = memrchr(s + lead + 3, '(', hi - (lead + 3));
		if (!p)
			return false;
		hi = (size_t)(p - s);
		if (s[hi - 1] == ' ')
			break;
	}
	q = hi - 1;
	pos = MIN(skip_space(s, wend, len), q - 1);
	f->pc = s + lead;
	f->pc_len = MIN(wend, pos) - lead;
	f->func = s + pos;
	f->func_len = q - pos;
	f->dso = s + q + 2;
	f->dso_len = rpar - q - 2;
	return true;
}

/*
 * Name tidying, per frame.
 */

/* Length of s without a final "+0x<lowercase hex>" (s/\+0x[\da-f]+$//). */
static size_t strip_offset(const char *s, size_t n)
{
	size_t i = n;

	while (i > 0 &&
	       ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] >= 'a' && s[i - 1] <= 'f')))
		i--;
	if (i == n || i < 3 || memcmp(s + i - 3, "+0x", 3))
		return n;
	return i - 3;
}

/* Whether s matches \.\(.*\)\. (a Go method such as "net/http.(*Client).Do"). */
static bool go_like(const char *s, size_t n)
{
	const char *open = memmem(s, n, ".(", 2);
	size_t i;

	if (!open)
		return false;
	i = (size_t)(open - s) + 2;
	return memmem(s + i, n - i, ").", 2) != NULL;
}

/*
 * Where the script cuts a name, with \((?!anonymous namespace\)) and the
 * rest of the line: the first '(' not opening "(anonymous namespace)", or n.
 */
static size_t paren_cut(const char *s, size_t n)
{
	static const char anon[] = "anonymous namespace)";
	const size_t alen = sizeof(anon) - 1;
	const char *p = s, *end = s + n;

	while ((p = memchr(p, '(', (size_t)(end - p)))) {
		if ((size_t)(end - p - 1) < alen || memcmp(p + 1, anon, alen))
			return (size_t)(p - s);
		p++;
	}
	return n;
}

/* Whether s matches /tmp/perf-\d+\.map somewhere. */
static bool dso_is_jit(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	while ((p = memmem(p, (size_t)(end - p), "/tmp/perf-", 10))) {
		size_t i = (size_t)(p - s) + 10, d = skip_digits(s, i, n);

		if (d > i && n - d >= 4 && !memcmp(s + d, ".map", 4))
			return true;
		p++;
	}
	return false;
}

/* --kernel: the dso matches (^\[|vmlinux$) and not /unknown/. */
bool ps_dso_is_kernel(const char *s, size_t n)
{
	return ((n && s[0] == '[') || (n >= 7 && !memcmp(s + n - 7, "vmlinux", 7))) &&
	       !memmem(s, n, "unknown", 7);
}

/* Whether s matches perf-\d+.map somewhere ('.' is any byte). */
static bool has_perf_map(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	while ((p = memmem(p, (size_t)(end - p), "perf-", 5))) {
		size_t i = (size_t)(p - s) + 5, d = skip_digits(s, i, n);

		/* \d+ may give its last digit to the '.'. */
		if (d > i + 1 && n - d >= 3 && !memcmp(s + d, "map", 3))
			return true;
		if (d > i && n - d >= 4 && !memcmp(s + d + 1, "map", 3))
			return true;
		p++;
	}
	return false;
}

/* Whether s matches \[[^\]]+\] somewhere. */
static bool has_bracketed(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	while ((p = memchr(p, '[', (size_t)(end - p)))) {
		const char *close = memchr(p + 1, ']', (size_t)(end - p - 1));

		if (!close)
			return false;
		if (close > p + 1)
			return true;
		p = close + 1;
	}
	return false;
}

/* --inline applies to dsos not matching (perf-\d+.map|kernel\.|\[[^\]]+\]). */
static bool dso_wants_inline(const char *s, size_t n)
{
	return !has_perf_map(s, n) && !memmem(s, n, "kernel.", 7) && !has_bracketed(s, n);
}

static void count_parse(struct ps_count *c, const char *s, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v)) {
			char *copy = xstrndup(s, n);

			c->nv = strtod(copy, NULL);
			c->is_nv = true;
			free(copy);
			return;
		}
	}
	c->u = v;
	c->is_nv = false;
}

void ps_count_add(struct ps_count *acc, const struct ps_count *v)
{
	uint64_t sum;

	if (!acc->is_nv && !v->is_nv && !__builtin_add_overflow(acc->u, v->u, &sum)) {
		acc->u = sum;
		return;
	}
	acc->nv = (v->is_nv ? v->nv : (double)v->u) + (acc->is_nv ? acc->nv : (double)acc->u);
	acc->is_nv = true;
}

void ps_count_format(const struct ps_count *c, char *buf, size_t size)
{
	if (!c->is_nv)
		snprintf(buf, size, "%" PRIu64, c->u);
	else if (__builtin_isinf(c->nv))
		snprintf(buf, size, "Inf");
	else
		snprintf(buf, size, "%.15g", c->nv);
}

void ps_table_init(struct ps_table *t)
{
	memset(t, 0, sizeof(*t));
	strtab_init(&t->keys);
}

void ps_table_release(struct ps_table *t)
{
	strtab_release(&t->keys);
	free(t->sums);
	free(t->samples);
	memset(t, 0, sizeof(*t));
}

uint32_t ps_table_add(struct ps_table *t, const char *key, size_t len, const struct ps_count *v,
		      uint64_t nsamples)
{
	uint32_t id = strtab_intern(&t->keys, key, len);

	if (id >= t->alloc) {
		uint32_t old = t->alloc;

		ALLOC_GROW(t->sums, (size_t)id + 1, t->alloc);
		t->samples = xrealloc(t->samples, st_mult(t->alloc, sizeof(*t->samples)));
		memset(t->sums + old, 0, (t->alloc - old) * sizeof(*t->sums));
		memset(t->samples + old, 0, (t->alloc - old) * sizeof(*t->samples));
	}
	ps_count_add(&t->sums[id], v);
	t->samples[id] += nsamples;
	if (v->is_nv || __builtin_add_overflow(t->total, v->u, &t->total))
		t->inexact = true;
	return id;
}

void ps_carry_init(struct ps_carry *cs)
{
	memset(cs, 0, sizeof(*cs));
	strbuf_init(&cs->pname, 64);
	strbuf_init(&cs->groups, 256);
}

void ps_carry_release(struct ps_carry *cs)
{
	strbuf_release(&cs->pname);
	strbuf_release(&cs->groups);
	free(cs->gend);
}

/*
 * The hot path hashes every frame line: a multiply-fold hash over 16
 * bytes per step (as wyhash does), about twice as fast as hash_bytes was
 * before it became XXH3 (which may now beat this one: untried here).
 * Collisions cost time, never correctness: keys are always compared.
 */
static inline uint64_t fold_mul(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t fast_hash(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = seed ^ 0x2d358dccaa6c78a5ULL ^ len;

	for (; len >= 16; p += 16, len -= 16)
		h = fold_mul(load64(p) ^ 0x8bb84b93962eacc9ULL, load64(p + 8) ^ h);
	if (len >= 8) {
		h = fold_mul(load64(p) ^ 0x8bb84b93962eacc9ULL, h ^ 0x4b33a62ed433d4a3ULL);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t t = 0;

		memcpy(&t, p, len);
		h = fold_mul(t ^ 0x4b33a62ed433d4a3ULL, h ^ len);
	}
	return (uint32_t)fold_mul(h, 0x9e3779b97f4a7c15ULL);
}

/*
 * Stacks of a chunk, keyed by their id sequence.
 */
static uint32_t stacks_add(struct ps_stacks *t, const uint32_t *ids, uint32_t n,
			   const struct ps_count *v)
{
	uint32_t hash = fast_hash(ids, (size_t)n * sizeof(*ids), 0), pos = hash, id;
	struct ps_stack *e;

	while ((id = idhash_probe(&t->index, hash, &pos)) != IDHASH_NONE) {
		e = &t->v[id];
		if (e->len == n && !memcmp(t->ids + e->off, ids, (size_t)n * sizeof(*ids)))
			goto found;
	}
	if (t->nr == UINT32_MAX - 1)
		die("more than 2^32 distinct stacks");
	ALLOC_GROW(t->ids, t->nr_ids + n, t->alloc_ids);
	memcpy(t->ids + t->nr_ids, ids, (size_t)n * sizeof(*ids));
	ALLOC_GROW(t->v, (size_t)t->nr + 1, t->alloc);
	id = t->nr++;
	e = &t->v[id];
	memset(e, 0, sizeof(*e));
	e->off = t->nr_ids;
	e->len = n;
	t->nr_ids += n;
	idhash_insert(&t->index, hash, id);
found:
	ps_count_add(&e->sum, v);
	e->samples++;
	if (v->is_nv || __builtin_add_overflow(t->total, v->u, &t->total))
		t->inexact = true;
	return id;
}

static void stacks_release(struct ps_stacks *t)
{
	free(t->v);
	free(t->ids);
	idhash_release(&t->index);
}

/*
 * The chunk's lines.
 */
#define MSG_TEXT_MAX	 160
#define SEEN_MAX_LINES	 (1U << 20) /* frame lines remembered per chunk */
#define SEEN_MAX_LINELEN 4096

static void chunk_unrecognized(struct ps_chunk *k, const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	if (k->nr_unrecognized++ >= PERFSCRIPT_MAX_WARNINGS)
		return;
	/* Control bytes escaped, at most MSG_TEXT_MAX bytes shown. */
	for (i = 0; i < len && sb.len < MSG_TEXT_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			strbuf_addf(&sb, "\\x%02x", ch);
		else
			strbuf_addch(&sb, ch);
	}
	if (i < len)
		strbuf_addstr(&sb, "...");
	ALLOC_GROW(k->msgs, k->nr_msgs + 1, k->alloc_msgs);
	k->msgs[k->nr_msgs].line = k->lines;
	k->msgs[k->nr_msgs++].text = strbuf_detach(&sb, NULL);
}

/* The event test of a header; false when the sample is filtered out. */
static bool chunk_event_wanted(struct ps_chunk *k, const struct perfscript_event *e)
{
	const struct strbuf *f = &k->c->filter;

	if (!f->len || (f->len == e->event_len && !memcmp(f->buf, e->event, e->event_len)))
		return true;
	if (k->c->defaulted && !k->mismatch) {
		k->mismatch = xstrndup(e->event, e->event_len);
		k->mismatch_line = k->lines;
	}
	return false;
}

static void chunk_set_pname(struct ps_chunk *k, const struct perfscript_header *h)
{
	struct strbuf *pn = &k->tmp;
	bool tid_set = h->tid_len && !(h->tid_len == 1 && h->tid[0] == '0');
	const char *pid = tid_set ? h->pid : "?", *tid = tid_set ? h->tid : h->pid;
	size_t pid_len = tid_set ? h->pid_len : 1, tid_len = tid_set ? h->tid_len : h->pid_len;

	strbuf_reset(pn);
	strbuf_add(pn, h->comm, h->comm_len);
	if (k->c->o.tid || k->c->o.pid) {
		strbuf_addch(pn, '-');
		strbuf_add(pn, pid, pid_len);
	}
	if (k->c->o.tid) {
		strbuf_addch(pn, '/');
		strbuf_add(pn, tid, tid_len);
	}
	for (char *p = pn->buf; (p = memchr(p, ' ', pn->len - (size_t)(p - pn->buf))); p++)
		*p = '_';
	k->st.java = pn->len >= 4 && !memcmp(pn->buf, "java", 4);
	k->st.pname = strtab_intern(&k->names, pn->buf, pn->len);
	k->st.have_pname = true;
}

/* A line that matches the header regex; false when it does not. */
static bool chunk_header(struct ps_chunk *k, const char *s, size_t len)
{
	struct perfscript_header h;
	struct perfscript_event e;
	struct ps_count period = {.u = 1};

	if (!perfscript_match_header(s, len, &h))
		return false;
	if (perfscript_match_event(s, len, &e)) {
		if (!chunk_event_wanted(k, &e))
			return true;
		/* A missing period or "0" counts 1; "00" is true in Perl and adds 0. */
		if (e.period_len && !(e.period_len == 1 && e.period[0] == '0'))
			count_parse(&period, e.period, e.period_len);
	}
	chunk_set_pname(k, &h);
	k->st.period = period;
	return true;
}

static void chunk_push(struct ps_chunk *k, uint32_t group)
{
	struct ps_state *st = &k->st;

	ALLOC_GROW(st->groups, st->nr_groups + 1, st->alloc_groups);
	st->groups[st->nr_groups++] = group;
	st->key_len += strtab_len(&k->names, group) + 1;
}

/* "[unknown]" named after the dso, "[libfoo.so <addr>]" with --addrs, into k->tmp. */
static void unknown_name(struct ps_chunk *k, const struct perfscript_frame *f)
{
	struct strbuf *sb = &k->tmp;
	const char *slash;

	strbuf_reset(sb);
	strbuf_addch(sb, '[');
	if (f->dso_len == 9 && !memcmp(f->dso, "[unknown]", 9)) {
		strbuf_addstr(sb, "unknown");
	} else {
		slash = memrchr(f->dso, '/', f->dso_len);
		slash = slash ? slash + 1 : f->dso;
		strbuf_add(sb, slash, f->dso_len - (size_t)(slash - f->dso));
	}
	if (k->c->o.addrs) {
		strbuf_addstr(sb, " <");
		strbuf_add(sb, f->pc, f->pc_len);
		strbuf_addch(sb, '>');
	}
	strbuf_addch(sb, ']');
}

/* Append the tidied name of one "->"-separated piece of a frame to k->grp. */
static void chunk_piece(struct ps_chunk *k, const char *s, size_t n, size_t index,
			const struct perfscript_frame *f, bool kernel, bool jit)
{
	const struct collapse_options *o = &k->c->o;
	struct strbuf *g = &k->grp;
	size_t start, cut;
	char *out;

	if (n == 9 && !memcmp(s, "[unknown]", 9)) {
		unknown_name(k, f);
		s = k->tmp.buf;
		n = k->tmp.len;
	}
	cut = o->cut_paren && !go_like(s, n) ? paren_cut(s, n) : n;
	strbuf_grow(g, cut + 6);
	if (index)
		g->buf[g->len++] = ';';
	start = g->len;
	out = g->buf + start;
	for (size_t i = 0; i < cut; i++) {
		char ch = s[i];

		if (likely(!(cls[(unsigned char)ch] & CL_SPECIAL)))
			*out++ = ch;
		else if (ch == ';')
			*out++ = ':';
	}
	n = (size_t)(out - (g->buf + start));
	out = g->buf + start;
	if (k->st.java && n && out[0] == 'L' && memchr(out, '/', n))
		memmove(out, out + 1, --n);
	g->len = start + n;
	if (index) {
		if (!memmem(out, n, "_[i]", 4))
			strbuf_add(g, "_[i]", 4);
	} else if (kernel) {
		strbuf_add(g, "_[k]", 4);
	} else if (jit && !memmem(out, n, "_[j]", 4)) {
		strbuf_add(g, "_[j]", 4);
	}
	g->buf[g->len] = '\0';
}

/* --inline: addr2line's chain for the frame into k->grp; false to fall back to perf's name. */
static bool chunk_inline(struct ps_chunk *k, const struct perfscript_frame *f)
{
	size_t len;
	const char *r;

	if (!k->inl || !dso_wants_inline(f->dso, f->dso_len))
		return false;
	r = inline_cache_lookup(k->inl, f->pc, f->pc_len, f->func, f->func_len, f->dso, f->dso_len,
				&len);
	if (!len || (len == 2 && !memcmp(r, "??", 2)))
		return false;
	strbuf_add(&k->grp, r, len);
	return true;
}

/* The "->" in s[0..n), or NULL (memmem is slow on such short needles). */
static const char *find_arrow(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	while ((p = memchr(p, '-', (size_t)(end - p))) && p + 1 < end) {
		if (p[1] == '>')
			return p;
		p++;
	}
	return NULL;
}

/* Intern the group in k->grp; with modules wanted, remember its first dso. */
static uint32_t chunk_group_id(struct ps_chunk *k, const struct perfscript_frame *f)
{
	uint32_t id = strtab_intern(&k->names, k->grp.buf, k->grp.len);

	if (!k->c->modules || !f->dso_len || (f->dso_len == 9 && !memcmp(f->dso, "[unknown]", 9)))
		return id + 1;
	if (id >= k->alloc_group_dso) {
		size_t old = k->alloc_group_dso;

		ALLOC_GROW(k->group_dso, (size_t)id + 1, k->alloc_group_dso);
		memset(k->group_dso + old, 0, (k->alloc_group_dso - old) * sizeof(uint32_t));
	}
	if (!k->group_dso[id])
		k->group_dso[id] = strtab_intern(&k->dsos, f->dso, f->dso_len) + 1;
	return id + 1;
}

/* The group a frame line gives, as id + 1, or 0 when it gives none. */
static uint32_t chunk_frame_group(struct ps_chunk *k, const struct perfscript_frame *f)
{
	const struct collapse_options *o = &k->c->o;
	const char *s = f->func;
	size_t n = f->func_len, index = 0;
	bool kernel, jit;

	strbuf_reset(&k->grp);
	if (chunk_inline(k, f))
		goto done;
	n = strip_offset(s, n);
	if (n && s[0] == '(')
		return 0;
	/* split drops trailing empty fields: "a->" is one frame, "->" none. */
	while (n >= 2 && s[n - 2] == '-' && s[n - 1] == '>')
		n -= 2;
	if (!n)
		return 0;
	kernel = o->kernel && ps_dso_is_kernel(f->dso, f->dso_len);
	jit = o->jit && !kernel && dso_is_jit(f->dso, f->dso_len);
	for (;;) {
		const char *arrow = find_arrow(s, n);
		size_t len = arrow ? (size_t)(arrow - s) : n;

		chunk_piece(k, s, len, index++, f, kernel, jit);
		if (!arrow)
			break;
		s += len + 2;
		n -= len + 2;
	}
done:
	if (k->grp.len >= UINT32_MAX - 1) {
		if (!k->err_line)
			k->err_line = k->lines;
		return 0;
	}
	return chunk_group_id(k, f);
}

static uint32_t seen_hash(const char *s, size_t len, bool java)
{
	return fast_hash(s, len, java);
}

static const struct ps_line *seen_find(const struct ps_lines *t, const char *s, size_t len,
				       bool java, uint32_t hash)
{
	uint32_t pos = hash, id;

	while ((id = idhash_probe(&t->index, hash, &pos)) != IDHASH_NONE) {
		const struct ps_line *l = &t->v[id];

		if (l->len == len && l->java == java && !memcmp(l->s, s, len))
			return l;
	}
	return NULL;
}

static void seen_add(struct ps_lines *t, const char *s, size_t len, bool java, uint32_t hash,
		     uint32_t group_plus1)
{
	if (t->nr >= SEEN_MAX_LINES || len > SEEN_MAX_LINELEN)
		return;
	ALLOC_GROW(t->v, (size_t)t->nr + 1, t->alloc);
	t->v[t->nr] =
		(struct ps_line){arena_memdup(&t->text, s, len), (uint32_t)len, group_plus1, java};
	idhash_insert(&t->index, hash, t->nr++);
}

/* A line that starts with whitespace: a frame, or nothing the script knows. */
static void chunk_frame_line(struct ps_chunk *k, const char *s, size_t len)
{
	struct perfscript_frame f;
	const struct ps_line *l;
	uint32_t hash, group;

	if (!k->st.have_pname) {
		if (!perfscript_match_frame(s, len, &f))
			chunk_unrecognized(k, s, len);
		return;
	}
	hash = seen_hash(s, len, k->st.java);
	l = seen_find(&k->seen, s, len, k->st.java, hash);
	if (l) {
		group = l->group_plus1;
	} else if (perfscript_match_frame(s, len, &f)) {
		group = chunk_frame_group(k, &f);
		seen_add(&k->seen, s, len, k->st.java, hash, group);
	} else {
		chunk_unrecognized(k, s, len);
		return;
	}
	if (group)
		chunk_push(k, group - 1);
}

/* A blank line: store the sample ("pname;root;...;leaf") and start afresh. */
static void chunk_sample_end(struct ps_chunk *k)
{
	struct ps_state *st = &k->st;
	uint32_t id;

	if (!st->have_pname)
		return;
	if (st->key_len + strtab_len(&k->names, st->pname) >= UINT32_MAX - 1 ||
	    st->nr_groups >= UINT32_MAX - 1) {
		if (!k->err_line)
			k->err_line = k->lines;
	} else {
		ALLOC_GROW(k->key, st->nr_groups + 1, k->alloc_key);
		k->key[0] = st->pname;
		if (st->nr_groups)
			memcpy(k->key + 1, st->groups, st->nr_groups * sizeof(*k->key));
		id = stacks_add(&k->stacks, k->key, (uint32_t)st->nr_groups + 1, &st->period);
		k->nr_samples++;
		if (!k->has_first) {
			k->has_first = true;
			k->first_period = st->period;
		}
		if (k->keep_order) {
			ALLOC_GROW(k->order, k->nr_order + 1, k->alloc_order);
			k->order[k->nr_order++] = (struct ps_order){id, st->period};
		}
	}
	st->nr_groups = 0;
	st->key_len = 0;
	st->have_pname = false;
}

static void chunk_line(struct ps_chunk *k, const char *s, size_t len)
{
	struct perfscript_frame f;
	uint32_t group;

	if (!len) {
		chunk_sample_end(k);
		return;
	}
	if (s[0] == '#')
		return;
	if (is_space(s[0])) {
		chunk_frame_line(k, s, len);
		return;
	}
	if (chunk_header(k, s, len))
		return;
	if (!perfscript_match_frame(s, len, &f)) {
		chunk_unrecognized(k, s, len);
		return;
	}
	if (k->st.have_pname && (group = chunk_frame_group(k, &f)))
		chunk_push(k, group - 1);
}

void *ps_chunk_run(void *arg)
{
	struct ps_chunk *k = arg;
	const char *s = k->data, *end = k->data + k->len, *kept = s;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);

		k->lines++;
		chunk_line(k, s, len);
		s += len + 1;
		/* Parsed pages need not stay resident: peak memory is the tables. */
		if (k->in && (size_t)(s - kept) >= INPUT_DISCARD_STEP)
			kept = input_discard(k->in, kept, s);
	}
	return NULL;
}

void ps_chunk_init(struct ps_chunk *k, struct perfscript_collapse *c, const char *data, size_t len)
{
	memset(k, 0, sizeof(*k));
	k->c = c;
	k->inl = c->inl;
	k->data = data;
	k->len = len;
	k->keep_order = c->keep_order;
	strtab_init(&k->names);
	strbuf_init(&k->grp, 256);
	strbuf_init(&k->tmp, 256);
	strtab_init(&k->dsos);
}

void ps_chunk_release(struct ps_chunk *k)
{
	free(k->st.groups);
	strtab_release(&k->names);
	stacks_release(&k->stacks);
	free(k->seen.v);
	idhash_release(&k->seen.index);
	arena_release(&k->seen.text);
	strbuf_release(&k->grp);
	strbuf_release(&k->tmp);
	free(k->key);
	for (size_t i = 0; i < k->nr_msgs; i++)
		free(k->msgs[i].text);
	free(k->msgs);
	free(k->mismatch);
	free(k->order);
	strtab_release(&k->dsos);
	free(k->group_dso);
}

void ps_chunk_resume(struct ps_chunk *k, const struct ps_carry *cs)
{
	k->st.have_pname = cs->have_pname;
	k->st.java = cs->java;
	k->st.period = cs->period;
	k->st.pname = strtab_intern(&k->names, cs->pname.buf, cs->pname.len);
	for (size_t i = 0; i < cs->nr_groups; i++) {
		size_t b = i ? cs->gend[i - 1] : 0;

		chunk_push(k, strtab_intern(&k->names, cs->groups.buf + b, cs->gend[i] - b));
	}
}

void ps_chunk_suspend(const struct ps_chunk *k, struct ps_carry *cs)
{
	const struct ps_state *st = &k->st;

	cs->have_pname = st->have_pname;
	cs->java = st->java;
	cs->period = st->period;
	strbuf_reset(&cs->pname);
	strbuf_add(&cs->pname, strtab_str(&k->names, st->pname), strtab_len(&k->names, st->pname));
	strbuf_reset(&cs->groups);
	cs->nr_groups = 0;
	for (size_t i = 0; i < st->nr_groups; i++) {
		strbuf_add(&cs->groups, strtab_str(&k->names, st->groups[i]),
			   strtab_len(&k->names, st->groups[i]));
		ALLOC_GROW(cs->gend, cs->nr_groups + 1, cs->alloc_groups);
		cs->gend[cs->nr_groups++] = cs->groups.len;
	}
}

void ps_chunk_stack_string(const struct ps_chunk *k, uint32_t i, struct strbuf *sb)
{
	const struct ps_stack *e = &k->stacks.v[i];
	const uint32_t *ids = k->stacks.ids + e->off;

	strbuf_reset(sb);
	strbuf_add(sb, strtab_str(&k->names, ids[0]), strtab_len(&k->names, ids[0]));
	for (uint32_t j = e->len; j-- > 1;) {
		strbuf_addch(sb, ';');
		strbuf_add(sb, strtab_str(&k->names, ids[j]), strtab_len(&k->names, ids[j]));
	}
}

/* The first event named by a header, which the Perl script keeps by default. */
bool ps_find_first_event(const char *s, size_t len, struct strbuf *out)
{
	const char *end = s + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);
		struct perfscript_header h;
		struct perfscript_event e;

		if (l && s[0] != '#' && !is_space(s[0]) && perfscript_match_header(s, l, &h) &&
		    perfscript_match_event(s, l, &e)) {
			strbuf_add(out, e.event, e.event_len);
			return true;
		}
		s += l + 1;
	}
	return false;
}
