/* SPDX-License-Identifier: MIT */
#include <ctype.h>

#include "util/common.h"
#include "format/format.h"
#include "format/perfscript.h"
#include "format/pprof.h"

static const struct {
	enum profile_format fmt;
	const char *name;
	const char *ext;
} formats[] = {
	{FMT_FOLDED, "folded", ".folded"}, {FMT_FOLDED, "folded", ".collapsed"},
	{FMT_FOLDED, "folded", ".txt"},	   {FMT_PERF_SCRIPT, "perf-script", ".perf"},
	{FMT_PPROF, "pprof", ".pb.gz"},	   {FMT_PPROF, "pprof", ".pb"},
	{FMT_PPROF, "pprof", ".pprof"},	   {FMT_SPEEDSCOPE, "speedscope", ".json"},
	{FMT_SVG, "svg", ".svg"},	   {FMT_HTML, "html", ".html"},
};

const char *format_name(enum profile_format f)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if (formats[i].fmt == f)
			return formats[i].name;
	}
	return "unknown";
}

enum profile_format format_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if (!strcmp(formats[i].name, name))
			return formats[i].fmt;
	}
	if (!strcmp(name, "collapsed"))
		return FMT_FOLDED;
	return FMT_UNKNOWN;
}

enum profile_format format_from_filename(const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		size_t el = strlen(formats[i].ext);

		if (len > el && !strcmp(path + len - el, formats[i].ext))
			return formats[i].fmt;
	}
	return FMT_UNKNOWN;
}

/*
 * Whether the first line that is neither a comment nor blank looks like
 * perf script output: a sample header ("comm pid ... event:"), or a frame
 * line (whitespace, a hex address, a symbol, "(dso)").  Without call
 * chains perf right-aligns the comm, so a header may start with spaces.
 * Comment lines (perf script --header prints many) are skipped without
 * limit; the scan stops after 1 MiB.
 */
static bool looks_like_perf_script(const char *data, size_t len)
{
	const char *s = data, *end = data + MIN(len, (size_t)1 << 20);

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);
		const char *p = s, *e = s + l;

		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (p == e || s[0] == '#') {
			s += l + 1;
			continue;
		}
		/*
		 * A differential folded line ("a;b 3 5") also matches the
		 * header pattern: a real header is indented (no call chains)
		 * or followed by a frame line, a blank line or the end.
		 */
		if (perfscript_is_header(p, (size_t)(e - p)))
			return p != s || !nl || nl + 1 >= end || nl[1] == '\t' || nl[1] == ' ' ||
			       nl[1] == '\n';
		return p != s && isxdigit((unsigned char)*p) && memchr(p, '(', (size_t)(e - p));
	}
	return false;
}

/*
 * Binary protobuf or text?  A profile.proto almost always has a NUL byte
 * early (string_table[0] is "", encoded 0x32 0x00) and is dense with
 * control bytes; text formats may hold a few odd bytes in names (a folded
 * line with a control character is still folded), so it takes a fifth of
 * the bytes, or eight and more than 1% of the first 4 KiB, or a leading byte that is a profile.proto field
 * tag and no text character, to call it binary.
 */
static bool looks_binary(const char *data, size_t len)
{
	size_t probe = MIN(len, (size_t)4096), ctl = 0;
	unsigned char first = (unsigned char)data[0];

	if (memchr(data, '\0', probe))
		return true;
	for (size_t i = 0; i < probe; i++) {
		unsigned char c = (unsigned char)data[i];

		if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
			ctl++;
	}
	if (ctl * 5 > probe || (ctl >= 8 && ctl * 100 > probe))
		return true;
	/* Field 1 (sample_type) or 2 (sample), length-delimited: 0x0a, 0x12. */
	return first == 0x12 || (first == 0x0a && len > 1 && (unsigned char)data[1] < 0x20 &&
				 data[1] != '\n' && data[1] != '\r' && data[1] != '\t');
}

/*
 * Whether the first byte of binary data can start a protobuf message such
 * as profile.proto's: a one-byte field key, field 1 to 15, with a wire
 * type that exists (varint, 64-bit, length-delimited, 32-bit).  An ELF
 * file (0x7f: wire type 7) or a PNG (0x89: a key past field 15) does not;
 * a protobuf that is not a profile does, and is reported by the decoder.
 */
