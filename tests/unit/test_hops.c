// SPDX-License-Identifier: GPL-2.0
/*
 * Second chance in the data plane (bpf/hops.h, include/ringmaster/
 * rm_hops.h, the hop list of bpf/encap.h), run in the kernel through
 * bpf_prog_test_run_opts with the next hop from a real bpf_fib_lookup in
 * a namespace of the test's own (as test_encap.c).
 *
 * Each case installs a current ring and remembered generations (with
 * their retire stamps) in the maps as the control plane would, sends
 * flows, and checks the verdict, the exact output bytes (the hop list
 * computed here from the rings, independently of rm_hops.h), the
 * counters and the connection table:
 *   changed     owners that changed get [current, older...], newest
 *               first, deduplicated; unchanged ones variant 1
 *   v6          the same over IPv6 (16-byte hops)
 *   syn         a SYN never carries hops
 *   expired     a generation past the window is ignored
 *   off         window 0: nothing
 *   states      DOWN, FREE, health-out, another service's, another
 *               family's and IPIP old owners are never hops
 *   udp, ipip   UDP flows and IPIP current owners: nothing
 *   conn        a valid table entry wins; a stale one gets hops
 *   mtu         the hop list counts against the path MTU
 *   agree       ringctl lookup's selection (hops.c) is the kernel's, on
 *               2000 random flows
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
#include "hops.h"
#include "util.h"

static const __u8 mac_tx[6] = {0x02, 0, 0, 0, 0x02, 0x01}; /* tx0 */
static const __u8 mac_gw[6] = {0x02, 0, 0, 0, 0x02, 0x02}; /* via tx0 */

#define SRC4 "198.18.2.1"
#define SRC6 "2001:db8:2::1"
#define CLIENT4 "198.18.200.7"
#define CLIENT6 "2001:db8:c8::7"
#define VIP4 "198.18.50.1"
#define VIP6 "2001:db8:50::1"

static const char *const netns_setup[] = {
    "ip link set lo up",
    "ip link add rx0 address 02:00:00:00:00:fe type veth peer name rx1",
    "ip link add tx0 address 02:00:00:00:02:01 type veth peer name tx1",
    "ip link set rx0 up && ip link set rx1 up && ip link set tx0 up && "
    "ip link set tx1 up",
    "sysctl -qw net.ipv4.conf.all.forwarding=1 "
    "net.ipv6.conf.all.forwarding=1",
    "ip addr add 198.18.1.1/24 dev rx0",
    "ip addr add " SRC4 "/24 dev tx0 && ip addr add " SRC6 "/64 dev tx0 nodad",
    "ip neigh add 198.18.2.2 lladdr 02:00:00:00:02:02 dev tx0 nud permanent",
    "ip neigh add 2001:db8:2::2 lladdr 02:00:00:00:02:02 dev tx0 "
    "nud permanent",
    "ip route add 198.19.0.0/24 via 198.18.2.2",
    "ip route add 2001:db8:100::/64 via 2001:db8:2::2",
    /* a path with a smaller MTU */
    "ip route add 198.19.4.0/24 via 198.18.2.2 mtu lock 1400",
};

enum { SVC_T4 = 0, SVC_T6, SVC_U4 };
#define WINDOW_S 900
#define NFLOWS 96
#define SEC 1000000000ULL

static struct dp_fx *fx;
static int if_rx, if_tx, rings_old;
static char skip_why[256];

/* What the test keeps of each ring it pushed (current: gen -1). */
struct ring_copy {
	struct rm_slot *slots;
	__u32 nslots;
	__u64 stamp; /* retired at; 0: none */
};
static struct ring_copy cur_ring[3], old_ring[3][RM_RING_GENS];

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC + ts.tv_nsec;
}

static int set_config(__u32 window_s)
{
	struct rm_config cfg = {
	    .seed = dp_seed,
	    .udp_timeout_s = 60,
	    .flags = RM_CFG_SEEDED,
	    .conn_insert_rate = RM_DEFAULT_CONN_INSERT_RATE,
	    .handover_window_s = window_s,
	};
	__u32 zero = 0;

	dp_addr(4, SRC4, (__u8 *)&cfg.encap_src4);
	dp_addr(6, SRC6, (__u8 *)cfg.encap_src6);
	return bpf_map_update_elem(fx->config, &zero, &cfg, BPF_ANY);
}

