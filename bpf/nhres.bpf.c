// SPDX-License-Identifier: GPL-2.0
/*
 * The next hop of a routed node exactly as the director's bpf_fib_lookup
 * finds it (egress interface, both MACs, the MTU it checks, the gateway),
 * for the control plane: user/lib/nexthop.c runs this through
 * bpf_prog_test_run with the director's ingress interface as the frame's
 * and stores the answer in the node's rm_nexthops record. Asking the
 * kernel through the same helper, rather than reading routes, neighbours
 * and links over netlink, keeps its rules (which MTU counts for
 * forwarded packets, which neighbour states are usable) in one place.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* in: the lookup the data plane would make; out: the helper's answer,
 * and the data plane's clock (jiffies) when it was given */
struct bpf_fib_lookup nh_fib;
int nh_rc;
__u64 nh_jiffies;

SEC("xdp")
int rm_nh_resolve(struct xdp_md *ctx)
{
	nh_rc = bpf_fib_lookup(ctx, &nh_fib, sizeof(nh_fib), 0);
	nh_jiffies = bpf_jiffies64();
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
