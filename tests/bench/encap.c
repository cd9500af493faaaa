// SPDX-License-Identifier: GPL-2.0
/*
 * Part "encap": per-packet cost of each forwarding method, in the kernel
 * (bpf_prog_test_run, repeat >= 1,000,000): the director sending a new
 * flow (TCP SYN: ring search) to a node reached by l2, ipip and gue, each
 * beside a baseline that does the same forwarding work without the
 * director's logic (bpf/baseline.bpf.c: bl_tx for l2; bl_ipip and bl_gue
 * parse, bpf_fib_lookup, trim, push the same outer headers). The ipip
 * and gue rows take the node's next hop from its rm_nexthops record,
 * filled as ringload neighd fills it (user/lib/nexthop.c); one more ipip
 * row has no record, so bpf_fib_lookup runs per packet (the fallback).
 *
 * bpf_fib_lookup needs a routing table: the part runs in a network
 * namespace of its own (unshare: gone when the process exits) holding a
 * veth with the director's address, a route to the node subnet through a
 * gateway on that veth and the gateway's neighbour entry. The test frame
 * arrives on that veth (ctx ingress_ifindex), the route leaves by it:
 * every variant returns XDP_TX.
 *
 * The kernel repeats a program on one buffer: an encapsulating program
 * would wrap its own output again. Every variant therefore runs behind
 * trafficgen's tg_unencap, which puts the frame back as it arrived (the
 * outer headers off, the Ethernet header rewritten) and tail-calls it.
 * It does that work on every run of every row, an l2 row's too (a head
 * move of 0 bytes): every program pays the same for it, so rows of
 * different methods compare as their programs do. Skipping it where
 * nothing was pushed charged the encapsulating rows ~5 ns the l2 row
 * did not pay (docs/routed-nodes-performance.md). The floor is
 * tg_unencap tail-calling the empty program; each method's own
 * floor is tg_unencap in front of tg_push, which only makes room for the
 * method's outer headers. Rows and variants are interleaved in every
 * round, so rows compare as well as variants. Checked on every
 * timed run: verdict XDP_TX, the director's output byte for byte equal
 * to the baseline's (same outer header, same MACs from the FIB), and the
 * director's counters: forwarded-tx and encap-ipip/encap-gue (or neither
 * for l2) moved by exactly `repeat`, no other outcome, and
 * nexthop-fib-fallback by 0 with a record, by `repeat` without.
 *
 * `ringbench encap CANDIDATE.bpf.o...` (up to EB_MAX_CANDS) also runs
 * changed data planes (builds of bpf/ringmaster.bpf.c with a change
 * under test, loaded on the director's maps) as more variants of every
 * row, checked like the director and interleaved in the same rounds:
 * an ablation compares candidates within one run, each against its own
 * l2 row, which runs on a shared VM cannot do.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_encap.h>
#include "ringmaster.skel.h"
#include "baseline.skel.h"
#include "trafficgen.skel.h"
#include "bench.h"
#include "director.h"
#include "ringfix.h"
#include "nexthop.h"

#define EB_REPEAT 1000000u
#define EB_MAX_ROUNDS 101
#define EB_ROWS 4
#define EB_MAX_CANDS 6
#define EB_FRAME_LEN 60 /* TCP with 6 payload bytes: no Ethernet padding */
#define EB_SRC "198.18.2.1"
#define EB_GW "198.18.2.2"
#define EB_NODE "198.19.0.5"

static const char *const eb_netns_setup[] = {
    "ip link set lo up",
    "ip link add eb0 address 02:52:4d:00:00:fe type veth peer name eb1",
    "ip link set eb0 up && ip link set eb1 up",
    /* bpf_fib_lookup answers only where forwarding is on */
    "sysctl -qw net.ipv4.conf.all.forwarding=1",
    "ip addr add " EB_SRC "/24 dev eb0",
    "ip neigh add " EB_GW " lladdr 02:52:4d:00:00:fd dev eb0 nud permanent",
    "ip route add 198.19.0.0/24 via " EB_GW,
};

/* V_MFLOOR, the method's floor: tg_unencap in front of tg_push, which
 * only makes room for the method's outer headers (nothing for l2): what
 * the harness and the headroom move cost any encapsulating program */
