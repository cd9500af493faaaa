// SPDX-License-Identifier: GPL-2.0
/*
 * Mutation fuzzer of the XDP parser and forwarding, through
 * bpf_prog_test_run_opts: RM_DP_FUZZ_FRAMES (200,000) frames, each a frame
 * of the data-plane table (dp_cases.h: every protocol path: IPv4/IPv6,
 * TCP/UDP, VLAN tags, IPv4 options, IPv6 extension headers, fragments,
 * ICMP errors and echo, ARP, other protocols, mangled headers) with 1 to
 * 4 mutations: bit flips, bytes set to random or boundary values, 16-bit
 * fields set to ethertypes and lengths, the frame cut or extended.
 *
 * The oracle, on every frame:
 *   - test_run accepts it and the verdict is PASS, DROP, TX or REDIRECT
 *     (never ABORTED, never anything else);
 *   - a forwarded frame is the whole input frame with only the two MACs
 *     rewritten, to a node the topology has and from that node's source
 *     MAC;
 *   - a forwarded frame whose headers a plain reference parser below
 *     reads (Ethernet, up to two VLAN tags, IPv4 without fragmentation or
 *     IPv6 without extension headers, TCP or UDP whole inside the IP
 *     length) went to a configured service of its own destination
 *     (rm_services: exact port, else the port-0 key) and to the owner the
 *     userspace ring gives its own flow, or to the node the connection
 *     table remembers for that flow;
 * and per batch of 64 frames: the outcome counters rose by exactly 64
 * (rm_counter_is_outcome: one outcome per packet).
 * The generator is seeded (RM_DP_FUZZ_SEED overrides): a failure prints
 * the frame number and the bytes to replay it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "util.h"
#include "dp_cases.h"
#include "skip.h"

static struct dp_fx *fx;
static char skip_why[256];
static int skipped;
static __u64 rng, rng_seed;

static __u64 rnd(void)
{
	return rm_splitmix64(&rng);
}

static int group_setup(void **state)
{
	(void)state;
	{
		const char *seed = getenv("RM_DP_FUZZ_SEED");

		rng = rng_seed = seed ? strtoull(seed, NULL, 0)
				      : 0x5eed0f00d5eedULL;
	}
	return dp_cases_open("test_dp_fuzz", &fx, skip_why, sizeof(skip_why));
}

static int group_teardown(void **state)
{
	(void)state;
	dp_fx_close(fx);
	fx = NULL;
	return 0;
}

/* ---- mutations ------------------------------------------------------- */
static const __u8 byte_values[] = {0x00, 0xff, 0x7f, 0x80, 0x40, 0x45,
				   0x46, 0x4f, 0x60, 0x06, 0x11, 0x01,
				   0x3a, 0x2c, 0x2b, 0x3c, 0x00, 0x20};
static const __u16 word_values[] = {0x0800, 0x86dd, 0x8100, 0x88a8, 0x0806,
				    0x0000, 0xffff, 0x2000, 0x3fff, 0x4000,
				    0x0014, 0x0028, 0x0050, 0x01bb, 0x05dc};

/* 1 to 4 mutations of the len bytes at b (room for DP_PKT_MAX). */
static size_t mutate(__u8 *b, size_t len)
{
	int n = 1 + (int)(rnd() % 4);

	for (int i = 0; i < n; i++) {
		size_t at = len ? rnd() % len : 0;

		switch (rnd() % 7) {
		case 0:
			b[at] ^= (__u8)(1u << (rnd() % 8));
			break;
		case 1:
			b[at] = (__u8)rnd();
			break;
		case 2:
			b[at] = byte_values[rnd() % sizeof(byte_values)];
			break;
		case 3:
			if (at + 1 < len) {
				__u16 v = word_values[rnd() % (sizeof(word_values) /
							       sizeof(__u16))];

				b[at] = (__u8)(v >> 8);
				b[at + 1] = (__u8)v;
			}
			break;
		case 4: /* cut, never below an Ethernet header */
			if (len > ETH_HLEN)
				len = ETH_HLEN + rnd() % (len - ETH_HLEN + 1);
			break;
		case 5: { /* extend with random bytes */
			size_t add = 1 + rnd() % 64;

			if (len + add > 1500)
				add = 0;
			for (size_t k = 0; k < add; k++)
				b[len + k] = (__u8)rnd();
			len += add;
			break;
		}
		default: /* a random 16-bit value in the headers */
			if (at + 1 < len && at < 80) {
				b[at] = (__u8)rnd();
				b[at + 1] = (__u8)rnd();
			}
			break;
		}
	}
	return len;
}

