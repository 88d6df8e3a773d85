/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "format/format.h"
#include "profile/stats.h"
#include "render/flamegraph_int.h"

/*
 * The interactive SVG flame graph.  Geometry, text truncation and colours
 * follow flamegraph.pl so its users find the picture they know; the
 * script (assets/flamegraph.js, plateau's own) adds zoom, search and
 * shareable URLs.  Beyond flamegraph.pl: tooltips give the 95% interval
 * of each share, a footer states how many samples the picture rests on,
 * and a differential graph from plateau diff greys out changes that are
 * within sampling noise.  The document is built in one buffer and
 * written with a few large writes.
 */

extern const char asset_flamegraph_js[];
extern const size_t asset_flamegraph_js_len;

#define XPAD	     10
#define FRAMEPAD     1
#define FLUSH_AT     (4u << 20)
#define SEARCH_COLOR "rgb(230,0,230)"
#define NEUTRAL	     "rgb(215,215,215)"
#define FG_NS	     "https://plateau.dev/ns/flamegraph"

void flame_options_init(struct flame_options *o)
{
	memset(o, 0, sizeof(*o));
	o->width = 1200;
	o->height = 16;
	o->minwidth = 0.1;
	o->fonttype = "Verdana";
	o->fontsize = 12;
	o->fontwidth = 0.59;
	o->countname = "samples";
	o->nametype = "Function:";
	o->colors = "hot";
	o->palette_file = "palette.map";
	o->factor = 1;
	o->diff_alpha = 0.05;
}

struct svg {
	struct strbuf sb;
	FILE *f;
	const struct flame_options *o;
	const struct flame_layout *l;
	const struct profile *p;
	struct flame_colorer colorer;
	double width, height, fh, fontsize;
	double ypad1, ypad2, ypad3, ypad4;
	double wpt;	    /* pixels per value */
	double char_w;	    /* fontsize * fontwidth */
	double value_div;   /* 10^decimals of the drawn type */
	double base_div;    /* ... of base, in a diff */
	double frames_top;  /* inverted: y of the root row */
	bool formatted;	    /* values printed as the viewer does ("1.23 ms"), not counted */
	struct strbuf root; /* the root's title line and label: "all (1,234 samples, 100%)" */
	struct strbuf tmp;
};

/* Numbers. */

/*
 * v with d decimals exactly as printf("%.*f") (and so Perl's sprintf)
 * rounds it; snprintf only for values next to a rounding tie.
 */
static void add_fixed(struct strbuf *sb, double v, int d)
{
	static const double pow10[] = {1, 10, 100, 1000, 10000};
	double t = v * pow10[d], r = rint(t);
	char buf[64];
	int64_t n;

	if (fabs(t) > 9e15 || fabs(fabs(t - floor(t)) - 0.5) < 1e-6) {
		snprintf(buf, sizeof(buf), "%.*f", d, v);
		strbuf_addstr(sb, buf);
		return;
	}
	n = (int64_t)r;
	/* printf keeps the sign of a value rounded to zero: -0.04 is "-0.0". */
	if (n < 0 || (n == 0 && signbit(r))) {
		strbuf_addch(sb, '-');
		n = -n;
	}
	snprintf(buf, sizeof(buf), "%" PRId64, n / (int64_t)pow10[d]);
	strbuf_addstr(sb, buf);
	if (d) {
		snprintf(buf, sizeof(buf), ".%0*" PRId64, d, n % (int64_t)pow10[d]);
		strbuf_addstr(sb, buf);
	}
}

/* v as Perl prints a number: "85", "79.5" (%.15g). */
static void add_num(struct strbuf *sb, double v)
{
	char buf[64];

	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)v);
	else
		snprintf(buf, sizeof(buf), "%.15g", v);
	strbuf_addstr(sb, buf);
}

