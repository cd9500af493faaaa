/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The decapsulator's outer header: is this a tunnel packet for this host
 * from an allowed sender, and where does what follows it start.
 */
#ifndef RM_BPF_DECAP_OUTER_H
#define RM_BPF_DECAP_OUTER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "decap_maps.h"

/* What the outer header says. */
struct rm_outer {
	struct rm_decap_addr src, dst;
	__u32 hlen; /* outer IP header (+ UDP, + GUE header and hop list)
		     * bytes to strip */
	__u32 plen; /* bytes after them, by the outer IP (and UDP) length */
	__u8 proto; /* outer protocol */
	__u8 inner; /* 4 or 6: inner version the outer header implies */
	__u8 bad;   /* outer IPv4 header checksum wrong */
	__u8 gue;   /* GUE: UDP to the configured port */
};

/* Ones' complement sum of the 20-byte IPv4 header, folded. */
static __always_inline __u32 rm_ip4_sum(const struct iphdr *h)
{
	const __u32 *w = (const __u32 *)h;
	__u64 s = (__u64)w[0] + w[1] + w[2] + w[3] + w[4];

	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u32)s;
}

/* Parse the outer header into o: RM_DGO for a tunnel packet for us from
 * an allowed source whose lengths fit the frame, else the verdict. */
static __always_inline int rm_outer_parse(struct xdp_md *ctx,
					  struct rm_outer *o)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	const struct rm_decap_config *cfg;
	__u32 zero = 0;

	if ((void *)(eth + 1) > end)
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);
		__u32 tot;

		if ((void *)(iph + 1) > end || iph->version != 4 ||
		    iph->ihl != 5 ||
		    iph->frag_off & bpf_htons(0x3fff)) /* MF or offset */
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o->proto = iph->protocol;
		tot = bpf_ntohs(iph->tot_len);
		if (tot < sizeof(*iph))
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o->plen = tot - sizeof(*iph);
		o->hlen = sizeof(*iph);
		o->src.family = o->dst.family = RM_FAMILY_V4;
		o->src.addr[0] = iph->saddr;
		o->dst.addr[0] = iph->daddr;
		/* judged once the packet shows it is a tunnel packet for us */
		o->bad = rm_ip4_sum(iph) != 0xffff;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if ((void *)(ip6h + 1) > end || ip6h->version != 6)
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o->proto = ip6h->nexthdr;
		o->plen = bpf_ntohs(ip6h->payload_len);
		o->hlen = sizeof(*ip6h);
		o->src.family = o->dst.family = RM_FAMILY_V6;
		__builtin_memcpy(o->src.addr, &ip6h->saddr, 16);
		__builtin_memcpy(o->dst.addr, &ip6h->daddr, 16);
	} else {
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}

	if (o->proto == RM_PROTO_IPIP) {
		o->inner = 4;
	} else if (o->proto == RM_PROTO_IPV6) {
		o->inner = 6;
	} else if (o->proto == IPPROTO_UDP) {
		struct udphdr *uh = data + ETH_HLEN + o->hlen;

		cfg = bpf_map_lookup_elem(&rm_decap_config, &zero);
		if (!cfg || (void *)(uh + 1) > end || uh->dest != cfg->gue_port)
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o->hlen += sizeof(*uh);
		o->gue = 1;
		if (bpf_ntohs(uh->len) != o->plen || o->plen < sizeof(*uh))
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		o->plen -= sizeof(*uh);
	} else {
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}

	if (!bpf_map_lookup_elem(&rm_decap_local, &o->dst))
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_LOCAL);
	if (!rm_dprefix_has(&rm_decap_allow, &o->src))
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_SRC);

	/* a tunnel packet for us: what does not add up now is broken */
	if (o->bad || o->hlen > RM_OUTER6_LEN + RM_GUE_UDP_LEN ||
	    (__u64)ETH_HLEN + o->hlen + o->plen > (__u64)(end - data))
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
	return RM_DGO;
}

#endif /* RM_BPF_DECAP_OUTER_H */
