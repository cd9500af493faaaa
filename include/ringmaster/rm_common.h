/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ringmaster: the one header shared by the BPF program and userspace.
 *
 * Every struct, enum, limit and map name that crosses the kernel/user
 * boundary lives here, once. Limits are overridable at build time
 * (make EXTRA_DEFS=-DRM_MAX_NODES=8192), and both sides are built from the
 * same Makefile variables, so they cannot disagree.
 *
 * Byte order: fields marked "be" are network order exactly as they appear
 * on the wire; everything else is host order. The BPF target is bpfel on
 * little-endian hosts, so both sides read the same bytes the same way.
 */
#ifndef RM_COMMON_H
#define RM_COMMON_H

#ifdef __BPF__
#include <linux/types.h>
#else
#include <linux/types.h>
#include <stdint.h>
#endif

/* Code shared by both sides (rm_hash.h, rm_search.h, rm_conn.h) is
 * inlined everywhere: in BPF a call is a verifier boundary, and userspace
 * must compute exactly what the kernel does. */
#ifdef __BPF__
#define RM_INLINE static __always_inline
#else
#define RM_INLINE static inline __attribute__((always_inline))
#endif

/* ---- limits (overridable) ------------------------------------------ */
#ifndef RM_MAX_SERVICES
#define RM_MAX_SERVICES 256 /* services per director (outer ring map) */
#endif
#ifndef RM_MAX_NODES
#define RM_MAX_NODES 4096 /* node slots shared by all services */
#endif
#ifndef RM_MAX_NODES_PER_RING
#define RM_MAX_NODES_PER_RING 1024 /* nodes one service's ring may hold */
#endif
#ifndef RM_MAX_RING_ENTRIES_LOG2
#define RM_MAX_RING_ENTRIES_LOG2 20
#endif
/* vnodes in one ring; the kernel search is bounded by log2 of this + 1 */
#define RM_MAX_RING_ENTRIES (1u << RM_MAX_RING_ENTRIES_LOG2)
#ifndef RM_MAX_WEIGHT
#define RM_MAX_WEIGHT 100 /* a node's weight is 1..RM_MAX_WEIGHT */
#endif
#ifndef RM_DEFAULT_VNODES
#define RM_DEFAULT_VNODES 1000 /* vnodes per unit of weight, see README */
#endif
#ifndef RM_MAX_VNODES
#define RM_MAX_VNODES 4096 /* vnodes per unit of weight, upper bound */
#endif
/* QUIC (rm_quic.h): RFC 9000 caps a v1 connection ID at 20 bytes; a
 * QUIC-LB server ID is at most 19 - RM_QUIC_NONCE_MIN of them */
#define RM_QUIC_CID_MAX 20
#define RM_QUIC_NONCE_MIN 4
#define RM_QUIC_SID_MAX 15
#define RM_NAME_MAX 32 /* node/service name incl. NUL; names are 1..31 chars */
#define RM_IFNAME_MAX 16

/* Ring index: the top `bits` of a key select one of 2^bits buckets, a
 * 32-bit word each (struct rm_slot: rm_search.h and rm_rings below say how
 * it names the owner), most of which name it alone, so most lookups read
 * one word in an index a quarter of the entries' size per bucket. Bits
 * chosen per ring as ceil(log2(n)) + 1 (two buckets per entry) within
 * these bounds; four buckets fill a slot. */
#define RM_INDEX_BITS_MIN 2
#define RM_INDEX_BITS_MAX (RM_MAX_RING_ENTRIES_LOG2 + 1)
/* Probes a search may take: enough for the whole ring, whatever the index. */
#define RM_SEARCH_MAX_PROBES (RM_MAX_RING_ENTRIES_LOG2 + 1)

/* Previous ring generations a service keeps for the handover window
 * (second chance: rm_encap.h's hop list). */
#ifndef RM_RING_GENS
#define RM_RING_GENS 2
#endif

/* Total slots of a ring map: header + index + entries. */
#define RM_RING_IDX_SLOTS(bits) ((1u << (bits)) >> 2)
#define RM_RING_SLOTS(bits, n) (1u + RM_RING_IDX_SLOTS(bits) + ((n) + 1) / 2)
#define RM_RING_MAX_SLOTS RM_RING_SLOTS(RM_INDEX_BITS_MAX, RM_MAX_RING_ENTRIES)

#define RM_DEFAULT_PIN_DIR "/sys/fs/bpf/ringmaster"

/* ---- maps: each name written once, here -------------------------------- */
/* X(ID, name) for every map userspace opens: name is the map's variable
 * in bpf/maps.h (which fails to build if one is missing) and its pin name
 * under the pin dir; userspace knows the map as RM_M_<ID> (enum
 * rm_map_id, user/lib/state.h) and its name as rm_map_names[RM_M_<ID>]
 * or RM_MAP_NAME(ID). */
#define RM_MAPS(X)                                                         \
	X(SERVICES, rm_services)                                           \
	X(RINGS, rm_rings)                                                 \
	X(NODES, rm_nodes)                                                 \
	X(CONFIG, rm_config)                                               \
	X(SVC_META, rm_svc_meta)                                           \
	X(COUNTERS, rm_counters)                                           \
	X(SVC_STATS, rm_svc_stats)                                         \
	X(NODE_STATS, rm_node_stats)                                       \
	X(TX_PORTS, rm_tx_ports)                                           \
	X(CONNS, rm_conns)                                                 \
	X(CONNS6, rm_conns6)                                               \
	X(VIP_SLOTS, rm_vip_slots)                                         \
	X(RINGS_OLD, rm_rings_old)                                         \
	X(NEXTHOPS, rm_nexthops)                                           \
	X(CONN_IDX, rm_conn_idx)                                           \
	X(QUIC_SIDS, rm_quic_sids)
#define RM_PROG_NAME "rm_xdp"

