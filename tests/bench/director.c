// SPDX-License-Identifier: GPL-2.0
/* Director fixture and test frames for the benchmarks; see director.h. */
#define _GNU_SOURCE /* unshare */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_hash.h>
#include "ringmaster.skel.h"
#include "director_obj.h"
#include "bench.h"
#include "ring_map.h"
#include "state.h"
#include "vip_filter.h"
#include "director.h"
#include "ringfix.h"

const __u8 bench_dir_mac[6] = {0x02, 0x52, 0x4d, 0x00, 0x00, 0xfe};
const __u8 bench_client_mac[6] = {0x02, 0x52, 0x4d, 0x00, 0x00, 0x01};

void bench_node_mac(__u32 id, __u8 mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0x52;
	mac[2] = 0x4d;
	mac[3] = 0x01;
	mac[4] = (__u8)(id >> 8);
	mac[5] = (__u8)id;
}

#define RM_COUNTER_NAME(id, name) [id] = name,
static const char *const counter_names[RM_CNT_MAX] = {
    RM_COUNTERS(RM_COUNTER_NAME)};
#undef RM_COUNTER_NAME

const char *dir_counter_name(int id)
{
	return id >= 0 && id < RM_CNT_MAX ? counter_names[id] : "?";
}

bool dir_counter_is_outcome(int id)
{
	return rm_counter_is_outcome(id);
}

int dir_counters_moved(const __u64 *before, const __u64 *after, int want,
		       __u64 runs, long long hits, char *why, size_t wlen)
{
	for (int i = 0; i < RM_CNT_MAX; i++) {
		__u64 d = after[i] - before[i], exp;

		if (dir_counter_is_outcome(i))
			exp = i == want ? runs : 0;
		else if (i == RM_CNT_CONN_HIT && hits >= 0)
			exp = (__u64)hits;
		else
			continue;
		if (d != exp) {
			snprintf(why, wlen,
				 "counter %s moved %llu, expected %llu",
				 dir_counter_name(i), (unsigned long long)d,
				 (unsigned long long)exp);
			return -1;
		}
	}
	return 0;
}

int dir_open(struct director *d)
{
	struct bpf_map *m;

	memset(d, 0, sizeof(*d));
	d->conns_fd = -1;
	/* the object ringload attaches on this kernel (director_obj.h) */
	d->skel = rm_director_open();
	if (d->skel && ringmaster_bpf__load(d->skel)) {
		ringmaster_bpf__destroy(d->skel);
		d->skel = NULL;
	}
	if (!d->skel) {
		fprintf(stderr, "director: load failed: %s\n", strerror(errno));
		return -errno ? -errno : -EINVAL;
	}
	d->prog_fd = bpf_program__fd(d->skel->progs.rm_xdp);
	d->services_fd = bpf_map__fd(d->skel->maps.rm_services);
	d->rings_fd = bpf_map__fd(d->skel->maps.rm_rings);
	d->nodes_fd = bpf_map__fd(d->skel->maps.rm_nodes);
	d->config_fd = bpf_map__fd(d->skel->maps.rm_config);
	d->counters_fd = bpf_map__fd(d->skel->maps.rm_counters);
	d->tx_ports_fd = bpf_map__fd(d->skel->maps.rm_tx_ports);
	/* by name: the skeleton field exists only once the map does */
	m = bpf_object__find_map_by_name(d->skel->obj, RM_MAP_NAME(CONNS));
	if (m)
		d->conns_fd = bpf_map__fd(m);
	d->ncpus = libbpf_num_possible_cpus();
	return d->ncpus > 0 ? 0 : -EINVAL;
}

void dir_close(struct director *d)
{
	ringmaster_bpf__destroy(d->skel);
	memset(d, 0, sizeof(*d));
	d->conns_fd = -1;
}

int dir_seed(struct director *d)
{
	struct rm_config cfg = {.udp_timeout_s = 30, .flags = RM_CFG_SEEDED};
	__u32 zero = 0;

	bench_seed(&cfg.seed);
	return bpf_map_update_elem(d->config_fd, &zero, &cfg, BPF_ANY) ? -errno
								       : 0;
}

int dir_service(struct director *d, __u32 vip, __u16 port, __u8 proto, __u32 id)
{
	return dir_service_keyed(d, vip, port, proto, id, NULL);
}

