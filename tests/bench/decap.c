// SPDX-License-Identifier: GPL-2.0
/*
 * Part "decap": per-packet cost of the node-side decapsulator
 * (bpf/decap.bpf.c) in the kernel (bpf_prog_test_run, repeat >=
 * 1,000,000): plain GUE decapsulation (variant 1, no hop list) beside the
 * second-chance decisions of a packet with a hop list (GUE variant 0):
 * a SYN (kept, no socket lookup), an ACK of a connection this host holds
 * (socket lookup finds it: delivered), an ACK to a port with no socket,
 * and one that finds only a listener (lookup, SYN-cookie check: sent on
 * to the next hop, FIB lookup and rewrite, XDP_TX).
 *
 * The part runs in a network namespace of its own (unshare): a veth with
 * this node's address and the next node's neighbour entry, the VIP and a
 * client address on lo, a listener on the VIP and a real connection to it
 * over loopback. The frame arrives on the veth; the route to the next
 * hop leaves by it (XDP_TX).
 *
 * The decapsulator strips or rewrites its frame and the kernel repeats a
 * program on one buffer: every run goes through trafficgen's tg_restore,
 * which puts the original 128-byte frame back and tail-calls it; the
 * floor is tg_restore tail-calling an empty program. Checked on every
 * timed run: the verdict, and the decision's counter moved by exactly
 * `repeat`, no other.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_encap.h>
#include "decap.skel.h"
#include "trafficgen.skel.h"
#include "bench.h"
#include "director.h"

#define DB_REPEAT 1000000u
#define DB_MAX_ROUNDS 101
#define DB_FRAME_LEN 128 /* trafficgen's TG_FRAME_LEN */
#define DB_DIR "198.18.2.1"
#define DB_NODE "198.19.0.5"
#define DB_HOP "198.19.0.6"
#define DB_VIP "198.18.1.1"
#define DB_CLIENT "198.18.0.1"
#define DB_PORT 80
#define DB_EST_PORT 40000

static const char *const db_netns_setup[] = {
    "ip link set lo up",
    "ip link add db0 address 02:52:4d:00:00:fe type veth peer name db1",
    "ip link set db0 up && ip link set db1 up",
    /* bpf_fib_lookup answers only where forwarding is on */
    "sysctl -qw net.ipv4.conf.all.forwarding=1",
    "ip addr add " DB_NODE "/24 dev db0",
    "ip neigh add " DB_HOP " lladdr 02:52:4d:00:00:fd dev db0 nud permanent",
    "ip addr add " DB_VIP "/32 dev lo && ip addr add " DB_CLIENT "/32 dev lo",
};

enum { V_DECAP, V_FLOOR, V_N };

struct db_row {
	const char *name;
	int hops;   /* GUE variant 0 with the hop list */
	__u8 flags; /* inner TCP flags */
	__u16 sport, dport;
	__u32 verdict, counter;
	__u8 frame[DB_FRAME_LEN];
	double ns[V_N][DB_MAX_ROUNDS];
	struct bench_stat st[V_N];
	char status[160];
};

struct dctx {
	const struct bench_opts *o;
	struct decap_bpf *dc;
	struct trafficgen_bpf *tg;
	__u32 ifindex;
	int fds[4];
};

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = (__u8)v;
}

static void addr4(const char *s, __u8 *out)
{
	inet_pton(AF_INET, s, out);
}

/* Director -> node GUE frame of row, zero-padded to DB_FRAME_LEN: outer
 * IPv4, UDP to RM_GUE_PORT, [GUE header and hop list (this node, the
 * next), next 1], inner IPv4 client -> VIP with a 20-byte TCP header. */
