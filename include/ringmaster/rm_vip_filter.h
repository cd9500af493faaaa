/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_vip_filter: a bitmap in front of rm_services, compiled unchanged into
 * the BPF program and userspace so both pick the same bit for a key.
 *
 * rm_services is a HASH: every lookup hashes the 20-byte key and walks a
 * bucket, ~25-30 ns under test_run, and a packet that is no service's pays
 * it twice (exact port, then the port-0 wildcard). The filter is one
 * ARRAY element, whose lookup the verifier inlines: the data plane tests
 * the bit of a key before looking the key up, and skips the lookup when
 * the bit is clear. Host traffic thus costs two bit tests, not two hash
 * lookups; a service's packets pay one extra bit test.
 *
 * The one rule: every key in rm_services has its bit set, at every moment
 * a packet can look (the control plane sets bits before it inserts a key
 * and clears them only after the key is gone, user/lib/vip_filter.c). A
 * bit set for no key (a deleted key not yet cleared, or two keys sharing
 * a bit) only costs the lookup it would have cost anyway.
 *
 * The hash need not be keyed: an attacker aiming at set bits gets the
 * hash lookups every packet paid before the filter existed, no more.
 */
#ifndef RM_VIP_FILTER_H
#define RM_VIP_FILTER_H

#include "rm_common.h"

#ifdef __BPF__
#define RM_VF_INLINE static __always_inline
#else
#define RM_VF_INLINE static inline __attribute__((always_inline))
#endif

#define RM_VIP_FILTER_BITS_LOG2 16
#define RM_VIP_FILTER_BITS (1u << RM_VIP_FILTER_BITS_LOG2)
#define RM_VIP_FILTER_WORDS (RM_VIP_FILTER_BITS / 64)

/* rm_vip_filter: ARRAY [1] of this; bit b is w[b / 64] >> (b % 64) & 1 */
struct rm_vip_filter {
	__u64 w[RM_VIP_FILTER_WORDS];
};

#define RM_VF_K1 0x9e3779b97f4a7c15ULL
#define RM_VF_K2 0xc2b2ae3d27d4eb4fULL
#define RM_VF_K3 0xff51afd7ed558ccdULL

/* The part of a key's hash its port does not change, so a packet hashes
 * its VIP once for both the exact and the wildcard bit. vip as in
 * rm_svc_key (network order), flags RM_SVCK_*. */
RM_VF_INLINE __u64 rm_vip_filter_base(const __be32 vip[4], __u8 proto,
				      __u8 flags)
{
	__u64 h;

	h = ((__u64)vip[0] | (__u64)vip[1] << 32) * RM_VF_K1;
	h ^= (__u64)vip[2] | (__u64)vip[3] << 32;
	h *= RM_VF_K2;
	h ^= h >> 29;
	return h ^ ((__u64)proto << 16 | (__u64)flags << 24);
}

/* Bit number (0 .. RM_VIP_FILTER_BITS - 1) of base with port (be). */
RM_VF_INLINE __u32 rm_vip_filter_bit(__u64 base, __be16 port)
{
	__u64 h = (base ^ port) * RM_VF_K3;

	return (__u32)(h >> (64 - RM_VIP_FILTER_BITS_LOG2));
}

/* The bit of a whole rm_services key. */
RM_VF_INLINE __u32 rm_vip_filter_key_bit(const struct rm_svc_key *k)
{
	return rm_vip_filter_bit(rm_vip_filter_base(k->vip, k->proto, k->flags),
				 k->port);
}

RM_VF_INLINE int rm_vip_filter_test(const struct rm_vip_filter *f, __u32 bit)
{
	return (f->w[(bit / 64) & (RM_VIP_FILTER_WORDS - 1)] >> (bit % 64)) & 1;
}

#endif /* RM_VIP_FILTER_H */
