// SPDX-License-Identifier: GPL-2.0
/*
 * The chain's root (rm_common.h, "the chain"): attached to the interface
 * in place of the director when other XDP programs share it; runs slot 0,
 * 1, ... of the interface's rm_chain, the first occupied one. A tail call
 * comes back only when its slot is empty, so with every slot empty the
 * packet goes to the stack.
 */
#include <ringmaster/rm_chain.h>

SEC("xdp")
int rm_root(struct xdp_md *ctx)
{
	return rm_chain_from(ctx, 0);
}

char LICENSE[] SEC("license") = "GPL";
