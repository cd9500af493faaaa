/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC services (--key quic): each packet by its Destination Connection
 * ID (include/ringmaster/rm_quic.h): to the node holding the QUIC-LB
 * server ID the DCID carries, else to the ring by the DCID's hash. Like
 * every keyed service, no connection-table entry: the CID is the state.
 */
#ifndef RM_BPF_QUIC_H
#define RM_BPF_QUIC_H

/* BPF global functions are defined here (see key.h) */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/quic.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include <ringmaster/rm_quic.h>

#include "counters.h"
#include "maps.h"

#ifdef RM_QUIC_CRYPT
#include "quic_crypt.h"
#else
/* A director without the kernel's BPF crypto (the plaintext object):
 * ringctl refuses encrypted services on it, and a CID of one, should
 * there be any, routes nowhere by its server ID. */
static __always_inline int rm_quic_decode_enc(__u32 svc_id,
					      const struct rm_quic_spec *q,
					      const struct rm_quic_cid *c,
					      struct rm_quic_sid_key *k)
{
	int res = rm_quic_check(q, c);

	(void)svc_id;
	(void)k;
	return res != RM_QUIC_OK ? res : RM_QUIC_NO_KEY;
}
#endif

/* rm_quic_route()'s answers */
#define RM_QUIC_TO_NODE 1 /* *out: the node of the DCID's server ID */
#define RM_QUIC_TO_HASH 2 /* *out: the DCID's ring position */
#define RM_QUIC_TO_FLOW 3 /* no DCID: the flow hash */

/* The node of server ID k, if a node of k's service that takes packets
 * (ACTIVE, or DRAINING: its connections stay) still holds it. */
static __always_inline int rm_quic_sid_node(const struct rm_quic_sid_key *k,
					    __u32 *node)
{
	const struct rm_quic_sid_node *v;
	const struct rm_node *n;
	__u32 id;

	v = bpf_map_lookup_elem(&rm_quic_sids, k);
	if (!v)
		return 0;
	id = v->node;
	n = bpf_map_lookup_elem(&rm_nodes, &id);
	if (!n || n->gen != v->gen || n->svc_id != k->svc_id ||
	    (n->state != RM_NODE_ACTIVE && n->state != RM_NODE_DRAINING))
		return 0;
	*node = id;
	return 1;
}

/* Route the QUIC packet whose UDP payload is at off_len >> 16 (off_len &
 * 0xffff bytes) for service svc_id: RM_QUIC_TO_* with *out, counted by
 * reason. A global function: verified once, on its own (parse.h). */
__noinline int rm_quic_route(struct xdp_md *ctx, __u32 off_len, __u32 svc_id,
			     const struct rm_seed *seed, __u32 *out)
{
	__u32 off = off_len >> 16, plen = off_len & 0xffff, n;
	struct rm_quic_sid_key k = {};
	const struct rm_svc_meta *m;
	struct rm_quic_cid c = {};
	__u8 win[RM_QUIC_WINDOW];
	int res = RM_QUIC_TRUNCATED;

	if (!out || !seed)
		return RM_QUIC_TO_FLOW;
	m = bpf_map_lookup_elem(&rm_svc_meta, &svc_id);
	if (!m)
		return RM_QUIC_TO_FLOW;
	n = plen < RM_QUIC_WINDOW ? plen : RM_QUIC_WINDOW;
	/* the verifier needs the size in [1, RM_QUIC_WINDOW] as it sees it */
	n &= 2 * RM_QUIC_WINDOW - 1;
	if (n >= 1 && n <= RM_QUIC_WINDOW &&
	    !bpf_xdp_load_bytes(ctx, off, win, n))
		res = rm_quic_parse(win, n, &m->keyspec.quic, &c);
	if (res == RM_QUIC_OK) {
		res = m->keyspec.quic.enc
			  ? rm_quic_decode_enc(svc_id, &m->keyspec.quic, &c, &k)
			  : rm_quic_decode(&m->keyspec.quic, &c, &k);
		k.svc_id = svc_id;
		if (res == RM_QUIC_OK && !rm_quic_sid_node(&k, out))
			res = RM_QUIC_UNKNOWN;
	}
	rm_count(rm_quic_counter(&c, res));
	if (res == RM_QUIC_OK)
		return RM_QUIC_TO_NODE;
	if (res == RM_QUIC_TRUNCATED || res == RM_QUIC_CID_TOO_LONG)
		return RM_QUIC_TO_FLOW;
	*out = rm_quic_cid_hash(seed, &c);
	return RM_QUIC_TO_HASH;
}

#endif /* RM_BPF_QUIC_H */