/* Node id of service svc: GUE to 198.19.<net>.<id> (or 2001:db8:100::
 * <id> with family 6), state, via. */
static int set_node(__u32 id, __u32 svc, int family, int net, __u32 state,
		    __u8 via)
{
	struct rm_node n = {
	    .state = state,
	    .gen = 1,
	    .weight = 1,
	    .svc_id = svc,
	    .via = via,
	    .addr_family = family == 6 ? RM_FAMILY_V6 : RM_FAMILY_V4,
	    .gue_port = htons(RM_GUE_PORT),
	};
	char a[64];

	if (family == 6)
		snprintf(a, sizeof(a), "2001:db8:100::%x", id);
	else
		snprintf(a, sizeof(a), "198.19.%d.%u", net, id);
	dp_addr(family, a, (__u8 *)n.addr);
	snprintf(n.name, sizeof(n.name), "n%u", id);
	return bpf_map_update_elem(fx->nodes, &id, &n, BPF_ANY);
}

/* The ring of nodes ids[] (names n<id>, weight 1) as service svc's
 * current ring (g < 0) or its remembered generation g stamped `stamp`. */
static int push_ring(__u32 svc, int g, const __u32 *ids, __u32 n,
		     __u64 stamp)
{
	static const struct rm_ring_spec spec = {0};
	struct rm_node_spec specs[8] = {0};
	struct ring_copy *rc = g < 0 ? &cur_ring[svc] : &old_ring[svc][g];
	struct rm_ring ring;
	__u32 key = svc * RM_RING_GENS + g;
	int err, fd;

	for (__u32 i = 0; i < n; i++) {
		snprintf(specs[i].name, sizeof(specs[i].name), "n%u", ids[i]);
		specs[i].weight = 1;
		specs[i].id = ids[i];
	}
	err = rm_ring_build_spec(&dp_seed, &spec, specs, n, 64, &ring);
	if (err)
		return err;
	free(rc->slots);
	rc->nslots = rm_ring_nslots(&ring);
	rc->slots = calloc(rc->nslots, sizeof(*rc->slots));
	err = rc->slots ? rm_ring_encode(&ring, rc->slots, rc->nslots)
			: -ENOMEM;
	rm_ring_free(&ring);
	if (err)
		return err;
	if (g < 0)
		return dp_push_slots(fx, svc, rc->slots, rc->nslots);
	rc->stamp = stamp;
	rm_ring_hdr_set_cd(&rc->slots[0], stamp);
	fd = rm_ring_map_create(rc->slots, rc->nslots, "rm_ring_old");
	if (fd < 0)
		return fd;
	err = bpf_map_update_elem(rings_old, &key, &fd, BPF_ANY) ? -errno : 0;
	close(fd);
	return err;
}

static void drop_gen(__u32 svc, int g)
{
	__u32 key = svc * RM_RING_GENS + g;

	bpf_map_delete_elem(rings_old, &key);
	old_ring[svc][g].stamp = 0;
	free(old_ring[svc][g].slots);
	old_ring[svc][g].slots = NULL;
}

static int group_setup(void **state)
{
	size_t i;
	int err = 0;

	(void)state;
	if (geteuid()) {
		fprintf(stderr, "test_hops: needs root (BPF, namespaces)\n");
		return -1;
	}
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "test_hops: unshare: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(netns_setup) / sizeof(*netns_setup); i++)
		if (system(netns_setup[i])) {
			fprintf(stderr, "test_hops: failed: %s\n",
				netns_setup[i]);
			return -1;
		}
	if_rx = if_nametoindex("rx0");
	if_tx = if_nametoindex("tx0");
	fx = dp_fx_open(&err, skip_why, sizeof(skip_why));
	if (!fx) {
		fprintf(stderr, "test_hops: %s\n", skip_why);
		return -1;
	}
	rings_old = bpf_map__fd(fx->skel->maps.rm_rings_old);
	{
		struct bpf_devmap_val port = {.ifindex = if_tx};
		__u32 key = if_tx;

		err |= bpf_map_update_elem(fx->tx_ports, &key, &port, BPF_ANY);
	}
	err |= set_config(WINDOW_S);
	err |= dp_service(fx, 4, VIP4, IPPROTO_TCP, 80, SVC_T4, 0);
	err |= dp_service(fx, 6, VIP6, IPPROTO_TCP, 80, SVC_T6, 0);
	err |= dp_service(fx, 4, VIP4, IPPROTO_UDP, 53, SVC_U4, 0);
	if (err) {
		fprintf(stderr, "test_hops: cannot fill the maps\n");
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int s = 0; s < 3; s++) {
		free(cur_ring[s].slots);
		for (int g = 0; g < RM_RING_GENS; g++)
			free(old_ring[s][g].slots);
	}
	dp_fx_close(fx);
	return 0; /* the namespace goes with the process */
}

