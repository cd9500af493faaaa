// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed flow hash (include/ringmaster/rm_hash.h): golden vectors and
 * statistical properties.
 *
 * The golden values below were NOT produced by the code under test. They
 * were printed by tests/unit/siphash_ref.py, an independent SipHash-c-d
 * written from the SipHash paper, which first checks itself against the
 * published SipHash-2-4 vectors (the paper's appendix vector and the 64
 * reference vectors) and the published SipHash-1-3 vectors (the Linux
 * kernel's 64-bit hsiphash self-test). To regenerate after a deliberate
 * change of the hash: python3 tests/unit/siphash_ref.py, and paste.
 * An accidental change to the hash, the word layout or the vnode point
 * encoding fails here loudly: it would silently remap every flow.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <ringmaster/rm_hash.h>
#include <ringmaster/rm_key.h>
#include "ring.h"
#include "util.h"

/* ---- deterministic PRNG (splitmix64) --------------------------------- */
static __u64 rng_state;

static __u64 rng_next(void)
{
	return rm_splitmix64(&rng_state);
}

/* ---- published SipHash-1-3 vectors ----------------------------------- */
/* Low 32 bits of SipHash-1-3, key 00..0f, message 00..(n-1) for n = 0..63:
 * the Linux kernel's siphash self-test (test_vectors_hsiphash with
 * BITS_PER_LONG == 64, where hsiphash is SipHash-1-3 truncated to u32).
 * siphash_ref.py checks itself against the same table. */
/* clang-format off */
static const __u32 sip13_lo32[64] = {
	0x050fc4dc, 0x7d57ca93, 0x4dc7d44d, 0xe7ddf7fb, 0x88d38328, 0x49533b67,
	0xc59f22a7, 0x9bb11140, 0x8d299a8e, 0x6c063de4, 0x92ff097f, 0xf94dc352,
	0x57b4d9a2, 0x1229ffa7, 0xc0f95d34, 0x2a519956, 0x7d908b66, 0x63dbd80c,
	0xb473e63e, 0x8d297d1c, 0xa6cce040, 0x2b45f844, 0xa320872e, 0xdae6c123,
	0x67349c8c, 0x705b0979, 0xca9913a5, 0x4ade3b35, 0xef6cd00d, 0x4ab1e1f4,
	0x43c5e663, 0x8c21d1bc, 0x16a7b60d, 0x7a8ff9bf, 0x1f2a753e, 0xbf186b91,
	0xada26206, 0xa3c33057, 0xae3a36a1, 0x7b108392, 0x99e41531, 0x3f1ad944,
	0xc8138825, 0xc28949a6, 0xfaf8876b, 0x9f042196, 0x68b1d623, 0x8b5114fd,
	0xdf074c46, 0x12cc86b3, 0x0a52098f, 0x9d292f9a, 0xa2f41f12, 0x43a71ed0,
	0x73f0bce6, 0x70a7e980, 0x243c6d75, 0xfdb71513, 0xa67d8a08, 0xb7e8f148,
	0xf7a644ee, 0x0f1837f2, 0x4b6694e0, 0xb7bbb3a8,
};
/* clang-format on */

/* ---- golden values printed by tests/unit/siphash_ref.py --------------- */
/* clang-format off */
/* full 64-bit SipHash-1-3, key 00..0f, message 00..(n-1) */
static const struct {
	unsigned int len;
	__u64 out;
} sip13_full[] = {
	{ 0, 0xabac0158050fc4dcULL}, { 1, 0xc9f49bf37d57ca93ULL},
	{ 7, 0xd3927d989bb11140ULL}, { 8, 0x369095118d299a8eULL},
	{13, 0x306f760c1229ffa7ULL}, {15, 0xd320d86d2a519956ULL},
	{16, 0xcc4fdd1a7d908b66ULL}, {36, 0x2cf508d3ada26206ULL},
	{37, 0xb6101c2da3c33057ULL}, {63, 0x9d199062b7bbb3a8ULL},
};

/* Seeds: the 16 key bytes in order (ringctl --seed text), k0 = bytes 0..7
 * little-endian, k1 = bytes 8..15. */
#define N_SEEDS 4
static const struct {
	const char *text;
	struct rm_seed seed;
} seeds[N_SEEDS] = {
	{"00000000000000000000000000000000",
	 {0x0000000000000000ULL, 0x0000000000000000ULL}},
	{"000102030405060708090a0b0c0d0e0f",
	 {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL}},
	{"ffffffffffffffffffffffffffffffff",
	 {0xffffffffffffffffULL, 0xffffffffffffffffULL}},
	{"72696e676d61737465722d7365656421", /* "ringmaster-seed!" */
	 {0x7473616d676e6972ULL, 0x21646565732d7265ULL}},
};

/* rm_flow_hash: one row per flow, one column per seed above */
static const struct {
	const char *label;
	__u8 family;
	const char *src, *dst;
	__u16 sport, dport;
	__u8 proto;
	__u32 hash[N_SEEDS];
} flows[] = {
	{"v4_tcp", 4, "10.0.0.1", "192.168.1.10", 12345, 80, 6,
	 {0xbc8b45ce, 0xe2fa841f, 0x7e4bc7b8, 0xbb0a6392}},
	{"v4_udp", 4, "172.16.5.4", "10.1.2.3", 53000, 53, 17,
	 {0x27c79e65, 0xba7eb694, 0xddf23fb4, 0xde9b03d9}},
	{"v4_max", 4, "255.255.255.255", "255.255.255.254", 65535, 65534, 17,
	 {0xe06e0dfc, 0xc4da728b, 0x4dc6f794, 0xe053bce8}},
	{"v4_3tuple", 4, "10.0.0.1", "192.168.1.10", 0, 0, 6,
	 {0xca0badb5, 0xc8a73049, 0x4a87974e, 0x349b8396}},
	{"v4_zero", 4, "0.0.0.0", "0.0.0.0", 0, 0, 0,
	 {0x5423c1fc, 0xaaa0af63, 0xdc035771, 0x1e37109a}},
	{"v6_tcp", 6, "2001:db8::1", "2001:db8:0:1::80", 40000, 443, 6,
	 {0x232529fd, 0x3ff488c2, 0xeb9f430b, 0x1002ec19}},
	{"v6_udp", 6, "fe80::1:2:3:4", "ff02::fb", 5353, 5353, 17,
	 {0x81439763, 0xecf9ba31, 0xffdb3921, 0x24bd51c8}},
	{"v6_3tuple", 6, "2001:db8::1", "2001:db8:0:1::80", 0, 0, 17,
	 {0xe1b7c23e, 0x0807c94e, 0x6414f9aa, 0x05190acf}},
	{"v6_mapped", 6, "::ffff:10.0.0.1", "::ffff:192.168.1.10", 12345, 80, 6,
	 {0x1ee324a0, 0x71125041, 0x7cc8f4d5, 0x286958b8}},
};

/* rm_vnode_point: one row per (name, vnode), one column per seed */
static const struct {
	const char *name;
	__u32 vnode;
	__u32 point[N_SEEDS];
} vnodes[] = {
	{"a", 0, {0xc865acc7, 0xed8d7791, 0x5b7c38cd, 0xd47f21e7}},
	{"a", 1, {0x35c966c4, 0x84077618, 0xc5237434, 0x7a2865e2}},
	{"node-01", 0, {0x339d8a16, 0x18ec4545, 0xc862a933, 0xe0a7cab4}},
	{"node-01", 999, {0x045d9be8, 0x530156ef, 0x244ccbc9, 0x3d536949}},
	{"backend.example-0123456789_abcd", 7, /* 31 chars, the maximum */
	 {0x81849751, 0x73654b13, 0xb35c1a12, 0x7f862c0e}},
	{"z", 0xffffffff, {0xab042d1c, 0x50589dad, 0x8f7a28d1, 0x1552e51b}},
};
/* clang-format on */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------- */
static void make_flow(struct rm_flow *f, __u8 family, const char *src,
		      const char *dst, __u16 sport, __u16 dport, __u8 proto)
{
	int af = family == RM_FAMILY_V4 ? AF_INET : AF_INET6;

	memset(f, 0, sizeof(*f));
	assert_int_equal(inet_pton(af, src, f->src), 1);
	assert_int_equal(inet_pton(af, dst, f->dst), 1);
	f->sport = htons(sport);
	f->dport = htons(dport);
	f->proto = proto;
	f->family = family;
}

static void random_flow(struct rm_flow *f, __u8 family)
{
	__u64 r = rng_next();

	memset(f, 0, sizeof(*f));
	f->family = family;
	for (int i = 0; i < (family == RM_FAMILY_V4 ? 1 : 4); i++) {
		__u64 x = rng_next();

		f->src[i] = (__be32)x;
		f->dst[i] = (__be32)(x >> 32);
	}
	f->sport = (__be16)r;
	f->dport = (__be16)(r >> 16);
	f->proto = (r >> 32) & 1 ? IPPROTO_TCP : IPPROTO_UDP;
}

static unsigned int wire_len(__u8 family)
{
	return family == RM_FAMILY_V4 ? RM_FLOW_V4_LEN : RM_FLOW_V6_LEN;
}

/* Address of byte i of the flow's wire message src|dst|sport|dport|proto;
 * every field is stored in network order, so its memory bytes are the wire
 * bytes. */
static __u8 *wire_byte(struct rm_flow *f, unsigned int i)
{
	unsigned int alen = f->family == RM_FAMILY_V4 ? 4 : 16;

	if (i < alen)
		return (__u8 *)f->src + i;
	i -= alen;
	if (i < alen)
		return (__u8 *)f->dst + i;
	i -= alen;
	if (i < 2)
		return (__u8 *)&f->sport + i;
	i -= 2;
	if (i < 2)
		return (__u8 *)&f->dport + i;
	return &f->proto;
}

/* SipHash-1-3 of an arbitrary byte string through rm_siphash13, loading
 * the little-endian words byte by byte (no host-order shortcut). */
static __u64 sip13_bytes(const struct rm_seed *seed, const __u8 *msg,
			 unsigned int len, int extra_word)
{
	__u64 w[16] = {0};
	int nwords = (int)(len + 7) / 8 + extra_word;

	for (unsigned int i = 0; i < len; i++)
		w[i / 8] |= (__u64)msg[i] << (8 * (i % 8));
	return rm_siphash13(seed, w, nwords, len);
}

/* ---- golden vectors --------------------------------------------------- */
static void test_siphash13_published_vectors(void **state)
{
	__u8 msg[64];

	(void)state;
	for (unsigned int i = 0; i < 64; i++)
		msg[i] = (__u8)i;
	for (unsigned int n = 0; n < 64; n++) {
		/* with and without a trailing all-padding word */
		assert_int_equal((__u32)sip13_bytes(&seeds[1].seed, msg, n, 0),
				 sip13_lo32[n]);
		assert_int_equal((__u32)sip13_bytes(&seeds[1].seed, msg, n, 1),
				 sip13_lo32[n]);
	}
}

/* The key hash (rm_key.h) is SipHash-1-3 of the key's bytes: the
 * published vectors, and the flow hash's word form for every length. */
static void test_key_hash_vectors(void **state)
{
	static struct rm_key_buf b;
	__u8 *k = (__u8 *)b.key;
	__u64 w[RM_KEY_BUF / 8];
	__u32 n, i;

	(void)state;
	for (n = 0; n < 64; n++) {
		memset(&b, 0, sizeof(b));
		for (i = 0; i < n; i++)
			k[i] = (__u8)i;
		assert_int_equal(rm_key_hash(&seeds[1].seed, b.key, n),
				 sip13_lo32[n]);
	}
	for (n = 0; n <= RM_KEY_MAX; n++) {
		memset(&b, 0, sizeof(b));
		for (i = 0; i < n; i++)
			k[i] = (__u8)rng_next();
		memcpy(w, b.key, sizeof(w));
		assert_int_equal(rm_key_hash(&seeds[1].seed, b.key, n),
				 (__u32)rm_siphash13(&seeds[1].seed, w, n / 8 + 1, n));
	}
}

static void test_siphash13_full_output(void **state)
{
	__u8 msg[64];

	(void)state;
	for (unsigned int i = 0; i < 64; i++)
		msg[i] = (__u8)i;
	for (size_t i = 0; i < ARRAY_SIZE(sip13_full); i++) {
		unsigned int n = sip13_full[i].len;

		assert_int_equal(sip13_bytes(&seeds[1].seed, msg, n, 0),
				 sip13_full[i].out);
		assert_int_equal(sip13_bytes(&seeds[1].seed, msg, n, 1),
				 sip13_full[i].out);
	}
}

static void test_seed_text_matches_key_bytes(void **state)
{
	(void)state;
	for (int s = 0; s < N_SEEDS; s++) {
		struct rm_seed got;

		assert_int_equal(rm_parse_seed(seeds[s].text, &got), 0);
		assert_int_equal(got.k0, seeds[s].seed.k0);
		assert_int_equal(got.k1, seeds[s].seed.k1);
	}
}

static void test_flow_hash_golden(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(flows); i++) {
		struct rm_flow f;

		make_flow(&f, flows[i].family, flows[i].src, flows[i].dst,
			  flows[i].sport, flows[i].dport, flows[i].proto);
		for (int s = 0; s < N_SEEDS; s++) {
			__u32 got = rm_flow_hash(&seeds[s].seed, &f);

			if (got != flows[i].hash[s])
				print_error("%s seed %d: 0x%08x != 0x%08x\n",
					    flows[i].label, s, got,
					    flows[i].hash[s]);
			assert_int_equal(got, flows[i].hash[s]);
		}
	}
}

