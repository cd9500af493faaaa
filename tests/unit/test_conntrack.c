// SPDX-License-Identifier: GPL-2.0
/*
 * Connection table (bpf/conntrack.h), run in the kernel through
 * bpf_prog_test_run_opts with the maps filled the way the control plane
 * fills them.
 *
 * Rings used (weight 1, 100 vnodes): A = nodes 1..3, B = A + node 4 (a
 * node added: flows it takes "move"), C = nodes 2..3 (node 1 out of the
 * ring: drained, down or gone). Each test starts from ring A on every
 * service, every node ACTIVE with gen 1, an empty table and the default
 * config, and picks fresh flows by what the rings do with them.
 *
 * Every packet sent checks its verdict, the node its frame went to, and
 * the change of every rm_counters slot, exactly.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "dp_fixture.h"
#include "skip.h"

enum {
	SVC_T5 = 0, /* 10.1.0.1 tcp/80, 5-tuple */
	SVC_U5,	    /* 10.1.0.1 udp/53, 5-tuple */
	SVC_U3,	    /* 10.1.0.2 udp/any, 3-tuple */
	SVC_T3,	    /* 10.1.0.3 tcp/80, 3-tuple */
	SVC_T6,	    /* 2001:db8:1::1 tcp/443, 5-tuple */
	SVC_U6,	    /* 2001:db8:1::1 udp/any, 3-tuple */
	SVC_NR,
};

/* Scratch ring ids: pushed once so the fixture keeps their slots, which
 * gives any flow's owner under each ring without making it current. */
enum { RING_A = 200, RING_B, RING_C };

#define VNODES 100
#define NODE_REDIR 20	   /* behind devmap port PORT_REDIR */
#define NODE_REDIR_FAIL 21 /* behind a port the devmap lacks */
#define PORT_REDIR 1000
#define PORT_REDIR_FAIL 1001
#define LO_IFINDEX 1
#define NSEC 1000000000ULL

static const struct svcdef {
	int family;
	__u8 proto;
	const char *vip;
	__u16 port; /* service port, 0 = any */
	__u32 flags;
} svcs[SVC_NR] = {
    [SVC_T5] = {4, IPPROTO_TCP, "10.1.0.1", 80, 0},
    [SVC_U5] = {4, IPPROTO_UDP, "10.1.0.1", 53, 0},
    [SVC_U3] = {4, IPPROTO_UDP, "10.1.0.2", 0, RM_SVC_F_3TUPLE},
    [SVC_T3] = {4, IPPROTO_TCP, "10.1.0.3", 80, RM_SVC_F_3TUPLE},
    [SVC_T6] = {6, IPPROTO_TCP, "2001:db8:1::1", 443, 0},
    [SVC_U6] = {6, IPPROTO_UDP, "2001:db8:1::1", 0, RM_SVC_F_3TUPLE},
};

static struct dp_fx *fx;
static char skip_why[256];
static int skipped; /* tests that could not run */
static cpu_set_t cpus; /* the CPUs the suite may run on */


/* ---- flows ------------------------------------------------------------ */
/* Flow number i of a service: its own client address and source port,
 * so 3-tuple flows differ too. Numbers are handed out once per run. */
#define MAX_FLOWS 8192
static char client_str[MAX_FLOWS][INET6_ADDRSTRLEN];
static int next_flow = 1;

struct flow {
	int svc;
	int i;
	struct dp_spec s; /* TCP flags and frag left to the caller */
	struct rm_flow key;
};

static void flow_make(int svc, int i, struct flow *f)
{
	const struct svcdef *d = &svcs[svc];

	assert_true(i > 0 && i < MAX_FLOWS);
	if (d->family == 6)
		snprintf(client_str[i], sizeof(client_str[i]),
			 "2001:db8:c::%x:%x", i >> 8, i & 0xff);
	else
		snprintf(client_str[i], sizeof(client_str[i]), "10.200.%d.%d",
			 i >> 8, i & 0xff);
	memset(f, 0, sizeof(*f));
	f->svc = svc;
	f->i = i;
	f->s.family = d->family;
	f->s.proto = d->proto;
	f->s.src = client_str[i];
	f->s.dst = d->vip;
	f->s.sport = 20000 + i;
	f->s.dport = d->port ? d->port : 7000;
	dp_flow(&f->s, !!(d->flags & RM_SVC_F_3TUPLE), &f->key);
}

static long owner_in(int ring, const struct flow *f)
{
	return dp_expected_owner(fx, ring, &f->key);
}

/* The next fresh flow of svc whose owners under rings A and other are
 * want_a (-1: any) and differ (moved = 1) or not (moved = 0). */
static void flow_pick(int svc, int other, long want_a, int moved,
		      struct flow *f)
{
	while (next_flow < MAX_FLOWS) {
		long a, o;

		flow_make(svc, next_flow++, f);
		a = owner_in(RING_A, f);
		o = owner_in(other, f);
		assert_true(a > 0 && o > 0);
		if ((want_a < 0 || a == want_a) && (a != o) == moved)
			return;
	}
	fail_msg("out of flows");
}

/* The packet of f with TCP flags (ignored for UDP) and fragment kind. */
static struct dp_spec flow_pkt(const struct flow *f, __u8 tcp_flags,
			       enum dp_frag frag)
{
	struct dp_spec s = f->s;

	s.tcp_flags = tcp_flags;
	s.frag = frag;
	if (frag == DP_FRAG_LATER)
		s.sport = s.dport = 0;
	return s;
}

#define ACK DP_TCP_ACK
#define SYN DP_TCP_SYN
#define PSH_ACK (DP_TCP_PSH | DP_TCP_ACK)

/* ---- sending ---------------------------------------------------------- */
/* The data plane's clock (bpf_ktime_get_coarse_ns): CLOCK_MONOTONIC as
 * of the last tick. */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * NSEC + ts.tv_nsec;
}

/* Its resolution, one tick: the slack allowed between the program's
 * reading and ours taken around it. */
