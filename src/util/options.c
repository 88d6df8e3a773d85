/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "util/common.h"
#include "util/options.h"

static _Noreturn void usage_error(const char *const *usage, const struct option *opts,
				  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void usage_error(const char *const *usage, const struct option *opts, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: error: ", log_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage_with_options(stderr, usage, opts);
	exit(2);
}

void usage_with_options(FILE *f, const char *const *usage, const struct option *opts)
{
	for (size_t i = 0; usage && usage[i]; i++)
		fprintf(f, "%s%s\n", i ? "   or: " : "usage: ", usage[i]);
	if (opts && opts->type != OPTION_END)
		fputc('\n', f);
	for (const struct option *o = opts; o && o->type != OPTION_END; o++) {
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
	fprintf(f, "    -h, --help                 show this help\n");
}

static const struct option *find_long(const struct option *opts, const char *name, size_t len)
{
	for (const struct option *o = opts; o->type != OPTION_END; o++) {
		if (o->long_name && strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	}
	return NULL;
}

static const struct option *find_short(const struct option *opts, int c)
{
	for (const struct option *o = opts; o->type != OPTION_END; o++) {
		if (o->short_name == c)
			return o;
	}
	return NULL;
}

static void opt_name(const struct option *o, char *buf, size_t size)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
}

static int set_value(const struct option *o, const char *arg, const char *const *usage,
		     const struct option *opts)
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
			usage_error(usage, opts, "option %s expects an integer, not '%s'", name,
				    arg);
		*(int *)o->value = (int)v;
		return 0;
	}
	case OPTION_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(v))
			usage_error(usage, opts, "option %s expects a number, not '%s'", name, arg);
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
		usage_error(usage, opts, "unknown option '--%.*s'", (int)len, name);
	if (!takes_arg(o)) {
		if (eq)
			usage_error(usage, opts, "option '--%s' takes no value", o->long_name);
		set_value(o, NULL, usage, opts);
		return i;
	}
	if (eq) {
		set_value(o, eq + 1, usage, opts);
		return i;
	}
	if (i + 1 >= argc)
		usage_error(usage, opts, "option '--%s' requires a value", o->long_name);
	set_value(o, argv[i + 1], usage, opts);
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
		if (!o)
			usage_error(usage, opts, "unknown option '-%c'", *p);
		if (!takes_arg(o)) {
			set_value(o, NULL, usage, opts);
			continue;
		}
		if (p[1]) {
			set_value(o, p + 1, usage, opts);
			return i;
		}
		if (i + 1 >= argc)
			usage_error(usage, opts, "option '-%c' requires a value", *p);
		set_value(o, argv[i + 1], usage, opts);
		return i + 1;
	}
	return i;
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