/* ---- the chain: sharing an interface with other XDP programs ---------- */
/* Without freplace (libxdp's dispatcher needs trampolines, which some
 * kernels refuse), programs share an interface Katran's way: a root
 * program (bpf/root.bpf.c, RM_ROOT_PROG_NAME) is attached and tail-calls
 * the slots of a BPF_MAP_TYPE_PROG_ARRAY in order, 0 first; a tail call
 * returns only when its slot is empty, and the root passes the packet to
 * the stack when every slot is. A program in the chain that knows it
 * (include/ringmaster/rm_chain.h) hands the packets it would pass to the
 * next occupied slot after its own; one that does not ends the chain.
 * ringload pins one array per interface at <pin dir>/RM_CHAIN_DIR/<iface>/
 * RM_CHAIN_MAP; the maps of a program it loaded into slot N are pinned in
 * <pin dir>/RM_CHAIN_DIR/<iface>/<N>/. */
#ifndef RM_CHAIN_SLOTS
#define RM_CHAIN_SLOTS 8 /* slots of a chain; a tail-call chain may be 33 */
#endif
#define RM_CHAIN_MAP "rm_chain"
#define RM_CHAIN_DIR "chain"
#define RM_ROOT_PROG_NAME "rm_root"
/* rm_chain_slot of a program outside any chain: passes to the stack */
#define RM_CHAIN_NONE 0xffffffffu

/* ---- keyed hash seed ------------------------------------------------ */
/* 128-bit SipHash key. Stored in rm_config; never derived from a constant
 * in production (generated from getrandom() on first attach). */
struct rm_seed {
	__u64 k0;
	__u64 k1;
};

/* ---- flow key --------------------------------------------------------- */
/* What the flow hash consumes. IPv4 addresses sit in src[0]/dst[0] with
 * the rest zero. In 3-tuple mode the ports are zero. No implicit padding. */
struct rm_flow {
	__be32 src[4]; /* be */
	__be32 dst[4]; /* be */
	__be16 sport;  /* be */
	__be16 dport;  /* be */
	__u8 proto;    /* IPPROTO_TCP / IPPROTO_UDP */
	__u8 family;   /* RM_FAMILY_V4 / RM_FAMILY_V6 */
	__u8 pad[2];   /* zero */
};
#define RM_FAMILY_V4 4
#define RM_FAMILY_V6 6

/* ---- rm_services: HASH, rm_svc_key -> rm_svc ------------------------ */
/* Service match. Lookup order in the data plane: exact port, then port 0
 * (wildcard for the VIP and protocol). Non-first IP fragments carry no
 * ports; they are looked up with port 0 and RM_SVCK_FRAG set, an entry
 * ringctl installs for every (VIP, proto) with a service: with
 * RM_SVC_F_3TUPLE when a 3-tuple service holds it (fragments forwarded),
 * without for 5-tuple ones only (fragments dropped and counted). Every key has its slot set
 * in rm_vip_slots (rm_vip_filter.h), which the data plane reads first. */
struct rm_svc_key {
	__be32 vip[4]; /* be; IPv4 in vip[0], rest zero */
	__be16 port;   /* be; 0 = any port */
	__u8 proto;    /* IPPROTO_TCP / IPPROTO_UDP */
	__u8 flags;    /* RM_SVCK_* */
};
#define RM_SVCK_V6 0x1
#define RM_SVCK_FRAG 0x2

struct rm_svc {
	__u32 id;    /* host; index into rm_rings, rm_svc_meta, rm_svc_stats */
	__u32 flags; /* host; RM_SVC_F_* */
};
#define RM_SVC_F_3TUPLE 0x1 /* hash src, dst, proto only: fragment-safe */
#define RM_SVC_F_KEYED 0x2  /* UDP: hash the request's key (rm_key.h) */
#define RM_SVC_F_QUIC 0x4   /* with KEYED: --key quic, by the DCID (rm_quic.h) */

/* ---- rm_rings: ARRAY_OF_MAPS [RM_MAX_SERVICES] of ARRAY(rm_ring_page) - */
/* One inner array per service, sized to that ring (BPF_F_INNER_MAP; its
 * last element may run past the ring, and a reused array by a few more),
 * and replaced whole on every change: a packet sees the old ring or the
 * new. Layout of the slots (ring format RM_RING_FORMAT), host order:
 *   slot 0                 header: a = entries n, b = index bits |
 *                          RM_RING_FORMAT << 8 (RM_RING_HDR_B)
 *   slot 1 + k             index: buckets 4k .. 4k+3 in a, b, c, d
 *   slot 1 + 2^bits/4 + j  entries 2j (a = point, b = node id) and
 *                          2j+1 (c = point, d = node id)
 * Entries are sorted by point; a key is owned by the first entry whose
 * point is >= the key, wrapping to entry 0. Bucket B holds the keys
 * B << (32 - bits) and up; lo and hi are the first entries with a point
 * at or past its first key and the next bucket's, so hi - lo of its keys
 * are points and entry lo (entry 0 if lo = n) owns its first key, its
 * "first owner". A bucket's word (tag in bits 30-31):
 *   DIRECT  no point in it: bits 0-29 its first owner, for all its keys
 *   SPLIT   one point: bits 12-29 the point's low 32 - bits bits, bits
 *           0-11 its first owner, which owns the keys up to the point;
 *           the next bucket's first owner owns the rest (used when the
 *           offset fits, bits >= 14, and the owner's id fits 12 bits)
 *   SEARCH  else: bits 0-20 lo, bits 21-29 hi - lo (RM_BKT_CNT_MAX: to
 *           the end of the ring); the entries lo..hi are searched
 * With two buckets per entry, DIRECT and SPLIT name the owner of 9 keys
 * in 10 (random points) from one word: one cache line per lookup in an
 * index of 4 bytes a bucket (512 KB at 65,536 entries). An older format
 * (b = bits, below 256) is refused by the search as corrupt, never read. */
