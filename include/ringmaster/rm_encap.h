/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Encapsulation facts shared by the data plane (bpf/encap.h), the
 * decapsulator (bpf/decap.bpf.c), ringctl and the tests: header sizes,
 * the outer fields chosen, and the GUE source port a flow gets.
 */
#ifndef RM_ENCAP_H
#define RM_ENCAP_H

#include <ringmaster/rm_common.h>

#define RM_OUTER4_LEN 20 /* outer IPv4 header: no options */
#define RM_OUTER6_LEN 40 /* outer IPv6 header: no extension headers */
#define RM_GUE_UDP_LEN 8 /* GUE variant 1: UDP only, no GUE header */
#define RM_OUTER_TTL 64

/* ICMP errors the director may send per CPU per second. */
#ifndef RM_TOOBIG_RATE
#define RM_TOOBIG_RATE 1000
#endif
/* Bytes of the offending packet quoted in the error: its IP header with
 * options or extension headers and the start of its L4 header, which is
 * all the client needs to find the socket (a multiple of 4: the checksum
 * helper works in words). */
#ifndef RM_TOOBIG_QUOTE
#define RM_TOOBIG_QUOTE 128
#endif

/* Outer protocol for an inner packet of the given family. IPIP carries
 * IPv4 as protocol 4 and IPv6 as 41, whatever the outer family (IPv4 in
 * IPv6 is protocol 4 too, RFC 2473). */
#define RM_PROTO_IPIP 4
#define RM_PROTO_IPV6 41

/* Bytes the method adds in front of the inner IP packet. */
static inline __u32 rm_encap_overhead(__u8 via, __u8 addr_family)
{
	__u32 n = addr_family == RM_FAMILY_V6 ? RM_OUTER6_LEN : RM_OUTER4_LEN;

	return via == RM_VIA_GUE ? n + RM_GUE_UDP_LEN : n;
}

/* GUE source port of a flow (network order): 49152..65535 (RFC 7605's
 * dynamic range), fixed per flow and different across flows, so a node's
 * NIC spreads flows over its receive queues (RSS on the outer 4-tuple).
 * From the flow as hashed (client -> VIP; ports zero for 3-tuple
 * services, ICMP errors as their quoted flow), so every packet of a flow
 * and the errors about it share the port. Not keyed: it only spreads
 * load over queues, it picks no node. */
static inline __be16 rm_gue_sport(const struct rm_flow *f)
{
	__u32 h = f->src[0] ^ f->src[1] ^ f->src[2] ^ f->src[3] ^
		  ((__u32)f->sport << 16 | f->dport);

	h *= 0x9e3779b1u; /* golden-ratio multiply: the top bits mix all */
	h = 0xc000u | (h >> 18);
	return (__be16)(((h & 0xff) << 8) | (h >> 8)); /* htons, both sides */
}

/* ---- rm_nexthops: ARRAY [RM_MAX_NODES] of rm_nh, by node id ------- */
/* Each routed node's next hop as bpf_fib_lookup answered it in the
 * control plane (ringload neighd: user/lib/nexthop.c), so the data plane
 * need not ask per packet. neighd rewrites a record on every route,
 * neighbour or link event that changes it, and at least every round (the
 * expiry), so a change in the kernel takes effect without ringctl.
 * The data plane uses a record only when it is complete (seq even and
 * the same before and after its read), valid, for the node's current
 * address, unexpired (expires_jiffies) and not ECMP; otherwise it asks
 * bpf_fib_lookup and counts why (nexthop-fib-fallback, nexthop-fib-ecmp).
 * Written by one process in three steps (seq made odd, the fields, seq
 * made even: rm_nh_write), read without a lock: on x86 (TSO) a reader
 * never takes a mix of two records. */
struct rm_nh {
	__u32 seq;	  /* host; even: complete, odd: being written */
	__u32 flags;	  /* host; RM_NH_F_* */
	__be32 addr[4];	  /* be; the node address it was resolved for */
	__u32 family;	  /* host; RM_FAMILY_V4/V6 of addr */
	__u32 ifindex;	  /* host; egress interface */
	__u8 dmac[6];	  /* the next hop's MAC */
	__u8 smac[6];	  /* the egress interface's MAC */
	__u32 mtu;	  /* host; the route's MTU as bpf_fib_lookup checks
			   * it (device, locked route metric, PMTU) */
	__u64 expires_ns; /* host; bpf_ktime_get_coarse_ns() time
			   * (CLOCK_MONOTONIC_COARSE) after which the record
			   * is stale: its writer stopped (the writer's own
			   * refresh schedule; the data plane reads the next) */
	/* host; the same instant in bpf_jiffies64(), which the data plane
	 * compares: the verifier inlines that helper into one load, where
	 * a clock read cost ~4 ns per packet */
	__u64 expires_jiffies;
};
#define RM_NH_F_VALID 0x1 /* resolved: the fields above are the next hop */
#define RM_NH_F_ECMP 0x2  /* several next hops: bpf_fib_lookup per packet */

