/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test packet builder for the data-plane suite: a packet is described by
 * a struct dp_spec (the flow as the client sends it, plus encapsulation,
 * fragmentation, ICMP wrapping and deliberate damage) and built into a
 * byte buffer that also records how much of it the parser needs.
 */
#ifndef DP_PACKET_H
#define DP_PACKET_H

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <netinet/in.h>

#include <ringmaster/rm_common.h>

#define DP_PKT_MAX 4096
#define RM_TEST_VLAN_MAX 2 /* tags the data plane walks */

/* Fixed MACs of the frames the director receives. */
static const __u8 dp_mac_director[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0xfe};
static const __u8 dp_mac_router[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0xfd};

enum dp_kind {
	DP_IP = 0,   /* TCP/UDP, or fragments of it */
	DP_ARP,	     /* ARP request, not IP at all */
	DP_ICMP_ERR, /* ICMP error quoting the flow's reverse (VIP -> client) */
	DP_ICMP_ECHO,	/* ICMP echo request from src to dst */
	DP_OTHER_PROTO, /* IP with protocol other_proto and no L4 parse */
};

enum dp_frag {
	DP_FRAG_NONE = 0,
	DP_FRAG_FIRST, /* offset 0, more fragments */
	DP_FRAG_LATER, /* offset 1480, last fragment: no L4 header */
};

/* Damage applied after the packet is built. */
enum dp_mangle {
	DP_OK = 0,
	DP_BAD_IHL,	 /* IPv4 IHL 4 */
	DP_TOTLEN_BIG,	 /* IPv4 total length 100 more than the frame */
	DP_BAD_VERSION,	 /* IPv4 ethertype with version 6 in the header */
	DP_TCP_DOFF,	 /* TCP data offset 4 */
	DP_PLEN_BIG,	 /* IPv6 payload length 100 more than the frame */
	DP_EXT_OVERLONG, /* first IPv6 ext header claims 256 bytes */
	DP_VLAN_CUT,	 /* frame ends 2 bytes into the (first) VLAN tag */
};

struct dp_spec {
	enum dp_kind kind;
	int family;	       /* 4 or 6 */
	__u8 proto;	       /* IPPROTO_TCP / IPPROTO_UDP of the flow */
	const char *src, *dst; /* client, VIP */
	__u16 sport, dport;    /* host order */
	int vlans;	       /* 0..3 tags */
	int ip_opts;	       /* IPv4 option words (IHL = 5 + ip_opts) */
	int ext;	       /* IPv6 extension headers before L4 */
	enum dp_frag frag;
	__u8 icmp_type, icmp_code; /* DP_ICMP_ERR */
	int quote;	  /* DP_ICMP_ERR: L4 bytes quoted (0 = 8), -1 = none */
	__u8 inner_proto; /* DP_ICMP_ERR: quoted protocol if not proto */
	__u8 other_proto; /* DP_OTHER_PROTO */
	int payload;	  /* bytes after the L4 header */
	int l4_short;	  /* bytes cut off the L4 header (tot_len follows) */
	int pad_to;	  /* Ethernet padding up to this frame length */
	enum dp_mangle mangle;
	__u8 tcp_flags; /* TCP flags byte; 0 = DP_TCP_SYN */
};

#define DP_TCP_SYN 0x02
#define DP_TCP_ACK 0x10
#define DP_TCP_PSH 0x08

struct dp_pkt {
	__u8 b[DP_PKT_MAX];
	size_t len;
	/* What the parser needs: L2 headers it walks (Ethernet + VLAN tags
	 * up to two), and for IP the end of the outer IP packet as its
	 * length field says (0: not IP). A frame cut anywhere short of
	 * these must be dropped as malformed, never forwarded. */
	size_t l2_len;
	size_t ip_end;
	/* internal */
	size_t ip_off[2]; /* outer, quoted IP header */
	int n_ip;
	size_t nh_off; /* byte to patch with the next header's protocol */
};

static inline void dp_addr(int family, const char *s, __u8 *out)
{
	if (inet_pton(family == 6 ? AF_INET6 : AF_INET, s, out) != 1) {
		fprintf(stderr, "dp_addr: bad address %s\n", s);
		abort();
	}
}

static inline __u8 *dp_put(struct dp_pkt *p, size_t n)
{
	__u8 *at = p->b + p->len;

	if (p->len + n > sizeof(p->b)) {
		fprintf(stderr, "dp_put: packet too long\n");
		abort();
	}
	memset(at, 0, n);
	p->len += n;
	return at;
}