/* ---- the reference parser --------------------------------------------- */
static __u16 be16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

/* The flow of a plain frame (see the top) and its service key; 0 if the
 * frame is not plain. */
static int plain_flow(const __u8 *b, size_t len, struct rm_flow *f,
		      struct rm_svc_key *k)
{
	size_t off = ETH_HLEN, l4, ip_len, end;
	__u16 type = be16(b + 12);
	__u8 proto;

	for (int t = 0; t < 2 && (type == 0x8100 || type == 0x88a8); t++) {
		if (off + 4 > len)
			return 0;
		type = be16(b + off + 2);
		off += 4;
	}
	memset(f, 0, sizeof(*f));
	memset(k, 0, sizeof(*k));
	if (type == 0x0800) {
		size_t ihl;

		if (off + 20 > len || (b[off] >> 4) != 4)
			return 0;
		ihl = (size_t)(b[off] & 0xf) * 4;
		ip_len = be16(b + off + 2);
		if (ihl < 20 || ip_len < ihl || off + ip_len > len)
			return 0;
		if (be16(b + off + 6) & 0x3fff) /* MF or an offset */
			return 0;
		proto = b[off + 9];
		memcpy(f->src, b + off + 12, 4);
		memcpy(f->dst, b + off + 16, 4);
		f->family = RM_FAMILY_V4;
		l4 = off + ihl;
	} else if (type == 0x86dd) {
		if (off + 40 > len || (b[off] >> 4) != 6)
			return 0;
		ip_len = 40 + (size_t)be16(b + off + 4);
		if (off + ip_len > len)
			return 0;
		proto = b[off + 6];
		memcpy(f->src, b + off + 8, 16);
		memcpy(f->dst, b + off + 24, 16);
		f->family = RM_FAMILY_V6;
		k->flags = RM_SVCK_V6;
		l4 = off + 40;
	} else {
		return 0;
	}
	end = off + ip_len;
	if (proto == IPPROTO_TCP) {
		if (l4 + 20 > end || (b[l4 + 12] >> 4) < 5)
			return 0;
	} else if (proto == IPPROTO_UDP) {
		if (l4 + 8 > end)
			return 0;
	} else {
		return 0;
	}
	f->proto = proto;
	memcpy(&f->sport, b + l4, 2);
	memcpy(&f->dport, b + l4 + 2, 2);
	memcpy(k->vip, f->dst, sizeof(k->vip));
	k->proto = proto;
	k->port = f->dport;
	return 1;
}

/* The node a plain flow may go to: the ring's owner for it, or the one the
 * connection table remembers. 0 if node is one of them. */
static int plain_check(const struct rm_flow *flow, struct rm_svc_key *k,
		       long node, char *why, size_t wlen)
{
	struct rm_flow f = *flow;
	struct rm_conn c;
	struct rm_svc v;
	long owner;

	if (bpf_map_lookup_elem(fx->services, k, &v)) {
		k->port = 0;
		if (bpf_map_lookup_elem(fx->services, k, &v)) {
			snprintf(why, wlen, "forwarded, but no service has its "
					    "destination");
			return -1;
		}
	}
	if (v.flags & RM_SVC_F_3TUPLE)
		f.sport = f.dport = 0;
	owner = dp_expected_owner(fx, v.id, &f);
	if (owner == node)
		return 0;
	if (!dp_conn_get(fx, &f, &c) && (long)c.node == node)
		return 0;
	snprintf(why, wlen, "service %u: sent to node %ld, its owner is %ld",
		 v.id, node, owner);
	return -1;
}

/* ---- the run ---------------------------------------------------------- */
static __u64 outcomes(void)
{
	__u64 c[RM_CNT_MAX], sum = 0;

	assert_int_equal(dp_counters(fx, c), 0);
	for (int i = 0; i < RM_CNT_MAX; i++)
		if (rm_counter_is_outcome(i))
			sum += c[i];
	return sum;
}

