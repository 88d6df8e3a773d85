/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_UTF8_H
#define PLATEAU_UTF8_H

#include <stddef.h>

/*
 * The length (1..4) of the well-formed UTF-8 sequence at s[0..n), or 0
 * when it is not one: overlong forms, surrogates and code points past
 * U+10FFFF are refused.  Writers of JSON, XML and HTML use it to replace
 * invalid bytes so any input yields a valid document.
 */
size_t utf8_len(const unsigned char *s, size_t n);

/*
 * Like utf8_len(), but 0 also for what XML 1.0 cannot carry: control
 * characters other than tab, newline and return, U+FFFE and U+FFFF.
 */
size_t utf8_xml_len(const unsigned char *s, size_t n);

#endif
