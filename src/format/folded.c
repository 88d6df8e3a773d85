/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/strbuf.h"
#include "format/format.h"

/*
 * Folded stacks: "root;...;leaf COUNT" per line, as written by the
 * stackcollapse-*.pl scripts and read by flamegraph.pl.  A second count
 * ("stack BEFORE AFTER") makes a differential file, as difffolded.pl
 * writes.  Counts are unsigned integers or decimals ("1.5").
 */

#define MAX_DECIMALS 9

bool profile_is_diff(const struct profile *p)
{
	return p->nr_types >= 2 && !strcmp(profile_str(p, p->types[0].type), "base") &&
	       !strcmp(profile_str(p, p->types[1].type), "new");
}

struct count {
	uint64_t ip; /* integer part */
	uint64_t fp; /* fraction digits as an integer */
	uint32_t nfrac;
};

static inline bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Parse the count token s[0..len): digits, optionally '.' and digits.
 * Returns 0, 1 when it is not a number, -1 on overflow.
 */
static int parse_count(const char *s, size_t len, struct count *c)
{
	size_t i = 0;

	c->ip = c->fp = 0;
	c->nfrac = 0;
	if (!len || !is_digit(s[0]))
		return 1;
	for (; i < len && is_digit(s[i]); i++) {
		if (__builtin_mul_overflow(c->ip, 10, &c->ip) ||
		    __builtin_add_overflow(c->ip, (uint64_t)(s[i] - '0'), &c->ip))
			return -1;
	}
	if (i == len)
		return 0;
	if (s[i] != '.')
		return 1;
	for (i++; i < len; i++) {
		if (!is_digit(s[i]))
			return 1;
		if (c->nfrac == MAX_DECIMALS) {
			if (s[i] != '0')
				return -2;
			continue;
		}
		c->fp = c->fp * 10 + (uint64_t)(s[i] - '0');
		c->nfrac++;
	}
	return 0;
}

