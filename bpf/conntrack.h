/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Connection table: keeps established flows on the node they started on
 * when the ring changes (a node added, drained, reweighted), which the
 * ring alone cannot: it moves ~1/n of all flows on every change.
 *
 * Which packets use the table:
 *   TCP SYN (SYN set, ACK clear), 5-tuple service
 *       a new connection goes where the ring says, and nothing is
 *       inserted: the handshake's ACK, the first non-SYN packet, writes
 *       the entry, so a SYN flood, spoofed or not, cannot evict anything.
 *       An entry left by an earlier connection on the same 5-tuple is
 *       deleted (rm_conn_forget): a client reusing its port after a ring
 *       change moved the tuple would otherwise get its SYN to the ring
 *       owner and its ACK to the old node, and a reset. The SYN asks the
 *       presence index (below), after the ring search (rm_conn_forget
 *       says why), and looks the table up only when its tuple's tag is
 *       there: a new tuple's SYN reads one cache line of the index
 *       instead of missing in the table's buckets.
 *   TCP SYN, 3-tuple service
 *       looks up, never writes: one entry (ports zero) covers every
 *       connection of the client, so a SYN sent by the ring to another
 *       node than the entry's would be followed by packets sent to the
 *       entry's node. The price: such a service's clients keep opening
 *       connections on a DRAINING node while their entry lives, and a
 *       busy client's TCP entry never ages out (below), so draining a
 *       3-tuple TCP service ends with DOWN after a grace period.
 *   ICMP errors
 *       look up the quoted flow (the same key, so it costs one lookup):
 *       a "fragmentation needed" must reach the node holding the
 *       connection, which after a ring change is the entry's node. They
 *       never write or refresh: an ICMP error says nothing about the flow
 *       being alive, and anyone can send one.
 *   fragments (3-tuple services only; 5-tuple ones are dropped earlier)
 *       like any other packet: their key has no ports anyway, so every
 *       fragment finds the flow's entry.
 *   everything else (TCP non-SYN, UDP)
 *       looks up; writes the ring owner on a miss or a stale entry.
 *
 * An entry is valid while rm_nodes[node] still has the remembered gen and
 * is ACTIVE or DRAINING (a drained node keeps its flows; DOWN, FREE and a
 * reused slot lose them on the next packet) and, for UDP, while it is not
 * older than the UDP timeout (rm_conn.h, shared with userspace). TCP
 * entries never expire by age: the table does not follow FIN/RST, and
 * the LRU evicts entries nobody uses. IPv4 flows live in rm_conns under a
 * 16-byte key, IPv6 flows in rm_conns6 (maps.h).
 *
 * The presence index (rm_conn_idx, rm_common.h): every entry write puts
 * the flow's 8-bit tag into its set of RM_CONN_WAYS ways (the flow's own
 * way, an empty one, else the oldest), and an entry is honoured only
 * while its tag is in its set. So "no tag in the set" proves "no entry
 * honoured", and the SYN skips the table; a tag that is there (the
 * tuple's, or another flow's with the same set and tag: 1 in 32 with
 * half-full sets) costs the exact lookup and delete as before. The
 * reused-tuple guarantee is exact either way. What it costs: a table hit
 * also reads the set (in cache more often than the table); a set whose
 * sixteen ways hold younger flows than an idle one's replaces the idle
 * one, which then loses its entry like an LRU eviction (two ways per
 * table entry keep that rare); tags of entries the LRU evicted stay until
 * replaced (a false "maybe", never a false "no").
 *
 * Known cost of inserting nothing on a SYN: a ring change that falls
 * between a connection's SYN and its ACK, and moves its tuple, sends the
 * ACK to the new owner, which resets it (a window of one round trip).
 */
#ifndef RM_BPF_CONNTRACK_H
#define RM_BPF_CONNTRACK_H

/* BPF global functions are defined here, so one object only may include
 * this header: a second would carry its own copies, which the verifier
 * checks again and a BPF link could not merge. */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/conntrack.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include <linux/in.h>

#include <ringmaster/rm_conn.h>

#include "counters.h"
#include "maps.h"

/* last_ns is rewritten at most this often by a flow's packets, so a busy
 * flow does not write a cache line every CPU reads on every packet. */
#define RM_CONN_REFRESH_NS RM_NSEC_PER_SEC

/* The table's clock: CLOCK_MONOTONIC as of the last timer tick. It reads
 * a stored value instead of the clock source, which on the hit path was
 * most of the table's cost (test_run, v4 TCP: ~150 ns per packet with
 * bpf_ktime_get_ns(), ~133 ns with this, ~132 ns for a SYN that skips
 * the table). A tick (1-10 ms) is nothing next to a 1 s refresh and
 * timeouts in seconds. Every table and bucket time uses this one clock. */
#define rm_conn_now() bpf_ktime_get_coarse_ns()

