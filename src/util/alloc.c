/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/error.h"

static void oom(size_t size)
{
	die("out of memory allocating %zu bytes", size);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		oom(size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		oom(st_mult(nmemb, size));
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);

	if (!p)
		oom(size);
	return p;
}

void *xmemdup(const void *src, size_t n)
{
	void *p = xmalloc(st_add(n, 1));

	memcpy(p, src, n);
	((char *)p)[n] = '\0';
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	return xmemdup(s, strnlen(s, n));
}

char *xstrdup(const char *s)
{
	return xmemdup(s, strlen(s));
}

size_t st_add(size_t a, size_t b)
{
	size_t r;

	if (__builtin_add_overflow(a, b, &r))
		die("size overflow: %zu + %zu", a, b);
	return r;
}

size_t st_mult(size_t a, size_t b)
{
	size_t r;

	if (__builtin_mul_overflow(a, b, &r))
		die("size overflow: %zu * %zu", a, b);
	return r;
}

void *alloc_memdup(const void *src, size_t n)
{
	char *p = n == SIZE_MAX ? NULL : malloc(n + 1);

	if (p) {
		memcpy(p, src, n);
		p[n] = '\0';
	}
	return p;
}

char *alloc_strdup(const char *s)
{
	return alloc_memdup(s, strlen(s));
}

int alloc_grow(void *pptr, size_t elem, size_t nr, size_t *alloc)
{
	size_t grow = *alloc < 16 ? 16 : *alloc + *alloc / 2, bytes;
	void *old, *p;

	if (nr <= *alloc)
		return 0;
	if (grow < nr)
		grow = nr;
	if (__builtin_mul_overflow(grow, elem, &bytes))
		return ERR_NOMEM;
	memcpy(&old, pptr, sizeof(old));
	p = realloc(old, bytes ? bytes : 1);
	if (!p)
		return ERR_NOMEM;
	memcpy(pptr, &p, sizeof(p));
	*alloc = grow;
	return 0;
}

void *alloc_array(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		return NULL;
	return realloc(p, bytes ? bytes : 1);
}
