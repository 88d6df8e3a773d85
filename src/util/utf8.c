/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/utf8.h"

size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char b = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (b < 0x80)
		return 1;
	if (b < 0xc2 || b > 0xf4)
		return 0;
	len = b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	/* The second byte's range rules out overlongs, surrogates and > U+10FFFF. */
	if (b == 0xe0)
		lo = 0xa0;
	else if (b == 0xed)
		hi = 0x9f;
	else if (b == 0xf0)
		lo = 0x90;
	else if (b == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return len;
}

size_t utf8_xml_len(const unsigned char *s, size_t n)
{
	size_t len = utf8_len(s, n);

	if (s[0] < 0x20)
		return (s[0] == '\t' || s[0] == '\n' || s[0] == '\r') ? 1 : 0;
	if (len == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
		return 0;
	return len;
}
