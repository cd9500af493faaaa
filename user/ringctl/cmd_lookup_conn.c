// SPDX-License-Identifier: GPL-2.0
/* What `ringctl lookup` adds from the connection table: the node the
 * table sends an established flow to, which beats the ring's owner for
 * every packet but a 5-tuple service's SYN (bpf/conntrack.h). */
#include <errno.h>
#include <stdio.h>
#include "cmd_live.h"
#include "json.h"

int lookup_conn_read(struct live *lv, const struct rm_flow *f,
		     struct lookup_conn *lc)
{
	int err = rm_state_conn_lookup(&lv->st, lv->old, f, &lc->c, &lc->valid,
				       &lc->age_ns);

	lc->found = !err;
	if (err == -ENOENT)
		return 0;
	return err ? ctl_runtime_error("%s", rm_errmsg()) : 0;
}

static const char *conn_node_name(struct live *lv, const struct lookup_conn *lc)
{
	return lc->c.node < RM_MAX_NODES ? lv->old->node[lc->c.node].name
					 : "?";
}

void lookup_conn_text(struct live *lv, const struct lookup_conn *lc,
		      int owner)
{
	if (!lc->found) {
		printf("  connection table: no entry (the ring owner "
		       "applies)\n");
		return;
	}
	if (!lc->valid) {
		printf("  connection table: stale entry for slot %u gen %u "
		       "(node gone, down or reused, or UDP idle): the ring "
		       "owner applies\n",
		       lc->c.node, lc->c.gen);
		return;
	}
	printf("  connection table: node %s (slot %u, last packet %.1f s "
	       "ago): %s\n",
	       conn_node_name(lv, lc), lc->c.node, lc->age_ns / 1e9,
	       owner < 0 ? "the ring has no owner; established packets still "
			   "go to this node"
	       : (__u32)owner == lc->c.node
		   ? "same as the ring owner"
		   : "DIFFERS from the ring owner: established packets go "
		     "here, new connections (SYN) to the ring owner");
}

void lookup_conn_json(struct rm_json *j, struct live *lv,
		      const struct lookup_conn *lc, int owner)
{
	if (!lc->found) {
		rm_json_obj_open(j, "conn");
		rm_json_bool(j, "found", false);
		rm_json_obj_close(j);
		return;
	}
	rm_json_obj_open(j, "conn");
	rm_json_bool(j, "found", true);
	rm_json_bool(j, "valid", lc->valid);
	rm_json_u64(j, "node_id", lc->c.node);
	rm_json_u64(j, "gen", lc->c.gen);
	rm_json_num(j, "age_s", lc->age_ns / 1e9);
	if (lc->valid) {
		rm_json_str(j, "node", conn_node_name(lv, lc));
		rm_json_bool(j, "differs", owner < 0 ||
						   (__u32)owner != lc->c.node);
	}
	rm_json_obj_close(j);
}