/* The count as a value with d decimals (d >= c->nfrac); false on overflow. */
static bool count_value(const struct count *c, uint32_t d, int64_t *out)
{
	uint64_t v = c->ip, fp = c->fp;

	for (uint32_t i = 0; i < d; i++) {
		if (__builtin_mul_overflow(v, 10, &v))
			return false;
	}
	for (uint32_t i = c->nfrac; i < d; i++)
		fp *= 10;
	if (__builtin_add_overflow(v, fp, &v) || v > INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

/* Split the last whitespace-separated token off [s, *end). */
static bool last_token(const char *s, const char **end, const char **tok, size_t *tok_len)
{
	const char *e = *end, *b;

	while (e > s && is_space(e[-1]))
		e--;
	b = e;
	while (b > s && !is_space(b[-1]))
		b--;
	if (b == e || b == s || !is_space(b[-1]))
		return false;
	*tok = b;
	*tok_len = (size_t)(e - b);
	*end = b;
	while (*end > s && is_space((*end)[-1]))
		(*end)--;
	return true;
}

struct folded_reader {
	const struct input *in;
	struct profile *p;
	size_t lineno;
	int ncounts; /* 1, or 2 for a differential file; 0 until known */
	/* The previous stack, to reuse the nodes of a common prefix. */
	const char *prev;
	size_t prev_len;
	size_t *prev_end; /* end offset of each frame */
	uint32_t *prev_node;
	size_t prev_depth, prev_alloc;
	/* Frame id of each interned name (UINT32_MAX: none yet); names are frames here. */
	uint32_t *frame_of;
	size_t frame_of_alloc;
	/* Each type's counts so far, kept in 64 bits when bounded_sum (read_options). */
	bool bounded_sum;
	int64_t total[2];
};

static uint32_t named_frame(struct folded_reader *r, const char *name, size_t len)
{
	uint32_t s = profile_intern(r->p, name, len);

	if (s >= r->frame_of_alloc) {
		size_t old = r->frame_of_alloc;

		if (ALLOC_TRY_GROW(r->frame_of, (size_t)s + 1, r->frame_of_alloc) < 0) {
			profile_nomem(r->p);
			return 0;
		}
		memset(r->frame_of + old, 0xff, (r->frame_of_alloc - old) * sizeof(uint32_t));
	}
	if (r->frame_of[s] == UINT32_MAX)
		r->frame_of[s] = profile_frame_named(r->p, name, len);
	return r->frame_of[s];
}

/* *V times 10^D; false when that passes 64 bits. */
static bool rescale(int64_t *v, uint32_t d)
{
	while (d--)
		if (__builtin_mul_overflow(*v, 10, v))
			return false;
	return true;
}

static int add_counts(struct folded_reader *r, uint32_t node, const struct count *c, int n,
		      struct error *err)
{
	int64_t vals[2];
	int rc;

	if (profile_failed(r->p)) /* its types may be missing */
		return error_set(err, ERR_NOMEM, "%s:%zu: out of memory", r->in->name, r->lineno);

	for (int i = 0; i < n; i++) {
		uint32_t d = r->p->types[i].decimals;

		if (c[i].nfrac > d && (profile_set_decimals(r->p, (uint32_t)i, c[i].nfrac) ||
				       !rescale(&r->total[i], c[i].nfrac - d)))
			return error_set(err, ERR_LIMIT, "%s:%zu: counts overflow 64 bits",
					 r->in->name, r->lineno);
		if (!count_value(&c[i], r->p->types[i].decimals, &vals[i]))
			return error_set(err, ERR_LIMIT, "%s:%zu: count overflows 64 bits",
					 r->in->name, r->lineno);
		/*
		 * The whole file's sum, not only each stack's: two stacks of
		 * 2^63-1 each made a profile no total or flame graph could hold.
		 */
		if (r->bounded_sum && __builtin_add_overflow(r->total[i], vals[i], &r->total[i]))
			return error_set(err, ERR_LIMIT, "%s:%zu: sum of counts overflows 64 bits",
					 r->in->name, r->lineno);
	}
	rc = profile_add_sample(r->p, node, 0, vals);
	if (rc == ERR_NOMEM)
		return error_set(err, ERR_NOMEM, "%s:%zu: out of memory", r->in->name, r->lineno);
	if (rc)
		return error_set(err, ERR_LIMIT, "%s:%zu: sum of counts overflows 64 bits",
				 r->in->name, r->lineno);
	return 0;
}

static size_t common_prefix(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = MIN(alen, blen), i = 0;

	/* Word at a time: sorted folded files share long prefixes line to line. */
	while (i + 8 <= n) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
		i += 8;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* The node of the stack s[0..len), reusing the previous line's nodes. */
static uint32_t stack_node(struct folded_reader *r, const char *s, size_t len)
{
	size_t common = common_prefix(s, len, r->prev ? r->prev : "", r->prev ? r->prev_len : 0);
	bool same = common == len && len == r->prev_len;
	uint32_t node = 0;
	size_t depth = 0, start = 0;

	if (!len)
		return 0;
	for (;;) {
		const char *semi = memchr(s + start, ';', len - start);
		size_t end = semi ? (size_t)(semi - s) : len;

		if (depth < r->prev_depth && r->prev_end[depth] == end && (end < common || same)) {
			node = r->prev_node[depth];
		} else {
			uint32_t f = named_frame(r, s + start, end - start);

			node = profile_child(r->p, node, f);
		}
		if (depth + 1 > r->prev_alloc) {
			size_t alloc = r->prev_alloc;
			uint32_t *nodes = NULL;

			if (ALLOC_TRY_GROW(r->prev_end, depth + 1, alloc) == 0)
				nodes = alloc_array(r->prev_node, alloc, sizeof(uint32_t));
			if (!nodes) { /* the next line shares nothing with this one */
				profile_nomem(r->p);
				r->prev = NULL;
				r->prev_len = r->prev_depth = 0;
				return node;
			}
			r->prev_node = nodes;
			r->prev_alloc = alloc;
		}
		r->prev_end[depth] = end;
		r->prev_node[depth] = node;
		depth++;
		if (!semi)
			break;
		start = end + 1;
	}
	r->prev_depth = depth;
	r->prev = s;
	r->prev_len = len;
	return node;
}

/*
 * read_line()'s results besides 0 (a sample) and errors: a line that does
 * not end with a count, one whose count is bad (err says why), a blank
 * line.
 */
#define BAD_LINE   1
#define BAD_COUNT  2
#define BLANK_LINE 3

/* Why the count token tok[0..len) is bad (parse_count's rc); BAD_LINE or BAD_COUNT. */
static int bad_count(struct folded_reader *r, int rc, const char *tok, size_t len,
		     struct error *err)
{
	const char *name = r->in->name;
	int n = (int)MIN(len, 40);

	if (rc == -1)
		error_set(err, ERR_LIMIT, "%s:%zu: count '%.*s' overflows 64 bits", name, r->lineno,
			  n, tok);
	else if (rc == -2)
		error_set(err, ERR_FORMAT, "%s:%zu: count '%.*s' has more than %d decimals", name,
			  r->lineno, n, tok, MAX_DECIMALS);
	else if (len && tok[0] == '-')
		error_set(err, ERR_FORMAT, "%s:%zu: negative count '%.*s'", name, r->lineno, n,
			  tok);
	if (err->code)
		return BAD_COUNT;
	error_set(err, ERR_FORMAT, "%s:%zu: line does not end with a sample count", name,
		  r->lineno);
	return BAD_LINE;
}

static int read_line(struct folded_reader *r, const char *s, size_t len, struct error *err)
{
	const char *end = s + len, *tok, *tok2;
	size_t tok_len, tok2_len;
	struct count c[2];
	int rc, n = 1;

	while (end > s && is_space(end[-1]))
		end--;
	if (end == s)
		return BLANK_LINE;
	if (!last_token(s, &end, &tok, &tok_len)) {
		/* A bare count (empty stack) is a sample at the root. */
		while (s < end && is_space(*s))
			s++;
		tok = s;
		tok_len = (size_t)(end - s);
		end = s;
		if ((rc = parse_count(tok, tok_len, &c[0])))
			return bad_count(r, rc, tok, tok_len, err);
	} else if ((rc = parse_count(tok, tok_len, &c[0]))) {
		return bad_count(r, rc, tok, tok_len, err);
	}
	if (r->ncounts != 1) {
		const char *e2 = end;

		if (last_token(s, &e2, &tok2, &tok2_len) && !parse_count(tok2, tok2_len, &c[1])) {
			struct count after = c[0];

			c[0] = c[1];
			c[1] = after;
			end = e2;
			n = 2;
		}
		if (!r->ncounts) {
			r->ncounts = n;
			profile_add_type(r->p, n == 2 ? "base" : "samples", "count");
			if (n == 2)
				profile_add_type(r->p, "new", "count");
		} else if (n != 2) {
			error_set(err, ERR_FORMAT,
				  "%s:%zu: differential file line has one count, not two",
				  r->in->name, r->lineno);
			return BAD_COUNT;
		}
	}
	return add_counts(r, stack_node(r, s, (size_t)(end - s)), c, r->ncounts, err);
}

/* At most this many skipped lines are named, per file; then their count. */
#define MAX_WARNINGS 10

struct line_check {
	const struct read_options *o;
	size_t good, bad;
	struct error first;	  /* the first bad line, while refusing them */
	struct error first_count; /* the first with a bad count: a folded line */
	/* Warnings held back until a line parses: an input with none is not folded. */
	char held[MAX_WARNINGS][sizeof(((struct error *)0)->msg) + 16];
};

static void warn_held(struct line_check *c)
{
	for (size_t i = 0; i < MIN(c->bad, (size_t)MAX_WARNINGS); i++)
		c->o->warn(c->o->warn_arg, c->held[i]);
}

/*
 * A line that does not parse: skipped with a warning when the options say
 * so (as flamegraph.pl ignores it), else the input is refused, with the
 * first bad line, once some line did parse: an input none of whose lines
 * parse is not folded at all.  0 to go on, or the error.
 */
static int line_bad(struct line_check *c, const struct error *why, bool bad_count,
		    struct error *err)
{
	c->bad++;
	if (bad_count && !c->first_count.code)
		c->first_count = *why;
	if (c->o && c->o->skip_bad_lines) {
		if (c->bad <= MAX_WARNINGS && c->o->warn) {
			char *msg = c->held[c->bad - 1];

			snprintf(msg, sizeof(c->held[0]), "%s; line skipped", why->msg);
			if (c->good)
				c->o->warn(c->o->warn_arg, msg);
		}
		return 0;
	}
	if (c->bad == 1)
		c->first = *why;
	if (!c->good)
		return 0;
	*err = c->first;
	return err->code;
}

/* A line that parsed: refuses the input when a line before it did not. */
static int line_good(struct line_check *c, struct error *err)
{
	c->good++;
	if (c->bad && !(c->o && c->o->skip_bad_lines)) {
		*err = c->first;
		return err->code;
	}
	if (c->good == 1 && c->bad && c->o->warn)
		warn_held(c);
	return 0;
}

/*
 * The end: no line parsed is an error, the count of the lines skipped past
 * the ones named a warning.
 */
static int line_check_end(struct line_check *c, const char *name, struct error *err)
{
	if (!c->good && c->first_count.code) {
		*err = c->first_count;
		return err->code;
	}
	if (!c->good && c->bad)
		return error_set(err, ERR_FORMAT,
				 "%s: unrecognised format (expected folded, perf script or pprof)",
				 name);
	if (!c->good)
		return error_set(err, ERR_FORMAT, "%s: no samples", name);
	if (c->bad > MAX_WARNINGS && c->o && c->o->warn) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s: %zu more lines skipped (%zu in all)", name,
			 c->bad - MAX_WARNINGS, c->bad);
		c->o->warn(c->o->warn_arg, msg);
	}
	return 0;
}

/* One line: 0 (parsed, or skipped), or an error. */
static int folded_line(struct folded_reader *r, struct line_check *c, const char *s, size_t len,
		       struct error *err)
{
	struct error why = ERROR_INIT;
	int rc;

	if (memchr(s, '\0', len)) {
		error_set(&why, ERR_FORMAT, "%s:%zu: NUL byte in a folded line", r->in->name,
			  r->lineno);
		return line_bad(c, &why, false, err);
	}
	rc = read_line(r, s, len, &why);
	if (rc == BAD_LINE || rc == BAD_COUNT)
		return line_bad(c, &why, rc == BAD_COUNT, err);
	if (rc == BLANK_LINE)
		return 0;
	if (rc) {
		*err = why;
		return rc;
	}
	return line_good(c, err);
}

int folded_read(const struct input *in, const struct read_options *o, struct profile **out,
		struct error *err)
{
	struct folded_reader r = {.in = in, .bounded_sum = o && o->bounded_sum};
	struct line_check c = {.o = o};
	const char *s = in->data, *end = in->data + in->len;
	const char *kept = in->data;
	int rc = 0;

	r.p = profile_new();
	if (!r.p)
		return error_set(err, ERR_NOMEM, "%s: out of memory", in->name);
	r.p->keep_order = o && o->keep_order;
	r.p->budget = in->budget;
	while (s < end && !rc && !profile_failed(r.p)) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);

		r.lineno++;
		rc = folded_line(&r, &c, s, len, err);
		if (!rc && r.lineno % PROFILE_CHARGE_STEP == 0 && profile_charge(r.p))
			rc = error_set(err, ERR_LIMIT,
				       "%s:%zu: " INPUT_BUDGET_MSG
				       " (%zu bytes for the profiles being read); retry later",
				       in->name, r.lineno, r.p->budget->limit);
		/* The previous line must stay readable: stack_node() compares with it. */
		if ((size_t)(s - kept) >= INPUT_DISCARD_STEP)
			kept = input_discard(in, kept, s);
		s += len + 1;
	}
	free(r.prev_end);
	free(r.prev_node);
	free(r.frame_of);
	if (!rc && profile_failed(r.p))
		rc = error_set(err, ERR_NOMEM, "%s:%zu: out of memory", in->name, r.lineno);
	if (!rc)
		rc = line_check_end(&c, in->name, err);
	if (!rc && profile_charge(r.p))
		rc = error_set(err, ERR_LIMIT,
			       "%s: " INPUT_BUDGET_MSG
			       " (%zu bytes for the profiles being read); retry later",
			       in->name, r.p->budget->limit);
	if (rc) {
		profile_free(r.p);
		return rc;
	}
	r.p->period_type = r.p->types[0];
	r.p->period = 1;
	*out = r.p;
	return 0;
}

