/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data-plane table: a topology of services and nodes (build_topology
 * fills a fixture's maps with it) and the cases run against it, each with
 * its verdict and counters. test_dataplane checks every case; the
 * mutation fuzzer (test_dp_fuzz) starts from them.
 */
#ifndef DP_CASES_H
#define DP_CASES_H

#include "dp_fixture.h"

/* ---- topology of the table cases ----------------------------------- */
enum {
	SVC_V4_TCP80 = 0, /* 10.0.0.1 tcp/80, 5-tuple */
	SVC_V4_UDP,	  /* 10.0.0.1 udp/any, 3-tuple */
	SVC_V6_TCP443,	  /* 2001:db8::1 tcp/443, 5-tuple */
	SVC_V6_UDP,	  /* 2001:db8::1 udp/any, 3-tuple */
	SVC_V4_TCPANY,	  /* 10.0.0.1 tcp/any, 5-tuple */
	SVC_EMPTY,	  /* 10.0.0.2 tcp/80, ring without entries */
	SVC_NORING,	  /* 10.0.0.3 tcp/80, no ring at all */
	SVC_REDIR,	  /* 10.0.0.4 tcp/80, node behind a devmap port */
	SVC_REDIR_FAIL,	  /* 10.0.0.5 tcp/80, node's port not in the devmap */
	SVC_DOWN,	  /* 10.0.0.6 tcp/80, node down */
	SVC_CORRUPT,	  /* 10.0.0.7 tcp/80, ring header says 0 index bits */
	SVC_V6_TCP3,	  /* 2001:db8::2 tcp/80, 3-tuple */
	SVC_V4_TCP3,	  /* 10.0.0.8 tcp/80, 3-tuple */
	SVC_BADNODE, /* 10.0.0.9 tcp/80, ring names a node id past the map */
};

#define NODE_REDIR 20
#define NODE_REDIR_FAIL 21
#define NODE_DOWN 22
#define PORT_REDIR 1000	     /* devmap key; the entry sends to lo */
#define PORT_REDIR_FAIL 1001 /* no devmap entry */
#define LO_IFINDEX 1

#define CLIENT4 "198.51.100.7"
#define CLIENT6 "2001:db8:c::7"

static int build_topology(struct dp_fx *f)
{
	struct bpf_devmap_val port = {.ifindex = LO_IFINDEX};
	__u32 key = PORT_REDIR, id;
	struct rm_slot corrupt[3] = {{5, 0, 0, 0}};
	/* one entry (point 0x10) owned by a node id rm_nodes cannot hold */
	struct rm_slot badnode[4] = {
	    {1, 1, 0, 0},
	    {0, 1, 0x10, RM_MAX_NODES + 7},
	    {1, 1, 0, RM_MAX_NODES + 7},
	    {0x10, RM_MAX_NODES + 7, 0, 0},
	};
	int err = 0;

	err |= dp_set_config(f, RM_CFG_SEEDED);
	for (id = 1; id <= 16; id++)
		err |= dp_set_node(f, id, LO_IFINDEX, RM_NODE_ACTIVE);
	err |= dp_set_node(f, NODE_REDIR, PORT_REDIR, RM_NODE_ACTIVE);
	err |= dp_set_node(f, NODE_REDIR_FAIL, PORT_REDIR_FAIL, RM_NODE_ACTIVE);
	err |= dp_set_node(f, NODE_DOWN, LO_IFINDEX, RM_NODE_DOWN);
	err |= bpf_map_update_elem(f->tx_ports, &key, &port, BPF_ANY);

	err |= dp_service(f, 4, "10.0.0.1", IPPROTO_TCP, 80, SVC_V4_TCP80, 0);
	err |= dp_service(f, 4, "10.0.0.1", IPPROTO_UDP, 0, SVC_V4_UDP,
			  RM_SVC_F_3TUPLE);
	err |=
	    dp_service(f, 6, "2001:db8::1", IPPROTO_TCP, 443, SVC_V6_TCP443, 0);
	err |= dp_service(f, 6, "2001:db8::1", IPPROTO_UDP, 0, SVC_V6_UDP,
			  RM_SVC_F_3TUPLE);
	err |= dp_service(f, 4, "10.0.0.1", IPPROTO_TCP, 0, SVC_V4_TCPANY, 0);
	err |= dp_service(f, 4, "10.0.0.2", IPPROTO_TCP, 80, SVC_EMPTY, 0);
	err |= dp_service(f, 4, "10.0.0.3", IPPROTO_TCP, 80, SVC_NORING, 0);
	err |= dp_service(f, 4, "10.0.0.4", IPPROTO_TCP, 80, SVC_REDIR, 0);
	err |= dp_service(f, 4, "10.0.0.5", IPPROTO_TCP, 80, SVC_REDIR_FAIL, 0);
	err |= dp_service(f, 4, "10.0.0.6", IPPROTO_TCP, 80, SVC_DOWN, 0);
	err |= dp_service(f, 4, "10.0.0.7", IPPROTO_TCP, 80, SVC_CORRUPT, 0);
	err |= dp_service(f, 6, "2001:db8::2", IPPROTO_TCP, 80, SVC_V6_TCP3,
			  RM_SVC_F_3TUPLE);
	err |= dp_service(f, 4, "10.0.0.8", IPPROTO_TCP, 80, SVC_V4_TCP3,
			  RM_SVC_F_3TUPLE);
	err |= dp_service(f, 4, "10.0.0.9", IPPROTO_TCP, 80, SVC_BADNODE, 0);
	if (err)
		return -1;

	/* disjoint node sets, so a wrong service shows as a wrong node */
	err |= dp_push_ring(f, (__u32[]){SVC_V4_TCP80}, 1, 1, 3, 100);
	err |=
	    dp_push_ring(f, (__u32[]){SVC_V4_UDP, SVC_V6_TCP3}, 2, 4, 4, 100);
	err |= dp_push_ring(f, (__u32[]){SVC_V6_TCP443}, 1, 8, 3,
			    RM_DEFAULT_VNODES);
	err |=
	    dp_push_ring(f, (__u32[]){SVC_V6_UDP, SVC_V4_TCP3}, 2, 11, 4, 100);
	err |= dp_push_ring(f, (__u32[]){SVC_V4_TCPANY}, 1, 15, 2, 100);
	err |= dp_push_ring(f, (__u32[]){SVC_EMPTY}, 1, 0, 0, 100);
	err |= dp_push_ring(f, (__u32[]){SVC_REDIR}, 1, NODE_REDIR, 1, 10);
	err |= dp_push_ring(f, (__u32[]){SVC_REDIR_FAIL}, 1, NODE_REDIR_FAIL, 1,
			    10);
	err |= dp_push_ring(f, (__u32[]){SVC_DOWN}, 1, NODE_DOWN, 1, 10);
	err |= dp_push_slots(f, SVC_CORRUPT, corrupt, 3);
	err |= dp_push_slots(f, SVC_BADNODE, badnode, 4);
	return err ? -1 : 0;
}

/* ---- the table ------------------------------------------------------ */
#define C(x) (1ull << (x))
/* Connection table, empty before each run: the first non-SYN packet of a
 * flow misses and writes; ICMP errors and SYNs of 3-tuple services look
 * up and never write; SYNs of 5-tuple services do not look up at all. */
#define CT_NEW (C(RM_CNT_CONN_MISS) | C(RM_CNT_CONN_INSERT))
#define CT_LOOK C(RM_CNT_CONN_MISS)
#define FWD C(RM_CNT_FWD_TX)
#define ICMP_FWD (C(RM_CNT_FWD_TX) | C(RM_CNT_ICMP_FORWARDED) | CT_LOOK)
#define NOT_SVC C(RM_CNT_PASS_NOT_SERVICE)
#define MALFORMED C(RM_CNT_DROP_MALFORMED)
#define NO_NODE C(RM_CNT_DROP_NO_NODE)

#define V4(p, vip, sp, dp)                                                     \
	.family = 4, .proto = (p), .src = CLIENT4, .dst = (vip),               \
	.sport = (sp), .dport = (dp)
#define V6(p, vip, sp, dp)                                                     \
	.family = 6, .proto = (p), .src = CLIENT6, .dst = (vip),               \
	.sport = (sp), .dport = (dp)
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP

struct dp_case {
	const char *desc;
	struct dp_spec s;
	__u32 verdict;
	__u64 counters; /* C() mask of counters that rise by exactly 1 */
	int svc;	/* forwarding service (owner, stats); -1 none */
	__u32 ifindex;	/* ctx ingress_ifindex; 0 = test_run's default */
};

/* One case per entry reads better than 80 columns. */
// clang-format off
static const struct dp_case cases[] = {
	/* forwarded, IPv4 */
	{ "v4 tcp exact port", { V4(TCP, "10.0.0.1", 40000, 80) },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 tcp exact port, ingress ifindex given", { V4(TCP, "10.0.0.1", 40001, 80) },
	  XDP_TX, FWD, SVC_V4_TCP80, LO_IFINDEX },
	{ "v4 tcp 802.1Q", { V4(TCP, "10.0.0.1", 40002, 80), .vlans = 1 },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 tcp 802.1ad+802.1Q", { V4(TCP, "10.0.0.1", 40003, 80), .vlans = 2 },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 tcp wildcard port", { V4(TCP, "10.0.0.1", 40004, 8080) },
	  XDP_TX, FWD, SVC_V4_TCPANY, 0 },
	{ "v4 tcp ip options", { V4(TCP, "10.0.0.1", 40005, 80), .ip_opts = 3 },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 tcp max ip options", { V4(TCP, "10.0.0.1", 40006, 80), .ip_opts = 10, .payload = 5 },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 udp wildcard 3-tuple", { V4(UDP, "10.0.0.1", 5353, 53), .payload = 30 },
	  XDP_TX, FWD | CT_NEW, SVC_V4_UDP, 0 },
	{ "v4 udp 2 tags", { V4(UDP, "10.0.0.1", 5354, 9999), .vlans = 2 },
	  XDP_TX, FWD | CT_NEW, SVC_V4_UDP, 0 },
	{ "v4 udp Ethernet padding", { V4(UDP, "10.0.0.1", 5355, 53), .pad_to = 60 },
	  XDP_TX, FWD | CT_NEW, SVC_V4_UDP, 0 },
	{ "v4 tcp jumbo frame", { V4(TCP, "10.0.0.1", 40007, 80), .payload = 3000 },
	  XDP_TX, FWD, SVC_V4_TCP80, 0 },
	{ "v4 tcp 3-tuple", { V4(TCP, "10.0.0.8", 40008, 80) },
	  XDP_TX, FWD | CT_LOOK, SVC_V4_TCP3, 0 },
	{ "v4 redirect to devmap port", { V4(TCP, "10.0.0.4", 40009, 80) },
	  XDP_REDIRECT, C(RM_CNT_FWD_REDIRECT), SVC_REDIR, 0 },
	{ "v4 redirect, ingress ifindex given", { V4(TCP, "10.0.0.4", 40010, 80), .vlans = 1 },
	  XDP_REDIRECT, C(RM_CNT_FWD_REDIRECT), SVC_REDIR, LO_IFINDEX },
	/* forwarded, IPv6 */
	{ "v6 tcp exact port", { V6(TCP, "2001:db8::1", 40100, 443) },
	  XDP_TX, FWD, SVC_V6_TCP443, 0 },
	{ "v6 tcp 802.1Q", { V6(TCP, "2001:db8::1", 40101, 443), .vlans = 1 },
	  XDP_TX, FWD, SVC_V6_TCP443, 0 },
	{ "v6 tcp 2 tags", { V6(TCP, "2001:db8::1", 40102, 443), .vlans = 2 },
	  XDP_TX, FWD, SVC_V6_TCP443, 0 },
	{ "v6 tcp hop-by-hop + dstopts", { V6(TCP, "2001:db8::1", 40103, 443), .ext = 2 },
	  XDP_TX, FWD, SVC_V6_TCP443, 0 },
	{ "v6 udp 8 ext headers (the limit)", { V6(UDP, "2001:db8::1", 40104, 4789), .ext = 8 },
	  XDP_TX, FWD | CT_NEW, SVC_V6_UDP, 0 },
	{ "v6 udp wildcard 3-tuple", { V6(UDP, "2001:db8::1", 40105, 53), .payload = 100 },
	  XDP_TX, FWD | CT_NEW, SVC_V6_UDP, 0 },
	{ "v6 udp 2 tags padded", { V6(UDP, "2001:db8::1", 40106, 53), .vlans = 2, .pad_to = 120 },
	  XDP_TX, FWD | CT_NEW, SVC_V6_UDP, 0 },
	{ "v6 tcp 3-tuple", { V6(TCP, "2001:db8::2", 40107, 80) },
	  XDP_TX, FWD | CT_LOOK, SVC_V6_TCP3, 0 },
	/* ICMP errors */
	{ "icmp4 frag-needed quoting tcp", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 40200, 80), .icmp_type = 3, .icmp_code = 4 },
	  XDP_TX, ICMP_FWD, SVC_V4_TCP80, 0 },
	{ "icmp4 host-unreachable quoting udp, 1 tag", { .kind = DP_ICMP_ERR, V4(UDP, "10.0.0.1", 40201, 53), .icmp_type = 3, .icmp_code = 1, .vlans = 1 },
	  XDP_TX, ICMP_FWD, SVC_V4_UDP, 0 },
	{ "icmp4 time-exceeded quoting tcp, long quote", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 40202, 8080), .icmp_type = 11, .quote = 40 },
	  XDP_TX, ICMP_FWD, SVC_V4_TCPANY, 0 },
	{ "icmp4 error quoting a first fragment", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 40203, 80), .icmp_type = 3, .icmp_code = 4, .frag = DP_FRAG_FIRST },
	  XDP_TX, ICMP_FWD, SVC_V4_TCP80, 0 },
	{ "icmp4 error quoting a later fragment, 3-tuple", { .kind = DP_ICMP_ERR, V4(UDP, "10.0.0.1", 0, 0), .icmp_type = 3, .icmp_code = 4, .frag = DP_FRAG_LATER },
	  XDP_TX, ICMP_FWD, SVC_V4_UDP, 0 },
	{ "icmp6 packet-too-big quoting tcp", { .kind = DP_ICMP_ERR, V6(TCP, "2001:db8::1", 40204, 443), .icmp_type = 2 },
	  XDP_TX, ICMP_FWD, SVC_V6_TCP443, 0 },
	{ "icmp6 dest-unreachable quoting udp, 2 tags", { .kind = DP_ICMP_ERR, V6(UDP, "2001:db8::1", 40205, 53), .icmp_type = 1, .icmp_code = 3, .vlans = 2 },
	  XDP_TX, ICMP_FWD, SVC_V6_UDP, 0 },
	{ "icmp6 time-exceeded quoting tcp with ext headers", { .kind = DP_ICMP_ERR, V6(TCP, "2001:db8::1", 40206, 443), .icmp_type = 3, .ext = 2 },
	  XDP_TX, ICMP_FWD, SVC_V6_TCP443, 0 },
	{ "icmp6 error quoting a later fragment, 3-tuple", { .kind = DP_ICMP_ERR, V6(TCP, "2001:db8::2", 0, 0), .icmp_type = 2, .frag = DP_FRAG_LATER },
	  XDP_TX, ICMP_FWD, SVC_V6_TCP3, 0 },
	{ "icmp4 error via devmap port", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.4", 40207, 80), .icmp_type = 3, .icmp_code = 4 },
	  XDP_REDIRECT, C(RM_CNT_FWD_REDIRECT) | C(RM_CNT_ICMP_FORWARDED) | CT_LOOK, SVC_REDIR, 0 },
	/* fragments of 3-tuple services */
	{ "v4 udp first fragment, 3-tuple", { V4(UDP, "10.0.0.1", 40300, 53), .frag = DP_FRAG_FIRST, .payload = 64 },
	  XDP_TX, FWD | CT_NEW, SVC_V4_UDP, 0 },
	{ "v4 udp later fragment, 3-tuple", { V4(UDP, "10.0.0.1", 0, 0), .frag = DP_FRAG_LATER },
	  XDP_TX, FWD | CT_NEW, SVC_V4_UDP, 0 },
	{ "v4 tcp later fragment, 3-tuple, 1 tag", { V4(TCP, "10.0.0.8", 0, 0), .frag = DP_FRAG_LATER, .vlans = 1 },
	  XDP_TX, FWD | CT_NEW, SVC_V4_TCP3, 0 },
	{ "v6 udp first fragment, 3-tuple", { V6(UDP, "2001:db8::1", 40301, 53), .frag = DP_FRAG_FIRST, .payload = 64 },
	  XDP_TX, FWD | CT_NEW, SVC_V6_UDP, 0 },
	{ "v6 udp later fragment, 3-tuple", { V6(UDP, "2001:db8::1", 0, 0), .frag = DP_FRAG_LATER },
	  XDP_TX, FWD | CT_NEW, SVC_V6_UDP, 0 },
	{ "v6 tcp later fragment after dstopts, 3-tuple", { V6(TCP, "2001:db8::2", 0, 0), .frag = DP_FRAG_LATER, .ext = 2 },
	  XDP_TX, FWD | CT_NEW, SVC_V6_TCP3, 0 },
	/* fragments of 5-tuple services */
	{ "v4 tcp first fragment, 5-tuple", { V4(TCP, "10.0.0.1", 40400, 80), .frag = DP_FRAG_FIRST },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v6 tcp first fragment, 5-tuple", { V6(TCP, "2001:db8::1", 40401, 443), .frag = DP_FRAG_FIRST },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v4 tcp later fragment, 5-tuple", { V4(TCP, "10.0.0.1", 0, 0), .frag = DP_FRAG_LATER },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v4 tcp later fragment, 5-tuple, 2 tags", { V4(TCP, "10.0.0.2", 0, 0), .frag = DP_FRAG_LATER, .vlans = 2 },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v6 tcp later fragment, 5-tuple", { V6(TCP, "2001:db8::1", 0, 0), .frag = DP_FRAG_LATER },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v6 tcp later fragment after dstopts, 5-tuple", { V6(TCP, "2001:db8::1", 0, 0), .frag = DP_FRAG_LATER, .ext = 2 },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "icmp6 error quoting a 5-tuple later fragment", { .kind = DP_ICMP_ERR, V6(TCP, "2001:db8::1", 0, 0), .icmp_type = 2, .frag = DP_FRAG_LATER },
	  XDP_DROP, C(RM_CNT_DROP_FRAGMENT), -1, 0 },
	{ "v4 udp later fragment to a tcp-only vip", { V4(UDP, "10.0.0.2", 0, 0), .frag = DP_FRAG_LATER },
	  XDP_PASS, NOT_SVC, -1, 0 },
	/* not ours */
	{ "arp", { .kind = DP_ARP, .family = 4, .src = "10.0.0.254", .dst = "10.0.0.1" },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "arp 802.1Q", { .kind = DP_ARP, .family = 4, .src = "10.0.0.254", .dst = "10.0.0.1", .vlans = 1 },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "3 vlan tags: not parsed further", { V4(TCP, "10.0.0.1", 40500, 80), .vlans = 3 },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v4 tcp other address", { V4(TCP, "10.0.0.100", 40501, 80) },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v4 udp to a tcp-only vip", { V4(UDP, "10.0.0.2", 40502, 80) },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v6 tcp other port", { V6(TCP, "2001:db8::1", 40503, 80) },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v4 gre to vip", { .kind = DP_OTHER_PROTO, V4(TCP, "10.0.0.1", 0, 0), .other_proto = 47 },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v6 no-next-header", { .kind = DP_OTHER_PROTO, V6(TCP, "2001:db8::1", 0, 0), .other_proto = 59 },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "icmp4 echo to vip", { .kind = DP_ICMP_ECHO, V4(TCP, "10.0.0.1", 0, 0) },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "icmp6 echo to vip", { .kind = DP_ICMP_ECHO, V6(TCP, "2001:db8::1", 0, 0) },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "icmp4 error quoting a non-service flow", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.100", 40504, 22), .icmp_type = 3, .icmp_code = 3 },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "icmp4 error quoting icmp", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 0, 0), .icmp_type = 3, .inner_proto = IPPROTO_ICMP },
	  XDP_PASS, NOT_SVC, -1, 0 },
	{ "v6 9 ext headers: over the limit", { V6(UDP, "2001:db8::1", 40505, 53), .ext = 9 },
	  XDP_PASS, C(RM_CNT_PASS_EXT_LIMIT), -1, 0 },
	{ "icmp6 quote with 9 ext headers", { .kind = DP_ICMP_ERR, V6(UDP, "2001:db8::1", 40506, 53), .icmp_type = 2, .ext = 9 },
	  XDP_PASS, C(RM_CNT_PASS_EXT_LIMIT), -1, 0 },
	/* malformed */
	{ "v4 ihl 4", { V4(TCP, "10.0.0.1", 40600, 80), .mangle = DP_BAD_IHL },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 total length past the frame", { V4(TCP, "10.0.0.1", 40601, 80), .mangle = DP_TOTLEN_BIG },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 version 6 header", { V4(TCP, "10.0.0.1", 40602, 80), .mangle = DP_BAD_VERSION },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 truncated tcp header", { V4(TCP, "10.0.0.1", 40603, 80), .l4_short = 10 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 truncated tcp header in padding", { V4(TCP, "10.0.0.1", 40604, 80), .l4_short = 10, .pad_to = 80 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 tcp doff 4", { V4(TCP, "10.0.0.1", 40605, 80), .mangle = DP_TCP_DOFF },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v4 truncated udp header, non-service", { V4(UDP, "10.0.0.100", 40606, 53), .l4_short = 3 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v6 payload length past the frame", { V6(UDP, "2001:db8::1", 40607, 53), .mangle = DP_PLEN_BIG },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v6 truncated udp header", { V6(UDP, "2001:db8::1", 40608, 53), .l4_short = 2 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "v6 ext header longer than the packet", { V6(UDP, "2001:db8::1", 40609, 53), .ext = 1, .mangle = DP_EXT_OVERLONG },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "vlan tag cut short", { V4(TCP, "10.0.0.1", 40610, 80), .vlans = 1, .mangle = DP_VLAN_CUT },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "icmp4 quote without l4 bytes", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 40611, 80), .icmp_type = 3, .icmp_code = 4, .quote = -1 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "icmp4 quote with 4 l4 bytes", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.1", 40612, 80), .icmp_type = 3, .icmp_code = 4, .quote = 4 },
	  XDP_DROP, MALFORMED, -1, 0 },
	{ "icmp6 quote without l4 bytes", { .kind = DP_ICMP_ERR, V6(TCP, "2001:db8::1", 40613, 443), .icmp_type = 2, .quote = -1 },
	  XDP_DROP, MALFORMED, -1, 0 },
	/* no node */
	{ "empty ring", { V4(TCP, "10.0.0.2", 40700, 80) },
	  XDP_DROP, NO_NODE, -1, 0 },
	{ "no ring", { V4(TCP, "10.0.0.3", 40701, 80) },
	  XDP_DROP, NO_NODE, -1, 0 },
	{ "node down", { V4(TCP, "10.0.0.6", 40702, 80) },
	  XDP_DROP, NO_NODE, -1, 0 },
	{ "corrupt ring", { V4(TCP, "10.0.0.7", 40703, 80) },
	  XDP_DROP, NO_NODE, -1, 0 },
	{ "ring names a node past rm_nodes", { V4(TCP, "10.0.0.9", 40704, 80) },
	  XDP_DROP, NO_NODE, -1, 0 },
	{ "icmp4 error for a service with an empty ring", { .kind = DP_ICMP_ERR, V4(TCP, "10.0.0.2", 40705, 80), .icmp_type = 3, .icmp_code = 4 },
	  XDP_DROP, NO_NODE | CT_LOOK, -1, 0 },
	{ "devmap port missing", { V4(TCP, "10.0.0.5", 40706, 80) },
	  XDP_DROP, C(RM_CNT_REDIRECT_FAILED), -1, 0 },
};
// clang-format on

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The program loaded and the topology in its maps, for suite `who`:
 * 0 with *out set; 0 with *out NULL when BPF is not open to this user
 * (every test then skips, saying why); -1 on any other failure (the
 * verifier's, say). */
static inline int dp_cases_open(const char *who, struct dp_fx **out,
				char *why, size_t why_len)
{
	if (dp_fx_open_group(who, out, why, why_len))
		return -1;
	if (!*out)
		return 0;
	if (build_topology(*out)) {
		fprintf(stderr, "%s: cannot fill the maps: %s\n", who,
			strerror(errno));
		return -1;
	}
	return 0;
}

#endif /* DP_CASES_H */
