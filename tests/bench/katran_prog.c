// SPDX-License-Identifier: GPL-2.0
/*
 * Katran's XDP balancer as bench part "katran" runs it: the object built
 * from a Katran checkout (scripts/katran.sh), loaded with libbpf and
 * configured through its maps the way Katran's userspace (KatranLb)
 * would, without it. Only Katran's map interface is written down here,
 * from its headers (katran/lib/bpf/balancer_structs.h, balancer_consts.h
 * at the pinned commit); the object's map sizes are checked against it
 * at load, so a checkout whose layout moved fails loudly instead of
 * measuring a misconfigured program.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench.h"
#include "director.h"
#include "katran.h"

/* struct vip_definition, vip_meta, real_definition, ctl_value, lb_stats */
struct kt_vip {
	__be32 addr[4];
	__be16 port;
	__u8 proto, pad;
};
struct kt_vip_meta {
	__u32 flags, vip_num;
};
struct kt_real {
	__be32 addr[4];
	__u8 flags, pad[3];
};
struct kt_stat {
	__u64 v1, v2;
};

/* stats indexes past the VIPs' (balancer_consts.h) */
#define KT_LRU_MISS_CNTR 1	/* v1: SYN misses, v2: non-SYN misses */
#define KT_NEW_CONN_RATE_CNTR 2 /* the flood guard's count */
#define KT_FALLBACK_LRU_CNTR 3	/* no per-CPU LRU for this CPU */
#define KT_XDP_TX_CNTR 17
#define KT_XDP_PASS_CNTR 19
#define KT_DEFAULT_LRU 8000000u /* KatranConfig's LruSize */
#define KT_IPIP_V4_PREFIX 4268	/* IPIP_V4_PREFIX: 172.16.0.0/16 */
#define KT_TTL 64

static int kt_map_fd(const struct kt_katran *kt, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(kt->obj, name);

	return m ? bpf_map__fd(m) : -ENOENT;
}

/* Each map this bench writes must have the sizes written down above. */
static int kt_layout(struct bpf_object *obj)
{
	static const struct {
		const char *map;
		__u32 key, value;
	} want[] = {
	    {"vip_map", sizeof(struct kt_vip), sizeof(struct kt_vip_meta)},
	    {"reals", 4, sizeof(struct kt_real)},
	    {"ch_rings", 4, 4},
	    {"ctl_array", 4, 8},
	    {"stats", 4, sizeof(struct kt_stat)},
	    {"lru_mapping", 4, 4},
	    {"fallback_cache", 0, 0}, /* any: the LRUs copy its sizes */
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, want[i].map);

		if (!m) {
			fprintf(stderr, "katran: the object has no map %s\n",
				want[i].map);
			return -ENOENT;
		}
		if (want[i].key && (bpf_map__key_size(m) != want[i].key ||
				    bpf_map__value_size(m) != want[i].value)) {
			fprintf(stderr,
				"katran: map %s has key %u, value %u bytes; "
				"this bench writes %u, %u (Katran's layout "
				"changed: update tests/bench/katran_prog.c)\n",
				want[i].map, bpf_map__key_size(m),
				bpf_map__value_size(m), want[i].key,
				want[i].value);
			return -EPROTO;
		}
	}
	return 0;
}

/* Katran's LRUs: one LRU_HASH per CPU, KatranConfig's LruSize over the
 * CPUs, flags 0 (KatranLb::initLrus); the first is lru_mapping's inner
 * map prototype. */
static int kt_lrus(struct kt_katran *kt)
{
	struct bpf_map *fb = bpf_object__find_map_by_name(kt->obj,
							  "fallback_cache");
	struct bpf_map *mapping =
	    bpf_object__find_map_by_name(kt->obj, "lru_mapping");

	kt->ncpus = libbpf_num_possible_cpus();
	if (kt->ncpus < 1)
		return -EINVAL;
	kt->lru_fds = calloc(kt->ncpus, sizeof(*kt->lru_fds));
	if (!kt->lru_fds)
		return -ENOMEM;
	kt->lru_entries = KT_DEFAULT_LRU / (__u32)kt->ncpus;
	for (int c = 0; c < kt->ncpus; c++) {
		kt->lru_fds[c] = bpf_map_create(
		    BPF_MAP_TYPE_LRU_HASH, "katran_lru", bpf_map__key_size(fb),
		    bpf_map__value_size(fb), kt->lru_entries, NULL);
		if (kt->lru_fds[c] < 0)
			return -errno;
	}
	return bpf_map__set_inner_map_fd(mapping, kt->lru_fds[0]);
}

