// SPDX-License-Identifier: GPL-2.0
/* config: the connection table's settings in rm_config (UDP idle timeout,
 * insert rate), and the table they apply to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "json.h"

static int conf_apply(struct edit *e, struct live *lv)
{
	struct rm_config *c = &lv->new->cfg;

	if (e->udp_timeout_set)
		c->udp_timeout_s = e->udp_timeout;
	if (e->insert_rate_set)
		c->conn_insert_rate = e->insert_rate;
	snprintf(e->done, sizeof(e->done),
		 "UDP idle timeout %u s, connection-table inserts %u/s per "
		 "CPU%s",
		 rm_udp_timeout(c), c->conn_insert_rate,
		 c->conn_insert_rate ? "" : " (no limit)");
	return 0;
}

int conf_parse(struct ctl_opts *o, struct edit *e)
{
	if (o->argc)
		return ctl_usage_error("config: unexpected argument '%s'",
				  o->argv[0]);
	if (!o->udp_timeout.set && !o->insert_rate.set)
		return ctl_usage_error("config: nothing to set: give --udp-timeout "
				  "S and/or --conn-insert-rate R");
	e->udp_timeout = o->udp_timeout.val;
	e->udp_timeout_set = o->udp_timeout.set;
	e->insert_rate = o->insert_rate.val;
	e->insert_rate_set = o->insert_rate.set;
	e->apply = conf_apply;
	return 0;
}

/* Without options: the settings, and the table they apply to. */
static int conf_show(struct ctl_opts *o)
{
	struct rm_conn_count *cnt = malloc(sizeof(*cnt));
	const struct rm_config *c;
	struct rm_json j;
	struct live lv;
	int ret;

	if (!cnt)
		return ctl_runtime_error("out of memory");
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret) {
		free(cnt);
		return ret;
	}
	if (rm_state_conn_count(&lv.st, lv.old, cnt)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	c = &lv.old->cfg;
	if (!o->json) {
		printf("udp-timeout       %u s (idle UDP flows forget their "
		       "node)\n"
		       "conn-insert-rate  %u%s\n"
		       "conn-table        %u entries, %llu in use, %llu "
		       "stale (size set at attach: ringload attach "
		       "--conn-table N)\n",
		       rm_udp_timeout(c), c->conn_insert_rate,
		       c->conn_insert_rate ? " entries/s per CPU"
					   : " (no limit)",
		       cnt->max_entries, (unsigned long long)cnt->entries,
		       (unsigned long long)cnt->stale);
		goto out;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_u64(&j, "udp_timeout_s", rm_udp_timeout(c));
	rm_json_u64(&j, "conn_insert_rate", c->conn_insert_rate);
	rm_json_obj_open(&j, "conn_table");
	rm_json_u64(&j, "max_entries", cnt->max_entries);
	rm_json_u64(&j, "entries", cnt->entries);
	rm_json_u64(&j, "stale", cnt->stale);
	rm_json_obj_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
out:
	live_close(&lv);
	free(cnt);
	return ret;
}

int cmd_config(struct ctl_opts *o)
{
	struct edit e;
	int ret;

	if (!o->udp_timeout.set && !o->insert_rate.set) {
		if (o->argc)
			return ctl_usage_error("config: unexpected argument "
					       "'%s'",
					       o->argv[0]);
		return conf_show(o);
	}
	memset(&e, 0, sizeof(e));
	e.state = -1;
	ret = conf_parse(o, &e);
	if (ret)
		return ret;
	return live_change_edit(o, &e);
}
