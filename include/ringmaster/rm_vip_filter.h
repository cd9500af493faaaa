/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_vip_slots: a slot table in front of rm_services, compiled unchanged
 * into the BPF program and userspace so both pick the same slot for a key.
 *
 * rm_services is a HASH: every lookup hashes the 20-byte key and walks a
 * bucket, ~25-30 ns under test_run. The slot table is one ARRAY element,
 * whose lookup the verifier inlines, of RM_VIP_SLOTS __u16 entries; a key
 * hashes to one of them, which holds
 *   RM_VIP_SLOT_NONE (0)      no key of rm_services hashes here
 *   RM_VIP_SLOT_MANY (0xffff) two or more keys may hash here
 *   id + 1                    the one key hashing here is service id's
 * A packet whose slot is NONE is no service's, without a lookup (host
 * traffic: two slot reads). For id + 1 the data plane reads
 * rm_svc_meta[id], also an inlined ARRAY, and takes {id, meta.flags} when
 * the meta is in use and its key is the packet's, byte for byte; in every
 * other case (MANY, a meta of another key, a fragment key, which no meta
 * holds) it looks the key up in rm_services as before.
 *
 * The rules (user/lib/vip_filter.h; kept by services_sync() in
 * user/lib/state_apply.c and, for pins of older builds, by
 * vip_slots_grow() in user/lib/state.c):
 *  - every key in rm_services has a non-NONE slot at every moment a
 *    packet can look (slots are set before keys are inserted, and cleared
 *    only after they are gone);
 *  - a slot holds id + 1 only while meta[id] says what rm_services says
 *    for meta[id].key: before a meta in use is rewritten, and before its
 *    keys are deleted, the slots naming its id turn MANY, and they name
 *    it again only once rm_services and the meta agree.
 * A stale, torn or colliding slot thus costs at most the lookup every
 * packet paid before the table existed, never a wrong match.
 *
 * The hash need not be keyed: an attacker aiming at used slots gets the
 * hash lookups every packet paid before the table existed, no more.
 */
#ifndef RM_VIP_FILTER_H
#define RM_VIP_FILTER_H

#include "rm_common.h"

#ifdef __BPF__
#define RM_VF_INLINE static __always_inline
#else
#define RM_VF_INLINE static inline __attribute__((always_inline))
#endif

#define RM_VIP_SLOTS_LOG2 16
#define RM_VIP_SLOTS (1u << RM_VIP_SLOTS_LOG2)
#define RM_VIP_SLOT_NONE 0
#define RM_VIP_SLOT_MANY 0xffff

_Static_assert(RM_MAX_SERVICES < RM_VIP_SLOT_MANY - 1,
	       "a service id + 1 must fit a slot below RM_VIP_SLOT_MANY");

/* rm_vip_slots: ARRAY [1] of this */
struct rm_vip_slots {
	__u16 s[RM_VIP_SLOTS];
};

#define RM_VF_K1 0x9e3779b97f4a7c15ULL
#define RM_VF_K2 0xc2b2ae3d27d4eb4fULL
#define RM_VF_K3 0xff51afd7ed558ccdULL

/* The part of a key's hash its port does not change, so a packet hashes
 * its VIP once for both the exact and the wildcard slot. vip as in
 * rm_svc_key (network order), flags RM_SVCK_*. */
RM_VF_INLINE __u64 rm_vip_slot_base(const __be32 vip[4], __u8 proto,
				    __u8 flags)
{
	__u64 h;

	h = ((__u64)vip[0] | (__u64)vip[1] << 32) * RM_VF_K1;
	h ^= (__u64)vip[2] | (__u64)vip[3] << 32;
	h *= RM_VF_K2;
	h ^= h >> 29;
	return h ^ ((__u64)proto << 16 | (__u64)flags << 24);
}

/* Slot number (0 .. RM_VIP_SLOTS - 1) of base with port (be). */
RM_VF_INLINE __u32 rm_vip_slot_of(__u64 base, __be16 port)
{
	__u64 h = (base ^ port) * RM_VF_K3;

	return (__u32)(h >> (64 - RM_VIP_SLOTS_LOG2));
}

/* The slot of a whole rm_services key. */
RM_VF_INLINE __u32 rm_vip_key_slot(const struct rm_svc_key *k)
{
	return rm_vip_slot_of(rm_vip_slot_base(k->vip, k->proto, k->flags),
			      k->port);
}

RM_VF_INLINE __u16 rm_vip_slot_get(const struct rm_vip_slots *t, __u32 slot)
{
	return t->s[slot & (RM_VIP_SLOTS - 1)];
}

#endif /* RM_VIP_FILTER_H */
