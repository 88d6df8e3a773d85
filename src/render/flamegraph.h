/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_FLAMEGRAPH_H
#define PLATEAU_FLAMEGRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "util/error.h"

/*
 * Flame graph renderers: an interactive SVG with flamegraph.pl's options
 * and look, and a self-contained HTML viewer drawn on a canvas.
 *
 * Widths are shares of the total of sample type o->type.  A differential
 * profile (profile_is_diff) is always drawn with the widths of "new" and
 * coloured by each frame's self delta (red grew, blue shrank), as
 * flamegraph.pl draws a 3-column folded file; when it also has the
 * "base_samples"/"new_samples" counts of plateau diff and
 * o->diff_significance is set, a change that a two-proportion test does
 * not find significant at o->diff_alpha is drawn neutral grey.
 */
struct flame_options {
	const char *title; /* NULL: "Flame Graph" or "Icicle Graph" */
	const char *subtitle;
	int width;		  /* 1200 */
	int height;		  /* frame height, 16 */
	double minwidth;	  /* 0.1 */
	bool minwidth_pct;	  /* minwidth is a percentage of the total */
	const char *fonttype;	  /* "Verdana" */
	double fontsize;	  /* 12 */
	double fontwidth;	  /* 0.59 */
	const char *countname;	  /* "samples" (or the sample type's unit) */
	const char *nametype;	  /* "Function:" */
	const char *colors;	  /* "hot" */
	const char *bgcolors;	  /* NULL: by palette */
	bool hash;		  /* colour by name hash */
	bool random;		  /* random colours */
	bool cp;		  /* consistent palette through palette.map */
	const char *palette_file; /* "palette.map" */
	bool reverse;		  /* reverse stacks (folded input order) */
	bool inverted;		  /* icicle graph */
	bool flamechart;	  /* keep input order, x is time */
	bool negate;		  /* swap differential colours */
	double factor;		  /* multiply counts by this, 1 */
	const char *notes;
	double total;		/* fixed total for widths, 0 = actual total */
	uint32_t type;		/* sample type to draw */
	bool diff_significance; /* grey out frames whose change is noise (plateau diff) */
	double diff_alpha;	/* significance level, 0.05 */
	uint64_t seed;		/* --random: colour generator seed, 0 = from the clock */
	/* HTML only: */
	bool data_only;			      /* the viewer's JSON alone, not the page */
	const struct truncate_stats *dropped; /* what a cut folded into "other", or NULL */
	const char *dropped_why;	      /* and why ("maxNodes=8192") */
	/* A differential profile: what its two sides are called ("base.folded"), or NULL. */
	const char *base_name, *new_name;
};

/* flamegraph.pl's defaults (width 1200, height 16, minwidth 0.1 px, "hot" ...). */
void flame_options_init(struct flame_options *o);

struct strbuf;
/*
 * The title of p's graph, unescaped, appended to out: o->title, else for a
 * differential profile "Diff: BASE → NEW" from o->base_name and o->new_name
 * ("Differential Flame Graph" without them), else "Icicle Graph" (o->inverted)
 * or "Flame Graph".
 */
void flame_title(const struct profile *p, const struct flame_options *o, struct strbuf *out);

/*
 * Write p as an SVG to f (built in a buffer, written in large pieces;
 * nothing is written when the options or the profile are bad).  Returns 0, or ERR_USAGE for bad options (unknown palette or
 * background), ERR_FORMAT when there is nothing to draw (no positive
 * value), ERR_IO when f or the palette file (o->cp) fails.  With o->cp
 * the palette file is read before and rewritten after drawing.
 */
int flamegraph_svg_write(const struct profile *p, const struct flame_options *o, FILE *f,
			 struct error *err);
/*
 * Write p as the HTML viewer's page to f, or with o->data_only the JSON
 * object the page embeds (doc/viewer.md; the web UI fetches it), with
 * "dropped" when o->dropped says a cut folded frames into "other".
 */
int flamegraph_html_write(const struct profile *p, const struct flame_options *o, FILE *f,
			  struct error *err);

#endif
