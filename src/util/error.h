/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_ERROR_H
#define PLATEAU_ERROR_H

/*
 * The one error type of the library layer.  A function that can fail
 * takes a struct error *, returns 0 on success or a negative code on
 * failure, and then has written a one-line message naming the file and
 * line (or field) at fault.  Callers in src/cmd/ print it and exit 1; the
 * server turns it into a 4xx reply.
 */
enum error_code {
	ERR_OK = 0,
	ERR_IO = -1,	 /* reading or writing failed */
	ERR_FORMAT = -2, /* malformed input */
	ERR_LIMIT = -3,	 /* input over a configured bound */
	ERR_UNSUPPORTED = -4,
	ERR_USAGE = -5,	  /* bad argument from the caller */
	ERR_NOMEM = -6,	  /* allocation failed (the server reports it, never aborts) */
	ERR_NOSPACE = -7, /* the disk is full: the store cannot write (the server: 507) */
};

struct error {
	int code;
	char msg[512];
};

#define ERROR_INIT    \
	{             \
		0, "" \
	}

/* Record the error and return code, so callers can "return error_set(...)". */
int error_set(struct error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
