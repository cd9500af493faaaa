/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For XDP programs that share an interface through Ringmaster's chain
 * (rm_common.h says how it works): include this in the BPF program, and
 * return rm_chain_pass(ctx) where the program would return XDP_PASS, so
 * the programs in the slots after its own see the packet.
 *
 *   #include <ringmaster/rm_chain.h>
 *   ...
 *   if (not_mine)
 *           return rm_chain_pass(ctx);
 *
 * `ringload chain add IFACE OBJ --slot N` points the object's rm_chain map
 * at the interface's chain and sets rm_chain_slot to N before loading; a
 * program loaded any other way keeps RM_CHAIN_NONE and passes to the
 * stack as before. A program that does not use this header can only be
 * the last one in the chain: nothing runs after it.
 */
#ifndef RM_CHAIN_H
#define RM_CHAIN_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <ringmaster/rm_common.h>

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, RM_CHAIN_SLOTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} rm_chain SEC(".maps");

/* This program's slot, set by the loader: read-only data, so the verifier
 * knows it and a program outside a chain keeps none of the code below. */
const volatile __u32 rm_chain_slot = RM_CHAIN_NONE;

/* Tail-call the first occupied slot from first on; XDP_PASS if none. The
 * slot of each call is a constant, so the JIT makes it a direct jump. */
static __always_inline int rm_chain_from(struct xdp_md *ctx, __u32 first)
{
#pragma unroll
	for (__u32 i = 0; i < RM_CHAIN_SLOTS; i++)
		if (i >= first)
			bpf_tail_call(ctx, &rm_chain, i);
	return XDP_PASS;
}

/* Where the program would return XDP_PASS: the next program, if any. */
static __always_inline int rm_chain_pass(struct xdp_md *ctx)
{
	if (rm_chain_slot >= RM_CHAIN_SLOTS)
		return XDP_PASS;
	return rm_chain_from(ctx, rm_chain_slot + 1);
}

#endif /* RM_CHAIN_H */