/* The two global functions below use every argument: clang drops the
 * setup of an unused one, and the verifier, which checks calls against
 * the BTF signature, then rejects the call. */

/* rm_conn_idx's max_entries, read from the map itself (CO-RE): the
 * loader sizes the index with the tables at run time. */
struct bpf_map___rm_idx {
	__u32 max_entries;
} __attribute__((preserve_access_index));

/* The flow's set in the presence index and its tag, or NULL if the index
 * has no set for it (an index of one element: every lookup then goes to
 * the table, as without an index). The first packet after the index is
 * made draws its key; two CPUs drawing at once leave one key, and the
 * entries written under the other lose their tags: rewritten by their
 * next packet. */
static __always_inline struct rm_conn_set *
rm_conn_idx_of(const struct rm_flow *flow, __u16 *tag)
{
	__u32 i = 0, n = ((struct bpf_map___rm_idx *)&rm_conn_idx)->max_entries;
	struct rm_conn_set *s;
	__u64 key, h;

#ifdef RM_CONN_IDX_OFF
	/* the design before the index, for ringbench's same-round
	 * comparison (the Makefile's ringmaster-noidx.bpf.o) */
	return NULL;
#endif
	s = bpf_map_lookup_elem(&rm_conn_idx, &i);
	if (!s || n < 2)
		return NULL;
	key = *(__u64 *)s;
	if (!key) {
		key = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32() |
		      1;
		*(__u64 *)s = key;
	}
	h = rm_conn_idx_hash(flow, key);
	*tag = rm_conn_idx_tag(h);
	i = rm_conn_idx_set(h, n - 1);
	return bpf_map_lookup_elem(&rm_conn_idx, &i);
}

enum rm_conn_res {
	RM_CONN_NONE = 0, /* not looked up (SYN of a 5-tuple service) */
	RM_CONN_HIT,	  /* valid entry: its node in *node_id */
	RM_CONN_MISS,	  /* no entry */
	RM_CONN_STALE,	  /* an entry, no longer valid */
};

/* The flow's entry in the table of its family, or NULL; k4 is room for
 * an IPv4 key, which must outlive the pointer's use as a key. */
static __always_inline struct rm_conn *
rm_conn_find(const struct rm_flow *flow, struct rm_conn_key4 *k4)
{
	if (flow->family == RM_FAMILY_V6)
		return bpf_map_lookup_elem(&rm_conns6, flow);
	rm_conn_key4_of(flow, k4);
	return bpf_map_lookup_elem(&rm_conns, k4);
}

/* Look the flow up and judge its entry (rm_conn_valid_at, the rule
 * userspace applies too); counts hit, miss or stale.
 * refresh: a hit may bump last_ns (not for ICMP errors).
 *
 * A hit refreshes an entry older than R = 1 s, or, for UDP, than
 * min(1 s, T / 2) with T the UDP timeout: a flow whose packets are never
 * more than T - R apart never expires.
 *
 * A global function: the verifier checks it once, on its own, not once
 * more for every path of the caller that reaches it (parse.h). */
__noinline int rm_conn_lookup(const struct rm_flow *flow, __u32 udp_timeout_s,
			      int refresh, __u32 *node_id)
{
	__u64 now, last, every = RM_CONN_REFRESH_NS, timeout;
	struct rm_conn_key4 k4;
	struct rm_conn_set *set;
	struct rm_node *node;
	struct rm_conn *e;
	__u32 id, gen;
	__u16 tag = 0;
	int way;

	if (!flow || !node_id)
		return RM_CONN_NONE;
	e = rm_conn_find(flow, &k4);
	if (!e) {
		rm_count(RM_CNT_CONN_MISS);
		return RM_CONN_MISS;
	}
	/* read once: an update on another CPU replaces the entry under us */
	id = e->node;
	gen = e->gen;
	last = e->last_ns;
	node = bpf_map_lookup_elem(&rm_nodes, &id);
	now = rm_conn_now();
	set = rm_conn_idx_of(flow, &tag);
	way = set ? rm_conn_idx_find(set, tag) : 0;
	if (way < 0 || !rm_conn_valid_at(node, gen, flow->proto, last, now,
					 udp_timeout_s)) {
		rm_count(RM_CNT_CONN_STALE);
		return RM_CONN_STALE;
	}
	if (flow->proto == IPPROTO_UDP) {
		timeout = rm_conn_udp_timeout_ns(udp_timeout_s);
		if (timeout / 2 < every)
			every = timeout / 2;
	}
	if (refresh && (__s64)(now - last) > (__s64)every) {
		e->last_ns = now;
		/* the way's age too: a set that must replace one replaces
		 * the flow idle the longest */
		if (set && way < RM_CONN_WAYS)
			set->way[way] = tag | rm_conn_idx_age(now) << 8;
	}
	*node_id = id;
	rm_count(RM_CNT_CONN_HIT);
	return RM_CONN_HIT;
}

