// SPDX-License-Identifier: GPL-2.0
/*
 * Encapsulating forwarding (bpf/encap.h), run in the kernel through
 * bpf_prog_test_run_opts with the next hop from a real bpf_fib_lookup.
 *
 * The lookup runs in the network namespace of the test, so the test
 * makes its own (unshare) and builds the director's side of a routed
 * network in it: an ingress veth (rx0) and an egress one (tx0) towards a
 * router, routes to node subnets through both, a route whose gateway has
 * no neighbour entry, an unreachable one, and routes with MTU 1400.
 *
 *   table        method x inner family x outer family x TCP/UDP, VLAN
 *                tags, Ethernet padding, DSCP/ECN, ICMP errors, XDP_TX
 *                back out of the ingress, every failure: verdict, exact
 *                output bytes (outer header built here from the spec),
 *                counters
 *   too big      exact ICMP fragmentation-needed / packet-too-big bytes
 *                with valid checksums, and the drops
 *   truncation   every forwarded frame cut at every length
 *   rate limit   generated errors per CPU per second are bounded
 *   next hops    the table again with every node's rm_nexthops record
 *                filled by the control plane's resolver (nexthop.c):
 *                the same bytes without nexthop-fib-fallback; without a
 *                record, each case counts the fallback. A record the
 *                FIB could not have given (a node without a route) is
 *                used as it is; every way a record is unusable (being
 *                written, another address, expired, not valid, ECMP)
 *                falls back to bpf_fib_lookup, counted
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <net/if.h>
#include <cmocka.h>

#include <ringmaster/rm_encap.h>
#include "dp_fixture.h"
#include "nexthop.h"

/* ---- the namespace: the director's routing table ------------------- */
static const __u8 mac_tx[6] = {0x02, 0, 0, 0, 0x02, 0x01};    /* tx0 */
static const __u8 mac_gw[6] = {0x02, 0, 0, 0, 0x02, 0x02};    /* via tx0 */
static const __u8 mac_gw_rx[6] = {0x02, 0, 0, 0, 0x01, 0x02}; /* via rx0 */

#define SRC4 "198.18.2.1"
#define SRC6 "2001:db8:2::1"
#define CLIENT4 "198.18.200.7"
#define CLIENT6 "2001:db8:c8::7"
#define VIP4 "198.18.50.1"
#define VIP6 "2001:db8:50::1"

static const char *const netns_setup[] = {
    "ip link set lo up",
    /* rx0 has the MAC test frames are sent to */
    "ip link add rx0 address 02:00:00:00:00:fe type veth peer name rx1",
    "ip link add tx0 address 02:00:00:00:02:01 type veth peer name tx1",
    "ip link set rx0 up && ip link set rx1 up && ip link set tx0 up && "
    "ip link set tx1 up",
    /* bpf_fib_lookup answers only where forwarding is on */
    "sysctl -qw net.ipv4.conf.all.forwarding=1 "
    "net.ipv6.conf.all.forwarding=1",
    "ip addr add 198.18.1.1/24 dev rx0 && "
    "ip addr add 2001:db8:1::1/64 dev rx0 nodad",
    "ip addr add " SRC4 "/24 dev tx0 && ip addr add " SRC6 "/64 dev tx0 nodad",
    "ip neigh add 198.18.2.2 lladdr 02:00:00:00:02:02 dev tx0 nud permanent",
    "ip neigh add 2001:db8:2::2 lladdr 02:00:00:00:02:02 dev tx0 "
    "nud permanent",
    "ip neigh add 198.18.1.2 lladdr 02:00:00:00:01:02 dev rx0 nud permanent",
    "ip neigh add 2001:db8:1::2 lladdr 02:00:00:00:01:02 dev rx0 "
    "nud permanent",
    /* nodes behind the router on tx0: redirect */
    "ip route add 198.19.0.0/24 via 198.18.2.2",
    "ip route add 2001:db8:100::/64 via 2001:db8:2::2",
    /* nodes back out of the ingress interface: XDP_TX */
    "ip route add 198.19.1.0/24 via 198.18.1.2",
    "ip route add 2001:db8:101::/64 via 2001:db8:1::2",
    /* a gateway with no neighbour entry */
    "ip route add 198.19.2.0/24 via 198.18.2.3",
    "ip route add 2001:db8:102::/64 via 2001:db8:2::3",
    "ip route add unreachable 198.19.3.0/24",
    "ip route add unreachable 2001:db8:103::/64",
    /* a path with a smaller MTU */
    "ip route add 198.19.4.0/24 via 198.18.2.2 mtu lock 1400",
    "ip route add 2001:db8:104::/64 via 2001:db8:2::2 mtu lock 1400",
    /* two next hops (ECMP) */
    "ip route add 198.19.5.0/24 nexthop via 198.18.2.2 nexthop via "
    "198.18.1.2",
};

