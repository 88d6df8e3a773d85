/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_OUTFILE_H
#define PLATEAU_OUTFILE_H

#include <stdio.h>

#include "util/error.h"

/*
 * Output files written whole or not at all.  outfile_open() on a regular
 * file, or on a name that does not exist yet, creates a temporary file
 * beside it (same directory, so that rename(2) is atomic; O_EXCL; mode
 * 0666 less the umask, or the existing file's mode); outfile_commit()
 * renames it over the target and outfile_abort() removes it, so a failure
 * leaves the old file as it was and no empty or temporary file behind.
 * A symbolic link is followed: the file it names is replaced.  A target
 * that is not a regular file (/dev/null, a FIFO, a terminal) is written
 * in place.
 *
 * Temporary files not yet committed or aborted are listed in a small
 * table (OUTFILE_MAX entries) that outfile_cleanup() removes: call it from
 * atexit() and from a fatal-signal handler (it is async-signal-safe).
 */
#define OUTFILE_MAX 8

struct outfile {
	FILE *f;    /* write here; owned, closed by commit or abort */
	char *path; /* the target as given (owned copy), for messages */
	char *dest; /* the file replaced: path, or what its link names (owned) */
	char *tmp;  /* the temporary file, or NULL when written in place (owned) */
	int slot;   /* in the cleanup table, or -1 */
};

/* Open path for writing; fills *o.  0, or ERR_IO/ERR_LIMIT naming path. */
int outfile_open(struct outfile *o, const char *path, struct error *err);

/*
 * Flush, close and move the temporary file over the target.  On a write,
 * close or rename error, the temporary file is removed, the target left
 * as it was, and ERR_IO returned naming path.  *o is released either way.
 */
int outfile_commit(struct outfile *o, struct error *err);

/* Close and remove the temporary file (a file written in place stays). NULL-safe. */
void outfile_abort(struct outfile *o);

/* Remove every temporary file this process has not committed or aborted. */
void outfile_cleanup(void);

#endif