static __u64 tick_ns(void)
{
	struct timespec ts;

	clock_getres(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * NSEC + ts.tv_nsec;
}

struct shot {
	__u32 verdict;
	long node; /* destination node of a forwarded frame, else -1 */
	__u8 out[ETH_HLEN];
	__u64 d[RM_CNT_MAX]; /* counter changes */
	__u64 t0, t1;	     /* now_ns() around the run */
};

static void shoot(const struct dp_spec *s, struct shot *o)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	static struct dp_pkt p;
	static struct dp_run r;
	int i;

	dp_build(s, &p);
	assert_int_equal(dp_counters(fx, before), 0);
	o->t0 = now_ns();
	dp_run(fx, p.b, p.len, 0, &r);
	o->t1 = now_ns();
	assert_int_equal(dp_counters(fx, after), 0);
	assert_int_equal(r.err, 0);
	o->verdict = r.retval;
	memcpy(o->out, r.out, ETH_HLEN);
	o->node = r.retval == XDP_TX || r.retval == XDP_REDIRECT
		      ? dp_mac_node(r.out)
		      : -1;
	for (i = 0; i < RM_CNT_MAX; i++)
		o->d[i] = after[i] - before[i];
}

#define C(x) (1ull << (x))
#define FWD C(RM_CNT_FWD_TX)
#define HIT C(RM_CNT_CONN_HIT)
#define MISS C(RM_CNT_CONN_MISS)
#define STALE C(RM_CNT_CONN_STALE)
#define INSERT C(RM_CNT_CONN_INSERT)
#define LIMITED C(RM_CNT_CONN_INSERT_LIMITED)
#define NO_NODE C(RM_CNT_DROP_NO_NODE)
#define ICMP C(RM_CNT_ICMP_FORWARDED)

/* The shot went as said: verdict, node (-1: not forwarded), and every
 * counter in mask rose by exactly 1, every other by 0. */
static void expect_(int line, const char *what, const struct shot *o,
		    __u32 verdict, long node, __u64 mask)
{
	int bad = 0, i;

	if (o->verdict != verdict || o->node != node) {
		print_error("line %d, %s: %s to node %ld, want %s to node "
			    "%ld\n",
			    line, what, dp_action_name(o->verdict), o->node,
			    dp_action_name(verdict), node);
		bad = 1;
	}
	for (i = 0; i < RM_CNT_MAX; i++) {
		__u64 want = (mask >> i) & 1;

		if (o->d[i] != want) {
			print_error("line %d, %s: %s rose by %llu, want "
				    "%llu\n",
				    line, what, dp_counter_names[i],
				    (unsigned long long)o->d[i],
				    (unsigned long long)want);
			bad = 1;
		}
	}
	if (bad)
		fail();
}

#define expect(what, o, verdict, node, mask)                                   \
	expect_(__LINE__, what, o, verdict, node, mask)

/* Send and check in one. */
#define send_expect(what, spec, verdict, node, mask)                           \
	do {                                                                   \
		struct dp_spec s_ = (spec);                                    \
		shoot(&s_, &o);                                                \
		expect(what, &o, verdict, node, mask);                         \
	} while (0)

static struct shot o; /* the last shot */

/* The flow's entry: must exist, and is returned. */
static struct rm_conn entry_of(const struct flow *f)
{
	struct rm_conn e;

	assert_int_equal(dp_conn_get(fx, &f->key, &e), 0);
	return e;
}

static void no_entry(const struct flow *f)
{
	struct rm_conn e;

	assert_int_equal(dp_conn_get(fx, &f->key, &e), -ENOENT);
}

static void put_entry(const struct flow *f, __u32 node, __u32 gen,
		      __u64 last_ns)
{
	struct rm_conn e = {.node = node, .gen = gen, .last_ns = last_ns};

	assert_int_equal(dp_conn_put(fx, &f->key, &e), 0);
}

/* The entry was written by the last shot: node, gen, and a last_ns taken
 * during the run. */
static void entry_written(const struct flow *f, long node, __u32 gen)
{
	struct rm_conn e = entry_of(f);

	assert_int_equal(e.node, node);
	assert_int_equal(e.gen, gen);
	assert_true(e.last_ns + tick_ns() >= o.t0 &&
		    e.last_ns <= o.t1 + tick_ns());
}

/* ---- state ------------------------------------------------------------ */
static void push_ring(int ring)
{
	__u32 ids[SVC_NR];
	int i;

	for (i = 0; i < SVC_NR; i++)
		ids[i] = i;
	if (ring == RING_A)
		assert_int_equal(dp_push_ring(fx, ids, SVC_NR, 1, 3, VNODES),
				 0);
	else if (ring == RING_B)
		assert_int_equal(dp_push_ring(fx, ids, SVC_NR, 1, 4, VNODES),
				 0);
	else
		assert_int_equal(dp_push_ring(fx, ids, SVC_NR, 2, 2, VNODES),
				 0);
}

static void set_node(__u32 id, __u32 state, __u32 gen)
{
	assert_int_equal(dp_set_node_gen(fx, id, LO_IFINDEX, state, gen), 0);
}

static void set_config(__u32 udp_timeout_s, __u32 rate)
{
	assert_int_equal(
	    dp_set_config_full(fx, RM_CFG_SEEDED, udp_timeout_s, rate), 0);
}

static int reset(void **state)
{
	struct bpf_devmap_val port = {.ifindex = LO_IFINDEX};
	__u32 key = PORT_REDIR, id;
	int err = 0;

	(void)state;
	if (!fx)
		return 0;
	/* a test that failed while pinned to one CPU does not pin the rest */
	err |= sched_setaffinity(0, sizeof(cpus), &cpus);
	err |= dp_conns_clear(fx);
	err |= dp_set_config(fx, RM_CFG_SEEDED);
	for (id = 1; id <= 8; id++)
		err |= dp_set_node(fx, id, LO_IFINDEX, RM_NODE_ACTIVE);
	err |= dp_set_node(fx, NODE_REDIR, PORT_REDIR, RM_NODE_ACTIVE);
	err |=
	    dp_set_node(fx, NODE_REDIR_FAIL, PORT_REDIR_FAIL, RM_NODE_ACTIVE);
	err |= bpf_map_update_elem(fx->tx_ports, &key, &port, BPF_ANY);
	if (err)
		return -1;
	push_ring(RING_A);
	return 0;
}