/*
 * Writing.  stackcollapse output is sorted bytewise by stack string, and
 * frames with equal names (in different modules) must come out as one
 * line.  Both follow from walking groups of sibling nodes as "tokens":
 * each distinct name gives a self token (key: the name) and a descendant
 * token (key: the name + ';'); sorting the tokens bytewise and expanding
 * descendant tokens in place yields exactly the sorted line order, with
 * no stack strings materialised.
 */
struct token {
	const char *key;
	uint32_t len; /* key length, ';' included for descendant tokens */
	bool descend;
	uint32_t node;
};

struct fold_writer {
	const struct profile *p;
	FILE *f;
	int ntypes;
	uint32_t types[2];
	int64_t *self[2];
	bool *below;	    /* some sample with a value lies strictly below the node */
	struct strbuf line; /* checked: an allocation that fails sets nomem */
	bool nomem;	    /* memory ran out: the output is incomplete (ERR_NOMEM) */
};

static int token_cmp(const void *x, const void *y)
{
	const struct token *a = x, *b = y;
	uint32_t la = a->len - a->descend, lb = b->len - b->descend;
	int c = memcmp(a->key, b->key, MIN(la, lb));

	if (c)
		return c;
	/* Equal names: compare the implicit suffixes (";" or end). */
	if (la != lb) {
		unsigned char ca = la < lb ? (a->descend ? ';' : 0) : (unsigned char)a->key[lb];
		unsigned char cb = la < lb ? (unsigned char)b->key[la] : (b->descend ? ';' : 0);

		if (ca != cb)
			return ca < cb ? -1 : 1;
		return la < lb ? -1 : 1;
	}
	if (a->descend != b->descend)
		return a->descend ? 1 : -1;
	return a->node < b->node ? -1 : a->node > b->node;
}