static void db_frame(struct db_row *r)
{
	__u8 *f = r->frame, *ip = f + ETH_HLEN, *udp = ip + 20, *in;
	size_t gue = r->hops ? rm_gue_hops_len(2, RM_FAMILY_V4) : 0;
	size_t ilen = 40;
	__u16 sum;

	memset(f, 0, DB_FRAME_LEN);
	memcpy(f, (const __u8[]){0x02, 0x52, 0x4d, 0, 0, 0xfe}, 6);
	memcpy(f + 6, (const __u8[]){0x02, 0x52, 0x4d, 0, 0, 0xfc}, 6);
	put16(f + 12, ETH_P_IP);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 8 + gue + ilen);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	addr4(DB_DIR, ip + 12);
	addr4(DB_NODE, ip + 16);
	sum = bench_ip_csum(ip, 20);
	memcpy(ip + 10, &sum, 2);
	put16(udp, 50000);
	put16(udp + 2, RM_GUE_PORT);
	put16(udp + 4, 8 + gue + ilen);
	if (r->hops) {
		__u8 *g = udp + 8;

		g[0] = 1 + 2; /* hlen: the list's header and two addresses */
		g[1] = RM_PROTO_IPIP;
		put16(g + 4, RM_GUE_PRIV_HOPS);
		g[6] = 1;
		g[7] = 2;
		addr4(DB_NODE, g + 8);
		addr4(DB_HOP, g + 12);
	}
	in = udp + 8 + gue;
	in[0] = 0x45;
	put16(in + 2, ilen);
	in[8] = 64;
	in[9] = IPPROTO_TCP;
	addr4(DB_CLIENT, in + 12);
	addr4(DB_VIP, in + 16);
	sum = bench_ip_csum(in, 20);
	memcpy(in + 10, &sum, 2);
	put16(in + 20, r->sport);
	put16(in + 22, r->dport);
	in[20 + 12] = 5 << 4;
	in[20 + 13] = r->flags;
	put16(in + 20 + 14, 65535);
}

/* The node's sockets: a listener on the VIP and one connection to it. */
static int db_sockets(struct dctx *k)
{
	struct sockaddr_in vip = {.sin_family = AF_INET,
				  .sin_port = htons(DB_PORT)};
	struct sockaddr_in cli = {.sin_family = AF_INET,
				  .sin_port = htons(DB_EST_PORT)};
	int one = 1;

	addr4(DB_VIP, (__u8 *)&vip.sin_addr);
	addr4(DB_CLIENT, (__u8 *)&cli.sin_addr);
	k->fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	k->fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	if (k->fds[0] < 0 || k->fds[1] < 0 ||
	    setsockopt(k->fds[0], SOL_SOCKET, SO_REUSEADDR, &one,
		       sizeof(one)) ||
	    bind(k->fds[0], (struct sockaddr *)&vip, sizeof(vip)) ||
	    listen(k->fds[0], 4) ||
	    bind(k->fds[1], (struct sockaddr *)&cli, sizeof(cli)) ||
	    connect(k->fds[1], (struct sockaddr *)&vip, sizeof(vip)))
		return -errno;
	k->fds[2] = accept(k->fds[0], NULL, NULL);
	return k->fds[2] < 0 ? -errno : 0;
}

static int db_prefix(struct bpf_map *map, const char *addr, __u32 len)
{
	struct rm_decap_prefix p = {.prefixlen = 32 + len,
				    .family = RM_FAMILY_V4};
	__u8 one = 1;

	addr4(addr, (__u8 *)p.addr);
	return bpf_map__update_elem(map, &p, sizeof(p), &one, 1, BPF_ANY);
}

static int db_setup(struct dctx *k)
{
	struct rm_decap_config cfg = {.gue_port = htons(RM_GUE_PORT)};
	struct rm_decap_addr local = {.family = RM_FAMILY_V4};
	__u32 zero = 0;
	__u8 one = 1;
	int err;

	k->ifindex = if_nametoindex("db0");
	if (!k->ifindex)
		return -ENODEV;
	err = db_sockets(k);
	if (err)
		return err;
	k->dc = decap_bpf__open_and_load();
	if (!k->dc)
		return -errno;
	addr4(DB_NODE, (__u8 *)local.addr);
	if (bpf_map__update_elem(k->dc->maps.rm_decap_config, &zero,
				 sizeof(zero), &cfg, sizeof(cfg), BPF_ANY) ||
	    bpf_map__update_elem(k->dc->maps.rm_decap_local, &local,
				 sizeof(local), &one, 1, BPF_ANY) ||
	    db_prefix(k->dc->maps.rm_decap_allow, "198.18.2.0", 24) ||
	    db_prefix(k->dc->maps.rm_decap_hops, "198.19.0.0", 24))
		return -errno;
	k->tg = trafficgen_bpf__open_and_load();
	return k->tg ? 0 : -errno;
}