static int group_setup(void **state)
{
	int err = 0, i;

	(void)state;
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return -1;
	fx = dp_fx_open(&err, skip_why, sizeof(skip_why));
	if (!fx) {
		if (err == -EPERM || geteuid() != 0) {
			fprintf(stderr, "test_conntrack: SKIPPING: %s\n",
				skip_why);
			return 0;
		}
		fprintf(stderr, "test_conntrack: %s\n", skip_why);
		return -1;
	}
	for (i = 0; i < SVC_NR; i++)
		err |=
		    dp_service(fx, svcs[i].family, svcs[i].vip, svcs[i].proto,
			       svcs[i].port, i, svcs[i].flags);
	err |= dp_push_ring(fx, (__u32[]){RING_A}, 1, 1, 3, VNODES);
	err |= dp_push_ring(fx, (__u32[]){RING_B}, 1, 1, 4, VNODES);
	err |= dp_push_ring(fx, (__u32[]){RING_C}, 1, 2, 2, VNODES);
	if (err) {
		fprintf(stderr, "test_conntrack: cannot fill the maps\n");
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	dp_fx_close(fx);
	fx = NULL;
	return 0;
}

/* The kinds of flow most tests run over. */
static const int flow_svcs[] = {SVC_T5, SVC_U5, SVC_U3, SVC_T6, SVC_U6};
#define N_FLOW_SVCS (int)(sizeof(flow_svcs) / sizeof(flow_svcs[0]))

static const int tcp5_svcs[] = {SVC_T5, SVC_T6};

static int is_tcp(int svc)
{
	return svcs[svc].proto == IPPROTO_TCP;
}

/* ---- tests ------------------------------------------------------------ */

/* The maps are what the data plane and the loader expect, rm_config kept
 * its old offsets, and the loader can resize the tables. */
static void test_map_shape(void **state)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct ringmaster_bpf *skel;
	int ncpus = libbpf_num_possible_cpus();

	(void)state;
	assert_int_equal(offsetof(struct rm_config, udp_timeout_s), 16);
	assert_int_equal(offsetof(struct rm_config, flags), 20);
	assert_int_equal(offsetof(struct rm_config, conn_insert_rate), 24);
	/* appended by the encapsulation (bpf/encap.h) */
	assert_int_equal(offsetof(struct rm_config, encap_src4), 32);
	assert_int_equal(offsetof(struct rm_config, encap_src6), 36);
	/* appended by second chance (rm_hops.h) */
	assert_int_equal(offsetof(struct rm_config, handover_window_s), 56);
	assert_int_equal(sizeof(struct rm_config), 64);
	assert_int_equal(sizeof(struct rm_conn), 16);
	assert_int_equal(sizeof(struct rm_conn_key4), 16);
	NEED_BPF();

	for (int i = 0; i < 2; i++) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		assert_int_equal(bpf_obj_get_info_by_fd(i ? fx->conns6
							  : fx->conns,
							&info, &len),
				 0);
		assert_int_equal(info.type, BPF_MAP_TYPE_LRU_HASH);
		assert_true(info.map_flags & BPF_F_NO_COMMON_LRU);
		assert_int_equal(info.key_size,
				 i ? sizeof(struct rm_flow)
				   : sizeof(struct rm_conn_key4));
		assert_int_equal(info.value_size, sizeof(struct rm_conn));
		assert_string_equal(info.name,
				    i ? RM_MAP_NAME(CONNS6) : RM_MAP_NAME(CONNS));
		/* per-CPU LRU lists: the kernel rounds up to a multiple of
		 * ncpus */
		assert_int_equal(info.max_entries,
				 (RM_DEFAULT_CONN_ENTRIES + ncpus - 1) / ncpus *
				     ncpus);
	}

	/* the presence index: two ways per entry of the default table */
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	assert_int_equal(bpf_obj_get_info_by_fd(fx->conn_idx, &info, &len), 0);
	assert_int_equal(info.type, BPF_MAP_TYPE_ARRAY);
	assert_int_equal(info.key_size, 4);
	assert_int_equal(info.value_size, sizeof(struct rm_conn_set));
	assert_int_equal(sizeof(struct rm_conn_set), 2 * RM_CONN_WAYS);
	assert_int_equal(info.max_entries,
			 RM_CONN_IDX_ENTRIES(RM_DEFAULT_CONN_ENTRIES));
	assert_int_equal((info.max_entries - 1) * RM_CONN_WAYS,
			 2 * RM_DEFAULT_CONN_ENTRIES);
	assert_string_equal(info.name, RM_MAP_NAME(CONN_IDX));

	skel = ringmaster_bpf__open();
	assert_non_null(skel);
	assert_int_equal(bpf_map__set_max_entries(skel->maps.rm_conns, 4096),
			 0);
	assert_int_equal(ringmaster_bpf__load(skel), 0);
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	assert_int_equal(bpf_obj_get_info_by_fd(
			     bpf_map__fd(skel->maps.rm_conns), &info, &len),
			 0);
	assert_int_equal(info.max_entries, (4096 + ncpus - 1) / ncpus * ncpus);
	ringmaster_bpf__destroy(skel);
}

/* A flow's first non-SYN packet misses and writes the ring owner; the
 * next one hits, without rewriting last_ns (younger than a second). */
static void test_miss_insert(void **state)
{
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < N_FLOW_SVCS; k++) {
		int svc = flow_svcs[k];
		__u8 fl = is_tcp(svc) ? ACK : 0;
		struct rm_conn e1, e2;
		struct flow f;
		long a;

		flow_pick(svc, RING_B, -1, 0, &f);
		a = owner_in(RING_A, &f);
		no_entry(&f);
		send_expect("first", flow_pkt(&f, fl, 0), XDP_TX, a,
			    FWD | MISS | INSERT);
		entry_written(&f, a, 1);
		e1 = entry_of(&f);
		send_expect("second", flow_pkt(&f, fl | DP_TCP_PSH, 0), XDP_TX,
			    a, FWD | HIT);
		e2 = entry_of(&f);
		assert_memory_equal(&e1, &e2, sizeof(e1));
	}
	assert_int_equal(dp_conns_count(fx), N_FLOW_SVCS);
}

/* The point of the table: a ring change that moves a flow leaves it on
 * its node, while a new flow with the same owners goes where the new
 * ring says. */
static void test_hit_across_ring_change(void **state)
{
	struct flow f[N_FLOW_SVCS], g[N_FLOW_SVCS];
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < N_FLOW_SVCS; k++) {
		int svc = flow_svcs[k];

		flow_pick(svc, RING_B, -1, 1, &f[k]);
		flow_pick(svc, RING_B, -1, 1, &g[k]);
		send_expect("before", flow_pkt(&f[k], ACK, 0), XDP_TX,
			    owner_in(RING_A, &f[k]), FWD | MISS | INSERT);
	}
	push_ring(RING_B);
	for (k = 0; k < N_FLOW_SVCS; k++) {
		long a = owner_in(RING_A, &f[k]);

		assert_int_not_equal(a, owner_in(RING_B, &f[k]));
		send_expect("established", flow_pkt(&f[k], ACK, 0), XDP_TX, a,
			    FWD | HIT);
		assert_int_equal(entry_of(&f[k]).node, a);
		send_expect("new", flow_pkt(&g[k], ACK, 0), XDP_TX,
			    owner_in(RING_B, &g[k]), FWD | MISS | INSERT);
		entry_written(&g[k], owner_in(RING_B, &g[k]), 1);
	}
}

