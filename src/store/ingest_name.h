/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_STORE_INGEST_NAME_H
#define PLATEAU_STORE_INGEST_NAME_H

#include "store/labels.h"
#include "util/error.h"

/*
 * The name parameter of Pyroscope's legacy push API (POST /ingest),
 * Pyroscope's segment key:
 *
 *	checkout.cpu{region=eu-west,host=web 1}
 *
 * APP.TYPE split at the last '.' (a name without one is the app alone:
 * Pyroscope then takes INGEST_DEFAULT_TYPE), then optional labels in
 * braces with unquoted values, each running to the next ',' or '}'.
 * Spaces around the name, keys and values are dropped; so is a label whose
 * value is empty, as Prometheus drops one.  Label names are read as
 * Pyroscope reads them: [A-Za-z0-9_.], each '.' mapped to '_'
 * (label_key_map(): "otel.scope.name" is otel_scope_name); two names
 * that mapping makes one are one label when their values are equal.
 * Stricter than Pyroscope, which ignores what it cannot read: a missing
 * '}', a key without '=', text after the '}', a key given twice, key
 * "__name__" and keys that do not map to [A-Za-z_][A-Za-z0-9_]* (a
 * leading digit, a '-': Pyroscope refuses those too) are errors.
 * doc/selector.md has the rules.
 */

#define INGEST_DEFAULT_TYPE "cpu"
#define INGEST_NAME_MAX	    65536 /* bytes of a name */

/*
 * Parse name into *out, one allocation (series_free()): app set, type NULL
 * when the name has no '.', labels sorted by key, mapped and valid
 * (labels_validate()); *renamed gets how many names had a '.'.  Returns
 * 0, or ERR_FORMAT / ERR_LIMIT with "ingest name: column N: ..." (N
 * counts bytes from 1), or ERR_NOMEM; *out is then NULL.
 */
int ingest_name_parse(const char *name, struct series **out, size_t *renamed, struct error *err);

#endif