static int db_counters(struct dctx *k, __u64 *out)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 v[ncpus > 0 ? ncpus : 1];

	for (__u32 i = 0; i < RM_DCNT_MAX; i++) {
		if (bpf_map_lookup_elem(
			bpf_map__fd(k->dc->maps.rm_decap_counters), &i, v))
			return -errno;
		out[i] = 0;
		for (int c = 0; c < ncpus; c++)
			out[i] += v[c];
	}
	return 0;
}

/* One checked, timed run of variant v of row: 0 and *ns, or -1 with
 * row->status set. */
static int db_measure(struct dctx *k, struct db_row *row, int v, __u32 repeat,
		      double *ns)
{
	struct xdp_md ctx = {.data_end = DB_FRAME_LEN,
			     .ingress_ifindex = k->ifindex};
	__u8 out[DB_FRAME_LEN];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = row->frame,
		    .data_size_in = DB_FRAME_LEN, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = repeat);
	int next = v == V_DECAP ? bpf_program__fd(k->dc->progs.rm_decap)
				: bpf_program__fd(k->tg->progs.tg_ret_tx);
	__u64 before[RM_DCNT_MAX], after[RM_DCNT_MAX];
	__u32 zero = 0, want = v == V_DECAP ? row->verdict : XDP_TX;

	memcpy(k->tg->bss->tg_frame, row->frame, DB_FRAME_LEN);
	if (bpf_map_update_elem(bpf_map__fd(k->tg->maps.tg_next), &zero, &next,
				BPF_ANY) ||
	    db_counters(k, before) ||
	    bpf_prog_test_run_opts(bpf_program__fd(k->tg->progs.tg_restore),
				   &opts) ||
	    db_counters(k, after)) {
		snprintf(row->status, sizeof(row->status), "FAILED: %s",
			 strerror(errno));
		return -1;
	}
	if (opts.retval != want) {
		snprintf(row->status, sizeof(row->status),
			 "FAILED: returned %u, expected %u", opts.retval, want);
		return -1;
	}
	for (int i = 0; i < RM_DCNT_MAX; i++) {
		__u64 d = after[i] - before[i];
		__u64 exp =
		    v == V_DECAP && (__u32)i == row->counter ? repeat : 0;

		if (d != exp) {
			snprintf(row->status, sizeof(row->status),
				 "FAILED: counter %s moved %llu, expected %llu",
				 rm_decap_counter_name(i),
				 (unsigned long long)d,
				 (unsigned long long)exp);
			return -1;
		}
	}
	*ns = opts.duration;
	return 0;
}

static void db_row(struct dctx *k, struct db_row *row)
{
	const int rounds = k->o->rounds;
	__u32 repeat = k->o->quick ? DB_REPEAT / 10 : DB_REPEAT;
	double ns;

	db_frame(row);
	for (int v = 0; v < V_N; v++) /* checked once, then warm-up */
		if (db_measure(k, row, v, 1, &ns) ||
		    db_measure(k, row, v, repeat / 10, &ns))
			return;
	for (int rd = 0; rd < rounds; rd++)
		for (int n = 0; n < V_N; n++) {
			int v = rd % 2 ? V_N - 1 - n : n;

			if (db_measure(k, row, v, repeat, &row->ns[v][rd]))
				return;
		}
	for (int v = 0; v < V_N; v++)
		bench_stat_of(row->ns[v], rounds, &row->st[v]);
}

static void db_print(struct rm_json *j, const struct db_row *row,
		     const struct db_row *plain)
{
	double net = row->st[V_DECAP].med - row->st[V_FLOOR].med;
	double pnet = plain->st[V_DECAP].med - plain->st[V_FLOOR].med;

	if (row->status[0])
		printf("| %s | %s | | | |\n", row->name, row->status);
	else
		printf("| %s | %.0f [%.0f-%.0f] | %.0f | %.2fx | %.0f |\n",
		       row->name, row->st[V_DECAP].med, row->st[V_DECAP].min,
		       row->st[V_DECAP].max, net,
		       plain->status[0] ? 0.0 : net / pnet,
		       row->st[V_FLOOR].med);
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "case", row->name);
	rm_json_str(j, "status", row->status[0] ? row->status : "ok");
	if (!row->status[0]) {
		bench_json_stat(j, "decap_ns", &row->st[V_DECAP]);
		bench_json_stat(j, "floor_tg_restore_ns", &row->st[V_FLOOR]);
		rm_json_num(j, "net_ns", net);
		if (!plain->status[0])
			rm_json_num(j, "ratio_net_vs_plain", net / pnet);
	}
	rm_json_obj_close(j);
}