static void test_vnode_point_golden(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(vnodes); i++)
		for (int s = 0; s < N_SEEDS; s++) {
			__u32 got = rm_vnode_point(
			    &seeds[s].seed, vnodes[i].name, vnodes[i].vnode);

			if (got != vnodes[i].point[s])
				print_error("%s/%u seed %d: 0x%08x != 0x%08x\n",
					    vnodes[i].name, vnodes[i].vnode, s,
					    got, vnodes[i].point[s]);
			assert_int_equal(got, vnodes[i].point[s]);
		}
}

/* The vnode point is SipHash-1-3 of name zero-padded to 32 bytes + LE
 * index, for random names and indexes too, not just the table above. */
static void test_vnode_point_is_documented_message(void **state)
{
	static const char alphabet[] =
	    "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

	(void)state;
	rng_state = 7;
	for (int i = 0; i < 5000; i++) {
		struct rm_seed seed = {rng_next(), rng_next()};
		char name[RM_NAME_MAX] = {0};
		__u8 msg[RM_NAME_MAX + 4] = {0};
		unsigned int len = 1 + rng_next() % (RM_NAME_MAX - 1);
		__u32 vnode = (__u32)rng_next();

		for (unsigned int c = 0; c < len; c++)
			name[c] = alphabet[rng_next() % (sizeof(alphabet) - 1)];
		memcpy(msg, name, len);
		for (int b = 0; b < 4; b++)
			msg[RM_NAME_MAX + b] = (__u8)(vnode >> (8 * b));
		assert_int_equal(
		    rm_vnode_point(&seed, name, vnode),
		    (__u32)sip13_bytes(&seed, msg, sizeof(msg), 0));
	}
}

