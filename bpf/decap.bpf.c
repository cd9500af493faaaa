// SPDX-License-Identifier: GPL-2.0
/*
 * The node side of routed forwarding: an XDP program that takes off the
 * outer header the director put on (IPIP, IP6IP6, 4in6, 6in4, or GUE
 * variant 1 in UDP) and passes the inner packet up the stack, where the
 * VIP on the node's loopback answers it straight to the client (DSR).
 *
 * Only packets addressed to this host (rm_decap_local) from an allowed
 * director prefix (rm_decap_allow) are taken; anything else passes
 * untouched, counted. A packet that is a tunnel packet for us by its
 * outer header but whose inner packet does not fit or is of the wrong
 * version is dropped, counted. Not handled, passed untouched: outer IPv4
 * with options or fragmented, outer IPv6 with extension headers, VLAN
 * tags, GUE with a GUE header (variant 0). The GUE UDP checksum is not
 * verified (the director sends zero; the inner packet has its own).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include <ringmaster/rm_encap.h>

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, RM_DECAP_MAX_PREFIXES);
	__type(key, struct rm_decap_prefix);
	__type(value, __u8);
} rm_decap_allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_DECAP_MAX_LOCAL);
	__type(key, struct rm_decap_addr);
	__type(value, __u8);
} rm_decap_local SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_decap_config);
} rm_decap_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_DCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rm_decap_counters SEC(".maps");

static __always_inline int rm_dverdict(int action, __u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&rm_decap_counters, &id);

	if (v)
		*v += 1;
	return action;
}

/* What the outer header says. */
struct rm_outer {
	struct rm_decap_addr src, dst;
	__u32 hlen; /* outer IP header (+ UDP) bytes to strip */
	__u32 plen; /* bytes after the outer IP header, by its length */
	__u8 proto; /* outer protocol */
	__u8 inner; /* 4 or 6: inner version the outer header implies */
	__u8 bad;   /* outer IPv4 header checksum wrong */
};

/* 1: every 16-bit word of the 20-byte header sums to 0xffff. */
static __always_inline int rm_ip4_csum_ok(const struct iphdr *h)
{
	const __u32 *w = (const __u32 *)h;
	__u64 s = (__u64)w[0] + w[1] + w[2] + w[3] + w[4];

	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

SEC("xdp")
int rm_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	const struct rm_decap_config *cfg;
	struct rm_decap_prefix allow = {};
	struct rm_outer o = {};
	__u8 mac[2 * ETH_ALEN], *inner;
	__u32 zero = 0, ilen;

	if ((void *)(eth + 1) > end)
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);
		__u32 tot;

		if ((void *)(iph + 1) > end || iph->version != 4 ||
		    iph->ihl != 5 ||
		    iph->frag_off & bpf_htons(0x3fff)) /* MF or offset */
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o.proto = iph->protocol;
		tot = bpf_ntohs(iph->tot_len);
		if (tot < sizeof(*iph))
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o.plen = tot - sizeof(*iph);
		o.hlen = sizeof(*iph);
		o.src.family = o.dst.family = RM_FAMILY_V4;
		o.src.addr[0] = iph->saddr;
		o.dst.addr[0] = iph->daddr;
		/* judged once the packet shows it is a tunnel packet for us */
		o.bad = !rm_ip4_csum_ok(iph);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if ((void *)(ip6h + 1) > end || ip6h->version != 6)
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o.proto = ip6h->nexthdr;
		o.plen = bpf_ntohs(ip6h->payload_len);
		o.hlen = sizeof(*ip6h);
		o.src.family = o.dst.family = RM_FAMILY_V6;
		__builtin_memcpy(o.src.addr, &ip6h->saddr, 16);
		__builtin_memcpy(o.dst.addr, &ip6h->daddr, 16);
	} else {
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}

	if (o.proto == RM_PROTO_IPIP) {
		o.inner = 4;
	} else if (o.proto == RM_PROTO_IPV6) {
		o.inner = 6;
	} else if (o.proto == IPPROTO_UDP) {
		struct udphdr *uh = data + ETH_HLEN + o.hlen;

		cfg = bpf_map_lookup_elem(&rm_decap_config, &zero);
		if (!cfg || (void *)(uh + 1) > end || uh->dest != cfg->gue_port)
			return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
		o.hlen += sizeof(*uh);
		if (bpf_ntohs(uh->len) != o.plen || o.plen < sizeof(*uh))
			return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);
		o.plen -= sizeof(*uh);
	} else {
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}

	if (!bpf_map_lookup_elem(&rm_decap_local, &o.dst))
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_LOCAL);
	allow.prefixlen = 32 + 128;
	allow.family = o.src.family;
	__builtin_memcpy(allow.addr, o.src.addr, 16);
	if (!bpf_map_lookup_elem(&rm_decap_allow, &allow))
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_SRC);

	/* a tunnel packet for us: what does not add up now is broken */
	if (o.bad || o.hlen > RM_OUTER6_LEN + RM_GUE_UDP_LEN ||
	    (__u64)ETH_HLEN + o.hlen + o.plen > (__u64)(end - data))
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
		/* GUE variant 0 (a GUE header) or not GUE at all */
		return rm_dverdict(XDP_PASS, RM_DCNT_PASS_NOT_TUNNEL);
	}
	if (ilen > o.plen)
		return rm_dverdict(XDP_DROP, RM_DCNT_DROP_MALFORMED);

	/* the Ethernet header moves up to just before the inner packet */
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
	return rm_dverdict(XDP_PASS,
			   o.proto == IPPROTO_UDP ? RM_DCNT_GUE : RM_DCNT_IPIP);
}

char LICENSE[] SEC("license") = "GPL";