static inline void dp_put16(__u8 *at, __u16 v)
{
	at[0] = v >> 8;
	at[1] = v & 0xff;
}

static inline void dp_eth(struct dp_pkt *p, int vlans, __u16 ethertype)
{
	__u8 *h = dp_put(p, ETH_HLEN);
	int i;

	memcpy(h, dp_mac_director, ETH_ALEN);
	memcpy(h + ETH_ALEN, dp_mac_router, ETH_ALEN);
	p->l2_len = ETH_HLEN;
	if (!vlans) {
		dp_put16(h + 12, ethertype);
		return;
	}
	/* outermost 802.1ad when stacked, then 802.1Q */
	dp_put16(h + 12, vlans > 1 ? ETH_P_8021AD : ETH_P_8021Q);
	for (i = 0; i < vlans; i++) {
		__u8 *t = dp_put(p, 4);

		dp_put16(t, 100 + i);
		dp_put16(t + 2, i + 1 < vlans ? ETH_P_8021Q : ethertype);
		if (i < RM_TEST_VLAN_MAX)
			p->l2_len += 4;
	}
}

static inline void dp_ipv4(struct dp_pkt *p, const char *src, const char *dst,
			   int opts, enum dp_frag frag)
{
	size_t off = p->len;
	__u8 *h = dp_put(p, 20 + 4 * opts);
	int i;

	h[0] = 0x40 | (5 + opts);
	dp_put16(h + 4, 0x1234);
	if (frag == DP_FRAG_FIRST)
		dp_put16(h + 6, 0x2000);
	else if (frag == DP_FRAG_LATER)
		dp_put16(h + 6, 1480 / 8);
	else
		dp_put16(h + 6, 0x4000); /* DF: not a fragment */
	h[8] = 64;
	dp_addr(4, src, h + 12);
	dp_addr(4, dst, h + 16);
	for (i = 0; i < 4 * opts; i++)
		h[20 + i] = 1; /* NOP options */
	p->ip_off[p->n_ip++] = off;
	p->nh_off = off + 9;
}

static inline void dp_ipv6(struct dp_pkt *p, const char *src, const char *dst)
{
	size_t off = p->len;
	__u8 *h = dp_put(p, 40);

	h[0] = 0x60;
	h[7] = 64;
	dp_addr(6, src, h + 8);
	dp_addr(6, dst, h + 24);
	p->ip_off[p->n_ip++] = off;
	p->nh_off = off + 6;
}

static inline void dp_next(struct dp_pkt *p, __u8 proto)
{
	p->b[p->nh_off] = proto;
}

/* Hop-by-hop first, then destination options: 8 bytes each, PadN. */
static inline void dp_ext6(struct dp_pkt *p, int first)
{
	size_t off = p->len;
	__u8 *h;

	dp_next(p, first ? IPPROTO_HOPOPTS : IPPROTO_DSTOPTS);
	h = dp_put(p, 8);
	h[2] = 1; /* PadN, 4 bytes of padding */
	h[3] = 4;
	p->nh_off = off;
}

static inline void dp_frag6(struct dp_pkt *p, enum dp_frag frag)
{
	size_t off = p->len;
	__u8 *h;

	dp_next(p, IPPROTO_FRAGMENT);
	h = dp_put(p, 8);
	dp_put16(h + 2, frag == DP_FRAG_LATER ? (1480 / 8) << 3 : 1);
	h[7] = 0x42;
	p->nh_off = off;
}

static inline void dp_l4(struct dp_pkt *p, __u8 proto, __u16 sport, __u16 dport,
			 __u8 tcp_flags)
{
	__u8 *h;

	dp_next(p, proto);
	if (proto == IPPROTO_TCP) {
		h = dp_put(p, 20);
		h[12] = 5 << 4;
		h[13] = tcp_flags ? tcp_flags : DP_TCP_SYN;
		dp_put16(h + 14, 65535);
	} else {
		h = dp_put(p, 8);
		dp_put16(h + 4, 8);
	}
	dp_put16(h, sport);
	dp_put16(h + 2, dport);
}

static inline void dp_payload(struct dp_pkt *p, int n)
{
	__u8 *d = dp_put(p, n);
	int i;

	for (i = 0; i < n; i++)
		d[i] = (__u8)(i * 7 + 3);
}

