/* SPDX-License-Identifier: GPL-2.0 */
/* What the libFuzzer targets share: an oracle that stops the run with
 * the broken rule (libFuzzer saves the input as crash-*), and the input
 * as a C string. */
#ifndef RM_FUZZ_H
#define RM_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: oracle broken: %s\n",          \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

/* data as a NUL-terminated string (stops at an embedded NUL), malloc'd */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

#endif
