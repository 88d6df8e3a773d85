/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_INPUT_H
#define PLATEAU_INPUT_H

#include <stddef.h>

#include "util/budget.h"
#include "util/error.h"

/*
 * A whole input file in memory: mapped when it is a regular file, read
 * otherwise ("-" is stdin), and inflated when it is gzip-compressed.  The
 * bytes are followed by a NUL that is not counted in len, so text parsers
 * may rely on a terminator.
 */
struct input {
	const char *name; /* for messages; borrowed */
	const char *data;
	size_t len;
	/* private */
	void *map;
	size_t map_len;
	char *heap;
	struct budget *budget; /* what heap was charged to, or NULL */
	size_t charged;
};

/* Upper bounds on what input_open accepts (bytes). */
#define INPUT_MAX_FILE	   ((size_t)16 << 30)
#define INPUT_MAX_INFLATED ((size_t)16 << 30)

/* Open path ("-" for stdin); 0, or ERR_IO / ERR_FORMAT / ERR_LIMIT. */
int input_open(struct input *in, const char *path, struct error *err);
/* Wrap bytes already in memory (not copied unless inflated). */
int input_from_buf(struct input *in, const char *name, const void *data, size_t len,
		   size_t max_inflated, struct error *err);
/*
 * As input_from_buf, a gzip body's inflated bytes charged to BUDGET (when
 * not NULL) until input_close: ERR_LIMIT "...inflates to more than MAX
 * bytes" when the body alone is over max_inflated, ERR_LIMIT "...no room in
 * the inflate budget..." (INPUT_BUDGET_MSG) when the bodies in flight hold
 * the rest of the budget (the caller may retry later).
 */
int input_from_buf_budget(struct input *in, const char *name, const void *data, size_t len,
			  size_t max_inflated, struct budget *budget, struct error *err);
#define INPUT_BUDGET_MSG "no room in the inflate budget"
/* Readers charge the profile they build to in->budget every this many samples or lines. */
#define PROFILE_CHARGE_STEP 4096
void input_close(struct input *in);

/*
 * Tell the kernel that the bytes of a mapped input in [from, to) (whole
 * pages inside it) will not be needed soon, so a large input does not stay
 * resident while a parser walks it.  Only file mappings are released: a
 * later read of those bytes faults them back in from the file, so keeping
 * pointers into released ranges stays correct.  Heap buffers (stdin,
 * inflated data) are left alone.  Parsers call it every
 * INPUT_DISCARD_STEP bytes; returns to, the new start of what is kept.
 */
const char *input_discard(const struct input *in, const char *from, const char *to);
#define INPUT_DISCARD_STEP ((size_t)4 << 20)

/*
 * Inflate a gzip (or zlib) buffer into *out, malloc'd and NUL-terminated
 * (the caller frees it); concatenated gzip members inflate as one stream,
 * bytes after the last member that do not start another are ignored.
 * Returns 0, ERR_LIMIT when the data inflates to more than max bytes (no
 * more than about max is ever allocated), ERR_FORMAT for truncated or
 * corrupt data, or ERR_NOMEM; *out is untouched on error.  Thread-safe.
 */
int input_gunzip(const char *name, const void *data, size_t len, size_t max, char **out,
		 size_t *out_len, struct error *err);

static inline int input_is_gzip(const void *data, size_t len)
{
	const unsigned char *p = data;

	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

#endif