/* rm_flow_hash hashes exactly the wire bytes: equal to SipHash-1-3 of the
 * byte string for random flows, and blind to what is not on the wire (the
 * unused address words of IPv4, the pad). */
static void test_flow_hash_is_wire_bytes(void **state)
{
	(void)state;
	rng_state = 11;
	for (int i = 0; i < 10000; i++) {
		__u8 family = i & 1 ? RM_FAMILY_V6 : RM_FAMILY_V4;
		struct rm_seed seed = {rng_next(), rng_next()};
		struct rm_flow f, g;
		__u8 msg[RM_FLOW_V6_LEN];
		__u32 h;

		random_flow(&f, family);
		for (unsigned int b = 0; b < wire_len(family); b++)
			msg[b] = *wire_byte(&f, b);
		h = rm_flow_hash(&seed, &f);
		assert_int_equal(
		    h, (__u32)sip13_bytes(&seed, msg, wire_len(family), 0));
		g = f;
		g.pad[0] = 0xa5;
		g.pad[1] = 0x5a;
		if (family == RM_FAMILY_V4) {
			g.src[1] = g.src[3] = 0xdeadbeef;
			g.dst[2] = 0xfeedface;
		}
		assert_int_equal(rm_flow_hash(&seed, &g), h);
	}
}

