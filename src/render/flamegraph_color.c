/* SPDX-License-Identifier: MIT */
#include <time.h>
#include <unistd.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "util/outfile.h"
#include "format/format.h"
#include "format/input.h"
#include "render/flamegraph_int.h"

/*
 * Frame colours with flamegraph.pl's numbers, so a function keeps the
 * colour users know from it: by default each of the three colour
 * variables is the first draw of a 48-bit LCG (drand48, as Perl's rand)
 * seeded with the sum of the name's code points; --hash weights the first
 * three code points of the name and of its reverse.  Multi palettes (java,
 * js, perl, chain) pick a palette per frame from annotations and names.
 */

static const char *const palette_names[] = {
	[PAL_HOT] = "hot",	 [PAL_MEM] = "mem",	  [PAL_IO] = "io",
	[PAL_WAKEUP] = "wakeup", [PAL_CHAIN] = "chain",	  [PAL_JAVA] = "java",
	[PAL_JS] = "js",	 [PAL_PERL] = "perl",	  [PAL_RED] = "red",
	[PAL_GREEN] = "green",	 [PAL_BLUE] = "blue",	  [PAL_AQUA] = "aqua",
	[PAL_YELLOW] = "yellow", [PAL_PURPLE] = "purple", [PAL_ORANGE] = "orange",
};

int flame_palette_parse(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(palette_names); i++) {
		if (!strcmp(name, palette_names[i]))
			return (int)i;
	}
	return -1;
}

static bool is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return len > 0;
}

static bool is_hex_color(const char *s)
{
	return s[0] == '#' && strlen(s) == 7 && is_hex(s + 1, 6);
}

bool flame_background(int palette, const char *bgcolors, char c1[8], char c2[8])
{
	static const struct {
		const char *name, *c1, *c2;
	} bg[] = {
		{"yellow", "#eeeeee", "#eeeeb0"},
		{"blue", "#eeeeee", "#e0e0ff"},
		{"green", "#eef2ee", "#e0ffe0"},
		{"grey", "#f8f8f8", "#e8e8e8"},
	};

	if (!bgcolors || !*bgcolors) {
		if (palette == PAL_MEM)
			bgcolors = "green";
		else if (palette == PAL_IO || palette == PAL_WAKEUP || palette == PAL_CHAIN)
			bgcolors = "blue";
		else if (palette >= PAL_RED)
			bgcolors = "grey";
		else
			bgcolors = "yellow";
	}
	if (is_hex_color(bgcolors)) {
		memcpy(c1, bgcolors, 8);
		memcpy(c2, bgcolors, 8);
		return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(bg); i++) {
		if (!strcmp(bgcolors, bg[i].name)) {
			memcpy(c1, bg[i].c1, 8);
			memcpy(c2, bg[i].c2, 8);
			return true;
		}
	}
	return false;
}

void flame_colorer_init(struct flame_colorer *c, int palette, bool hash, bool random, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	c->palette = palette;
	c->hash = hash;
	c->random = random;
	if (!seed)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->rng = seed;
	strtab_init(&c->map);
}

void flame_colorer_release(struct flame_colorer *c)
{
	for (uint32_t i = 0; i < c->map_alloc; i++)
		free(c->map_colors[i]);
	free(c->map_colors);
	strtab_release(&c->map);
	memset(c, 0, sizeof(*c));
}

/* The code point at s[*i] (an invalid byte stands for itself); advances *i. */
static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *i)
{
	unsigned char b = s[*i];
	uint32_t cp;
	size_t n;

	if (b < 0x80 || b < 0xc2 || b > 0xf4) {
		(*i)++;
		return b;
	}
	n = b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
	if (*i + n >= len) {
		(*i)++;
		return b;
	}
	cp = b & (0x3f >> n);
	for (size_t k = 1; k <= n; k++) {
		if ((s[*i + k] & 0xc0) != 0x80) {
			(*i)++;
			return b;
		}
		cp = cp << 6 | (s[*i + k] & 0x3f);
	}
	*i += n + 1;
	return cp;
}

/* flamegraph.pl's namehash over code points cps[0..n) (already in the order to weigh). */
static double namehash_cps(const uint32_t *cps, size_t n)
{
	double vector = 0, weight = 1, max = 1;
	unsigned mod = 10;

	for (size_t k = 0; k < n && mod <= 12; k++, mod++) {
		vector += ((double)(cps[k] % mod) / (double)(mod - 1)) * weight;
		max += weight;
		weight *= 0.70;
	}
	return 1 - vector / max;
}

