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

/* ---- the presence index (rm_conn_idx) -------------------------------- */
/* Ages count in units of 2^32 ns (4.3 s), 8 bits: a way's age only picks
 * which way an insert into a full set replaces (the oldest), and wraps
 * after 18 minutes, when a long-idle way may pass for a young one. */
#define RM_CONN_IDX_AGE_SHIFT 32

/* The flow's index hash under the index's key: a multiply-xorshift mix
 * (murmur3's finaliser), not SipHash: a table hit computes it too, and
 * it only has to be unpredictable enough that nobody can fill a chosen
 * set without the key. */
RM_INLINE __u64 rm_conn_idx_hash(const struct rm_flow *f, __u64 key)
{
	__u64 h = key ^ ((__u64)f->src[0] << 32 | f->dst[0]);
	int i;

	h *= 0x9e3779b97f4a7c15ULL;
	if (f->family == RM_FAMILY_V6)
		for (i = 1; i < 4; i++) {
			h ^= h >> 29;
			h ^= (__u64)f->src[i] << 32 | f->dst[i];
			h *= 0x9e3779b97f4a7c15ULL;
		}
	h ^= h >> 29;
	h ^= (__u64)f->sport << 48 | (__u64)f->dport << 32 | f->proto;
	h ^= key >> 17;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Set (1..nsets) of a hash: the low 32 bits scaled to nsets, so any
 * number of sets works without a division. */
RM_INLINE __u32 rm_conn_idx_set(__u64 h, __u32 nsets)
{
	return 1 + (__u32)(((h & 0xffffffffULL) * nsets) >> 32);
}

/* Tag of a hash: 8 bits from the half the set did not use, never 0. */
RM_INLINE __u16 rm_conn_idx_tag(__u64 h)
{
	__u16 t = (h >> 40) & 0xff;

	return t ? t : 1;
}

RM_INLINE __u16 rm_conn_idx_age(__u64 now_ns)
{
	return (now_ns >> RM_CONN_IDX_AGE_SHIFT) & 0xff;
}

/* The way of set s holding tag, or -1. */
RM_INLINE int rm_conn_idx_find(const struct rm_conn_set *s, __u16 tag)
{
	int i;

	for (i = 0; i < RM_CONN_WAYS; i++)
		if ((s->way[i] & 0xff) == tag)
			return i;
	return -1;
}

/* The way an insert of tag at age writes: the tag's own, else an empty
 * one, else the oldest. */
RM_INLINE int rm_conn_idx_pick(const struct rm_conn_set *s, __u16 tag,
			       __u16 age)
{
	int i, empty = -1, pick = 0;
	__u8 oldest = 0, a;

	for (i = 0; i < RM_CONN_WAYS; i++) {
		if (s->way[i] && (s->way[i] & 0xff) == tag)
			return i;
		if (!s->way[i]) {
			if (empty < 0)
				empty = i;
			continue;
		}
		a = (__u8)(age - (s->way[i] >> 8));
		if (a > oldest) {
			oldest = a;
			pick = i;
		}
	}
	return empty >= 0 ? empty : pick;
}

#endif /* RM_CONN_H */