/* A count with thousands separators, as flamegraph.pl prints "%.0f" counts. */
static void add_count(struct strbuf *sb, double v)
{
	char buf[64];

	if (fabs(v) >= 9e18 || fabs(v - rint(v)) > 1e-9) {
		snprintf(buf, sizeof(buf), "%.2f", v);
		strbuf_addstr(sb, buf);
		return;
	}
	if (v < 0) {
		strbuf_addch(sb, '-');
		v = -v;
	}
	strbuf_add_commas(sb, (unsigned long long)rint(v));
}

/*
 * v as JavaScript's v.toFixed(d) prints it, which the HTML viewer uses:
 * unlike printf, a value exactly halfway rounds away from zero, and -0 is "0".
 */
static void add_js_fixed(struct strbuf *sb, double v, int d)
{
	static const double pow10[] = {1, 10, 100};
	double a = fabs(v), t = a * pow10[d];
	char buf[1200], *dot;
	unsigned long long n;

	if (v == 0)
		v = 0;
	if (!(t < 1e19) || fabs(t - floor(t) - 0.5) > 1e-6) {
		snprintf(buf, sizeof(buf), "%.*f", d, v);
		strbuf_addstr(sb, buf);
		return;
	}
	/* Near a tie: the exact decimal expansion of a tells (glibc prints it exactly). */
	snprintf(buf, sizeof(buf), "%.1100f", a);
	dot = strchr(buf, '.');
	if (dot[d + 1] != '5' || strspn(dot + d + 2, "0") != strlen(dot + d + 2)) {
		snprintf(buf, sizeof(buf), "%.*f", d, v);
		strbuf_addstr(sb, buf);
		return;
	}
	n = (unsigned long long)floor(t) + 1;
	if (v < 0)
		strbuf_addch(sb, '-');
	strbuf_addf(sb, "%llu", n / (unsigned long long)pow10[d]);
	if (d)
		strbuf_addf(sb, ".%0*llu", d, n % (unsigned long long)pow10[d]);
}

static double unit_seconds(const char *unit)
{
	static const struct {
		const char *name;
		double secs;
	} units[] = {
		{"nanoseconds", 1e-9},
		{"microseconds", 1e-6},
		{"milliseconds", 1e-3},
		{"seconds", 1},
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(unit, units[i].name))
			return units[i].secs;
	}
	return 0;
}

bool flame_unit_formatted(const char *unit)
{
	return unit && (unit_seconds(unit) || !strcmp(unit, "bytes"));
}

void flame_format_value(struct strbuf *sb, double v, const char *unit)
{
	static const char *const suffix[] = {" B", " KiB", " MiB", " GiB", " TiB"};
	double secs = unit_seconds(unit), a;
	size_t i = 0;

	if (secs) {
		v *= secs;
		a = fabs(v);
		if (a >= 1 || a == 0) {
			add_js_fixed(sb, v, 2);
			strbuf_addstr(sb, " s");
		} else if (a >= 1e-3) {
			add_js_fixed(sb, v * 1e3, 2);
			strbuf_addstr(sb, " ms");
		} else if (a >= 1e-6) {
			add_js_fixed(sb, v * 1e6, 2);
			strbuf_addstr(sb, " \xc2\xb5s"); /* µs */
		} else {
			add_js_fixed(sb, v * 1e9, 0);
			strbuf_addstr(sb, " ns");
		}
		return;
	}
	while (fabs(v) >= 1024 && i + 1 < ARRAY_SIZE(suffix)) {
		v /= 1024;
		i++;
	}
	add_js_fixed(sb, v, i ? 2 : 0);
	strbuf_addstr(sb, suffix[i]);
}

/* Text. */

static void add_xml_str(struct strbuf *sb, const char *s)
{
	strbuf_add_xml(sb, s, strlen(s));
}

/* Characters in s[0..len): a valid UTF-8 sequence or a stray byte (shown as '?') each. */
static size_t char_offset(const char *s, size_t len, size_t nchars, size_t *count)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k = 0;

	while (i < len && k < nchars) {
		size_t n = u[i] < 0x80 ? 1 : utf8_xml_len(u + i, len - i);

		i += n ? n : 1;
		k++;
	}
	*count = k;
	return i;
}

