/* SPDX-License-Identifier: MIT */
#include <strings.h>
#include <cjson/cJSON.h>

#include "util/common.h"
#include "server/ingest_form.h"

/* Whether s has a byte no one-line message or label should carry. */
static bool has_control(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	}
	return false;
}

/* An unchecked key for a message: control bytes as '?', at most 40 bytes. */
static const char *shown(const char *s, char buf[48])
{
	size_t n = 0;

	for (; *s && n < 40; s++)
		buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	memcpy(buf + n, *s ? "..." : "", *s ? 4 : 1);
	return buf;
}

/* Copy a JSON string field into out (size bytes with the NUL). */
static int copy_string(const cJSON *v, char *out, size_t size, const char *type, const char *field,
		       struct error *err)
{
	size_t len;

	if (!cJSON_IsString(v))
		return error_set(err, ERR_FORMAT, "sample_type_config: %s: %s is not a string",
				 type, field);
	len = strlen(v->valuestring);
	if (len >= size)
		return error_set(err, ERR_LIMIT, "sample_type_config: %s: %s over %zu bytes", type,
				 field, size - 1);
	if (has_control(v->valuestring))
		return error_set(err, ERR_FORMAT,
				 "sample_type_config: %s: %s has a control character", type, field);
	memcpy(out, v->valuestring, len + 1);
	return 0;
}

static int copy_bool(const cJSON *v, bool *out, const char *type, const char *field,
		     struct error *err)
{
	if (!cJSON_IsBool(v))
		return error_set(err, ERR_FORMAT, "sample_type_config: %s: %s is not true or false",
				 type, field);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* One field of an entry; names match case-insensitively, as Go's decoder does. */
static int parse_field(const cJSON *v, struct stc_entry *e, struct error *err)
{
	const char *k = v->string;
	int ret;

	if (!strcasecmp(k, "units"))
		return copy_string(v, e->units, sizeof(e->units), e->type, "units", err);
	if (!strcasecmp(k, "display-name"))
		return copy_string(v, e->display_name, sizeof(e->display_name), e->type,
				   "display-name", err);
	if (!strcasecmp(k, "sampled"))
		return copy_bool(v, &e->sampled, e->type, "sampled", err);
	if (!strcasecmp(k, "cumulative"))
		return copy_bool(v, &e->cumulative, e->type, "cumulative", err);
	if (strcasecmp(k, "aggregation"))
		return 0; /* a field of a newer client */
	ret = copy_string(v, e->aggregation, sizeof(e->aggregation), e->type, "aggregation", err);
	if (!ret && e->aggregation[0] && strcmp(e->aggregation, "sum") &&
	    strcmp(e->aggregation, "average"))
		ret = error_set(err, ERR_FORMAT,
				"sample_type_config: %s: aggregation is not sum or average",
				e->type);
	return ret;
}

/* Whether v's key appears in obj before v. */
static bool seen_before(const cJSON *obj, const cJSON *v, bool nocase)
{
	for (const cJSON *w = obj->child; w != v; w = w->next) {
		if (nocase ? !strcasecmp(w->string, v->string) : !strcmp(w->string, v->string))
			return true;
	}
	return false;
}

static int parse_entry(const cJSON *obj, const cJSON *v, struct stc_entry *e, struct error *err)
{
	int ret;

	size_t len = strlen(v->string);

	memset(e, 0, sizeof(*e));
	if (len >= sizeof(e->type))
		return error_set(err, ERR_LIMIT, "sample_type_config: a type name over %zu bytes",
				 sizeof(e->type) - 1);
	memcpy(e->type, v->string, len + 1);
	if (has_control(e->type))
		return error_set(err, ERR_FORMAT,
				 "sample_type_config: a type name has a control character");
	if (!e->type[0])
		return error_set(err, ERR_FORMAT, "sample_type_config: empty sample type name");
	if (seen_before(obj, v, false))
		return error_set(err, ERR_FORMAT, "sample_type_config: %s given twice", e->type);
	if (!cJSON_IsObject(v))
		return error_set(err, ERR_FORMAT, "sample_type_config: %s is not an object",
				 e->type);
	for (const cJSON *f = v->child; f; f = f->next) {
		char buf[48];

		if (seen_before(v, f, true))
			return error_set(err, ERR_FORMAT, "sample_type_config: %s: %s given twice",
					 e->type, shown(f->string, buf));
		ret = parse_field(f, e, err);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_root(const cJSON *root, struct sample_type_config *out, struct error *err)
{
	int ret;

	if (!cJSON_IsObject(root))
		return error_set(err, ERR_FORMAT, "sample_type_config: not a JSON object");
	for (const cJSON *v = root->child; v; v = v->next) {
		if (cJSON_IsNull(v))
			continue; /* Go decodes null as no entry */
		if (out->n == STC_MAX_TYPES)
			return error_set(err, ERR_LIMIT, "sample_type_config: more than %d types",
					 STC_MAX_TYPES);
		ret = parse_entry(root, v, &out->types[out->n], err);
		if (ret)
			return ret;
		out->n++;
	}
	return 0;
}

static bool only_space(const char *s, const char *end)
{
	for (; s < end; s++) {
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	}
	return true;
}

int sample_type_config_parse(const char *json, size_t len, struct sample_type_config *out,
			     struct error *err)
{
	const char *end = NULL;
	cJSON *root;
	int ret;

	memset(out, 0, sizeof(*out));
	if (len > STC_JSON_MAX)
		return error_set(err, ERR_LIMIT, "sample_type_config: over %d bytes", STC_JSON_MAX);
	/* The end pointer, not cJSON_GetErrorPtr(): that one is a global, shared by threads. */
	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!root || !only_space(end, json + len)) {
		size_t at = end ? (size_t)(end - json) : 0;

		cJSON_Delete(root);
		return error_set(err, ERR_FORMAT, "sample_type_config: not JSON (at byte %zu)", at);
	}
	ret = parse_root(root, out, err);
	cJSON_Delete(root);
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

const struct stc_entry *sample_type_config_find(const struct sample_type_config *c,
						const char *type)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->types[i].type, type))
			return &c->types[i];
	}
	return NULL;
}

