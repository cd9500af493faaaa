// SPDX-License-Identifier: GPL-2.0
/*
 * Part 4: live forwarding in the namespace testbed (scripts/testbed.sh).
 *
 *   client ns: trafficgen's tg_udp runs through bpf_prog_test_run with
 *              BPF_F_TEST_XDP_LIVE_FRAMES "on" c-eth0: every frame gets the
 *              next flow (source address and port) and leaves by XDP_TX,
 *              i.e. into the director's d-in.
 *   director:  on d-in, the director (rm_xdp, the benchmark's fixture:
 *              seeded, one UDP service on the testbed VIP, the testbed's
 *              nodes, a ring of nodes x 1000 vnodes, rm_tx_ports) or the
 *              baseline's bl_redirect (everything to node 1) in turn,
 *              swapped on one BPF link between rounds. A third contender
 *              is the director on memcached-shaped requests to a keyed
 *              service (--key memcached, same ring): "get k:XXXXXXXX"
 *              with a key per flow, each routed by its key. A fourth
 *              is the director on the same UDP flows, service, ring and
 *              connection entries, its nodes switched to --via ipip for
 *              those rounds (only rm_node.via changes: same slot, same
 *              gen): node N's address is in 198.19.N.0/24, routed in the
 *              director's namespace through node N's testbed address (its
 *              neighbour entry made permanent), so every frame is
 *              encapsulated and redirected to node N's veth, its next
 *              hop from node N's rm_nexthops record (filled as ringload
 *              neighd fills it: user/lib/nexthop.c).
 *   node ns:   tg_count on each n-eth0 counts and drops (a veth only
 *              accepts redirected frames when its peer runs XDP).
 *
 * Everything runs on the CPU of the test_run call (softirq of the veth
 * NAPI instances after each batch), so a round's rate is the rate of the
 * whole chain: generator, director (or baseline), counter. pps = frames
 * counted at the nodes / wall time of the test_run call. The director is
 * also checked: its forwarded-redirect counter must move by exactly the
 * frames sent and no drop counter may move (fib-no-neigh, fib-fail and
 * dropped-no-encap-src included); through ipip, encap-ipip too moves by
 * exactly the frames sent, and nexthop-fib-fallback by none.
 *
 * Traffic stays in the testbed's namespaces: all links are BPF links
 * owned by this process (gone when it exits, whatever happens), the
 * generator is bounded by its repeat count and an alarm. The routes and
 * neighbour entries of the ipip contender are made by `ip -n` in the
 * testbed's director namespace (the routes are deleted at the end; all of
 * it goes with the namespace).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringmaster.skel.h"
#include "baseline.skel.h"
#include "trafficgen.skel.h"
#include "bench.h"
#include "director.h"
#include "key.h"
#include "nexthop.h"
#include "ringfix.h"
#include "util.h"

#define LV_MAX_NODES 16
#define LV_PORT 7777
#define LV_FLOWS 131072u /* 2 source addresses x 65,536 ports */
#define LV_BATCH 64
#define LV_ALARM_S 240
#define LV_MC_PORT 11211
#define LV_MC_SVC_ID 1
/* a memcached UDP request: frame header (id 0, seq 0 of 1), then the
 * command; tg_udp writes the flow number over the eight zeros */
#define LV_MC_REQ "\0\0\0\0\0\1\0\0get k:00000000\r\n"
#define LV_MC_KEY_OFF (42 + 8 + 6)
/* routed nodes: node i (1..) is 198.19.i.5, routed via its testbed
 * address; the testbed's VIP (198.19.255.1) is outside these */
#define LV_IPIP_NET "198.19.%d.0/24"
#define LV_IPIP_ADDR(i) (0xc6130005u | (__u32)(i) << 8) /* 198.19.i.5 */

enum lv_prog { LV_BASELINE, LV_DIRECTOR, LV_KEYED, LV_IPIP, LV_NPROGS };
static const char *const lv_prog_name[LV_NPROGS] = {
    [LV_BASELINE] = "baseline", [LV_DIRECTOR] = "director",
    [LV_KEYED] = "director, keyed", [LV_IPIP] = "director, ipip"};

