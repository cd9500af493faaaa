// SPDX-License-Identifier: GPL-2.0
/*
 * Second chance on the node (bpf/decap_{hops,sock,fwd}.h) through
 * bpf_prog_test_run_opts, with real sockets and a real FIB: the test makes
 * its own network namespace (unshare) holding what a node holds, the VIP
 * and a client address on lo, a listener on the VIP, an established
 * connection and one in time-wait over loopback, and an interface (sc0)
 * towards the other nodes with their neighbour entries.
 *
 *   table        GUE variant 0 with a hop list: a connection here (any
 *                state but listen) delivered, exact bytes; no socket or a
 *                listener only: forwarded with the exact rewritten outer
 *                header and hop index (redirect, or XDP_TX out of the
 *                ingress); SYN, UDP, exhausted list delivered; FIB
 *                failures delivered, counted; malformed and overlong
 *                lists, a count past the bound, next past count, a hop
 *                outside --allow-hop, a loop, TTL 1: dropped, counted,
 *                frame untouched
 *   request      a handshake in progress (a request socket): its ACK is
 *                delivered
 *   syncookie    a listener with a real SYN cookie outstanding (IPv4 and
 *                IPv6): the ACK completing it is delivered, one with a
 *                stale cookie is forwarded
 *   forwarding   forwarding off on the ingress interface: delivered, counted
 *   truncation   every hop-list frame cut at every length: never forwarded,
 *                never decapsulated
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <net/if.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "dc_fixture.h"
#include "dc_sockets.h"

#define HOP4 "198.19.0.6" /* the next node, neighbour on sc0 */
#define HOP6 "2001:db8:100::6"
#define NONEIGH4 "198.19.0.7" /* on sc0's subnet, never resolved */
#define NONEIGH6 "2001:db8:100::7"
#define NOROUTE4 "198.19.9.1" /* allowed as a hop, no route */
#define NOROUTE6 "2001:db8:100:9::1"
#define DENIED4 "198.18.77.1" /* outside --allow-hop */
#define DENIED6 "2001:db8:77::1"
#define OTHER4 "198.19.0.9" /* another address of this host */
#define OTHER6 "2001:db8:100::9"
#define EST_PORT 40000	  /* client port of the established connection */
#define TW_PORT 40002	  /* of the connection in time-wait */
#define REQ_CLIENT4 "198.18.201.7" /* its SYN-ACKs leave by sc0, unanswered */
#define REQ_PORT 40004

static const __u8 mac_sc0[6] = {0x02, 0, 0, 0, 0, 0x05};
static const __u8 mac_hop[6] = {0x02, 0, 0, 0, 0, 0x06};

static const char *const netns_setup[] = {
    "ip link set lo up",
    "ip link add sc0 address 02:00:00:00:00:05 type veth peer name sc1",
    "ip link set sc0 up && ip link set sc1 up",
    "ip addr add " NODE4 "/24 dev sc0 && ip addr add " NODE6
    "/64 dev sc0 nodad",
    "ip addr add " VIP4 "/32 dev lo && ip addr add " CLIENT4 "/32 dev lo",
    "ip addr add " VIP6 "/128 dev lo nodad && ip addr add " CLIENT6
    "/128 dev lo nodad",
    "ip neigh add " HOP4 " lladdr 02:00:00:00:00:06 dev sc0 nud permanent",
    "ip neigh add " HOP6 " lladdr 02:00:00:00:00:06 dev sc0 nud permanent",
    /* to sc1, whose MAC it is not: dropped there, neither reset nor
     * ICMP, so a handshake from it stays half-open (a request socket) */
    "ip route add 198.18.201.0/24 via " HOP4,
    /* bpf_fib_lookup answers only where forwarding is on */
    "sysctl -qw net.ipv4.conf.all.forwarding=1 "
    "net.ipv6.conf.all.forwarding=1",
};

static int if_sc0;
static int fds[16], n_fds;

static int keep_fd(int fd)
{
	if (fd >= 0 && n_fds < (int)(sizeof(fds) / sizeof(*fds)))
		fds[n_fds++] = fd;
	return fd;
}

/* The node's sockets: listeners on the VIPs, an established connection
 * from each client address, one in time-wait (the server closed first). */