#define RM_RING_FORMAT 2
#define RM_RING_HDR_B(bits) ((__u32)(bits) | (__u32)RM_RING_FORMAT << 8)
#define RM_RING_HDR_BITS(b) ((b) & 0xffu)
#define RM_RING_HDR_FORMAT(b) ((b) >> 8)
#define RM_BKT_TAG(w) ((w) >> 30)
#define RM_BKT_DIRECT 0u
#define RM_BKT_SPLIT 1u
#define RM_BKT_SEARCH 2u
#define RM_BKT_ID_MASK 0x3fffffffu /* DIRECT */
#define RM_BKT_SPLIT_ID_BITS 12
#define RM_BKT_SPLIT_OFF_BITS 18
#define RM_BKT_LO_BITS 21 /* SEARCH: lo, up to RM_MAX_RING_ENTRIES */
#define RM_BKT_CNT_MAX 0x1ffu
#if RM_MAX_RING_ENTRIES_LOG2 >= RM_BKT_LO_BITS
#error "RM_MAX_RING_ENTRIES_LOG2 too large for the ring index's 21-bit lo"
#endif
#if RM_MAX_NODES > RM_BKT_ID_MASK
#error "RM_MAX_NODES too large for the ring index's 30-bit node ids"
#endif
/* Flags of every ring array and of the template: inner arrays of any
 * size, readable by userspace through mmap (see user/lib/ring_map.c). */
#define RM_RING_MAP_FLAGS (BPF_F_INNER_MAP | BPF_F_MMAPABLE)

struct rm_slot {
	__u32 a;
	__u32 b;
	__u32 c;
	__u32 d;
};

/* A ring array's element: RM_RING_PAGE_SLOTS slots, so the kernel writes
 * a ring in a few hundred copies (a batch update) rather than a hundred
 * thousand, and slot k is slot[k % RM_RING_PAGE_SLOTS] of element
 * k / RM_RING_PAGE_SLOTS. Mapped, the array is the slots in order. A
 * power of two; 256 slots make a 4 KiB element. */
#ifndef RM_RING_PAGE_SLOTS
#define RM_RING_PAGE_SLOTS 256
#endif
#if RM_RING_PAGE_SLOTS & (RM_RING_PAGE_SLOTS - 1)
#error "RM_RING_PAGE_SLOTS must be a power of two"
#endif
struct rm_ring_page {
	struct rm_slot slot[RM_RING_PAGE_SLOTS];
};
#define RM_RING_PAGES(nslots)                                              \
	(((nslots) + RM_RING_PAGE_SLOTS - 1) / RM_RING_PAGE_SLOTS)

/* Point and node of entry i; entries are stored two to a slot. Selected
 * arithmetically, not by address: an address derived from the index
 * makes the BPF verifier track the index precisely, and the search loop
 * then never prunes. */
#define RM_ODD_MASK(i) (0u - ((__u32)(i) & 1u))
#define RM_ENTRY_POINT(s, i) ((s)->a ^ (((s)->a ^ (s)->c) & RM_ODD_MASK(i)))
#define RM_ENTRY_NODE(s, i) ((s)->b ^ (((s)->b ^ (s)->d) & RM_ODD_MASK(i)))
/* Word j & 3 of a slot (a, b, c, d): bucket j of the index. */
#define RM_SLOT_HALF(s, j) ((s)->a ^ (((s)->a ^ (s)->b) & RM_ODD_MASK(j)))
#define RM_SLOT_HALF2(s, j) ((s)->c ^ (((s)->c ^ (s)->d) & RM_ODD_MASK(j)))
#define RM_BKT_WORD(s, j)                                                  \
	(RM_SLOT_HALF(s, j) ^                                              \
	 ((RM_SLOT_HALF(s, j) ^ RM_SLOT_HALF2(s, j)) & RM_ODD_MASK((j) >> 1)))

/* ---- rm_rings_old: ARRAY_OF_MAPS [RM_MAX_SERVICES * RM_RING_GENS] ---- */
/* Second chance: the rings a service had before, newest first, at
 * svc * RM_RING_GENS + g (g = 0 the ring the current one replaced). A
 * ring change moves the retired inner array in here whole (older ones
 * shift one down, the oldest goes) before the new ring is installed in
 * rm_rings, so a packet that sees the new ring also sees the one it
 * replaced. The time it was retired travels with it, in its header
 * slot's unused fields: c = low, d = high 32 bits of CLOCK_MONOTONIC ns
 * (0: not retired). A live ring holds its input's digest there instead,
 * which only userspace reads (rm_ring_digest(), user/lib/ring.h). A
 * generation older than rm_config.handover_window_s is ignored
 * (include/ringmaster/rm_hops.h has the rules). */
#define RM_RINGS_OLD_MAX (RM_MAX_SERVICES * RM_RING_GENS)
/* The header slot's c and d as one 64-bit word, c the low half: a
 * retired ring's stamp, a live ring's digest. */
#define RM_RING_HDR_CD(hdr) ((__u64)(hdr)->d << 32 | (hdr)->c)
RM_INLINE void rm_ring_hdr_set_cd(struct rm_slot *hdr, __u64 v)
{
	hdr->c = (__u32)v;
	hdr->d = (__u32)(v >> 32);
}
#define RM_RING_RETIRED_NS(hdr) RM_RING_HDR_CD(hdr)

/* ---- health (control plane only) ------------------------------------ */
/* A node's health is separate from the operator's state: a node is in its
 * service's ring when the operator says ACTIVE and health.out is 0. The
 * checker (ringhealth) writes health through the same locked ring swap as
 * ringctl; a node entering out = 1 gets a new gen as on `--down`, so a
 * failing node loses its flows even while draining. Without a checker
 * every node stays UNCHECKED and in. */