struct testbed {
	char client_ns[64], dir_ns[64], client_if[IF_NAMESIZE];
	char dir_in[IF_NAMESIZE];
	__u8 dir_in_mac[6], client_mac[6];
	__u32 client_ip, vip, dir_in_ip;
	int nodes;
	char node_ip[LV_MAX_NODES + 1][INET_ADDRSTRLEN];
	char node_ns[LV_MAX_NODES + 1][64];
	char node_if[LV_MAX_NODES + 1][IF_NAMESIZE];
	char dir_node_if[LV_MAX_NODES + 1][IF_NAMESIZE];
	__u8 node_mac[LV_MAX_NODES + 1][6];
	__u8 dir_node_mac[LV_MAX_NODES + 1][6];
	__u32 dir_node_ifindex[LV_MAX_NODES + 1];
};

static int copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

/* KEY=VALUE and KEY[i]=VALUE lines of testbed.sh's state file. */
static int tb_load(const char *path, struct testbed *tb)
{
	char line[256], key[64], val[160];
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return -errno;
	memset(tb, 0, sizeof(*tb));
	while (fgets(line, sizeof(line), f) && !err) {
		char *eq = strchr(line, '='), *br;
		int i = 0;

		if (!eq)
			continue;
		*eq = 0;
		eq[1 + strcspn(eq + 1, "\n")] = 0;
		if (copy_str(key, sizeof(key), line) ||
		    copy_str(val, sizeof(val), eq + 1))
			continue;
		br = strchr(key, '[');
		if (br) {
			i = atoi(br + 1);
			*br = 0;
			if (i < 1 || i > LV_MAX_NODES)
				continue;
		}
		if (!strcmp(key, "TB_CLIENT_NS"))
			err =
			    copy_str(tb->client_ns, sizeof(tb->client_ns), val);
		else if (!strcmp(key, "TB_DIR_NS"))
			err = copy_str(tb->dir_ns, sizeof(tb->dir_ns), val);
		else if (!strcmp(key, "TB_CLIENT_IF"))
			err =
			    copy_str(tb->client_if, sizeof(tb->client_if), val);
		else if (!strcmp(key, "TB_DIR_IN"))
			err = copy_str(tb->dir_in, sizeof(tb->dir_in), val);
		else if (!strcmp(key, "TB_DIR_IN_MAC"))
			err = rm_parse_mac(val, tb->dir_in_mac);
		else if (!strcmp(key, "TB_CLIENT_MAC"))
			err = rm_parse_mac(val, tb->client_mac);
		else if (!strcmp(key, "TB_CLIENT_IP4"))
			err = inet_pton(AF_INET, val, &tb->client_ip) == 1
				  ? 0
				  : -EINVAL;
		else if (!strcmp(key, "TB_VIP4"))
			err = inet_pton(AF_INET, val, &tb->vip) == 1 ? 0
								     : -EINVAL;
		else if (!strcmp(key, "TB_DIR_IN_IP4"))
			err = inet_pton(AF_INET, val, &tb->dir_in_ip) == 1
				  ? 0
				  : -EINVAL;
		else if (!strcmp(key, "TB_NODES"))
			tb->nodes = atoi(val);
		else if (br && !strcmp(key, "TB_NODE_NS"))
			err = copy_str(tb->node_ns[i], sizeof(tb->node_ns[i]),
				       val);
		else if (br && !strcmp(key, "TB_NODE_IF"))
			err = copy_str(tb->node_if[i], sizeof(tb->node_if[i]),
				       val);
		else if (br && !strcmp(key, "TB_DIR_NODE_IF"))
			err = copy_str(tb->dir_node_if[i],
				       sizeof(tb->dir_node_if[i]), val);
		else if (br && !strcmp(key, "TB_NODE_IP4"))
			err = copy_str(tb->node_ip[i], sizeof(tb->node_ip[i]),
				       val);
		else if (br && !strcmp(key, "TB_NODE_MAC"))
			err = rm_parse_mac(val, tb->node_mac[i]);
		else if (br && !strcmp(key, "TB_DIR_NODE_MAC"))
			err = rm_parse_mac(val, tb->dir_node_mac[i]);
		else if (br && !strcmp(key, "TB_DIR_NODE_IFINDEX"))
			tb->dir_node_ifindex[i] = (__u32)atoi(val);
	}
	fclose(f);
	tb->client_ip = ntohl(tb->client_ip);
	tb->vip = ntohl(tb->vip);
	if (!err && (tb->nodes < 1 || tb->nodes > LV_MAX_NODES ||
		     !tb->client_ns[0] || !tb->dir_ns[0] || !tb->vip ||
		     !tb->dir_in_ip))
		err = -EINVAL;
	for (int i = 1; !err && i <= tb->nodes; i++)
		if (!tb->node_ip[i][0] || !tb->dir_node_if[i][0])
			err = -EINVAL;
	return err;
}

