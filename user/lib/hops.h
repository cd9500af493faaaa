/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Second chance in userspace: a service's remembered ring generations
 * read from rm_rings_old, and a flow's hop list computed from them by
 * include/ringmaster/rm_hops.h, the code the data plane runs (ringctl
 * lookup, show, tests).
 */
#ifndef RM_HOPS_USER_H
#define RM_HOPS_USER_H

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_hops.h>
#include "state.h"

struct rm_gens {
	__u32 svc;
	const struct rm_snap *snap;	       /* node records */
	const struct rm_slot *slots[RM_RING_GENS]; /* mapped; NULL: none, or
						    * read by rm_gens_heads */
	__u32 nslots[RM_RING_GENS];
	bool held[RM_RING_GENS];	/* generation i exists */
	__u32 entries[RM_RING_GENS];	/* its ring's entries */
	__u64 retired_ns[RM_RING_GENS]; /* CLOCK_MONOTONIC */
};

/* Read service svc's generations (none is no error); s gives the node
 * records hops are judged by. rm_gens_free() after. */
int rm_gens_read(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		 struct rm_gens *g);
/* Their headers alone (held, entries, retire time; slots stay NULL):
 * what `show` says of them, without mapping megabytes of entries. Such
 * a g answers no hop list (rm_hops_of). */
int rm_gens_heads(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		  struct rm_gens *g);
void rm_gens_free(struct rm_gens *g);
/* Generations of g searched at now under window_s (rm_hop_gen_live). */
__u32 rm_gens_live(const struct rm_gens *g, __u64 now, __u32 window_s);

/* The hop list of hash h whose current owner is slot owner, as the data
 * plane builds it at now (CLOCK_MONOTONIC ns): out->count, 1 when the
 * owner did not change (or is no GUE node). The caller decides whether
 * the packet asks at all (TCP, not a SYN, no valid table entry, flow
 * hash: rm_hops_wanted). */
__u32 rm_hops_of(const struct rm_gens *g, __u32 h, __u32 owner, __u64 now,
		 struct rm_hops *out);
/* Does a non-SYN packet of service m's flows ask for hops at all? */
bool rm_hops_wanted(const struct rm_svc_meta *m, const struct rm_config *cfg);

#endif