enum rm_health_state {
	RM_HEALTH_UNCHECKED = 0, /* no result yet (or no check configured) */
	RM_HEALTH_HEALTHY = 1,
	RM_HEALTH_FAILING = 2,	 /* healthy, count failures in a row < fall */
	RM_HEALTH_UNHEALTHY = 3, /* count successes in a row < rise */
};
#define RM_HEALTH_F_DAMPED 0x1 /* flapped: held out until it calms down */
#define RM_HEALTH_F_PANIC 0x2  /* unhealthy but kept in: fail-open */
#define RM_HEALTH_ERR_MAX 48
struct rm_node_health {
	__u32 state;  /* RM_HEALTH_* */
	__u32 out;    /* 1: out of the ring for health (treated as down) */
	__u32 count;  /* failures (healthy/failing) or successes (unhealthy)
		       * in a row */
	__u32 flags;  /* RM_HEALTH_F_* */
	__u64 since;  /* unix time (s) the state last changed */
	char err[RM_HEALTH_ERR_MAX]; /* the last failure, "" if none */
};

/* A service's check, in its rm_svc_meta. Zero fields take the defaults
 * below; strings hold no whitespace (escapes \n \r \t \s \xHH in
 * payloads), so a saved configuration is one line per command. */
enum rm_check_type {
	RM_CHECK_NONE = 0,
	RM_CHECK_TCP = 1,  /* connect to addr:port */
	RM_CHECK_HTTP = 2, /* GET path, expect status */
	RM_CHECK_UDP = 3,  /* send payload, expect a reply (starting with
			    * expect, if set) */
	RM_CHECK_EXEC = 4, /* run cmd; exit 0 = healthy */
};
#ifndef RM_CHECK_DEF_INTERVAL_MS
#define RM_CHECK_DEF_INTERVAL_MS 2000
#endif
#ifndef RM_CHECK_DEF_TIMEOUT_MS
#define RM_CHECK_DEF_TIMEOUT_MS 1000
#endif
#define RM_CHECK_DEF_FALL 3
#define RM_CHECK_DEF_RISE 2
#define RM_CHECK_DEF_PANIC_PCT 50 /* fail-open below this share healthy */
#define RM_CHECK_DEF_STATUS 200
#define RM_CHECK_STR_MAX 64
#define RM_CHECK_CMD_MAX 128
struct rm_check {
	__u32 type;	   /* RM_CHECK_* */
	__u32 interval_ms; /* 0: default */
	__u32 timeout_ms;  /* 0: default */
	__u16 port;	   /* 0: the service port */
	__u16 status;	   /* http; 0: 200 */
	__u8 fall;	   /* 0: default */
	__u8 rise;	   /* 0: default */
	__u8 panic_pct;	   /* 0: default, or none with RM_CHECK_F_NO_PANIC */
	__u8 flags;	   /* RM_CHECK_F_* */
	__u32 pad;
	char path[RM_CHECK_STR_MAX];	/* http; "": / */
	char host[RM_CHECK_STR_MAX];	/* http Host; "": the address */
	char payload[RM_CHECK_STR_MAX]; /* udp */
	char expect[RM_CHECK_STR_MAX];	/* udp reply prefix; "": any */
	char cmd[RM_CHECK_CMD_MAX];	/* exec */
};
#define RM_CHECK_F_NO_PANIC 0x1 /* panic share 0: never fail open */

/* ---- rm_nodes: ARRAY [RM_MAX_NODES] of rm_node ---------------------- */
/* Node slots, shared by all services. The data plane reads the first
 * block; the rest is control-plane state kept here so bpffs holds all of
 * it. A slot is reused only with a new gen, so anything remembering
 * (node id, gen) can tell the node it meant is gone. */
struct rm_node {
	__u8 mac[6];     /* node's MAC (destination of forwarded frames) */
	__u8 src_mac[6]; /* egress interface's MAC (source) */
	__u32 ifindex;   /* host; egress interface */
	__u32 state;     /* host; RM_NODE_* */
	__u32 gen;       /* host; bumped on reuse and on down */
	/* control plane only */
	__u32 svc_id; /* host */
	__u32 weight; /* host; 1..RM_MAX_WEIGHT */
	char name[RM_NAME_MAX];
	char dev[RM_IFNAME_MAX];
	/* appended: the fields above keep their offsets */
	__be32 addr[4];	    /* be; the node's own address: where health
			     * checks go and, for the encapsulating methods,
			     * the outer destination; IPv4 in addr[0] */
	__u32 addr_family;  /* host; 0 = none, RM_FAMILY_V4 / RM_FAMILY_V6 */
	/* how the frame reaches the node (bpf/encap.h): RM_VIA_L2 uses the
	 * MACs and ifindex above; the encapsulating methods use addr and
	 * find the next hop with bpf_fib_lookup */
	__u8 via;	    /* RM_VIA_* */
	__u8 pad;	    /* zero */
	__be16 gue_port;    /* be; RM_VIA_GUE destination port */
	struct rm_node_health health;
	/* appended, control plane only: CLOCK_MONOTONIC (ns) when the slot
	 * was freed (0: never); a remembered ring (rm_rings_old) may name
	 * the slot for the handover window after, so it is not given to
	 * another node before then (state_edit.c) */
	__u64 freed_ns;
	/* appended: the QUIC-LB server ID of a node of a --key quic
	 * service (rm_quic.h), sid_len bytes (0: none); the control plane
	 * writes rm_quic_sids from it */
	__u8 quic_sid_len;
	__u8 quic_sid[RM_QUIC_SID_MAX];
};
enum rm_node_via {
	RM_VIA_L2 = 0,	 /* MAC rewrite on the director's segment (DSR) */
	RM_VIA_IPIP = 1, /* IP in IP: protocol 4 (inner v4) or 41 (inner v6) */
	RM_VIA_GUE = 2,	 /* inner IP packet in UDP (GUE variant 1) */
};
#ifndef RM_GUE_PORT
#define RM_GUE_PORT 6080 /* default GUE destination port, as Katran's */
#endif
enum rm_node_state {
	RM_NODE_FREE = 0,
	RM_NODE_ACTIVE = 1,
	RM_NODE_DRAINING = 2, /* out of the ring, keeps its existing flows */
	RM_NODE_DOWN = 3,     /* out of the ring, loses its flows at once */
};