/* ---- the expected hop list, from the rules (not from rm_hops.h) ---- */
static struct rm_node node_of(__u32 id)
{
	struct rm_node n = {0};

	bpf_map_lookup_elem(fx->nodes, &id, &n);
	return n;
}

static long owner_on(const struct ring_copy *rc, __u32 h)
{
	__u32 id;

	if (!rc->slots || rm_ring_lookup(rc->slots, rc->nslots, h, &id))
		return -1;
	return id;
}

/* Hops of flow f of service svc at window window_s: count, and ids. */
static int expect_hops(__u32 svc, const struct rm_flow *f, __u32 window_s,
		       __u32 *ids)
{
	__u32 h = rm_flow_hash(&dp_seed, f), n = 1;
	struct rm_node cur, o;
	__u64 now = mono_ns();

	ids[0] = owner_on(&cur_ring[svc], h);
	cur = node_of(ids[0]);
	if (!window_s || cur.via != RM_VIA_GUE || f->proto != IPPROTO_TCP)
		return 1;
	for (int g = 0; g < RM_RING_GENS; g++) {
		const struct ring_copy *rc = &old_ring[svc][g];
		long id = owner_on(rc, h);
		bool dup = false;

		if (id < 0 || !rc->stamp ||
		    now - rc->stamp > (__u64)window_s * SEC)
			continue;
		for (__u32 k = 0; k < n; k++)
			dup |= ids[k] == (__u32)id;
		o = node_of(id);
		if (dup || (o.state != RM_NODE_ACTIVE &&
			    o.state != RM_NODE_DRAINING) ||
		    o.health.out || o.svc_id != svc || o.via != RM_VIA_GUE ||
		    o.addr_family != cur.addr_family)
			continue;
		ids[n++] = id;
	}
	return n;
}

/* The frame the director must send: outer header, UDP, and for more
 * than one hop the GUE header and the hop list, then the inner packet. */
static size_t expect_frame(const struct dp_spec *s, const struct dp_pkt *p,
			   const __u32 *ids, int nh, __u8 *out)
{
	size_t inner = p->ip_end - p->l2_len, n, extra = 0;
	struct rm_node cur = node_of(ids[0]);
	int v6 = cur.addr_family == RM_FAMILY_V6, alen = v6 ? 16 : 4;
	char dst[64];
	struct rm_flow f;

	if (nh > 1)
		extra = rm_gue_hops_len(nh, cur.addr_family);
	memcpy(out, mac_gw, 6);
	memcpy(out + 6, mac_tx, 6);
	dp_put16(out + 12, v6 ? ETH_P_IPV6 : ETH_P_IP);
	dp_flow(s, 0, &f);
	rm_format_addr(cur.addr, cur.addr_family, dst, sizeof(dst));
	n = ETH_HLEN + dp_outer(out + ETH_HLEN, v6 ? 6 : 4, v6 ? SRC6 : SRC4,
				dst, 0, 0, inner + extra, rm_gue_sport(&f),
				RM_GUE_PORT);
	if (nh > 1) {
		__u8 *g = out + n;

		g[0] = (extra - 4) / 4; /* ver 0, C 0, hlen in words */
		g[1] = s->family == 6 ? 41 : 4;
		g[2] = g[3] = 0;
		dp_put16(g + 4, RM_GUE_PRIV_HOPS);
		g[6] = 1; /* next */
		g[7] = nh;
		for (int i = 0; i < nh; i++) {
			struct rm_node o = node_of(ids[i]);

			memcpy(g + 8 + i * alen, o.addr, alen);
		}
		n += extra;
	}
	memcpy(out + n, p->b + p->l2_len, inner);
	return n + inner;
}