/* The ring of vip_num 0, every position a real 1..KT_NODES (id 0 means
 * "no real" to Katran), each real ring_size / KT_NODES times in a
 * shuffled order: spread as evenly as Maglev spreads it. The cost of a
 * lookup does not depend on which real a position names. */
static int kt_ring(struct kt_katran *kt)
{
	int fd = kt_map_fd(kt, "ch_rings");
	__u64 rnd = BENCH_SEED_K0;

	kt->ring = calloc(kt->ring_size, sizeof(*kt->ring));
	if (!kt->ring)
		return -ENOMEM;
	for (__u32 i = 0; i < kt->ring_size; i++)
		kt->ring[i] = 1 + i % KT_NODES;
	for (__u32 i = kt->ring_size - 1; i > 0; i--) {
		__u32 j = (__u32)(bench_rand(&rnd) % (i + 1)), t = kt->ring[i];

		kt->ring[i] = kt->ring[j];
		kt->ring[j] = t;
	}
	for (__u32 i = 0; i < kt->ring_size; i++)
		if (bpf_map_update_elem(fd, &i, &kt->ring[i], BPF_ANY))
			return -errno;
	return 0;
}

static int kt_configure(struct kt_katran *kt, __u32 vip, __u16 port,
			const __u8 gw_mac[6])
{
	struct kt_vip key = {.port = htons(port), .proto = IPPROTO_TCP};
	struct kt_vip_meta meta = {.flags = 0, .vip_num = 0};
	__u8 ctl[8] = {0};
	__u32 zero = 0;

	key.addr[0] = htonl(vip);
	if (bpf_map_update_elem(kt_map_fd(kt, "vip_map"), &key, &meta,
				BPF_ANY))
		return -errno;
	for (__u32 i = 1; i <= KT_NODES; i++) {
		struct kt_real r = {.flags = 0};

		r.addr[0] = KT_REAL_ADDR(i);
		if (bpf_map_update_elem(kt_map_fd(kt, "reals"), &i, &r,
					BPF_ANY))
			return -errno;
	}
	memcpy(ctl, gw_mac, 6);
	if (bpf_map_update_elem(kt_map_fd(kt, "ctl_array"), &zero, ctl,
				BPF_ANY))
		return -errno;
	for (int c = 0; c < kt->ncpus; c++)
		if (bpf_map_update_elem(kt_map_fd(kt, "lru_mapping"), &c,
					&kt->lru_fds[c], BPF_ANY))
			return -errno;
	return kt_ring(kt);
}

/* Every map of kt's object becomes share's (same source, so the same
 * definitions): one configuration, one LRU, one set of stats. */
static int kt_share(struct kt_katran *kt, const struct kt_katran *share)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, kt->obj)
	{
		struct bpf_map *theirs;
		int err;

		if (bpf_map__is_internal(m))
			continue;
		theirs = bpf_object__find_map_by_name(share->obj,
						      bpf_map__name(m));
		if (!theirs)
			return -ENOENT;
		err = bpf_map__reuse_fd(m, bpf_map__fd(theirs));
		if (err)
			return err;
	}
	return 0;
}

