/* SPDX-License-Identifier: GPL-2.0 */
/* Routes and neighbours of encapsulated nodes' next hops (rtnetlink). */
#ifndef RM_NETLINK_H
#define RM_NETLINK_H

#include <ringmaster/rm_common.h>

struct rm_nexthop {
	__u32 ifindex;	/* egress interface */
	__u8 family;	/* RM_FAMILY_V4/V6 */
	__be32 addr[4]; /* gateway, or the node itself when on-link */
};

/* The kernel's route to addr: 0 and *nh, or -errno (-ENETUNREACH and
 * the like when there is none). */
int rm_route_get(__u8 family, const __be32 addr[4], struct rm_nexthop *nh);
/* Have the kernel resolve (or confirm) nh's neighbour entry now. */
int rm_neigh_use(const struct rm_nexthop *nh);

#endif