/* ---- running ----------------------------------------------------------- */
#define C(x) (1u << (x))
/* the fixture writes no next-hop records: every encapsulated packet
 * asks bpf_fib_lookup, counted (test_encap covers the records) */
#define NH_FIB C(RM_CNT_NH_FALLBACK)
#define GUE_OUT (C(RM_CNT_FWD_REDIRECT) | C(RM_CNT_ENCAP_GUE) | NH_FIB)
#define IPIP_OUT (C(RM_CNT_FWD_REDIRECT) | C(RM_CNT_ENCAP_IPIP) | NH_FIB)
#define CT_NEW (C(RM_CNT_CONN_MISS) | C(RM_CNT_CONN_INSERT))
#define HOPS (C(RM_CNT_CONN_MISS) | C(RM_CNT_HOPS_SENT))

struct tally {
	int flows, with_hops, three_hops, failed;
};

static struct dp_spec flow_spec(__u32 svc, int i, __u8 tcp_flags)
{
	struct dp_spec s = {
	    .family = svc == SVC_T6 ? 6 : 4,
	    .proto = svc == SVC_U4 ? IPPROTO_UDP : IPPROTO_TCP,
	    .src = svc == SVC_T6 ? CLIENT6 : CLIENT4,
	    .dst = svc == SVC_T6 ? VIP6 : VIP4,
	    .sport = 20000 + i * 13,
	    .dport = svc == SVC_U4 ? 53 : 80,
	    .payload = 20,
	    .tcp_flags = tcp_flags,
	};

	return s;
}

/* One frame: verdict, exact bytes, exact counters, and whether it left a
 * table entry. 1 on mismatch. */
static int run_one(const char *what, const struct dp_spec *s, __u32 verdict,
		   const __u8 *out, size_t out_len, __u32 counters,
		   long entries)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	static struct dp_pkt p;
	static struct dp_run r;
	int bad = 0;

	dp_build(s, &p);
	assert_int_equal(dp_counters(fx, before), 0);
	dp_run(fx, p.b, p.len, if_rx, &r);
	assert_int_equal(dp_counters(fx, after), 0);
	if (r.err || r.retval != verdict) {
		print_error("%s sport %u: verdict %s (err %d), want %s\n", what,
			    s->sport, dp_action_name(r.retval), r.err,
			    dp_action_name(verdict));
		bad = 1;
	}
	if (out && (r.out_len != out_len || memcmp(r.out, out, out_len))) {
		size_t j;

		for (j = 0; j < out_len && j < r.out_len; j++)
			if (r.out[j] != out[j])
				break;
		print_error("%s sport %u: output differs: len %u want %zu, "
			    "first difference at byte %zu\n",
			    what, s->sport, r.out_len, out_len, j);
		bad = 1;
	}
	bad |= dp_counters_rose(what, p.len, before, after, counters);
	if (entries >= 0 && dp_conns_count(fx) != entries) {
		print_error("%s sport %u: %ld table entries, want %ld\n", what,
			    s->sport, dp_conns_count(fx), entries);
		bad = 1;
	}
	return bad;
}

/* NFLOWS non-SYN flows of svc, each checked against the rules. */
static struct tally run_flows(const char *what, __u32 svc, __u32 window_s,
			      __u8 tcp_flags)
{
	static __u8 out[DP_PKT_MAX];
	static struct dp_pkt p;
	struct tally t = {0};

	for (int i = 0; i < NFLOWS; i++) {
		struct dp_spec s = flow_spec(svc, i, tcp_flags);
		bool syn = s.proto == IPPROTO_TCP && !(tcp_flags & DP_TCP_ACK);
		__u32 ids[RM_GUE_HOPS_MAX], counters;
		struct rm_flow f;
		int nh;
		size_t n;

		dp_flow(&s, 0, &f);
		nh = syn ? 1 : expect_hops(svc, &f, window_s, ids);
		if (syn)
			ids[0] = owner_on(&cur_ring[svc],
					  rm_flow_hash(&dp_seed, &f));
		dp_build(&s, &p);
		n = expect_frame(&s, &p, ids, nh, out);
		counters = GUE_OUT | (nh > 1 ? HOPS : syn ? 0 : CT_NEW);
		assert_int_equal(dp_conns_clear(fx), 0);
		t.failed += run_one(what, &s, XDP_REDIRECT, out, n, counters,
				    nh > 1 || syn ? 0 : 1);
		t.flows++;
		t.with_hops += nh > 1;
		t.three_hops += nh > 2;
	}
	print_message("%s: %d flows, %d with hops (%d with three), %d "
		      "failed\n",
		      what, t.flows, t.with_hops, t.three_hops, t.failed);
	return t;
}