static bool protobuf_first_key(unsigned char key)
{
	unsigned wire = key & 7, field = key >> 3;

	return key < 0x80 && field >= 1 && (wire == 0 || wire == 1 || wire == 2 || wire == 5);
}

enum profile_format format_detect(const char *data, size_t len)
{
	if (!len)
		return FMT_UNKNOWN;
	if (looks_binary(data, len))
		return protobuf_first_key((unsigned char)data[0]) ? FMT_PPROF : FMT_UNKNOWN;
	if (data[0] == '{' || data[0] == '[')
		return FMT_SPEEDSCOPE;
	if (looks_like_perf_script(data, len))
		return FMT_PERF_SCRIPT;
	return FMT_FOLDED;
}

static int apply_sample_type(struct profile **pp, const struct read_options *o, const char *name,
			     struct error *err)
{
	struct profile *p = *pp;
	int t;

	if (!o || !o->sample_type)
		return 0;
	t = profile_find_type(p, o->sample_type);
	if (t < 0) {
		char types[256] = "";
		size_t used = 0;

		for (uint32_t i = 0; i < p->nr_types && used < sizeof(types); i++)
			used += (size_t)snprintf(types + used, sizeof(types) - used, "%s%s",
						 i ? ", " : "", profile_str(p, p->types[i].type));
		return error_set(err, ERR_USAGE, "%s: no sample type '%s' (it has: %s)", name,
				 o->sample_type, types);
	}
	p->default_type = (uint32_t)t;
	return 0;
}

int profile_read_input(const struct input *in, const struct read_options *o, struct profile **out,
		       struct error *err)
{
	enum profile_format f = format_detect(in->data, in->len);
	int rc;

	*out = NULL;
	debug(DEBUG_FORMAT, "%s: detected %s", in->name,
	      f == FMT_UNKNOWN ? "no known format" : format_name(f));
	switch (f) {
	case FMT_UNKNOWN:
		if (!in->len)
			return error_set(err, ERR_FORMAT, "%s: empty input", in->name);
		return error_set(err, ERR_FORMAT,
				 "%s: unrecognised format (expected folded, perf script or pprof)",
				 in->name);
	case FMT_FOLDED: rc = folded_read(in, o, out, err); break;
	case FMT_PERF_SCRIPT: rc = perfscript_read(in, o, out, err); break;
	case FMT_PPROF: rc = pprof_read(in, o, out, err); break;
	case FMT_SPEEDSCOPE:
		return error_set(err, ERR_UNSUPPORTED,
				 "%s: JSON input is not supported (speedscope is an output format)",
				 in->name);
	default:
		return error_set(err, ERR_FORMAT,
				 "%s: unrecognised format (expected folded, perf script or pprof)",
				 in->name);
	}
	if (!rc)
		rc = apply_sample_type(out, o, in->name, err);
	if (!rc)
		debug(DEBUG_FORMAT, "%s: read as %s: %u samples, %u frames, %u sample types",
		      in->name, format_name(f), (*out)->nr_samples, (*out)->nr_frames,
		      (*out)->nr_types);
	if (rc) {
		profile_free(*out);
		*out = NULL;
	}
	return rc;
}

int profile_read_file(const char *path, const struct read_options *o, struct profile **out,
		      struct error *err)
{
	struct input in;
	int rc = input_open(&in, path, err);

	if (rc)
		return rc;
	rc = profile_read_input(&in, o, out, err);
	input_close(&in);
	return rc;
}

int profile_read_files(const char **paths, int n, const struct read_options *o,
		       struct profile **out, struct error *err)
{
	static const char *stdin_path[] = {"-"};
	struct profile *acc = NULL;

	if (n == 0) {
		paths = stdin_path;
		n = 1;
	}
	for (int i = 0; i < n; i++) {
		struct profile *p;
		int rc = profile_read_file(paths[i], o, &p, err);

		if (!rc && acc) {
			struct error why = ERROR_INIT;

			rc = profile_merge(acc, p, &why);
			profile_free(p);
			if (rc)
				error_set(err, rc, "%s and %s: %s", paths[0], paths[i], why.msg);
		} else if (!rc) {
			acc = p;
		}
		if (rc) {
			profile_free(acc);
			return rc;
		}
	}
	*out = acc;
	return 0;
}