/* ---- seed sensitivity ------------------------------------------------- */
#define SENS_FLOWS 10000

static void test_seed_sensitivity(void **state)
{
	static struct rm_flow fl[SENS_FLOWS];
	static __u32 base[SENS_FLOWS];
	const struct rm_seed seed = seeds[3].seed;
	unsigned int worst = SENS_FLOWS;

	(void)state;
	rng_state = 0x5eed;
	for (int i = 0; i < SENS_FLOWS; i++) {
		random_flow(&fl[i], i % 4 == 3 ? RM_FAMILY_V6 : RM_FAMILY_V4);
		base[i] = rm_flow_hash(&seed, &fl[i]);
	}
	for (int bit = 0; bit < 128; bit++) {
		struct rm_seed s = seed;
		unsigned int changed = 0;

		if (bit < 64)
			s.k0 ^= 1ULL << bit;
		else
			s.k1 ^= 1ULL << (bit - 64);
		for (int i = 0; i < SENS_FLOWS; i++)
			changed += rm_flow_hash(&s, &fl[i]) != base[i];
		if (changed < worst)
			worst = changed;
		if (changed * 100 < SENS_FLOWS * 99)
			print_error("key bit %d changed only %u of %d flows\n",
				    bit, changed, SENS_FLOWS);
		assert_true(changed * 100 >= SENS_FLOWS * 99);
	}
	print_message("seed sensitivity: worst key bit changes %u/%d flows\n",
		      worst, SENS_FLOWS);
}

