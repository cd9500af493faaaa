/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bench part "katran": Katran's balancer as the bench loads and
 * configures it (katran_prog.c), and the check of an encapsulated frame
 * that both programs' outputs go through.
 */
#ifndef RM_BENCH_KATRAN_H
#define RM_BENCH_KATRAN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define KT_NODES 64 /* the director's nodes, Katran's reals */
#define KT_FRAME_LEN 60
#define KT_GW_MAC {0x02, 0x52, 0x4d, 0x00, 0x00, 0xfd}
#define KT_GW_MAC_STR "02:52:4d:00:00:fd"
/* Node id i of the director is 198.19.0.(i + 1), as Katran's real
 * i + 1 (Katran's real ids start at 1). */
#define KT_REAL_ADDR(real) htonl(0xc6130000u + (real))

struct bpf_object;
struct bench_opts;

/* `ringbench katran KATRAN.bpf.o [NOFLOOD.bpf.o]` (root) */
int cmd_katran(const struct bench_opts *o);

struct kt_katran {
	struct bpf_object *obj;
	int prog_fd, stats_fd;
	__u32 max_vips;	   /* vip_map's size: stats indexes count from it */
	__u32 ring_size;   /* ch_rings entries per VIP */
	__u32 hash_seed;   /* Katran's INIT_JHASH_SEED: ch_rings' size */
	__u32 lru_entries; /* per CPU */
	int ncpus, *lru_fds;
	__u32 *ring; /* the VIP's ring as written: real index by position */
	__u8 gw_mac[6];
	bool shared; /* maps and ring are another kt_katran's */
};

/* Katran's counters this bench checks, summed over CPUs. */
struct kt_counts {
	__u64 tx, pass, syn_miss, nonsyn_miss, fallback_lru;
};

/* An encapsulated frame: out must be in (KT_FRAME_LEN bytes) behind an
 * Ethernet header dmac <- smac and an outer IPv4 header saddr -> daddr
 * (proto: IPIP, or UDP with a GUE header of gue_sport -> gue_dport),
 * hlen bytes of outer headers after the Ethernet header. */
struct kt_outer {
	const __u8 *in, *out;
	__u32 out_len, hlen;
	const __u8 *dmac, *smac;
	__be32 saddr, daddr;
	__be16 gue_sport, gue_dport;
	__u8 proto;
};
int kt_outer_check(const struct kt_outer *o, const char *who, char *why,
		   size_t wlen);

/* Load Katran's object at path and configure one TCP VIP (host order)
 * with KT_NODES reals 198.19.0.1.., its ring, gw_mac, the per-CPU LRUs;
 * with share, on share's maps (already configured). 0 or -errno. */
int kt_katran_open(struct kt_katran *kt, const char *path,
		   const struct kt_katran *share, __u32 vip, __u16 port,
		   const __u8 gw_mac[6]);
void kt_katran_close(struct kt_katran *kt);
int kt_counts(const struct kt_katran *kt, struct kt_counts *c);
/* Did runs packets move Katran's counters as a forwarded (or passed)
 * SYN (or non-SYN) packet of a VIP does? 0, or -1 with why. */
int kt_counts_check(const struct kt_counts *b, const struct kt_counts *a,
		    __u64 runs, bool pass, bool syn, char *why, size_t wlen);
/* Start Katran's new-connection rate count afresh (its flood guard). */
int kt_flood_reset(const struct kt_katran *kt);
/* Is out what Katran sends for in: IPIP to the real its hash and ring
 * pick, from its encap source, to the gateway? 0, or -1 with why. */
int kt_expect_katran(const struct kt_katran *kt, const __u8 *in,
		     const __u8 *out, __u32 out_len, char *why, size_t wlen);

#endif