static void dump(const char *what, unsigned long n, const __u8 *b, size_t len)
{
	print_error("frame %lu (%s), %zu bytes:", n, what, len);
	for (size_t i = 0; i < len && i < 128; i++)
		print_error("%s%02x", i % 16 ? " " : "\n  ", b[i]);
	print_error("\n");
}

/* One frame through the program and the oracle; 0 if it holds. */
static int one(unsigned long n, const __u8 *in, size_t len, __u32 ifindex,
	       unsigned long *plain, unsigned long verdicts[5])
{
	static struct dp_run r;
	struct rm_svc_key k;
	struct rm_flow f;
	__u8 src[ETH_ALEN];
	char why[160] = "";
	long node;

	dp_run(fx, in, (__u32)len, ifindex, &r);
	if (r.err) {
		snprintf(why, sizeof(why), "test_run: %s", strerror(-r.err));
		goto bad;
	}
	if (r.retval > XDP_REDIRECT || r.retval == XDP_ABORTED) {
		snprintf(why, sizeof(why), "verdict %u", r.retval);
		goto bad;
	}
	verdicts[r.retval]++;
	if (r.retval != XDP_TX && r.retval != XDP_REDIRECT)
		return 0;
	node = dp_mac_node(r.out);
	if (node < 0 || r.out_len != len ||
	    memcmp(r.out + 2 * ETH_ALEN, in + 2 * ETH_ALEN,
		   len - 2 * ETH_ALEN)) {
		snprintf(why, sizeof(why),
			 "forwarded frame is not the input with new MACs "
			 "(node %ld, %u of %zu bytes)",
			 node, r.out_len, len);
		goto bad;
	}
	dp_node_src_mac((__u32)node, src);
	if (memcmp(r.out + ETH_ALEN, src, ETH_ALEN)) {
		snprintf(why, sizeof(why), "source MAC is not node %ld's", node);
		goto bad;
	}
	if (plain_flow(in, len, &f, &k)) {
		(*plain)++;
		if (plain_check(&f, &k, node, why, sizeof(why)))
			goto bad;
	}
	return 0;
bad:
	dump(why, n, in, len);
	return 1;
}

static void test_mutation_fuzz(void **state)
{
	const char *env = getenv("RM_DP_FUZZ_FRAMES");
	unsigned long frames = env ? strtoul(env, NULL, 0) : 200000;
	unsigned long plain = 0, verdicts[5] = {0}, fwd_cases = 0, n = 0;
	static struct dp_pkt p;
	static __u8 b[DP_PKT_MAX];
	int failed = 0;

	(void)state;
	if (!fx) {
		skipped++;
		skip();
	}
	for (size_t i = 0; i < N_CASES; i++)
		fwd_cases += cases[i].verdict == XDP_TX;
	while (n < frames && failed < 10) {
		__u64 before = outcomes(), after;
		unsigned long batch = 0;

		for (; batch < 64 && n < frames; batch++, n++) {
			const struct dp_case *c = &cases[rnd() % N_CASES];
			size_t len;

			dp_build(&c->s, &p);
			memcpy(b, p.b, p.len);
			len = mutate(b, p.len);
			failed += one(n, b, len, c->ifindex, &plain, verdicts);
		}
		after = outcomes();
		if (after - before != batch) {
			print_error("frames %lu-%lu: outcome counters rose by "
				    "%llu, want %lu (one per packet)\n",
				    n - batch, n - 1,
				    (unsigned long long)(after - before), batch);
			failed++;
		}
	}
	print_message("mutation fuzz: %lu frames from %zu table cases (%lu "
		      "forwarding), seed %#llx: pass %lu, drop %lu, tx %lu, "
		      "redirect %lu; %lu forwarded plain frames checked "
		      "against their flow's owner; %d failed\n",
		      n, N_CASES, fwd_cases,
		      (unsigned long long)rng_seed, verdicts[XDP_PASS],
		      verdicts[XDP_DROP], verdicts[XDP_TX],
		      verdicts[XDP_REDIRECT], plain, failed);
	assert_int_equal(failed, 0);
	/* the oracle saw every kind of outcome, owners included */
	assert_true(verdicts[XDP_PASS] && verdicts[XDP_DROP] &&
		    verdicts[XDP_TX] && plain > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mutation_fuzz),
	};
	int rc = cmocka_run_group_tests_name("dp_fuzz", tests, group_setup,
					     group_teardown);

	return rm_test_result(rc, skipped);
}