enum { SVC_T4 = 0, SVC_U4, SVC_T6, SVC_U6 };
#define NODE 1

static struct dp_fx *fx;
static int if_rx, if_tx;
static char skip_why[256];

static int set_config(int src4, int src6)
{
	struct rm_config cfg = {
	    .seed = dp_seed,
	    .udp_timeout_s = 60,
	    .flags = RM_CFG_SEEDED,
	    .conn_insert_rate = RM_DEFAULT_CONN_INSERT_RATE,
	};
	__u32 zero = 0;

	if (src4)
		dp_addr(4, SRC4, (__u8 *)&cfg.encap_src4);
	if (src6)
		dp_addr(6, SRC6, (__u8 *)cfg.encap_src6);
	return bpf_map_update_elem(fx->config, &zero, &cfg, BPF_ANY);
}

static int nexthops_fd(void)
{
	return bpf_map__fd(fx->skel->maps.rm_nexthops);
}

/* Node NODE's next-hop record: rec, or none (NULL). */
static int set_nh(const struct rm_nh *rec)
{
	struct rm_nh zero = {0};
	__u32 id = NODE;

	return bpf_map_update_elem(nexthops_fd(), &id, rec ? rec : &zero,
				   BPF_ANY);
}

static int set_node(__u8 via, int family, const char *addr, __u16 gue_port)
{
	struct rm_node n = {
	    .state = RM_NODE_ACTIVE,
	    .gen = 1,
	    .weight = 1,
	    .via = via,
	    .addr_family = family == 6 ? RM_FAMILY_V6 : RM_FAMILY_V4,
	    .gue_port = htons(gue_port),
	};
	__u32 id = NODE;

	dp_addr(family, addr, (__u8 *)n.addr);
	snprintf(n.name, sizeof(n.name), "routed");
	return bpf_map_update_elem(fx->nodes, &id, &n, BPF_ANY);
}

