/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU counters: one slot per outcome, plus traffic per service and per
 * node. Per-CPU maps need no atomics; userspace sums the CPUs.
 */
#ifndef RM_BPF_COUNTERS_H
#define RM_BPF_COUNTERS_H

#include "maps.h"

static __always_inline void rm_count(__u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&rm_counters, &id);

	if (v)
		*v += 1;
}

static __always_inline void rm_traffic_add(void *map, __u32 id, __u64 bytes,
					   __u32 new_flow)
{
	struct rm_traffic *t = bpf_map_lookup_elem(map, &id);

	if (t) {
		t->packets += 1;
		t->bytes += bytes;
		t->new_flows += new_flow;
	}
}

/* Count an outcome and return its action, for one-line exits. */
static __always_inline int rm_verdict(int action, __u32 counter)
{
	rm_count(counter);
	return action;
}

#endif /* RM_BPF_COUNTERS_H */