/* ---- avalanche -------------------------------------------------------- */
#define AVAL_SAMPLES 10000

static void avalanche(__u8 family)
{
	static unsigned int flips[RM_FLOW_V6_LEN * 8][32];
	unsigned int nbits = wire_len(family) * 8;
	double lo = 1, hi = 0;

	memset(flips, 0, sizeof(flips));
	for (int i = 0; i < AVAL_SAMPLES; i++) {
		struct rm_seed seed = {rng_next(), rng_next()};
		struct rm_flow f;
		__u32 h;

		random_flow(&f, family);
		f.proto = (__u8)rng_next(); /* all 8 proto bits vary too */
		h = rm_flow_hash(&seed, &f);
		for (unsigned int b = 0; b < nbits; b++) {
			__u8 *p = wire_byte(&f, b / 8);
			__u32 d;

			*p ^= (__u8)(1u << (b % 8));
			d = h ^ rm_flow_hash(&seed, &f);
			*p ^= (__u8)(1u << (b % 8));
			for (int o = 0; o < 32; o++)
				flips[b][o] += (d >> o) & 1;
		}
	}
	for (unsigned int b = 0; b < nbits; b++)
		for (int o = 0; o < 32; o++) {
			double p = (double)flips[b][o] / AVAL_SAMPLES;

			if (p < lo)
				lo = p;
			if (p > hi)
				hi = p;
			if (p < 0.45 || p > 0.55)
				print_error(
				    "v%u input bit %u -> output bit %d: "
				    "flip probability %.4f\n",
				    family, b, o, p);
			assert_true(p >= 0.45 && p <= 0.55);
		}
	print_message("avalanche v%u: %u input bits x 32 output bits, flip "
		      "probability in [%.4f, %.4f]\n",
		      family, nbits, lo, hi);
}

static void test_avalanche_v4(void **state)
{
	(void)state;
	rng_state = 0xa4;
	avalanche(RM_FAMILY_V4);
}

static void test_avalanche_v6(void **state)
{
	(void)state;
	rng_state = 0xa6;
	avalanche(RM_FAMILY_V6);
}

/* Output bits are balanced: each of the 32 bits is set about half the
 * time over random flows (a stuck or biased bit would skew the ring). */
static void test_output_balance(void **state)
{
	unsigned int ones[32] = {0};
	const int n = 200000;

	(void)state;
	rng_state = 0xba1;
	for (int i = 0; i < n; i++) {
		struct rm_flow f;
		__u32 h;

		random_flow(&f, i & 1 ? RM_FAMILY_V6 : RM_FAMILY_V4);
		h = rm_flow_hash(&seeds[0].seed, &f);
		for (int o = 0; o < 32; o++)
			ones[o] += (h >> o) & 1;
	}
	for (int o = 0; o < 32; o++) {
		double p = (double)ones[o] / n;

		assert_true(p > 0.49 && p < 0.51);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_siphash13_published_vectors),
	    cmocka_unit_test(test_siphash13_full_output),
	    cmocka_unit_test(test_key_hash_vectors),
	    cmocka_unit_test(test_seed_text_matches_key_bytes),
	    cmocka_unit_test(test_flow_hash_golden),
	    cmocka_unit_test(test_vnode_point_golden),
	    cmocka_unit_test(test_vnode_point_is_documented_message),
	    cmocka_unit_test(test_flow_hash_is_wire_bytes),
	    cmocka_unit_test(test_seed_sensitivity),
	    cmocka_unit_test(test_avalanche_v4),
	    cmocka_unit_test(test_avalanche_v6),
	    cmocka_unit_test(test_output_balance),
	};

	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
