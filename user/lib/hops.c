// SPDX-License-Identifier: GPL-2.0
/* Second chance in userspace (hops.h): the data plane's hop selection,
 * compiled from the same include/ringmaster/rm_hops.h. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "hops.h"
#include "ring.h"

static int gen_owner(const struct rm_gens *g, __u32 gen, __u32 h, __u32 *node,
		     __u64 *ns)
{
	if (gen >= RM_RING_GENS || !g->slots[gen])
		return -1;
	*ns = g->retired_ns[gen];
	return rm_ring_lookup(g->slots[gen], g->nslots[gen], h, node) ? -1 : 0;
}

static const struct rm_node *gen_node(const struct rm_gens *g, __u32 id)
{
	return id < RM_MAX_NODES ? &g->snap->node[id] : NULL;
}

#define RM_HOPS_T const struct rm_gens *
#define RM_HOPS_GEN(t, gen, h, node, ns) gen_owner(t, gen, h, node, ns)
#define RM_HOPS_NODE(t, id) gen_node(t, id)
#include <ringmaster/rm_hops.h>

static int gens_read(struct rm_state *st, const struct rm_snap *s,
		     __u32 svc, struct rm_gens *g, bool heads)
{
	memset(g, 0, sizeof(*g));
	g->svc = svc;
	g->snap = s;
	for (__u32 i = 0; i < RM_RING_GENS; i++) {
		struct rm_slot hdr;
		int err = heads ? rm_state_gen_head(st, svc, i, &hdr)
				: rm_state_gen_map(st, svc, i, &g->slots[i],
						   &g->nslots[i]);

		if (err == -ENOENT)
			continue;
		if (err) {
			rm_gens_free(g);
			return err;
		}
		if (!heads)
			hdr = g->slots[i][0];
		g->held[i] = true;
		g->entries[i] = hdr.a;
		g->retired_ns[i] = RM_RING_RETIRED_NS(&hdr);
	}
	return 0;
}

int rm_gens_read(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		 struct rm_gens *g)
{
	return gens_read(st, s, svc, g, false);
}

int rm_gens_heads(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		  struct rm_gens *g)
{
	return gens_read(st, s, svc, g, true);
}

void rm_gens_free(struct rm_gens *g)
{
	for (__u32 i = 0; i < RM_RING_GENS; i++) {
		rm_state_ring_unmap(g->slots[i], g->nslots[i]);
		g->slots[i] = NULL;
	}
}

__u32 rm_gens_live(const struct rm_gens *g, __u64 now, __u32 window_s)
{
	__u32 n = 0;

	for (__u32 i = 0; i < RM_RING_GENS; i++)
		n += g->held[i] &&
		     rm_hop_gen_live(g->retired_ns[i], now,
				     (__u64)window_s * 1000000000ULL);
	return n;
}

__u32 rm_hops_of(const struct rm_gens *g, __u32 h, __u32 owner, __u64 now,
		 struct rm_hops *out)
{
	const struct rm_node *cur = gen_node(g, owner);

	memset(out, 0, sizeof(*out));
	if (!cur)
		return 0;
	return rm_hops_select(g, g->svc, h, owner, cur, now,
			      (__u64)g->snap->cfg.handover_window_s *
				  1000000000ULL,
			      out);
}

bool rm_hops_wanted(const struct rm_svc_meta *m, const struct rm_config *cfg)
{
	return cfg->handover_window_s && m->key.proto == IPPROTO_TCP &&
	       !(m->flags & RM_SVC_F_KEYED);
}