/* Service svc's rings: cur now, g0 before, g1 before that (nodes as
 * ids, 0 ends a list; every node GUE, ACTIVE, of svc, family). */
static void gens_setup(__u32 svc, int family, const __u32 *cur,
		       const __u32 *g0, const __u32 *g1, __u64 age0_s,
		       __u64 age1_s)
{
	const __u32 *sets[3] = {cur, g0, g1};
	__u64 now = mono_ns(), ages[2] = {age0_s, age1_s};

	for (int k = 0; k < 3; k++)
		for (const __u32 *id = sets[k]; *id; id++)
			assert_int_equal(set_node(*id, svc, family, 0,
						  RM_NODE_ACTIVE, RM_VIA_GUE),
					 0);
	for (int k = 0; k < 3; k++) {
		__u32 n = 0;

		while (sets[k][n])
			n++;
		assert_int_equal(push_ring(svc, k - 1, sets[k], n,
					   k ? now - ages[k - 1] * SEC : 0),
				 0);
	}
	assert_int_equal(set_config(WINDOW_S), 0);
}

/* Nodes 1..3 now, 1..2 before, 1 before that: a flow owned by 3 now was
 * 1's or 2's, and 1's two changes ago. */
static void three_gens(__u32 svc, int family, __u64 age0_s, __u64 age1_s)
{
	gens_setup(svc, family, (__u32[]){1, 2, 3, 0}, (__u32[]){1, 2, 0},
		   (__u32[]){1, 0}, age0_s, age1_s);
}

static void test_changed(void **state)
{
	struct tally t;

	(void)state;
	three_gens(SVC_T4, 4, 60, 120);
	t = run_flows("v4 ack", SVC_T4, WINDOW_S, DP_TCP_ACK);
	assert_int_equal(t.failed, 0);
	/* a third of the flows moved to 3, two thirds of the rest were
	 * 2's and had been 1's: both kinds must be there */
	assert_true(t.with_hops > NFLOWS / 4 && t.with_hops < NFLOWS);
	assert_true(t.three_hops > 0);
}

static void test_v6(void **state)
{
	struct tally t;

	(void)state;
	three_gens(SVC_T6, 6, 1, 2);
	t = run_flows("v6 ack", SVC_T6, WINDOW_S, DP_TCP_ACK | DP_TCP_PSH);
	assert_int_equal(t.failed, 0);
	assert_true(t.with_hops > NFLOWS / 4 && t.three_hops > 0);
}

static void test_syn(void **state)
{
	struct tally t;

	(void)state;
	three_gens(SVC_T4, 4, 60, 120);
	t = run_flows("syn", SVC_T4, WINDOW_S, DP_TCP_SYN);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.with_hops, 0);
}

static void test_expired(void **state)
{
	struct tally t;

	(void)state;
	/* the older generation past the window: two hops at most */
	three_gens(SVC_T4, 4, 60, WINDOW_S + 30);
	t = run_flows("older expired", SVC_T4, WINDOW_S, DP_TCP_ACK);
	assert_int_equal(t.failed, 0);
	assert_true(t.with_hops > 0);
	assert_int_equal(t.three_hops, 0);
	/* both past it: nothing */
	three_gens(SVC_T4, 4, WINDOW_S + 10, WINDOW_S + 30);
	t = run_flows("both expired", SVC_T4, WINDOW_S, DP_TCP_ACK);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.with_hops, 0);
	/* no generation at all */
	drop_gen(SVC_T4, 0);
	drop_gen(SVC_T4, 1);
	t = run_flows("no generations", SVC_T4, WINDOW_S, DP_TCP_ACK);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.with_hops, 0);
}

static void test_off(void **state)
{
	struct tally t;

	(void)state;
	three_gens(SVC_T4, 4, 60, 120);
	assert_int_equal(set_config(0), 0);
	t = run_flows("window 0", SVC_T4, 0, DP_TCP_ACK);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.with_hops, 0);
}