/* A SYN of a 5-tuple service follows the ring even when the flow has an
 * entry, never touches the table, and is a SYN only with ACK clear. */
static void test_syn_bypass(void **state)
{
	struct rm_conn e1, e2;
	struct flow f, g;
	long a, b;
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < 2; k++) {
		flow_pick(tcp5_svcs[k], RING_B, -1, 1, &f);
		a = owner_in(RING_A, &f);
		b = owner_in(RING_B, &f);
		send_expect("ack", flow_pkt(&f, ACK, 0), XDP_TX, a,
			    FWD | MISS | INSERT);
		e1 = entry_of(&f);
		push_ring(RING_B);
		/* the tuple is reused by a new connection after the ring
		 * moved it: its SYN follows the ring and forgets the old
		 * entry, so the rest of the handshake follows too */
		send_expect("syn with an entry", flow_pkt(&f, SYN, 0), XDP_TX,
			    b, FWD);
		no_entry(&f);
		send_expect("handshake ack after reuse", flow_pkt(&f, ACK, 0),
			    XDP_TX, b, FWD | MISS | INSERT);
		e2 = entry_of(&f);
		assert_int_not_equal(e1.node, e2.node);
		/* SYN+ACK is not a connection's first packet: it uses the
		 * table like any non-SYN packet */
		push_ring(RING_A);
		send_expect("syn+ack", flow_pkt(&f, SYN | ACK, 0), XDP_TX, b,
			    FWD | HIT);
	}

	/* new flows: SYNs write nothing, however many */
	assert_int_equal(dp_conns_clear(fx), 0);
	for (k = 0; k < 32; k++) {
		flow_pick(SVC_T5, RING_B, -1, 0, &g);
		send_expect("syn flood", flow_pkt(&g, SYN, 0), XDP_TX,
			    owner_in(RING_A, &g), FWD);
		no_entry(&g);
	}
	assert_int_equal(dp_conns_count(fx), 0);
	/* the handshake's ACK writes the entry */
	send_expect("handshake ack", flow_pkt(&g, ACK, 0), XDP_TX,
		    owner_in(RING_A, &g), FWD | MISS | INSERT);
	assert_int_equal(dp_conns_count(fx), 1);
}

/* A SYN forgets after the ring search (bpf/conntrack.h says why): one
 * the ring cannot place (its service's ring empty: every node out) is
 * dropped as no-node and forgets its tuple's entry all the same, as it
 * did when the forget came first. */
static void test_syn_no_owner(void **state)
{
	struct flow f;
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < 2; k++) {
		int svc = tcp5_svcs[k];

		flow_pick(svc, RING_B, -1, 0, &f);
		send_expect("ack", flow_pkt(&f, ACK, 0), XDP_TX,
			    owner_in(RING_A, &f), FWD | MISS | INSERT);
		entry_of(&f);
		assert_int_equal(
		    dp_push_ring(fx, (__u32[]){(__u32)svc}, 1, 1, 0, VNODES), 0);
		send_expect("syn, empty ring", flow_pkt(&f, SYN, 0), XDP_DROP,
			    -1, NO_NODE);
		no_entry(&f);
		push_ring(RING_A);
	}
}

/* 3-tuple services: one entry covers all of a client's connections, so
 * its SYNs look the entry up (never writing) and go where its other
 * packets go. */
static void test_syn_3tuple(void **state)
{
	struct flow f, g;
	long a;

	(void)state;
	NEED_BPF();
	flow_pick(SVC_T3, RING_B, -1, 1, &f);
	a = owner_in(RING_A, &f);
	send_expect("syn, no entry", flow_pkt(&f, SYN, 0), XDP_TX, a,
		    FWD | MISS);
	no_entry(&f);
	send_expect("ack", flow_pkt(&f, ACK, 0), XDP_TX, a,
		    FWD | MISS | INSERT);
	entry_written(&f, a, 1);
	push_ring(RING_B);
	/* another connection of the same client: other source port */
	g = f;
	g.s.sport++;
	send_expect("new connection, same client", flow_pkt(&g, SYN, 0), XDP_TX,
		    a, FWD | HIT);
	send_expect("its ack", flow_pkt(&g, ACK, 0), XDP_TX, a, FWD | HIT);
	assert_int_equal(dp_conns_count(fx), 1);
}

/* A slot reused for another node (new gen), freed, or holding an id
 * past rm_nodes: the entry is stale, the packet goes to the ring owner
 * and the entry is rewritten to it. */
static void test_stale(void **state)
{
	struct flow f;
	long c;
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < N_FLOW_SVCS; k++) {
		int svc = flow_svcs[k];

		/* node 1 leaves the ring, its slot is reused (gen 2) */
		push_ring(RING_A);
		set_node(1, RM_NODE_ACTIVE, 1);
		flow_pick(svc, RING_C, 1, 1, &f);
		c = owner_in(RING_C, &f);
		send_expect("on node 1", flow_pkt(&f, ACK, 0), XDP_TX, 1,
			    FWD | MISS | INSERT);
		push_ring(RING_C);
		set_node(1, RM_NODE_ACTIVE, 2);
		send_expect("slot reused", flow_pkt(&f, ACK, 0), XDP_TX, c,
			    FWD | STALE | INSERT);
		entry_written(&f, c, 1);
		send_expect("rewritten", flow_pkt(&f, ACK, 0), XDP_TX, c,
			    FWD | HIT);

		/* a freed slot, same gen */
		put_entry(&f, 1, 2, now_ns());
		set_node(1, RM_NODE_FREE, 2);
		send_expect("slot freed", flow_pkt(&f, ACK, 0), XDP_TX, c,
			    FWD | STALE | INSERT);
		entry_written(&f, c, 1);

		/* an id rm_nodes cannot hold */
		put_entry(&f, RM_MAX_NODES + 5, 1, now_ns());
		send_expect("id past rm_nodes", flow_pkt(&f, ACK, 0), XDP_TX, c,
			    FWD | STALE | INSERT);
		entry_written(&f, c, 1);
	}
}

/* DRAINING: out of the ring, keeps its flows; new flows (SYN or not)
 * never reach it. */
