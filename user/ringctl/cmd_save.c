// SPDX-License-Identifier: GPL-2.0
/* save: the configuration as the ringctl commands that make it, one per
 * line; restore (cmd_restore.c) reads them back. */
#include <arpa/inet.h>
#include <stdio.h>
#include "cmd_live.h"

/* Services by id, then nodes by slot: restoring into an empty state
 * hands out the same ids and slots when the original had no holes. */
int cmd_save(struct ctl_opts *o)
{
	struct live lv;
	char hex[33], addr[64], mac[18];
	int ret;

	if (o->argc)
		return ctl_usage_error("save: unexpected argument '%s'",
				       o->argv[0]);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	rm_format_seed(&lv.old->cfg.seed, hex);
	printf("# ringmaster configuration: ringctl restore FILE applies it\n");
	printf("seed --set %s\n", hex);
	printf("config --udp-timeout %u --conn-insert-rate %u\n",
	       rm_udp_timeout(&lv.old->cfg), lv.old->cfg.conn_insert_rate);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &lv.old->svc[i];

		if (!m->in_use)
			continue;
		rm_format_addr(m->key.vip,
			       m->key.flags & RM_SVCK_V6 ? RM_FAMILY_V6
							 : RM_FAMILY_V4,
			       addr, sizeof(addr));
		printf("service add %s --vip %s --port %u --proto %s --hash %s "
		       "--vnodes %u\n",
		       m->name, addr, ntohs(m->key.port),
		       rm_proto_name(m->key.proto),
		       m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple",
		       m->vnodes);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv.old->node[i];

		if (n->state == RM_NODE_FREE)
			continue;
		rm_format_mac(n->mac, mac);
		printf("node add %s %s --mac %s --dev %s --weight %u\n",
		       lv.old->svc[n->svc_id].name, n->name, mac, n->dev,
		       n->weight);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv.old->node[i];

		if (n->state == RM_NODE_DRAINING || n->state == RM_NODE_DOWN)
			printf("node set %s %s --%s\n",
			       lv.old->svc[n->svc_id].name, n->name,
			       n->state == RM_NODE_DOWN ? "down" : "drain");
	}
	live_close(&lv);
	return RM_EXIT_OK;
}
