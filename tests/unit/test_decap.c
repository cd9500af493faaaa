// SPDX-License-Identifier: GPL-2.0
/*
 * The node-side decapsulator (bpf/decap.bpf.c) through
 * bpf_prog_test_run_opts: which frames it takes the outer header off,
 * with the exact frame it passes up, and which it leaves alone or drops.
 *
 *   table        IPIP/GUE x inner v4/v6 x outer v4/v6 decapsulated; not
 *                local, source not allowed, other port, plain traffic,
 *                fragments passed untouched; broken tunnel packets dropped
 *   truncation   every tunnel frame cut at every length: never taken in
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dc_fixture.h"

static int group_setup(void **state)
{
	(void)state;
	return dc_open("test_decap");
}

static int group_teardown(void **state)
{
	(void)state;
	decap_bpf__destroy(skel);
	return 0;
}

/* ---- cases ---------------------------------------------------------- */
enum mangle {
	M_OK = 0,
	M_PLAIN,	 /* no tunnel at all: the inner frame as it is */
	M_BAD_CSUM,	 /* outer IPv4 checksum wrong */
	M_FRAG,		 /* outer IPv4 MF set */
	M_INNER_LONG,	 /* inner length beyond the outer payload */
	M_WRONG_VERSION, /* IPIP protocol 4 carrying IPv6 */
	M_UDP_LEN,	 /* UDP length not the outer payload */
	M_GUE_V0,	 /* GUE with a version-0 GUE header */
	M_OUTER_SHORT,	 /* outer IPv6 payload length past the frame */
};

struct dc_case {
	const char *desc;
	struct dp_spec s; /* the inner packet */
	int ofam;	  /* outer family */
	const char *src, *dst;
	__u16 port; /* GUE destination port; 0: IPIP */
	enum mangle m;
	__u32 verdict;
	__u32 counter; /* RM_DCNT_* that rises by one */
};

#define T4                                                                     \
	{                                                                      \
		.family = 4, .proto = IPPROTO_TCP, .src = CLIENT4,             \
		.dst = VIP4, .sport = 40000, .dport = 80, .payload = 11        \
	}
#define U6                                                                     \
	{                                                                      \
		.family = 6, .proto = IPPROTO_UDP, .src = CLIENT6,             \
		.dst = VIP6, .sport = 40001, .dport = 53, .payload = 5         \
	}
#define G RM_GUE_PORT
#define PASS XDP_PASS
#define DROP XDP_DROP