static int sockets_setup(void)
{
	struct timespec pause = {0, 10 * 1000 * 1000};
	int l4, l6, srv, c, i;

	l4 = keep_fd(tcp_bound(4, VIP4, VIP_PORT));
	l6 = keep_fd(tcp_bound(6, VIP6, VIP_PORT));
	if (l4 < 0 || l6 < 0 || listen(l4, 16) || listen(l6, 16))
		return -1;
	if (keep_fd(tcp_connect(4, l4, EST_PORT, &srv)) < 0 || keep_fd(srv) < 0)
		return -1;
	if (keep_fd(tcp_connect(6, l6, EST_PORT, &srv)) < 0 || keep_fd(srv) < 0)
		return -1;
	c = tcp_connect(4, l4, TW_PORT, &srv);
	if (c < 0)
		return -1;
	close(srv);
	close(c);
	/* loopback is quick, this machine may not be: bounded wait */
	for (i = 0; i < 1000 && !tcp4_state_is(CLIENT4, TW_PORT, TCP_TIME_WAIT);
	     i++)
		nanosleep(&pause, NULL);
	if (!tcp4_state_is(CLIENT4, TW_PORT, TCP_TIME_WAIT)) {
		fprintf(stderr, "test_decap_sc: no time-wait socket\n");
		return -1;
	}
	return 0;
}

static int group_setup(void **state)
{
	size_t i;
	int err = 0;

	(void)state;
	if (geteuid()) {
		fprintf(stderr, "test_decap_sc: needs root (BPF, namespaces)\n");
		return -1;
	}
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "test_decap_sc: unshare: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(netns_setup) / sizeof(*netns_setup); i++)
		if (system(netns_setup[i])) {
			fprintf(stderr, "test_decap_sc: failed: %s\n",
				netns_setup[i]);
			return -1;
		}
	if_sc0 = if_nametoindex("sc0");
	if (!if_sc0 || sockets_setup()) {
		fprintf(stderr, "test_decap_sc: namespace setup: %s\n",
			strerror(errno));
		return -1;
	}
	if (dc_open("test_decap_sc"))
		return -1;
	err |= dc_prefix(skel->maps.rm_decap_hops, 4, "198.19.0.0", 16);
	err |= dc_prefix(skel->maps.rm_decap_hops, 6, "2001:db8:100::", 48);
	err |= dc_local(4, OTHER4);
	err |= dc_local(6, OTHER6);
	return err ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	decap_bpf__destroy(skel);
	while (n_fds)
		close(fds[--n_fds]);
	return 0; /* the namespace goes with the process */
}

/* ---- frames --------------------------------------------------------- */
enum sc_mangle {
	M_OK = 0,
	M_C_BIT,      /* GUE control bit set */
	M_HLEN,	      /* hlen one word more than the list */
	M_TYPE,	      /* other private data */
	M_FLAGS,      /* GUE flags: optional fields we do not parse */
	M_PROTO,      /* GUE proto neither 4 nor 41 */
	M_PROTO_SWAP, /* GUE proto 41 over an IPv4 inner packet */
	M_NEXT0,      /* next 0 */
	M_COUNT0,     /* count 0, hlen 1 */
	M_UDP_SHORT,  /* IP and UDP lengths end inside the hop list */
	M_TTL1,	      /* outer TTL / hop limit 1 */
	M_UDP_CSUM,   /* a valid non-zero UDP checksum */
};

enum sc_out { OUT_SAME = 0, OUT_LOCAL, OUT_FWD };

struct sc_case {
	const char *desc;
	struct dp_spec s; /* the inner packet */
	int ofam;	  /* outer family */
	const char *hops[RM_GUE_HOPS_MAX + 2];
	__u8 next;
	enum sc_mangle m;
	int tx; /* received on sc0 rather than lo */
	__u32 verdict;
	__u32 counter;
	enum sc_out out;
};

#define ACK DP_TCP_ACK
#define T4(port, fl)                                                           \
	{                                                                      \
		.family = 4, .proto = IPPROTO_TCP, .src = CLIENT4,             \
		.dst = VIP4, .sport = port, .dport = VIP_PORT, .payload = 11,  \
		.tcp_flags = fl                                                \
	}
#define T6(port, fl)                                                           \
	{                                                                      \
		.family = 6, .proto = IPPROTO_TCP, .src = CLIENT6,             \
		.dst = VIP6, .sport = port, .dport = VIP_PORT, .payload = 7,   \
		.tcp_flags = fl                                                \
	}
