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

/* Slot idx: slot idx % RM_RING_PAGE_SLOTS of element idx /
 * RM_RING_PAGE_SLOTS (rm_common.h). Index by value so the search can pass
 * expressions. */
static __always_inline const struct rm_slot *rm_ring_slot(void *ring, __u32 idx)
{
	__u32 page = idx / RM_RING_PAGE_SLOTS;
	const struct rm_ring_page *p = bpf_map_lookup_elem(ring, &page);

	return p ? &p->slot[idx & (RM_RING_PAGE_SLOTS - 1)] : NULL;
}

/* The same for the entries the search probes, whose index changes from
 * one probe to the next: the slot's place in its element passes through
 * a stack byte the verifier does not track (not at the start of an
 * 8-byte slot). A scalar added to a pointer is made precise, with every
 * value it came from, and the probe loop would never prune (1M
 * instructions). Costs a store and a load, on the 1 lookup in 10 that
 * probes. */
_Static_assert(RM_RING_PAGE_SLOTS <= 256, "a slot's place fits a byte");
static __always_inline const struct rm_slot *rm_ring_probe(void *ring,
							     __u32 idx)
{
	__u32 page = idx / RM_RING_PAGE_SLOTS;
	const struct rm_ring_page *p = bpf_map_lookup_elem(ring, &page);
	__u64 cut;
	volatile __u8 *at = (volatile __u8 *)&cut + 1;

	if (!p)
		return NULL;
	*at = (__u8)(idx & (RM_RING_PAGE_SLOTS - 1));
	return &p->slot[*at & (RM_RING_PAGE_SLOTS - 1)];
}

#define RM_RING_T void *
#define RM_RING_SLOT(ring, idx) rm_ring_slot(ring, idx)
#define RM_RING_SLOT_PROBE(ring, idx) rm_ring_probe(ring, idx)
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
