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
/* Does the route the kernel matches for addr have several next hops
 * (ECMP)? 1, 0, or -errno. A route through a nexthop object whose paths
 * the kernel does not list (nexthop_compat_mode 0) counts as several. */
int rm_route_multipath(__u8 family, const __be32 addr[4]);
/* A socket that receives the kernel's link, neighbour, route and nexthop
 * events (non-blocking): fd or -errno. rm_events_drain reads whatever is
 * queued: 1 if anything was (or the queue overflowed), 0 if nothing. */
int rm_events_open(void);
int rm_events_drain(int fd);

#endif
