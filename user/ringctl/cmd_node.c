// SPDX-License-Identifier: GPL-2.0
/* node add / del / set on the live state: each rebuilds the service's
 * ring from its active nodes and swaps it in whole. */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "cmd_live.h"
#include "netlink.h"

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

/* Add the node the edit describes, however it is reached; an address
 * given to an L2 node is where its health checks go. */
static int node_put(struct edit *e, struct live *lv, int svc)
{
	int slot;

	if (e->via.via == RM_VIA_L2)
		slot = rm_snap_node_add(lv->new, lv->old, svc, e->node, e->mac,
					e->dev, e->weight);
	else
		slot = rm_snap_node_add_encap(lv->new, lv->old, svc, e->node,
					      &e->via, e->dev, e->weight);
	if (slot >= 0 && e->addr_set) {
		memcpy(lv->new->node[slot].addr, e->addr, sizeof(e->addr));
		lv->new->node[slot].addr_family = e->addr_family;
	}
	if (slot >= 0) {
		struct rm_node *n = &lv->new->node[slot];

		memset(n->quic_sid, 0, sizeof(n->quic_sid));
		memcpy(n->quic_sid, e->sid, e->sid_len);
		n->quic_sid_len = e->sid_len;
	}
	return slot;
}

/* For an encapsulated node: have the kernel resolve the next hop's
 * neighbour now, so the first packets find it (the data plane drops and
 * counts fib-no-neigh until it is; ringload neighd keeps it fresh), and
 * say so if no outer source of the node's family is configured. */
static void node_encap_note(struct edit *e, struct live *lv, int slot)
{
	const struct rm_node *n = &lv->new->node[slot];
	const struct rm_config *c = &lv->new->cfg;
	char fam = n->addr_family == RM_FAMILY_V6 ? '6' : '4';
	size_t len = strlen(e->done);
	struct rm_nexthop nh;
	bool src = fam == '6' ? (c->encap_src6[0] | c->encap_src6[1] |
				 c->encap_src6[2] | c->encap_src6[3])
			      : c->encap_src4;

	if (n->via == RM_VIA_L2)
		return;
	if (!rm_route_get((__u8)n->addr_family, n->addr, &nh))
		rm_neigh_use(&nh);
	if (!src)
		snprintf(e->done + len, sizeof(e->done) - len,
			 "; no --encap-src%c set: its packets are dropped "
			 "until `ringctl config --encap-src%c ADDR`",
			 fam, fam);
}

static int node_add_apply(struct edit *e, struct live *lv)
{
	int svc = live_svc(lv, e->svc), slot;

	if (svc < 0)
		return RM_EXIT_RUNTIME;
	slot = node_put(e, lv, svc);
	if (slot < 0)
		return ctl_runtime_error("%s", rm_errmsg());
	snprintf(e->done, sizeof(e->done), "node %s added to %s (slot %d, %s)",
		 e->node, e->svc, slot, rm_via_name(e->via.via));
	node_encap_note(e, lv, slot);
	return 0;
}

static void node_addr_parse(const struct ctl_opts *o, struct edit *e)
{
	if (!o->addr.set)
		return;
	memcpy(e->addr, o->addr.addr, sizeof(e->addr));
	e->addr_family = o->addr.family;
	e->addr_set = true;
}

/* How the node is reached, from --via and the options that go with it:
 * l2 needs --mac and --dev, ipip and gue --addr. */
