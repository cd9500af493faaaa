/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The connection table's keys and its validity rule, compiled unchanged
 * into the data plane (bpf/conntrack.h) and userspace (the per-node counts
 * of `ringctl show`), so both judge every entry alike: tested.
 */
#ifndef RM_CONN_H
#define RM_CONN_H

#include "rm_common.h"

#define RM_CONN_PROTO_UDP 17 /* IPPROTO_UDP: no libc or UAPI header here */
#define RM_NSEC_PER_SEC 1000000000ULL

/* The rm_conns key of an IPv4 flow (rm_conns6 takes the rm_flow as is). */
RM_INLINE void rm_conn_key4_of(const struct rm_flow *f,
			       struct rm_conn_key4 *k)
{
	k->src = f->src[0];
	k->dst = f->dst[0];
	k->sport = f->sport;
	k->dport = f->dport;
	k->proto = f->proto;
	k->pad[0] = 0;
	k->pad[1] = 0;
	k->pad[2] = 0;
}

/* UDP idle timeout in ns; udp_timeout_s 0 means the default. */
RM_INLINE __u64 rm_conn_udp_timeout_ns(__u32 udp_timeout_s)
{
	return (__u64)(udp_timeout_s ? udp_timeout_s
				     : RM_DEFAULT_UDP_TIMEOUT_S) *
	       RM_NSEC_PER_SEC;
}

/* Is an entry that remembers (node n, gen), last refreshed at last_ns,
 * for a flow of protocol proto, honoured at now? Its node slot still has
 * the remembered gen and is ACTIVE or DRAINING (a drained node keeps its
 * flows; DOWN, FREE and a reused slot lose them), and a UDP entry is not
 * older than the UDP timeout; TCP entries never expire by age. Ages are
 * signed: another CPU may have refreshed the entry after now was read.
 * The caller reads the entry's fields once: an update on another CPU
 * replaces the entry under a reader. */
RM_INLINE int rm_conn_valid_at(const struct rm_node *n, __u32 gen, __u8 proto,
			       __u64 last_ns, __u64 now, __u32 udp_timeout_s)
{
	if (!n || n->gen != gen ||
	    (n->state != RM_NODE_ACTIVE && n->state != RM_NODE_DRAINING))
		return 0;
	return proto != RM_CONN_PROTO_UDP ||
	       (__s64)(now - last_ns) <=
		   (__s64)rm_conn_udp_timeout_ns(udp_timeout_s);
}

#endif /* RM_CONN_H */
