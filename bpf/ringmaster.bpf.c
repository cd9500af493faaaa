// SPDX-License-Identifier: GPL-2.0
/*
 * Ringmaster XDP data plane: match a service, hash the flow with the keyed
 * flow hash, find its owner on the service's consistent-hash ring and send
 * the frame there by L2 DSR.
 *
 * Per packet: parse (parse.h) -> service (service.h) -> config ->
 * connection table (conntrack.h) -> on no valid entry: hash (rm_hash.h;
 * a keyed service's key: key.h; a QUIC service's DCID, whose server ID
 * may name the node itself: quic.h), ring owner (ring.h), node state,
 * second chance (hops.h), remember -> forward (forward.h).
 * Every outcome bumps exactly one rm_counters slot (forwarded ICMP errors
 * also bump RM_CNT_ICMP_FORWARDED; table events bump the conn-* ones).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* This unit holds the data plane's BPF global functions (parse.h, ring.h,
 * conntrack.h, key.h, encap.h refuse any other includer). */
#define RM_BPF_DIRECTOR_UNIT

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_hash.h>
#include <ringmaster/rm_chain.h>

#include "maps.h"
#include "counters.h"
#include "parse.h"
#include "service.h"
#include "ring.h"
#include "conntrack.h"
#include "key.h"
#include "hops.h"
#include "quic.h"
#include "forward.h"

/* Not ours: to the stack, or in a chain to the programs after us (the
 * loader sets rm_chain_slot; unchained, the verifier drops the chain code). */
static __always_inline int rm_pass(struct xdp_md *ctx, __u32 counter)
{
	rm_count(counter);
	return rm_chain_pass(ctx);
}

static __always_inline void rm_flow_3tuple(struct rm_flow *f)
{
	f->sport = 0;
	f->dport = 0;
}

