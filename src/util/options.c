/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/options.h"
#include "util/suggest.h"

/*
 * Options every command takes, looked up after the command's own table:
 * -v/--verbose (repeatable) and --debug=MODULES turn on the debug lines of
 * util/log.h; PLATEAU_DEBUG stands for --debug when that is not given.
 */
static const char *debug_list;

static int opt_verbose(const struct option *opt UNUSED, const char *arg UNUSED)
{
	log_verbose++;
	return 0;
}

static const struct option common_opts[] = {
	OPT_CALLBACK('v', "verbose", NULL, NULL,
		     "debug lines on stderr, by module (-vv: more detail)", opt_verbose),
	OPT_STRING(0, "debug", &debug_list, "MODULES",
		   "debug lines of these modules only: MOD[:LEVEL],... (also PLATEAU_DEBUG)"),
	OPT_END(),
};

/* The command in the first usage line: "plateau top" of "plateau top [-n N] FILE". */
static void command_name(const char *const *usage, char *buf, size_t size)
{
	const char *u = usage && usage[0] ? usage[0] : log_progname;
	const char *sp = strchr(u, ' ');
	size_t len = strlen(u);

	if (sp && strchr(sp + 1, ' '))
		len = (size_t)(strchr(sp + 1, ' ') - u);
	snprintf(buf, size, "%.*s", (int)MIN(len, size - 1), u);
}

/*
 * A usage error: one line naming the problem and where the help is, then
 * the caller's "did you mean" lines, if any; never the whole help.
 */
static void usage_line(const char *const *usage, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void usage_line(const char *const *usage, const char *fmt, ...)
{
	char cmd[64];
	va_list ap;

	command_name(usage, cmd, sizeof(cmd));
	fflush(stdout);
	fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ". See '%s --help'.\n", cmd);
}

#define usage_error(usage, ...)                   \
	do {                                      \
		usage_line((usage), __VA_ARGS__); \
		exit(2);                          \
	} while (0)

/* The long options whose names are like typed (without its dashes). */
static void print_similar(const struct option *opts, const char *typed)
{
	size_t n = 0, np;
	const char **names;
	size_t *picked;

	for (const struct option *o = opts; o->type != OPTION_END; o++)
		n++;
	names = xcalloc(n + ARRAY_SIZE(common_opts), sizeof(*names));
	picked = xcalloc(n + ARRAY_SIZE(common_opts), sizeof(*picked));
	for (size_t i = 0; i < n; i++)
		names[i] = opts[i].long_name;
	for (size_t i = 0; common_opts[i].type != OPTION_END; i++)
		names[n++] = common_opts[i].long_name;
	np = suggest_similar(typed, names, n, picked);
	if (np == 1)
		fprintf(stderr, "did you mean '--%s'?\n", names[picked[0]]);
	else if (np > 1)
		fprintf(stderr, "did you mean one of these?\n");
	for (size_t i = 0; np > 1 && i < np; i++)
		fprintf(stderr, "\t--%s\n", names[picked[i]]);
	free(names);
	free(picked);
}

/* An unknown "--name" or "-name": the error, then the long options like name. */
static _Noreturn void unknown_option(const char *const *usage, const struct option *opts,
				     const char *typed, size_t len)
{
	char *name;

	usage_line(usage, "unknown option '%.*s'", (int)len, typed);
	name = xmemdup(typed + strspn(typed, "-"), len - strspn(typed, "-"));
	if (strlen(name) >= 2)
		print_similar(opts, name);
	free(name);
	exit(2);
}

static void print_option(FILE *f, const struct option *o)
{
	char left[64];
	int n = 0;

	n += snprintf(left + n, sizeof(left) - (size_t)n, "    ");
	if (o->short_name)
		n += snprintf(left + n, sizeof(left) - (size_t)n, "-%c%s", o->short_name,
			      o->long_name ? ", " : "");
	else
		n += snprintf(left + n, sizeof(left) - (size_t)n, "    ");
	if (o->long_name)
		n += snprintf(left + n, sizeof(left) - (size_t)n, "--%s", o->long_name);
	if (o->argh && n < (int)sizeof(left))
		snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->argh);
	fprintf(f, "%-30s %s\n", left, o->help ? o->help : "");
}

void usage_with_options(FILE *f, const char *const *usage, const struct option *opts)
{
	for (size_t i = 0; usage && usage[i]; i++)
		fprintf(f, "%s%s\n", i ? "   or: " : "usage: ", usage[i]);
	fputc('\n', f);
	for (const struct option *o = opts; o && o->type != OPTION_END; o++)
		print_option(f, o);
	for (const struct option *o = common_opts; o->type != OPTION_END; o++)
		print_option(f, o);
	fprintf(f, "    -h, --help                 show this help\n");
}

static const struct option *find_long_in(const struct option *opts, const char *name, size_t len)
{
	for (const struct option *o = opts; o->type != OPTION_END; o++) {
		if (o->long_name && strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	}
	return NULL;
}

static const struct option *find_short_in(const struct option *opts, int c)
{
	for (const struct option *o = opts; o->type != OPTION_END; o++) {
		if (o->short_name == c)
			return o;
	}
	return NULL;
}

/* The option in the command's table, else in common_opts; NULL when in neither. */
static const struct option *find_long(const struct option *opts, const char *name, size_t len)
{
	const struct option *o = find_long_in(opts, name, len);

	return o ? o : find_long_in(common_opts, name, len);
}

static const struct option *find_short(const struct option *opts, int c)
{
	const struct option *o = find_short_in(opts, c);

	return o ? o : find_short_in(common_opts, c);
}

static void opt_name(const struct option *o, char *buf, size_t size)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
}

