/* SPDX-License-Identifier: MIT */
#include "util/common.h"

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