enum {
	V_BASE,
	V_DIR,
	V_FLOOR,
	V_MFLOOR,
	V_CAND, /* the first candidate (ringbench encap OBJ...) */
	V_MAX = V_CAND + EB_MAX_CANDS
};
static const char *const var_names[V_CAND] = {
    "baseline", "director", "tg_unencap alone", "tg_unencap + tg_push"};

struct eb_row {
	const char *name;
	__u8 via;
	bool fib; /* no next-hop record: bpf_fib_lookup per packet */
	int base_fd; /* the baseline program tg_unencap tail-calls */
	double ns[V_MAX][EB_MAX_ROUNDS];
	struct bench_stat st[V_MAX];
	double ratio, net_ratio;
	double l2_net; /* (director - method floor) / the l2 row's net */
	struct bench_run ref; /* the baseline's frame */
	char status[160];
};

struct ectx {
	const struct bench_opts *o;
	struct director d;
	struct baseline_bpf *bl;
	struct trafficgen_bpf *tg;
	struct rm_nh_resolver *res;
	__u32 ifindex;
	int nvar; /* V_CAND + candidates */
	struct bpf_object *cand[EB_MAX_CANDS];
	int cand_fd[EB_MAX_CANDS];
	__u8 frame[EB_FRAME_LEN];
	__be32 src, node;
};

static int eb_netns(void)
{
	if (unshare(CLONE_NEWNET))
		return -errno;
	for (size_t i = 0; i < sizeof(eb_netns_setup) / sizeof(*eb_netns_setup);
	     i++)
		if (system(eb_netns_setup[i])) {
			fprintf(stderr, "encap: failed: %s\n", eb_netns_setup[i]);
			return -EIO;
		}
	return 0;
}

static __u16 ip_csum(const __u8 *h)
{
	__u32 s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (__u32)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* A SYN to the VIP whose IPv4 packet fills the 60-byte frame (the director
 * and the baselines trim Ethernet padding; none here keeps the runs the
 * same). */
static void eb_frame(struct ectx *k, __u8 tcp_flags)
{
	__u8 *ip = k->frame + ETH_HLEN;
	__u16 c;

	bench_frame(k->frame, bench_dir_mac, bench_client_mac, BENCH_CLIENT_IP,
		    BENCH_VIP, 40000, BENCH_PORT, IPPROTO_TCP, tcp_flags);
	ip[2] = 0;
	ip[3] = EB_FRAME_LEN - ETH_HLEN;
	ip[10] = ip[11] = 0;
	c = ip_csum(ip);
	ip[10] = (__u8)(c >> 8);
	ip[11] = (__u8)c;
}

static int set_next(struct ectx *k, int fd)
{
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(k->tg->maps.tg_next), &zero, &fd,
				   BPF_ANY)
		   ? -errno
		   : 0;
}

static int eb_trun(struct ectx *k, int next_fd, __u32 repeat,
		   struct bench_run *r)
{
	int err = set_next(k, next_fd);

	return err ? err
		   : bench_unencap_run(
			 bpf_program__fd(k->tg->progs.tg_unencap), k->frame,
			 EB_FRAME_LEN, k->ifindex, repeat, r);
}

/* The director's one node: slot 0 of service BENCH_SVC_ID, by row->via. */
static int eb_node(struct ectx *k, __u8 via)
{
	struct rm_node n = {.state = RM_NODE_ACTIVE,
			    .gen = 1,
			    .weight = 1,
			    .svc_id = BENCH_SVC_ID,
			    .via = via,
			    .ifindex = k->ifindex,
			    .addr_family = RM_FAMILY_V4,
			    .gue_port = htons(RM_GUE_PORT)};
	__u32 id = 0;

	n.addr[0] = k->node;
	bench_node_mac(0, n.mac);
	memcpy(n.src_mac, bench_dir_mac, 6);
	bench_node_name(n.name, sizeof(n.name), 0);
	return bpf_map_update_elem(k->d.nodes_fd, &id, &n, BPF_ANY) ? -errno
								     : 0;
}

/* The node's next-hop record as ringload neighd writes it (valid for
 * the whole part), or none for the per-packet-lookup row. */
