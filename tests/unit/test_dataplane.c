// SPDX-License-Identifier: GPL-2.0
/*
 * XDP data plane, run in the kernel through bpf_prog_test_run_opts.
 *
 * The expected owner of every forwarded frame comes from the userspace
 * ring (rm_ring_lookup over the same encoded slots, rm_flow_hash over the
 * flow) and is checked against the destination MAC the program wrote:
 * every node has a MAC derived from its id. Each checked run starts from
 * an empty connection table, so its conn-* counters are exact too; what
 * the table does across packets is test_conntrack's.
 *
 *   table        each case: verdict, output bytes, counters, stats
 *   truncation   every table frame cut at every length
 *   icmp/frags   errors and fragments reach the flow's own node
 *   unseeded     no seed, no routing
 *   vip filter   rm_vip_slots is consulted: NONE means no lookup, an id
 *                whose meta holds the key none either
 *   parity       >= 10,000 random flows over three ring sizes
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "util.h"
#include "dp_fixture.h"
#include "skip.h"

#include "dp_cases.h"

static struct dp_fx *fx;
static char skip_why[256];
static int skipped; /* tests that could not run */


static int group_setup(void **state)
{
	(void)state;
	return dp_cases_open("test_dataplane", &fx, skip_why, sizeof(skip_why));
}

static int group_teardown(void **state)
{
	(void)state;
	dp_fx_close(fx);
	fx = NULL;
	return 0;
}



struct expect {
	int err;
	__u32 verdict;
	__u64 counters;
	const __u8 *out; /* expected output, len bytes */
	size_t len;
};

static int is_forward(__u32 verdict)
{
	return verdict == XDP_TX || verdict == XDP_REDIRECT;
}

/* Owner of a forwarded case per the userspace ring; -1 if none. */
static long case_owner(const struct dp_case *c)
{
	struct rm_flow f;

	if (c->svc < 0)
		return -1;
	dp_flow(&c->s, !!(fx->svc[c->svc].flags & RM_SVC_F_3TUPLE), &f);
	return dp_expected_owner(fx, c->svc, &f);
}

/* Run data[0..len) and compare with e; prints and returns 1 on mismatch. */
static int run_check(const char *what, const __u8 *data, size_t len,
		     __u32 ifindex, const struct expect *e)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	static struct dp_run r;
	int bad = 0;

	assert_int_equal(dp_conns_clear(fx), 0);
	assert_int_equal(dp_counters(fx, before), 0);
	dp_run(fx, data, len, ifindex, &r);
	assert_int_equal(dp_counters(fx, after), 0);

	if (r.err != e->err) {
		print_error("%s (len %zu): test_run returned %d, want %d\n",
			    what, len, r.err, e->err);
		return 1;
	}
	if (e->err)
		return 0;
	if (r.retval != e->verdict) {
		print_error("%s (len %zu): verdict %s, want %s\n", what, len,
			    dp_action_name(r.retval),
			    dp_action_name(e->verdict));
		bad = 1;
	}
	if (r.out_len != e->len || memcmp(r.out, e->out, e->len)) {
		long got = dp_mac_node(r.out), want = dp_mac_node(e->out);

		print_error("%s (len %zu): output differs (out len %u; dest "
			    "node %ld, want %ld)\n",
			    what, len, r.out_len, got, want);
		bad = 1;
	}
	bad |= dp_counters_rose(what, len, before, after, e->counters);
	return bad;
}

/* The full-length expectation of a case; out must hold the frame. */
static void case_expect(const struct dp_case *c, const struct dp_pkt *p,
			__u8 *out, struct expect *e)
{
	memcpy(out, p->b, p->len);
	e->err = 0;
	e->verdict = c->verdict;
	e->counters = c->counters;
	e->out = out;
	e->len = p->len;
	if (is_forward(c->verdict)) {
		long owner = case_owner(c);

		assert_true(owner >= 0);
		dp_node_mac(owner, out);
		dp_node_src_mac(owner, out + ETH_ALEN);
	}
}

/* After a case's run: the table holds the flow's entry, pointing at the
 * owner, exactly when the case writes one, and nothing else. */