static bool same_key(const struct token *a, const struct token *b)
{
	return a->descend == b->descend && a->len == b->len &&
	       !memcmp(a->key, b->key, a->len - a->descend);
}

static void append_name(struct strbuf *sb, const char *name, size_t len)
{
	size_t start = sb->len;

	strbuf_add(sb, name, len);
	/* A ';' or newline inside a name would break the line format. */
	for (size_t i = start; i < sb->len; i++) {
		if (sb->buf[i] == ';')
			sb->buf[i] = ':';
		else if (sb->buf[i] == '\n' || sb->buf[i] == '\r')
			sb->buf[i] = ' ';
	}
}

/* Tokens of the children of nodes[0..n). */
static size_t make_tokens(struct fold_writer *w, const uint32_t *nodes, size_t n,
			  struct token **out)
{
	const struct profile *p = w->p;
	struct token *t = NULL;
	size_t nr = 0, alloc = 0;

	for (size_t i = 0; i < n; i++) {
		for (uint32_t c = p->nodes[nodes[i]].first_child; c; c = p->nodes[c].next_sibling) {
			uint32_t name = p->frames[p->nodes[c].frame].name;
			const char *key = profile_str(p, name);
			uint32_t len = strtab_len(&p->strs, name);

			if (ALLOC_TRY_GROW(t, nr + 2, alloc) < 0) {
				w->nomem = true;
				free(t);
				*out = NULL;
				return 0;
			}
			t[nr++] = (struct token){key, len, false, c};
			if (w->below[c])
				t[nr++] = (struct token){key, len + 1, true, c};
		}
	}
	if (nr)
		qsort(t, nr, sizeof(*t), token_cmp);
	*out = t;
	return nr;
}

