/* SPDX-License-Identifier: GPL-2.0 */
/* Argument parsing shared by the test tools (rm_client, rm_server). */
#ifndef RM_TOOL_ARGS_H
#define RM_TOOL_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include "util.h"

/* The library's strict parser (no sign, no spaces, whole string); a bad
 * value is a usage error: message naming the option, exit 2. */
static inline long tool_parse_long(const char *prog, const char *s, long min,
				   long max, const char *what)
{
	__u32 v;

	if (rm_parse_u32(s, (__u32)min, (__u32)max, &v)) {
		fprintf(stderr, "%s: bad %s: %s (%ld..%ld)\n", prog, what, s,
			min, max);
		exit(2);
	}
	return (long)v;
}

#endif
