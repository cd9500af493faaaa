/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live state in the Prometheus text exposition format (version
 * 0.0.4): one writer shared by `ringctl stats --prometheus` and ringexport.
 * Names follow the Prometheus conventions: prefix ringmaster_, base units,
 * _total on counters, labels service/node/outcome/state only (no flow
 * tuples). Outcome metrics come from the RM_COUNTERS X-macro, so every
 * counted outcome has one.
 */
#ifndef RM_METRICS_H
#define RM_METRICS_H

#include <stdio.h>
#include "state.h"

/* Write every metric of the state at pin_dir to f. 0, or -errno with
 * rm_errmsg() saying why (nothing useful was written then). */
int rm_metrics_write(FILE *f, const char *pin_dir);
/* What an exporter serves when the state cannot be read: ringmaster_up 0
 * and the build info. */
void rm_metrics_write_down(FILE *f);
/* rm_metrics_write() into DIR/ringmaster.prom atomically (a temporary
 * file in DIR, then rename), for node_exporter's textfile collector. */
int rm_metrics_textfile(const char *dir, const char *pin_dir);
#define RM_METRICS_TEXTFILE "ringmaster.prom"

#endif
