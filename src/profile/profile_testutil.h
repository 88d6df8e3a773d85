/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PROFILE_TESTUTIL_H
#define PLATEAU_PROFILE_TESTUTIL_H

#include <string.h>

#include "profile/profile.h"

/*
 * For unit tests: the node of a "a;b;c" stack (root first) of frames
 * known by name only, created when missing.
 */
static inline uint32_t testutil_stack(struct profile *p, const char *stack)
{
	uint32_t node = 0;
	const char *s = stack;

	while (*s) {
		const char *e = strchr(s, ';');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		node = profile_child(p, node, profile_frame_named(p, s, len));
		s += len + (e ? 1 : 0);
	}
	return node;
}

#endif
