/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Service match: (VIP, proto, port) exact first, then port 0 as the
 * wildcard for the VIP and protocol. A non-first fragment has no port and
 * matches only the RM_SVCK_FRAG entry the control plane installs for
 * 3-tuple services.
 */
#ifndef RM_BPF_SERVICE_H
#define RM_BPF_SERVICE_H

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
	struct rm_svc *svc;

	if (pkt->frag == RM_FRAG_LATER) {
		key.flags |= RM_SVCK_FRAG;
		return bpf_map_lookup_elem(&rm_services, &key);
	}
	key.port = f->dport;
	svc = bpf_map_lookup_elem(&rm_services, &key);
	if (svc)
		return svc;
	key.port = 0;
	return bpf_map_lookup_elem(&rm_services, &key);
}

#endif /* RM_BPF_SERVICE_H */