static void test_drain(void **state)
{
	struct flow f[N_FLOW_SVCS], g;
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < N_FLOW_SVCS; k++) {
		flow_pick(flow_svcs[k], RING_C, 1, 1, &f[k]);
		send_expect("before", flow_pkt(&f[k], ACK, 0), XDP_TX, 1,
			    FWD | MISS | INSERT);
	}
	/* the control plane's order: out of the ring, then the state */
	push_ring(RING_C);
	set_node(1, RM_NODE_DRAINING, 1);
	for (k = 0; k < N_FLOW_SVCS; k++) {
		int svc = flow_svcs[k];

		send_expect("drained node keeps its flow",
			    flow_pkt(&f[k], ACK, 0), XDP_TX, 1, FWD | HIT);
		assert_int_equal(entry_of(&f[k]).node, 1);
		/* a flow that would have been node 1's */
		flow_pick(svc, RING_C, 1, 1, &g);
		if (is_tcp(svc) && !(svcs[svc].flags & RM_SVC_F_3TUPLE))
			send_expect("new connection", flow_pkt(&g, SYN, 0),
				    XDP_TX, owner_in(RING_C, &g), FWD);
		send_expect("new flow", flow_pkt(&g, ACK, 0), XDP_TX,
			    owner_in(RING_C, &g), FWD | MISS | INSERT);
		entry_written(&g, owner_in(RING_C, &g), 1);
	}
	/* a SYN reusing a drained flow's 5-tuple goes by the ring */
	send_expect("syn of a drained tuple", flow_pkt(&f[0], SYN, 0), XDP_TX,
		    owner_in(RING_C, &f[0]), FWD);
}

/* DOWN: the node's flows go to their ring owner from the next packet on,
 * without waiting for a gen bump. */
static void test_down(void **state)
{
	struct flow f[N_FLOW_SVCS];
	struct rm_conn e1, e2;
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < N_FLOW_SVCS; k++) {
		flow_pick(flow_svcs[k], RING_C, 1, 1, &f[k]);
		send_expect("before", flow_pkt(&f[k], ACK, 0), XDP_TX, 1,
			    FWD | MISS | INSERT);
	}
	/* mid-update: DOWN while still in the ring. The entry is stale,
	 * the ring owner is the DOWN node itself: dropped, nothing
	 * written */
	set_node(1, RM_NODE_DOWN, 1);
	e1 = entry_of(&f[0]);
	send_expect("down, still in the ring", flow_pkt(&f[0], ACK, 0),
		    XDP_DROP, -1, STALE | NO_NODE);
	e2 = entry_of(&f[0]);
	assert_memory_equal(&e1, &e2, sizeof(e1));

	push_ring(RING_C);
	for (k = 0; k < N_FLOW_SVCS; k++) {
		long c = owner_in(RING_C, &f[k]);

		send_expect("down", flow_pkt(&f[k], ACK, 0), XDP_TX, c,
			    FWD | STALE | INSERT);
		entry_written(&f[k], c, 1);
		send_expect("after", flow_pkt(&f[k], ACK, 0), XDP_TX, c,
			    FWD | HIT);
	}
	/* the node coming back (same gen) does not take them back: the
	 * entries now name the ring owner */
	set_node(1, RM_NODE_ACTIVE, 1);
	send_expect("node back", flow_pkt(&f[0], ACK, 0), XDP_TX,
		    owner_in(RING_C, &f[0]), FWD | HIT);
}

/* UDP entries expire after udp_timeout_s without a refresh; a hit
 * refreshes an entry older than min(1 s, timeout / 2); TCP entries never
 * expire by age. Old timestamps are made from now_ns(), the data
 * plane's clock. */
static void test_udp_timeout(void **state)
{
	static const int udp[] = {SVC_U5, SVC_U3, SVC_U6};
	__u64 now;
	int k;

	(void)state;
	NEED_BPF();
	set_config(1, RM_DEFAULT_CONN_INSERT_RATE);
	for (k = 0; k < 3; k++) {
		struct flow f;
		long a;
		__u32 x;

		flow_pick(udp[k], RING_B, -1, 0, &f);
		a = owner_in(RING_A, &f);
		x = a == 1 ? 2 : 1; /* an ACTIVE node the ring would not use */

		put_entry(&f, x, 1, 1);
		send_expect("idle since boot", flow_pkt(&f, 0, 0), XDP_TX, a,
			    FWD | STALE | INSERT);
		entry_written(&f, a, 1);

		now = now_ns();
		put_entry(&f, x, 1, now - 10 * NSEC);
		send_expect("idle 10 s", flow_pkt(&f, 0, 0), XDP_TX, a,
			    FWD | STALE | INSERT);
		entry_written(&f, a, 1);

		/* 0.1 s old: valid, not refreshed (refresh after 0.5 s) */
		now = now_ns() - NSEC / 10;
		put_entry(&f, x, 1, now);
		send_expect("idle 0.1 s", flow_pkt(&f, 0, 0), XDP_TX, x,
			    FWD | HIT);
		assert_true(entry_of(&f).last_ns == now);

		/* 0.6 s old: valid, refreshed */
		put_entry(&f, x, 1, now_ns() - NSEC * 6 / 10);
		send_expect("idle 0.6 s", flow_pkt(&f, 0, 0), XDP_TX, x,
			    FWD | HIT);
		entry_written(&f, x, 1);

		/* refreshed on another CPU after this one read the clock:
		 * a negative age is young */
		now = now_ns() + 5 * NSEC;
		put_entry(&f, x, 1, now);
		send_expect("refreshed later", flow_pkt(&f, 0, 0), XDP_TX, x,
			    FWD | HIT);
		assert_true(entry_of(&f).last_ns == now);
	}

	/* timeout 0: RM_DEFAULT_UDP_TIMEOUT_S */
	set_config(0, RM_DEFAULT_CONN_INSERT_RATE);
	now = now_ns();
	if (now > (RM_DEFAULT_UDP_TIMEOUT_S + 10) * NSEC) {
		struct flow f;
		long a;
		__u32 x;

		flow_pick(SVC_U5, RING_B, -1, 0, &f);
		a = owner_in(RING_A, &f);
		x = a == 1 ? 2 : 1;
		put_entry(&f, x, 1,
			  now - (RM_DEFAULT_UDP_TIMEOUT_S - 5) * NSEC);
		send_expect("default timeout, young", flow_pkt(&f, 0, 0),
			    XDP_TX, x, FWD | HIT);
		entry_written(&f, x, 1);
		put_entry(&f, x, 1,
			  now_ns() - (RM_DEFAULT_UDP_TIMEOUT_S + 5) * NSEC);
		send_expect("default timeout, old", flow_pkt(&f, 0, 0), XDP_TX,
			    a, FWD | STALE | INSERT);
	} else {
		print_message("uptime under %d s: default timeout not run\n",
			      RM_DEFAULT_UDP_TIMEOUT_S + 10);
	}

	/* TCP: no age limit; old entries are refreshed, young ones not */
	set_config(1, RM_DEFAULT_CONN_INSERT_RATE);
	for (k = 0; k < 2; k++) {
		struct flow f;
		long a;
		__u32 x;

		flow_pick(tcp5_svcs[k], RING_B, -1, 0, &f);
		a = owner_in(RING_A, &f);
		x = a == 1 ? 2 : 1;
		put_entry(&f, x, 1, 1);
		send_expect("tcp idle since boot", flow_pkt(&f, ACK, 0), XDP_TX,
			    x, FWD | HIT);
		entry_written(&f, x, 1);
		now = now_ns() - NSEC / 2;
		put_entry(&f, x, 1, now);
		send_expect("tcp idle 0.5 s", flow_pkt(&f, ACK, 0), XDP_TX, x,
			    FWD | HIT);
		assert_true(entry_of(&f).last_ns == now);
	}
}

