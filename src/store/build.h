/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_BUILD_H
#define PLATEAU_STORE_BUILD_H

#include <stddef.h>

#include "store/labels.h"

/*
 * A series being parsed from text, built in one allocation that
 * series_free() releases (internal to src/store/).  Room is made for
 * LABELS_MAX labels and for strings as long as the text, plus their NULs,
 * so no string cut from the text can overflow it.
 */
struct series_build {
	struct series *s;
	struct series_label *labels; /* s->labels, writable */
	char *strings;		     /* the next free byte */
};

/* 0, or ERR_NOMEM. */
int series_build_init(struct series_build *b, size_t text_len);

/* Copy n bytes of src (part of the text, or decoded from it); the copy. */
char *series_build_store(struct series_build *b, const char *src, size_t n);

/* Add a label; the caller checked nlabels < LABELS_MAX. */
void series_build_add(struct series_build *b, const char *key, const char *value);

/* Hand the series to *out when rc is 0, else free it; returns rc. */
int series_build_done(struct series_build *b, int rc, struct series **out);

#endif
