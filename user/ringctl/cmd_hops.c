// SPDX-License-Identifier: GPL-2.0
/* Second chance as ringctl shows it: the hop list `lookup` adds (what a
 * non-SYN packet of the flow carries to a GUE node now: current owner,
 * then the older owners within the handover window, computed by the code
 * the data plane runs, include/ringmaster/rm_hops.h through hops.c), the
 * remembered generations and coverage `show` adds, and the note of
 * `doctor`. */
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

const char *hops_coverage(const struct rm_snap *s, __u32 svc, char *nodes,
			  size_t len, int *cover)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	size_t at = 0;
	int gue = 0, other = 0;

	nodes[0] = '\0';
	*cover = HOPS_NONE;
	if (!s->cfg.handover_window_s)
		return "second chance is off (config --handover-window)";
	if (m->flags & RM_SVC_F_KEYED)
		return "a keyed service: each request follows its key";
	if (!rm_hops_wanted(m, &s->cfg))
		return "UDP: no connection for a node to find";
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &s->node[i];
		int w;

		if (n->state == RM_NODE_FREE || n->svc_id != svc)
			continue;
		if (n->via == RM_VIA_GUE) {
			gue++;
			continue;
		}
		other++;
		w = snprintf(nodes + at, len - at, "%s%s (%s)", at ? ", " : "",
			     n->name, rm_via_name(n->via));
		if (w > 0 && (size_t)w < len - at)
			at += w;
	}
	if (!gue && !other)
		return "no nodes";
	*cover = !other ? HOPS_ALL : gue ? HOPS_PARTIAL : HOPS_NONE;
	if (*cover == HOPS_ALL)
		return NULL;
	return "nodes reached by L2 or IPIP cannot carry a hop list";
}

/* The generations' ages as text ("12s, 300s"), and how many are live. */
static __u32 gens_text(const struct rm_gens *g, __u32 window_s, char *out,
		       size_t len)
{
	__u64 now = rm_mono_ns();
	size_t at = 0;

	out[0] = '\0';
	for (__u32 i = 0; i < RM_RING_GENS; i++) {
		int w;

		if (!g->held[i])
			continue;
		w = snprintf(out + at, len - at, "%s%.0fs%s", at ? ", " : "",
			     (double)(__s64)(now - g->retired_ns[i]) / 1e9,
			     rm_hop_gen_live(g->retired_ns[i], now,
					     (__u64)window_s * 1000000000ULL)
				 ? ""
				 : " (expired)");
		if (w > 0 && (size_t)w < len - at)
			at += w;
	}
	return rm_gens_live(g, now, window_s);
}

int hops_show_text(struct live *lv, __u32 svc)
{
	struct rm_gens g;
	char nodes[256], ages[128], win[16];
	const char *why;
	int cover;

	if (rm_gens_heads(&lv->st, lv->old, svc, &g))
		return ctl_runtime_error("%s", rm_errmsg());
	why = hops_coverage(lv->old, svc, nodes, sizeof(nodes), &cover);
	handover_text(lv->old->cfg.handover_window_s, win, sizeof(win));
	gens_text(&g, lv->old->cfg.handover_window_s, ages, sizeof(ages));
	printf("  second chance: %s", cover == HOPS_ALL   ? "covered"
				      : cover == HOPS_PARTIAL ? "partly covered"
							      : "not covered");
	if (why)
		printf(" (%s%s%s)", why, nodes[0] ? ": " : "", nodes);
	printf("; window %s; remembered rings: %s\n", win,
	       ages[0] ? ages : "none");
	rm_gens_free(&g);
	return 0;
}

int hops_show_json(struct rm_json *j, struct live *lv, __u32 svc)
{
	__u32 window = lv->old->cfg.handover_window_s;
	char nodes[256];
	struct rm_gens g;
	const char *why;
	__u64 now = rm_mono_ns();
	int cover;

	if (rm_gens_heads(&lv->st, lv->old, svc, &g))
		return ctl_runtime_error("%s", rm_errmsg());
	why = hops_coverage(lv->old, svc, nodes, sizeof(nodes), &cover);
	rm_json_obj_open(j, "second_chance");
	rm_json_str(j, "covered", cover == HOPS_ALL	? "all"
				  : cover == HOPS_PARTIAL ? "partly"
							  : "no");
	if (why)
		rm_json_str(j, "why_not", why);
	rm_json_arr_open(j, "uncovered_nodes");
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv->old->node[i];

		if (n->state != RM_NODE_FREE && n->svc_id == svc &&
		    n->via != RM_VIA_GUE)
			rm_json_str(j, NULL, n->name);
	}
	rm_json_arr_close(j);
	rm_json_u64(j, "window_s", window);
	rm_json_arr_open(j, "generations");
	for (__u32 i = 0; i < RM_RING_GENS; i++) {
		if (!g.held[i])
			continue;
		rm_json_obj_open(j, NULL);
		rm_json_u64(j, "gen", i);
		rm_json_num(j, "age_s",
			    (double)(__s64)(now - g.retired_ns[i]) / 1e9);
		rm_json_bool(j, "live",
			     rm_hop_gen_live(g.retired_ns[i], now,
					     (__u64)window * 1000000000ULL));
		rm_json_u64(j, "entries", g.entries[i]);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	rm_json_obj_close(j);
	rm_gens_free(&g);
	return 0;
}