int dir_service_keyed(struct director *d, __u32 vip, __u16 port, __u8 proto,
		      __u32 id, const struct rm_key_spec *spec)
{
	struct rm_svc_key k = {.port = htons(port), .proto = proto};
	struct rm_svc v = {.id = id};
	struct rm_svc_meta m = {.in_use = 1};
	int err;

	k.vip[0] = htonl(vip);
	m.key = k;
	if (spec && spec->kind != RM_KEY_FLOW) {
		m.flags = v.flags = RM_SVC_F_KEYED;
		if (spec->kind == RM_KEY_QUIC)
			m.flags = v.flags |= RM_SVC_F_QUIC;
		m.keyspec = *spec;
	}
	/* the meta and the key's slot before the key, as the control plane
	 * does */
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.rm_svc_meta), &id, &m,
				BPF_ANY))
		return -errno;
	err = rm_vip_slots_add(bpf_map__fd(d->skel->maps.rm_vip_slots), &k, id);
	if (err)
		return err;
	return bpf_map_update_elem(d->services_fd, &k, &v, BPF_ANY) ? -errno
								    : 0;
}

int dir_node(struct director *d, __u32 id, const __u8 mac[6],
	     const __u8 src_mac[6], __u32 ifindex, __u32 svc_id)
{
	struct rm_node n = {
	    .ifindex = ifindex,
	    .state = RM_NODE_ACTIVE,
	    .gen = 1,
	    .svc_id = svc_id,
	    .weight = 1,
	};

	memcpy(n.mac, mac, 6);
	memcpy(n.src_mac, src_mac, 6);
	bench_node_name(n.name, sizeof(n.name), id);
	return bpf_map_update_elem(d->nodes_fd, &id, &n, BPF_ANY) ? -errno : 0;
}

int dir_ring_map(const struct rm_slot *slots, __u32 nslots)
{
	return rm_ring_map_create(slots, nslots, "rm_ring");
}

int dir_ring_install(struct director *d, __u32 svc_id, int inner_fd)
{
	return bpf_map_update_elem(d->rings_fd, &svc_id, &inner_fd, BPF_ANY)
		   ? -errno
		   : 0;
}

int dir_counters(struct director *d, __u64 out[RM_CNT_MAX])
{
	__u64 v[d->ncpus];

	for (__u32 i = 0; i < RM_CNT_MAX; i++) {
		if (bpf_map_lookup_elem(d->counters_fd, &i, v))
			return -errno;
		out[i] = 0;
		for (int c = 0; c < d->ncpus; c++)
			out[i] += v[c];
	}
	return 0;
}

/* ---- frames ---------------------------------------------------------- */

#define FRAME_LEN 60 /* minimum Ethernet frame without FCS */

__u16 bench_ip_csum(const void *hdr, size_t len)
{
	const __u16 *w = hdr;
	__u32 sum = 0;

	for (size_t i = 0; i < len / 2; i++)
		sum += w[i];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

size_t bench_frame(__u8 *buf, const __u8 dst_mac[6], const __u8 src_mac[6],
		   __u32 saddr, __u32 daddr, __u16 sport, __u16 dport,
		   __u8 proto, __u8 tcp_flags)
{
	struct ethhdr *eth = (void *)buf;
	struct iphdr *iph = (void *)(eth + 1);
	size_t l4len = proto == IPPROTO_TCP ? sizeof(struct tcphdr)
					    : sizeof(struct udphdr);

	memset(buf, 0, FRAME_LEN);
	memcpy(eth->h_dest, dst_mac, 6);
	memcpy(eth->h_source, src_mac, 6);
	eth->h_proto = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->tot_len = htons((__u16)(sizeof(*iph) + l4len));
	iph->id = htons(1);
	iph->frag_off = htons(0x4000); /* DF */
	iph->ttl = 64;
	iph->protocol = proto;
	iph->saddr = htonl(saddr);
	iph->daddr = htonl(daddr);
	iph->check = bench_ip_csum(iph, sizeof(*iph));
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = (void *)(iph + 1);

		th->source = htons(sport);
		th->dest = htons(dport);
		th->seq = htonl(1);
		th->ack_seq = htonl(tcp_flags & BENCH_TCP_ACK ? 1 : 0);
		th->doff = 5;
		((__u8 *)th)[13] = tcp_flags;
		th->window = htons(65535);
	} else {
		struct udphdr *uh = (void *)(iph + 1);

		uh->source = htons(sport);
		uh->dest = htons(dport);
		uh->len = htons(sizeof(*uh));
	}
	return FRAME_LEN;
}