static int eb_nexthop(struct ectx *k, const struct eb_row *row)
{
	int fd = bpf_map__fd(k->d.skel->maps.rm_nexthops);
	struct rm_nh rec = {0};
	struct rm_nexthop gw;
	struct rm_config cfg;
	struct rm_node n;
	__u32 id = 0, zero = 0;
	int rc, err = 0;

	if (row->via != RM_VIA_L2 && !row->fib) {
		if (bpf_map_lookup_elem(k->d.nodes_fd, &id, &n) ||
		    bpf_map_lookup_elem(k->d.config_fd, &zero, &cfg))
			return -1;
		err = rm_nh_resolve(k->res, k->ifindex, &cfg, &n,
				    3600 * 1000000000ULL, &rec, &gw, &rc);
		if (!err && !(rec.flags & RM_NH_F_VALID))
			err = -EHOSTUNREACH;
		if (err) {
			errno = -err;
			return -1;
		}
	}
	return rm_nh_write(fd, id, &rec) ? -1 : 0;
}

/* A run's counter i moved d where exp was wanted: the row's status says
 * so and this returns 1; 0 when they agree. One check for the method
 * rows and the second-chance rows. */
static int counter_off(char *status, size_t len, int i, __u64 d, __u64 exp)
{
	if (d == exp)
		return 0;
	snprintf(status, len, "FAILED: counter %s moved %llu, expected %llu",
		 dir_counter_name(i), (unsigned long long)d,
		 (unsigned long long)exp);
	return 1;
}

/* One checked, timed run of variant v of row; ns on success. */
static int eb_measure(struct ectx *k, struct eb_row *row, int v,
		      __u32 repeat, const struct bench_run *ref, struct bench_run *r)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	int next = v >= V_CAND	  ? k->cand_fd[v - V_CAND]
		   : v == V_BASE  ? row->base_fd
		   : v == V_DIR	  ? k->d.prog_fd
		   : v == V_FLOOR ? bpf_program__fd(k->tg->progs.tg_ret_tx)
				  : bpf_program__fd(k->tg->progs.tg_push);
	/* a candidate is checked as the director is */
	int dir = v == V_DIR || v >= V_CAND;
	int enc = row->via == RM_VIA_GUE    ? RM_CNT_ENCAP_GUE
		  : row->via == RM_VIA_IPIP ? RM_CNT_ENCAP_IPIP
					    : -1;
	int fallback = row->fib ? RM_CNT_NH_FALLBACK : -1;
	int err;

	if (dir && dir_counters(&k->d, before))
		goto counters;
	err = eb_trun(k, next, repeat, r);
	if (err) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: test_run: %s", strerror(-err));
		return err;
	}
	if (r->retval != XDP_TX) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: %s returned %u, expected XDP_TX",
			 v >= V_CAND ? k->o->argv[v - V_CAND] : var_names[v],
			 r->retval);
		return -1;
	}
	if (v == V_FLOOR || v == V_MFLOOR)
		return 0;
	if (ref && (r->out_len != ref->out_len ||
		    memcmp(r->out, ref->out, r->out_len))) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: the %s's frame differs from the "
			 "baseline's (%u vs %u bytes)",
			 v >= V_CAND ? "candidate" : "director", r->out_len,
			 ref->out_len);
		return -1;
	}
	if (!dir)
		return 0;
	if (dir_counters(&k->d, after))
		goto counters;
	for (int i = 0; i < RM_CNT_MAX; i++) {
		__u64 d = after[i] - before[i], exp;

		if (i == RM_CNT_FWD_TX || i == enc || i == fallback)
			exp = repeat;
		else if (dir_counter_is_outcome(i) || i == RM_CNT_ENCAP_GUE ||
			 i == RM_CNT_ENCAP_IPIP || i == RM_CNT_NH_FALLBACK ||
			 i == RM_CNT_NH_ECMP)
			exp = 0;
		else
			continue;
		if (counter_off(row->status, sizeof(row->status), i, d, exp))
			return -1;
	}
	return 0;
counters:
	snprintf(row->status, sizeof(row->status), "FAILED: counters: %s",
		 strerror(errno));
	return -1;
}

/* Make row's node, record and method floor the current ones. */
static int eb_select(struct ectx *k, struct eb_row *row)
{
	if (eb_node(k, row->via)) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: node record: %s", strerror(errno));
		return -1;
	}
	k->tg->bss->tg_push_len =
	    row->via == RM_VIA_L2 ? 0
				  : rm_encap_overhead(row->via, RM_FAMILY_V4);
	if (eb_nexthop(k, row)) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: next-hop record: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The row's reference frame (the baseline's one run, which the
 * director's must equal) and a warm-up. */
