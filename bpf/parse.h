/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Packet parsing for the data plane: a cursor over the frame and one
 * bounds-checked parser per header. Parsers fill struct rm_pkt with the
 * flow in its original (client -> VIP) direction and return RM_PARSE_*.
 *
 * Every read is preceded by two checks: against data_end, which is what
 * the verifier needs, and against cursor.left, the bytes the enclosing IP
 * header says are there, so a header that runs into Ethernet padding or
 * past a short IP length is malformed even when the frame is long enough.
 */
#ifndef RM_BPF_PARSE_H
#define RM_BPF_PARSE_H

/* BPF global functions are defined here, so one object only may include
 * this header: a second would carry its own copies, which the verifier
 * checks again and a BPF link could not merge. */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/parse.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include "icmp_defs.h"
#include <linux/icmpv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include <ringmaster/rm_common.h>

#define RM_VLAN_MAX 2	  /* 802.1ad outer + 802.1Q inner */
#define RM_IPV6_EXT_MAX 8 /* extension headers walked before giving up */

#define RM_IP_DF 0x4000
#define RM_IP_MF 0x2000
#define RM_IP_OFFSET 0x1fff
#define RM_IP6_FRAG_OFFSET 0xfff8

enum rm_parse {
	RM_PARSE_OK = 0,      /* pkt holds a TCP/UDP flow (maybe quoted) */
	RM_PARSE_NOT_SERVICE, /* nothing the balancer handles: pass */
	RM_PARSE_MALFORMED,   /* truncated or inconsistent: drop */
	RM_PARSE_EXT_LIMIT,   /* IPv6 chain longer than RM_IPV6_EXT_MAX: pass */
};

enum rm_frag {
	RM_FRAG_NONE = 0,
	RM_FRAG_FIRST, /* offset 0, more fragments: ports present */
	RM_FRAG_LATER, /* offset != 0: no ports */
};

struct rm_pkt {
	struct rm_flow flow; /* client -> VIP, ICMP quotes already reversed */
	__u8 frag;	     /* RM_FRAG_* */
	__u8 icmp;	     /* 1: an ICMP error quoting flow */
	__u8 syn;	     /* 1: TCP with SYN set and ACK clear */
	__u8 df;	     /* IPv4 DF of the received packet (encap.h) */
	__u16 l4_off;	     /* UDP: payload offset in the frame */
	__u16 l4_len;	     /* UDP: payload bytes the UDP and IP lengths
				allow (keyed services read their key there) */
	/* the received (outer) IP packet, for encapsulation (encap.h),
	 * which would otherwise parse it again; packed to the byte: rm_xdp's
	 * stack plus the keyed path's two calls sit at the verifier's 512 */
	__u16 ip_len; /* IP packet length, as its header says */
	__u8 l3_off;  /* IP header offset: Ethernet and at most RM_VLAN_MAX
			 tags before it */
	__u8 tos;     /* DSCP/ECN: IPv4 TOS or IPv6 traffic class */
};
_Static_assert(ETH_HLEN + RM_VLAN_MAX * 4 <= 255, "rm_pkt.l3_off is a byte");

struct rm_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

struct rm_ip6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset in 8-byte units << 3 | M flag */
	__be32 id;
};

/* First 8 bytes of TCP or UDP: all an ICMP error is sure to quote. */
struct rm_l4_quote {
	__be16 sport;
	__be16 dport;
	__be32 rest;
};

/* Offsets handed between parsers stay below this, which keeps every
 * packet pointer derived from them within the verifier's packet range;
 * no frame an XDP program sees in one buffer is longer. */
#define RM_MAX_HDR_OFF 0x7fff

struct rm_cursor {
	void *pos;
	void *end;  /* data_end */
	__u32 off;  /* of pos from the frame start */
	__u32 left; /* bytes the innermost IP length still allows */
};

/* A cursor at off, with left bytes allowed; false if off is out of range.
 * Offsets are 64-bit here: a 32-bit one gets zero-extended after the
 * range check, into a register the verifier knows no bound for. */
static __always_inline int rm_cursor_at(struct rm_cursor *c, struct xdp_md *ctx,
					__u64 off, __u32 left)
{
	if (off > RM_MAX_HDR_OFF)
		return 0;
	c->pos = (void *)(long)ctx->data + off;
	c->end = (void *)(long)ctx->data_end;
	c->off = off;
	c->left = left;
	return 1;
}

/* Step over len bytes; the start of them, or NULL if they are not all in
 * the frame and within the IP length. len may be a bounded variable. */