// clang-format off
static const struct dc_case cases[] = {
	{"ipip 4in4", T4, 4, DIR4, NODE4, 0, M_OK, PASS, RM_DCNT_IPIP},
	{"ipip 6in6", U6, 6, DIR6, NODE6, 0, M_OK, PASS, RM_DCNT_IPIP},
	{"ipip 6in4", U6, 4, DIR4, NODE4, 0, M_OK, PASS, RM_DCNT_IPIP},
	{"ipip 4in6", T4, 6, DIR6, NODE6, 0, M_OK, PASS, RM_DCNT_IPIP},
	{"gue 4in4", T4, 4, DIR4, NODE4, G, M_OK, PASS, RM_DCNT_GUE},
	{"gue 6in6", U6, 6, DIR6, NODE6, G, M_OK, PASS, RM_DCNT_GUE},
	{"gue 6in4", U6, 4, DIR4, NODE4, G, M_OK, PASS, RM_DCNT_GUE},
	{"gue 4in6", T4, 6, DIR6, NODE6, G, M_OK, PASS, RM_DCNT_GUE},
	/* left alone */
	{"plain tcp", T4, 4, DIR4, NODE4, 0, M_PLAIN, PASS, RM_DCNT_PASS_NOT_TUNNEL},
	{"plain udp v6", U6, 6, DIR6, NODE6, 0, M_PLAIN, PASS, RM_DCNT_PASS_NOT_TUNNEL},
	{"not this host v4", T4, 4, DIR4, "198.19.0.6", 0, M_OK, PASS, RM_DCNT_PASS_NOT_LOCAL},
	{"not this host v6", T4, 6, DIR6, "2001:db8:100::6", G, M_OK, PASS, RM_DCNT_PASS_NOT_LOCAL},
	{"source not allowed v4", T4, 4, "198.18.3.1", NODE4, 0, M_OK, PASS, RM_DCNT_PASS_SRC},
	{"source not allowed v6", U6, 6, "2001:db8:3::1", NODE6, G, M_OK, PASS, RM_DCNT_PASS_SRC},
	{"other udp port", T4, 4, DIR4, NODE4, 6081, M_OK, PASS, RM_DCNT_PASS_NOT_TUNNEL},
	{"outer fragment", T4, 4, DIR4, NODE4, 0, M_FRAG, PASS, RM_DCNT_PASS_NOT_TUNNEL},
	/* ours, and broken */
	{"gue version 0, no hop list", T4, 4, DIR4, NODE4, G, M_GUE_V0, DROP, RM_DCNT_DROP_HOPS},
	{"bad outer checksum", T4, 4, DIR4, NODE4, 0, M_BAD_CSUM, DROP, RM_DCNT_DROP_MALFORMED},
	{"inner longer v4", T4, 4, DIR4, NODE4, 0, M_INNER_LONG, DROP, RM_DCNT_DROP_MALFORMED},
	{"inner longer v6", U6, 6, DIR6, NODE6, G, M_INNER_LONG, DROP, RM_DCNT_DROP_MALFORMED},
	{"ipip 4 carrying v6", U6, 4, DIR4, NODE4, 0, M_WRONG_VERSION, DROP, RM_DCNT_DROP_MALFORMED},
	{"udp length wrong", T4, 4, DIR4, NODE4, G, M_UDP_LEN, DROP, RM_DCNT_DROP_MALFORMED},
	{"outer v6 length past frame", T4, 6, DIR6, NODE6, 0, M_OUTER_SHORT, DROP, RM_DCNT_DROP_MALFORMED},
};
// clang-format on
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Build the frame of c into in, its expected output into out. */
static void case_build(const struct dc_case *c, __u8 *in, size_t *in_len,
		       __u8 *out, size_t *out_len)
{
	static struct dp_pkt p;
	size_t ilen, n, o;
	__u8 proto;

	dp_build(&c->s, &p);
	ilen = p.ip_end - p.l2_len;
	if (c->m == M_PLAIN) {
		memcpy(in, p.b, p.len);
		*in_len = p.len;
		memcpy(out, in, p.len);
		*out_len = p.len;
		return;
	}
	proto = c->s.family == 6 ? RM_PROTO_IPV6 : RM_PROTO_IPIP;
	if (c->m == M_WRONG_VERSION)
		proto = RM_PROTO_IPIP;
	memcpy(in, dp_mac_director, 6);
	memcpy(in + 6, dp_mac_router, 6);
	dp_put16(in + 12, c->ofam == 6 ? ETH_P_IPV6 : ETH_P_IP);
	o = ETH_HLEN;
	n = o + dp_outer(in + o, c->ofam, c->src, c->dst, proto, 0, ilen,
			 htons(50000), c->port);
	memcpy(in + n, p.b + p.l2_len, ilen);
	*in_len = n + ilen;

	switch (c->m) {
	case M_BAD_CSUM:
		in[o + 10] ^= 0x5a;
		break;
	case M_FRAG:
		in[o + 6] |= 0x20;
		dp_put16(in + o + 10, 0);
		dp_put16(in + o + 10, dp_csum(in + o, 20));
		break;
	case M_INNER_LONG:
		if (c->s.family == 4)
			dp_put16(in + n + 2, ilen + 1);
		else
			dp_put16(in + n + 4, ilen - 40 + 1);
		break;
	case M_UDP_LEN:
		dp_put16(in + n - 4, ilen + 8 + 2);
		break;
	case M_GUE_V0:
		in[n] &= 0x0f;
		break;
	case M_OUTER_SHORT:
		dp_put16(in + o + 4, ilen + 4);
		break;
	default:
		break;
	}
	if (c->verdict == XDP_PASS &&
	    (c->counter == RM_DCNT_IPIP || c->counter == RM_DCNT_GUE)) {
		memcpy(out, in, 12);
		dp_put16(out + 12, c->s.family == 6 ? ETH_P_IPV6 : ETH_P_IP);
		memcpy(out + ETH_HLEN, p.b + p.l2_len, ilen);
		*out_len = ETH_HLEN + ilen;
	} else {
		memcpy(out, in, *in_len);
		*out_len = *in_len;
	}
}

static void test_table(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	size_t i, in_len, out_len;
	int failed = 0;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		const struct dc_case *c = &cases[i];

		case_build(c, in, &in_len, out, &out_len);
		failed += run_check(c->desc, in, in_len, c->verdict, c->counter,
				    out, out_len);
	}
	print_message("decap table: %zu cases, %d failed\n", N_CASES, failed);
	assert_int_equal(failed, 0);
}

/* A tunnel frame cut short is never decapsulated: it passes untouched
 * (the outer header does not yet show a tunnel packet for us) or is
 * dropped as malformed (it does), with exactly one counter saying which. */
static void test_truncation(void **state)
{
	static __u8 in[DP_PKT_MAX], out[DP_PKT_MAX];
	size_t i, in_len, out_len, runs = 0;
	int failed = 0;

	(void)state;
	for (i = 0; i < N_CASES; i++) {
		const struct dc_case *c = &cases[i];

		if (c->counter != RM_DCNT_IPIP && c->counter != RM_DCNT_GUE)
			continue;
		case_build(c, in, &in_len, out, &out_len);
		failed += dc_cuts(c->desc, in, in_len, &runs);
	}
	print_message("decap truncation: %zu runs, %d failed\n", runs, failed);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_truncation),
	};

	return cmocka_run_group_tests_name("decap", tests, group_setup,
					   group_teardown);
}