static int group_setup(void **state)
{
	cpu_set_t one;
	size_t i;
	int err = 0;

	(void)state;
	if (geteuid()) {
		fprintf(stderr, "test_encap: needs root (BPF, namespaces)\n");
		return -1;
	}
	/* one CPU: the ICMP budget is per CPU */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	if (unshare(CLONE_NEWNET) || sched_setaffinity(0, sizeof(one), &one)) {
		fprintf(stderr, "test_encap: unshare/affinity: %s\n",
			strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(netns_setup) / sizeof(*netns_setup); i++)
		if (system(netns_setup[i])) {
			fprintf(stderr, "test_encap: failed: %s\n",
				netns_setup[i]);
			return -1;
		}
	if_rx = if_nametoindex("rx0");
	if_tx = if_nametoindex("tx0");
	fx = dp_fx_open(&err, skip_why, sizeof(skip_why));
	if (!fx) {
		fprintf(stderr, "test_encap: %s\n", skip_why);
		return -1;
	}
	{
		struct bpf_devmap_val port = {.ifindex = if_tx};
		__u32 key = if_tx;

		err |= bpf_map_update_elem(fx->tx_ports, &key, &port, BPF_ANY);
	}
	err |= set_config(1, 1);
	err |= set_node(RM_VIA_IPIP, 4, "198.19.0.5", 0);
	err |= dp_service(fx, 4, VIP4, IPPROTO_TCP, 80, SVC_T4, 0);
	err |= dp_service(fx, 4, VIP4, IPPROTO_UDP, 53, SVC_U4, 0);
	err |= dp_service(fx, 6, VIP6, IPPROTO_TCP, 80, SVC_T6, 0);
	err |= dp_service(fx, 6, VIP6, IPPROTO_UDP, 53, SVC_U6, 0);
	err |= dp_push_ring(fx, (__u32[]){SVC_T4, SVC_U4, SVC_T6, SVC_U6}, 4,
			    NODE, 1, 10);
	if (err) {
		fprintf(stderr, "test_encap: cannot fill the maps\n");
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	dp_fx_close(fx);
	return 0; /* the namespace goes with the process */
}

/* ---- cases ---------------------------------------------------------- */
#define C(x) (1ull << (x))
#define CT_NEW (C(RM_CNT_CONN_MISS) | C(RM_CNT_CONN_INSERT))
#define REDIR_IPIP (C(RM_CNT_FWD_REDIRECT) | C(RM_CNT_ENCAP_IPIP))
#define REDIR_GUE (C(RM_CNT_FWD_REDIRECT) | C(RM_CNT_ENCAP_GUE))
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define T4(...)                                                                \
	{                                                                      \
		.family = 4, .proto = TCP, .src = CLIENT4, .dst = VIP4,        \
		.sport = 40000, .dport = 80, __VA_ARGS__                       \
	}
#define U4(...)                                                                \
	{                                                                      \
		.family = 4, .proto = UDP, .src = CLIENT4, .dst = VIP4,        \
		.sport = 40001, .dport = 53, __VA_ARGS__                       \
	}
#define T6(...)                                                                \
	{                                                                      \
		.family = 6, .proto = TCP, .src = CLIENT6, .dst = VIP6,        \
		.sport = 40002, .dport = 80, __VA_ARGS__                       \
	}
#define U6(...)                                                                \
	{                                                                      \
		.family = 6, .proto = UDP, .src = CLIENT6, .dst = VIP6,        \
		.sport = 40003, .dport = 53, __VA_ARGS__                       \
	}
#define IPIP RM_VIA_IPIP
#define GUE RM_VIA_GUE
#define N4 "198.19.0.5"
#define N6 "2001:db8:100::5"

enum out { OUT_NONE = 0, OUT_ENCAP, OUT_TOOBIG };

struct enc_case {
	const char *desc;
	struct dp_spec s;
	__u8 via;
	int nfam; /* node address family */
	const char *node;
	__u16 port;   /* GUE port */
	__u8 tos;     /* DSCP/ECN written into the inner header */
	int clear_df; /* IPv4 inner without DF */
	int no_src;   /* no outer source of the node's family */
	__u32 verdict;
	__u64 counters;
	enum out out;
	int tx;	   /* out of the ingress (rx0) rather than tx0 */
	__u32 mtu; /* OUT_TOOBIG: the MTU the error gives */
};

// clang-format off
static const struct enc_case cases[] = {
	/* every method x inner family x outer family, TCP and UDP */
	{"ipip 4in4 tcp", T4(), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"ipip 4in4 udp", U4(), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	{"ipip 6in6 tcp", T6(), IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"ipip 6in6 udp", U6(), IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	{"ipip 6in4 tcp", T6(), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"ipip 6in4 udp", U6(), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	{"ipip 4in6 tcp", T4(), IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"ipip 4in6 udp", U4(), IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	{"gue 4in4 tcp", T4(), GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"gue 4in4 udp", U4(), GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | CT_NEW, OUT_ENCAP, 0, 0},
	{"gue 6in6 tcp", T6(), GUE, 6, N6, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"gue 6in6 udp", U6(), GUE, 6, N6, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | CT_NEW, OUT_ENCAP, 0, 0},
	{"gue 6in4 tcp", T6(), GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"gue 6in4 udp", U6(), GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | CT_NEW, OUT_ENCAP, 0, 0},
	{"gue 4in6 tcp", T4(), GUE, 6, N6, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"gue 4in6 udp", U4(), GUE, 6, N6, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | CT_NEW, OUT_ENCAP, 0, 0},
	/* what the outer header takes from the inner packet and frame */
	{"gue other port", T4(), GUE, 4, N4, 7777, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"ipip v4 dscp/ecn copied", T4(), IPIP, 4, N4, 0, 0xb9, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"ipip v6 tclass copied", T6(), IPIP, 6, N6, 0, 0x2e, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"gue v4 in v6 tos copied", T4(), GUE, 6, N6, 6080, 0x61, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"ipip two vlan tags dropped", T4(.vlans = 2), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"gue one vlan tag dropped", U6(.vlans = 1), GUE, 6, N6, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | CT_NEW, OUT_ENCAP, 0, 0},
	{"ipip padding trimmed", U4(.pad_to = 100), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	{"ipip v4 options kept", T4(.ip_opts = 2, .payload = 33), IPIP, 4, N4, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"gue v6 ext headers kept", T6(.ext = 2, .payload = 7), GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE, OUT_ENCAP, 0, 0},
	{"ipip with payload", T6(.payload = 1000, .tcp_flags = DP_TCP_ACK), IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | CT_NEW, OUT_ENCAP, 0, 0},
	/* an ICMP error about a flow goes where the flow goes, same port */
	{"icmp error v4 gue", {.kind = DP_ICMP_ERR, .family = 4, .proto = TCP, .src = CLIENT4, .dst = VIP4, .sport = 40000, .dport = 80, .icmp_type = 3, .icmp_code = 4}, GUE, 4, N4, 6080, 0, 0, 0, XDP_REDIRECT, REDIR_GUE | C(RM_CNT_ICMP_FORWARDED) | C(RM_CNT_CONN_MISS), OUT_ENCAP, 0, 0},
	{"icmp error v6 ipip", {.kind = DP_ICMP_ERR, .family = 6, .proto = UDP, .src = CLIENT6, .dst = VIP6, .sport = 40003, .dport = 53, .icmp_type = 2}, IPIP, 6, N6, 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP | C(RM_CNT_ICMP_FORWARDED) | C(RM_CNT_CONN_MISS), OUT_ENCAP, 0, 0},
	/* next hop back out of the ingress interface */
	{"ipip out of ingress v4", T4(), IPIP, 4, "198.19.1.5", 0, 0, 0, 0, XDP_TX, C(RM_CNT_FWD_TX) | C(RM_CNT_ENCAP_IPIP), OUT_ENCAP, 1, 0},
	{"gue out of ingress v6", U4(), GUE, 6, "2001:db8:101::5", 6080, 0, 0, 0, XDP_TX, C(RM_CNT_FWD_TX) | C(RM_CNT_ENCAP_GUE) | CT_NEW, OUT_ENCAP, 1, 0},
	/* failures */
	{"no neighbour v4", T4(), IPIP, 4, "198.19.2.5", 0, 0, 0, 0, XDP_DROP, C(RM_CNT_FIB_NO_NEIGH), OUT_NONE, 0, 0},
	{"no neighbour v6", T6(), GUE, 6, "2001:db8:102::5", 6080, 0, 0, 0, XDP_DROP, C(RM_CNT_FIB_NO_NEIGH), OUT_NONE, 0, 0},
	{"unreachable v4", T4(), IPIP, 4, "198.19.3.5", 0, 0, 0, 0, XDP_DROP, C(RM_CNT_FIB_FAIL), OUT_NONE, 0, 0},
	{"unreachable v6", T6(), IPIP, 6, "2001:db8:103::5", 0, 0, 0, 0, XDP_DROP, C(RM_CNT_FIB_FAIL), OUT_NONE, 0, 0},
	{"no route at all", T4(), IPIP, 4, "198.18.99.5", 0, 0, 0, 0, XDP_DROP, C(RM_CNT_FIB_FAIL), OUT_NONE, 0, 0},
	{"no v4 source", T4(), IPIP, 4, N4, 0, 0, 0, 1, XDP_DROP, C(RM_CNT_ENCAP_NO_SRC), OUT_NONE, 0, 0},
	{"no v6 source", T4(), GUE, 6, N6, 6080, 0, 0, 1, XDP_DROP, C(RM_CNT_ENCAP_NO_SRC), OUT_NONE, 0, 0},
	/* too big for the path */
	{"too big v4 DF ipip", T4(.payload = 1400), IPIP, 4, "198.19.4.5", 0, 0, 0, 0, XDP_TX, C(RM_CNT_TOO_BIG_SENT), OUT_TOOBIG, 0, 1380},
	{"too big v4 DF gue v6", T4(.payload = 1400), GUE, 6, "2001:db8:104::5", 6080, 0, 0, 0, XDP_TX, C(RM_CNT_TOO_BIG_SENT), OUT_TOOBIG, 0, 1352},
	{"too big v6 ipip", T6(.payload = 1400), IPIP, 6, "2001:db8:104::5", 0, 0, 0, 0, XDP_TX, C(RM_CNT_TOO_BIG_SENT), OUT_TOOBIG, 0, 1360},
	{"too big v6 gue v4 vlan", U6(.payload = 1400, .vlans = 1), GUE, 4, "198.19.4.5", 6080, 0, 0, 0, XDP_TX, C(RM_CNT_TOO_BIG_SENT) | CT_NEW, OUT_TOOBIG, 0, 1372},
	{"too big v4 no DF dropped", T4(.payload = 1400), IPIP, 4, "198.19.4.5", 0, 0, 1, 0, XDP_DROP, C(RM_CNT_DROP_TOO_BIG), OUT_NONE, 0, 0},
	{"fits exactly", T4(.payload = 1340), IPIP, 4, "198.19.4.5", 0, 0, 0, 0, XDP_REDIRECT, REDIR_IPIP, OUT_ENCAP, 0, 0},
	{"one byte over", T4(.payload = 1341), IPIP, 4, "198.19.4.5", 0, 0, 0, 0, XDP_TX, C(RM_CNT_TOO_BIG_SENT), OUT_TOOBIG, 0, 1380},
};
// clang-format on
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The frame of a case: the spec built, then the header changes it asks. */
static void case_build(const struct enc_case *c, struct dp_pkt *p)
{
	__u8 *ip;

	dp_build(&c->s, p);
	ip = p->b + p->l2_len;
	if (c->s.family == 4 && (c->tos || c->clear_df)) {
		ip[1] = c->tos;
		if (c->clear_df)
			ip[6] &= ~0x40;
		dp_put16(ip + 10, 0);
		dp_put16(ip + 10, dp_csum(ip, (ip[0] & 0xf) * 4));
	} else if (c->s.family == 6 && c->tos) {
		ip[0] = 0x60 | c->tos >> 4;
		ip[1] = (ip[1] & 0x0f) | (c->tos & 0x0f) << 4;
	}
}

/* The frame the director must send for an encapsulating case, built
 * from the spec: Ethernet from the route, the outer header, UDP for GUE,
 * then the inner IP packet exactly as received. */
static size_t expect_encap(const struct enc_case *c, const struct dp_pkt *p,
			   __u8 *out)
{
	size_t inner = p->ip_end - p->l2_len, n;
	int gue = c->via == RM_VIA_GUE;
	struct rm_flow f;

	memcpy(out, c->tx ? mac_gw_rx : mac_gw, 6);
	memcpy(out + 6, c->tx ? dp_mac_director : mac_tx, 6);
	dp_put16(out + 12, c->nfam == 6 ? ETH_P_IPV6 : ETH_P_IP);
	dp_flow(&c->s, 0, &f);
	n = ETH_HLEN + dp_outer(out + ETH_HLEN, c->nfam,
				c->nfam == 6 ? SRC6 : SRC4, c->node,
				c->s.family == 6 ? 41 : 4, c->tos, inner,
				rm_gue_sport(&f), gue ? c->port : 0);
	memcpy(out + n, p->b + p->l2_len, inner);
	return n + inner;
}

/* Sum of 16-bit words, unfolded. */
static __u32 sum16(const __u8 *d, size_t n, __u32 s)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (d[i] << 8) | d[i + 1];
	return s;
}

static __u16 fold(__u32 s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* The ICMP error the director must answer a too-big case with: the
 * received L2 header, MACs swapped; IP from the VIP to the client; ICMP
 * with the MTU; the first RM_TOOBIG_QUOTE bytes of the packet. */
static size_t expect_toobig(const struct enc_case *c, const struct dp_pkt *p,
			    __u8 *out)
{
	const __u8 *orig_ip = p->b + p->l2_len;
	size_t l2 = p->l2_len, q = RM_TOOBIG_QUOTE, n;
	__u8 *h = out + l2, *icmp;

	memcpy(out, p->b, l2);
	memcpy(out, p->b + 6, 6);
	memcpy(out + 6, p->b, 6);
	if (c->s.family == 4) {
		memset(h, 0, 28);
		h[0] = 0x45;
		dp_put16(h + 2, 28 + q);
		h[8] = 64;
		h[9] = IPPROTO_ICMP;
		memcpy(h + 12, orig_ip + 16, 4); /* from the VIP */
		memcpy(h + 16, orig_ip + 12, 4); /* to the client */
		dp_put16(h + 10, dp_csum(h, 20));
		icmp = h + 20;
		icmp[0] = 3;
		icmp[1] = 4;
		dp_put16(icmp + 6, c->mtu);
		memcpy(icmp + 8, orig_ip, q);
		dp_put16(icmp + 2, fold(sum16(icmp, 8 + q, 0)));
		n = l2 + 28 + q;
	} else {
		__u8 ph[40] = {0};

		memset(h, 0, 48);
		h[0] = 0x60;
		dp_put16(h + 4, 8 + q);
		h[6] = IPPROTO_ICMPV6;
		h[7] = 64;
		memcpy(h + 8, orig_ip + 24, 16);
		memcpy(h + 24, orig_ip + 8, 16);
		icmp = h + 40;
		icmp[0] = 2;
		dp_put16(icmp + 4, c->mtu >> 16);
		dp_put16(icmp + 6, c->mtu & 0xffff);
		memcpy(icmp + 8, orig_ip, q);
		memcpy(ph, h + 8, 32);
		dp_put16(ph + 34, 8 + q);
		ph[39] = IPPROTO_ICMPV6;
		dp_put16(icmp + 2, fold(sum16(icmp, 8 + q, sum16(ph, 40, 0))));
		n = l2 + 48 + q;
	}
	return n;
}

static int case_prepare(const struct enc_case *c)
{
	int err = set_node(c->via, c->nfam, c->node, c->port);

	if (!err)
		err = c->no_src ? set_config(c->nfam != 4, c->nfam != 6)
				: set_config(1, 1);
	return err;
}

/* Run one frame; compare verdict, output and counters. 1 on mismatch. */
static int run_check(const char *what, const __u8 *in, size_t len,
		     __u32 verdict, __u64 counters, const __u8 *out,
		     size_t out_len)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	static struct dp_run r;
	int bad = 0;

	assert_int_equal(dp_conns_clear(fx), 0);
	assert_int_equal(dp_counters(fx, before), 0);
	dp_run(fx, in, len, if_rx, &r);
	assert_int_equal(dp_counters(fx, after), 0);
	if (r.err) {
		print_error("%s (len %zu): test_run: %d\n", what, len, r.err);
		return 1;
	}
	if (r.retval != verdict) {
		print_error("%s (len %zu): verdict %s, want %s\n", what, len,
			    dp_action_name(r.retval), dp_action_name(verdict));
		bad = 1;
	}
	if (out && (r.out_len != out_len || memcmp(r.out, out, out_len))) {
		size_t j;

		for (j = 0; j < out_len && j < r.out_len; j++)
			if (r.out[j] != out[j])
				break;
		print_error("%s: output differs: len %u want %zu, first "
			    "difference at byte %zu (%02x, want %02x)\n",
			    what, r.out_len, out_len, j,
			    j < r.out_len ? r.out[j] : 0,
			    j < out_len ? out[j] : 0);
		bad = 1;
	}
	bad |= dp_counters_rose(what, len, before, after, counters);
	return bad;
}

/* The case's expected counters: those of the case, and the fallback
 * when the packet gets as far as its next hop without a usable record. */
static __u32 case_counters(const struct enc_case *c, int record_used)
{
	return c->counters |
	       (c->no_src || record_used ? 0 : C(RM_CNT_NH_FALLBACK));
}

/* Node NODE's record as ringload neighd would write it: 1 if valid. */
static int resolve_nh(struct rm_nh_resolver *res, struct rm_nh *rec)
{
	struct rm_config cfg;
	struct rm_nexthop gw;
	struct rm_node n;
	__u32 id = NODE, zero = 0;
	int rc;

	assert_int_equal(bpf_map_lookup_elem(fx->nodes, &id, &n), 0);
	assert_int_equal(bpf_map_lookup_elem(fx->config, &zero, &cfg), 0);
	assert_int_equal(rm_nh_resolve(res, if_rx, &cfg, &n, 60000000000ULL,
				       rec, &gw, &rc),
			 0);
	assert_int_equal(rm_nh_write(nexthops_fd(), NODE, rec), 0);
	assert_int_equal(rec->seq % 2, 0);
	return (rec->flags & RM_NH_F_VALID) != 0;
}

/* The table: records (0) none, so every lookup is the kernel's, or (1)
 * filled by the resolver, so every case the FIB can answer takes the
 * record: the same bytes and outcome either way. */
static void run_table(int records)
{
	static struct dp_pkt p;
	static __u8 out[DP_PKT_MAX];
	struct rm_nh_resolver *res = NULL;
	int failed = 0, used = 0;
	size_t i, n;

	if (records)
		assert_int_equal(rm_nh_resolver_open(&res), 0);
	for (i = 0; i < N_CASES; i++) {
		const struct enc_case *c = &cases[i];
		int use = 0;

		assert_int_equal(case_prepare(c), 0);
		assert_int_equal(set_nh(NULL), 0);
		if (records) {
			struct rm_nh rec;
			int fib_fails = c->counters & (C(RM_CNT_FIB_FAIL) |
						       C(RM_CNT_FIB_NO_NEIGH));

			/* the resolver finds a next hop exactly where
			 * the data plane's own lookup does */
			use = resolve_nh(res, &rec);
			if (use == !!fib_fails) {
				print_error("%s: resolver says %s\n", c->desc,
					    use ? "valid" : "not valid");
				failed++;
			}
			used += use;
		}
		case_build(c, &p);
		n = 0;
		if (c->out == OUT_ENCAP)
			n = expect_encap(c, &p, out);
		else if (c->out == OUT_TOOBIG)
			n = expect_toobig(c, &p, out);
		failed += run_check(c->desc, p.b, p.len, c->verdict,
				    case_counters(c, use && !c->no_src),
				    c->out ? out : NULL, n);
	}
	rm_nh_resolver_close(res);
	assert_int_equal(set_nh(NULL), 0);
	print_message("encap table (%s): %zu cases, %d from records, %d "
		      "failed\n",
		      records ? "records" : "no records", N_CASES, used, failed);
	assert_int_equal(failed, 0);
	if (records)
		assert_true(used >= 30);
}

static void test_table(void **state)
{
	(void)state;
	run_table(0);
}

static void test_table_records(void **state)
{
	(void)state;
	run_table(1);
}

/* A record is taken as it is: a node without any route gets the
 * record's interface, MACs and MTU; each way a record is unusable
 * sends the packet to bpf_fib_lookup instead (no route: fib-fail),
 * counted. */
static void test_record_rules(void **state)
{
	static const __u8 dmac[6] = {0x02, 0x99, 0, 0, 0, 0x01};
	static const __u8 smac[6] = {0x02, 0x99, 0, 0, 0, 0x02};
	static const struct enc_case used = {"record used", T4(), IPIP, 4,
					     "198.18.99.5", 0, 0, 0, 0,
					     XDP_REDIRECT, REDIR_IPIP,
					     OUT_ENCAP, 0, 0};
	static const struct enc_case big = {"record's mtu", T4(.payload = 1000),
					    IPIP, 4, "198.18.99.5", 0, 0, 0, 0,
					    XDP_TX, C(RM_CNT_TOO_BIG_SENT),
					    OUT_TOOBIG, 0, 980};
	struct {
		const char *desc;
		__u32 seq, flags, addr_delta, expired;
		__u32 counter;
	} bad[] = {
	    {"being written (odd seq)", 5, RM_NH_F_VALID, 0, 0,
	     RM_CNT_NH_FALLBACK},
	    {"not valid", 4, 0, 0, 0, RM_CNT_NH_FALLBACK},
	    {"for another address", 4, RM_NH_F_VALID, 1, 0,
	     RM_CNT_NH_FALLBACK},
	    {"expired", 4, RM_NH_F_VALID, 0, 1, RM_CNT_NH_FALLBACK},
	    {"ecmp", 4, RM_NH_F_VALID | RM_NH_F_ECMP, 0, 0, RM_CNT_NH_ECMP},
	};
	static struct dp_pkt p;
	static __u8 out[DP_PKT_MAX];
	struct rm_nh rec = {.seq = 4, .flags = RM_NH_F_VALID,
			    .family = RM_FAMILY_V4, .mtu = 1500};
	int failed = 0;
	size_t n, i;

	(void)state;
	rec.ifindex = if_tx;
	memcpy(rec.dmac, dmac, 6);
	memcpy(rec.smac, smac, 6);
	dp_addr(4, "198.18.99.5", (__u8 *)rec.addr);
	rec.expires_ns = rm_nh_now() + 600000000000ULL;
	rec.expires_jiffies = ~0ULL; /* never */

	assert_int_equal(case_prepare(&used), 0);
	assert_int_equal(set_nh(&rec), 0);
	case_build(&used, &p);
	n = expect_encap(&used, &p, out);
	memcpy(out, dmac, 6);
	memcpy(out + 6, smac, 6);
	failed += run_check(used.desc, p.b, p.len, used.verdict,
			    used.counters, out, n);

	rec.mtu = 1000;
	assert_int_equal(set_nh(&rec), 0);
	case_build(&big, &p);
	n = expect_toobig(&big, &p, out);
	failed += run_check(big.desc, p.b, p.len, big.verdict, big.counters,
			    out, n);
	rec.mtu = 1500;

	case_build(&used, &p);
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct rm_nh r = rec;

		r.seq = bad[i].seq;
		r.flags = bad[i].flags;
		if (bad[i].addr_delta)
			r.addr[0] ^= htonl(1);
		if (bad[i].expired)
			r.expires_jiffies = 1; /* jiffies start past it */
		assert_int_equal(set_nh(&r), 0);
		failed += run_check(bad[i].desc, p.b, p.len, XDP_DROP,
				    C(RM_CNT_FIB_FAIL) | C(bad[i].counter),
				    NULL, 0);
	}
	assert_int_equal(set_nh(NULL), 0);
	assert_int_equal(failed, 0);
}

/* An ECMP route: the resolver marks the record, and the data plane
 * leaves the choice of path to bpf_fib_lookup, per packet (counted). A
 * route with one path is not marked. */
static void test_record_ecmp(void **state)
{
	static const struct enc_case ecmp = {"ecmp", T4(), IPIP, 4, "198.19.5.5",
					     0, 0, 0, 0, 0, 0, OUT_NONE, 0, 0};
	static struct dp_pkt p;
	static struct dp_run r;
	struct rm_nh_resolver *res;
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	__be32 a[4] = {0};
	struct rm_nh rec;

	(void)state;
	dp_addr(4, N4, (__u8 *)a);
	assert_int_equal(rm_route_multipath(RM_FAMILY_V4, a), 0);
	dp_addr(4, "198.19.5.5", (__u8 *)a);
	assert_int_equal(rm_route_multipath(RM_FAMILY_V4, a), 1);

	assert_int_equal(rm_nh_resolver_open(&res), 0);
	assert_int_equal(case_prepare(&ecmp), 0);
	assert_int_equal(resolve_nh(res, &rec), 1);
	rm_nh_resolver_close(res);
	assert_int_equal(rec.flags, RM_NH_F_VALID | RM_NH_F_ECMP);
	case_build(&ecmp, &p);
	assert_int_equal(dp_counters(fx, before), 0);
	dp_run(fx, p.b, p.len, if_rx, &r);
	assert_int_equal(dp_counters(fx, after), 0);
	assert_int_equal(r.err, 0);
	assert_true(r.retval == XDP_TX || r.retval == XDP_REDIRECT);
	assert_int_equal(after[RM_CNT_NH_ECMP] - before[RM_CNT_NH_ECMP], 1);
	assert_int_equal(after[RM_CNT_NH_FALLBACK] - before[RM_CNT_NH_FALLBACK],
			 0);
	assert_int_equal(after[RM_CNT_ENCAP_IPIP] - before[RM_CNT_ENCAP_IPIP],
			 1);
	assert_int_equal(set_nh(NULL), 0);
}

/* What no byte comparison shows: GUE source ports stay in 49152..65535
 * and differ across flows. */
static void test_fields(void **state)
{
	struct dp_spec s = T4();
	__be16 seen[64];
	int i, j, same = 0;

	(void)state;
	for (i = 0; i < 64; i++) {
		struct rm_flow f;

		s.sport = 1024 + i * 7;
		dp_flow(&s, 0, &f);
		seen[i] = rm_gue_sport(&f);
		assert_true(ntohs(seen[i]) >= 49152);
		for (j = 0; j < i; j++)
			same += seen[j] == seen[i];
	}
	/* 64 flows over 16384 ports: a handful of collisions at most */
	assert_true(same < 4);
}

/* Every frame of the table cut anywhere before the end of its IP packet
 * is dropped as malformed: never encapsulated, never answered. */
static void test_truncation(void **state)
{
	static struct dp_pkt p;
	size_t i, len, runs = 0;
	int failed = 0;

	(void)state;
	for (i = 0; i < N_CASES && failed < 20; i++) {
		const struct enc_case *c = &cases[i];

		assert_int_equal(case_prepare(c), 0);
		case_build(c, &p);
		for (len = ETH_HLEN; len < p.ip_end && failed < 20; len++) {
			failed += run_check(c->desc, p.b, len, XDP_DROP,
					    C(RM_CNT_DROP_MALFORMED), NULL, 0);
			runs++;
		}
	}
	print_message("encap truncation: %zu runs, %d failed\n", runs, failed);
	assert_int_equal(failed, 0);
}

/* Generated errors are bounded per CPU per second: this process runs on
 * one CPU, so 3 x RM_TOOBIG_RATE too-big frames sent within a second
 * (two budget windows at most) get at most 2 x RM_TOOBIG_RATE answers,
 * and every other one is counted as limited. */
static void test_rate_limit(void **state)
{
	static struct dp_pkt p;
	static struct dp_run r;
	const struct enc_case *c = &cases[N_CASES - 1];
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX], sent, limited;
	struct timespec t0, t1;
	int i, n = 3 * RM_TOOBIG_RATE;
	double secs;

	(void)state;
	assert_string_equal(c->desc, "one byte over");
	assert_int_equal(case_prepare(c), 0);
	case_build(c, &p);
	assert_int_equal(dp_counters(fx, before), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		dp_run(fx, p.b, p.len, if_rx, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(dp_counters(fx, after), 0);
	sent = after[RM_CNT_TOO_BIG_SENT] - before[RM_CNT_TOO_BIG_SENT];
	limited =
	    after[RM_CNT_TOO_BIG_LIMITED] - before[RM_CNT_TOO_BIG_LIMITED];
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("rate limit: %d too-big frames in %.3f s: %llu answered, "
		      "%llu limited\n",
		      n, secs, (unsigned long long)sent,
		      (unsigned long long)limited);
	assert_int_equal(sent + limited, n);
	assert_true(sent >= 1);
	/* within a second at most two windows, each with its budget;
	 * longer (a very loaded machine): one more window per second */
	assert_true(sent <= (__u64)RM_TOOBIG_RATE * (2 + (int)secs));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_table_records),
	    cmocka_unit_test(test_record_rules),
	    cmocka_unit_test(test_record_ecmp),
	    cmocka_unit_test(test_fields),
	    cmocka_unit_test(test_truncation),
	    cmocka_unit_test(test_rate_limit),
	};

	return cmocka_run_group_tests_name("encap", tests, group_setup,
					   group_teardown);
}