static __always_inline void *rm_take(struct rm_cursor *c, __u32 len)
{
	void *p = c->pos;

	if (len > c->left)
		return NULL;
	if (p + len > c->end)
		return NULL;
	c->pos = p + len;
	c->off += len;
	c->left -= len;
	return p;
}

#define rm_take_hdr(c, type) ((type *)rm_take(c, sizeof(type)))

static __always_inline int rm_is_ipv6_ext(__u8 nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING ||
	       nh == IPPROTO_DSTOPTS || nh == IPPROTO_FRAGMENT;
}

/* The parsers below that are not static are BPF global functions: the
 * verifier checks each once, on its own, instead of once for every path
 * that reaches it. Without that the IPv6 walk times the quoted IPv6 walk
 * times the ring search exceeds the verifier's budget. They take offsets,
 * not packet pointers, which global functions cannot receive. */

/* IPv6 extension header walk, in and out. */
struct rm_walk {
	__u32 off;  /* in: first header after the fixed one; out: upper layer */
	__u32 left; /* in/out: payload bytes from off */
	__u8 nh;    /* in: fixed header's next header; out: upper layer */
	__u8 frag;  /* out: RM_FRAG_* */
	__u8 pad[2];
};

/* Walk at most RM_IPV6_EXT_MAX extension headers. A non-first fragment
 * stops the walk: its upper layer is out of reach. */
__noinline int rm_parse_ipv6_ext(struct xdp_md *ctx, struct rm_walk *w)
{
	struct rm_cursor c;
	__u8 next;
	int i;

	if (!w || !rm_cursor_at(&c, ctx, w->off, w->left))
		return RM_PARSE_MALFORMED;
	next = w->nh;
	w->frag = RM_FRAG_NONE;
	for (i = 0; i < RM_IPV6_EXT_MAX; i++) {
		if (next == IPPROTO_FRAGMENT) {
			struct rm_ip6_frag_hdr *fh;
			__u16 off;

			fh = rm_take_hdr(&c, struct rm_ip6_frag_hdr);
			if (!fh)
				return RM_PARSE_MALFORMED;
			off = bpf_ntohs(fh->frag_off);
			next = fh->nexthdr;
			if (off & RM_IP6_FRAG_OFFSET) {
				w->frag = RM_FRAG_LATER;
				break;
			}
			/* M clear at offset 0 is an atomic fragment
			 * (RFC 6946): the whole packet, ports and all */
			if (off & 1)
				w->frag = RM_FRAG_FIRST;
		} else if (rm_is_ipv6_ext(next)) {
			struct ipv6_opt_hdr *oh;

			/* hop-by-hop, routing, destination options:
			 * (hdrlen + 1) * 8 bytes, the first two next/len */
			oh = rm_take_hdr(&c, struct ipv6_opt_hdr);
			if (!oh)
				return RM_PARSE_MALFORMED;
			next = oh->nexthdr;
			if (!rm_take(&c, (__u32)oh->hdrlen * 8 + 6))
				return RM_PARSE_MALFORMED;
		} else {
			break;
		}
	}
	if (w->frag != RM_FRAG_LATER && rm_is_ipv6_ext(next))
		return RM_PARSE_EXT_LIMIT;
	w->off = c.off;
	w->left = c.left;
	w->nh = next;
	return RM_PARSE_OK;
}

static __always_inline void rm_copy6(__be32 *dst, const struct in6_addr *a)
{
	dst[0] = a->in6_u.u6_addr32[0];
	dst[1] = a->in6_u.u6_addr32[1];
	dst[2] = a->in6_u.u6_addr32[2];
	dst[3] = a->in6_u.u6_addr32[3];
}

/* IPv4 header with options; the cursor ends past it. */
static __always_inline struct iphdr *rm_parse_ipv4_hdr(struct rm_cursor *c)
{
	struct iphdr *iph = rm_take_hdr(c, struct iphdr);

	if (!iph || iph->version != 4 || iph->ihl < 5)
		return NULL;
	/* options: 0..40 bytes */
	if (!rm_take(c, ((__u32)iph->ihl - 5) * 4))
		return NULL;
	return iph;
}

static __always_inline __u8 rm_ipv4_frag(const struct iphdr *iph)
{
	__u16 off = bpf_ntohs(iph->frag_off);

	if (off & RM_IP_OFFSET)
		return RM_FRAG_LATER;
	if (off & RM_IP_MF)
		return RM_FRAG_FIRST;
	return RM_FRAG_NONE;
}

/* The quote of an ICMP error at off: the IP header of a packet the VIP
 * sent to the client and the first 8 bytes of its L4 header. The flow is
 * stored reversed, as the client sends it, so it hashes to the same owner
 * as the client's own packets. */