static int node_via_parse(struct ctl_opts *o, const char *cmd, struct edit *e)
{
	const char *via = o->via.text ? o->via.text : "l2";

	memset(&e->via, 0, sizeof(e->via));
	e->via.via = (__u8)o->via.val;
	if (o->dev)
		snprintf(e->dev, sizeof(e->dev), "%s", o->dev);
	node_addr_parse(o, e);
	if (o->gue_port.set && e->via.via != RM_VIA_GUE)
		return ctl_usage_error("node %s: --gue-port goes with --via gue",
				       cmd);
	if (e->via.via == RM_VIA_L2) {
		if (!o->mac.set)
			return ctl_usage_error(
			    "node %s: --mac MAC is required with --via l2 (the "
			    "default): the node's MAC on this segment; a routed "
			    "node takes --via ipip|gue --addr NODE_IP instead",
			    cmd);
		if (!o->dev)
			return ctl_usage_error(
			    "node %s: --dev IFACE is required with --via l2: "
			    "the interface the node is reached through",
			    cmd);
		memcpy(e->mac, o->mac.mac, sizeof(e->mac));
		return 0;
	}
	if (o->mac.set)
		return ctl_usage_error("node %s: --mac goes with --via l2; a node "
				       "reached by %s is found by its --addr",
				       cmd, via);
	if (!o->addr.set)
		return ctl_usage_error("node %s: --via %s needs --addr NODE_IP, "
				       "the node's IPv4 or IPv6 address",
				       cmd, via);
	e->via.family = o->addr.family;
	memcpy(e->via.addr, o->addr.addr, sizeof(e->via.addr));
	e->via.gue_port = e->via.via == RM_VIA_GUE ? (__u16)o->gue_port.val : 0;
	return 0;
}

int node_add_parse(struct ctl_opts *o, struct edit *e)
{
	int ret = two_names(o, "add", e);

	if (!ret)
		ret = node_via_parse(o, "add", e);
	if (ret)
		return ret;
	e->weight = o->weight.val;
	if (o->server_id) {
		int n = rm_parse_hex(o->server_id, e->sid, sizeof(e->sid));

		if (n < 0)
			return ctl_usage_error("node add: --server-id '%s': "
					       "expected 1-%d bytes in hex, "
					       "e.g. c4605e",
					       o->server_id, RM_QUIC_SID_MAX);
		e->sid_len = (__u8)n;
	}
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
	if (!e->via_set && e->addr_set && n->via != RM_VIA_L2) {
		/* a routed node's address is where its packets go: the same
		 * method to the new address, by the route to it */
		e->via.via = n->via;
		e->via.gue_port = ntohs(n->gue_port);
		e->via.family = (__u8)e->addr_family;
		memcpy(e->via.addr, e->addr, sizeof(e->via.addr));
		e->dev[0] = '\0';
		e->via_set = true;
	}
	if (e->via_set) {
		/* the same node reached another way: re-added into its own
		 * slot (a new gen unless the target is the same), keeping
		 * weight and state */
		__u32 state = n->state;

		e->weight = e->weight_set ? e->weight : n->weight;
		if (!e->addr_set && e->via.via == RM_VIA_L2 && n->addr_family) {
			memcpy(e->addr, n->addr, sizeof(e->addr));
			e->addr_family = n->addr_family;
			e->addr_set = true;
		}
		rm_snap_node_del(lv->new, slot);
		if (node_put(e, lv, svc) != slot)
			return ctl_runtime_error("node set %s %s: %s", e->svc,
						 e->node, rm_errmsg());
		n->state = state;
	}
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
	snprintf(e->done, sizeof(e->done),
		 "node %s of %s: %s%s, weight %u, via %s%s", e->node, e->svc,
		 rm_node_state_name(n->state), state_note(n->state), n->weight,
		 rm_via_name(n->via),
		 active ? "" : "; no active node left: new flows are dropped");
	if (e->via_set)
		node_encap_note(e, lv, slot);
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
	if (o->via.set) {
		ret = node_via_parse(o, "set", e);
		if (ret)
			return ret;
		e->via_set = true;
	} else if (o->mac.set || o->dev || o->gue_port.set) {
		return ctl_usage_error("node set: --mac, --dev and --gue-port "
				       "change how the node is reached: give "
				       "--via too");
	} else {
		node_addr_parse(o, e);
	}
	if (e->state < 0 && !e->weight_set && !e->addr_set && !e->via_set)
		return ctl_usage_error("node set: nothing to set: give --weight "
				       "W, --addr ADDR, --via ... or one of "
				       "--drain, --active, --down");
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