/* ---- insert rate limit ------------------------------------------------ */
struct bucket {
	__u64 tokens;
	__u64 last_ns;
};

/* Empty every CPU's bucket state: the next write refills it to full. */
static void buckets_reset(void)
{
	int fd = bpf_map__fd(fx->skel->maps.rm_conn_limit);
	struct bucket b[fx->ncpus];
	__u32 zero = 0;

	assert_int_equal(bpf_map__value_size(fx->skel->maps.rm_conn_limit),
			 sizeof(struct bucket));
	memset(b, 0, sizeof(b));
	assert_int_equal(bpf_map_update_elem(fd, &zero, b, BPF_ANY), 0);
}

/* Run on one allowed CPU; the old mask in *old. 0 or -1. */
static int pin_cpu(int nth, cpu_set_t *old)
{
	cpu_set_t one;
	int cpu, seen = 0;

	if (sched_getaffinity(0, sizeof(*old), old))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, old) || seen++ != nth)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		return sched_setaffinity(0, sizeof(one), &one);
	}
	return -1;
}

/* With conn_insert_rate r, a CPU writes at most r entries plus r per
 * second elapsed; the rest of the flows still go to their ring owner,
 * counted as conn-insert-limited. A stale entry's rewrite takes a token
 * too. Rate 0: no limit. */
static void test_insert_rate(void **state)
{
	enum { RATE = 4, N = 40 };
	struct flow f[N], s;
	__u64 ins = 0, lim = 0, t0, t1;
	__u64 max_ins;
	struct dp_spec pkt;
	struct rm_conn e;
	cpu_set_t old;
	int k;

	(void)state;
	NEED_BPF();
	/* the buckets are per CPU: keep every run on one */
	assert_int_equal(pin_cpu(0, &old), 0);

	/* a stale entry to rewrite once the bucket is dry */
	flow_pick(SVC_T5, RING_B, -1, 0, &s);
	put_entry(&s, 5, 1, 1);
	set_node(5, RM_NODE_ACTIVE, 2);

	set_config(60, RATE);
	buckets_reset();
	t0 = now_ns();
	for (k = 0; k < N; k++) {
		int svc = flow_svcs[k % N_FLOW_SVCS];

		flow_pick(svc, RING_B, -1, 0, &f[k]);
		pkt = flow_pkt(&f[k], ACK, 0);
		shoot(&pkt, &o);
		/* every packet goes to its ring owner either way */
		assert_int_equal(o.verdict, XDP_TX);
		assert_int_equal(o.node, owner_in(RING_A, &f[k]));
		assert_int_equal(o.d[RM_CNT_CONN_MISS], 1);
		assert_int_equal(o.d[RM_CNT_FWD_TX], 1);
		assert_int_equal(o.d[RM_CNT_CONN_INSERT] +
				     o.d[RM_CNT_CONN_INSERT_LIMITED],
				 1);
		ins += o.d[RM_CNT_CONN_INSERT];
		lim += o.d[RM_CNT_CONN_INSERT_LIMITED];
		if (o.d[RM_CNT_CONN_INSERT])
			entry_written(&f[k], o.node, 1);
		else
			no_entry(&f[k]);
	}
	pkt = flow_pkt(&s, ACK, 0);
	shoot(&pkt, &o);
	t1 = now_ns();
	/* one token per 1/RATE s since the full bucket at t0 */
	max_ins = RATE + (t1 - t0 + tick_ns()) * RATE / NSEC;
	print_message("insert rate %d/s: %llu of %d new flows written, %llu "
		      "limited, in %.3f s\n",
		      RATE, (unsigned long long)ins, N, (unsigned long long)lim,
		      (t1 - t0) / 1e9);
	assert_true(ins >= RATE && ins <= max_ins);
	assert_int_equal(ins + lim, N);
	assert_int_equal(dp_conns_count(fx), ins + 1);
	assert_int_equal(o.node, owner_in(RING_A, &s));
	if (ins + 1 <= max_ins) {
		/* the bucket may have refilled: only bound it */
		assert_int_equal(o.d[RM_CNT_CONN_STALE], 1);
	} else {
		expect("stale, bucket dry", &o, XDP_TX, owner_in(RING_A, &s),
		       FWD | STALE | LIMITED);
		assert_int_equal(entry_of(&s).node, 5);
	}
	/* the bucket refills with time: after 0.3 s (1.2 tokens at 4/s) the
	 * next new flow is written, and the ones after it only as fast as
	 * the tokens come */
	usleep(300 * 1000);
	ins = 0;
	for (k = 0; k < 3; k++) {
		flow_pick(SVC_U5, RING_B, -1, 0, &s);
		pkt = flow_pkt(&s, 0, 0);
		shoot(&pkt, &o);
		assert_int_equal(o.node, owner_in(RING_A, &s));
		assert_int_equal(o.d[RM_CNT_CONN_INSERT] +
				     o.d[RM_CNT_CONN_INSERT_LIMITED],
				 1);
		if (!k)
			assert_int_equal(o.d[RM_CNT_CONN_INSERT], 1);
		ins += o.d[RM_CNT_CONN_INSERT];
	}
	/* at most the fraction left when dry plus what the time added */
	assert_true(ins <= 1 + (now_ns() - t1 + tick_ns()) * RATE / NSEC);

	/* limited flows are left to the ring, and retry on later packets */
	for (k = 0; k < N && dp_conn_get(fx, &f[k].key, &e) == 0; k++)
		;
	assert_true(k < N);
	set_config(60, 0);
	send_expect("limited flow, no limit now", flow_pkt(&f[k], ACK, 0),
		    XDP_TX, owner_in(RING_A, &f[k]), FWD | MISS | INSERT);

	/* rate 0: every new flow written */
	for (k = 0; k < N; k++) {
		flow_pick(flow_svcs[k % N_FLOW_SVCS], RING_B, -1, 0, &f[k]);
		send_expect("unlimited", flow_pkt(&f[k], ACK, 0), XDP_TX,
			    owner_in(RING_A, &f[k]), FWD | MISS | INSERT);
	}
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
}