static void emit_self(struct fold_writer *w, const struct token *t, size_t n, size_t prefix_len)
{
	int64_t sum[2] = {0, 0};
	bool any = false;
	char num[64];

	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < w->ntypes; k++) {
			sum[k] += w->self[k][t[i].node];
			any |= w->self[k][t[i].node] != 0;
		}
	}
	if (!any)
		return;
	strbuf_setlen(&w->line, prefix_len);
	append_name(&w->line, t[0].key, t[0].len);
	for (int k = 0; k < w->ntypes; k++) {
		profile_format_value(w->p, w->types[k], sum[k], num, sizeof(num));
		strbuf_addch(&w->line, ' ');
		strbuf_addstr(&w->line, num);
	}
	strbuf_addch(&w->line, '\n');
	if (strbuf_error(&w->line))
		w->nomem = true;
	else
		fwrite(w->line.buf, 1, w->line.len, w->f);
}

struct level {
	struct token *tokens;
	size_t nr, pos;
	size_t prefix_len;
};

/* Depth-first over token levels with an explicit stack: stacks may be 100,000 deep. */
static void write_tree(struct fold_writer *w)
{
	struct level *stack = NULL;
	size_t depth = 0, alloc = 0;
	uint32_t root = 0, *group = NULL;
	size_t group_alloc = 0;

	if (ALLOC_TRY_GROW(stack, 1, alloc) < 0) {
		w->nomem = true;
		return;
	}
	stack[0].nr = make_tokens(w, &root, 1, &stack[0].tokens);
	stack[0].pos = 0;
	stack[0].prefix_len = 0;
	depth = 1;
	while (depth) {
		struct level *l = &stack[depth - 1];
		size_t start = l->pos, end = start + 1, prefix_len;

		if (start >= l->nr || w->nomem) { /* without memory: unwound, freed */
			free(l->tokens);
			depth--;
			continue;
		}
		while (end < l->nr && same_key(&l->tokens[start], &l->tokens[end]))
			end++;
		l->pos = end;
		if (!l->tokens[start].descend) {
			emit_self(w, l->tokens + start, end - start, l->prefix_len);
			continue;
		}
		if (ALLOC_TRY_GROW(group, end - start, group_alloc) < 0 ||
		    ALLOC_TRY_GROW(stack, depth + 1, alloc) < 0) {
			w->nomem = true;
			continue;
		}
		l = &stack[depth - 1]; /* the stack may have moved */
		for (size_t i = start; i < end; i++)
			group[i - start] = l->tokens[i].node;
		strbuf_setlen(&w->line, l->prefix_len);
		append_name(&w->line, l->tokens[start].key, l->tokens[start].len - 1);
		strbuf_addch(&w->line, ';');
		prefix_len = w->line.len;
		l = &stack[depth];
		l->nr = make_tokens(w, group, end - start, &l->tokens);
		l->pos = 0;
		l->prefix_len = prefix_len;
		depth++;
	}
	free(group);
	free(stack);
}