int kt_katran_open(struct kt_katran *kt, const char *path,
		   const struct kt_katran *share, __u32 vip, __u16 port,
		   const __u8 gw_mac[6])
{
	struct bpf_program *prog;
	int err;

	memset(kt, 0, sizeof(*kt));
	kt->prog_fd = -1;
	memcpy(kt->gw_mac, gw_mac, 6);
	kt->obj = bpf_object__open_file(path, NULL);
	if (!kt->obj) {
		err = -errno;
		fprintf(stderr, "katran: opening %s: %s\n", path,
			strerror(-err));
		return err;
	}
	prog = bpf_object__find_program_by_name(kt->obj, "balancer_ingress");
	err = prog ? kt_layout(kt->obj) : -ENOENT;
	if (!err) {
		kt->max_vips = bpf_map__max_entries(
		    bpf_object__find_map_by_name(kt->obj, "vip_map"));
		kt->hash_seed = bpf_map__max_entries(
		    bpf_object__find_map_by_name(kt->obj, "ch_rings"));
		kt->ring_size = kt->hash_seed / kt->max_vips;
		err = share ? kt_share(kt, share) : kt_lrus(kt);
	}
	if (!err && bpf_object__load(kt->obj))
		err = -errno;
	if (err) {
		fprintf(stderr, "katran: loading %s: %s%s\n", path,
			strerror(-err),
			prog ? "" : " (no program balancer_ingress)");
		return err;
	}
	kt->prog_fd = bpf_program__fd(prog);
	kt->stats_fd = kt_map_fd(kt, "stats");
	if (share) {
		kt->shared = true;
		kt->ring = share->ring;
		kt->lru_entries = share->lru_entries;
		kt->ncpus = share->ncpus;
		return 0;
	}
	return kt_configure(kt, vip, port, gw_mac);
}

void kt_katran_close(struct kt_katran *kt)
{
	bpf_object__close(kt->obj);
	if (!kt->shared) {
		for (int c = 0; kt->lru_fds && c < kt->ncpus; c++)
			if (kt->lru_fds[c] > 0)
				close(kt->lru_fds[c]);
		free(kt->lru_fds);
		free(kt->ring);
	}
	memset(kt, 0, sizeof(*kt));
}

/* stats[max_vips + idx], summed over CPUs, into v1 and v2. */
static int kt_stat(const struct kt_katran *kt, __u32 idx, __u64 *v1,
		   __u64 *v2)
{
	struct kt_stat s[kt->ncpus > 0 ? kt->ncpus : 1];
	__u32 key = kt->max_vips + idx;

	if (bpf_map_lookup_elem(kt->stats_fd, &key, s))
		return -1;
	*v1 = *v2 = 0;
	for (int c = 0; c < kt->ncpus; c++) {
		*v1 += s[c].v1;
		*v2 += s[c].v2;
	}
	return 0;
}

int kt_counts(const struct kt_katran *kt, struct kt_counts *c)
{
	__u64 unused;

	return kt_stat(kt, KT_XDP_TX_CNTR, &c->tx, &unused) ||
		       kt_stat(kt, KT_XDP_PASS_CNTR, &c->pass, &unused) ||
		       kt_stat(kt, KT_LRU_MISS_CNTR, &c->syn_miss,
			       &c->nonsyn_miss) ||
		       kt_stat(kt, KT_FALLBACK_LRU_CNTR, &c->fallback_lru,
			       &unused)
		   ? -1
		   : 0;
}

int kt_counts_check(const struct kt_counts *b, const struct kt_counts *a,
		    __u64 runs, bool pass, bool syn, char *why, size_t wlen)
{
	const struct {
		const char *name;
		__u64 moved, want;
	} c[] = {
	    {"XDP_TX", a->tx - b->tx, pass ? 0 : runs},
	    {"XDP_PASS", a->pass - b->pass, pass ? runs : 0},
	    {"LRU misses of SYNs", a->syn_miss - b->syn_miss,
	     !pass && syn ? runs : 0},
	    {"LRU misses of non-SYNs", a->nonsyn_miss - b->nonsyn_miss, 0},
	    {"fallback LRU uses", a->fallback_lru - b->fallback_lru, 0},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++)
		if (c[i].moved != c[i].want) {
			snprintf(why, wlen,
				 "FAILED: Katran's %s moved %llu, expected "
				 "%llu",
				 c[i].name, (unsigned long long)c[i].moved,
				 (unsigned long long)c[i].want);
			return -1;
		}
	return 0;
}

int kt_flood_reset(const struct kt_katran *kt)
{
	struct kt_stat s[kt->ncpus > 0 ? kt->ncpus : 1];
	__u32 key = kt->max_vips + KT_NEW_CONN_RATE_CNTR;

	/* v2 = 0: the guard's second began long ago, the next new flow
	 * starts a new one */
	memset(s, 0, sizeof(s));
	return bpf_map_update_elem(kt->stats_fd, &key, s, BPF_ANY) ? -errno
								   : 0;
}

