// SPDX-License-Identifier: GPL-2.0
/* ringctl stats --prometheus [--textfile DIR]: the metrics of
 * user/lib/metrics.c on stdout, or written atomically for node_exporter's
 * textfile collector. */
#include <stdio.h>
#include "cmd_live.h"
#include "metrics.h"

int cmd_stats_prometheus(struct ctl_opts *o)
{
	if (o->json)
		return ctl_usage_error("stats: --json and --prometheus are "
				       "two formats: pick one");
	if (o->textfile) {
		if (rm_metrics_textfile(o->textfile, o->pin_dir))
			return ctl_runtime_error("%s", rm_errmsg());
		return RM_EXIT_OK;
	}
	if (rm_metrics_write(stdout, o->pin_dir))
		return ctl_runtime_error("%s", rm_errmsg());
	return fflush(stdout) ? ctl_runtime_error("cannot write stdout")
			      : RM_EXIT_OK;
}
