/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Second chance in the data plane: the hop list of a TCP packet whose
 * flow's owner changed within the handover window (rules and the code
 * itself: include/ringmaster/rm_hops.h, shared with ringctl lookup).
 * Asked only on the way that already searched the ring (no valid
 * connection-table entry), so an established flow with an entry pays
 * nothing, and a flow whose owner did not change pays one search per
 * remembered generation.
 */
#ifndef RM_BPF_HOPS_H
#define RM_BPF_HOPS_H

/* BPF global functions are defined here, so one object only may include
 * this header (see ring.h). */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/hops.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include "maps.h"
#include "ring.h"

/* Owner of hash h on generation g of service svc and the time that ring
 * was retired: 0, or -1 when there is no such generation or owner. A
 * global function: the verifier walks the search once more, not once
 * per generation and caller path. */
__noinline int rm_ring_gen_owner(__u32 svc, __u32 g, __u32 h, __u32 *node,
				 __u64 *retired)
{
	const struct rm_slot *hdr;
	__u32 key = svc * RM_RING_GENS + g;
	void *ring;

	if (!node || !retired || svc >= RM_MAX_SERVICES || g >= RM_RING_GENS)
		return -1;
	ring = bpf_map_lookup_elem(&rm_rings_old, &key);
	if (!ring)
		return -1;
	hdr = rm_ring_slot(ring, 0);
	if (!hdr)
		return -1;
	*retired = RM_RING_RETIRED_NS(hdr);
	return rm_ring_search(ring, h, node) == RM_SEARCH_OK ? 0 : -1;
}

/* A packet's hop list, per CPU: 68 bytes off the director's stack,
 * whose call chains the verifier limits to 512 (rm_xdp with the QUIC
 * crypto object's rm_quic_route, or with rm_encap, come close). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_hops);
} rm_hops_scratch SEC(".maps");

static __always_inline const struct rm_node *rm_hops_node(__u32 id)
{
	return bpf_map_lookup_elem(&rm_nodes, &id);
}

#define RM_HOPS_T __u32 /* the service id */
#define RM_HOPS_GEN(svc, g, h, node, ns) rm_ring_gen_owner(svc, g, h, node, ns)
#define RM_HOPS_NODE(svc, id) rm_hops_node(id)
#include <ringmaster/rm_hops.h>

/* The hop list of hash h of service svc whose current owner is slot
 * cur_id: out->count > 1 when the packet should carry it. (Five
 * arguments at most: the owner's record is looked up again, an inlined
 * array read.) */
__noinline __u32 rm_hops_find(__u32 svc, __u32 h, __u32 cur_id,
			      __u32 window_s, struct rm_hops *out)
{
	const struct rm_node *cur = rm_hops_node(cur_id);

	if (!cur || !out)
		return 0;
	return rm_hops_select(svc, svc, h, cur_id, cur,
			      bpf_ktime_get_coarse_ns(),
			      (__u64)window_s * 1000000000ULL, out);
}

#endif /* RM_BPF_HOPS_H */