/* Code points of s[0..len), at most max, from the front or (reverse) the back. */
static size_t some_cps(const char *s, size_t len, bool reverse, uint32_t *out, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = 0, i = 0;

	if (!reverse) {
		while (i < len && n < max)
			out[n++] = utf8_next(u, len, &i);
		return n;
	}
	/* From the back: step over continuation bytes, then decode forwards. */
	while (len && n < max) {
		size_t start = len - 1, j;
		uint32_t cp;

		while (start > 0 && len - start < 4 && (u[start] & 0xc0) == 0x80)
			start--;
		j = start;
		cp = utf8_next(u, len, &j);
		if (j != len) { /* not one whole character: the last byte alone */
			start = len - 1;
			cp = u[start];
		}
		out[n++] = cp;
		len = start;
	}
	return n;
}

/*
 * --hash: flamegraph.pl first drops a "module`" prefix (up to the first
 * backquote after the first character), then weighs three characters.
 */
static double namehash(const char *s, size_t len, bool reverse)
{
	uint32_t cps[3];
	size_t n;

	if (!reverse) {
		const char *bq = len > 1 ? memchr(s + 1, '`', len - 1) : NULL;

		if (bq) {
			len -= (size_t)(bq + 1 - s);
			s = bq + 1;
		}
	} else {
		/* Reversed, the first backquote is the last one here (not the last byte). */
		for (size_t k = len >= 2 ? len - 1 : 0; k-- > 0;) {
			if (s[k] == '`') {
				len = k;
				break;
			}
		}
	}
	n = some_cps(s, len, reverse, cps, 3);
	return namehash_cps(cps, n);
}

/* Perl's rand(1) right after srand(seed): one step of its drand48. */
static double perl_first_rand(uint32_t seed)
{
	uint64_t x = (((uint64_t)seed << 16) + 0x330e) & 0xffffffffffffULL;

	x = (x * 0x5deece66dULL + 0xb) & 0xffffffffffffULL;
	return (double)x / 281474976710656.0;
}

static uint32_t codepoint_sum(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t sum = 0;
	size_t i = 0;

	while (i < len)
		sum += utf8_next(u, len, &i);
	return sum;
}

static double rng_next(uint64_t *state)
{
	uint64_t x = *state += 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (double)(x >> 11) / 9007199254740992.0;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

static bool contains(const char *s, size_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle)) != NULL;
}

/* ^L?(java|javax|jdk|net|org|com|io|sun)/ */
static bool is_java_name(const char *s, size_t len)
{
	static const char *const pkgs[] = {"java/", "javax/", "jdk/", "net/",
					   "org/",  "com/",   "io/",  "sun/"};

	if (len && s[0] == 'L') {
		s++;
		len--;
	}
	for (size_t i = 0; i < ARRAY_SIZE(pkgs); i++) {
		size_t n = strlen(pkgs[i]);

		if (len >= n && !memcmp(s, pkgs[i], n))
			return true;
	}
	return false;
}

static int java_palette(const char *s, size_t len, uint32_t flags)
{
	if (ends_with(s, len, "_[j]") || (flags & FRAME_JIT))
		return PAL_GREEN;
	if (ends_with(s, len, "_[i]") || (flags & FRAME_INLINED))
		return PAL_AQUA;
	if (is_java_name(s, len) || contains(s, len, ":::"))
		return PAL_GREEN;
	if (contains(s, len, "::"))
		return PAL_YELLOW;
	if (ends_with(s, len, "_[k]") || (flags & FRAME_KERNEL))
		return PAL_ORANGE;
	return PAL_RED;
}

static int js_palette(const char *s, size_t len, uint32_t flags)
{
	const char *slash = memchr(s, '/', len);

	if (ends_with(s, len, "_[j]") || (flags & FRAME_JIT))
		return slash ? PAL_GREEN : PAL_AQUA;
	if (contains(s, len, "::"))
		return PAL_YELLOW;
	if (slash && contains(slash, len - (size_t)(slash - s), ".js"))
		return PAL_GREEN;
	if (memchr(s, ':', len))
		return PAL_AQUA;
	if (len == 1 && s[0] == ' ')
		return PAL_GREEN;
	if (contains(s, len, "_[k]") || (flags & FRAME_KERNEL))
		return PAL_ORANGE;
	return PAL_RED;
}

static int perl_palette(const char *s, size_t len, uint32_t flags)
{
	if (contains(s, len, "::"))
		return PAL_YELLOW;
	if (contains(s, len, "Perl") || contains(s, len, ".pl"))
		return PAL_GREEN;
	if (ends_with(s, len, "_[k]") || (flags & FRAME_KERNEL))
		return PAL_ORANGE;
	return PAL_RED;
}