SEC("xdp")
int rm_xdp(struct xdp_md *ctx)
{
	struct rm_pkt pkt = {};
	struct rm_config *cfg;
	struct rm_node *node;
	struct rm_hops *hops;
	struct rm_svc svc;
	__u32 zero = 0, node_id = 0, svc_id, three, keyed, h, new_flow = 0;
	__u32 quic, direct = 0;
	int q;
	int conn = RM_CONN_NONE;

	switch (rm_parse(ctx, &pkt)) {
	case RM_PARSE_OK:
		break;
	case RM_PARSE_MALFORMED:
		return rm_verdict(XDP_DROP, RM_CNT_DROP_MALFORMED);
	case RM_PARSE_EXT_LIMIT:
		return rm_pass(ctx, RM_CNT_PASS_EXT_LIMIT);
	default:
		return rm_pass(ctx, RM_CNT_PASS_NOT_SERVICE);
	}

	if (!rm_match_service(&pkt, &svc))
		return rm_pass(ctx, RM_CNT_PASS_NOT_SERVICE);
	svc_id = svc.id;
	three = svc.flags & RM_SVC_F_3TUPLE;
	keyed = svc.flags & RM_SVC_F_KEYED;
	quic = svc.flags & RM_SVC_F_QUIC;
	if (three) {
		rm_flow_3tuple(&pkt.flow);
	} else if (pkt.frag != RM_FRAG_NONE) {
		/* later fragments carry no ports, so no 5-tuple hash can
		 * follow the flow: keep all its fragments off the ring. A
		 * later fragment gets here through its (VIP, proto)'s
		 * fragment key held by a 5-tuple service, and so does an
		 * ICMP error quoting one (no node can be told from it). */
		return rm_verdict(XDP_DROP, RM_CNT_DROP_FRAGMENT);
	}

	/* unseeded means unconfigured: a public default key would let
	 * anyone aim flows at one node */
	cfg = bpf_map_lookup_elem(&rm_config, &zero);
	if (!cfg || !(cfg->flags & RM_CFG_SEEDED))
		return rm_verdict(XDP_DROP, RM_CNT_DROP_NO_NODE);
	hops = bpf_map_lookup_elem(&rm_hops_scratch, &zero);
	if (!hops) /* cannot fail: one slot per CPU */
		return rm_verdict(XDP_DROP, RM_CNT_DROP_NO_NODE);
	hops->count = 0; /* the last packet's list is not this one's */

	/* a SYN of a 5-tuple service is a new connection: the ring decides,
	 * and an old entry of the same tuple goes (conntrack.h). A hit needs neither
	 * the hash nor the ring search, so established flows cost less than
	 * new ones. */
	if (keyed)
		; /* each request follows its key (key.h): no table */
	else if (!pkt.syn || three)
		conn = rm_conn_lookup(&pkt.flow, cfg->udp_timeout_s, !pkt.icmp,
				      &node_id);
	else if (RM_CONN_FORGET_FIRST)
		rm_conn_forget(&pkt.flow);
	if (conn != RM_CONN_HIT) {
		if (keyed && quic && !pkt.icmp &&
		    pkt.frag == RM_FRAG_NONE) {
			/* QUIC (quic.h): a known server ID in the DCID
			 * names the node itself, like a table hit */
			q = rm_quic_route(ctx,
					  ((__u32)pkt.l4_off << 16) | pkt.l4_len,
					  svc_id, &cfg->seed, &h);
			if (q == RM_QUIC_TO_NODE)
				direct = 1;
			else if (q == RM_QUIC_TO_FLOW)
				h = rm_flow_hash(&cfg->seed, &pkt.flow);
		} else {
			h = keyed ? rm_key_route(ctx, &pkt, svc_id, &cfg->seed)
				  : rm_flow_hash(&cfg->seed, &pkt.flow);
		}
		if (direct)
			node_id = h;
		else if (rm_ring_owner(svc_id, h, &node_id))
			node_id = RM_MAX_NODES; /* no slot: dropped below */
	}
	/* a SYN forgets after the ring search: the search's reads and the
	 * index's then overlap (conntrack.h) */
	if (!RM_CONN_FORGET_FIRST && !keyed && pkt.syn && !three)
		rm_conn_forget(&pkt.flow);
	node = bpf_map_lookup_elem(&rm_nodes, &node_id);
	if (!node)
		return rm_verdict(XDP_DROP, RM_CNT_DROP_NO_NODE);
	if (conn == RM_CONN_HIT || direct) {
		/* checked by the lookup; again here, as the state may have
		 * changed since, and a DOWN node must not get it */
		if (node->state != RM_NODE_ACTIVE &&
		    node->state != RM_NODE_DRAINING)
			return rm_verdict(XDP_DROP, RM_CNT_DROP_NO_NODE);
	} else {
		/* a node leaves the ring before its slot changes state;
		 * one seen here in any other state is mid-update, and
		 * dropping is safer than sending to a node that may be
		 * gone */
		if (node->state != RM_NODE_ACTIVE)
			return rm_verdict(XDP_DROP, RM_CNT_DROP_NO_NODE);
		/* second chance: a TCP packet that is no SYN, of a flow the
		 * table does not hold, may belong to a connection an older
		 * ring's owner holds; while it does, each packet names them
		 * and nothing is written, or the table would pin the flow
		 * to the new owner without the list */
		if (!keyed && cfg->handover_window_s && !pkt.syn &&
		    !pkt.icmp && pkt.flow.proto == IPPROTO_TCP &&
		    pkt.frag == RM_FRAG_NONE && node->via == RM_VIA_GUE)
			rm_hops_find(svc_id, h, node_id,
				     cfg->handover_window_s, hops);
		/* SYNs and ICMP errors never write (conntrack.h) */
		if (conn != RM_CONN_NONE && !pkt.syn && !pkt.icmp &&
		    hops->count < 2) {
			rm_conn_remember(&pkt.flow, node_id, node->gen,
					 cfg->conn_insert_rate);
			new_flow = 1;
		}
	}

	hops->node[0] = node_id; /* the slot rm_encap() sends to */
	return rm_forward(ctx, node, svc_id, node_id, &pkt, cfg, new_flow,
			  hops);
}

char LICENSE[] SEC("license") = "GPL";