static int eb_prepare(struct ectx *k, struct eb_row *row, __u32 repeat)
{
	struct bench_run r;

	if (eb_select(k, row) || eb_measure(k, row, V_BASE, 1, NULL, &row->ref) ||
	    eb_measure(k, row, V_DIR, 1, &row->ref, &r))
		return -1;
	if (row->via != RM_VIA_L2 &&
	    row->ref.out_len !=
		EB_FRAME_LEN + rm_encap_overhead(row->via, RM_FAMILY_V4)) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: the output is %u bytes, not encapsulated",
			 row->ref.out_len);
		return -1;
	}
	for (int v = 0; v < k->nvar; v++)
		if (eb_measure(k, row, v, repeat / 10, &row->ref, &r))
			return -1;
	return 0;
}

/* Every row in every round, the rows and the variants in turn (one
 * order, then the reverse): rows compare as well as variants do, which
 * the targets need (encapsulation against l2). */
static void eb_rows(struct ectx *k, struct eb_row *rows, int nrows)
{
	const int rounds = k->o->rounds;
	__u32 repeat = k->o->quick ? EB_REPEAT / 10 : EB_REPEAT;
	struct bench_run r;

	for (int i = 0; i < nrows; i++)
		eb_prepare(k, &rows[i], repeat);
	for (int rd = 0; rd < rounds; rd++)
		for (int j = 0; j < nrows; j++) {
			struct eb_row *row =
			    &rows[rd % 2 ? nrows - 1 - j : j];

			if (row->status[0] || eb_select(k, row))
				continue;
			for (int n = 0; n < k->nvar; n++) {
				int v = rd % 2 ? k->nvar - 1 - n : n;

				if (eb_measure(k, row, v, repeat, &row->ref,
					       &r))
					break;
				row->ns[v][rd] = r.ns;
			}
		}
	for (int i = 0; i < nrows; i++) {
		struct eb_row *row = &rows[i];

		if (row->status[0])
			continue;
		for (int v = 0; v < k->nvar; v++)
			bench_stat_of(row->ns[v], rounds, &row->st[v]);
		row->ratio = row->st[V_DIR].med / row->st[V_BASE].med;
		row->net_ratio = (row->st[V_DIR].med - row->st[V_FLOOR].med) /
				 (row->st[V_BASE].med - row->st[V_FLOOR].med);
	}
	for (int i = 0; i < nrows; i++)
		if (!rows[i].status[0] && !rows[0].status[0])
			rows[i].l2_net =
			    (rows[i].st[V_DIR].med - rows[i].st[V_MFLOOR].med) /
			    (rows[0].st[V_DIR].med - rows[0].st[V_MFLOOR].med);
}

static int eb_setup(struct ectx *k)
{
	struct rm_config cfg;
	struct bench_ring br;
	__u32 zero = 0;
	int inner, err;

	k->ifindex = if_nametoindex("eb0");
	inet_pton(AF_INET, EB_SRC, &k->src);
	inet_pton(AF_INET, EB_NODE, &k->node);
	eb_frame(k, BENCH_TCP_SYN);
	if (!k->ifindex || dir_open(&k->d))
		return -ENODEV;
	if (dir_seed(&k->d) || dir_service(&k->d, BENCH_VIP, BENCH_PORT,
					   IPPROTO_TCP, BENCH_SVC_ID))
		return -errno;
	if (bpf_map_lookup_elem(k->d.config_fd, &zero, &cfg))
		return -errno;
	cfg.encap_src4 = k->src;
	if (bpf_map_update_elem(k->d.config_fd, &zero, &cfg, BPF_ANY))
		return -errno;
	err = eb_node(k, RM_VIA_L2);
	if (err)
		return err;
	err = bench_ring(1, 256, &br);
	if (err)
		return err;
	inner = dir_ring_map(br.slots, br.nslots);
	bench_ring_free(&br);
	if (inner < 0)
		return inner;
	err = dir_ring_install(&k->d, BENCH_SVC_ID, inner);
	close(inner);
	if (err)
		return -errno;

	k->bl = baseline_bpf__open();
	if (!k->bl)
		return -errno;
	if (baseline_bpf__load(k->bl))
		return -errno;
	bench_node_mac(0, k->bl->bss->bl_dst_mac);
	memcpy(k->bl->bss->bl_src_mac, bench_dir_mac, 6);
	k->bl->bss->bl_encap_src = k->src;
	k->bl->bss->bl_node_addr = k->node;
	k->bl->bss->bl_gue_port = htons(RM_GUE_PORT);
	err = rm_nh_resolver_open(&k->res);
	if (err)
		return err;
	k->tg = trafficgen_bpf__open();
	if (!k->tg)
		return -errno;
	k->tg->rodata->tg_orig_len = EB_FRAME_LEN;
	if (trafficgen_bpf__load(k->tg))
		return -errno;
	memcpy(k->tg->bss->tg_orig_eth, k->frame, ETH_HLEN);
	return 0;
}