static int enter_ns(const char *name)
{
	char path[128];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET))
		err = -errno;
	close(fd);
	return err;
}

static int enter_fd(int fd)
{
	return setns(fd, CLONE_NEWNET) ? -errno : 0;
}

struct lctx {
	const struct bench_opts *o;
	struct testbed tb;
	struct director d;
	struct baseline_bpf *bl;
	struct trafficgen_bpf *tg;
	struct bpf_link *count_link[LV_MAX_NODES + 1];
	struct bpf_link *in_link;
	int root_ns;
	__u32 client_ifindex;
	__u8 frame[64], mc_frame[128];
	size_t len, mc_len;
	bool routes; /* the ipip routes are in the director namespace */
	enum lv_prog prog; /* on d-in now (set_prog) */
};

static __u64 percpu_sum(int fd, __u32 key, int ncpus)
{
	__u64 v[ncpus], s = 0;

	if (bpf_map_lookup_elem(fd, &key, v))
		return 0;
	for (int c = 0; c < ncpus; c++)
		s += v[c];
	return s;
}

static int load_ipip(struct lctx *l);

static int load_all(struct lctx *l)
{
	struct testbed *tb = &l->tb;
	struct bench_ring br;
	struct rm_key_spec spec;
	const char *why;
	__u32 id;
	int err, inner;

	err = dir_open(&l->d);
	if (err)
		return err;
	if (dir_seed(&l->d) ||
	    dir_service(&l->d, tb->vip, LV_PORT, IPPROTO_UDP, BENCH_SVC_ID))
		return -errno;
	for (id = 0; id < (__u32)tb->nodes; id++)
		if (dir_node(&l->d, id, tb->node_mac[id + 1],
			     tb->dir_node_mac[id + 1],
			     tb->dir_node_ifindex[id + 1], BENCH_SVC_ID))
			return -errno;
	err = bench_ring(tb->nodes, 1000, &br);
	if (err)
		return err;
	inner = dir_ring_map(br.slots, br.nslots);
	bench_ring_free(&br);
	if (inner < 0)
		return inner;
	err = dir_ring_install(&l->d, BENCH_SVC_ID, inner);
	/* the keyed service: the same nodes and ring */
	if (!err)
		err = rm_parse_keyspec("memcached", &spec, &why) ? -EINVAL : 0;
	if (!err)
		err = dir_service_keyed(&l->d, tb->vip, LV_MC_PORT, IPPROTO_UDP,
					LV_MC_SVC_ID, &spec);
	if (!err)
		err = dir_ring_install(&l->d, LV_MC_SVC_ID, inner);
	close(inner);
	if (!err)
		err = load_ipip(l);
	if (err)
		return err;

	l->bl = baseline_bpf__open();
	if (!l->bl)
		return -errno;
	l->bl->rodata->bl_ifindex = tb->dir_node_ifindex[1];
	if (baseline_bpf__load(l->bl))
		return -errno;
	memcpy(l->bl->bss->bl_dst_mac, tb->node_mac[1], 6);
	memcpy(l->bl->bss->bl_src_mac, tb->dir_node_mac[1], 6);

	l->tg = trafficgen_bpf__open();
	if (!l->tg)
		return -errno;
	l->tg->rodata->tg_saddr = tb->client_ip;
	l->tg->rodata->tg_flows = LV_FLOWS;
	l->tg->rodata->tg_sport = 0;
	l->tg->rodata->tg_nports = 65536;
	if (trafficgen_bpf__load(l->tg))
		return -errno;
	memcpy(l->tg->bss->tg_dst_mac, tb->dir_in_mac, 6);
	memcpy(l->tg->bss->tg_src_mac, tb->client_mac, 6);
	l->len =
	    bench_frame(l->frame, tb->dir_in_mac, tb->client_mac, tb->client_ip,
			tb->vip, 1024, LV_PORT, IPPROTO_UDP, 0);
	bench_frame(l->mc_frame, tb->dir_in_mac, tb->client_mac, tb->client_ip,
		    tb->vip, 1024, LV_MC_PORT, IPPROTO_UDP, 0);
	l->mc_len = bench_frame_payload(l->mc_frame, LV_MC_REQ,
					sizeof(LV_MC_REQ) - 1);
	return 0;
}