static int set_value(const struct option *o, const char *arg, const char *const *usage)
{
	char name[64], *end;

	opt_name(o, name, sizeof(name));
	switch (o->type) {
	case OPTION_BOOL: *(bool *)o->value = true; return 0;
	case OPTION_INT: {
		long v;

		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < INT32_MIN || v > INT32_MAX)
			usage_error(usage, "option %s expects an integer, not '%s'", name, arg);
		*(int *)o->value = (int)v;
		return 0;
	}
	case OPTION_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(v))
			usage_error(usage, "option %s expects a number, not '%s'", name, arg);
		*(double *)o->value = v;
		return 0;
	}
	case OPTION_STRING: *(const char **)o->value = arg; return 0;
	case OPTION_LIST: {
		const char ***list = o->value;
		size_t n = 0;

		while (*list && (*list)[n])
			n++;
		*list = xrealloc(*list, st_mult(n + 2, sizeof(**list)));
		(*list)[n] = arg;
		(*list)[n + 1] = NULL;
		return 0;
	}
	case OPTION_CALLBACK:
		if (o->cb(o, arg))
			exit(2);
		return 0;
	default: BUG("unknown option type %d", o->type);
	}
}

static bool takes_arg(const struct option *o)
{
	return o->type != OPTION_BOOL && !(o->type == OPTION_CALLBACK && !o->argh);
}

static int parse_long(const char **argv, int i, int argc, const struct option *opts,
		      const char *const *usage)
{
	const char *name = argv[i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct option *o = find_long(opts, name, len);

	if (len == 4 && !strncmp(name, "help", 4)) {
		usage_with_options(stdout, usage, opts);
		exit(0);
	}
	if (!o)
		unknown_option(usage, opts, argv[i], len + 2);
	if (!takes_arg(o)) {
		if (eq)
			usage_error(usage, "option '--%s' takes no value", o->long_name);
		set_value(o, NULL, usage);
		return i;
	}
	if (eq) {
		set_value(o, eq + 1, usage);
		return i;
	}
	if (i + 1 >= argc)
		usage_error(usage, "option '--%s' requires a value", o->long_name);
	set_value(o, argv[i + 1], usage);
	return i + 1;
}

static int parse_short(const char **argv, int i, int argc, const struct option *opts,
		       const char *const *usage)
{
	for (const char *p = argv[i] + 1; *p; p++) {
		const struct option *o = find_short(opts, *p);

		if (*p == 'h' && !o) {
			usage_with_options(stdout, usage, opts);
			exit(0);
		}
		/* "-name" for "--name": the whole word, for the suggestion. */
		if (!o && p == argv[i] + 1 && p[1])
			unknown_option(usage, opts, argv[i], strcspn(argv[i], "="));
		if (!o)
			usage_error(usage, "unknown option '-%c'", *p);
		if (!takes_arg(o)) {
			set_value(o, NULL, usage);
			continue;
		}
		if (p[1]) {
			set_value(o, p + 1, usage);
			return i;
		}
		if (i + 1 >= argc)
			usage_error(usage, "option '-%c' requires a value", *p);
		set_value(o, argv[i + 1], usage);
		return i + 1;
	}
	return i;
}

/*
 * The debug levels from -v, --debug and PLATEAU_DEBUG (util/log.h): with a
 * list, only the modules named, at their level or -v's (at least 1);
 * without, -v turns on every module.
 */
static void apply_debug(const char *const *usage)
{
	const char *list = debug_list, *from = "--debug";
	char bad[64];

	if (!list && getenv("PLATEAU_DEBUG") && *getenv("PLATEAU_DEBUG")) {
		list = getenv("PLATEAU_DEBUG");
		from = "PLATEAU_DEBUG";
	}
	if (!list && !log_verbose)
		return;
	if (debug_select(list, MAX(log_verbose, 1), bad, sizeof(bad)))
		usage_error(usage,
			    "unknown debug module '%s' in %s (modules: all, %s; MOD:LEVEL sets a "
			    "level)",
			    bad, from, debug_module_list());
}

static int parse(int argc, const char **argv, const struct option *opts, const char *const *usage,
		 bool posix)
{
	int out = 0, i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (posix)
				break;
			argv[out++] = a; /* "-" alone is stdin, an argument */
			continue;
		}
		/* A negative number is an argument, not an option. */
		if (a[1] >= '0' && a[1] <= '9' && !find_short(opts, a[1])) {
			argv[out++] = a;
			continue;
		}
		if (a[1] == '-')
			i = parse_long(argv, i, argc, opts, usage);
		else
			i = parse_short(argv, i, argc, opts, usage);
	}
	for (; i < argc; i++)
		argv[out++] = argv[i];
	argv[out] = NULL;
	apply_debug(usage);
	return out;
}

int parse_options(int argc, const char **argv, const struct option *opts, const char *const *usage)
{
	return parse(argc, argv, opts, usage, false);
}

int parse_options_posix(int argc, const char **argv, const struct option *opts,
			const char *const *usage)
{
	return parse(argc, argv, opts, usage, true);
}