/* ICMP errors reach the node holding the connection, and never write:
 * no insert on a miss, no rewrite of a stale entry, no refresh. */
static void test_icmp(void **state)
{
	struct rm_conn e1, e2;
	struct flow f, g;
	struct dp_spec s;
	long a, b;

	(void)state;
	NEED_BPF();
	flow_pick(SVC_T5, RING_B, -1, 1, &f);
	a = owner_in(RING_A, &f);
	b = owner_in(RING_B, &f);
	send_expect("ack", flow_pkt(&f, ACK, 0), XDP_TX, a,
		    FWD | MISS | INSERT);
	push_ring(RING_B);
	put_entry(&f, a, 1, 1);

	s = flow_pkt(&f, 0, 0);
	s.kind = DP_ICMP_ERR;
	s.icmp_type = 3;
	s.icmp_code = 4;
	send_expect("frag needed", s, XDP_TX, a, FWD | ICMP | HIT);
	assert_true(entry_of(&f).last_ns == 1);

	/* stale: the ring owner, entry left alone */
	set_node(a, RM_NODE_ACTIVE, 2);
	e1 = entry_of(&f);
	send_expect("stale", s, XDP_TX, b, FWD | ICMP | STALE);
	e2 = entry_of(&f);
	assert_memory_equal(&e1, &e2, sizeof(e1));

	/* miss: the ring owner, nothing written */
	flow_pick(SVC_U6, RING_B, -1, 1, &g);
	s = flow_pkt(&g, 0, 0);
	s.kind = DP_ICMP_ERR;
	s.icmp_type = 2;
	send_expect("miss", s, XDP_TX, owner_in(RING_B, &g), FWD | ICMP | MISS);
	no_entry(&g);
}

/* Fragments of a 3-tuple flow find its entry like its other packets. */
static void test_fragments(void **state)
{
	static const int three[] = {SVC_U3, SVC_U6, SVC_T3};
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < 3; k++) {
		struct flow f;
		long a;

		push_ring(RING_A);
		flow_pick(three[k], RING_B, -1, 1, &f);
		a = owner_in(RING_A, &f);
		send_expect("whole", flow_pkt(&f, ACK, 0), XDP_TX, a,
			    FWD | MISS | INSERT);
		push_ring(RING_B);
		send_expect("first fragment", flow_pkt(&f, ACK, DP_FRAG_FIRST),
			    XDP_TX, a, FWD | HIT);
		send_expect("later fragment", flow_pkt(&f, ACK, DP_FRAG_LATER),
			    XDP_TX, a, FWD | HIT);
	}
	/* a later fragment seen first writes the entry (no ports needed) */
	{
		struct flow f;
		long b;

		flow_pick(SVC_U3, RING_B, -1, 1, &f);
		b = owner_in(RING_B, &f);
		send_expect("later fragment first",
			    flow_pkt(&f, 0, DP_FRAG_LATER), XDP_TX, b,
			    FWD | MISS | INSERT);
		send_expect("then the first", flow_pkt(&f, 0, DP_FRAG_FIRST),
			    XDP_TX, b, FWD | HIT);
	}
}

/* A remembered node goes through the same forward path: MACs, XDP_TX or
 * a redirect to its port, stats. */
static void test_forward_path(void **state)
{
	__u8 mac[ETH_ALEN], src[ETH_ALEN];
	struct rm_traffic n0, n1, s0, s1;
	struct flow f;

	(void)state;
	NEED_BPF();
	flow_pick(SVC_T5, RING_B, -1, 0, &f);
	put_entry(&f, NODE_REDIR, 1, now_ns());
	assert_int_equal(dp_traffic(fx, fx->node_stats, NODE_REDIR, &n0), 0);
	assert_int_equal(dp_traffic(fx, fx->svc_stats, SVC_T5, &s0), 0);
	send_expect("redirect", flow_pkt(&f, ACK, 0), XDP_REDIRECT, NODE_REDIR,
		    C(RM_CNT_FWD_REDIRECT) | HIT);
	dp_node_mac(NODE_REDIR, mac);
	dp_node_src_mac(NODE_REDIR, src);
	assert_memory_equal(o.out, mac, ETH_ALEN);
	assert_memory_equal(o.out + ETH_ALEN, src, ETH_ALEN);
	assert_int_equal(dp_traffic(fx, fx->node_stats, NODE_REDIR, &n1), 0);
	assert_int_equal(dp_traffic(fx, fx->svc_stats, SVC_T5, &s1), 0);
	assert_int_equal(n1.packets - n0.packets, 1);
	assert_int_equal(s1.packets - s0.packets, 1);

	put_entry(&f, NODE_REDIR_FAIL, 1, now_ns());
	send_expect("port missing", flow_pkt(&f, ACK, 0), XDP_DROP, -1,
		    C(RM_CNT_REDIRECT_FAILED) | HIT);
}

/* ---- the presence index ---------------------------------------------- */
/* f's set (read) and tag; the set's number. */
static __u32 idx_set(const struct flow *f, struct rm_conn_set *set,
		     __u16 *tag)
{
	long i = rm_conn_idx_read(fx->conn_idx, &f->key, set, tag, true);

	assert_true(i > 0);
	return (__u32)i;
}

static void idx_write(__u32 i, const struct rm_conn_set *set)
{
	assert_int_equal(bpf_map_update_elem(fx->conn_idx, &i, set, BPF_ANY),
			 0);
}

/* An entry whose tag is not in its set, written behind the data plane's
 * back: what the LRU keeps of a flow whose tag was replaced. */