static void eb_print(struct rm_json *j, const struct eb_row *row)
{
	if (row->status[0])
		printf("| %s | %s | | | | | | |\n", row->name, row->status);
	else
		printf("| %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.2fx | "
		       "%.2fx | %.0f | %.0f | %.2fx |\n",
		       row->name, row->st[V_BASE].med, row->st[V_BASE].min,
		       row->st[V_BASE].max, row->st[V_DIR].med,
		       row->st[V_DIR].min, row->st[V_DIR].max, row->ratio,
		       row->net_ratio, row->st[V_FLOOR].med,
		       row->st[V_MFLOOR].med, row->l2_net);
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "method", row->name);
	rm_json_str(j, "status", row->status[0] ? row->status : "ok");
	if (!row->status[0]) {
		bench_json_stat(j, "baseline_ns", &row->st[V_BASE]);
		bench_json_stat(j, "director_ns", &row->st[V_DIR]);
		bench_json_stat(j, "floor_tg_unencap_ns", &row->st[V_FLOOR]);
		bench_json_stat(j, "method_floor_ns", &row->st[V_MFLOOR]);
		rm_json_num(j, "net_of_method_floor_vs_l2", row->l2_net);
		rm_json_num(j, "ratio", row->ratio);
		rm_json_num(j, "ratio_net_of_floor", row->net_ratio);
	}
	rm_json_obj_close(j);
}

/* Issue 23's routed-path targets: each encapsulating method's director
 * path at most 1.15x its l2 path, as the issue measured it (program and
 * wrapper, which costs every row alike); the programs alone, each row's
 * floor taken off (which raises a ratio above 1), are printed beside it.
 * The fallback row is reported. */
static void eb_targets(const struct bench_opts *o, const struct eb_row *rows)
{
	static const struct {
		int row;
		const char *name;
	} t[] = {{1, "routed path: ipip vs l2, director"},
		 {2, "routed path: gue vs l2, director"}};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		const struct eb_row *r = &rows[t[i].row];
		char meas[160], note[160];
		double x, dir_net, l2_net;

		if (rows[0].status[0] || r->status[0]) {
			bench_target(o, t[i].name, "<= 1.15x", "not measured",
				     "n/a", r->status[0] ? r->status
							 : rows[0].status);
			continue;
		}
		x = r->st[V_DIR].med / rows[0].st[V_DIR].med;
		dir_net = r->st[V_DIR].med - r->st[V_FLOOR].med;
		l2_net = rows[0].st[V_DIR].med - rows[0].st[V_FLOOR].med;
		snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)", x,
			 r->st[V_DIR].med, rows[0].st[V_DIR].med);
		snprintf(note, sizeof(note),
			 "next hop from the node's record; net of the "
			 "wrapper's floor %.2fx (%.0f vs %.0f ns)",
			 dir_net / l2_net, dir_net, l2_net);
		bench_target(o, t[i].name, "<= 1.15x", meas,
			     x <= 1.15 ? "met" : "missed", note);
	}
	if (!rows[0].status[0] && !rows[3].status[0]) {
		char meas[160];

		snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)",
			 rows[3].st[V_DIR].med / rows[0].st[V_DIR].med,
			 rows[3].st[V_DIR].med, rows[0].st[V_DIR].med);
		bench_target(o, "routed path without a record: ipip vs l2",
			     "reported", meas, "n/a",
			     "bpf_fib_lookup per packet: the fallback");
	}
}

/* The candidates beside the director: each row's median and, as the
 * targets judge it, each encapsulating row against the same program's
 * l2 row. */