int cmd_decap(const struct bench_opts *o)
{
	struct dctx k = {.o = o, .fds = {-1, -1, -1, -1}};
	struct db_row rows[] = {
	    {.name = "gue, no hop list (plain decap)",
	     .flags = BENCH_TCP_ACK,
	     .sport = DB_EST_PORT,
	     .dport = DB_PORT,
	     .verdict = XDP_PASS,
	     .counter = RM_DCNT_GUE},
	    {.name = "hop list, SYN: kept, no lookup",
	     .hops = 1,
	     .flags = BENCH_TCP_SYN,
	     .sport = 40001,
	     .dport = DB_PORT,
	     .verdict = XDP_PASS,
	     .counter = RM_DCNT_SC_LOCAL_SYN},
	    {.name = "hop list, socket here: delivered",
	     .hops = 1,
	     .flags = BENCH_TCP_ACK,
	     .sport = DB_EST_PORT,
	     .dport = DB_PORT,
	     .verdict = XDP_PASS,
	     .counter = RM_DCNT_SC_LOCAL_SOCKET},
	    {.name = "hop list, no socket: forwarded",
	     .hops = 1,
	     .flags = BENCH_TCP_ACK,
	     .sport = 40001,
	     .dport = DB_PORT + 1,
	     .verdict = XDP_TX,
	     .counter = RM_DCNT_SC_FORWARD},
	    {.name = "hop list, listener only: forwarded",
	     .hops = 1,
	     .flags = BENCH_TCP_ACK,
	     .sport = 40001,
	     .dport = DB_PORT,
	     .verdict = XDP_TX,
	     .counter = RM_DCNT_SC_FORWARD},
	};
	const int n_rows = sizeof(rows) / sizeof(rows[0]);
	struct rm_json j;
	FILE *jf = NULL;
	int err, rc = 1, failed = 0;

	if (o->rounds > DB_MAX_ROUNDS)
		return 2;
	bench_pin_cpu();
	err = bench_netns(db_netns_setup,
			  sizeof(db_netns_setup) / sizeof(*db_netns_setup),
			  "decap");
	if (!err)
		err = db_setup(&k);
	if (err) {
		fprintf(stderr, "decap: setting up: %s\n", strerror(-err));
		goto out;
	}
	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	printf("\n### Node-side decapsulator: plain GUE and the second-chance "
	       "decisions (bpf_prog_test_run, repeat %u, median [min-max] of "
	       "%d interleaved rounds, ns/packet)\n\n",
	       o->quick ? DB_REPEAT / 10 : DB_REPEAT, o->rounds);
	printf("| case | decap ns | net of floor ns | net vs plain decap | "
	       "floor ns |\n|---|---:|---:|---:|---:|\n");
	rm_json_arr_open(&j, "cases");
	for (int i = 0; i < n_rows; i++) {
		db_row(&k, &rows[i]);
		failed += rows[i].status[0] != 0;
		db_print(&j, &rows[i], &rows[0]);
	}
	rm_json_arr_close(&j);
	printf("\nEvery run behind tg_restore (puts the 128-byte frame back); "
	       "floor: tg_restore tail-calling an empty program. Net: decap "
	       "minus floor. The socket lookup is bpf_skc_lookup_tcp in the "
	       "namespace's tables (one listener, one connection); a listener "
	       "hit adds the SYN-cookie check.\n");
	rc = failed ? 3 : 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	trafficgen_bpf__destroy(k.tg);
	decap_bpf__destroy(k.dc);
	for (int i = 0; i < 4; i++)
		if (k.fds[i] >= 0)
			close(k.fds[i]);
	return rc;
}