/* ---- rm_svc_meta: ARRAY [RM_MAX_SERVICES] of rm_svc_meta ------------ */
/* What a keyed service (RM_SVC_F_KEYED) hashes instead of the flow:
 * include/ringmaster/rm_key.h has the extractors and the rules. */
enum rm_key_kind {
	RM_KEY_FLOW = 0,  /* no key: the flow hash (the default) */
	RM_KEY_MEMCACHED, /* memcached UDP: ASCII, meta or binary request */
	RM_KEY_DNS,	  /* DNS query: QNAME, wire format, lowercased */
	RM_KEY_BYTES,	  /* len bytes at payload offset off */
	RM_KEY_TOKEN,	  /* from payload offset off up to a delimiter */
	RM_KEY_QUIC,	  /* QUIC: the DCID, by QUIC-LB server ID (rm_quic.h) */
	RM_KEY_KIND_NR,
};
#define RM_KEY_DELIMS_MAX 8
/* A --key quic service's QUIC-LB configuration (draft-ietf-quic-load-
 * balancers, plaintext algorithm): its CIDs are a first octet (config
 * rotation bits, then length or random bits), sid_len bytes of server
 * ID, nonce_len bytes of nonce, and server-use bytes up to cid_len. */
struct rm_quic_spec {
	__u8 sid_len;	/* 1..RM_QUIC_SID_MAX */
	__u8 nonce_len; /* RM_QUIC_NONCE_MIN.., sid_len + nonce_len <= 19 */
	__u8 cr;	/* config rotation codepoint, 0..6 */
	__u8 cid_len;	/* short headers' DCID length; 0: self-encoded (the
			 * first octet's low 5 bits + 1) */
	__u8 enc;	/* RM_QUIC_ENC_*: plaintext, or encrypted with the
			 * service's key in rm_quic_keys (rm_quic_crypt.h) */
	__u8 pad[3];	/* zero */
};
#define RM_QUIC_ENC_NONE 0
#define RM_QUIC_ENC_AES 1 /* AES-128-ECB: single pass when sid_len +
			   * nonce_len is 16, else the four-pass Feistel */
struct rm_key_spec {
	__u8 kind;    /* RM_KEY_* */
	__u8 ndelims; /* token: delimiters used in delims[] */
	__u16 off;    /* host; bytes/token: offset in the UDP payload */
	__u16 len;    /* host; bytes: key length; token: longest key */
	__u8 pad[2];  /* zero */
	union {
		__u8 delims[RM_KEY_DELIMS_MAX];
		struct rm_quic_spec quic; /* RM_KEY_QUIC */
	};
};

/* Where a service's ring puts its points and how it hashes a key
 * (include/ringmaster/rm_owner.h): its own keyed hash, or the unkeyed
 * MD5 rings of existing memcached clients, so that the director and
 * those clients agree on every key's owner. The data plane reads scheme
 * for keyed services; the rest only shapes the ring userspace builds. */
enum rm_ring_scheme {
	RM_RING_RINGMASTER = 0, /* SipHash-1-3 under the seed (default) */
	RM_RING_KETAMA,		/* libmemcached's weighted ketama (MD5) */
	RM_RING_MD5_VNODES,	/* MD5 of a vnode name from a template */
	RM_RING_SCHEME_NR,
};
#define RM_RING_TMPL_MAX 48	/* md5-vnodes template, incl. NUL */
#define RM_KETAMA_POINTS 160	/* libmemcached's points per server */
#define RM_KETAMA_PORT 11211	/* libmemcached leaves this port out */
struct rm_ring_spec {
	__u8 scheme;  /* RM_RING_* */
	__u8 pad[3];  /* zero */
	__u32 count;  /* md5-vnodes: vnodes per unit of weight; else 0 */
	char tmpl[RM_RING_TMPL_MAX]; /* md5-vnodes: {node} and {i} once
				      * each; else "" */
};

/* Control-plane record of each service; in_use = 0 marks a free slot.
 * The data plane reads key and flags where rm_vip_slots names the id
 * (rm_vip_filter.h has the rules that keep that safe). */
struct rm_svc_meta {
	char name[RM_NAME_MAX];
	struct rm_svc_key key;
	__u32 flags;  /* host; RM_SVC_F_* */
	__u32 vnodes; /* host; vnodes per unit of weight */
	__u32 in_use; /* host */
	__u32 pad;
	/* appended, control plane only */
	struct rm_check check;
	/* appended; the data plane reads it for keyed services (bpf/key.h) */
	struct rm_key_spec keyspec; /* kind != FLOW iff RM_SVC_F_KEYED */
	/* appended; the data plane reads ring.scheme for keyed services */
	struct rm_ring_spec ring;
};

/* ---- rm_quic_sids: HASH, rm_quic_sid_key -> rm_quic_sid_node ------- */
/* Each QUIC-LB server ID of a --key quic service's nodes, written by the
 * control plane from the node records. The data plane uses an entry
 * only while rm_nodes[node] still has that gen, the service and a state
 * that takes packets (ACTIVE or DRAINING). */
struct rm_quic_sid_key {
	__u32 svc_id;			/* host */
	__u8 len;			/* 1..RM_QUIC_SID_MAX */
	__u8 sid[RM_QUIC_SID_MAX];	/* zero past len */
};
struct rm_quic_sid_node {
	__u32 node; /* host; rm_nodes slot */
	__u32 gen;  /* host; rm_nodes[node].gen */
};