#define U4                                                                     \
	{                                                                      \
		.family = 4, .proto = IPPROTO_UDP, .src = CLIENT4,             \
		.dst = VIP4, .sport = 40001, .dport = 53, .payload = 5         \
	}
/* a port no socket has: no listener either */
#define T4_NONE                                                                \
	{                                                                      \
		.family = 4, .proto = IPPROTO_TCP, .src = CLIENT4,             \
		.dst = VIP4, .sport = 40001, .dport = 81, .payload = 3,        \
		.tcp_flags = ACK                                               \
	}
#define H4 {NODE4, HOP4}
#define H6 {NODE6, HOP6}
#define PASS XDP_PASS
#define DROP XDP_DROP
#define REDIR XDP_REDIRECT
#define LOCAL OUT_LOCAL
#define FWD OUT_FWD
#define SAME OUT_SAME

// clang-format off
static const struct sc_case cases[] = {
	/* a connection here: delivered */
	{"established v4", T4(EST_PORT, ACK), 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	{"established v6", T6(EST_PORT, ACK), 6, H6, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	{"established v4 in v6", T4(EST_PORT, ACK | DP_TCP_PSH), 6, H6, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	{"time-wait v4", T4(TW_PORT, ACK), 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	{"established v4, inner ip options", {.family = 4, .proto = IPPROTO_TCP, .src = CLIENT4, .dst = VIP4, .sport = EST_PORT, .dport = VIP_PORT, .ip_opts = 2, .payload = 9, .tcp_flags = ACK}, 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	{"established, hop 2 of 3", T4(EST_PORT, ACK), 4, {HOP4, NODE4, NONEIGH4}, 2, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL},
	/* none here: on to the next hop */
	{"listener only v4", T4(40001, ACK), 4, H4, 1, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"listener only v6", T6(40001, ACK), 6, H6, 1, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"no socket v4", T4_NONE, 4, H4, 1, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"no socket v6 in v4", T6(40001, ACK), 4, H4, 1, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"no socket, out of ingress v4", T4_NONE, 4, H4, 1, M_OK, 1, XDP_TX, RM_DCNT_SC_FORWARD, FWD},
	{"no socket, out of ingress v6", T6(40001, ACK), 6, H6, 1, M_OK, 1, XDP_TX, RM_DCNT_SC_FORWARD, FWD},
	{"no socket, third of three", T4_NONE, 4, {NONEIGH4, NODE4, HOP4}, 2, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"rst, no socket", T4(40001, DP_TCP_ACK | 0x04), 4, H4, 1, M_OK, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"udp checksum kept valid v6", T6(40001, ACK), 6, H6, 1, M_UDP_CSUM, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	{"udp checksum kept valid v4", T4_NONE, 4, H4, 1, M_UDP_CSUM, 0, REDIR, RM_DCNT_SC_FORWARD, FWD},
	/* delivered whatever the sockets say */
	{"syn stays", T4(40001, DP_TCP_SYN), 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SYN, LOCAL},
	{"syn stays, no listener", {.family = 6, .proto = IPPROTO_TCP, .src = CLIENT6, .dst = VIP6, .sport = 40001, .dport = 81}, 6, H6, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SYN, LOCAL},
	{"udp delivered", U4, 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_NOT_TCP, LOCAL},
	{"inner v6 extension headers delivered", {.family = 6, .proto = IPPROTO_TCP, .src = CLIENT6, .dst = VIP6, .sport = 40001, .dport = VIP_PORT, .ext = 1, .tcp_flags = ACK}, 6, H6, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_NOT_TCP, LOCAL},
	{"inner fragment delivered", {.family = 4, .proto = IPPROTO_TCP, .src = CLIENT4, .dst = VIP4, .sport = 40001, .dport = VIP_PORT, .frag = DP_FRAG_LATER}, 4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_NOT_TCP, LOCAL},
	{"no hop left", T4_NONE, 4, {HOP4, NODE4}, 2, M_OK, 0, PASS, RM_DCNT_SC_EXHAUSTED, LOCAL},
	{"one hop only", T4_NONE, 4, {NODE4}, 1, M_OK, 0, PASS, RM_DCNT_SC_EXHAUSTED, LOCAL},
	{"no neighbour v4", T4_NONE, 4, {NODE4, NONEIGH4}, 1, M_OK, 0, PASS, RM_DCNT_SC_NO_NEIGH, LOCAL},
	{"no neighbour v6", T6(40001, ACK), 6, {NODE6, NONEIGH6}, 1, M_OK, 0, PASS, RM_DCNT_SC_NO_NEIGH, LOCAL},
	{"no route v4", T4_NONE, 4, {NODE4, NOROUTE4}, 1, M_OK, 0, PASS, RM_DCNT_SC_NO_ROUTE, LOCAL},
	{"no route v6", T6(40001, ACK), 6, {NODE6, NOROUTE6}, 1, M_OK, 0, PASS, RM_DCNT_SC_NO_ROUTE, LOCAL},
	/* never forwarded */
	{"hop not allowed v4", T4_NONE, 4, {NODE4, DENIED4}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOP_DENIED, SAME},
	{"hop not allowed v6", T6(40001, ACK), 6, {NODE6, DENIED6}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOP_DENIED, SAME},
	{"next hop an earlier hop", T4_NONE, 4, {HOP4, NODE4, HOP4}, 2, M_OK, 0, DROP, RM_DCNT_DROP_HOP_LOOP, SAME},
	{"next hop this node again", T4_NONE, 4, {NODE4, NODE4}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOP_LOOP, SAME},
	{"next hop this host v4", T4_NONE, 4, {NODE4, OTHER4}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOP_LOOP, SAME},
	{"next hop this host v6", T6(40001, ACK), 6, {NODE6, OTHER6}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOP_LOOP, SAME},
	{"ttl 1 v4", T4_NONE, 4, H4, 1, M_TTL1, 0, DROP, RM_DCNT_DROP_HOP_TTL, SAME},
	{"hop limit 1 v6", T6(40001, ACK), 6, H6, 1, M_TTL1, 0, DROP, RM_DCNT_DROP_HOP_TTL, SAME},
	/* malformed hop lists */
	{"control bit", T4_NONE, 4, H4, 1, M_C_BIT, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"hlen disagrees", T4_NONE, 4, H4, 1, M_HLEN, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"other private data", T4_NONE, 4, H4, 1, M_TYPE, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"gue flags set", T6(40001, ACK), 6, H6, 1, M_FLAGS, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"gue proto udp", T4_NONE, 4, H4, 1, M_PROTO, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"next 0", T4_NONE, 4, H4, 0, M_NEXT0, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"next past count", T4_NONE, 4, H4, 3, M_OK, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"count 0", T4_NONE, 4, {NULL}, 1, M_COUNT0, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"count past the bound v4", T4_NONE, 4, {NODE4, HOP4, NONEIGH4, NOROUTE4}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"count past the bound v6", T6(40001, ACK), 6, {NODE6, HOP6, NONEIGH6, NOROUTE6}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"list does not name this node", T4_NONE, 4, {HOP4, NONEIGH4}, 1, M_OK, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"list past the udp length", T4_NONE, 4, H4, 1, M_UDP_SHORT, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"list past the udp length v6", T6(40001, ACK), 6, H6, 1, M_UDP_SHORT, 0, DROP, RM_DCNT_DROP_HOPS, SAME},
	{"inner not what gue says", T4_NONE, 4, H4, 1, M_PROTO_SWAP, 0, DROP, RM_DCNT_DROP_MALFORMED, SAME},
};
// clang-format on
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The UDP checksum of the frame's outer datagram (IP header at ETH_HLEN,
 * of family fam), computed over its pseudo header and data. */
static __u16 udp_csum(const __u8 *f, int fam)
{
	const __u8 *ip = f + ETH_HLEN;
	size_t alen = fam == 6 ? 16 : 4, hl = fam == 6 ? 40 : 20;
	const __u8 *src = ip + (fam == 6 ? 8 : 12), *udp = ip + hl;
	__u16 ulen = udp[4] << 8 | udp[5];
	__u32 s = sum16(src, 2 * alen, 0) + IPPROTO_UDP + ulen;
	__u8 u[DP_PKT_MAX];
	__u16 c;

	memcpy(u, udp, ulen);
	u[6] = u[7] = 0;
	s = sum16(u, ulen, s);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	c = ~s & 0xffff;
	return c ? c : 0xffff;
}

static void set_udp_csum(__u8 *f, int fam)
{
	dp_put16(f + ETH_HLEN + (fam == 6 ? 40 : 20) + 6, udp_csum(f, fam));
}

/* The frame of c into in: Ethernet, outer IP from the director to this
 * node, UDP to the GUE port, GUE header, hop list, inner packet. Returns
 * its length; *gue the offset of the GUE header. */
static size_t sc_frame(const struct sc_case *c, const struct dp_pkt *p,
		       __u8 *in, size_t *gue)
{
	size_t ilen = p->ip_end - p->l2_len, asz = c->ofam == 6 ? 16 : 4;
	size_t count = 0, glen, n, i;
	__u8 *g;

	while (c->hops[count])
		count++;
	glen = RM_GUE_HDR_LEN + RM_GUE_HOPS_HDR_LEN + count * asz;
	memcpy(in, dp_mac_director, 6);
	memcpy(in + 6, dp_mac_router, 6);
	dp_put16(in + 12, c->ofam == 6 ? ETH_P_IPV6 : ETH_P_IP);
	n = ETH_HLEN + dp_outer(in + ETH_HLEN, c->ofam,
				c->ofam == 6 ? DIR6 : DIR4,
				c->ofam == 6 ? NODE6 : NODE4, 0, 0, glen + ilen,
				htons(50000), RM_GUE_PORT);
	*gue = n;
	g = in + n;
	g[0] = 1 + count * asz / 4;
	g[1] = c->s.family == 6 ? RM_PROTO_IPV6 : RM_PROTO_IPIP;
	g[2] = g[3] = 0;
	dp_put16(g + 4, RM_GUE_PRIV_HOPS);
	g[6] = c->next;
	g[7] = count;
	for (i = 0; i < count; i++)
		dp_addr(c->ofam, c->hops[i], g + 8 + i * asz);
	memcpy(in + n + glen, p->b + p->l2_len, ilen);
	return n + glen + ilen;
}

/* Fix the outer IPv4 checksum after a change. */
static void outer4_csum(__u8 *f)
{
	dp_put16(f + ETH_HLEN + 10, 0);
	dp_put16(f + ETH_HLEN + 10, dp_csum(f + ETH_HLEN, 20));
}

static size_t sc_mangle(const struct sc_case *c, __u8 *in, size_t len,
			size_t gue)
{
	__u8 *g = in + gue, *ip = in + ETH_HLEN;
	size_t cut;

	switch (c->m) {
	case M_C_BIT:
		g[0] |= 0x20;
		break;
	case M_HLEN:
		g[0] += 1;
		break;
	case M_TYPE:
		dp_put16(g + 4, RM_GUE_PRIV_HOPS + 1);
		break;
	case M_FLAGS:
		g[3] = 0x80;
		break;
	case M_PROTO:
		g[1] = IPPROTO_UDP;
		break;
	case M_PROTO_SWAP:
		g[1] = RM_PROTO_IPV6;
		break;
	case M_COUNT0:
		g[0] = 1;
		break;
	case M_UDP_SHORT:
		/* the lengths end 2 bytes into the first address, and so
		 * does the frame */
		cut = gue + 8 + 2;
		len = cut;
		dp_put16(in + gue - 4, cut - (gue - 8));
		if (c->ofam == 6) {
			dp_put16(ip + 4, cut - ETH_HLEN - 40);
		} else {
			dp_put16(ip + 2, cut - ETH_HLEN);
			outer4_csum(in);
		}
		break;
	case M_TTL1:
		ip[c->ofam == 6 ? 7 : 8] = 1;
		if (c->ofam == 4)
			outer4_csum(in);
		break;
	case M_UDP_CSUM:
		set_udp_csum(in, c->ofam);
		break;
	default:
		break;
	}
	return len;
}

/* What the node must send: the frame as received with the route's MACs,
 * the outer source this node, the destination the next hop, TTL - 1,
 * next + 1, checksums valid. */
static size_t expect_fwd(const struct sc_case *c, const __u8 *in, size_t len,
			 size_t gue, __u8 *out)
{
	__u8 *ip = out + ETH_HLEN;

	memcpy(out, in, len);
	memcpy(out, mac_hop, 6);
	memcpy(out + 6, mac_sc0, 6);
	if (c->ofam == 6) {
		ip[7] -= 1;
		dp_addr(6, NODE6, ip + 8);
		dp_addr(6, c->hops[c->next], ip + 24);
	} else {
		ip[8] -= 1;
		dp_addr(4, NODE4, ip + 12);
		dp_addr(4, c->hops[c->next], ip + 16);
		outer4_csum(out);
	}
	out[gue + 6] = c->next + 1;
	if (c->m == M_UDP_CSUM)
		set_udp_csum(out, c->ofam);
	return len;
}

static size_t expect(const struct sc_case *c, const struct dp_pkt *p,
		     const __u8 *in, size_t len, size_t gue, __u8 *out)
{
	size_t ilen = p->ip_end - p->l2_len;

	switch (c->out) {
	case OUT_LOCAL:
		memcpy(out, in, 12);
		dp_put16(out + 12, c->s.family == 6 ? ETH_P_IPV6 : ETH_P_IP);
		memcpy(out + ETH_HLEN, p->b + p->l2_len, ilen);
		return ETH_HLEN + ilen;
	case OUT_FWD:
		return expect_fwd(c, in, len, gue, out);
	default:
		memcpy(out, in, len);
		return len;
	}
}

static size_t case_build(const struct sc_case *c, __u8 *in, __u8 *out,
			 size_t *out_len)
{
	static struct dp_pkt p;
	size_t len, gue;

	dp_build(&c->s, &p);
	len = sc_frame(c, &p, in, &gue);
	len = sc_mangle(c, in, len, gue);
	*out_len = expect(c, &p, in, len, gue, out);
	return len;
}

static void test_table(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	size_t i, in_len, out_len;
	int failed = 0;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		const struct sc_case *c = &cases[i];

		in_len = case_build(c, in, out, &out_len);
		failed += run_check_on(c->desc, in, in_len, c->tx ? if_sc0 : 0,
				       c->verdict, c->counter, out, out_len);
	}
	print_message("second chance table: %zu cases, %d failed\n", N_CASES,
		      failed);
	assert_int_equal(failed, 0);
}

/* Forwarding off on the interface the packet came in by: the FIB helper
 * answers nothing, the packet is delivered here, counted. */
static void test_forwarding_off(void **state)
{
	static const struct sc_case c = {
	    "forwarding off", T4_NONE, 4, H4, 1, M_OK, 1, PASS,
	    RM_DCNT_SC_FWD_DISABLED, LOCAL};
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	size_t in_len, out_len;
	int failed;

	(void)state;
	assert_int_equal(system("sysctl -qw net.ipv4.conf.sc0.forwarding=0"), 0);
	in_len = case_build(&c, in, out, &out_len);
	failed = run_check_on(c.desc, in, in_len, if_sc0, c.verdict, c.counter,
			      out, out_len);
	assert_int_equal(system("sysctl -qw net.ipv4.conf.sc0.forwarding=1"), 0);
	assert_int_equal(failed, 0);
}

/* ---- handshakes: SYN cookies, a request socket --------------------- */
static const struct sc_case cookie_cases[2] = {
    {"syncookie v4", T4(COOKIE_PORT, ACK), 4, H4, 1, M_OK, 0, PASS,
     RM_DCNT_SC_LOCAL_COOKIE, LOCAL},
    {"syncookie v6", T6(COOKIE_PORT, ACK), 6, H6, 1, M_OK, 0, PASS,
     RM_DCNT_SC_LOCAL_COOKIE, LOCAL},
};

/* The ACK completing the handshake as the director would send it on:
 * the inner packet of c with the given sequence and acknowledgement. */
static size_t cookie_frame(const struct sc_case *c, __u32 seq, __u32 ack,
			   __u8 *in, __u8 *out, size_t *out_len, size_t *gue)
{
	static struct dp_pkt p;
	__u8 *th;
	size_t len;

	dp_build(&c->s, &p);
	th = p.b + p.l2_len + (c->s.family == 6 ? 40 : 20);
	memcpy(th + 4, &(__be32){htonl(seq)}, 4);
	memcpy(th + 8, &(__be32){htonl(ack)}, 4);
	len = sc_frame(c, &p, in, gue);
	*out_len = expect(c, &p, in, len, *gue, out);
	return len;
}

/* A handshake in progress: a SYN from REQ_CLIENT4 through a raw socket
 * (IP header ours: the address is not this host's) leaves a request
 * socket, as its SYN-ACK goes unanswered. The ACK the director sends on
 * for it belongs here. */
static void test_request_sock(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	static const struct sc_case c = {
	    "request socket", {.family = 4, .proto = IPPROTO_TCP,
			       .src = REQ_CLIENT4, .dst = VIP4,
			       .sport = REQ_PORT, .dport = VIP_PORT,
			       .tcp_flags = ACK},
	    4, H4, 1, M_OK, 0, PASS, RM_DCNT_SC_LOCAL_SOCKET, LOCAL};
	struct timespec pause = {0, 10 * 1000 * 1000};
	struct {
		__u8 ip[20];
		struct tcp_raw th;
	} syn = {.th = {.sport = htons(REQ_PORT),
			.dport = htons(VIP_PORT),
			.seq = htonl(0x2000),
			.doff = 5 << 4,
			.flags = DP_TCP_SYN,
			.win = htons(65535)}};
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(4, VIP4, 0, &ss);
	size_t in_len, out_len;
	int fd, i;

	(void)state;
	syn.ip[0] = 0x45;
	syn.ip[8] = 64;
	syn.ip[9] = IPPROTO_TCP;
	dp_put16(syn.ip + 2, sizeof(syn));
	dp_addr(4, REQ_CLIENT4, syn.ip + 12);
	dp_addr(4, VIP4, syn.ip + 16);
	syn.th.check = htons(tcp4_csum(&syn.th, REQ_CLIENT4, VIP4));
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	assert_true(fd >= 0);
	assert_int_equal(sendto(fd, &syn, sizeof(syn), 0,
				(struct sockaddr *)&ss, len),
			 sizeof(syn));
	close(fd);
	for (i = 0; i < 1000 && !tcp4_state_is(REQ_CLIENT4, REQ_PORT,
					       TCP_SYN_RECV);
	     i++)
		nanosleep(&pause, NULL);
	assert_true(tcp4_state_is(REQ_CLIENT4, REQ_PORT, TCP_SYN_RECV));
	in_len = case_build(&c, in, out, &out_len);
	assert_int_equal(run_check(c.desc, in, in_len, c.verdict, c.counter,
				   out, out_len),
			 0);
}

static void test_syncookie(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX], fwd[DP_PKT_MAX];
	__u32 isn = 0x1000, cookie[2] = {0};
	size_t in_len, out_len, gue;
	int failed = 0;

	(void)state;
	/* 2: every SYN gets a cookie (and the listener remembers it sent
	 * some, which the helper wants) */
	assert_int_equal(system("sysctl -qw net.ipv4.tcp_syncookies=2"), 0);
	for (int f = 0; f < 2; f++) {
		struct sc_case c = cookie_cases[f];

		assert_int_equal(syn_cookie(c.ofam, isn, &cookie[f]), 0);
		in_len = cookie_frame(&c, isn + 1, cookie[f] + 1, in, out,
				      &out_len, &gue);
		failed += run_check(c.desc, in, in_len, c.verdict, c.counter,
				    out, out_len);
		/* the cookie's time counter (top 8 bits) long past:
		 * invalid, so only the listener is here: forwarded */
		c.desc = c.ofam == 6 ? "stale cookie v6" : "stale cookie v4";
		c.verdict = REDIR;
		c.counter = RM_DCNT_SC_FORWARD;
		c.out = FWD;
		in_len = cookie_frame(&c, isn + 1, cookie[f] + 1 + 0x10000000u,
				      in, out, &out_len, &gue);
		expect_fwd(&c, in, in_len, gue, fwd);
		failed += run_check(c.desc, in, in_len, c.verdict, c.counter,
				    fwd, in_len);
	}
	assert_int_equal(system("sysctl -qw net.ipv4.tcp_syncookies=1"), 0);
	print_message("syncookie: cookies %08x (v4) %08x (v6), %d failed\n",
		      cookie[0], cookie[1], failed);
	assert_int_equal(failed, 0);
}

/* A hop-list frame cut short is never forwarded and never decapsulated
 * (dc_cuts). */
static void test_truncation(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	size_t i, in_len, out_len, runs = 0;
	int failed = 0;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		const struct sc_case *c = &cases[i];

		if (c->out == OUT_SAME || c->tx)
			continue;
		in_len = case_build(c, in, out, &out_len);
		failed += dc_cuts(c->desc, in, in_len, &runs);
	}
	print_message("second chance truncation: %zu runs, %d failed\n", runs,
		      failed);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_forwarding_off),
	    cmocka_unit_test(test_request_sock),
	    cmocka_unit_test(test_syncookie),
	    cmocka_unit_test(test_truncation),
	};

	return cmocka_run_group_tests_name("decap second chance", tests,
					   group_setup, group_teardown);
}
