// SPDX-License-Identifier: GPL-2.0
/* QUIC services in userspace: a CID's node, and routable CIDs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include "quic.h"
#include "ring.h"
#include "state.h"

const char *rm_quic_res_name(int res)
{
	static const char *const n[RM_QUIC_RES_NR] = {
	    [RM_QUIC_OK] = "server-id",
	    [RM_QUIC_CONFIG] = "config",
	    [RM_QUIC_LENGTH] = "cid-length",
	    [RM_QUIC_UNKNOWN] = "unknown-server",
	    [RM_QUIC_TRUNCATED] = "truncated",
	    [RM_QUIC_CID_TOO_LONG] = "cid-too-long",
	    [RM_QUIC_NO_KEY] = "no-key",
	    [RM_QUIC_DECRYPT] = "decrypt-failed",
	};

	return res >= 0 && res < RM_QUIC_RES_NR ? n[res] : "?";
}

/* bpf/quic.h's rm_quic_sid_node() on the live map and s's records. */
static bool sid_node(struct rm_state *st, const struct rm_snap *s,
		     const struct rm_quic_sid_key *k, __u32 *node)
{
	struct rm_quic_sid_node v;
	const struct rm_node *n;

	if (bpf_map_lookup_elem(st->fd[RM_M_QUIC_SIDS], k, &v) ||
	    v.node >= RM_MAX_NODES)
		return false;
	n = &s->node[v.node];
	if (n->gen != v.gen || n->svc_id != k->svc_id ||
	    (n->state != RM_NODE_ACTIVE && n->state != RM_NODE_DRAINING))
		return false;
	*node = v.node;
	return true;
}

int rm_quic_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		  const __u8 *cid, __u32 len, bool initial,
		  struct rm_quic_route *out)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	struct rm_slot *slots = NULL;
	struct rm_quic_cid c = {0};
	__u32 nslots;
	int err;

	memset(out, 0, sizeof(*out));
	if (svc >= RM_MAX_SERVICES || !m->in_use ||
	    m->keyspec.kind != RM_KEY_QUIC)
		return -EINVAL;
	c.pkt = initial ? RM_QUIC_PKT_INITIAL : RM_QUIC_PKT_LONG;
	if (len > RM_QUIC_CID_MAX) {
		out->res = RM_QUIC_CID_TOO_LONG;
	} else {
		memcpy(c.w, cid, len);
		c.len = len;
		out->res = rm_quic_decode(&m->keyspec.quic, &c, &out->sid);
		out->sid.svc_id = svc;
		if (out->res == RM_QUIC_OK &&
		    !sid_node(st, s, &out->sid, &out->node))
			out->res = RM_QUIC_UNKNOWN;
	}
	out->counter = rm_quic_counter(&c, out->res);
	if (out->res == RM_QUIC_OK)
		return 0;
	if (out->res == RM_QUIC_CID_TOO_LONG)
		return -EINVAL; /* the flow decides: no CID to look up */
	out->hash = rm_quic_cid_hash(&s->cfg.seed, &c);
	err = rm_state_ring_slots(st, svc, &slots, &nslots);
	if (err)
		return err;
	err = rm_ring_lookup(slots, nslots, out->hash, &out->node) ||
		      out->node >= RM_MAX_NODES
		  ? -ENOENT
		  : 0;
	free(slots);
	return err;
}

int rm_quic_cids(const struct rm_snap *s, __u32 node, __u32 count, __u8 *out,
		 __u32 *len)
{
	const struct rm_node *n = &s->node[node];
	const struct rm_quic_spec *q;
	__u8 rnd[RM_QUIC_CID_MAX];

	if (node >= RM_MAX_NODES || n->state == RM_NODE_FREE ||
	    n->svc_id >= RM_MAX_SERVICES ||
	    s->svc[n->svc_id].keyspec.kind != RM_KEY_QUIC ||
	    !n->quic_sid_len)
		return -EINVAL;
	q = &s->svc[n->svc_id].keyspec.quic;
	for (__u32 i = 0; i < count; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -errno;
		*len = rm_quic_cid_make(q, n->quic_sid, rnd,
					out + (size_t)i * RM_QUIC_CID_MAX);
	}
	return 0;
}
