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

/* ---- the node-side decapsulator (bpf/decap.bpf.c) ---------------- */
/* Its maps are pinned under RM_DECAP_PIN_DIR (ringload decap). */
#define RM_DECAP_PIN_DIR "/sys/fs/bpf/ringmaster-decap"
#define RM_DECAP_PROG_NAME "rm_decap"
#define RM_DECAP_MAP_ALLOW "rm_decap_allow"
#define RM_DECAP_MAP_LOCAL "rm_decap_local"
#define RM_DECAP_MAP_CONFIG "rm_decap_config"
#define RM_DECAP_MAP_COUNTERS "rm_decap_counters"
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
 * outcome; every packet bumps exactly one. */
#define RM_DECAP_COUNTERS(X)                                                   \
	X(RM_DCNT_IPIP, "decap-ipip")                                          \
	X(RM_DCNT_GUE, "decap-gue")                                            \
	X(RM_DCNT_PASS_NOT_TUNNEL, "passed-not-tunnel")                        \
	X(RM_DCNT_PASS_NOT_LOCAL, "passed-not-local")                          \
	X(RM_DCNT_PASS_SRC, "passed-src-not-allowed")                          \
	X(RM_DCNT_DROP_MALFORMED, "dropped-malformed")
#define RM_DCNT_ENUM(id, name) id,
enum rm_decap_counter { RM_DECAP_COUNTERS(RM_DCNT_ENUM) RM_DCNT_MAX };
#undef RM_DCNT_ENUM

#endif /* RM_ENCAP_H */
