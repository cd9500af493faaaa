/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The node-side decapsulator's counters (RM_DECAP_COUNTERS, rm_encap.h)
 * as pinned by ringload decap: read for `ringload decap status` and for
 * the metrics (ringexport --decap-pin-dir).
 */
#ifndef RM_DECAP_STATS_H
#define RM_DECAP_STATS_H

#include <stdio.h>
#include <ringmaster/rm_encap.h>

/* Sum each counter over the CPUs into sum. 0, or -errno (-ENOENT: no
 * decapsulator state in dir). */
int rm_decap_counters_read(const char *dir, __u64 sum[RM_DCNT_MAX]);
/* ringmaster_decap_up, and ringmaster_decap_packets_total by outcome when
 * the counters in dir can be read. */
void rm_metrics_decap_write(FILE *f, const char *dir);

#endif
