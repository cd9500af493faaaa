/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Service match: (VIP, proto, port) exact first, then port 0 as the
 * wildcard for the VIP and protocol. A non-first fragment has no port and
 * matches only the RM_SVCK_FRAG entry the control plane installs for
 * 3-tuple services.
 *
 * Each key is looked up in rm_services only if its bit is set in
 * rm_vip_filter (rm_vip_filter.h), which holds the bit of every key: a
 * clear bit means no such key, and most packets that are no service's
 * leave after two inlined bit tests instead of two hash lookups.
 */
#ifndef RM_BPF_SERVICE_H
#define RM_BPF_SERVICE_H

#include <ringmaster/rm_vip_filter.h>

#include "maps.h"
#include "parse.h"

static __always_inline struct rm_svc *rm_match_service(const struct rm_pkt *pkt)
{
	const struct rm_flow *f = &pkt->flow;
	struct rm_svc_key key = {
	    .vip = {f->dst[0], f->dst[1], f->dst[2], f->dst[3]},
	    .proto = f->proto,
	    .flags = f->family == RM_FAMILY_V6 ? RM_SVCK_V6 : 0,
	};
	const struct rm_vip_filter *filter;
	struct rm_svc *svc;
	__u32 zero = 0;
	__u64 base;

	filter = bpf_map_lookup_elem(&rm_vip_filter, &zero);
	if (!filter)
		return NULL;
	if (pkt->frag == RM_FRAG_LATER) {
		key.flags |= RM_SVCK_FRAG;
		base = rm_vip_filter_base(key.vip, key.proto, key.flags);
		if (!rm_vip_filter_test(filter, rm_vip_filter_bit(base, 0)))
			return NULL;
		return bpf_map_lookup_elem(&rm_services, &key);
	}
	base = rm_vip_filter_base(key.vip, key.proto, key.flags);
	key.port = f->dport;
	if (rm_vip_filter_test(filter, rm_vip_filter_bit(base, key.port))) {
		svc = bpf_map_lookup_elem(&rm_services, &key);
		if (svc)
			return svc;
	}
	if (!rm_vip_filter_test(filter, rm_vip_filter_bit(base, 0)))
		return NULL;
	key.port = 0;
	return bpf_map_lookup_elem(&rm_services, &key);
}

#endif /* RM_BPF_SERVICE_H */
