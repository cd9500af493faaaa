// SPDX-License-Identifier: GPL-2.0
/* TEMPORARY: replaced by the live command files. */
#include "ringctl.h"
#define PENDING(fn) int fn(struct ctl_opts *o) { (void)o; return ctl_runtime_error("not built yet"); }
PENDING(cmd_service_add) PENDING(cmd_service_del) PENDING(cmd_service_list)
PENDING(cmd_node_add) PENDING(cmd_node_del) PENDING(cmd_node_set)
PENDING(cmd_show) PENDING(cmd_lookup) PENDING(cmd_stats) PENDING(cmd_save)
PENDING(cmd_restore) PENDING(cmd_seed)