static int table_check(const struct dp_case *c, long owner)
{
	long n = dp_conns_count(fx);
	long want = !!(c->counters & C(RM_CNT_CONN_INSERT));
	struct rm_conn e;
	struct rm_flow f;

	if (n != want) {
		print_error("%s: %ld table entries, want %ld\n", c->desc, n,
			    want);
		return 1;
	}
	if (!want)
		return 0;
	dp_flow(&c->s, !!(fx->svc[c->svc].flags & RM_SVC_F_3TUPLE), &f);
	if (dp_conn_get(fx, &f, &e) || e.node != owner || e.gen != 1) {
		print_error("%s: no entry for the flow on node %ld\n", c->desc,
			    owner);
		return 1;
	}
	return 0;
}

static void test_table(void **state)
{
	static struct dp_pkt p;
	static __u8 out[DP_PKT_MAX];
	int failed = 0;
	size_t i;

	(void)state;
	NEED_BPF();
	for (i = 0; i < N_CASES; i++) {
		const struct dp_case *c = &cases[i];
		struct rm_traffic s0 = {}, s1, n0 = {}, n1;
		struct expect e;
		long owner = -1;

		dp_build(&c->s, &p);
		case_expect(c, &p, out, &e);
		if (is_forward(c->verdict)) {
			owner = case_owner(c);
			assert_int_equal(
			    dp_traffic(fx, fx->svc_stats, c->svc, &s0), 0);
			assert_int_equal(
			    dp_traffic(fx, fx->node_stats, owner, &n0), 0);
		}
		if (run_check(c->desc, p.b, p.len, c->ifindex, &e)) {
			failed++;
			continue;
		}
		if (table_check(c, owner))
			failed++;
		if (owner < 0)
			continue;
		/* the forwarded frame is accounted to its service and node */
		assert_int_equal(dp_traffic(fx, fx->svc_stats, c->svc, &s1), 0);
		assert_int_equal(dp_traffic(fx, fx->node_stats, owner, &n1), 0);
		if (s1.packets - s0.packets != 1 ||
		    s1.bytes - s0.bytes != p.len ||
		    n1.packets - n0.packets != 1 ||
		    n1.bytes - n0.bytes != p.len) {
			print_error(
			    "%s: traffic stats not bumped by 1 frame of "
			    "%zu bytes\n",
			    c->desc, p.len);
			failed++;
		}
	}
	print_message("table: %zu cases, %d failed\n", N_CASES, failed);
	assert_int_equal(failed, 0);
}

/* Every table frame cut at every length. test_run refuses frames shorter
 * than an Ethernet header (-EINVAL). Otherwise, with l2_len the VLAN-
 * tagged Ethernet header the parser walks and ip_end the end of the IP
 * packet by its own length field:
 *   len < l2_len                 drop, malformed
 *   not IP                       pass, not a service
 *   len < ip_end                 drop, malformed: never forwarded
 *   len >= ip_end                as the full frame (only padding is cut)
 * so a frame is forwarded only when every header and the whole IP packet
 * are there. */
static void test_truncation(void **state)
{
	static struct dp_pkt p;
	static __u8 out[DP_PKT_MAX];
	size_t i, len, runs = 0;
	int failed = 0;

	(void)state;
	NEED_BPF();
	for (i = 0; i < N_CASES && failed < 20; i++) {
		const struct dp_case *c = &cases[i];
		struct expect full, e;

		dp_build(&c->s, &p);
		case_expect(c, &p, out, &full);
		for (len = 0; len <= p.len && failed < 20; len++) {
			e = full;
			e.len = len;
			if (len < ETH_HLEN) {
				e.err = -EINVAL;
			} else if (len < p.l2_len ||
				   (p.ip_end && len < p.ip_end)) {
				e.verdict = XDP_DROP;
				e.counters = MALFORMED;
				e.out = p.b;
			} else if (!p.ip_end) {
				e.verdict = XDP_PASS;
				e.counters = NOT_SVC;
				e.out = p.b;
			}
			failed += run_check(c->desc, p.b, len, c->ifindex, &e);
			runs++;
		}
	}
	print_message("truncation: %zu runs, %d failed\n", runs, failed);
	assert_int_equal(failed, 0);
}

/* ---- random flows --------------------------------------------------- */
static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u64 rnd(void)
{
	return rm_splitmix64(&rng_state);
}

/* A random client address of the family, as text. */
static void rnd_client(int family, char *buf, size_t n)
{
	__u8 a[16];
	__u64 x = rnd(), y = rnd();

	memcpy(a, &x, 8);
	memcpy(a + 8, &y, 8);
	if (family == 4 && (a[0] == 0 || a[0] >= 224))
		a[0] = 100; /* keep it unicast */
	inet_ntop(family == 6 ? AF_INET6 : AF_INET, a, buf, n);
}

