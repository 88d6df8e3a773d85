/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_LOG_H
#define PLATEAU_LOG_H

#include <stdarg.h>

/*
 * Diagnostics go to stderr, prefixed with the program name.  die() exits
 * with status 1 and is for src/cmd/ only; library code reports errors
 * through struct error (util/error.h).  BUG() marks a broken invariant.
 */
extern const char *log_progname;
extern int log_verbose;

void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void bug_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)

#endif
