/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Second chance: which nodes a flow's packet names in its hop list
 * (rm_encap.h has the wire format). Compiled unchanged into the data
 * plane (bpf/hops.h) and userspace (ringctl lookup, tests), so both name
 * the same hops for every flow: tested.
 *
 * An includer that selects hops defines, before including this file
 * (without them it gets the struct and the rules' helpers only):
 *   RM_HOPS_T                       its handle on the service's state
 *   RM_HOPS_GEN(t, g, h, node, ns)  remembered generation g (0 newest)
 *                                   of the service: 0 with *node the
 *                                   owner of hash h on it and *ns the
 *                                   time it was retired; else no
 *                                   generation g (or no owner on it)
 *   RM_HOPS_NODE(t, id)             const struct rm_node * of slot id,
 *                                   or NULL
 *
 * The rules, for a packet whose current owner cur is a GUE node:
 *   - each remembered generation retired at most window_ns before now
 *     is searched with the same hash as the current ring; window 0 or
 *     an older generation: ignored (the ring maps stay until the next
 *     change, which drops them)
 *   - its owner is a hop when it differs from every hop before it, is
 *     ACTIVE or DRAINING and not out for health (a deleted, DOWN, FREE
 *     or failed node never is), is a
 *     node of the same service, and is a GUE node with an address of
 *     the current owner's family (one outer family per packet)
 *   - hops[0] is cur, then older owners newest first; at most
 *     RM_GUE_HOPS_MAX
 * A flow whose owner did not change gets count 1: nothing to send.
 */
#ifndef RM_HOPS_H
#define RM_HOPS_H

#include "rm_common.h"
#include "rm_encap.h"

/* The hops of one packet: node slots and their outer addresses. */
struct rm_hops {
	__u32 count; /* hops in node[]; 1 = only the current owner */
	__u32 family; /* RM_FAMILY_V4 / V6: of every address */
	__u32 node[RM_GUE_HOPS_MAX];
	__be32 addr[RM_GUE_HOPS_MAX][4]; /* be; IPv4 in addr[i][0] */
};

/* Can node n (slot of service svc) follow cur in a hop list? */
RM_INLINE int rm_hop_usable(const struct rm_node *n, const struct rm_node *cur,
			    __u32 svc)
{
	return n && (n->state == RM_NODE_ACTIVE ||
		     n->state == RM_NODE_DRAINING) &&
	       !n->health.out && n->svc_id == svc && n->via == RM_VIA_GUE &&
	       n->addr_family == cur->addr_family;
}

/* Is a generation retired at retired_ns still searched at now? A
 * negative age is young: the data plane's coarse clock may lag the
 * writer's by a tick. */
RM_INLINE int rm_hop_gen_live(__u64 retired_ns, __u64 now, __u64 window_ns)
{
	return window_ns && retired_ns &&
	       (__s64)(now - retired_ns) <= (__s64)window_ns;
}

#endif /* RM_HOPS_H */

/* The selection itself: only where the includer said how to read its
 * state (the struct and rules above are for anyone). */
#if defined(RM_HOPS_T) && defined(RM_HOPS_GEN) && defined(RM_HOPS_NODE) && \
    !defined(RM_HOPS_SELECT_H)
#define RM_HOPS_SELECT_H
/* Fill out with the hop list of hash h of service svc, whose current
 * owner is slot cur_id (record cur, a GUE node). Returns out->count. */
RM_INLINE __u32 rm_hops_select(RM_HOPS_T t, __u32 svc, __u32 h, __u32 cur_id,
			       const struct rm_node *cur, __u64 now,
			       __u64 window_ns, struct rm_hops *out)
{
	__u32 g, k, n = 1;

	out->count = 1;
	out->family = cur->addr_family;
	out->node[0] = cur_id;
	__builtin_memcpy(out->addr[0], cur->addr, 16);
	if (!window_ns || cur->via != RM_VIA_GUE)
		return 1;
	for (g = 0; g < RM_RING_GENS; g++) {
		const struct rm_node *o;
		__u32 id = 0, dup = 0;
		__u64 retired = 0;

		if (n >= RM_GUE_HOPS_MAX)
			break;
		if (RM_HOPS_GEN(t, g, h, &id, &retired))
			continue;
		if (!rm_hop_gen_live(retired, now, window_ns))
			continue;
		for (k = 0; k < RM_GUE_HOPS_MAX; k++)
			if (k < n && out->node[k] == id)
				dup = 1;
		if (dup)
			continue;
		o = RM_HOPS_NODE(t, id);
		if (!o || !rm_hop_usable(o, cur, svc))
			continue;
		if (n >= RM_GUE_HOPS_MAX) /* checked above; the verifier */
			break;
		out->node[n] = id;
		__builtin_memcpy(out->addr[n], o->addr, 16);
		n++;
	}
	out->count = n;
	return n;
}
#endif /* RM_HOPS_SELECT_H */