/* Dest node of a frame run through the program, -1 if not forwarded. */
static long run_owner(const struct dp_pkt *p)
{
	static struct dp_run r;

	dp_run(fx, p->b, p->len, 0, &r);
	if (r.err || r.retval != XDP_TX)
		return -1;
	return dp_mac_node(r.out);
}

/* An ICMP error quoting a flow reaches the node the flow's own packets
 * reach, and so do all fragments of a 3-tuple flow. */
static void test_follow_flow(void **state)
{
	static const struct {
		int family;
		__u8 proto;
		const char *vip;
		__u16 port;
		int three;
	} svcs[] = {
	    {4, IPPROTO_TCP, "10.0.0.1", 80, 0},
	    {4, IPPROTO_UDP, "10.0.0.1", 53, 1},
	    {6, IPPROTO_TCP, "2001:db8::1", 443, 0},
	    {6, IPPROTO_UDP, "2001:db8::1", 53, 1},
	    {6, IPPROTO_TCP, "2001:db8::2", 80, 1},
	    {4, IPPROTO_TCP, "10.0.0.8", 80, 1},
	};
	static struct dp_pkt p;
	char client[INET6_ADDRSTRLEN];
	int i, k, failed = 0, checked = 0;

	(void)state;
	NEED_BPF();
	for (i = 0; i < 200; i++) {
		for (k = 0; k < (int)(sizeof(svcs) / sizeof(svcs[0])); k++) {
			struct dp_spec s = {
			    .family = svcs[k].family,
			    .proto = svcs[k].proto,
			    .dst = svcs[k].vip,
			    .src = client,
			    .sport = 1024 + rnd() % 64000,
			    .dport = svcs[k].port,
			};
			long own, other;

			rnd_client(s.family, client, sizeof(client));
			dp_build(&s, &p);
			own = run_owner(&p);
			if (own < 0) {
				print_error("flow not forwarded\n");
				failed++;
				continue;
			}
			s.kind = DP_ICMP_ERR;
			s.icmp_type = s.family == 6 ? 2 : 3;
			s.icmp_code = s.family == 6 ? 0 : 4;
			dp_build(&s, &p);
			other = run_owner(&p);
			checked++;
			if (other != own) {
				print_error(
				    "%s %s:%u -> %s:%u: icmp error to %ld, "
				    "flow to %ld\n",
				    s.proto == IPPROTO_TCP ? "tcp" : "udp",
				    s.src, s.sport, s.dst, s.dport, other, own);
				failed++;
			}
			if (!svcs[k].three)
				continue;
			s.kind = DP_IP;
			s.frag = DP_FRAG_FIRST;
			dp_build(&s, &p);
			other = run_owner(&p);
			s.frag = DP_FRAG_LATER;
			dp_build(&s, &p);
			checked += 2;
			if (other != own || run_owner(&p) != own) {
				print_error("%s -> %s: fragments leave the "
					    "flow's node %ld\n",
					    s.src, s.dst, own);
				failed++;
			}
		}
	}
	print_message("follow-flow: %d checks, %d failed\n", checked, failed);
	assert_int_equal(failed, 0);
}

/* Without RM_CFG_SEEDED nothing is routed, whatever the maps hold. */
static void test_unseeded(void **state)
{
	static struct dp_pkt p;
	struct dp_spec s = {V4(TCP, "10.0.0.1", 41000, 80)};
	struct expect e = {
	    .verdict = XDP_DROP,
	    .counters = NO_NODE,
	};
	int bad;

	(void)state;
	NEED_BPF();
	dp_build(&s, &p);
	e.out = p.b;
	e.len = p.len;
	assert_int_equal(dp_set_config(fx, 0), 0);
	bad = run_check("unseeded", p.b, p.len, 0, &e);
	assert_int_equal(dp_set_config(fx, RM_CFG_SEEDED), 0);
	assert_int_equal(bad, 0);
	assert_true(run_owner(&p) >= 0);
}

/* ---- rm_vip_slots --------------------------------------------------- */
static void slots_get(struct rm_vip_slots *t)
{
	__u32 zero = 0;

	assert_int_equal(bpf_map_lookup_elem(fx->vip_slots, &zero, t), 0);
}

static void slots_put(const struct rm_vip_slots *t)
{
	__u32 zero = 0;

	assert_int_equal(bpf_map_update_elem(fx->vip_slots, &zero, t, BPF_ANY),
			 0);
}