static void eb_cands_print(const struct ectx *k, struct rm_json *j,
			   const struct eb_row *rows)
{
	printf("\n### Candidates (same rounds; ns/packet, median, and vs "
	       "the same program's l2 row)\n\n| method | director |");
	for (int c = 0; c < k->nvar - V_CAND; c++)
		printf(" %s |", k->o->argv[c]);
	printf("\n|---|---:|");
	for (int c = 0; c < k->nvar - V_CAND; c++)
		printf("---:|");
	printf("\n");
	rm_json_arr_open(j, "candidates");
	for (int i = 0; i < EB_ROWS; i++) {
		const struct eb_row *row = &rows[i];

		printf("| %s |", row->name);
		for (int v = V_DIR; v < k->nvar; v++) {
			if (v == V_FLOOR)
				v = V_CAND;
			if (row->status[0] || rows[0].status[0])
				printf(" - |");
			else
				printf(" %.0f (%.2fx) |", row->st[v].med,
				       row->st[v].med / rows[0].st[v].med);
		}
		printf("\n");
		rm_json_obj_open(j, NULL);
		rm_json_str(j, "method", row->name);
		rm_json_str(j, "status", row->status[0] ? row->status : "ok");
		rm_json_arr_open(j, "objects");
		for (int v = V_CAND; !row->status[0] && v < k->nvar; v++) {
			rm_json_obj_open(j, NULL);
			rm_json_str(j, "object", k->o->argv[v - V_CAND]);
			bench_json_stat(j, "director_ns", &row->st[v]);
			if (!rows[0].status[0])
				rm_json_num(j, "vs_l2",
					    row->st[v].med / rows[0].st[v].med);
			rm_json_obj_close(j);
		}
		rm_json_arr_close(j);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
}

/* ---- second chance: a flow whose owner changed, beside one that did not
 * (GUE node, window on, the service's ring replaced once). The frame is
 * an ACK of an established flow: the unchanged flow's first packet
 * writes its table entry and the rest hit it (its steady state); the
 * changed flow's packets never write one while the window lasts, so
 * each misses, searches the ring and the remembered one, and carries a
 * hop list of two (its steady state). Checked on every timed run: XDP_TX,
 * the output length, and the counters moved by exactly `repeat`. */
struct sc_row {
	const char *name;
	int changed;
	struct bench_stat st;
	double ns[EB_MAX_ROUNDS];
	char status[160];
};

/* The one-node ring of slot 0 as node `to`'s, stamped retired now, as
 * service BENCH_SVC_ID's remembered generation 0. */
static int sc_gen(struct ectx *k, __u32 to)
{
	struct bench_ring br;
	__u32 key = BENCH_SVC_ID * RM_RING_GENS;
	int err, fd;
	struct timespec ts;
	__u64 now;

	err = bench_ring(1, 256, &br);
	if (err)
		return err;
	/* the same ring encoded again with its one node's id as `to`: the
	 * library's encoder writes the index, whatever its format */
	br.ring.nodes[0].id = to;
	err = rm_ring_encode(&br.ring, br.slots, br.nslots);
	if (err) {
		bench_ring_free(&br);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	rm_ring_hdr_set_cd(&br.slots[0], now);
	fd = dir_ring_map(br.slots, br.nslots);
	bench_ring_free(&br);
	if (fd < 0)
		return fd;
	err = bpf_map_update_elem(bpf_map__fd(k->d.skel->maps.rm_rings_old),
				  &key, &fd, BPF_ANY)
		  ? -errno
		  : 0;
	close(fd);
	return err;
}

static int sc_measure(struct ectx *k, struct sc_row *row, __u32 repeat,
		      struct bench_run *r)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	__u32 want_len = EB_FRAME_LEN +
			 rm_encap_overhead(RM_VIA_GUE, RM_FAMILY_V4) +
			 (row->changed ? rm_gue_hops_len(2, RM_FAMILY_V4) : 0);
	int err;

	if (dir_counters(&k->d, before))
		return -errno;
	err = eb_trun(k, k->d.prog_fd, repeat, r);
	if (!err && dir_counters(&k->d, after))
		err = -errno;
	if (err) {
		snprintf(row->status, sizeof(row->status), "FAILED: %s",
			 strerror(-err));
		return err;
	}
	if (r->retval != XDP_TX || r->out_len != want_len) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: verdict %u, %u bytes (want XDP_TX, %u)",
			 r->retval, r->out_len, want_len);
		return -1;
	}
	for (int i = 0; i < RM_CNT_MAX; i++) {
		__u64 d = after[i] - before[i], exp = 0;

		/* the next-hop record is the method rows' subject: here
		 * the packet may take it or fall back, all alike */
		if (i == RM_CNT_NH_FALLBACK && (d == 0 || d == repeat))
			continue;
		if (i == RM_CNT_FWD_TX || i == RM_CNT_ENCAP_GUE ||
		    (row->changed &&
		     (i == RM_CNT_CONN_MISS || i == RM_CNT_HOPS_SENT)) ||
		    (!row->changed && i == RM_CNT_CONN_HIT))
			exp = repeat;
		if (counter_off(row->status, sizeof(row->status), i, d, exp))
			return -1;
	}
	return 0;
}

