/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_SERVER_INGEST_FORM_H
#define PLATEAU_SERVER_INGEST_FORM_H

#include <stdbool.h>
#include <stddef.h>

#include "server/multipart.h"
#include "util/error.h"

/*
 * The multipart body of Pyroscope's POST /ingest, as its clients send it
 * (pyroscope-go upstream/remote: parts "profile" with filename
 * "profile.pprof" and "sample_type_config" with
 * "sample_type_config.json", both application/octet-stream; older
 * clients also "prev_profile").  doc/server-json.md describes it.
 */

#define STC_MAX_TYPES 32
#define STC_NAME_MAX  63 /* a sample type or display name */
#define STC_UNITS_MAX 31
#define STC_JSON_MAX  65536

/* One entry of sample_type_config: how to read one pprof sample type. */
struct stc_entry {
	char type[STC_NAME_MAX + 1];	     /* the pprof sample type, e.g. "inuse_space" */
	char units[STC_UNITS_MAX + 1];	     /* "bytes", "objects", "samples", ... or "" */
	char aggregation[8];		     /* "sum", "average" or "" */
	char display_name[STC_NAME_MAX + 1]; /* "" when none */
	bool sampled, cumulative;
};

struct sample_type_config {
	struct stc_entry types[STC_MAX_TYPES];
	size_t n;
};

/*
 * Parse the JSON object {"TYPE": {"units": ..., "aggregation": ...,
 * "display-name": ..., "sampled": bool, "cumulative": bool}, ...} into
 * out.  A null entry is skipped and unknown fields are ignored, as
 * Pyroscope's decoder does; a wrong type, an aggregation other than sum
 * or average, a duplicate type, or a string past its bound is an error.
 * Returns 0, ERR_FORMAT or ERR_LIMIT (more than STC_MAX_TYPES types, or
 * over STC_JSON_MAX bytes).
 */
int sample_type_config_parse(const char *json, size_t len, struct sample_type_config *out,
			     struct error *err);

/* The entry for pprof sample type name, or NULL. */
const struct stc_entry *sample_type_config_find(const struct sample_type_config *c,
						const char *type);

struct ingest_form {
	/* The parts by name; data NULL when absent.  Borrowed from the body. */
	struct multipart_part profile, prev_profile, sample_type_config;
	bool has_config;
	struct sample_type_config config; /* when has_config */
};

/*
 * Read the form of a POST /ingest: content_type is the request's
 * Content-Type, body its whole body (borrowed: f points into it).  A
 * part of another name is skipped, a second part of a known name is an
 * error, and so is a non-empty prev_profile (ERR_UNSUPPORTED: Pyroscope
 * refuses it too, asking for a newer client).  A missing or empty
 * profile is not an error: Pyroscope then ingests nothing, and the
 * caller decides.
 */
int ingest_form_parse(const char *content_type, const void *body, size_t len, struct ingest_form *f,
		      struct error *err);

#endif