/* ---- second chance: the hop list (GUE variant 0 private data) ------ */
/* A flow whose ring owner changed within the handover window (previous
 * ring generations, README "Second chance") is sent to a GUE node with a
 * GUE header (variant 0, draft-ietf-intarea-gue) whose private data is
 * the list of nodes that may hold its connection: the current owner
 * first, then the older owners, newest first, deduplicated. A flow whose
 * owner did not change keeps variant 1 (no GUE header): nothing extra.
 * GitHub's GLB Director documents the same idea; the layout is ours.
 *
 *   outer IP | UDP (dport: the node's gue_port) | GUE header | hop list |
 *   inner IP packet
 *
 *   GUE header, 4 bytes:
 *     byte 0    ver (2 bits) = 0 | C (1 bit) = 0 | hlen (5 bits): the
 *               private data's length in 32-bit words
 *     byte 1    proto: the inner packet, RM_PROTO_IPIP (4) or
 *               RM_PROTO_IPV6 (41)
 *     bytes 2-3 flags: 0 (no optional field of the GUE draft is used)
 *   hop list (the private data), 4 + count * (4 or 16) bytes:
 *     bytes 0-1 type: RM_GUE_PRIV_HOPS (be)
 *     byte 2    next: index of the hop a node without a local socket for
 *               the flow sends the packet on to (the director sends 1;
 *               each forward adds 1)
 *     byte 3    count: hops in the list, 2..RM_GUE_HOPS_MAX
 *     then      count addresses of the outer family (IPv4: 4 bytes,
 *               IPv6: 16), hops[0] the current owner
 *   so hlen = 1 + count (IPv4) or 1 + 4 * count (IPv6).
 * Variant 0 and 1 are told apart by the top two bits after the UDP
 * header: 00 is a GUE header, 01 an IPv4 or IPv6 inner packet. */
#define RM_GUE_HOPS_MAX (1 + RM_RING_GENS) /* current owner + older ones */
#define RM_GUE_HDR_LEN 4
#define RM_GUE_PRIV_HOPS 0x5248 /* "RH": Ringmaster hops */
#define RM_GUE_HOPS_HDR_LEN 4
#define RM_GUE_HLEN_MASK 0x1f
#define RM_GUE_VER(b0) ((b0) >> 6)
#define RM_GUE_C(b0) (((b0) >> 5) & 1)
#define RM_GUE_HLEN(b0) ((b0)&RM_GUE_HLEN_MASK)

struct rm_gue_hdr {
	__u8 vch;	/* ver << 6 | C << 5 | hlen */
	__u8 proto;	/* RM_PROTO_IPIP / RM_PROTO_IPV6 */
	__be16 flags;	/* be; zero */
};

struct rm_gue_hops {
	__be16 type;	/* be; RM_GUE_PRIV_HOPS */
	__u8 next;	/* index of the next hop to try */
	__u8 count;	/* hops that follow */
};

/* Bytes of GUE header and hop list for count hops of an outer family. */
static inline __u32 rm_gue_hops_len(__u32 count, __u8 addr_family)
{
	return RM_GUE_HDR_LEN + RM_GUE_HOPS_HDR_LEN +
	       count * (addr_family == RM_FAMILY_V6 ? 16 : 4);
}

/* ---- the node-side decapsulator (bpf/decap.bpf.c) ---------------- */
/* Its maps are pinned under RM_DECAP_PIN_DIR (ringload decap). */
#define RM_DECAP_PIN_DIR "/sys/fs/bpf/ringmaster-decap"
#define RM_DECAP_PROG_NAME "rm_decap"
#define RM_DECAP_MAP_ALLOW "rm_decap_allow"
#define RM_DECAP_MAP_LOCAL "rm_decap_local"
#define RM_DECAP_MAP_CONFIG "rm_decap_config"
#define RM_DECAP_MAP_COUNTERS "rm_decap_counters"
#define RM_DECAP_MAP_HOPS "rm_decap_hops"
#ifndef RM_DECAP_MAX_PREFIXES
#define RM_DECAP_MAX_PREFIXES 64 /* --allow-src prefixes */
#endif
#ifndef RM_DECAP_MAX_LOCAL
#define RM_DECAP_MAX_LOCAL 256 /* the host's own addresses */
#endif