__noinline int rm_parse_quote(struct xdp_md *ctx, __u64 off, __u32 left, int v6,
			      struct rm_pkt *pkt)
{
	struct rm_cursor c;
	struct rm_l4_quote *q;
	__u8 proto;

	if (!pkt || !rm_cursor_at(&c, ctx, off, left))
		return RM_PARSE_MALFORMED;
	if (v6) {
		struct rm_walk w = {};
		struct ipv6hdr *ip6h;
		int rc;

		ip6h = rm_take_hdr(&c, struct ipv6hdr);
		if (!ip6h || ip6h->version != 6)
			return RM_PARSE_MALFORMED;
		rm_copy6(pkt->flow.src, &ip6h->daddr);
		rm_copy6(pkt->flow.dst, &ip6h->saddr);
		w.off = c.off;
		w.left = c.left;
		w.nh = ip6h->nexthdr;
		rc = rm_parse_ipv6_ext(ctx, &w);
		if (rc != RM_PARSE_OK)
			return rc;
		if (!rm_cursor_at(&c, ctx, w.off, w.left))
			return RM_PARSE_MALFORMED;
		proto = w.nh;
		pkt->frag = w.frag;
	} else {
		struct iphdr *iph = rm_parse_ipv4_hdr(&c);

		if (!iph)
			return RM_PARSE_MALFORMED;
		proto = iph->protocol;
		pkt->frag = rm_ipv4_frag(iph);
		pkt->flow.src[0] = iph->daddr;
		pkt->flow.dst[0] = iph->saddr;
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return RM_PARSE_NOT_SERVICE;
	pkt->flow.proto = proto;
	pkt->icmp = 1;
	if (pkt->frag == RM_FRAG_LATER)
		return RM_PARSE_OK;
	/* a quoted first fragment carries its ports: route it as a whole
	 * packet, whichever hash mode the service uses */
	pkt->frag = RM_FRAG_NONE;
	q = rm_take_hdr(&c, struct rm_l4_quote);
	if (!q)
		return RM_PARSE_MALFORMED;
	pkt->flow.sport = q->dport;
	pkt->flow.dport = q->sport;
	return RM_PARSE_OK;
}

/* ICMP errors about a flow of ours: destination unreachable (with
 * fragmentation needed / packet too big, what PMTU discovery needs) and
 * time exceeded. Everything else ICMP is the host's business. */
static __always_inline int
rm_parse_icmp(struct xdp_md *ctx, struct rm_cursor *c, struct rm_pkt *pkt)
{
	int v6 = pkt->flow.family == RM_FAMILY_V6;
	/* ICMPv4 and ICMPv6 headers: type, code, checksum, 4 more bytes */
	struct icmp6hdr *ih = rm_take_hdr(c, struct icmp6hdr);
	__u8 type;

	if (!ih)
		return RM_PARSE_MALFORMED;
	type = ih->icmp6_type;
	if (v6) {
		if (type != ICMPV6_DEST_UNREACH && type != ICMPV6_PKT_TOOBIG &&
		    type != ICMPV6_TIME_EXCEED)
			return RM_PARSE_NOT_SERVICE;
	} else {
		if (type != RM_ICMP_DEST_UNREACH && type != RM_ICMP_TIME_EXCEEDED)
			return RM_PARSE_NOT_SERVICE;
	}
	return rm_parse_quote(ctx, c->off, c->left, v6, pkt);
}

/* Upper layer of the outer packet. pkt->frag is already set. */
static __always_inline int rm_parse_l4(struct xdp_md *ctx, struct rm_cursor *c,
				       struct rm_pkt *pkt, __u8 proto)
{
	struct rm_flow *f = &pkt->flow;

