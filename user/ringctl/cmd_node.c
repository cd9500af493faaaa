// SPDX-License-Identifier: GPL-2.0
/* node add / del / set on the live state: each rebuilds the service's
 * ring from its active nodes and swaps it in whole. */
#include <stdio.h>
#include <string.h>
#include "cmd_live.h"

/* SERVICE NODE, both valid names. */
static int two_names(struct ctl_opts *o, const char *cmd, struct edit *e)
{
	int ret;

	if (o->argc != 2)
		return ctl_usage_error("node %s: expected SERVICE NODE, got %d "
				  "words",
				  cmd, o->argc);
	ret = live_name("service", o->argv[0]);
	if (!ret)
		ret = live_name("node", o->argv[1]);
	if (ret)
		return ret;
	snprintf(e->svc, sizeof(e->svc), "%s", o->argv[0]);
	snprintf(e->node, sizeof(e->node), "%s", o->argv[1]);
	return 0;
}

static int node_add_apply(struct edit *e, struct live *lv)
{
	int svc = live_svc(lv, e->svc), slot;

	if (svc < 0)
		return RM_EXIT_RUNTIME;
	slot = rm_snap_node_add(lv->new, lv->old, svc, e->node, e->mac, e->dev,
				e->weight);
	if (slot < 0)
		return ctl_runtime_error("%s", rm_errmsg());
	if (e->addr_set) {
		memcpy(lv->new->node[slot].addr, e->addr, sizeof(e->addr));
		lv->new->node[slot].addr_family = e->addr_family;
	}
	snprintf(e->done, sizeof(e->done), "node %s added to %s (slot %d)",
		 e->node, e->svc, slot);
	return 0;
}

int node_add_parse(struct ctl_opts *o, struct edit *e)
{
	int ret = two_names(o, "add", e);

	if (ret)
		return ret;
	memcpy(e->mac, o->mac.mac, sizeof(e->mac));
	snprintf(e->dev, sizeof(e->dev), "%s", o->dev);
	node_addr_parse(o, e);
	e->weight = o->weight.val;
	e->apply = node_add_apply;
	return 0;
}

static int node_del_apply(struct edit *e, struct live *lv)
{
	int svc = live_svc(lv, e->svc), slot;

	if (svc < 0)
		return RM_EXIT_RUNTIME;
	slot = live_node(lv, svc, e->node);
	if (slot < 0)
		return RM_EXIT_RUNTIME;
	rm_snap_node_del(lv->new, slot);
	snprintf(e->done, sizeof(e->done), "node %s deleted from %s", e->node,
		 e->svc);
	return 0;
}

int node_del_parse(struct ctl_opts *o, struct edit *e)
{
	int ret = two_names(o, "del", e);

	if (!ret)
		e->apply = node_del_apply;
	return ret;
}

void node_addr_parse(const struct ctl_opts *o, struct edit *e)
{
	if (!o->addr.set)
		return;
	memcpy(e->addr, o->addr.addr, sizeof(e->addr));
	e->addr_family = o->addr.family;
	e->addr_set = true;
}

/* What a state means for the node's flows, for the user. */
static const char *state_note(__u32 state)
{
	switch (state) {
	case RM_NODE_DRAINING:
		return " (no new flows; keeps the ones it has)";
	case RM_NODE_DOWN:
		return " (no flows: the ones it had go to the ring from their "
		       "next packet)";
	default:
		return "";
	}
}

static int node_set_apply(struct edit *e, struct live *lv)
{
	int svc = live_svc(lv, e->svc), slot, active = 0;
	struct rm_node *n;

	if (svc < 0)
		return RM_EXIT_RUNTIME;
	slot = live_node(lv, svc, e->node);
	if (slot < 0)
		return RM_EXIT_RUNTIME;
	n = &lv->new->node[slot];
	if (e->weight_set)
		n->weight = e->weight;
	if (e->addr_set) {
		memcpy(n->addr, e->addr, sizeof(e->addr));
		n->addr_family = e->addr_family;
	}
	if (e->state >= 0)
		rm_snap_node_state(lv->new, slot, e->state);
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		active += rm_node_in_ring(&lv->new->node[i]) &&
			  lv->new->node[i].svc_id == (__u32)svc;
	snprintf(e->done, sizeof(e->done), "node %s of %s: %s%s, weight %u%s",
		 e->node, e->svc, rm_node_state_name(n->state),
		 state_note(n->state), n->weight,
		 active ? "" : "; no active node left: new flows are dropped");
	return 0;
}

/* drain and down take the node out of the ring: a draining node keeps
 * the flows the connection table holds for it, a down one loses them
 * (its gen moves on, so their entries are stale); active puts it back */
int node_set_parse(struct ctl_opts *o, struct edit *e)
{
	int ret = two_names(o, "set", e);

	if (ret)
		return ret;
	if (o->drain + o->active + o->down > 1)
		return ctl_usage_error("node set: give one of --drain, --active, "
				  "--down");
	e->state = o->drain    ? RM_NODE_DRAINING
		   : o->down   ? RM_NODE_DOWN
		   : o->active ? RM_NODE_ACTIVE
			       : -1;
	e->weight = o->weight.val;
	e->weight_set = o->weight.set;
	node_addr_parse(o, e);
	if (e->state < 0 && !e->weight_set && !e->addr_set)
		return ctl_usage_error("node set: nothing to set: give --weight "
				       "W, --addr ADDR or one of --drain, "
				       "--active, --down");
	e->apply = node_set_apply;
	return 0;
}

int cmd_node_add(struct ctl_opts *o)
{
	return live_change(o, node_add_parse);
}

int cmd_node_del(struct ctl_opts *o)
{
	return live_change(o, node_del_parse);
}

int cmd_node_set(struct ctl_opts *o)
{
	return live_change(o, node_set_parse);
}