/* ---- rm_quic_keys: ARRAY [RM_MAX_SERVICES] of rm_quic_key ------------ */
/* The AES-128 key of each encrypted --key quic service (rm_quic_crypt.h),
 * pinned only by a data plane built with the kernel's BPF crypto
 * (Linux 6.10+: bpf/quic_crypt.h), so not in RM_MAPS. The control plane
 * writes key and file (a write releases the element's crypto context),
 * then runs bpf/quic_key.bpf.c, which makes the context from key; the
 * data plane decrypts with ctx alone. Root-only like every pin; ringctl
 * never prints key (docs/quic.md). */
#define RM_QUIC_KEYS_MAP "rm_quic_keys"
#define RM_QUIC_KEY_LEN 16
#define RM_QUIC_KEY_FILE_MAX 128
#ifdef __BPF__
struct bpf_crypto_ctx; /* the kernel's (bpf/quic_crypt_map.h) */
#define RM_QUIC_KEY_CTX                                                    \
	struct bpf_crypto_ctx __attribute__((btf_type_tag("kptr"))) * ctx
#else
#define RM_QUIC_KEY_CTX __u64 ctx
#endif
struct rm_quic_key {
	__u8 key[RM_QUIC_KEY_LEN];	 /* zero: none */
	__u32 set;			 /* 1: key holds the service's key */
	__u32 pad;			 /* zero */
	char file[RM_QUIC_KEY_FILE_MAX]; /* the key file it came from */
	RM_QUIC_KEY_CTX; /* the kernel's context (userspace reads zero) */
};
/* bpf/quic_key.bpf.c's argument: the service whose context to make */
struct rm_quic_key_args {
	__u32 svc_id; /* in */
	__s32 err;    /* out: 0 or -errno */
};

/* ---- rm_config: ARRAY [1] of rm_config ------------------------------ */
struct rm_config {
	struct rm_seed seed;
	__u32 udp_timeout_s; /* host; idle timeout of UDP connection entries */
	__u32 flags;         /* host; RM_CFG_* */
	/* appended: the fields above keep their offsets */
	__u32 conn_insert_rate; /* host; rm_conns writes/s/CPU; 0 = no limit */
	__u32 pad;              /* zero */
	/* outer source addresses of encapsulated packets (bpf/encap.h);
	 * all zero: none, and nodes of that family get nothing */
	__be32 encap_src4;    /* be */
	__be32 encap_src6[4]; /* be */
	__u32 pad2;           /* zero */
	/* appended: second chance (rm_encap.h's hop list): a retired ring
	 * is searched for this long after it was replaced; 0 = off */
	__u32 handover_window_s; /* host */
	__u32 pad3;              /* zero */
};
/* rm_config.handover_window_s of a new config: long enough for most
 * long-lived connections to survive a ring change on any director */
#ifndef RM_DEFAULT_HANDOVER_S
#define RM_DEFAULT_HANDOVER_S 900
#endif
#define RM_HANDOVER_MAX_S 604800 /* a week: the ring maps stay that long */
#define RM_CFG_SEEDED 0x1 /* a seed has been set; unseeded = drop, not route */
/* A writer is between the first and the last write of a change: set
 * before its first write, cleared by its last. Still set when a writer
 * finds the state, the one before died mid-change (SIGKILL, power): the
 * maps may be half old, half new, and the next writer rewrites every
 * ring, key and record from the records (rm_state_repair). The data plane
 * ignores it. */
#define RM_CFG_COMMITTING 0x2

/* ---- rm_conns: LRU_HASH, rm_conn_key4 -> rm_conn (IPv4 flows) ------- */
/* ---- rm_conns6: LRU_HASH, struct rm_flow -> rm_conn (IPv6 flows) ---- */
/* Connection table, one map per family: flow (always the full 5-tuple as
 * hashed, i.e. ports zero for 3-tuple services) -> the node it was sent
 * to, so established
 * flows stay on their node when the ring changes. The data plane writes
 * an entry on the first non-SYN packet of a flow (never on a SYN), and
 * uses it while the node slot still has the remembered gen and is ACTIVE
 * or DRAINING and, for UDP, the entry is younger than the UDP timeout.
 * bpf/conntrack.h has the rules, rm_conn.h the validity rule both sides
 * apply; each map is created with RM_DEFAULT_CONN_ENTRIES, which the
 * loader may override, and per-CPU LRU lists: each CPU evicts from its own
 * max_entries / ncpus entries. An IPv4 flow's key is 16 bytes instead of
 * rm_flow's 40: the table hashes and compares the whole key on every
 * lookup, and most traffic is IPv4. */
#ifndef RM_DEFAULT_CONN_ENTRIES
#define RM_DEFAULT_CONN_ENTRIES 262144
#endif
#ifndef RM_DEFAULT_UDP_TIMEOUT_S
#define RM_DEFAULT_UDP_TIMEOUT_S 60 /* rm_config.udp_timeout_s 0 means this */
#endif
/* rm_config.conn_insert_rate for a new config: entries a CPU may write per
 * second (burst: one second's worth), which bounds how fast a flood of
 * made-up non-SYN flows can evict real entries. 0 in rm_config means no
 * limit, so the control plane sets this when it creates the config. */
#ifndef RM_DEFAULT_CONN_INSERT_RATE
#define RM_DEFAULT_CONN_INSERT_RATE 200000
#endif
struct rm_conn_key4 {
	__be32 src;   /* be */
	__be32 dst;   /* be */
	__be16 sport; /* be */
	__be16 dport; /* be */
	__u8 proto;   /* IPPROTO_TCP / IPPROTO_UDP */
	__u8 pad[3];  /* zero */
};

struct rm_conn {
	__u32 node;    /* host; rm_nodes slot */
	__u32 gen;     /* host; rm_nodes[node].gen when remembered */
	__u64 last_ns; /* host; CLOCK_MONOTONIC_COARSE of the last refresh */
};

