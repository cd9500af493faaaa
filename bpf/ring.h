/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Owner lookup: the service's inner ring array, searched with the same
 * rm_search.h code userspace uses, so both sides agree on every owner.
 */
#ifndef RM_BPF_RING_H
#define RM_BPF_RING_H

/* BPF global functions are defined here, so one object only may include
 * this header: a second would carry its own copies, which the verifier
 * checks again and a BPF link could not merge. */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/ring.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include "maps.h"

/* Index by value so the search can pass expressions. */
static __always_inline const struct rm_slot *rm_ring_slot(void *ring, __u32 idx)
{
	return bpf_map_lookup_elem(ring, &idx);
}

#define RM_RING_T void *
#define RM_RING_SLOT(ring, idx) rm_ring_slot(ring, idx)
#include <ringmaster/rm_search.h>

/* Node id owning hash h in service svc_id's ring; 0 on success. A missing
 * ring, an empty one and a corrupt one all mean: no node to send to.
 * A global function, so the verifier walks the search once (parse.h). */
__noinline int rm_ring_owner(__u32 svc_id, __u32 h, __u32 *node)
{
	void *ring;

	if (!node)
		return -1;
	ring = bpf_map_lookup_elem(&rm_rings, &svc_id);
	if (!ring)
		return -1;
	return rm_ring_search(ring, h, node) == RM_SEARCH_OK ? 0 : -1;
}

#endif /* RM_BPF_RING_H */