/* One token of this CPU's bucket, refilled at rate per second up to one
 * second's worth. Token units are 1e-9 of a write so the refill is one
 * multiplication, no division: elapsed (<= 1e9 ns) * rate (< 2^32) and
 * the level (<= rate * 1e9) each stay below 2^63. Per CPU: no atomics,
 * and the limit scales with the CPUs that take the traffic. */
static __always_inline int rm_conn_token(__u64 now, __u32 rate)
{
	__u64 cap = (__u64)rate * RM_NSEC_PER_SEC, elapsed, tokens;
	struct rm_conn_bucket *b;
	__u32 zero = 0;

	b = bpf_map_lookup_elem(&rm_conn_limit, &zero);
	if (!b) /* cannot happen: a one-slot array always has slot 0 */
		return 0;
	elapsed = now - b->last_ns;
	if ((__s64)elapsed < 0)
		elapsed = 0;
	if (elapsed > RM_NSEC_PER_SEC)
		elapsed = RM_NSEC_PER_SEC;
	/* the cap also applies a lowered rate at once */
	tokens = b->tokens + elapsed * rate;
	if (tokens > cap)
		tokens = cap;
	b->last_ns = now;
	if (tokens < RM_NSEC_PER_SEC) {
		b->tokens = tokens;
		return 0;
	}
	b->tokens = tokens - RM_NSEC_PER_SEC;
	return 1;
}

/* A SYN of a 5-tuple service: forget whatever an earlier connection on
 * the same tuple left behind (see the top of this file). rm_xdp calls it
 * after the ring search, not before: a new flow's SYN makes two random
 * reads, its ring bucket and its index set, each a cache miss once there
 * are many flows, and neither depends on the other. Placed after the
 * search, the few instructions that hash the tuple and read its set run
 * while the bucket's read is still in flight, so the two misses overlap
 * (65,536 new flows at the 64k ring: 0.6-0.7x of the time with the
 * forget before the search; docs/performance-new-flows.md). The table
 * lookup of the design before the index is too long a path to overlap
 * that way (measured: the same time before or after the search), so the
 * bench's reference of that design (RM_CONN_IDX_OFF) forgets first, as
 * it did. */
#ifdef RM_CONN_IDX_OFF
#define RM_CONN_FORGET_FIRST 1
#else
#define RM_CONN_FORGET_FIRST 0
#endif

static __always_inline void rm_conn_forget(const struct rm_flow *flow)
{
	struct rm_conn_key4 k4;
	struct rm_conn_set *set;
	__u16 tag = 0;

	/* no tag: no entry of this tuple is honoured, nothing to forget */
	set = rm_conn_idx_of(flow, &tag);
	if (set && rm_conn_idx_find(set, tag) < 0)
		return;

	if (flow->family == RM_FAMILY_V6) {
		if (bpf_map_lookup_elem(&rm_conns6, flow))
			bpf_map_delete_elem(&rm_conns6, flow);
		return;
	}
	rm_conn_key4_of(flow, &k4);
	if (bpf_map_lookup_elem(&rm_conns, &k4))
		bpf_map_delete_elem(&rm_conns, &k4);
}

/* Remember that the flow goes to node_id (slot generation gen), subject
 * to the per-CPU write rate (0: no limit). Counts insert or
 * insert-limited; a write the map itself refuses (ENOMEM, only when the
 * LRU races with itself) counts neither. A global function for the same
 * reason as the lookup. */
__noinline int rm_conn_remember(const struct rm_flow *flow, __u32 node_id,
				__u32 gen, __u32 rate)
{
	struct rm_conn v = {.node = node_id, .gen = gen};
	struct rm_conn_key4 k4;
	struct rm_conn_set *set;
	__u16 tag = 0, age;
	long err;
	int way;

	if (!flow)
		return -1;
	v.last_ns = rm_conn_now();
	if (rate && !rm_conn_token(v.last_ns, rate)) {
		rm_count(RM_CNT_CONN_INSERT_LIMITED);
		return -1;
	}
	/* the tag before the entry: an entry is honoured only with it */
	set = rm_conn_idx_of(flow, &tag);
	if (set) {
		age = rm_conn_idx_age(v.last_ns);
		way = rm_conn_idx_pick(set, tag, age);
		if (way >= 0 && way < RM_CONN_WAYS)
			set->way[way] = tag | age << 8;
	}
	/* a whole-element update, not a write through the lookup's pointer:
	 * a reader on another CPU sees the old (node, gen) or the new one,
	 * never one of each */
	if (flow->family == RM_FAMILY_V6) {
		err = bpf_map_update_elem(&rm_conns6, flow, &v, BPF_ANY);
	} else {
		rm_conn_key4_of(flow, &k4);
		err = bpf_map_update_elem(&rm_conns, &k4, &v, BPF_ANY);
	}
	if (err)
		return -1;
	rm_count(RM_CNT_CONN_INSERT);
	return 0;
}

#endif /* RM_BPF_CONNTRACK_H */