size_t bench_frame_payload(__u8 *buf, const void *pl, size_t n)
{
	struct iphdr *iph = (void *)(buf + ETH_HLEN);
	struct udphdr *uh = (void *)(iph + 1);
	size_t len = ETH_HLEN + sizeof(*iph) + sizeof(*uh);

	memcpy(buf + len, pl, n);
	len += n;
	iph->tot_len = htons((__u16)(len - ETH_HLEN));
	uh->len = htons((__u16)(len - ETH_HLEN - sizeof(*iph)));
	iph->check = 0;
	iph->check = bench_ip_csum(iph, sizeof(*iph));
	return len < FRAME_LEN ? FRAME_LEN : len;
}

void bench_frame_flow(const __u8 *frame, struct rm_flow *f)
{
	const struct iphdr *iph = (const void *)(frame + ETH_HLEN);
	const __be16 *ports = (const void *)(iph + 1);

	memset(f, 0, sizeof(*f));
	f->family = RM_FAMILY_V4;
	f->proto = iph->protocol;
	f->src[0] = iph->saddr;
	f->dst[0] = iph->daddr;
	f->sport = ports[0];
	f->dport = ports[1];
}

void bench_frame_set_sport(__u8 *frame, __u16 sport)
{
	__be16 *ports = (void *)(frame + ETH_HLEN + sizeof(struct iphdr));

	ports[0] = htons(sport);
}

int bench_frame_owner(const __u8 *frame, const struct rm_slot *slots,
		      __u32 nslots, __u32 *id)
{
	struct rm_seed seed;
	struct rm_flow f;

	bench_seed(&seed);
	bench_frame_flow(frame, &f);
	return rm_ring_lookup(slots, nslots, rm_flow_hash(&seed, &f), id) ? -1
									  : 0;
}

int bench_netns(const char *const *cmds, size_t n, const char *part)
{
	if (unshare(CLONE_NEWNET))
		return -errno;
	for (size_t i = 0; i < n; i++)
		if (system(cmds[i])) {
			fprintf(stderr, "%s: failed: %s\n", part, cmds[i]);
			return -EIO;
		}
	return 0;
}

void bench_frame_fill(__u8 *frame)
{
	struct iphdr *iph = (void *)(frame + ETH_HLEN);

	iph->tot_len = htons(FRAME_LEN - ETH_HLEN);
	iph->check = 0;
	iph->check = bench_ip_csum(iph, sizeof(*iph));
}

bool bench_ip_csum_ok(const __u8 *iph)
{
	return bench_ip_csum(iph, 20) == 0;
}

int dir_obj_load(const struct director *d, const char *path, const char *what,
		 struct bpf_object **obj, int *fd)
{
	struct bpf_program *prog;
	struct bpf_map *m;
	int err;

	*obj = bpf_object__open_file(path, NULL);
	if (!*obj) {
		err = -errno;
		fprintf(stderr, "ringbench: opening the %s %s: %s\n", what,
			path, strerror(-err));
		return err;
	}
	bpf_object__for_each_map(m, *obj)
	{
		struct bpf_map *mine;

		if (bpf_map__is_internal(m))
			continue;
		mine = bpf_object__find_map_by_name(d->skel->obj,
						    bpf_map__name(m));
		if (!mine)
			continue;
		err = bpf_map__reuse_fd(m, bpf_map__fd(mine));
		if (err) {
			fprintf(stderr,
				"ringbench: the %s's map %s cannot take "
				"the director's: %s\n",
				what, bpf_map__name(m), strerror(-err));
			return err;
		}
	}
	prog = bpf_object__find_program_by_name(*obj, "rm_xdp");
	if (!prog) {
		fprintf(stderr, "ringbench: %s has no program rm_xdp\n", path);
		return -ENOENT;
	}
	err = bpf_object__load(*obj);
	if (err) {
		fprintf(stderr,
			"ringbench: loading the %s: %s (libbpf's "
			"log above says why)\n",
			what, strerror(-err));
		return err;
	}
	*fd = bpf_program__fd(prog);
	return 0;
}

int bench_unencap_run(int unencap_fd, const __u8 *frame, __u32 len,
		      __u32 ifindex, __u32 repeat, struct bench_run *r)
{
	struct xdp_md ctx = {.data_end = len, .ingress_ifindex = ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
		    .data_size_in = len, .data_out = r->out,
		    .data_size_out = sizeof(r->out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = repeat);

	if (bpf_prog_test_run_opts(unencap_fd, &opts))
		return -errno;
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	r->ns = opts.duration;
	return 0;
}