/* The slot of f for a part named name, or NULL for a part plateau does not read. */
static struct multipart_part *slot_of(struct ingest_form *f, const char *name)
{
	if (!strcmp(name, "profile"))
		return &f->profile;
	if (!strcmp(name, "prev_profile"))
		return &f->prev_profile;
	if (!strcmp(name, "sample_type_config"))
		return &f->sample_type_config;
	return NULL;
}

static int read_parts(struct multipart_reader *r, struct ingest_form *f, struct error *err)
{
	struct multipart_part part;
	int ret;

	while ((ret = multipart_next(r, &part, err)) == 1) {
		struct multipart_part *slot = slot_of(f, part.name);

		if (!slot)
			continue;
		if (slot->data)
			return error_set(err, ERR_FORMAT, "multipart: part %u: second %s part",
					 part.index, part.name);
		*slot = part;
	}
	return ret;
}

int ingest_form_parse(const char *content_type, const void *body, size_t len, struct ingest_form *f,
		      struct error *err)
{
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	struct multipart_reader r;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = multipart_boundary(content_type, boundary, err);
	if (ret)
		return ret;
	multipart_init(&r, boundary, body, len);
	ret = read_parts(&r, f, err);
	if (!ret && f->prev_profile.len)
		ret = error_set(err, ERR_UNSUPPORTED,
				"multipart: prev_profile is not supported: update the client "
				"(Pyroscope refuses it too)");
	/* Pyroscope reads an empty part as none. */
	if (!ret && f->sample_type_config.len) {
		ret = sample_type_config_parse((const char *)f->sample_type_config.data,
					       f->sample_type_config.len, &f->config, err);
		f->has_config = !ret;
	}
	if (ret)
		memset(f, 0, sizeof(*f));
	return ret;
}