/* Slot of a key the topology installed; fails if another key shares it,
 * since clearing it would then take that key out too. */
static __u32 topo_slot(int family, const char *vip, __u8 proto, __u16 port,
		       __u8 key_flags)
{
	struct rm_svc_key k, next;
	__u32 slot, sharing = 0;
	void *prev = NULL;

	dp_svc_key(&k, family, vip, proto, port, key_flags);
	slot = rm_vip_key_slot(&k);
	while (!bpf_map_get_next_key(fx->services, prev, &next)) {
		sharing += rm_vip_key_slot(&next) == slot;
		k = next;
		prev = &k;
	}
	assert_int_equal(sharing, 1);
	return slot;
}

static const struct dp_case *find_case(const char *desc)
{
	for (size_t i = 0; i < N_CASES; i++)
		if (!strcmp(cases[i].desc, desc))
			return &cases[i];
	fail_msg("no case '%s'", desc);
	return NULL;
}

/* Run c as the table does (verdict, output, counters); 1 on mismatch. */
static int case_check(const struct dp_case *c)
{
	static struct dp_pkt p;
	static __u8 out[DP_PKT_MAX];
	struct expect e;

	dp_build(&c->s, &p);
	case_expect(c, &p, out, &e);
	return run_check(c->desc, p.b, p.len, c->ifindex, &e);
}

/* c as it goes when no service matches: parse errors and passes come
 * before the match and stay; everything else is passed untouched. */
static struct dp_case unmatched(const struct dp_case *c)
{
	struct dp_case u = *c;

	if (c->counters & (MALFORMED | C(RM_CNT_PASS_EXT_LIMIT)))
		return u;
	u.verdict = XDP_PASS;
	u.counters = NOT_SVC;
	u.svc = -1;
	return u;
}

/* Every table case, as the table says; the number that fail. */
static int all_cases(void)
{
	int failed = 0;

	for (size_t i = 0; i < N_CASES; i++)
		failed += case_check(&cases[i]);
	return failed;
}

static void meta_get(__u32 id, struct rm_svc_meta *m)
{
	assert_int_equal(bpf_map_lookup_elem(fx->svc_meta, &id, m), 0);
}

static void meta_put(__u32 id, const struct rm_svc_meta *m)
{
	assert_int_equal(bpf_map_update_elem(fx->svc_meta, &id, m, BPF_ANY),
			 0);
}

/* Every key has a slot, and the data plane looks a key up only when its
 * slot is not NONE: a NONE slot passes a packet whose service exists; a
 * MANY slot, or one naming an id whose meta holds another key, costs a
 * lookup and changes nothing; a slot naming the id whose meta holds the
 * key answers without rm_services. */
