/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_FLAMEGRAPH_H
#define PLATEAU_FLAMEGRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/profile.h"
#include "util/error.h"

/*
 * Flame graph renderers: an interactive SVG with flamegraph.pl's options
 * and look, and a self-contained HTML viewer drawn on a canvas.
 * A differential profile (profile_is_diff) is drawn red/blue by delta.
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
};

void flame_options_init(struct flame_options *o);

int flamegraph_svg_write(const struct profile *p, const struct flame_options *o, FILE *f,
			 struct error *err);
int flamegraph_html_write(const struct profile *p, const struct flame_options *o, FILE *f,
			  struct error *err);

#endif
