/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forwarding to the chosen node.
 */
#ifndef RM_BPF_FORWARD_H
#define RM_BPF_FORWARD_H

#include "counters.h"
#include "encap.h"
#include "maps.h"

/* L2 direct server return: the node owns the VIP on a loopback, so only
 * the MACs change; VLAN tags and the IP packet stay as they are. Every
 * path that returns XDP_DROP leaves the frame untouched.
 *
 * Nodes reached by encapsulation (node->via) go through encap.h, which
 * picks the way out from the routing table and counts its outcome; a
 * GUE node gets the hop list of hops when it names more than one node
 * (second chance, hops.h). */
static __always_inline int rm_forward(struct xdp_md *ctx,
				      const struct rm_node *node, __u32 svc_id,
				      __u32 node_id, const struct rm_pkt *pkt,
				      const struct rm_config *cfg,
				      __u32 new_flow,
				      const struct rm_hops *hops)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u64 bytes = data_end - data;
	__u32 counter;
	int action;

	if ((void *)(eth + 1) > data_end)
		return rm_verdict(XDP_DROP, RM_CNT_DROP_MALFORMED);

	if (node->via != RM_VIA_L2) {
		int rc = -1;

		/* the common case straight through, here rather than in
		 * rm_encap: a BPF call is a frame and the five saved
		 * registers, a good part of the routed path's cost */
		if (node->addr_family == RM_FAMILY_V4 && cfg->encap_src4 &&
		    !rm_gue_hops_n(node, hops))
			rc = rm_encap4_fast(ctx, node, pkt, cfg->encap_src4,
					    node_id);
		if (rc < 0)
			rc = rm_encap(ctx, node, pkt, cfg, hops);
		switch (rc) {
		case RM_ENC_TX:
			action = XDP_TX;
			counter = RM_CNT_FWD_TX;
			goto done;
		case RM_ENC_REDIRECT:
			action = XDP_REDIRECT;
			counter = RM_CNT_FWD_REDIRECT;
			goto done;
		case RM_ENC_ANSWER:
			return XDP_TX;
		default:
			return XDP_DROP;
		}
	}

	if (node->ifindex == ctx->ingress_ifindex) {
		action = XDP_TX;
		counter = RM_CNT_FWD_TX;
	} else {
		/* the low bits of flags are the action when the port is
		 * missing: drop rather than hand a rewritten frame to the
		 * stack */
		action =
		    bpf_redirect_map(&rm_tx_ports, node->ifindex, XDP_DROP);
		if (action != XDP_REDIRECT)
			return rm_verdict(XDP_DROP, RM_CNT_REDIRECT_FAILED);
		counter = RM_CNT_FWD_REDIRECT;
	}

	__builtin_memcpy(eth->h_dest, node->mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, node->src_mac, ETH_ALEN);

done:
	rm_count(counter);
	if (pkt->icmp)
		rm_count(RM_CNT_ICMP_FORWARDED);
	rm_traffic_add(&rm_svc_stats, svc_id, bytes, new_flow);
	rm_traffic_add(&rm_node_stats, node_id, bytes, new_flow);
	return action;
}

#endif /* RM_BPF_FORWARD_H */