static void test_vip_filter(void **state)
{
	static struct rm_vip_slots saved, t;
	struct rm_svc_meta m, m_saved;
	struct rm_svc_key k, next;
	struct rm_svc v;
	struct dp_case c;
	void *prev = NULL;
	int failed = 0, keys = 0;
	__u32 slot;
	size_t i;

	(void)state;
	NEED_BPF();
	slots_get(&saved);
	/* the fixture gave every key it inserted a slot */
	while (!bpf_map_get_next_key(fx->services, prev, &next)) {
		keys++;
		if (rm_vip_slot_get(&saved, rm_vip_key_slot(&next)) ==
		    RM_VIP_SLOT_NONE)
			failed++;
		k = next;
		prev = &k;
	}
	assert_true(keys > 0);
	assert_int_equal(failed, 0);

	/* all NONE: nothing matches, whatever rm_services holds */
	memset(&t, 0, sizeof(t));
	slots_put(&t);
	for (i = 0; i < N_CASES; i++) {
		c = unmatched(&cases[i]);
		failed += case_check(&c);
	}
	/* all MANY: every slot a collision, every key looked up, and the
	 * table goes exactly as with the real slots */
	memset(&t, 0xff, sizeof(t));
	slots_put(&t);
	failed += all_cases();
	/* every slot naming one service: its own key answers from the
	 * meta, every other key's is a mismatch and looked up */
	for (i = 0; i < RM_VIP_SLOTS; i++)
		t.s[i] = SVC_V4_TCP80 + 1;
	slots_put(&t);
	failed += all_cases();
	/* every used slot naming the next id: a meta of another key or none */
	for (i = 0; i < RM_VIP_SLOTS; i++)
		t.s[i] = saved.s[i] == RM_VIP_SLOT_NONE ||
				 saved.s[i] == RM_VIP_SLOT_MANY
			     ? saved.s[i]
			     : saved.s[i] % RM_MAX_SERVICES + 1;
	slots_put(&t);
	failed += all_cases();
	slots_put(&saved);

	/* the meta of an id changed to another key (the wildcard's), or
	 * not in use: its slot leads to a lookup, which finds the service */
	meta_get(SVC_V4_TCP80, &m_saved);
	m = m_saved;
	m.key.port = 0;
	meta_put(SVC_V4_TCP80, &m);
	failed += all_cases();
	m = m_saved;
	m.in_use = 0;
	meta_put(SVC_V4_TCP80, &m);
	failed += all_cases();
	meta_put(SVC_V4_TCP80, &m_saved);

	/* the slot and the meta answer alone: with the key gone from
	 * rm_services (which the control plane only does after the slot
	 * stops naming the id) the packet still finds its service ... */
	dp_svc_key(&k, 4, "10.0.0.1", IPPROTO_TCP, 80, 0);
	assert_int_equal(bpf_map_lookup_elem(fx->services, &k, &v), 0);
	assert_int_equal(bpf_map_delete_elem(fx->services, &k), 0);
	failed += case_check(find_case("v4 tcp exact port"));
	/* ... and with the slot MANY it falls through to the wildcard */
	t = saved;
	t.s[topo_slot(4, "10.0.0.1", IPPROTO_TCP, 0, 0)] = RM_VIP_SLOT_MANY;
	slot = rm_vip_key_slot(&k);
	t.s[slot] = RM_VIP_SLOT_MANY;
	slots_put(&t);
	c = *find_case("v4 tcp exact port");
	c.svc = SVC_V4_TCPANY;
	failed += case_check(&c);
	assert_int_equal(bpf_map_update_elem(fx->services, &k, &v, BPF_NOEXIST),
			 0);

	/* the exact slot NONE: tcp/80 falls through to the wildcard */
	t = saved;
	t.s[topo_slot(4, "10.0.0.1", IPPROTO_TCP, 80, 0)] = RM_VIP_SLOT_NONE;
	slots_put(&t);
	c = *find_case("v4 tcp exact port");
	c.svc = SVC_V4_TCPANY;
	failed += case_check(&c);
	failed += case_check(find_case("v4 tcp wildcard port"));

	/* the wildcard slot NONE: other ports pass, the exact one stays */
	t = saved;
	t.s[topo_slot(4, "10.0.0.1", IPPROTO_TCP, 0, 0)] = RM_VIP_SLOT_NONE;
	slots_put(&t);
	c = unmatched(find_case("v4 tcp wildcard port"));
	failed += case_check(&c);
	failed += case_check(find_case("v4 tcp exact port"));

	/* the fragment key's slot NONE: later fragments pass, the rest
	 * of the 3-tuple service stays */
	t = saved;
	t.s[topo_slot(4, "10.0.0.8", IPPROTO_TCP, 0, RM_SVCK_FRAG)] =
	    RM_VIP_SLOT_NONE;
	slots_put(&t);
	c = unmatched(find_case("v4 tcp later fragment, 3-tuple, 1 tag"));
	failed += case_check(&c);
	failed += case_check(find_case("v4 tcp 3-tuple"));

	/* a v6 key's slot NONE */
	t = saved;
	t.s[topo_slot(6, "2001:db8::1", IPPROTO_TCP, 443, 0)] =
	    RM_VIP_SLOT_NONE;
	slots_put(&t);
	c = unmatched(find_case("v6 tcp exact port"));
	failed += case_check(&c);
	failed += case_check(find_case("v6 udp wildcard 3-tuple"));

	slots_put(&saved);
	failed += all_cases();
	assert_int_equal(failed, 0);
}

/* ---- hash parity ----------------------------------------------------- */
#define PAR_SVC5 30 /* 10.9.0.1-2, 2001:db8:9::1-2, any port: 5-tuple */
#define PAR_SVC3 31 /* 10.9.0.3-4, 2001:db8:9::3-4, any port: 3-tuple */

static const char *const par_vip4[] = {"10.9.0.1", "10.9.0.2", "10.9.0.3",
				       "10.9.0.4"};
static const char *const par_vip6[] = {"2001:db8:9::1", "2001:db8:9::2",
				       "2001:db8:9::3", "2001:db8:9::4"};

