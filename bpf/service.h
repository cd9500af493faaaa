/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Service match: (VIP, proto, port) exact first, then port 0 as the
 * wildcard for the VIP and protocol. A non-first fragment has no port and
 * matches only the RM_SVCK_FRAG entry the control plane installs for each
 * (VIP, proto) with a service; its flags say 3-tuple (route) or not
 * (the caller drops it).
 *
 * Each key goes through rm_vip_slots first (rm_vip_filter.h): a NONE slot
 * means no such key, so most packets that are no service's leave after
 * two inlined slot reads; a slot naming one service whose rm_svc_meta
 * holds exactly the key answers without rm_services; anything else looks
 * the key up in rm_services.
 */
#ifndef RM_BPF_SERVICE_H
#define RM_BPF_SERVICE_H

#include <ringmaster/rm_vip_filter.h>

#include "maps.h"
#include "parse.h"

/* Word i (0..4) of a key, as one load. */
static __always_inline __u32 rm_svc_key_word(const struct rm_svc_key *k,
					     int i)
{
	__u32 w;

	__builtin_memcpy(&w, (const __u8 *)k + 4 * i, sizeof(w));
	return w;
}

/* Key k, whose slot holds v: 1 and *out its service, or 0 for none. */
static __always_inline int rm_svc_by_slot(__u16 v, const struct rm_svc_key *k,
					  struct rm_svc *out)
{
	const struct rm_svc_meta *m;
	const struct rm_svc *svc;
	__u32 id = (__u32)v - 1;

	if (v == RM_VIP_SLOT_NONE)
		return 0;
	if (v != RM_VIP_SLOT_MANY) {
		m = bpf_map_lookup_elem(&rm_svc_meta, &id);
		if (m && m->in_use &&
		    !((rm_svc_key_word(&m->key, 0) ^ rm_svc_key_word(k, 0)) |
		      (rm_svc_key_word(&m->key, 1) ^ rm_svc_key_word(k, 1)) |
		      (rm_svc_key_word(&m->key, 2) ^ rm_svc_key_word(k, 2)) |
		      (rm_svc_key_word(&m->key, 3) ^ rm_svc_key_word(k, 3)) |
		      (rm_svc_key_word(&m->key, 4) ^ rm_svc_key_word(k, 4)))) {
			out->id = id;
			out->flags = m->flags;
			return 1;
		}
	}
	svc = bpf_map_lookup_elem(&rm_services, k);
	if (!svc)
		return 0;
	*out = *svc;
	return 1;
}

/* 1 and *out the packet's service, or 0 when it is no service's. */
static __always_inline int rm_match_service(const struct rm_pkt *pkt,
					    struct rm_svc *out)
{
	const struct rm_flow *f = &pkt->flow;
	struct rm_svc_key key = {
	    .vip = {f->dst[0], f->dst[1], f->dst[2], f->dst[3]},
	    .proto = f->proto,
	    .flags = f->family == RM_FAMILY_V6 ? RM_SVCK_V6 : 0,
	};
	const struct rm_vip_slots *t;
	__u32 zero = 0;
	__u64 base;

	t = bpf_map_lookup_elem(&rm_vip_slots, &zero);
	if (!t)
		return 0;
	if (pkt->frag == RM_FRAG_LATER) {
		/* no meta holds a fragment key: the slot only filters */
		const struct rm_svc *svc;

		key.flags |= RM_SVCK_FRAG;
		base = rm_vip_slot_base(key.vip, key.proto, key.flags);
		if (rm_vip_slot_get(t, rm_vip_slot_of(base, 0)) ==
		    RM_VIP_SLOT_NONE)
			return 0;
		svc = bpf_map_lookup_elem(&rm_services, &key);
		if (!svc)
			return 0;
		*out = *svc;
		return 1;
	}
	base = rm_vip_slot_base(key.vip, key.proto, key.flags);
	key.port = f->dport;
	if (rm_svc_by_slot(rm_vip_slot_get(t, rm_vip_slot_of(base, key.port)),
			   &key, out))
		return 1;
	key.port = 0;
	return rm_svc_by_slot(rm_vip_slot_get(t, rm_vip_slot_of(base, 0)), &key,
			      out);
}

#endif /* RM_BPF_SERVICE_H */