/* Old owners that may not be hops, one kind at a time: each takes its
 * node out of every list, and the flows are checked against the rules
 * with that node so. */
static void test_states(void **state)
{
	struct {
		const char *what;
		__u32 node;
		__u32 st;
		int family, out, other_svc;
		__u8 via;
	} kinds[] = {
	    {"old owner down", 1, RM_NODE_DOWN, 4, 0, 0, RM_VIA_GUE},
	    {"old owner deleted", 1, RM_NODE_FREE, 4, 0, 0, RM_VIA_GUE},
	    {"old owner draining", 1, RM_NODE_DRAINING, 4, 0, 0, RM_VIA_GUE},
	    {"old owner out for health", 1, RM_NODE_ACTIVE, 4, 1, 0,
	     RM_VIA_GUE},
	    {"old owner of v6", 1, RM_NODE_ACTIVE, 6, 0, 0, RM_VIA_GUE},
	    {"old owner ipip", 1, RM_NODE_ACTIVE, 4, 0, 0, RM_VIA_IPIP},
	    {"slot of another service", 1, RM_NODE_ACTIVE, 4, 0, 1,
	     RM_VIA_GUE},
	};
	/* node 1 is in the remembered rings only (it left): 4 now */
	static const __u32 cur[] = {2, 3, 4, 0}, g0[] = {1, 2, 3, 0},
			   g1[] = {1, 2, 0};
	struct tally t, all;

	(void)state;
	gens_setup(SVC_T4, 4, cur, g0, g1, 60, 120);
	all = run_flows("all usable", SVC_T4, WINDOW_S, DP_TCP_ACK);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct rm_node n;

		gens_setup(SVC_T4, 4, cur, g0, g1, 60, 120);
		assert_int_equal(set_node(kinds[k].node,
					  kinds[k].other_svc ? SVC_U4 : SVC_T4,
					  kinds[k].family, 0, kinds[k].st,
					  kinds[k].via),
				 0);
		n = node_of(kinds[k].node);
		n.health.out = kinds[k].out;
		assert_int_equal(bpf_map_update_elem(fx->nodes, &kinds[k].node,
						     &n, BPF_ANY),
				 0);
		t = run_flows(kinds[k].what, SVC_T4, WINDOW_S, DP_TCP_ACK);
		assert_int_equal(t.failed, 0);
		/* fewer hops without node 1, except a draining node,
		 * which keeps its flows */
		if (kinds[k].st == RM_NODE_DRAINING)
			assert_int_equal(t.with_hops, all.with_hops);
		else
			assert_true(t.with_hops < all.with_hops);
	}
}

/* UDP: nothing (no socket state for a node to consult). A current owner
 * reached by IPIP: nothing, while GUE-owned flows still get hops. */
static void test_udp_ipip(void **state)
{
	static __u8 out[DP_PKT_MAX];
	static struct dp_pkt p;
	struct tally t;
	int failed = 0, ipip = 0;

	(void)state;
	three_gens(SVC_U4, 4, 60, 120);
	t = run_flows("udp", SVC_U4, WINDOW_S, 0);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.with_hops, 0);

	three_gens(SVC_T4, 4, 60, 120);
	assert_int_equal(set_node(3, SVC_T4, 4, 0, RM_NODE_ACTIVE,
				  RM_VIA_IPIP),
			 0);
	for (int i = 0; i < NFLOWS; i++) {
		struct dp_spec s = flow_spec(SVC_T4, i, DP_TCP_ACK);
		__u32 ids[RM_GUE_HOPS_MAX];
		struct rm_flow f;
		int nh;
		size_t n;

		dp_flow(&s, 0, &f);
		nh = expect_hops(SVC_T4, &f, WINDOW_S, ids);
		dp_build(&s, &p);
		assert_int_equal(dp_conns_clear(fx), 0);
		if (ids[0] == 3) {
			struct rm_node c = node_of(3);
			char dst[64];

			assert_int_equal(nh, 1);
			memcpy(out, mac_gw, 6);
			memcpy(out + 6, mac_tx, 6);
			dp_put16(out + 12, ETH_P_IP);
			rm_format_addr(c.addr, RM_FAMILY_V4, dst, sizeof(dst));
			n = ETH_HLEN + dp_outer(out + ETH_HLEN, 4, SRC4, dst, 4,
						0, p.ip_end - p.l2_len, 0, 0);
			memcpy(out + n, p.b + p.l2_len, p.ip_end - p.l2_len);
			n += p.ip_end - p.l2_len;
			failed += run_one("ipip owner", &s, XDP_REDIRECT, out,
					  n, IPIP_OUT | CT_NEW, 1);
			ipip++;
			continue;
		}
		n = expect_frame(&s, &p, ids, nh, out);
		failed += run_one("gue owner beside ipip", &s, XDP_REDIRECT,
				  out, n,
				  GUE_OUT | (nh > 1 ? HOPS : CT_NEW),
				  nh > 1 ? 0 : 1);
	}
	assert_int_equal(failed, 0);
	assert_true(ipip > 0);
}

