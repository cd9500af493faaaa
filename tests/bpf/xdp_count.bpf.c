// SPDX-License-Identifier: GPL-2.0
/*
 * An independent XDP program for the chain tests: knows nothing of
 * Ringmaster, counts packets by IP protocol in its own map and passes
 * every one (so in a chain it can only be the last program).
 * xc_counts: ARRAY, key = IP protocol number (IPv4 protocol or IPv6 next
 * header, 0..255; 256 = not IP), value = packets.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define XC_NOT_IP 256

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XC_NOT_IP + 1);
	__type(key, __u32);
	__type(value, __u64);
} xc_counts SEC(".maps");

SEC("xdp")
int xc_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 key = XC_NOT_IP;
	__u64 *v;

	if ((void *)(eth + 1) <= end) {
		if (eth->h_proto == bpf_htons(ETH_P_IP)) {
			struct iphdr *ip = (void *)(eth + 1);

			if ((void *)(ip + 1) <= end)
				key = ip->protocol;
		} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
			struct ipv6hdr *ip6 = (void *)(eth + 1);

			if ((void *)(ip6 + 1) <= end)
				key = ip6->nexthdr;
		}
	}
	v = bpf_map_lookup_elem(&xc_counts, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
