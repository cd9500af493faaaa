// SPDX-License-Identifier: GPL-2.0
/*
 * A cooperating XDP program for the chain tests: counts every packet in
 * its own map and hands it on with rm_chain_pass() (rm_chain.h), so it can
 * sit in front of the director. xf_counts: ARRAY [1] of packets.
 */
#include <ringmaster/rm_chain.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xf_counts SEC(".maps");

SEC("xdp")
int xf_front(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&xf_counts, &zero);

	if (v)
		__sync_fetch_and_add(v, 1);
	return rm_chain_pass(ctx);
}

char LICENSE[] SEC("license") = "GPL";