static void sc_rows(struct ectx *k, struct sc_row *rows, int n)
{
	__u32 repeat = k->o->quick ? EB_REPEAT / 10 : EB_REPEAT, zero = 0;
	struct rm_node gue1 = {0};
	struct rm_config cfg;
	struct bench_run r;
	__u32 one = 1;

	/* an ACK; slot 1: the old owner, GUE like slot 0 */
	eb_frame(k, BENCH_TCP_ACK);
	if (eb_node(k, RM_VIA_GUE) ||
	    bpf_map_lookup_elem(k->d.nodes_fd, &zero, &gue1) ||
	    bpf_map_lookup_elem(k->d.config_fd, &zero, &cfg))
		goto fail;
	gue1.addr[0] = htonl(ntohl(k->node) + 1);
	cfg.handover_window_s = RM_DEFAULT_HANDOVER_S;
	if (bpf_map_update_elem(k->d.nodes_fd, &one, &gue1, BPF_ANY) ||
	    bpf_map_update_elem(k->d.config_fd, &zero, &cfg, BPF_ANY))
		goto fail;
	for (int i = 0; i < n; i++) {
		struct sc_row *row = &rows[i];

		/* the flow's table entry, if any, goes with the setup */
		if (sc_gen(k, row->changed ? 1 : 0) ||
		    bpf_map_delete_elem(k->d.conns_fd, &(struct rm_conn_key4){
							      .src = htonl(BENCH_CLIENT_IP),
							      .dst = htonl(BENCH_VIP),
							      .sport = htons(40000),
							      .dport = htons(BENCH_PORT),
							      .proto = IPPROTO_TCP}) ?
			errno != ENOENT : 0) {
			snprintf(row->status, sizeof(row->status),
				 "FAILED: setup: %s", strerror(errno));
			continue;
		}
		/* the unchanged flow's entry is written here */
		if (eb_trun(k, k->d.prog_fd, 1, &r) ||
		    sc_measure(k, row, repeat / 10, &r))
			continue;
		for (int rd = 0; rd < k->o->rounds; rd++) {
			if (sc_measure(k, row, repeat, &r))
				break;
			row->ns[rd] = r.ns;
		}
		if (!row->status[0])
			bench_stat_of(row->ns, k->o->rounds, &row->st);
	}
	return;
fail:
	for (int i = 0; i < n; i++)
		snprintf(rows[i].status, sizeof(rows[i].status),
			 "FAILED: setup: %s", strerror(errno));
}

