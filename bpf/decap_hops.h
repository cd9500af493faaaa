/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GUE variant 0 with the second-chance hop list (rm_encap.h): parsed and
 * checked whole before anything is decided from it. Anything of variant 0
 * that is not exactly our hop list (control bit, other private data,
 * optional fields, lengths that disagree, a list that does not name this
 * node where it says) is dropped and counted: a GUE packet for us with a
 * bad hop list is never forwarded and never passed up.
 */
#ifndef RM_BPF_DECAP_HOPS_H
#define RM_BPF_DECAP_HOPS_H

#include "decap_outer.h"

/* The GUE header's 5-bit hlen holds the private data of the longest list
 * over IPv6: 1 + 4 * count words. */
_Static_assert(1 + 4 * RM_GUE_HOPS_MAX <= RM_GUE_HLEN_MASK,
	       "RM_GUE_HOPS_MAX hops over IPv6 overflow the GUE hlen field");

struct rm_dhops {
	struct rm_decap_addr hop[RM_GUE_HOPS_MAX];
	struct rm_decap_addr nexthop; /* hop[next] when next < count */
	__u32 off;		      /* frame offset of the hop list header */
	__u8 next, count;
	__u8 present; /* variant 0: the packet carries a hop list */
};

/* 1: the byte after the UDP header starts a GUE header (variant 0: top
 * two bits 00; variant 1 starts with the inner IP version, 01). */
static __always_inline int rm_gue_v0(struct xdp_md *ctx,
				     const struct rm_outer *o)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *b = data + ETH_HLEN + o->hlen;

	if (!o->gue || (void *)(b + 1) > end)
		return 0;
	return RM_GUE_VER(b[0]) == 0;
}

/* Read and check the GUE header and hop list after the UDP header; on
 * success o->hlen and o->plen step over them. RM_DGO, or the verdict. */
static __always_inline int rm_hops_parse(struct xdp_md *ctx, struct rm_outer *o,
					 struct rm_dhops *h)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct rm_gue_hdr *g = data + ETH_HLEN + o->hlen;
	struct rm_gue_hops *l = (void *)(g + 1);
	__u32 v6 = o->dst.family == RM_FAMILY_V6, words, len, i;
	__u8 *a = (void *)(l + 1);

	h->present = 1;
	if ((void *)(l + 1) > end || o->plen < sizeof(*g) + sizeof(*l))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
	if (RM_GUE_C(g->vch) || g->flags ||
	    l->type != bpf_htons(RM_GUE_PRIV_HOPS))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
	if (g->proto == RM_PROTO_IPIP)
		o->inner = 4;
	else if (g->proto == RM_PROTO_IPV6)
		o->inner = 6;
	else
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
	h->count = l->count;
	h->next = l->next;
	if (h->count < 1 || h->count > RM_GUE_HOPS_MAX || h->next < 1 ||
	    h->next > h->count)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
	words = v6 ? 4 : 1;
	if (RM_GUE_HLEN(g->vch) != 1 + h->count * words)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
	len = rm_gue_hops_len(h->count, o->dst.family);
	if (len > o->plen)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);

#pragma unroll
	for (i = 0; i < RM_GUE_HOPS_MAX; i++) {
		if (i >= h->count)
			break;
		h->hop[i].family = o->dst.family;
		if (v6) {
			if ((void *)(a + 16 * (i + 1)) > end)
				return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
			__builtin_memcpy(h->hop[i].addr, a + 16 * i, 16);
		} else {
			if ((void *)(a + 4 * (i + 1)) > end)
				return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
			__builtin_memcpy(h->hop[i].addr, a + 4 * i, 4);
		}
		/* this node is hop next - 1: where the packet was sent */
		if (i + 1 == h->next && !rm_daddr_eq(&h->hop[i], &o->dst))
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOPS);
		if (i == h->next)
			h->nexthop = h->hop[i];
	}
	h->off = ETH_HLEN + o->hlen + sizeof(*g);
	o->hlen += len;
	o->plen -= len;
	return RM_DGO;
}

/* RM_DGO when the next hop may be sent to: not this host, not a hop the
 * packet already went through, inside --allow-hop. Else the drop. */
static __always_inline int rm_hop_check(const struct rm_dhops *h)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < RM_GUE_HOPS_MAX; i++)
		if (i < h->next && rm_daddr_eq(&h->hop[i], &h->nexthop))
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOP_LOOP);
	if (bpf_map_lookup_elem(&rm_decap_local, &h->nexthop))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOP_LOOP);
	if (!rm_dprefix_has(&rm_decap_hops, &h->nexthop))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_HOP_DENIED);
	return RM_DGO;
}

#endif /* RM_BPF_DECAP_HOPS_H */
