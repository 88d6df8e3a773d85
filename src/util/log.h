/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_LOG_H
#define PLATEAU_LOG_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Diagnostics go to stderr, prefixed with the program name.  die() exits
 * with status 1 and is for src/cmd/ only; library code reports errors
 * through struct error (util/error.h).  BUG() marks a broken invariant.
 */
extern const char *log_progname;
/* How many -v were given (util/options.c sets it). */
extern int log_verbose;

void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void bug_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)

/*
 * Debug lines by module, after uftrace's debug domains.  Each module has a
 * level, 0 (off) by default; `-v` sets every module to 1 (`-vv` to 2),
 * `--debug=symbol,perf:2` or PLATEAU_DEBUG selects modules (util/options.c).
 * debug(MOD, ...) prints "plateau: debug: MOD: ..." on stderr at level 1
 * and up, debug2() at 2 and up (per item detail: one line per file, per
 * event, per request).  The level is tested before the arguments are
 * evaluated, so a line costs a load and a branch when off.  A line is
 * written whole (one locked write), so threads do not interleave.
 */
enum debug_module {
	DEBUG_FORMAT, /* inputs opened, formats detected, outputs written */
	DEBUG_SYMBOL, /* ELF, DWARF, debuginfo and perf maps found or missing, and why */
	DEBUG_UNWIND, /* unwind tables built, stacks cut short */
	DEBUG_PERF,   /* perf events opened, rings mapped, fallbacks */
	DEBUG_RECORD, /* the recorder: target, events, samples, warm-up */
	DEBUG_STORE,  /* the store: opened, migrated, queries planned */
	DEBUG_SERVER, /* plateau serve: configuration, requests dispatched */
	DEBUG_CLIENT, /* push and query: requests sent, answers */
	DEBUG_MODULES,
};

extern int debug_levels[DEBUG_MODULES];

#define debug_enabled(mod, level) (debug_levels[(mod)] >= (level))
#define debug(mod, ...)                                  \
	do {                                             \
		if (debug_enabled((mod), 1))             \
			debug_print((mod), __VA_ARGS__); \
	} while (0)
#define debug2(mod, ...)                                 \
	do {                                             \
		if (debug_enabled((mod), 2))             \
			debug_print((mod), __VA_ARGS__); \
	} while (0)

void debug_print(enum debug_module mod, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "symbol" for DEBUG_SYMBOL. */
const char *debug_module_name(enum debug_module mod);

/*
 * Set the levels from a list "MOD[:LEVEL],..." ("all" names every module;
 * a module without a level gets default_level): the modules named are set,
 * the others turned off.  NULL sets every module to default_level.  On an
 * unknown module or a bad level, returns -1 with the offending item in
 * bad (the levels are left as they were); 0 on success.
 */
int debug_select(const char *list, int default_level, char *bad, size_t bad_size);

/* "format, symbol, ..." for error messages and help. */
const char *debug_module_list(void);

#endif
