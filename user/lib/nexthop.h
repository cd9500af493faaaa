/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Routed nodes' next-hop records (rm_nexthops, rm_encap.h): resolved by
 * the kernel's own bpf_fib_lookup (bpf/nhres.bpf.c through
 * bpf_prog_test_run) and written so that the data plane never uses half
 * of one. ringload neighd keeps them; the benchmarks and tests fill them
 * the same way.
 */
#ifndef RM_NEXTHOP_H
#define RM_NEXTHOP_H

#include <ringmaster/rm_encap.h>
#include "netlink.h"

struct rm_nh_resolver;

int rm_nh_resolver_open(struct rm_nh_resolver **r);
void rm_nh_resolver_close(struct rm_nh_resolver *r);

/* Node n's next hop for a packet entering in_ifindex, from cfg's outer
 * source of n's family, into *rec: RM_NH_F_VALID set when the kernel
 * has a usable next hop, RM_NH_F_ECMP too when its route has several
 * (rm_route_multipath); expires_ns and expires_jiffies now + ttl_ns
 * (jiffies as the lookup read them). *fib_rc is the
 * helper's BPF_FIB_LKUP_RET_* and *gw the next hop (gateway, or the node
 * when on-link; ifindex 0 when the kernel named none). 0, or -errno when
 * the lookup could not be run. */
int rm_nh_resolve(struct rm_nh_resolver *r, __u32 in_ifindex,
		  const struct rm_config *cfg, const struct rm_node *n,
		  __u64 ttl_ns, struct rm_nh *rec, struct rm_nexthop *gw,
		  int *fib_rc);
/* The same next hop in both records (seq and expiry aside)? */
bool rm_nh_same(const struct rm_nh *a, const struct rm_nh *b);
/* Write rec (seq is set here) into slot id of the rm_nexthops map fd in
 * three steps: the slot's seq made odd, the new fields, seq made even.
 * One writer at a time. 0 or -errno. */
int rm_nh_write(int fd, __u32 id, struct rm_nh *rec);
/* CLOCK_MONOTONIC_COARSE in ns: bpf_ktime_get_coarse_ns()'s clock. */
__u64 rm_nh_now(void);
/* A BPF_FIB_LKUP_RET_* code's name. */
const char *rm_fib_rc_name(int rc);

#endif
