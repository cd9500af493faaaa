// SPDX-License-Identifier: GPL-2.0
/* seed: print the hash seed every ring is built with, or set it (which
 * rebuilds every ring). */
#include <stdio.h>
#include "cmd_live.h"
#include "json.h"

static int seed_apply(struct edit *e, struct live *lv)
{
	lv->new->cfg.seed = e->seed;
	lv->new->cfg.flags |= RM_CFG_SEEDED;
	snprintf(e->done, sizeof(e->done), "seed set, every ring rebuilt");
	return 0;
}

int seed_parse(struct ctl_opts *o, struct edit *e)
{
	if (o->argc)
		return ctl_usage_error("seed: unexpected argument '%s'", o->argv[0]);
	if (!o->set.set)
		return ctl_usage_error("seed: --set HEX is what a saved file "
				       "can hold");
	rm_parse_seed(o->set.text, &e->seed); /* checked by the table */
	e->apply = seed_apply;
	return 0;
}

/* The config alone (the node records are most of a snapshot's reading),
 * unless a writer died mid-change: live_open() repairs that first. */
static int seed_read(struct ctl_opts *o, struct rm_config *cfg)
{
	struct rm_state st;
	struct live lv;
	int err;

	if (rm_state_open(&st, o->pin_dir, RM_LOCK_SH))
		return ctl_runtime_error("%s", rm_errmsg());
	err = rm_state_read_cfg(&st, cfg);
	rm_state_close(&st);
	if (err)
		return ctl_runtime_error("%s", rm_errmsg());
	if (!(cfg->flags & RM_CFG_COMMITTING))
		return 0;
	err = live_open(o, &lv, RM_LOCK_SH);
	if (!err) {
		*cfg = lv.old->cfg;
		live_close(&lv);
	}
	return err;
}

int cmd_seed(struct ctl_opts *o)
{
	/* zeroed: the analyzer cannot see that seed_read's error returns
	 * (ctl_runtime_error, another unit) are never 0 */
	struct rm_config cfg = { 0 };
	struct rm_json j;
	char hex[33];
	int ret;

	if (o->set.set)
		return live_change(o, seed_parse);
	if (o->argc)
		return ctl_usage_error("seed: unexpected argument '%s'",
				       o->argv[0]);
	ret = seed_read(o, &cfg);
	if (ret)
		return ret;
	rm_format_seed(&cfg.seed, hex);
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "seed", hex);
		rm_json_bool(&j, "seeded", cfg.flags & RM_CFG_SEEDED);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		printf("%s\n", hex);
	}
	return RM_EXIT_OK;
}