static void parity_services(void)
{
	int i, err = 0;

	for (i = 0; i < 4; i++) {
		__u32 id = i < 2 ? PAR_SVC5 : PAR_SVC3;
		__u32 fl = i < 2 ? 0 : RM_SVC_F_3TUPLE;

		err |= dp_service(fx, 4, par_vip4[i], IPPROTO_TCP, 0, id, fl);
		err |= dp_service(fx, 4, par_vip4[i], IPPROTO_UDP, 0, id, fl);
		err |= dp_service(fx, 6, par_vip6[i], IPPROTO_TCP, 0, id, fl);
		err |= dp_service(fx, 6, par_vip6[i], IPPROTO_UDP, 0, id, fl);
	}
	assert_int_equal(err, 0);
}

/* Random flows over one ring: the kernel's pick must be the userspace
 * ring's, flow by flow. Returns mismatches. */
static int parity_run(__u32 first_id, __u32 n_nodes, __u32 vnodes, int flows)
{
	static struct dp_pkt p;
	char client[INET6_ADDRSTRLEN];
	__u32 ids[2] = {PAR_SVC5, PAR_SVC3}, i;
	int f, bad = 0, unfwd = 0;
	struct timespec t0, t1;

	for (i = 0; i < n_nodes; i++)
		assert_int_equal(
		    dp_set_node(fx, first_id + i, LO_IFINDEX, RM_NODE_ACTIVE),
		    0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(dp_push_ring(fx, ids, 2, first_id, n_nodes, vnodes),
			 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* the ring, not what earlier rings left in the table */
	assert_int_equal(dp_conns_clear(fx), 0);

	for (f = 0; f < flows; f++) {
		__u64 r = rnd();
		int vip = r & 3;
		struct dp_spec s = {
		    .family = (r >> 2) & 1 ? 6 : 4,
		    .proto = (r >> 3) & 1 ? IPPROTO_UDP : IPPROTO_TCP,
		    .src = client,
		    .sport = (r >> 16) & 0xffff,
		    .dport = (r >> 32) & 0xffff,
		    .payload = (r >> 48) & 63,
		};
		__u32 svc = vip < 2 ? PAR_SVC5 : PAR_SVC3;
		struct rm_flow fl;
		long want, got;

		s.dst = s.family == 6 ? par_vip6[vip] : par_vip4[vip];
		rnd_client(s.family, client, sizeof(client));
		dp_build(&s, &p);
		dp_flow(&s, svc == PAR_SVC3, &fl);
		want = dp_expected_owner(fx, svc, &fl);
		got = run_owner(&p);
		if (got < 0)
			unfwd++;
		if (want != got) {
			if (++bad <= 10) {
				char t[160];

				dp_flow_str(&fl, t, sizeof(t));
				print_error("parity (%u nodes x %u vnodes): %s "
					    "hash %08x: kernel node %ld, "
					    "userspace node %ld\n",
					    n_nodes, vnodes, t,
					    rm_flow_hash(&dp_seed, &fl), got,
					    want);
			}
		}
	}
	print_message("parity: %u nodes x %u vnodes = %u entries (push %.2fs): "
		      "%d flows, %d mismatches, %d not forwarded\n",
		      n_nodes, vnodes, n_nodes * vnodes,
		      (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		      flows, bad, unfwd);
	return bad;
}

static void test_parity(void **state)
{
	/* the largest ring: RM_MAX_RING_ENTRIES entries exactly */
	__u32 big_nodes = RM_MAX_RING_ENTRIES / RM_MAX_VNODES;
	int bad = 0;

	(void)state;
	NEED_BPF();
	assert_int_equal(big_nodes * RM_MAX_VNODES, RM_MAX_RING_ENTRIES);
	assert_true(big_nodes <= RM_MAX_NODES_PER_RING);
	parity_services();
	bad += parity_run(100, 3, RM_DEFAULT_VNODES, 4000);
	bad += parity_run(200, 64, RM_DEFAULT_VNODES, 4000);
	bad += parity_run(1000, big_nodes, RM_MAX_VNODES, 4000);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_truncation),
	    cmocka_unit_test(test_follow_flow),
	    cmocka_unit_test(test_unseeded),
	    cmocka_unit_test(test_vip_filter),
	    cmocka_unit_test(test_parity),
	};

	int failed = cmocka_run_group_tests_name("dataplane", tests,
						 group_setup, group_teardown);

	return rm_test_result(failed, skipped);
}