static int sc_print(struct ectx *k, struct rm_json *j)
{
	struct sc_row rows[2] = {
	    {.name = "gue, owner unchanged (table hit, no list)"},
	    {.name = "gue, owner changed (hop list of 2, every packet)",
	     .changed = 1},
	};
	int failed = 0;

	sc_rows(k, rows, 2);
	printf("\n### Second chance: per-packet cost of an established flow "
	       "to a GUE node within the handover window (bpf_prog_test_run, "
	       "repeat %u, TCP ACK, median [min-max] of %d rounds, "
	       "ns/packet)\n\n| flow | director ns |\n|---|---:|\n",
	       k->o->quick ? EB_REPEAT / 10 : EB_REPEAT, k->o->rounds);
	rm_json_arr_open(j, "second_chance");
	for (int i = 0; i < 2; i++) {
		failed += rows[i].status[0] != 0;
		if (rows[i].status[0])
			printf("| %s | %s |\n", rows[i].name, rows[i].status);
		else
			printf("| %s | %.0f [%.0f-%.0f] |\n", rows[i].name,
			       rows[i].st.med, rows[i].st.min, rows[i].st.max);
		rm_json_obj_open(j, NULL);
		rm_json_str(j, "flow", rows[i].name);
		rm_json_str(j, "status",
			    rows[i].status[0] ? rows[i].status : "ok");
		if (!rows[i].status[0])
			bench_json_stat(j, "director_ns", &rows[i].st);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	printf("\nThe changed flow misses the table on every packet (nothing "
	       "is written while it carries a list), searches the current and "
	       "the remembered ring, and writes 16 more bytes; both behind "
	       "tg_unencap, as above.\n");
	return failed;
}

int cmd_encap(const struct bench_opts *o)
{
	struct ectx k = {.o = o};
	struct eb_row rows[EB_ROWS] = {
	    {.name = "l2 (MAC rewrite)", .via = RM_VIA_L2},
	    {.name = "ipip (IPv4 in IPv4)", .via = RM_VIA_IPIP},
	    {.name = "gue (IPv4 in UDP/IPv4)", .via = RM_VIA_GUE},
	    {.name = "ipip, no next-hop record (bpf_fib_lookup per packet)",
	     .via = RM_VIA_IPIP,
	     .fib = true},
	};
	struct rm_json j;
	FILE *jf = NULL;
	int err, rc = 1, failed = 0;

	if (o->rounds > EB_MAX_ROUNDS || o->argc > EB_MAX_CANDS) {
		fprintf(stderr, "usage: ringbench encap [CANDIDATE.bpf.o]... "
				"(at most %d)\n",
			EB_MAX_CANDS);
		return 2;
	}
	k.nvar = V_CAND + o->argc;
	bench_pin_cpu();
	err = eb_netns();
	if (!err)
		err = eb_setup(&k);
	for (int c = 0; !err && c < o->argc; c++)
		err = dir_obj_load(&k.d, o->argv[c], "candidate", &k.cand[c],
				   &k.cand_fd[c]);
	if (err) {
		fprintf(stderr, "encap: setting up: %s\n", strerror(-err));
		goto out;
	}
	rows[0].base_fd = bpf_program__fd(k.bl->progs.bl_tx);
	rows[1].base_fd = bpf_program__fd(k.bl->progs.bl_ipip);
	rows[2].base_fd = bpf_program__fd(k.bl->progs.bl_gue);
	rows[3].base_fd = rows[1].base_fd;
	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	printf("\n### Per-packet cost by forwarding method (bpf_prog_test_run, "
	       "repeat %u, a new flow (TCP SYN) to a one-node ring, median "
	       "[min-max] of %d interleaved rounds, ns/packet)\n\n",
	       o->quick ? EB_REPEAT / 10 : EB_REPEAT, o->rounds);
	printf("| method | baseline ns | director ns | ratio | ratio net of "
	       "floor | floor ns | method floor ns | director net of method "
	       "floor vs l2 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
	rm_json_arr_open(&j, "methods");
	eb_rows(&k, rows, EB_ROWS);
	for (int i = 0; i < EB_ROWS; i++) {
		failed += rows[i].status[0] != 0;
		eb_print(&j, &rows[i]);
	}
	rm_json_arr_close(&j);
	printf("\nBaseline: bl_tx (l2), bl_ipip, bl_gue: the same parse, FIB "
	       "lookup and headers without service match, hash or ring. All "
	       "run behind tg_unencap, which puts the frame back as it "
	       "arrived before every run (the last run's outer headers off, "
	       "the Ethernet header rewritten: the same work for every "
	       "method); floor: tg_unencap tail-calling an empty program. The "
	       "director's frame equals the baseline's byte for byte. Method "
	       "floor: tg_unencap taking the last run's outer headers off and "
	       "tg_push making room for them again, the least any "
	       "encapsulating program pays in this harness (the floor for "
	       "l2); last column: the director's cost above its method's "
	       "floor against the l2 path's above its own.\n");
	eb_targets(o, rows);
	if (k.nvar > V_CAND)
		eb_cands_print(&k, &j, rows);
	failed += sc_print(&k, &j);
	rc = failed ? 3 : 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	for (int c = 0; c < EB_MAX_CANDS; c++)
		bpf_object__close(k.cand[c]);
	trafficgen_bpf__destroy(k.tg);
	rm_nh_resolver_close(k.res);
	baseline_bpf__destroy(k.bl);
	if (k.d.skel)
		dir_close(&k.d);
	return rc;
}
