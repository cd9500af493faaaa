// SPDX-License-Identifier: GPL-2.0
/*
 * Baseline XDP program: the floor any director pays, kept in the tree so
 * benchmarks compare the director against the same thing every time.
 *
 * Per packet: parse Ethernet, IPv4 (options allowed, length checked) and
 * the TCP or UDP header with every bounds check a real parser needs,
 * rewrite both MACs, and send the frame on. No service match, no hash, no
 * ring: whatever the director spends beyond this is the cost of balancing.
 *
 *   bl_tx        rewrite, XDP_TX (back out of the ingress interface)
 *   bl_redirect  rewrite, bpf_redirect_map to the one port in bl_ports
 *                (DEVMAP_HASH keyed by ifindex, as the director's
 *                rm_tx_ports), for the live forwarding test
 *   bl_ipip      the same parse, then what the director does for a node
 *   bl_gue       reached by encapsulation, to the one node bl_node_addr:
 *                bpf_fib_lookup, trim padding, push the outer IPv4 (and
 *                UDP) header the director writes (bpf/encap.h), MACs from
 *                the FIB, XDP_TX out of the ingress interface or redirect
 *                (bench encap: the like-for-like baseline of those paths)
 *
 * Outcomes: forwarded = XDP_TX / XDP_REDIRECT, not IPv4 TCP/UDP = XDP_PASS,
 * truncated or inconsistent = XDP_DROP. The rewrite writes fixed MACs, so
 * running it again on its own output takes the same path and produces the
 * same frame (bpf_prog_test_run repeats on one buffer). The MACs are set
 * through the skeleton's bss, the egress ifindex through its rodata.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <ringmaster/rm_encap.h>

/* Plain variables rather than one struct: the skeleton then needs no
 * shared type definition. The MACs are ordinary globals (.bss), read from
 * the map value at run time like the director reads its node's: a const
 * array would be folded into the code. */
__u8 bl_dst_mac[ETH_ALEN];	     /* next hop (a node) */
__u8 bl_src_mac[ETH_ALEN];	     /* egress interface */
const volatile __u32 bl_ifindex = 0; /* bl_redirect: bl_ports key */

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} bl_ports SEC(".maps");

__be32 bl_encap_src;  /* outer source (the director's) */
__be32 bl_node_addr; /* outer destination (the node) */
__be16 bl_gue_port;  /* GUE destination port */

/* 1: IPv4 TCP/UDP, 0: something else, -1: malformed. */
static __always_inline int bl_parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph;
	__u32 hlen, tot;
	void *l4;

	if ((void *)(eth + 1) > data_end)
		return -1;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return -1;
	if (iph->version != 4 || iph->ihl < 5)
		return -1;
	hlen = (__u32)iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	if (tot < hlen || (void *)iph + tot > data_end)
		return -1;
	l4 = (void *)iph + hlen;
	if (iph->protocol == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end || th->doff < 5 ||
		    hlen + sizeof(*th) > tot)
			return -1;
	} else if (iph->protocol == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end || hlen + sizeof(*uh) > tot)
			return -1;
	} else {
		return 0;
	}
	return 1;
}

/* 1: forward, 0: pass, -1: drop. */
static __always_inline int bl_parse_rewrite(struct xdp_md *ctx)
{
	int rc = bl_parse(ctx);
	struct ethhdr *eth = (void *)(long)ctx->data;

	if (rc <= 0)
		return rc;
	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(eth->h_dest, bl_dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, bl_src_mac, ETH_ALEN);
	return 1;
}

static __always_inline __u16 bl_csum(const struct iphdr *h)
{
	const __u32 *w = (const __u32 *)h;
	__u64 s = (__u64)w[0] + w[1] + w[2] + w[3] + w[4];

	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* IPv4 in IPv4 (or in UDP with gue) to bl_node_addr. */
static __always_inline int bl_encap(struct xdp_md *ctx, int gue)
{
	__u32 hlen = RM_OUTER4_LEN + (gue ? RM_GUE_UDP_LEN : 0);
	__u32 in_if = ctx->ingress_ifindex, frame, ip_len;
	struct bpf_fib_lookup fib = {};
	void *data, *end;
	struct iphdr *iph, *outer;
	struct ethhdr *eth;
	struct rm_flow f = {};
	__be16 sport = 0;
	__u8 tos;
	int rc = bl_parse(ctx);

	if (rc <= 0)
		return rc < 0 ? XDP_DROP : XDP_PASS;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	iph = data + ETH_HLEN;
	if ((void *)(iph + 1) > end)
		return XDP_DROP;
	ip_len = bpf_ntohs(iph->tot_len);
	tos = iph->tos;
	if (gue) {
		__be16 *ports = (void *)iph + iph->ihl * 4;

		if ((void *)(ports + 2) > end)
			return XDP_DROP;
		f.src[0] = iph->saddr;
		f.sport = ports[0];
		f.dport = ports[1];
		sport = rm_gue_sport(&f);
	}
	fib.family = 2; /* AF_INET */
	fib.ifindex = in_if;
	fib.l4_protocol = gue ? IPPROTO_UDP : RM_PROTO_IPIP;
	fib.sport = sport;
	fib.dport = gue ? bl_gue_port : 0;
	fib.tot_len = ip_len + hlen;
	fib.tos = tos;
	fib.ipv4_src = bl_encap_src;
	fib.ipv4_dst = bl_node_addr;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) !=
	    BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_DROP;
	frame = end - data;
	if (frame > ETH_HLEN + ip_len &&
	    bpf_xdp_adjust_tail(ctx, (int)(ETH_HLEN + ip_len) - (int)frame))
		return XDP_DROP;
	if (bpf_xdp_adjust_head(ctx, -(int)hlen))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	outer = data + ETH_HLEN;
	if ((void *)(outer + 1) > end)
		return XDP_DROP;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	outer->version = 4;
	outer->ihl = 5;
	outer->tos = tos;
	outer->tot_len = bpf_htons(hlen + ip_len);
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = RM_OUTER_TTL;
	outer->protocol = gue ? IPPROTO_UDP : RM_PROTO_IPIP;
	outer->check = 0;
	outer->saddr = bl_encap_src;
	outer->daddr = bl_node_addr;
	outer->check = bl_csum(outer);
	if (gue) {
		struct udphdr *uh = (void *)(outer + 1);

		if ((void *)(uh + 1) > end)
			return XDP_DROP;
		uh->source = sport;
		uh->dest = bl_gue_port;
		uh->len = bpf_htons(RM_GUE_UDP_LEN + ip_len);
		uh->check = 0;
	}
	if (fib.ifindex == in_if)
		return XDP_TX;
	return bpf_redirect_map(&bl_ports, fib.ifindex, XDP_DROP);
}

SEC("xdp")
int bl_ipip(struct xdp_md *ctx)
{
	return bl_encap(ctx, 0);
}

SEC("xdp")
int bl_gue(struct xdp_md *ctx)
{
	return bl_encap(ctx, 1);
}

SEC("xdp")
int bl_tx(struct xdp_md *ctx)
{
	int rc = bl_parse_rewrite(ctx);

	if (rc < 0)
		return XDP_DROP;
	return rc ? XDP_TX : XDP_PASS;
}

SEC("xdp")
int bl_redirect(struct xdp_md *ctx)
{
	int rc = bl_parse_rewrite(ctx);

	if (rc < 0)
		return XDP_DROP;
	if (!rc)
		return XDP_PASS;
	return bpf_redirect_map(&bl_ports, bl_ifindex, XDP_DROP);
}

char LICENSE[] SEC("license") = "GPL";