static inline __u16 dp_csum(const __u8 *d, size_t n)
{
	__u32 s = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (d[i] << 8) | d[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* The outer header of an encapsulated packet as the director must write
 * it (bpf/encap.h): IPv4 IHL 5, tos, ID 0, no DF, TTL 64, checksum; or
 * IPv6 with traffic class tos, flow label 0, hop limit 64; then for GUE
 * (port != 0) UDP from sport (network order) to port with checksum 0.
 * Written at out; returns its length. */
static inline size_t dp_outer(__u8 *out, int family, const char *src,
			      const char *dst, __u8 proto, __u8 tos,
			      size_t inner_len, __u16 sport_be, __u16 port)
{
	size_t n, udp = port ? 8 : 0;

	if (family == 6) {
		memset(out, 0, 40);
		out[0] = 0x60 | tos >> 4;
		out[1] = (tos & 0xf) << 4;
		dp_put16(out + 4, udp + inner_len);
		out[6] = port ? IPPROTO_UDP : proto;
		out[7] = 64;
		dp_addr(6, src, out + 8);
		dp_addr(6, dst, out + 24);
		n = 40;
	} else {
		memset(out, 0, 20);
		out[0] = 0x45;
		out[1] = tos;
		dp_put16(out + 2, 20 + udp + inner_len);
		out[8] = 64;
		out[9] = port ? IPPROTO_UDP : proto;
		dp_addr(4, src, out + 12);
		dp_addr(4, dst, out + 16);
		dp_put16(out + 10, dp_csum(out, 20));
		n = 20;
	}
	if (port) {
		memcpy(out + n, &sport_be, 2);
		dp_put16(out + n + 2, port);
		dp_put16(out + n + 4, 8 + inner_len);
		dp_put16(out + n + 6, 0);
		n += 8;
	}
	return n;
}

/* Set IP lengths: the outer packet ends at the frame end; a quoted one
 * claims 1000 bytes more than the quote, as real quotes are cut short. */
static inline void dp_lengths(struct dp_pkt *p)
{
	int i;

	for (i = p->n_ip - 1; i >= 0; i--) {
		__u8 *h = p->b + p->ip_off[i];
		size_t n = p->len - p->ip_off[i] + (i ? 1000 : 0);

		if ((h[0] >> 4) == 4) {
			dp_put16(h + 2, n);
			dp_put16(h + 10, 0);
			dp_put16(h + 10, dp_csum(h, (h[0] & 0xf) * 4));
		} else {
			dp_put16(h + 4, n - 40);
		}
	}
	p->ip_end = p->n_ip ? p->len : 0;
}

static inline void dp_build(const struct dp_spec *s, struct dp_pkt *p)
{
	int v6 = s->family == 6, i;

	memset(p, 0, sizeof(*p));
	if (s->kind == DP_ARP) {
		__u8 *a;

		dp_eth(p, s->vlans, ETH_P_ARP);
		a = dp_put(p, 28);
		dp_put16(a, 1);
		dp_put16(a + 2, ETH_P_IP);
		a[4] = 6;
		a[5] = 4;
		dp_put16(a + 6, 1);
		memcpy(a + 8, dp_mac_router, ETH_ALEN);
		dp_addr(4, s->src, a + 14);
		dp_addr(4, s->dst, a + 24);
		goto done;
	}
	dp_eth(p, s->vlans, v6 ? ETH_P_IPV6 : ETH_P_IP);
	if (s->mangle == DP_VLAN_CUT) {
		p->len = ETH_HLEN + 2;
		p->ip_end = p->len;
		return;
	}

	if (s->kind == DP_ICMP_ERR || s->kind == DP_ICMP_ECHO) {
		/* the error comes from a router on the path to the client */
		const char *from = v6 ? "2001:db8:ffff::1" : "192.0.2.254";
		int quote = s->quote ? s->quote : 8;
		__u8 inner = s->inner_proto ? s->inner_proto : s->proto;
		__u8 *ih;

		if (v6)
			dp_ipv6(p, s->kind == DP_ICMP_ERR ? from : s->src,
				s->dst);
		else
			dp_ipv4(p, s->kind == DP_ICMP_ERR ? from : s->src,
				s->dst, s->ip_opts, DP_FRAG_NONE);
		dp_next(p, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
		ih = dp_put(p, 8);
		if (s->kind == DP_ICMP_ECHO) {
			ih[0] = v6 ? 128 : 8;
			dp_payload(p, 56);
			goto lengths;
		}
		ih[0] = s->icmp_type;
		ih[1] = s->icmp_code;
		if (v6 && s->icmp_type == 2)
			dp_put16(ih + 6, 1280); /* MTU, low half */
		else if (!v6 && s->icmp_code == 4)
			dp_put16(ih + 6, 1400); /* next-hop MTU */
		/* the quoted packet went VIP -> client */
		if (v6) {
			dp_ipv6(p, s->dst, s->src);
			for (i = 0; i < s->ext; i++)
				dp_ext6(p, i == 0);
			if (s->frag)
				dp_frag6(p, s->frag);
		} else {
			dp_ipv4(p, s->dst, s->src, 0, s->frag);
		}
		if (quote > 0) {
			size_t at = p->len;

			if (s->frag == DP_FRAG_LATER) {
				dp_next(p, inner);
				dp_payload(p, 16);
			} else {
				dp_l4(p, inner, s->dport, s->sport, 0);
				dp_payload(p, 32);
			}
			/* quote only `quote` bytes past the inner headers */
			p->len = at + quote;
		} else {
			dp_next(p, inner);
		}
		goto lengths;
	}

	if (v6) {
		dp_ipv6(p, s->src, s->dst);
		for (i = 0; i < s->ext; i++)
			dp_ext6(p, i == 0);
		if (s->frag)
			dp_frag6(p, s->frag);
	} else {
		dp_ipv4(p, s->src, s->dst, s->ip_opts, s->frag);
	}
	if (s->kind == DP_OTHER_PROTO) {
		dp_next(p, s->other_proto);
		dp_payload(p, 24);
	} else if (s->frag == DP_FRAG_LATER) {
		dp_next(p, s->proto);
		dp_payload(p, s->payload ? s->payload : 64);
	} else {
		dp_l4(p, s->proto, s->sport, s->dport, s->tcp_flags);
		dp_payload(p, s->payload);
		p->len -= s->l4_short;
	}

lengths:
	dp_lengths(p);
	if (s->vlans > RM_TEST_VLAN_MAX)
		p->ip_end = 0; /* behind a tag the parser does not walk */
	switch (s->mangle) {
	case DP_BAD_IHL:
		p->b[p->ip_off[0]] = 0x44;
		break;
	case DP_TOTLEN_BIG:
		dp_put16(p->b + p->ip_off[0] + 2, p->len - p->ip_off[0] + 100);
		p->ip_end = p->len + 100;
		break;
	case DP_BAD_VERSION:
		p->b[p->ip_off[0]] = 0x65;
		break;
	case DP_TCP_DOFF:
		p->b[p->ip_off[0] + 20 + 4 * s->ip_opts + 12] = 4 << 4;
		break;
	case DP_PLEN_BIG:
		dp_put16(p->b + p->ip_off[0] + 4, p->len - p->ip_off[0] + 60);
		p->ip_end = p->len + 100;
		break;
	case DP_EXT_OVERLONG:
		p->b[p->ip_off[0] + 40 + 1] = 31;
		break;
	default:
		break;
	}
done:
	if (s->pad_to && p->len < (size_t)s->pad_to)
		dp_put(p, s->pad_to - p->len);
}

/* The flow the data plane must hash for s: the client's direction, ports
 * zeroed for a 3-tuple service. */
static inline void dp_flow(const struct dp_spec *s, int three_tuple,
			   struct rm_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->family = s->family == 6 ? RM_FAMILY_V6 : RM_FAMILY_V4;
	f->proto = s->proto;
	dp_addr(s->family, s->src, (__u8 *)f->src);
	dp_addr(s->family, s->dst, (__u8 *)f->dst);
	if (!three_tuple) {
		f->sport = htons(s->sport);
		f->dport = htons(s->dport);
	}
}

static inline void dp_flow_str(const struct rm_flow *f, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int af = f->family == RM_FAMILY_V6 ? AF_INET6 : AF_INET;

	inet_ntop(af, f->src, a, sizeof(a));
	inet_ntop(af, f->dst, b, sizeof(b));
	snprintf(buf, n, "%s %s:%u -> %s:%u",
		 f->proto == IPPROTO_TCP ? "tcp" : "udp", a, ntohs(f->sport), b,
		 ntohs(f->dport));
}

#endif /* DP_PACKET_H */
