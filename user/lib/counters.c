// SPDX-License-Identifier: GPL-2.0
/* The data plane's counters by kind (counters.h). */
#include <string.h>
#include "counters.h"

#define RM_COUNTER_NAME(id, name) [id] = name,
const char *const rm_counter_names[RM_CNT_MAX] = {RM_COUNTERS(RM_COUNTER_NAME)};
#undef RM_COUNTER_NAME

static const struct {
	const char *prefix;
	enum rm_counter_kind kind;
} kinds[] = {
    {"conn-", RM_CNT_KIND_CONN},
    {"key-", RM_CNT_KIND_KEY},
    {"encap-", RM_CNT_KIND_ENCAP},
};

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

enum rm_counter_kind rm_counter_kind(int id)
{
	if (rm_counter_is_outcome(id))
		return RM_CNT_KIND_OUTCOME;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (starts(rm_counter_names[id], kinds[k].prefix))
			return kinds[k].kind;
	return RM_CNT_KIND_EVENT;
}

const char *rm_counter_short_name(int id)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (starts(rm_counter_names[id], kinds[k].prefix))
			return rm_counter_names[id] + strlen(kinds[k].prefix);
	return rm_counter_names[id];
}

bool rm_counter_is_drop(int id)
{
	const char *n = rm_counter_names[id];

	return rm_counter_kind(id) == RM_CNT_KIND_OUTCOME &&
	       (starts(n, "dropped-") || starts(n, "fib-") ||
		id == RM_CNT_REDIRECT_FAILED || id == RM_CNT_TOO_BIG_LIMITED);
}
