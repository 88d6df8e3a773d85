/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_BANNED_H
#define PLATEAU_BANNED_H

/*
 * Functions that are too easy to misuse.  Including this header after the
 * system headers turns any use into a compile error; use strbuf, snprintf
 * or memcpy with an explicit bound instead.
 */
#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef gets
#define gets(x) BANNED(gets)
#undef atoi
#define atoi(x) BANNED(atoi)

#endif