/*
 * The label of a frame box: as many characters as fit, the last two
 * replaced by ".." when cut (flamegraph.pl's rule), nothing under 3.
 */
static void add_label(struct strbuf *sb, const char *name, size_t len, double box_w, double char_w)
{
	size_t chars, n, end;

	if (box_w / char_w >= 1e9)
		chars = (size_t)1e9;
	else
		chars = (size_t)(box_w / char_w);
	if (chars < 3)
		return;
	end = char_offset(name, len, chars + 1, &n);
	if (n <= chars) {
		strbuf_add_xml(sb, name, len);
		return;
	}
	end = char_offset(name, len, chars - 2, &n);
	strbuf_add_xml(sb, name, end);
	strbuf_addstr(sb, "..");
}

/* An XML comment cannot hold "--": such pairs are written "- -". */
static void add_comment_text(struct strbuf *sb, const char *s)
{
	size_t start = sb->len;

	add_xml_str(sb, s);
	for (size_t i = start; i + 1 < sb->len; i++) {
		if (sb->buf[i] == '-' && sb->buf[i + 1] == '-') {
			strbuf_addch(sb, 0);
			memmove(sb->buf + i + 2, sb->buf + i + 1, sb->len - i - 2);
			sb->buf[i + 1] = ' ';
		}
	}
}

static void flush_some(struct svg *s)
{
	if (s->sb.len < FLUSH_AT)
		return;
	strbuf_write(&s->sb, s->f);
	strbuf_reset(&s->sb);
}

/* The document head: sizes, styles, the script and the fixed text elements. */

void flame_title(const struct profile *p, const struct flame_options *o, struct strbuf *out)
{
	if (o->title && *o->title)
		strbuf_addstr(out, o->title);
	else if (profile_is_diff(p) && o->base_name && o->new_name)
		strbuf_addf(out, "Diff: %s \xe2\x86\x92 %s", o->base_name, o->new_name); /* → */
	else if (profile_is_diff(p))
		strbuf_addstr(out, "Differential Flame Graph");
	else
		strbuf_addstr(out, o->inverted ? "Icicle Graph" : "Flame Graph");
}

/* The SVG's title: flame_title's, or "Flame Chart" for a flame chart of one profile. */
static void graph_title(const struct svg *s, struct strbuf *out)
{
	if (s->o->flamechart && !(s->o->title && *s->o->title) && !s->l->diff)
		strbuf_addstr(out, "Flame Chart");
	else
		flame_title(s->p, s->o, out);
}