	if (proto == IPPROTO_TCP) {
		struct tcphdr *th;

		f->proto = proto;
		if (pkt->frag == RM_FRAG_LATER)
			return RM_PARSE_OK;
		th = rm_take_hdr(c, struct tcphdr);
		if (!th || th->doff < 5)
			return RM_PARSE_MALFORMED;
		f->sport = th->source;
		f->dport = th->dest;
		/* a connection's first packet: the connection table leaves
		 * it to the ring (conntrack.h) */
		pkt->syn = th->syn && !th->ack;
		return RM_PARSE_OK;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *uh;
		__u32 ulen;

		f->proto = proto;
		if (pkt->frag == RM_FRAG_LATER)
			return RM_PARSE_OK;
		uh = rm_take_hdr(c, struct udphdr);
		if (!uh)
			return RM_PARSE_MALFORMED;
		f->sport = uh->source;
		f->dport = uh->dest;
		ulen = bpf_ntohs(uh->len);
		pkt->l4_off = c->off;
		pkt->l4_len = ulen < sizeof(*uh) ? 0
			      : ulen - sizeof(*uh) < c->left ? ulen - sizeof(*uh)
							      : c->left;
		return RM_PARSE_OK;
	}
	/* a fragmented ICMP error is not worth reassembling in XDP */
	if (pkt->frag != RM_FRAG_NONE)
		return RM_PARSE_NOT_SERVICE;
	if ((proto == IPPROTO_ICMP && f->family == RM_FAMILY_V4) ||
	    (proto == IPPROTO_ICMPV6 && f->family == RM_FAMILY_V6))
		return rm_parse_icmp(ctx, c, pkt);
	return RM_PARSE_NOT_SERVICE;
}

static __always_inline int
rm_parse_ipv4(struct xdp_md *ctx, struct rm_cursor *c, struct rm_pkt *pkt)
{
	struct iphdr *iph;
	__u32 avail = c->left, hlen, tot;

	pkt->l3_off = c->off;
	iph = rm_parse_ipv4_hdr(c);
	if (!iph)
		return RM_PARSE_MALFORMED;
	hlen = (__u32)iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	/* the frame may be longer (Ethernet padding), never shorter */
	if (tot < hlen || tot > avail)
		return RM_PARSE_MALFORMED;
	c->left = tot - hlen;
	pkt->ip_len = tot;
	pkt->tos = iph->tos;
	pkt->df = !!(iph->frag_off & bpf_htons(RM_IP_DF));

	pkt->flow.family = RM_FAMILY_V4;
	pkt->flow.src[0] = iph->saddr;
	pkt->flow.dst[0] = iph->daddr;
	pkt->frag = rm_ipv4_frag(iph);
	return rm_parse_l4(ctx, c, pkt, iph->protocol);
}

static __always_inline int
rm_parse_ipv6(struct xdp_md *ctx, struct rm_cursor *c, struct rm_pkt *pkt)
{
	struct rm_walk w = {};
	struct ipv6hdr *ip6h;
	__u32 plen;
	int rc;

	pkt->l3_off = c->off;
	ip6h = rm_take_hdr(c, struct ipv6hdr);
	if (!ip6h || ip6h->version != 6)
		return RM_PARSE_MALFORMED;
	/* a zero length would mean a jumbogram, which needs an MTU no
	 * Ethernet has: it is taken as an empty payload */
	plen = bpf_ntohs(ip6h->payload_len);
	if (plen > c->left)
		return RM_PARSE_MALFORMED;
	pkt->ip_len = plen + sizeof(*ip6h);
	pkt->tos = ip6h->priority << 4 | ip6h->flow_lbl[0] >> 4;

	pkt->flow.family = RM_FAMILY_V6;
	rm_copy6(pkt->flow.src, &ip6h->saddr);
	rm_copy6(pkt->flow.dst, &ip6h->daddr);
	w.off = c->off;
	w.left = plen;
	w.nh = ip6h->nexthdr;
	rc = rm_parse_ipv6_ext(ctx, &w);
	if (rc != RM_PARSE_OK)
		return rc;
	if (!rm_cursor_at(c, ctx, w.off, w.left))
		return RM_PARSE_MALFORMED;
	pkt->frag = w.frag;
	return rm_parse_l4(ctx, c, pkt, w.nh);
}

/* Ethernet, up to RM_VLAN_MAX tags, then IP; fills pkt, returns
 * RM_PARSE_*. VLAN tags stay in the frame: forwarding is L2 DSR on the
 * same segment. */
__noinline int rm_parse(struct xdp_md *ctx, struct rm_pkt *pkt)
{
	struct rm_cursor c;
	struct ethhdr *eth;
	__be16 proto;
	int i;

	if (!pkt || !rm_cursor_at(&c, ctx, 0, ctx->data_end - ctx->data))
		return RM_PARSE_MALFORMED;
	eth = rm_take_hdr(&c, struct ethhdr);
	if (!eth)
		return RM_PARSE_MALFORMED;
	proto = eth->h_proto;
	for (i = 0; i < RM_VLAN_MAX; i++) {
		struct rm_vlan_hdr *vh;

		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		vh = rm_take_hdr(&c, struct rm_vlan_hdr);
		if (!vh)
			return RM_PARSE_MALFORMED;
		proto = vh->encap_proto;
	}
	if (proto == bpf_htons(ETH_P_IP))
		return rm_parse_ipv4(ctx, &c, pkt);
	if (proto == bpf_htons(ETH_P_IPV6))
		return rm_parse_ipv6(ctx, &c, pkt);
	return RM_PARSE_NOT_SERVICE;
}

#endif /* RM_BPF_PARSE_H */
