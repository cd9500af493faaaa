/* SPDX-License-Identifier: GPL-2.0 */
/* Ring fixtures: nodes "node-0000".. with weight 1 and id = their number,
 * built with the fixed benchmark seed and encoded in the kernel layout. */
#ifndef RM_BENCH_RINGFIX_H
#define RM_BENCH_RINGFIX_H

#include <stddef.h>
#include <ringmaster/rm_common.h>
#include "ring.h"

struct bench_ring {
	struct rm_ring ring;
	struct rm_slot *slots; /* encoded: header, index, entries */
	__u32 nslots;
};

void bench_seed(struct rm_seed *seed);
void bench_node_name(char *buf, size_t len, __u32 i);
/* count specs named from first on; ids = their numbers. malloc'd. */
struct rm_node_spec *bench_specs(__u32 first, __u32 count);
/* Build nodes x vnodes entries and encode them. 0 or -errno. */
int bench_ring(__u32 nodes, __u32 vnodes, struct bench_ring *out);
void bench_ring_free(struct bench_ring *r);

#endif
