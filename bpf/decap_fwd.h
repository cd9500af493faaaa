/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Second chance, the forward: a packet this node holds no connection for
 * goes on to the next hop of its list without the kernel stack. The
 * frame is rewritten in place, its size unchanged:
 *   Ethernet  the route's MACs (bpf_fib_lookup)
 *   outer IP  source: this node's address the packet came to (hop
 *             next - 1), destination: hop next; TTL / hop limit - 1;
 *             IPv4 header checksum recomputed
 *   UDP       ports kept; a zero checksum stays zero (the director sends
 *             zero over both families, rm_encap.h), a non-zero one is
 *             updated for the new addresses and hop index
 *   hop list  next + 1
 * Out of the ingress interface by XDP_TX, else bpf_redirect. A packet
 * the FIB cannot send (no route, neighbour not resolved, forwarding off
 * on the interface, the route's MTU) is delivered here instead, counted:
 * the kernel answers it as it would without second chance.
 */
#ifndef RM_BPF_DECAP_FWD_H
#define RM_BPF_DECAP_FWD_H

#include "decap_hops.h"

#define RM_AF_INET 2 /* <sys/socket.h> values, which BPF cannot include */
#define RM_AF_INET6 10

static __always_inline __u16 rm_dcsum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* The UDP checksum after the pseudo header's addresses and the hop
 * list's word moved from old to new (RFC 1624). */
static __always_inline __u16 rm_udp_csum_update(__u16 check,
						const __be32 old[9],
						const __be32 new[9])
{
	__s64 s = bpf_csum_diff((__be32 *)old, 9 * 4, (__be32 *)new, 9 * 4,
				~check & 0xffff);
	__u16 c;

	if (s < 0)
		return check;
	c = rm_dcsum_fold((__u64)s);
	return c ? c : 0xffff; /* zero means "no checksum" in UDP */
}

/* Send the packet to h->nexthop. RM_DGO with *cnt set: deliver it here;
 * else the verdict (XDP_TX, XDP_REDIRECT or a counted drop). */
static __always_inline int rm_sc_forward(struct xdp_md *ctx,
					 const struct rm_outer *o,
					 const struct rm_dhops *h, __u32 *cnt)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};
	__be32 old[9] = {}, new[9] = {};
	struct rm_gue_hops *l;
	struct udphdr *uh;
	__u32 in_if = ctx->ingress_ifindex;
	int v6 = o->dst.family == RM_FAMILY_V6, rc;

	rc = rm_hop_check(h);
	if (rc != RM_DGO)
		return rc;
	fib.ifindex = in_if;
	fib.l4_protocol = IPPROTO_UDP;
	if (v6) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		uh = (void *)(ip6h + 1);
		if ((void *)(uh + 1) > end)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		if (ip6h->hop_limit <= 1)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOP_TTL);
		fib.family = RM_AF_INET6;
		fib.tot_len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, o->dst.addr, 16);
		__builtin_memcpy(fib.ipv6_dst, h->nexthop.addr, 16);
	} else {
		struct iphdr *iph = (void *)(eth + 1);

		uh = (void *)(iph + 1);
		if ((void *)(uh + 1) > end)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		if (iph->ttl <= 1)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOP_TTL);
		fib.family = RM_AF_INET;
		fib.tos = iph->tos;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = o->dst.addr[0];
		fib.ipv4_dst = h->nexthop.addr[0];
	}
	fib.sport = uh->source;
	fib.dport = uh->dest;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
		if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
			*cnt = RM_DCNT_SC_NO_NEIGH;
		else if (rc == BPF_FIB_LKUP_RET_FWD_DISABLED)
			*cnt = RM_DCNT_SC_FWD_DISABLED;
		else
			*cnt = RM_DCNT_SC_NO_ROUTE;
		return RM_DGO;
	}

	/* the frame again: the verifier forgets packet bounds across a
	 * helper call */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	l = data + h->off;
	if ((void *)(eth + 1) > end || (void *)(l + 1) > end)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	__builtin_memcpy(old, o->src.addr, 16);
	__builtin_memcpy(old + 4, o->dst.addr, 16);
	__builtin_memcpy(old + 8, l, 4);
	l->next = h->next + 1;
	__builtin_memcpy(new, o->dst.addr, 16);
	__builtin_memcpy(new + 4, h->nexthop.addr, 16);
	__builtin_memcpy(new + 8, l, 4);
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	if (v6) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		uh = (void *)(ip6h + 1);
		if ((void *)(uh + 1) > end)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		ip6h->hop_limit -= 1;
		__builtin_memcpy(&ip6h->saddr, o->dst.addr, 16);
		__builtin_memcpy(&ip6h->daddr, h->nexthop.addr, 16);
	} else {
		struct iphdr *iph = (void *)(eth + 1);

		uh = (void *)(iph + 1);
		if ((void *)(uh + 1) > end)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		iph->ttl -= 1;
		iph->saddr = o->dst.addr[0];
		iph->daddr = h->nexthop.addr[0];
		iph->check = 0;
		iph->check = ~rm_ip4_sum(iph) & 0xffff;
	}
	if (uh->check)
		uh->check = rm_udp_csum_update(uh->check, old, new);
	if (fib.ifindex == in_if)
		return rm_dverdict(XDP_TX, RM_DCNT_SC_FORWARD);
	return rm_dverdict(bpf_redirect(fib.ifindex, 0), RM_DCNT_SC_FORWARD);
}

#endif /* RM_BPF_DECAP_FWD_H */