/* The ipip contender: the director's address as the outer source, and
 * each node's routed address (used only while its via is RM_VIA_IPIP). */
static int load_ipip(struct lctx *l)
{
	struct rm_config cfg;
	struct rm_node n;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(l->d.config_fd, &zero, &cfg))
		return -errno;
	cfg.encap_src4 = l->tb.dir_in_ip;
	if (bpf_map_update_elem(l->d.config_fd, &zero, &cfg, BPF_ANY))
		return -errno;
	for (__u32 id = 0; id < (__u32)l->tb.nodes; id++) {
		if (bpf_map_lookup_elem(l->d.nodes_fd, &id, &n))
			return -errno;
		n.addr_family = RM_FAMILY_V4;
		n.addr[0] = htonl(LV_IPIP_ADDR(id + 1));
		if (bpf_map_update_elem(l->d.nodes_fd, &id, &n, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Every node reached by via from now on (between rounds: no traffic). */
static int set_via(struct lctx *l, __u8 via)
{
	struct rm_node n;

	for (__u32 id = 0; id < (__u32)l->tb.nodes; id++) {
		if (bpf_map_lookup_elem(l->d.nodes_fd, &id, &n))
			return -errno;
		n.via = via;
		if (bpf_map_update_elem(l->d.nodes_fd, &id, &n, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* ip ARGS in the director namespace; quiet unless it fails. */
static int dir_ip(const struct lctx *l, const char *args)
{
	char cmd[384];

	snprintf(cmd, sizeof(cmd), "ip -n '%s' %s", l->tb.dir_ns, args);
	if (system(cmd)) {
		fprintf(stderr, "live: failed: %s\n", cmd);
		return -EIO;
	}
	return 0;
}

/* In the director namespace (forwarding is on there: testbed.sh), node
 * i's subnet routed through its testbed address, whose neighbour entry is
 * made permanent: bpf_fib_lookup then always has the next hop's MAC. */
static int routes_up(struct lctx *l)
{
	const struct testbed *tb = &l->tb;
	char args[256], mac[18];
	int err = 0;

	for (int i = 1; !err && i <= tb->nodes; i++) {
		const __u8 *m = tb->node_mac[i];

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
			 m[0], m[1], m[2], m[3], m[4], m[5]);
		snprintf(args, sizeof(args),
			 "neigh replace %s lladdr %s dev '%s' nud permanent",
			 tb->node_ip[i], mac, tb->dir_node_if[i]);
		err = dir_ip(l, args);
		if (err)
			break;
		l->routes = true;
		snprintf(args, sizeof(args),
			 "route replace " LV_IPIP_NET " via %s dev '%s'", i,
			 tb->node_ip[i], tb->dir_node_if[i]);
		err = dir_ip(l, args);
	}
	return err;
}

static void routes_down(struct lctx *l)
{
	char args[64];

	if (!l->routes)
		return;
	for (int i = 1; i <= l->tb.nodes; i++) {
		snprintf(args, sizeof(args), "route del " LV_IPIP_NET, i);
		dir_ip(l, args);
	}
	l->routes = false;
}

/* Each node's next-hop record, resolved in the director namespace for
 * frames entering d-in, valid for the whole part; back to the client
 * namespace, where the generator runs. */
static int records_up(struct lctx *l)
{
	int fd = bpf_map__fd(l->d.skel->maps.rm_nexthops);
	struct rm_nh_resolver *res;
	struct rm_config cfg;
	__u32 zero = 0, in_if;
	int err;

	err = enter_ns(l->tb.dir_ns);
	if (err)
		return err;
	in_if = if_nametoindex(l->tb.dir_in);
	err = in_if ? rm_nh_resolver_open(&res) : -ENODEV;
	if (err)
		return err;
	if (bpf_map_lookup_elem(l->d.config_fd, &zero, &cfg))
		err = -errno;
	for (__u32 id = 0; !err && id < (__u32)l->tb.nodes; id++) {
		struct rm_nexthop gw;
		struct rm_nh rec;
		struct rm_node n;
		int rc;

		if (bpf_map_lookup_elem(l->d.nodes_fd, &id, &n)) {
			err = -errno;
			break;
		}
		err = rm_nh_resolve(res, in_if, &cfg, &n, 3600 * 1000000000ULL,
				    &rec, &gw, &rc);
		if (!err && !(rec.flags & RM_NH_F_VALID)) {
			fprintf(stderr, "live: node %u: no next hop: %s\n",
				id, rm_fib_rc_name(rc));
			err = -EHOSTUNREACH;
		}
		if (!err)
			err = rm_nh_write(fd, id, &rec);
	}
	rm_nh_resolver_close(res);
	return err ? err : enter_ns(l->tb.client_ns);
}

static int attach_all(struct lctx *l)
{
	struct testbed *tb = &l->tb;
	__u32 ifindex;
	int err;

	for (int i = 1; i <= tb->nodes; i++) {
		err = enter_ns(tb->node_ns[i]);
		if (err)
			return err;
		ifindex = if_nametoindex(tb->node_if[i]);
		if (!ifindex)
			return -ENODEV;
		l->count_link[i] =
		    bpf_program__attach_xdp(l->tg->progs.tg_count, ifindex);
		if (!l->count_link[i])
			return -errno;
	}
	/* a devmap resolves its ifindexes in the caller's namespace */
	err = enter_ns(tb->dir_ns);
	if (err)
		return err;
	for (int i = 1; i <= tb->nodes; i++) {
		struct bpf_devmap_val dv = {
		    .ifindex = tb->dir_node_ifindex[i],
		    .bpf_prog.fd = -1,
		};

		if (bpf_map_update_elem(l->d.tx_ports_fd, &dv.ifindex, &dv,
					BPF_ANY) ||
		    (i == 1 &&
		     bpf_map_update_elem(bpf_map__fd(l->bl->maps.bl_ports),
					 &dv.ifindex, &dv, BPF_ANY)))
			return -errno;
	}
	ifindex = if_nametoindex(tb->dir_in);
	if (!ifindex)
		return -ENODEV;
	l->in_link = bpf_program__attach_xdp(l->d.skel->progs.rm_xdp, ifindex);
	if (!l->in_link)
		return -errno;
	err = enter_ns(tb->client_ns);
	if (err)
		return err;
	l->client_ifindex = if_nametoindex(tb->client_if);
	return l->client_ifindex ? 0 : -ENODEV;
}

static void detach_all(struct lctx *l)
{
	bpf_link__destroy(l->in_link);
	l->in_link = NULL;
	for (int i = 0; i <= LV_MAX_NODES; i++) {
		bpf_link__destroy(l->count_link[i]);
		l->count_link[i] = NULL;
	}
}

struct lrun {
	double pps, secs;
	__u64 sent, counted;
};

/* Send n frames through the program on d-in (set_prog); the director's
 * counters are checked: every frame forwarded, with the keyed service
 * every one routed by its key, through ipip every one encapsulated. */
static int live_run(struct lctx *l, __u32 n, struct lrun *r, char *why,
		    size_t wlen)
{
	bool is_dir = l->prog != LV_BASELINE, keyed = l->prog == LV_KEYED;
	bool ipip = l->prog == LV_IPIP;
	__u8 *frame = keyed ? l->mc_frame : l->frame;
	size_t len = keyed ? l->mc_len : l->len;
	/* counters on top of the outcome: which must move by n */
	const struct {
		int id;
		bool all;
	} extra[] = {{RM_CNT_KEY_ROUTED, keyed},
		     {RM_CNT_ENCAP_IPIP, ipip},
		     {RM_CNT_NH_FALLBACK, false}};
	/* the kernel wants data_end to be the frame's size */
	struct xdp_md ctx = {.data_end = (__u32)len,
			     .ingress_ifindex = l->client_ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
		    .data_size_in = len, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = n,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = LV_BATCH);
	int cnt_fd = bpf_map__fd(l->tg->maps.tg_counts);
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX], c0, c1, s0, t0, t1;

	if (is_dir && dir_counters(&l->d, before))
		goto sys;
	c0 = percpu_sum(cnt_fd, 0, l->d.ncpus);
	l->tg->bss->tg_key_off = keyed ? LV_MC_KEY_OFF : 0;
	s0 = l->tg->bss->tg_seq;
	t0 = bench_now_ns();
	if (bpf_prog_test_run_opts(bpf_program__fd(l->tg->progs.tg_udp), &opts))
		goto sys;
	t1 = bench_now_ns();
	usleep(20000); /* anything still queued in a veth */
	c1 = percpu_sum(cnt_fd, 0, l->d.ncpus);
	r->sent = l->tg->bss->tg_seq - s0;
	r->counted = c1 - c0;
	r->secs = (double)(t1 - t0) / 1e9;
	r->pps = (double)r->counted / r->secs;
	if (r->sent != n) {
		snprintf(why, wlen, "generator ran %llu times, not %u",
			 (unsigned long long)r->sent, n);
		return -1;
	}
	if (is_dir) {
		if (dir_counters(&l->d, after))
			goto sys;
		for (int i = 0; i < RM_CNT_MAX; i++) {
			__u64 d = after[i] - before[i];
			__u64 exp = i == RM_CNT_FWD_REDIRECT ? n : 0;

			/* the testbed's own chatter (IPv6 neighbour
			 * discovery, say) is passed to the stack */
			if (i == RM_CNT_PASS_NOT_SERVICE)
				continue;
			if (dir_counter_is_outcome(i) && d != exp) {
				snprintf(why, wlen,
					 "director counter %s moved %llu, "
					 "expected %llu",
					 dir_counter_name(i),
					 (unsigned long long)d,
					 (unsigned long long)exp);
				return -1;
			}
		}
		for (size_t e = 0; e < sizeof(extra) / sizeof(*extra); e++) {
			int id = extra[e].id;
			__u64 d = after[id] - before[id];

			if (d != (extra[e].all ? n : 0)) {
				snprintf(why, wlen, "%s moved %llu, expected %u",
					 dir_counter_name(id),
					 (unsigned long long)d,
					 extra[e].all ? n : 0);
				return -1;
			}
		}
	}
	return 0;
sys:
	snprintf(why, wlen, "%s", strerror(errno));
	return -1;
}

static int set_prog(struct lctx *l, enum lv_prog prog)
{
	struct bpf_program *p = prog == LV_BASELINE ? l->bl->progs.bl_redirect
						    : l->d.skel->progs.rm_xdp;
	int err = set_via(l, prog == LV_IPIP ? RM_VIA_IPIP : RM_VIA_L2);

	l->prog = prog;
	return err ? err : bpf_link__update_program(l->in_link, p);
}

/* Node slot i's packets, summed over CPUs. */
static __u64 node_packets(struct lctx *l, __u32 id)
{
	struct rm_traffic t[l->d.ncpus];
	__u64 s = 0;

	if (!bpf_map_lookup_elem(bpf_map__fd(l->d.skel->maps.rm_node_stats),
				 &id, t))
		for (int c = 0; c < l->d.ncpus; c++)
			s += t[c].packets;
	return s;
}

/* Packets the director sent each testbed node (slot i). */
static void node_totals(struct lctx *l, __u64 out[LV_MAX_NODES])
{
	for (int i = 0; i < l->tb.nodes; i++)
		out[i] = node_packets(l, (__u32)i);
}

/* JSON keys of each program's figures (NULL: none) */
static const struct {
	const char *mpps, *ratio, *ratio_rounds, *delivered;
} lv_json[LV_NPROGS] = {
    [LV_BASELINE] = {"baseline_mpps", NULL, NULL,
		     "baseline_delivered_fraction"},
    [LV_DIRECTOR] = {"director_mpps", "ratio", "ratio_per_round",
		     "director_delivered_fraction"},
    [LV_KEYED] = {"director_keyed_mpps", "ratio_keyed",
		  "ratio_keyed_per_round",
		  "director_keyed_delivered_fraction"},
    [LV_IPIP] = {"director_ipip_mpps", "ratio_ipip", "ratio_ipip_per_round",
		 "director_ipip_delivered_fraction"},
};

int cmd_live(const struct bench_opts *o)
{
	const char *state = NULL;
	__u32 n = o->quick ? 200000 : 2000000;
	struct lctx l = {.o = o, .root_ns = -1};
	double mpps[LV_NPROGS][101], deliv[LV_NPROGS][101];
	double ratio[LV_NPROGS][101];
	struct bench_stat st[LV_NPROGS], sdl[LV_NPROGS], sr[LV_NPROGS];
	__u64 node_pk[LV_MAX_NODES], node_pk0[LV_MAX_NODES];
	__u64 conn[RM_CNT_MAX], conn0[RM_CNT_MAX];
	char why[160] = "", label[LV_NPROGS][128];
	struct rm_json j;
	struct lrun r;
	int rc = 1, err;
	FILE *jf = NULL;

	for (int i = 0; i < o->argc; i++) {
		if (!strcmp(o->argv[i], "--state") && i + 1 < o->argc)
			state = o->argv[++i];
		else if (!strcmp(o->argv[i], "--packets") && i + 1 < o->argc)
			n = (__u32)strtoul(o->argv[++i], NULL, 0);
	}
	if (!state || n < 1000 || o->rounds > 101) {
		fputs("usage: ringbench live --state FILE [--packets N]\n",
		      stderr);
		return 2;
	}
	err = tb_load(state, &l.tb);
	if (err) {
		fprintf(stderr, "live: testbed state %s: %s\n", state,
			strerror(-err));
		return 1;
	}
	alarm(LV_ALARM_S); /* a hung run ends the process, links and all */
	bench_pin_cpu();
	l.root_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	err = l.root_ns < 0 ? -errno : load_all(&l);
	if (!err)
		err = attach_all(&l);
	if (!err)
		err = routes_up(&l);
	if (!err)
		err = records_up(&l);
	if (err) {
		fprintf(stderr, "live: setting up: %s\n", strerror(-err));
		goto out;
	}

	/* warm-up and check: every program delivers every frame */
	for (int k = 0; k < LV_NPROGS; k++) {
		err = set_prog(&l, (enum lv_prog)k);
		if (err || live_run(&l, n / 10, &r, why, sizeof(why))) {
			fprintf(stderr, "live: warm-up (%s): %s\n",
				lv_prog_name[k], err ? strerror(-err) : why);
			goto out;
		}
	}
	dir_counters(&l.d, conn0);
	node_totals(&l, node_pk0);
	/* interleaved: each round starts with the next program */
	for (int rd = 0; rd < o->rounds; rd++)
		for (int k = 0; k < LV_NPROGS; k++) {
			enum lv_prog p = (enum lv_prog)((rd + k) % LV_NPROGS);

			err = set_prog(&l, p);
			if (err || live_run(&l, n, &r, why, sizeof(why))) {
				fprintf(stderr, "live: round %d (%s): %s\n", rd,
					lv_prog_name[p],
					err ? strerror(-err) : why);
				goto out;
			}
			mpps[p][rd] = r.pps / 1e6;
			deliv[p][rd] = (double)r.counted / r.sent;
		}
	dir_counters(&l.d, conn);
	node_totals(&l, node_pk);
	for (int i = 0; i < l.tb.nodes; i++)
		node_pk[i] -= node_pk0[i];
	for (int k = 0; k < LV_NPROGS; k++) {
		for (int rd = 0; rd < o->rounds; rd++)
			ratio[k][rd] = mpps[k][rd] / mpps[LV_BASELINE][rd];
		bench_stat_of(mpps[k], o->rounds, &st[k]);
		bench_stat_of(deliv[k], o->rounds, &sdl[k]);
		bench_stat_of(ratio[k], o->rounds, &sr[k]);
	}

	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	rm_json_u64(&j, "nodes", l.tb.nodes);
	rm_json_u64(&j, "flows", LV_FLOWS);
	rm_json_u64(&j, "frames_per_round", n);
	rm_json_u64(&j, "frame_bytes", l.len);
	rm_json_u64(&j, "keyed_frame_bytes", l.mc_len);
	rm_json_u64(&j, "batch_size", LV_BATCH);
	for (int k = 0; k < LV_NPROGS; k++) {
		bench_json_stat(&j, lv_json[k].mpps, &st[k]);
		bench_json_stat(&j, lv_json[k].delivered, &sdl[k]);
		if (!lv_json[k].ratio)
			continue;
		rm_json_num(&j, lv_json[k].ratio,
			    st[k].med / st[LV_BASELINE].med);
		bench_json_stat(&j, lv_json[k].ratio_rounds, &sr[k]);
	}
	rm_json_num(&j, "ratio_ipip_vs_director",
		    st[LV_IPIP].med / st[LV_DIRECTOR].med);
	rm_json_obj_open(&j, "director_counters_over_rounds");
	for (int i = 0; i < RM_CNT_MAX; i++)
		if (conn[i] != conn0[i])
			rm_json_u64(&j, dir_counter_name(i),
				    conn[i] - conn0[i]);
	rm_json_obj_close(&j);
	rm_json_arr_open(&j, "director_packets_per_node");
	for (int i = 0; i < l.tb.nodes; i++)
		rm_json_u64(&j, NULL, node_pk[i]);
	rm_json_arr_close(&j);

	snprintf(label[LV_BASELINE], sizeof(*label),
		 "baseline (bl_redirect, all to node 1)");
	snprintf(label[LV_DIRECTOR], sizeof(*label),
		 "director (rm_xdp, ring of %d x 1000), l2", l.tb.nodes);
	snprintf(label[LV_KEYED], sizeof(*label),
		 "director, --key memcached (%zu-byte \"get k:XXXXXXXX\" "
		 "requests, a key per flow), l2",
		 l.mc_len);
	snprintf(label[LV_IPIP], sizeof(*label),
		 "director, the same flows and nodes --via ipip (next "
		 "hop from the record, +20-byte outer IPv4)");
	printf("\n### Live forwarding (testbed: %d nodes, %u UDP flows, "
	       "%zu-byte frames, %u frames per round, median [min-max] of %d "
	       "interleaved rounds)\n\n",
	       l.tb.nodes, LV_FLOWS, l.len, n, o->rounds);
	printf("| program on d-in | Mpps counted at the nodes | vs baseline "
	       "| delivered |\n");
	printf("|---|---:|---:|---:|\n");
	for (int k = 0; k < LV_NPROGS; k++)
		printf("| %s | %.3f [%.3f-%.3f] | %.3fx | %.4f |\n", label[k],
		       st[k].med, st[k].min, st[k].max,
		       st[k].med / st[LV_BASELINE].med, sdl[k].med);
	printf("\nratio to the baseline per round:");
	for (int k = LV_DIRECTOR; k < LV_NPROGS; k++)
		printf("%s %s %.3f-%.3f", k == LV_DIRECTOR ? "" : ";",
		       lv_prog_name[k], sr[k].min, sr[k].max);
	printf(". ipip / l2 director: %.3fx. Generator, director and "
	       "counters share one CPU: the rate is the chain's.\n",
	       st[LV_IPIP].med / st[LV_DIRECTOR].med);
	{
		__u64 tot = 0, mx = 0, mn = ~0ULL;

		for (int i = 0; i < l.tb.nodes; i++) {
			tot += node_pk[i];
			mx = node_pk[i] > mx ? node_pk[i] : mx;
			mn = node_pk[i] < mn ? node_pk[i] : mn;
		}
		if (tot)
			printf(
			    "director spread over the nodes (all its rounds): min %.1f%%, max "
			    "%.1f%% (fair share %.1f%%)\n",
			    100.0 * mn / tot, 100.0 * mx / tot,
			    100.0 / l.tb.nodes);
	}
	{
		char meas[96];
		double ratio_med = st[LV_DIRECTOR].med / st[LV_BASELINE].med;

		snprintf(meas, sizeof(meas), "%.3fx (%.3f vs %.3f Mpps)",
			 ratio_med, st[LV_DIRECTOR].med, st[LV_BASELINE].med);
		bench_target(o, "live forwarding vs baseline", ">= 0.65x", meas,
			     o->quick		 ? "n/a"
			     : ratio_med >= 0.65 ? "met"
						 : "missed",
			     o->quick ? "--quick run" : "");
	}
	{
		/* issue 23: routed nodes as cheap as l2 ones, live */
		char meas[96];
		double x = st[LV_IPIP].med / st[LV_DIRECTOR].med;

		snprintf(meas, sizeof(meas), "%.3fx (%.3f vs %.3f Mpps)", x,
			 st[LV_IPIP].med, st[LV_DIRECTOR].med);
		bench_target(o, "routed path live: ipip vs l2, director",
			     ">= 0.9x", meas,
			     o->quick	  ? "n/a"
			     : x >= 0.9 ? "met"
					: "missed",
			     o->quick ? "--quick run" : "");
	}
	rc = 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	detach_all(&l);
	routes_down(&l);
	if (l.root_ns >= 0) {
		enter_fd(l.root_ns);
		close(l.root_ns);
	}
	trafficgen_bpf__destroy(l.tg);
	baseline_bpf__destroy(l.bl);
	dir_close(&l.d);
	return rc;
}