/* rm_decap_allow: LPM_TRIE of director source prefixes. prefixlen counts
 * the family word too: 32 + the address prefix length. */
struct rm_decap_prefix {
	__u32 prefixlen;
	__u32 family;	/* host; RM_FAMILY_V4/V6 */
	__be32 addr[4]; /* be; IPv4 in addr[0] */
};

/* rm_decap_hops: LPM_TRIE of the prefixes a second-chance forward may
 * go to (--allow-hop, default the --allow-src prefixes); key and value as
 * rm_decap_allow. */

/* rm_decap_local: HASH of the host's addresses, the outer destinations
 * it takes tunnelled packets for; value unused (1). */
struct rm_decap_addr {
	__u32 family;	/* host; RM_FAMILY_V4/V6 */
	__be32 addr[4]; /* be; IPv4 in addr[0], rest zero */
};

/* rm_decap_config: ARRAY [1]. */
struct rm_decap_config {
	__be16 gue_port; /* be; UDP destination port of GUE */
	__u16 pad;
	__u32 flags; /* zero */
};

/* rm_decap_counters: PERCPU_ARRAY [RM_DCNT_MAX] of __u64, one per
 * outcome; every packet bumps exactly one. decap-gue counts GUE without a
 * hop list; a packet with one counts in one sc-* counter (sc-local-*:
 * decapsulated and passed up here) or one dropped-hop* counter. */
#define RM_DECAP_COUNTERS(X)                                                   \
	X(RM_DCNT_IPIP, "decap-ipip")                                          \
	X(RM_DCNT_GUE, "decap-gue")                                            \
	X(RM_DCNT_PASS_NOT_TUNNEL, "passed-not-tunnel")                        \
	X(RM_DCNT_PASS_NOT_LOCAL, "passed-not-local")                          \
	X(RM_DCNT_PASS_SRC, "passed-src-not-allowed")                          \
	X(RM_DCNT_DROP_MALFORMED, "dropped-malformed")                         \
	X(RM_DCNT_SC_FORWARD, "sc-forwarded")                                  \
	X(RM_DCNT_SC_LOCAL_SOCKET, "sc-local-socket")                          \
	X(RM_DCNT_SC_LOCAL_COOKIE, "sc-local-syncookie")                       \
	X(RM_DCNT_SC_LOCAL_SYN, "sc-local-syn")                                \
	X(RM_DCNT_SC_LOCAL_NOT_TCP, "sc-local-not-tcp")                        \
	X(RM_DCNT_SC_EXHAUSTED, "sc-local-exhausted")                          \
	X(RM_DCNT_SC_NO_NEIGH, "sc-local-no-neigh")                            \
	X(RM_DCNT_SC_FWD_DISABLED, "sc-local-fwd-disabled")                    \
	X(RM_DCNT_SC_NO_ROUTE, "sc-local-no-route")                            \
	X(RM_DCNT_DROP_HOPS, "dropped-hops-malformed")                         \
	X(RM_DCNT_DROP_HOP_LOOP, "dropped-hop-loop")                           \
	X(RM_DCNT_DROP_HOP_DENIED, "dropped-hop-not-allowed")                  \
	X(RM_DCNT_DROP_HOP_TTL, "dropped-hop-ttl")
#define RM_DCNT_ENUM(id, name) id,
enum rm_decap_counter { RM_DECAP_COUNTERS(RM_DCNT_ENUM) RM_DCNT_MAX };
#undef RM_DCNT_ENUM

/* A counter's name, as ringload decap status prints it. */
static inline const char *rm_decap_counter_name(__u32 id)
{
#define RM_DCNT_NAME(id, name) name,
	static const char *const names[] = {RM_DECAP_COUNTERS(RM_DCNT_NAME)};
#undef RM_DCNT_NAME

	return id < RM_DCNT_MAX ? names[id] : "?";
}

#endif /* RM_ENCAP_H */