/* A valid entry wins (to its node, variant 1, no hops); a stale one
 * (the node's gen moved on) gets the ring owner and its hops. */
static void test_conn(void **state)
{
	static __u8 out[DP_PKT_MAX];
	static struct dp_pkt p;
	int failed = 0, tried = 0;

	(void)state;
	three_gens(SVC_T4, 4, 60, 120);
	for (int i = 0; i < NFLOWS && tried < 8; i++) {
		struct dp_spec s = flow_spec(SVC_T4, i, DP_TCP_ACK);
		__u32 ids[RM_GUE_HOPS_MAX], one[1];
		struct rm_conn c = {.gen = 1};
		struct rm_flow f;
		int nh;
		size_t n;

		dp_flow(&s, 0, &f);
		nh = expect_hops(SVC_T4, &f, WINDOW_S, ids);
		if (nh < 2)
			continue;
		tried++;
		dp_build(&s, &p);
		/* the entry names the flow's old owner, as director A's would */
		c.node = ids[1];
		one[0] = ids[1];
		n = expect_frame(&s, &p, one, 1, out);
		assert_int_equal(dp_conns_clear(fx), 0);
		assert_int_equal(dp_conn_put(fx, &f, &c), 0);
		failed += run_one("entry wins", &s, XDP_REDIRECT, out, n,
				  GUE_OUT | C(RM_CNT_CONN_HIT), 1);
		c.gen = 7; /* a gen the node never had */
		n = expect_frame(&s, &p, ids, nh, out);
		assert_int_equal(dp_conns_clear(fx), 0);
		assert_int_equal(dp_conn_put(fx, &f, &c), 0);
		failed += run_one("stale entry", &s, XDP_REDIRECT, out, n,
				  GUE_OUT | C(RM_CNT_CONN_STALE) |
				      C(RM_CNT_HOPS_SENT),
				  1);
	}
	assert_int_equal(tried, 8);
	assert_int_equal(failed, 0);
}

/* The hop list is part of the overhead: a packet that fits the 1400-byte
 * path as variant 1 is too big with its hops, and the client is told the
 * MTU less the list. */
static void test_mtu(void **state)
{
	static struct dp_pkt p;
	static struct dp_run r;
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	int found = 0;

	(void)state;
	three_gens(SVC_T4, 4, 60, 120);
	for (__u32 id = 1; id <= 3; id++)
		assert_int_equal(set_node(id, SVC_T4, 4, 4, RM_NODE_ACTIVE,
					  RM_VIA_GUE),
				 0);
	for (int i = 0; i < NFLOWS && found < 4; i++) {
		/* 20 + 20 + 1332 = 1372 inner: with outer 20 + UDP 8 it is
		 * exactly 1400 */
		struct dp_spec s = flow_spec(SVC_T4, i, DP_TCP_ACK);
		__u32 ids[RM_GUE_HOPS_MAX], want, mtu;
		struct rm_flow f;
		int nh;

		s.payload = 1332;
		dp_flow(&s, 0, &f);
		nh = expect_hops(SVC_T4, &f, WINDOW_S, ids);
		dp_build(&s, &p);
		assert_int_equal(dp_conns_clear(fx), 0);
		assert_int_equal(dp_counters(fx, before), 0);
		dp_run(fx, p.b, p.len, if_rx, &r);
		assert_int_equal(dp_counters(fx, after), 0);
		assert_int_equal(r.err, 0);
		if (nh < 2) {
			assert_int_equal(r.retval, XDP_REDIRECT);
			continue;
		}
		found++;
		want = 1400 - 28 - rm_gue_hops_len(nh, RM_FAMILY_V4);
		assert_int_equal(r.retval, XDP_TX);
		assert_int_equal(dp_counters_rose("mtu", p.len, before, after,
						  C(RM_CNT_TOO_BIG_SENT) |
						      C(RM_CNT_CONN_MISS) | NH_FIB),
				 0);
		/* ICMP frag needed: the MTU at bytes 6-7 of the ICMP header */
		mtu = r.out[ETH_HLEN + 20 + 6] << 8 | r.out[ETH_HLEN + 20 + 7];
		assert_int_equal(mtu, want);
	}
	assert_int_equal(found, 4);
}