static void put_untagged(const struct flow *f, __u32 node)
{
	struct rm_conn e = {.node = node, .gen = 1, .last_ns = now_ns()};
	struct rm_conn_set set;
	struct rm_flow k;
	__u16 tag;
	__u32 i = idx_set(f, &set, &tag);
	int w;

	while ((w = rm_conn_idx_find(&set, tag)) >= 0)
		set.way[w] = 0;
	idx_write(i, &set);
	assert_int_equal(bpf_map_update_elem(dp_conn_key(fx, &f->key, &k), &k,
					     &e, BPF_ANY),
			 0);
}

/* A SYN whose tag is not in its set does not touch the table (its
 * tuple's entry, not honoured, stays), and the handshake's ACK goes to
 * the ring owner, not to that entry's node, and rewrites it with the
 * tag: the reused-tuple guarantee without the SYN's lookup. With the tag
 * there, the SYN deletes the entry as before (test_syn_bypass). */
static void test_idx_syn(void **state)
{
	int k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < 2; k++) {
		struct rm_conn_set set;
		struct flow f;
		__u16 tag;
		long a, b;

		flow_pick(tcp5_svcs[k], RING_B, -1, 1, &f);
		a = owner_in(RING_A, &f);
		b = owner_in(RING_B, &f);
		push_ring(RING_B);
		put_untagged(&f, a);
		send_expect("syn, no tag", flow_pkt(&f, SYN, 0), XDP_TX, b, FWD);
		assert_int_equal(entry_of(&f).node, a); /* not looked up */
		send_expect("its ack", flow_pkt(&f, ACK, 0), XDP_TX, b,
			    FWD | STALE | INSERT);
		entry_written(&f, b, 1);
		idx_set(&f, &set, &tag);
		assert_true(rm_conn_idx_find(&set, tag) >= 0);
		send_expect("then hits", flow_pkt(&f, PSH_ACK, 0), XDP_TX, b,
			    FWD | HIT);
		push_ring(RING_A);
	}
}

/* Inserting into a full set replaces its oldest way; the flow that had
 * it loses its entry (stale: to the ring owner, rewritten); ways of
 * other tags are never taken while one is empty or the flow's own. */
static void test_idx_full_set(void **state)
{
	struct rm_conn_set set, s2;
	struct flow f;
	__u16 tag, age = rm_conn_idx_age(now_ns()), other;
	__u32 i;
	long a;
	int w;

	(void)state;
	NEED_BPF();
	/* the choice itself */
	memset(&s2, 0, sizeof(s2));
	s2.way[3] = 7 | age << 8;
	assert_int_equal(rm_conn_idx_pick(&s2, 9, age), 0); /* empty first */
	assert_int_equal(rm_conn_idx_pick(&s2, 7, age), 3); /* its own */
	for (w = 0; w < RM_CONN_WAYS; w++)
		s2.way[w] = (__u16)((w + 1) | (__u16)(age - (w == 5 ? 9 : 1))
						      << 8);
	assert_int_equal(rm_conn_idx_pick(&s2, 200, age), 5); /* oldest */

	/* a flow whose way is the oldest of a full set */
	flow_pick(SVC_T5, RING_B, -1, 1, &f);
	a = owner_in(RING_A, &f);
	send_expect("ack", flow_pkt(&f, ACK, 0), XDP_TX, a,
		    FWD | MISS | INSERT);
	push_ring(RING_B);
	i = idx_set(&f, &set, &tag);
	w = rm_conn_idx_find(&set, tag);
	assert_true(w >= 0);
	for (int v = 0, t = 1; v < RM_CONN_WAYS; v++) {
		if (v == w) {
			set.way[v] = tag | (__u16)(age - 9) << 8;
			continue;
		}
		while (t == tag)
			t++;
		set.way[v] = (__u16)(t++ | age << 8);
	}
	idx_write(i, &set);
	send_expect("still honoured", flow_pkt(&f, ACK, 0), XDP_TX, a,
		    FWD | HIT);
	/* a new flow's insert into that set, as the data plane picks */
	other = (__u16)(tag == 250 ? 251 : 250);
	w = rm_conn_idx_pick(&set, other, age);
	assert_int_equal((set.way[w] & 0xff), tag);
	set.way[w] = other | age << 8;
	idx_write(i, &set);
	send_expect("its way replaced: stale", flow_pkt(&f, ACK, 0), XDP_TX,
		    owner_in(RING_B, &f), FWD | STALE | INSERT);
	entry_written(&f, owner_in(RING_B, &f), 1);
}

/* One shared table under per-CPU LRU lists: an entry written on one CPU
 * is found on another. */
static void test_cross_cpu(void **state)
{
	cpu_set_t old;
	struct flow f;
	long a;

	(void)state;
	NEED_BPF();
	if (pin_cpu(1, &old)) {
		print_message("SKIP: fewer than 2 CPUs to run on\n");
		skipped++;
		skip();
	}
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
	flow_pick(SVC_U5, RING_B, -1, 1, &f);
	a = owner_in(RING_A, &f);
	assert_int_equal(pin_cpu(0, &old), 0);
	send_expect("cpu 0", flow_pkt(&f, 0, 0), XDP_TX, a,
		    FWD | MISS | INSERT);
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
	push_ring(RING_B);
	assert_int_equal(pin_cpu(1, &old), 0);
	send_expect("cpu 1", flow_pkt(&f, 0, 0), XDP_TX, a, FWD | HIT);
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_map_shape, reset),
	    cmocka_unit_test_setup(test_miss_insert, reset),
	    cmocka_unit_test_setup(test_hit_across_ring_change, reset),
	    cmocka_unit_test_setup(test_syn_bypass, reset),
	    cmocka_unit_test_setup(test_syn_no_owner, reset),
	    cmocka_unit_test_setup(test_syn_3tuple, reset),
	    cmocka_unit_test_setup(test_stale, reset),
	    cmocka_unit_test_setup(test_drain, reset),
	    cmocka_unit_test_setup(test_down, reset),
	    cmocka_unit_test_setup(test_udp_timeout, reset),
	    cmocka_unit_test_setup(test_insert_rate, reset),
	    cmocka_unit_test_setup(test_icmp, reset),
	    cmocka_unit_test_setup(test_fragments, reset),
	    cmocka_unit_test_setup(test_forward_path, reset),
	    cmocka_unit_test_setup(test_cross_cpu, reset),
	    cmocka_unit_test_setup(test_idx_syn, reset),
	    cmocka_unit_test_setup(test_idx_full_set, reset),
	};

	int failed = cmocka_run_group_tests_name("conntrack", tests,
						 group_setup, group_teardown);

	return rm_test_result(failed, skipped);
}
