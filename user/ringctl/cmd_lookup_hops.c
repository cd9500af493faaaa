// SPDX-License-Identifier: GPL-2.0
/* What `ringctl lookup` adds from second chance: the hop list a non-SYN
 * packet of the flow carries to a GUE node now (current owner, then the
 * older owners within the handover window), computed by the code the
 * data plane runs (include/ringmaster/rm_hops.h through hops.c). */
#include <stdio.h>
#include "cmd_live.h"
#include "hops.h"
#include "json.h"
#include "util.h"

/* Why a packet of this flow carries no list, or NULL when it may. */
static const char *hops_none(struct live *lv, const struct rm_gens *g,
			     const struct lookup_conn *lc, int owner)
{
	const struct rm_svc_meta *m = &lv->old->svc[g->svc];

	if (!lv->old->cfg.handover_window_s)
		return "second chance is off (config --handover-window 0)";
	if (!rm_hops_wanted(m, &lv->old->cfg))
		return "not a TCP flow-hashed service";
	if (owner < 0)
		return "the ring has no owner";
	if (lv->old->node[owner].via != RM_VIA_GUE)
		return "the owner is not reached by GUE";
	if (lc->found && lc->valid)
		return "the connection table's entry wins";
	return NULL;
}

/* The hop list, count 1 when there is none to send. */
static const char *hops_get(struct live *lv, const struct rm_gens *g,
			    const struct lookup_conn *lc, __u32 h, int owner,
			    struct rm_hops *hops)
{
	const char *why = hops_none(lv, g, lc, owner);

	hops->count = 1;
	if (!why && rm_hops_of(g, h, (__u32)owner, rm_mono_ns(), hops) < 2)
		why = "the owner did not change within the window";
	return why;
}

void lookup_hops_text(struct live *lv, const struct rm_gens *g,
		      const struct lookup_conn *lc, __u32 h, int owner)
{
	struct rm_hops hops;
	const char *why = hops_get(lv, g, lc, h, owner, &hops);
	char addr[64];

	if (why) {
		printf("  hop list: none (%s)\n", why);
		return;
	}
	printf("  hop list (non-SYN packets, GUE):");
	for (__u32 i = 0; i < hops.count; i++) {
		rm_format_addr(hops.addr[i], (__u8)hops.family, addr,
			       sizeof(addr));
		printf(" %s%s (%s)", i ? "-> " : "",
		       lv->old->node[hops.node[i]].name, addr);
	}
	printf("\n");
}

void lookup_hops_json(struct rm_json *j, struct live *lv,
		      const struct rm_gens *g, const struct lookup_conn *lc,
		      __u32 h, int owner)
{
	struct rm_hops hops;
	const char *why = hops_get(lv, g, lc, h, owner, &hops);
	char addr[64];

	rm_json_obj_open(j, "second_chance");
	rm_json_bool(j, "sent", !why);
	if (why)
		rm_json_str(j, "why_not", why);
	rm_json_arr_open(j, "hops");
	for (__u32 i = 0; !why && i < hops.count; i++) {
		rm_format_addr(hops.addr[i], (__u8)hops.family, addr,
			       sizeof(addr));
		rm_json_obj_open(j, NULL);
		rm_json_str(j, "node", lv->old->node[hops.node[i]].name);
		rm_json_u64(j, "node_id", hops.node[i]);
		rm_json_str(j, "addr", addr);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	rm_json_obj_close(j);
}
