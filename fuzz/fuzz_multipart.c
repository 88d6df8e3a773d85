/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the multipart form of POST /ingest.  The input's
 * first line is the Content-Type value, the rest the body.  A boundary
 * parses or is refused with a one-line error; parts come in order, lie
 * inside the body, end where the delimiter begins, and number at most
 * MULTIPART_MAX_PARTS; the ingest form agrees with the reader.  The
 * whole input is also given to the sample_type_config parser.
 */
#include "util/common.h"
#include "server/ingest_form.h"
#include "server/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__ubsan_default_options(void);

/* The fuzz build lets UBSan recover; a report must end the run as a crash. */
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static void check_error(const struct error *err)
{
	if (!err->code || strchr(err->msg, '\n'))
		abort();
}

/* Every part against the body; returns the multipart_next() result that ended it. */
static int read_parts(const char *boundary, const unsigned char *body, size_t len)
{
	char delim[4 + MULTIPART_BOUNDARY_MAX + 1];
	size_t dlen = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
	const unsigned char *prev_end = body;
	struct multipart_reader r;
	struct multipart_part part;
	struct error err = ERROR_INIT;
	unsigned n = 0;
	int ret;

	multipart_init(&r, boundary, body, len);
	while ((ret = multipart_next(&r, &part, &err)) == 1) {
		if (part.index != ++n || n > MULTIPART_MAX_PARTS || !part.name[0])
			abort();
		if (part.data < prev_end || part.len > len - (size_t)(part.data - body))
			abort();
		if (memmem(part.data, part.len, delim, dlen))
			abort(); /* a delimiter inside the data */
		prev_end = part.data + part.len;
		if ((size_t)(body + len - prev_end) < dlen || memcmp(prev_end, delim, dlen))
			abort();
		if (strlen(part.content_type) == 0 || (!part.has_filename && part.filename[0]))
			abort();
	}
	if (ret < 0)
		check_error(&err);
	else if (multipart_next(&r, &part, &err) != 0)
		abort();
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t ct_len = nl ? (size_t)(nl - data) : size;
	char *ct = xstrndup((const char *)data, ct_len);
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	struct error err = ERROR_INIT;
	struct sample_type_config config;
	struct ingest_form form;
	const unsigned char *body = nl ? nl + 1 : data + size;
	size_t len = size - (size_t)(body - data);
	int ret;

	if (multipart_boundary(ct, boundary, &err)) {
		check_error(&err);
	} else {
		if (strlen(boundary) == 0 || strlen(boundary) > MULTIPART_BOUNDARY_MAX)
			abort();
		ret = read_parts(boundary, body, len);
		err = (struct error)ERROR_INIT;
		/* The form fails only where the reader does, or on its own rules. */
		if (ingest_form_parse(ct, body, len, &form, &err))
			check_error(&err);
		else if (ret < 0)
			abort();
	}
	err = (struct error)ERROR_INIT;
	if (sample_type_config_parse((const char *)data, size, &config, &err))
		check_error(&err);
	else if (config.n > STC_MAX_TYPES)
		abort();
	free(ct);
	return 0;
}