/* The single-hue palette a multi palette picks for this frame. */
static int resolve_palette(int pal, const char *s, size_t len, uint32_t flags)
{
	/* plateau's marker for inlined frames (pprof lines, libdw): aqua, as java's _[i]. */
	if ((flags & FRAME_INLINED) && pal != PAL_CHAIN && pal != PAL_WAKEUP)
		return PAL_AQUA;
	switch (pal) {
	case PAL_JAVA: return java_palette(s, len, flags);
	case PAL_JS: return js_palette(s, len, flags);
	case PAL_PERL: return perl_palette(s, len, flags);
	case PAL_WAKEUP: return PAL_AQUA;
	case PAL_CHAIN:
		return (contains(s, len, "_[w]") || (flags & FLAME_WAKER)) ? PAL_AQUA : PAL_BLUE;
	default: return pal;
	}
}

static struct flame_rgb palette_rgb(int pal, double v1, double v2, double v3)
{
	struct flame_rgb c = {0, 0, 0};

#define V(base, span, v) ((uint8_t)((base) + (int)((span) * (v))))
	switch (pal) {
	case PAL_HOT: c = (struct flame_rgb){V(205, 50, v3), V(0, 230, v1), V(0, 55, v2)}; break;
	case PAL_MEM: c = (struct flame_rgb){0, V(190, 50, v2), V(0, 210, v1)}; break;
	case PAL_IO: c = (struct flame_rgb){V(80, 60, v1), V(80, 60, v1), V(190, 55, v2)}; break;
	case PAL_RED: c = (struct flame_rgb){V(200, 55, v1), V(50, 80, v1), V(50, 80, v1)}; break;
	case PAL_GREEN: c = (struct flame_rgb){V(50, 60, v1), V(200, 55, v1), V(50, 60, v1)}; break;
	case PAL_BLUE: c = (struct flame_rgb){V(80, 60, v1), V(80, 60, v1), V(205, 50, v1)}; break;
	case PAL_YELLOW:
		c = (struct flame_rgb){V(175, 55, v1), V(175, 55, v1), V(50, 20, v1)};
		break;
	case PAL_PURPLE:
		c = (struct flame_rgb){V(190, 65, v1), V(80, 60, v1), V(190, 65, v1)};
		break;
	case PAL_AQUA: c = (struct flame_rgb){V(50, 60, v1), V(165, 55, v1), V(165, 55, v1)}; break;
	case PAL_ORANGE: c = (struct flame_rgb){V(190, 65, v1), V(90, 65, v1), 0}; break;
	}
#undef V
	return c;
}

/* "0xADDR" alone, or "MODULE+0xOFFSET" (symbol/symname.h, format/pprof.c) with no blank. */
static bool is_address_name(const char *s, size_t len)
{
	const char *plus = NULL;

	if (len > 2 && s[0] == '0' && s[1] == 'x' && is_hex(s + 2, len - 2))
		return true;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == ' ' || s[i] == '\t')
			return false;
		if (s[i] == '+')
			plus = s + i;
	}
	return plus && plus > s && (size_t)(s + len - plus) > 3 && plus[1] == '0' &&
	       plus[2] == 'x' && is_hex(plus + 3, (size_t)(s + len - plus - 3));
}

uint32_t flame_name_flags(const char *s, size_t len)
{
	size_t n = flame_strip_annotation(s, len);
	uint32_t fl = 0;

	if (n < len && s[n + 2] == 'k')
		fl |= FRAME_KERNEL;
	if (n < len && s[n + 2] == 'i')
		fl |= FRAME_INLINED;
	if (n < len && s[n + 2] == 'j')
		fl |= FRAME_JIT;
	if (!n || (n == 9 && !memcmp(s, "[unknown]", 9)) || is_address_name(s, n))
		fl |= FRAME_UNSYMBOLIZED;
	return fl;
}

static void compute_color(struct flame_colorer *c, const char *s, size_t len, uint32_t flags,
			  char out[32])
{
	double v1, v2, v3;
	struct flame_rgb rgb;

	if (c->hash) {
		v1 = namehash(s, len, false);
		v2 = v3 = namehash(s, len, true);
	} else if (c->random) {
		v1 = rng_next(&c->rng);
		v2 = rng_next(&c->rng);
		v3 = rng_next(&c->rng);
	} else {
		v1 = v2 = v3 = perl_first_rand(codepoint_sum(s, len));
	}
	if (flags & FRAME_UNSYMBOLIZED) {
		/* The HTML viewer's grey (viewer.js kindColor 4): no name, no hue. */
		unsigned grey = 175 + (unsigned)(int)(40 * v1);

		snprintf(out, 32, "rgb(%u,%u,%u)", grey, grey, grey);
		return;
	}
	rgb = palette_rgb(resolve_palette(c->palette, s, len, flags), v1, v2, v3);
	snprintf(out, 32, "rgb(%u,%u,%u)", rgb.r, rgb.g, rgb.b);
}

