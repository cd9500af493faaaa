/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The keyed hash, compiled unchanged into the BPF program and userspace.
 *
 * Why SipHash-1-3: the ring is only fair if nobody can aim flows at one
 * node, so the hash must be a keyed PRF, not a fast mixer with a public
 * seed (jhash, murmur, xxhash all fall to offline collision search).
 * SipHash-1-3 is the cheapest well-studied keyed PRF: 64-bit ARX rounds
 * map 1:1 onto BPF and x86 instructions, an IPv4 5-tuple is two words
 * (two compression rounds + three finalisation rounds, ~70 ALU ops, no
 * memory), and its quality passes SMHasher. HalfSipHash would halve the
 * word size and double the rounds on 64-bit machines for nothing.
 *
 * Input is a sequence of little-endian 64-bit words built from the raw
 * network-order bytes (rm_flow_words); the BPF target is bpfel, so both
 * sides see identical words. Output: the low 32 bits of SipHash-1-3.
 */
#ifndef RM_HASH_H
#define RM_HASH_H

#include "rm_common.h"

#define RM_ROTL64(x, b) (__u64)(((x) << (b)) | ((x) >> (64 - (b))))

#define RM_SIPROUND(v0, v1, v2, v3)                                         \
	do {                                                                \
		v0 += v1;                                                   \
		v1 = RM_ROTL64(v1, 13);                                     \
		v1 ^= v0;                                                   \
		v0 = RM_ROTL64(v0, 32);                                     \
		v2 += v3;                                                   \
		v3 = RM_ROTL64(v3, 16);                                     \
		v3 ^= v2;                                                   \
		v0 += v3;                                                   \
		v3 = RM_ROTL64(v3, 21);                                     \
		v3 ^= v0;                                                   \
		v2 += v1;                                                   \
		v1 = RM_ROTL64(v1, 17);                                     \
		v1 ^= v2;                                                   \
		v2 = RM_ROTL64(v2, 32);                                     \
	} while (0)

/* SipHash state: init, one compression round per 8-byte word, and the
 * finalisation with the last block (tail bytes | len << 56). Shared by
 * the flow hash below and the key hash (rm_key.h). */
struct rm_sip {
	__u64 v0, v1, v2, v3;
};

RM_INLINE void rm_sip_init(struct rm_sip *s, const struct rm_seed *seed)
{
	s->v0 = 0x736f6d6570736575ULL ^ seed->k0;
	s->v1 = 0x646f72616e646f6dULL ^ seed->k1;
	s->v2 = 0x6c7967656e657261ULL ^ seed->k0;
	s->v3 = 0x7465646279746573ULL ^ seed->k1;
}

RM_INLINE void rm_sip_word(struct rm_sip *s, __u64 m)
{
	s->v3 ^= m;
	RM_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= m;
}

RM_INLINE __u64 rm_sip_final(struct rm_sip *s, __u64 last)
{
	rm_sip_word(s, last);
	s->v2 ^= 0xff;
	RM_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RM_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RM_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* SipHash-1-3 over nwords whole words; len is the message length in bytes
 * that goes into the last block (words past len must be zero, which makes
 * this exactly SipHash-1-3 of the len-byte message). nwords is a
 * compile-time constant at every call site so the loop unrolls. */
RM_INLINE __u64 rm_siphash13(const struct rm_seed *seed, const __u64 *w,
			     int nwords, __u64 len)
{
	__u64 last = len << 56;
	struct rm_sip s;
	int i;

	rm_sip_init(&s, seed);
	/* Whole 8-byte words are compressed; a trailing partial word is
	 * folded into the final block together with the length byte. */
	for (i = 0; i < nwords; i++) {
		__u64 m = w[i];

		if ((__u64)(i + 1) * 8 > len) {
			last |= m;
			break;
		}
		rm_sip_word(&s, m);
	}
	return rm_sip_final(&s, last);
}

#define RM_FLOW_V4_LEN 13 /* src4 dst4 sport2 dport2 proto1 */
#define RM_FLOW_V6_LEN 37 /* src16 dst16 sport2 dport2 proto1 */

/* Flow hash. The message is the wire bytes src|dst|sport|dport|proto, so
 * anyone re-implementing it needs no struct layout, only the bytes. */
RM_INLINE __u32 rm_flow_hash(const struct rm_seed *seed,
			     const struct rm_flow *f)
{
	__u64 w[5];

	if (f->family == RM_FAMILY_V4) {
		w[0] = (__u64)f->src[0] | ((__u64)f->dst[0] << 32);
		w[1] = (__u64)f->sport | ((__u64)f->dport << 16) |
		       ((__u64)f->proto << 32);
		return (__u32)rm_siphash13(seed, w, 2, RM_FLOW_V4_LEN);
	}
	w[0] = (__u64)f->src[0] | ((__u64)f->src[1] << 32);
	w[1] = (__u64)f->src[2] | ((__u64)f->src[3] << 32);
	w[2] = (__u64)f->dst[0] | ((__u64)f->dst[1] << 32);
	w[3] = (__u64)f->dst[2] | ((__u64)f->dst[3] << 32);
	w[4] = (__u64)f->sport | ((__u64)f->dport << 16) |
	       ((__u64)f->proto << 32);
	return (__u32)rm_siphash13(seed, w, 5, RM_FLOW_V6_LEN);
}

#endif /* RM_HASH_H */