static int write_folded(const struct profile *p, const uint32_t *types, int ntypes, FILE *f,
			struct error *err)
{
	struct fold_writer w = {.p = p, .f = f, .ntypes = ntypes};
	char num[64];

	w.below = calloc(p->nr_nodes, sizeof(bool));
	for (int k = 0; k < ntypes; k++) {
		w.types[k] = types[k];
		w.self[k] = calloc(p->nr_nodes, sizeof(int64_t));
		if (!w.below || !w.self[k]) {
			for (int j = 0; j <= k; j++)
				free(w.self[j]);
			free(w.below);
			return error_set(err, ERR_NOMEM, "out of memory writing folded stacks");
		}
		for (uint32_t s = 0; s < p->nr_samples; s++)
			w.self[k][p->samples[s].node] += profile_sample_values(p, s)[types[k]];
	}
	for (uint32_t n = p->nr_nodes - 1; n > 0; n--) {
		bool here = false;

		for (int k = 0; k < ntypes; k++)
			here |= w.self[k][n] != 0;
		if (here || w.below[n])
			w.below[p->nodes[n].parent] = true;
	}
	strbuf_init_max(&w.line, SIZE_MAX);
	/* Samples on the root itself (an empty stack) come first: "" sorts lowest. */
	if (w.self[0][0] || (ntypes > 1 && w.self[1][0])) {
		for (int k = 0; k < ntypes; k++) {
			profile_format_value(p, types[k], w.self[k][0], num, sizeof(num));
			fprintf(f, " %s", num);
		}
		fputc('\n', f);
	}
	write_tree(&w);
	strbuf_release(&w.line);
	for (int k = 0; k < ntypes; k++)
		free(w.self[k]);
	free(w.below);
	if (w.nomem)
		return error_set(err, ERR_NOMEM, "out of memory writing folded stacks");
	if (ferror(f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}

int folded_write(const struct profile *p, uint32_t type, FILE *f, struct error *err)
{
	return write_folded(p, &type, 1, f, err);
}

int folded_write_diff(const struct profile *p, FILE *f, struct error *err)
{
	uint32_t types[2] = {0, 1};

	if (p->nr_types < 2)
		return error_set(err, ERR_USAGE,
				 "a differential folded file needs two sample types");
	return write_folded(p, types, 2, f, err);
}