static void add_header(struct svg *s, const char *bg1, const char *bg2)
{
	struct strbuf *sb = &s->sb;
	const struct flame_options *o = s->o;

	strbuf_addstr(sb, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
			  "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
			  "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n");
	strbuf_addf(sb, "<svg version=\"1.1\" width=\"%d\" height=\"", o->width);
	add_num(sb, s->height);
	strbuf_addf(sb, "\" onload=\"init(evt)\" viewBox=\"0 0 %d ", o->width);
	add_num(sb, s->height);
	strbuf_addstr(sb, "\" xmlns=\"http://www.w3.org/2000/svg\" "
			  "xmlns:xlink=\"http://www.w3.org/1999/xlink\" xmlns:fg=\"" FG_NS "\"");
	strbuf_addf(sb, " fg:xpad=\"%d\" fg:fontsize=\"", XPAD);
	add_num(sb, o->fontsize);
	strbuf_addstr(sb, "\" fg:fontwidth=\"");
	add_num(sb, o->fontwidth);
	strbuf_addf(sb, "\" fg:inverted=\"%d\" fg:searchcolor=\"" SEARCH_COLOR "\" fg:nametype=\"",
		    o->inverted ? 1 : 0);
	add_xml_str(sb, o->nametype ? o->nametype : "");
	strbuf_addstr(sb, "\">\n<!-- Flame graph written by plateau: click a frame to zoom, "
			  "Ctrl-F to search (a regular expression). -->\n<!-- NOTES: ");
	add_comment_text(sb, o->notes ? o->notes : "");
	strbuf_addf(sb,
		    " -->\n<defs>\n\t<linearGradient id=\"background\" y1=\"0\" y2=\"1\" "
		    "x1=\"0\" x2=\"0\" >\n\t\t<stop stop-color=\"%s\" offset=\"5%%\" />\n"
		    "\t\t<stop stop-color=\"%s\" offset=\"95%%\" />\n\t</linearGradient>\n"
		    "</defs>\n<style type=\"text/css\">\n\ttext { font-family:",
		    bg1, bg2);
	add_xml_str(sb, o->fonttype ? o->fonttype : "Verdana");
	strbuf_addstr(sb, "; font-size:");
	add_num(sb, o->fontsize);
	strbuf_addstr(sb, "px; fill:rgb(0,0,0); }\n"
			  "\t#search, #ignorecase { opacity:0.1; cursor:pointer; }\n"
			  "\t#search:hover, #search.show, #ignorecase:hover, #ignorecase.show "
			  "{ opacity:1; }\n"
			  "\t#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n"
			  "\t#title { text-anchor:middle; font-size:");
	add_num(sb, o->fontsize + 5);
	strbuf_addstr(sb, "px; }\n\t#footer { fill:rgb(100,100,100); font-size:");
	add_num(sb, o->fontsize > 3 ? o->fontsize - 2 : o->fontsize);
	strbuf_addstr(sb,
		      "px; }\n\t#unzoom { cursor:pointer; }\n"
		      "\t#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
		      "\t.hide { display:none; }\n\t.parent { opacity:0.5; }\n"
		      "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	strbuf_add(sb, asset_flamegraph_js, asset_flamegraph_js_len);
	strbuf_addstr(sb, "]]></script>\n");
}

static void add_text(struct svg *s, const char *id, double x, double y, const char *extra,
		     const char *text)
{
	struct strbuf *sb = &s->sb;

	strbuf_addf(sb, "<text id=\"%s\" x=\"", id);
	add_num(sb, x);
	strbuf_addstr(sb, "\" y=\"");
	add_num(sb, y);
	strbuf_addf(sb, "\"%s%s>", *extra ? " " : "", extra);
	add_xml_str(sb, text);
	strbuf_addstr(sb, "</text>\n");
}

/* Half the width of the 95% interval of share p from n samples, in points. */
static double half_width_pp(double p, double n)
{
	double lo, hi;

	stats_wilson(p * n, n, STATS_Z95, &lo, &hi);
	return 50 * (hi - lo);
}

/* " +/-0.88 pp at 50%": two significant digits, trailing zeros kept. */
static void add_error_pp(struct strbuf *sb, double share, double n, const char *sep)
{
	double pp = half_width_pp(share, n);
	int digits = pp >= 9.95 ? 0 : pp >= 0.995 ? 1 : pp >= 0.0995 ? 2 : 3;

	strbuf_addf(sb, "%s +/-%.*f pp at %g%%", sep, digits, pp, 100 * share);
}

static void add_samples(struct strbuf *sb, double n, bool exact)
{
	if (!exact)
		strbuf_addstr(sb, "about ");
	add_count(sb, rint(n));
	strbuf_addstr(sb, " samples");
}

/* The footer: what the picture rests on, and how precise its widths are. */
static void footer_text(struct svg *s, struct strbuf *t)
{
	const struct flame_layout *l = s->l;

	if (l->diff && l->diff_counts) {
		strbuf_addstr(t, "base ");
		add_samples(t, l->base_samples, true);
		strbuf_addstr(t, ", new ");
		add_samples(t, l->samples, true);
		strbuf_addstr(t, s->o->negate ? "; blue grew, red shrank (self)"
					      : "; red grew, blue shrank (self)");
		if (s->o->diff_significance)
			strbuf_addf(t,
				    "; grey: within sampling noise (two-proportion test, p >= %g)",
				    s->o->diff_alpha);
		return;
	}
	add_samples(t, l->samples, l->samples_exact);
	if (l->diff) {
		strbuf_addstr(t,
			      s->o->negate ? "; blue grew, red shrank" : "; red grew, blue shrank");
		strbuf_addstr(t, " (self value of new minus base)");
		return;
	}
	strbuf_addstr(t, "; 95% sampling error of a share:");
	add_error_pp(t, 0.5, l->eff_samples, "");
	add_error_pp(t, 0.1, l->eff_samples, ",");
	add_error_pp(t, 0.01, l->eff_samples, ",");
}

static void add_fixed_texts(struct svg *s)
{
	const struct flame_options *o = s->o;
	double w = o->width, bottom = s->height - s->ypad4 - s->ypad2 / 2;
	struct strbuf t = STRBUF_INIT;

	strbuf_addstr(&s->sb, "<rect id=\"background-rect\" x=\"0.0\" y=\"0\" width=\"");
	add_fixed(&s->sb, w, 1);
	strbuf_addstr(&s->sb, "\" height=\"");
	add_fixed(&s->sb, s->height, 1);
	strbuf_addstr(&s->sb, "\" fill=\"url(#background)\"  />\n");
	graph_title(s, &t);
	add_text(s, "title", floor(w / 2), o->fontsize * 2, "", t.buf);
	strbuf_reset(&t);
	if (o->subtitle && *o->subtitle)
		add_text(s, "subtitle", floor(w / 2), o->fontsize * 4, "", o->subtitle);
	add_text(s, "details", XPAD, bottom, "", " ");
	add_text(s, "unzoom", XPAD, o->fontsize * 2, "class=\"hide\"", "Reset Zoom");
	add_text(s, "search", w - XPAD - 100, o->fontsize * 2, "", "Search");
	add_text(s, "ignorecase", w - XPAD - 16, o->fontsize * 2, "", "ic");
	add_text(s, "matched", w - XPAD - 100, bottom, "", " ");
	footer_text(s, &t);
	add_text(s, "footer", XPAD, s->height - s->ypad4 / 2 + o->fontsize / 3, "", t.buf);
	strbuf_release(&t);
}

/* Frames. */

/* The frame a box shows; the root ("all") has the empty name and no flags. */
static const struct frame *frame_of(const struct profile *p, const struct flame_frame *fr)
{
	static const struct frame root;

	return fr->node ? &p->frames[p->nodes[fr->node].frame] : &root;
}

static double share_pct(double part, double whole)
{
	return whole > 0 ? 100 * part / whole : 0;
}

/* The interval of the share the title prints (shown of whole), bounds rounded outward. */
static void add_interval(struct svg *s, double shown, double whole)
{
	struct stats_share sh;

	stats_share_of(shown, whole, s->l->eff_samples, &sh);
	strbuf_addstr(&s->sb, "\n95% interval: ");
	add_fixed(&s->sb, stats_pct_floor(sh.lo, 2), 2);
	strbuf_addstr(&s->sb, "% to ");
	add_fixed(&s->sb, stats_pct_ceil(sh.hi, 2), 2);
	strbuf_addstr(&s->sb, "%");
}

/* Differential tooltip lines: both shares, and whether the change is noise. */
static void add_diff_lines(struct svg *s, const struct flame_frame *fr, double p)
{
	const struct flame_layout *l = s->l;
	double bs = share_pct((double)fr->base, (double)l->base_all);
	double ns = share_pct((double)fr->value, (double)l->total);

	strbuf_addstr(&s->sb, "\nbase ");
	add_fixed(&s->sb, bs, 2);
	strbuf_addstr(&s->sb, "% -> new ");
	add_fixed(&s->sb, ns, 2);
	strbuf_addstr(&s->sb, ns - bs > 0 ? "% (+" : "% (");
	add_fixed(&s->sb, ns - bs, 2);
	strbuf_addstr(&s->sb, " pp)");
	if (p < 0 || !fr->delta)
		return;
	strbuf_addf(&s->sb,
		    p < s->o->diff_alpha ? "\nself change significant (p=%.2g)"
					 : "\nchange not significant (p=%.2g)",
		    p);
}

/*
 * A frame's value, unescaped: "1,234 samples" as flamegraph.pl prints it, or
 * "1.23 ms" as the HTML viewer does when the count name is its unit.
 */
static void add_amount(const struct svg *s, struct strbuf *sb, int64_t value)
{
	double v = (double)value / s->value_div * s->o->factor;

	if (s->formatted) {
		flame_format_value(sb, v, s->o->countname);
		return;
	}
	add_count(sb, rint(v));
	strbuf_addch(sb, ' ');
	strbuf_addstr(sb, s->o->countname);
}

/* The tooltip: "name (N samples, P%)" as flamegraph.pl, then plateau's lines. */
static void add_title(struct svg *s, const struct flame_frame *fr, double p)
{
	const struct profile *pr = s->l->p;
	const struct flame_options *o = s->o;
	struct strbuf *sb = &s->sb;
	double shown = rint((double)fr->value / s->value_div * o->factor);
	double whole = (double)s->l->timemax / s->value_div * o->factor;
	const struct frame *f = frame_of(pr, fr);
	const char *name = profile_str(pr, f->name);
	size_t len = flame_strip_annotation(name, strtab_len(&pr->strs, f->name));

	strbuf_addstr(sb, "<title>");
	if (!fr->node) {
		strbuf_add_xml(sb, s->root.buf, s->root.len);
	} else {
		strbuf_add_xml(sb, name, len);
		strbuf_addstr(sb, " (");
		strbuf_reset(&s->tmp);
		add_amount(s, &s->tmp, fr->value);
		strbuf_add_xml(sb, s->tmp.buf, s->tmp.len);
		strbuf_addstr(sb, ", ");
		add_fixed(sb, share_pct(shown, whole), 2);
		strbuf_addch(sb, '%');
		if (s->l->diff) {
			double d = (double)(o->negate ? -fr->delta : fr->delta) / s->value_div;

			strbuf_addstr(sb, d > 0 ? "; +" : "; ");
			add_fixed(sb, share_pct(d * o->factor, whole), 2);
			strbuf_addch(sb, '%');
		}
		strbuf_addch(sb, ')');
	}
	if (s->l->diff)
		add_diff_lines(s, fr, p);
	else if (fr->node)
		add_interval(s, shown, whole);
	if ((f->flags & FRAME_INLINED) ||
	    (len + 4 == strtab_len(&pr->strs, f->name) && name[len + 2] == 'i'))
		strbuf_addstr(sb, "\n(inlined)");
	if (f->flags & FRAME_UNSYMBOLIZED)
		strbuf_addstr(sb, "\nunsymbolized: no symbol for this address");
	if (fr->node && f->module) {
		strbuf_addstr(sb, "\nin ");
		strbuf_add_xml(sb, profile_str(pr, f->module), strtab_len(&pr->strs, f->module));
	}
	strbuf_addstr(sb, "</title>");
}

/* The fill of a frame, and (diff with counts) the p-value of its change, else -1. */
static void frame_fill(struct svg *s, const struct flame_frame *fr, char fill[32], double *p)
{
	const struct flame_layout *l = s->l;
	const struct profile *pr = l->p;
	const struct frame *f = frame_of(pr, fr);
	const char *name = profile_str(pr, f->name);
	size_t len = strtab_len(&pr->strs, f->name);
	struct flame_rgb c;

	*p = -1;
	if (!l->diff || (len == 2 && !memcmp(name, "--", 2)) || (len == 1 && name[0] == '-')) {
		/* Unsymbolized by name too: a folded file's "[unknown]" has no flags. */
		flame_color(&s->colorer, name, len,
			    fr->node ? fr->flags | flame_name_flags(name, len) : fr->flags, fill);
		return;
	}
	if (l->diff_counts && s->o->diff_significance) {
		*p = stats_two_prop_p(fr->base_self_n, l->base_samples, fr->new_self_n, l->samples);
		if (fr->delta && *p >= s->o->diff_alpha) {
			memcpy(fill, NEUTRAL, sizeof(NEUTRAL));
			return;
		}
	}
	c = flame_diff_color(fr->delta, l->max_delta, s->o->negate);
	snprintf(fill, 32, "rgb(%u,%u,%u)", c.r, c.g, c.b);
}

static void add_frame(struct svg *s, const struct flame_frame *fr)
{
	const struct profile *pr = s->l->p;
	struct strbuf *sb = &s->sb;
	double x1 = XPAD + (double)fr->start * s->wpt;
	double x2 = XPAD + (double)(fr->start + fr->value) * s->wpt;
	double y1, y2, rx1, rx2, p;
	char fill[32];

	if (s->o->inverted) {
		y1 = s->frames_top + fr->depth * s->fh;
		y2 = y1 + s->fh - FRAMEPAD;
	} else {
		y2 = s->height - s->ypad2 - s->ypad4 - fr->depth * s->fh;
		y1 = y2 - s->fh + FRAMEPAD;
	}
	frame_fill(s, fr, fill, &p);
	/* fg:v: the value, for the script's matched share (the title may show "1.23 ms"). */
	strbuf_addf(sb, "<g fg:v=\"%" PRId64 "\">\n", fr->value);
	add_title(s, fr, p);
	/* Rounded like flamegraph.pl: x and the right edge, then their difference. */
	rx1 = rint(x1 * 10) / 10;
	rx2 = rint(x2 * 10) / 10;
	strbuf_addstr(sb, "<rect x=\"");
	add_fixed(sb, x1, 1);
	strbuf_addstr(sb, "\" y=\"");
	add_num(sb, y1);
	strbuf_addstr(sb, "\" width=\"");
	add_fixed(sb, rx2 - rx1, 1);
	strbuf_addstr(sb, "\" height=\"");
	add_fixed(sb, y2 - y1, 1);
	strbuf_addstr(sb, "\" fill=\"");
	add_xml_str(sb, fill); /* a --cp palette file may hold anything */
	strbuf_addstr(sb, "\" rx=\"2\" ry=\"2\" />\n<text x=\"");
	add_fixed(sb, x1 + 3, 2);
	strbuf_addstr(sb, "\" y=\"");
	add_num(sb, 3 + (y1 + y2) / 2);
	strbuf_addstr(sb, "\">");
	if (fr->node) {
		const struct frame *f = &pr->frames[pr->nodes[fr->node].frame];
		const char *name = profile_str(pr, f->name);

		add_label(sb, name, flame_strip_annotation(name, strtab_len(&pr->strs, f->name)),
			  x2 - x1, s->char_w);
	} else {
		/* The root says what the whole graph is, zoomed or not (flamegraph.pl leaves it blank). */
		add_label(sb, s->root.buf, s->root.len, x2 - x1, s->char_w);
	}
	strbuf_addstr(sb, "</text>\n</g>\n");
}

static void svg_geometry(struct svg *s)
{
	const struct flame_options *o = s->o;
	bool subtitle = o->subtitle && *o->subtitle;

	s->fontsize = o->fontsize;
	s->fh = o->height;
	s->ypad1 = o->fontsize * 3;
	s->ypad2 = o->fontsize * 2 + 10;
	s->ypad3 = subtitle ? o->fontsize * 2 : 0;
	s->ypad4 = o->fontsize + 6; /* the footer */
	s->height = (s->l->max_depth + 1) * s->fh + s->ypad1 + s->ypad2 + s->ypad3 + s->ypad4;
	s->frames_top = s->ypad1 + s->ypad3;
	s->wpt = (double)(o->width - 2 * XPAD) / (double)s->l->timemax;
	s->char_w = o->fontsize * o->fontwidth;
	s->value_div = 1;
	for (uint32_t d = 0; d < s->l->p->types[s->l->type].decimals; d++)
		s->value_div *= 10;
	s->formatted = flame_unit_formatted(o->countname);
	strbuf_addstr(&s->root, "all (");
	add_amount(s, &s->root, s->l->frames[0].value);
	strbuf_addstr(&s->root, ", 100%)");
}

static int check_options(const struct flame_options *o, struct error *err)
{
	if (o->width <= 2 * XPAD || o->width > 1000000)
		return error_set(err, ERR_USAGE, "--width must be between 21 and 1000000, not %d",
				 o->width);
	if (o->height < 1 || o->height > 10000)
		return error_set(err, ERR_USAGE, "--height must be between 1 and 10000, not %d",
				 o->height);
	if (!(o->fontsize > 0 && o->fontsize <= 1000) || !(o->fontwidth > 0 && o->fontwidth <= 10))
		return error_set(err, ERR_USAGE, "--fontsize and --fontwidth must be positive");
	if (!(o->minwidth >= 0 && o->minwidth < 1e9) || !(o->factor > 0 && o->factor < 1e15))
		return error_set(err, ERR_USAGE, "--minwidth and --factor must be positive");
	if (flame_palette_parse(o->colors ? o->colors : "hot") < 0)
		return error_set(err, ERR_USAGE, "unknown palette '%s'", o->colors);
	return 0;
}

static int write_svg(struct svg *s, struct error *err)
{
	char bg1[8], bg2[8];
	int pal = flame_palette_parse(s->o->colors ? s->o->colors : "hot"), rc;

	if (!flame_background(pal, s->o->bgcolors, bg1, bg2))
		return error_set(err, ERR_USAGE,
				 "unknown background '%s' (yellow, blue, green, grey or #rrggbb)",
				 s->o->bgcolors);
	flame_colorer_init(&s->colorer, pal, s->o->hash, s->o->random, s->o->seed);
	if (s->o->cp && !s->l->diff &&
	    (rc = flame_palette_load(&s->colorer,
				     s->o->palette_file ? s->o->palette_file : "palette.map", err)))
		return rc;
	svg_geometry(s);
	strbuf_init(&s->sb, 1 << 16);
	add_header(s, bg1, bg2);
	add_fixed_texts(s);
	strbuf_addstr(&s->sb, "<g id=\"frames\">\n");
	for (size_t i = 0; i < s->l->nr; i++) {
		add_frame(s, &s->l->frames[i]);
		flush_some(s);
	}
	strbuf_addstr(&s->sb, "</g>\n</svg>\n");
	strbuf_write(&s->sb, s->f);
	if (s->o->cp && !s->l->diff &&
	    (rc = flame_palette_save(&s->colorer,
				     s->o->palette_file ? s->o->palette_file : "palette.map", err)))
		return rc;
	if (ferror(s->f))
		return error_set(err, ERR_IO, "write error: %s", strerror(errno));
	return 0;
}

int flamegraph_svg_write(const struct profile *p, const struct flame_options *o, FILE *f,
			 struct error *err)
{
	struct flame_layout l;
	struct svg s = {.f = f, .o = o, .l = &l, .root = STRBUF_INIT, .tmp = STRBUF_INIT};
	int rc;

	if ((rc = check_options(o, err)) || (rc = flame_layout_build(&l, p, o, err)))
		return rc;
	s.p = l.p;
	rc = write_svg(&s, err);
	strbuf_release(&s.sb);
	strbuf_release(&s.root);
	strbuf_release(&s.tmp);
	flame_colorer_release(&s.colorer);
	flame_layout_release(&l);
	return rc;
}
