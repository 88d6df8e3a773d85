/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_FLAMEGRAPH_INT_H
#define PLATEAU_FLAMEGRAPH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "render/flamegraph.h"
#include "profile/profile.h"
#include "util/error.h"
#include "util/strtab.h"

/*
 * Inside the flame graph renderers: the colour functions
 * (flamegraph_color.c) and the layout of frames (flamegraph_layout.c),
 * shared by the SVG writer and open to the HTML viewer.
 */

/* Colours. */

enum flame_palette {
	PAL_HOT,
	PAL_MEM,
	PAL_IO,
	PAL_WAKEUP,
	PAL_CHAIN,
	PAL_JAVA,
	PAL_JS,
	PAL_PERL,
	PAL_RED,
	PAL_GREEN,
	PAL_BLUE,
	PAL_AQUA,
	PAL_YELLOW,
	PAL_PURPLE,
	PAL_ORANGE,
};

/* A frame under a "--" separator frame: a waker in the chain palette. */
#define FLAME_WAKER (1u << 16)

struct flame_rgb {
	uint8_t r, g, b;
};

/* The palette named name ("hot", "java" ...), or -1. */
int flame_palette_parse(const char *name);
/* The palette's default background gradient, or of bgcolors; false if bgcolors is bad. */
bool flame_background(int palette, const char *bgcolors, char c1[8], char c2[8]);

struct flame_colorer {
	int palette;
	bool hash;	    /* --hash: weighted hash of the name's first and last characters */
	bool random;	    /* --random: a new colour per frame */
	uint64_t rng;	    /* state of the --random generator */
	struct strtab map;  /* --cp: names of the consistent palette ... */
	char **map_colors;  /* ... and their colours (index: strtab id) */
	uint32_t map_alloc; /* entries of map_colors */
	bool use_map;
};

void flame_colorer_init(struct flame_colorer *c, int palette, bool hash, bool random,
			uint64_t seed);
void flame_colorer_release(struct flame_colorer *c);

/*
 * The colour of a frame named name[0..len) with frame flags, as
 * flamegraph.pl computes it (same numbers for the same name), written
 * as "rgb(r,g,b)" (or a --cp map entry) to out.  FRAME_UNSYMBOLIZED frames
 * are a grey of the same number instead, as the HTML viewer draws them.
 */
void flame_color(struct flame_colorer *c, const char *name, size_t len, uint32_t flags,
		 char out[32]);
/* The colour of a self delta in a differential graph scaled by max |delta|. */
struct flame_rgb flame_diff_color(int64_t delta, int64_t max_delta, bool negate);

/*
 * --cp: read the palette map file (a missing file is an empty map), and
 * write it back with every colour used.  Lines are "name->rgb(r,g,b)".
 */
int flame_palette_load(struct flame_colorer *c, const char *path, struct error *err);
int flame_palette_save(const struct flame_colorer *c, const char *path, struct error *err);

/* flamegraph.pl's name annotations ("_[k]", "_[i]", "_[j]", "_[w]"): length without it. */
size_t flame_strip_annotation(const char *name, size_t len);

/*
 * The frame_flags a name implies, for names that come without flags (folded
 * files): FRAME_KERNEL, FRAME_INLINED, FRAME_JIT from stackcollapse's "_[k]",
 * "_[i]", "_[j]"; FRAME_UNSYMBOLIZED for "", "[unknown]", a bare "0xADDR"
 * and "MODULE+0xOFFSET".  One classification for the SVG (greyed frames) and
 * the HTML viewer (its nameFlags).
 */
uint32_t flame_name_flags(const char *name, size_t len);

/* Values. */

/* Whether flame_format_value prints values of unit (a time unit or "bytes"). */
bool flame_unit_formatted(const char *unit);
/*
 * v, a value in a time unit ("nanoseconds" ... "seconds") or "bytes", as the
 * HTML viewer prints it (viewer.js fmtValue): "950 ns", "1.50 µs", "2.25 ms",
 * "3.00 s"; "512 B", "1.50 KiB" ... "TiB".
 */
struct strbuf;
void flame_format_value(struct strbuf *sb, double v, const char *unit);

/* Layout. */

struct flame_frame {
	uint32_t node;	/* a node of the frame (for the name); 0: the root "all" */
	uint32_t depth; /* 0 for the root */
	uint32_t flags; /* frame_flags of the node, plus FLAME_WAKER */
	int64_t start;	/* offset from the left edge, in values of the drawn type */
	int64_t value;	/* width, in values */
	double count;	/* samples through the frame */
	/* Differential profiles only. */
	int64_t base;			/* base value through the frame */
	int64_t delta;			/* self value: new minus base */
	double base_self_n, new_self_n; /* self sample counts, when the profile has them */
};

struct flame_layout {
	const struct profile *p; /* the profile drawn (o->reverse: owned copy) */
	struct profile *owned;
	struct flame_frame *frames; /* the root first */
	size_t nr, alloc;
	uint32_t type;	    /* sample type of the widths */
	uint32_t max_depth; /* of the frames drawn */
	int64_t total;	    /* sum of the drawn type */
	int64_t timemax;    /* values across the whole width: max(total, o->total) */
	double samples;	    /* samples in the profile: n of the intervals */
	bool samples_exact; /* from a samples/count type, not estimated from values */
	double eff_samples; /* effective samples of the type: n of the intervals (stats.h) */
	bool diff;	    /* a differential profile */
	bool diff_counts;   /* ... with base_samples/new_samples */
	int64_t base_all;   /* diff: total of base */
	double base_samples;
	int64_t max_delta; /* diff: largest |self delta|, at least 1 */
};

/*
 * Lay out p's frames as o asks: merged by name per parent and sorted
 * (or in input order for o->flamechart), omitting frames narrower than
 * o->minwidth.  Returns 0, ERR_FORMAT when there is no positive value
 * to draw, or ERR_USAGE for a bad sample type.
 */
int flame_layout_build(struct flame_layout *l, const struct profile *p,
		       const struct flame_options *o, struct error *err);
void flame_layout_release(struct flame_layout *l);

#endif
