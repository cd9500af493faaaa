/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The node-side decapsulator (bpf/decap.bpf.c) for its test suites
 * (test_decap, test_decap_sc): the program loaded with its maps filled,
 * one run through bpf_prog_test_run_opts with the counters that rose,
 * and one checked run (verdict, exact output bytes, exactly one counter).
 */
#ifndef DC_FIXTURE_H
#define DC_FIXTURE_H

#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringmaster/rm_encap.h>
#include "dp_packet.h"
#include "decap.skel.h"

#define DIR4 "198.18.2.1" /* allowed: 198.18.2.0/24, 2001:db8:2::/64 */
#define DIR6 "2001:db8:2::1"
#define NODE4 "198.19.0.5" /* this host */
#define NODE6 "2001:db8:100::5"
#define CLIENT4 "198.18.200.7"
#define CLIENT6 "2001:db8:c8::7"
#define VIP4 "198.18.50.1"
#define VIP6 "2001:db8:50::1"

static struct decap_bpf *skel;
static int prog, counters, ncpus;

static int dc_prefix(struct bpf_map *map, int family, const char *addr,
		     __u32 len)
{
	struct rm_decap_prefix k = {.prefixlen = 32 + len};
	__u8 one = 1;

	k.family = family == 6 ? RM_FAMILY_V6 : RM_FAMILY_V4;
	dp_addr(family, addr, (__u8 *)k.addr);
	return bpf_map__update_elem(map, &k, sizeof(k), &one, 1, BPF_ANY);
}

static int dc_local(int family, const char *addr)
{
	struct rm_decap_addr k = {};
	__u8 one = 1;

	k.family = family == 6 ? RM_FAMILY_V6 : RM_FAMILY_V4;
	dp_addr(family, addr, (__u8 *)k.addr);
	return bpf_map__update_elem(skel->maps.rm_decap_local, &k, sizeof(k),
				    &one, 1, BPF_ANY);
}

/* Load the program; the directors' prefixes allowed, NODE4/NODE6 local,
 * GUE on RM_GUE_PORT. 0, or -1 with a message. */
static int dc_open(const char *suite)
{
	struct rm_decap_config cfg = {.gue_port = htons(RM_GUE_PORT)};
	__u32 zero = 0;
	int err = 0;

	skel = decap_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "%s: cannot load the program: %s%s\n", suite,
			strerror(errno), geteuid() ? " (not root)" : "");
		return -1;
	}
	prog = bpf_program__fd(skel->progs.rm_decap);
	counters = bpf_map__fd(skel->maps.rm_decap_counters);
	ncpus = libbpf_num_possible_cpus();
	err |= dc_prefix(skel->maps.rm_decap_allow, 4, "198.18.2.0", 24);
	err |= dc_prefix(skel->maps.rm_decap_allow, 6, "2001:db8:2::", 64);
	err |= dc_local(4, NODE4);
	err |= dc_local(6, NODE6);
	err |= bpf_map__update_elem(skel->maps.rm_decap_config, &zero,
				    sizeof(zero), &cfg, sizeof(cfg), BPF_ANY);
	return err ? -1 : 0;
}

static void read_counters(__u64 *out)
{
	__u64 v[ncpus];
	__u32 i;
	int c;

	for (i = 0; i < RM_DCNT_MAX; i++) {
		assert_int_equal(bpf_map_lookup_elem(counters, &i, v), 0);
		out[i] = 0;
		for (c = 0; c < ncpus; c++)
			out[i] += v[c];
	}
}

struct dc_run {
	__u32 verdict;
	__u8 out[DP_PKT_MAX];
	__u32 out_len;
	__u64 rose[RM_DCNT_MAX];
};

/* Run on a frame received by ifindex (0: the namespace's loopback). */
static void run_on(const __u8 *in, size_t len, int ifindex, struct dc_run *r)
{
	__u64 before[RM_DCNT_MAX];
	struct xdp_md ctx = {.data_end = len, .ingress_ifindex = ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .data_out = r->out, .data_size_out = sizeof(r->out),
		    .repeat = 1);
	int i;

	if (ifindex) {
		o.ctx_in = &ctx;
		o.ctx_size_in = sizeof(ctx);
	}
	read_counters(before);
	assert_int_equal(bpf_prog_test_run_opts(prog, &o), 0);
	read_counters(r->rose);
	for (i = 0; i < RM_DCNT_MAX; i++)
		r->rose[i] -= before[i];
	r->verdict = o.retval;
	r->out_len = o.data_size_out;
}

static void run(const __u8 *in, size_t len, struct dc_run *r)
{
	run_on(in, len, 0, r);
}

/* Run; 1 and a message on any difference from the verdict, the output
 * bytes and exactly counter rising by one. */
static int run_check_on(const char *what, const __u8 *in, size_t len,
			int ifindex, __u32 verdict, __u32 counter,
			const __u8 *out, size_t out_len)
{
	static struct dc_run r;
	int bad = 0, i;

	run_on(in, len, ifindex, &r);
	if (r.verdict != verdict) {
		print_error("%s (len %zu): verdict %u, want %u\n", what, len,
			    r.verdict, verdict);
		bad = 1;
	}
	if (r.out_len != out_len || memcmp(r.out, out, out_len)) {
		print_error("%s (len %zu): output differs (len %u, want %zu)\n",
			    what, len, r.out_len, out_len);
		for (i = 0; i < (int)r.out_len && i < (int)out_len; i++)
			if (r.out[i] != out[i])
				print_error("  byte %d: %02x, want %02x\n", i,
					    r.out[i], out[i]);
		bad = 1;
	}
	for (i = 0; i < RM_DCNT_MAX; i++)
		if (r.rose[i] != ((__u32)i == counter)) {
			print_error("%s (len %zu): %s rose by %llu\n", what,
				    len, rm_decap_counter_name(i),
				    (unsigned long long)r.rose[i]);
			bad = 1;
		}
	return bad;
}

static int run_check(const char *what, const __u8 *in, size_t len,
		     __u32 verdict, __u32 counter, const __u8 *out,
		     size_t out_len)
{
	return run_check_on(what, in, len, 0, verdict, counter, out, out_len);
}

/* Run the frame cut at every length short of in_len: each cut must be
 * dropped as malformed or passed untouched as not a tunnel packet for us,
 * with exactly one counter saying which; never decapsulated, never
 * forwarded. Adds the runs to *runs; returns the failures. */
static int dc_cuts(const char *what, const __u8 *in, size_t in_len,
		   size_t *runs)
{
	static struct dc_run r;
	int failed = 0;

	for (size_t len = ETH_HLEN; len < in_len; len++, (*runs)++) {
		__u64 total = 0;
		int ok;

		run(in, len, &r);
		for (int j = 0; j < RM_DCNT_MAX; j++)
			total += r.rose[j];
		if (r.verdict == XDP_DROP)
			ok = r.rose[RM_DCNT_DROP_MALFORMED] ||
			     r.rose[RM_DCNT_DROP_HOPS];
		else
			ok = r.verdict == XDP_PASS && r.out_len == len &&
			     !memcmp(r.out, in, len) &&
			     (r.rose[RM_DCNT_PASS_NOT_TUNNEL] ||
			      r.rose[RM_DCNT_PASS_NOT_LOCAL] ||
			      r.rose[RM_DCNT_PASS_SRC]);
		if (total != 1 || !ok) {
			print_error("%s cut to %zu: verdict %u, taken in or "
				    "wrong counters\n",
				    what, len, r.verdict);
			failed++;
		}
	}
	return failed;
}

#endif /* DC_FIXTURE_H */
