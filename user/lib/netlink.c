// SPDX-License-Identifier: GPL-2.0
/*
 * The two rtnetlink requests routed nodes need: the route to a node's
 * address (egress interface and next hop, as the kernel would send), and
 * "use" of the next hop's neighbour entry (NTF_USE: the kernel resolves
 * it now if it is missing, failed or stale, as if a packet were sent).
 * One request per socket; a reply within a second or -ETIMEDOUT. And
 * the two routed nodes' next-hop records need (ringload neighd): whether
 * a node's route has several next hops, and the kernel's events.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include "netlink.h"

struct nl_req {
	struct nlmsghdr nh;
	union {
		struct rtmsg rt;
		struct ndmsg nd;
	};
	char attrs[64];
};

static void nl_attr(struct nl_req *r, __u16 type, const void *data,
		    __u16 len)
{
	struct rtattr *a =
	    (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Send r, read the answer into buf: 0 with *len, or -errno. */
static int nl_talk(struct nl_req *r, char *buf, size_t cap, ssize_t *len)
{
	struct timeval tv = {.tv_sec = 1};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd, err = 0;

	*len = 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    sendto(fd, r, r->nh.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		err = -errno;
	if (!err) {
		*len = recv(fd, buf, cap, 0);
		if (*len < 0)
			err = errno == EAGAIN ? -ETIMEDOUT : -errno;
	}
	close(fd);
	return err;
}

static int nl_family(__u8 family)
{
	return family == RM_FAMILY_V6 ? AF_INET6 : AF_INET;
}

static size_t nl_addr_len(__u8 family)
{
	return family == RM_FAMILY_V6 ? 16 : 4;
}

/* The kernel's route to addr into buf (RTM_GETROUTE, rtm_flags as
 * given): 0 when buf holds its RTM_NEWROUTE, or -errno. */
static int route_query(__u8 family, const __be32 addr[4], unsigned rtm_flags,
		       char *buf, size_t cap)
{
	struct nl_req r = {};
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	ssize_t len;
	int err;

	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	r.nh.nlmsg_type = RTM_GETROUTE;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.rt.rtm_family = nl_family(family);
	r.rt.rtm_dst_len = nl_addr_len(family) * 8;
	r.rt.rtm_flags = rtm_flags;
	nl_attr(&r, RTA_DST, addr, nl_addr_len(family));
	err = nl_talk(&r, buf, cap, &len);
	if (err)
		return err;
	if (!NLMSG_OK(h, len))
		return -EPROTO;
	if (h->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(h);

		return e->error ? e->error : -EPROTO;
	}
	return h->nlmsg_type == RTM_NEWROUTE ? 0 : -EPROTO;
}

int rm_route_get(__u8 family, const __be32 addr[4], struct rm_nexthop *nh)
{
	char buf[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct rtattr *a;
	int err, alen;

	err = route_query(family, addr, 0, buf, sizeof(buf));
	if (err)
		return err;
	memset(nh, 0, sizeof(*nh));
	/* a directly connected node is its own next hop */
	nh->family = family;
	memcpy(nh->addr, addr, nl_addr_len(family));
	alen = RTM_PAYLOAD(h);
	for (a = RTM_RTA(NLMSG_DATA(h)); RTA_OK(a, alen);
	     a = RTA_NEXT(a, alen)) {
		if (a->rta_type == RTA_OIF &&
		    RTA_PAYLOAD(a) == sizeof(nh->ifindex)) {
			memcpy(&nh->ifindex, RTA_DATA(a), sizeof(nh->ifindex));
		} else if (a->rta_type == RTA_GATEWAY &&
			   RTA_PAYLOAD(a) == nl_addr_len(family)) {
			memset(nh->addr, 0, sizeof(nh->addr));
			memcpy(nh->addr, RTA_DATA(a), RTA_PAYLOAD(a));
		}
	}
	return nh->ifindex ? 0 : -ENETUNREACH;
}

int rm_neigh_use(const struct rm_nexthop *nh)
{
	struct nl_req r = {};
	char buf[1024];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	ssize_t len;
	int err;

	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	r.nh.nlmsg_type = RTM_NEWNEIGH;
	/* create the entry if there is none; ACK to learn the outcome */
	r.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK;
	r.nd.ndm_family = nl_family(nh->family);
	r.nd.ndm_ifindex = nh->ifindex;
	r.nd.ndm_state = NUD_NONE;
	r.nd.ndm_flags = NTF_USE;
	nl_attr(&r, NDA_DST, nh->addr, nl_addr_len(nh->family));
	err = nl_talk(&r, buf, sizeof(buf), &len);
	if (err)
		return err;
	if (!NLMSG_OK(h, len) || h->nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

int rm_route_multipath(__u8 family, const __be32 addr[4])
{
	char buf[8192];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct rtattr *a;
	int err, alen, paths = 0, nh_id = 0, single = 0;

	/* the FIB entry that matched, with all its next hops, rather than
	 * the one path the kernel picked for this request */
	err = route_query(family, addr, RTM_F_FIB_MATCH, buf, sizeof(buf));
	if (err)
		return err;
	alen = RTM_PAYLOAD(h);
	for (a = RTM_RTA(NLMSG_DATA(h)); RTA_OK(a, alen);
	     a = RTA_NEXT(a, alen)) {
		if (a->rta_type == RTA_MULTIPATH) {
			struct rtnexthop *nh = RTA_DATA(a);
			int left = RTA_PAYLOAD(a);

			while (RTNH_OK(nh, left)) {
				paths++;
				left -= NLMSG_ALIGN(nh->rtnh_len);
				nh = RTNH_NEXT(nh);
			}
		} else if (a->rta_type == RTA_NH_ID) {
			nh_id = 1;
		} else if (a->rta_type == RTA_OIF ||
			   a->rta_type == RTA_GATEWAY) {
			single = 1;
		}
	}
	return paths > 1 || (nh_id && !paths && !single);
}

int rm_events_open(void)
{
	struct sockaddr_nl sa = {
	    .nl_family = AF_NETLINK,
	    .nl_groups = RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_ROUTE |
			 RTMGRP_IPV6_ROUTE,
	};
	int fd, grp = RTNLGRP_NEXTHOP;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* nexthop objects: a kernel without them just refuses the group */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			 sizeof(grp));
	return fd;
}

int rm_events_drain(int fd)
{
	char buf[8192];
	int any = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n > 0) {
			any = 1;
			continue;
		}
		/* ENOBUFS: events were lost, so something may have changed */
		if (n < 0 && errno == ENOBUFS) {
			any = 1;
			continue;
		}
		return any;
	}
}