/* ---- rm_conn_idx: ARRAY, [0] the hash key, [1..n] rm_conn_set -------- */
/* The connection tables' presence index (bpf/conntrack.h has the rules,
 * rm_conn.h the hash): per set of RM_CONN_WAYS ways, an 8-bit tag and an
 * age of each flow with an entry. An entry is honoured only while its
 * flow's tag is in its set, so a SYN that finds no tag there knows,
 * without a table lookup, that its tuple has no entry to forget. A set
 * is half a cache line, the index a twelfth of rm_conns' memory (4 bytes
 * per entry against 48 of buckets and elements): it stays in cache where
 * the table does not. Element 0's first 8
 * bytes are the hash key (0: not drawn yet; the data plane draws it).
 * The loader sizes it with the tables: RM_CONN_IDX_ENTRIES(rm_conns'
 * max_entries), two ways per table entry, shared by both families. */
#define RM_CONN_WAYS 16
#define RM_CONN_IDX_ENTRIES(conn_entries) ((conn_entries) / 8 + 1)
struct rm_conn_set {
	__u16 way[RM_CONN_WAYS]; /* host; 0: empty, else tag | age << 8 */
};

/* ---- rm_counters: PERCPU_ARRAY [RM_CNT_MAX] of __u64 ---------------- */
#define RM_COUNTERS(X)                                                     \
	X(RM_CNT_PASS_NOT_SERVICE, "passed-not-service")                   \
	X(RM_CNT_PASS_EXT_LIMIT, "passed-ext-limit")                       \
	X(RM_CNT_FWD_TX, "forwarded-tx")                                   \
	X(RM_CNT_FWD_REDIRECT, "forwarded-redirect")                       \
	X(RM_CNT_REDIRECT_FAILED, "redirect-failed")                       \
	X(RM_CNT_DROP_MALFORMED, "dropped-malformed")                      \
	X(RM_CNT_DROP_FRAGMENT, "dropped-fragment")                        \
	X(RM_CNT_DROP_NO_NODE, "dropped-no-node")                          \
	X(RM_CNT_ICMP_FORWARDED, "icmp-forwarded")                         \
	X(RM_CNT_CONN_HIT, "conn-hit")                                     \
	X(RM_CNT_CONN_MISS, "conn-miss")                                   \
	X(RM_CNT_CONN_INSERT, "conn-insert")                               \
	X(RM_CNT_CONN_STALE, "conn-stale")                                 \
	X(RM_CNT_CONN_INSERT_LIMITED, "conn-insert-limited")                \
	X(RM_CNT_ENCAP_IPIP, "encap-ipip")                                 \
	X(RM_CNT_ENCAP_GUE, "encap-gue")                                   \
	X(RM_CNT_FIB_NO_NEIGH, "fib-no-neigh")                             \
	X(RM_CNT_FIB_FAIL, "fib-fail")                                     \
	X(RM_CNT_ENCAP_NO_SRC, "dropped-no-encap-src")                     \
	X(RM_CNT_TOO_BIG_SENT, "icmp-too-big-sent")                        \
	X(RM_CNT_TOO_BIG_LIMITED, "icmp-too-big-limited")                  \
	X(RM_CNT_DROP_TOO_BIG, "dropped-too-big")                            \
	X(RM_CNT_KEY_ROUTED, "key-routed")                                 \
	X(RM_CNT_KEY_FB_TRUNCATED, "key-fallback-truncated")               \
	X(RM_CNT_KEY_FB_TOO_LONG, "key-fallback-too-long")                 \
	X(RM_CNT_KEY_FB_NO_KEY, "key-fallback-no-key")                     \
	X(RM_CNT_KEY_FB_MALFORMED, "key-fallback-malformed")               \
	X(RM_CNT_KEY_FB_MULTI, "key-fallback-multi-datagram")              \
	X(RM_CNT_KEY_FB_FRAGMENT, "key-fallback-fragment")                 \
	X(RM_CNT_HOPS_SENT, "hop-list-sent")                               \
	X(RM_CNT_NH_FALLBACK, "nexthop-fib-fallback")                      \
	X(RM_CNT_NH_ECMP, "nexthop-fib-ecmp")                              \
	X(RM_CNT_QUIC_CID_ROUTED, "quic-cid-routed")                       \
	X(RM_CNT_QUIC_INITIAL_HASHED, "quic-initial-hashed")               \
	X(RM_CNT_QUIC_FB_CONFIG, "quic-fallback-config")                   \
	X(RM_CNT_QUIC_FB_LENGTH, "quic-fallback-cid-length")               \
	X(RM_CNT_QUIC_FB_UNKNOWN_SID, "quic-fallback-unknown-server")      \
	X(RM_CNT_QUIC_FB_VERSION_NEG, "quic-fallback-version-negotiation") \
	X(RM_CNT_QUIC_FB_UNKNOWN_VERSION, "quic-fallback-unknown-version") \
	X(RM_CNT_QUIC_FB_TRUNCATED, "quic-fallback-truncated")             \
	X(RM_CNT_QUIC_FB_CID_TOO_LONG, "quic-fallback-cid-too-long")       \
	X(RM_CNT_QUIC_FB_NO_KEY, "quic-fallback-no-key")                   \
	X(RM_CNT_QUIC_FB_DECRYPT, "quic-fallback-decrypt-failed")
/* The conn-* counters come on top of the one outcome counter above and
 * count rm_conns events, not packets (SYNs of 5-tuple services skip the
 * table and count none of them):
 *   conn-hit             lookup found a valid entry; sent to its node
 *   conn-miss            lookup found no entry
 *   conn-stale           lookup found an entry no longer valid (node slot
 *                        freed, down or reused; UDP idle too long)
 *   conn-insert          entry written with the ring owner, after a miss
 *                        or stale lookup of a packet allowed to write
 *   conn-insert-limited  such a write refused by conn_insert_rate; the
 *                        packet still goes to the ring owner
 * A packet allowed to write (not a SYN, not an ICMP error) whose lookup
 * missed or was stale and whose ring owner is usable bumps exactly one of
 * conn-insert and conn-insert-limited (or neither, in the rare case the
 * map itself refuses the write: bpf/conntrack.h). Evictions are not
 * counted: the first non-SYN packet of every flow misses, so the miss of
 * an evicted flow looks like any other. */

