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

/* 1: forward, 0: pass, -1: drop. */
static __always_inline int bl_parse_rewrite(struct xdp_md *ctx)
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

	__builtin_memcpy(eth->h_dest, bl_dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, bl_src_mac, ETH_ALEN);
	return 1;
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