static __u32 rol32(__u32 w, int s)
{
	return w << s | w >> (32 - s);
}

/* Bob Jenkins' lookup3 hash of two words (the kernel's jhash_2words),
 * which Katran hashes an IPv4 flow with: its final mix, each step mixing
 * the last word changed into the next of c, a, b. */
static __u32 jhash_2words(__u32 a, __u32 b, __u32 initval)
{
	static const int rot[] = {14, 11, 25, 16, 4, 14, 24};
	__u32 x[3]; /* c, a, b */

	initval += 0xdeadbeef + (2 << 2);
	x[0] = initval;
	x[1] = a + initval;
	x[2] = b + initval;
	for (int i = 0; i < 7; i++) {
		__u32 p = x[(i + 2) % 3];

		x[i % 3] ^= p;
		x[i % 3] -= rol32(p, rot[i]);
	}
	return x[0];
}

int kt_expect_katran(const struct kt_katran *kt, const __u8 *in,
		     const __u8 *out, __u32 out_len, char *why, size_t wlen)
{
	const __u8 *ip = in + ETH_HLEN, *l4 = ip + 20;
	struct kt_outer o = {.in = in,
			     .out = out,
			     .out_len = out_len,
			     .hlen = 20,
			     .dmac = kt->gw_mac,
			     .smac = in, /* the frame's destination */
			     .proto = IPPROTO_IPIP};
	__u32 src, ports, pos;
	__u16 sport;

	/* the flow as Katran reads it: words in memory order */
	memcpy(&src, ip + 12, 4);
	memcpy(&ports, l4, 4);
	memcpy(&sport, l4, 2);
	pos = jhash_2words(src, ports, kt->hash_seed) % kt->ring_size;
	o.daddr = KT_REAL_ADDR(kt->ring[pos]);
	/* its outer source: 172.16/16 beside the source port and address
	 * (create_encap_ipv4_src) */
	o.saddr = (((__u32)ntohs(sport) << 16 ^ src) & 0xffff0000u) |
		  KT_IPIP_V4_PREFIX;
	return kt_outer_check(&o, "Katran", why, wlen);
}

int kt_outer_check(const struct kt_outer *o, const char *who, char *why,
		   size_t wlen)
{
	const __u8 *ip = o->out + ETH_HLEN, *udp = ip + 20;
	__u32 want = KT_FRAME_LEN + o->hlen;
	char got[INET_ADDRSTRLEN], exp[INET_ADDRSTRLEN];
	const char *what = NULL;

	if (o->out_len != want) {
		snprintf(why, wlen, "FAILED: %s sent %u bytes, expected %u",
			 who, o->out_len, want);
		return -1;
	}
	if (memcmp(o->out, o->dmac, 6) || memcmp(o->out + 6, o->smac, 6) ||
	    o->out[12] != 0x08 || o->out[13] != 0x00)
		what = "Ethernet header";
	else if (ip[0] != 0x45 || ip[8] != KT_TTL || ip[9] != o->proto ||
		 (__u32)(ip[2] << 8 | ip[3]) != want - ETH_HLEN || !bench_ip_csum_ok(ip))
		what = "outer IPv4 header";
	else if (memcmp(ip + 12, &o->saddr, 4))
		what = "outer source address";
	else if (o->proto == IPPROTO_UDP &&
		 (memcmp(udp, &o->gue_sport, 2) ||
		  memcmp(udp + 2, &o->gue_dport, 2) ||
		  (__u32)(udp[4] << 8 | udp[5]) != want - ETH_HLEN - 20))
		what = "GUE (UDP) header";
	else if (memcmp(o->out + ETH_HLEN + o->hlen, o->in + ETH_HLEN,
			KT_FRAME_LEN - ETH_HLEN))
		what = "inner packet (changed)";
	if (what) {
		snprintf(why, wlen, "FAILED: %s's frame: wrong %s", who, what);
		return -1;
	}
	if (memcmp(ip + 16, &o->daddr, 4)) {
		inet_ntop(AF_INET, ip + 16, got, sizeof(got));
		inet_ntop(AF_INET, &o->daddr, exp, sizeof(exp));
		snprintf(why, wlen, "FAILED: %s sent the flow to %s, expected %s",
			 who, got, exp);
		return -1;
	}
	return 0;
}
