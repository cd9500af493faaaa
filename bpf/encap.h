/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forwarding to routed nodes: IPIP (IPv4/IPv6 in IPv4/IPv6) and GUE
 * (variant 1: the inner IP packet right after a UDP header), with the
 * next hop from the kernel's routing and neighbour tables: the node's
 * rm_nexthops record, which the control plane fills from bpf_fib_lookup
 * and keeps fresh (rm_encap.h), else bpf_fib_lookup per packet; and the
 * path MTU answered to the client.
 *
 * Outer header, both methods:
 *   IPv4  IHL 5, DSCP/ECN copied from the inner packet, ID 0, no DF (a
 *         router past the director may fragment; the director itself
 *         never sends more than its route's MTU, below), TTL 64, valid
 *         header checksum
 *   IPv6  traffic class copied, flow label 0, hop limit 64
 *   source rm_config.encap_src4 / encap_src6; none set: dropped, counted
 *   GUE   UDP source port from the flow (rm_encap.h), destination the
 *         node's gue_port, checksum 0 over both families: the inner
 *         packet carries its own checksums, and RFC 6935/6936 allow a
 *         zero UDP checksum over IPv6 for tunnels whose receiver accepts
 *         it (the project's decapsulator does; see the README for fou)
 * Ethernet padding behind the inner packet is trimmed; VLAN tags of the
 * received frame are not carried: the frame leaves by the route's
 * interface with the route's MACs.
 *
 * Path MTU: bpf_fib_lookup checks the outer length against the route's
 * MTU (device MTU, an `mtu` route metric, or a learned PMTU exception).
 * Too big: IPv4 with DF and IPv6 answer the client with fragmentation
 * needed / packet too big giving MTU minus the overhead, at most
 * RM_TOOBIG_RATE a second per CPU; IPv4 without DF is dropped (clients
 * that never set DF need an MSS clamp: README). An ICMP error that is
 * itself too big is dropped, never answered.
 */
#ifndef RM_BPF_ENCAP_H
#define RM_BPF_ENCAP_H

/* BPF global functions are defined here, so one object only may include
 * this header: a second would carry its own copies, which the verifier
 * checks again and a BPF link could not merge. */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/encap.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include <ringmaster/rm_encap.h>

#include "counters.h"
#include "hops.h"
#include "icmp_defs.h"
#include "maps.h"
#include "parse.h"

#define RM_AF_INET 2 /* <sys/socket.h> values, which BPF cannot include */
#define RM_AF_INET6 10
#define RM_ICMPV6_PKT_TOOBIG 2

/* rm_encap's outcomes; every one is counted inside. */
enum rm_enc {
	RM_ENC_DROP = 0, /* dropped */
	RM_ENC_TX,	 /* encapsulated, out of the ingress interface */
	RM_ENC_REDIRECT, /* encapsulated, out of another (rm_tx_ports) */
	RM_ENC_ANSWER,	 /* replaced by an ICMP error to the client: TX */
};

/* Per-CPU budget of generated ICMP errors: a fixed one-second window. */
struct rm_icmp_budget {
	__u64 window_ns;
	__u64 sent;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_icmp_budget);
} rm_icmp_budget SEC(".maps");

static __always_inline int rm_icmp_allowed(void)
{
	struct rm_icmp_budget *b;
	__u32 zero = 0;
	__u64 now;

	b = bpf_map_lookup_elem(&rm_icmp_budget, &zero);
	if (!b)
		return 0;
	now = bpf_ktime_get_coarse_ns();
	if (now - b->window_ns >= 1000000000ULL) {
		b->window_ns = now;
		b->sent = 0;
	}
	if (b->sent >= RM_TOOBIG_RATE)
		return 0;
	b->sent++;
	return 1;
}

/* The received IP packet, as far as encapsulation needs it: what the
 * parser found (rm_pkt), which has checked every length. */
struct rm_inner {
	__u32 l3_off; /* IP header offset: Ethernet and VLAN tags before it */
	__u32 ip_len; /* IP packet length, as its header says */
	__u8 v6;
	__u8 tos; /* DSCP/ECN: IPv4 TOS or IPv6 traffic class */
	__u8 df;  /* IPv4 DF */
	__u8 pad;
};

/* Ones' complement sum folded to 16 bits. */
static __always_inline __u16 rm_csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* The same for a sum of at most four 32-bit words (below 2^34), in
 * fewer steps: 2^16 is 1 modulo 0xffff, so 16-bit pieces can be added
 * from the start; two folds leave at most 0xffff + 7, the last add
 * takes its carry. */
static __always_inline __u16 rm_csum_fold4(__u64 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s += s >> 16;
	return ~s & 0xffff;
}

/* A header the director originates: no options, ID 0, no DF, TTL 64.
 * Built as whole 32-bit words and summed from them in registers: reading
 * back a word just stored as bytes stalls the CPU (store forwarding
 * fails), which was a third of rm_encap's time. */
static __always_inline void rm_ip4_fill(struct iphdr *iph, __u8 tos,
					__u32 tot_len, __u8 proto, __be32 saddr,
					__be32 daddr)
{
	__u32 *w = (__u32 *)iph;
	/* version 4, IHL 5 | TOS | total length; TTL | protocol | check */
	__u32 w0 =
	    bpf_htonl(0x45000000 | (__u32)tos << 16 | (tot_len & 0xffff));
	__u32 w2 = bpf_htonl((__u32)RM_OUTER_TTL << 24 | (__u32)proto << 16);

	w[0] = w0;
	w[1] = 0; /* ID 0, no flags, offset 0 */
	w[2] = w2;
	w[3] = saddr;
	w[4] = daddr;
	iph->check = rm_csum_fold4((__u64)w0 + w2 + saddr + daddr);
}

static __always_inline int rm_enc_drop(__u32 counter)
{
	rm_count(counter);
	return RM_ENC_DROP;
}

/* Replace the packet with an ICMP error to its sender saying the path
 * takes at most mtu bytes: the received L2 header with the MACs swapped
 * (VLAN tags kept: it goes back out where it came from), a new IP header
 * from the VIP to the client, the ICMP header, and the first
 * RM_TOOBIG_QUOTE bytes of the packet. */
static __always_inline int rm_too_big(struct xdp_md *ctx,
				      const struct rm_inner *in, __u32 mtu)
{
	__u32 ih = (in->v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct rm_icmphdr);
	__u32 l3 = in->l3_off, q = RM_TOOBIG_QUOTE;
	void *data, *end;
	struct rm_icmphdr *icmp;
	__u8 *l2, *old;
	__u64 sum;

	if (in->ip_len < q)
		return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
	if (!rm_icmp_allowed())
		return rm_enc_drop(RM_CNT_TOO_BIG_LIMITED);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (bpf_xdp_adjust_tail(ctx, (int)(l3 + q) - (int)(end - data)) ||
	    bpf_xdp_adjust_head(ctx, -(int)ih))
		return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	l2 = data;
	old = data + ih;
	/* the old L2 header: 14 bytes and up to two 4-byte tags */
	if ((void *)(old + ETH_HLEN + 2 * 4) > end)
		return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
	__builtin_memcpy(l2, old + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(l2 + ETH_ALEN, old, ETH_ALEN);
	__builtin_memcpy(l2 + 12, old + 12, 2);
	if (l3 > ETH_HLEN)
		__builtin_memcpy(l2 + 14, old + 14, 4);
	if (l3 > ETH_HLEN + 4)
		__builtin_memcpy(l2 + 18, old + 18, 4);
	if (l3 > ETH_HLEN + 8)
		return rm_enc_drop(RM_CNT_DROP_TOO_BIG);

	if (in->v6) {
		struct ipv6hdr *ip6h = data + l3;
		const struct ipv6hdr *o6 = data + l3 + ih;
		struct {
			struct in6_addr src, dst;
			__be32 len, nh;
		} ph;

		if ((void *)o6 + q > end || (void *)(ip6h + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
		*(__be32 *)ip6h = bpf_htonl(0x60000000);
		ip6h->payload_len = bpf_htons(sizeof(*icmp) + q);
		ip6h->nexthdr = IPPROTO_ICMPV6;
		ip6h->hop_limit = RM_OUTER_TTL;
		ip6h->saddr = o6->daddr;
		ip6h->daddr = o6->saddr;
		ph.src = ip6h->saddr;
		ph.dst = ip6h->daddr;
		ph.len = bpf_htonl(sizeof(*icmp) + q);
		ph.nh = bpf_htonl(IPPROTO_ICMPV6);
		icmp = (void *)(ip6h + 1);
		icmp->type = RM_ICMPV6_PKT_TOOBIG;
		icmp->code = 0;
		icmp->checksum = 0;
		icmp->un.rest = bpf_htonl(mtu);
		sum = bpf_csum_diff(NULL, 0, (__be32 *)&ph, sizeof(ph), 0);
	} else {
		struct iphdr *iph = data + l3;
		const struct iphdr *o4 = data + l3 + ih;

		if ((void *)o4 + q > end || (void *)(iph + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
		rm_ip4_fill(iph, 0, ih + q, IPPROTO_ICMP, o4->daddr, o4->saddr);
		icmp = (void *)(iph + 1);
		icmp->type = RM_ICMP_DEST_UNREACH;
		icmp->code = RM_ICMP_FRAG_NEEDED;
		icmp->checksum = 0;
		icmp->un.frag.unused = 0;
		icmp->un.frag.mtu = bpf_htons(mtu);
		sum = 0;
	}
	if ((void *)icmp + sizeof(*icmp) + q > end)
		return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
	sum = bpf_csum_diff(NULL, 0, (__be32 *)icmp, sizeof(*icmp) + q, sum);
	icmp->checksum = rm_csum_fold(sum);
	rm_count(RM_CNT_TOO_BIG_SENT);
	return RM_ENC_ANSWER;
}

/* Second chance: the GUE header (variant 0) and the hop list of n hops
 * at p, right after the UDP header (rm_encap.h has the layout); the
 * caller made room for rm_gue_hops_len(n, family). inner_v6: the inner
 * packet's family, which the GUE header names. 0, or -1 out of room. */
static __always_inline int rm_gue_hops_put(void *p, void *end,
					   const struct rm_hops *hops, __u32 n,
					   int v6out, int inner_v6)
{
	struct rm_gue_hdr *gh = p;
	struct rm_gue_hops *l = (void *)(gh + 1);
	__u8 *a = (void *)(l + 1);
	__u32 i;

	if ((void *)(l + 1) > end)
		return -1;
	/* hlen: the private data (hop list) in 32-bit words */
	gh->vch = (rm_gue_hops_len(n, v6out ? RM_FAMILY_V6 : RM_FAMILY_V4) -
		   RM_GUE_HDR_LEN) / 4;
	gh->proto = inner_v6 ? RM_PROTO_IPV6 : RM_PROTO_IPIP;
	gh->flags = 0;
	l->type = bpf_htons(RM_GUE_PRIV_HOPS);
	l->next = 1;
	l->count = n;
	for (i = 0; i < RM_GUE_HOPS_MAX; i++) {
		if (i >= n)
			break;
		if (v6out) {
			if ((void *)(a + 16) > end)
				return -1;
			__builtin_memcpy(a, hops->addr[i], 16);
			a += 16;
		} else {
			if ((void *)(a + 4) > end)
				return -1;
			__builtin_memcpy(a, hops->addr[i], 4);
			a += 4;
		}
	}
	return 0;
}

/* Hops a GUE packet for node carries: hops->count when it names more
 * than the current owner (bounded for the verifier), else 0. */
static __always_inline __u32 rm_gue_hops_n(const struct rm_node *node,
					   const struct rm_hops *hops)
{
	__u32 n = hops->count;

	if (node->via != RM_VIA_GUE || n < 2 ||
	    hops->family != node->addr_family)
		return 0;
	return n > RM_GUE_HOPS_MAX ? RM_GUE_HOPS_MAX : n;
}

/* ---- the next hop: the node's record, else bpf_fib_lookup ---------- */
/* Where an encapsulated packet leaves: what either source answers. */
struct rm_hop {
	__u32 ifindex;
	__u32 mtu; /* the route's, bpf_fib_lookup's mtu_result */
	__u8 dmac[6];
	__u8 smac[6];
};

#define RM_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
/* A record's first 8 bytes (seq, then flags) as one word, and two
 * 16-bit fields (first, then second in memory) as one: in the byte order
 * the program runs in. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RM_NH_SEQ_FLAGS(seq, flags) ((__u64)(flags) << 32 | (seq))
#define RM_NH_SEQ_OF(w) ((__u32)(w))
#define RM_U16_PAIR(a, b) ((__u32)(__u16)(a) | (__u32)(__u16)(b) << 16)
#else
#define RM_NH_SEQ_FLAGS(seq, flags) ((__u64)(seq) << 32 | (flags))
#define RM_NH_SEQ_OF(w) ((__u32)((w) >> 32))
#define RM_U16_PAIR(a, b) ((__u32)(__u16)(a) << 16 | (__u32)(__u16)(b))
#endif
/* what the fast path's word loads assume of the record's layout */
_Static_assert(__builtin_offsetof(struct rm_nh, seq) == 0 &&
		   __builtin_offsetof(struct rm_nh, flags) == 4 &&
		   __builtin_offsetof(struct rm_nh, dmac) % 8 == 0 &&
		   __builtin_offsetof(struct rm_nh, smac) ==
		       __builtin_offsetof(struct rm_nh, dmac) + ETH_ALEN,
	       "struct rm_nh: seq, flags, dmac and smac where rm_encap4_fast "
	       "reads them");
#define rm_barrier() asm volatile("" ::: "memory")

/* The node's rm_nexthops record into hop: 1 if usable, else 0 with the
 * reason counted (rm_encap.h has the rules). Fields are copied between
 * two reads of seq: a record rewritten meanwhile is not used. */
static __always_inline int rm_nh_cached(const struct rm_node *node,
					__u32 node_id, struct rm_hop *hop)
{
	struct rm_nh *nh = bpf_map_lookup_elem(&rm_nexthops, &node_id);
	__u32 seq, flags;

	if (!nh)
		goto stale;
	seq = RM_READ_ONCE(nh->seq);
	rm_barrier();
	flags = nh->flags;
	if ((seq & 1) || !(flags & RM_NH_F_VALID) ||
	    nh->family != node->addr_family || nh->addr[0] != node->addr[0] ||
	    nh->addr[1] != node->addr[1] || nh->addr[2] != node->addr[2] ||
	    nh->addr[3] != node->addr[3])
		goto stale;
	if (flags & RM_NH_F_ECMP) {
		rm_count(RM_CNT_NH_ECMP);
		return 0;
	}
	hop->ifindex = nh->ifindex;
	hop->mtu = nh->mtu;
	__builtin_memcpy(hop->dmac, nh->dmac, ETH_ALEN);
	__builtin_memcpy(hop->smac, nh->smac, ETH_ALEN);
	if (bpf_jiffies64() >= nh->expires_jiffies)
		goto stale;
	rm_barrier();
	if (RM_READ_ONCE(nh->seq) != seq)
		goto stale;
	return 1;
stale:
	rm_count(RM_CNT_NH_FALLBACK);
	return 0;
}

/* The kernel's answer for a packet of tot_len bytes to node: a
 * BPF_FIB_LKUP_RET_* code, hop filled on success (mtu on FRAG_NEEDED). */
static __always_inline int rm_nh_fib(struct xdp_md *ctx,
				     const struct rm_node *node,
				     const struct rm_config *cfg,
				     const struct rm_inner *in, __u8 proto,
				     __be16 sport, __u32 tot_len, __u32 in_if,
				     struct rm_hop *hop)
{
	struct bpf_fib_lookup fib = {};
	int rc;

	fib.ifindex = in_if;
	fib.l4_protocol = proto;
	fib.sport = sport;
	fib.dport = node->via == RM_VIA_GUE ? node->gue_port : 0;
	fib.tot_len = tot_len;
	if (node->addr_family == RM_FAMILY_V6) {
		fib.family = RM_AF_INET6;
		__builtin_memcpy(fib.ipv6_src, cfg->encap_src6, 16);
		__builtin_memcpy(fib.ipv6_dst, node->addr, 16);
	} else {
		fib.family = RM_AF_INET;
		fib.tos = in->tos;
		fib.ipv4_src = cfg->encap_src4;
		fib.ipv4_dst = node->addr[0];
	}
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	hop->mtu = fib.mtu_result;
	hop->ifindex = fib.ifindex;
	__builtin_memcpy(hop->dmac, fib.dmac, ETH_ALEN);
	__builtin_memcpy(hop->smac, fib.smac, ETH_ALEN);
	return rc;
}

/* The next hop for this packet to node, as rm_nh_fib answers: from the
 * record when it is usable (the MTU check is the one bpf_fib_lookup
 * makes), else from the kernel. */
static __always_inline int rm_next_hop(struct xdp_md *ctx,
				       const struct rm_node *node,
				       __u32 node_id,
				       const struct rm_config *cfg,
				       const struct rm_inner *in, __u8 proto,
				       __be16 sport, __u32 tot_len,
				       __u32 in_if, struct rm_hop *hop)
{
	if (rm_nh_cached(node, node_id, hop))
		return tot_len > hop->mtu ? BPF_FIB_LKUP_RET_FRAG_NEEDED
					  : BPF_FIB_LKUP_RET_SUCCESS;
	return rm_nh_fib(ctx, node, cfg, in, proto, sport, tot_len, in_if,
			 hop);
}

/* The way out (RM_ENC_TX when ifindex is in_if, else RM_ENC_REDIRECT
 * through rm_tx_ports), the Ethernet padding trimmed and room made: the
 * new Ethernet and outer headers (hlen bytes after Ethernet) end where
 * the inner IP packet starts. RM_ENC_DROP when that fails (counted). */
static __always_inline int rm_enc_room(struct xdp_md *ctx, __u32 ifindex,
				       __u32 in_if, __u32 l3_off, __u32 ip_len,
				       __u32 hlen)
{
	__u32 frame, want = l3_off + ip_len;
	int out = RM_ENC_TX;

	if (ifindex != in_if) {
		if (bpf_redirect_map(&rm_tx_ports, ifindex, XDP_DROP) !=
		    XDP_REDIRECT)
			return rm_enc_drop(RM_CNT_REDIRECT_FAILED);
		out = RM_ENC_REDIRECT;
	}
	/* after the call: read before it, both would be saved across it */
	frame = ctx->data_end - ctx->data;
	if (frame > want && bpf_xdp_adjust_tail(ctx, (int)want - (int)frame))
		return rm_enc_drop(RM_CNT_DROP_MALFORMED);
	if (bpf_xdp_adjust_head(ctx, (int)l3_off - (int)(ETH_HLEN + hlen)))
		return rm_enc_drop(RM_CNT_REDIRECT_FAILED);
	return out;
}

/* The common case on its own, straight through: an IPv4 node, no hop
 * list, its record usable (as rm_nh_cached judges it) and the packet
 * within the record's MTU. It makes the same decisions and bytes as the
 * general path below, with fewer values live at once (what the general
 * path keeps for its other cases cost BPF's five saved registers dearly
 * in stack spills: ~5 ns a packet), and is inlined into the caller (no
 * BPF call: rm_forward). Returns RM_ENC_*, or -1 with nothing changed
 * or counted: not this case, the general path decides.
 *
 * The MACs move as two words, not twelve bytes: dmac and smac are
 * adjacent in the record (dmac 8-aligned) and in the frame, and neither
 * map values nor packets need aligned access on the CPUs BPF JITs for
 * (the verifier checks alignment only under BPF_F_STRICT_ALIGNMENT). */
static __always_inline int rm_encap4_fast(struct xdp_md *ctx,
					  const struct rm_node *node,
					  const struct rm_pkt *pkt, __be32 src,
					  __u32 node_id)
{
	struct rm_nh *nh = bpf_map_lookup_elem(&rm_nexthops, &node_id);
	__u32 hlen, tot, ifindex, mac_hi;
	int out;
	int gue = node->via == RM_VIA_GUE;
	__u64 sf, mac_lo; /* mac_lo: dmac, then the first two bytes of smac */
	struct iphdr *iph;
	void *data, *end;

	if (!nh)
		return -1;
	/* seq and flags in one load: seq even, valid, not ECMP */
	sf = RM_READ_ONCE(*(const __u64 *)nh);
	rm_barrier();
	if ((sf & RM_NH_SEQ_FLAGS(1, RM_NH_F_VALID | RM_NH_F_ECMP)) !=
		RM_NH_SEQ_FLAGS(0, RM_NH_F_VALID) ||
	    nh->family != RM_FAMILY_V4 || nh->addr[0] != node->addr[0] ||
	    bpf_jiffies64() >= nh->expires_jiffies)
		return -1;
	hlen = gue ? RM_OUTER4_LEN + RM_GUE_UDP_LEN : RM_OUTER4_LEN;
	tot = pkt->ip_len + hlen;
	if (tot > nh->mtu)
		return -1;
	ifindex = nh->ifindex;
	mac_lo = *(const __u64 *)nh->dmac;
	mac_hi = *(const __u32 *)(nh->smac + 2);
	rm_barrier();
	if (RM_READ_ONCE(nh->seq) != RM_NH_SEQ_OF(sf))
		return -1;

	out = rm_enc_room(ctx, ifindex, ctx->ingress_ifindex, pkt->l3_off,
			  pkt->ip_len, hlen);
	if (out == RM_ENC_DROP)
		return out;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	iph = data + ETH_HLEN;
	if ((void *)(iph + 1) > end)
		return rm_enc_drop(RM_CNT_DROP_MALFORMED);
	*(__u64 *)data = mac_lo;
	*(__u32 *)(data + 8) = mac_hi;
	*(__be16 *)(data + 12) = bpf_htons(ETH_P_IP);
	rm_ip4_fill(iph, pkt->tos, tot,
		    gue				       ? IPPROTO_UDP
		    : pkt->flow.family == RM_FAMILY_V6 ? RM_PROTO_IPV6
						       : RM_PROTO_IPIP,
		    src, node->addr[0]);
	if (gue) {
		struct udphdr *uh = (void *)(iph + 1);

		if ((void *)(uh + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_MALFORMED);
		/* source and destination port; length and checksum 0 */
		*(__u32 *)uh = RM_U16_PAIR(rm_gue_sport(&pkt->flow),
					   node->gue_port);
		*((__u32 *)uh + 1) =
		    RM_U16_PAIR(bpf_htons(RM_GUE_UDP_LEN + pkt->ip_len), 0);
	}
	rm_count(gue ? RM_CNT_ENCAP_GUE : RM_CNT_ENCAP_IPIP);
	return out;
}

/* Encapsulate the packet for node and pick its way out; counts the
 * outcome. node's slot is hops->node[0], set by the caller whether or not
 * a hop list follows (a BPF function takes five arguments). A global
 * function: the verifier checks it once, not once per path of the caller
 * (parse.h). */
__noinline int rm_encap(struct xdp_md *ctx, const struct rm_node *node,
			const struct rm_pkt *pkt, const struct rm_config *cfg,
			const struct rm_hops *hops)
{
	struct rm_inner in = {};
	struct rm_hop hop = {};
	__u32 hlen, out, in_if, nhops, node_id;
	void *data, *end;
	__be16 sport = 0;
	struct ethhdr *eth;
	int v6out, gue, rc;
	__u8 proto;

	if (!ctx || !node || !pkt || !cfg || !hops)
		return RM_ENC_DROP;
	node_id = hops->node[0];
	/* read once: the verifier refuses a spilled pointer into ctx */
	in_if = *(volatile __u32 *)&ctx->ingress_ifindex;
	in.l3_off = pkt->l3_off;
	in.ip_len = pkt->ip_len;
	in.v6 = pkt->flow.family == RM_FAMILY_V6;
	in.tos = pkt->tos;
	in.df = pkt->df;
	v6out = node->addr_family == RM_FAMILY_V6;
	gue = node->via == RM_VIA_GUE;
	hlen = rm_encap_overhead(node->via, node->addr_family);
	/* the hop list is part of the overhead: route MTU and too-big */
	nhops = rm_gue_hops_n(node, hops);
	if (nhops)
		hlen += rm_gue_hops_len(nhops, node->addr_family);
	proto = gue ? IPPROTO_UDP : in.v6 ? RM_PROTO_IPV6 : RM_PROTO_IPIP;
	if (gue)
		sport = rm_gue_sport(&pkt->flow);
	if (v6out ? !(cfg->encap_src6[0] | cfg->encap_src6[1] |
		      cfg->encap_src6[2] | cfg->encap_src6[3])
		  : !cfg->encap_src4)
		return rm_enc_drop(RM_CNT_ENCAP_NO_SRC);

	rc = rm_next_hop(ctx, node, node_id, cfg, &in, proto, sport,
			 in.ip_len + hlen, in_if, &hop);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return rm_enc_drop(RM_CNT_FIB_NO_NEIGH);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED) {
		/* an error is never answered with another; nor a packet
		 * whose sender cannot lower its size */
		if (pkt->icmp || (!in.v6 && !in.df) || hop.mtu <= hlen)
			return rm_enc_drop(RM_CNT_DROP_TOO_BIG);
		return rm_too_big(ctx, &in, hop.mtu - hlen);
	}
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return rm_enc_drop(RM_CNT_FIB_FAIL);

	out = rm_enc_room(ctx, hop.ifindex, in_if, in.l3_off, in.ip_len, hlen);
	if (out == RM_ENC_DROP)
		return out;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return rm_enc_drop(RM_CNT_DROP_MALFORMED);
	__builtin_memcpy(eth->h_dest, hop.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, hop.smac, ETH_ALEN);

	if (v6out) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		if ((void *)(ip6h + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_MALFORMED);
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		*(__be32 *)ip6h = bpf_htonl(0x60000000 | (__u32)in.tos << 20);
		ip6h->payload_len = bpf_htons(hlen - RM_OUTER6_LEN + in.ip_len);
		ip6h->nexthdr = proto;
		ip6h->hop_limit = RM_OUTER_TTL;
		__builtin_memcpy(&ip6h->saddr, cfg->encap_src6, 16);
		__builtin_memcpy(&ip6h->daddr, node->addr, 16);
	} else {
		struct iphdr *iph = (void *)(eth + 1);

		if ((void *)(iph + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_MALFORMED);
		eth->h_proto = bpf_htons(ETH_P_IP);
		rm_ip4_fill(iph, in.tos, hlen + in.ip_len, proto,
			    cfg->encap_src4, node->addr[0]);
	}
	if (gue) {
		struct udphdr *uh = data + ETH_HLEN +
				    (v6out ? RM_OUTER6_LEN : RM_OUTER4_LEN);

		if ((void *)(uh + 1) > end)
			return rm_enc_drop(RM_CNT_DROP_MALFORMED);
		uh->source = sport;
		uh->dest = node->gue_port;
		uh->len = bpf_htons(hlen - (v6out ? RM_OUTER6_LEN
						   : RM_OUTER4_LEN) +
				    in.ip_len);
		uh->check = 0;
		if (nhops && rm_gue_hops_put(uh + 1, end, hops, nhops, v6out,
					     in.v6))
			return rm_enc_drop(RM_CNT_DROP_MALFORMED);
	}
	if (nhops)
		rm_count(RM_CNT_HOPS_SENT);
	rm_count(gue ? RM_CNT_ENCAP_GUE : RM_CNT_ENCAP_IPIP);
	return out;
}

#endif /* RM_BPF_ENCAP_H */