/* Encapsulation (bpf/encap.h): an encapsulated packet bumps forwarded-tx
 * or forwarded-redirect and one of encap-ipip, encap-gue. Its other
 * outcomes are drops counted once each:
 *   fib-no-neigh          the next hop's neighbour is not resolved (the
 *                         control plane keeps it resolved: README)
 *   fib-fail              no route, blackhole, forwarding disabled, ...
 *   dropped-no-encap-src  no outer source configured for the family
 *   dropped-too-big       too big for the path, IPv4 without DF
 *   icmp-too-big-limited  too big, but this CPU's ICMP budget is spent
 * except icmp-too-big-sent, which answers the client (XDP_TX) with
 * fragmentation needed / packet too big.
 * The next hop comes from the node's rm_nexthops record (rm_encap.h)
 * when it is usable; these come on top of the outcome when it is not:
 *   nexthop-fib-fallback  no usable record (none yet, being rewritten,
 *                         for another address, or expired: is ringload
 *                         neighd running?): bpf_fib_lookup answered
 *   nexthop-fib-ecmp      the route has several next hops: the kernel's
 *                         bpf_fib_lookup picks one per packet, as the
 *                         stack would
 * hop-list-sent comes on top of the outcome counter too: a packet sent
 * to a GUE node with the second-chance hop list (rm_encap.h), its flow's
 * owner having changed within the handover window (rm_hops.h). */
/* The key-* counters, too, come on top of the outcome counter, once per
 * packet of a keyed service that reaches the ring: key-routed when the
 * request's key was read and hashed, else one key-fallback-* naming why
 * not (rm_key.h); that packet then goes by the flow hash. */
/* The quic-* counters likewise, once per packet of a --key quic service
 * that reaches the ring, instead of the key-* ones (rm_quic.h has the
 * rules): quic-cid-routed when its DCID named a server ID of a node of
 * the service that takes packets (to that node, whatever the ring says);
 * quic-initial-hashed for an Initial or 0-RTT packet whose DCID names
 * none (the client's own random DCID: the ring by the DCID's hash); else
 * a quic-fallback-* naming why the DCID routed nowhere: config (rotation
 * bits not the service's, or 0b111), cid-length (too short for the
 * configuration, or a self-encoded length the header contradicts),
 * unknown-server (no node holds the server ID, or it is down),
 * version-negotiation, unknown-version (a long header of a version other
 * than 1 and 2) -- all to the ring by the DCID's hash -- and truncated,
 * cid-too-long (a DCID length over 20), which go by the flow hash.
 * An encrypted service (rm_quic_crypt.h) adds no-key (its key is not
 * loaded, or the kernel has no BPF crypto) and decrypt-failed (the
 * kernel's AES refused the block), both to the ring by the DCID's hash. */

#define RM_COUNTER_ENUM(id, name) id,
enum rm_counter { RM_COUNTERS(RM_COUNTER_ENUM) RM_CNT_MAX };
#undef RM_COUNTER_ENUM

/* Every packet bumps exactly one outcome counter; these others come on
 * top of it (the comments above say when). Tests and benchmarks check
 * the one-outcome rule with it. */
static inline int rm_counter_is_outcome(int id)
{
	switch (id) {
	case RM_CNT_ICMP_FORWARDED:
	case RM_CNT_CONN_HIT:
	case RM_CNT_CONN_MISS:
	case RM_CNT_CONN_INSERT:
	case RM_CNT_CONN_STALE:
	case RM_CNT_CONN_INSERT_LIMITED:
	case RM_CNT_ENCAP_IPIP:
	case RM_CNT_ENCAP_GUE:
	case RM_CNT_KEY_ROUTED:
	case RM_CNT_KEY_FB_TRUNCATED:
	case RM_CNT_KEY_FB_TOO_LONG:
	case RM_CNT_KEY_FB_NO_KEY:
	case RM_CNT_KEY_FB_MALFORMED:
	case RM_CNT_KEY_FB_MULTI:
	case RM_CNT_KEY_FB_FRAGMENT:
	case RM_CNT_HOPS_SENT:
	case RM_CNT_NH_FALLBACK:
	case RM_CNT_NH_ECMP:
	case RM_CNT_QUIC_CID_ROUTED:
	case RM_CNT_QUIC_INITIAL_HASHED:
	case RM_CNT_QUIC_FB_CONFIG:
	case RM_CNT_QUIC_FB_LENGTH:
	case RM_CNT_QUIC_FB_UNKNOWN_SID:
	case RM_CNT_QUIC_FB_VERSION_NEG:
	case RM_CNT_QUIC_FB_UNKNOWN_VERSION:
	case RM_CNT_QUIC_FB_TRUNCATED:
	case RM_CNT_QUIC_FB_CID_TOO_LONG:
	case RM_CNT_QUIC_FB_NO_KEY:
	case RM_CNT_QUIC_FB_DECRYPT:
		return 0;
	default:
		return id >= 0 && id < RM_CNT_MAX;
	}
}

/* ---- rm_svc_stats / rm_node_stats: PERCPU_ARRAY of rm_traffic ------- */
struct rm_traffic {
	__u64 packets;
	__u64 bytes;
	/* flows newly given by the ring: a packet the connection table did
	 * not hold that is remembered there now (a 5-tuple flow's first
	 * packet after the SYN; a 3-tuple or UDP flow's first) -- the same
	 * event as conn-insert + conn-insert-limited */
	__u64 new_flows;
};

#endif /* RM_COMMON_H */