void flame_color(struct flame_colorer *c, const char *name, size_t len, uint32_t flags,
		 char out[32])
{
	uint32_t id;

	if (len == 2 && !memcmp(name, "--", 2)) {
		memcpy(out, "rgb(160,160,160)", 17);
		return;
	}
	if (len == 1 && name[0] == '-') {
		memcpy(out, "rgb(200,200,200)", 17);
		return;
	}
	if (!c->use_map) {
		compute_color(c, name, len, flags, out);
		return;
	}
	id = strtab_intern(&c->map, name, len);
	if (id >= c->map_alloc) {
		uint32_t old = c->map_alloc;

		ALLOC_GROW(c->map_colors, (size_t)id + 1, c->map_alloc);
		memset(c->map_colors + old, 0, (c->map_alloc - old) * sizeof(char *));
	}
	if (!c->map_colors[id]) {
		compute_color(c, name, len, flags, out);
		c->map_colors[id] = xstrdup(out);
	}
	snprintf(out, 32, "%s", c->map_colors[id]);
}

struct flame_rgb flame_diff_color(int64_t delta, int64_t max_delta, bool negate)
{
	struct flame_rgb c = {255, 255, 255};
	double max = max_delta > 0 ? (double)max_delta : 1, v = (double)delta;

	if (negate)
		v = -v;
	if (v > max)
		v = max;
	if (v < -max)
		v = -max;
	if (v > 0)
		c.g = c.b = (uint8_t)(int)(210 * (max - v) / max);
	else if (v < 0)
		c.r = c.g = (uint8_t)(int)(210 * (max + v) / max);
	return c;
}

size_t flame_strip_annotation(const char *name, size_t len)
{
	if (len >= 4 && name[len - 4] == '_' && name[len - 3] == '[' && name[len - 1] == ']' &&
	    name[len - 2] && strchr("kwij", name[len - 2]))
		return len - 4;
	return len;
}

/* A palette file line "name->colour": the colour is after the last "->". */
static void palette_line(struct flame_colorer *c, const char *s, size_t len)
{
	const char *arrow = NULL;
	uint32_t id;

	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] == '-' && s[i + 1] == '>')
			arrow = s + i;
	}
	if (!arrow || arrow + 2 == s + len || len - (size_t)(arrow + 2 - s) >= 32)
		return;
	id = strtab_intern(&c->map, s, (size_t)(arrow - s));
	if (id >= c->map_alloc) {
		uint32_t old = c->map_alloc;

		ALLOC_GROW(c->map_colors, (size_t)id + 1, c->map_alloc);
		memset(c->map_colors + old, 0, (c->map_alloc - old) * sizeof(char *));
	}
	free(c->map_colors[id]);
	c->map_colors[id] = xstrndup(arrow + 2, len - (size_t)(arrow + 2 - s));
}

int flame_palette_load(struct flame_colorer *c, const char *path, struct error *err)
{
	struct input in;
	const char *s, *end;
	int rc;

	c->use_map = true;
	if (access(path, F_OK))
		return 0;
	if ((rc = input_open(&in, path, err)))
		return rc;
	s = in.data;
	end = in.data + in.len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);

		palette_line(c, s, len && s[len - 1] == '\r' ? len - 1 : len);
		s += len + 1;
	}
	input_close(&in);
	return 0;
}

static int cmp_entry(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t lx = strtab_len(t, x), ly = strtab_len(t, y);
	int r = memcmp(strtab_str(t, x), strtab_str(t, y), MIN(lx, ly));

	return r ? r : (lx > ly) - (lx < ly);
}

int flame_palette_save(const struct flame_colorer *c, const char *path, struct error *err)
{
	uint32_t *ids = xmalloc(st_mult(c->map_alloc + 1, sizeof(uint32_t)));
	struct strbuf sb = STRBUF_INIT;
	struct outfile of;
	uint32_t n = 0;
	int rc;

	for (uint32_t i = 0; i < c->map_alloc; i++) {
		/* A name with a newline cannot be one line of the file. */
		if (c->map_colors[i] &&
		    !memchr(strtab_str(&c->map, i), '\n', strtab_len(&c->map, i)))
			ids[n++] = i;
	}
	if (n > 1)
		qsort_r(ids, n, sizeof(*ids), cmp_entry, (void *)&c->map);
	for (uint32_t i = 0; i < n; i++) {
		strbuf_add(&sb, strtab_str(&c->map, ids[i]), strtab_len(&c->map, ids[i]));
		strbuf_addf(&sb, "->%s\n", c->map_colors[ids[i]]);
	}
	free(ids);
	if (!(rc = outfile_open(&of, path, err))) {
		strbuf_write(&sb, of.f);
		rc = outfile_commit(&of, err);
	}
	strbuf_release(&sb);
	return rc;
}