/* ringctl lookup's hop list (rm_hops_of, hops.c: rm_hops.h compiled
 * into userspace) is the kernel's, on many random flows of both
 * families: the list read back from each output frame. */
static void test_agree(void **state)
{
	static struct rm_snap snap;
	static struct dp_pkt p;
	static struct dp_run r;
	struct rm_gens g;
	int compared = 0, with = 0;

	(void)state;
	srandom(22);
	for (__u32 svc = SVC_T4; svc <= SVC_T6; svc++) {
		three_gens(svc, svc == SVC_T6 ? 6 : 4, 30, 60);
		memset(&snap, 0, sizeof(snap));
		snap.cfg.handover_window_s = WINDOW_S;
		for (__u32 id = 0; id < 8; id++)
			snap.node[id] = node_of(id);
		memset(&g, 0, sizeof(g));
		g.svc = svc;
		g.snap = &snap;
		for (int k = 0; k < RM_RING_GENS; k++) {
			g.slots[k] = old_ring[svc][k].slots;
			g.nslots[k] = old_ring[svc][k].nslots;
			g.retired_ns[k] = old_ring[svc][k].stamp;
		}
		for (int i = 0; i < 1000; i++) {
			struct dp_spec s = flow_spec(svc, 0, DP_TCP_ACK);
			char src[64];
			struct rm_hops want;
			struct rm_flow f;
			long owner;
			__u32 hl = 0, off;

			if (svc == SVC_T6)
				snprintf(src, sizeof(src), "2001:db8:c8::%lx",
					 random() & 0xffff);
			else
				snprintf(src, sizeof(src), "198.18.%ld.%ld",
					 random() % 200 + 20, random() % 254 + 1);
			s.src = src;
			s.sport = 1024 + random() % 60000;
			dp_flow(&s, 0, &f);
			owner = owner_on(&cur_ring[svc],
					 rm_flow_hash(&dp_seed, &f));
			assert_true(owner > 0);
			rm_hops_of(&g, rm_flow_hash(&dp_seed, &f), owner,
				   mono_ns(), &want);
			dp_build(&s, &p);
			assert_int_equal(dp_conns_clear(fx), 0);
			dp_run(fx, p.b, p.len, if_rx, &r);
			assert_int_equal(r.retval, XDP_REDIRECT);
			/* after Ethernet, outer IP and UDP: a GUE header
			 * (top bits 00) or the inner packet (01) */
			off = ETH_HLEN + (svc == SVC_T6 ? 40 : 20) + 8;
			if ((r.out[off] >> 6) == 0)
				hl = r.out[off + 7];
			if (want.count < 2) {
				assert_int_equal(hl, 0);
			} else {
				int alen = svc == SVC_T6 ? 16 : 4;

				assert_int_equal(hl, want.count);
				for (__u32 k = 0; k < hl; k++)
					assert_memory_equal(r.out + off + 8 +
								k * alen,
							    want.addr[k],
							    alen);
				with++;
			}
			compared++;
		}
	}
	print_message("agree: %d flows, %d with hops, kernel and rm_hops_of "
		      "agree on all\n",
		      compared, with);
	assert_true(with > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_changed), cmocka_unit_test(test_v6),
	    cmocka_unit_test(test_syn),	    cmocka_unit_test(test_expired),
	    cmocka_unit_test(test_off),	    cmocka_unit_test(test_states),
	    cmocka_unit_test(test_udp_ipip), cmocka_unit_test(test_conn),
	    cmocka_unit_test(test_mtu),	    cmocka_unit_test(test_agree),
	};

	return cmocka_run_group_tests_name("hops", tests, group_setup,
					   group_teardown);
}
