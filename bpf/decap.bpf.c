// SPDX-License-Identifier: GPL-2.0
/*
 * The node side of routed forwarding: an XDP program that takes off the
 * outer header the director put on (IPIP, IP6IP6, 4in6, 6in4, or GUE in
 * UDP) and passes the inner packet up the stack, where the VIP on the
 * node's loopback answers it straight to the client (DSR).
 *
 * Only packets addressed to this host (rm_decap_local) from an allowed
 * sender (rm_decap_allow) are taken; anything else passes untouched,
 * counted. A packet that is a tunnel packet for us by its outer header
 * but whose inner packet does not fit or is of the wrong version is
 * dropped, counted. Not handled, passed untouched: outer IPv4 with
 * options or fragmented, outer IPv6 with extension headers, VLAN tags.
 * The GUE UDP checksum is not verified (the director sends zero; the
 * inner packet has its own).
 *
 * GUE variant 1 (no GUE header) is decapsulated. GUE variant 0 must carry
 * the second-chance hop list (rm_encap.h, decap_hops.h); a TCP packet
 * with hops left that holds no connection here is sent on to the next
 * hop (decap_sock.h, decap_fwd.h); docs/second-chance-node.md.
 */
#include "decap_fwd.h"
#include "decap_sock.h"

/* Second chance for a packet with a hop list whose inner packet starts at
 * l3: RM_DGO with *cnt set to deliver it here, else the verdict. */
static __always_inline int rm_sc_decide(struct xdp_md *ctx,
					const struct rm_outer *o,
					const struct rm_dhops *h, __u32 l3,
					__u32 ilen, __u32 *cnt)
{
	if (h->next >= h->count) {
		*cnt = RM_DCNT_SC_EXHAUSTED;
		return RM_DGO;
	}
	switch (rm_sc_local(ctx, l3, ilen, o->inner)) {
	case RM_SC_SOCKET:
		*cnt = RM_DCNT_SC_LOCAL_SOCKET;
		return RM_DGO;
	case RM_SC_COOKIE:
		*cnt = RM_DCNT_SC_LOCAL_COOKIE;
		return RM_DGO;
	case RM_SC_SYN:
		*cnt = RM_DCNT_SC_LOCAL_SYN;
		return RM_DGO;
	case RM_SC_NOT_TCP:
		*cnt = RM_DCNT_SC_LOCAL_NOT_TCP;
		return RM_DGO;
	case RM_SC_MALFORMED:
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	default:
		return rm_sc_forward(ctx, o, h, cnt);
	}
}

SEC("xdp")
int rm_decap(struct xdp_md *ctx)
{
	void *data, *end;
	struct ethhdr *eth;
	struct rm_outer o = {};
	struct rm_dhops h = {};
	__u8 mac[2 * ETH_ALEN], *inner;
	__u32 ilen, cnt;
	int rc;

	rc = rm_outer_parse(ctx, &o);
	if (rc != RM_DGO)
		return rc;
	if (rm_gue_v0(ctx, &o)) {
		rc = rm_hops_parse(ctx, &o, &h);
		if (rc != RM_DGO)
			return rc;
	}
	cnt = o.gue ? RM_DCNT_GUE : RM_DCNT_IPIP;

	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (o.hlen > RM_OUTER6_LEN + RM_GUE_UDP_LEN +
			 rm_gue_hops_len(RM_GUE_HOPS_MAX, RM_FAMILY_V6))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	inner = data + ETH_HLEN + o.hlen;
	if ((void *)(inner + sizeof(struct iphdr)) > end)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	if (!o.inner)
		o.inner = inner[0] >> 4;
	if (o.inner != inner[0] >> 4)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	if (o.inner == 4) {
		struct iphdr *ih = (void *)inner;

		ilen = bpf_ntohs(ih->tot_len);
		if (ih->ihl < 5 || ilen < (__u32)ih->ihl * 4)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	} else if (o.inner == 6) {
		struct ipv6hdr *ih = (void *)inner;

		if ((void *)(ih + 1) > end)
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		ilen = sizeof(*ih) + bpf_ntohs(ih->payload_len);
	} else {
		/* GUE variant 2 or 3, or not GUE at all */
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}
	if (ilen > o.plen)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);

	if (h.present) {
		rc = rm_sc_decide(ctx, &o, &h, ETH_HLEN + o.hlen, ilen, &cnt);
		if (rc != RM_DGO)
			return rc;
	}

	/* the Ethernet header moves up to just before the inner packet */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	__builtin_memcpy(mac, eth, sizeof(mac));
	if (bpf_xdp_adjust_head(ctx, (int)o.hlen))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	__builtin_memcpy(eth, mac, sizeof(mac));
	eth->h_proto = bpf_htons(o.inner == 4 ? ETH_P_IP : ETH_P_IPV6);
	return rm_dverdict(XDP_PASS, cnt);
}

char LICENSE[] SEC("license") = "GPL";
