/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Second chance, the node's question: does this host hold the connection
 * of the inner packet? A socket of the inner tuple in this network
 * namespace (bpf_skc_lookup_tcp) that is established, closing, in
 * time-wait or a request (SYN received) says yes. A listener alone says
 * no for a packet that is not a SYN, unless the packet is the ACK that
 * completes a SYN-cookie handshake (bpf_tcp_check_syncookie): the
 * listener then makes the connection from the cookie.
 */
#ifndef RM_BPF_DECAP_SOCK_H
#define RM_BPF_DECAP_SOCK_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "decap_maps.h"

#define RM_TCP_LISTEN 10 /* include/net/tcp_states.h, not UAPI */
#define RM_TCP_HDR_MAX 60

/* What the socket check found. */
enum rm_sc_local {
	RM_SC_NOT_LOCAL = 0, /* no socket, or a listener only */
	RM_SC_SOCKET,	     /* a connection's socket */
	RM_SC_COOKIE,	     /* a listener and a valid SYN cookie */
	RM_SC_SYN,	     /* a SYN: a new connection stays here */
	RM_SC_NOT_TCP,	     /* no TCP ports to look up: UDP, ICMP, fragment */
	RM_SC_MALFORMED,     /* TCP header cut short */
};

/* A listener's verdict on an ACK: 1 when it completes a SYN-cookie
 * handshake. The helper wants the IP and TCP headers; they are copied to
 * the stack, as the TCP header's length is only known at run time. */
static __always_inline int rm_sc_cookie(struct xdp_md *ctx, struct bpf_sock *sk,
					__u32 l3, __u32 l4, __u32 thlen, int v6)
{
	__u8 ip[sizeof(struct ipv6hdr)], th[RM_TCP_HDR_MAX];
	__u32 iplen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);

	if (thlen < sizeof(struct tcphdr) || thlen > RM_TCP_HDR_MAX)
		return 0;
	if (bpf_xdp_load_bytes(ctx, l3, ip, iplen) ||
	    bpf_xdp_load_bytes(ctx, l4, th, thlen))
		return 0;
	return !bpf_tcp_check_syncookie(sk, ip, iplen, (struct tcphdr *)th,
					thlen);
}

/* Look at the inner packet at frame offset l3 (ilen bytes, already
 * checked against the frame), of version ver. */
static __always_inline enum rm_sc_local
rm_sc_local(struct xdp_md *ctx, __u32 l3, __u32 ilen, __u8 ver)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	struct tcphdr *th;
	__u32 tlen, l4, thlen;
	enum rm_sc_local r;

	if (ver == 4) {
		struct iphdr *ih = data + l3;

		if ((void *)(ih + 1) > end)
			return RM_SC_MALFORMED;
		if (ih->protocol != IPPROTO_TCP ||
		    ih->frag_off & bpf_htons(0x3fff))
			return RM_SC_NOT_TCP;
		l4 = ih->ihl * 4;
		t.ipv4.saddr = ih->saddr;
		t.ipv4.daddr = ih->daddr;
		tlen = sizeof(t.ipv4);
	} else {
		struct ipv6hdr *ih = data + l3;

		if ((void *)(ih + 1) > end)
			return RM_SC_MALFORMED;
		/* extension headers: not looked through, delivered here */
		if (ih->nexthdr != IPPROTO_TCP)
			return RM_SC_NOT_TCP;
		l4 = sizeof(*ih);
		__builtin_memcpy(t.ipv6.saddr, &ih->saddr, 16);
		__builtin_memcpy(t.ipv6.daddr, &ih->daddr, 16);
		tlen = sizeof(t.ipv6);
	}
	if (l4 + sizeof(*th) > ilen)
		return RM_SC_MALFORMED;
	th = data + l3 + l4;
	if ((void *)(th + 1) > end)
		return RM_SC_MALFORMED;
	if (th->syn)
		return RM_SC_SYN;
	thlen = th->doff * 4;
	if (thlen < sizeof(*th) || l4 + thlen > ilen)
		return RM_SC_MALFORMED;
	if (ver == 4) {
		t.ipv4.sport = th->source;
		t.ipv4.dport = th->dest;
	} else {
		t.ipv6.sport = th->source;
		t.ipv6.dport = th->dest;
	}
	sk = bpf_skc_lookup_tcp(ctx, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return RM_SC_NOT_LOCAL;
	if (sk->state != RM_TCP_LISTEN)
		r = RM_SC_SOCKET;
	else if (th->ack && !th->rst &&
		 rm_sc_cookie(ctx, sk, l3, l3 + l4, thlen, ver == 6))
		r = RM_SC_COOKIE;
	else
		r = RM_SC_NOT_LOCAL;
	bpf_sk_release(sk);
	return r;
}

#endif /* RM_BPF_DECAP_SOCK_H */
