// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark traffic programs.
 *
 *   tg_udp    traffic generator for BPF_F_TEST_XDP_LIVE_FRAMES: the kernel
 *             hands it the same few pages over and over without restoring
 *             them (and a director downstream rewrites their MACs in
 *             place, or pushes an outer IPv4 header in front, whose
 *             bytes then lie over the Ethernet header), so every header
 *             field that matters is written here on every packet: the
 *             whole Ethernet header, the source address and UDP
 *             source port of flow number seq % tg_flows, the IPv4
 *             checksum; with tg_key_off set, the flow number as 8 hex
 *             digits at that frame offset (a request key per flow, e.g.
 *             memcached's "get k:XXXXXXXX"). Returns XDP_TX: out of the
 *             interface it runs on.
 *   tg_mix    front end for bpf_prog_test_run without live frames: gives
 *             each run a new TCP/UDP source port (so a new ring position)
 *             and tail-calls the program in tg_next[0]. The kernel repeats
 *             one buffer, so without this a benchmark would measure one
 *             flow's cache lines only.
 *   tg_mix_cpu tg_mix with a sequence per CPU (tg_cpu_seq): the all-CPU
 *             bench runs it on every CPU at once.
 *   tg_ret_tx returns XDP_TX: tail-call target to measure tg_mix alone.
 *   tg_unencap front end for bpf_prog_test_run of encapsulating programs:
 *             the kernel repeats a program on one buffer, so each run
 *             would wrap the last one's output again; this takes the
 *             outer headers off (back to tg_orig_len bytes, the original
 *             Ethernet header tg_orig_eth) and tail-calls tg_next[0].
 *             It does so on every run, whatever program it runs in
 *             front of, so the wrapper costs every program the same.
 *   tg_restore front end for bpf_prog_test_run of the decapsulator,
 *             which takes headers off or rewrites the frame in place: puts
 *             the TG_FRAME_LEN bytes of tg_frame back as the frame before
 *             every run and tail-calls tg_next[0].
 *   tg_push   grows the frame by tg_push_len bytes at its head (no bytes
 *             written) and returns XDP_TX: behind tg_unencap, the least
 *             any encapsulating program does per run (bench encap's
 *             method floor).
 *   tg_count  counts and drops; attached on receivers in the live test
 *             (a veth peer must run XDP to accept redirected frames).
 *   tg_conn_probe  looks the frame's IPv4 flow up in tg_conns, which the
 *             kernel bench points at the director's rm_conns, and nothing
 *             else: the table's own cost per packet, the floor under the
 *             director's established-flow path. XDP_TX when the flow is
 *             there; a miss counts in tg_probe_misses.
 *
 * tg_seq counts runs of tg_udp and tg_mix; userspace resets it through
 * the skeleton's bss.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <ringmaster/rm_conn.h>

/* Set through the skeleton's rodata before load; plain variables so the
 * skeleton needs no shared type definition. The MACs live in .bss (set
 * through the skeleton's bss): a const array would be folded into the
 * code. */
__u8 tg_dst_mac[ETH_ALEN];
__u8 tg_src_mac[ETH_ALEN];
const volatile __u32 tg_saddr = 0;    /* host order: first source address */
const volatile __u32 tg_flows = 1;    /* flows cycled through */
const volatile __u32 tg_sport = 1024; /* host order: first source port */
const volatile __u32 tg_nports = 1;   /* source ports per address */
const volatile __u32 tg_mix_mask = 0; /* tg_mix: port = base + (seq & mask) */
const volatile __u32 tg_mix_base = 0;

__u64 tg_seq;
__u8 tg_orig_eth[ETH_HLEN];
const volatile __u32 tg_orig_len = 0;
/* Frame offset of the 8 hex digits tg_udp writes (0: none); .bss, so one
 * loaded generator serves keyed and unkeyed rounds. */
__u32 tg_key_off;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tg_next SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tg_counts SEC(".maps");

static __always_inline __u16 tg_csum_ipv4(const struct iphdr *iph)
{
	const __u16 *w = (const __u16 *)iph;
	__u32 sum = 0;
	int i;

	/* ihl is 5: ten 16-bit words, the checksum word zero */
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

SEC("xdp")
int tg_udp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *uh = (void *)(iph + 1);
	__u32 flows = tg_flows, nports = tg_nports, f;

	if ((void *)(uh + 1) > data_end)
		return XDP_ABORTED;
	/* the IP and UDP headers are never touched downstream: a frame
	 * that is no longer ours is a test bug, aborted (and so uncounted) */
	if (iph->version != 4 || iph->ihl != 5 || iph->protocol != IPPROTO_UDP)
		return XDP_ABORTED;
	if (!flows)
		flows = 1;
	if (!nports)
		nports = 1;
	f = (__u32)(tg_seq++ % flows);

	__builtin_memcpy(eth->h_dest, tg_dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tg_src_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	iph->saddr = bpf_htonl(tg_saddr + f / nports);
	iph->check = 0;
	iph->check = tg_csum_ipv4(iph);
	uh->source = bpf_htons((__u16)(tg_sport + f % nports));
	uh->check = 0; /* optional over IPv4 */
	if (tg_key_off) {
		__u32 off = tg_key_off & 0xff;
		__u8 *k = data + off;
		int i;

		if ((void *)(k + 8) > data_end)
			return XDP_ABORTED;
#pragma unroll
		for (i = 0; i < 8; i++) {
			__u8 d = (f >> (28 - 4 * i)) & 0xf;

			k[i] = d < 10 ? '0' + d : 'a' - 10 + d;
		}
	}
	return XDP_TX;
}

/* Give the frame source port tg_mix_base + (seq & tg_mix_mask) and
 * tail-call tg_next[0]. */
static __always_inline int tg_mix_to(struct xdp_md *ctx, __u64 seq)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	__be16 port;
	void *l4;

	if ((void *)(iph + 1) > data_end)
		return XDP_ABORTED;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || iph->ihl != 5)
		return XDP_ABORTED;
	l4 = iph + 1;
	port = bpf_htons((__u16)(tg_mix_base + ((__u32)seq & tg_mix_mask)));
	if (iph->protocol == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return XDP_ABORTED;
		th->source = port;
	} else if (iph->protocol == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end)
			return XDP_ABORTED;
		uh->source = port;
	} else {
		return XDP_ABORTED;
	}
	bpf_tail_call(ctx, &tg_next, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int tg_mix(struct xdp_md *ctx)
{
	return tg_mix_to(ctx, tg_seq++);
}

/* tg_mix_cpu's sequence: one per CPU, so CPUs running it at once share
 * no written cache line (tg_seq would be one). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tg_cpu_seq SEC(".maps");

SEC("xdp")
int tg_mix_cpu(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&tg_cpu_seq, &zero);

	if (!seq)
		return XDP_ABORTED;
	return tg_mix_to(ctx, (*seq)++);
}

/* Created small unless the loader reuses the director's rm_conns (it
 * takes that map's size and flags). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, 256);
	__type(key, struct rm_conn_key4);
	__type(value, struct rm_conn);
} tg_conns SEC(".maps");

__u64 tg_probe_misses;

SEC("xdp")
int tg_conn_probe(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct rm_flow f = {.family = RM_FAMILY_V4};
	struct rm_conn_key4 k;
	struct tcphdr *th;

	if ((void *)(iph + 1) > data_end)
		return XDP_ABORTED;
	th = (void *)(iph + 1);
	if (iph->ihl != 5 || (void *)(th + 1) > data_end)
		return XDP_ABORTED;
	f.src[0] = iph->saddr;
	f.dst[0] = iph->daddr;
	f.sport = th->source;
	f.dport = th->dest;
	f.proto = iph->protocol;
	rm_conn_key4_of(&f, &k);
	if (bpf_map_lookup_elem(&tg_conns, &k))
		return XDP_TX;
	tg_probe_misses++;
	return XDP_DROP;
}

SEC("xdp")
int tg_ret_tx(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_TX;
}

SEC("xdp")
int tg_count(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *c = bpf_map_lookup_elem(&tg_counts, &zero);

	(void)ctx;
	if (c)
		*c += 1;
	return XDP_DROP;
}

SEC("xdp")
int tg_unencap(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	struct ethhdr *eth;

	/* the same work whether or not the last run encapsulated (a move of
	 * 0 bytes behind a program that only rewrites MACs), so rows of
	 * different methods compare as their programs do */
	if (bpf_xdp_adjust_head(ctx, (int)(len - tg_orig_len)))
		return XDP_ABORTED;
	eth = (void *)(long)ctx->data;
	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(eth, tg_orig_eth, ETH_HLEN);
	bpf_tail_call(ctx, &tg_next, 0);
	return XDP_ABORTED;
}

#define TG_FRAME_LEN 128
__u8 tg_frame[TG_FRAME_LEN];

SEC("xdp")
int tg_restore(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	void *data;

	if (len != TG_FRAME_LEN &&
	    bpf_xdp_adjust_head(ctx, (int)len - TG_FRAME_LEN))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	if (data + TG_FRAME_LEN > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, tg_frame, TG_FRAME_LEN);
	bpf_tail_call(ctx, &tg_next, 0);
	return XDP_ABORTED;
}

__u32 tg_push_len;

SEC("xdp")
int tg_push(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_head(ctx, -(int)tg_push_len))
		return XDP_ABORTED;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
